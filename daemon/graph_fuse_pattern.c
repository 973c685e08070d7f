/* graph_fuse_pattern.c: decomposed GELU, HardSwish and LayerNorm subgraphs, as exported by torch, into one node each. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_fuse_impl.h"

/* Remove every pattern node but the tail. */
static void
fuse_kill_all(struct fuse_ctx *c, const int *nodes, int count, int tail)
{
	int k;

	for (k = 0; k < count; k++)
		if (nodes[k] != tail)
			fuse_kill(c, nodes[k]);
}

/* Whether n is BINARY fn with a scalar constant close to want on either side; the other input to *x. */
static int
fuse_by_const(const struct fuse_ctx *c, int n, enum graph_binary fn, double want, int *x)
{
	const struct graph_node *node;
	double v;
	int k;

	if (!fuse_is_binary(c, n, fn))
		return 0;
	node = &c->g->nodes[n];
	for (k = 0; k < 2; k++)
		if (fuse_scalar(c, node->inputs[k], node->inputs[1 - k], &v) && fuse_close(v, want) &&
		    (k == 1 || fn == GRAPH_BINARY_MUL || fn == GRAPH_BINARY_ADD)) {
			*x = node->inputs[1 - k];
			return 1;
		}
	return 0;
}

/* The x in erf's argument x / sqrt 2 or x * (1 / sqrt 2); -1 when it is neither. */
static int
gelu_erf_arg(const struct fuse_ctx *c, int t, int *node)
{
	int n = t >= 0 ? c->producer[t] : -1, x;

	if (!fuse_single_use(c, t) || n < 0)
		return -1;
	*node = n;
	if (fuse_by_const(c, n, GRAPH_BINARY_DIV, sqrt(2.0), &x) ||
	    fuse_by_const(c, n, GRAPH_BINARY_MUL, 1.0 / sqrt(2.0), &x))
		return x;
	return -1;
}

/* From 1 + erf (tensor a) to the node writing x * 0.5 * a in any association; -1 when absent. */
static int
gelu_tail(const struct fuse_ctx *c, int a, int x, int *nodes, int *count)
{
	int m = fuse_consumer(c, a), m2, o, y, h;

	if (!fuse_is_binary(c, m, GRAPH_BINARY_MUL))
		return -1;
	nodes[(*count)++] = m;
	o = fuse_other_input(c, m, a);
	if (o == x) {		/* (x * a) * 0.5 */
		m2 = fuse_consumer(c, c->g->nodes[m].outputs[0]);
		if (fuse_by_const(c, m2, GRAPH_BINARY_MUL, 0.5, &y))
			return nodes[(*count)++] = m2;
		return -1;
	}
	if (fuse_by_const(c, m, GRAPH_BINARY_MUL, 0.5, &y)) {	/* x * (a * 0.5) */
		m2 = fuse_consumer(c, c->g->nodes[m].outputs[0]);
		if (fuse_is_binary(c, m2, GRAPH_BINARY_MUL) &&
		    fuse_other_input(c, m2, c->g->nodes[m].outputs[0]) == x)
			return nodes[(*count)++] = m2;
		return -1;
	}
	h = o >= 0 ? c->producer[o] : -1;	/* (x * 0.5) * a */
	if (fuse_single_use(c, o) && fuse_by_const(c, h, GRAPH_BINARY_MUL, 0.5, &y) && y == x) {
		nodes[(*count)++] = h;
		return m;
	}
	return -1;
}

/* Match the exact GELU around erf node e and rewrite it; 0 when it does not match. */
static int
gelu_match(struct fuse_ctx *c, int e, char **cause)
{
	const struct graph_node *erf = &c->g->nodes[e];
	int nodes[FUSE_MAX_PATTERN], count = 0, x, a, one, tail, s;

	if (erf->op != GRAPH_OP_UNARY || erf->attr.unary.fn != GRAPH_UNARY_ERF || erf->ninputs != 1 ||
	    erf->noutputs != 1)
		return 0;
	if ((x = gelu_erf_arg(c, erf->inputs[0], &s)) < 0)
		return 0;
	nodes[count++] = s;
	nodes[count++] = e;
	a = fuse_consumer(c, erf->outputs[0]);
	if (!fuse_by_const(c, a, GRAPH_BINARY_ADD, 1.0, &one) || one != erf->outputs[0])
		return 0;
	nodes[count++] = a;
	if ((tail = gelu_tail(c, c->g->nodes[a].outputs[0], x, nodes, &count)) < 0)
		return 0;
	if (fuse_rebuild(c, tail, GRAPH_OP_UNARY, &x, 1, cause) < 0)
		return -1;
	c->g->nodes[tail].attr.unary.fn = GRAPH_UNARY_GELU;
	fuse_kill_all(c, nodes, count, tail);
	return 1;
}

