/* device_cuda.cu: the CUDA backend: memory, streams with cuBLAS, events, device graphs, plans over cuBLAS and device_cuda_kernels.cu. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "device_cuda_kernels.h"
#include "device_impl.h"
#include "error.h"

/* Element-wise grids stop growing at this many blocks per SM (grid-stride loops do the rest). */
#define CUDA_EW_BLOCKS_PER_SM 32
/* cuBLAS workspace per compute stream, set explicitly so graph capture never allocates (cuBLAS recommends 4 MiB; Hopper up to 32 MiB). */
#define CUDA_BLAS_WORKSPACE (32 * 1024 * 1024)

/* The backend's state behind dev->ctx. */
struct cuda_ctx {
	int ordinal;
	int sm_count;
};

/* A stream's state behind s->handle; compute streams carry cuBLAS. */
struct cuda_stream {
	cudaStream_t stream;
	cublasHandle_t blas;		/* compute streams only */
	void *workspace;		/* fixed cuBLAS workspace, so graph capture never allocates */
};

/* One queued piece of a plan, with everything resolved at compile. */
struct cuda_step {
	enum graph_op op;
	const float *x, *w, *c;		/* GEMM: A, B, C; others: x, and w/c as scale/bias */
	float *y;
	int m, n, k, lda, ldb;		/* GEMM, row-major sizes */
	int trans_a, trans_b;
	float alpha, beta;
	int64_t c_rs, c_cs;		/* C's strides (0: broadcast) */
	int fn;				/* GEMM's fused act, UNARY's function */
	float fn_alpha, fn_beta;
	size_t elems;			/* UNARY, COPY; GEMM: M N */
	int rows, cols;			/* SOFTMAX, LAYERNORM */
	float eps;
	int as_log;
	unsigned int blocks;		/* element-wise grids */
};

/* A plan behind p->handle. */
struct cuda_plan {
	size_t nsteps;
	struct cuda_step *steps;
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
	return ((const struct cuda_stream *)s->handle)->stream;
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

/* Report a failed kernel launch (err: what the launcher returned). */
static int
cuda_check_launch(const char *kernel, cudaError_t err, char **cause)
{
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "%s<<<>>>", kernel);
	return 0;
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
	struct cuda_stream *cs;
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
		cudaStreamDestroy(cs->stream);
		free(cs);
		return -1;
	}
	s->handle = cs;
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
		(void)cublasDestroy(cs->blas);
	if (cs->workspace != NULL)
		(void)cudaFree(cs->workspace);
	(void)cudaStreamDestroy(cs->stream);
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

/* Whether the CUDA kernels can run node n. */
static int
cuda_supports_node(const device_t *dev, const graph_t *g,
    const struct graph_node *n, char **why)
{
	switch (n->op) {
	case GRAPH_OP_GEMM:
		if (!device_unary_known(n->act)) {
			error_set(why, "unknown fused activation %d", (int)n->act);
			return 0;
		}
		return device_node_fp32(g, n, 2, 3, 1, why);
	case GRAPH_OP_UNARY:
		if (!device_unary_known(n->attr.unary.fn)) {
			error_set(why, "unknown unary function %d", (int)n->attr.unary.fn);
			return 0;
		}
		return device_node_fp32(g, n, 1, 1, 1, why);
	case GRAPH_OP_SOFTMAX:
	case GRAPH_OP_COPY:
		return device_node_fp32(g, n, 1, 1, 1, why);
	case GRAPH_OP_LAYERNORM:
		return device_node_fp32(g, n, 1, 3, 1, why);
	default:
		error_set(why, "op %s not implemented by the CUDA backend", graph_op_name(n->op));
		return 0;
	}
}

/* Node n's input i as a float pointer; NULL when omitted. */
static const float *
cuda_node_in(const struct graph_node *n, void *const *addrs, int i)
{
	return i < n->ninputs && n->inputs[i] >= 0 ? (const float *)addrs[n->inputs[i]] : NULL;
}

