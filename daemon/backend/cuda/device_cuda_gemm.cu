/* device_cuda_gemm.cu: GEMM and batched, broadcast MatMul through cuBLAS (strict fp32; TF32 by the plan's math mode; FP16 or BF16 in, FP32 accumulation), with fused bias and activation epilogues. */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda_impl.h"
#include "device_cuda_kernels.h"
#include "error.h"

/* Parameters of one GEMM or MatMul step. */
struct gemm_params {
	const void *a, *b, *c;
	void *y;
	enum graph_dtype dt;		/* operands' and output's storage: F32, or F16/CUDA_DT_BF16 (accumulation stays FP32) */
	int m, n, k, lda, ldb;
	int trans_a, trans_b;
	float alpha, beta;
	int64_t c_rs, c_cs;		/* GEMM: C's strides (0: broadcast) */
	int64_t batch;			/* MATMUL */
	long long sa, sb;		/* MATMUL strided batch: element strides of A and B (0: broadcast) */
	int pointers;			/* MATMUL: batch through the pointer arrays in the workspace */
	struct cuda_map bias;		/* MATMUL: bias broadcast to the output */
	int act;
	float act_alpha, act_beta;
	struct gemm_lt *lt;		/* MATMUL: cuBLASLt with the bias (and ReLU) as its epilogue, or NULL */
};

/* cuBLASLt's view of a MatMul y[M,N] = act(A[M,K] B[K,N] + bias[N]): column-major y^T = B^T A^T, its algorithm. */
struct gemm_lt {
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t a, b, d;
	cublasLtMatmulAlgo_t algo;
	int act_after;			/* the activation runs as its own pass after the GEMM (not an epilogue) */
};

/* Refuse a size cuBLAS's int arguments cannot hold. */
static int
gemm_int(int64_t v, const char *what, char **cause)
{
	if (v < 0 || v > INT_MAX)
		return error_set(cause, "%s %lld is beyond cuBLAS's int limit", what, (long long)v);
	return 0;
}

/* The storage every operand and the output share into *dt; -1 with *cause when they differ. */
static int
gemm_store(const struct cuda_compile *cc, const struct graph_node *n, enum graph_dtype *dt, char **cause)
{
	*dt = cuda_out_dtype(cc, n, 0);
	for (int i = 0; i < n->ninputs; i++)
		if (cuda_in(cc, n, i) != NULL && cuda_in_dtype(cc, n, i) != *dt)
			return error_set(cause, "operands mix %s and %s storage", cuda_dtype_name(cuda_in_dtype(cc, n, i)),
			    cuda_dtype_name(*dt));
	return 0;
}

/* C's strides along rows and columns of [M,N] (0 where it broadcasts). */
static void
gemm_c_strides(const struct graph_shape *c, int64_t *rs, int64_t *cs)
{
	*rs = *cs = 0;
	if (c->ndims == 2) {
		*rs = c->dims[0] == 1 ? 0 : c->dims[1];
		*cs = c->dims[1] == 1 ? 0 : 1;
	} else if (c->ndims == 1)
		*cs = c->dims[0] == 1 ? 0 : 1;
}

/*
 * y = act(alpha op(A) op(B) + beta C): one SGEMM, then one fused pass for C and the
 * activation.  Column-major view: y^T[N,M] = op(B)^T op(A)^T.
 */
