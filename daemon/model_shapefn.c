/* model_shapefn.c: a model's output dims as functions of its input dims, derived at load, and its dims' real maxima. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_shapefn.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"

/* Values a program may compute on the stack; larger ones take heap scratch. */
#define MODEL_SHAPEFN_STACK 512

void
model_shapefn_free(struct model_shapefn *f)
{
	if (f == NULL)
		return;
	sym_prog_free(&f->prog);
	free(f->guards);
	free(f);
}

/* Describe output o from its symbolic shape; its dims' roots appended to roots. */
static int
shapefn_output(model_t *m, const struct graph_shapefn *gf, int o, struct model_shapefn *f, int32_t *roots,
    size_t *nroots, char **cause)
{
	const struct graph_shapefn_shape *y = &gf->shapes[m->graph->outputs[o]];
	const char *name = m->graph->tensors[m->graph->outputs[o]].name;
	int skip = m->max_batch_size > 0, d;
	int64_t c;

	if (y->ndims - skip < 0 || y->ndims - skip > MODEL_MAX_DIMS)
		return error_set(cause, "output '%s' has rank %d", name, y->ndims);
	if (skip && (gf->pool.nodes[y->dims[0]].op != SYM_VAR || gf->pool.nodes[y->dims[0]].k != 0))
		return error_set(cause, "output '%s' does not have the batch dimension first", name);
	f->out_ndims[o] = y->ndims - skip;
	for (d = 0; d < f->out_ndims[o]; d++) {
		int e = y->dims[d + skip];
		const struct sym_node *x = &gf->pool.nodes[e];

		if (sym_vars(&gf->pool, e) & 1u) {
			f->batch_bound = 1;
			return error_set(cause, "output '%s' dim %d depends on the batch size, so requests cannot share "
			    "a batch: serve it with max_batch_size 0", name, d + skip);
		}
		f->out_var[o][d] = sym_is_const(&gf->pool, e, &c) ? -1 : x->op == SYM_VAR ? (int)x->k - 1 : -2;
		roots[(*nroots)++] = e;
	}
	return 0;
}

/* Build the program computing every output dim and guard. */
static int
shapefn_program(model_t *m, const struct graph_shapefn *gf, struct model_shapefn *f, char **cause)
{
	size_t nroots = 0, i, k = 0;
	int32_t *roots, *slots;
	int o, d, rc = -1;

	roots = xcalloc((size_t)MODEL_MAX_IO * MODEL_MAX_DIMS + gf->nguards + 1, sizeof *roots);
	slots = xcalloc((size_t)MODEL_MAX_IO * MODEL_MAX_DIMS + gf->nguards + 1, sizeof *slots);
	f->guards = xcalloc(gf->nguards + 1, sizeof *f->guards);
	if (roots == NULL || slots == NULL || f->guards == NULL) {
		error_set(cause, "out of memory");
		goto out;
	}
	for (o = 0; o < m->graph->noutputs; o++)
		if (shapefn_output(m, gf, o, f, roots, &nroots, cause) != 0)
			goto out;
	for (i = 0; i < gf->nguards; i++)
		roots[nroots++] = gf->guards[i].cond;
	if (sym_prog_build(&gf->pool, roots, nroots, &f->prog, slots, cause) != 0)
		goto out;
	for (o = 0; o < m->graph->noutputs; o++)
		for (d = 0; d < f->out_ndims[o]; d++)
			f->out_slot[o][d] = slots[k++];
	for (i = 0; i < gf->nguards; i++) {
		f->guards[i].slot = slots[k++];
		f->guards[i].node = m->graph->nodes[gf->guards[i].node].name;
		f->guards[i].what = gf->guards[i].what;
	}
	f->nguards = gf->nguards;
	rc = 0;
out:
	free(roots);
	free(slots);
	return rc;
}

/* Derive m->shapefn from m->graph (inputs described, outputs not yet). */
int
model_shapefn_build(model_t *m, int *fatal, char **cause)
{
	struct graph_shapefn *gf = NULL;
	struct model_shapefn *f;
	int64_t var_hi[1 + MODEL_MAX_IO * MODEL_MAX_DIMS];
	int v;

	/* Requests never exceed the maxima (model_check_dims), so the expressions may assume them. */
	var_hi[0] = model_max_rows(m);
	for (v = 0; v < m->nvars; v++)
		var_hi[1 + v] = m->var_max[v];
	*fatal = 0;
	if (graph_shapefn_derive(m->graph, var_hi, &gf, cause) != 0)
		return error_prefix(cause, "deriving the output shapes from the input shapes");
	if ((f = xcalloc(1, sizeof *f)) == NULL) {
		graph_shapefn_free(gf);
		return error_set(cause, "out of memory");
	}
	*fatal = 0;
	if (shapefn_program(m, gf, f, cause) != 0) {
		*fatal = f->batch_bound;
		graph_shapefn_free(gf);
		model_shapefn_free(f);
		return -1;
	}
	graph_shapefn_free(gf);
	m->shapefn = f;
	return 0;
}

/* The program's variables for shape s: the rows, then each graph variable from the input dim that carries it. */
static void
shapefn_vars(const model_t *m, const struct model_shape *s, int64_t *vars, int nvars)
{
	int k, d;

	for (k = 0; k < nvars; k++)
		vars[k] = 1;
	vars[0] = s->rows;
	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (m->inputs[k].var[d] >= 0 && 1 + m->inputs[k].var[d] < nvars)
				vars[1 + m->inputs[k].var[d]] = s->dims[k][d];
}

