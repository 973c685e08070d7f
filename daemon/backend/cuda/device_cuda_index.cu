/* device_cuda_index.cu: CUDA steps that index or scan: IsNaN/IsInf/Not, Trilu, CumSum, GatherND, ScatterND. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "device_cuda_impl.h"
#include "error.h"

/* The data's shape as kernels take it by value. */
struct index_dims {
	int nd;
	int64_t d[GRAPH_MAX_DIMS];
};

/* GatherND / ScatterND geometry: tuples of m indices over data dims [b, b + m). */
struct index_nd {
	int64_t m, nb, nt, slice, dstride;
	int64_t stride[GRAPH_MAX_DIMS], bound[GRAPH_MAX_DIMS];
};

/* Parameters of an index step. */
struct index_params {
	size_t es;			/* element size */
	int dt;				/* the output's graph dtype (CumSum, ScatterND's reductions) */
	const void *x, *aux, *upd;	/* data; k, axis or indices; ScatterND's updates */
	int aux64;			/* aux is INT64 (else INT32) */
	void *y;
	int64_t n;			/* elements of the output */
	struct index_dims dims;		/* TRILU, CUMSUM: the input's shape */
	struct index_nd nd;		/* GATHER_ND, SCATTER_ND */
	int64_t attr;			/* TRILU: k; CUMSUM: axis (when aux is NULL) */
};

/* Launch kernel K<T> for the element size es. */
#define INDEX_LAUNCH(K, es, grid, stream, ...) do { \
	switch (es) { \
	case 8: K<uint64_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	case 4: K<uint32_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	case 2: K<uint16_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	default: K<uint8_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	} } while (0)

/* A scalar INT64/INT32 read on the device (k, axis), or dflt when p is NULL. */
static __device__ __forceinline__ int64_t
index_scalar(const void *p, int is64, int64_t dflt)
{
	if (p == NULL)
		return dflt;
	return is64 ? *(const int64_t *)p : (int64_t)*(const int32_t *)p;
}

/* IsNaN (fn 0), IsInf with its signs (1) on FP32, Not (2) on BOOL: BOOL out. */
static __global__ void
index_predicate_kernel(const void *x, uint8_t *y, int64_t n, int fn, int pos, int neg)
{
	CUDA_FOR(i, n) {
		if (fn == GRAPH_PRED_NOT) {
			y[i] = ((const uint8_t *)x)[i] == 0;
			continue;
		}
		float v = ((const float *)x)[i];
		y[i] = fn == GRAPH_PRED_ISNAN ? isnan(v) != 0 : isinf(v) && (v > 0 ? pos : neg);
	}
}

/* Trilu of T elements: keep x where j - i >= k (upper) or <= k (lower) in each matrix, zero elsewhere. */
template <typename T>
static __global__ void
index_trilu_kernel(const void *x, void *y, int64_t n, int64_t rows, int64_t cols, int upper, const void *kp,
    int k64, int64_t kattr)
{
	int64_t k = index_scalar(kp, k64, kattr);

	CUDA_FOR(i, n) {
		int64_t j = i % cols, r = (i / cols) % rows;
		int keep = upper ? j - r >= k : j - r <= k;
		((T *)y)[i] = keep ? ((const T *)x)[i] : T();
	}
}

/* One line's running sum in A (integers wrap: A unsigned), T stored. */
template <typename T, typename A>
static __device__ void
index_cumsum_line(const T *x, T *y, int64_t len, int64_t st, int excl, int rev)
{
	A acc = 0;

	for (int64_t j = 0; j < len; j++) {
		int64_t at = (rev ? len - 1 - j : j) * st;
		A v = (A)x[at];
		if (excl) {
			y[at] = (T)acc;
			acc += v;
		} else {
			acc += v;
			y[at] = (T)acc;
		}
	}
}

/*
 * CumSum: one thread per line along the axis (the scan within a line is
 * serial, in the CPU backend's order, so FP32 sums round identically).  The
 * axis may be a tensor: it is read here, on the device; one outside the rank
 * zeroes the output and sets *err.
 */
