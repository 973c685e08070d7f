/* batcher_pad.c: which requests may share a batch, its padded shape, and copying a request into and out of it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "batcher_impl.h"
#include "error.h"
#include "model_padding.h"

/* The smallest bucket holding len (the last is the padded dim's maximum, which bounds every request). */
static int64_t
pad_bucket(const struct model_padding *p, int64_t len)
{
	int i;

	for (i = 0; i < p->nbuckets - 1 && p->buckets[i] < len; i++)
		;
	return p->buckets[i];
}

/* Whether dim d of input k is the padded one of a model that pads. */
static int
pad_dim(const model_t *m, int k, int d)
{
	return m->padding.on && m->inputs[k].var[d] == m->padding.var;
}

/*
 * Whether a request of shape r may join a batch of shape batch (already
 * padded by batcher_pad_shape): every dim equal, but the padded one, whose
 * length must fall in the batch's bucket.
 */
int
batcher_pad_agrees(const model_t *m, const struct model_shape *batch, const struct model_shape *r)
{
	int k, d;

	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (batch->dims[k][d] != r->dims[k][d] &&
			    (!pad_dim(m, k, d) || pad_bucket(&m->padding, r->dims[k][d]) != batch->dims[k][d]))
				return 0;
	return 1;
}

/* Turn the first request's shape into its batch's: the padded dim at its bucket (a model that does not pad keeps it). */
void
batcher_pad_shape(const model_t *m, struct model_shape *s)
{
	int k, d;

	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (pad_dim(m, k, d))
				s->dims[k][d] = pad_bucket(&m->padding, s->dims[k][d]);
}

/* Whether input k of request r has other dims than the batch (it is padded). */
int
batcher_pad_input(const model_t *m, const struct batch_request *r, const struct model_shape *batch, int k)
{
	return memcmp(r->shape.dims[k], batch->dims[k], (size_t)m->inputs[k].ndims * sizeof batch->dims[k][0]) != 0;
}

/*
 * Queue input k of request r into the batch at dst (its first row; rows of
 * the batch's shape) on stream cs: the pad values over all its rows, then
 * each row's own elements where they belong.
 */
int
batcher_pad_copy_in(struct model_queue *q, device_stream_t *cs, const struct batch_request *r,
    const struct model_shape *batch, int k, char *dst, char **cause)
{
	const model_t *m = q->model;
	size_t es = graph_dtype_size(m->inputs[k].dtype), run, n, i, own_row, big_row;
	const char *src = r->inputs[k];
	int row;

	own_row = model_input_row_bytes(m, k, &r->shape);
	big_row = model_input_row_bytes(m, k, batch);
	if (device_copy_h2d(cs, dst, q->pad_src[k], (size_t)r->rows * big_row, cause) != 0)
		return -1;
	n = model_padding_runs(r->shape.dims[k], batch->dims[k], m->inputs[k].ndims, es, &run);
	for (row = 0; row < r->rows; row++)
		for (i = 0; i < n; i++)
			if (device_copy_h2d(cs, dst + (size_t)row * big_row +
			    model_padding_run_offset(r->shape.dims[k], batch->dims[k], m->inputs[k].ndims, es, i),
			    src + (size_t)row * own_row + i * run, run, cause) != 0)
				return -1;
	return 0;
}

/* Count r's padding in the batch of shape batch: positions of the padded dim added, and run, over its rows. */
void
batcher_pad_count(const model_t *m, const struct batch_request *r, const struct model_shape *batch,
    uint64_t *pad, uint64_t *run)
{
	int k, d;

	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (pad_dim(m, k, d)) {
				*pad += (uint64_t)r->rows * (uint64_t)(batch->dims[k][d] - r->shape.dims[k][d]);
				*run += (uint64_t)r->rows * (uint64_t)batch->dims[k][d];
				return;
			}
}

/* Whether output o of request r has other dims than the batch's (it is sliced on the way out). */
int
batcher_pad_output(const model_t *m, const struct batch_request *r, const struct model_layout *batch, int o)
{
	return memcmp(r->layout.dims[o], batch->dims[o], (size_t)m->outputs[o].ndims * sizeof batch->dims[o][0]) != 0;
}

/* Queue output o of request r out of the batch (src its first row at the batch's layout), sliced to its own dims. */
int
batcher_pad_copy_out(const model_t *m, device_stream_t *cs, const struct batch_request *r,
    const struct model_layout *batch, int o, const char *src, char **cause)
{
	size_t es = graph_dtype_size(m->outputs[o].dtype), run, n, i;
	char *dst = r->outputs[o];
	int row;

	n = model_padding_runs(r->layout.dims[o], batch->dims[o], m->outputs[o].ndims, es, &run);
	for (row = 0; row < r->rows; row++)
		for (i = 0; i < n; i++)
			if (device_copy_d2h(cs, dst + (size_t)row * r->layout.row_bytes[o] + i * run,
			    src + (size_t)row * batch->row_bytes[o] +
			    model_padding_run_offset(r->layout.dims[o], batch->dims[o], m->outputs[o].ndims, es, i),
			    run, cause) != 0)
				return -1;
	return 0;
}

/*
 * The batch's output layout at its padded shape, checked against every
 * request's own (each of its output dims at most the batch's, which the
 * check at load established for this model).
 */
int
batcher_pad_layout(const model_t *m, struct batch_slot *s, char **cause)
{
	int i, o, d;

	if (model_output_layout(m, &s->shape, &s->layout, cause) != 0)
		return error_prefix(cause, "the padded batch");
	for (i = 0; i < s->nreqs; i++)
		for (o = 0; o < m->noutputs; o++)
			for (d = 0; d < m->outputs[o].ndims; d++)
				if (s->reqs[i]->layout.dims[o][d] > s->layout.dims[o][d])
					return error_set(cause, "output '%s' dim %d of a request is longer than its padded batch's",
					    m->outputs[o].name, d + 1);
	return 0;
}

/* Pinned pad values of every padded input, enough for a whole batch (a model that does not pad gets none). */
int
batcher_pad_create(struct model_queue *q, char **cause)
{
	const model_t *m = q->model;
	struct model_shape max;
	size_t bytes;
	int k, d, padded;

	model_shape_max(m, model_rows_max(m), &max);
	for (k = 0; k < m->ninputs; k++) {
		for (d = 0, padded = 0; d < m->inputs[k].ndims; d++)
			padded |= pad_dim(m, k, d);
		if (!padded)
			continue;
		bytes = model_input_row_bytes(m, k, &max) * (size_t)max.rows;
		if (device_host_alloc(q->dev, bytes, &q->pad_src[k], cause) != 0)
			return error_prefix(cause, "model '%s': pad values of input '%s'", m->name, m->inputs[k].name);
		model_padding_fill_value(q->pad_src[k], bytes / graph_dtype_size(m->inputs[k].dtype),
		    m->inputs[k].dtype, m->padding.values[k]);
	}
	return 0;
}

/* Free the pad values. */
void
batcher_pad_free(struct model_queue *q)
{
	int k;

	for (k = 0; k < MODEL_MAX_IO; k++)
		if (q->pad_src[k] != NULL)
			device_host_free(q->dev, q->pad_src[k]);
}
