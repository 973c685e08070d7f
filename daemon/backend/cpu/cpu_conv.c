/* cpu_conv.c: Conv (NCHW): 1x1 as one sgemm, depthwise as direct loops, the rest as im2col + sgemm; bias, residual, activation fused. */
#include "config.h"

#include <string.h>

#include "cpu_conv_geom.h"

/* Output size of one spatial dim, or -1 when the window does not fit. */
static int64_t
window_out(const struct cpu_window *w, int i, int64_t op, int transpose)
{
	int64_t span = (w->k[i] - 1) * w->d[i] + 1;

	if (transpose)
		return w->s[i] * (w->in[i] - 1) + op + span - w->pb[i] - w->pe[i];
	if (w->in[i] + w->pb[i] + w->pe[i] < span)
		return -1;
	return (w->in[i] + w->pb[i] + w->pe[i] - span) / w->s[i] + 1;
}

/* Geometry from attributes and shapes, checked. */
int
cpu_window_init(struct cpu_window *w, const struct graph_window_attr *a, const struct graph_shape *xs,
    const struct graph_shape *ys, const int64_t *ks, int transpose, char **cause)
{
	int ns = a->nspatial, off = 3 - ns;

	if (ns < 1 || ns > 3 || xs->ndims != ns + 2 || ys->ndims != ns + 2 || xs->dims[0] != ys->dims[0])
		return cpu_fail(cause, "input rank %d, output rank %d, %d spatial dims", xs->ndims,
		    ys->ndims, ns);
	w->n = xs->dims[0];
	w->c = xs->dims[1];
	w->m = ys->dims[1];
	w->in_sz = w->out_sz = w->k_sz = 1;
	for (int i = 0; i < 3; i++) {
		int j = i - off;

		w->in[i] = j >= 0 ? xs->dims[2 + j] : 1;
		w->out[i] = j >= 0 ? ys->dims[2 + j] : 1;
		w->k[i] = j < 0 ? 1 : ks != NULL ? ks[j] : a->kernel[j];
		w->s[i] = j >= 0 ? a->stride[j] : 1;
		w->d[i] = j >= 0 ? a->dilation[j] : 1;
		w->pb[i] = j >= 0 ? a->pad_begin[j] : 0;
		w->pe[i] = j >= 0 ? a->pad_end[j] : 0;
		if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0)
			return cpu_fail(cause, "kernel, stride, dilation or pad out of range in dim %d", j);
		if (ks != NULL && window_out(w, i, j >= 0 ? a->output_padding[j] : 0, transpose) != w->out[i])
			return cpu_fail(cause, "output dim %d is %lld, the window gives %lld", j,
			    (long long)w->out[i], (long long)window_out(w, i,
			    j >= 0 ? a->output_padding[j] : 0, transpose));
		w->in_sz *= w->in[i];
		w->out_sz *= w->out[i];
		w->k_sz *= w->k[i];
	}
	return 0;
}

/* Whether the convolution is a plain matrix product (1x1 kernel, stride 1, no padding). */
static int
conv_is_pointwise(const struct cpu_window *w)
{
	for (int i = 0; i < 3; i++)
		if (w->k[i] != 1 || w->s[i] != 1 || w->pb[i] != 0 || w->pe[i] != 0)
			return 0;
	return 1;
}

/* dst[ow] = src[ow + base] where that lies in [0, in), else 0: a stride-1 row as one copy. */
static void
im2col_span(const float *src, int64_t base, int64_t in, float *dst, int64_t out)
{
	int64_t lo = base >= 0 ? 0 : -base, hi = in - base;

	lo = lo > out ? out : lo;
	hi = hi < lo ? lo : hi > out ? out : hi;
	memset(dst, 0, (size_t)lo * sizeof(float));
	if (hi > lo)
		memcpy(dst + lo, src + lo + base, (size_t)(hi - lo) * sizeof(float));
	memset(dst + hi, 0, (size_t)(out - hi) * sizeof(float));
}

