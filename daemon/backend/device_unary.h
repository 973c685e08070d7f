/* device_unary.h: the element-wise functions of graph_unary, one definition for the CPU and CUDA kernels. */
#ifndef INFERD_DEVICE_UNARY_H
#define INFERD_DEVICE_UNARY_H

#include <math.h>

#include "graph.h"

/*
 * device_unary_apply(fn, x, alpha, beta) computes one value of fn in float
 * (alpha and beta as graph.h describes per function).  Compiled as host code
 * by the C compiler and as device code by nvcc, so both backends compute the
 * same formula; fn is uniform across a kernel launch, so the switch does not
 * diverge.
 */
#ifdef __CUDACC__
#define DEVICE_UNARY_FN static __host__ __device__ __forceinline__
#else
#define DEVICE_UNARY_FN static inline
#endif

/* 1/sqrt(2) and sqrt(2/pi) in float. */
#define DEVICE_UNARY_SQRT1_2 0.70710678118654752440f
#define DEVICE_UNARY_SQRT2_PI 0.79788456080286535588f

DEVICE_UNARY_FN float
device_unary_apply(int fn, float x, float alpha, float beta)
{
	switch (fn) {
	case GRAPH_UNARY_RELU:
		return x > 0.0f ? x : 0.0f;
	case GRAPH_UNARY_GELU:
		/* erfc(-t) = 1 + erf(t) without the cancellation that loses all precision for x << 0. */
		return 0.5f * x * erfcf(-x * DEVICE_UNARY_SQRT1_2);
	case GRAPH_UNARY_GELU_TANH:
		return 0.5f * x * (1.0f + tanhf(DEVICE_UNARY_SQRT2_PI * (x + 0.044715f * x * x * x)));
	case GRAPH_UNARY_SIGMOID:
		return 1.0f / (1.0f + expf(-x));
	case GRAPH_UNARY_TANH:
		return tanhf(x);
	case GRAPH_UNARY_LEAKY_RELU:
		return x >= 0.0f ? x : alpha * x;
	case GRAPH_UNARY_CLIP:
		return x < alpha ? alpha : (x > beta ? beta : x);
	case GRAPH_UNARY_HARD_SIGMOID:
		return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
	case GRAPH_UNARY_HARD_SWISH:
		return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
	case GRAPH_UNARY_EXP:
		return expf(x);
	case GRAPH_UNARY_LOG:
		return logf(x);
	case GRAPH_UNARY_SQRT:
		return sqrtf(x);
	case GRAPH_UNARY_NEG:
		return -x;
	case GRAPH_UNARY_RECIPROCAL:
		return 1.0f / x;
	case GRAPH_UNARY_ERF:
		return erff(x);
	case GRAPH_UNARY_ABS:
		return fabsf(x);
	case GRAPH_UNARY_CEIL:
		return ceilf(x);
	case GRAPH_UNARY_FLOOR:
		return floorf(x);
	case GRAPH_UNARY_ROUND:
		/* The default rounding mode rounds halves to even on host and device alike. */
		return rintf(x);
	default:
		return x;
	}
}

#endif