static int
gemm_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct gemm_params *p = (const struct gemm_params *)st->p;
	const float zero = 0.0f;
	size_t elems = (size_t)p->m * (size_t)p->n;
	cublasStatus_t bs;
	cudaError_t err;

	if (p->k == 0) {
		err = cudaMemsetAsync(p->y, 0, elems * cuda_dtype_size(p->dt), ex->stream);
		if (err != cudaSuccess)
			return cuda_fail(cause, err, "cudaMemsetAsync");
	} else if (cuda_dt_reduced(p->dt)) {
		cudaDataType_t t = cuda_blas_dtype(p->dt);
		bs = cublasGemmEx(ex->blas, p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
		    p->n, p->m, p->k, &p->alpha, p->b, t, p->ldb, p->a, t, p->lda, &zero, p->y, t, p->n,
		    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, p->dt == GRAPH_DT_F16 ?
			    "cublasGemmEx(FP16, FP32 compute)" : "cublasGemmEx(BF16, FP32 compute)");
	} else {
		bs = cublasSgemm(ex->blas, p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
		    p->n, p->m, p->k, &p->alpha, (const float *)p->b, p->ldb, (const float *)p->a, p->lda, &zero,
		    (float *)p->y, p->n);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSgemm");
	}
	if (p->c == NULL && p->act == GRAPH_UNARY_NONE)
		return 0;
	err = cuda_launch_gemm_epilogue(ex->stream, cuda_grid((int64_t)elems), p->y, p->c, p->dt, p->beta, p->c_rs,
	    p->c_cs, elems, (size_t)p->n, p->act, p->act_alpha, p->act_beta);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "cuda_epilogue_kernel<<<>>>");
	return 0;
}

/* GEMM: 2-D A and B, C broadcast to [M,N]. */
int
cuda_compile_gemm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *as = cuda_in_shape(cc, n, 0), *bs = cuda_in_shape(cc, n, 1);
	const struct graph_shape *ys = cuda_out_shape(cc, n, 0), *cs = cuda_in_shape(cc, n, 2);
	struct gemm_params *p;

	if (as->ndims != 2 || bs->ndims != 2 || ys->ndims != 2)
		return error_set(cause, "A, B and the output must be 2-D");
	if (gemm_int(as->dims[0], "A dimension", cause) || gemm_int(as->dims[1], "A dimension", cause) ||
	    gemm_int(bs->dims[1], "B dimension", cause) || gemm_int(ys->dims[1], "output width", cause))
		return -1;
	if ((p = (struct gemm_params *)cuda_step_params(st, sizeof *p, cause)) == NULL)
		return -1;
	p->trans_a = n->attr.gemm.trans_a;
	p->trans_b = n->attr.gemm.trans_b;
	p->alpha = n->attr.gemm.alpha;
	p->beta = n->attr.gemm.beta;
	p->m = (int)ys->dims[0];
	p->n = (int)ys->dims[1];
	p->k = (int)as->dims[p->trans_a ? 0 : 1];
	p->lda = (int)as->dims[1];
	p->ldb = (int)bs->dims[1];
	p->a = cuda_in(cc, n, 0);
	p->b = cuda_in(cc, n, 1);
	p->y = cuda_out(cc, n, 0);
	if (gemm_store(cc, n, &p->dt, cause) != 0)
		return -1;
	if (cs != NULL && p->beta != 0.0f) {
		p->c = cuda_in(cc, n, 2);
		gemm_c_strides(cs, &p->c_rs, &p->c_cs);
	}
	p->act = n->act;
	p->act_alpha = n->act_alpha;
	p->act_beta = n->act_beta;
	if (p->m > 0 && p->n > 0)
		st->run = gemm_run;
	return 0;
}

