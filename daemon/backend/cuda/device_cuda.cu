/* device_cuda.cu: the CUDA backend: memory, streams with cuBLAS, events, device graphs, and plans whose steps the per-op compilers (device_cuda_impl.h) resolve. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include "device_cuda_dnn.h"
#include "device_cuda_impl.h"
#include "device_cuda_sdpa.h"
#include "device_impl.h"
#include "error.h"

/* cuBLAS workspace per compute stream, set explicitly so graph capture never allocates (cuBLAS recommends 4 MiB; Hopper up to 32 MiB). */

/* The backend's state behind dev->ctx. */
struct cuda_ctx {
	int ordinal;
	int sm_count;
	compile_cache_t *cache;		/* the compile cache of this GPU model and these libraries (NULL: off) */
	int cc_major, cc_minor;		/* compute capability */
};

/* A stream's state behind s->handle; compute streams carry cuBLAS. */
struct cuda_stream {
	cudaStream_t stream;
	cublasHandle_t blas;		/* compute streams only */
	void *dnn;			/* compute streams: cuDNN handle (NULL without cuDNN) */
	void *workspace;		/* fixed cuBLAS workspace, so graph capture never allocates */
	cublasLtHandle_t lt;		/* compute streams: cuBLASLt, on the same workspace (one stream, one at a time) */
};

/* A plan behind p->handle: one step per node with work to do (plus casts at fp16/bf16), and its precision's state. */
struct cuda_plan {
	size_t nsteps;
	struct cuda_step *steps;
	int precision;
	struct cuda_prec prec;
	struct cuda_ws ws;		/* where the steps' scratch is */
};

/* The plan's scratch rule from the device layer's. */
static void
cuda_plan_ws(const device_plan_t *p, struct cuda_ws *ws)
{
	memset(ws, 0, sizeof *ws);
	ws->mode = p->ws_mode == DEVICE_WS_SHARED ? CUDA_WS_SHARED : p->ws_mode == DEVICE_WS_PROBE ? CUDA_WS_PROBE :
	    CUDA_WS_OWN;
	ws->base = (char *)p->ws;
	ws->bytes = p->ws_bytes;
}

/* The device this thread last made current through cuda_use, -1 for none. */
static thread_local int cuda_current = -1;

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
	return ((const struct cuda_stream *)s->handle)->stream;
}

/* The event's CUDA handle. */
static cudaEvent_t
cuda_event(const device_event_t *e)
{
	return (cudaEvent_t)e->handle;
}

/* Release the backend state. */
static void
cuda_close(device_t *dev)
{
	/* No engine may still be building for plans of a device going away. */
	cuda_sdpa_quiesce();
	if (dev->ctx != NULL)
		cuda_dnn_pool_drain(((const struct cuda_ctx *)dev->ctx)->ordinal);
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
	err = CUDA_QUIET(cudaMalloc(ptr, size));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMalloc(%zu bytes)", size);
	return 0;
}

/* Free and total memory of the device (cudaMemGetInfo). */
static int
cuda_mem_info(device_t *dev, size_t *free_bytes, size_t *total_bytes, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = cudaMemGetInfo(free_bytes, total_bytes);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemGetInfo");
	return 0;
}

/* Free device memory. */
static void
cuda_free(device_t *dev, void *ptr)
{
	if (cuda_use(dev, NULL) == 0 && CUDA_QUIET(cudaFree(ptr)) != cudaSuccess)
		(void)cudaGetLastError();
}

/* Allocate pinned host memory usable from every context. */
static int
cuda_host_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = CUDA_QUIET(cudaHostAlloc(ptr, size, cudaHostAllocPortable));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostAlloc(%zu bytes)", size);
	return 0;
}

/* Free pinned host memory. */
static void
cuda_host_free(device_t *dev, void *ptr)
{
	if (cuda_use(dev, NULL) == 0 && CUDA_QUIET(cudaFreeHost(ptr)) != cudaSuccess)
		(void)cudaGetLastError();
}