static __global__ void
index_cumsum_kernel(struct index_params p, int excl, int rev, int *err)
{
	int64_t axis = index_scalar(p.aux, p.aux64, p.attr), len, inner = 1;

	if (axis < 0)
		axis += p.dims.nd;
	if (axis < 0 || axis >= p.dims.nd) {
		CUDA_FOR(i, p.n * (int64_t)p.es)
			((uint8_t *)p.y)[i] = 0;
		*err = 1;
		return;
	}
	len = p.dims.d[axis];
	for (int d = (int)axis + 1; d < p.dims.nd; d++)
		inner *= p.dims.d[d];
	if (len == 0)
		return;
	CUDA_FOR(l, p.n / len) {
		int64_t base = (l / inner) * len * inner + l % inner;
		if (p.dt == GRAPH_DT_F32)
			index_cumsum_line<float, float>((const float *)p.x + base, (float *)p.y + base, len, inner, excl,
			    rev);
		else if (p.dt == GRAPH_DT_I64)
			index_cumsum_line<int64_t, uint64_t>((const int64_t *)p.x + base, (int64_t *)p.y + base, len,
			    inner, excl, rev);
		else
			index_cumsum_line<int32_t, uint32_t>((const int32_t *)p.x + base, (int32_t *)p.y + base, len,
			    inner, excl, rev);
	}
}

/* Element offset of tuple idx within a batch (negative indices count from the end); -1 when out of range. */
static __device__ __forceinline__ int64_t
index_nd_offset(const struct index_nd &g, const int64_t *idx)
{
	int64_t off = 0;

	for (int64_t j = 0; j < g.m; j++) {
		int64_t v = idx[j] < 0 ? idx[j] + g.bound[j] : idx[j];
		if (v < 0 || v >= g.bound[j])
			return -1;
		off += v * g.stride[j];
	}
	return off;
}

/* GatherND of T elements: out[t, e] = data[batch of t, tuple t's slice, e]; a bad tuple writes 0 and sets *err. */
template <typename T>
static __global__ void
index_gather_nd_kernel(const void *x, const int64_t *idx, void *y, struct index_nd g, int *err)
{
	CUDA_FOR(i, g.nb * g.nt * g.slice) {
		int64_t t = i / g.slice, off = index_nd_offset(g, idx + t * g.m);
		if (off < 0) {
			((T *)y)[i] = T();
			*err = 1;
			continue;
		}
		((T *)y)[i] = ((const T *)x)[(t / g.nt) * g.dstride + off + i % g.slice];
	}
}

/* a combined with v by reduction red (A: unsigned for integer add/mul, which wrap as on the CPU). */
template <typename T, typename A>
static __device__ __forceinline__ T
index_combine(int red, T a, T v)
{
	switch (red) {
	case GRAPH_SCATTER_ADD: return (T)((A)a + (A)v);
	case GRAPH_SCATTER_MUL: return (T)((A)a * (A)v);
	case GRAPH_SCATTER_MAX: return a > v ? a : v;
	case GRAPH_SCATTER_MIN: return a < v ? a : v;
	default: return v;
	}
}

/*
 * ScatterND: y already holds the data.  Each thread owns element e of the
 * slice and applies every tuple's update to it in tuple order.  Tuples may
 * repeat, and then the order decides the result (the last write wins without
 * a reduction; FP32 sums and products round by order), so walking the tuples
 * serially per element reproduces the CPU backend exactly; parallelism is
 * across the slice.  A tuple out of range is skipped and sets *err.
 */
template <typename T, typename A>
static __global__ void
index_scatter_nd_kernel(T *y, const int64_t *idx, const T *u, struct index_nd g, int red, int *err)
{
	CUDA_FOR(e, g.slice) {
		for (int64_t t = 0; t < g.nt; t++) {
			int64_t off = index_nd_offset(g, idx + t * g.m);
			if (off < 0) {
				*err = 1;
				continue;
			}
			y[off + e] = index_combine<T, A>(red, y[off + e], u[t * g.slice + e]);
		}
	}
}

