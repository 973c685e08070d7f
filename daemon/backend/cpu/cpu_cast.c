/* cpu_cast.c: Cast between every graph dtype (float via float, integers via int64, F16 rounded to nearest even). */
#include "config.h"

#include <math.h>
#include <stdint.h>

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
	if (!cpu_parallel(n)) {
		cast_span(from, x, to, y, 0, n);
		return 0;
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static)
	for (int64_t lo = 0; lo < n; lo += chunk)
		cast_span(from, x, to, y, lo, n - lo < chunk ? n : lo + chunk);
	return 0;
}
