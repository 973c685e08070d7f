/* model_impl.h: what the model loaders (layer format, ONNX), the settings parser and the contexts share. */
#ifndef INFERD_MODEL_IMPL_H
#define INFERD_MODEL_IMPL_H

#include <jansson.h>
#include <sys/types.h>

#include "graph_sym.h"
#include "model.h"
#include "model_config.h"

/*
 * Contract.  A loader builds m->graph (constants viewing a file it keeps
 * open), then calls model_finish, which checks every node against the device,
 * describes the inputs and outputs from the graph (settings from model.json
 * applied: max_batch_size, max_dims, renames), plans the arena at the largest
 * shape and binds the constants.  model.json settings are read by
 * model_config_*; every error names the key.
 */

/* Largest max_batch_size accepted; keeps every buffer size far from overflow. */
#define MODEL_MAX_BATCH 65536
/* max_batch_size of an ONNX model with a batch dimension when model.json does not set it. */
#define MODEL_DEFAULT_BATCH 64
/* Largest value of a variable dim when model.json's max_dims does not bound it. */
#define MODEL_DEFAULT_MAX_DIM 512
/* Plans kept per context for a model with variable dims, unless model.json's plan_cache says otherwise. */
#define MODEL_DEFAULT_PLAN_CACHE 64
/* Arena and tensor alignment in bytes. */
#define MODEL_ALIGN 64

/*
 * The output dims as functions of the input dims (graph_shapefn.h), as one
 * program: out_slot[o][d] is output o's dim d among the values sym_prog_eval
 * computes, and each guard's slot is 1 when the input shape is one the graph
 * takes (else the named node refuses it).
 */
struct model_guard {
	int32_t slot;
	const char *node;		/* the node's name in m->graph */
	const char *what;
};
struct model_shapefn {
	struct sym_prog prog;
	int out_ndims[MODEL_MAX_IO];
	int32_t out_slot[MODEL_MAX_IO][MODEL_MAX_DIMS];
	int out_var[MODEL_MAX_IO][MODEL_MAX_DIMS];	/* -1 constant, v >= 0 exactly graph variable v, -2 computed */
	size_t nguards;
	struct model_guard *guards;
	int batch_bound;		/* while building: an output's non-batch dims depend on the batch size */
};
/*
 * Derive m->shapefn from m->graph; errors name the node whose shapes cannot
 * be followed.  *fatal is set when the model cannot be batched as declared
 * (an output's non-batch dims follow the batch size): no per-shape fallback
 * serves that.
 */
int model_shapefn_build(model_t *m, int *fatal, char **cause);
/* Evaluate m->shapefn at s into vals and bad (prog.n each): -1 naming the node whose condition s fails. */
int model_shapefn_eval(const model_t *m, const struct model_shape *s, int64_t *vals, unsigned char *bad, char **cause);
/*
 * Lower each variable dim that from_cfg[v] says model.json did not bound to
 * the largest value at which every guard holds (the bound a constant table
 * the graph slices implies), logging each: 1 when some dim was lowered, 0
 * when none; -1 when no value fits, or when a guard fails at the configured
 * maxima, naming the node and max_dims.
 */
int model_shapefn_bound(model_t *m, const unsigned char *from_cfg, char **cause);
void model_shapefn_free(struct model_shapefn *f);

/* Rows a run may have: max_batch_size, or 1 for a model without a batch dimension. */
static inline int
model_max_rows(const model_t *m)
{
	return m->max_batch_size > 0 ? m->max_batch_size : 1;
}
/* The graph input shapes ([rows, dims...] or dims) of shape s, in g->inputs order. */
void model_graph_input_shapes(const model_t *m, const struct model_shape *s, struct graph_shape *in);
/* Check s (rows, every input's dims, shared variable dims equal) and copy it to out zero-padded. */
int model_shape_normalise(const model_t *m, const struct model_shape *s, struct model_shape *out, char **cause);
/* Copy size bytes of host data to device memory dst, synchronously. */
int model_copy_sync(device_t *dev, void *dst, const void *data, size_t size, char **cause);
/* device_alloc size bytes on dev and copy data there, synchronously. */
int model_upload(device_t *dev, const void *data, size_t size, void **out, char **cause);
/* Check, describe, plan and bind m->graph (see above); cfg is model.json or NULL. */
int model_finish(model_t *m, json_t *cfg, char **cause);
/* Whether the graph's inputs share a leading batch dimension (model_bind.c). */
int model_graph_has_batch(const graph_t *g);

/* label_filename (a file in m->dir, one class name per line) into m->labels (model_config_triton.c). */
int model_config_triton_labels(model_t *m, const char *file, char **cause);
/* "dynamic_batching", "labels", "warmup", "instance_group" and "padding" into m (max_batch_size already set). */
int model_config_serving(model_t *m, json_t *root, char **cause);
/* "padding" (optional) into m->padding: names only; model_padding_check (model_padding.h) resolves them. */
int model_config_padding(model_t *m, json_t *root, char **cause);
/* "warmup" (optional) into m->warmup: batch sizes in [1, max rows], data zeros, random or a file name. */
int model_config_warmup(model_t *m, json_t *root, char **cause);
/* "instance_group" (optional) into m->instances: [{"count": N, "devices": "cuda:0,cuda:1" | [...] | "cpu"}]. */
int model_config_instances(model_t *m, json_t *root, char **cause);
/* ONNX model.json: refuse unknown keys and a platform other than "onnx"; read max_batch_size, plan_cache. */
int model_config_onnx(model_t *m, json_t *root, int has_batch, char **cause);
/* The maximum of variable dim d of input name from "max_dims" (0 when not given; -1 on a bad entry). */
int model_config_max_dim(json_t *root, const char *input, int d, int64_t fixed, int64_t *out, char **cause);
/* "inputs"/"outputs" declared in an ONNX model.json (optional) agree with the graph's names, datatypes, dims. */
int model_config_check_io(model_t *m, json_t *root, char **cause);
/* The name "rename" gives tensor name, or name itself. */
const char *model_config_rename(json_t *root, const char *name);

/* Build m->graph from the layer format's model.json (root) and weights. */
int model_mlp_load(model_t *m, json_t *root, char **cause);
/* Build m->graph from dir/model.onnx: import, fold, fuse. */
int model_onnx_load(model_t *m, const char *path, char **cause);

#endif