/* The FP16/BF16 batched GEMM (FP32 compute): strided, or through the pointer arrays in ws. */
static int
matmul_run_reduced(const struct gemm_params *p, void *ws, const struct cuda_exec *ex, char **cause)
{
	const float one = 1.0f, zero = 0.0f;
	cudaDataType_t t = cuda_blas_dtype(p->dt);
	cublasStatus_t bs;

	if (p->pointers) {
		const void **ptr = (const void **)ws;
		bs = cublasGemmBatchedEx(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->m, p->k, &one, ptr + p->batch,
		    t, p->n, ptr, t, p->k, &zero, (void **)(ptr + 2 * p->batch), t, p->n,
		    (int)p->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, p->dt == GRAPH_DT_F16 ?
			    "cublasGemmBatchedEx(FP16, FP32 compute)" : "cublasGemmBatchedEx(BF16, FP32 compute)");
		return 0;
	}
	bs = cublasGemmStridedBatchedEx(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->m, p->k, &one, p->b, t,
	    p->n, p->sb, p->a, t, p->k, p->sa, &zero, p->y, t, p->n, (long long)p->m * p->n,
	    (int)p->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (bs != CUBLAS_STATUS_SUCCESS)
		return cuda_blas_fail(cause, bs, p->dt == GRAPH_DT_F16 ? "cublasGemmStridedBatchedEx(FP16, FP32 compute)" :
		    "cublasGemmStridedBatchedEx(BF16, FP32 compute)");
	return 0;
}

/* Batched MatMul: one strided-batched SGEMM (or pointer-array batched when broadcasts are irregular), then bias/act. */
static int
matmul_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct gemm_params *p = (const struct gemm_params *)st->p;
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t bs;
	cudaError_t err;

	if (p->k == 0) {
		err = cudaMemsetAsync(p->y, 0, (size_t)p->batch * p->m * p->n * cuda_dtype_size(p->dt), ex->stream);
		if (err != cudaSuccess)
			return cuda_fail(cause, err, "cudaMemsetAsync");
	} else if (cuda_dt_reduced(p->dt)) {
		if (matmul_run_reduced(p, st->ws, ex, cause) != 0)
			return -1;
	} else if (p->pointers) {
		const float **ptr = (const float **)st->ws;
		bs = cublasSgemmBatched(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->m, p->k, &one,
		    ptr + p->batch, p->n, ptr, p->k, &zero, (float **)(ptr + 2 * p->batch), p->n, (int)p->batch);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSgemmBatched");
	} else {
		bs = cublasSgemmStridedBatched(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->m, p->k, &one,
		    (const float *)p->b, p->n, p->sb, (const float *)p->a, p->k, p->sa, &zero, (float *)p->y, p->n,
		    (long long)p->m * p->n, (int)p->batch);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSgemmStridedBatched");
	}
	if (p->c == NULL && p->act == GRAPH_UNARY_NONE)
		return 0;
	err = cuda_launch_bias_act(ex->stream, p->y, p->c, p->dt, &p->bias, p->act, p->act_alpha, p->act_beta);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "ew_bias_act_kernel<<<>>>");
	return 0;
}

/* Destroy the descriptors (any may be NULL). */
static void
gemm_lt_free(struct gemm_lt *l)
{
	if (l == NULL)
		return;
	if (l->d != NULL)
		(void)cublasLtMatrixLayoutDestroy(l->d);
	if (l->b != NULL)
		(void)cublasLtMatrixLayoutDestroy(l->b);
	if (l->a != NULL)
		(void)cublasLtMatrixLayoutDestroy(l->a);
	if (l->desc != NULL)
		(void)cublasLtMatmulDescDestroy(l->desc);
	free(l);
}

/* The MatMul step's fini: its cuBLASLt descriptors. */
static void
matmul_fini(struct cuda_step *st)
{
	struct gemm_params *p = (struct gemm_params *)st->p;

	if (p != NULL) {
		gemm_lt_free(p->lt);
		p->lt = NULL;
	}
}

/* y = act(B^T A^T + bias) through cuBLASLt on the stream's handle and cuBLAS workspace. */
static int
matmul_lt_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct gemm_params *p = (const struct gemm_params *)st->p;
	const struct gemm_lt *l = p->lt;
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t bs;
	cudaError_t err;

	bs = cublasLtMatmul(ex->lt, l->desc, &one, p->b, l->a, p->a, l->b, &zero, p->y, l->d, p->y, l->d, &l->algo,
	    ex->blas_ws, ex->blas_ws_bytes, ex->stream);
	if (bs != CUBLAS_STATUS_SUCCESS)
		return cuda_blas_fail(cause, bs, "cublasLtMatmul");
	if (!l->act_after)
		return 0;
	err = cuda_launch_bias_act(ex->stream, p->y, NULL, p->dt, &p->bias, p->act, p->act_alpha, p->act_beta);
	return err == cudaSuccess ? 0 : cuda_fail(cause, err, "ew_bias_act_kernel<<<>>>");
}

/* A cuBLASLt handle for the heuristics at compile (the runs use their stream's); NULL when it cannot be made. */
static cublasLtHandle_t gemm_lt_query;
static pthread_once_t gemm_lt_once = PTHREAD_ONCE_INIT;
static void
gemm_lt_query_init(void)
{
	if (cublasLtCreate(&gemm_lt_query) != CUBLAS_STATUS_SUCCESS)
		gemm_lt_query = NULL;
}

