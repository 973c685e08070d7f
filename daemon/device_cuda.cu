/* device_cuda.cu: the CUDA backend, cuBLAS for GEMM and small kernels for the rest (DESIGN §3). */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "device_impl.h"
#include "error.h"

/* Threads per block for element-wise kernels. */
#define CUDA_EW_THREADS 256
/* Element-wise grids stop growing at this many blocks per SM (grid-stride loops do the rest). */
#define CUDA_EW_BLOCKS_PER_SM 32
/* Row kernels use up to this many threads, a multiple of 32 (the reductions rely on full warps). */
#define CUDA_ROW_THREADS_MAX 1024
/* cuBLAS workspace per compute stream, set explicitly so graph capture never allocates (cuBLAS recommends 4 MiB; Hopper up to 32 MiB). */
#define CUDA_BLAS_WORKSPACE (32 * 1024 * 1024)

/* The backend's state behind dev->ctx. */
struct cuda_ctx {
	int ordinal;
	int sm_count;
};

/* The device this thread last made current through cuda_use, -1 for none. */
static thread_local int cuda_current = -1;

/* Store "what: CUDA's message" in *cause and clear the thread's last error. */
static int __attribute__((format(printf, 3, 4)))
cuda_fail(char **cause, cudaError_t err, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	/* Otherwise the next launch check would report this error again. */
	(void)cudaGetLastError();
	return error_set(cause, "%s: %s", what, cudaGetErrorString(err));
}

/* Store "what: cuBLAS's message" in *cause. */
static int
cuda_blas_fail(char **cause, cublasStatus_t st, const char *what)
{
	(void)cudaGetLastError();
	return error_set(cause, "%s: %s", what, cublasGetStatusString(st));
}

/* Make ordinal the calling thread's current device, once per thread. */
static int
cuda_use_ordinal(int ordinal, char **cause)
{
	cudaError_t err;

	if (cuda_current == ordinal)
		return 0;
	err = cudaSetDevice(ordinal);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaSetDevice(%d)", ordinal);
	cuda_current = ordinal;
	return 0;
}

/* Make dev's GPU the calling thread's current device. */
static int
cuda_use(const device_t *dev, char **cause)
{
	return cuda_use_ordinal(((const struct cuda_ctx *)dev->ctx)->ordinal, cause);
}

/* The stream's CUDA handle. */
static cudaStream_t
cuda_stream(const device_stream_t *s)
{
	return (cudaStream_t)s->handle;
}

/* The event's CUDA handle. */
static cudaEvent_t
cuda_event(const device_event_t *e)
{
	return (cudaEvent_t)e->handle;
}

/* Blocks for a grid-stride loop over n elements on dev. */
static unsigned int
cuda_ew_blocks(const device_t *dev, size_t n)
{
	const struct cuda_ctx *c = (const struct cuda_ctx *)dev->ctx;
	size_t want, cap;

	want = (n + CUDA_EW_THREADS - 1) / CUDA_EW_THREADS;
	cap = (size_t)c->sm_count * CUDA_EW_BLOCKS_PER_SM;
	if (cap == 0)
		cap = 1024;
	return (unsigned int)(want < cap ? want : cap);
}

/* Threads for a one-block-per-row kernel: enough full warps to cover cols, at most the maximum. */
static unsigned int
cuda_row_threads(int cols)
{
	size_t t = ((size_t)cols + 31) / 32 * 32;

	return (unsigned int)(t < CUDA_ROW_THREADS_MAX ? t : CUDA_ROW_THREADS_MAX);
}

/* Report a failed kernel launch. */
static int
cuda_check_launch(const char *kernel, char **cause)
{
	cudaError_t err = cudaGetLastError();

	if (err != cudaSuccess)
		return cuda_fail(cause, err, "%s<<<>>>", kernel);
	return 0;
}

/* Apply an activation to one value; act is uniform across a launch, so the switch does not diverge. */
static __device__ __forceinline__ float
cuda_act(int act, float x)
{
	switch (act) {
	case DEVICE_ACT_RELU:
		return x > 0.0f ? x : 0.0f;
	case DEVICE_ACT_GELU:
		return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
	case DEVICE_ACT_SIGMOID:
		return 1.0f / (1.0f + expf(-x));
	case DEVICE_ACT_TANH:
		return tanhf(x);
	default:
		return x;
	}
}

