/* tensor_text.cc: KServe tensor "data" text to typed memory and back (fast_float in, std::to_chars out). */
#include "config.h"

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <strings.h>
#include <limits>
#include <system_error>

#include <fast_float/fast_float.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "error.h"
#include "tensor_text.h"

namespace {

/* Whether c is JSON whitespace. */
inline bool
is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Whether c may follow a scalar value. */
inline bool
is_delim(char c)
{
	return is_ws(c) || c == ',' || c == ']' || c == '}';
}

/* Whether c is an ASCII digit. */
inline bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Advance p past whitespace, never beyond end. */
inline const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && is_ws(*p))
		p++;
	return p;
}

/* The KServe name of dt, for messages. */
const char *
dtype_name(enum graph_dtype dt)
{
	switch (dt) {
	case GRAPH_DT_F32: return "FP32";
	case GRAPH_DT_F16: return "FP16";
	case GRAPH_DT_I64: return "INT64";
	case GRAPH_DT_I32: return "INT32";
	case GRAPH_DT_I8: return "INT8";
	case GRAPH_DT_U8: return "UINT8";
	case GRAPH_DT_BOOL: return "BOOL";
	default: return "an unknown datatype";
	}
}

/* A printable copy of the token at p (to its delimiter, at most 32 bytes), for messages. */
struct token_text {
	char s[40];
};

token_text
token_at(const char *p, const char *end)
{
	token_text t;
	size_t n = 0;

	while (p + n < end && n < 32 && (n == 0 || (!is_delim(p[n]) &&
	    p[n] != '[' && p[n] != '{' && p[n] != '"' && p[n] != ':'))) {
		unsigned char c = (unsigned char)p[n];
		t.s[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
		if (n == 1 && strchr("[]{},:\"", c) != nullptr && c != '\0')
			break;	/* a structural character stands alone */
	}
	if (n == 32 && p + n < end && !is_delim(p[n]))
		memcpy(t.s + n, "...", 3), n += 3;
	t.s[n] = '\0';
	return t;
}

/*
 * End of the JSON number at p (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
 * when a delimiter or end follows it, else nullptr; *integral says whether it
 * has neither fraction nor exponent.
 */
inline const char *
number_end(const char *p, const char *end, bool *integral)
{
	if (p < end && *p == '-')
		p++;
	if (p == end || !is_digit(*p))
		return nullptr;
	if (*p++ != '0')
		while (p < end && is_digit(*p))
			p++;
	*integral = true;
	if (p < end && *p == '.') {
		if (++p == end || !is_digit(*p))
			return nullptr;
		while (p < end && is_digit(*p))
			p++;
		*integral = false;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit(*p))
			return nullptr;
		while (p < end && is_digit(*p))
			p++;
		*integral = false;
	}
	if (p < end && !is_delim(*p))
		return nullptr;
	return p;
}

/* A JSON number's decimal digits: value = mant * 10^exp10 when digits <= 19. */
struct decimal {
	uint64_t mant;
	int64_t exp10;
	int64_t digits;		/* digits read, leading zeros included; past 19 mant is not the value */
	bool neg;
};

/* Whether the 8 bytes at p are all ASCII digits (SWAR). */
inline bool
eight_digits(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	return ((v & 0xf0f0f0f0f0f0f0f0ull) |
	    (((v + 0x0606060606060606ull) & 0xf0f0f0f0f0f0f0f0ull) >> 4)) == 0x3333333333333333ull;
}

/* The value of the 8 ASCII digits at p (SWAR: pairs, then quads, then the whole). */
inline uint32_t
eight_digits_value(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	v = (v & 0x0f0f0f0f0f0f0f0full) * 2561 >> 8;
	v = (v & 0x00ff00ff00ff00ffull) * 6553601 >> 16;
	return (uint32_t)((v & 0x0000ffff0000ffffull) * 42949672960001ull >> 32);
}

/* Accumulate the digits at p into *m (wrapping past 19 digits); the first non-digit. */
__attribute__((always_inline)) inline const char *
decimal_digits(const char *p, const char *end, uint64_t *m)
{
	while (end - p >= 8 && eight_digits(p)) {
		*m = *m * 100000000u + eight_digits_value(p);
		p += 8;
	}
	while (p < end && is_digit(*p))
		*m = *m * 10 + (uint64_t)(*p++ - '0');
	return p;
}

/*
 * The JSON number at p < end (number_end's grammar) read into d in the same
 * pass; its end, or nullptr when p holds no JSON number followed by a delimiter.
 */
