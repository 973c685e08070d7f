/* graph_fuse_attention.c: scaled dot-product attention as exporters write it, into one ATTENTION node. */
#include "config.h"

#include <string.h>

#include "error.h"
#include "graph_fuse_impl.h"

/*
 * The pattern (transformers' eager attention and hand-written layers, as
 * torch exports them):
 *
 *   S = MatMul(Q, Kt)             Kt: K already transposed, [..., D, Sk]
 *   S = Div(S, c) | Mul(S, c)     optional; c a scalar constant
 *   S = Add(S, mask)              optional; mask any tensor broadcasting to S
 *   P = Softmax(S, axis = -1)
 *   Y = MatMul(P, V)
 *
 * with no bias or activation fused onto either MatMul, every intermediate
 * read only by the next node, and Q, Kt, V of one rank with equal leading
 * dims under both probes (a MatMul that broadcasts its batch dims is left
 * alone).  The ATTENTION node takes Y's place.  When Kt is a Transpose's
 * output read only by the pattern, that Transpose is made to write K
 * ([..., Sk, D], its last two axes swapped back) and the node reads K
 * untransposed: the copy the unfused graph made anyway now gives the layout
 * fused kernels want (cuDNN's fused attention needs D contiguous), at no cost.
 *
 * The head transposes.  Exporters write a multi-head attention's Q, K and V
 * as a projection [..., S, H * D] reshaped to [..., S, H, D], then
 * transposed to [..., H, S, D] (K to [..., H, D, S]); the output goes back
 * through the same transpose before its reshape.  When all four transposes
 * are read only by the pattern (and the output only by its transpose), the
 * node reads the projections' layout and writes the output's (seq_major,
 * graph.h): the four copies become strides of the attention, as PyTorch's
 * views are.  Otherwise the node keeps the dense form above.
 */

/* The pattern's pieces, found walking back from the second MatMul. */
struct attn_match {
	int nodes[5], count;	/* the pattern's nodes; the last is the second MatMul */
	int q, kt, v, mask;
	double scale;
};

/* Whether node n is a MatMul without a bias or a fused activation. */
static int
attn_plain_matmul(const struct fuse_ctx *c, int n)
{
	const struct graph_node *node = &c->g->nodes[n];

	return node->op == GRAPH_OP_MATMUL && node->act == GRAPH_UNARY_NONE &&
	    (node->ninputs < 3 || node->inputs[2] < 0);
}

/* The producer of t when t is read only by the pattern's next node; -1 otherwise. */
static int
attn_step(const struct fuse_ctx *c, int t)
{
	return t >= 0 && fuse_single_use(c, t) ? c->producer[t] : -1;
}

/* Walk back from the scores tensor s (the softmax's input): an optional Add of a mask, an optional scale, the first MatMul. */
static int
attn_scores(const struct fuse_ctx *c, int s, struct attn_match *m)
{
	int n = attn_step(c, s), k;
	double v;

	if (n >= 0 && fuse_is_binary(c, n, GRAPH_BINARY_ADD)) {
		const struct graph_node *add = &c->g->nodes[n];

		for (k = 0; k < 2; k++) {
			int p = attn_step(c, add->inputs[k]);

			if (p >= 0 && (attn_plain_matmul(c, p) || fuse_is_binary(c, p, GRAPH_BINARY_DIV) ||
			    fuse_is_binary(c, p, GRAPH_BINARY_MUL)))
				break;
		}
		if (k == 2)
			return -1;
		m->mask = add->inputs[1 - k];
		m->nodes[m->count++] = n;
		n = attn_step(c, add->inputs[k]);
	}
	if (n >= 0 && (fuse_is_binary(c, n, GRAPH_BINARY_DIV) || fuse_is_binary(c, n, GRAPH_BINARY_MUL))) {
		const struct graph_node *op = &c->g->nodes[n];
		int div = op->attr.binary.fn == GRAPH_BINARY_DIV;

		for (k = div ? 1 : 0; k < 2; k++)
			if (fuse_scalar(c, op->inputs[k], op->inputs[1 - k], &v) && v != 0.0)
				break;
		if (k == 2)
			return -1;
		m->scale = div ? 1.0 / v : v;
		m->nodes[m->count++] = n;
		n = attn_step(c, op->inputs[1 - k]);
	}
	if (n < 0 || !attn_plain_matmul(c, n))
		return -1;
	m->q = c->g->nodes[n].inputs[0];
	m->kt = c->g->nodes[n].inputs[1];
	m->nodes[m->count++] = n;
	return 0;
}