/* One row of the im2col matrix: channel plane x at kernel offset (kd, kh, kw). */
static void
im2col_row(const struct cpu_window *w, const float *x, int64_t kd, int64_t kh, int64_t kw, float *dst)
{
	for (int64_t od = 0; od < w->out[0]; od++) {
		int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0];

		for (int64_t oh = 0; oh < w->out[1]; oh++, dst += w->out[2]) {
			int64_t ih = oh * w->s[1] - w->pb[1] + kh * w->d[1];
			const float *src = x + (id * w->in[1] + ih) * w->in[2];
			int64_t base = kw * w->d[2] - w->pb[2];

			if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1]) {
				memset(dst, 0, (size_t)w->out[2] * sizeof(float));
				continue;
			}
			if (w->s[2] == 1) {
				im2col_span(src, base, w->in[2], dst, w->out[2]);
				continue;
			}
			for (int64_t ow = 0; ow < w->out[2]; ow++) {
				int64_t iw = ow * w->s[2] + base;

				dst[ow] = iw >= 0 && iw < w->in[2] ? src[iw] : 0.0f;
			}
		}
	}
}

/* im2col of cg channels: row (c, kd, kh, kw), column the output position. */
static void
im2col(const struct cpu_window *w, int64_t cg, const float *x, float *col)
{
	int64_t rows = cg * w->k_sz;

	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(rows * w->out_sz))
	for (int64_t r = 0; r < rows; r++) {
		int64_t ch = r / w->k_sz, kk = r % w->k_sz;

		im2col_row(w, x + ch * w->in_sz, kk / (w->k[1] * w->k[2]), kk / w->k[2] % w->k[1],
		    kk % w->k[2], col + r * w->out_sz);
	}
}

/* Depthwise-style plane: y = sum over the window of one input channel plane x. */
static void
conv_direct_plane(const struct cpu_window *w, const float *x, const float *wt, float *y)
{
	memset(y, 0, (size_t)w->out_sz * sizeof(float));
	for (int64_t od = 0; od < w->out[0]; od++)
		for (int64_t oh = 0; oh < w->out[1]; oh++) {
			float *yr = y + (od * w->out[1] + oh) * w->out[2];

			for (int64_t kd = 0; kd < w->k[0]; kd++) {
				int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0];

				if (id < 0 || id >= w->in[0])
					continue;
				for (int64_t kh = 0; kh < w->k[1]; kh++) {
					int64_t ih = oh * w->s[1] - w->pb[1] + kh * w->d[1];
					const float *xr = x + (id * w->in[1] + ih) * w->in[2];
					const float *wr = wt + (kd * w->k[1] + kh) * w->k[2];

					if (ih < 0 || ih >= w->in[1])
						continue;
					for (int64_t kw = 0; kw < w->k[2]; kw++) {
						int64_t base = kw * w->d[2] - w->pb[2], lo, hi;
						float wv = wr[kw];

						/* Output columns whose input column lies inside the row. */
						lo = base >= 0 ? 0 : (-base + w->s[2] - 1) / w->s[2];
						hi = w->in[2] - base <= 0 ? 0 :
						    (w->in[2] - base - 1) / w->s[2] + 1;
						if (hi > w->out[2])
							hi = w->out[2];
						if (w->s[2] == 1)
							for (int64_t ow = lo; ow < hi; ow++)
								yr[ow] += wv * xr[ow + base];
						else
							for (int64_t ow = lo; ow < hi; ow++)
								yr[ow] += wv * xr[ow * w->s[2] + base];
					}
				}
			}
		}
}

/* y = act(y + bias[m] + z) per output plane. */
static void
conv_epilogue(const struct cpu_node_ctx *c, const struct cpu_window *w, float *y)
{
	const float *bias = cpu_has_in(c, 2) ? cpu_in(c, 2) : NULL;
	const float *z = cpu_has_in(c, 3) ? cpu_in(c, 3) : NULL;
	int64_t planes = w->n * w->m;

	if (bias == NULL && z == NULL && c->n->act == GRAPH_UNARY_NONE)
		return;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(planes * w->out_sz))
	for (int64_t p = 0; p < planes; p++) {
		float *yp = y + p * w->out_sz, b = bias != NULL ? bias[p % w->m] : 0.0f;

		if (z != NULL) {
			const float *zp = z + p * w->out_sz;

			for (int64_t i = 0; i < w->out_sz; i++)
				yp[i] += b + zp[i];
		} else if (bias != NULL) {
			for (int64_t i = 0; i < w->out_sz; i++)
				yp[i] += b;
		}
		if (c->n->act != GRAPH_UNARY_NONE)
			cpu_act_inplace(yp, w->out_sz, c->n->act, c->n->act_alpha, c->n->act_beta);
	}
}

