/* cpu_resize.c: Resize, nearest and N-linear, with the ONNX coordinate transformation and nearest rounding modes. */
#include "config.h"

#include <math.h>

#include "cpu_kernels_impl.h"

/* Per output coordinate of one axis: the two source indices and the weight of the second. */
struct resize_tap {
	int64_t i0, i1;
	float w1;
};

/* Scale of axis i: the attribute's when scales are given, else output / input. */
static float
resize_scale(const struct graph_resize_attr *a, int i, int64_t in, int64_t out)
{
	if (a->nscales > i && a->nsizes == 0)
		return a->scales[i];
	return (float)out / (float)in;
}

/* Source coordinate of output coordinate x (float arithmetic, as onnxruntime does it). */
static float
resize_coord(int mode, float x, float scale, int64_t in, int64_t out)
{
	switch (mode) {
	case CPU_RESIZE_ASYMMETRIC:
		return x / scale;
	case CPU_RESIZE_ALIGN_CORNERS:
		return out == 1 ? 0.0f : x * (float)(in - 1) / (float)(out - 1);
	case CPU_RESIZE_PYTORCH_HALF_PIXEL:
		return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
	case CPU_RESIZE_HALF_PIXEL_SYMMETRIC: {
		float adj = (float)out / (scale * (float)in), center = (float)in / 2.0f;

		/* onnxruntime takes this sum in double; so do we, to round the same way. */
		return (float)((double)(center * (1.0f - adj)) + ((double)x + 0.5) / scale - 0.5);
	}
	default:
		return (x + 0.5f) / scale - 0.5f;
	}
}

/* Nearest source index of coordinate f, clamped into [0, in). */
static int64_t
resize_nearest(int mode, float f, int64_t in)
{
	float fl = floorf(f), r;

	switch (mode) {
	case CPU_RESIZE_ROUND_PREFER_CEIL: r = f == fl + 0.5f ? ceilf(f) : roundf(f); break;
	case CPU_RESIZE_FLOOR: r = fl; break;
	case CPU_RESIZE_CEIL: r = ceilf(f); break;
	default: r = f == fl + 0.5f ? fl : roundf(f); break;
	}
	if (!(r >= 0.0f))
		return 0;
	return r >= (float)(in - 1) ? in - 1 : (int64_t)r;
}

/* Taps of every output coordinate of one axis. */
static void
resize_axis_taps(const struct graph_resize_attr *a, int i, int64_t in, int64_t out, struct resize_tap *t)
{
	float scale = resize_scale(a, i, in, out);

	for (int64_t o = 0; o < out; o++) {
		float f = resize_coord(a->coord, (float)o, scale, in, out);

		if (a->mode == GRAPH_RESIZE_NEAREST) {
			t[o].i0 = t[o].i1 = resize_nearest(a->nearest, f, in);
			t[o].w1 = 0.0f;
			continue;
		}
		f = f < 0.0f ? 0.0f : f > (float)(in - 1) ? (float)(in - 1) : f;
		t[o].i0 = (int64_t)f;
		t[o].i1 = t[o].i0 + 1 < in ? t[o].i0 + 1 : in - 1;
		t[o].w1 = f - (float)t[o].i0;
	}
}

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

/* Output element o: a weighted sum over the 2^k corners of the interpolated axes. */
static float
resize_one(int nd, const int64_t *out, const int64_t *ist, struct resize_tap *const *taps, const float *x,
    int64_t o)
{
	const struct resize_tap *t[GRAPH_MAX_DIMS];
	int lin[GRAPH_MAX_DIMS], nlin = 0;
	int64_t base = 0;
	float acc = 0.0f;

	for (int i = nd - 1; i >= 0; i--) {
		t[i] = &taps[i][o % out[i]];
		o /= out[i];
		base += t[i]->i0 * ist[i];
		if (t[i]->i1 != t[i]->i0)
			lin[nlin++] = i;
	}
	for (int corner = 0; corner < 1 << nlin; corner++) {
		int64_t off = base;
		float w = 1.0f;

		for (int k = 0; k < nlin; k++) {
			const struct resize_tap *tp = t[lin[k]];

			if (corner >> k & 1) {
				off += (tp->i1 - tp->i0) * ist[lin[k]];
				w *= tp->w1;
			} else {
				w *= 1.0f - tp->w1;
			}
		}
		acc += w * x[off];
	}
	return acc;
}

/* RESIZE: nearest or linear over every axis whose size or scale changes. */
int
cpu_resize_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_resize_attr *a = &c->n->attr.resize;
	const struct graph_shape *xs = cpu_in_shape(c, 0), *ys = cpu_out_shape(c, 0);
	struct resize_tap *taps[GRAPH_MAX_DIMS], *t = c->ws;
	int64_t ist[GRAPH_MAX_DIMS], st = 1, n = cpu_elems(ys);
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
		taps[i] = t;
		resize_axis_taps(a, i, xs->dims[i], ys->dims[i], t);
		t += ys->dims[i];
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(n))
	for (int64_t o = 0; o < n; o++)
		y[o] = resize_one(xs->ndims, ys->dims, ist, taps, cpu_in(c, 0), o);
	return 0;
}
