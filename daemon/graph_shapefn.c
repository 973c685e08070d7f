/* graph_shapefn.c: deriving a graph's shape function (graph_shapefn.h): seeding, then the node loop. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_shapefn.h"
#include "graph_shapefn_impl.h"

/* Seed the shapes of constants (declared) and inputs (batch and variable dims as variables). */
static int
seed(struct graph_shapefn *f, const graph_t *g, char **cause)
{
	size_t i;
	int k, d;

	for (i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *x = &g->tensors[i];
		int input = 0;

		for (k = 0; k < g->ninputs; k++)
			input |= g->inputs[k] == (int)i;
		if (!(x->flags & GRAPH_TENSOR_CONST) && !input)
			continue;
		if (x->ndims < 0 || x->ndims > GRAPH_MAX_DIMS)
			return error_set(cause, "%s '%s' has no declared shape", input ? "input" : "constant", x->name);
		f->shapes[i].ndims = x->ndims;
		for (d = 0; d < x->ndims; d++) {
			int64_t v = x->dims[d];
			f->shapes[i].dims[d] = v >= 0 ? sym_const(&f->pool, v) :
			    v == GRAPH_DIM_BATCH ? sym_var(&f->pool, 0) : sym_var(&f->pool, 1 + GRAPH_DIM_VAR_INDEX(v));
		}
	}
	return f->pool.oom ? error_set(cause, "out of memory") : 0;
}

void
graph_shapefn_free(struct graph_shapefn *f)
{
	if (f == NULL)
		return;
	sym_pool_free(&f->pool);
	free(f->shapes);
	free(f->guards);
	free(f->nvalues);
	free(f);
}

/* Free the per-tensor value arrays (ntensors of them). */
static void
free_values(struct graph_shapefn *f, size_t ntensors)
{
	size_t i;

	for (i = 0; f->values != NULL && i < ntensors; i++)
		free(f->values[i]);
	free(f->values);
	f->values = NULL;
}

/* Derive the shape function of g. */
int
graph_shapefn_derive(const graph_t *g, const int64_t *var_hi, struct graph_shapefn **out, char **cause)
{
	struct graph_shapefn *f = xcalloc(1, sizeof *f);
	struct sf s;
	size_t i;
	int v;

	if (f == NULL)
		return error_set(cause, "out of memory");
	sym_pool_init(&f->pool);
	for (v = 0; var_hi != NULL && v <= g->nvars && v < SYM_MAX_VARS; v++)
		f->pool.var_hi[v] = var_hi[v];
	f->shapes = xcalloc(g->ntensors + 1, sizeof *f->shapes);
	f->values = xcalloc(g->ntensors + 1, sizeof *f->values);
	f->nvalues = xcalloc(g->ntensors + 1, sizeof *f->nvalues);
	if (f->shapes == NULL || f->values == NULL || f->nvalues == NULL) {
		error_set(cause, "out of memory");
		goto fail;
	}
	if (seed(f, g, cause) < 0)
		goto fail;
	memset(&s, 0, sizeof s);
	s.g = g;
	s.f = f;
	s.p = &f->pool;
	s.cause = cause;
	for (i = 0; i < g->nnodes; i++) {
		s.n = &g->nodes[i];
		s.node = i;
		if (sf_shape_node(&s) < 0 || sf_values_node(&s) < 0)
			goto fail;
	}
	if (f->pool.oom) {
		error_set(cause, "out of memory");
		goto fail;
	}
	free_values(f, g->ntensors);
	*out = f;
	return 0;
fail:
	free_values(f, g->ntensors);
	graph_shapefn_free(f);
	return -1;
}
