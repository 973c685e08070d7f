/* device_cuda_topk.cu: TopK along one axis (FP32 values, INT64 indices; k constant), sorted, ties by lower index. */
#include "config.h"

#include <float.h>

#include "device_cuda_impl.h"
#include "error.h"

/*
 * Hand-written rather than CUB's segmented sort: the lines are strided (any
 * axis), k is usually small, and a plan's run may not allocate the temporary
 * storage CUB asks for per call.  Lines of up to TOPK_SORT_MAX elements are
 * bitonic-sorted in shared memory by one block each; longer lines (a
 * vocabulary's logits) take k selection passes, each a block-wide reduction
 * for the best element ordered after the previous pick.  The order is total
 * (value, then index), so both ways agree with the CPU backend's sort.
 */
#define TOPK_SORT_MAX 4096	/* 32 KiB of shared memory, under the 48 KiB any block may take */
#define TOPK_THREADS 256

/* Geometry: lines along the axis (outer x inner of them), len long, k kept. */
struct topk_params {
	const float *x;
	float *val;
	int64_t *idx;
	int64_t outer, len, inner, k;
	int largest;
	int sort_len;			/* the line length rounded up to a power of two (sort path), else 0 */
};

/* 1 when (va, ia) comes before (vb, ib): the larger (smaller) value first, equal values by lower index. */
static __device__ __forceinline__ int
topk_before(float va, int64_t ia, float vb, int64_t ib, int largest)
{
	if (va != vb)
		return largest ? va > vb : va < vb;
	return ia < ib;
}

/* Element j of line l. */
static __device__ __forceinline__ int64_t
topk_at(const struct topk_params &p, int64_t l, int64_t j)
{
	return ((l / p.inner) * p.len + j) * p.inner + l % p.inner;
}

/* Position j of line l's output. */
static __device__ __forceinline__ int64_t
topk_out(const struct topk_params &p, int64_t l, int64_t j)
{
	return ((l / p.inner) * p.k + j) * p.inner + l % p.inner;
}

/* One block per line: load, bitonic sort (padding last), write the first k. */
static __global__ void
topk_sort_kernel(struct topk_params p)
{
	extern __shared__ unsigned char topk_smem[];
	float *sv = (float *)topk_smem;
	int *si = (int *)(sv + p.sort_len);
	int64_t l = blockIdx.x;

	for (int j = threadIdx.x; j < p.sort_len; j += blockDim.x) {
		sv[j] = j < p.len ? p.x[topk_at(p, l, j)] : 0.0f;
		si[j] = j < p.len ? j : -1;	/* -1: padding, after every element */
	}
	__syncthreads();
	for (int size = 2; size <= p.sort_len; size <<= 1)
		for (int stride = size >> 1; stride > 0; stride >>= 1) {
			for (int j = threadIdx.x; j < p.sort_len; j += blockDim.x) {
				int o = j ^ stride;
				if (o <= j)
					continue;
				int up = (j & size) == 0;
				int ob = si[o] >= 0 && (si[j] < 0 || topk_before(sv[o], si[o], sv[j], si[j], p.largest));
				if (ob == up) {
					float tv = sv[j];
					int ti = si[j];
					sv[j] = sv[o];
					si[j] = si[o];
					sv[o] = tv;
					si[o] = ti;
				}
			}
			__syncthreads();
		}
	for (int j = threadIdx.x; j < p.k; j += blockDim.x) {
		p.val[topk_out(p, l, j)] = sv[j];
		p.idx[topk_out(p, l, j)] = si[j];
	}
}

/*
 * One block per line, k passes: pass r finds the best element ordered after
 * pick r - 1 (a block reduction over the line), so each pass reads the line once.
 */