/* y[r,c] = act(y[r,c] + bias[c]) over rows*cols elements; bias may be NULL. */
static __global__ void
cuda_bias_act_kernel(float *y, const float *bias, size_t n, size_t cols, int act)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride) {
		float v = y[i];

		if (bias != NULL)
			v += bias[i % cols];
		y[i] = cuda_act(act, v);
	}
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

/* Row-wise softmax in place, one block per row. */
static __global__ void
cuda_softmax_kernel(float *y, int cols)
{
	float *row = y + (size_t)blockIdx.x * (size_t)cols;
	float m = -INFINITY, sum = 0.0f;
	int c;

	for (c = threadIdx.x; c < cols; c += blockDim.x)
		m = fmaxf(m, row[c]);
	m = cuda_block_reduce(m, 1);
	/* Each thread revisits only its own columns, so no barrier between passes. */
	for (c = threadIdx.x; c < cols; c += blockDim.x) {
		float e = expf(row[c] - m);

		row[c] = e;
		sum += e;
	}
	sum = cuda_block_reduce(sum, 0);
	for (c = threadIdx.x; c < cols; c += blockDim.x)
		row[c] = row[c] / sum;
}

/* Row-wise layer norm in place, one block per row, two passes for the variance. */
static __global__ void
cuda_layernorm_kernel(float *y, const float *gamma, const float *beta, int cols,
    float eps)
{
	float *row = y + (size_t)blockIdx.x * (size_t)cols;
	float sum = 0.0f, sq = 0.0f, mean, rstd;
	int c;

	for (c = threadIdx.x; c < cols; c += blockDim.x)
		sum += row[c];
	mean = cuda_block_reduce(sum, 0) / (float)cols;
	for (c = threadIdx.x; c < cols; c += blockDim.x) {
		float d = row[c] - mean;

		sq += d * d;
	}
	rstd = rsqrtf(cuda_block_reduce(sq, 0) / (float)cols + eps);
	for (c = threadIdx.x; c < cols; c += blockDim.x) {
		float v = (row[c] - mean) * rstd;

		if (gamma != NULL)
			v *= gamma[c];
		if (beta != NULL)
			v += beta[c];
		row[c] = v;
	}
}

/* Release the backend state. */
static void
cuda_close(device_t *dev)
{
	free(dev->ctx);
	dev->ctx = NULL;
}

/* Allocate device memory. */
static int
cuda_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = cudaMalloc(ptr, size);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMalloc(%zu bytes)", size);
	return 0;
}

/* Free device memory. */
static void
cuda_free(device_t *dev, void *ptr)
{
	if (cuda_use(dev, NULL) == 0 && cudaFree(ptr) != cudaSuccess)
		(void)cudaGetLastError();
}

/* Allocate pinned host memory usable from every context. */
static int
cuda_host_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = cudaHostAlloc(ptr, size, cudaHostAllocPortable);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostAlloc(%zu bytes)", size);
	return 0;
}

/* Free pinned host memory. */
static void
cuda_host_free(device_t *dev, void *ptr)
{
	if (cuda_use(dev, NULL) == 0 && cudaFreeHost(ptr) != cudaSuccess)
		(void)cudaGetLastError();
}

/* Pin existing host memory. */
static int
cuda_host_register(device_t *dev, void *ptr, size_t size, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = cudaHostRegister(ptr, size, cudaHostRegisterPortable);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostRegister(%zu bytes)", size);
	return 0;
}

/* Unpin host memory. */
static int
cuda_host_unregister(device_t *dev, void *ptr, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = cudaHostUnregister(ptr);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostUnregister");
	return 0;
}

/*
 * Create a cuBLAS handle bound to stream, in full fp32 (no TF32), with a
 * workspace of its own so that work captured into a graph never allocates.
 */
