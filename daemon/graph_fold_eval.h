/* graph_fold_eval.h: a small host evaluator for the nodes constant folding computes (shape arithmetic). */
#ifndef INFERD_GRAPH_FOLD_EVAL_H
#define INFERD_GRAPH_FOLD_EVAL_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract: evaluates one node whose inputs are all CONST tensors of g, for
 * the concrete shapes in shapes[] (outputs already inferred).  It covers what
 * exported graphs compute on constants: SHAPE, CONSTANT_OF_SHAPE, RANGE,
 * CAST, BINARY, simple UNARY, WHERE, GATHER, CONCAT, SLICE, SPLIT, RESHAPE,
 * EXPAND, TRANSPOSE and COPY, on INT64/INT32/INT8/UINT8/BOOL (exact integer
 * arithmetic) and FP32.  This is separate from the CPU kernels on purpose:
 * those are tuned FP32 tensor code, while shape arithmetic is INT64 (Shape
 * outputs, Gather indices, Equal/Where on dims) where exactness, not speed,
 * matters and the tensors hold a handful of elements.
 */

/*
 * Evaluate n: outs[k] receives a malloc'ed buffer (at least one byte) per
 * output.  Returns 1 when evaluated, 0 when the op/dtype is not covered
 * (nothing allocated), -1 with a cause for bad values (index out of range,
 * integer division by zero).
 */
int graph_eval_node(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes,
    void **outs, char **cause);

/* Values of CONST integer tensor t (I64/I32), at most max: 1 read, 0 not a constant integer tensor. */
int graph_const_ints(const graph_t *g, int t, int64_t *out, int max, int *n);

#ifdef __cplusplus
}
#endif

#endif
