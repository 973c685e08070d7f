/* cpu_attention.c: fused attention, softmax(scale Q K^T + mask) V: per leading index two sgemms and a row softmax in scratch. */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "cpu_kernels_impl.h"

/*
 * The problem: lead independent (Sq x D) x (D x Sk) -> softmax -> (Sk x Dv) products, and the mask's strides.
 * Leading index b is (b / nh, b % nh): nh is the heads' count of a seq-major node (its rows nh matrices apart,
 * strided), else 1 (dense matrices one after another).
 */
struct attn_geom {
	int rank;
	int64_t lead, sq, sk, d, dv, nh;
	int64_t sdims[GRAPH_MAX_DIMS];	/* the scores' dims: the leading ones, Sq, Sk */
	int64_t mst[GRAPH_MAX_DIMS];	/* the mask's element stride along each of them (0: broadcast or none) */
};

/* The mask's strides along the scores' dims (numpy broadcasting, aligned on the right); -1 when it does not fit. */
static int
attn_mask_strides(const struct graph_shape *m, struct attn_geom *a)
{
	int64_t st = 1;
	int i;

	if (m->ndims > a->rank)
		return -1;
	for (i = m->ndims - 1; i >= 0; i--) {
		int si = a->rank - m->ndims + i;

		if (m->dims[i] != 1) {
			if (m->dims[i] != a->sdims[si])
				return -1;
			a->mst[si] = st;
		}
		st *= m->dims[i];
	}
	return 0;
}

