/* onnx_import_impl.h: state shared by the ONNX importer's model part and its per-op mapping. */
#ifndef INFERD_ONNX_IMPORT_IMPL_H
#define INFERD_ONNX_IMPORT_IMPL_H

#include "graph.h"
#include "onnx_decode.h"

/*
 * Contract: internal to onnx_import.c (tensors, names, order),
 * onnx_import_ops.c (one ONNX node to graph nodes, with onnx_import_more.c
 * and onnx_import_rnn.c for some ops) and onnx_import_attr.c (what they read).  Names bound in the map
 * point into the decoded model, which outlives the import.
 */

#define IMP_MAX_VARS 32

struct name_slot { const char *key; int value; };

/* Open-addressing map from tensor names to tensor indices. */
struct name_map {
	struct name_slot *slots;
	size_t cap, count;
};

struct imp {
	const onnx_model_t *m;
	int64_t opset;			/* ai.onnx opset */
	graph_t *g;
	size_t tcap, ncap;		/* allocated tensors, nodes */
	struct name_map names;		/* ONNX value name -> tensor index (aliases included) */
	size_t *order;			/* ONNX node indices in topological order */
	const char *batch_name;
	const char *var_names[IMP_MAX_VARS];
};

/* Bind key to value; -1 when out of memory. */
int name_map_put(struct name_map *nm, const char *key, int value);
/* Value bound to key, or -1. */
int name_map_get(const struct name_map *nm, const char *key);
/* Name of an ONNX element type. */
const char *onnx_elem_name(int elem);

/* Append a tensor (name copied and bound); its index or -1. */
int imp_tensor_add(struct imp *im, const char *name, enum graph_dtype dt, char **cause);
/* Append a CONST tensor viewing src's bytes; its index or -1. */
int imp_const_add(struct imp *im, const char *name, const struct onnx_tensor *src, char **cause);
/* Append a zeroed node with index arrays of the given sizes (filled with -1). */
struct graph_node *imp_node_new(struct imp *im, const char *name, int ninputs, int noutputs,
    char **cause);
/* Node name for messages: its name, else its first output. */
const char *imp_node_label(const struct onnx_node *on);
/* Refuse the model at node on: "node 'N' (Op, opset V): what"; always -1. */
int imp_refuse(struct imp *im, const struct onnx_node *on, char **cause, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Attribute values, or def when absent. */
int64_t imp_attr_int(const struct onnx_node *on, const char *name, int64_t def);
float imp_attr_float(const struct onnx_node *on, const char *name, float def);
const char *imp_attr_str(const struct onnx_node *on, const char *name, const char *def);
/* Ints attribute into out (at most max, else refused); *n = 0 when absent. */
int imp_attr_ints(struct imp *im, const struct onnx_node *on, const char *name, int64_t *out, int max,
    int *n, char **cause);
/* Read a CONST integer input k of gn (I64/I32, at most max values); 0 when it is not such a constant. */
int imp_const_ints(struct imp *im, const struct graph_node *gn, int k, int64_t *out, int max, int *n);
/* Read a CONST FP32 scalar input k; 0 when absent or not a constant. */
int imp_const_float(struct imp *im, const struct graph_node *gn, int k, float *out);
/* Keep only the first n inputs of gn. */
void imp_trim_inputs(struct graph_node *gn, int n);
/* ScatterElements, OneHot, InstanceNormalization, GroupNormalization, Einsum, ArgMax/ArgMin, Tile (onnx_import_more.c). */
int imp_op_scatter_elements(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
int imp_op_onehot(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
int imp_op_norm(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
int imp_op_einsum(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
int imp_op_argmax(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
int imp_op_tile(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
/* RNN, GRU, LSTM (onnx_import_rnn.c): gn's op and attributes; -1 with a cause naming the node. */
int imp_op_rnn(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
/* Map one ONNX node (in topological order) into the graph. */
int imp_node(struct imp *im, const struct onnx_node *on, char **cause);

#endif