/* The x of x^3 written to t: Pow(x, 3), x * (x * x) or (x * x) * x; -1 when t is none of them. */
static int
gelu_cube(const struct fuse_ctx *c, int t, int *nodes, int *count)
{
	const struct graph_node *node, *sq;
	int n = t >= 0 ? c->producer[t] : -1, x, k, p;

	if (!fuse_single_use(c, t) || n < 0)
		return -1;
	node = &c->g->nodes[n];
	if (fuse_by_const(c, n, GRAPH_BINARY_POW, 3.0, &x) && node->inputs[0] == x) {
		nodes[(*count)++] = n;
		return x;
	}
	if (!fuse_is_binary(c, n, GRAPH_BINARY_MUL))
		return -1;
	for (k = 0; k < 2; k++) {
		x = node->inputs[1 - k];
		p = node->inputs[k] >= 0 ? c->producer[node->inputs[k]] : -1;
		if (!fuse_single_use(c, node->inputs[k]) || !fuse_is_binary(c, p, GRAPH_BINARY_MUL))
			continue;
		sq = &c->g->nodes[p];
		if (sq->inputs[0] == x && sq->inputs[1] == x) {
			nodes[(*count)++] = n;
			nodes[(*count)++] = p;
			return x;
		}
	}
	return -1;
}

/* The x in tanh's argument sqrt(2 / pi) (x + 0.044715 x^3); -1 when t is not that. */
static int
gelu_tanh_arg(const struct fuse_ctx *c, int t, int *nodes, int *count)
{
	int pu = t >= 0 ? c->producer[t] : -1, v, pv, w, pw, cube, k, x, start = *count;

	if (!fuse_single_use(c, t) || !fuse_by_const(c, pu, GRAPH_BINARY_MUL, sqrt(2.0 / M_PI), &v) ||
	    !fuse_single_use(c, v) || !fuse_is_binary(c, pv = c->producer[v], GRAPH_BINARY_ADD))
		return -1;
	for (k = 0; k < 2; k++) {
		w = c->g->nodes[pv].inputs[k];
		x = c->g->nodes[pv].inputs[1 - k];
		pw = w >= 0 ? c->producer[w] : -1;
		if (!fuse_single_use(c, w) || !fuse_by_const(c, pw, GRAPH_BINARY_MUL, 0.044715, &cube))
			continue;
		if (gelu_cube(c, cube, nodes, count) == x) {
			nodes[(*count)++] = pu;
			nodes[(*count)++] = pv;
			nodes[(*count)++] = pw;
			return x;
		}
		*count = start;
	}
	return -1;
}

/* Match the tanh-approximated GELU around tanh node e and rewrite it; 0 when it does not match. */
static int
gelu_tanh_match(struct fuse_ctx *c, int e, char **cause)
{
	const struct graph_node *th = &c->g->nodes[e];
	int nodes[FUSE_MAX_PATTERN], count = 0, x, a, one, tail;

	if (th->op != GRAPH_OP_UNARY || th->attr.unary.fn != GRAPH_UNARY_TANH || th->ninputs != 1 ||
	    th->noutputs != 1 || (x = gelu_tanh_arg(c, th->inputs[0], nodes, &count)) < 0)
		return 0;
	nodes[count++] = e;
	a = fuse_consumer(c, th->outputs[0]);
	if (!fuse_by_const(c, a, GRAPH_BINARY_ADD, 1.0, &one) || one != th->outputs[0])
		return 0;
	nodes[count++] = a;
	if ((tail = gelu_tail(c, c->g->nodes[a].outputs[0], x, nodes, &count)) < 0)
		return 0;
	if (fuse_rebuild(c, tail, GRAPH_OP_UNARY, &x, 1, cause) < 0)
		return -1;
	c->g->nodes[tail].attr.unary.fn = GRAPH_UNARY_GELU_TANH;
	fuse_kill_all(c, nodes, count, tail);
	return 1;
}

/* Fuse every decomposed GELU, exact or tanh-approximated. */
int
fuse_pass_gelu(struct fuse_ctx *c, char **cause)
{
	size_t n;

	for (n = 0; n < c->g->nnodes; n++)
		if (!c->dead[n] && (gelu_match(c, (int)n, cause) < 0 ||
		    (!c->dead[n] && gelu_tanh_match(c, (int)n, cause) < 0)))
			return -1;
	return 0;
}

