/* cpu_dnnl.h: the CPU plan's oneDNN side: Conv, ConvTranspose, pools, Concat, BatchNormalization, per-channel Add/Mul, Gemm and MatMul as oneDNN primitives made once per plan. */
#ifndef INFERD_CPU_DNNL_H
#define INFERD_CPU_DNNL_H

#include <stddef.h>

#include "graph.h"

/*
 * Contract.  A cpu_dnnl is the device's oneDNN engine and the weights it has
 * reordered into primitives' layouts, shared by every plan (a weight tensor's
 * bytes at one address are reordered once per layout, however many batch
 * sizes have plans).  A cpu_dnnl_plan holds, per node of one plan, a
 * primitive with its memory objects bound to the plan's fixed addresses, or
 * nothing where oneDNN does not take the node (the kernel library runs it):
 * running a node then allocates nothing.  Activations are plain NCHW (NCW,
 * NCDHW), as the kernel library expects them, wherever anything but oneDNN
 * nodes reads them (graph outputs included); a tensor only oneDNN nodes read,
 * all in the layout its writer writes, and that layout no larger, stays in
 * oneDNN's blocked layout in the tensor's own memory; so does one only
 * channel Concats read (they take each source in whatever layout it has).
 * A ReLU right after a BatchNormalization oneDNN runs, reading its output
 * alone, is computed by the norm's primitive: running the ReLU's node is
 * then done (cpu_dnnl_plan_run_node answers 1) and the norm's own output is
 * never written.
 * A plan runs on one thread at a time; plans of one cpu_dnnl may run at once.
 */
struct cpu_dnnl;
struct cpu_dnnl_plan;

/* The CPU engine; -1 with *cause when oneDNN cannot make one. */
int cpu_dnnl_open(struct cpu_dnnl **out, char **cause);
/* Release the engine; every plan must be freed first. */
void cpu_dnnl_close(struct cpu_dnnl *d);
/*
 * Primitives for the nodes of g that oneDNN runs, for these concrete shapes
 * and tensor addresses (constants' bytes already there); -1 with *cause.
 */
int cpu_dnnl_plan_create(struct cpu_dnnl *d, const graph_t *g, const struct graph_shape *shapes,
    void *const *ptrs, struct cpu_dnnl_plan **out, char **cause);
/* Run node i when oneDNN has it: 1 done, 0 the kernel library must run it, -1 with *cause. */
int cpu_dnnl_plan_run_node(struct cpu_dnnl_plan *p, size_t i, char **cause);
/* Release a plan's primitives and its references to shared weights (NULL is fine). */
void cpu_dnnl_plan_free(struct cpu_dnnl_plan *p);

#endif
