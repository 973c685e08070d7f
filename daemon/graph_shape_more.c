/* graph_shape_more.c: shape inference for ScatterElements, OneHot, InstanceNormalization, GroupNormalization, Einsum, ArgMax/ArgMin, Tile. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "graph_einsum.h"
#include "graph_shape.h"
#include "graph_shape_impl.h"

/* SCATTER_ELEMENTS: data's shape; indices of data's rank, no dim past the data's but on the axis; updates as indices. */
int
graph_shape_scatter_elements(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0), *ix = in_shape(n, s, 1);
	int64_t ax;
	int i;

	(void)g;
	if (ix->ndims != x->ndims || gs_norm_axis(n->attr.scatter.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "ScatterElements indices not of the data's rank, or axis out of range",
		    ix);
	if (!gs_shape_eq(in_shape(n, s, 2), ix))
		return gs_node_shape_error(n, cause, "ScatterElements updates differ from the indices' shape",
		    in_shape(n, s, 2));
	for (i = 0; i < x->ndims; i++)
		if (i != ax && ix->dims[i] > x->dims[i])
			return gs_node_shape_error(n, cause, "ScatterElements indices larger than the data off the axis",
			    ix);
	return gs_set_out(n, s, 0, x, cause);
}

/* A CONST scalar of any numeric dtype as an integer (truncated), for OneHot's depth; -1 naming it otherwise. */
static int
const_depth(const graph_t *g, const struct graph_node *n, int64_t *out, char **cause)
{
	const struct graph_tensor *x = &g->tensors[n->inputs[1]];
	size_t es = graph_dtype_size(x->dtype);

	if (!(x->flags & GRAPH_TENSOR_CONST) || x->data == NULL || es == 0 || x->nbytes != es)
		return error_set(cause, "node '%s': OneHot's depth '%s' must be one value, a constant or computed "
		    "from the input shapes (a depth read from the request's data is not supported)", n->name, x->name);
	switch (x->dtype) {
	case GRAPH_DT_F32: { float v; memcpy(&v, x->data, 4); *out = v > -1e18f && v < 1e18f ? (int64_t)v : -1; break; }
	case GRAPH_DT_I64: memcpy(out, x->data, 8); break;
	case GRAPH_DT_I32: { int32_t v; memcpy(&v, x->data, 4); *out = v; break; }
	case GRAPH_DT_I8: *out = *(const int8_t *)x->data; break;
	case GRAPH_DT_U8: *out = *(const uint8_t *)x->data; break;
	default:
		return error_set(cause, "node '%s': OneHot's depth '%s' of dtype %s", n->name, x->name,
		    graph_dtype_name(x->dtype));
	}
	return 0;
}

/* ONEHOT: indices' shape with depth inserted at the axis (counted over the output's rank). */
int
graph_shape_onehot(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *ix = in_shape(n, s, 0);
	struct graph_shape r = { 0, { 0 } };
	int64_t depth = 0, ax;
	int i;

	if (const_depth(g, n, &depth, cause) < 0)
		return -1;
	if (depth < 1)
		return gs_node_error(n, cause, "OneHot's depth must be positive");
	if (ix->ndims + 1 > GRAPH_MAX_DIMS || gs_norm_axis(n->attr.onehot.axis, ix->ndims + 1, &ax) < 0)
		return gs_node_shape_error(n, cause, "OneHot axis out of range, or the output beyond the maximum rank", ix);
	if (graph_shape_elems(in_shape(n, s, 2)) != 2)
		return gs_node_shape_error(n, cause, "OneHot values must be [off, on]", in_shape(n, s, 2));
	r.ndims = ix->ndims + 1;
	for (i = 0; i < r.ndims; i++)
		r.dims[i] = i < ax ? ix->dims[i] : i == ax ? depth : ix->dims[i - 1];
	return gs_set_out(n, s, 0, &r, cause);
}

/* INSTANCENORM, GROUPNORM: X's shape; channels divide into the groups; scale and bias per group or channel. */
int
graph_shape_groupnorm(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	const struct graph_groupnorm_attr *a = &n->attr.groupnorm;
	int64_t c, want;

	(void)g;
	if (x->ndims < 2)
		return gs_node_shape_error(n, cause, "normalization needs X of rank 2 or more [N, C, ...]", x);
	c = x->dims[1];
	if (n->op == GRAPH_OP_GROUPNORM && (a->groups < 1 || c % a->groups != 0))
		return gs_node_shape_error(n, cause, "GroupNormalization's channels do not divide into num_groups", x);
	want = n->op == GRAPH_OP_INSTANCENORM || a->per_channel ? c : a->groups;
	if (graph_shape_elems(in_shape(n, s, 1)) != want || graph_shape_elems(in_shape(n, s, 2)) != want ||
	    in_shape(n, s, 1)->ndims != 1 || in_shape(n, s, 2)->ndims != 1)
		return gs_node_shape_error(n, cause, want == c ? "scale and bias must be [C]" :
		    "scale and bias must be [num_groups] (opset 18; opset 21 takes them per channel)", in_shape(n, s, 1));
	return gs_set_out(n, s, 0, x, cause);
}

