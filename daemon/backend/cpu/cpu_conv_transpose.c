/* cpu_conv_transpose.c: ConvTranspose (NCHW) as sgemm into columns, then col2im; bias and activation fused. */
#include "config.h"

#include <string.h>

#include "cpu_conv_geom.h"

/* Scratch bytes: the column matrix of one group of one image. */
size_t
cpu_conv_transpose_workspace(const struct cpu_node_ctx *c)
{
	struct cpu_window w;
	int64_t cg, mg;

	if (cpu_conv_node_geom(c, 1, &w, &cg, &mg, NULL) != 0)
		return 0;
	return (size_t)(mg * w.k_sz * w.in_sz) * sizeof(float);
}

/* Scatter-add the columns of output channel plane y: row (kd, kh, kw), column the input position. */
static void
col2im_plane(const struct cpu_window *w, const float *col, float *y)
{
	for (int64_t kk = 0; kk < w->k_sz; kk++) {
		int64_t kd = kk / (w->k[1] * w->k[2]), kh = kk / w->k[2] % w->k[1], kw = kk % w->k[2];
		const float *cr = col + kk * w->in_sz;

		for (int64_t id = 0; id < w->in[0]; id++) {
			int64_t od = id * w->s[0] - w->pb[0] + kd * w->d[0];

			if (od < 0 || od >= w->out[0])
				continue;
			for (int64_t ih = 0; ih < w->in[1]; ih++) {
				int64_t oh = ih * w->s[1] - w->pb[1] + kh * w->d[1];
				const float *src = cr + (id * w->in[1] + ih) * w->in[2];
				float *dst = y + (od * w->out[1] + oh) * w->out[2];

				if (oh < 0 || oh >= w->out[1])
					continue;
				for (int64_t iw = 0; iw < w->in[2]; iw++) {
					int64_t ow = iw * w->s[2] - w->pb[2] + kw * w->d[2];

					if (ow >= 0 && ow < w->out[2])
						dst[ow] += src[iw];
				}
			}
		}
	}
}

/* y = act(y + bias[m]) per output plane. */
static void
convt_epilogue(const struct cpu_node_ctx *c, const struct cpu_window *w, float *y)
{
	const float *bias = cpu_has_in(c, 2) ? cpu_in(c, 2) : NULL;
	int64_t planes = w->n * w->m;

	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(planes * w->out_sz))
	for (int64_t p = 0; p < planes; p++) {
		float *yp = y + p * w->out_sz;

		if (bias != NULL)
			for (int64_t i = 0; i < w->out_sz; i++)
				yp[i] += bias[p % w->m];
		cpu_act_inplace(yp, w->out_sz, c->n->act, c->n->act_alpha, c->n->act_beta);
	}
}

/* CONV_TRANSPOSE: per image and group, columns = W_g^T x_g, then col2im into y. */
int
cpu_conv_transpose_run(const struct cpu_node_ctx *c, char **cause)
{
	struct cpu_window w;
	int64_t cg, mg, rows;
	const float *x = cpu_in(c, 0), *wt = cpu_in(c, 1);
	float *y = cpu_out(c, 0), *col = c->ws;

	if (cpu_conv_node_geom(c, 1, &w, &cg, &mg, cause) != 0)
		return -1;
	memset(y, 0, (size_t)(w.n * w.m * w.out_sz) * sizeof(float));
	rows = mg * w.k_sz;
	if (cg > 0 && rows > 0 && w.in_sz > 0)
		for (int64_t img = 0; img < w.n; img++)
			for (int64_t g = 0; g < w.c / cg; g++) {
				float *yg = y + (img * w.m + g * mg) * w.out_sz;

				cpu_sgemm(1, 0, rows, w.in_sz, cg, 1.0f, wt + g * cg * rows, rows,
				    x + (img * w.c + g * cg) * w.in_sz, w.in_sz, 0.0f, col, w.in_sz);
				#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(rows * w.in_sz))
				for (int64_t m = 0; m < mg; m++)
					col2im_plane(&w, col + m * w.k_sz * w.in_sz, yg + m * w.out_sz);
			}
	convt_epilogue(c, &w, y);
	return 0;
}