static int
cuda_blas_create(cudaStream_t stream, cublasHandle_t *out, void **workspace,
    char **cause)
{
	cublasHandle_t h;
	cublasStatus_t st;
	cudaError_t err;

	err = cudaMalloc(workspace, CUDA_BLAS_WORKSPACE);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMalloc(cuBLAS workspace, %d bytes)", CUDA_BLAS_WORKSPACE);
	st = cublasCreate(&h);
	if (st == CUBLAS_STATUS_SUCCESS && (st = cublasSetWorkspace(h, *workspace, CUDA_BLAS_WORKSPACE)) != CUBLAS_STATUS_SUCCESS)
		cublasDestroy(h);
	if (st != CUBLAS_STATUS_SUCCESS) {
		cudaFree(*workspace);
		*workspace = NULL;
		return cuda_blas_fail(cause, st, "cublasCreate/cublasSetWorkspace");
	}
	st = cublasSetStream(h, stream);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
	if (st != CUBLAS_STATUS_SUCCESS) {
		cublasDestroy(h);
		cudaFree(*workspace);
		*workspace = NULL;
		return cuda_blas_fail(cause, st, "cublasSetStream/cublasSetMathMode");
	}
	*out = h;
	return 0;
}

/* Create a non-blocking stream, with a cuBLAS handle on compute streams. */
static int
cuda_stream_create(device_stream_t *s, char **cause)
{
	cudaStream_t stream;
	cublasHandle_t h = NULL;
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamCreateWithFlags");
	if (s->kind == DEVICE_STREAM_COMPUTE &&
	    cuda_blas_create(stream, &h, &s->blas_workspace, cause) != 0) {
		cudaStreamDestroy(stream);
		return -1;
	}
	s->handle = (void *)stream;
	s->blas = (void *)h;
	return 0;
}

/* Wait for the stream, then destroy its cuBLAS handle and the stream. */
static void
cuda_stream_destroy(device_stream_t *s)
{
	if (cuda_use(s->dev, NULL) != 0)
		return;
	(void)cudaStreamSynchronize(cuda_stream(s));
	if (s->blas != NULL)
		(void)cublasDestroy((cublasHandle_t)s->blas);
	if (s->blas_workspace != NULL)
		(void)cudaFree(s->blas_workspace);
	(void)cudaStreamDestroy(cuda_stream(s));
	(void)cudaGetLastError();
	s->handle = NULL;
	s->blas = NULL;
	s->blas_workspace = NULL;
}

/* Wait for all work queued on the stream. */
static int
cuda_stream_sync(device_stream_t *s, char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaStreamSynchronize(cuda_stream(s));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamSynchronize");
	return 0;
}

/* Create an event with timing enabled (event_elapsed_us needs it). */
static int
cuda_event_create(device_event_t *e, char **cause)
{
	cudaEvent_t ev;
	cudaError_t err;

	if (cuda_use(e->dev, cause) != 0)
		return -1;
	err = cudaEventCreateWithFlags(&ev, cudaEventDefault);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaEventCreateWithFlags");
	e->handle = (void *)ev;
	return 0;
}

/* Destroy an event. */
static void
cuda_event_destroy(device_event_t *e)
{
	if (cuda_use(e->dev, NULL) != 0)
		return;
	if (cudaEventDestroy(cuda_event(e)) != cudaSuccess)
		(void)cudaGetLastError();
	e->handle = NULL;
}

/* Record the event at the current end of the stream. */
static int
cuda_event_record(device_event_t *e, device_stream_t *s, char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaEventRecord(cuda_event(e), cuda_stream(s));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaEventRecord");
	return 0;
}

/* Make later work on the stream wait for the event. */
static int
cuda_stream_wait_event(device_stream_t *s, device_event_t *e, char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaStreamWaitEvent(cuda_stream(s), cuda_event(e), 0);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamWaitEvent");
	return 0;
}

/* 1 when the event has completed, 0 while pending. */
static int
cuda_event_query(device_event_t *e, char **cause)
{
	cudaError_t err;

	if (cuda_use(e->dev, cause) != 0)
		return -1;
	err = cudaEventQuery(cuda_event(e));
	if (err == cudaSuccess)
		return 1;
	if (err == cudaErrorNotReady) {
		/* Not ready is recorded as the last error; a later launch check would see it. */
		(void)cudaGetLastError();
		return 0;
	}
	return cuda_fail(cause, err, "cudaEventQuery");
}

