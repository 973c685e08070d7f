/*
 * test_tensor_text.c: the tensor data codec against independent references:
 * strtof/strtod for FP32 (10^7 random float bit patterns, and random decimal
 * strings), a brute-force nearest-half search for FP16, exact integer
 * boundaries, every error with its message, flat and nested shapes, JSON
 * whitespace, and the request body scanner checked against jansson.
 */
#include "config.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tensor_text.h"
#include "test_util.h"

#define BATCH 4096

/* xorshift64: the test's deterministic random stream. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

/* Decode text as flat data of n elements of dt; the cause (or NULL) stays the caller's. */
static int
decode_flat(const char *text, enum graph_dtype dt, size_t n, void *out, char **cause)
{
	int64_t shape[1] = {(int64_t)n};

	return tensor_text_decode(text, strlen(text), dt, shape, 1, out, n, NULL, cause);
}

/* Whether decoding text (flat, one element of dt unless shape given) fails with exactly msg. */
static void
expect_error(const char *text, enum graph_dtype dt, const int64_t *shape, int ndims,
    size_t elems, const char *msg)
{
	unsigned char out[64 * 8];
	char *cause = NULL;
	int r = tensor_text_decode(text, strlen(text), dt, shape, ndims, out, elems, NULL, &cause);

	CHECK(r == -1 && cause != NULL && strcmp(cause, msg) == 0,
	    "decode '%.60s': r %d, cause '%s', wanted '%s'", text, r, cause ? cause : "(none)", msg);
	free(cause);
}

/* Flat one-dimensional error check. */
static void
expect_flat_error(const char *text, enum graph_dtype dt, size_t n, const char *msg)
{
	int64_t shape[1] = {(int64_t)n};

	expect_error(text, dt, shape, 1, n, msg);
}

/* Append "%.9g" texts of floats to buf as a JSON array. */
static size_t
print_g9(const float *v, size_t n, char *buf)
{
	size_t len = 0;

	buf[len++] = '[';
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(buf + len, "%s%.9g", i ? "," : "", v[i]);
	buf[len++] = ']';
	buf[len] = '\0';
	return len;
}

/* Check that each number in a flat JSON array text parses with strtof to the bits of want. */
static int
strtof_agrees(const char *text, const float *want, size_t n)
{
	const char *p = text + 1;
	char *end;

	for (size_t i = 0; i < n; i++) {
		float f = strtof(p, &end);
		if (end == p || memcmp(&f, &want[i], sizeof f) != 0)
			return 0;
		p = end + 1;
	}
	return 1;
}

/* 10^7 random finite float bit patterns: "%.9g" and the encoder's text decode to the same bits as strtof. */
static void
test_f32_random(size_t total)
{
	float *v = malloc(BATCH * sizeof *v), *got = malloc(BATCH * sizeof *got);
	char *text = malloc(BATCH * 20 + 4), *enc = malloc(tensor_text_encode_bound(GRAPH_DT_F32, BATCH));
	uint64_t s = 0x2545f4914f6cdd1dull;
	size_t bad = 0, len;
	char *cause = NULL;

	for (size_t done = 0; done < total; done += BATCH) {
		for (size_t i = 0; i < BATCH; i++) {
			uint32_t bits;
			do bits = (uint32_t)rnd(&s); while ((bits & 0x7f800000u) == 0x7f800000u);
			memcpy(&v[i], &bits, sizeof bits);
		}
		print_g9(v, BATCH, text);
		bad += !strtof_agrees(text, v, BATCH);	/* %.9g round-trips every float */
		if (decode_flat(text, GRAPH_DT_F32, BATCH, got, &cause) != 0 ||
		    memcmp(got, v, BATCH * sizeof *v) != 0)
			bad++;
		if (tensor_text_encode(GRAPH_DT_F32, v, BATCH, enc,
		    tensor_text_encode_bound(GRAPH_DT_F32, BATCH), &len, &cause) != 0 ||
		    strlen(enc) != len || !strtof_agrees(enc, v, BATCH))
			bad++;
		if (decode_flat(enc, GRAPH_DT_F32, BATCH, got, &cause) != 0 ||
		    memcmp(got, v, BATCH * sizeof *v) != 0)
			bad++;
	}
	CHECK(bad == 0 && cause == NULL, "%zu of %zu FP32 batches differ from strtof (%s)", bad,
	    total / BATCH, cause ? cause : "");
	free(cause);
	free(v), free(got), free(text), free(enc);
}