/*
 * x * HardSigmoid(x) with alpha 1/6, beta 1/2 (torch's HardSwish below opset
 * 14) into one HardSwish node at the Mul: the pass after this one folds it
 * into the Conv before it, where the two nodes kept x alive for a second read.
 */
static int
hardswish_match(struct fuse_ctx *c, int m, char **cause)
{
	const struct graph_node *node = &c->g->nodes[m], *h;
	int k, t, x, hn;

	if (!fuse_is_binary(c, m, GRAPH_BINARY_MUL))
		return 0;
	for (k = 0; k < 2; k++) {
		t = node->inputs[k];
		hn = t >= 0 ? c->producer[t] : -1;
		if (hn < 0 || !fuse_single_use(c, t))
			continue;
		h = &c->g->nodes[hn];
		x = node->inputs[1 - k];
		if (h->op != GRAPH_OP_UNARY || h->attr.unary.fn != GRAPH_UNARY_HARD_SIGMOID ||
		    h->act != GRAPH_UNARY_NONE || h->ninputs != 1 || h->inputs[0] != x || x < 0 ||
		    !fuse_close(h->attr.unary.alpha, 1.0 / 6.0) || !fuse_close(h->attr.unary.beta, 0.5))
			continue;
		fuse_kill(c, hn);
		if (fuse_rebuild(c, m, GRAPH_OP_UNARY, &x, 1, cause) < 0)
			return -1;
		c->g->nodes[m].attr.unary.fn = GRAPH_UNARY_HARD_SWISH;
		return 1;
	}
	return 0;
}

/* Fuse every decomposed HardSwish. */
int
fuse_pass_hardswish(struct fuse_ctx *c, char **cause)
{
	size_t n;

	for (n = 0; n < c->g->nnodes; n++)
		if (!c->dead[n] && hardswish_match(c, (int)n, cause) < 0)
			return -1;
	return 0;
}

/* Whether node n is a keepdims ReduceMean of its input over its last axis only. */
static int
ln_mean_last(const struct fuse_ctx *c, int n)
{
	const struct graph_node *node;
	int p;

	if (n < 0 || c->dead[n])
		return 0;
	node = &c->g->nodes[n];
	if (node->op != GRAPH_OP_REDUCE || node->attr.reduce.kind != GRAPH_REDUCE_MEAN ||
	    !node->attr.reduce.keepdims || node->attr.reduce.naxes != 1 || node->ninputs < 1 ||
	    node->noutputs != 1)
		return 0;
	if (node->attr.reduce.axes[0] == -1)
		return 1;
	for (p = 0; p < 2; p++)
		if (fuse_probe_rank(c, p, node->inputs[0]) < 1 ||
		    node->attr.reduce.axes[0] != fuse_probe_rank(c, p, node->inputs[0]) - 1)
			return 0;
	return 1;
}

/* The node squaring d (Pow(d, 2) or Mul(d, d)) among d's two readers, the other being div; -1 if none. */
static int
ln_square(const struct fuse_ctx *c, int d, int *div)
{
	const struct graph_node *a;
	int readers[2], k, x;

	if ((c->g->tensors[d].flags & GRAPH_TENSOR_OUTPUT) || fuse_consumers(c, d, readers, 2) != 2)
		return -1;
	for (k = 0; k < 2; k++) {
		a = &c->g->nodes[readers[k]];
		*div = readers[1 - k];
		if (!fuse_is_binary(c, *div, GRAPH_BINARY_DIV) || c->g->nodes[*div].inputs[0] != d ||
		    c->g->nodes[*div].inputs[1] == d)
			continue;
		if (fuse_by_const(c, readers[k], GRAPH_BINARY_POW, 2.0, &x) && x == d &&
		    a->inputs[0] == d && c->uses[d] == 2)
			return readers[k];
		if (fuse_is_binary(c, readers[k], GRAPH_BINARY_MUL) && a->inputs[0] == d &&
		    a->inputs[1] == d && c->uses[d] == 3)
			return readers[k];
	}
	return -1;
}

/* The node after tensor t when it is BINARY fn with a 1-D FP32 constant of width elements; -1 if not. */
static int
ln_affine(const struct fuse_ctx *c, int t, enum graph_binary fn, int64_t width, int *param)
{
	int n = fuse_consumer(c, t);

	if (!fuse_is_binary(c, n, fn))
		return -1;
	*param = fuse_other_input(c, n, t);
	if (!fuse_is_const_f32(c, *param) || c->g->tensors[*param].ndims != 1)
		return -1;
	if (width >= 0 ? c->g->tensors[*param].dims[0] != width : c->g->tensors[*param].dims[0] < 2)
		return -1;
	return n;
}