__attribute__((always_inline)) inline const char *
decimal_scan(const char *p, const char *end, decimal *d)
{
	const char *start, *frac;
	int64_t e = 0;
	bool eneg;

	*d = decimal{0, 0, 0, *p == '-'};
	p += d->neg;
	if (p == end || !is_digit(*p))
		return nullptr;
	start = p;
	p = *p == '0' ? p + 1 : decimal_digits(p, end, &d->mant);
	if (p < end && *p == '.') {
		frac = ++p;
		if ((p = decimal_digits(p, end, &d->mant)) == frac)
			return nullptr;
		d->exp10 = -(p - frac);
	}
	d->digits = (p - start) - (d->exp10 != 0);	/* the '.' is no digit */
	if (p < end && (*p == 'e' || *p == 'E')) {
		eneg = ++p < end && *p == '-';
		p += p < end && (*p == '+' || *p == '-');
		if (p == end || !is_digit(*p))
			return nullptr;
		for (; p < end && is_digit(*p); p++)
			e = e < 100000 ? e * 10 + (*p - '0') : e;
		d->exp10 += eneg ? -e : e;
	}
	if (p < end && !is_delim(*p))
		return nullptr;
	return p;
}

/* Powers of ten exact in double (Clinger's fast path). */
const double exact_pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * The decimal correctly rounded to double when one IEEE multiply or divide
 * of exact operands gives it (mantissa <= 2^53, |exp10| <= 22); false otherwise.
 */
inline bool
decimal_fast_double(const decimal &d, double *out)
{
	if (d.digits > 19 || d.mant > (1ull << 53) || d.exp10 < -22 || d.exp10 > 22)
		return false;
	double v = (double)d.mant;
	v = d.exp10 < 0 ? v / exact_pow10[-d.exp10] : v * exact_pow10[d.exp10];
	*out = d.neg ? -v : v;
	return true;
}

/* Whether the token at p spells NaN or an infinity in any of the usual ways. */
bool
is_nonfinite_spelling(const token_text &t)
{
	const char *s = t.s + (t.s[0] == '-' || t.s[0] == '+');

	return strcasecmp(s, "nan") == 0 || strcasecmp(s, "inf") == 0 ||
	    strcasecmp(s, "infinity") == 0;
}

/* The message for the value at p that element idx of dt could not be decoded from. */
int
element_error(const char *p, const char *end, size_t idx, enum graph_dtype dt, char **cause)
{
	token_text t = token_at(p, end);
	const char *want = dt == GRAPH_DT_BOOL ? "true or false (BOOL data are JSON true/false)" :
	    "a number";
	bool integral;

	if (*p == '"')
		return error_set(cause, "element %zu: a string, not %s", idx, want);
	if (*p == '{')
		return error_set(cause, "element %zu: an object, not %s", idx, want);
	if (*p == ',' || *p == ']' || *p == '}')
		return error_set(cause, "element %zu: a value is missing before '%c'", idx, *p);
	if (is_nonfinite_spelling(t))
		return error_set(cause, "element %zu: %s is not a JSON number (JSON has no NaN or "
		    "Infinity)", idx, t.s);
	if (strcmp(t.s, "true") == 0 || strcmp(t.s, "false") == 0 || strcmp(t.s, "null") == 0 ||
	    number_end(p, end, &integral) == nullptr)
		return error_set(cause, "element %zu: '%s' is not %s", idx, t.s,
		    dt == GRAPH_DT_BOOL || strcmp(t.s, "null") == 0 || strcmp(t.s, "true") == 0 ||
		    strcmp(t.s, "false") == 0 ? want : "a JSON number");
	if (dt == GRAPH_DT_BOOL)
		return error_set(cause, "element %zu: %s is not %s", idx, t.s, want);
	if (!integral && dt != GRAPH_DT_F32 && dt != GRAPH_DT_F16)
		return error_set(cause, "element %zu: %s is not an integer (%s)", idx, t.s,
		    dtype_name(dt));
	return error_set(cause, "element %zu: %s is out of range for %s", idx, t.s, dtype_name(dt));
}

/*
 * Parse an FP32 element at p; the end of its text, or nullptr (element_error
 * says why).  A double from the fast path rounds to the right float unless it
 * lies exactly halfway between two floats (or is subnormal as a float): then
 * fast_float decides from the text.
 */
__attribute__((always_inline)) inline const char *
parse_f32(const char *p, const char *end, float *out)
{
	decimal d;
	double v;
	uint64_t bits;
	const char *q;

	if (*p == '0' && end - p >= 2 && (p[1] == ',' || p[1] == ']')) {
		*out = 0.0f;	/* zero pixels, ReLU outputs: a third to two thirds of typical data */
		return p + 1;
	}
	if ((q = decimal_scan(p, end, &d)) == nullptr)
		return nullptr;
	if (d.mant == 0 && d.digits <= 19) {
		*out = d.neg ? -0.0f : 0.0f;
		return q;
	}
	if (decimal_fast_double(d, &v) && std::fabs(v) >= 0x1p-126) {
		memcpy(&bits, &v, sizeof bits);
		if ((bits & 0x1fffffffu) != 0x10000000u) {
			*out = (float)v;
			return q;
		}
	}
	auto r = fast_float::from_chars(p, q, *out);
	if (r.ptr != q || std::isinf(*out))
		return nullptr;
	return q;
}

