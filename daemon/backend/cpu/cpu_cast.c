/*
 * cpu_cast.c: Cast between every graph dtype (float via float, integers via
 * int64, F16 rounded to nearest even), and between STRING and the others as
 * onnxruntime does it (its text in, its text out).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_impl.h"
#include "device_elementwise.h"

/* Whether dt holds floating-point values. */
static int
is_float(enum graph_dtype dt)
{
	return dt == GRAPH_DT_F32 || dt == GRAPH_DT_F16;
}

/* Element i of a float tensor. */
static inline float
load_f(enum graph_dtype dt, const void *p, int64_t i)
{
	return dt == GRAPH_DT_F32 ? ((const float *)p)[i] : cpu_f16_to_f32(((const uint16_t *)p)[i]);
}

/* Element i of an integer or bool tensor. */
static inline int64_t
load_i(enum graph_dtype dt, const void *p, int64_t i)
{
	switch (dt) {
	case GRAPH_DT_I64: return ((const int64_t *)p)[i];
	case GRAPH_DT_I32: return ((const int32_t *)p)[i];
	case GRAPH_DT_I8: return ((const int8_t *)p)[i];
	default: return ((const uint8_t *)p)[i];
	}
}

/* Store an integer into element i, wrapping like a C conversion (bool: nonzero). */
static inline void
store_i(enum graph_dtype dt, void *p, int64_t i, int64_t v)
{
	switch (dt) {
	case GRAPH_DT_I64: ((int64_t *)p)[i] = v; break;
	case GRAPH_DT_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
	case GRAPH_DT_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
	case GRAPH_DT_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
	default: ((uint8_t *)p)[i] = v != 0; break;
	}
}

/* Store a float into element i of any dtype. */
static inline void
store_f(enum graph_dtype dt, void *p, int64_t i, float v)
{
	if (dt == GRAPH_DT_F32)
		((float *)p)[i] = v;
	else if (dt == GRAPH_DT_F16)
		((uint16_t *)p)[i] = cpu_f32_to_f16(v);
	else if (dt == GRAPH_DT_BOOL)
		((uint8_t *)p)[i] = v != 0.0f;
	else
		store_i(dt, p, i, device_float_to_int(v));
}

/* Cast elements [lo, hi). */
static void
cast_span(enum graph_dtype from, const void *x, enum graph_dtype to, void *y, int64_t lo, int64_t hi)
{
	if (is_float(from)) {
		for (int64_t i = lo; i < hi; i++)
			store_f(to, y, i, load_f(from, x, i));
	} else if (is_float(to)) {
		for (int64_t i = lo; i < hi; i++)
			store_f(to, y, i, (float)load_i(from, x, i));
	} else {
		for (int64_t i = lo; i < hi; i++)
			store_i(to, y, i, load_i(from, x, i));
	}
}

/*
 * Parse STRING element i of x into element i of y (dt not STRING), as
 * onnxruntime does: strtod (std::stod) then narrowed for floats, strtoll
 * (std::stoll) for signed integers and strtoull (std::stoull) for UINT8
 * and BOOL, wrapped to the width; text that is no number or out of the
 * parser's range fails the request, as it fails onnxruntime's run.
 */
static int
cast_parse(const void *x, enum graph_dtype to, void *y, int64_t i, char **cause)
{
	char text[GRAPH_STRING_SLOT], *end;
	size_t len;
	const char *p = graph_string_get((const char *)x + (size_t)i * GRAPH_STRING_SLOT, &len);
	double d = 0;
	int64_t v = 0;

	memcpy(text, p, len);
	text[len] = '\0';
	errno = 0;
	if (is_float(to))
		d = strtod(text, &end);
	else if (to == GRAPH_DT_U8 || to == GRAPH_DT_BOOL)
		v = (int64_t)strtoull(text, &end, 10);
	else
		v = strtoll(text, &end, 10);
	if (end == text)
		return cpu_fail(cause, "Cast: string element %lld ('%.40s') is not a number",
		    (long long)i, text);
	if (errno == ERANGE)
		return cpu_fail(cause, "Cast: string element %lld ('%.40s') is out of range",
		    (long long)i, text);
	if (is_float(to))
		store_f(to, y, i, (float)d);
	else
		store_i(to, y, i, v);
	return 0;
}

/*
 * Element i of x (dt not STRING) as text into STRING element i of y, as
 * onnxruntime writes it: integers in decimal, BOOL as 1 or 0, floats (FP16
 * through float) as %.8g (8 significant digits: not always enough to read
 * back the same float, but what onnxruntime prints), NaN as "NaN" and
 * infinities as "INF" / "-INF".
 */
static void
cast_format(enum graph_dtype from, const void *x, void *y, int64_t i)
{
	char text[64];
	float f;
	int n = 0;

	if (!is_float(from)) {
		n = snprintf(text, sizeof text, "%" PRId64, load_i(from, x, i));
	} else if (isnan(f = load_f(from, x, i))) {
		n = snprintf(text, sizeof text, "NaN");
	} else if (isinf(f)) {
		n = snprintf(text, sizeof text, "%sINF", f < 0 ? "-" : "");
	} else {
		n = snprintf(text, sizeof text, "%.8g", (double)f);	/* onnxruntime's precision */
	}
	graph_string_put((char *)y + (size_t)i * GRAPH_STRING_SLOT, text, (size_t)n);
}

/* CAST from or to STRING (on one thread: strings are few and short). */
static int
cast_strings(enum graph_dtype from, const void *x, enum graph_dtype to, void *y, int64_t n,
    char **cause)
{
	if (from == GRAPH_DT_STRING && to == GRAPH_DT_STRING) {
		memmove(y, x, (size_t)n * GRAPH_STRING_SLOT);
		return 0;
	}
	for (int64_t i = 0; i < n; i++) {
		if (to == GRAPH_DT_STRING)
			cast_format(from, x, y, i);
		else if (cast_parse(x, to, y, i, cause) != 0)
			return -1;
	}
	return 0;
}

/* CAST: y = (to) x. */
int
cpu_cast_run(const struct cpu_node_ctx *c, char **cause)
{
	int64_t n = cpu_elems(cpu_in_shape(c, 0)), chunk = 8192;
	enum graph_dtype from = cpu_in_dtype(c, 0), to = cpu_out_dtype(c, 0);
	const void *x = cpu_in(c, 0);
	void *y = cpu_out(c, 0);

	if (cpu_elems(cpu_out_shape(c, 0)) != n)
		return cpu_fail(cause, "output has %lld elements, input %lld",
		    (long long)cpu_elems(cpu_out_shape(c, 0)), (long long)n);
	if (from == GRAPH_DT_STRING || to == GRAPH_DT_STRING)
		return cast_strings(from, x, to, y, n, cause);
	if (!cpu_parallel(n)) {
		cast_span(from, x, to, y, 0, n);
		return 0;
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static)
	for (int64_t lo = 0; lo < n; lo += chunk)
		cast_span(from, x, to, y, lo, n - lo < chunk ? n : lo + chunk);
	return 0;
}