/* Read the geometry from the concrete shapes; -1 with a cause when they do not fit one another. */
static int
attn_geom_init(const struct cpu_node_ctx *c, struct attn_geom *a, char **cause)
{
	const struct graph_shape *in[3] = { cpu_in_shape(c, 0), cpu_in_shape(c, 1), cpu_in_shape(c, 2) };
	struct graph_shape qkv[3];
	const struct graph_shape *q = &qkv[0], *k = &qkv[1], *v = &qkv[2];
	int kt = c->n->attr.attention.k_transposed, r = in[0]->ndims, i;

	memset(a, 0, sizeof *a);
	if (graph_attention_shapes(c->n, in, qkv, &a->nh) != 0)
		return cpu_fail(cause, "node '%s': attention needs Q, K and V of one rank, at least 2 (3 seq-major, K "
		    "not transposed)", c->n->name);
	a->rank = r;
	a->sq = q->dims[r - 2];
	a->d = q->dims[r - 1];
	a->sk = kt ? k->dims[r - 1] : k->dims[r - 2];
	a->dv = v->dims[r - 1];
	a->lead = 1;
	for (i = 0; i < r - 2; i++) {
		if (k->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
			return cpu_fail(cause, "node '%s': attention's Q, K and V differ in their leading dims", c->n->name);
		a->lead *= q->dims[i];
	}
	if ((kt ? k->dims[r - 2] : k->dims[r - 1]) != a->d || v->dims[r - 2] != a->sk)
		return cpu_fail(cause, "node '%s': attention's K or V does not fit Q", c->n->name);
	memcpy(a->sdims, q->dims, sizeof a->sdims);
	a->sdims[r - 1] = a->sk;
	if (cpu_has_in(c, 3) && attn_mask_strides(cpu_in_shape(c, 3), a) != 0)
		return cpu_fail(cause, "node '%s': attention's mask does not broadcast to the scores", c->n->name);
	return 0;
}

/* Offset of leading index b's first score row in the mask. */
static int64_t
attn_mask_offset(const struct attn_geom *a, int64_t b)
{
	int64_t off = 0;
	int i;

	for (i = a->rank - 3; i >= 0; i--) {
		off += (b % a->sdims[i]) * a->mst[i];
		b /= a->sdims[i];
	}
	return off;
}

/* Add the mask row, then softmax the row in place (max subtracted; the sum in double). */
CPU_HOT_LOOP static void
attn_softmax_row(float *s, const float *mask, int64_t mst, int64_t n)
{
	float mx = -INFINITY;
	double sum = 0.0;
	float inv;
	int64_t i;

	/* omp simd: the max is exact in any order, the sum in double needs reassociating to vectorise. */
	if (mask != NULL) {
		#pragma omp simd
		for (i = 0; i < n; i++)
			s[i] += mask[i * mst];
	}
	#pragma omp simd reduction(max:mx)
	for (i = 0; i < n; i++)
		mx = s[i] > mx ? s[i] : mx;
	if (mx == -INFINITY)
		mx = 0.0f;	/* a fully masked row: every score -inf, the row becomes 0/0 as in the unfused graph */
	#pragma omp simd
	for (i = 0; i < n; i++)
		s[i] -= mx;
	cpu_vexpf(s, s, n);
	#pragma omp simd reduction(+:sum)
	for (i = 0; i < n; i++)
		sum += s[i];
	inv = (float)(1.0 / sum);
	#pragma omp simd
	for (i = 0; i < n; i++)
		s[i] *= inv;
}

/* Offset of leading index b's first row in a tensor of rows rows of depth d (rows are nh d apart when seq-major). */
static int64_t
attn_offset(const struct attn_geom *a, int64_t b, int64_t rows, int64_t d)
{
	return b / a->nh * rows * a->nh * d + b % a->nh * d;
}

/* One leading index: scores into s (Sq x Sk), softmax, then the output rows. */
static void
attn_one(const struct cpu_node_ctx *c, const struct attn_geom *a, int64_t b, float *s)
{
	int kt = c->n->attr.attention.k_transposed;
	const float *q = (const float *)cpu_in(c, 0) + attn_offset(a, b, a->sq, a->d);
	const float *k = (const float *)cpu_in(c, 1) + attn_offset(a, b, a->sk, a->d);
	const float *v = (const float *)cpu_in(c, 2) + attn_offset(a, b, a->sk, a->dv);
	const float *mask = cpu_has_in(c, 3) ? (const float *)cpu_in(c, 3) + attn_mask_offset(a, b) : NULL;
	float *y = (float *)cpu_out(c, 0) + attn_offset(a, b, a->sq, a->dv);
	int64_t j;

	cblas_sgemm(CblasRowMajor, CblasNoTrans, kt ? CblasNoTrans : CblasTrans, (int)a->sq, (int)a->sk, (int)a->d,
	    c->n->attr.attention.scale, q, (int)(a->nh * a->d), k, kt ? (int)a->sk : (int)(a->nh * a->d), 0.0f, s,
	    (int)a->sk);
	for (j = 0; j < a->sq; j++)
		attn_softmax_row(s + j * a->sk, mask != NULL ? mask + j * a->mst[a->rank - 2] : NULL, a->mst[a->rank - 1],
		    a->sk);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)a->sq, (int)a->dv, (int)a->sk, 1.0f, s, (int)a->sk,
	    v, (int)(a->nh * a->dv), 0.0f, y, (int)(a->nh * a->dv));
}

/* Scratch: one Sq x Sk score block per thread. */
size_t
cpu_attention_workspace(const struct cpu_node_ctx *c)
{
	struct attn_geom a;

	if (attn_geom_init(c, &a, NULL) != 0)
		return 0;
	return (size_t)cpu_kernels_threads() * (size_t)(a.sq * a.sk) * sizeof(float);
}

/* ATTENTION: the leading indices split over the threads, each with its own score block. */
int
cpu_attention_run(const struct cpu_node_ctx *c, char **cause)
{
	struct attn_geom a;
	int nt = cpu_kernels_threads();

	if (attn_geom_init(c, &a, cause) != 0)
		return -1;
	if (a.sq * a.sk == 0 || a.dv == 0)
		return 0;
	if (nt > a.lead)
		nt = (int)a.lead;
	#pragma omp parallel for num_threads(nt > 0 ? nt : 1) schedule(static) if (nt > 1 && cpu_parallel(a.lead * a.sq * a.sk))
	for (int64_t b = 0; b < a.lead; b++)
		attn_one(c, &a, b, (float *)c->ws + (size_t)omp_get_thread_num() * (size_t)(a.sq * a.sk));
	return 0;
}
