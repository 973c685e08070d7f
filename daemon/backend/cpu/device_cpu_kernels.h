/* device_cpu_kernels.h: the CPU backend's per-node kernels, one dispatch for every op it runs. */
#ifndef INFERD_DEVICE_CPU_KERNELS_H
#define INFERD_DEVICE_CPU_KERNELS_H

#include <stddef.h>

#include "graph.h"

/*
 * The CPU plan (device_cpu.c) calls only these three, so a fuller kernel
 * library can replace this file without touching the plan:
 *   cpu_node_supported  whether node n's op, attributes and dtypes have a kernel;
 *   cpu_node_prepare    at compile, for concrete shapes: refuse what the kernel
 *                       cannot do for them and say how many workspace bytes it needs;
 *   cpu_node_run        run n: ptrs[i] is tensor i's memory (an output may share
 *                       its input's memory for element-wise and row-wise ops),
 *                       workspace at least the bytes prepare asked for.
 * All tensors are row-major; errors return -1 (supported: 0) with a message in *cause (*why).
 */
int cpu_node_supported(const graph_t *g, const struct graph_node *n, char **why);
int cpu_node_prepare(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, size_t *workspace, char **cause);
int cpu_node_run(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, void *const *ptrs, void *workspace,
    char **cause);

#endif
