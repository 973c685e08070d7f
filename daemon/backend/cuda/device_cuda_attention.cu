/* device_cuda_attention.cu: ATTENTION, softmax(scale Q K^T + mask) V: cuDNN's fused flash attention on FP16/BF16, else two cuBLAS GEMMs around a masked softmax. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda_impl.h"
#include "device_cuda_sdpa.h"
#include "device_cuda_dnn.h"
#include "error.h"

/*
 * FP16 and BF16 storage go to cuDNN's fused attention (device_cuda_sdpa.cu):
 * the scores never leave the chip.  Where cuDNN has no engine for the shape
 * (or is absent or too old) such a plan runs the node in FP32, and FP32
 * storage runs it as cuBLAS computes the unfused graph: a strided-batched
 * GEMM writes the scaled scores to scratch, one kernel adds the mask and
 * takes the softmax of each row in place, a second GEMM multiplies by V.  A
 * seq-major node (graph.h: Q, K, V, output [..., S, H, D]) has no one stride
 * between its matrices, so its GEMMs are batched through arrays of pointers
 * that a kernel writes into the scratch before them.  The softmax
 * kernel is written here rather than reused because the mask's broadcast is
 * read through its strides in the same pass.
 */
#define ATT_THREADS 256

/* Parameters of an attention step. */
struct att_params {
	const void *q, *k, *v, *mask;
	void *y;
	int64_t lead, sq, sk, d, dv;
	int64_t nh;			/* seq-major: the heads (matrix b's rows at (b / nh, b % nh)); else 1 */
	int kt, tf32;
	float scale;
	int nlead;
	int64_t ldims[GRAPH_MAX_DIMS];	/* the leading dims, outermost first */
	int64_t mlead[GRAPH_MAX_DIMS];	/* the mask's stride along each (0: broadcast) */
	int64_t mrow, mcol;		/* the mask's strides along the query rows and the keys */
	int64_t chunk;			/* leading indices per pass through the scores' scratch */
	struct cuda_sdpa *dnn;		/* the cuDNN plan (FP16), or NULL */
	void *kcopy;			/* with the plan and kt: K copied to [..., Sk, D] (the step's scratch) */
	void **ptrs;			/* nh > 1: the GEMMs' pointer arrays (scratch, after the scores): Q, K, V, Y, S */
};

/* The copy of a transposed K takes a multiple of this many bytes (cuDNN's workspace follows it). */
#define ATT_KCOPY_ALIGN 256

/* Offset of leading index b in the mask. */
static __device__ int64_t
att_mask_base(const struct att_params p, int64_t b)
{
	int64_t off = 0;

	for (int i = p.nlead - 1; i >= 0; i--) {
		off += (b % p.ldims[i]) * p.mlead[i];
		b /= p.ldims[i];
	}
	return off;
}

/* Reduce v over the block (op 0: max, 1: sum); every thread gets the result. */
static __device__ float
att_block_reduce(float v, int op, float *red)
{
	for (int o = 16; o > 0; o >>= 1) {
		float w = __shfl_xor_sync(0xffffffffu, v, o);
		v = op ? v + w : fmaxf(v, w);
	}
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
	v = red[0];
	for (int i = 1; i < ATT_THREADS / 32; i++)
		v = op ? v + red[i] : fmaxf(v, red[i]);
	return v;
}

/* One block per score row (leading index b0 + row / sq): add the mask, softmax in place. */
static __global__ void
att_softmax_rows(struct att_params p, float *s, int64_t b0)
{
	__shared__ float red[ATT_THREADS / 32];
	int64_t row = blockIdx.x, b = b0 + row / p.sq, i = row % p.sq;
	float *r = s + row * p.sk, mx = -INFINITY, sum = 0.0f;
	const float *m = (const float *)p.mask;
	int64_t mb = m != NULL ? att_mask_base(p, b) + i * p.mrow : 0;

	for (int64_t j = threadIdx.x; j < p.sk; j += ATT_THREADS) {
		float v = r[j] + (m != NULL ? m[mb + j * p.mcol] : 0.0f);
		r[j] = v;
		mx = fmaxf(mx, v);
	}
	mx = att_block_reduce(mx, 0, red);
	for (int64_t j = threadIdx.x; j < p.sk; j += ATT_THREADS) {
		float e = expf(r[j] - mx);
		r[j] = e;
		sum += e;
	}
	sum = att_block_reduce(sum, 1, red);
	for (int64_t j = threadIdx.x; j < p.sk; j += ATT_THREADS)
		r[j] /= sum;
}