/* The half nearest to x, ties to even; -1 when x rounds past 65504. */
int
half_from_double(double x, uint16_t *h)
{
	uint16_t sign = std::signbit(x) ? 0x8000 : 0;
	double a = std::fabs(x), r;
	int e;

	if (!(a < 65520.0))
		return -1;
	if (a < 0x1p-14) {
		/* Subnormal step 2^-24; a result of 1024 is 0x0400, the smallest normal. */
		*h = (uint16_t)(sign | (uint16_t)std::nearbyint(a * 0x1p24));
		return 0;
	}
	std::frexp(a, &e);	/* a in [2^(e-1), 2^e) */
	r = std::nearbyint(std::ldexp(a, 11 - e));	/* 11 significant bits: [1024, 2048] */
	if (r == 2048.0)
		r = 1024.0, e++;
	*h = (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(r - 1024.0));
	return 0;
}

/* The float value of half h (exact). */
float
half_to_float(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v;

	if (e == 0)
		v = std::ldexp((float)m, -24);
	else if (e == 31)
		v = m != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
	else
		v = std::ldexp((float)(m | 1024), e - 25);
	return (h & 0x8000) != 0 ? -v : v;
}

/* Parse an FP16 element at p (decimal to double to half); its end, or nullptr. */
inline const char *
parse_f16(const char *p, const char *end, uint16_t *out)
{
	decimal d;
	double v;
	const char *q = decimal_scan(p, end, &d);

	if (q == nullptr)
		return nullptr;
	if (!decimal_fast_double(d, &v)) {
		auto r = fast_float::from_chars(p, q, v);
		if (r.ptr != q || std::isinf(v))
			return nullptr;
	}
	return half_from_double(v, out) == 0 ? q : nullptr;
}

/* Parse an integer element at p into [lo, hi]; its end, or nullptr. */
template <typename T>
inline const char *
parse_int(const char *p, const char *end, T *out)
{
	constexpr int64_t lo = std::numeric_limits<T>::min();
	constexpr uint64_t hi = std::numeric_limits<T>::max();
	bool integral, neg = *p == '-';
	const char *q = number_end(p, end, &integral), *d = p + neg;
	uint64_t mag = 0;

	if (q == nullptr || !integral || q - d > 20)
		return nullptr;
	for (; d < q; d++) {
		unsigned dig = (unsigned)(*d - '0');
		if (mag > (UINT64_MAX - dig) / 10)
			return nullptr;
		mag = mag * 10 + dig;
	}
	if (!neg && mag > hi)
		return nullptr;
	if (neg && mag > (uint64_t)0 - (uint64_t)lo)
		return nullptr;
	*out = neg ? (T)(int64_t)(0 - mag) : (T)mag;
	return q;
}

/* Parse a BOOL element (true/false) at p; its end, or nullptr. */
inline const char *
parse_bool(const char *p, const char *end, uint8_t *out)
{
	size_t left = (size_t)(end - p);

	if (left >= 4 && memcmp(p, "true", 4) == 0 && (left == 4 || is_delim(p[4]))) {
		*out = 1;
		return p + 4;
	}
	if (left >= 5 && memcmp(p, "false", 5) == 0 && (left == 5 || is_delim(p[5]))) {
		*out = 0;
		return p + 5;
	}
	return nullptr;
}

/* Element parsers by dtype, for the walker's template. */
struct f32_elem {
	static const char *parse(const char *p, const char *e, void *o, size_t i)
	{ return parse_f32(p, e, static_cast<float *>(o) + i); }
};
struct f16_elem {
	static const char *parse(const char *p, const char *e, void *o, size_t i)
	{ return parse_f16(p, e, static_cast<uint16_t *>(o) + i); }
};
template <typename T> struct int_elem {
	static const char *parse(const char *p, const char *e, void *o, size_t i)
	{ return parse_int<T>(p, e, static_cast<T *>(o) + i); }
};
struct bool_elem {
	static const char *parse(const char *p, const char *e, void *o, size_t i)
	{ return parse_bool(p, e, static_cast<uint8_t *>(o) + i); }
};

/* The decoder's state: the text, the shape and where the walk is. */
struct walk {
	const char *base, *p, *end;
	enum graph_dtype dt;
	const int64_t *shape;
	int ndims;
	size_t out_elems;
	int leaf;			/* the depth whose items are numbers: 1 (flat) or ndims */
	int depth;			/* arrays open */
	int64_t count[GRAPH_MAX_DIMS];	/* items so far in each open array */
	void *out;
	size_t idx;			/* elements stored */
	char **cause;
};

/* The shape as "[a,b,c]", for messages. */
struct shape_text {
	char s[GRAPH_MAX_DIMS * 21 + 3];
};

shape_text
shape_format(const int64_t *shape, int ndims)
{
	shape_text t;
	size_t n = 0;

	t.s[n++] = '[';
	for (int i = 0; i < ndims; i++)
		n += (size_t)snprintf(t.s + n, sizeof t.s - n, "%s%" PRId64, i ? "," : "", shape[i]);
	snprintf(t.s + n, sizeof t.s - n, "]");
	return t;
}

