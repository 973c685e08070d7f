/* device_cuda_kernels.cu: GEMM's bias/activation epilogue kernel (the other kernels live with their steps, device_cuda_<concern>.cu). */
#include "config.h"

#include <math.h>

#include "device_cuda_kernels.h"
#include "device_cuda_store.h"
#include "device_unary.h"

/* y[r,c] = act(y[r,c] + beta c[r rs + c cs]) over n elements; c may be NULL; T is the storage (math in float). */
template <typename T>
static __global__ void
cuda_epilogue_kernel(T *y, const T *c, float beta, int64_t rs,
    int64_t cs, size_t n, size_t cols, int act, float aa, float ab)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride) {
		float v = cuda_ld(y[i]);
		if (c != NULL)
			v += beta * cuda_ld(c[(int64_t)(i / cols) * rs + (int64_t)(i % cols) * cs]);
		y[i] = cuda_st<T>(device_unary_apply(act, v, aa, ab));
	}
}

/* Queue the GEMM epilogue over elements stored as dt (F32, F16, CUDA_DT_BF16). */
cudaError_t
cuda_launch_gemm_epilogue(cudaStream_t stream, unsigned int blocks, void *y,
    const void *c, enum graph_dtype dt, float beta, int64_t rs, int64_t cs, size_t n, size_t cols,
    int act, float alpha_act, float beta_act)
{
	CUDA_STORE_DISPATCH(dt, T, cuda_epilogue_kernel<T><<<blocks, CUDA_EW_THREADS, 0, stream>>>((T *)y,
	    (const T *)c, beta, rs, cs, n, cols, act, alpha_act, beta_act));
	return cudaGetLastError();
}
