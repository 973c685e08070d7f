/* model_shape.c: a batch's shape against the model: checks, byte counts, maxima, graph input shapes. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "model.h"
#include "model_impl.h"

/* The batch a model without a batch dimension was exported with: every input's first dim, fixed and equal (rank >= 2). */
int64_t
model_fixed_batch(const model_t *m)
{
	int k;

	if (m->max_batch_size != 0 || m->ninputs < 1)
		return 0;
	for (k = 0; k < m->ninputs; k++)
		if (m->inputs[k].ndims < 2 || m->inputs[k].dims[0] < 1 || m->inputs[k].dims[0] != m->inputs[0].dims[0])
			return 0;
	return m->inputs[0].dims[0];
}

/* Refuse a request whose input has batch v where the model was exported with a fixed batch: what to re-export. */
int
model_fixed_batch_refuse(const model_t *m, int input, int64_t v, char **cause)
{
	const char *name = m->inputs[input].name;

	return error_set(cause, "input '%s' dim 0 is %lld, but the model was exported with a fixed batch of %lld; "
	    "to serve other batch sizes re-export it with a dynamic batch axis (torch.onnx.export(..., "
	    "dynamic_axes={\"%s\": {0: \"batch\"}}))", name, (long long)v, (long long)model_fixed_batch(m), name);
}

/* Check input i's non-batch dims against the model. */
int
model_check_dims(const model_t *m, int input, int ndims, const int64_t *dims, char **cause)
{
	const struct model_io *io;
	int d;

	if (input < 0 || input >= m->ninputs)
		return error_set(cause, "input %d does not exist (the model has %d)", input, m->ninputs);
	io = &m->inputs[input];
	if (ndims != io->ndims)
		return error_set(cause, "input '%s' has %d dims after the batch, the model's has %d", io->name, ndims, io->ndims);
	for (d = 0; d < ndims; d++) {
		if (d == 0 && io->dims[0] >= 0 && dims[0] != io->dims[0] && model_fixed_batch(m) > 0)
			return model_fixed_batch_refuse(m, input, dims[0], cause);
		if (io->dims[d] >= 0 && dims[d] != io->dims[d])
			return error_set(cause, "input '%s' dim %d is %lld, the model's is %lld", io->name,
			    d + (m->max_batch_size > 0), (long long)dims[d], (long long)io->dims[d]);
		if (dims[d] < 1 || dims[d] > io->max_dims[d])
			return error_set(cause, "input '%s' dim %d is %lld, the model's maximum is %lld", io->name,
			    d + (m->max_batch_size > 0), (long long)dims[d], (long long)io->max_dims[d]);
	}
	return 0;
}

/* Bytes of one row of input i at shape s. */
size_t
model_input_row_bytes(const model_t *m, int i, const struct model_shape *s)
{
	size_t n = graph_dtype_size(m->inputs[i].dtype);
	int d;

	for (d = 0; d < m->inputs[i].ndims; d++)
		n *= (size_t)s->dims[i][d];
	return n;
}

/* The value variable dim v takes in s, or -1. */
static int64_t
model_shape_var(const model_t *m, const struct model_shape *s, int v)
{
	int k, d;

	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (m->inputs[k].var[d] == v)
				return s->dims[k][d];
	return -1;
}

/* Bytes of one row of output o at the largest input shape. */
size_t
model_output_max_row_bytes(const model_t *m, int o)
{
	size_t n = graph_dtype_size(m->outputs[o].dtype);
	int d;

	for (d = 0; d < m->outputs[o].ndims; d++)
		n *= (size_t)m->outputs[o].max_dims[d];
	return n;
}

/* Index of the input named name, or -1. */
int
model_input_index(const model_t *m, const char *name)
{
	int i;

	for (i = 0; i < m->ninputs; i++)
		if (strcmp(m->inputs[i].name, name) == 0)
			return i;
	return -1;
}

/* Index of the output named name, or -1. */
int
model_output_index(const model_t *m, const char *name)
{
	int i;

	for (i = 0; i < m->noutputs; i++)
		if (strcmp(m->outputs[i].name, name) == 0)
			return i;
	return -1;
}

/* rows rows with every dim at its maximum. */
void
model_shape_max(const model_t *m, int rows, struct model_shape *s)
{
	int k;

	memset(s, 0, sizeof *s);
	s->rows = rows;
	for (k = 0; k < m->ninputs; k++)
		memcpy(s->dims[k], m->inputs[k].max_dims, (size_t)m->inputs[k].ndims * sizeof s->dims[k][0]);
}

/* The graph input shapes of s, in g->inputs order. */
void
model_graph_input_shapes(const model_t *m, const struct model_shape *s, struct graph_shape *in)
{
	int k, skip = m->max_batch_size > 0;

	for (k = 0; k < m->ninputs; k++) {
		in[k].ndims = m->inputs[k].ndims + skip;
		in[k].dims[0] = s->rows;
		memcpy(&in[k].dims[skip], s->dims[k], (size_t)m->inputs[k].ndims * sizeof in[k].dims[0]);
	}
}

/* Check s and copy it zero-padded (so equal shapes compare equal byte for byte). */
int
model_shape_normalise(const model_t *m, const struct model_shape *s, struct model_shape *out, char **cause)
{
	int k, d;

	if (s->rows < 1 || s->rows > model_max_rows(m))
		return error_set(cause, "batch of %d rows (max %d)", s->rows, model_max_rows(m));
	memset(out, 0, sizeof *out);
	out->rows = s->rows;
	for (k = 0; k < m->ninputs; k++) {
		if (model_check_dims(m, k, m->inputs[k].ndims, s->dims[k], cause) != 0)
			return -1;
		memcpy(out->dims[k], s->dims[k], (size_t)m->inputs[k].ndims * sizeof s->dims[k][0]);
	}
	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++) {
			int v = m->inputs[k].var[d];
			if (v >= 0 && model_shape_var(m, out, v) != out->dims[k][d])
				return error_set(cause, "input '%s' dim %d is %lld but another input's dim of the same name is %lld",
				    m->inputs[k].name, d + (m->max_batch_size > 0), (long long)out->dims[k][d],
				    (long long)model_shape_var(m, out, v));
		}
	return 0;
}
