/* model_exec.c: running a loaded model on one batch, from preallocated buffers only. */
#include "config.h"

#include <stdlib.h>

#include "error.h"
#include "model.h"

/* Allocate a context's buffers for the model's largest batch. */
int
model_exec_create(const model_t *m, model_exec_t **out, char **cause)
{
	size_t rows = (size_t)m->max_batch_size;
	model_exec_t *x;

	x = calloc(1, sizeof *x);
	if (x == NULL)
		return error_set(cause, "out of memory");
	x->model = m;
	if (device_alloc(m->dev, rows * m->input.row_elems * sizeof(float), (void **)&x->input, cause) != 0 ||
	    device_alloc(m->dev, rows * m->max_width * sizeof(float), (void **)&x->scratch[0], cause) != 0 ||
	    device_alloc(m->dev, rows * m->max_width * sizeof(float), (void **)&x->scratch[1], cause) != 0)
		goto fail;
	if (m->last_linear < 0)
		x->output = x->input;	/* only in-place layers: the result stays in the input */
	else if (device_alloc(m->dev, rows * m->output.row_elems * sizeof(float), (void **)&x->output, cause) != 0)
		goto fail;
	*out = x;
	return 0;
fail:
	model_exec_free(x);
	return error_prefix(cause, "model '%s': allocating batch buffers", m->name);
}

/* Free a context (NULL is ignored). */
void
model_exec_free(model_exec_t *x)
{
	device_t *dev;

	if (x == NULL)
		return;
	dev = x->model->dev;
	for (int i = 0; i < x->ngraphs; i++)
		device_graph_destroy(x->graphs[i]);
	free(x->graphs);
	free(x->graph_rows);
	if (x->output != x->input)
		device_free(dev, x->output);
	device_free(dev, x->input);
	device_free(dev, x->scratch[0]);
	device_free(dev, x->scratch[1]);
	free(x);
}

/* Run one layer from cur; linear layers write to dst, the rest work in place. */
static int
model_exec_layer(const struct model_layer *l, float *cur, float *dst, int rows,
    device_stream_t *s, char **cause)
{
	switch (l->op) {
	case MODEL_OP_LINEAR:
		return device_linear(s, cur, l->weight, l->bias, dst, rows, l->in, l->out, l->act, cause);
	case MODEL_OP_ACTIVATION:
		return device_activation(s, cur, (size_t)rows * l->in, l->act, cause);
	case MODEL_OP_SOFTMAX:
		return device_softmax(s, cur, rows, l->in, cause);
	case MODEL_OP_LAYERNORM:
		return device_layernorm(s, cur, l->weight, l->bias, rows, l->in, l->eps, cause);
	case MODEL_OP_IDENTITY:
		return 0;
	}
	return error_set(cause, "layer '%s': bad op %d", l->name, (int)l->op);
}

/* Queue every layer on s: x->input to x->output, alternating scratch buffers. */
static int
model_exec_layers(model_exec_t *x, int rows, device_stream_t *s, char **cause)
{
	const model_t *m = x->model;
	float *cur = x->input, *dst;
	size_t i;
	int next = 0;

	for (i = 0; i < m->nlayers; i++) {
		const struct model_layer *l = &m->layers[i];

		dst = cur;
		if (l->op == MODEL_OP_LINEAR) {
			dst = (int)i == m->last_linear ? x->output : x->scratch[next];
			next ^= 1;
		}
		if (model_exec_layer(l, cur, dst, rows, s, cause) != 0)
			return error_prefix(cause, "model '%s' layer '%s'", m->name, l->name);
		cur = dst;
	}
	return 0;
}

/* Run the model: a captured graph when there is one for this size, else layer by layer. */
int
model_exec_run(model_exec_t *x, int rows, device_stream_t *s, char **cause)
{
	const model_t *m = x->model;

	if (rows < 1 || rows > m->max_batch_size)
		return error_set(cause, "model '%s': batch of %d rows (max %d)", m->name, rows, m->max_batch_size);
	if (rows <= x->ngraphs && x->graph_rows != NULL) {
		if (device_graph_launch(x->graphs[x->graph_rows[rows - 1] - 1], s, cause) != 0)
			return error_prefix(cause, "model '%s': %d rows", m->name, rows);
		return 0;
	}
	return model_exec_layers(x, rows, s, cause);
}