/* Pin existing host memory. */
static int
cuda_host_register(device_t *dev, void *ptr, size_t size, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	/* Mapped too: small tensors are read and written there by the batched-copy kernel. */
	err = CUDA_QUIET(cudaHostRegister(ptr, size, cudaHostRegisterPortable | cudaHostRegisterMapped));
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
	err = CUDA_QUIET(cudaHostUnregister(ptr));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostUnregister");
	return 0;
}

/* cuMemGetAddressRange, found through the runtime so that nothing links libcuda. */
typedef CUresult (*cuda_range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);

/* The bytes of the allocation holding ptr from ptr on; -1 with *cause when they cannot be known. */
static int
cuda_bytes_after(void *ptr, size_t *avail, char **cause)
{
	enum cudaDriverEntryPointQueryResult q;
	cuda_range_fn range = NULL;
	CUdeviceptr base;
	size_t size;
	cudaError_t err;

	err = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void **)&range, 12000,
	    cudaEnableDefault, &q);
	if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || range == NULL)
		return cuda_fail(cause, err != cudaSuccess ? err : cudaErrorSymbolNotFound,
		    "cudaGetDriverEntryPointByVersion(cuMemGetAddressRange)");
	if (range(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS)
		return error_set(cause, "cuMemGetAddressRange failed on the opened handle");
	*avail = size - ((CUdeviceptr)ptr - base);
	return 0;
}

/* Open another process's allocation; its size is checked, not taken on the client's word. */
static int
cuda_ipc_open(device_t *dev, const unsigned char *handle, int device_id, size_t size,
    void **ptr, char **cause)
{
	const struct cuda_ctx *c = (const struct cuda_ctx *)dev->ctx;
	cudaIpcMemHandle_t h;
	cudaError_t err;
	size_t avail = 0;
	void *p = NULL;

	static_assert(sizeof h == DEVICE_IPC_HANDLE_BYTES, "cudaIpcMemHandle_t is 64 bytes");
	if (device_id != c->ordinal)
		return error_set(cause, "device_id %d: this daemon runs on cuda:%d only", device_id,
		    c->ordinal);
	if (cuda_use(dev, cause) != 0)
		return -1;
	memcpy(&h, handle, sizeof h);
	err = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaIpcOpenMemHandle");
	if (cuda_bytes_after(p, &avail, cause) != 0 || avail < size) {
		if (avail < size && avail != 0)
			error_set(cause, "byte_size %zu exceeds the %zu bytes of the shared allocation",
			    size, avail);
		cudaIpcCloseMemHandle(p);
		return -1;
	}
	*ptr = p;
	return 0;
}

