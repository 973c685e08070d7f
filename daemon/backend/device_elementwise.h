/* device_elementwise.h: graph_binary's functions and Cast's float-to-integer rule, one definition for the CPU and CUDA kernels. */
#ifndef INFERD_DEVICE_ELEMENTWISE_H
#define INFERD_DEVICE_ELEMENTWISE_H

#include <math.h>
#include <stdint.h>

#include "graph.h"

/*
 * Contract.  device_binary_f32 and device_binary_i64 compute one value of a
 * graph_binary function (fn): floats with NaN-propagating max and min,
 * integers in two's complement without undefined behaviour (wrapping add,
 * sub and mul; division truncates, and by zero or INT64_MIN / -1 gives 0,
 * never a trap; Mod and Fmod by zero give 0 likewise).  Mod's remainder
 * takes the divisor's sign (Python's %), Fmod's the dividend's (C's fmod).
 * device_float_to_int converts as Cast does: truncation
 * toward zero, saturated at the int64 range, NaN to 0.  Compiled as host code
 * by the C compiler and as host and device code by nvcc, so both backends
 * compute the same values.
 */
#ifdef __CUDACC__
#define DEVICE_ELEMENTWISE_FN static __host__ __device__ __forceinline__
#else
#define DEVICE_ELEMENTWISE_FN static inline
#endif

/* One float binary value. */
DEVICE_ELEMENTWISE_FN float
device_binary_f32(int fn, float a, float b)
{
	switch (fn) {
	case GRAPH_BINARY_ADD: return a + b;
	case GRAPH_BINARY_SUB: return a - b;
	case GRAPH_BINARY_MUL: return a * b;
	case GRAPH_BINARY_DIV: return a / b;
	case GRAPH_BINARY_POW: return powf(a, b);
	case GRAPH_BINARY_MAX: return a > b || isnan(a) ? a : b;
	case GRAPH_BINARY_MIN: return a < b || isnan(a) ? a : b;
	case GRAPH_BINARY_FMOD: return fmodf(a, b);
	case GRAPH_BINARY_MOD: {
		float r = fmodf(a, b);

		return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
	}
	default: return 0.0f;
	}
}

/* One integer binary value. */
DEVICE_ELEMENTWISE_FN int64_t
device_binary_i64(int fn, int64_t a, int64_t b)
{
	switch (fn) {
	case GRAPH_BINARY_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
	case GRAPH_BINARY_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
	case GRAPH_BINARY_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
	case GRAPH_BINARY_DIV: return b == 0 || (b == -1 && a == INT64_MIN) ? 0 : a / b;
	case GRAPH_BINARY_MAX: return a > b ? a : b;
	case GRAPH_BINARY_MIN: return a < b ? a : b;
	case GRAPH_BINARY_FMOD: return b == 0 || b == -1 ? 0 : a % b;
	case GRAPH_BINARY_MOD: {
		int64_t r = b == 0 || b == -1 ? 0 : a % b;

		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	default: return 0;
	}
}

/* Float to integer: truncation toward zero, saturated at the int64 range, NaN to 0. */
DEVICE_ELEMENTWISE_FN int64_t
device_float_to_int(float f)
{
	if (isnan(f))
		return 0;
	if (f >= 9.2233720368547758e18f)
		return INT64_MAX;
	if (f <= -9.2233720368547758e18f)
		return INT64_MIN;
	return (int64_t)f;
}

#endif
