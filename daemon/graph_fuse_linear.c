/* graph_fuse_linear.c: fusions into Conv/Gemm/MatMul: BatchNorm folding, bias, residual and activation. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_fuse_impl.h"

/* Whether t is a 1-D FP32 constant of m elements. */
static int
lin_vector(const struct fuse_ctx *c, int t, int64_t m)
{
	return fuse_is_const_f32(c, t) && c->g->tensors[t].ndims == 1 && c->g->tensors[t].dims[0] == m;
}

/* The conv node feeding BatchNorm b alone, with constant weights and a bias fit to fold; -1 if none. */
static int
bn_conv(const struct fuse_ctx *c, int b, int64_t *m)
{
	const struct graph_node *bn = &c->g->nodes[b], *conv;
	int n, k;

	if (bn->op != GRAPH_OP_BATCHNORM || bn->ninputs != 5 || bn->inputs[0] < 0)
		return -1;
	for (k = 1; k < bn->noutputs; k++)
		if (bn->outputs[k] >= 0 && (c->uses[bn->outputs[k]] > 0 ||
		    (c->g->tensors[bn->outputs[k]].flags & GRAPH_TENSOR_OUTPUT)))
			return -1;
	n = c->producer[bn->inputs[0]];
	if (n < 0 || fuse_consumer(c, bn->inputs[0]) != b)
		return -1;
	conv = &c->g->nodes[n];
	if (conv->op != GRAPH_OP_CONV || conv->act != GRAPH_UNARY_NONE || conv->ninputs < 2 ||
	    conv->ninputs > 3 || conv->noutputs != 1 || !fuse_is_const_f32(c, conv->inputs[1]) ||
	    c->g->tensors[conv->inputs[1]].ndims < 3 || (*m = c->g->tensors[conv->inputs[1]].dims[0]) < 1)
		return -1;
	if (conv->ninputs == 3 && conv->inputs[2] >= 0 && !lin_vector(c, conv->inputs[2], *m))
		return -1;
	for (k = 1; k < 5; k++)
		if (!lin_vector(c, bn->inputs[k], *m))
			return -1;
	return n;
}

/* Fold BatchNorm b into the conv n before it: W' = W s, B' = (B - mean) s + beta, s = scale / sqrt(var + eps). */
static int
bn_fold(struct fuse_ctx *c, int n, int b, int64_t m, char **cause)
{
	const struct graph_node *bn = &c->g->nodes[b], *conv = &c->g->nodes[n];
	const struct graph_tensor *wt = &c->g->tensors[conv->inputs[1]];
	const float *w = wt->data, *sc = c->g->tensors[bn->inputs[1]].data;
	const float *be = c->g->tensors[bn->inputs[2]].data, *mu = c->g->tensors[bn->inputs[3]].data;
	const float *var = c->g->tensors[bn->inputs[4]].data, *old = NULL;
	size_t per = fuse_const_elems(c, conv->inputs[1]) / (size_t)m, i, j;
	int64_t wdims[GRAPH_MAX_DIMS];
	int wrank = wt->ndims, wi, bi;
	float *nw, *nb;
	double s;

	if (conv->ninputs == 3 && conv->inputs[2] >= 0)
		old = c->g->tensors[conv->inputs[2]].data;
	nw = xmalloc(wt->nbytes);
	nb = xmalloc((size_t)m * sizeof *nb);
	if (nw == NULL || nb == NULL) {
		free(nw);
		free(nb);
		return error_set(cause, "graph fusion: out of memory");
	}
	for (i = 0; i < (size_t)m; i++) {
		s = sc[i] / sqrt((double)var[i] + bn->attr.norm.eps);
		for (j = 0; j < per; j++)
			nw[i * per + j] = (float)(w[i * per + j] * s);
		nb[i] = (float)(((old != NULL ? old[i] : 0.0) - mu[i]) * s + be[i]);
	}
	memcpy(wdims, wt->dims, sizeof wdims);	/* adding a tensor moves wt */
	if ((wi = fuse_add_const(c, conv->name, ":bn_weight", wrank, wdims, nw, cause)) < 0) {
		free(nb);
		return -1;
	}
	if ((bi = fuse_add_const(c, conv->name, ":bn_bias", 1, &m, nb, cause)) < 0 ||
	    fuse_set_input(c, n, 1, wi, cause) < 0 || fuse_set_input(c, n, 2, bi, cause) < 0)
		return -1;
	fuse_replace(c, n, b);
	return 0;
}

/* Fold every BatchNorm that follows a Conv. */
int
fuse_pass_batchnorm(struct fuse_ctx *c, char **cause)
{
	size_t b;
	int64_t m;
	int n;

	for (b = 0; b < c->g->nnodes; b++)
		if (!c->dead[b] && (n = bn_conv(c, (int)b, &m)) >= 0 && bn_fold(c, n, (int)b, m, cause) < 0)
			return -1;
	return 0;
}