/* Close an opened IPC handle. */
static void
cuda_ipc_close(device_t *dev, void *ptr)
{
	if (cuda_use(dev, NULL) == 0 && cudaIpcCloseMemHandle(ptr) != cudaSuccess)
		(void)cudaGetLastError();
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

	err = CUDA_QUIET(cudaMalloc(workspace, CUDA_BLAS_WORKSPACE));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMalloc(cuBLAS workspace, %d bytes)", CUDA_BLAS_WORKSPACE);
	CUDA_QUIETLY(st = cublasCreate(&h));
	if (st == CUBLAS_STATUS_SUCCESS && (st = cublasSetWorkspace(h, *workspace, CUDA_BLAS_WORKSPACE)) != CUBLAS_STATUS_SUCCESS)
		CUDA_QUIETLY((void)cublasDestroy(h));
	if (st != CUBLAS_STATUS_SUCCESS) {
		CUDA_QUIET(cudaFree(*workspace));
		*workspace = NULL;
		return cuda_blas_fail(cause, st, "cublasCreate/cublasSetWorkspace");
	}
	st = cublasSetStream(h, stream);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
	if (st != CUBLAS_STATUS_SUCCESS) {
		CUDA_QUIETLY((void)cublasDestroy(h));
		CUDA_QUIET(cudaFree(*workspace));
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
	struct cuda_stream *cs;
	cublasStatus_t bst;
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	cs = (struct cuda_stream *)calloc(1, sizeof *cs);
	if (cs == NULL)
		return error_set(cause, "out of memory");
	err = cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking);
	if (err != cudaSuccess) {
		free(cs);
		return cuda_fail(cause, err, "cudaStreamCreateWithFlags");
	}
	if (s->kind == DEVICE_STREAM_COMPUTE &&
	    cuda_blas_create(cs->stream, &cs->blas, &cs->workspace, cause) != 0) {
		CUDA_QUIET(cudaStreamDestroy(cs->stream));
		free(cs);
		return -1;
	}
	if (s->kind == DEVICE_STREAM_COMPUTE && (bst = cublasLtCreate(&cs->lt)) != CUBLAS_STATUS_SUCCESS) {
		cs->lt = NULL;
		cuda_blas_fail(cause, bst, "cublasLtCreate");
	}
	if (s->kind == DEVICE_STREAM_COMPUTE && (cs->lt == NULL || cuda_dnn_handle_create(cs->stream, &cs->dnn, cause) != 0)) {
		if (cs->lt != NULL)
			(void)cublasLtDestroy(cs->lt);
		CUDA_QUIETLY((void)cublasDestroy(cs->blas));
		(void)CUDA_QUIET(cudaFree(cs->workspace));
		(void)CUDA_QUIET(cudaStreamDestroy(cs->stream));
		free(cs);
		return -1;
	}
	s->handle = cs;
	s->bytes = s->kind == DEVICE_STREAM_COMPUTE ? CUDA_BLAS_WORKSPACE : 0;
	return 0;
}

/* Wait for the stream, then destroy its cuBLAS handle and the stream. */
static void
cuda_stream_destroy(device_stream_t *s)
{
	struct cuda_stream *cs = (struct cuda_stream *)s->handle;

	if (cs == NULL || cuda_use(s->dev, NULL) != 0)
		return;
	(void)cudaStreamSynchronize(cs->stream);
	if (cs->blas != NULL)
		CUDA_QUIETLY((void)cublasDestroy(cs->blas));
	if (cs->lt != NULL)
		(void)cublasLtDestroy(cs->lt);
	cuda_dnn_handle_destroy(cs->dnn);
	if (cs->workspace != NULL)
		(void)CUDA_QUIET(cudaFree(cs->workspace));
	(void)CUDA_QUIET(cudaStreamDestroy(cs->stream));
	(void)cudaGetLastError();
	free(cs);
	s->handle = NULL;
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

/*
 * Queue a copy of n bytes (direction "h2d" or "d2h", for the message).
 * Default kind: the host side is host memory, or a client's CUDA shared-memory
 * region (device memory).
 */
static int
cuda_copy(device_stream_t *s, void *dst, const void *src, size_t n, const char *direction, char **cause)
{
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	err = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, cuda_stream(s));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemcpyAsync(%s, %zu bytes)", direction, n);
	return 0;
}

/* Queue a host to device copy. */
static int
cuda_copy_h2d(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	return cuda_copy(s, dst, src, n, "h2d", cause);
}

/* Queue a device to host copy. */
static int
cuda_copy_d2h(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	return cuda_copy(s, dst, src, n, "d2h", cause);
}

