/* cpu_resize.c: Resize, nearest and N-linear, with the ONNX coordinate transformation and nearest rounding modes. */
#include "config.h"

#include "cpu_kernels_impl.h"
#include "device_resize.h"

/* Scratch bytes: the taps of every axis. */
size_t
cpu_resize_workspace(const struct cpu_node_ctx *c)
{
	const struct graph_shape *ys = cpu_out_shape(c, 0);
	int64_t n = 0;

	for (int i = 0; i < ys->ndims; i++)
		n += ys->dims[i];
	return (size_t)n * sizeof(struct resize_tap);
}

/* RESIZE: nearest or linear over every axis whose size or scale changes. */
int
cpu_resize_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_resize_attr *a = &c->n->attr.resize;
	const struct graph_shape *xs = cpu_in_shape(c, 0), *ys = cpu_out_shape(c, 0);
	struct resize_tap *taps = c->ws;
	int64_t ist[GRAPH_MAX_DIMS], tap0[GRAPH_MAX_DIMS], st = 1, ntaps = 0, n = cpu_elems(ys);
	float *y = cpu_out(c, 0);

	if (xs->ndims != ys->ndims)
		return cpu_fail(cause, "output rank %d differs from input rank %d", ys->ndims, xs->ndims);
	for (int i = xs->ndims - 1; i >= 0; i--) {
		if (xs->dims[i] == 0 && ys->dims[i] > 0)
			return cpu_fail(cause, "cannot resize an empty dim %d", i);
		ist[i] = st;
		st *= xs->dims[i];
	}
	for (int i = 0; i < xs->ndims; i++) {
		tap0[i] = ntaps;
		device_resize_axis_taps(a, i, xs->dims[i], ys->dims[i], taps + ntaps);
		ntaps += ys->dims[i];
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(n))
	for (int64_t o = 0; o < n; o++)
		y[o] = device_resize_one(xs->ndims, ys->dims, ist, tap0, taps, cpu_in(c, 0), o);
	return 0;
}
