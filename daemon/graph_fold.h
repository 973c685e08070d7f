/* graph_fold.h: constant folding at load, and specialization of a graph for concrete input shapes. */
#ifndef INFERD_GRAPH_FOLD_H
#define INFERD_GRAPH_FOLD_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Two stages remove everything that is not tensor arithmetic on requests:
 *
 * 1. graph_fold_constants, once at load: every node whose inputs are all
 *    constants is evaluated and its outputs become constants the graph owns;
 *    nodes whose outputs nobody reads are dropped; unreferenced tensors are
 *    removed (tensor indices are renumbered here, and only here).
 *
 * 2. graph_specialize, per set of concrete input shapes: SHAPE nodes become
 *    constants (the shape is known), and so does everything that depends only
 *    on constants (Gather/Concat/Slice/Cast/Equal/Where/ConstantOfShape/Range/
 *    Expand chains, Reshape targets).  Then SLICE/PAD/RESIZE/SPLIT attributes
 *    computed from those values are resolved.  The result is a graph_spec:
 *
 *      - spec->graph has the SAME tensors, at the SAME indices, as the source
 *        graph; folded tensors are flagged CONST and carry the values for
 *        these shapes.  Its node list holds only the runtime nodes, in the
 *        source order.  No SHAPE node remains, nor a CONSTANT_OF_SHAPE or
 *        RANGE one unless marked no_fold (no backend runs them today).
 *      - Which nodes fold depends only on the graph's structure (a node folds
 *        when all its inputs are constants or it is a SHAPE node, unless
 *        graph_fold_mark_growth marked it no_fold), never on the shape
 *        values: every specialization of one graph has the same
 *        runtime nodes reading and writing the same tensor indices.  A memory
 *        plan computed on the specialization for the maximum shapes is
 *        therefore valid, offset for offset, for any smaller shapes; the
 *        folded constants (tiny shape vectors, masks) live in the spec.
 *      - spec->shapes[i] is the concrete shape of tensor i.
 *
 * The small evaluator in graph_fold_eval.h computes the folded values; ops it
 * does not cover run on the host kernels passed in (struct graph_fold_kernels).
 */

/*
 * The host kernels folding runs a node with when the small evaluator does not
 * cover its op (a backend's, passed in by the caller so that the graph code
 * depends on no backend; NULL folds only what the small evaluator covers).
 * The members have the CPU backend's cpu_node_* contracts.
 */
struct graph_fold_kernels {
	int (*supported)(const graph_t *g, const struct graph_node *n, char **why);
	size_t (*workspace)(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes);
	int (*run)(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes,
	    void *const *ptrs, void *workspace, char **cause);
};

/* A graph specialized for one set of input shapes (see above). */
struct graph_spec {
	graph_t graph;			/* same tensors as the source; runtime nodes only */
	struct graph_shape *shapes;	/* ntensors concrete shapes */
	size_t *node_src;		/* source node index of each runtime node */
	size_t nfolded;			/* source nodes folded away for these shapes */
	const graph_t *source;
};

/*
 * Resolve node n's SLICE/PAD/RESIZE/SPLIT attributes from its value inputs
 * when those are all constants (rank: the data input's rank, -1 when not
 * known yet, needed only for Pad's axes); the node then keeps only its data
 * input.  Returns 1 when resolved (or nothing to resolve), 0 when some value
 * input is not constant yet, -1 with a cause on a bad value.
 */
int graph_node_resolve(graph_t *g, struct graph_node *n, int rank, char **cause);

/* Fold constant nodes and drop dead ones, at load; *nremoved counts the nodes removed. */
int graph_fold_constants(graph_t *g, const struct graph_fold_kernels *k, size_t *nremoved, char **cause);

/*
 * Folding must not turn small constants into a large one: a specialization
 * holds its folded constants for as long as its plan is cached (on a GPU a
 * copy per cached shape), so BERT's token-type lookup, a Gather of a [2, 768]
 * table by an all-zero [rows, length] index, would cost 50 MB a plan at 64 x
 * 256 where running it costs a lookup.  A node grows when its outputs would
 * take more than GRAPH_FOLD_GROW_FLOOR bytes and more than GRAPH_FOLD_GROWTH
 * times its inputs' bytes; shape arithmetic (small INT64 vectors) stays under
 * the floor and always folds.
 */
#define GRAPH_FOLD_GROW_FLOOR ((int64_t)64 << 10)
#define GRAPH_FOLD_GROWTH 4

/* Whether the device runs node n of specialization g at run time (what may be left unfolded). */
typedef int (*graph_fold_runs_fn)(void *arg, const graph_t *g, const struct graph_node *n);

/*
 * Mark no_fold the nodes that grow (above) when g is specialized for
 * input_shapes (the largest shapes the model takes) and that runs says the
 * device runs; every specialization then keeps them, and what reads them, at
 * run time.  The marks are decided once, at the largest shapes, so that which
 * nodes fold stays independent of the shape (see above).  When keeping them
 * would leave a value some node needs unknown (a Reshape target, a Slice
 * bound), nothing is marked and folding stays as it was.  Returns how many
 * nodes it marked.
 */
size_t graph_fold_mark_growth(graph_t *g, const struct graph_fold_kernels *k, const struct graph_shape *input_shapes,
    graph_fold_runs_fn runs, void *arg);

/* Specialize g for concrete input shapes (g->inputs order); free with graph_spec_free. */
int graph_specialize(const graph_t *g, const struct graph_fold_kernels *k, const struct graph_shape *input_shapes,
    struct graph_spec **out, char **cause);

/* Free a specialization (never graph_free its graph: names and arrays are shared with the source). */
void graph_spec_free(struct graph_spec *s);

#ifdef __cplusplus
}
#endif

#endif
