/* cpu_common.c: helpers every CPU kernel file shares (dtypes, shapes, messages, threads, half floats). */
#include "config.h"

#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_kernels_impl.h"
#include "error.h"

static int cpu_nthreads = 1;

/* Threads for OpenMP loops and OpenBLAS. */
void
cpu_kernels_set_threads(int n)
{
	if (n < 1)
		n = 1;
	cpu_nthreads = n;
#ifdef _OPENMP
	/* The kernels split each sgemm over their own threads; OpenBLAS's pool would spin against them. */
	omp_set_num_threads(n);
	openblas_set_num_threads(1);
#else
	openblas_set_num_threads(n);
#endif
}

/* The thread count last set. */
int
cpu_kernels_threads(void)
{
	return cpu_nthreads;
}

/* Whether a loop of n elements is worth several threads. */
int
cpu_parallel(int64_t n)
{
	return cpu_nthreads > 1 && n >= CPU_PARALLEL_MIN;
}

/* Bytes of one element. */
size_t
cpu_dtype_size(enum graph_dtype dt)
{
	switch (dt) {
	case GRAPH_DT_F32: case GRAPH_DT_I32: return 4;
	case GRAPH_DT_F16: return 2;
	case GRAPH_DT_I64: return 8;
	case GRAPH_DT_I8: case GRAPH_DT_U8: case GRAPH_DT_BOOL: return 1;
	case GRAPH_DT_STRING: return GRAPH_STRING_SLOT;
	default: return 0;
	}
}

/* Element count (1 for rank 0). */
int64_t
cpu_elems(const struct graph_shape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->ndims; i++)
		n *= s->dims[i];
	return n;
}

/* Whether two shapes are equal. */
int
cpu_shape_equal(const struct graph_shape *a, const struct graph_shape *b)
{
	if (a->ndims != b->ndims)
		return 0;
	for (int i = 0; i < a->ndims; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

/* "[2,3,4]" into buf. */
const char *
cpu_shape_str(const struct graph_shape *s, char *buf, size_t len)
{
	size_t off = 0;

	off += (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < s->ndims && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%lld", i ? "," : "",
		    (long long)s->dims[i]);
	if (off < len)
		snprintf(buf + off, len - off, "]");
	return buf;
}

/* Axis in [0, rank), or -1. */
int
cpu_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank)
		return -1;
	return (int)axis;
}

/* Store a formatted message; always -1. */
int
cpu_fail(char **cause, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (cause == NULL)
		return -1;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	free(*cause);
	*cause = s != NULL ? s : strdup("out of memory");
	return -1;
}

/* Half to single (exact). */
float
cpu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;

	if (exp == 0) {
		/* Zero or subnormal: man * 2^-24, exact in single precision. */
		f = (float)man * 0x1p-24f;
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (man << 13);
	else
		bits = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Single to half, rounding to nearest even; overflow gives infinity, NaN stays NaN. */
uint16_t
cpu_f32_to_f16(float f)
{
	uint32_t x, sign, exp, man, half, rem, mid;
	int32_t e;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	exp = (x >> 23) & 0xff;
	man = x & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	e = (int32_t)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		half = man >> (14 - e);
		rem = man & ((1u << (14 - e)) - 1);
		mid = 1u << (13 - e);
	} else {
		half = ((uint32_t)e << 10) | (man >> 13);
		rem = man & 0x1fff;
		mid = 0x1000;
	}
	/* A carry out of the mantissa correctly steps the exponent (up to infinity). */
	if (rem > mid || (rem == mid && (half & 1)))
		half++;
	return (uint16_t)(sign | half);
}