/* Queue ScatterND: the copy of the data, then the updates in the output dtype's arithmetic. */
static int
index_run_scatter(const struct cuda_step *st, const struct index_params *p, const struct cuda_exec *ex,
    char **cause)
{
	unsigned int grid = cuda_grid(p->nd.slice);
	int red = st->n->attr.nd.reduce, *err = (int *)st->ws;
	const int64_t *idx = (const int64_t *)p->aux;
	cudaError_t e;

	if (p->y != p->x && (e = cudaMemcpyAsync(p->y, p->x, (size_t)p->n * p->es, cudaMemcpyDeviceToDevice,
	    ex->stream)) != cudaSuccess)
		return cuda_fail(cause, e, "cudaMemcpyAsync(ScatterND data, %zu bytes)", (size_t)p->n * p->es);
	if (p->nd.nt == 0 || p->nd.slice == 0)
		return 0;
	if (red != GRAPH_SCATTER_NONE && p->dt == GRAPH_DT_F32)
		index_scatter_nd_kernel<float, float><<<grid, CUDA_THREADS, 0, ex->stream>>>((float *)p->y, idx,
		    (const float *)p->upd, p->nd, red, err);
	else if (red != GRAPH_SCATTER_NONE && p->dt == GRAPH_DT_I64)
		index_scatter_nd_kernel<int64_t, uint64_t><<<grid, CUDA_THREADS, 0, ex->stream>>>((int64_t *)p->y,
		    idx, (const int64_t *)p->upd, p->nd, red, err);
	else if (red != GRAPH_SCATTER_NONE)
		index_scatter_nd_kernel<int32_t, uint32_t><<<grid, CUDA_THREADS, 0, ex->stream>>>((int32_t *)p->y,
		    idx, (const int32_t *)p->upd, p->nd, red, err);
	else if (p->es == 8)
		index_scatter_nd_kernel<uint64_t, uint64_t><<<grid, CUDA_THREADS, 0, ex->stream>>>((uint64_t *)p->y,
		    idx, (const uint64_t *)p->upd, p->nd, red, err);
	else if (p->es == 4)
		index_scatter_nd_kernel<uint32_t, uint32_t><<<grid, CUDA_THREADS, 0, ex->stream>>>((uint32_t *)p->y,
		    idx, (const uint32_t *)p->upd, p->nd, red, err);
	else if (p->es == 2)
		index_scatter_nd_kernel<uint16_t, uint16_t><<<grid, CUDA_THREADS, 0, ex->stream>>>((uint16_t *)p->y,
		    idx, (const uint16_t *)p->upd, p->nd, red, err);
	else
		index_scatter_nd_kernel<uint8_t, uint8_t><<<grid, CUDA_THREADS, 0, ex->stream>>>((uint8_t *)p->y,
		    idx, (const uint8_t *)p->upd, p->nd, red, err);
	return cuda_launched("index_scatter_nd_kernel", cause);
}

/* Queue a step. */
static int
index_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct index_params *p = (const struct index_params *)st->p;
	const struct graph_node *n = st->n;

	switch (n->op) {
	case GRAPH_OP_PREDICATE:
		index_predicate_kernel<<<cuda_grid(p->n), CUDA_THREADS, 0, ex->stream>>>(p->x, (uint8_t *)p->y, p->n,
		    (int)n->attr.pred.fn, n->attr.pred.detect_pos, n->attr.pred.detect_neg);
		return cuda_launched("index_predicate_kernel", cause);
	case GRAPH_OP_TRILU:
		INDEX_LAUNCH(index_trilu_kernel, p->es, cuda_grid(p->n), ex->stream, p->x, p->y, p->n,
		    p->dims.d[p->dims.nd - 2], p->dims.d[p->dims.nd - 1], n->attr.trilu.upper, p->aux, p->aux64,
		    p->attr);
		return cuda_launched("index_trilu_kernel", cause);
	case GRAPH_OP_CUMSUM:
		index_cumsum_kernel<<<cuda_grid(p->n), CUDA_THREADS, 0, ex->stream>>>(*p, n->attr.cumsum.exclusive,
		    n->attr.cumsum.reverse, (int *)st->ws);
		return cuda_launched("index_cumsum_kernel", cause);
	case GRAPH_OP_GATHER_ND:
		INDEX_LAUNCH(index_gather_nd_kernel, p->es, cuda_grid(p->n), ex->stream, p->x,
		    (const int64_t *)p->aux, p->y, p->nd, (int *)st->ws);
		return cuda_launched("index_gather_nd_kernel", cause);
	default:
		return index_run_scatter(st, p, ex, cause);
	}
}

/* Params for n: data, output, element size and count, and input 1 (k, axis or indices) when present. */
static struct index_params *
index_params_init(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct index_params *p = (struct index_params *)cuda_step_params(st, sizeof *p, cause);
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);

	if (p == NULL)
		return NULL;
	p->dt = (int)cuda_out_dtype(cc, n, 0);
	p->es = cuda_dtype_size(cuda_out_dtype(cc, n, 0));
	p->x = cuda_in(cc, n, 0);
	p->aux = cuda_in(cc, n, 1);
	p->aux64 = n->ninputs > 1 && n->inputs[1] >= 0 && cuda_in_dtype(cc, n, 1) == GRAPH_DT_I64;
	p->upd = cuda_in(cc, n, 2);
	p->y = cuda_out(cc, n, 0);
	p->n = graph_shape_elems(cuda_out_shape(cc, n, 0));
	p->dims.nd = xs->ndims;
	memcpy(p->dims.d, xs->dims, sizeof p->dims.d);
	return p;
}

/* The step's error word (its own device int, zeroed now), for ops whose indices come with the request. */
static int
index_error_word(struct cuda_step *st, char **cause)
{
	if (cuda_step_ws(st, sizeof(int), cause) != 0)
		return -1;
	if (cuda_zero(st->ws, sizeof(int), cause) != 0)
		return error_prefix(cause, "the index error word");
	return 0;
}