/* Output channels of linear node n and the channel axis's place from the end (rank in *rank, 0 if unknown). */
static int64_t
lin_channels(const struct fuse_ctx *c, int n, int *from_end, int *rank)
{
	const struct graph_node *node = &c->g->nodes[n];
	const struct graph_tensor *w;

	if (node->ninputs < 2 || node->inputs[1] < 0 || node->noutputs != 1)
		return -1;
	w = &c->g->tensors[node->inputs[1]];
	*rank = 0;
	*from_end = 0;
	if (node->op == GRAPH_OP_CONV && w->ndims >= 3 && node->ninputs <= 3) {
		*rank = w->ndims;
		*from_end = w->ndims - 2;
		return w->dims[0];
	}
	if (node->op == GRAPH_OP_GEMM && w->ndims == 2) {
		*rank = 2;
		return w->dims[node->attr.gemm.trans_b ? 0 : 1];
	}
	if (node->op == GRAPH_OP_MATMUL && w->ndims >= 2 && node->ninputs == 2) {
		if (fuse_probe_rank(c, 0, node->outputs[0]) == fuse_probe_rank(c, 1, node->outputs[0]))
			*rank = fuse_probe_rank(c, 0, node->outputs[0]) > 0 ?
			    fuse_probe_rank(c, 0, node->outputs[0]) : 0;
		return w->dims[w->ndims - 1];
	}
	return -1;
}

/* Whether constant k broadcasts as a per-channel bias: all dims 1 but the channel one (1 or m). */
static int
lin_bias_shape(const struct fuse_ctx *c, int k, int64_t m, int from_end, int rank)
{
	const struct graph_tensor *t = &c->g->tensors[k];
	int j, e;

	if (!fuse_is_const_f32(c, k) || (rank > 0 && t->ndims > rank) || (rank == 0 && t->ndims > 1))
		return 0;
	for (j = 0; j < t->ndims; j++) {
		e = t->ndims - 1 - j;
		if (t->dims[j] != 1 && (e != from_end || t->dims[j] != m))
			return 0;
	}
	return 1;
}

/* The new bias of linear node n: its old bias (beta-scaled for Gemm) plus constant k broadcast. */
static float *
lin_bias_values(const struct fuse_ctx *c, int n, int k, int64_t m)
{
	const struct graph_node *node = &c->g->nodes[n];
	const float *add = c->g->tensors[k].data, *old = NULL;
	int per_channel = fuse_const_elems(c, k) == (size_t)m;
	double scale = node->op == GRAPH_OP_GEMM ? node->attr.gemm.beta : 1.0;
	float *b;
	int64_t i;

	if (node->ninputs >= 3 && node->inputs[2] >= 0)
		old = c->g->tensors[node->inputs[2]].data;
	if ((b = xmalloc((size_t)m * sizeof *b)) == NULL)
		return NULL;
	for (i = 0; i < m; i++)
		b[i] = (float)((old != NULL ? scale * old[i] : 0.0) + add[per_channel ? i : 0]);
	return b;
}

/* Match linear node n + Add(constant per-channel bias); the Add node, or -1. */
static int
lin_bias_match(const struct fuse_ctx *c, int n, int *k, int64_t *m)
{
	const struct graph_node *node = &c->g->nodes[n];
	int add, from_end, rank;

	if ((node->op != GRAPH_OP_CONV && node->op != GRAPH_OP_GEMM && node->op != GRAPH_OP_MATMUL) ||
	    node->act != GRAPH_UNARY_NONE || (*m = lin_channels(c, n, &from_end, &rank)) < 1)
		return -1;
	if (node->ninputs >= 3 && node->inputs[2] >= 0 && !lin_vector(c, node->inputs[2], *m))
		return -1;
	add = fuse_consumer(c, node->outputs[0]);
	if (!fuse_is_binary(c, add, GRAPH_BINARY_ADD) ||
	    (*k = fuse_other_input(c, add, node->outputs[0])) < 0 ||
	    !lin_bias_shape(c, *k, *m, from_end, rank))
		return -1;
	if (c->probe[0] != NULL && !fuse_same_shape(c, c->g->nodes[add].outputs[0], node->outputs[0]))
		return -1;
	return add;
}

/* Fold a constant Add after Conv/Gemm/MatMul into the node's bias. */
int
fuse_pass_bias(struct fuse_ctx *c, char **cause)
{
	size_t n;
	int64_t m;
	float *b;
	int add, k, t;

	for (n = 0; n < c->g->nnodes; n++) {
		if (c->dead[n] || (add = lin_bias_match(c, (int)n, &k, &m)) < 0)
			continue;
		if ((b = lin_bias_values(c, (int)n, k, m)) == NULL)
			return error_set(cause, "graph fusion: out of memory");
		if ((t = fuse_add_const(c, c->g->nodes[n].name, ":bias", 1, &m, b, cause)) < 0 ||
		    fuse_set_input(c, (int)n, 2, t, cause) < 0)
			return -1;
		if (c->g->nodes[n].op == GRAPH_OP_GEMM)
			c->g->nodes[n].attr.gemm.beta = 1.0f;
		fuse_replace(c, (int)n, add);
	}
	return 0;
}