/* The alignment of an address, as cuBLASLt's preferences take it (at most 256 bytes). */
static uint32_t
gemm_lt_align(const void *ptr)
{
	uintptr_t v = (uintptr_t)ptr;
	uint32_t a = 256;

	while (a > 1 && (v & (a - 1)) != 0)
		a >>= 1;
	return a;
}

/*
 * The compile cache's key of a cuBLASLt GEMM: a tag naming this layout, and
 * everything the heuristics were asked (types, epilogue, sizes, alignments,
 * workspace); the value is the algorithm's opaque bytes, or empty when the
 * heuristics found none.
 */
struct gemm_lt_key {
	char tag[8];
	int32_t dt, ct, epi, reduced;
	int64_t m, n, k;
	uint32_t align[3], pad;
	uint64_t ws;
};

/* The cache key of the MatMul p under the heuristics' inputs (zeroed first: padding is compared too). */
static void
gemm_lt_key_of(const struct gemm_params *p, int ct, int epi, const uint32_t *al, uint64_t ws, struct gemm_lt_key *k)
{
	memset(k, 0, sizeof *k);
	memcpy(k->tag, "cublaslt", 8);
	k->dt = cuda_blas_dtype(p->dt);
	k->ct = ct;
	k->epi = epi;
	k->reduced = cuda_dt_reduced(p->dt);
	k->m = p->m;
	k->n = p->n;
	k->k = p->k;
	memcpy(k->align, al, sizeof k->align);
	k->ws = ws;
}

/*
 * The cached algorithm for key, when cuBLASLt still accepts it for l within
 * ws: 1; -1 when the heuristics found none for key (stored as an empty
 * value); else 0 (a miss; a refused algorithm is dropped).
 */
static int
gemm_lt_cached(compile_cache_t *cache, const struct gemm_lt_key *key, struct gemm_lt *l, uint64_t ws)
{
	cublasLtMatmulHeuristicResult_t res;
	cublasLtMatmulAlgo_t algo;
	void *val = NULL;
	size_t len = 0;
	int ok;

	if (cache == NULL || !compile_cache_lookup(cache, key, sizeof *key, &val, &len))
		return 0;
	if (len == 0) {
		free(val);
		return -1;
	}
	ok = len == sizeof algo;
	if (ok)
		memcpy(&algo, val, sizeof algo);
	free(val);
	memset(&res, 0, sizeof res);
	ok = ok && cublasLtMatmulAlgoCheck(gemm_lt_query, l->desc, l->a, l->b, l->d, l->d, &algo, &res) ==
	    CUBLAS_STATUS_SUCCESS && res.state == CUBLAS_STATUS_SUCCESS && res.workspaceSize <= ws;
	if (!ok) {
		compile_cache_reject(cache, key, sizeof *key, "cuBLASLt algorithm of a MatMul");
		return 0;
	}
	l->algo = algo;
	return 1;
}

/* The split-K slices of algo (1 when it does not split K, or does not say). */
static uint32_t
gemm_lt_splitk(const cublasLtMatmulAlgo_t *algo)
{
	uint32_t v = 1;
	size_t written = 0;

	if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &v, sizeof v, &written) !=
	    CUBLAS_STATUS_SUCCESS || written != sizeof v)
		return 1;
	return v;
}

/*
 * The heuristics' best algorithm for l; batch-invariant (invariant != 0):
 * the best of those that never split K, so a row's sums run in one order
 * whatever the rows around it (a split-K choice depends on M).  1 found, 0 none.
 */
static int
gemm_lt_heuristic(struct gemm_lt *l, cublasLtMatmulPreference_t pref, int invariant)
{
	cublasLtMatmulHeuristicResult_t res[8];
	int count = 0;

	memset(res, 0, sizeof res);
	if (cublasLtMatmulAlgoGetHeuristic(gemm_lt_query, l->desc, l->a, l->b, l->d, l->d, pref, invariant ? 8 : 1,
	    res, &count) != CUBLAS_STATUS_SUCCESS)
		return 0;
	for (int i = 0; i < count; i++)
		if (res[i].state == CUBLAS_STATUS_SUCCESS && (!invariant || gemm_lt_splitk(&res[i].algo) <= 1)) {
			l->algo = res[i].algo;
			return 1;
		}
	return 0;
}