/* PREDICATE, TRILU, CUMSUM: an output of the input's shape; Trilu's k and CumSum's axis may be tensors. */
static int
index_compile_same(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	struct index_params *p = index_params_init(cc, n, st, cause);
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);

	if (p == NULL)
		return -1;
	if (graph_shape_elems(xs) != p->n || xs->ndims != cuda_out_shape(cc, n, 0)->ndims)
		return error_set(cause, "output shape differs from the input's");
	if (p->aux != NULL && graph_shape_elems(cuda_in_shape(cc, n, 1)) != 1)
		return error_set(cause, "%s is not a scalar", n->op == GRAPH_OP_TRILU ? "k" : "axis");
	if (n->op == GRAPH_OP_TRILU && xs->ndims < 2)
		return error_set(cause, "Trilu needs rank 2 or more");
	p->attr = n->op == GRAPH_OP_TRILU ? n->attr.trilu.k : n->attr.cumsum.axis;
	if (p->n == 0)
		return 0;
	if (n->op == GRAPH_OP_CUMSUM && index_error_word(st, cause) != 0)
		return -1;
	st->run = index_run;
	return 0;
}

/* PREDICATE: IsNaN, IsInf, Not. */
int
cuda_compile_predicate(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	return index_compile_same(cc, n, st, cause);
}

/* TRILU: the upper or lower triangle of each matrix. */
int
cuda_compile_trilu(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	return index_compile_same(cc, n, st, cause);
}

/* CUMSUM along an axis, inclusive or exclusive, forward or reversed. */
int
cuda_compile_cumsum(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	return index_compile_same(cc, n, st, cause);
}

/* Product of dims [from, to) of s. */
static int64_t
index_prod(const struct graph_shape *s, int from, int to)
{
	int64_t p = 1;

	for (int i = from; i < to; i++)
		p *= s->dims[i];
	return p;
}

/* Tuple geometry over data shape d with batch_dims b and indices shape ix, as the CPU backend's. */
static int
index_nd_init(struct index_nd *g, const struct graph_shape *d, const struct graph_shape *ix, int b, char **cause)
{
	int64_t st = 1;

	if (ix->ndims < 1 || b < 0 || b >= ix->ndims || (g->m = ix->dims[ix->ndims - 1]) < 1 || b + g->m > d->ndims)
		return error_set(cause, "indices' rank, last dim or batch_dims out of range");
	for (int i = d->ndims - 1; i >= b; i--) {
		if (i < b + g->m) {
			g->stride[i - b] = st;
			g->bound[i - b] = d->dims[i];
		}
		st *= d->dims[i];
	}
	g->nb = index_prod(d, 0, b);
	g->nt = index_prod(ix, b, ix->ndims - 1);
	g->slice = index_prod(d, b + (int)g->m, d->ndims);
	g->dstride = index_prod(d, b, d->ndims);
	return 0;
}

/* GATHER_ND with batch_dims; an error word records out-of-range index tuples. */
int
cuda_compile_gather_nd(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	struct index_params *p = index_params_init(cc, n, st, cause);

	if (p == NULL || index_nd_init(&p->nd, cuda_in_shape(cc, n, 0), cuda_in_shape(cc, n, 1),
	    (int)n->attr.nd.batch_dims, cause) != 0)
		return -1;
	if (p->nd.nb * p->nd.nt * p->nd.slice != p->n)
		return error_set(cause, "output size differs from the indices' tuples times the slice");
	if (p->n == 0)
		return 0;
	if (index_error_word(st, cause) != 0)
		return -1;
	st->run = index_run;
	return 0;
}

/* SCATTER_ND with a reduction; an error word records out-of-range index tuples (their updates are skipped). */
int
cuda_compile_scatter_nd(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	struct index_params *p = index_params_init(cc, n, st, cause);
	const struct graph_shape *ds = cuda_in_shape(cc, n, 0);

	if (p == NULL || index_nd_init(&p->nd, ds, cuda_in_shape(cc, n, 1), 0, cause) != 0)
		return -1;
	if (graph_shape_elems(ds) != p->n)
		return error_set(cause, "output not of the data's shape");
	if (p->nd.nt * p->nd.slice != graph_shape_elems(cuda_in_shape(cc, n, 2)))
		return error_set(cause, "updates' size differs from the indices' tuples times the slice");
	if (p->n == 0)
		return 0;
	if (index_error_word(st, cause) != 0)
		return -1;
	st->run = index_run;
	return 0;
}