/* Wait for the event. */
static int
cuda_event_sync(device_event_t *e, char **cause)
{
	cudaError_t err;

	if (cuda_use(e->dev, cause) != 0)
		return -1;
	err = cudaEventSynchronize(cuda_event(e));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaEventSynchronize");
	return 0;
}

/* Microseconds between two completed events. */
static int
cuda_event_elapsed_us(device_event_t *a, device_event_t *b, double *us,
    char **cause)
{
	cudaError_t err;
	float ms;

	if (cuda_use(a->dev, cause) != 0)
		return -1;
	err = cudaEventElapsedTime(&ms, cuda_event(a), cuda_event(b));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaEventElapsedTime");
	*us = (double)ms * 1000.0;
	return 0;
}

/* Queue a host to device copy. */
static int
cuda_copy_h2d(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, cuda_stream(s));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemcpyAsync(h2d, %zu bytes)", n);
	return 0;
}

/* Queue a device to host copy. */
static int
cuda_copy_d2h(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, cuda_stream(s));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemcpyAsync(d2h, %zu bytes)", n);
	return 0;
}

/* Queue the fused bias and activation pass over y[rows,cols]. */
static int
cuda_bias_act(device_stream_t *s, float *y, const float *bias, size_t n,
    size_t cols, enum device_act act, char **cause)
{
	cuda_bias_act_kernel<<<cuda_ew_blocks(s->dev, n), CUDA_EW_THREADS, 0,
	    cuda_stream(s)>>>(y, bias, n, cols, (int)act);
	return cuda_check_launch("cuda_bias_act_kernel", cause);
}

/* y = act(x w^T + bias): one SGEMM, then one fused pass for bias and activation. */
static int
cuda_linear(device_stream_t *s, const float *x, const float *w,
    const float *bias, float *y, int rows, int in, int out, enum device_act act,
    char **cause)
{
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t st;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	/*
	 * Column-major view: y^T[out,rows] = w[out,in] x^T[in,rows], where the
	 * row-major w reads as an in x out column-major matrix (hence OP_T).
	 */
	st = cublasSgemm((cublasHandle_t)s->blas, CUBLAS_OP_T, CUBLAS_OP_N, out,
	    rows, in, &one, w, in, x, in, &zero, y, out);
	if (st != CUBLAS_STATUS_SUCCESS)
		return cuda_blas_fail(cause, st, "cublasSgemm");
	if (bias == NULL && act == DEVICE_ACT_NONE)
		return 0;
	return cuda_bias_act(s, y, bias, (size_t)rows * (size_t)out, (size_t)out,
	    act, cause);
}

/* y = act(y), element-wise. */
static int
cuda_activation(device_stream_t *s, float *y, size_t n, enum device_act act,
    char **cause)
{
	if (cuda_use(s->dev, cause) != 0)
		return -1;
	return cuda_bias_act(s, y, NULL, n, 1, act, cause);
}

/* Row-wise softmax in place. */
static int
cuda_softmax(device_stream_t *s, float *y, int rows, int cols, char **cause)
{
	if (cuda_use(s->dev, cause) != 0)
		return -1;
	cuda_softmax_kernel<<<(unsigned int)rows, cuda_row_threads(cols), 0,
	    cuda_stream(s)>>>(y, cols);
	return cuda_check_launch("cuda_softmax_kernel", cause);
}

/* Row-wise layer norm in place. */
static int
cuda_layernorm(device_stream_t *s, float *y, const float *gamma,
    const float *beta, int rows, int cols, float eps, char **cause)
{
	if (cuda_use(s->dev, cause) != 0)
		return -1;
	cuda_layernorm_kernel<<<(unsigned int)rows, cuda_row_threads(cols), 0,
	    cuda_stream(s)>>>(y, gamma, beta, cols, eps);
	return cuda_check_launch("cuda_layernorm_kernel", cause);
}

/*
 * Record the stream's work instead of running it.  Thread-local capture mode:
 * other threads (other models, shm clients registering memory) go on working.
 */
static int
cuda_graph_capture_begin(device_stream_t *s, char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaStreamBeginCapture(cuda_stream(s), cudaStreamCaptureModeThreadLocal);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamBeginCapture");
	return 0;
}

