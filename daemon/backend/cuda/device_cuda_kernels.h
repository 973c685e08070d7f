/* device_cuda_kernels.h: GEMM's epilogue kernel behind a launcher that queues it on a stream (nvcc only). */
#ifndef INFERD_DEVICE_CUDA_KERNELS_H
#define INFERD_DEVICE_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "graph.h"

/*
 * Each launcher queues one kernel on stream and returns the launch's error
 * (cudaSuccess when queued).  Pointers are device memory, row-major; y may
 * equal x, since every thread reads only the elements it later writes.
 * Element-wise kernels run blocks blocks of CUDA_EW_THREADS threads as
 * grid-stride loops; row kernels run one block per row.
 */
#define CUDA_EW_THREADS 256

/* y[r,c] = act(y[r,c] + beta c[r rs + c cs]) over n elements of cols columns; c may be NULL; y and c stored as dt. */
cudaError_t cuda_launch_gemm_epilogue(cudaStream_t stream, unsigned int blocks,
    void *y, const void *c, enum graph_dtype dt, float beta, int64_t rs, int64_t cs, size_t n,
    size_t cols, int act, float alpha_act, float beta_act);

#endif
