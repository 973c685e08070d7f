/* device_cuda_common.cu: helpers every CUDA backend file shares: errors naming the call, grids, step memory, broadcast maps, node accessors. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda_impl.h"
#include "error.h"

/* Held shared by a graph capture, exclusively by every device-wide call (device_cuda_impl.h says why). */
pthread_rwlock_t cuda_quiet_lock = PTHREAD_RWLOCK_INITIALIZER;

/* Store "what: CUDA's message" in *cause and clear the thread's last error. */
int
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
int
cuda_blas_fail(char **cause, cublasStatus_t st, const char *what)
{
	(void)cudaGetLastError();
	return error_set(cause, "%s: %s", what, cublasGetStatusString(st));
}

/* -1 naming the kernel when its launch failed. */
int
cuda_launched(const char *kernel, char **cause)
{
	cudaError_t err = cudaGetLastError();

	if (err != cudaSuccess)
		return cuda_fail(cause, err, "%s<<<>>>", kernel);
	return 0;
}

/* Blocks for a grid-stride loop over n elements. */
unsigned int
cuda_grid(int64_t n)
{
	int64_t b = (n + CUDA_THREADS - 1) / CUDA_THREADS;

	return (unsigned int)(b < 1 ? 1 : b > CUDA_MAX_BLOCKS ? CUDA_MAX_BLOCKS : b);
}

/* Device workspace for a step, allocated once at compile. */
int
cuda_step_ws(struct cuda_step *st, size_t bytes, char **cause)
{
	cudaError_t err;

	if (bytes == 0)
		return 0;
	err = CUDA_QUIET(cudaMalloc(&st->ws, bytes));
	if (err != cudaSuccess) {
		st->ws = NULL;
		return cuda_fail(cause, err, "cudaMalloc(workspace, %zu bytes)", bytes);
	}
	st->ws_bytes = bytes;
	return 0;
}

/* Scratch available to a step at cc's offset, at most cap. */
size_t
cuda_scratch_limit(const struct cuda_compile *cc, size_t cap)
{
	size_t avail;

	if (cc->ws == NULL || cc->ws->mode != CUDA_WS_SHARED)
		return cap;
	avail = cc->ws->bytes > cc->ws_off ? cc->ws->bytes - cc->ws_off : 0;
	return avail < cap ? avail : cap;
}

/* Scratch for a step: its own allocation, or the piece of the shared workspace at cc's offset. */
int
cuda_step_scratch(const struct cuda_compile *cc, struct cuda_step *st, size_t bytes, char **cause)
{
	struct cuda_ws *w = cc->ws;
	size_t end;

	if (bytes == 0)
		return 0;
	if (w == NULL || w->mode == CUDA_WS_OWN)
		return cuda_step_ws(st, bytes, cause);
	end = cc->ws_off + bytes;
	if (end < bytes || (w->mode == CUDA_WS_SHARED && end > w->bytes))
		return error_set(cause, "needs %zu bytes of workspace; the batch context's workspace has %zu", end,
		    w->bytes);
	st->ws = w->mode == CUDA_WS_PROBE ? (void *)(CUDA_WS_PROBE_BASE + cc->ws_off) : (void *)(w->base + cc->ws_off);
	st->ws_bytes = bytes;
	st->ws_shared = 1;
	if (end > w->need)
		w->need = end;
	return 0;
}

/* Free the step's workspace unless it is a piece of the shared one. */
void
cuda_step_ws_free(struct cuda_step *st)
{
	if (st->ws != NULL && !st->ws_shared)
		(void)CUDA_QUIET(cudaFree(st->ws));
	st->ws = NULL;
	st->ws_bytes = 0;
	st->ws_shared = 0;
}

/* Zeroed host parameters for a step. */
void *
cuda_step_params(struct cuda_step *st, size_t bytes, char **cause)
{
	st->p = calloc(1, bytes);
	if (st->p == NULL)
		error_set(cause, "out of memory");
	return st->p;
}

