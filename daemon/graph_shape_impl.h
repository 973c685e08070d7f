/* graph_shape_impl.h: what graph_shape.c's shape functions and graph_shape_more.c's share (graph_shape_util.c). */
#ifndef INFERD_GRAPH_SHAPE_IMPL_H
#define INFERD_GRAPH_SHAPE_IMPL_H

#include "graph.h"

/* Largest dim accepted anywhere: keeps every product of dims far from overflow. */
#define SHAPE_DIM_MAX ((int64_t)1 << 40)

/* Shape of input k (it must be present). */
static inline const struct graph_shape *
in_shape(const struct graph_node *n, const struct graph_shape *s, int k)
{
	return &s[n->inputs[k]];
}

/* Whether two shapes are equal (rank and dims; nothing past the rank is compared). */
int gs_shape_eq(const struct graph_shape *a, const struct graph_shape *b);
/* Refuse a node with a reason: "node 'N': what"; always -1. */
int gs_node_error(const struct graph_node *n, char **cause, const char *what);
/* Refuse a node whose input shape s does not fit; always -1. */
int gs_node_shape_error(const struct graph_node *n, char **cause, const char *what, const struct graph_shape *s);
/* Normalise an axis into [0, rank); -1 when out of range. */
int gs_norm_axis(int64_t axis, int rank, int64_t *out);
/* Read CONST integer tensor t (I64 or I32) of at most max elements into out; -1 naming it otherwise. */
int gs_const_ints(const graph_t *g, const struct graph_node *n, int t, int64_t *out, int max, int *count,
    char **cause);
/* Set output k of n to shape r, checking dims stay in range. */
int gs_set_out(const struct graph_node *n, struct graph_shape *s, int k, const struct graph_shape *r, char **cause);

/* ScatterElements, OneHot, the instance and group norms, Einsum, ArgMax/ArgMin, Tile (graph_shape_more.c). */
int graph_shape_scatter_elements(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause);
int graph_shape_onehot(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause);
int graph_shape_groupnorm(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause);
int graph_shape_einsum(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause);
int graph_shape_argmax(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause);
int graph_shape_tile(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause);

#endif