/* A random JSON number text: 1 to 25 significant digits, optional fraction and exponent. */
static void
random_decimal(uint64_t *s, char *buf)
{
	size_t n = 0, digits = 1 + rnd(s) % 25, point = rnd(s) % (digits + 1);

	if (rnd(s) & 1)
		buf[n++] = '-';
	buf[n++] = (char)('1' + rnd(s) % 9);
	for (size_t i = 1; i < digits; i++) {
		if (i == point)
			buf[n++] = '.';
		buf[n++] = (char)('0' + rnd(s) % 10);
	}
	if (rnd(s) % 4 != 0)
		n += (size_t)sprintf(buf + n, "e%d", (int)(rnd(s) % 110) - 70);
	buf[n] = '\0';
}

/* Random decimal strings, including past FLT_MAX and below the subnormals: strtof's bits or "out of range". */
static void
test_f32_decimals(size_t total)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	char num[64], text[80], *cause = NULL;
	size_t bad = 0;
	float got, want;

	for (size_t i = 0; i < total; i++) {
		random_decimal(&s, num);
		snprintf(text, sizeof text, "[%s]", num);
			want = strtof(num, NULL);
		int r = decode_flat(text, GRAPH_DT_F32, 1, &got, &cause), ok;
		if (isinf(want))
			ok = r != 0 && strstr(cause, "is out of range for FP32") != NULL;
		else
			ok = r == 0 && memcmp(&got, &want, sizeof got) == 0;
		if (!ok && bad++ == 0)
			fprintf(stderr, "first FP32 disagreement: %s\n", num);
	}
	CHECK(bad == 0, "%zu of %zu decimal strings disagree with strtof", bad, total);
	free(cause);
}

/* Decode one FP32 text and compare with strtof's bits; 1 when they agree. */
static int
f32_agrees(const char *num, char **cause)
{
	char text[256];
	float got, want = strtof(num, NULL);

	snprintf(text, sizeof text, "[%s]", num);
	return decode_flat(text, GRAPH_DT_F32, 1, &got, cause) == 0 &&
	    memcmp(&got, &want, sizeof got) == 0;
}

/* Exact halfway points between neighbouring floats, and just above them: ties to even, as strtof. */
static void
test_f32_midpoints(void)
{
	uint64_t s = 7;
	char num[200], *cause = NULL;
	size_t bad = 0;

	for (uint32_t k = (1u << 24) + 1; k < (1u << 24) + 200001; k += 2) {	/* integers between floats */
		snprintf(num, sizeof num, "%u", k);
		bad += !f32_agrees(num, &cause);
	}
	for (int i = 0; i < 200000; i++) {
		float f;
		uint32_t bits = 0x38d1b717u + (uint32_t)(rnd(&s) % (0x7f7fffffu - 0x38d1b717u));	/* 1e-4 .. FLT_MAX */
		memcpy(&f, &bits, sizeof f);
		double mid = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
		snprintf(num, 150, "%.120g", mid);	/* exact: fixed notation in this range */
		bad += !f32_agrees(num, &cause);
		strcat(num, strchr(num, '.') ? "0001" : ".0001");
		bad += !f32_agrees(num, &cause);
	}
	CHECK(bad == 0, "%zu FP32 midpoints disagree with strtof (%s)", bad, cause ? cause : "");
	free(cause);
}

/* Boundaries of FP32: FLT_MAX, the overflow midpoint, subnormals, signed zero, underflow. */
static void
test_f32_edges(void)
{
	float v[8], want[8] = {FLT_MAX, FLT_MAX, -FLT_MAX, 0x1p-149f, 0.0f, -0.0f, 0.0f, 1.0f};
	const char *text = "[3.4028234663852886e38, 3.4028235677973366e38, -3.40282356e38, 1.4e-45,"
	    " 0, -0, 1e-999, 1E0]";
	char *cause = NULL;
	size_t i;

	CHECK(decode_flat(text, GRAPH_DT_F32, 8, v, &cause) == 0, "%s", cause);
	for (i = 0; i < 8; i++)
		CHECK(memcmp(&v[i], &want[i], sizeof v[i]) == 0, "edge %zu: %a, wanted %a", i, v[i], want[i]);
	free(cause);
	expect_flat_error("[3.4028235677973367e38]", GRAPH_DT_F32, 1,
	    "element 0: 3.4028235677973367e38 is out of range for FP32");
	expect_flat_error("[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1e999,18,19]", GRAPH_DT_F32, 20,
	    "element 17: 1e999 is out of range for FP32");
	expect_flat_error("[-1e39]", GRAPH_DT_F32, 1, "element 0: -1e39 is out of range for FP32");
}

