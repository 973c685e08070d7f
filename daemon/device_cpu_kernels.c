/* device_cpu_kernels.c: the CPU plan's per-node interface, served by the CPU kernel library (cpu_kernels.h). */
#include "config.h"

#include "cpu_kernels.h"
#include "device_cpu_kernels.h"
#include "device_impl.h"
#include "error.h"

/*
 * cpu_node_supported and cpu_node_run are the kernel library's own
 * (cpu_node.c); the plan's compile-time step checks the shapes and asks the
 * library for the node's workspace.
 */

/* Check node n's shapes at compile and size its workspace. */
int
cpu_node_prepare(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, size_t *workspace, char **cause)
{
	if (device_node_check_shapes(g, n, shapes, cause) < 0)
		return -1;
	*workspace = cpu_node_workspace(g, n, shapes);
	return 0;
}
