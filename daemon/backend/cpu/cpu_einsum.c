/* cpu_einsum.c: Einsum (FP32) as one general contraction: operands gathered into [batch, M, K] and [batch, K, N], batched sgemm, output permuted. */
#include "config.h"

#include <string.h>

#include "cpu_kernels_impl.h"
#include "graph_einsum.h"

/*
 * Every equation of one or two operands is the same three steps, so no
 * equation has a case of its own: each label is a batch label (in both
 * operands and the output), a row label M (first operand and output), a
 * column label N (second operand and output) or a contracted label K (both
 * operands, not the output); a label in one operand only and not the output
 * is summed while gathering.  Repeated labels in an operand (a diagonal) add
 * their strides.  One operand is a gather with sums straight into the output.
 */

/* Axes to iterate (row-major, the last fastest) with each one's element stride in the source. */
struct ein_axes {
	int n;
	int64_t dim[GRAPH_EINSUM_IDS], st[GRAPH_EINSUM_IDS];
};

struct ein_plan {
	struct graph_einsum_dims d;
	int64_t size[GRAPH_EINSUM_IDS];
	int64_t st[2][GRAPH_EINSUM_IDS];	/* per operand and label: element stride (0: absent or broadcast) */
	unsigned char has[3][GRAPH_EINSUM_IDS];	/* label present in operand k, or the output (2) */
	int cls[4][GRAPH_EINSUM_IDS], ncls[4];	/* labels by class: batch, M, N, K */
	int64_t count[4];			/* elements of each class */
	int direct;				/* the output's order is [batch, M, N]: sgemm writes it */
};

enum { EIN_BATCH = 0, EIN_M, EIN_N, EIN_K };

/* Label strides of operand k (ellipsis dims of 1 against a larger size broadcast with stride 0). */
static void
plan_strides(struct ein_plan *p, const struct graph_shape *s, int k)
{
	int64_t st = 1;

	for (int i = s->ndims - 1; i >= 0; i--) {
		int id = p->d.lab[k][i];

		p->has[k][id] = 1;
		if (!(s->dims[i] == 1 && p->size[id] != 1))
			p->st[k][id] += st;
		st *= s->dims[i];
	}
}

/* The class of label id (two operands), or -1 for a label summed within its one operand. */
static int
label_class(const struct ein_plan *p, int id)
{
	int a = p->has[0][id], b = p->has[1][id], o = p->has[2][id];

	if (a && b)
		return o ? EIN_BATCH : EIN_K;
	if (o)
		return a ? EIN_M : EIN_N;
	return -1;
}

/* Classify the labels: batch, M and N in the output's order, K in the first operand's. */
static void
plan_classes(struct ein_plan *p)
{
	unsigned char seen[GRAPH_EINSUM_IDS] = { 0 };

	for (int q = 0; q < 4; q++)
		p->count[q] = 1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < p->d.rank[pass ? 0 : 2]; i++) {
			int id = p->d.lab[pass ? 0 : 2][i], q = label_class(p, id);

			if (q < 0 || seen[id] || (pass == 0) == (q == EIN_K))
				continue;
			seen[id] = 1;
			p->cls[q][p->ncls[q]++] = id;
			p->count[q] *= p->size[id];
		}
	p->direct = 1;
	for (int i = 0, q = 0, j = 0; i < p->d.rank[2]; i++) {
		while (q < 3 && j == p->ncls[q]) {
			q++;
			j = 0;
		}
		p->direct &= q < 3 && p->cls[q][j++] == p->d.lab[2][i];
	}
}

/* Work out the plan for c's shapes; -1 when they do not fit the equation. */
static int
plan_init(struct ein_plan *p, const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *in[2] = { cpu_in_shape(c, 0), c->n->ninputs > 1 ? cpu_in_shape(c, 1) : NULL };
	int ranks[2] = { in[0]->ndims, in[1] ? in[1]->ndims : 0 };

	memset(p, 0, sizeof *p);
	if (c->n->ninputs != c->n->attr.einsum.ninputs ||
	    graph_einsum_expand(&c->n->attr.einsum, ranks, &p->d, cause) < 0 ||
	    graph_einsum_sizes(&p->d, in, p->size, cause) < 0)
		return -1;
	for (int k = 0; k < c->n->ninputs; k++)
		plan_strides(p, in[k], k);
	if (cpu_out_shape(c, 0)->ndims != p->d.rank[2])
		return cpu_fail(cause, "the output's rank differs from the equation's");
	for (int i = 0; i < p->d.rank[2]; i++) {
		p->has[2][(int)p->d.lab[2][i]] = 1;
		if (cpu_out_shape(c, 0)->dims[i] != p->size[(int)p->d.lab[2][i]])
			return cpu_fail(cause, "the output's shape differs from the equation's");
	}
	if (c->n->ninputs == 2)
		plan_classes(p);
	return 0;
}

/* Append labels ids[0 .. n) to axes a, each with its stride from st (per label). */
static void
axes_add(struct ein_axes *a, const struct ein_plan *p, const int *ids, int n, const int64_t *st)
{
	for (int i = 0; i < n; i++) {
		a->dim[a->n] = p->size[ids[i]];
		a->st[a->n++] = st[ids[i]];
	}
}

/* Element count of axes a. */
static int64_t
axes_count(const struct ein_axes *a)
{
	int64_t n = 1;

	for (int i = 0; i < a->n; i++)
		n *= a->dim[i];
	return n;
}

/* Source offset of the i-th position of axes a. */
static int64_t
axes_offset(const struct ein_axes *a, int64_t i)
{
	int64_t off = 0;

	for (int d = a->n - 1; d >= 0; d--) {
		off += (i % a->dim[d]) * a->st[d];
		i /= a->dim[d];
	}
	return off;
}

