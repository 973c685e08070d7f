/* graph_einsum.h: Einsum equations: ONNX's text parsed into labels, and each dim's label once the ranks are known. */
#ifndef INFERD_GRAPH_EINSUM_H
#define INFERD_GRAPH_EINSUM_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract.  The importer parses the equation once (graph_einsum_parse);
 * shape inference and the kernels expand it for the operands' ranks
 * (graph_einsum_expand), which gives every dim of every operand and of the
 * output a label id: a letter's id, or for the dims an ellipsis stands for,
 * GRAPH_EINSUM_LETTERS + k (k counted over the widest ellipsis, aligned
 * right, so that narrower ellipses broadcast against wider ones as numpy does).
 */

#define GRAPH_EINSUM_IDS (GRAPH_EINSUM_LETTERS + GRAPH_MAX_DIMS)

struct graph_einsum_dims {
	int ninputs;
	int rank[3];				/* operands, then the output */
	signed char lab[3][GRAPH_MAX_DIMS];	/* label id of each dim */
};

/* Parse an ONNX Einsum equation over ninputs operands into a; -1 naming what is not supported. */
int graph_einsum_parse(const char *eq, int ninputs, struct graph_einsum_attr *a, char **cause);
/* The labels of every dim for operands of ranks[0 .. ninputs-1]; -1 when a rank does not fit the equation. */
int graph_einsum_expand(const struct graph_einsum_attr *a, const int *ranks, struct graph_einsum_dims *d,
    char **cause);
/*
 * Each label's size (size[GRAPH_EINSUM_IDS], -1 for an unused label) from the
 * operands' shapes: a letter's dims must agree; an ellipsis dim may be 1
 * where another operand's is larger (broadcast).  -1 when they disagree.
 */
int graph_einsum_sizes(const struct graph_einsum_dims *d, const struct graph_shape *const *in, int64_t *size,
    char **cause);

#ifdef __cplusplus
}
#endif

#endif