/* Release a step's own resources (fini, parameters, its own workspace); the step is all zero after. */
void
cuda_step_clear(struct cuda_step *st)
{
	if (st->fini != NULL)
		st->fini(st);
	free(st->p);
	cuda_step_ws_free(st);
	memset(st, 0, sizeof *st);
}

/*
 * Upload at compile time, complete when it returns.  Not cudaMemcpy: from
 * pageable memory it returns once the bytes are staged, before the DMA has
 * landed, and nothing orders that DMA (on the legacy default stream) before
 * the plan's kernels on a non-blocking compute stream, which could then read
 * a stale table (a batched GEMM's pointer array: an illegal address).
 */
int
cuda_upload(void *dst, const void *src, size_t bytes, char **cause)
{
	cudaError_t err;

	if (bytes == 0)
		return 0;
	err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cudaStreamPerThread);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemcpyAsync(h2d, %zu bytes)", bytes);
	err = cudaStreamSynchronize(cudaStreamPerThread);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamSynchronize(after an upload of %zu bytes)", bytes);
	return 0;
}

/* Zero device memory at compile time, complete when it returns (cudaMemset is asynchronous to the host). */
int
cuda_zero(void *dst, size_t bytes, char **cause)
{
	cudaError_t err;

	if (bytes == 0)
		return 0;
	err = cudaMemsetAsync(dst, 0, bytes, cudaStreamPerThread);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemsetAsync(%zu bytes)", bytes);
	err = cudaStreamSynchronize(cudaStreamPerThread);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cudaStreamSynchronize(after zeroing %zu bytes)", bytes);
	return 0;
}

/* Row-major element strides. */
void
cuda_strides(const struct graph_shape *s, int64_t *st)
{
	int64_t acc = 1;

	for (int d = s->ndims - 1; d >= 0; d--) {
		st[d] = acc;
		acc *= s->dims[d];
	}
}

/* Numpy broadcast of in to out as operand k (in is right-aligned; size-1 dims stride 0). */
void
cuda_map_bcast(struct cuda_map *m, int k, const struct graph_shape *out, const struct graph_shape *in)
{
	int64_t st[GRAPH_MAX_DIMS];
	int off = out->ndims - in->ndims;

	m->nd = out->ndims;
	memcpy(m->dims, out->dims, sizeof m->dims);
	cuda_strides(in, st);
	for (int d = 0; d < out->ndims; d++)
		m->st[k][d] = d < off || in->dims[d - off] == 1 ? 0 : st[d - off];
}

/* Axis in [0, rank), or -1. */
int
cuda_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	return axis >= 0 && axis < rank ? (int)axis : -1;
}

/* Input i's shape, or NULL when omitted. */
const struct graph_shape *
cuda_in_shape(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return i < n->ninputs && n->inputs[i] >= 0 ? &cc->shapes[n->inputs[i]] : NULL;
}

/* Input i's device address, or NULL when omitted. */
void *
cuda_in(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return i < n->ninputs && n->inputs[i] >= 0 ? cc->addrs[n->inputs[i]] : NULL;
}

/* Output i's shape. */
const struct graph_shape *
cuda_out_shape(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return &cc->shapes[n->outputs[i]];
}

/* Output i's device address. */
void *
cuda_out(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return cc->addrs[n->outputs[i]];
}

/* Tensor t's stored dtype (the graph's own when the plan keeps no table). */
static enum graph_dtype
cuda_stored_dtype(const struct cuda_compile *cc, int t)
{
	return cc->dtypes != NULL ? cc->dtypes[t] : cc->g->tensors[t].dtype;
}

/* Input i's stored dtype (F32 when omitted). */
enum graph_dtype
cuda_in_dtype(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return i < n->ninputs && n->inputs[i] >= 0 ? cuda_stored_dtype(cc, n->inputs[i]) : GRAPH_DT_F32;
}

/* Output i's stored dtype. */
enum graph_dtype
cuda_out_dtype(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return cuda_stored_dtype(cc, n->outputs[i]);
}
