/* device_cpu_kernels.c: the CPU plan's per-node interface, served by the CPU kernel library (cpu_kernels.h). */
#include "config.h"

#include "cpu_kernels.h"
#include "device_cpu_kernels.h"
#include "device_impl.h"
#include "error.h"

/*
 * cpu_node_supported and cpu_node_run are the kernel library's own
 * (cpu_node.c); the plan's compile-time step asks the library for the node's
 * workspace.  The shape limits device_node_check_shapes sets for both GPU and
 * CPU kernels (softmax on the last axis only, layernorm parameters covering
 * a row) do not apply here: the library runs every axis and broadcast and
 * checks every shape it relies on when the node runs.
 */

/* Size node n's workspace at compile. */
int
cpu_node_prepare(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, size_t *workspace, char **cause)
{
	*workspace = cpu_node_workspace(g, n, shapes);
	return 0;
}
