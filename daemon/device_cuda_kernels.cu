/* device_cuda_kernels.cu: GEMM's bias/activation epilogue kernel (the other kernels live with their steps, device_cuda_<concern>.cu). */
#include "config.h"

#include <math.h>

#include "device_cuda_kernels.h"
#include "device_unary.h"

/* y[r,c] = act(y[r,c] + beta c[r rs + c cs]) over n elements; c may be NULL. */
static __global__ void
cuda_epilogue_kernel(float *y, const float *c, float beta, int64_t rs,
    int64_t cs, size_t n, size_t cols, int act, float aa, float ab)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride) {
		float v = y[i];

		if (c != NULL)
			v += beta * c[(int64_t)(i / cols) * rs + (int64_t)(i % cols) * cs];
		y[i] = device_unary_apply(act, v, aa, ab);
	}
}

/* Queue the GEMM epilogue. */
cudaError_t
cuda_launch_gemm_epilogue(cudaStream_t stream, unsigned int blocks, float *y,
    const float *c, float beta, int64_t rs, int64_t cs, size_t n, size_t cols,
    int act, float alpha_act, float beta_act)
{
	cuda_epilogue_kernel<<<blocks, CUDA_EW_THREADS, 0, stream>>>(y, c, beta, rs,
	    cs, n, cols, act, alpha_act, beta_act);
	return cudaGetLastError();
}

