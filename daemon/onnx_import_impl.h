/* onnx_import_impl.h: state shared by the ONNX importer's model part and its per-op mapping. */
#ifndef INFERD_ONNX_IMPORT_IMPL_H
#define INFERD_ONNX_IMPORT_IMPL_H

#include "graph.h"
#include "onnx_decode.h"

/*
 * Contract: internal to onnx_import.c (tensors, names, order) and
 * onnx_import_ops.c (one ONNX node to graph nodes).  Names bound in the map
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
/* RNN, GRU, LSTM (onnx_import_rnn.c): gn's op and attributes; -1 with a cause naming the node. */
int imp_op_rnn(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause);
/* Map one ONNX node (in topological order) into the graph. */
int imp_node(struct imp *im, const struct onnx_node *on, char **cause);

#endif