/*
 * K [lead, D, Sk] to [lead, Sk, D], 16-bit elements (a plain copy: no arithmetic).  Written here because
 * cuBLAS's geam has no FP16; one thread per output element, consecutive threads write consecutive D.
 */
static __global__ void
att_k_untranspose(const uint16_t *kt, uint16_t *k, int64_t total, int64_t sk, int64_t d)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t c = i % d, j = i / d % sk, b = i / (d * sk);

		k[i] = kt[(b * d + c) * sk + j];
	}
}

/* Scores of leading indices [b0, b0 + nb) into s: s = scale Q K^T (row-major [nb, Sq, Sk]). */
static cublasStatus_t
att_scores(const struct att_params *p, const struct cuda_exec *ex, float *s, int64_t b0, int64_t nb)
{
	cublasComputeType_t ct = p->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	const float *q = (const float *)p->q + b0 * p->sq * p->d, *k = (const float *)p->k + b0 * p->sk * p->d;
	float zero = 0.0f;

	/* Column-major: S^T (Sk x Sq) = K (Sk x D) Q^T, K read as stored ([Sk, D] or [D, Sk]). */
	return cublasGemmStridedBatchedEx(ex->blas, p->kt ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, (int)p->sk,
	    (int)p->sq, (int)p->d, &p->scale, k, CUDA_R_32F, p->kt ? (int)p->sk : (int)p->d, (long long)(p->sk * p->d),
	    q, CUDA_R_32F, (int)p->d, (long long)(p->sq * p->d), &zero, s, CUDA_R_32F, (int)p->sk,
	    (long long)(p->sq * p->sk), (int)nb, ct, CUBLAS_GEMM_DEFAULT);
}

/* Output of leading indices [b0, b0 + nb): y = P V. */
static cublasStatus_t
att_output(const struct att_params *p, const struct cuda_exec *ex, const float *s, int64_t b0, int64_t nb)
{
	cublasComputeType_t ct = p->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	const float *v = (const float *)p->v + b0 * p->sk * p->dv;
	float *y = (float *)p->y + b0 * p->sq * p->dv, one = 1.0f, zero = 0.0f;

	/* Column-major: Y^T (Dv x Sq) = V^T (Dv x Sk) P^T (Sk x Sq). */
	return cublasGemmStridedBatchedEx(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)p->dv, (int)p->sq, (int)p->sk, &one,
	    v, CUDA_R_32F, (int)p->dv, (long long)(p->sk * p->dv), s, CUDA_R_32F, (int)p->sk, (long long)(p->sq * p->sk),
	    &zero, y, CUDA_R_32F, (int)p->dv, (long long)(p->sq * p->dv), (int)nb, ct, CUBLAS_GEMM_DEFAULT);
}

/*
 * The seq-major GEMMs' pointer arrays, lead entries each: Q, K, V and Y of matrix b at (b / nh, b % nh), S at its
 * place in the chunk's scores.
 */
static __global__ void
att_fill_ptrs(struct att_params p, float *s)
{
	for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < p.lead; b += (int64_t)gridDim.x * blockDim.x) {
		int64_t o = b / p.nh, h = b % p.nh;

		p.ptrs[b] = (void *)((const float *)p.q + (o * p.sq * p.nh + h) * p.d);
		p.ptrs[p.lead + b] = (void *)((const float *)p.k + (o * p.sk * p.nh + h) * p.d);
		p.ptrs[2 * p.lead + b] = (void *)((const float *)p.v + (o * p.sk * p.nh + h) * p.dv);
		p.ptrs[3 * p.lead + b] = (void *)((float *)p.y + (o * p.sq * p.nh + h) * p.dv);
		p.ptrs[4 * p.lead + b] = (void *)(s + b % p.chunk * p.sq * p.sk);
	}
}

/* Seq-major scores of leading indices [b0, b0 + nb): as att_scores, each matrix's rows nh depths apart. */
static cublasStatus_t
att_scores_heads(const struct att_params *p, const struct cuda_exec *ex, int64_t b0, int64_t nb)
{
	cublasComputeType_t ct = p->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	void **a = p->ptrs;
	float zero = 0.0f;

	return cublasGemmBatchedEx(ex->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)p->sk, (int)p->sq, (int)p->d, &p->scale,
	    (const void *const *)(a + p->lead + b0), CUDA_R_32F, (int)(p->nh * p->d), (const void *const *)(a + b0),
	    CUDA_R_32F, (int)(p->nh * p->d), &zero, a + 4 * p->lead + b0, CUDA_R_32F, (int)p->sk, (int)nb, ct,
	    CUBLAS_GEMM_DEFAULT);
}