/* The path of the array open at depth d ("data", "data[1][0]"), for messages. */
struct path_text {
	char s[GRAPH_MAX_DIMS * 22 + 8];
};

path_text
path_format(const walk &w, int d)
{
	path_text t;
	size_t n = (size_t)snprintf(t.s, sizeof t.s, "data");

	for (int i = 0; i < d - 1; i++)
		n += (size_t)snprintf(t.s + n, sizeof t.s - n, "[%" PRId64 "]", w.count[i]);
	return t;
}

/* Items the array open at depth d must hold. */
inline int64_t
walk_expected(const walk &w, int d)
{
	return w.leaf == 1 ? (int64_t)w.out_elems : w.shape[d - 1];
}

/* The message for an array at the current depth with too many or too few items. */
int
walk_count_error(const walk &w, bool too_many)
{
	shape_text st = shape_format(w.shape, w.ndims);
	path_text pt = path_format(w, w.depth);
	int64_t want = walk_expected(w, w.depth);

	if (w.leaf == 1 && too_many)
		return error_set(w.cause, "data has more than the %" PRId64 " elements of shape %s",
		    want, st.s);
	if (w.leaf == 1)
		return error_set(w.cause, "data has %" PRId64 " elements, shape %s has %" PRId64,
		    w.count[0], st.s, want);
	if (too_many)
		return error_set(w.cause, "%s has more than the %" PRId64 " items dimension %d of "
		    "shape %s allows", pt.s, want, w.depth - 1, st.s);
	return error_set(w.cause, "%s has %" PRId64 " items, dimension %d of shape %s is %" PRId64,
	    pt.s, w.count[w.depth - 1], w.depth - 1, st.s, want);
}

/* The message for a structural error at p. */
int
walk_syntax_error(const walk &w, const char *what)
{
	if (w.p >= w.end)
		return error_set(w.cause, "data ends before its array is closed (after %zu "
		    "elements)", w.idx);
	token_text t = token_at(w.p, w.end);
	return error_set(w.cause, "byte %zu of data: %s, found '%s'", (size_t)(w.p - w.base), what,
	    t.s[0] ? t.s : "?");
}

/* Open a nested array at p (in a position that needs one); -1 with the message otherwise. */
int
walk_open(walk &w)
{
	if (*w.p == ',' || *w.p == ']')
		return walk_syntax_error(w, "an array is missing");
	if (*w.p != '[') {
		shape_text st = shape_format(w.shape, w.ndims);
		path_text pt = path_format(w, w.depth);
		return error_set(w.cause, "%s[%" PRId64 "]: a value where an array belongs (data "
		    "nested as shape %s)", pt.s, w.count[w.depth - 1], st.s);
	}
	if (w.count[w.depth - 1] == walk_expected(w, w.depth))
		return walk_count_error(w, true);
	w.depth++;
	w.count[w.depth - 1] = 0;
	w.p++;
	return 0;
}

/* Close the array at the current depth (p at its ']'); 1 when it was the outermost. */
int
walk_close(walk &w)
{
	if (w.count[w.depth - 1] != walk_expected(w, w.depth))
		return walk_count_error(w, false);
	w.p++;
	if (--w.depth == 0)
		return 1;
	w.count[w.depth - 1]++;
	return 0;
}

/* Store one element at p (in a position that needs a number); -1 with the message otherwise. */
template <class Elem>
inline int
walk_element(walk &w)
{
	const char *q;

	if (*w.p == '[') {
		shape_text st = shape_format(w.shape, w.ndims);
		return error_set(w.cause, "element %zu: an array where a value belongs (data nested "
		    "deeper than shape %s)", w.idx, st.s);
	}
	if (w.count[w.depth - 1] == walk_expected(w, w.depth))
		return walk_count_error(w, true);
	if ((q = Elem::parse(w.p, w.end, w.out, w.idx)) == nullptr)
		return element_error(w.p, w.end, w.idx, w.dt, w.cause);
	w.p = q;
	w.idx++;
	w.count[w.depth - 1]++;
	return 0;
}

/*
 * Store elements at leaf depth while each is followed directly by ',' and a
 * value: the hot loop, its state in locals.  1: stopped after a ',' (a value
 * or ']' is next); 0: stopped after an element; -1: error.
 */
template <class Elem>
int
walk_run(walk &w)
{
	const char *p = w.p, *end = w.end, *q;
	size_t idx = w.idx;
	int64_t c = w.count[w.depth - 1], want = walk_expected(w, w.depth);
	int r;

	for (;;) {
		if (c == want || *p == '[' || (q = Elem::parse(p, end, w.out, idx)) == nullptr) {
			w.p = p, w.idx = idx, w.count[w.depth - 1] = c;
			return walk_element<Elem>(w) != 0 ? -1 : 0;	/* it words the error */
		}
		p = q, idx++, c++;
		if (p == end || *p != ',') {
			r = 0;
			break;
		}
		if (++p == end || is_ws(*p) || *p == ']') {
			r = 1;
			break;
		}
	}
	w.p = p, w.idx = idx, w.count[w.depth - 1] = c;
	return r;
}

