/* model_exec.c: one batch context: its buffers planned over the model's graph, a plan per batch size, graphs. */
#include "config.h"

#include <stdlib.h>

#include "error.h"
#include "model.h"

/*
 * Buffers: tensors that an in-place op (unary, softmax, layernorm) rewrites
 * share their input's buffer when nothing else reads that input; the group
 * holding the graph input uses x->input, the one holding the output
 * x->output, and the others share as few buffers as their lifetimes allow.
 */
struct model_buffers {
	int *group;		/* per tensor: the tensor whose buffer it uses */
	int *readers;		/* per tensor: nodes reading it */
	int *first, *last;	/* per group root: first node writing it, last node reading it */
	size_t *bytes;		/* per group root: bytes at max_batch_size rows */
	int *buf;		/* per group root: index into x->bufs, -1 for none */
};

/* Whether op may write its output over its first input. */
static int
model_op_in_place(enum graph_op op)
{
	return op == GRAPH_OP_UNARY || op == GRAPH_OP_SOFTMAX || op == GRAPH_OP_LAYERNORM;
}

/* Group tensors whose buffers are shared and note each group's size and lifetime. */
static void
model_buffers_group(const graph_t *g, const struct graph_shape *shapes,
    struct model_buffers *mb)
{
	size_t i;
	int k, t, in;

	for (i = 0; i < g->ntensors; i++) {
		mb->group[i] = (int)i;
		mb->first[i] = mb->last[i] = -1;
	}
	for (i = 0; i < g->nnodes; i++)
		for (k = 0; k < g->nodes[i].ninputs; k++)
			if (g->nodes[i].inputs[k] >= 0)
				mb->readers[g->nodes[i].inputs[k]]++;
	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		in = n->inputs[0];
		if (model_op_in_place(n->op) && mb->readers[in] == 1 &&
		    !(g->tensors[in].flags & (GRAPH_TENSOR_CONST | GRAPH_TENSOR_OUTPUT)))
			mb->group[n->outputs[0]] = mb->group[in];
		t = mb->group[n->outputs[0]];
		if (mb->first[t] < 0)
			mb->first[t] = (int)i;
		for (k = 0; k < n->ninputs; k++)
			if (n->inputs[k] >= 0)
				mb->last[mb->group[n->inputs[k]]] = (int)i;
	}
	for (i = 0; i < g->ntensors; i++) {
		size_t b = (size_t)graph_shape_elems(&shapes[i]) * graph_dtype_size(g->tensors[i].dtype);
		if (b > mb->bytes[mb->group[i]])
			mb->bytes[mb->group[i]] = b;
	}
}

/* Give every intermediate group a buffer whose previous group's last read comes before it is written. */
static void
model_buffers_assign(model_exec_t *x, struct model_buffers *mb, int in_group,
    int out_group, size_t *sizes, int *busy_until)
{
	const graph_t *g = x->model->graph;
	size_t i;
	int b;

	for (i = 0; i < g->nnodes; i++) {
		int t = mb->group[g->nodes[i].outputs[0]];
		if (t == in_group || t == out_group || mb->buf[t] >= 0 || mb->first[t] != (int)i)
			continue;
		for (b = 0; b < x->nbufs && busy_until[b] >= (int)i; b++)
			;
		if (b == x->nbufs)
			sizes[x->nbufs++] = 0;
		mb->buf[t] = b;
		busy_until[b] = mb->last[t] < 0 ? (int)i : mb->last[t];
		if (mb->bytes[t] > sizes[b])
			sizes[b] = mb->bytes[t];
	}
}

/* Allocate the buffers the grouping asks for and point every tensor at its memory. */
static int
model_buffers_alloc(model_exec_t *x, struct model_buffers *mb, char **cause)
{
	const model_t *m = x->model;
	const graph_t *g = m->graph;
	int in_group = mb->group[g->inputs[0]], out_group = mb->group[g->outputs[0]];
	size_t i, *sizes = calloc(g->nnodes + 1, sizeof *sizes);
	int *busy = calloc(g->nnodes + 1, sizeof *busy);
	int b, rc = -1;

	x->bufs = calloc(g->nnodes + 1, sizeof *x->bufs);
	if (sizes == NULL || busy == NULL || x->bufs == NULL) {
		error_set(cause, "out of memory");
		goto out;
	}
	model_buffers_assign(x, mb, in_group, out_group, sizes, busy);
	if (device_alloc(m->dev, mb->bytes[in_group], (void **)&x->input, cause) != 0)
		goto out;
	if (out_group == in_group)
		x->output = x->input;	/* only in-place layers: the result stays in the input */
	else if (device_alloc(m->dev, mb->bytes[out_group], (void **)&x->output, cause) != 0)
		goto out;
	for (b = 0; b < x->nbufs; b++)
		if (device_alloc(m->dev, sizes[b], &x->bufs[b], cause) != 0)
			goto out;
	for (i = 0; i < g->ntensors; i++) {
		int t = mb->group[i];
		x->addrs[i] = g->tensors[i].flags & GRAPH_TENSOR_CONST ? m->consts[i] :
		    t == in_group ? (void *)x->input : t == out_group ? (void *)x->output :
		    mb->buf[t] >= 0 ? x->bufs[mb->buf[t]] : NULL;
	}
	rc = 0;
out:
	free(sizes);
	free(busy);
	return rc;
}