/* Under probe p: Q, Kt, V of one rank >= 2, equal leading dims, Kt's depth Q's, V's rows Kt's columns. */
static int
attn_shapes_fit(const struct fuse_ctx *c, int p, const struct attn_match *m)
{
	const struct graph_shape *q = &c->probe[p][m->q], *k = &c->probe[p][m->kt], *v = &c->probe[p][m->v];
	int r = q->ndims, i;

	if (r < 2 || k->ndims != r || v->ndims != r)
		return 0;
	for (i = 0; i < r - 2; i++)
		if (k->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
			return 0;
	return k->dims[r - 2] == q->dims[r - 1] && v->dims[r - 2] == k->dims[r - 1];
}

/* Match the pattern ending at MatMul n (Y = MatMul(P, V)); 1 when it does. */
static int
attn_match_at(const struct fuse_ctx *c, int n, struct attn_match *m)
{
	const struct graph_node *mm = &c->g->nodes[n];
	int sm, p;

	memset(m, 0, sizeof *m);
	m->mask = -1;
	m->scale = 1.0;
	if (c->probe[0] == NULL || !attn_plain_matmul(c, n) || (sm = attn_step(c, mm->inputs[0])) < 0)
		return 0;
	if (c->g->nodes[sm].op != GRAPH_OP_SOFTMAX || c->g->nodes[sm].attr.softmax.log)
		return 0;
	for (p = 0; p < 2; p++) {
		int64_t ax = c->g->nodes[sm].attr.softmax.axis, r = c->probe[p][mm->inputs[0]].ndims;

		if (ax != -1 && ax != r - 1)
			return 0;
	}
	m->nodes[m->count++] = sm;
	m->v = mm->inputs[1];
	if (attn_scores(c, c->g->nodes[sm].inputs[0], m) != 0)
		return 0;
	m->nodes[m->count++] = n;
	return attn_shapes_fit(c, 0, m) && attn_shapes_fit(c, 1, m);
}

/* The head transposes around a match: their inputs (the node's seq-major inputs) and the four Transpose nodes. */
struct attn_heads {
	int q, k, v;		/* Q, K, V as [..., S, H, D] */
	int nodes[4];		/* the Transposes of Q, K, V and of the output */
};

/* Whether x is a Transpose of rank r keeping every axis but the last three, which it takes in the order tail. */
static int
attn_perm_tail(const struct graph_node *x, int r, const int tail[3])
{
	int i;

	if (x->op != GRAPH_OP_TRANSPOSE || r < 3 || x->attr.transpose.nperm != r || x->ninputs < 1 || x->noutputs != 1)
		return 0;
	for (i = 0; i < r; i++)
		if (x->attr.transpose.perm[i] != (i < r - 3 ? i : r - 3 + tail[i - (r - 3)]))
			return 0;
	return 1;
}

/* When t is written by a Transpose read only by the pattern whose last three axes come in the order tail: that Transpose. */
static int
attn_transpose_tail(const struct fuse_ctx *c, int t, const int tail[3])
{
	int n = attn_step(c, t), r = c->probe[0][t].ndims;

	if (n < 0 || c->dead[n] || c->probe[1][t].ndims != r || !attn_perm_tail(&c->g->nodes[n], r, tail))
		return -1;
	return n;
}

/*
 * Whether the match at MatMul n sits between head transposes: Q and V from [..., S, H, D] (perm tail 1 0 2), K^T
 * from [..., Sk, H, D] to [..., H, D, Sk] in one Transpose (tail 1 2 0; torch's exporter folds the head transpose and
 * K's into one), and the output read only by a transpose back (tail 1 0 2).  Fills h when so.
 */
static int
attn_find_heads(const struct fuse_ctx *c, int n, const struct attn_match *m, struct attn_heads *h)
{
	static const int swap[3] = { 1, 0, 2 }, kt[3] = { 1, 2, 0 };
	int y = c->g->nodes[n].outputs[0], t;

	if (y < 0 || (t = fuse_consumer(c, y)) < 0)
		return 0;
	if (c->probe[1][y].ndims != c->probe[0][y].ndims || !attn_perm_tail(&c->g->nodes[t], c->probe[0][y].ndims, swap))
		return 0;
	h->nodes[0] = attn_transpose_tail(c, m->q, swap);
	h->nodes[1] = attn_transpose_tail(c, m->kt, kt);
	h->nodes[2] = attn_transpose_tail(c, m->v, swap);
	h->nodes[3] = t;
	if (h->nodes[0] < 0 || h->nodes[1] < 0 || h->nodes[2] < 0 || h->nodes[1] == h->nodes[0] ||
	    h->nodes[2] == h->nodes[0] || h->nodes[2] == h->nodes[1])
		return 0;
	h->q = c->g->nodes[h->nodes[0]].inputs[0];
	h->k = c->g->nodes[h->nodes[1]].inputs[0];
	h->v = c->g->nodes[h->nodes[2]].inputs[0];
	return h->q >= 0 && h->k >= 0 && h->v >= 0;
}

/* Whether the backend runs the ATTENTION node the match would make (seq-major with h, else dense with K^T). */
static int
attn_supported(const struct fuse_ctx *c, int n, const struct attn_match *m, const struct attn_heads *h)
{
	struct graph_node node = c->g->nodes[n];
	int in[4] = { h ? h->q : m->q, h ? h->k : m->kt, h ? h->v : m->v, m->mask }, out[1];

	if (c->supports == NULL)
		return 1;
	node.op = GRAPH_OP_ATTENTION;
	node.inputs = in;
	node.ninputs = m->mask >= 0 ? 4 : 3;
	node.act = GRAPH_UNARY_NONE;
	memset(&node.attr, 0, sizeof node.attr);
	node.attr.attention.scale = (float)m->scale;
	node.attr.attention.k_transposed = h == NULL;
	node.attr.attention.seq_major = h != NULL;
	if (h != NULL) {
		out[0] = c->g->nodes[h->nodes[3]].outputs[0];
		node.outputs = out;
		node.noutputs = 1;
	}
	return c->supports(c->supports_arg, c->g, &node);
}

/* Swap the last two dims of a shape (rank >= 2). */
static void
attn_swap_last(int64_t *dims, int r)
{
	int64_t x = dims[r - 2];

	dims[r - 2] = dims[r - 1];
	dims[r - 1] = x;
}

/* When Kt is a Transpose's output read only by the pattern, make it write K instead: 0 when done (not transposed), else 1. */
static int
attn_untranspose_k(struct fuse_ctx *c, int kt)
{
	int n = attn_step(c, kt), r = c->probe[0][kt].ndims, i;
	struct graph_node *t;

	if (n < 0 || c->dead[n] || c->g->nodes[n].op != GRAPH_OP_TRANSPOSE || r < 2 || c->probe[1][kt].ndims != r)
		return 1;
	t = &c->g->nodes[n];
	if (t->attr.transpose.nperm == 0) {	/* ONNX's default: the axes reversed */
		for (i = 0; i < r; i++)
			t->attr.transpose.perm[i] = r - 1 - i;
		t->attr.transpose.nperm = r;
	}
	if (t->attr.transpose.nperm != r)
		return 1;
	attn_swap_last(t->attr.transpose.perm, r);
	attn_swap_last(c->probe[0][kt].dims, r);
	attn_swap_last(c->probe[1][kt].dims, r);
	if (c->g->tensors[kt].ndims == r)
		attn_swap_last(c->g->tensors[kt].dims, r);
	return 0;
}

/* Rebuild MatMul n as the seq-major ATTENTION reading the head transposes' inputs, in the output transpose's slot. */
static int
attn_fuse_heads(struct fuse_ctx *c, int n, const struct attn_match *m, const struct attn_heads *h, char **cause)
{
	int in[4] = { h->q, h->k, h->v, m->mask }, k;

	if (fuse_rebuild(c, n, GRAPH_OP_ATTENTION, in, m->mask >= 0 ? 4 : 3, cause) < 0)
		return -1;
	c->g->nodes[n].attr.attention.scale = (float)m->scale;
	c->g->nodes[n].attr.attention.seq_major = 1;
	for (k = 0; k < m->count; k++)
		if (m->nodes[k] != n)
			fuse_kill(c, m->nodes[k]);
	for (k = 0; k < 3; k++)
		fuse_kill(c, h->nodes[k]);
	fuse_replace(c, n, h->nodes[3]);	/* writes the transposed output: [..., Sq, H, Dv] */
	return 0;
}

/* Fuse every attention the backend can run. */
int
fuse_pass_attention(struct fuse_ctx *c, char **cause)
{
	struct attn_match m;
	struct attn_heads h;
	size_t n;
	int k;

	for (n = 0; n < c->g->nnodes; n++) {
		int in[4], kt;

		if (c->dead[n] || !attn_match_at(c, (int)n, &m))
			continue;
		if (attn_find_heads(c, (int)n, &m, &h) && attn_supported(c, (int)n, &m, &h)) {
			if (attn_fuse_heads(c, (int)n, &m, &h, cause) < 0)
				return -1;
			continue;
		}
		if (!attn_supported(c, (int)n, &m, NULL))
			continue;
		in[0] = m.q;
		in[1] = m.kt;
		in[2] = m.v;
		in[3] = m.mask;
		kt = attn_untranspose_k(c, m.kt);
		if (fuse_rebuild(c, (int)n, GRAPH_OP_ATTENTION, in, m.mask >= 0 ? 4 : 3, cause) < 0)
			return -1;
		c->g->nodes[n].attr.attention.scale = (float)m.scale;
		c->g->nodes[n].attr.attention.k_transposed = kt;
		for (k = 0; k < m.count; k++)
			if (m.nodes[k] != (int)n)
				fuse_kill(c, m.nodes[k]);
	}
	return 0;
}