/* After a value: past ',' (1: a value follows), or ']' closes arrays (0: done); -1 on error. */
int
walk_after_value(walk &w)
{
	for (;;) {
		w.p = skip_ws(w.p, w.end);
		if (w.p == w.end)
			return walk_syntax_error(w, "");
		if (*w.p == ',') {
			w.p++;
			return 1;
		}
		if (*w.p != ']')
			return walk_syntax_error(w, "expected ',' or ']'");
		int r = walk_close(w);
		if (r != 0)
			return r < 0 ? -1 : 0;
	}
}

/* Walk the arrays from just inside the outermost '['; 0 when the outermost one is closed. */
template <class Elem>
int
walk_arrays(walk &w)
{
	bool after_comma = false;
	int r;

	for (;;) {
		w.p = skip_ws(w.p, w.end);
		if (w.p == w.end)
			return walk_syntax_error(w, "");
		if (*w.p == ']' && !after_comma) {
			if ((r = walk_close(w)) != 0)
				return r < 0 ? -1 : 0;
		} else if (w.depth < w.leaf) {
			if (walk_open(w) != 0)
				return -1;
			after_comma = false;
			continue;
		} else if ((r = walk_run<Elem>(w)) != 0) {
			if (r < 0)
				return -1;
			after_comma = true;
			continue;
		}
		if ((r = walk_after_value(w)) <= 0)
			return r;
		after_comma = true;
	}
}

/* Check the shape against out_elems; -1 with the message when they disagree. */
int
shape_check(const int64_t *shape, int ndims, size_t out_elems, char **cause)
{
	uint64_t n = 1;

	if (ndims < 0 || ndims > GRAPH_MAX_DIMS || (ndims > 0 && shape == nullptr))
		return error_set(cause, "a shape of %d dimensions is not supported (at most %d)",
		    ndims, GRAPH_MAX_DIMS);
	for (int i = 0; i < ndims; i++) {
		if (shape[i] < 0)
			return error_set(cause, "shape dimension %d is negative (%" PRId64 ")", i,
			    shape[i]);
		if (shape[i] != 0 && n > UINT64_MAX / (uint64_t)shape[i])
			return error_set(cause, "shape %s has too many elements",
			    shape_format(shape, ndims).s);
		n *= (uint64_t)shape[i];
	}
	if (n != out_elems)
		return error_set(cause, "shape %s has %" PRIu64 " elements, the buffer %zu",
		    shape_format(shape, ndims).s, n, out_elems);
	return 0;
}

/* Run the walker with the element parser of w.dt. */
int
walk_by_dtype(walk &w)
{
	switch (w.dt) {
	case GRAPH_DT_F32: return walk_arrays<f32_elem>(w);
	case GRAPH_DT_F16: return walk_arrays<f16_elem>(w);
	case GRAPH_DT_I64: return walk_arrays<int_elem<int64_t>>(w);
	case GRAPH_DT_I32: return walk_arrays<int_elem<int32_t>>(w);
	case GRAPH_DT_I8: return walk_arrays<int_elem<int8_t>>(w);
	case GRAPH_DT_U8: return walk_arrays<int_elem<uint8_t>>(w);
	case GRAPH_DT_BOOL: return walk_arrays<bool_elem>(w);
	default: return error_set(w.cause, "datatype %d has no JSON form", (int)w.dt);
	}
}

} /* namespace */

/* Decode the JSON array at text into out (see tensor_text.h). */
extern "C" int
tensor_text_decode(const char *text, size_t len, enum graph_dtype dt, const int64_t *shape,
    int ndims, void *out, size_t out_elems, size_t *consumed, char **cause)
{
	walk w;

	if (shape_check(shape, ndims, out_elems, cause) != 0)
		return -1;
	if ((unsigned)dt >= GRAPH_DT_COUNT)
		return error_set(cause, "datatype %d has no JSON form", (int)dt);
	w.base = text;
	w.end = text + len;
	w.p = skip_ws(text, w.end);
	if (w.p == w.end || *w.p != '[')
		return error_set(cause, "data must be a JSON array%s", w.p == w.end ? ", it is empty" : "");
	w.dt = dt, w.shape = shape, w.ndims = ndims, w.out_elems = out_elems, w.out = out;
	w.cause = cause, w.idx = 0, w.depth = 1, w.count[0] = 0;
	w.p = skip_ws(w.p + 1, w.end);
	w.leaf = w.p < w.end && *w.p == '[' && ndims >= 2 ? ndims : 1;
	if (walk_by_dtype(w) != 0)
		return -1;
	if (consumed != nullptr) {
		*consumed = (size_t)(w.p - text);
		return 0;
	}
	if ((w.p = skip_ws(w.p, w.end)) != w.end)
		return error_set(cause, "trailing characters after the data array: '%s'",
		    token_at(w.p, w.end).s);
	return 0;
}