static __global__ void
topk_select_kernel(struct topk_params p)
{
	__shared__ float rv[TOPK_THREADS];
	__shared__ int64_t ri[TOPK_THREADS];
	int64_t l = blockIdx.x, pi = -1;
	float pv = 0.0f;

	for (int64_t r = 0; r < p.k; r++) {
		float bv = 0.0f;
		int64_t bi = -1;
		for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) {
			float v = p.x[topk_at(p, l, j)];
			if ((pi < 0 || topk_before(pv, pi, v, j, p.largest)) &&
			    (bi < 0 || topk_before(v, j, bv, bi, p.largest))) {
				bv = v;
				bi = j;
			}
		}
		rv[threadIdx.x] = bv;
		ri[threadIdx.x] = bi;
		__syncthreads();
		for (int s = blockDim.x / 2; s > 0; s >>= 1) {
			if ((int)threadIdx.x < s && ri[threadIdx.x + s] >= 0 && (ri[threadIdx.x] < 0 ||
			    topk_before(rv[threadIdx.x + s], ri[threadIdx.x + s], rv[threadIdx.x], ri[threadIdx.x],
			    p.largest))) {
				rv[threadIdx.x] = rv[threadIdx.x + s];
				ri[threadIdx.x] = ri[threadIdx.x + s];
			}
			__syncthreads();
		}
		pv = rv[0];
		pi = ri[0];
		if (threadIdx.x == 0) {
			p.val[topk_out(p, l, r)] = pv;
			p.idx[topk_out(p, l, r)] = pi;
		}
		__syncthreads();
	}
}

/* Queue one block per line (grids of at most 2^31 - 1 blocks: the compile checked). */
static int
topk_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct topk_params *p = (const struct topk_params *)st->p;
	unsigned int lines = (unsigned int)(p->outer * p->inner);

	if (p->sort_len > 0) {
		size_t smem = (size_t)p->sort_len * (sizeof(float) + sizeof(int));
		topk_sort_kernel<<<lines, TOPK_THREADS, smem, ex->stream>>>(*p);
		return cuda_launched("topk_sort_kernel", cause);
	}
	topk_select_kernel<<<lines, TOPK_THREADS, 0, ex->stream>>>(*p);
	return cuda_launched("topk_select_kernel", cause);
}

/* TOPK: k (constant) largest or smallest along the axis, sorted, with INT64 indices. */
int
cuda_compile_topk(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	struct topk_params *p = (struct topk_params *)cuda_step_params(st, sizeof *p, cause);
	int ax = cuda_axis(n->attr.topk.axis, xs->ndims);

	if (p == NULL)
		return -1;
	if (ax < 0 || n->attr.topk.k < 0 || n->attr.topk.k > xs->dims[ax] || cuda_out_shape(cc, n, 0)->dims[ax] !=
	    n->attr.topk.k || cuda_out_shape(cc, n, 1)->dims[ax] != n->attr.topk.k)
		return error_set(cause, "axis out of range or k beyond the axis");
	if (cuda_out_dtype(cc, n, 0) != GRAPH_DT_F32 || cuda_out_dtype(cc, n, 1) != GRAPH_DT_I64)
		return error_set(cause, "TopK writes FP32 values and INT64 indices");
	p->x = (const float *)cuda_in(cc, n, 0);
	p->val = (float *)cuda_out(cc, n, 0);
	p->idx = (int64_t *)cuda_out(cc, n, 1);
	p->outer = p->inner = 1;
	for (int d = 0; d < xs->ndims; d++)
		if (d != ax)
			*(d < ax ? &p->outer : &p->inner) *= xs->dims[d];
	p->len = xs->dims[ax];
	p->k = n->attr.topk.k;
	p->largest = n->attr.topk.largest;
	if (p->k == 0 || p->outer * p->inner == 0)
		return 0;
	if (p->outer * p->inner > INT32_MAX)
		return error_set(cause, "%lld lines (at most %d)", (long long)(p->outer * p->inner), INT32_MAX);
	if (p->len <= TOPK_SORT_MAX)
		for (p->sort_len = 1; p->sort_len < p->len; p->sort_len <<= 1)
			;
	st->run = topk_run;
	return 0;
}
