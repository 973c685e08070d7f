/* graph_test_util.h: build small graphs by hand and evaluate them in double precision, for the graph tests. */
#ifndef INFERD_GRAPH_TEST_UTIL_H
#define INFERD_GRAPH_TEST_UTIL_H

#include <stdint.h>

#include "graph.h"

/*
 * Builders exit(1) on no memory (test code).  Every tensor is FP32; names are
 * copied.  The evaluator is a plain reference written for the tests: one loop
 * nest per op, in double, with numpy broadcasting; it knows only the ops and
 * attributes the tests use (CONV 2-D with groups 1, BATCHNORM, BINARY,
 * UNARY, REDUCE mean/sum, LAYERNORM, GEMM, MATMUL with a 2-D B, RESHAPE).
 */

/* An empty graph. */
graph_t *gt_new(void);
/* Add a tensor with flags and a declared shape (ndims -1: unknown); its index. */
int gt_tensor(graph_t *g, const char *name, unsigned flags, int ndims, const int64_t *dims);
/* Add an owned FP32 constant (data copied); its index. */
int gt_const(graph_t *g, const char *name, int ndims, const int64_t *dims, const float *data);
/* Add a scalar (rank 0) FP32 constant. */
int gt_scalar(graph_t *g, const char *name, float v);
/* Add a node with one output; its index.  Attributes are zero. */
int gt_node(graph_t *g, const char *name, enum graph_op op, int nin, const int *in, int out);
/* Shortcuts for element-wise nodes; they return the node index. */
int gt_binary(graph_t *g, const char *name, enum graph_binary fn, int a, int b, int out);
int gt_unary(graph_t *g, const char *name, enum graph_unary fn, int x, int out);
/* Declare t a graph input (or output), in order. */
void gt_input(graph_t *g, int t);
void gt_output(graph_t *g, int t);
/* A fresh intermediate tensor of unknown shape. */
int gt_temp(graph_t *g, const char *name);
/* The index of the first live node of op (and unary/binary fn when >= 0), or -1. */
int gt_find(const graph_t *g, enum graph_op op, int fn);

/* A value: a concrete shape and its elements. */
struct gt_value {
	struct graph_shape s;
	double *v;
};

/*
 * Evaluate g on its inputs (in g->inputs order): vals gets one value per
 * tensor (constants converted, unset ones NULL).  0, or -1 after printing why.
 */
int gt_eval(const graph_t *g, const struct gt_value *inputs, struct gt_value *vals);
/* Free the values gt_eval made (n entries). */
void gt_values_free(struct gt_value *vals, size_t n);
/* Max |a - b| / max(1, max |b|) over the elements of two same-shaped values; 1e30 if the shapes differ. */
double gt_compare(const struct gt_value *a, const struct gt_value *b);
/*
 * graph_infer_shapes's contract, from the evaluator run on zero inputs: the
 * tests' independent shape inference for graph_fuse_shapes.
 */
int gt_infer_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause);
/* A random value of the given shape, uniform in [lo, hi). */
struct gt_value gt_random(int ndims, const int64_t *dims, uint64_t *state, double lo, double hi);

#endif
