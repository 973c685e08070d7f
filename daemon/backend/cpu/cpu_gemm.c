/* cpu_gemm.c: Gemm and batched, broadcast MatMul through OpenBLAS sgemm, with fused bias and activation. */
#include "config.h"

#include <cblas.h>
#include <string.h>

#include "cpu_kernels_impl.h"

/* Columns (or rows) per thread are rounded to this so each piece keeps OpenBLAS's panel widths. */
#define SGEMM_ALIGN 16

/* One sgemm call. */
static void
sgemm_one(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
    const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
	    (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* C = alpha op(A) op(B) + beta C, the wider of rows and columns split over threads. */
void
cpu_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
    const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
	int nt = cpu_kernels_threads(), by_cols = n >= m;
	int64_t len = by_cols ? n : m, piece;

	if (nt < 2 || m * n * k < 4 * CPU_PARALLEL_MIN * 8 || len < 2 * SGEMM_ALIGN) {
		sgemm_one(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
		return;
	}
	piece = (len + nt - 1) / nt;
	piece = (piece + SGEMM_ALIGN - 1) / SGEMM_ALIGN * SGEMM_ALIGN;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static, 1)
	for (int t = 0; t < nt; t++) {
		int64_t lo = t * piece, cnt = len - lo < piece ? len - lo : piece;

		if (cnt <= 0)
			continue;
		if (by_cols)
			sgemm_one(ta, tb, m, cnt, k, alpha, a, lda, tb ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
		else
			sgemm_one(ta, tb, cnt, n, k, alpha, ta ? a + lo : a + lo * lda, lda, b, ldb, beta,
			    c + lo * ldc, ldc);
	}
}

struct fill_arg {
	float *y;
	const float *c;
	float beta;
};

/* y = beta c over one span. */
static void
fill_span(void *arg, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	struct fill_arg *p = arg;

	for (int64_t i = 0; i < n; i++)
		p->y[yo + i] = p->beta * p->c[xo[0] + i * st[0]];
}

/* y += c over one span. */
static void
add_span(void *arg, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	struct fill_arg *p = arg;

	for (int64_t i = 0; i < n; i++)
		p->y[yo + i] += p->c[xo[0] + i * st[0]];
}

/* y = beta c (c broadcast to y's shape), or y += c when accumulate. */
static int
broadcast_into(float *y, const struct graph_shape *ys, const float *c, const struct graph_shape *cs,
    float beta, int accumulate, char **cause)
{
	struct fill_arg p = { y, c, beta };
	struct cpu_bcast b;

	if (cpu_bcast_init(&b, ys, &cs, 1, cause) != 0)
		return -1;
	cpu_bcast_run(&b, accumulate ? add_span : fill_span, &p);
	return 0;
}

/* GEMM: y = act(alpha op(A) op(B) + beta C). */
int
cpu_gemm_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_gemm_attr *at = &c->n->attr.gemm;
	const struct graph_shape *as = cpu_in_shape(c, 0), *bs = cpu_in_shape(c, 1), *ys = cpu_out_shape(c, 0);
	int64_t m, k, kb, n;
	float beta = 0.0f, *y = cpu_out(c, 0);

	if (as->ndims != 2 || bs->ndims != 2)
		return cpu_fail(cause, "A and B must be 2-D (ranks %d and %d)", as->ndims, bs->ndims);
	m = at->trans_a ? as->dims[1] : as->dims[0];
	k = at->trans_a ? as->dims[0] : as->dims[1];
	kb = at->trans_b ? bs->dims[1] : bs->dims[0];
	n = at->trans_b ? bs->dims[0] : bs->dims[1];
	if (k != kb)
		return cpu_fail(cause, "inner dimensions differ (%lld and %lld)", (long long)k, (long long)kb);
	if (ys->ndims != 2 || ys->dims[0] != m || ys->dims[1] != n)
		return cpu_fail(cause, "output is not [%lld,%lld]", (long long)m, (long long)n);
	if (m == 0 || n == 0)
		return 0;
	if (cpu_has_in(c, 2) && at->beta != 0.0f) {
		if (broadcast_into(y, ys, cpu_in(c, 2), cpu_in_shape(c, 2), at->beta, 0, cause) != 0)
			return -1;
		beta = 1.0f;
	} else {
		memset(y, 0, (size_t)(m * n) * sizeof(float));
	}
	if (k > 0)
		cpu_sgemm(at->trans_a, at->trans_b, m, n, k, at->alpha, cpu_in(c, 0), as->dims[1], cpu_in(c, 1),
		    bs->dims[1], beta, y, n);
	cpu_act_inplace(y, m * n, c->n->act, c->n->act_alpha, c->n->act_beta);
	return 0;
}

/* MatMul geometry: matrix sizes and the broadcast batch of A and B. */
struct mm_geom {
	int64_t m, k, n, nbatch;
	int nb;				/* batch rank of the output */
	int64_t bdims[GRAPH_MAX_DIMS];	/* output batch dims */
	int64_t ast[GRAPH_MAX_DIMS], bst[GRAPH_MAX_DIMS];	/* batch strides in matrices, 0 broadcast */
	int64_t abatch, bbatch;		/* matrices in A and B */
};

/* Batch strides of one operand (rank r, last two dims the matrix) against the output batch. */
static int
mm_batch_strides(struct mm_geom *g, const struct graph_shape *s, int mat_rank, int64_t *st, int64_t *count)
{
	int r = s->ndims - mat_rank, lead = g->nb - r;
	int64_t stride = 1;

	if (r < 0)
		r = 0;
	if (lead < 0)
		return -1;
	for (int j = g->nb - 1; j >= 0; j--) {
		int64_t d = j >= lead ? s->dims[j - lead] : 1;

		if (d != 1 && d != g->bdims[j])
			return -1;
		st[j] = d == 1 ? 0 : stride;
		stride *= d;
	}
	*count = stride;
	return 0;
}

/* Sizes from the shapes of A, B and Y (numpy matmul, 1-D operands promoted). */
static int
mm_geom_init(struct mm_geom *g, const struct graph_shape *as, const struct graph_shape *bs,
    const struct graph_shape *ys, char **cause)
{
	int ar = as->ndims >= 2 ? 2 : 1, br = bs->ndims >= 2 ? 2 : 1, ab = as->ndims - ar, bb = bs->ndims - br;
	char s1[160], s2[160];

	if (as->ndims < 1 || bs->ndims < 1)
		return cpu_fail(cause, "MatMul operands must have rank >= 1");
	g->m = ar == 2 ? as->dims[as->ndims - 2] : 1;
	g->k = as->dims[as->ndims - 1];
	g->n = br == 2 ? bs->dims[bs->ndims - 1] : 1;
	if ((br == 2 ? bs->dims[bs->ndims - 2] : bs->dims[0]) != g->k)
		goto bad;
	g->nb = ab > bb ? ab : bb;
	g->nbatch = 1;
	for (int j = 0; j < g->nb; j++) {
		int64_t da = j >= g->nb - ab ? as->dims[j - (g->nb - ab)] : 1;
		int64_t db = j >= g->nb - bb ? bs->dims[j - (g->nb - bb)] : 1;

		if (da != db && da != 1 && db != 1)
			goto bad;
		g->bdims[j] = da == 1 ? db : da;
		g->nbatch *= g->bdims[j];
	}
	if (mm_batch_strides(g, as, ar, g->ast, &g->abatch) != 0 ||
	    mm_batch_strides(g, bs, br, g->bst, &g->bbatch) != 0)
		goto bad;
	if (cpu_elems(ys) != g->nbatch * g->m * g->n)
		return cpu_fail(cause, "output %s does not hold the product", cpu_shape_str(ys, s1, sizeof(s1)));
	return 0;
bad:
	return cpu_fail(cause, "shapes %s and %s do not multiply", cpu_shape_str(as, s1, sizeof(s1)),
	    cpu_shape_str(bs, s2, sizeof(s2)));
}

/* A and B offsets (in matrices) of output batch i. */
static void
mm_batch_offsets(const struct mm_geom *g, int64_t i, int64_t *ao, int64_t *bo)
{
	*ao = *bo = 0;
	for (int j = g->nb - 1; j >= 0; j--) {
		int64_t d = i % g->bdims[j];

		i /= g->bdims[j];
		*ao += d * g->ast[j];
		*bo += d * g->bst[j];
	}
}

/*
 * The product for every batch: one tall sgemm when B is shared; else batches
 * over threads when there are enough of them, or each batch split.
 */
static void
mm_multiply(const struct mm_geom *g, const float *a, const float *b, float *y)
{
	int64_t ma = g->m * g->k, mb = g->k * g->n, my = g->m * g->n;

	if (g->bbatch == 1 && g->abatch == g->nbatch) {
		cpu_sgemm(0, 0, g->nbatch * g->m, g->n, g->k, 1.0f, a, g->k, b, g->n, 0.0f, y, g->n);
		return;
	}
	if (g->nbatch >= cpu_kernels_threads() && cpu_parallel(g->nbatch * my * g->k / 8)) {
		#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static)
		for (int64_t i = 0; i < g->nbatch; i++) {
			int64_t ao, bo;

			mm_batch_offsets(g, i, &ao, &bo);
			sgemm_one(0, 0, g->m, g->n, g->k, 1.0f, a + ao * ma, g->k, b + bo * mb, g->n, 0.0f,
			    y + i * my, g->n);
		}
		return;
	}
	for (int64_t i = 0; i < g->nbatch; i++) {
		int64_t ao, bo;

		mm_batch_offsets(g, i, &ao, &bo);
		cpu_sgemm(0, 0, g->m, g->n, g->k, 1.0f, a + ao * ma, g->k, b + bo * mb, g->n, 0.0f, y + i * my, g->n);
	}
}

/* MATMUL: y = act(A @ B + bias). */
int
cpu_matmul_run(const struct cpu_node_ctx *c, char **cause)
{
	struct mm_geom g;
	const struct graph_shape *ys = cpu_out_shape(c, 0);
	float *y = cpu_out(c, 0);
	int64_t total;

	if (mm_geom_init(&g, cpu_in_shape(c, 0), cpu_in_shape(c, 1), ys, cause) != 0)
		return -1;
	total = g.nbatch * g.m * g.n;
	if (total == 0)
		return 0;
	if (g.k == 0)
		memset(y, 0, (size_t)total * sizeof(float));
	else
		mm_multiply(&g, cpu_in(c, 0), cpu_in(c, 1), y);
	if (cpu_has_in(c, 2) &&
	    broadcast_into(y, ys, cpu_in(c, 2), cpu_in_shape(c, 2), 1.0f, 1, cause) != 0)
		return -1;
	cpu_act_inplace(y, total, c->n->act, c->n->act_alpha, c->n->act_beta);
	return 0;
}
