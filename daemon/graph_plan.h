/* graph_plan.h: one arena for every computed tensor of a graph, laid out by liveness at load. */
#ifndef INFERD_GRAPH_PLAN_H
#define INFERD_GRAPH_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* offsets[t] for a tensor that is not in the arena. */
#define GRAPH_PLAN_NONE SIZE_MAX

/*
 * The arena holds every tensor a node writes, plus the graph's inputs (the
 * request's data is copied into their slots) and outputs (read out of
 * theirs).  Constants stay where their data is (offsets[t] ==
 * GRAPH_PLAN_NONE; a constant graph output is read from its data), and so do
 * tensors no live node reads or writes.
 *
 * A tensor is live from the node that writes it (a graph input: from the
 * start) to the last node that reads it (a graph output: to the end), both
 * included, so a node's inputs and outputs never share bytes.  Offsets are
 * assigned greedily, largest tensor first, each into the tightest gap among
 * the tensors whose lifetimes overlap it (best fit).  A RESHAPE whose input
 * is not a graph output and is last read by that reshape writes its output at
 * the input's offset: the backend may skip the copy when the offsets match.
 *
 * The plan is made once, from the shapes at max_batch_size and the maximum
 * variable dims, and serves every smaller shape unchanged:
 * graph_plan_fits checks that no tensor outgrows its slot.
 */
struct graph_memory_plan {
	size_t arena_bytes;	/* the arena's size, a multiple of the alignment */
	size_t naive_bytes;	/* sum of the planned tensors' aligned sizes (no sharing) */
	size_t ntensors;
	size_t *offsets;	/* per tensor, a multiple of the alignment, or GRAPH_PLAN_NONE */
	size_t *sizes;		/* per tensor, bytes at the planned shapes (0 outside the arena) */
};

/*
 * Plan g's arena for the tensor shapes given (graph_infer_shapes at the
 * maximum shapes, one per tensor) with offsets and sizes rounded to alignment
 * (a power of two).  -1 with *cause on a bad argument, an impossible shape,
 * a size overflow or no memory; out is then empty.
 */
int graph_plan_memory(const graph_t *g, const struct graph_shape *shapes, size_t alignment,
    struct graph_memory_plan *out, char **cause);

/* 0 when every planned tensor of g at these shapes fits its slot; -1 with *cause naming one that does not. */
int graph_plan_fits(const struct graph_memory_plan *plan, const graph_t *g,
    const struct graph_shape *shapes, char **cause);

/* Free the plan's arrays (the struct itself is the caller's; NULL is ignored). */
void graph_plan_free(struct graph_memory_plan *plan);

#endif
