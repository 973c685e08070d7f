/* model.h: a model loaded from its repository directory, and its execution contexts. */
#ifndef INFERD_MODEL_H
#define INFERD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "device_spec.h"
#include "graph.h"
#include "graph_plan.h"
#include "model_memory.h"

/*
 * Contract.  A model directory holds either model.json + weights in the
 * layer format (platform "inferd_mlp") or model.onnx with an optional
 * model.json of serving settings (platform "onnx"); docs/MODELS.md has both.
 * A model directory may also hold versions (<dir>/<N>/ with the model files,
 * model.json staying in <dir>; repository_scan.h has the layout), loaded
 * by model_load_version from the directory the repository resolves
 * (repository_version_dir).
 * model_load turns either into one graph (graph.h), checks every node against
 * the device, plans one arena at the largest shape (max_batch_size rows, every
 * variable dim at its maximum) and binds the constants (uploaded once on a
 * GPU; in place on the CPU).  A model has up to MODEL_MAX_IO named inputs and
 * outputs of any graph dtype; their dims exclude the batch dimension (when
 * max_batch_size is 0 the model has none and dims are the whole shape, one
 * request per run).  A dim of -1 is variable, bounded by max_dims.
 *
 * A batch context (model_exec_t) owns one arena and the plans that run in
 * it; the batch's inputs are written at model_exec_input and its outputs read
 * at model_exec_output, rows packed.  Without variable dims a plan per batch
 * size is compiled at create; with them the largest shape's plan is compiled
 * at create and a plan per exact shape on first use, kept in a bounded LRU
 * (plan_cache entries).  On a GPU the context also owns one scratch workspace
 * (cuDNN workspaces, column buffers, FP32 islands) that all its plans share,
 * sized at create by measuring the largest shape's plan (device_plan_measure)
 * before any plan is compiled or graph captured; plans of other shapes choose
 * engines within it (without variable dims, a size that still needs more
 * grows it and every size compiles again, before any capture; with them, a
 * first-use plan that cannot fit takes scratch of its own).  With variable dims a GPU context also owns a pool for
 * the constants each cached shape folds (a slot per entry, sized at the
 * largest shape), and each shape's plan is captured as a CUDA graph on its
 * first run (model_exec_capture's row limit) and cached with it; evicting an
 * entry waits for the stream, then frees its graph and plan.  Arena,
 * workspace and pool are device_alloc'ed at create only, so
 * device_allocation_count stays flat after model_exec_create.  What a shape's
 * first use still allocates on CUDA, outside that count, is the plan's own:
 * its small tables (batched-GEMM pointer arrays, resize taps, the gather
 * error word), scratch when it cannot fit the workspace, and at fp16 its FP16 input/output buffers and FP16 copies of
 * the constants it folded.  Every exact shape is its own entry; a model
 * that pads (struct model_padding) runs its batches at bucket lengths only.
 */

#define MODEL_MAX_IO 16			/* tensors per side */
#define MODEL_MAX_DIMS 8
#define MODEL_MAX_PREFERRED 16
#define MODEL_NAME_MAX 128

/* One input or output; dims exclude the batch dimension. */
struct model_io {
	char name[MODEL_NAME_MAX];
	enum graph_dtype dtype;
	int ndims;
	int64_t dims[MODEL_MAX_DIMS];		/* -1: variable (reported as -1 in metadata) */
	int64_t max_dims[MODEL_MAX_DIMS];	/* inputs: the largest value each dim may take (== dims[i] when fixed);
						 * outputs: each dim at the largest input shape */
	char datatype[16];			/* graph_dtype_name(dtype), the KServe name */
	char format[16];			/* inputs: Triton's "FORMAT_NCHW"/"FORMAT_NHWC" as configured, else "" */
	size_t row_elems;			/* product of max_dims */
	/* Private to the engine: */
	int tensor;				/* graph tensor index */
	int8_t var[MODEL_MAX_DIMS];		/* per dim: the graph's variable index, -1 fixed, -2 computed
						 * (an output dim that is a function of several or none exactly) */
};

/* Dynamic batching settings from model.json. */
struct model_batching {
	uint64_t max_queue_delay_us;
	int preferred[MODEL_MAX_PREFERRED];
	int npreferred;
	size_t max_queue_size;		/* requests waiting; more is "busy" */
	uint64_t default_timeout_us;
	int eager_dispatch;		/* 1: dispatch at once when waiting cannot grow the batch; 0: wait out the delay */
};