/* A table's entries in pinned memory mapped for the device; handle holds their device address. */
static int
cuda_copy_table_create(device_copy_table_t *t, char **cause)
{
	size_t bytes = t->capacity * sizeof *t->entries;
	void *host = NULL, *dptr = NULL;
	cudaError_t err;

	if (cuda_use(t->dev, cause) != 0)
		return -1;
	err = CUDA_QUIET(cudaHostAlloc(&host, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostAlloc(copy table, %zu bytes)", bytes);
	err = cudaHostGetDevicePointer(&dptr, host, 0);
	if (err != cudaSuccess) {
		(void)CUDA_QUIET(cudaFreeHost(host));
		return cuda_fail(cause, err, "cudaHostGetDevicePointer(copy table)");
	}
	t->entries = (struct device_copy_entry *)host;
	t->handle = dptr;
	return 0;
}

/* Free a table's pinned entries. */
static void
cuda_copy_table_destroy(device_copy_table_t *t)
{
	if (t->entries != NULL && cuda_use(t->dev, NULL) == 0 && CUDA_QUIET(cudaFreeHost(t->entries)) != cudaSuccess)
		(void)cudaGetLastError();
	t->entries = NULL;
}

/* Queue one kernel over the table's first n entries. */
static int
cuda_copy_batch(device_stream_t *s, device_copy_table_t *t, size_t n, char **cause)
{
	size_t i, max_bytes = 0;
	cudaError_t err;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (t->entries[i].bytes > max_bytes)
			max_bytes = t->entries[i].bytes;
	err = cuda_launch_copy_batch(cuda_stream(s), t->entries, (const struct device_copy_entry *)t->handle, n,
	    max_bytes);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "batched copy kernel (%zu tensors)", n);
	return 0;
}

/* The device address of registered (mapped) host memory. */
static int
cuda_host_mapped(device_t *dev, void *host, void **dev_ptr, char **cause)
{
	cudaError_t err;

	if (cuda_use(dev, cause) != 0)
		return -1;
	err = cudaHostGetDevicePointer(dev_ptr, host, 0);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaHostGetDevicePointer");
	return 0;
}

/* Whether the CUDA kernels can run node n (never one that carries strings: their slots are host memory). */
static int
cuda_supports_node(const device_t *dev, const graph_t *g,
    const struct graph_node *n, char **why)
{
	for (int k = 0; k < n->ninputs + n->noutputs; k++) {
		int t = k < n->ninputs ? n->inputs[k] : n->outputs[k - n->ninputs];

		if (t >= 0 && g->tensors[t].dtype == GRAPH_DT_STRING) {
			error_set(why, "BYTES (string) tensors run on the CPU backend only");
			return 0;
		}
	}
	return cuda_node_supported(g, n, why);
}

/* Free a plan's steps, their parameters and workspaces. */
static void
cuda_plan_free(device_plan_t *p)
{
	struct cuda_plan *c = (struct cuda_plan *)p->handle;

	if (c == NULL)
		return;
	if (cuda_use(p->dev, NULL) != 0)
		(void)cudaGetLastError();
	for (size_t i = 0; i < c->nsteps; i++) {
		if (c->steps[i].fini != NULL)
			c->steps[i].fini(&c->steps[i]);
		free(c->steps[i].p);
		cuda_step_ws_free(&c->steps[i]);
	}
	(void)cudaGetLastError();
	cuda_prec_free(&c->prec);
	free(c->steps);
	free(c);
	p->handle = NULL;
}

/* Compile node n into the next step; a step with nothing to do is dropped. */
static int
cuda_plan_add(struct cuda_plan *c, const struct cuda_compile *cc, const struct graph_node *n, char **cause)
{
	struct cuda_step *st = &c->steps[c->nsteps];
	cuda_compile_fn fn = cuda_op_compiler(n->op);

	st->n = n;
	if (fn == NULL)
		return error_set(cause, "op %s has no CUDA kernel (serve this model from a daemon with device = cpu)",
		    graph_op_name(n->op));
	/* The step is counted before compiling so that plan_free releases what a failed compile allocated. */
	c->nsteps++;
	if (cuda_prec_compile_node(cc, n, fn, st, cause) != 0)
		return -1;
	if (st->run == NULL) {
		cuda_step_clear(st);
		c->nsteps--;
	}
	return 0;
}

/* Record what the compile allocated: the steps' own scratch, the FP16 buffers, the FP16 weights it created. */
static void
cuda_plan_tally(device_plan_t *p, const struct cuda_plan *c)
{
	size_t own = c->prec.owned_bytes;

	for (size_t i = 0; i < c->nsteps; i++)
		if (c->steps[i].ws != NULL && !c->steps[i].ws_shared)
			own += c->steps[i].ws_bytes;
	p->own_bytes = own;
	p->weight_bytes = c->prec.new_weight_bytes;
}

/*
 * Refuse a precision the GPU has no arithmetic for: bfloat16 needs compute
 * capability 8.0 (Ampere) for its conversions, cuBLAS GEMMs and cuDNN engines.
 */
static int
cuda_precision_supported(const device_t *dev, int precision, char **cause)
{
	const struct cuda_ctx *x = (const struct cuda_ctx *)dev->ctx;

	if (precision == GRAPH_PRECISION_BF16 && x->cc_major < 8)
		return error_set(cause, "\"precision\": \"bf16\" needs a GPU of compute capability 8.0 or above; "
		    "cuda:%d is %d.%d: set the model's \"precision\" to \"fp16\" or \"fp32\"", x->ordinal, x->cc_major,
		    x->cc_minor);
	return 0;
}

/* Resolve every node into a step, allocating every workspace now (runs never allocate). */
static int
cuda_plan_compile(device_plan_t *p, const struct graph_shape *shapes,
    void *const *addrs, char **cause)
{
	const graph_t *g = p->g;
	struct cuda_compile cc = { g, shapes, addrs, NULL, addrs, ((const struct cuda_ctx *)p->dev->ctx)->ordinal,
	    p->precision };
	struct cuda_plan *c;
	/* Room for the input casts (one per tensor at most) and the output casts of fp16/bf16. */
	size_t i, cap = g->nnodes + g->ntensors + (size_t)(g->noutputs > 0 ? g->noutputs : 0) + 1;

	if (cuda_use(p->dev, cause) != 0 || cuda_precision_supported(p->dev, p->precision, cause) != 0)
		return -1;
	c = (struct cuda_plan *)calloc(1, sizeof *c);
	if (c == NULL || (c->steps = (struct cuda_step *)calloc(cap, sizeof *c->steps)) == NULL) {
		free(c);
		return error_set(cause, "out of memory");
	}
	p->handle = c;
	c->precision = p->precision;
	cuda_plan_ws(p, &c->ws);
	cc.ws = &c->ws;
	cc.dnn = cuda_dnn_scope_new();
	cc.cache = ((const struct cuda_ctx *)p->dev->ctx)->cache;
	cc.sdpa = cuda_sdpa_scope_new();
	cc.background = p->background;
	cc.batch_invariant = p->batch_invariant;
	if (cuda_prec_prepare(&c->prec, &cc, addrs, c->steps, &c->nsteps, cause) != 0) {
		error_prefix(cause, "precision %s", graph_precision_name(p->precision));
		goto fail;
	}
	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		if (cuda_plan_add(c, &cc, n, cause) != 0) {
			error_prefix(cause, "node '%s' (%s)", n->name ? n->name : "?", graph_op_name(n->op));
			goto fail;
		}
	}
	if (cuda_prec_finish(&c->prec, &cc, addrs, c->steps, &c->nsteps, cause) != 0) {
		error_prefix(cause, "precision %s", graph_precision_name(p->precision));
		goto fail;
	}
	cuda_dnn_scope_free(cc.dnn);
	cuda_sdpa_scope_free(cc.sdpa);
	p->ws_need = c->ws.need;
	cuda_plan_tally(p, c);
	return 0;
fail:
	cuda_dnn_scope_free(cc.dnn);
	cuda_sdpa_scope_free(cc.sdpa);
	cuda_plan_free(p);
	return -1;
}