/* The value of half h, computed independently of the codec. */
static double
half_value(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);

	return (h & 0x8000) ? -v : v;
}

/* Reference: the half nearest to d by binary search over the positive halves, ties to even; 0x7c00 when it overflows. */
static uint16_t
half_nearest(double d)
{
	double a = fabs(d), lo_v, hi_v;
	uint16_t lo = 0, hi = 0x7bff, r;

	if (a >= half_value(0x7bff)) {	/* 65504; the next step would be 65536, ties go there */
		r = a < 65520.0 ? 0x7bff : 0x7c00;
		return (uint16_t)(r | (signbit(d) ? 0x8000 : 0));
	}
	while (hi - lo > 1) {	/* half_value(lo) <= a < half_value(hi) */
		uint16_t mid = (uint16_t)((lo + hi) / 2);
		if (half_value(mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	lo_v = half_value(lo), hi_v = half_value(hi);
	if (a - lo_v < hi_v - a)
		r = lo;
	else if (a - lo_v > hi_v - a)
		r = hi;
	else
		r = (lo & 1) ? hi : lo;
	return (uint16_t)(r | (signbit(d) ? 0x8000 : 0));
}

/* Decode d (printed exactly with %.17g) as FP16 and compare with the reference. */
static int
f16_agrees(double d, char **cause)
{
	char text[64];
	uint16_t got, want = half_nearest(d);
	int r;

	snprintf(text, sizeof text, "[%.17g]", d);
	r = decode_flat(text, GRAPH_DT_F16, 1, &got, cause);
	if ((want & 0x7fff) == 0x7c00)
		return r != 0 && strstr(*cause, "is out of range for FP16") != NULL;
	return r == 0 && got == want;
}

/* FP16: every half round-trips through the encoder; midpoints, random values and overflow match the reference. */
static void
test_f16(void)
{
	uint64_t s = 42;
	char buf[64], *cause = NULL;
	size_t bad = 0, len;
	uint16_t h, got;

	for (uint32_t b = 0; b < 0x10000; b++) {
		h = (uint16_t)b;
		if ((h & 0x7c00) == 0x7c00)
			continue;
		if (tensor_text_encode(GRAPH_DT_F16, &h, 1, buf, sizeof buf, &len, &cause) != 0 ||
		    decode_flat(buf, GRAPH_DT_F16, 1, &got, &cause) != 0 || got != h ||
		    (double)strtof(buf + 1, NULL) != half_value(h))
			bad++;
		if ((h & 0x7fff) != 0x7bff)	/* the midpoint to the next half, and just either side */
			bad += !f16_agrees((half_value(h) + half_value((uint16_t)(h + 1))) / 2, &cause);
	}
	bad += !f16_agrees(65519.99, &cause) + !f16_agrees(65520.0, &cause) + !f16_agrees(-65520.0, &cause);
	for (int i = 0; i < 1000000; i++) {
		double d = ldexp((double)(rnd(&s) >> 11), -53) * ldexp(1.0, (int)(rnd(&s) % 48) - 30);
		d = rnd(&s) & 1 ? -d : d;
		if (!f16_agrees(d, &cause) && bad++ == 0)
			fprintf(stderr, "first FP16 disagreement: %.17g\n", d);
	}
	CHECK(bad == 0, "%zu FP16 disagreements (%s)", bad, cause ? cause : "");
	free(cause);
	expect_flat_error("[65520]", GRAPH_DT_F16, 1, "element 0: 65520 is out of range for FP16");
}

/* Integers: every type's exact boundaries accepted, one past them refused. */
static void
test_integers(void)
{
	int8_t i8[4];
	uint8_t u8[3];
	int32_t i32[3];
	int64_t i64[3];
	char *cause = NULL;

	CHECK(decode_flat("[-128,127,-0,0]", GRAPH_DT_I8, 4, i8, &cause) == 0 &&
	    i8[0] == -128 && i8[1] == 127 && i8[2] == 0, "INT8 %s", cause);
	CHECK(decode_flat("[0,255,-0]", GRAPH_DT_U8, 3, u8, &cause) == 0 && u8[1] == 255 &&
	    u8[2] == 0, "UINT8 %s", cause);
	CHECK(decode_flat("[-2147483648,2147483647,7]", GRAPH_DT_I32, 3, i32, &cause) == 0 &&
	    i32[0] == INT32_MIN && i32[1] == INT32_MAX && i32[2] == 7, "INT32 %s", cause);
	CHECK(decode_flat("[-9223372036854775808,9223372036854775807,-1]", GRAPH_DT_I64, 3, i64,
	    &cause) == 0 && i64[0] == INT64_MIN && i64[1] == INT64_MAX && i64[2] == -1, "INT64 %s", cause);
	free(cause);
	expect_flat_error("[-129]", GRAPH_DT_I8, 1, "element 0: -129 is out of range for INT8");
	expect_flat_error("[128]", GRAPH_DT_I8, 1, "element 0: 128 is out of range for INT8");
	expect_flat_error("[0,256]", GRAPH_DT_U8, 2, "element 1: 256 is out of range for UINT8");
	expect_flat_error("[-1]", GRAPH_DT_U8, 1, "element 0: -1 is out of range for UINT8");
	expect_flat_error("[2147483648]", GRAPH_DT_I32, 1, "element 0: 2147483648 is out of range for INT32");
	expect_flat_error("[-2147483649]", GRAPH_DT_I32, 1, "element 0: -2147483649 is out of range for INT32");
	expect_flat_error("[9223372036854775808]", GRAPH_DT_I64, 1,
	    "element 0: 9223372036854775808 is out of range for INT64");
	expect_flat_error("[-9223372036854775809]", GRAPH_DT_I64, 1,
	    "element 0: -9223372036854775809 is out of range for INT64");
	expect_flat_error("[18446744073709551616]", GRAPH_DT_I64, 1,
	    "element 0: 18446744073709551616 is out of range for INT64");
	expect_flat_error("[123456789012345678901234567890]", GRAPH_DT_I64, 1,
	    "element 0: 123456789012345678901234567890 is out of range for INT64");
	expect_flat_error("[1.0]", GRAPH_DT_I32, 1, "element 0: 1.0 is not an integer (INT32)");
	expect_flat_error("[1,1e2]", GRAPH_DT_I64, 2, "element 1: 1e2 is not an integer (INT64)");
	expect_flat_error("[1,true]", GRAPH_DT_I32, 2, "element 1: 'true' is not a number");
}

/* BOOL: JSON true/false only. */
static void
test_bool(void)
{
	uint8_t b[3];
	char *cause = NULL;

	CHECK(decode_flat("[true,false,true]", GRAPH_DT_BOOL, 3, b, &cause) == 0 && b[0] == 1 &&
	    b[1] == 0 && b[2] == 1, "BOOL %s", cause);
	free(cause);
	expect_flat_error("[1]", GRAPH_DT_BOOL, 1,
	    "element 0: 1 is not true or false (BOOL data are JSON true/false)");
	expect_flat_error("[true,0]", GRAPH_DT_BOOL, 2,
	    "element 1: 0 is not true or false (BOOL data are JSON true/false)");
	expect_flat_error("[\"true\"]", GRAPH_DT_BOOL, 1,
	    "element 0: a string, not true or false (BOOL data are JSON true/false)");
	expect_flat_error("[truex]", GRAPH_DT_BOOL, 1,
	    "element 0: 'truex' is not true or false (BOOL data are JSON true/false)");
	expect_flat_error("[null]", GRAPH_DT_BOOL, 1,
	    "element 0: 'null' is not true or false (BOOL data are JSON true/false)");
}

/* Malformed numbers and the spellings JSON lacks, each with its message. */
static void
test_malformed(void)
{
	static const char *const bad_numbers[] = {"1.2.3", "01", "+1", ".5", "1.", "1e", "1e+",
	    "-", "0x10", "1_000", "--1", "1.5x", "\\u0031"};
	static const char *const nonfinite[] = {"NaN", "nan", "Infinity", "-Infinity", "inf", "-inf",
	    "+Infinity", "INF"};
	char text[64], msg[160];
	size_t i;

	for (i = 0; i < sizeof bad_numbers / sizeof *bad_numbers; i++) {
		snprintf(text, sizeof text, "[0,%s]", bad_numbers[i]);
		snprintf(msg, sizeof msg, "element 1: '%s' is not a JSON number", bad_numbers[i]);
		expect_flat_error(text, GRAPH_DT_F32, 2, msg);
	}
	for (i = 0; i < sizeof nonfinite / sizeof *nonfinite; i++) {
		snprintf(text, sizeof text, "[0,1,%s]", nonfinite[i]);
		snprintf(msg, sizeof msg, "element 2: %s is not a JSON number (JSON has no NaN or "
		    "Infinity)", nonfinite[i]);
		expect_flat_error(text, GRAPH_DT_F32, 3, msg);
	}
	expect_flat_error("[\"1.5\"]", GRAPH_DT_F32, 1, "element 0: a string, not a number");
	expect_flat_error("[null]", GRAPH_DT_F32, 1, "element 0: 'null' is not a number");
	expect_flat_error("[{}]", GRAPH_DT_F32, 1, "element 0: an object, not a number");
	expect_flat_error("[1,]", GRAPH_DT_F32, 2, "element 1: a value is missing before ']'");
	expect_flat_error("[,1]", GRAPH_DT_F32, 2, "element 0: a value is missing before ','");
	expect_flat_error("[1 2]", GRAPH_DT_F32, 2, "byte 3 of data: expected ',' or ']', found '2'");
	expect_flat_error("[1\x01]", GRAPH_DT_F32, 1, "element 0: '1?' is not a JSON number");
	expect_flat_error("[1,2] x", GRAPH_DT_F32, 2, "trailing characters after the data array: 'x'");
	expect_flat_error("[1,2]]", GRAPH_DT_F32, 2, "trailing characters after the data array: ']'");
	expect_flat_error("[1,2", GRAPH_DT_F32, 2, "data ends before its array is closed (after 2 elements)");
	expect_flat_error("[1,", GRAPH_DT_F32, 2, "data ends before its array is closed (after 1 elements)");
	expect_flat_error("[", GRAPH_DT_F32, 2, "data ends before its array is closed (after 0 elements)");
	expect_flat_error("", GRAPH_DT_F32, 1, "data must be a JSON array, it is empty");
	expect_flat_error(" \n", GRAPH_DT_F32, 1, "data must be a JSON array, it is empty");
	expect_flat_error("{\"a\":1}", GRAPH_DT_F32, 1, "data must be a JSON array");
	expect_flat_error("1", GRAPH_DT_F32, 1, "data must be a JSON array");
}

/* Counts and shapes: flat and exactly nested accepted; inner lengths that disagree refused even when the total matches. */
static void
test_shapes(void)
{
	int64_t s22[2] = {2, 2}, s234[3] = {2, 3, 4}, s20[2] = {2, 0}, s1[1] = {1};
	float v[24], want[4] = {1, 2, 3, 4};
	char *cause = NULL, text[512];
	size_t n = 0, consumed = 0;

	CHECK(tensor_text_decode("[1,2,3,4]", 9, GRAPH_DT_F32, s22, 2, v, 4, NULL, &cause) == 0 &&
	    memcmp(v, want, sizeof want) == 0, "flat %s", cause);
	CHECK(tensor_text_decode("[[1,2],[3,4]]", 13, GRAPH_DT_F32, s22, 2, v, 4, NULL, &cause) == 0 &&
	    memcmp(v, want, sizeof want) == 0, "nested %s", cause);
	n += (size_t)sprintf(text, "[");
	for (int i = 0; i < 2; i++) {
		n += (size_t)sprintf(text + n, "%s[", i ? "," : "");
		for (int j = 0; j < 3; j++)
			n += (size_t)sprintf(text + n, "%s[%d,%d,%d,%d]", j ? "," : "", i * 12 + j * 4,
			    i * 12 + j * 4 + 1, i * 12 + j * 4 + 2, i * 12 + j * 4 + 3);
		n += (size_t)sprintf(text + n, "]");
	}
	sprintf(text + n, "]");
	CHECK(tensor_text_decode(text, strlen(text), GRAPH_DT_F32, s234, 3, v, 24, NULL, &cause) == 0,
	    "rank 3 %s", cause);
	for (int i = 0; i < 24; i++)
		CHECK(v[i] == (float)i, "rank 3 element %d is %g", i, v[i]);
	snprintf(text, sizeof text, " \t\n\r[ \n[ 1 ,\t2 ]\r,\n[3\n,4\t]\r\n] \n");
	CHECK(tensor_text_decode(text, strlen(text), GRAPH_DT_F32, s22, 2, v, 4, NULL, &cause) == 0 && memcmp(v, want, sizeof want) == 0, "whitespace %s", cause);
	CHECK(tensor_text_decode("[[],[]]", 7, GRAPH_DT_F32, s20, 2, v, 0, NULL, &cause) == 0 &&
	    tensor_text_decode("[]", 2, GRAPH_DT_F32, s20, 2, v, 0, NULL, &cause) == 0,
	    "zero size %s", cause);
	CHECK(tensor_text_decode("[7.5]", 5, GRAPH_DT_F32, NULL, 0, v, 1, NULL, &cause) == 0 &&
	    v[0] == 7.5f, "scalar %s", cause);
	CHECK(tensor_text_decode(" [1] ,\"x\"", 9, GRAPH_DT_F32, s1, 1, v, 1, &consumed, &cause) == 0 &&
	    consumed == 4, "consumed %zu %s", consumed, cause);
	free(cause);
	expect_error("[[1,2,3],[4]]", GRAPH_DT_F32, s22, 2, 4,
	    "data[0] has more than the 2 items dimension 1 of shape [2,2] allows");
	expect_error("[[1],[2,3,4]]", GRAPH_DT_F32, s22, 2, 4,
	    "data[0] has 1 items, dimension 1 of shape [2,2] is 2");
	expect_error("[[1,2],[3,4],[]]", GRAPH_DT_F32, s22, 2, 4,
	    "data has more than the 2 items dimension 0 of shape [2,2] allows");
	expect_error("[[1,2],]", GRAPH_DT_F32, s22, 2, 4,
	    "byte 7 of data: an array is missing, found ']'");
	expect_error("[[1,2],[3,4]", GRAPH_DT_F32, s22, 2, 4,
	    "data ends before its array is closed (after 4 elements)");
	expect_error("[[1,2] [3,4]]", GRAPH_DT_F32, s22, 2, 4,
	    "byte 7 of data: expected ',' or ']', found '['");
	expect_error("[[1,2]]", GRAPH_DT_F32, s22, 2, 4, "data has 1 items, dimension 0 of shape [2,2] is 2");
	expect_error("[[1,2],3]", GRAPH_DT_F32, s22, 2, 4,
	    "data[1]: a value where an array belongs (data nested as shape [2,2])");
	expect_error("[1,[2],3,4]", GRAPH_DT_F32, s22, 2, 4,
	    "element 1: an array where a value belongs (data nested deeper than shape [2,2])");
	expect_error("[[[1],[2]],[[3],[4]]]", GRAPH_DT_F32, s22, 2, 4,
	    "element 0: an array where a value belongs (data nested deeper than shape [2,2])");
	expect_error("[[1]]", GRAPH_DT_F32, s1, 1, 1,
	    "element 0: an array where a value belongs (data nested deeper than shape [1])");
	expect_error("[1,2,3]", GRAPH_DT_F32, s22, 2, 4, "data has 3 elements, shape [2,2] has 4");
	expect_error("[1,2,3,4,5]", GRAPH_DT_F32, s22, 2, 4, "data has more than the 4 elements of shape [2,2]");
	expect_error("[1,2,3,4]", GRAPH_DT_F32, s22, 2, 5, "shape [2,2] has 4 elements, the buffer 5");
	expect_error("[1]", GRAPH_DT_F32, s1, 9, 1, "a shape of 9 dimensions is not supported (at most 8)");
}

/* Nesting far beyond the shape: refused at the first extra level, no recursion. */
static void
test_deep(void)
{
	size_t n = 1 << 20;
	char *text = malloc(n + 1), *cause = NULL;
	int64_t shape[2] = {1, 1};
	float v;

	memset(text, '[', n);
	text[n] = '\0';
	CHECK(tensor_text_decode(text, n, GRAPH_DT_F32, shape, 2, &v, 1, NULL, &cause) == -1 &&
	    strcmp(cause, "element 0: an array where a value belongs (data nested deeper than shape "
	    "[1,1])") == 0, "deep: %s", cause);
	free(cause);
	free(text);
}

/* The encoder: exact integers, BOOL words, shortest floats, refusals. */
static void
test_encode(void)
{
	int8_t i8[2] = {-128, 127};
	int64_t i64[2] = {INT64_MIN, INT64_MAX};
	uint8_t u8[2] = {0, 255}, b[3] = {1, 0, 7};
	float f[5] = {1e20f, 0.1f, -0.0f, 0x1p-149f, 3.0f}, nan[2] = {1.0f, NAN};
	uint16_t h[3] = {0x3c00, 0x3555, 0x7bff};
	char buf[256], *cause = NULL;
	size_t len;

#define ENC(dt, v, n, want) do {						\
	CHECK(tensor_text_encode(dt, v, n, buf, sizeof buf, &len, &cause) == 0 &&	\
	    strcmp(buf, want) == 0 && len == strlen(want), "encode: '%s' (%s), wanted '%s'", \
	    buf, cause ? cause : "", want);					\
} while (0)
	ENC(GRAPH_DT_I8, i8, 2, "[-128,127]");
	ENC(GRAPH_DT_I64, i64, 2, "[-9223372036854775808,9223372036854775807]");
	ENC(GRAPH_DT_U8, u8, 2, "[0,255]");
	ENC(GRAPH_DT_BOOL, b, 3, "[true,false,true]");
	ENC(GRAPH_DT_F32, f, 5, "[1e+20,0.1,-0.0,1e-45,3]");
	ENC(GRAPH_DT_F16, h, 3, "[1,0.33325195,65504]");
	ENC(GRAPH_DT_F32, f, 0, "[]");
#undef ENC
	CHECK(tensor_text_encode(GRAPH_DT_F32, nan, 2, buf, sizeof buf, &len, &cause) == -1 &&
	    strcmp(cause, "element 1: FP32 NaN has no JSON form (JSON has no NaN or Infinity)") == 0,
	    "NaN: %s", cause);
	nan[0] = -INFINITY;
	CHECK(tensor_text_encode(GRAPH_DT_F32, nan, 2, buf, sizeof buf, &len, &cause) == -1 &&
	    strcmp(cause, "element 0: FP32 -Infinity has no JSON form (JSON has no NaN or Infinity)") == 0,
	    "-Inf: %s", cause);
	h[1] = 0x7e00;
	CHECK(tensor_text_encode(GRAPH_DT_F16, h, 3, buf, sizeof buf, &len, &cause) == -1 &&
	    strcmp(cause, "element 1: FP16 NaN has no JSON form (JSON has no NaN or Infinity)") == 0,
	    "FP16 NaN: %s", cause);
	CHECK(tensor_text_encode(GRAPH_DT_F32, f, 5, buf, 20, &len, &cause) == -1 &&
	    strcmp(cause, "5 FP32 elements need up to 88 bytes of text, the buffer has 20") == 0,
	    "small buffer: %s", cause);
	free(cause);
}

/* A request body: strings with brackets, escapes, "data" in other places, an escaped key. */
static const char body[] =
    "{\"id\":\"a]b[\\\"data\\\":[\",\"parameters\":{\"data\":[9]},\n"
    " \"inputs\" : [ {\"name\":\"x[\",\"shape\":[2],\"datatype\":\"FP32\",\"data\" : [1.5, 2]},\n"
    "  {\"name\":\"y\",\"parameters\":{\"data\":{\"s\":\"}]\"}},\"d\\u0061ta\":[[3],[4]],\"shape\":[2,1]},\n"
    "  {\"name\":\"z\",\"shape\":[0],\"datatype\":\"BOOL\",\"parameters\":{\"binary_data_size\":0}}],\n"
    " \"outputs\":[{\"name\":\"o\",\"data\":[5]}]}";

/* The body scanner finds each input's data, the masked body parses with jansson, the spans decode. */
static void
test_find_data(void)
{
	struct tensor_text_span sp[4];
	size_t n = 0, mlen = 0;
	char masked[sizeof body + 16], *cause = NULL;
	int64_t s21[2] = {2, 1}, s2[1] = {2};
	float v[2];
	json_t *root;

	CHECK(tensor_text_find_data(body, sizeof body - 1, sp, 4, &n, &cause) == 0 && n == 3,
	    "find: %zu spans (%s)", n, cause);
	CHECK(sp[0].present && sp[1].present && !sp[2].present, "presence");
	CHECK(memcmp(body + sp[0].off, "[1.5, 2]", sp[0].len) == 0 && sp[0].len == 8, "span 0");
	CHECK(memcmp(body + sp[1].off, "[[3],[4]]", sp[1].len) == 0 && sp[1].len == 9, "span 1");
	CHECK(tensor_text_decode(body + sp[0].off, sp[0].len, GRAPH_DT_F32, s2, 1, v, 2, NULL, &cause) == 0 &&
	    v[0] == 1.5f && v[1] == 2.0f, "span 0 decodes: %s", cause);
	CHECK(tensor_text_decode(body + sp[1].off, sp[1].len, GRAPH_DT_F32, s21, 2, v, 2, NULL, &cause) == 0 &&
	    v[0] == 3.0f && v[1] == 4.0f, "span 1 decodes: %s", cause);
	CHECK(tensor_text_mask_data(body, sizeof body - 1, sp, n, masked, sizeof masked, &mlen, &cause) == 0 &&
	    strlen(masked) == mlen, "mask: %s", cause);
	root = json_loadb(masked, mlen, JSON_REJECT_DUPLICATES, NULL);
	CHECK(root != NULL, "masked body is not JSON: %s", masked);
	if (root != NULL) {
		json_t *in = json_object_get(root, "inputs");
		CHECK(json_is_null(json_object_get(json_array_get(in, 0), "data")) &&
		    json_is_null(json_object_get(json_array_get(in, 1), "data")) &&
		    json_object_get(json_array_get(in, 2), "data") == NULL &&
		    json_array_size(json_object_get(json_object_get(root, "parameters"), "data")) == 1 &&
		    strcmp(json_string_value(json_object_get(root, "id")), "a]b[\"data\":[") == 0 &&
		    json_array_size(json_object_get(json_array_get(json_object_get(root, "outputs"), 0),
		    "data")) == 1, "masked tree: %s", masked);
		json_decref(root);
	}
	CHECK(tensor_text_mask_data(body, sizeof body - 1, sp, n, masked, sizeof body, &mlen, &cause) == -1,
	    "mask into a small buffer");
	free(cause);
}

/* The body scanner's refusals. */
static void
test_find_data_errors(void)
{
	static const struct { const char *body, *msg; } cases[] = {
		{"{\"inputs\":[{\"data\":[1],\"data\":[2]}]}", "inputs[0]: field 'data' appears twice"},
		{"{\"inputs\":[{\"data\":[1,2}]}", "byte 23 of the request body: mismatched bracket"},
		{"{\"inputs\":[{\"data\":[1,2", "request body ends early: unterminated array or object"},
		{"{\"inputs\":[{\"data\":\"abc", "request body ends early: unterminated string"},
		{"{\"inputs\":[{},{},{}]}", "more than 2 inputs"},
		{"[1]", "byte 0 of the request body: the request is not a JSON object"},
		{"", "request body ends early: the request is not a JSON object"},
		{"{\"inputs\":[]} x", "byte 14 of the request body: trailing characters after the request object"},
		{"{\"inputs\" [] }", "byte 10 of the request body: expected ':'"},
		{"{\"inputs\":[{\"data\":}]}", "byte 19 of the request body: a value is missing"},
	};
	struct tensor_text_span sp[2];
	size_t n;
	char *cause = NULL;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int r = tensor_text_find_data(cases[i].body, strlen(cases[i].body), sp, 2, &n, &cause);
		CHECK(r == -1 && cause != NULL && strcmp(cause, cases[i].msg) == 0,
		    "find '%s': %d '%s', wanted '%s'", cases[i].body, r, cause ? cause : "", cases[i].msg);
	}
	CHECK(tensor_text_find_data("{\"id\":\"x\"}", 10, sp, 2, &n, &cause) == 0 && n == 0,
	    "no inputs: %s", cause);
	CHECK(tensor_text_find_data("{\"inputs\":5}", 12, sp, 2, &n, &cause) == 0 && n == 0,
	    "inputs not an array: %s", cause);
	free(cause);
}

/* Nesting beyond the scanner's 1024 levels is refused; 1024 is followed. */
static void
test_find_data_deep(void)
{
	char text[4200], *cause = NULL;
	struct tensor_text_span sp[1];
	size_t n, len;

	for (int levels = 1024; levels <= 1025; levels++) {
		len = (size_t)sprintf(text, "{\"inputs\":[{\"data\":");
		memset(text + len, '[', (size_t)levels), len += (size_t)levels;
		memset(text + len, ']', (size_t)levels), len += (size_t)levels;
		len += (size_t)sprintf(text + len, "}]}");
		int r = tensor_text_find_data(text, len, sp, 1, &n, &cause);
		CHECK(levels == 1024 ? r == 0 && n == 1 && sp[0].len == 2048 :
		    r == -1 && strstr(cause, "nested deeper than 1024 levels") != NULL,
		    "%d levels: %d %s", levels, r, cause ? cause : "");
	}
	free(cause);
}

int
main(int argc, char **argv)
{
	size_t f32_total = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000000;

	test_f32_random(f32_total - f32_total % BATCH + BATCH);
	test_f32_decimals(1000000);
	test_f32_midpoints();
	test_f32_edges();
	test_f16();
	test_integers();
	test_bool();
	test_malformed();
	test_shapes();
	test_deep();
	test_encode();
	test_find_data();
	test_find_data_errors();
	test_find_data_deep();
	return test_finish("test_tensor_text");
}