/* Width of x's last axis when both probes agree, else -1. */
static int64_t
ln_width(const struct fuse_ctx *c, int x)
{
	int r0 = fuse_probe_rank(c, 0, x), r1 = fuse_probe_rank(c, 1, x);

	if (r0 < 1 || r1 < 1 || c->probe[0][x].dims[r0 - 1] != c->probe[1][x].dims[r1 - 1])
		return -1;
	return c->probe[0][x].dims[r0 - 1];
}

/* Follow mean -> sub -> square -> mean -> + eps -> sqrt -> div from ReduceMean r1; the div, or -1. */
static int
ln_core(const struct fuse_ctx *c, int r1, int *nodes, int *count, double *eps)
{
	const struct graph_node *r = &c->g->nodes[r1];
	int x = r->inputs[0], sub, d, sq, div, r2, add, sqr, t;

	sub = fuse_consumer(c, r->outputs[0]);
	if (!fuse_is_binary(c, sub, GRAPH_BINARY_SUB) || c->g->nodes[sub].inputs[0] != x ||
	    c->g->nodes[sub].inputs[1] != r->outputs[0])
		return -1;
	d = c->g->nodes[sub].outputs[0];
	if ((sq = ln_square(c, d, &div)) < 0)
		return -1;
	r2 = fuse_consumer(c, c->g->nodes[sq].outputs[0]);
	if (!ln_mean_last(c, r2) || c->g->nodes[r2].inputs[0] != c->g->nodes[sq].outputs[0])
		return -1;
	add = fuse_consumer(c, c->g->nodes[r2].outputs[0]);
	if (!fuse_is_binary(c, add, GRAPH_BINARY_ADD) ||
	    (t = fuse_other_input(c, add, c->g->nodes[r2].outputs[0])) < 0 ||
	    !fuse_scalar(c, t, c->g->nodes[r2].outputs[0], eps) || !(*eps >= 0))
		return -1;
	sqr = fuse_consumer(c, c->g->nodes[add].outputs[0]);
	if (sqr < 0 || c->g->nodes[sqr].op != GRAPH_OP_UNARY ||
	    c->g->nodes[sqr].attr.unary.fn != GRAPH_UNARY_SQRT ||
	    fuse_consumer(c, c->g->nodes[sqr].outputs[0]) != div ||
	    c->g->nodes[div].inputs[1] != c->g->nodes[sqr].outputs[0])
		return -1;
	nodes[(*count)++] = r1;
	nodes[(*count)++] = sub;
	nodes[(*count)++] = sq;
	nodes[(*count)++] = r2;
	nodes[(*count)++] = add;
	nodes[(*count)++] = sqr;
	nodes[(*count)++] = div;
	return div;
}

/* Match a decomposed LayerNorm starting at ReduceMean r1 and rewrite it; 0 when it does not match. */
static int
ln_match(struct fuse_ctx *c, int r1, char **cause)
{
	int nodes[FUSE_MAX_PATTERN], count = 0, in[3] = { -1, -1, -1 }, nin = 1;
	int tail, n;
	int64_t width;
	double eps;

	if (!ln_mean_last(c, r1) || (tail = ln_core(c, r1, nodes, &count, &eps)) < 0)
		return 0;
	in[0] = c->g->nodes[r1].inputs[0];
	width = ln_width(c, in[0]);
	if ((n = ln_affine(c, c->g->nodes[tail].outputs[0], GRAPH_BINARY_MUL, width, &in[1])) >= 0) {
		nodes[count++] = tail = n;
		nin = 2;
		width = c->g->tensors[in[1]].dims[0];
		n = ln_affine(c, c->g->nodes[tail].outputs[0], GRAPH_BINARY_ADD, width, &in[2]);
		if (n >= 0) {
			nodes[count++] = tail = n;
			nin = 3;
		}
	}
	if (fuse_rebuild(c, tail, GRAPH_OP_LAYERNORM, in, nin, cause) < 0)
		return -1;
	c->g->nodes[tail].attr.norm.axis = -1;
	c->g->nodes[tail].attr.norm.eps = (float)eps;
	fuse_kill_all(c, nodes, count, tail);
	return 1;
}

/* Fuse every decomposed LayerNorm. */
int
fuse_pass_layernorm(struct fuse_ctx *c, char **cause)
{
	size_t n;

	for (n = 0; n < c->g->nnodes; n++)
		if (!c->dead[n] && ln_match(c, (int)n, cause) < 0)
			return -1;
	return 0;
}