/* Record mark (NULL: none, when not profiling) on the stream; -1 naming the step when that fails. */
static int
cuda_plan_mark(cudaEvent_t mark, const struct cuda_exec *ex, size_t step, char **cause)
{
	cudaError_t err;

	if (mark == NULL || (err = cudaEventRecord(mark, ex->stream)) == cudaSuccess)
		return 0;
	return cuda_fail(cause, err, "cudaEventRecord (profile mark %zu)", step);
}

/*
 * Run every step; the cuBLAS math mode is the plan's (TF32 tensor ops unless
 * fp32), the handle's restored after.  marks (NULL when not profiling):
 * nsteps + 1 events, marks[i] recorded before step i and marks[nsteps] after the last.
 */
static int
cuda_plan_steps(const struct cuda_plan *c, const struct cuda_exec *ex, cudaEvent_t *marks, char **cause)
{
	cublasMath_t old = CUBLAS_DEFAULT_MATH;
	cublasStatus_t bs;
	int rc = 0;

	if (c->precision != GRAPH_PRECISION_FP32) {
		if ((bs = cublasGetMathMode(ex->blas, &old)) != CUBLAS_STATUS_SUCCESS ||
		    (bs = cublasSetMathMode(ex->blas, CUBLAS_TF32_TENSOR_OP_MATH)) != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSetMathMode(TF32)");
	}
	for (size_t i = 0; i < c->nsteps && rc == 0; i++) {
		const struct graph_node *n = c->steps[i].n;
		if ((rc = cuda_plan_mark(marks ? marks[i] : NULL, ex, i, cause)) != 0)
			break;
		if ((rc = c->steps[i].run(&c->steps[i], ex, cause)) != 0)
			error_prefix(cause, "node '%s' (%s)", n == NULL ? "(precision cast)" : n->name ? n->name : "?",
			    n == NULL ? "Cast" : graph_op_name(n->op));
	}
	if (rc == 0)
		rc = cuda_plan_mark(marks ? marks[c->nsteps] : NULL, ex, c->nsteps, cause);
	if (c->precision != GRAPH_PRECISION_FP32 && (bs = cublasSetMathMode(ex->blas, old)) != CUBLAS_STATUS_SUCCESS &&
	    rc == 0)
		return cuda_blas_fail(cause, bs, "cublasSetMathMode(restore)");
	return rc;
}

/* Wait for the engines the plan's steps left to worker threads: 0 ready, 1 when one found none. */
static int
cuda_plan_settle(device_plan_t *p, char **cause)
{
	const struct cuda_plan *c = (const struct cuda_plan *)p->handle;
	int redo = 0;

	(void)cause;
	for (size_t i = 0; c != NULL && i < c->nsteps; i++)
		if (c->steps[i].settle != NULL && c->steps[i].settle(&c->steps[i]) != 0)
			redo = 1;
	return redo;
}

/* Queue every step on the stream. */
static int
cuda_plan_run(device_plan_t *p, device_stream_t *s, char **cause)
{
	const struct cuda_plan *c = (const struct cuda_plan *)p->handle;
	const struct cuda_stream *cs = (const struct cuda_stream *)s->handle;
	struct cuda_exec ex = { cs->stream, cs->blas, cs->dnn, cs->lt, cs->workspace, CUDA_BLAS_WORKSPACE };

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	return cuda_plan_steps(c, &ex, NULL, cause);
}

/* Destroy the first n of marks (quietly: beside another thread's capture), then the array. */
static void
cuda_marks_free(cudaEvent_t *marks, size_t n)
{
	CUDA_QUIETLY(
		for (size_t i = 0; i < n; i++)
			if (cudaEventDestroy(marks[i]) != cudaSuccess)
				(void)cudaGetLastError();
	);
	free(marks);
}

/* n timing events into *out (a diagnostic: allocated per profile, never by a run). */
static int
cuda_marks_create(size_t n, cudaEvent_t **out, char **cause)
{
	cudaEvent_t *marks = (cudaEvent_t *)calloc(n, sizeof *marks);
	cudaError_t err;

	if (marks == NULL)
		return error_set(cause, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if ((err = cudaEventCreateWithFlags(&marks[i], cudaEventDefault)) != cudaSuccess) {
			cuda_marks_free(marks, i);
			return cuda_fail(cause, err, "cudaEventCreateWithFlags (profile mark %zu)", i);
		}
	}
	*out = marks;
	return 0;
}

/* How a step ran for the profile: the plan's precision, "fp32 island", or the precision and "fused" (a Conv with its epilogue in cuDNN). */
static const char *
cuda_step_how(const struct cuda_plan *c, const struct cuda_step *st)
{
	static const char *const fused[GRAPH_PRECISION_COUNT] = { "fp32 fused", "tf32 fused", "fp16 fused",
		"bf16 fused" };

	if (cuda_prec_step_island(st))
		return "fp32 island";
	if (cuda_conv_step_fused(st) && c->precision >= 0 && c->precision < GRAPH_PRECISION_COUNT)
		return fused[c->precision];
	return graph_precision_name(c->precision);
}

/* Each step's name, op and time between its marks, into t (nsteps entries); the marks have completed. */
static int
cuda_marks_read(const struct cuda_plan *c, cudaEvent_t *marks, struct device_step_time *t, char **cause)
{
	cudaError_t err;
	float ms;

	for (size_t i = 0; i < c->nsteps; i++) {
		const struct graph_node *n = c->steps[i].n;
		if ((err = cudaEventElapsedTime(&ms, marks[i], marks[i + 1])) != cudaSuccess)
			return cuda_fail(cause, err, "cudaEventElapsedTime (profile step %zu)", i);
		t[i].node = n == NULL ? "(precision cast)" : n->name ? n->name : "?";
		t[i].op = n == NULL ? "Cast (precision)" : graph_op_name(n->op);
		t[i].how = cuda_step_how(c, &c->steps[i]);
		t[i].us = (double)ms * 1000.0;
	}
	return 0;
}

/* Refuse a stream that is capturing: the marks would be captured, not timed. */
static int
cuda_not_capturing(cudaStream_t stream, char **cause)
{
	cudaStreamCaptureStatus cs;
	cudaError_t err = cudaStreamIsCapturing(stream, &cs);

	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamIsCapturing");
	if (cs != cudaStreamCaptureStatusNone)
		return error_set(cause, "cannot profile a plan on a stream that is capturing a graph");
	return 0;
}

/* Run every step once with an event before and after each, wait, and read the steps' times. */
static int
cuda_plan_profile(device_plan_t *p, device_stream_t *s, struct device_step_time **out, size_t *n, char **cause)
{
	const struct cuda_plan *c = (const struct cuda_plan *)p->handle;
	const struct cuda_stream *cs = (const struct cuda_stream *)s->handle;
	struct cuda_exec ex = { cs->stream, cs->blas, cs->dnn, cs->lt, cs->workspace, CUDA_BLAS_WORKSPACE };
	struct device_step_time *t;
	cudaEvent_t *marks = NULL;
	cudaError_t err;
	int rc;

	if (cuda_use(s->dev, cause) != 0 || cuda_not_capturing(cs->stream, cause) != 0)
		return -1;
	if ((t = (struct device_step_time *)calloc(c->nsteps + 1, sizeof *t)) == NULL)
		return error_set(cause, "out of memory");
	if (cuda_marks_create(c->nsteps + 1, &marks, cause) != 0) {
		free(t);
		return -1;
	}
	rc = cuda_plan_steps(c, &ex, marks, cause);
	/* Wait even after a failure: queued steps may still be running against the marks. */
	err = cudaStreamSynchronize(cs->stream);
	if (rc == 0 && err != cudaSuccess)
		rc = cuda_fail(cause, err, "cudaStreamSynchronize (profile)");
	if (rc == 0)
		rc = cuda_marks_read(c, marks, t, cause);
	cuda_marks_free(marks, c->nsteps + 1);
	if (rc != 0) {
		free(t);
		return -1;
	}
	*out = t;
	*n = c->nsteps;
	return 0;
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
	(void)pthread_rwlock_rdlock(&cuda_quiet_lock);
	err = cudaStreamBeginCapture(cuda_stream(s), cudaStreamCaptureModeThreadLocal);
	if (err != cudaSuccess) {
		(void)pthread_rwlock_unlock(&cuda_quiet_lock);
		return cuda_fail(cause, err, "cudaStreamBeginCapture");
	}
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
	(void)pthread_rwlock_unlock(&cuda_quiet_lock);	/* held since cuda_graph_capture_begin */
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
	(void)CUDA_QUIET(cudaGraphExecDestroy((cudaGraphExec_t)g->handle));
	(void)cudaGetLastError();
}

/* The CUDA backend's table. */
static const struct device_ops cuda_ops = {
	.name = "cuda",
	.close = cuda_close,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.mem_info = cuda_mem_info,
	.host_alloc = cuda_host_alloc,
	.host_free = cuda_host_free,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.ipc_open = cuda_ipc_open,
	.ipc_close = cuda_ipc_close,
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
	.copy_table_create = cuda_copy_table_create,
	.copy_table_destroy = cuda_copy_table_destroy,
	.copy_batch = cuda_copy_batch,
	.host_mapped = cuda_host_mapped,
	.supports_node = cuda_supports_node,
	.plan_compile = cuda_plan_compile,
	.plan_run = cuda_plan_run,
	.plan_settle = cuda_plan_settle,
	.plan_free = cuda_plan_free,
	.plan_profile = cuda_plan_profile,
	.graph_capture_begin = cuda_graph_capture_begin,
	.graph_capture_end = cuda_graph_capture_end,
	.graph_launch = cuda_graph_launch,
	.graph_destroy = cuda_graph_destroy,
};

/* Idle cuDNN plans in the pool; -1 without cuDNN. */
extern "C" long
device_cuda_plans_idle_impl(void)
{
#ifdef HAVE_CUDNN
	return (long)cuda_dnn_pool_size();
#else
	return -1;
#endif
}

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

/* A CUDA UUID as NVML spells it: "GPU-" and the 16 bytes in hex, grouped 4-2-2-2-6. */
static void
cuda_uuid_text(const cudaUUID_t *id, char *out, size_t len)
{
	const unsigned char *b = (const unsigned char *)id->bytes;

	snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/*
 * The compile cache of this GPU: its identity is everything a cached choice
 * depends on besides the op (the GPU model and compute capability, the CUDA
 * driver's version, cuDNN's and cuBLASLt's), also the device's identity
 * (device.h); NULL when the driver's version cannot be read.
 */
static compile_cache_t *
cuda_cache_open(device_t *dev, const struct cudaDeviceProp *prop)
{
	char id[256];
	int driver = 0;

	if (cudaDriverGetVersion(&driver) != cudaSuccess)
		return NULL;
	snprintf(id, sizeof id, "%.96s sm_%d%d driver %d cudnn %zu cublasLt %zu", prop->name, prop->major,
	    prop->minor, driver, cuda_dnn_version(), (size_t)cublasLtGetVersion());
	snprintf(dev->identity, sizeof dev->identity, "%s", id);
	return compile_cache_get(id);
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
	c->cc_major = prop.major;
	c->cc_minor = prop.minor;
	dev->integrated = prop.integrated != 0;
	/* Rounded to the nearest GiB: an "80GB" card reports a little under 80 GiB. */
	gib = ((unsigned long long)prop.totalGlobalMem + (1ULL << 29)) >> 30;
	snprintf(dev->name, sizeof dev->name, "cuda:%d (%.64s, sm_%d%d, %llu GiB)",
	    c->ordinal, prop.name, prop.major, prop.minor, gib);
	cuda_uuid_text(&prop.uuid, dev->uuid, sizeof dev->uuid);
	c->cache = cuda_cache_open(dev, &prop);
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
	err = CUDA_QUIET(cudaFree(0));
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