/* Warm-up from model.json "warmup" (docs/MODELS.md): requests run before the model is reported ready. */
#define MODEL_MAX_WARMUP 16		/* entries of "warmup" */
#define MODEL_MAX_WARMUP_SIZES 16	/* batch sizes per entry */
#define MODEL_WARMUP_FILE_MAX 256	/* a sample file's name */
enum model_warmup_data {
	MODEL_WARMUP_ZEROS,		/* every input all zeros */
	MODEL_WARMUP_RANDOM,		/* floating inputs uniform in [0, 1), integer and bool inputs 0 or 1 */
	MODEL_WARMUP_FILE,		/* one row of every input, raw little-endian in input order, in every row */
};
struct model_warmup_entry {
	int nsizes;
	int batch_sizes[MODEL_MAX_WARMUP_SIZES];
	enum model_warmup_data data;
	char file[MODEL_WARMUP_FILE_MAX];	/* MODEL_WARMUP_FILE: a file name in the model directory */
};
struct model_warmup_spec {
	int count;			/* 0: no warm-up */
	struct model_warmup_entry entries[MODEL_MAX_WARMUP];
};

/* Execution instances from model.json "instance_group" (docs/MODELS.md); the batcher decides how to use them. */
#define MODEL_MAX_INSTANCE_GROUPS 8
#define MODEL_MAX_GROUP_DEVICES 16
#define MODEL_MAX_INSTANCES 64		/* instances in all groups together */
struct model_instance_group {
	int count;			/* instances on each device of the group */
	int ndevices;			/* 0: the daemon's device (its `device` setting decides) */
	struct device_spec devices[MODEL_MAX_GROUP_DEVICES];	/* distinct; never DEVICE_SPEC_AUTO */
};
struct model_instances {
	int ngroups;			/* 0: no instance_group: one instance on the daemon's device */
	struct model_instance_group groups[MODEL_MAX_INSTANCE_GROUPS];
};

/*
 * Batching requests of different lengths (model.json "padding", or detected:
 * docs/MODELS.md).  var is the padded variable dim; every input carrying it
 * is padded along it with its value; a batch runs at the smallest bucket
 * holding its longest request.  Only a model whose padded and unpadded runs
 * agreed at load (model_padding_check) has on set; others batch only
 * requests of equal dims.
 */
#define MODEL_MAX_BUCKETS 32
enum model_padding_mode {
	MODEL_PADDING_DETECT = 0,	/* no "padding": an integer attention_mask input turns it on */
	MODEL_PADDING_OFF,		/* "padding": false */
	MODEL_PADDING_DECLARED,		/* "padding": {...} */
};
struct model_padding {
	enum model_padding_mode mode;
	int on;				/* confirmed at load: requests of different lengths share batches */
	int var;			/* the padded graph variable (when on) */
	char dim_input[MODEL_NAME_MAX];	/* declared: the input whose dim "dim" names the padded one */
	int dim;			/* declared: that dim, counting the batch dim as 0 */
	char value_names[MODEL_MAX_IO][MODEL_NAME_MAX];	/* declared "values": input names ... */
	double value_of[MODEL_MAX_IO];	/* ... and their pad values */
	int nvalues;
	double values[MODEL_MAX_IO];	/* per input index: its pad value (resolved) */
	int64_t buckets[MODEL_MAX_BUCKETS];	/* ascending, the last the dim's maximum */
	int nbuckets;
};

struct onnx_model;
struct st_file;
struct model_shapefn;

typedef struct model {
	char name[MODEL_NAME_MAX];
	char *dir;			/* the model directory (model.json) */
	char *version_dir;		/* where the model files are: dir/<version>, or dir in the flat layout */
	int64_t version;		/* 1 in the flat layout */
	device_t *dev;
	int max_batch_size;		/* 0: no batch dimension (one request per run) */
	struct model_batching batching;
	size_t nlabels;
	char **labels;			/* class names, optional */
	struct model_warmup_spec warmup;	/* run by model_warmup (model_warmup.h) */
	struct model_instances instances;	/* "instance_group", parsed and checked, not acted on here */
	struct model_padding padding;	/* batching across lengths (above) */
	int strings;			/* BYTES tensors: each batch holds one request, on the CPU backend */
	const char *platform;		/* "inferd_mlp" or "onnx" */
	int ninputs, noutputs;
	struct model_io inputs[MODEL_MAX_IO], outputs[MODEL_MAX_IO];
	/* Copies of inputs[0] and outputs[0] (the layer format's single tensors). */
	struct model_io input, output;

	/* Private to the engine below. */
	size_t nlayers;			/* inferd_mlp: layers listed in model.json */
	graph_t *graph;			/* folded and fused; constants bound through consts */
	void **consts;			/* per tensor: the constant's device address (NULL otherwise) */
	int consts_owned;		/* consts[] were device_alloc'ed (GPU) rather than bound in place */
	struct st_file *weights;	/* inferd_mlp: the weights' private copy the constants view */
	struct onnx_model *onnx;	/* onnx: the decoded file (a private copy) the constants view */
	struct graph_memory_plan mem;	/* the arena at the largest shape */
	size_t arena_bytes;		/* mem's arena, then a slot per output the graph computes at load */
	size_t const_out[MODEL_MAX_IO];	/* per output: its slot's offset past mem's arena, SIZE_MAX when computed */
	size_t const_out_bytes[MODEL_MAX_IO];	/* that slot's size */
	int nconst_out;			/* outputs that specialization folds to constants (e.g. a Shape) */
	int nvars;			/* variable dims of the graph (0: plans per batch size at create) */
	struct model_shapefn *shapefn;	/* the output dims as functions of the input dims (model_impl.h) */
	char *config_override;		/* the load's config override (NULL: none), for loading the same model again */
	/*
	 * At tf32, fp16 or bf16: the largest relative error of a floating output against
	 * the same model at FP32, measured at load (model_precision_check); -1 when
	 * not measured.
	 */
	double precision_error;
	int precision;			/* enum graph_precision: model.json's "precision", the plans' compile option */
	int batch_invariant;		/* model.json's "batch_invariant" (default 1): device_plan_options.batch_invariant */
	int64_t var_max[MODEL_MAX_IO * MODEL_MAX_DIMS];
	int plan_cache;			/* variable dims: plans kept per context */
	/*
	 * The version's device memory (model_memory.h): weights counted when the
	 * constants are bound; the serving contexts' figures added by whoever
	 * creates them (the repository, from model_exec_t.memory and its queues).
	 */
	struct model_memory memory;
} model_t;

