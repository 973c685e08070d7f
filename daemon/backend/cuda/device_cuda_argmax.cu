/* device_cuda_argmax.cu: ArgMax and ArgMin along one axis (FP32, INT64, INT32 in; INT64 indices out). */
#include "config.h"

#include "device_cuda_impl.h"
#include "error.h"

/*
 * The CPU backend (as onnxruntime) walks each line once: an element replaces
 * the best so far only when strictly better (or equal too with
 * select_last_index), so ties keep the first (last) index and a NaN never
 * replaces the best, but a NaN first element stays best.  That is the best
 * of the line's non-NaN elements, ties by index, unless element 0 is NaN:
 * an order-free rule, so a block may split a long line among its threads
 * and still give the CPU backend's answer.
 */
#define ARGMAX_THREADS 256
/* Lines at least this long (and contiguous) take a block each; shorter ones a thread each. */
#define ARGMAX_BLOCK_LINE 256

/* Geometry: lines along the axis (outer x inner of them), len long; the rule's flags. */
struct argmax_params {
	const void *x;
	int64_t *y;
	int dt;
	int64_t outer, len, inner;
	int min, last;
};

/* 1 when (v, i) is better than (b, bi): a larger (smaller) value, or an equal one at a lower (higher) index. */
template <typename T>
static __device__ __forceinline__ int
argmax_better(T v, int64_t i, T b, int64_t bi, int min, int last)
{
	if (v != b)
		return min ? v < b : v > b;
	return last ? i > bi : i < bi;
}

/* Whether v is NaN (never for integers). */
template <typename T>
static __device__ __forceinline__ int
argmax_nan(T v)
{
	return v != v;
}

/* One thread per line, the line walked in order (lines strided by inner: neighbouring threads read neighbours). */
template <typename T>
static __global__ void
argmax_line_kernel(struct argmax_params p)
{
	const T *x = (const T *)p.x;

	CUDA_FOR(l, p.outer * p.inner) {
		const T *q = x + (l / p.inner) * p.len * p.inner + l % p.inner;
		T b = q[0];
		int64_t bi = 0;
		for (int64_t j = 1; j < p.len; j++) {
			T v = q[j * p.inner];
			if (p.min ? (p.last ? v <= b : v < b) : (p.last ? v >= b : v > b)) {
				b = v;
				bi = j;
			}
		}
		p.y[l] = bi;
	}
}

/* One block per contiguous line: each thread's best non-NaN element, then a tree over the block. */
template <typename T>
static __global__ void
argmax_block_kernel(struct argmax_params p)
{
	__shared__ T sv[ARGMAX_THREADS];
	__shared__ int64_t si[ARGMAX_THREADS];
	const T *q = (const T *)p.x + (int64_t)blockIdx.x * p.len;
	T b = T();
	int64_t bi = -1;

	for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) {
		T v = q[j];
		if (!argmax_nan(v) && (bi < 0 || argmax_better(v, j, b, bi, p.min, p.last))) {
			b = v;
			bi = j;
		}
	}
	sv[threadIdx.x] = b;
	si[threadIdx.x] = bi;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if ((int)threadIdx.x < s && si[threadIdx.x + s] >= 0 && (si[threadIdx.x] < 0 ||
		    argmax_better(sv[threadIdx.x + s], si[threadIdx.x + s], sv[threadIdx.x], si[threadIdx.x], p.min,
		    p.last))) {
			sv[threadIdx.x] = sv[threadIdx.x + s];
			si[threadIdx.x] = si[threadIdx.x + s];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		p.y[blockIdx.x] = argmax_nan(q[0]) || si[0] < 0 ? 0 : si[0];
}

/* Launch kernel K<T> for the input's dtype. */
#define ARGMAX_LAUNCH(K, grid, stream, p) do { \
	if ((p).dt == GRAPH_DT_F32) \
		K<float><<<grid, ARGMAX_THREADS, 0, stream>>>(p); \
	else if ((p).dt == GRAPH_DT_I64) \
		K<int64_t><<<grid, ARGMAX_THREADS, 0, stream>>>(p); \
	else \
		K<int32_t><<<grid, ARGMAX_THREADS, 0, stream>>>(p); \
	} while (0)

/* Queue the step: a block per line for long contiguous lines (the compile checked the grid), else a thread. */
static int
argmax_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct argmax_params *p = (const struct argmax_params *)st->p;

	if (p->inner == 1 && p->len >= ARGMAX_BLOCK_LINE) {
		ARGMAX_LAUNCH(argmax_block_kernel, (unsigned int)p->outer, ex->stream, *p);
		return cuda_launched("argmax_block_kernel", cause);
	}
	ARGMAX_LAUNCH(argmax_line_kernel, cuda_grid(p->outer * p->inner), ex->stream, *p);
	return cuda_launched("argmax_line_kernel", cause);
}

/* ARGMAX: the index of each line's largest (smallest) element, keepdims or not (the same elements). */
int
cuda_compile_argmax(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	struct argmax_params *p = (struct argmax_params *)cuda_step_params(st, sizeof *p, cause);
	int ax = cuda_axis(n->attr.argmax.axis, xs->ndims);

	if (p == NULL)
		return -1;
	if (ax < 0 || xs->dims[ax] < 1)
		return error_set(cause, "axis out of range or empty");
	p->dt = (int)cuda_in_dtype(cc, n, 0);
	if ((p->dt != GRAPH_DT_F32 && p->dt != GRAPH_DT_I64 && p->dt != GRAPH_DT_I32) ||
	    cuda_out_dtype(cc, n, 0) != GRAPH_DT_I64)
		return error_set(cause, "ArgMax/ArgMin takes FP32, INT64 or INT32 and writes INT64");
	p->x = cuda_in(cc, n, 0);
	p->y = (int64_t *)cuda_out(cc, n, 0);
	p->outer = p->inner = 1;
	for (int d = 0; d < xs->ndims; d++)
		if (d != ax)
			*(d < ax ? &p->outer : &p->inner) *= xs->dims[d];
	p->len = xs->dims[ax];
	p->min = n->attr.argmax.min;
	p->last = n->attr.argmax.last;
	if (graph_shape_elems(cuda_out_shape(cc, n, 0)) != p->outer * p->inner)
		return error_set(cause, "output not one element per line");
	if (p->outer * p->inner == 0)
		return 0;
	if (p->inner == 1 && p->len >= ARGMAX_BLOCK_LINE && p->outer > INT32_MAX)
		return error_set(cause, "%lld lines (at most %d)", (long long)p->outer, INT32_MAX);
	st->run = argmax_run;
	return 0;
}