/* The first guard that fails in vals, or -1. */
static ssize_t
shapefn_failed_guard(const struct model_shapefn *f, const int64_t *vals, const unsigned char *bad)
{
	size_t i;

	for (i = 0; i < f->nguards; i++)
		if (bad[f->guards[i].slot] || vals[f->guards[i].slot] == 0)
			return (ssize_t)i;
	return -1;
}

/* Evaluate m's shape function at s into vals/bad (prog.n each): -1 naming the node whose condition fails. */
int
model_shapefn_eval(const model_t *m, const struct model_shape *s, int64_t *vals, unsigned char *bad, char **cause)
{
	const struct model_shapefn *f = m->shapefn;
	int64_t vars[1 + MODEL_MAX_IO * MODEL_MAX_DIMS];
	ssize_t g;

	shapefn_vars(m, s, vars, f->prog.nvars);
	sym_prog_eval(&f->prog, vars, vals, bad);
	if ((g = shapefn_failed_guard(f, vals, bad)) >= 0)
		return error_set(cause, "node '%s': %s for this input shape", f->guards[g].node ? f->guards[g].node : "?",
		    f->guards[g].what);
	return 0;
}

/* Whether every guard holds at s; *failed the first that does not. */
static int
shapefn_holds(const model_t *m, const struct model_shape *s, int64_t *vals, unsigned char *bad, ssize_t *failed)
{
	const struct model_shapefn *f = m->shapefn;
	int64_t vars[1 + MODEL_MAX_IO * MODEL_MAX_DIMS];

	shapefn_vars(m, s, vars, f->prog.nvars);
	sym_prog_eval(&f->prog, vars, vals, bad);
	return (*failed = shapefn_failed_guard(f, vals, bad)) < 0;
}

/* Set every input dim carrying graph variable v to x in s. */
static void
shape_set_var(const model_t *m, struct model_shape *s, int v, int64_t x)
{
	int k, d;

	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (m->inputs[k].var[d] == v)
				s->dims[k][d] = x;
}

/* The first input dim carrying graph variable v: its name and position, for messages. */
static void
var_where(const model_t *m, int v, const char **name, int *dim)
{
	int k, d;

	*name = "?";
	*dim = -1;
	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (m->inputs[k].var[d] == v && *dim < 0) {
				*name = m->graph->tensors[m->graph->inputs[k]].name;
				*dim = d + (m->max_batch_size > 0);
			}
}

/*
 * Lower variable v (bounded by default, not by max_dims) to the largest value
 * at which every guard holds with the other dims at their maxima.
 */
static int
shapefn_lower_var(model_t *m, int v, struct model_shape *s, int64_t *vals, unsigned char *bad, char **cause)
{
	int64_t x;
	ssize_t g, first = -1;
	const char *name;
	int dim;

	for (x = m->var_max[v]; x >= 1; x--) {
		shape_set_var(m, s, v, x);
		if (shapefn_holds(m, s, vals, bad, &g))
			break;
		if (first < 0)
			first = g;
	}
	var_where(m, v, &name, &dim);
	if (x < 1)
		return error_set(cause, "input '%s' dim %d: no value up to %" PRId64 " fits node '%s' (%s); "
		    "set its maximum with model.json \"max_dims\"", name, dim, m->var_max[v],
		    m->shapefn->guards[first].node, m->shapefn->guards[first].what);
	LOG_INFO("model '%s': input '%s' dim %d takes at most %" PRId64 " (at %" PRId64 ", node '%s': %s); "
	    "model.json \"max_dims\" sets it explicitly", m->name, name, dim, x, m->var_max[v],
	    m->shapefn->guards[first].node, m->shapefn->guards[first].what);
	m->var_max[v] = x;
	return 0;
}

/* Bound the variables left at the default maximum at the largest value the graph takes (guards), log each. */
int
model_shapefn_bound(model_t *m, const unsigned char *from_cfg, char **cause)
{
	const struct model_shapefn *f = m->shapefn;
	int64_t stack_vals[MODEL_SHAPEFN_STACK], *vals = stack_vals;
	unsigned char stack_bad[MODEL_SHAPEFN_STACK], *bad = stack_bad;
	struct model_shape s;
	ssize_t g;
	int v, rc = 0;

	if (f->prog.n > MODEL_SHAPEFN_STACK) {
		vals = xmalloc(f->prog.n * sizeof *vals);
		bad = xmalloc(f->prog.n);
		if (vals == NULL || bad == NULL) {
			rc = error_set(cause, "out of memory");
			goto out;
		}
	}
	model_shape_max(m, model_max_rows(m), &s);
	for (v = 0; v < m->nvars && rc >= 0; v++)
		if (!from_cfg[v] && !shapefn_holds(m, &s, vals, bad, &g))
			rc = shapefn_lower_var(m, v, &s, vals, bad, cause) != 0 ? -1 : 1;
	if (rc >= 0 && !shapefn_holds(m, &s, vals, bad, &g))
		rc = error_set(cause, "at the largest shape (variable dims at their maximum): node '%s': %s; "
		    "lower model.json \"max_dims\" for the inputs it reads", f->guards[g].node, f->guards[g].what);
out:
	if (vals != stack_vals)
		free(vals);
	if (bad != stack_bad)
		free(bad);
	return rc;
}
