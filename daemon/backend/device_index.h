/* device_index.h: ONNX Pad's source index and Slice's clamping, one definition for the CPU and CUDA kernels. */
#ifndef INFERD_DEVICE_INDEX_H
#define INFERD_DEVICE_INDEX_H

#include <stdint.h>

#include "graph.h"

/*
 * Contract.  device_pad_src maps output index i along a dim of n input
 * elements with pb elements of begin padding to its source index under
 * graph_pad_mode mode (constant: -1 for the fill value; edge; reflect without
 * repeating the edge), for any i, n and pb.  device_slice_start applies ONNX
 * Slice's rules for negative and out-of-range starts and ends: it returns the
 * first index and stores in *count how many elements the step (non-zero)
 * takes.  Compiled as host code by the C compiler and as host and device code
 * by nvcc.
 */
#ifdef __CUDACC__
#define DEVICE_INDEX_FN static __host__ __device__ __forceinline__
#else
#define DEVICE_INDEX_FN static inline
#endif

/* Source index of output index i along a dim of n with begin pad pb; -1 for the fill value. */
DEVICE_INDEX_FN int64_t
device_pad_src(int64_t i, int64_t n, int64_t pb, int mode)
{
	int64_t s = i - pb;

	if (s >= 0 && s < n)
		return s;
	if (mode == GRAPH_PAD_CONSTANT || n == 0)
		return -1;
	if (mode == GRAPH_PAD_EDGE || n == 1)
		return s < 0 ? 0 : n - 1;
	/* Reflect without repeating the edge: period 2 (n - 1). */
	s %= 2 * (n - 1);
	if (s < 0)
		s += 2 * (n - 1);
	return s < n ? s : 2 * (n - 1) - s;
}

/* First index and count of a slice of dim n (ONNX clamping rules). */
DEVICE_INDEX_FN int64_t
device_slice_start(int64_t start, int64_t end, int64_t step, int64_t n, int64_t *count)
{
	if (start < 0)
		start += n;
	if (end < 0)
		end += n;
	if (step > 0) {
		start = start < 0 ? 0 : start > n ? n : start;
		end = end < 0 ? 0 : end > n ? n : end;
		*count = end > start ? (end - start + step - 1) / step : 0;
	} else {
		start = start < 0 ? 0 : start > n - 1 ? n - 1 : start;
		end = end < -1 ? -1 : end > n - 1 ? n - 1 : end;
		*count = start > end ? (start - end - step - 1) / -step : 0;
	}
	return start;
}

#endif
