/* cpu_pool.c: max and average pooling (NCHW, 1 to 3 spatial dims): ceil_mode, count_include_pad, dilations, global. */
#include "config.h"

#include <math.h>

#include "cpu_conv_geom.h"

/* Kernel taps [lo, hi) of one dim that land in [0, limit) for a window starting at start. */
static void
pool_taps(int64_t start, int64_t d, int64_t k, int64_t limit, int64_t *lo, int64_t *hi)
{
	*lo = start >= 0 ? 0 : (-start + d - 1) / d;
	*hi = limit - start <= 0 ? 0 : (limit - start + d - 1) / d;
	if (*hi > k)
		*hi = k;
	if (*lo > *hi)
		*lo = *hi;
}

/* One output value of the window at output position o over plane x. */
static float
pool_one(const struct cpu_window *w, const struct graph_pool_attr *a, const float *x, const int64_t *o)
{
	int64_t lo[3], hi[3], start[3], padded = 1, valid = 1, plo, phi;
	double sum = 0.0;
	float best = -INFINITY;

	for (int i = 0; i < 3; i++) {
		start[i] = o[i] * w->s[i] - w->pb[i];
		pool_taps(start[i], w->d[i], w->k[i], w->in[i], &lo[i], &hi[i]);
		pool_taps(start[i], w->d[i], w->k[i], w->in[i] + w->pe[i], &plo, &phi);
		valid *= hi[i] - lo[i];
		/* Every tap is at or after -pad_begin, so only the end bounds the padded count. */
		(void)plo;
		padded *= phi;
	}
	for (int64_t kd = lo[0]; kd < hi[0]; kd++)
		for (int64_t kh = lo[1]; kh < hi[1]; kh++) {
			const float *row = x + ((start[0] + kd * w->d[0]) * w->in[1] +
			    start[1] + kh * w->d[1]) * w->in[2] + start[2];

			for (int64_t kw = lo[2]; kw < hi[2]; kw++) {
				float v = row[kw * w->d[2]];

				sum += v;
				if (v > best || isnan(v))
					best = v;
			}
		}
	if (a->kind == GRAPH_POOL_MAX)
		return best;
	padded = a->count_include_pad ? padded : valid;
	return padded > 0 ? (float)(sum / (double)padded) : 0.0f;
}

/* Every output value of one plane. */
static void
pool_plane(const struct cpu_window *w, const struct graph_pool_attr *a, const float *x, float *y)
{
	int64_t o[3];

	for (o[0] = 0; o[0] < w->out[0]; o[0]++)
		for (o[1] = 0; o[1] < w->out[1]; o[1]++)
			for (o[2] = 0; o[2] < w->out[2]; o[2]++)
				*y++ = pool_one(w, a, x, o);
}

/* Global pool of one plane of n values. */
static float
pool_global(const float *x, int64_t n, enum graph_pool_kind kind)
{
	double sum = 0.0;
	float best = -INFINITY;

	if (kind == GRAPH_POOL_MAX) {
		for (int64_t i = 0; i < n; i++)
			if (x[i] > best || isnan(x[i]))
				best = x[i];
		return best;
	}
	/* omp simd: the sum in double needs reassociating to vectorise (the average SE blocks and heads take). */
	#pragma omp simd reduction(+:sum)
	for (int64_t i = 0; i < n; i++)
		sum += x[i];
	return n > 0 ? (float)(sum / (double)n) : 0.0f;
}

/* Geometry of a pool node; a global pool is a window over every spatial dim (cpu_conv_geom.h). */
int
cpu_pool_node_geom(const struct cpu_node_ctx *c, struct cpu_window *w, char **cause)
{
	const struct graph_pool_attr *a = &c->n->attr.pool;
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	struct graph_window_attr g = a->w;

	if (a->global) {
		g.nspatial = xs->ndims - 2;
		if (g.nspatial < 1 || g.nspatial > 3)
			return cpu_fail(cause, "global pool input must have 1 to 3 spatial dims");
		for (int i = 0; i < g.nspatial; i++) {
			g.kernel[i] = xs->dims[2 + i];
			g.stride[i] = g.dilation[i] = 1;
			g.pad_begin[i] = g.pad_end[i] = 0;
		}
	}
	if (cpu_window_init(w, &g, xs, cpu_out_shape(c, 0), NULL, 0, cause) != 0)
		return -1;
	if (w->m != w->c)
		return cpu_fail(cause, "output has %lld channels, input %lld", (long long)w->m, (long long)w->c);
	if (a->global && w->out_sz != 1)
		return cpu_fail(cause, "global pool output must have spatial size 1");
	return 0;
}

/* POOL: max or average over windows, one plane per channel. */
int
cpu_pool_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_pool_attr *a = &c->n->attr.pool;
	struct cpu_window w;
	const float *x = cpu_in(c, 0);
	float *y = cpu_out(c, 0);
	int64_t planes;

	if (cpu_pool_node_geom(c, &w, cause) != 0)
		return -1;
	planes = w.n * w.c;
	if (a->global) {
		#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(planes * w.in_sz))
		for (int64_t p = 0; p < planes; p++)
			y[p] = pool_global(x + p * w.in_sz, w.in_sz, a->kind);
		return 0;
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(planes * w.out_sz * w.k_sz))
	for (int64_t p = 0; p < planes; p++)
		pool_plane(&w, a, x + p * w.in_sz, y + p * w.out_sz);
	return 0;
}
