/* cpu_pad.c: Pad (constant, reflect, edge; negative pads crop) for any dtype. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cpu_kernels_impl.h"
#include "device_index.h"

/* The fill value as one element of dtype dt in buf. */
static void
pad_value(enum graph_dtype dt, float v, unsigned char *buf)
{
	/* Saturate so a huge or NaN value never converts out of range. */
	int64_t i = isnan(v) ? 0 : v >= 9.2e18f ? INT64_MAX : v <= -9.2e18f ? INT64_MIN : (int64_t)v;

	switch (dt) {
	case GRAPH_DT_F32: memcpy(buf, &v, 4); break;
	case GRAPH_DT_F16: { uint16_t h = cpu_f32_to_f16(v); memcpy(buf, &h, 2); break; }
	case GRAPH_DT_I64: memcpy(buf, &i, 8); break;
	case GRAPH_DT_I32: { int32_t k = (int32_t)i; memcpy(buf, &k, 4); break; }
	case GRAPH_DT_BOOL: buf[0] = v != 0.0f; break;
	default: buf[0] = (unsigned char)i; break;
	}
}

struct pad_geom {
	int nd;
	int64_t in[GRAPH_MAX_DIMS], out[GRAPH_MAX_DIMS], pb[GRAPH_MAX_DIMS], ist[GRAPH_MAX_DIMS];
	enum graph_pad_mode mode;
	size_t es;
	unsigned char fill[8];
};

/* One output row (last dim) at outer index r. */
static void
pad_row(const struct pad_geom *g, int64_t r, const char *x, char *y)
{
	int64_t off = 0, last = g->nd - 1, n = g->out[last];
	char *dst = y + (size_t)(r * n) * g->es;

	for (int i = last - 1; i >= 0; i--) {
		int64_t s = device_pad_src(r % g->out[i], g->in[i], g->pb[i], g->mode);

		r /= g->out[i];
		if (s < 0) {
			for (int64_t k = 0; k < n; k++)
				memcpy(dst + (size_t)k * g->es, g->fill, g->es);
			return;
		}
		off += s * g->ist[i];
	}
	for (int64_t k = 0; k < n; k++) {
		int64_t s = device_pad_src(k, g->in[last], g->pb[last], g->mode);

		memcpy(dst + (size_t)k * g->es, s < 0 ? (const char *)g->fill :
		    x + (size_t)(off + s) * g->es, g->es);
	}
}

/* PAD: pads are [begin per dim..., end per dim...]. */
int
cpu_pad_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0), *ys = cpu_out_shape(c, 0);
	struct pad_geom g = { .nd = xs->ndims, .mode = c->n->attr.pad.mode,
	    .es = cpu_dtype_size(cpu_in_dtype(c, 0)) };
	int64_t st = 1, rows = 1;

	if (c->n->attr.pad.npads != 2 * xs->ndims || ys->ndims != xs->ndims || xs->ndims == 0)
		return cpu_fail(cause, "%d pads for rank %d", c->n->attr.pad.npads, xs->ndims);
	for (int i = g.nd - 1; i >= 0; i--) {
		g.in[i] = xs->dims[i];
		g.out[i] = ys->dims[i];
		g.pb[i] = c->n->attr.pad.pads[i];
		g.ist[i] = st;
		st *= xs->dims[i];
		if (g.out[i] != g.in[i] + g.pb[i] + c->n->attr.pad.pads[g.nd + i])
			return cpu_fail(cause, "output dim %d is %lld, the pads give %lld", i,
			    (long long)g.out[i], (long long)(g.in[i] + g.pb[i] + c->n->attr.pad.pads[g.nd + i]));
		if (g.in[i] == 0 && g.out[i] > 0 && g.mode != GRAPH_PAD_CONSTANT)
			return cpu_fail(cause, "cannot %s-pad an empty dim", g.mode == GRAPH_PAD_EDGE ? "edge" : "reflect");
		if (i < g.nd - 1)
			rows *= g.out[i];
	}
	pad_value(cpu_in_dtype(c, 0), c->n->attr.pad.value, g.fill);
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(rows * g.out[g.nd - 1]))
	for (int64_t r = 0; r < rows; r++)
		pad_row(&g, r, cpu_in(c, 0), cpu_out(c, 0));
	return 0;
}