/* The shapes of every tensor for a batch of rows rows. */
static int
model_exec_shapes(const model_t *m, int rows, struct graph_shape *shapes,
    char **cause)
{
	struct graph_shape in = { .ndims = 2, .dims = { rows, (int64_t)m->input.row_elems } };

	return graph_infer_shapes(m->graph, &in, shapes, cause);
}

/* Plan the buffers from the shapes at max_batch_size and allocate them. */
static int
model_exec_buffers(model_exec_t *x, struct graph_shape *shapes, char **cause)
{
	const graph_t *g = x->model->graph;
	size_t n = g->ntensors;
	struct model_buffers mb;
	int rc = -1;

	mb.group = calloc(n, sizeof *mb.group);
	mb.readers = calloc(n, sizeof *mb.readers);
	mb.first = calloc(n, sizeof *mb.first);
	mb.last = calloc(n, sizeof *mb.last);
	mb.bytes = calloc(n, sizeof *mb.bytes);
	mb.buf = malloc(n * sizeof *mb.buf);
	x->addrs = calloc(n, sizeof *x->addrs);
	if (mb.group == NULL || mb.readers == NULL || mb.first == NULL || mb.last == NULL ||
	    mb.bytes == NULL || mb.buf == NULL || x->addrs == NULL)
		error_set(cause, "out of memory");
	else if (model_exec_shapes(x->model, x->model->max_batch_size, shapes, cause) == 0) {
		for (size_t i = 0; i < n; i++)
			mb.buf[i] = -1;
		model_buffers_group(g, shapes, &mb);
		rc = model_buffers_alloc(x, &mb, cause);
	}
	free(mb.group);
	free(mb.readers);
	free(mb.first);
	free(mb.last);
	free(mb.bytes);
	free(mb.buf);
	return rc;
}

/* Compile one plan per batch size 1..max_batch_size over the same buffers. */
static int
model_exec_plans(model_exec_t *x, struct graph_shape *shapes, char **cause)
{
	const model_t *m = x->model;
	int r;

	x->plans = calloc((size_t)m->max_batch_size, sizeof *x->plans);
	if (x->plans == NULL)
		return error_set(cause, "out of memory");
	for (r = 1; r <= m->max_batch_size; r++) {
		if (model_exec_shapes(m, r, shapes, cause) != 0 ||
		    device_plan_compile(m->dev, m->graph, shapes, x->addrs, &x->plans[r - 1], cause) != 0)
			return error_prefix(cause, "%d rows", r);
	}
	return 0;
}

/* Allocate a context's buffers for the model's largest batch and compile its plans. */
int
model_exec_create(const model_t *m, model_exec_t **out, char **cause)
{
	struct graph_shape *shapes;
	model_exec_t *x;
	int rc;

	x = calloc(1, sizeof *x);
	shapes = calloc(m->graph->ntensors, sizeof *shapes);
	if (x == NULL || shapes == NULL) {
		free(x);
		free(shapes);
		return error_set(cause, "out of memory");
	}
	x->model = m;
	rc = model_exec_buffers(x, shapes, cause);
	if (rc != 0)
		error_prefix(cause, "model '%s': allocating batch buffers", m->name);
	else if ((rc = model_exec_plans(x, shapes, cause)) != 0)
		error_prefix(cause, "model '%s': compiling for the %s device", m->name, device_name(m->dev));
	free(shapes);
	if (rc != 0) {
		model_exec_free(x);
		return -1;
	}
	*out = x;
	return 0;
}

/* Free a context (NULL is ignored). */
void
model_exec_free(model_exec_t *x)
{
	device_t *dev;
	int i;

	if (x == NULL)
		return;
	dev = x->model->dev;
	for (i = 0; i < x->ngraphs; i++)
		device_graph_destroy(x->graphs[i]);
	free(x->graphs);
	free(x->graph_rows);
	for (i = 0; x->plans != NULL && i < x->model->max_batch_size; i++)
		device_plan_free(x->plans[i]);
	free(x->plans);
	if (x->output != x->input)
		device_free(dev, x->output);
	device_free(dev, x->input);
	for (i = 0; i < x->nbufs; i++)
		device_free(dev, x->bufs[i]);
	free(x->bufs);
	free(x->addrs);
	free(x);
}

/* Queue the plan for rows rows on s: x->input to x->output. */
static int
model_exec_queue(model_exec_t *x, int rows, device_stream_t *s, char **cause)
{
	if (device_plan_run(x->plans[rows - 1], s, cause) != 0)
		return error_prefix(cause, "model '%s'", x->model->name);
	return 0;
}

/* Run the model: a captured graph when there is one for this size, else its plan. */
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
	return model_exec_queue(x, rows, s, cause);
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
		rc = model_exec_queue(x, rows, s, cause);
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
