/* graph_shape.c: shape inference, from the graph's input shapes to every tensor's shape. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"

/*
 * One static function per op: it reads its inputs' shapes (all known, since
 * nodes are in topological order) and writes its outputs' shapes, refusing
 * inputs that do not fit the op.  To support an op, write its function and
 * add it to graph_shape_fns; ops without an entry are refused by name.
 */
typedef int (*graph_shape_fn)(const graph_t *g, const struct graph_node *n,
    struct graph_shape *shapes, char **cause);

/* Format a shape as "[2,3,4]" into buf. */
static const char *
graph_shape_str(const struct graph_shape *s, char *buf, size_t len)
{
	size_t used;
	int i;

	snprintf(buf, len, "[");
	for (i = 0; i < s->ndims; i++) {
		used = strlen(buf);
		snprintf(buf + used, len - used, "%s%" PRId64, i ? "," : "", s->dims[i]);
	}
	used = strlen(buf);
	snprintf(buf + used, len - used, "]");
	return buf;
}

/* The shape of node input i (which must be present). */
static const struct graph_shape *
graph_in(const struct graph_node *n, const struct graph_shape *shapes, int i)
{
	return &shapes[n->inputs[i]];
}

/* Refuse a node whose input/output counts are outside [min_in, max_in] / nout. */
static int
graph_check_arity(const struct graph_node *n, int min_in, int max_in, int nout,
    char **cause)
{
	int i;

	if (n->ninputs < min_in || n->ninputs > max_in)
		return error_set(cause, "%d inputs (expected %d to %d)", n->ninputs, min_in, max_in);
	if (n->noutputs != nout)
		return error_set(cause, "%d outputs (expected %d)", n->noutputs, nout);
	for (i = 0; i < min_in; i++)
		if (n->inputs[i] < 0)
			return error_set(cause, "required input %d is missing", i);
	for (i = 0; i < nout; i++)
		if (n->outputs[i] < 0)
			return error_set(cause, "output %d is missing", i);
	return 0;
}

