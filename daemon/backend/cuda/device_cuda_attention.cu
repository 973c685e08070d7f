/* device_cuda_attention.cu: fused attention, softmax(scale Q K^T + mask) V, in one kernel (FP32 or FP16 storage, FP32 math). */
#include "config.h"

#include <math.h>

#include <cuda_fp16.h>

#include "device_cuda_impl.h"
#include "error.h"

/*
 * One warp per query row, ATT_WARPS rows per block, the keys in tiles that
 * the block stages in shared memory (K and V as FP32).  Each lane scores
 * one key of the tile against the row (the query row is staged too), the
 * warp takes the tile's max and sum with two reductions, and the running
 * (max, sum, output) triple is rescaled as in online softmax, so scores
 * never leave the chip and a row of any length costs one pass.  Written by
 * hand because the cuDNN fused attention the runtime has (SDPA forward)
 * takes no additive mask and, below cuDNN 9.15, no per-sequence lengths:
 * the masks exporters produce would not reach it.
 */
#define ATT_WARPS 8
#define ATT_MAX_DIM 256			/* the largest head depth (Q/K) and value width (V) */
#define ATT_ACC (ATT_MAX_DIM / 32)	/* output columns a lane owns */
#define ATT_SMEM_MAX (48 * 1024)	/* shared memory without an opt-in */

/* Parameters of an attention step. */
struct att_params {
	const void *q, *k, *v, *mask;
	void *y;
	int64_t lead, sq, sk, d, dv;
	int kt, tile, f16;
	float scale;
	int nlead;
	int64_t ldims[GRAPH_MAX_DIMS];	/* the leading dims, outermost first */
	int64_t mlead[GRAPH_MAX_DIMS];	/* the mask's stride along each (0: broadcast) */
	int64_t mrow, mcol;		/* the mask's strides along the query rows and the keys */
};

/* Load element i of T storage as FP32. */
template <typename T>
static __device__ __forceinline__ float
att_load(const void *p, int64_t i)
{
	return (float)((const T *)p)[i];
}

/* Max over the warp (every lane gets it). */
static __device__ __forceinline__ float
att_warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Sum over the warp (every lane gets it). */
static __device__ __forceinline__ float
att_warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* Offset of leading index b in the mask. */
static __device__ int64_t
att_mask_base(const struct att_params &p, int64_t b)
{
	int64_t off = 0;

	for (int i = p.nlead - 1; i >= 0; i--) {
		off += (b % p.ldims[i]) * p.mlead[i];
		b /= p.ldims[i];
	}
	return off;
}

/* Stage keys [t0, t0 + nt) of leading index b: ks[j][c] = K[b, t0 + j, c], vs[j][c] = V[b, t0 + j, c]. */
template <typename T>
static __device__ void
att_stage(const struct att_params &p, int64_t b, int64_t t0, int nt, float *ks, float *vs)
{
	int64_t kb = b * p.sk * p.d, vb = b * p.sk * p.dv;

	for (int64_t i = threadIdx.x; i < (int64_t)nt * p.d; i += blockDim.x) {
		int64_t j = i / p.d, c = i % p.d;
		ks[j * (p.d + 1) + c] = att_load<T>(p.k, kb + (p.kt ? c * p.sk + t0 + j : (t0 + j) * p.d + c));
	}
	for (int64_t i = threadIdx.x; i < (int64_t)nt * p.dv; i += blockDim.x) {
		int64_t j = i / p.dv, c = i % p.dv;
		vs[j * (p.dv + 1) + c] = att_load<T>(p.v, vb + (t0 + j) * p.dv + c);
	}
}

/* The kernel: grid x over groups of ATT_WARPS query rows, grid y over the leading indices. */
template <typename T>
static __global__ void
att_kernel(struct att_params p)
{
	extern __shared__ float sm[];
	float *ks = sm, *vs = ks + (size_t)p.tile * (p.d + 1), *qs = vs + (size_t)p.tile * (p.dv + 1);
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	float *qrow = qs + (size_t)warp * p.d;

	for (int64_t b = blockIdx.y; b < p.lead; b += gridDim.y) {
		int64_t row = (int64_t)blockIdx.x * ATT_WARPS + warp;
		int active = row < p.sq;
		int64_t mbase = p.mask != NULL ? att_mask_base(p, b) + row * p.mrow : 0;
		float m = -INFINITY, l = 0.0f, acc[ATT_ACC];

		for (int i = 0; i < ATT_ACC; i++)
			acc[i] = 0.0f;
		__syncthreads();
		for (int64_t c = lane; active && c < p.d; c += 32)
			qrow[c] = att_load<T>(p.q, (b * p.sq + row) * p.d + c);
		for (int64_t t0 = 0; t0 < p.sk; t0 += p.tile) {
			int nt = (int)(p.sk - t0 < p.tile ? p.sk - t0 : p.tile);

			__syncthreads();
			att_stage<T>(p, b, t0, nt, ks, vs);
			__syncthreads();
			if (!active)
				continue;
			float s = -INFINITY;
			if (lane < nt) {
				const float *kr = ks + (size_t)lane * (p.d + 1);
				float dot = 0.0f;
				for (int64_t c = 0; c < p.d; c++)
					dot += qrow[c] * kr[c];
				s = dot * p.scale;
				if (p.mask != NULL)
					s += att_load<T>(p.mask, mbase + (t0 + lane) * p.mcol);
			}
			float mn = fmaxf(m, att_warp_max(s));
			if (mn == -INFINITY)
				continue;	/* every key so far masked out: nothing to weigh yet */
			float e = lane < nt ? __expf(s - mn) : 0.0f, corr = __expf(m - mn);
			l = l * corr + att_warp_sum(e);
			for (int i = 0; i < ATT_ACC; i++)
				acc[i] *= corr;
			for (int j = 0; j < nt; j++) {
				float pj = __shfl_sync(0xffffffffu, e, j);
				const float *vr = vs + (size_t)j * (p.dv + 1);
				for (int i = 0; i < ATT_ACC; i++) {
					int64_t c = lane + 32 * i;
					if (c < p.dv)
						acc[i] += pj * vr[c];
				}
			}
			m = mn;
		}
		for (int i = 0; active && i < ATT_ACC; i++) {
			int64_t c = lane + 32 * i;
			if (c < p.dv)
				((T *)p.y)[(b * p.sq + row) * p.dv + c] = (T)(acc[i] / l);
		}
	}
}