/*
 * cuBLASLt's algorithm for l within the stream workspace and the operands'
 * alignments (never splitting K when invariant), the cache's when it has one;
 * 1 found, 0 none.
 */
static int
gemm_lt_pick(compile_cache_t *cache, struct gemm_lt *l, const struct gemm_params *p, int ct, int epi, int invariant)
{
	struct gemm_lt_key key;
	cublasLtMatmulPreference_t pref = NULL;
	uint64_t ws = CUDA_BLAS_WORKSPACE;
	uint32_t al[3] = { gemm_lt_align(p->b), gemm_lt_align(p->a), gemm_lt_align(p->y) };
	uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
	int found = 0;

	if (pthread_once(&gemm_lt_once, gemm_lt_query_init) != 0 || gemm_lt_query == NULL)
		return 0;
	gemm_lt_key_of(p, ct, epi, al, ws, &key);
	key.pad = invariant != 0;
	if ((found = gemm_lt_cached(cache, &key, l, ws)) != 0)
		return found > 0;
	if (cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2], 4) == 0 &&
	    (!invariant || cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &none,
	    sizeof none) == 0))
		found = gemm_lt_heuristic(l, pref, invariant);
	if (pref != NULL)
		(void)cublasLtMatmulPreferenceDestroy(pref);
	if (cache != NULL)
		compile_cache_store(cache, &key, sizeof key, &l->algo, found ? sizeof l->algo : 0);
	return found;
}

/*
 * A one-GEMM MatMul whose bias is one value per output column (a Linear
 * layer's) and whose activation is none or ReLU takes cuBLASLt with the bias
 * (and ReLU) as the GEMM's epilogue: one pass over the output fewer.  On an
 * H100 the separate bias pass was a sixth of BERT-base's batch at fp16.
 * A batch-invariant plan (cuda_compile.batch_invariant) takes every one-GEMM
 * MatMul of FP16/BF16 this way, never split along K, any other activation as
 * a pass after it: cuBLAS's own choice could split K for one M and not another.
 * Returns 1 when taken, 0 when not (the caller keeps the cuBLAS path), -1 on error.
 */
static int
matmul_try_lt(const struct cuda_compile *cc, struct cuda_step *st, struct gemm_params *p,
    const struct graph_shape *cs, char **cause)
{
	cudaDataType_t dt = cuda_blas_dtype(p->dt);
	cublasComputeType_t ct = p->dt == GRAPH_DT_F32 && cc->precision != GRAPH_PRECISION_FP32 ?
	    CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	cublasLtEpilogue_t epi;
	const char *off = getenv("INFERD_CUDA_GEMM_LT");
	int inv = cc->batch_invariant && cuda_dt_reduced(p->dt);
	int bias = p->c != NULL && cs != NULL && cs->ndims >= 1 && graph_shape_elems(cs) == p->n &&
	    cs->dims[cs->ndims - 1] == p->n && gemm_lt_align(p->c) >= 16;
	int epi_act = p->act == GRAPH_UNARY_NONE || p->act == GRAPH_UNARY_RELU;
	struct gemm_lt *l;
	cublasStatus_t bs;

	if ((off != NULL && strcmp(off, "0") == 0) || p->batch != 1 || p->pointers || p->k == 0)
		return 0;
	/* Batch-invariant: every such GEMM, the bias in the epilogue when it is a row vector, any activation after. */
	if (!inv && (!bias || !epi_act))
		return 0;
	if (inv && p->c != NULL && !bias)
		return 0;
	epi = !bias ? (p->act == GRAPH_UNARY_RELU ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT) :
	    p->act == GRAPH_UNARY_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
	if ((l = (struct gemm_lt *)calloc(1, sizeof *l)) == NULL)
		return error_set(cause, "out of memory");
	l->act_after = !epi_act;
	if ((bs = cublasLtMatmulDescCreate(&l->desc, ct, CUDA_R_32F)) ||
	    (bs = cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)) ||
	    (bias && (bs = cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->c,
	    sizeof p->c))) ||
	    (bs = cublasLtMatrixLayoutCreate(&l->a, dt, (uint64_t)p->n, (uint64_t)p->k, p->n)) ||
	    (bs = cublasLtMatrixLayoutCreate(&l->b, dt, (uint64_t)p->k, (uint64_t)p->m, p->k)) ||
	    (bs = cublasLtMatrixLayoutCreate(&l->d, dt, (uint64_t)p->n, (uint64_t)p->m, p->n))) {
		gemm_lt_free(l);
		return cuda_blas_fail(cause, bs, "cuBLASLt descriptors");
	}
	if (!gemm_lt_pick(cc->cache, l, p, (int)ct, (int)epi, inv)) {
		gemm_lt_free(l);
		return 0;
	}
	p->lt = l;
	st->fini = matmul_fini;
	st->run = matmul_lt_run;
	return 1;
}