namespace {

/* The longest text of one element of dt, without its separator; 0 for an unknown dt. */
size_t
encode_width(enum graph_dtype dt)
{
	switch (dt) {
	case GRAPH_DT_F32:
	case GRAPH_DT_F16:
		return 16;	/* "-1.17549435e-38" at most, shortest form */
	case GRAPH_DT_I64: return 20;
	case GRAPH_DT_I32: return 11;
	case GRAPH_DT_I8: return 4;
	case GRAPH_DT_U8: return 3;
	case GRAPH_DT_BOOL: return 5;
	default: return 0;
	}
}

/* Print float v shortest round-trip at p; nullptr when JSON cannot carry it. */
inline char *
put_float(char *p, char *end, float v)
{
	if (v == 0.0f) {	/* common in inputs and ReLU outputs */
		/* "-0" reads as the integer 0 in jansson and Python, losing the sign: "-0.0" keeps it. */
		if (std::signbit(v))
			return memcpy(p, "-0.0", 4), p + 4;
		*p++ = '0';
		return p;
	}
	if (!std::isfinite(v))
		return nullptr;
	return std::to_chars(p, end, v).ptr;
}

/* Print the n elements of data as "v,v,...,v" at p (room checked by the caller); nullptr at a non-finite element i. */
template <typename T>
char *
put_elements(char *p, char *end, const void *data, size_t n, size_t *bad)
{
	const T *v = static_cast<const T *>(data);

	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			*p++ = ',';
		if constexpr (std::is_same<T, float>::value) {
			if ((p = put_float(p, end, v[i])) == nullptr)
				return *bad = i, nullptr;
		} else if constexpr (std::is_same<T, uint16_t>::value) {
			if ((p = put_float(p, end, half_to_float(v[i]))) == nullptr)
				return *bad = i, nullptr;
		} else {
			p = std::to_chars(p, end, v[i]).ptr;
		}
	}
	return p;
}

/* Print n BOOL bytes as "true,false,...". */
char *
put_bools(char *p, const void *data, size_t n)
{
	const uint8_t *v = static_cast<const uint8_t *>(data);

	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			*p++ = ',';
		if (v[i] != 0)
			memcpy(p, "true", 4), p += 4;
		else
			memcpy(p, "false", 5), p += 5;
	}
	return p;
}

/* Print the elements of data by dtype; nullptr with *bad at a non-finite float. */
char *
put_by_dtype(enum graph_dtype dt, char *p, char *end, const void *data, size_t n, size_t *bad)
{
	switch (dt) {
	case GRAPH_DT_F32: return put_elements<float>(p, end, data, n, bad);
	case GRAPH_DT_F16: return put_elements<uint16_t>(p, end, data, n, bad);
	case GRAPH_DT_I64: return put_elements<int64_t>(p, end, data, n, bad);
	case GRAPH_DT_I32: return put_elements<int32_t>(p, end, data, n, bad);
	case GRAPH_DT_I8: return put_elements<int8_t>(p, end, data, n, bad);
	case GRAPH_DT_U8: return put_elements<uint8_t>(p, end, data, n, bad);
	default: return put_bools(p, data, n);
	}
}

/* "NaN", "Infinity" or "-Infinity" for the non-finite float element i of data. */
const char *
nonfinite_name(enum graph_dtype dt, const void *data, size_t i)
{
	float v = dt == GRAPH_DT_F16 ? half_to_float(static_cast<const uint16_t *>(data)[i]) :
	    static_cast<const float *>(data)[i];

	return std::isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity";
}

} /* namespace */

/* Bytes tensor_text_encode may need (see tensor_text.h). */
extern "C" size_t
tensor_text_encode_bound(enum graph_dtype dt, size_t n)
{
	size_t w = encode_width(dt) + 1;

	if (w == 1 || n > (SIZE_MAX - 3) / w)
		return SIZE_MAX;
	return n * w + 3;	/* '[', ']', NUL; one separator per element */
}

/* Print n elements of dt as a JSON array (see tensor_text.h). */
extern "C" int
tensor_text_encode(enum graph_dtype dt, const void *data, size_t n, char *buf, size_t cap,
    size_t *len, char **cause)
{
	size_t need = tensor_text_encode_bound(dt, n), bad = 0;
	char *p;

	if ((unsigned)dt >= GRAPH_DT_COUNT)
		return error_set(cause, "datatype %d has no JSON form", (int)dt);
	if (need == SIZE_MAX || cap < need)
		return error_set(cause, "%zu %s elements need up to %zu bytes of text, the buffer "
		    "has %zu", n, dtype_name(dt), need, cap);
	buf[0] = '[';
	if ((p = put_by_dtype(dt, buf + 1, buf + cap, data, n, &bad)) == nullptr)
		return error_set(cause, "element %zu: %s %s has no JSON form (JSON has no NaN or "
		    "Infinity)", bad, dtype_name(dt), nonfinite_name(dt, data, bad));
	*p++ = ']';
	*p = '\0';
	*len = (size_t)(p - buf);
	return 0;
}