/* The concrete shape of one batch: rows and every input's non-batch dims. */
struct model_shape {
	int rows;
	int64_t dims[MODEL_MAX_IO][MODEL_MAX_DIMS];	/* dims[i][d] for input i (ndims from model->inputs[i]) */
};

struct model_plan_entry;

/* Buffers and compiled plans for one batch in flight: every model_exec_run uses only these. */
typedef struct model_exec {
	const model_t *model;
	void *arena;			/* device: every computed tensor, inputs and outputs included */
	void **addrs;			/* per graph tensor: its device memory */
	int nplans;			/* fixed dims: plans[r - 1] runs r rows; variable: LRU slots */
	int bucketed;			/* on a GPU: batches run at model_exec_rows_run sizes (fixed dims: only their plans) */
	int background;			/* plans leave slow engines to worker threads, settled on first use (not when redoing one) */
	struct model_plan_entry *plans;
	uint64_t clock;			/* LRU time */
	void *ws;			/* device: scratch shared by every plan (GPU; NULL when none needs any) */
	size_t ws_bytes;
	void *pool;			/* device, variable dims on a GPU: the constants each cached shape folds */
	size_t pool_slot;		/* bytes per cache entry (entry i at pool + i * pool_slot) */
	int lazy_graph_rows;		/* variable dims: shapes of up to this many rows run a graph captured on first use */
	int ngraphs;			/* graphs[r - 1] replays a run of r rows (NULL: a size not captured) */
	device_graph_t **graphs;
	int *graph_rows;		/* rows r run as graph_rows[r - 1] rows (the fastest size >= r) */
	/*
	 * What this context allocated (model_memory.h), counted by
	 * model_exec_create (arena, workspace, pool, its plans' own memory and
	 * the FP16 weight copies they created) and model_exec_capture (graphs).
	 */
	struct model_memory memory;
} model_exec_t;

/*
 * Load the model in dir onto dev: model.onnx when present, else model.json in
 * the layer format.  Refused with a message naming the file and the problem
 * (node name and op for an ONNX node the device cannot run, layer and tensor
 * for the layer format, key for model.json).
 */
int model_load(device_t *dev, const char *dir, model_t **out, char **cause);
/*
 * Load version `version` of the model in model_dir: model.json is read from
 * model_dir and the model files (model.onnx, or the layer format's weights)
 * from files_dir, which the repository resolves (repository_version_dir:
 * model_dir/<version>/, or model_dir itself in the flat layout, where this is
 * exactly model_load).  config_override is NULL or a JSON object text whose
 * top-level keys replace model.json's (Triton's load with a config).  Sets
 * m->version.  Errors name the file (or the override).
 */
int model_load_version(device_t *dev, const char *model_dir, const char *files_dir, int64_t version,
    const char *config_override, model_t **out, char **cause);
/* Instances "instance_group" asks for in all (count times the devices of each group); 1 without it. */
int model_instance_count(const model_t *m);
/* Free the model's weights and description (NULL is ignored). */
void model_free(model_t *m);

/*
 * A model with no batch dimension whose inputs all start with the same fixed
 * dim N (rank 2 or more): N, the batch it was exported with (a static-shape
 * export such as [1, 3, 224, 224]); else 0.  Requests of another batch are
 * refused by model_fixed_batch_refuse, naming the input, its dim, N and how to
 * re-export with a dynamic batch axis.
 */