/* Batch stride of an operand whose batch dims (right-aligned in nb out dims) are all 1 (0) or all full (mat). */
static int
matmul_stride(const struct graph_shape *s, int mat_nd, const int64_t *ob, int nb, long long mat, long long *stride)
{
	int sb = s->ndims - mat_nd, ones = 1, full = sb == nb;

	for (int d = 0; d < sb; d++) {
		if (s->dims[d] != 1)
			ones = 0;
		if (full && s->dims[d] != ob[d])
			full = 0;
	}
	*stride = ones ? 0 : mat;
	return ones || full;
}

/* Pointer arrays (A's, B's, Y's per batch) uploaded into the workspace, for irregular broadcasts. */
static int
matmul_pointers(struct cuda_step *st, struct gemm_params *p, const struct graph_shape *as,
    const struct graph_shape *bs, const int64_t *ob, int nb, int a_nd, int b_nd, char **cause)
{
	const char **h;
	size_t es = cuda_dtype_size(p->dt);
	int64_t ai, bi, rem;
	int rc;

	h = (const char **)malloc((size_t)p->batch * 3 * sizeof *h);
	if (h == NULL)
		return error_set(cause, "out of memory");
	for (int64_t t = 0; t < p->batch; t++) {
		ai = bi = 0;
		rem = t;
		int64_t amul = 1, bmul = 1;
		for (int d = nb - 1; d >= 0; d--) {
			int64_t c = rem % ob[d];
			int da = d - (nb - (as->ndims - a_nd)), db = d - (nb - (bs->ndims - b_nd));
			rem /= ob[d];
			if (da >= 0) {
				ai += (as->dims[da] == 1 ? 0 : c) * amul;
				amul *= as->dims[da];
			}
			if (db >= 0) {
				bi += (bs->dims[db] == 1 ? 0 : c) * bmul;
				bmul *= bs->dims[db];
			}
		}
		h[t] = (const char *)p->a + (size_t)(ai * p->m * p->k) * es;
		h[p->batch + t] = (const char *)p->b + (size_t)(bi * p->k * p->n) * es;
		h[2 * p->batch + t] = (const char *)p->y + (size_t)(t * p->m * p->n) * es;
	}
	rc = cuda_step_ws(st, (size_t)p->batch * 3 * sizeof *h, cause) == 0 &&
	    cuda_upload(st->ws, h, (size_t)p->batch * 3 * sizeof *h, cause) == 0 ? 0 : -1;
	free(h);
	p->pointers = 1;
	return rc;
}

/* Sizes of a numpy matmul: M, K, N and the output's batch dims. */
static int
matmul_sizes(const struct graph_shape *as, const struct graph_shape *bs, const struct graph_shape *ys,
    struct gemm_params *p, int *nb, char **cause)
{
	int a_nd = as->ndims == 1 ? 1 : 2, b_nd = bs->ndims == 1 ? 1 : 2;
	int64_t m = as->ndims == 1 ? 1 : as->dims[as->ndims - 2], k = as->dims[as->ndims - 1];
	int64_t kb = bs->ndims == 1 ? bs->dims[0] : bs->dims[bs->ndims - 2], nn = bs->ndims == 1 ? 1 : bs->dims[bs->ndims - 1];

