/* device_cuda_store.h: the storage types of a plan's FP32 tensors (float, __half, __nv_bfloat16): loads and stores through float, and kernels instantiated on the type a stored dtype names (nvcc only). */
#ifndef INFERD_DEVICE_CUDA_STORE_H
#define INFERD_DEVICE_CUDA_STORE_H

#include <stddef.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

#include "graph.h"

/*
 * A plan's FP32 tensors are stored as float (fp32, tf32), __half (fp16) or
 * __nv_bfloat16 (bf16); the arithmetic is FP32 in every case.  Kernels are
 * templates on the storage type T, reading through cuda_ld and writing through
 * cuda_st<T>, so fp16 and bf16 share one source.  bfloat16 is the backend's
 * own storage dtype: no graph, model or wire tensor has it, so it takes the
 * value past the graph's dtypes and only this backend's code sees it (the
 * node checks of device_cuda_support.cu, whose "no tensor" is also
 * GRAPH_DT_COUNT, read graph dtypes only, never stored ones).
 */
#define CUDA_DT_BF16 ((enum graph_dtype)GRAPH_DT_COUNT)

/* 1 when dt is a 2-byte float storage of FP32 tensors (F16, CUDA_DT_BF16). */
static inline __host__ __device__ int
cuda_dt_reduced(enum graph_dtype dt)
{
	return dt == GRAPH_DT_F16 || dt == CUDA_DT_BF16;
}

/* 1 when dt is a float storage dtype (F32, F16, CUDA_DT_BF16). */
static inline __host__ __device__ int
cuda_dt_float(enum graph_dtype dt)
{
	return dt == GRAPH_DT_F32 || cuda_dt_reduced(dt);
}

/* Element size of a stored dtype (the graph's dtypes and CUDA_DT_BF16). */
static inline size_t
cuda_dtype_size(enum graph_dtype dt)
{
	return dt == CUDA_DT_BF16 ? 2 : graph_dtype_size(dt);
}

/* cuBLAS's name of float storage dtype dt (the compute type stays 32F at every precision). */
static inline cudaDataType_t
cuda_blas_dtype(enum graph_dtype dt)
{
	return dt == GRAPH_DT_F16 ? CUDA_R_16F : dt == CUDA_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Name of float storage dtype dt for messages ("FP32", "FP16", "BF16"). */
static inline const char *
cuda_dtype_name(enum graph_dtype dt)
{
	return dt == CUDA_DT_BF16 ? "BF16" : graph_dtype_name(dt);
}

/* An element of a float storage type as float. */
static __device__ __forceinline__ float
cuda_ld(float v)
{
	return v;
}

/* An FP16 element as float. */
static __device__ __forceinline__ float
cuda_ld(__half v)
{
	return __half2float(v);
}

/* A bfloat16 element as float. */
static __device__ __forceinline__ float
cuda_ld(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}

/* v stored as T, rounded to nearest even. */
template <typename T> static __device__ __forceinline__ T cuda_st(float v);

/* v as float. */
template <> __device__ __forceinline__ float
cuda_st<float>(float v)
{
	return v;
}

/* v as FP16, rounded to nearest even. */
template <> __device__ __forceinline__ __half
cuda_st<__half>(float v)
{
	return __float2half_rn(v);
}

/* v as bfloat16, rounded to nearest even. */
template <> __device__ __forceinline__ __nv_bfloat16
cuda_st<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

/*
 * Run the statement(s) after T with T the storage type of float dtype dt
 * (__half for F16, __nv_bfloat16 for CUDA_DT_BF16, float otherwise): one
 * template launch serves every precision.
 */
#define CUDA_STORE_DISPATCH(dt, T, ...) do { \
	if ((dt) == GRAPH_DT_F16) { \
		typedef __half T; \
		__VA_ARGS__; \
	} else if ((dt) == CUDA_DT_BF16) { \
		typedef __nv_bfloat16 T; \
		__VA_ARGS__; \
	} else { \
		typedef float T; \
		__VA_ARGS__; \
	} \
} while (0)

#endif
