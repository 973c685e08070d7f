/* kserve_tensor.c: tensor elements between JSON and bytes, per datatype. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kserve_tensor.h"

/* Largest finite half: 65504; values below 65520 still round to it. */
#define HALF_MAX 65504.0
#define HALF_ROUND_LIMIT 65520.0

/* IEEE half from float, round to nearest even (NaN stays NaN). */
uint16_t
kserve_half_from_float(float f)
{
	uint32_t x, sign, mant;
	int32_t exp;
	uint16_t h;

	memcpy(&x, &f, sizeof x);
	sign = (x >> 16) & 0x8000u;
	exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	mant = x & 0x7fffffu;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		/* Subnormal half (or zero): shift the implicit one in, then round. */
		if (exp < -10)
			return (uint16_t)sign;
		mant |= 0x800000u;
		uint32_t shift = (uint32_t)(14 - exp), half = 1u << (shift - 1);
		uint32_t r = mant >> shift, rest = mant & ((1u << shift) - 1);
		if (rest > half || (rest == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	h = (uint16_t)(sign | ((uint32_t)exp << 10) | (mant >> 13));
	/* Round to nearest even; a carry into the exponent is the right answer. */
	if ((mant & 0x1fffu) > 0x1000u || ((mant & 0x1fffu) == 0x1000u && (h & 1)))
		h++;
	return h;
}

/* Float from IEEE half. */
float
kserve_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
	float f;

	if (exp == 0) {
		f = ldexpf((float)mant, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		x = sign | 0x7f800000u | (mant << 13);
	else
		x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
	memcpy(&f, &x, sizeof f);
	return f;
}

/* A JSON number as a double; -1 when v is not one. */
static int
kserve_number(const json_t *v, double *d)
{
	if (json_is_integer(v))
		*d = (double)json_integer_value(v);
	else if (json_is_real(v))
		*d = json_real_value(v);
	else
		return -1;
	return 0;
}

/* A float element: FP32, or FP16 through its rounding. */
static enum kserve_put_status
kserve_put_float(enum graph_dtype dt, const json_t *v, void *dst)
{
	double d;
	float f;
	uint16_t h;

	if (kserve_number(v, &d) != 0)
		return KSERVE_PUT_KIND;
	if (dt == GRAPH_DT_F16) {
		if (!(fabs(d) < HALF_ROUND_LIMIT))
			return KSERVE_PUT_RANGE;
		h = kserve_half_from_float((float)d);
		memcpy(dst, &h, sizeof h);
		return KSERVE_PUT_OK;
	}
	if (json_is_integer(v)) {
		/* One rounding, int64 -> float (through double it could round twice). */
		f = (float)json_integer_value(v);
		memcpy(dst, &f, sizeof f);
		return KSERVE_PUT_OK;
	}
	if (fabs(d) > FLT_MAX) {
		/* Within half an ulp of FLT_MAX still rounds to it (as "3.40282347e+38" does). */
		if (!(fabs(d) < (double)FLT_MAX * (1.0 + 0x1p-24)))
			return KSERVE_PUT_RANGE;
		d = copysign((double)FLT_MAX, d);
	}
	f = (float)d;
	memcpy(dst, &f, sizeof f);
	return KSERVE_PUT_OK;
}

/* An integer element within [lo, hi], stored in size bytes. */
static enum kserve_put_status
kserve_put_int(const json_t *v, json_int_t lo, json_int_t hi, size_t size, void *dst)
{
	json_int_t x;
	int64_t i64;
	int32_t i32;
	int8_t i8;
	uint8_t u8;

	if (!json_is_integer(v))
		return KSERVE_PUT_KIND;
	x = json_integer_value(v);
	if (x < lo || x > hi)
		return KSERVE_PUT_RANGE;
	switch (size) {
	case 8: i64 = (int64_t)x; memcpy(dst, &i64, 8); break;
	case 4: i32 = (int32_t)x; memcpy(dst, &i32, 4); break;
	default:
		if (lo < 0) {
			i8 = (int8_t)x;
			memcpy(dst, &i8, 1);
		} else {
			u8 = (uint8_t)x;
			memcpy(dst, &u8, 1);
		}
	}
	return KSERVE_PUT_OK;
}

/* Store JSON scalar v as one element of dt at dst. */
enum kserve_put_status
kserve_tensor_put(enum graph_dtype dt, const json_t *v, void *dst)
{
	switch (dt) {
	case GRAPH_DT_F32:
	case GRAPH_DT_F16:
		return kserve_put_float(dt, v, dst);
	case GRAPH_DT_I64:
		return kserve_put_int(v, INT64_MIN, INT64_MAX, 8, dst);
	case GRAPH_DT_I32:
		return kserve_put_int(v, INT32_MIN, INT32_MAX, 4, dst);
	case GRAPH_DT_I8:
		return kserve_put_int(v, INT8_MIN, INT8_MAX, 1, dst);
	case GRAPH_DT_U8:
		return kserve_put_int(v, 0, UINT8_MAX, 1, dst);
	case GRAPH_DT_BOOL:
		if (!json_is_boolean(v))
			return KSERVE_PUT_KIND;
		*(uint8_t *)dst = json_is_true(v) ? 1 : 0;
		return KSERVE_PUT_OK;
	case GRAPH_DT_STRING:
		if (!json_is_string(v))
			return KSERVE_PUT_KIND;
		if (json_string_length(v) > GRAPH_STRING_MAX)
			return KSERVE_PUT_RANGE;
		graph_string_put(dst, json_string_value(v), json_string_length(v));
		return KSERVE_PUT_OK;
	default:
		return KSERVE_PUT_KIND;
	}
}

/* What dt's elements must be. */
const char *
kserve_tensor_kind(enum graph_dtype dt)
{
	if (dt == GRAPH_DT_F32 || dt == GRAPH_DT_F16)
		return "a number";
	if (dt == GRAPH_DT_STRING)
		return "a string";
	return dt == GRAPH_DT_BOOL ? "true or false" : "an integer";
}

/* A float as JSON, refusing what JSON cannot carry. */
static json_t *
kserve_get_float(float f, int *nonfinite)
{
	if (isnan(f) || isinf(f)) {
		*nonfinite = isnan(f) ? 1 : 2;
		return NULL;
	}
	return json_real(f);
}

/* The element of dt at src as JSON. */
json_t *
kserve_tensor_get(enum graph_dtype dt, const void *src, int *nonfinite)
{
	float f;
	int64_t i64;
	int32_t i32;
	uint16_t h;
	const char *s;
	size_t len;

	*nonfinite = 0;
	switch (dt) {
	case GRAPH_DT_F32:
		memcpy(&f, src, sizeof f);
		return kserve_get_float(f, nonfinite);
	case GRAPH_DT_F16:
		memcpy(&h, src, sizeof h);
		return kserve_get_float(kserve_half_to_float(h), nonfinite);
	case GRAPH_DT_I64:
		memcpy(&i64, src, sizeof i64);
		return json_integer((json_int_t)i64);
	case GRAPH_DT_I32:
		memcpy(&i32, src, sizeof i32);
		return json_integer(i32);
	case GRAPH_DT_I8:
		return json_integer(*(const int8_t *)src);
	case GRAPH_DT_U8:
		return json_integer(*(const uint8_t *)src);
	case GRAPH_DT_BOOL:
		return json_boolean(*(const uint8_t *)src != 0);
	case GRAPH_DT_STRING:
		s = graph_string_get(src, &len);
		return json_stringn(s, len);	/* NULL when not UTF-8 */
	default:
		return NULL;
	}
}

/* Copy n elements of esize bytes between little-endian and host order. */
void
kserve_tensor_copy_le(void *dst, const void *src, size_t n, size_t esize)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t i, k;

	for (i = 0; i < n; i++, d += esize, s += esize)
		for (k = 0; k < esize; k++)
			d[k] = s[esize - 1 - k];
#else
	memcpy(dst, src, n * esize);
#endif
}
