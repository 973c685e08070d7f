/* graph_fuse.h: load-time rewrites that merge common node patterns into one fused node. */
#ifndef INFERD_GRAPH_FUSE_H
#define INFERD_GRAPH_FUSE_H

#include "graph.h"

/*
 * graph_fuse rewrites a loaded graph (after constant folding) in place.  Each
 * rewrite applies only where it keeps the graph's results: every tensor it
 * removes has exactly one consumer inside the pattern and is not a graph
 * output, constants have the shape and value the rewrite needs, and shapes
 * that broadcasting could change are compared under two probe input shapes
 * (graph_infer_shapes with the batch and variable dims set to 2/3 and 3/5);
 * a rewrite that needs shapes is skipped when that inference fails.
 *
 *  - A Pad whose pads are all zero (not a graph output): removed, its
 *    readers read its input.
 *  - BatchNormalization on a Conv output with constant weights: folded into
 *    new conv weights and bias (constants the graph owns).
 *  - Decomposed exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)) in the orders torch
 *    exports (Div by sqrt 2 or Mul by 1/sqrt 2, the 0.5 applied first, last
 *    or to x, constants on either side) -> UNARY GELU; the tanh form
 *    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x^3 as Pow(x, 3) or
 *    x * (x * x) -> UNARY GELU_TANH.  Constants match within 1e-5 relative.
 *  - Decomposed LayerNorm over the last axis (ReduceMean, Sub, Pow 2 or
 *    Mul(d, d), ReduceMean, Add eps, Sqrt, Div[, Mul gamma[, Add beta]])
 *    -> LAYERNORM (axis -1, eps from the constant).
 *  - Conv/Gemm/MatMul + Add of a constant per-output-channel bias (the last
 *    dim for Gemm/MatMul) -> the node's bias input (a new 1-D constant).
 *  - Conv + Add of a non-constant tensor of the conv output's shape -> Conv
 *    with the residual as 4th input Z: y = act(conv + B + Z).
 *  - Add of two non-constant tensors of one shape read only by a
 *    LayerNormalization -> the norm normalises input 0 + its 4th input.
 *  - Conv/Gemm/MatMul (with any of the above) + Relu, Clip, Sigmoid, Tanh,
 *    Gelu, LeakyRelu, HardSigmoid, HardSwish -> the node's act.
 *
 * How indices stay valid: tensor indices never change.  New constants are
 * appended to g->tensors; tensors that only removed nodes used stay in the
 * array with no producer and no consumer (the memory planner leaves them
 * out).  A fused node takes the place of the pattern's last node, so the
 * node order stays topological; removed nodes are freed and the node array
 * is compacted.
 *
 * Returns the number of rewrites (0 or more), or -1 with *cause when a node
 * names a tensor outside the graph (nothing is changed) or memory runs out
 * (the graph is then still valid, fused only where done before).
 */
int graph_fuse(graph_t *g, char **cause);

/* A shape inference with graph_infer_shapes's contract. */
typedef int (*graph_fuse_infer_fn)(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause);

/* graph_fuse with another shape inference for the probes (graph_fuse passes graph_infer_shapes). */
int graph_fuse_shapes(graph_t *g, graph_fuse_infer_fn infer, char **cause);

/*
 * The backend a graph is fused for: whether it runs a node (NULL supports:
 * every node), and the shape inference for the probes (NULL:
 * graph_infer_shapes).
 */
struct graph_fuse_target {
	int (*supports)(void *arg, const graph_t *g, const struct graph_node *n);
	void *arg;
	graph_fuse_infer_fn infer;
};

/*
 * The rewrites into ops only some backends have, each made only where
 * target says the backend runs the fused node (after graph_fuse):
 *  - Scaled dot-product attention as exporters write it, MatMul(Q, Kt),
 *    an optional Div/Mul by a scalar constant, an optional Add of a mask,
 *    Softmax over the last axis, MatMul(P, V) -> ATTENTION (graph.h), with
 *    Q, Kt and V of one rank and equal leading dims under both probes.
 * Returns the number of rewrites, or -1 with *cause as graph_fuse.
 */
int graph_fuse_for(graph_t *g, const struct graph_fuse_target *target, char **cause);

#endif