/* Resolve a GEMM: sizes, leading dimensions, C's broadcast strides. */
static void
cuda_step_gemm(struct cuda_step *st, const struct graph_node *n,
    const struct graph_shape *shapes)
{
	const struct graph_shape *a = &shapes[n->inputs[0]], *b = &shapes[n->inputs[1]];

	st->trans_a = n->attr.gemm.trans_a;
	st->trans_b = n->attr.gemm.trans_b;
	st->alpha = n->attr.gemm.alpha;
	st->beta = n->attr.gemm.beta;
	st->m = (int)shapes[n->outputs[0]].dims[0];
	st->n = (int)shapes[n->outputs[0]].dims[1];
	st->k = (int)a->dims[st->trans_a ? 0 : 1];
	st->lda = (int)a->dims[1];
	st->ldb = (int)b->dims[1];
	st->fn = n->act;
	st->fn_alpha = n->act_alpha;
	st->fn_beta = n->act_beta;
	st->elems = (size_t)st->m * (size_t)st->n;
	if (st->c != NULL)
		device_gemm_c_strides(&shapes[n->inputs[2]], &st->c_rs, &st->c_cs);
}

/* Resolve node n into a step for these shapes and addresses. */
static void
cuda_step_fill(const device_t *dev, struct cuda_step *st,
    const struct graph_node *n, const struct graph_shape *shapes,
    void *const *addrs)
{
	const struct graph_shape *x = &shapes[n->inputs[0]];
	int64_t rows, cols;
	int axis;

	st->op = n->op;
	st->x = cuda_node_in(n, addrs, 0);
	st->w = cuda_node_in(n, addrs, 1);
	st->c = cuda_node_in(n, addrs, 2);
	st->y = (float *)addrs[n->outputs[0]];
	st->elems = (size_t)graph_shape_elems(x);
	if (n->op == GRAPH_OP_GEMM)
		cuda_step_gemm(st, n, shapes);
	else if (n->op == GRAPH_OP_UNARY) {
		st->fn = n->attr.unary.fn;
		st->fn_alpha = n->attr.unary.alpha;
		st->fn_beta = n->attr.unary.beta;
	} else if (n->op == GRAPH_OP_SOFTMAX || n->op == GRAPH_OP_LAYERNORM) {
		axis = n->op == GRAPH_OP_SOFTMAX ? x->ndims - 1 :
		    (int)(n->attr.norm.axis < 0 ? n->attr.norm.axis + x->ndims : n->attr.norm.axis);
		device_rows_cols(x, axis, &rows, &cols);
		st->rows = (int)rows;
		st->cols = (int)cols;
		if (n->op == GRAPH_OP_LAYERNORM)
			st->eps = n->attr.norm.eps;
		else
			st->as_log = n->attr.softmax.log;
		if (cols == 0)
			st->elems = 0;
	}
	st->blocks = cuda_ew_blocks(dev, st->elems);
}

/* Free a plan's steps. */
static void
cuda_plan_free(device_plan_t *p)
{
	struct cuda_plan *c = (struct cuda_plan *)p->handle;

	if (c == NULL)
		return;
	free(c->steps);
	free(c);
	p->handle = NULL;
}

/* Resolve every node with work to do into a step; the steps need no workspace beyond cuBLAS's. */
static int
cuda_plan_compile(device_plan_t *p, const struct graph_shape *shapes,
    void *const *addrs, char **cause)
{
	const graph_t *g = p->g;
	struct cuda_plan *c;
	size_t i;

	for (i = 0; i < g->nnodes; i++)
		if (device_node_check_shapes(g, &g->nodes[i], shapes, cause) != 0)
			return error_prefix(cause, "node '%s' (%s)", g->nodes[i].name ? g->nodes[i].name : "?",
			    graph_op_name(g->nodes[i].op));
	c = (struct cuda_plan *)calloc(1, sizeof *c);
	if (c == NULL || (c->steps = (struct cuda_step *)calloc(g->nnodes + 1, sizeof *c->steps)) == NULL) {
		free(c);
		return error_set(cause, "out of memory");
	}
	for (i = 0; i < g->nnodes; i++) {
		struct cuda_step *st = &c->steps[c->nsteps];
		cuda_step_fill(p->dev, st, &g->nodes[i], shapes, addrs);
		/* Empty tensors launch nothing (a grid of zero blocks is an error). */
		if (st->elems > 0 && !(st->op == GRAPH_OP_COPY && st->x == st->y))
			c->nsteps++;
	}
	p->handle = c;
	return 0;
}