/* EINSUM: each output label's size, the labels' sizes agreeing across the operands. */
int
graph_shape_einsum(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *in[2] = { NULL, NULL };
	struct graph_einsum_dims d;
	struct graph_shape r = { 0, { 0 } };
	int64_t size[GRAPH_EINSUM_IDS];
	int ranks[2] = { 0, 0 }, k;

	(void)g;
	if (n->ninputs != n->attr.einsum.ninputs)
		return gs_node_error(n, cause, "Einsum operands differ from the equation's");
	for (k = 0; k < n->ninputs; k++) {
		in[k] = in_shape(n, s, k);
		ranks[k] = in[k]->ndims;
	}
	if (graph_einsum_expand(&n->attr.einsum, ranks, &d, cause) < 0 || graph_einsum_sizes(&d, in, size, cause) < 0)
		return error_prefix(cause, "node '%s'", n->name ? n->name : "?");
	r.ndims = d.rank[2];
	for (k = 0; k < r.ndims; k++)
		r.dims[k] = size[d.lab[2][k]];
	return gs_set_out(n, s, 0, &r, cause);
}

/* ARGMAX: X's shape with the axis 1 long (keepdims) or removed; the axis must not be empty. */
int
graph_shape_argmax(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = { 0, { 0 } };
	int64_t ax;
	int i;

	(void)g;
	if (gs_norm_axis(n->attr.argmax.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "ArgMax/ArgMin axis out of range", x);
	if (x->dims[ax] == 0)
		return gs_node_shape_error(n, cause, "ArgMax/ArgMin over an empty axis", x);
	for (i = 0; i < x->ndims; i++)
		if (i != ax)
			r.dims[r.ndims++] = x->dims[i];
		else if (n->attr.argmax.keepdims)
			r.dims[r.ndims++] = 1;
	return gs_set_out(n, s, 0, &r, cause);
}

/* Tile's repeats: the node's constant ones, else its input 1 once folding made it a constant; -1 naming it. */
static int
tile_repeats(const graph_t *g, const struct graph_node *n, const struct graph_shape *s, int64_t *reps, int *nreps,
    char **cause)
{
	const struct graph_tensor *t;

	if (n->attr.tile.nreps >= 0) {
		*nreps = n->attr.tile.nreps;
		memcpy(reps, n->attr.tile.reps, sizeof n->attr.tile.reps);
		return 0;
	}
	if (n->ninputs < 2 || n->inputs[1] < 0)
		return gs_node_error(n, cause, "Tile has no repeats");
	t = &g->tensors[n->inputs[1]];
	if (!(t->flags & GRAPH_TENSOR_CONST))
		return error_set(cause, "node '%s': Tile's repeats '%s' must be a constant or computed from the input "
		    "shapes (repeats read from the request's data are not supported)", n->name, t->name);
	if (s[n->inputs[1]].ndims != 1)
		return gs_node_shape_error(n, cause, "Tile's repeats must be 1-D", &s[n->inputs[1]]);
	return gs_const_ints(g, n, n->inputs[1], reps, GRAPH_MAX_DIMS, nreps, cause);
}

/* TILE: each dim of X times its repeat (one repeat per dim, none negative). */
int
graph_shape_tile(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = *x;
	int64_t reps[GRAPH_MAX_DIMS];
	int nreps = 0, i;

	if (tile_repeats(g, n, s, reps, &nreps, cause) < 0)
		return -1;
	if (nreps != x->ndims)
		return gs_node_shape_error(n, cause, "Tile's repeats differ in length from the input's rank", x);
	for (i = 0; i < x->ndims; i++) {
		if (reps[i] < 0 || (x->dims[i] > 0 && reps[i] > SHAPE_DIM_MAX / x->dims[i]))
			return gs_node_shape_error(n, cause, "a Tile repeat is negative or too large", x);
		r.dims[i] = x->dims[i] * reps[i];
	}
	return gs_set_out(n, s, 0, &r, cause);
}