int64_t model_fixed_batch(const model_t *m);
int model_fixed_batch_refuse(const model_t *m, int input, int64_t v, char **cause);
/* Check a request's non-batch dims of input i (fixed dims equal, variable dims in [1, max]); -1 naming input and dim. */
int model_check_dims(const model_t *m, int input, int ndims, const int64_t *dims, char **cause);
/* Bytes of input i for one row of the shape s (product of the non-batch dims * dtype size). */
size_t model_input_row_bytes(const model_t *m, int i, const struct model_shape *s);

/* A request's output layout: every output's non-batch dims and the bytes of one row, for its input shape. */
struct model_layout {
	int64_t dims[MODEL_MAX_IO][MODEL_MAX_DIMS];	/* outputs[o].ndims of them per output */
	size_t row_bytes[MODEL_MAX_IO];
};
/*
 * The output layout of input shape s (rows and every input's dims, already
 * checked by model_check_dims): the functions of the input dims derived at
 * load (model_shapefn_build), evaluated for s in well under a microsecond,
 * never by running or specialising the graph.  -1 with a cause naming the
 * node when the graph cannot take s (a Reshape that does not divide, dims
 * that do not broadcast), or when an output would be larger than at the
 * largest shape the model's memory was planned for.
 */
int model_output_layout(const model_t *m, const struct model_shape *s, struct model_layout *out, char **cause);
/* Bytes of one row of output o at the largest input shape (the most a row of HTTP staging needs for it). */
size_t model_output_max_row_bytes(const model_t *m, int o);
/* Index of the input/output named name, or -1. */
int model_input_index(const model_t *m, const char *name);
int model_output_index(const model_t *m, const char *name);
/* Fill s for rows rows with every dim at its maximum (the fixed shape of a model without variable dims). */
void model_shape_max(const model_t *m, int rows, struct model_shape *s);

/* Allocate a context's arena for the largest batch and compile its plans (all of them without variable dims). */
int model_exec_create(const model_t *m, model_exec_t **out, char **cause);
/* A context for a run or two at load (the padding and precision checks, warm-up): only the largest shape compiled now. */
int model_exec_create_lazy(const model_t *m, model_exec_t **out, char **cause);
void model_exec_free(model_exec_t *x);
/* Device addresses where the batch's input i / output o starts: row r at r * row_bytes.  Fixed for the context. */
void *model_exec_input(model_exec_t *x, int i);
void *model_exec_output(model_exec_t *x, int o);
/*
 * Queue the model for shape s on compute stream st (a captured graph when
 * there is one of that size, else the plan; a shape with variable dims not
 * seen before is compiled first and cached, never allocating device memory).
 */
int model_exec_run(model_exec_t *x, const struct model_shape *s, device_stream_t *st, char **cause);
/* model_exec_run at the maximum dims for rows rows (the single-tensor path). */
int model_exec_run_rows(model_exec_t *x, int rows, device_stream_t *st, char **cause);
/*
 * The batch size a batch of rows rows runs at: rows itself, or on a GPU the
 * next of 1, 2, 3, 4, 6, 8, 12, 16, ... and the largest (the sizes a context
 * compiles: every one for fixed dims, and with variable dims and padding
 * each at every length bucket): the extra rows are computed and never read
 * (rows are independent).
 */
int model_exec_rows_run(const model_exec_t *x, int rows);
/*
 * Capture a graph of the whole model for every batch size up to max_rows
 * (capped at max_batch_size) on compute stream s, then time them and let each
 * size replay the fastest graph of at least as many rows: cuBLAS's heuristics
 * pick slow kernels for some small batch sizes, and every op is row-wise, so
 * computing a few stale extra rows is harmless.  A no-op on backends without
 * graphs, for models with variable dims, or when max_rows is 0.
 */
int model_exec_capture(model_exec_t *x, device_stream_t *s, int max_rows, char **cause);
/*
 * Profile (a diagnostic, device_plan_profile) the plan model_exec_run_rows
 * would run for rows rows: the plan of the rows a captured graph pads the
 * batch to, *ran_rows, run once uncaptured on st with each step timed.  The
 * inputs are whatever the arena holds.  *out is malloc'ed (*n entries).
 */
int model_exec_profile(model_exec_t *x, int rows, device_stream_t *st, struct device_step_time **out, size_t *n,
    int *ran_rows, char **cause);

/* Whether m's plans are compiled batch-invariant: its "batch_invariant", where requests can share a batch. */
static inline int
model_batch_invariant(const model_t *m)
{
	return m->batch_invariant && m->max_batch_size > 1;
}

#endif