/* Fold Add(conv, z) with z a computed tensor of the conv output's shape into the conv's Z input. */
int
fuse_pass_residual(struct fuse_ctx *c, char **cause)
{
	const struct graph_node *node;
	size_t n;
	int add, z;

	for (n = 0; n < c->g->nnodes; n++) {
		node = &c->g->nodes[n];
		if (c->dead[n] || node->op != GRAPH_OP_CONV || node->act != GRAPH_UNARY_NONE ||
		    node->ninputs > 3 || node->noutputs != 1)
			continue;
		add = fuse_consumer(c, node->outputs[0]);
		if (!fuse_is_binary(c, add, GRAPH_BINARY_ADD) ||
		    (z = fuse_other_input(c, add, node->outputs[0])) < 0 ||
		    (c->g->tensors[z].flags & GRAPH_TENSOR_CONST) ||
		    c->g->tensors[z].dtype != c->g->tensors[node->outputs[0]].dtype ||
		    !fuse_same_shape(c, z, node->outputs[0]) ||
		    !fuse_same_shape(c, c->g->nodes[add].outputs[0], node->outputs[0]))
			continue;
		if (fuse_set_input(c, (int)n, 3, z, cause) < 0)
			return -1;
		fuse_replace(c, (int)n, add);
	}
	return 0;
}

/* A computed (not constant) tensor of the dtype and shape of like. */
static int
lin_computed_like(const struct fuse_ctx *c, int t, int like)
{
	return t >= 0 && !(c->g->tensors[t].flags & GRAPH_TENSOR_CONST) &&
	    c->g->tensors[t].dtype == c->g->tensors[like].dtype && fuse_same_shape(c, t, like);
}

/*
 * Fold Add(a, b) of two computed tensors of one shape, read only by a
 * LayerNormalization, into the norm's residual input (it normalises a + b):
 * one pass over the activations fewer for every residual add of a post-norm
 * transformer such as BERT.  A pre-norm model (ViT) reads the sum again
 * later, so its adds stay.
 */
int
fuse_pass_residual_norm(struct fuse_ctx *c, char **cause)
{
	const struct graph_node *node, *add;
	size_t n;
	int a, b, in;

	for (n = 0; n < c->g->nnodes; n++) {
		node = &c->g->nodes[n];
		if (c->dead[n] || node->op != GRAPH_OP_LAYERNORM || node->ninputs > 3 || (in = node->inputs[0]) < 0 ||
		    !fuse_is_binary(c, c->producer[in], GRAPH_BINARY_ADD) || fuse_consumer(c, in) != (int)n)
			continue;
		add = &c->g->nodes[c->producer[in]];
		a = add->inputs[0];
		b = add->inputs[1];
		if (!lin_computed_like(c, a, in) || !lin_computed_like(c, b, in))
			continue;
		if (fuse_set_input(c, (int)n, 3, b, cause) < 0 || fuse_set_input(c, (int)n, 0, a, cause) < 0)
			return -1;
		fuse_kill(c, c->producer[in]);
		c->rewrites++;
	}
	return 0;
}

/* Whether a unary function may run as a fused activation. */
static int
lin_act_ok(enum graph_unary fn)
{
	switch (fn) {
	case GRAPH_UNARY_RELU: case GRAPH_UNARY_GELU: case GRAPH_UNARY_GELU_TANH:
	case GRAPH_UNARY_SIGMOID: case GRAPH_UNARY_TANH: case GRAPH_UNARY_LEAKY_RELU:
	case GRAPH_UNARY_CLIP: case GRAPH_UNARY_HARD_SIGMOID: case GRAPH_UNARY_HARD_SWISH:
		return 1;
	default:
		return 0;
	}
}

/* Fold an activation after Conv/Gemm/MatMul into the node's act. */
int
fuse_pass_act(struct fuse_ctx *c, char **cause)
{
	struct graph_node *node, *u;
	size_t n;
	int un;

	(void)cause;
	for (n = 0; n < c->g->nnodes; n++) {
		node = &c->g->nodes[n];
		if (c->dead[n] || (node->op != GRAPH_OP_CONV && node->op != GRAPH_OP_GEMM &&
		    node->op != GRAPH_OP_MATMUL) || node->act != GRAPH_UNARY_NONE || node->noutputs != 1)
			continue;
		if ((un = fuse_consumer(c, node->outputs[0])) < 0)
			continue;
		u = &c->g->nodes[un];
		if (u->op != GRAPH_OP_UNARY || u->ninputs != 1 || u->noutputs != 1 ||
		    !lin_act_ok(u->attr.unary.fn))
			continue;
		node->act = u->attr.unary.fn;
		node->act_alpha = u->attr.unary.alpha;
		node->act_beta = u->attr.unary.beta;
		fuse_replace(c, (int)n, un);
	}
	return 0;
}
