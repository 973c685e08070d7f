/* model.h: a model loaded from its repository directory, and its execution contexts. */
#ifndef INFERD_MODEL_H
#define INFERD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "graph.h"

#define MODEL_MAX_DIMS 8
#define MODEL_MAX_PREFERRED 16
#define MODEL_NAME_MAX 128

/* One input or output tensor; dims exclude the leading batch dimension. */
struct model_io {
	char name[MODEL_NAME_MAX];
	char datatype[16];		/* KServe name: only "FP32" is supported */
	int ndims;
	int64_t dims[MODEL_MAX_DIMS];
	size_t row_elems;		/* product of dims */
};

/* Dynamic batching settings from model.json. */
struct model_batching {
	uint64_t max_queue_delay_us;
	int preferred[MODEL_MAX_PREFERRED];
	int npreferred;
	size_t max_queue_size;		/* requests waiting; more is "busy" */
	uint64_t default_timeout_us;
};

typedef struct model {
	char name[MODEL_NAME_MAX];
	char *dir;
	device_t *dev;
	int max_batch_size;
	struct model_io input, output;
	struct model_batching batching;
	/*
	 * The layers as a graph: one input [batch, input.row_elems], one output
	 * [batch, output.row_elems]; constants view the weights file, which
	 * stays mapped, and are uploaded to consts[i] (NULL for non-constants).
	 */
	size_t nlayers;			/* layers listed in model.json */
	graph_t *graph;
	void **consts;
	struct st_file *weights;
	size_t nlabels;
	char **labels;			/* class names, optional */
} model_t;

/* Buffers and compiled plans for one batch in flight: every model_exec_run uses only these. */
typedef struct model_exec {
	const model_t *model;
	float *input;			/* device [max_batch, input.row_elems] */
	float *output;			/* where the result lands (may be input when every layer works in place) */
	int nbufs;
	void **bufs;			/* intermediate tensors, shared where their lifetimes do not overlap */
	void **addrs;			/* per graph tensor: its device memory */
	device_plan_t **plans;		/* plans[r - 1] runs r rows, all compiled at create */
	int ngraphs;			/* graphs[r - 1] replays a run of r rows */
	device_graph_t **graphs;
	int *graph_rows;		/* rows r run as graph_rows[r - 1] rows (the fastest size >= r) */
} model_exec_t;

/*
 * Load dir/model.json and the weights it names onto dev.  Refused, with a
 * message naming the file, the layer and the problem: missing tensor, wrong
 * tensor shape, unknown op, unsupported dtype, a malformed safetensors file.
 */
int model_load(device_t *dev, const char *dir, model_t **out, char **cause);
/* Free the model's weights and description (NULL is ignored). */
void model_free(model_t *m);
/* Input or output bytes for rows rows. */
size_t model_input_bytes(const model_t *m, int rows);
size_t model_output_bytes(const model_t *m, int rows);

/* Allocate a context's device buffers for max_batch_size rows and compile a plan for every batch size. */
int model_exec_create(const model_t *m, model_exec_t **out, char **cause);
void model_exec_free(model_exec_t *x);
/*
 * Capture a graph of the whole model for every batch size up to max_rows
 * (capped at max_batch_size) on compute stream s, then time them and let each
 * size replay the fastest graph of at least as many rows: cuBLAS's heuristics
 * pick slow kernels for some small batch sizes, and every op is row-wise, so
 * computing a few stale extra rows is harmless.  A no-op on backends without
 * graphs or when max_rows is 0.
 */
int model_exec_capture(model_exec_t *x, device_stream_t *s, int max_rows, char **cause);
/* Queue the whole model for rows rows on stream s: x->input to x->output
 * (one graph launch when a graph of that size was captured). */
int model_exec_run(model_exec_t *x, int rows, device_stream_t *s, char **cause);

#endif
