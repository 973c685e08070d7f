/* model_layout.c: a request's output layout: the model's shape function evaluated (or, without one, the graph specialised). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cpu_kernels.h"
#include "error.h"
#include "graph_fold.h"
#include "model.h"
#include "model_impl.h"

/*
 * Every output's dims at s without a shape function: the fixed dims when all
 * are, else by specialising the graph (a graph whose function could not be
 * derived).
 */
static int
model_layout_specialise(const model_t *m, const struct model_shape *s, struct model_layout *out, char **cause)
{
	struct graph_shape in[MODEL_MAX_IO];
	struct graph_spec *spec;
	int o, d, skip = m->max_batch_size > 0, fixed = 1;

	for (o = 0; o < m->noutputs; o++)
		for (d = 0; d < m->outputs[o].ndims; d++)
			fixed &= (out->dims[o][d] = m->outputs[o].dims[d]) >= 0;
	if (fixed)
		return 0;
	model_graph_input_shapes(m, s, in);
	if (graph_specialize(m->graph, &cpu_fold_kernels, in, &spec, cause) != 0)
		return -1;
	for (o = 0; o < m->noutputs; o++) {
		const struct graph_shape *y = &spec->shapes[m->outputs[o].tensor];
		for (d = 0; d < m->outputs[o].ndims && d + skip < y->ndims; d++)
			out->dims[o][d] = y->dims[d + skip];
	}
	graph_spec_free(spec);
	return 0;
}

/* Every output's dims at s from the shape function (a stack of values, or heap for a large program). */
static int
model_layout_evaluate(const model_t *m, const struct model_shape *s, struct model_layout *out, char **cause)
{
	const struct model_shapefn *f = m->shapefn;
	int64_t stack_vals[256], *vals = stack_vals;
	unsigned char stack_bad[256], *bad = stack_bad;
	int o, d, rc = -1;

	if (f->prog.n > 256 && ((vals = xmalloc(f->prog.n * sizeof *vals)) == NULL ||
	    (bad = xmalloc(f->prog.n)) == NULL)) {
		error_set(cause, "out of memory");
		goto out;
	}
	if (model_shapefn_eval(m, s, vals, bad, cause) != 0)
		goto out;
	for (o = 0; o < m->noutputs; o++)
		for (d = 0; d < m->outputs[o].ndims; d++) {
			int32_t k = f->out_slot[o][d];
			if (bad[k] || vals[k] < 0) {
				error_set(cause, "output '%s' dim %d cannot be computed for this input shape "
				    "(its shape arithmetic overflows)", m->outputs[o].name, d + (m->max_batch_size > 0));
				goto out;
			}
			out->dims[o][d] = vals[k];
		}
	rc = 0;
out:
	if (vals != stack_vals)
		free(vals);
	if (bad != stack_bad)
		free(bad);
	return rc;
}

/* The output layout of input shape s. */
int
model_output_layout(const model_t *m, const struct model_shape *s, struct model_layout *out, char **cause)
{
	int o, d;

	if ((m->shapefn != NULL ? model_layout_evaluate(m, s, out, cause) : model_layout_specialise(m, s, out, cause)) != 0)
		return -1;
	for (o = 0; o < m->noutputs; o++) {
		size_t n = graph_dtype_size(m->outputs[o].dtype);
		for (d = 0; d < m->outputs[o].ndims; d++)
			if (__builtin_mul_overflow(n, (size_t)out->dims[o][d], &n))
				return error_set(cause, "output '%s' is too large for this input shape", m->outputs[o].name);
		if (n > model_output_max_row_bytes(m, o))
			return error_set(cause, "output '%s' would take %zu bytes a row at this input shape, more than "
			    "the %zu of the largest shape its memory is planned for", m->outputs[o].name, n,
			    model_output_max_row_bytes(m, o));
		out->row_bytes[o] = n;
	}
	return 0;
}
