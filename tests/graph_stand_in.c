/* graph_stand_in.c: graph.c's helpers and shape inference for the graph tests until the real ones are in this branch. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph_test_util.h"

/*
 * Stand-ins with the contract of graph.h: graph_free frees the graph_t too;
 * graph_infer_shapes runs the tests' reference evaluator on zero inputs and
 * keeps the shapes.  Remove this file from the tests once daemon/graph.c and
 * daemon/graph_shape.c are in the library.
 */

size_t
graph_dtype_size(enum graph_dtype dt)
{
	static const size_t sizes[GRAPH_DT_COUNT] = { 4, 2, 8, 4, 1, 1, 1 };

	return (unsigned)dt < GRAPH_DT_COUNT ? sizes[dt] : 0;
}

int64_t
graph_shape_elems(const struct graph_shape *s)
{
	int64_t n = 1;
	int k;

	for (k = 0; k < s->ndims; k++)
		n *= s->dims[k];
	return n;
}

void
graph_free(graph_t *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->ntensors; i++) {
		free(g->tensors[i].name);
		if (g->tensors[i].owns_data)
			free((void *)g->tensors[i].data);
	}
	for (i = 0; i < g->nnodes; i++) {
		free(g->nodes[i].name);
		free(g->nodes[i].inputs);
		free(g->nodes[i].outputs);
	}
	free(g->tensors);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g);
}

int
graph_infer_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause)
{
	struct gt_value *in, *vals;
	size_t t;
	int i, rc;

	in = calloc((size_t)g->ninputs + 1, sizeof *in);
	vals = calloc(g->ntensors + 1, sizeof *vals);
	if (in == NULL || vals == NULL)
		exit(1);
	for (i = 0; i < g->ninputs; i++) {
		in[i].s = input_shapes[i];
		if ((in[i].v = calloc((size_t)graph_shape_elems(&input_shapes[i]) + 1, sizeof(double))) == NULL)
			exit(1);
	}
	rc = gt_eval(g, in, vals);
	for (t = 0; t < g->ntensors && rc == 0; t++)
		shapes[t] = vals[t].s;
	gt_values_free(vals, g->ntensors);
	gt_values_free(in, (size_t)g->ninputs);
	free(vals);
	free(in);
	return rc < 0 ? error_set(cause, "stand-in shape inference failed") : 0;
}
