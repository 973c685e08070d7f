/* graph_shapefn_more.c: ScatterElements', OneHot's, the norms', Einsum's, ArgMax/ArgMin's and Tile's shapes over symbolic dims. */
#include <string.h>

#include "graph_einsum.h"
#include "graph_shapefn_impl.h"

/* Require a == b (an expression each). */
static int
require_eq(struct sf *s, int a, int b, const char *what)
{
	return sf_require(s, sym_eq(s->p, a, b), what);
}

/* SCATTER_ELEMENTS: data's shape; indices of data's rank, within the data off the axis; updates as indices. */
int
sf_scatter_elements(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0), *ix = sf_in(s, 1), *u = sf_in(s, 2);
	int64_t ax;
	int i;

	if (ix->ndims != x->ndims || u->ndims != ix->ndims || sf_axis(s->n->attr.scatter.axis, x->ndims, &ax) < 0)
		return sf_fail(s, "ScatterElements indices or updates not of the data's rank, or axis out of range");
	for (i = 0; i < x->ndims; i++) {
		if (require_eq(s, u->dims[i], ix->dims[i], "ScatterElements updates differ from the indices' shape") < 0)
			return -1;
		if (i != ax && sf_require(s, sym_le(s->p, ix->dims[i], x->dims[i]),
		    "ScatterElements indices larger than the data off the axis") < 0)
			return -1;
	}
	return sf_set_out(s, 0, x);
}

/* OneHot's depth as an expression: followed from the shapes, or an FP32 constant (truncated); -1 when neither. */
static int
onehot_depth(struct sf *s)
{
	const struct graph_tensor *t = &s->g->tensors[s->n->inputs[1]];
	const int32_t *v;
	float f;

	if (sf_values(s, s->n->inputs[1], &v) == 1)
		return v[0];
	if ((t->flags & GRAPH_TENSOR_CONST) && t->dtype == GRAPH_DT_F32 && t->nbytes == 4) {
		memcpy(&f, t->data, 4);
		if (f > -1e18f && f < 1e18f)
			return sym_const(s->p, (int64_t)f);
	}
	return -1;
}

/* ONEHOT: indices' shape with depth inserted at the axis; depth must follow from the input shapes. */
int
sf_onehot(struct sf *s)
{
	const struct graph_shapefn_shape *ix = sf_in(s, 0), *val = sf_in(s, 2);
	struct graph_shapefn_shape r = { 0, { 0 } };
	int depth = onehot_depth(s), i;
	int64_t ax;

	if (depth < 0)
		return sf_fail(s, "OneHot's depth must be one value, a constant or computed from the input shapes "
		    "(a depth read from the request's data is not supported)");
	if (ix->ndims + 1 > GRAPH_MAX_DIMS || sf_axis(s->n->attr.onehot.axis, ix->ndims + 1, &ax) < 0)
		return sf_fail(s, "OneHot axis out of range, or the output beyond the maximum rank");
	if (require_eq(s, sf_elems(s, val), sym_const(s->p, 2), "OneHot values must be [off, on]") < 0 ||
	    sf_require(s, sym_le(s->p, sym_const(s->p, 1), depth), "OneHot's depth must be positive") < 0)
		return -1;
	r.ndims = ix->ndims + 1;
	for (i = 0; i < r.ndims; i++)
		r.dims[i] = i < ax ? ix->dims[i] : i == ax ? depth : ix->dims[i - 1];
	return sf_set_out(s, 0, &r);
}

/* INSTANCENORM, GROUPNORM: X's shape; channels divide into the groups; scale and bias per group or channel. */
int
sf_groupnorm(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	const struct graph_groupnorm_attr *a = &s->n->attr.groupnorm;
	int c, want, k;

	if (x->ndims < 2)
		return sf_fail(s, "normalization needs X of rank 2 or more [N, C, ...]");
	c = x->dims[1];
	if (s->n->op == GRAPH_OP_GROUPNORM && (a->groups < 1 ||
	    require_eq(s, sym_mod(s->p, c, sym_const(s->p, a->groups)), sym_const(s->p, 0),
	    "GroupNormalization's channels do not divide into num_groups") < 0))
		return a->groups < 1 ? sf_fail(s, "num_groups must be positive") : -1;
	want = s->n->op == GRAPH_OP_INSTANCENORM || a->per_channel ? c : sym_const(s->p, a->groups);
	for (k = 1; k <= 2; k++)
		if (sf_in(s, k)->ndims != 1 || require_eq(s, sf_in(s, k)->dims[0], want,
		    "scale and bias must be [C] (or [num_groups] for GroupNormalization at opset 18)") < 0)
			return sf_in(s, k)->ndims != 1 ? sf_fail(s, "scale and bias must be 1-D") : -1;
	return sf_set_out(s, 0, x);
}

