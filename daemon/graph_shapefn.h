/* graph_shapefn.h: every tensor's shape as a function of the graph's input dims, derived once by symbolic inference. */
#ifndef INFERD_GRAPH_SHAPEFN_H
#define INFERD_GRAPH_SHAPEFN_H

#include "graph.h"
#include "graph_sym.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract.  graph_shapefn_derive runs shape inference over g once with
 * symbolic dims: the batch dim is variable 0 of graph_sym.h, the graph's k-th
 * variable dim variable 1 + k, and every tensor's dims become expressions of
 * them.  Small integer tensors computed from shapes (Shape, Gather, Concat,
 * arithmetic, Where, Range, ConstantOfShape...) carry symbolic values, so
 * the Reshape targets, Slice bounds, Expand shapes and the like that
 * exporters compute from the input shapes are followed exactly.  No size is
 * ever sampled: what the function gives for a shape is what concrete
 * inference (graph_infer_shapes after graph_specialize) gives for it.
 *
 * A condition a node needs of its input dims that is not decided by the
 * derivation alone (two dims that must broadcast, a Reshape target that must
 * divide the element count, a window that must fit its padded input) becomes
 * a guard: an expression that is 1 exactly when the shapes are acceptable,
 * with the node and what fails.  An input shape for which every guard holds
 * infers; one for which a guard fails is refused by concrete inference too,
 * naming that node.
 *
 * Derivation fails (-1, naming the node and what it could not follow) when
 * a shape depends on values the function cannot follow (floating-point shape
 * arithmetic, values read from the request's data, a symbolic step or axis),
 * or a guard fails for every shape.
 */

struct graph_shapefn_shape {
	int ndims;
	int32_t dims[GRAPH_MAX_DIMS];	/* expression ids of the pool */
};

struct graph_shapefn_guard {
	int32_t cond;			/* 1 when acceptable */
	size_t node;			/* index in g->nodes */
	const char *what;		/* static text: what fails */
};

struct graph_shapefn {
	struct sym_pool pool;
	struct graph_shapefn_shape *shapes;	/* per tensor */
	struct graph_shapefn_guard *guards;
	size_t nguards, guards_cap;
	int32_t **values;		/* while deriving, per tensor: symbolic element values (NULL: not followed) */
	int *nvalues;
};

/*
 * Derive the shape function of g (see above); free with graph_shapefn_free.
 * var_hi (NULL, or 1 + g->nvars entries) bounds each variable from above
 * (0: unbounded), for dims the caller never lets exceed a maximum; the
 * function then holds for values within those bounds.
 */
int graph_shapefn_derive(const graph_t *g, const int64_t *var_hi, struct graph_shapefn **out, char **cause);
void graph_shapefn_free(struct graph_shapefn *f);

#ifdef __cplusplus
}
#endif

#endif
