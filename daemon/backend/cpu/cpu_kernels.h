/* cpu_kernels.h: the CPU kernel library, one graph node at a time on host memory. */
#ifndef INFERD_CPU_KERNELS_H
#define INFERD_CPU_KERNELS_H

#include <stddef.h>

#include "graph.h"
#include "graph_fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract.  The CPU backend runs a planned graph by calling cpu_node_run for
 * each node in order.  Tensors are row-major and dense; image tensors are
 * NCHW (NCW, NCDHW).  The caller gives every tensor's concrete shape (from
 * graph_infer_shapes) and host address (from its memory plan) and, per node,
 * a scratch buffer of cpu_node_workspace() bytes aligned to at least 16
 * bytes.  cpu_node_run never allocates (only an error message on failure),
 * checks every shape it relies on and every runtime index (Gather, GatherElements), and
 * fails with a message naming the node instead of reading or writing out of
 * bounds.  cpu_node_supported looks only at the graph (op, attributes,
 * dtypes), so it can be asked at load time.  Outputs must not overlap inputs,
 * except for RESHAPE/COPY with identical addresses (then nothing is done).
 */

/*
 * Values of graph_resize_attr.coord and .nearest, in the order the ONNX
 * specification lists the attribute's values (the default is 0).
 */
enum cpu_resize_coord {
	CPU_RESIZE_HALF_PIXEL = 0,
	CPU_RESIZE_HALF_PIXEL_SYMMETRIC,
	CPU_RESIZE_PYTORCH_HALF_PIXEL,
	CPU_RESIZE_ALIGN_CORNERS,
	CPU_RESIZE_ASYMMETRIC,
	CPU_RESIZE_TF_CROP_AND_RESIZE,	/* refused */
};
enum cpu_resize_nearest {
	CPU_RESIZE_ROUND_PREFER_FLOOR = 0,
	CPU_RESIZE_ROUND_PREFER_CEIL,
	CPU_RESIZE_FLOOR,
	CPU_RESIZE_CEIL,
};

/* Bytes of scratch memory node n needs for these shapes (im2col buffers, ...); 0 for none. */
size_t cpu_node_workspace(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes);
/* 1 when the CPU kernels run node n (op, attributes, dtypes); else 0 and *why (malloc'ed) names what is missing. */
int cpu_node_supported(const graph_t *g, const struct graph_node *n, char **why);
/*
 * Run node n on the host.  shapes[i] and ptrs[i] are the concrete shape and host
 * memory of tensor i (constants included); inputs are read, outputs written.
 * workspace holds cpu_node_workspace() bytes.  Never allocates; -1 with a cause
 * naming the node for an unsupported combination.
 */
int cpu_node_run(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes,
    void *const *ptrs, void *workspace, char **cause);
/* The three above, as the host kernels constant folding runs nodes with (graph_fold.h). */
extern const struct graph_fold_kernels cpu_fold_kernels;

/*
 * Threads for every node run after the call, from any thread: the kernels'
 * OpenMP loops and the pieces each sgemm is split into (OpenBLAS itself is
 * set to one thread, so the two pools never spin against each other); n < 1
 * means one.  Call it before running nodes, not while a node runs.
 */
void cpu_kernels_set_threads(int n);
/* The thread count last set (1 before any call). */
int cpu_kernels_threads(void);

/*
 * Call first in main(): unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set,
 * exec argv again (same pid) with the OpenMP workers' spin bounded, after
 * which they sleep, so they never spin out their time slices against the
 * machine's other work; likewise, unless OPENBLAS_CORETYPE is set, when
 * OpenBLAS fell back to kernels older than the processor's (AVX-512 or AVX2)
 * ones, with OPENBLAS_CORETYPE naming those.  0 when nothing was needed; -1
 * with *cause when the exec failed (the caller warns and goes on).
 */
int cpu_threads_bound_waits(char **argv, char **cause);

#ifdef __cplusplus
}
#endif

#endif
