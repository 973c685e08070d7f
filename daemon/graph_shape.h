/* graph_shape.h: shape inference one node at a time (graph_infer_shapes in graph.h runs it over a graph). */
#ifndef INFERD_GRAPH_SHAPE_H
#define INFERD_GRAPH_SHAPE_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract: shapes[i] holds the concrete shape of every tensor node n reads;
 * graph_infer_node writes the shapes of n's outputs.  Inputs that decide an
 * output shape by their values (RESHAPE's target, EXPAND's shape,
 * CONSTANT_OF_SHAPE, RANGE) must be CONST tensors; SLICE, PAD, RESIZE and
 * SPLIT read their attributes, which the importer or graph_specialize resolved
 * (such a node still carrying its ONNX value inputs is unresolved and refused
 * here).  Errors name the node and the mismatch.
 */

/* Shapes of node n's outputs from the shapes of its inputs; -1 with a cause naming the node. */
int graph_infer_node(const graph_t *g, const struct graph_node *n, struct graph_shape *shapes,
    char **cause);

/* Seed shapes[]: constants from their declared dims, inputs from input_shapes (checked against their declarations). */
int graph_shapes_seed(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause);

/* numpy broadcast of a and b into out; -1 when they do not broadcast. */
int graph_shape_broadcast(const struct graph_shape *a, const struct graph_shape *b,
    struct graph_shape *out);

/* Format a shape as "[2,3,4]" into buf (always NUL-terminated); returns buf. */
const char *graph_shape_str(const struct graph_shape *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