namespace {

/* Deepest nesting the body scanner follows; a request needs a handful of levels. */
constexpr size_t SCAN_MAX_DEPTH = 1024;

/* The request body scanner's state. */
struct scan {
	const char *b;
	size_t len, pos;
	char **cause;
};

/* Skip whitespace; whether anything is left. */
inline bool
scan_ws(scan &s)
{
	while (s.pos < s.len && is_ws(s.b[s.pos]))
		s.pos++;
	return s.pos < s.len;
}

/* A scan error at the current byte. */
int
scan_error(scan &s, const char *what)
{
	if (s.pos >= s.len)
		return error_set(s.cause, "request body ends early: %s", what);
	return error_set(s.cause, "byte %zu of the request body: %s", s.pos, what);
}

/* Skip the string at pos (at its '"'); its raw contents in [*from, *to). */
int
scan_string(scan &s, size_t *from, size_t *to)
{
	*from = ++s.pos;
	while (s.pos < s.len) {
		char c = s.b[s.pos];
		if (c == '"') {
			*to = s.pos++;
			return 0;
		}
		s.pos += c == '\\' ? 2 : 1;
	}
	s.pos = s.len;
	return scan_error(s, "unterminated string");
}

/* Whether c may open, close or quote something: '"', '[', ']', '{', '}'. */
inline bool
is_structural(char c)
{
	return c == '"' || ((unsigned char)c & 0xd9) == 0x59;	/* [ ] { } differ only in bits 0x26 */
}

/*
 * The first byte at or after pos that is_structural, or len; 16 bytes at a
 * time where SSE2 is there (a data array is mostly digits and commas).  A few
 * letters ('Y', '_', 'y', DEL) stop the wide scan too; the caller steps over them.
 */
inline size_t
skip_plain(const char *b, size_t pos, size_t len)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), mask = _mm_set1_epi8((char)0xd9),
	    bracket = _mm_set1_epi8(0x59);

	while (len - pos >= 16) {
		__m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + pos));
		int hit = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
		    _mm_cmpeq_epi8(_mm_and_si128(v, mask), bracket)));
		if (hit != 0)
			return pos + (size_t)__builtin_ctz((unsigned)hit);
		pos += 16;
	}
#endif
	while (pos < len && !is_structural(b[pos]))
		pos++;
	return pos;
}

/* Skip an array or object at pos, brackets matched by kind (strings skipped whole). */
int
scan_container(scan &s)
{
	uint64_t kinds[SCAN_MAX_DEPTH / 64];	/* bit set: '{' at that depth */
	size_t depth = 0, from, to;

	for (;;) {
		if (depth > 0 && (s.pos = skip_plain(s.b, s.pos, s.len)) == s.len)
			return scan_error(s, "unterminated array or object");
		char c = s.b[s.pos];
		if (c == '"') {
			if (scan_string(s, &from, &to) != 0)
				return -1;
			continue;
		}
		if (c == '[' || c == '{') {
			if (depth == SCAN_MAX_DEPTH)
				return scan_error(s, "nested deeper than 1024 levels");
			kinds[depth / 64] = (kinds[depth / 64] & ~(1ull << depth % 64)) |
			    (uint64_t)(c == '{') << depth % 64;
			depth++;
		} else if (c == ']' || c == '}') {
			if (((kinds[(depth - 1) / 64] >> (depth - 1) % 64 & 1) != (c == '}')))
				return scan_error(s, "mismatched bracket");
			if (--depth == 0)
				return s.pos++, 0;
		}
		s.pos++;
	}
}

/* Skip one value at pos (after whitespace). */
int
scan_value(scan &s)
{
	size_t from, to, start;

	if (!scan_ws(s))
		return scan_error(s, "a value is missing");
	if (s.b[s.pos] == '"')
		return scan_string(s, &from, &to);
	if (s.b[s.pos] == '[' || s.b[s.pos] == '{')
		return scan_container(s);
	for (start = s.pos; s.pos < s.len && !is_delim(s.b[s.pos]); s.pos++)
		if (s.b[s.pos] == '[' || s.b[s.pos] == '{' || s.b[s.pos] == '"' || s.b[s.pos] == ':')
			break;
	return s.pos > start ? 0 : scan_error(s, "a value is missing");
}