/* dst[i] = sum over the positions of red of src at keep's i-th position plus red's (no red: a copy). */
static void
ein_gather(float *dst, const float *src, const struct ein_axes *keep, const struct ein_axes *red)
{
	int64_t nk = axes_count(keep), nr = axes_count(red);

	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(nk * nr))
	for (int64_t i = 0; i < nk; i++) {
		int64_t off = axes_offset(keep, i);
		double acc = 0.0;

		for (int64_t j = 0; j < nr; j++)
			acc += src[off + axes_offset(red, j)];
		dst[i] = (float)acc;
	}
}

/* Labels of operand k summed within it (in no other operand and not in the output). */
static void
axes_summed(struct ein_axes *a, const struct ein_plan *p, int k)
{
	int other = 1 - k;

	for (int id = 0; id < GRAPH_EINSUM_IDS; id++)
		if (p->has[k][id] && !p->has[2][id] && (p->d.ninputs < 2 || !p->has[other][id]))
			axes_add(a, p, &id, 1, p->st[k]);
}

/* Gather operand k into [batch, first, second] (first, second: the classes M, K for A; K, N for B). */
static void
ein_pack(float *dst, const struct cpu_node_ctx *c, const struct ein_plan *p, int k, int first, int second)
{
	struct ein_axes keep = { 0 }, red = { 0 };

	axes_add(&keep, p, p->cls[EIN_BATCH], p->ncls[EIN_BATCH], p->st[k]);
	axes_add(&keep, p, p->cls[first], p->ncls[first], p->st[k]);
	axes_add(&keep, p, p->cls[second], p->ncls[second], p->st[k]);
	axes_summed(&red, p, k);
	ein_gather(dst, cpu_in(c, k), &keep, &red);
}

/* Elements of the three scratch buffers: packed A, packed B, and C unless sgemm writes the output. */
static void
plan_scratch(const struct ein_plan *p, int64_t *na, int64_t *nb, int64_t *nc)
{
	*na = p->count[EIN_BATCH] * p->count[EIN_M] * p->count[EIN_K];
	*nb = p->count[EIN_BATCH] * p->count[EIN_K] * p->count[EIN_N];
	*nc = p->direct ? 0 : p->count[EIN_BATCH] * p->count[EIN_M] * p->count[EIN_N];
}

/* Scratch bytes of a two-operand Einsum: the packed operands and C (none for one operand). */
size_t
cpu_einsum_workspace(const struct cpu_node_ctx *c)
{
	struct ein_plan p;
	int64_t na, nb, nc;

	if (c->n->ninputs < 2 || plan_init(&p, c, NULL) < 0)
		return 0;
	plan_scratch(&p, &na, &nb, &nc);
	return (size_t)(na + nb + nc) * sizeof(float);
}

/* C's layout [batch, M, N] as label strides, for permuting it into the output. */
static void
c_strides(const struct ein_plan *p, int64_t *st)
{
	int64_t s = 1;

	for (int q = EIN_N; q >= EIN_BATCH; q--)
		for (int i = p->ncls[q] - 1; i >= 0; i--) {
			st[p->cls[q][i]] = s;
			s *= p->size[p->cls[q][i]];
		}
}

/* Two operands: pack, one sgemm per batch, then the output from C unless it is C. */
static int
einsum_pair(const struct cpu_node_ctx *c, const struct ein_plan *p)
{
	int64_t na, nb, nc, m = p->count[EIN_M], n = p->count[EIN_N], k = p->count[EIN_K];
	float *a = c->ws, *b, *cc;

	plan_scratch(p, &na, &nb, &nc);
	b = a + na;
	cc = p->direct ? cpu_out(c, 0) : b + nb;
	ein_pack(a, c, p, 0, EIN_M, EIN_K);
	ein_pack(b, c, p, 1, EIN_K, EIN_N);
	for (int64_t i = 0; i < p->count[EIN_BATCH] && m > 0 && n > 0; i++) {
		if (k == 0)
			memset(cc + i * m * n, 0, (size_t)(m * n) * sizeof(float));
		else
			cpu_sgemm(0, 0, m, n, k, 1.0f, a + i * m * k, k, b + i * k * n, n, 0.0f, cc + i * m * n, n);
	}
	if (!p->direct) {
		struct ein_axes keep = { 0 }, red = { 0 };
		int64_t st[GRAPH_EINSUM_IDS] = { 0 };
		int ids[GRAPH_MAX_DIMS];

		c_strides(p, st);
		for (int i = 0; i < p->d.rank[2]; i++)
			ids[i] = p->d.lab[2][i];
		axes_add(&keep, p, ids, p->d.rank[2], st);
		ein_gather(cpu_out(c, 0), cc, &keep, &red);
	}
	return 0;
}

/* EINSUM: one operand gathered (and summed) into the output, or two contracted. */
int
cpu_einsum_run(const struct cpu_node_ctx *c, char **cause)
{
	struct ein_plan p;

	if (plan_init(&p, c, cause) < 0)
		return -1;
	if (c->n->ninputs == 1) {
		struct ein_axes keep = { 0 }, red = { 0 };
		int ids[GRAPH_MAX_DIMS];

		for (int i = 0; i < p.d.rank[2]; i++)
			ids[i] = p.d.lab[2][i];
		axes_add(&keep, &p, ids, p.d.rank[2], p.st[0]);
		axes_summed(&red, &p, 0);
		ein_gather(cpu_out(c, 0), cpu_in(c, 0), &keep, &red);
		return 0;
	}
	if (c->ws == NULL && cpu_einsum_workspace(c) > 0)
		return cpu_fail(cause, "no workspace");
	return einsum_pair(c, &p);
}