/* Seq-major output of leading indices [b0, b0 + nb): y = P V, V's and Y's rows nh depths apart. */
static cublasStatus_t
att_output_heads(const struct att_params *p, const struct cuda_exec *ex, int64_t b0, int64_t nb)
{
	cublasComputeType_t ct = p->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	void **a = p->ptrs;
	float one = 1.0f, zero = 0.0f;

	return cublasGemmBatchedEx(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)p->dv, (int)p->sq, (int)p->sk, &one,
	    (const void *const *)(a + 2 * p->lead + b0), CUDA_R_32F, (int)(p->nh * p->dv),
	    (const void *const *)(a + 4 * p->lead + b0), CUDA_R_32F, (int)p->sk, &zero, a + 3 * p->lead + b0, CUDA_R_32F,
	    (int)(p->nh * p->dv), (int)nb, ct, CUBLAS_GEMM_DEFAULT);
}

/* Queue the FP32 attention, chunk by chunk of leading indices through the scores' scratch. */
static int
att_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct att_params *p = (const struct att_params *)st->p;
	float *s = (float *)st->ws;
	cublasStatus_t bs;

	if (p->ptrs != NULL) {
		int64_t blocks = (p->lead + ATT_THREADS - 1) / ATT_THREADS;

		att_fill_ptrs<<<(unsigned int)(blocks < 65535 ? blocks : 65535), ATT_THREADS, 0, ex->stream>>>(*p, s);
		if (cuda_launched("att_fill_ptrs", cause) != 0)
			return -1;
	}
	for (int64_t b0 = 0; b0 < p->lead; b0 += p->chunk) {
		int64_t nb = p->lead - b0 < p->chunk ? p->lead - b0 : p->chunk;

		bs = p->ptrs != NULL ? att_scores_heads(p, ex, b0, nb) : att_scores(p, ex, s, b0, nb);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cuBLAS batched GEMM (attention scores)");
		att_softmax_rows<<<(unsigned int)(nb * p->sq), ATT_THREADS, 0, ex->stream>>>(*p, s, b0);
		if (cuda_launched("att_softmax_rows", cause) != 0)
			return -1;
		bs = p->ptrs != NULL ? att_output_heads(p, ex, b0, nb) : att_output(p, ex, s, b0, nb);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cuBLAS batched GEMM (attention output)");
	}
	return 0;
}

/* Queue the cuDNN plan (after copying K to [..., Sk, D] when it is given transposed). */
static int
att_dnn_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct att_params *p = (const struct att_params *)st->p;
	int64_t total = p->lead * p->sk * p->d, blocks = (total + ATT_THREADS - 1) / ATT_THREADS;

	if (ex->dnn == NULL)
		return error_set(cause, "the stream has no cuDNN handle");
	if (p->kcopy != NULL) {
		att_k_untranspose<<<(unsigned int)(blocks < 65535 ? blocks : 65535), ATT_THREADS, 0, ex->stream>>>(
		    (const uint16_t *)p->k, (uint16_t *)p->kcopy, total, p->sk, p->d);
		if (cuda_launched("att_k_untranspose", cause) != 0)
			return -1;
	}
	return cuda_sdpa_run(p->dnn, ex->dnn, cause);
}

