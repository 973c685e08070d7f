/* device_cuda_kernels.cu: the CUDA backend's kernels (bias/activation epilogue, unary, softmax, layer norm). */
#include "config.h"

#include <math.h>

#include "device_cuda_kernels.h"
#include "device_unary.h"

/* Row kernels use up to this many threads, a multiple of 32 (the reductions rely on full warps). */
#define CUDA_ROW_THREADS_MAX 1024

/* Threads for a one-block-per-row kernel: enough full warps to cover cols, at most the maximum. */
static unsigned int
cuda_row_threads(int cols)
{
	size_t t = ((size_t)cols + 31) / 32 * 32;

	return (unsigned int)(t < CUDA_ROW_THREADS_MAX ? t : CUDA_ROW_THREADS_MAX);
}

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

/* y[i] = fn(x[i]) over n elements. */
static __global__ void
cuda_unary_kernel(const float *x, float *y, size_t n, int fn, float a, float b)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride)
		y[i] = device_unary_apply(fn, x[i], a, b);
}

/* Sum within a warp; every lane gets the result. */
static __device__ __forceinline__ float
cuda_warp_sum(float v)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}

/* Maximum within a warp; every lane gets the result. */
static __device__ __forceinline__ float
cuda_warp_max(float v)
{
	for (int off = 16; off > 0; off >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
	return v;
}

/* Sum (is_max 0) or maximum (is_max 1) over the block; blockDim.x must be a multiple of 32, at most 1024. */
static __device__ float
cuda_block_reduce(float v, int is_max)
{
	__shared__ float part[32];
	__shared__ float result;
	unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	unsigned int nwarps = blockDim.x >> 5;

	v = is_max ? cuda_warp_max(v) : cuda_warp_sum(v);
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < nwarps ? part[lane] : (is_max ? -INFINITY : 0.0f);
		v = is_max ? cuda_warp_max(v) : cuda_warp_sum(v);
		if (lane == 0)
			result = v;
	}
	__syncthreads();
	v = result;
	/* The next call reuses part and result. */
	__syncthreads();
	return v;
}

/* Row-wise softmax (or log-softmax) of x into y, one block per row. */
static __global__ void
cuda_softmax_kernel(const float *x, float *y, int cols, int as_log)
{
	const float *in = x + (size_t)blockIdx.x * (size_t)cols;
	float *row = y + (size_t)blockIdx.x * (size_t)cols;
	float m = -INFINITY, sum = 0.0f;
	int c;

	for (c = threadIdx.x; c < cols; c += blockDim.x)
		m = fmaxf(m, in[c]);
	m = cuda_block_reduce(m, 1);
	/* Each thread revisits only its own columns, so no barrier between passes. */
	for (c = threadIdx.x; c < cols; c += blockDim.x) {
		float e = expf(in[c] - m);

		if (!as_log)
			row[c] = e;
		sum += e;
	}
	sum = cuda_block_reduce(sum, 0);
	for (c = threadIdx.x; c < cols; c += blockDim.x)
		row[c] = as_log ? (in[c] - m) - logf(sum) : row[c] / sum;
}

/* Row-wise layer norm of x into y, one block per row, two passes for the variance. */
static __global__ void
cuda_layernorm_kernel(const float *x, float *y, const float *gamma,
    const float *beta, int cols, float eps)
{
	const float *in = x + (size_t)blockIdx.x * (size_t)cols;
	float *row = y + (size_t)blockIdx.x * (size_t)cols;
	float sum = 0.0f, sq = 0.0f, mean, rstd;
	int c;

	for (c = threadIdx.x; c < cols; c += blockDim.x)
		sum += in[c];
	mean = cuda_block_reduce(sum, 0) / (float)cols;
	for (c = threadIdx.x; c < cols; c += blockDim.x) {
		float d = in[c] - mean;

		sq += d * d;
	}
	rstd = rsqrtf(cuda_block_reduce(sq, 0) / (float)cols + eps);
	for (c = threadIdx.x; c < cols; c += blockDim.x) {
		float v = (in[c] - mean) * rstd;

		if (gamma != NULL)
			v *= gamma[c];
		if (beta != NULL)
			v += beta[c];
		row[c] = v;
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

/* Queue an element-wise function. */
cudaError_t
cuda_launch_unary(cudaStream_t stream, unsigned int blocks, const float *x,
    float *y, size_t n, int fn, float alpha, float beta)
{
	cuda_unary_kernel<<<blocks, CUDA_EW_THREADS, 0, stream>>>(x, y, n, fn, alpha, beta);
	return cudaGetLastError();
}

/* Queue a row-wise softmax. */
cudaError_t
cuda_launch_softmax(cudaStream_t stream, const float *x, float *y, int rows,
    int cols, int as_log)
{
	cuda_softmax_kernel<<<(unsigned int)rows, cuda_row_threads(cols), 0, stream>>>(x, y, cols, as_log);
	return cudaGetLastError();
}

/* Queue a row-wise layer norm. */
cudaError_t
cuda_launch_layernorm(cudaStream_t stream, const float *x, float *y,
    const float *gamma, const float *beta, int rows, int cols, float eps)
{
	cuda_layernorm_kernel<<<(unsigned int)rows, cuda_row_threads(cols), 0, stream>>>(x, y, gamma, beta, cols, eps);
	return cudaGetLastError();
}
