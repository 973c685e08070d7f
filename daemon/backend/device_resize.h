/* device_resize.h: ONNX Resize's coordinate mapping and interpolation, one definition for the CPU and CUDA kernels. */
#ifndef INFERD_DEVICE_RESIZE_H
#define INFERD_DEVICE_RESIZE_H

#include <math.h>
#include <stdint.h>

#include "cpu_kernels.h"
#include "graph.h"

/*
 * Contract.  A Resize is computed from taps: per axis and output coordinate,
 * the two source indices it reads and the weight of the second
 * (device_resize_axis_taps, nearest or linear, every coordinate
 * transformation mode of enum cpu_resize_coord but tf_crop_and_resize, which
 * the backends refuse).  Both backends compute the taps on the host, in float
 * arithmetic as onnxruntime does, and then device_resize_one sums the 2^k
 * corners of the k interpolated axes for one output element.  The taps of
 * every axis lie in one array, axis i's starting at tap0[i].  Compiled as host
 * code by the C compiler and as host and device code by nvcc.
 */
#ifdef __CUDACC__
#define DEVICE_RESIZE_FN static __host__ __device__ __forceinline__
#else
#define DEVICE_RESIZE_FN static inline
#endif

/* Per output coordinate of one axis: the two source indices and the weight of the second. */
struct resize_tap {
	int64_t i0, i1;
	float w1;
};

/* Scale of axis i: the attribute's when scales are given, else output / input. */
DEVICE_RESIZE_FN float
device_resize_scale(const struct graph_resize_attr *a, int i, int64_t in, int64_t out)
{
	if (a->nscales > i && a->nsizes == 0)
		return a->scales[i];
	return (float)out / (float)in;
}

/* Source coordinate of output coordinate x (float arithmetic, as onnxruntime does it). */
DEVICE_RESIZE_FN float
device_resize_coord(int mode, float x, float scale, int64_t in, int64_t out)
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
DEVICE_RESIZE_FN int64_t
device_resize_nearest(int mode, float f, int64_t in)
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

/* Taps of every output coordinate of axis i (in source elements, out output elements) into t[0..out). */
DEVICE_RESIZE_FN void
device_resize_axis_taps(const struct graph_resize_attr *a, int i, int64_t in, int64_t out, struct resize_tap *t)
{
	float scale = device_resize_scale(a, i, in, out);

	for (int64_t o = 0; o < out; o++) {
		float f = device_resize_coord(a->coord, (float)o, scale, in, out);

		if (a->mode == GRAPH_RESIZE_NEAREST) {
			t[o].i0 = t[o].i1 = device_resize_nearest(a->nearest, f, in);
			t[o].w1 = 0.0f;
			continue;
		}
		f = f < 0.0f ? 0.0f : f > (float)(in - 1) ? (float)(in - 1) : f;
		t[o].i0 = (int64_t)f;
		t[o].i1 = t[o].i0 + 1 < in ? t[o].i0 + 1 : in - 1;
		t[o].w1 = f - (float)t[o].i0;
	}
}

/*
 * Output element o of an nd-dim resize (out: output dims, ist: input strides,
 * taps + tap0[i]: axis i's taps): the weighted sum over the corners of the
 * axes that interpolate.
 */
DEVICE_RESIZE_FN float
device_resize_one(int nd, const int64_t *out, const int64_t *ist, const int64_t *tap0,
    const struct resize_tap *taps, const float *x, int64_t o)
{
	const struct resize_tap *t[GRAPH_MAX_DIMS];
	int lin[GRAPH_MAX_DIMS], nlin = 0;
	int64_t base = 0;
	float acc = 0.0f;

	for (int i = nd - 1; i >= 0; i--) {
		t[i] = &taps[tap0[i] + o % out[i]];
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

#endif