/* Release the cuDNN plan. */
static void
att_fini(struct cuda_step *st)
{
	struct att_params *p = (struct att_params *)st->p;

	if (p != NULL) {
		cuda_sdpa_free(p->dnn);
		p->dnn = NULL;
	}
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

/* Read the shapes into the parameters; -1 with a cause when they do not fit one another. */
static int
att_geometry(const struct cuda_compile *cc, const struct graph_node *n, struct att_params *p, char **cause)
{
	const struct graph_shape *in[3] = { cuda_in_shape(cc, n, 0), cuda_in_shape(cc, n, 1), cuda_in_shape(cc, n, 2) };
	struct graph_shape qkv[3], scores;
	const struct graph_shape *q = &qkv[0], *k = &qkv[1], *v = &qkv[2];
	int r = in[0]->ndims;

	p->kt = n->attr.attention.k_transposed;
	if (graph_attention_shapes(n, in, qkv, &p->nh) != 0)
		return error_set(cause, "attention needs Q, K and V of one rank, at least 2 (3 seq-major, K not transposed)");
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
	if (p->sq > INT32_MAX || p->sk > INT32_MAX || p->d > INT32_MAX || p->dv > INT32_MAX || p->lead > INT32_MAX)
		return error_set(cause, "attention dims above cuBLAS's 32-bit sizes");
	scores = *q;
	scores.dims[r - 1] = p->sk;
	if (cuda_in(cc, n, 3) != NULL && att_mask_strides(cuda_in_shape(cc, n, 3), &scores, p) != 0)
		return error_set(cause, "attention's mask does not broadcast to the scores");
	return 0;
}

/* The largest power of two up to 16 dividing every address or'ed into u. */
static int64_t
att_align(uintptr_t u)
{
	int64_t a = 16;

	while (a > 2 && (u & (uintptr_t)(a - 1)) != 0)
		a /= 2;
	return a;
}

/*
 * cuDNN's view of the node: [B, H] from the leading dims (one leading dim: B 1), the mask's dims of 1 kept, K
 * always [B, H, Sk, D] (kaddr: K's address, or 0 for its 16-byte aligned copy when given transposed).
 */
static int
att_sdpa_desc(const struct cuda_compile *cc, const struct graph_node *n, const struct att_params *p, uintptr_t kaddr,
    int bf16, struct cuda_sdpa_desc *d)
{
	const struct graph_shape *m = cuda_in_shape(cc, n, 3);
	int64_t full[4];

	if (p->nlead > 2 || p->d % 8 != 0 || p->dv % 8 != 0 || p->d > 256 || p->dv > 256)
		return 0;
	memset(d, 0, sizeof *d);
	d->b = p->nlead == 2 ? p->ldims[0] : 1;
	d->h = p->nlead == 2 ? p->ldims[1] : p->nlead == 1 ? p->ldims[0] : 1;
	d->sq = p->sq;
	d->sk = p->sk;
	d->d = p->d;
	d->dv = p->dv;
	d->kt = 0;
	d->seq_major = p->nh > 1;
	d->bf16 = bf16;
	d->scale = p->scale;
	d->align = att_align((uintptr_t)p->q | kaddr | (uintptr_t)p->v | (uintptr_t)p->y |
	    (uintptr_t)p->mask);
	if (p->mask == NULL)
		return 1;
	d->has_mask = 1;
	full[0] = d->b; full[1] = d->h; full[2] = d->sq; full[3] = d->sk;
	/* The mask aligned on the right; a dim it lacks, or has as 1, broadcasts (dense strides hold for it). */
	for (int i = 0; i < 4; i++) {
		int mi = m->ndims - 4 + i;
		d->mask_dims[i] = mi >= 0 && m->dims[mi] != 1 ? full[i] : 1;
	}
	for (int i = 0; i < m->ndims - 4; i++)
		if (m->dims[i] != 1)
			return 0;
	return 1;
}

/* Wait for the step's engine when a worker builds it: 1 when cuDNN had none. */
static int
att_settle(struct cuda_step *st)
{
	const struct att_params *p = (const struct att_params *)st->p;

	return p != NULL && p->dnn != NULL ? cuda_sdpa_settle(p->dnn) : 0;
}

/* Try cuDNN's fused attention: 1 when planned (step set), 0 when cuDNN cannot, -1 on error. */
static int
att_try_dnn(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, struct att_params *p,
    int bf16, char **cause)
{
	const char *force = getenv("INFERD_CUDA_ATTENTION");
	/* The copy of a transposed K: 16-byte aligned within the scratch (hence the slack), cuDNN's workspace after it. */
	size_t kb = p->kt ? ((size_t)(p->lead * p->sk * p->d) * 2 + ATT_KCOPY_ALIGN - 1) / ATT_KCOPY_ALIGN *
	    ATT_KCOPY_ALIGN + 16 : 0, lim = cuda_scratch_limit(cc, CUDA_DNN_WS_CAP), ws = 0;
	struct cuda_sdpa_desc d;
	enum cuda_sdpa_how how;
	char *dws;
	int rc, probe;

	if ((force != NULL && strcmp(force, "cublas") == 0) || kb > lim ||
	    !att_sdpa_desc(cc, n, p, p->kt ? 0 : (uintptr_t)p->k, bf16, &d))
		return 0;
	probe = cc->ws != NULL && cc->ws->mode == CUDA_WS_PROBE;
	how = !cc->background ? CUDA_SDPA_NOW : probe ? CUDA_SDPA_ESTIMATE : CUDA_SDPA_QUEUE;
	if ((rc = cuda_sdpa_build(cc->ordinal, &d, cc->sdpa, lim - kb, how, &p->dnn, &ws, cause)) != 1)
		return rc;
	st->fini = att_fini;
	st->settle = att_settle;
	if (cuda_step_scratch(cc, st, kb + ws, cause) != 0)
		return -1;
	p->kcopy = p->kt ? (void *)(((uintptr_t)st->ws + 15) & ~(uintptr_t)15) : NULL;
	dws = p->kt ? (char *)p->kcopy + kb - 16 : (char *)st->ws;
	/* A probe's workspace is no memory: it only measures, and never runs. */
	if (!probe && cuda_sdpa_bind(p->dnn, p->q, p->kt ? p->kcopy : p->k, p->v, p->mask, p->y, dws, cause) != 0)
		return -1;
	st->run = att_dnn_run;
	return 1;
}

/*
 * The scores' scratch: as many leading indices at once as the scratch limit allows (at least one); a seq-major
 * node's pointer arrays after them (5 lead pointers, 16-byte aligned).
 */
static int
att_scratch(const struct cuda_compile *cc, struct cuda_step *st, struct att_params *p, char **cause)
{
	size_t per = (size_t)(p->sq * p->sk) * sizeof(float), lim = cuda_scratch_limit(cc, CUDA_DNN_WS_CAP);
	size_t ptrs = p->nh > 1 ? 5 * (size_t)p->lead * sizeof(void *) + 16 : 0, scores;

	if (per + ptrs > lim)
		return error_set(cause, "one attention score matrix needs %zu bytes; the workspace has %zu",
		    per + ptrs, lim);
	p->chunk = (int64_t)((lim - ptrs) / (per ? per : 1));
	if (p->chunk > p->lead)
		p->chunk = p->lead;
	if (p->chunk < 1)
		p->chunk = 1;
	scores = (size_t)p->chunk * per;
	if (cuda_step_scratch(cc, st, scores + ptrs, cause) != 0)
		return -1;
	p->ptrs = ptrs ? (void **)(((uintptr_t)st->ws + scores + 15) & ~(uintptr_t)15) : NULL;
	return 0;
}

/* ATTENTION: FP16/BF16 through cuDNN (else the plan runs it in FP32), FP32 through cuBLAS and the softmax kernel. */
int
cuda_compile_attention(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct att_params *p = (struct att_params *)cuda_step_params(st, sizeof *p, cause);
	enum graph_dtype dt = cuda_out_dtype(cc, n, 0);
	int rc;

	if (p == NULL || att_geometry(cc, n, p, cause) != 0)
		return -1;
	for (int i = 0; i < n->ninputs; i++)
		if (cuda_in(cc, n, i) != NULL && cuda_in_dtype(cc, n, i) != dt)
			return cuda_dt_reduced(dt) ? CUDA_COMPILE_FALLBACK :
			    error_set(cause, "attention's inputs and output differ in storage");
	p->q = cuda_in(cc, n, 0);
	p->k = cuda_in(cc, n, 1);
	p->v = cuda_in(cc, n, 2);
	p->mask = cuda_in(cc, n, 3);
	p->y = cuda_out(cc, n, 0);
	p->scale = n->attr.attention.scale;
	p->tf32 = cc->precision != GRAPH_PRECISION_FP32;
	if (p->lead * p->sq * p->dv == 0)
		return 0;
	if (dt == GRAPH_DT_F16 || dt == CUDA_DT_BF16) {
		if ((rc = att_try_dnn(cc, n, st, p, dt == CUDA_DT_BF16, cause)) != 0)
			return rc < 0 ? -1 : 0;
		return CUDA_COMPILE_FALLBACK;	/* no cuDNN engine: the plan runs this attention in FP32 */
	}
	if (dt != GRAPH_DT_F32)
		return error_set(cause, "attention on %s storage", cuda_dtype_name(dt));
	if (p->sk == 0)
		return error_set(cause, "attention over no keys");
	if (att_scratch(cc, st, p, cause) != 0)
		return -1;
	st->run = att_run;
	return 0;
}