/* Shared memory the kernel takes for a tile of t keys. */
static size_t
att_smem(const struct att_params *p, int t)
{
	return ((size_t)t * (size_t)(p->d + 1) + (size_t)t * (size_t)(p->dv + 1) + (size_t)ATT_WARPS * (size_t)p->d) *
	    sizeof(float);
}

/* Queue the step's kernel. */
static int
att_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct att_params *p = (const struct att_params *)st->p;
	dim3 grid((unsigned int)((p->sq + ATT_WARPS - 1) / ATT_WARPS), (unsigned int)(p->lead < 65535 ? p->lead : 65535));
	size_t smem = att_smem(p, p->tile);

	if (p->f16)
		att_kernel<__half><<<grid, ATT_WARPS * 32, smem, ex->stream>>>(*p);
	else
		att_kernel<float><<<grid, ATT_WARPS * 32, smem, ex->stream>>>(*p);
	return cuda_launched("att_kernel", cause);
}

/* The mask's strides along the scores' dims (numpy broadcasting, aligned on the right); -1 when it does not fit. */
static int
att_mask_strides(const struct graph_shape *m, const struct graph_shape *scores, struct att_params *p)
{
	int64_t st = 1, mst[GRAPH_MAX_DIMS] = { 0 };
	int r = scores->ndims;

	if (m->ndims > r)
		return -1;
	for (int i = m->ndims - 1; i >= 0; i--) {
		int si = r - m->ndims + i;
		if (m->dims[i] != 1) {
			if (m->dims[i] != scores->dims[si])
				return -1;
			mst[si] = st;
		}
		st *= m->dims[i];
	}
	for (int i = 0; i < r - 2; i++)
		p->mlead[i] = mst[i];
	p->mrow = mst[r - 2];
	p->mcol = mst[r - 1];
	return 0;
}

/* Read the shapes into the parameters; -1 with a cause when they do not fit one another or the kernel. */
static int
att_geometry(const struct cuda_compile *cc, const struct graph_node *n, struct att_params *p, char **cause)
{
	const struct graph_shape *q = cuda_in_shape(cc, n, 0), *k = cuda_in_shape(cc, n, 1), *v = cuda_in_shape(cc, n, 2);
	struct graph_shape scores;
	int r = q->ndims;

	p->kt = n->attr.attention.k_transposed;
	if (r < 2 || k->ndims != r || v->ndims != r)
		return error_set(cause, "attention needs Q, K and V of one rank, at least 2");
	p->sq = q->dims[r - 2];
	p->d = q->dims[r - 1];
	p->sk = p->kt ? k->dims[r - 1] : k->dims[r - 2];
	p->dv = v->dims[r - 1];
	p->lead = 1;
	p->nlead = r - 2;
	for (int i = 0; i < r - 2; i++) {
		if (k->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
			return error_set(cause, "attention's Q, K and V differ in their leading dims");
		p->ldims[i] = q->dims[i];
		p->lead *= q->dims[i];
	}
	if ((p->kt ? k->dims[r - 2] : k->dims[r - 1]) != p->d || v->dims[r - 2] != p->sk)
		return error_set(cause, "attention's K or V does not fit Q");
	if (p->d > ATT_MAX_DIM || p->dv > ATT_MAX_DIM)
		return error_set(cause, "attention head depth %lld or value width %lld above the kernel's %d",
		    (long long)p->d, (long long)p->dv, ATT_MAX_DIM);
	scores = *q;
	scores.dims[r - 1] = p->sk;
	if (cuda_in(cc, n, 3) != NULL && att_mask_strides(cuda_in_shape(cc, n, 3), &scores, p) != 0)
		return error_set(cause, "attention's mask does not broadcast to the scores");
	return 0;
}

/* ATTENTION: every tensor in one storage (FP32, or F16 in an FP16 plan). */
int
cuda_compile_attention(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct att_params *p = (struct att_params *)cuda_step_params(st, sizeof *p, cause);
	enum graph_dtype dt = cuda_out_dtype(cc, n, 0);

	if (p == NULL || att_geometry(cc, n, p, cause) != 0)
		return -1;
	for (int i = 0; i < n->ninputs; i++)
		if (cuda_in(cc, n, i) != NULL && cuda_in_dtype(cc, n, i) != dt)
			return error_set(cause, "attention's inputs and output differ in storage");
	p->q = cuda_in(cc, n, 0);
	p->k = cuda_in(cc, n, 1);
	p->v = cuda_in(cc, n, 2);
	p->mask = cuda_in(cc, n, 3);
	p->y = cuda_out(cc, n, 0);
	p->scale = n->attr.attention.scale;
	p->f16 = dt == GRAPH_DT_F16;
	for (p->tile = 32; p->tile > 1 && att_smem(p, p->tile) > ATT_SMEM_MAX; p->tile /= 2)
		;
	if (p->lead * p->sq * p->dv > 0)
		st->run = att_run;
	return 0;
}