	if (as->ndims < 1 || bs->ndims < 1 || k != kb)
		return error_set(cause, "inner dimensions differ (%lld and %lld)", (long long)k, (long long)kb);
	*nb = ys->ndims - (a_nd == 2) - (b_nd == 2);
	if (*nb < 0)
		return error_set(cause, "output rank %d is too small", ys->ndims);
	p->batch = 1;
	for (int d = 0; d < *nb; d++)
		p->batch *= ys->dims[d];
	if (gemm_int(m, "M", cause) || gemm_int(k, "K", cause) || gemm_int(nn, "N", cause) ||
	    gemm_int(p->batch, "batch", cause))
		return -1;
	p->m = (int)m;
	p->k = (int)k;
	p->n = (int)nn;
	return 0;
}

/* MATMUL: numpy semantics (1-D operands promoted), batch broadcast, optional bias and activation. */
int
cuda_compile_matmul(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *as = cuda_in_shape(cc, n, 0), *bs = cuda_in_shape(cc, n, 1);
	const struct graph_shape *ys = cuda_out_shape(cc, n, 0), *cs = cuda_in_shape(cc, n, 2);
	struct gemm_params *p;
	int nb = 0;

	if ((p = (struct gemm_params *)cuda_step_params(st, sizeof *p, cause)) == NULL)
		return -1;
	if (matmul_sizes(as, bs, ys, p, &nb, cause) != 0)
		return -1;
	if (graph_shape_elems(ys) != p->batch * p->m * p->n)
		return error_set(cause, "output has %lld elements, not %lld", (long long)graph_shape_elems(ys),
		    (long long)(p->batch * p->m * p->n));
	p->a = cuda_in(cc, n, 0);
	p->b = cuda_in(cc, n, 1);
	p->y = cuda_out(cc, n, 0);
	if (gemm_store(cc, n, &p->dt, cause) != 0)
		return -1;
	p->act = n->act;
	p->act_alpha = n->act_alpha;
	p->act_beta = n->act_beta;
	if (cs != NULL) {
		p->c = cuda_in(cc, n, 2);
		if (cs->ndims > ys->ndims)
			return error_set(cause, "bias rank %d above the output's %d", cs->ndims, ys->ndims);
		for (int d = 0; d < cs->ndims; d++)
			if (cs->dims[d] != 1 && cs->dims[d] != ys->dims[ys->ndims - cs->ndims + d])
				return error_set(cause, "bias does not broadcast to the output");
		cuda_map_bcast(&p->bias, 0, ys, cs);
	} else
		cuda_map_bcast(&p->bias, 0, ys, ys);
	if (p->batch * p->m * p->n == 0)
		return 0;
	st->run = matmul_run;
	int a_nd = as->ndims == 1 ? 1 : 2, b_nd = bs->ndims == 1 ? 1 : 2;
	if (matmul_stride(as, a_nd, ys->dims, nb, (long long)p->m * p->k, &p->sa) &&
	    matmul_stride(bs, b_nd, ys->dims, nb, (long long)p->k * p->n, &p->sb)) {
		/*
		 * One B for every batch (a weight) and A's batches back to back:
		 * the batch is just more rows of A and of Y.  One GEMM of batch x M
		 * rows instead of batch GEMMs of M rows (a transformer's [B, S, D]
		 * x [D, N], or worse a sequence-first [S, B, D]) lets cuBLAS tile
		 * the whole product: the profile showed ViT-B/16's in-projection at
		 * a sixth of the GEMM rate as 197 GEMMs of 8 rows.
		 */
		if (p->batch > 1 && p->sb == 0 && p->sa == (long long)p->m * p->k &&
		    p->batch * p->m <= INT_MAX) {
			p->m = (int)(p->batch * p->m);
			p->batch = 1;
			p->sa = 0;
		}
		return matmul_try_lt(cc, st, p, cs, cause) < 0 ? -1 : 0;
	}
	return matmul_pointers(st, p, as, bs, ys->dims, nb, a_nd, b_nd, cause);
}