/* One more dim v of an Einsum label (size *z so far, -1 none): letters must agree, ellipsis dims broadcast. */
static int
einsum_label(struct sf *s, int id, int v, int *z)
{
	struct sym_pool *p = s->p;
	int one = sym_const(p, 1);

	if (*z < 0 || *z == v) {
		*z = v;
		return 0;
	}
	if (id < GRAPH_EINSUM_LETTERS)
		return require_eq(s, *z, v, "Einsum operands differ in a label's size");
	if (sf_require(s, sym_or(p, sym_or(p, sym_eq(p, *z, v), sym_eq(p, *z, one)), sym_eq(p, v, one)),
	    "Einsum ellipsis dims do not broadcast") < 0)
		return -1;
	*z = sym_select(p, sym_eq(p, *z, one), v, *z);
	return 0;
}

/* EINSUM: each output label's size, the labels' sizes agreeing across the operands. */
int
sf_einsum(struct sf *s)
{
	struct graph_einsum_dims d;
	struct graph_shapefn_shape r = { 0, { 0 } };
	int size[GRAPH_EINSUM_IDS], ranks[2] = { 0, 0 }, k, i;

	if (s->n->ninputs != s->n->attr.einsum.ninputs)
		return sf_fail(s, "Einsum operands differ from the equation's");
	for (k = 0; k < s->n->ninputs; k++)
		ranks[k] = sf_in(s, k)->ndims;
	if (graph_einsum_expand(&s->n->attr.einsum, ranks, &d, NULL) < 0)
		return sf_fail(s, "an Einsum operand's rank does not fit its term of the equation");
	for (i = 0; i < GRAPH_EINSUM_IDS; i++)
		size[i] = -1;
	for (k = 0; k < s->n->ninputs; k++)
		for (i = 0; i < d.rank[k]; i++)
			if (einsum_label(s, d.lab[k][i], sf_in(s, k)->dims[i], &size[(int)d.lab[k][i]]) < 0)
				return -1;
	r.ndims = d.rank[2];
	for (i = 0; i < r.ndims; i++)
		r.dims[i] = size[(int)d.lab[2][i]];
	return sf_set_out(s, 0, &r);
}

/* ARGMAX: X's shape with the axis 1 long (keepdims) or removed; the axis must not be empty. */
int
sf_argmax(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = { 0, { 0 } };
	int64_t ax;
	int i;

	if (sf_axis(s->n->attr.argmax.axis, x->ndims, &ax) < 0)
		return sf_fail(s, "ArgMax/ArgMin axis out of range");
	if (sf_require(s, sym_le(s->p, sym_const(s->p, 1), x->dims[ax]), "ArgMax/ArgMin over an empty axis") < 0)
		return -1;
	for (i = 0; i < x->ndims; i++)
		if (i != ax)
			r.dims[r.ndims++] = x->dims[i];
		else if (s->n->attr.argmax.keepdims)
			r.dims[r.ndims++] = sym_const(s->p, 1);
	return sf_set_out(s, 0, &r);
}

/*
 * TILE: each dim of X times its repeat.  The repeats are the node's constants,
 * or its input followed from the input shapes; repeats read from the
 * request's data leave the output shape unknown before the run: refused.
 */
int
sf_tile(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = *x;
	int32_t reps[GRAPH_MAX_DIMS];
	const int32_t *v;
	int n, i;

	if ((n = s->n->attr.tile.nreps) >= 0) {
		for (i = 0; i < n; i++)
			reps[i] = sym_const(s->p, s->n->attr.tile.reps[i]);
	} else {
		if (!sf_has(s, 1) || (n = sf_values(s, s->n->inputs[1], &v)) < 0)
			return sf_fail(s, "Tile's repeats must be constants or computed from the input shapes (repeats "
			    "read from the request's data are not supported)");
		if (sf_in(s, 1)->ndims != 1)
			return sf_fail(s, "Tile's repeats must be 1-D");
		for (i = 0; i < n && i < GRAPH_MAX_DIMS; i++)
			reps[i] = v[i];
	}
	if (n != x->ndims)
		return sf_fail(s, "Tile's repeats differ in length from the input's rank");
	for (i = 0; i < n; i++) {
		if (sf_require(s, sym_le(s->p, sym_const(s->p, 0), reps[i]), "a Tile repeat is negative") < 0)
			return -1;
		r.dims[i] = sym_mul(s->p, x->dims[i], reps[i]);
	}
	return sf_set_out(s, 0, &r);
}
