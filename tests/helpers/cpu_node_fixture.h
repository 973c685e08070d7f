/* cpu_node_fixture.h: a one-node graph built by hand for the CPU kernel tests. */
#ifndef INFERD_CPU_NODE_FIXTURE_H
#define INFERD_CPU_NODE_FIXTURE_H

#include <stdint.h>

#include "graph.h"

#define FIX_MAX_TENSORS 16

/*
 * A graph of one node whose tensors the test adds one by one (each with its
 * own zeroed memory); fix_run checks cpu_node_supported, sizes and allocates
 * the workspace, and runs the node.
 */
struct fix {
	graph_t g;
	struct graph_tensor t[FIX_MAX_TENSORS];
	struct graph_shape s[FIX_MAX_TENSORS];
	void *p[FIX_MAX_TENSORS];
	struct graph_node n;
	int in[FIX_MAX_TENSORS], out[FIX_MAX_TENSORS];
};

/* Start a node of op op. */
void fix_init(struct fix *f, enum graph_op op);
/* Add a tensor with memory; returns its index. */
int fix_tensor(struct fix *f, enum graph_dtype dt, int ndims, const int64_t *dims);
/* Add a tensor as the node's next input (returns its memory). */
void *fix_input(struct fix *f, enum graph_dtype dt, int ndims, const int64_t *dims);
/* Mark an omitted optional input. */
void fix_omit(struct fix *f);
/* Add a tensor as the node's next output (returns its memory). */
void *fix_output(struct fix *f, enum graph_dtype dt, int ndims, const int64_t *dims);
/* Run the node; -1 with a cause when unsupported or failing. */
int fix_run(struct fix *f, char **cause);
/* Free the tensors' memory. */
void fix_free(struct fix *f);

#endif
