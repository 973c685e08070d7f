/* graph_fuse_query.c: the questions fusion passes ask about tensors and nodes (constants, uses, shapes). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "graph_fuse_impl.h"

/* Whether t is a constant FP32 tensor with host data of a consistent length. */
int
fuse_is_const_f32(const struct fuse_ctx *c, int t)
{
	const struct graph_tensor *x;
	size_t elems = 1;
	int k;

	if (t < 0 || (size_t)t >= c->g->ntensors)
		return 0;
	x = &c->g->tensors[t];
	if (!(x->flags & GRAPH_TENSOR_CONST) || x->dtype != GRAPH_DT_F32 || x->data == NULL ||
	    x->ndims < 0)
		return 0;
	for (k = 0; k < x->ndims; k++) {
		if (x->dims[k] < 0)
			return 0;
		elems *= (size_t)x->dims[k];
	}
	return x->nbytes == elems * sizeof(float);
}

/* Elements of constant t. */
size_t
fuse_const_elems(const struct fuse_ctx *c, int t)
{
	return c->g->tensors[t].nbytes / sizeof(float);
}

/* Rank of t in probe p, or -1. */
int
fuse_probe_rank(const struct fuse_ctx *c, int p, int t)
{
	if (c->probe[0] == NULL || t < 0)
		return -1;
	return c->probe[p][t].ndims;
}

/* A one-element constant that cannot change x's shape by broadcasting. */
int
fuse_scalar(const struct fuse_ctx *c, int t, int x, double *v)
{
	const struct graph_tensor *s;
	int p;

	if (!fuse_is_const_f32(c, t) || fuse_const_elems(c, t) != 1)
		return 0;
	s = &c->g->tensors[t];
	if (s->ndims > 0) {
		if (c->probe[0] == NULL)
			return 0;
		for (p = 0; p < 2; p++)
			if (s->ndims > fuse_probe_rank(c, p, x))
				return 0;
	}
	*v = ((const float *)s->data)[0];
	return 1;
}

/* |a - b| within 1e-5 of |b|. */
int
fuse_close(double a, double b)
{
	return fabs(a - b) <= 1e-5 * fabs(b);
}

/* One live reader and not a graph output. */
int
fuse_single_use(const struct fuse_ctx *c, int t)
{
	if (t < 0)
		return 0;
	return c->uses[t] == 1 && !(c->g->tensors[t].flags & GRAPH_TENSOR_OUTPUT);
}

/* Live nodes reading t, distinct, up to max (max + 1 when there are more). */
int
fuse_consumers(const struct fuse_ctx *c, int t, int *out, int max)
{
	size_t n, start = c->producer[t] >= 0 ? (size_t)c->producer[t] + 1 : 0;
	int k, found = 0;

	for (n = start; n < c->g->nnodes; n++) {
		if (c->dead[n])
			continue;
		for (k = 0; k < c->g->nodes[n].ninputs; k++)
			if (c->g->nodes[n].inputs[k] == t)
				break;
		if (k == c->g->nodes[n].ninputs)
			continue;
		if (found == max)
			return max + 1;
		out[found++] = (int)n;
	}
	return found;
}

/* The single live reader of t. */
int
fuse_consumer(const struct fuse_ctx *c, int t)
{
	int n;

	if (!fuse_single_use(c, t) || fuse_consumers(c, t, &n, 1) != 1)
		return -1;
	return n;
}

/* BINARY fn without a fused activation. */
int
fuse_is_binary(const struct fuse_ctx *c, int n, enum graph_binary fn)
{
	const struct graph_node *node;

	if (n < 0 || c->dead[n])
		return 0;
	node = &c->g->nodes[n];
	return node->op == GRAPH_OP_BINARY && node->attr.binary.fn == fn &&
	    node->act == GRAPH_UNARY_NONE && node->ninputs == 2 && node->noutputs == 1;
}

/* The live producer of t when it is BINARY fn. */
int
fuse_producer_binary(const struct fuse_ctx *c, int t, enum graph_binary fn)
{
	int n = t >= 0 ? c->producer[t] : -1;

	return fuse_is_binary(c, n, fn) ? n : -1;
}

/* The other input of binary node n, given one of them. */
int
fuse_other_input(const struct fuse_ctx *c, int n, int t)
{
	const struct graph_node *node = &c->g->nodes[n];

	if (node->inputs[0] == t && node->inputs[1] != t)
		return node->inputs[1];
	if (node->inputs[1] == t && node->inputs[0] != t)
		return node->inputs[0];
	return -1;
}

/* Same shape in both probes. */
int
fuse_same_shape(const struct fuse_ctx *c, int a, int b)
{
	int p;

	if (c->probe[0] == NULL || a < 0 || b < 0)
		return 0;
	for (p = 0; p < 2; p++) {
		if (c->probe[p][a].ndims != c->probe[p][b].ndims)
			return 0;
		if (memcmp(c->probe[p][a].dims, c->probe[p][b].dims,
		    (size_t)c->probe[p][a].ndims * sizeof(int64_t)) != 0)
			return 0;
	}
	return 1;
}