/*
 * y = act(alpha op(A) op(B) + beta C): one SGEMM, then one fused pass for C and the
 * activation.  Column-major view: y^T[N,M] = op(B)^T op(A)^T, where each
 * row-major matrix reads as its transpose with its row length as leading dimension.
 */
static int
cuda_run_gemm(const struct cuda_stream *cs, const struct cuda_step *st,
    char **cause)
{
	const float zero = 0.0f;
	cublasStatus_t bs;
	cudaError_t err;

	if (st->k == 0) {
		err = cudaMemsetAsync(st->y, 0, st->elems * sizeof(float), cs->stream);
		if (err != cudaSuccess)
			return cuda_fail(cause, err, "cudaMemsetAsync");
	} else {
		bs = cublasSgemm(cs->blas, st->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
		    st->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, st->n, st->m, st->k,
		    &st->alpha, st->w, st->ldb, st->x, st->lda, &zero, st->y, st->n);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSgemm");
	}
	if (st->c == NULL && st->fn == GRAPH_UNARY_NONE)
		return 0;
	err = cuda_launch_gemm_epilogue(cs->stream, st->blocks, st->y, st->c, st->beta,
	    st->c_rs, st->c_cs, st->elems, (size_t)st->n, st->fn, st->fn_alpha, st->fn_beta);
	return cuda_check_launch("cuda_epilogue_kernel", err, cause);
}

/* Queue one step. */
static int
cuda_run_step(const struct cuda_stream *cs, const struct cuda_step *st,
    char **cause)
{
	cudaError_t err;

	switch (st->op) {
	case GRAPH_OP_GEMM:
		return cuda_run_gemm(cs, st, cause);
	case GRAPH_OP_UNARY:
		err = cuda_launch_unary(cs->stream, st->blocks, st->x, st->y, st->elems,
		    st->fn, st->fn_alpha, st->fn_beta);
		return cuda_check_launch("cuda_unary_kernel", err, cause);
	case GRAPH_OP_SOFTMAX:
		err = cuda_launch_softmax(cs->stream, st->x, st->y, st->rows, st->cols, st->as_log);
		return cuda_check_launch("cuda_softmax_kernel", err, cause);
	case GRAPH_OP_LAYERNORM:
		err = cuda_launch_layernorm(cs->stream, st->x, st->y, st->w, st->c,
		    st->rows, st->cols, st->eps);
		return cuda_check_launch("cuda_layernorm_kernel", err, cause);
	case GRAPH_OP_COPY:
		err = cudaMemcpyAsync(st->y, st->x, st->elems * sizeof(float),
		    cudaMemcpyDeviceToDevice, cs->stream);
		if (err != cudaSuccess)
			return cuda_fail(cause, err, "cudaMemcpyAsync(d2d, %zu bytes)", st->elems * sizeof(float));
		return 0;
	default:
		return error_set(cause, "op %s not implemented by the CUDA backend", graph_op_name(st->op));
	}
}

/* Queue every step on the stream. */
static int
cuda_plan_run(device_plan_t *p, device_stream_t *s, char **cause)
{
	const struct cuda_plan *c = (const struct cuda_plan *)p->handle;
	const struct cuda_stream *cs = (const struct cuda_stream *)s->handle;
	size_t i;

	if (cuda_use(s->dev, cause) != 0)
		return -1;
	for (i = 0; i < c->nsteps; i++)
		if (cuda_run_step(cs, &c->steps[i], cause) != 0)
			return error_prefix(cause, "%s step %zu", graph_op_name(c->steps[i].op), i);
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
	.supports_node = cuda_supports_node,
	.plan_compile = cuda_plan_compile,
	.plan_run = cuda_plan_run,
	.plan_free = cuda_plan_free,
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