/* The value of hex digit c, or -1. */
int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One character of a raw JSON string at *i (escapes decoded, -1 for one that is not ASCII or bad). */
int
string_char(const char *raw, size_t n, size_t *i)
{
	static const char plain[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	int v = 0;

	if (raw[*i] != '\\')
		return (unsigned char)raw[(*i)++];
	if (*i + 1 >= n)
		return -1;
	for (size_t k = 0; k < sizeof plain - 1; k += 2)
		if (raw[*i + 1] == plain[k])
			return *i += 2, plain[k + 1];
	if (raw[*i + 1] != 'u' || *i + 6 > n)
		return -1;
	for (size_t k = 2; k < 6; k++) {
		int h = hex_value(raw[*i + k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	*i += 6;
	return v < 0x80 ? v : -1;
}

/* Whether a key's raw text (escapes as sent) spells name. */
bool
key_is(const char *raw, size_t n, const char *name)
{
	size_t i = 0;

	while (i < n) {
		int c = string_char(raw, n, &i);
		if (c <= 0 || c != (unsigned char)*name++)
			return false;
	}
	return *name == '\0';
}

/* Walk the members of the object at pos; on_member(key, key_len) must consume each value. */
template <class F>
int
scan_members(scan &s, F on_member)
{
	size_t from, to;

	s.pos++;	/* '{' */
	if (scan_ws(s) && s.b[s.pos] == '}')
		return s.pos++, 0;
	for (;;) {
		if (!scan_ws(s) || s.b[s.pos] != '"')
			return scan_error(s, "expected a member name");
		if (scan_string(s, &from, &to) != 0)
			return -1;
		if (!scan_ws(s) || s.b[s.pos] != ':')
			return scan_error(s, "expected ':'");
		s.pos++;
		if (!scan_ws(s))
			return scan_error(s, "a value is missing");
		if (on_member(s.b + from, to - from) != 0)
			return -1;
		if (!scan_ws(s))
			return scan_error(s, "unterminated object");
		if (s.b[s.pos] == '}')
			return s.pos++, 0;
		if (s.b[s.pos] != ',')
			return scan_error(s, "expected ',' or '}'");
		s.pos++;
	}
}

/* Record the span of input i's "data" value, skipping its other members. */
int
scan_input(scan &s, size_t i, struct tensor_text_span *span)
{
	return scan_members(s, [&](const char *key, size_t n) {
		if (!key_is(key, n, "data"))
			return scan_value(s);
		if (span->present)
			return error_set(s.cause, "inputs[%zu]: field 'data' appears twice", i);
		span->off = s.pos;
		if (scan_value(s) != 0)
			return -1;
		span->len = s.pos - span->off;
		span->present = 1;
		return 0;
	});
}

/* Walk the "inputs" array at pos, one span per element. */
int
scan_inputs(scan &s, struct tensor_text_span *spans, size_t max, size_t *n)
{
	s.pos++;	/* '[' */
	if (scan_ws(s) && s.b[s.pos] == ']')
		return s.pos++, 0;
	for (;;) {
		if (!scan_ws(s))
			return scan_error(s, "unterminated inputs array");
		if (*n == max)
			return error_set(s.cause, "more than %zu inputs", max);
		spans[*n] = tensor_text_span{0, 0, 0};
		if ((s.b[s.pos] == '{' ? scan_input(s, *n, &spans[*n]) : scan_value(s)) != 0)
			return -1;
		++*n;
		if (!scan_ws(s))
			return scan_error(s, "unterminated inputs array");
		if (s.b[s.pos] == ']')
			return s.pos++, 0;
		if (s.b[s.pos] != ',')
			return scan_error(s, "expected ',' or ']' in inputs");
		s.pos++;
	}
}

} /* namespace */

/* Locate each inputs[i].data value in a request body (see tensor_text.h). */
extern "C" int
tensor_text_find_data(const char *body, size_t len, struct tensor_text_span *spans,
    size_t max_spans, size_t *nspans, char **cause)
{
	scan s = {body, len, 0, cause};
	bool seen = false;

	*nspans = 0;
	if (!scan_ws(s) || body[s.pos] != '{')
		return scan_error(s, "the request is not a JSON object");
	if (scan_members(s, [&](const char *key, size_t n) {
		if (!key_is(key, n, "inputs") || body[s.pos] != '[')
			return scan_value(s);
		if (seen)
			return error_set(cause, "field 'inputs' appears twice");
		seen = true;
		return scan_inputs(s, spans, max_spans, nspans);
	}) != 0)
		return -1;
	if (scan_ws(s))
		return scan_error(s, "trailing characters after the request object");
	return 0;
}

/* Copy body with each present span replaced by null (see tensor_text.h). */
extern "C" int
tensor_text_mask_data(const char *body, size_t len, const struct tensor_text_span *spans,
    size_t nspans, char *out, size_t cap, size_t *out_len, char **cause)
{
	size_t from = 0, n = 0;

	if (nspans > (SIZE_MAX - len - 1) / 4 || cap < TENSOR_TEXT_MASK_BOUND(len, nspans))
		return error_set(cause, "the masked body needs %zu bytes, the buffer has %zu",
		    TENSOR_TEXT_MASK_BOUND(len, nspans), cap);
	for (size_t i = 0; i < nspans; i++) {
		if (!spans[i].present)
			continue;
		if (spans[i].off < from || spans[i].len > len - spans[i].off)
			return error_set(cause, "span %zu lies outside the body or out of order", i);
		memcpy(out + n, body + from, spans[i].off - from);
		n += spans[i].off - from;
		memcpy(out + n, "null", 4);
		n += 4;
		from = spans[i].off + spans[i].len;
	}
	memcpy(out + n, body + from, len - from);
	n += len - from;
	out[n] = '\0';
	*out_len = n;
	return 0;
}