/* Geometry and group sizes of a Conv or ConvTranspose node, every input's shape checked (cpu_conv_geom.h). */
int
cpu_conv_node_geom(const struct cpu_node_ctx *c, int transpose, struct cpu_window *w, int64_t *cg,
    int64_t *mg, char **cause)
{
	const struct graph_window_attr *a = &c->n->attr.conv;
	const struct graph_shape *ws = cpu_in_shape(c, 1);
	int64_t group = a->group < 1 ? 1 : a->group;
	char b1[160];

	if (ws->ndims != a->nspatial + 2)
		return cpu_fail(cause, "weight %s has the wrong rank", cpu_shape_str(ws, b1, sizeof(b1)));
	if (cpu_window_init(w, a, cpu_in_shape(c, 0), cpu_out_shape(c, 0), ws->dims + 2, transpose, cause) != 0)
		return -1;
	if (w->c % group != 0 || w->m % group != 0 || ws->dims[0] != (transpose ? w->c : w->m) ||
	    ws->dims[1] * group != (transpose ? w->m : w->c))
		return cpu_fail(cause, "weight %s does not fit %lld input channels, %lld output channels, "
		    "group %lld", cpu_shape_str(ws, b1, sizeof(b1)), (long long)w->c, (long long)w->m,
		    (long long)group);
	if (cpu_has_in(c, 2) && cpu_elems(cpu_in_shape(c, 2)) != w->m)
		return cpu_fail(cause, "bias has %lld elements, not %lld",
		    (long long)cpu_elems(cpu_in_shape(c, 2)), (long long)w->m);
	if (cpu_has_in(c, 3) && !cpu_shape_equal(cpu_in_shape(c, 3), cpu_out_shape(c, 0)))
		return cpu_fail(cause, "residual input is not the output's shape");
	*cg = w->c / group;
	*mg = w->m / group;
	return 0;
}

/* Scratch bytes: an im2col matrix for one group of one image, unless no im2col is needed. */
size_t
cpu_conv_workspace(const struct cpu_node_ctx *c)
{
	struct cpu_window w;
	int64_t cg, mg;

	if (cpu_conv_node_geom(c, 0, &w, &cg, &mg, NULL) != 0 || cg <= 1 || conv_is_pointwise(&w))
		return 0;
	return (size_t)(cg * w.k_sz * w.out_sz) * sizeof(float);
}

/* Every output plane of a depthwise-style conv (one input channel per output channel). */
static void
conv_direct(const struct cpu_window *w, int64_t mg, const float *x, const float *wt, float *y)
{
	int64_t planes = w->n * w->m;

	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(planes * w->out_sz * w->k_sz))
	for (int64_t p = 0; p < planes; p++) {
		int64_t img = p / w->m, m = p % w->m, ch = m / mg;

		conv_direct_plane(w, x + (img * w->c + ch) * w->in_sz, wt + m * w->k_sz,
		    y + p * w->out_sz);
	}
}

/* CONV: y = act(conv(x, W) + B + Z). */
int
cpu_conv_run(const struct cpu_node_ctx *c, char **cause)
{
	struct cpu_window w;
	int64_t cg, mg, kdim;
	const float *x = cpu_in(c, 0), *wt = cpu_in(c, 1);
	float *y = cpu_out(c, 0), *col = c->ws;
	int pointwise;

	if (cpu_conv_node_geom(c, 0, &w, &cg, &mg, cause) != 0)
		return -1;
	if (w.n * w.m * w.out_sz == 0)
		return 0;
	pointwise = conv_is_pointwise(&w);
	kdim = cg * w.k_sz;
	if (kdim == 0) {
		memset(y, 0, (size_t)(w.n * w.m * w.out_sz) * sizeof(float));
	} else if (cg == 1 && !pointwise) {
		conv_direct(&w, mg, x, wt, y);
	} else {
		for (int64_t img = 0; img < w.n; img++)
			for (int64_t g = 0; g < w.c / cg; g++) {
				const float *xg = x + (img * w.c + g * cg) * w.in_sz;

				if (!pointwise)
					im2col(&w, cg, xg, col);
				cpu_sgemm(0, 0, mg, w.out_sz, kdim, 1.0f, wt + g * mg * kdim, kdim,
				    pointwise ? xg : col, w.out_sz, 0.0f, y + (img * w.m + g * mg) * w.out_sz, w.out_sz);
			}
	}
	conv_epilogue(c, &w, y);
	return 0;
}
