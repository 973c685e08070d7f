/* graph_shapefn_impl.h: what the derivation's driver (graph_shapefn.c) and its op functions share. */
#ifndef INFERD_GRAPH_SHAPEFN_IMPL_H
#define INFERD_GRAPH_SHAPEFN_IMPL_H

#include "graph_shapefn.h"

/* Elements of an integer tensor whose values are followed. */
#define SF_MAX_VALUES 64

/* One node's derivation: the function being built and the node at hand. */
struct sf {
	const graph_t *g;
	struct graph_shapefn *f;
	struct sym_pool *p;
	const struct graph_node *n;
	size_t node;
	char **cause;
};

/* Shape of the node's input k. */
static inline const struct graph_shapefn_shape *
sf_in(const struct sf *s, int k)
{
	return &s->f->shapes[s->n->inputs[k]];
}

/* Whether the node's optional input k is present. */
static inline int
sf_has(const struct sf *s, int k)
{
	return k < s->n->ninputs && s->n->inputs[k] >= 0;
}

/* Refuse the derivation at this node: -1 with the cause. */
int sf_fail(struct sf *s, const char *why);
/* Require cond (an expression, 1 when acceptable) of every shape: decided now, or a guard. */
int sf_require(struct sf *s, int cond, const char *what);
/* Set output k to r: each dim checked non-negative (and at most the dim bound) by guards. */
int sf_set_out(struct sf *s, int k, const struct graph_shapefn_shape *r);
/* numpy broadcast of a and b into out, with the guard that they broadcast. */
int sf_broadcast(struct sf *s, const struct graph_shapefn_shape *a, const struct graph_shapefn_shape *b,
    struct graph_shapefn_shape *out);
/* Followed values of tensor t (constants read on first use): the count, or -1 when not followed. */
int sf_values(struct sf *s, int t, const int32_t **v);
/* Set the followed values of the node's output k (n of them). */
int sf_set_values(struct sf *s, int k, const int32_t *v, int n);
/* Normalise an axis into [0, rank): -1 when out of range. */
int sf_axis(int64_t axis, int rank, int64_t *out);
/* The element count of a shape, as an expression. */
int sf_elems(struct sf *s, const struct graph_shapefn_shape *x);

/* ScatterElements, OneHot, the instance and group norms, Einsum, ArgMax/ArgMin, Tile (graph_shapefn_more.c). */
int sf_scatter_elements(struct sf *s);
int sf_onehot(struct sf *s);
int sf_groupnorm(struct sf *s);
int sf_einsum(struct sf *s);
int sf_argmax(struct sf *s);
int sf_tile(struct sf *s);

/* Output shapes of the node (every op of graph.h). */
int sf_shape_node(struct sf *s);
/* Output values of the node when its inputs' values are followed and the output is a small integer tensor. */
int sf_values_node(struct sf *s);

#endif