/* Launches of each graph timed when choosing; the median is kept. */
#define MODEL_TUNE_RUNS 5

/* Median device time of graph g over MODEL_TUNE_RUNS launches, in microseconds. */
static int
model_time_graph(device_graph_t *g, device_stream_t *s, device_event_t *a,
    device_event_t *b, double *us, char **cause)
{
	double t[MODEL_TUNE_RUNS], v;
	int i, j;

	for (i = 0; i < MODEL_TUNE_RUNS; i++) {
		if (device_event_record(a, s, cause) != 0 || device_graph_launch(g, s, cause) != 0 ||
		    device_event_record(b, s, cause) != 0 || device_event_sync(b, cause) != 0 ||
		    device_event_elapsed_us(a, b, &t[i], cause) != 0)
			return -1;
		for (j = i; j > 0 && t[j - 1] > t[j]; j--) {
			v = t[j];
			t[j] = t[j - 1];
			t[j - 1] = v;
		}
	}
	*us = t[MODEL_TUNE_RUNS / 2];
	return 0;
}

/* Let each size r run the fastest captured graph of r or more rows. */
static int
model_exec_choose(model_exec_t *x, device_stream_t *s, char **cause)
{
	device_event_t *a = NULL, *b = NULL;
	double *us, best;
	int r, rc = -1, n = x->ngraphs;

	us = calloc((size_t)n, sizeof *us);
	x->graph_rows = calloc((size_t)n, sizeof *x->graph_rows);
	if (us == NULL || x->graph_rows == NULL) {
		free(us);
		return error_set(cause, "out of memory");
	}
	if (device_event_create(x->model->dev, &a, cause) != 0 || device_event_create(x->model->dev, &b, cause) != 0)
		goto out;
	for (r = 0; r < n; r++)
		if (model_time_graph(x->graphs[r], s, a, b, &us[r], cause) != 0)
			goto out;
	/* From the largest size down, so each size knows the best at or above it. */
	x->graph_rows[n - 1] = n;
	best = us[n - 1];
	for (r = n - 1; r >= 1; r--) {
		if (us[r - 1] <= best) {
			best = us[r - 1];
			x->graph_rows[r - 1] = r;
		} else
			x->graph_rows[r - 1] = x->graph_rows[r];
	}
	rc = 0;
out:
	device_event_destroy(a);
	device_event_destroy(b);
	free(us);
	return rc;
}

/* Capture one graph per batch size 1..max_rows, then choose which each size runs. */
int
model_exec_capture(model_exec_t *x, device_stream_t *s, int max_rows, char **cause)
{
	const model_t *m = x->model;
	device_graph_t *g;
	int rows, rc;

	if (!device_has_graphs(m->dev) || max_rows <= 0)
		return 0;
	if (max_rows > m->max_batch_size)
		max_rows = m->max_batch_size;
	x->graphs = calloc((size_t)max_rows, sizeof *x->graphs);
	if (x->graphs == NULL)
		return error_set(cause, "out of memory");
	for (rows = 1; rows <= max_rows; rows++) {
		if (device_graph_capture_begin(s, cause) != 0)
			return error_prefix(cause, "model '%s': capturing %d rows", m->name, rows);
		g = NULL;
		rc = model_exec_layers(x, rows, s, cause);
		/* End the capture even after a failure, so the stream is usable again. */
		if (device_graph_capture_end(s, &g, rc == 0 ? cause : NULL) != 0) {
			g = NULL;
			rc = -1;
		}
		if (rc != 0) {
			device_graph_destroy(g);
			return error_prefix(cause, "model '%s': capturing %d rows", m->name, rows);
		}
		x->graphs[x->ngraphs++] = g;
	}
	if (model_exec_choose(x, s, cause) != 0)
		return error_prefix(cause, "model '%s': timing its graphs", m->name);
	return 0;
}