/* End the capture and instantiate the graph for launching. */
static int
cuda_graph_capture_end(device_stream_t *s, device_graph_t *g, char **cause)
{
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaStreamEndCapture(cuda_stream(s), &graph);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamEndCapture");
	err = cudaGraphInstantiate(&exec, graph, 0);
	(void)cudaGraphDestroy(graph);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaGraphInstantiate");
	g->handle = (void *)exec;
	return 0;
}

/* Replay the graph on the stream. */
static int
cuda_graph_launch(device_graph_t *g, device_stream_t *s, char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaGraphLaunch((cudaGraphExec_t)g->handle, cuda_stream(s));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaGraphLaunch");
	return 0;
}

/* Free the instantiated graph. */
static void
cuda_graph_destroy(device_graph_t *g)
{
	if (cuda_use(g->dev, NULL) != 0)
		return;
	(void)cudaGraphExecDestroy((cudaGraphExec_t)g->handle);
	(void)cudaGetLastError();
}

/* The CUDA backend's table. */
static const struct device_ops cuda_ops = {
	.name = "cuda",
	.close = cuda_close,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.host_alloc = cuda_host_alloc,
	.host_free = cuda_host_free,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.stream_create = cuda_stream_create,
	.stream_destroy = cuda_stream_destroy,
	.stream_sync = cuda_stream_sync,
	.event_create = cuda_event_create,
	.event_destroy = cuda_event_destroy,
	.event_record = cuda_event_record,
	.stream_wait_event = cuda_stream_wait_event,
	.event_query = cuda_event_query,
	.event_sync = cuda_event_sync,
	.event_elapsed_us = cuda_event_elapsed_us,
	.copy_h2d = cuda_copy_h2d,
	.copy_d2h = cuda_copy_d2h,
	.linear = cuda_linear,
	.activation = cuda_activation,
	.softmax = cuda_softmax,
	.layernorm = cuda_layernorm,
	.graph_capture_begin = cuda_graph_capture_begin,
	.graph_capture_end = cuda_graph_capture_end,
	.graph_launch = cuda_graph_launch,
	.graph_destroy = cuda_graph_destroy,
};

/* Number of usable CUDA devices; 0 on any error (no driver, no GPU). */
extern "C" int
device_cuda_count_impl(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

/* Read the GPU's properties into the ctx and the device's name. */
static int
cuda_describe(device_t *dev, struct cuda_ctx *c, char **cause)
{
	struct cudaDeviceProp prop;
	cudaError_t err;
	unsigned long long gib;

	err = cudaGetDeviceProperties(&prop, c->ordinal);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaGetDeviceProperties(%d)", c->ordinal);
	c->sm_count = prop.multiProcessorCount;
	/* Rounded to the nearest GiB: an "80GB" card reports a little under 80 GiB. */
	gib = ((unsigned long long)prop.totalGlobalMem + (1ULL << 29)) >> 30;
	snprintf(dev->name, sizeof dev->name, "cuda:%d (%.64s, sm_%d%d, %llu GiB)",
	    c->ordinal, prop.name, prop.major, prop.minor, gib);
	return 0;
}

/* Open GPU ordinal: make it current, create its context, describe it. */
extern "C" int
device_cuda_open(device_t *dev, int ordinal, char **cause)
{
	struct cuda_ctx *c;
	cudaError_t err;
	int n;

	n = device_cuda_count_impl();
	if (ordinal < 0 || ordinal >= n)
		return error_set(cause, "cuda:%d: no such device (%d found)", ordinal, n);
	if (cuda_use_ordinal(ordinal, cause) != 0)
		return -1;
	/* Creating the context here makes driver and memory errors surface at open. */
	err = cudaFree(0);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cuda:%d: cudaFree(0) (creating the context)", ordinal);
	c = (struct cuda_ctx *)calloc(1, sizeof *c);
	if (c == NULL)
		return error_set(cause, "out of memory");
	c->ordinal = ordinal;
	if (cuda_describe(dev, c, cause) != 0) {
		free(c);
		return -1;
	}
	dev->ops = &cuda_ops;
	dev->ctx = c;
	dev->is_gpu = 1;
	return 0;
}