/* Normalise axis against rank (negative counts from the end); -1 when out of range. */
static int
graph_axis(int64_t axis, int rank, int *out, char **cause)
{
	if (axis < -rank || axis >= rank)
		return error_set(cause, "axis %" PRId64 " out of range for rank %d", axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

/* Output 0 gets input 0's shape (element-wise ops). */
static int
graph_shape_same(const graph_t *g, const struct graph_node *n,
    struct graph_shape *shapes, char **cause)
{
	if (graph_check_arity(n, 1, 1, 1, cause) != 0)
		return -1;
	shapes[n->outputs[0]] = *graph_in(n, shapes, 0);
	return 0;
}

/* C must broadcast (unidirectionally, numpy rules) to [m, k]. */
static int
graph_gemm_check_c(const struct graph_shape *c, int64_t m, int64_t k, char **cause)
{
	char buf[128];
	int64_t want[2] = { m, k };
	int i;

	if (c->ndims > 2)
		return error_set(cause, "C has shape %s, which does not broadcast to [%" PRId64 ",%" PRId64 "]",
		    graph_shape_str(c, buf, sizeof buf), m, k);
	for (i = 0; i < c->ndims; i++) {
		int64_t d = c->dims[c->ndims - 1 - i];
		if (d != 1 && d != want[1 - i])
			return error_set(cause, "C has shape %s, which does not broadcast to [%" PRId64 ",%" PRId64 "]",
			    graph_shape_str(c, buf, sizeof buf), m, k);
	}
	return 0;
}

/* GEMM: op(A)[M,K] op(B)[K,N] (+ C) -> [M,N]. */
static int
graph_shape_gemm(const graph_t *g, const struct graph_node *n,
    struct graph_shape *shapes, char **cause)
{
	const struct graph_shape *a, *b;
	const struct graph_gemm_attr *at = &n->attr.gemm;
	char sa[128], sb[128];
	int64_t m, k, k2, cols;

	if (graph_check_arity(n, 2, 3, 1, cause) != 0)
		return -1;
	a = graph_in(n, shapes, 0);
	b = graph_in(n, shapes, 1);
	if (a->ndims != 2 || b->ndims != 2)
		return error_set(cause, "A %s and B %s must both have rank 2",
		    graph_shape_str(a, sa, sizeof sa), graph_shape_str(b, sb, sizeof sb));
	m = a->dims[at->trans_a ? 1 : 0];
	k = a->dims[at->trans_a ? 0 : 1];
	k2 = b->dims[at->trans_b ? 1 : 0];
	cols = b->dims[at->trans_b ? 0 : 1];
	if (k != k2)
		return error_set(cause, "A %s (trans_a %d) and B %s (trans_b %d) disagree on the inner dimension",
		    graph_shape_str(a, sa, sizeof sa), at->trans_a, graph_shape_str(b, sb, sizeof sb), at->trans_b);
	if (n->ninputs == 3 && n->inputs[2] >= 0 &&
	    graph_gemm_check_c(graph_in(n, shapes, 2), m, cols, cause) != 0)
		return -1;
	shapes[n->outputs[0]] = (struct graph_shape){ .ndims = 2, .dims = { m, cols } };
	return 0;
}

/* SOFTMAX: same shape; the axis must exist. */
static int
graph_shape_softmax(const graph_t *g, const struct graph_node *n,
    struct graph_shape *shapes, char **cause)
{
	int axis;

	if (graph_shape_same(g, n, shapes, cause) != 0)
		return -1;
	return graph_axis(n->attr.softmax.axis, graph_in(n, shapes, 0)->ndims, &axis, cause);
}

/* LAYERNORM: same shape; scale and bias broadcast to the normalised dims [axis, rank). */
static int
graph_shape_layernorm(const graph_t *g, const struct graph_node *n,
    struct graph_shape *shapes, char **cause)
{
	const struct graph_shape *x;
	char sx[128], sp[128];
	int axis = 0, i, j;

	if (graph_check_arity(n, 1, 3, 1, cause) != 0)
		return -1;
	x = graph_in(n, shapes, 0);
	if (graph_axis(n->attr.norm.axis, x->ndims, &axis, cause) != 0)
		return -1;
	for (i = 1; i < n->ninputs; i++) {
		const struct graph_shape *p;
		if (n->inputs[i] < 0)
			continue;
		p = graph_in(n, shapes, i);
		for (j = 0; j < p->ndims; j++) {
			int xd = x->ndims - p->ndims + j;
			if (xd < axis ? p->dims[j] != 1 : (p->dims[j] != 1 && p->dims[j] != x->dims[xd]))
				return error_set(cause, "%s %s does not broadcast to the normalised dimensions of %s (axis %d)",
				    i == 1 ? "scale" : "bias", graph_shape_str(p, sp, sizeof sp),
				    graph_shape_str(x, sx, sizeof sx), axis);
		}
	}
	shapes[n->outputs[0]] = *x;
	return 0;
}

/* Shape inference per op; NULL: not implemented yet. */
static const graph_shape_fn graph_shape_fns[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = graph_shape_gemm,
	[GRAPH_OP_UNARY] = graph_shape_same,
	[GRAPH_OP_SOFTMAX] = graph_shape_softmax,
	[GRAPH_OP_LAYERNORM] = graph_shape_layernorm,
	[GRAPH_OP_COPY] = graph_shape_same,
};

/* Check that a concrete input shape fits its declaration; vars[k] records GRAPH_DIM_VAR(k). */
static int
graph_check_input(const graph_t *g, const struct graph_tensor *t,
    const struct graph_shape *s, int64_t *batch, int64_t *vars, char **cause)
{
	int i;

	if (s->ndims < 0 || s->ndims > GRAPH_MAX_DIMS || (t->ndims >= 0 && s->ndims != t->ndims))
		return error_set(cause, "rank %d, declared %d", s->ndims, t->ndims);
	for (i = 0; i < s->ndims; i++) {
		int64_t d = s->dims[i], want = t->ndims >= 0 ? t->dims[i] : d;
		int64_t *slot = want == GRAPH_DIM_BATCH ? batch :
		    GRAPH_DIM_IS_VAR(want) && GRAPH_DIM_VAR_INDEX(want) < g->nvars ? &vars[GRAPH_DIM_VAR_INDEX(want)] : NULL;

		if (d < 0 || (want == GRAPH_DIM_BATCH && d < 1))
			return error_set(cause, "dimension %d is %" PRId64, i, d);
		if (want >= 0 && d != want)
			return error_set(cause, "dimension %d is %" PRId64 ", declared %" PRId64, i, d, want);
		if (want < 0 && slot == NULL)
			return error_set(cause, "dimension %d has an unknown declaration %" PRId64, i, want);
		if (slot != NULL && *slot >= 0 && *slot != d)
			return error_set(cause, "dimension %d is %" PRId64 " where another input has %" PRId64, i, d, *slot);
		if (slot != NULL)
			*slot = d;
	}
	return 0;
}

/* Place the inputs' and constants' shapes; known[i] marks tensors with a shape. */
static int
graph_seed_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char *known, int64_t *vars, char **cause)
{
	int64_t batch = -1;
	size_t i;
	int k;

	for (i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *t = &g->tensors[i];
		if (!(t->flags & GRAPH_TENSOR_CONST))
			continue;
		if (t->ndims < 0 || t->ndims > GRAPH_MAX_DIMS)
			return error_set(cause, "constant '%s' has no concrete shape", t->name);
		shapes[i].ndims = t->ndims;
		for (k = 0; k < t->ndims; k++)
			if ((shapes[i].dims[k] = t->dims[k]) < 0)
				return error_set(cause, "constant '%s' has a variable dimension", t->name);
		known[i] = 1;
	}
	for (k = 0; k < g->ninputs; k++) {
		int ti = g->inputs[k];
		if (ti < 0 || (size_t)ti >= g->ntensors)
			return error_set(cause, "graph input %d names no tensor", k);
		if (graph_check_input(g, &g->tensors[ti], &input_shapes[k], &batch, vars, cause) != 0)
			return error_prefix(cause, "input '%s'", g->tensors[ti].name);
		shapes[ti] = input_shapes[k];
		known[ti] = 1;
	}
	return 0;
}

/* Check a node's tensor indices and that its inputs have shapes, then infer its outputs. */
static int
graph_infer_node(const graph_t *g, const struct graph_node *n,
    struct graph_shape *shapes, char *known, char **cause)
{
	int i;

	for (i = 0; i < n->ninputs; i++) {
		if (n->inputs[i] >= (int)g->ntensors || n->inputs[i] < -1)
			return error_set(cause, "input %d names no tensor", i);
		if (n->inputs[i] >= 0 && !known[n->inputs[i]])
			return error_set(cause, "input '%s' is read before any node writes it", g->tensors[n->inputs[i]].name);
	}
	for (i = 0; i < n->noutputs; i++)
		if (n->outputs[i] >= (int)g->ntensors || n->outputs[i] < -1)
			return error_set(cause, "output %d names no tensor", i);
	if ((unsigned)n->op >= GRAPH_OP_COUNT || graph_shape_fns[n->op] == NULL)
		return error_set(cause, "shape inference for op %s not implemented", graph_op_name(n->op));
	if (graph_shape_fns[n->op](g, n, shapes, cause) != 0)
		return -1;
	for (i = 0; i < n->noutputs; i++)
		if (n->outputs[i] >= 0)
			known[n->outputs[i]] = 1;
	return 0;
}

/* Every tensor's shape from the inputs' shapes. */
int
graph_infer_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause)
{
	int64_t *vars;
	char *known;
	size_t i;
	int rc = 0;

	known = calloc(g->ntensors + 1, 1);
	vars = malloc(((size_t)(g->nvars > 0 ? g->nvars : 0) + 1) * sizeof *vars);
	if (known == NULL || vars == NULL) {
		free(known);
		free(vars);
		return error_set(cause, "out of memory");
	}
	for (i = 0; i < (size_t)(g->nvars > 0 ? g->nvars : 0); i++)
		vars[i] = -1;
	memset(shapes, 0, g->ntensors * sizeof *shapes);
	rc = graph_seed_shapes(g, input_shapes, shapes, known, vars, cause);
	for (i = 0; rc == 0 && i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		if ((rc = graph_infer_node(g, n, shapes, known, cause)) != 0)
			error_prefix(cause, "node '%s' (%s)", n->name ? n->name : "?", graph_op_name(n->op));
	}
	for (i = 0; rc == 0 && i < (size_t)g->noutputs; i++)
		if (g->outputs[i] < 0 || (size_t)g->outputs[i] >= g->ntensors || !known[g->outputs[i]])
			rc = error_set(cause, "graph output %zu is never written", i);
	free(known);
	free(vars);
	return rc;
}
