/* test_cpu_kernels.c: every CPU kernel against naive double-precision references written here (random shapes and attributes). */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_node_fixture.h"
#include "test_util.h"

#define TOL 1e-5

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* Uniform integer in [lo, hi]. */
static int64_t
rnd(int64_t lo, int64_t hi)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return lo + (int64_t)((rng * 2685821657736338717ULL >> 11) % (uint64_t)(hi - lo + 1));
}

/* Fill n floats uniformly in [lo, hi). */
static void
fill(float *x, int64_t n, float lo, float hi)
{
	test_fill_random(x, (size_t)n, &rng, lo, hi);
}

/* Product of dims. */
static int64_t
prod(const int64_t *d, int n)
{
	int64_t p = 1;

	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* Row-major multi-index of flat index i. */
static void
unravel(int64_t i, const int64_t *d, int n, int64_t *idx)
{
	for (int k = n - 1; k >= 0; k--) {
		idx[k] = i % d[k];
		i /= d[k];
	}
}

/* Flat index of a multi-index. */
static int64_t
ravel(const int64_t *idx, const int64_t *d, int n)
{
	int64_t i = 0;

	for (int k = 0; k < n; k++)
		i = i * d[k] + idx[k];
	return i;
}

/* Run f; report and count a failure. */
static int
run_ok(struct fix *f, const char *what)
{
	char *cause = NULL;

	if (fix_run(f, &cause) != 0) {
		CHECK(0, "%s: %s", what, cause);
		free(cause);
		return 0;
	}
	return 1;
}

/* Compare with tolerance TOL and say which case failed. */
static void
check_close(const float *y, const double *ref, int64_t n, const char *what)
{
	double e = test_rel_error(y, ref, (size_t)n);

	CHECK(e <= TOL, "%s: relative error %.3g", what, e);
}

/* The activation in double, written from the definitions. */
static double
ref_act(double x, enum graph_unary fn, double a, double b)
{
	switch (fn) {
	case GRAPH_UNARY_RELU: return x > 0 ? x : 0;
	case GRAPH_UNARY_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case GRAPH_UNARY_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
	case GRAPH_UNARY_SIGMOID: return 1 / (1 + exp(-x));
	case GRAPH_UNARY_TANH: return tanh(x);
	case GRAPH_UNARY_LEAKY_RELU: return x >= 0 ? x : a * x;
	case GRAPH_UNARY_CLIP: return fmin(fmax(x, a), b);
	case GRAPH_UNARY_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
	case GRAPH_UNARY_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
	case GRAPH_UNARY_EXP: return exp(x);
	case GRAPH_UNARY_LOG: return log(x);
	case GRAPH_UNARY_SQRT: return sqrt(x);
	case GRAPH_UNARY_NEG: return -x;
	case GRAPH_UNARY_RECIPROCAL: return 1 / x;
	case GRAPH_UNARY_ERF: return erf(x);
	case GRAPH_UNARY_ABS: return fabs(x);
	case GRAPH_UNARY_CEIL: return ceil(x);
	case GRAPH_UNARY_FLOOR: return floor(x);
	case GRAPH_UNARY_ROUND: return rint(x);
	default: return x;
	}
}

/* A random activation that fuses (with its parameters) into node n. */
static void
random_act(struct graph_node *n)
{
	static const enum graph_unary acts[] = { GRAPH_UNARY_NONE, GRAPH_UNARY_RELU, GRAPH_UNARY_GELU,
	    GRAPH_UNARY_GELU_TANH, GRAPH_UNARY_SIGMOID, GRAPH_UNARY_TANH, GRAPH_UNARY_LEAKY_RELU,
	    GRAPH_UNARY_CLIP, GRAPH_UNARY_HARD_SIGMOID, GRAPH_UNARY_HARD_SWISH };

	n->act = acts[rnd(0, sizeof(acts) / sizeof(acts[0]) - 1)];
	n->act_alpha = n->act == GRAPH_UNARY_CLIP ? -0.5f : n->act == GRAPH_UNARY_HARD_SIGMOID ? 0.2f : 0.1f;
	n->act_beta = n->act == GRAPH_UNARY_CLIP ? 0.7f : 0.5f;
}

/* Gemm: random sizes, transposes, alpha/beta, every C broadcast form, activations. */
static void
test_gemm(void)
{
	for (int t = 0; t < 40; t++) {
		struct fix f;
		int64_t m = rnd(1, 40), n = rnd(1, 40), k = rnd(1, 70), ad[2], bd[2], cd[2] = { m, n };
		int ta = (int)rnd(0, 1), tb = (int)rnd(0, 1), cform = (int)rnd(0, 5), cnd = 2;
		float *a, *b, *c = NULL, *y;
		double *ref;

		/* The last cases are large enough to split over threads, by rows and by columns. */
		if (t >= 36) {
			m = t % 2 ? 300 : 40;
			n = t % 2 ? 40 : 300;
			k = 130;
			cd[0] = m;
			cd[1] = n;
		}
		ref = malloc((size_t)(m * n) * sizeof(double));
		char what[96];

		fix_init(&f, GRAPH_OP_GEMM);
		f.n.attr.gemm = (struct graph_gemm_attr){ ta, tb, (float)rnd(1, 3) / 2, (float)rnd(0, 2) / 2 };
		random_act(&f.n);
		ad[0] = ta ? k : m; ad[1] = ta ? m : k;
		bd[0] = tb ? n : k; bd[1] = tb ? k : n;
		a = fix_input(&f, GRAPH_DT_F32, 2, ad);
		b = fix_input(&f, GRAPH_DT_F32, 2, bd);
		fill(a, m * k, -1, 1);
		fill(b, k * n, -1, 1);
		/* C forms: none, scalar, [N], [1,N], [M,1], [M,N]. */
		if (cform == 1) cnd = 0;
		if (cform == 2) { cnd = 1; cd[0] = n; }
		if (cform == 3) cd[0] = 1;
		if (cform == 4) cd[1] = 1;
		if (cform > 0) {
			c = fix_input(&f, GRAPH_DT_F32, cnd, cd);
			fill(c, prod(cd, cnd), -1, 1);
		}
		y = fix_output(&f, GRAPH_DT_F32, 2, (int64_t[]){ m, n });
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double s = 0, cv = 0;

				for (int64_t p = 0; p < k; p++)
					s += (double)a[ta ? p * m + i : i * k + p] * b[tb ? j * k + p : p * n + j];
				if (cform == 1) cv = c[0];
				if (cform == 2 || cform == 3) cv = c[j];
				if (cform == 4) cv = c[i];
				if (cform == 5) cv = c[i * n + j];
				ref[i * n + j] = ref_act(f.n.attr.gemm.alpha * s + f.n.attr.gemm.beta * cv,
				    f.n.act, f.n.act_alpha, f.n.act_beta);
			}
		snprintf(what, sizeof(what), "gemm %lldx%lldx%lld ta%d tb%d C%d act%d", (long long)m,
		    (long long)k, (long long)n, ta, tb, cform, (int)f.n.act);
		if (run_ok(&f, what))
			check_close(y, ref, m * n, what);
		free(ref);
		fix_free(&f);
	}
}

/* MatMul: ranks 1 to 4 with broadcast batch dims, optional bias, activations. */
static void
test_matmul(void)
{
	for (int t = 0; t < 40; t++) {
		struct fix f;
		int ar = (int)rnd(1, 4), br = (int)rnd(1, 4), nb, yr = 0;
		int64_t m = rnd(1, 12), k = rnd(1, 20), n = rnd(1, 12), ad[4], bd[4], yd[6], bb[4], ab[4];
		int64_t batch[4], nbatch = 1, ytot;
		float *a, *b, *bias = NULL, *y;
		double *ref;
		char what[96];

		fix_init(&f, GRAPH_OP_MATMUL);
		random_act(&f.n);
		nb = (ar > br ? ar : br) - 2;
		nb = nb < 0 ? 0 : nb;
		for (int j = 0; j < nb; j++) {
			batch[j] = rnd(1, 3);
			nbatch *= batch[j];
		}
		/* Each operand's batch dims: a suffix of the output's, some set to 1. */
		for (int j = 0; j < ar - 2; j++)
			ab[j] = rnd(0, 2) == 0 ? 1 : batch[nb - (ar - 2) + j];
		for (int j = 0; j < br - 2; j++)
			bb[j] = rnd(0, 2) == 0 ? 1 : batch[nb - (br - 2) + j];
		for (int j = 0; j < ar - 2; j++) ad[j] = ab[j];
		if (ar >= 2) { ad[ar - 2] = m; ad[ar - 1] = k; } else { ad[0] = k; }
		for (int j = 0; j < br - 2; j++) bd[j] = bb[j];
		if (br >= 2) { bd[br - 2] = k; bd[br - 1] = n; } else { bd[0] = k; }
		for (int j = 0; j < nb; j++) {
			/* The output batch dim is the larger of the operands' (1 where both broadcast). */
			int64_t da = j >= nb - (ar - 2) && ar > 2 ? ab[j - (nb - (ar - 2))] : 1;
			int64_t db = j >= nb - (br - 2) && br > 2 ? bb[j - (nb - (br - 2))] : 1;

			batch[j] = da > db ? da : db;
			yd[yr++] = batch[j];
		}
		nbatch = prod(batch, nb);
		if (ar >= 2) yd[yr++] = m;
		if (br >= 2) yd[yr++] = n;
		a = fix_input(&f, GRAPH_DT_F32, ar, ad);
		b = fix_input(&f, GRAPH_DT_F32, br, bd);
		fill(a, prod(ad, ar), -1, 1);
		fill(b, prod(bd, br), -1, 1);
		if (br >= 2 && rnd(0, 1)) {
			bias = fix_input(&f, GRAPH_DT_F32, 1, &n);
			fill(bias, n, -1, 1);
		}
		y = fix_output(&f, GRAPH_DT_F32, yr, yd);
		ytot = nbatch * (ar >= 2 ? m : 1) * (br >= 2 ? n : 1);
		ref = malloc((size_t)ytot * sizeof(double));
		for (int64_t bi = 0; bi < nbatch; bi++) {
			int64_t bidx[4], aoff = 0, boff = 0, mm = ar >= 2 ? m : 1, nn = br >= 2 ? n : 1;

			unravel(bi, batch, nb, bidx);
			for (int j = 0; j < ar - 2; j++)
				aoff = aoff * ab[j] + (ab[j] == 1 ? 0 : bidx[nb - (ar - 2) + j]);
			for (int j = 0; j < br - 2; j++)
				boff = boff * bb[j] + (bb[j] == 1 ? 0 : bidx[nb - (br - 2) + j]);
			for (int64_t i = 0; i < mm; i++)
				for (int64_t j = 0; j < nn; j++) {
					double s = bias != NULL ? bias[j] : 0;

					for (int64_t p = 0; p < k; p++)
						s += (double)a[aoff * mm * k + i * k + p] * b[boff * k * nn + p * nn + j];
					ref[(bi * mm + i) * nn + j] = ref_act(s, f.n.act, f.n.act_alpha, f.n.act_beta);
				}
		}
		snprintf(what, sizeof(what), "matmul ranks %d,%d m%lld k%lld n%lld bias%d", ar, br,
		    (long long)m, (long long)k, (long long)n, bias != NULL);
		if (run_ok(&f, what))
			check_close(y, ref, ytot, what);
		free(ref);
		fix_free(&f);
	}
}

/* Random window: kernel, stride, dilation, asymmetric pads per spatial dim. */
static void
random_window(struct graph_window_attr *w, int ns, int pointwise, int maxpad_half)
{
	memset(w, 0, sizeof(*w));
	w->nspatial = ns;
	w->group = 1;
	for (int i = 0; i < ns; i++) {
		w->kernel[i] = pointwise ? 1 : rnd(1, 3);
		w->stride[i] = pointwise ? 1 : rnd(1, 3);
		w->dilation[i] = pointwise ? 1 : rnd(1, 2);
		w->pad_begin[i] = pointwise ? 0 : rnd(0, maxpad_half ? w->kernel[i] / 2 : w->kernel[i] - 1);
		w->pad_end[i] = pointwise ? 0 : rnd(0, maxpad_half ? w->kernel[i] / 2 : w->kernel[i] - 1);
	}
}

/* Spatial input dims large enough for the window. */
static void
random_spatial(const struct graph_window_attr *w, int64_t *in)
{
	for (int i = 0; i < w->nspatial; i++)
		in[i] = (w->kernel[i] - 1) * w->dilation[i] + 1 + rnd(0, w->nspatial == 3 ? 3 : 8);
}

/* Direct convolution in double: y[n][m][o] = act(b + z + sum x * w). */
static void
ref_conv(const struct graph_window_attr *a, const int64_t *xd, const float *x, const int64_t *wd,
    const float *w, const float *b, const float *z, const int64_t *yd, double *y, const struct graph_node *nd)
{
	int ns = a->nspatial;
	int64_t group = a->group, cg = wd[1], mg = yd[1] / group, osz = prod(yd + 2, ns), ksz = prod(wd + 2, ns);
	int64_t isz = prod(xd + 2, ns);

	for (int64_t n = 0; n < yd[0]; n++)
		for (int64_t m = 0; m < yd[1]; m++)
			for (int64_t o = 0; o < osz; o++) {
				int64_t oi[3], ki[3], ii[3], yi = (n * yd[1] + m) * osz + o;
				double s = (b ? b[m] : 0) + (z ? z[yi] : 0);

				unravel(o, yd + 2, ns, oi);
				for (int64_t c = 0; c < cg; c++)
					for (int64_t kk = 0; kk < ksz; kk++) {
						int inside = 1;

						unravel(kk, wd + 2, ns, ki);
						for (int i = 0; i < ns; i++) {
							ii[i] = oi[i] * a->stride[i] - a->pad_begin[i] + ki[i] * a->dilation[i];
							inside &= ii[i] >= 0 && ii[i] < xd[2 + i];
						}
						if (inside)
							s += (double)x[(n * xd[1] + m / mg * cg + c) * isz + ravel(ii, xd + 2, ns)] *
							    w[(m * cg + c) * ksz + kk];
					}
				y[yi] = ref_act(s, nd->act, nd->act_alpha, nd->act_beta);
			}
}

/* Conv: general, pointwise, depthwise and grouped cases over 1 to 3 spatial dims. */
static void
test_conv(void)
{
	for (int t = 0; t < 60; t++) {
		struct fix f;
		int mode = t % 4, ns = (int)rnd(1, 3), big = t == 59;
		int64_t xd[5], wd[5], yd[5], group, cg, mg;
		float *x, *w, *b = NULL, *z = NULL, *y;
		double *ref;
		char what[128];

		fix_init(&f, GRAPH_OP_CONV);
		random_window(&f.n.attr.conv, ns, mode == 1, 0);
		group = mode == 0 ? 1 : rnd(1, 4);
		cg = mode == 2 ? 1 : rnd(1, 3);
		mg = rnd(1, 3);
		if (big) {
			ns = 2;
			random_window(&f.n.attr.conv, 2, 0, 0);
			group = 1; cg = 24; mg = 32;
		}
		f.n.attr.conv.group = group;
		random_act(&f.n);
		xd[0] = rnd(1, 2); xd[1] = cg * group;
		random_spatial(&f.n.attr.conv, xd + 2);
		if (big)
			xd[2] = xd[3] = 30;
		wd[0] = mg * group; wd[1] = cg;
		yd[0] = xd[0]; yd[1] = wd[0];
		for (int i = 0; i < ns; i++) {
			const struct graph_window_attr *a = &f.n.attr.conv;

			wd[2 + i] = a->kernel[i];
			yd[2 + i] = (xd[2 + i] + a->pad_begin[i] + a->pad_end[i] - (a->kernel[i] - 1) * a->dilation[i] - 1) /
			    a->stride[i] + 1;
		}
		x = fix_input(&f, GRAPH_DT_F32, ns + 2, xd);
		w = fix_input(&f, GRAPH_DT_F32, ns + 2, wd);
		fill(x, prod(xd, ns + 2), -1, 1);
		fill(w, prod(wd, ns + 2), -1, 1);
		if (rnd(0, 1)) {
			b = fix_input(&f, GRAPH_DT_F32, 1, wd);
			fill(b, wd[0], -1, 1);
		} else if (rnd(0, 1)) {
			fix_omit(&f);
		}
		if (rnd(0, 2) == 0) {
			if (f.n.ninputs == 2)
				fix_omit(&f);
			z = fix_input(&f, GRAPH_DT_F32, ns + 2, yd);
			fill(z, prod(yd, ns + 2), -1, 1);
		}
		y = fix_output(&f, GRAPH_DT_F32, ns + 2, yd);
		ref = malloc((size_t)prod(yd, ns + 2) * sizeof(double));
		ref_conv(&f.n.attr.conv, xd, x, wd, w, b, z, yd, ref, &f.n);
		snprintf(what, sizeof(what), "conv %dd mode %d group %lld cg %lld mg %lld k%lld s%lld d%lld bias%d res%d",
		    ns, mode, (long long)group, (long long)cg, (long long)mg, (long long)f.n.attr.conv.kernel[0],
		    (long long)f.n.attr.conv.stride[0], (long long)f.n.attr.conv.dilation[0], b != NULL, z != NULL);
		if (run_ok(&f, what))
			check_close(y, ref, prod(yd, ns + 2), what);
		free(ref);
		fix_free(&f);
	}
}

/* ConvTranspose: scatter each input value through the kernel, in double. */
static void
ref_conv_transpose(const struct graph_window_attr *a, const int64_t *xd, const float *x, const int64_t *wd,
    const float *w, const float *b, const int64_t *yd, double *y, const struct graph_node *nd)
{
	int ns = a->nspatial;
	int64_t cg = xd[1] / a->group, mg = wd[1], isz = prod(xd + 2, ns), ksz = prod(wd + 2, ns);
	int64_t osz = prod(yd + 2, ns), ytot = prod(yd, ns + 2);

	for (int64_t i = 0; i < ytot; i++)
		y[i] = b ? b[i / osz % yd[1]] : 0;
	for (int64_t n = 0; n < xd[0]; n++)
		for (int64_t c = 0; c < xd[1]; c++)
			for (int64_t ip = 0; ip < isz; ip++)
				for (int64_t ml = 0; ml < mg; ml++)
					for (int64_t kk = 0; kk < ksz; kk++) {
						int64_t ii[3], ki[3], oi[3], m = c / cg * mg + ml;
						int inside = 1;

						unravel(ip, xd + 2, ns, ii);
						unravel(kk, wd + 2, ns, ki);
						for (int i = 0; i < ns; i++) {
							oi[i] = ii[i] * a->stride[i] - a->pad_begin[i] + ki[i] * a->dilation[i];
							inside &= oi[i] >= 0 && oi[i] < yd[2 + i];
						}
						if (inside)
							y[(n * yd[1] + m) * osz + ravel(oi, yd + 2, ns)] +=
							    (double)x[(n * xd[1] + c) * isz + ip] * w[(c * mg + ml) * ksz + kk];
					}
	for (int64_t i = 0; i < ytot; i++)
		y[i] = ref_act(y[i], nd->act, nd->act_alpha, nd->act_beta);
}

/* ConvTranspose: strides, dilations, pads, output_padding, groups. */
static void
test_conv_transpose(void)
{
	for (int t = 0; t < 30; t++) {
		struct fix f;
		int ns = (int)rnd(1, 3);
		int64_t xd[5], wd[5], yd[5], group = rnd(1, 3), cg = rnd(1, 3), mg = rnd(1, 3);
		struct graph_window_attr *a = &f.n.attr.conv;
		float *x, *w, *b = NULL, *y;
		double *ref;
		char what[96];

		fix_init(&f, GRAPH_OP_CONV_TRANSPOSE);
		random_window(a, ns, 0, 0);
		a->group = group;
		if (rnd(0, 1))
			random_act(&f.n);
		xd[0] = rnd(1, 2); xd[1] = cg * group;
		wd[0] = xd[1]; wd[1] = mg;
		yd[0] = xd[0]; yd[1] = mg * group;
		for (int i = 0; i < ns; i++) {
			int64_t span = (a->kernel[i] - 1) * a->dilation[i] + 1;

			xd[2 + i] = rnd(1, ns == 3 ? 4 : 7);
			a->output_padding[i] = rnd(0, a->stride[i] - 1);
			wd[2 + i] = a->kernel[i];
			/* Keep the output non-empty: pads may not eat the whole span. */
			while (a->pad_begin[i] + a->pad_end[i] >= a->stride[i] * (xd[2 + i] - 1) + span)
				a->pad_end[i] = 0, a->pad_begin[i] = 0;
			yd[2 + i] = a->stride[i] * (xd[2 + i] - 1) + a->output_padding[i] + span -
			    a->pad_begin[i] - a->pad_end[i];
		}
		x = fix_input(&f, GRAPH_DT_F32, ns + 2, xd);
		w = fix_input(&f, GRAPH_DT_F32, ns + 2, wd);
		fill(x, prod(xd, ns + 2), -1, 1);
		fill(w, prod(wd, ns + 2), -1, 1);
		if (rnd(0, 1)) {
			b = fix_input(&f, GRAPH_DT_F32, 1, yd + 1);
			fill(b, yd[1], -1, 1);
		}
		y = fix_output(&f, GRAPH_DT_F32, ns + 2, yd);
		ref = malloc((size_t)prod(yd, ns + 2) * sizeof(double));
		ref_conv_transpose(a, xd, x, wd, w, b, yd, ref, &f.n);
		snprintf(what, sizeof(what), "conv_transpose %dd group %lld cg %lld mg %lld s%lld op%lld",
		    ns, (long long)group, (long long)cg, (long long)mg, (long long)a->stride[0],
		    (long long)a->output_padding[0]);
		if (run_ok(&f, what))
			check_close(y, ref, prod(yd, ns + 2), what);
		free(ref);
		fix_free(&f);
	}
}

/* Pool output size with ceil_mode (a last window starting in the end padding is dropped). */
static int64_t
pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int ceil_mode)
{
	int64_t num = in + pb + pe - ((k - 1) * d + 1), out;

	out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
	if (ceil_mode && (out - 1) * s >= in + pb)
		out--;
	return out;
}

/* Naive pool in double over every window tap. */
static double
ref_pool_one(const struct graph_pool_attr *p, const int64_t *xd, const float *x, const int64_t *oi)
{
	int ns = p->w.nspatial;
	int64_t ksz = prod(p->w.kernel, ns), valid = 0, padded = 0;
	double s = 0, best = -INFINITY;

	for (int64_t kk = 0; kk < ksz; kk++) {
		int64_t ki[3], ii[3];
		int inside = 1, inpad = 1;

		unravel(kk, p->w.kernel, ns, ki);
		for (int i = 0; i < ns; i++) {
			ii[i] = oi[i] * p->w.stride[i] - p->w.pad_begin[i] + ki[i] * p->w.dilation[i];
			inside &= ii[i] >= 0 && ii[i] < xd[2 + i];
			inpad &= ii[i] < xd[2 + i] + p->w.pad_end[i];
		}
		padded += inpad;
		if (!inside)
			continue;
		valid++;
		s += x[ravel(ii, xd + 2, ns)];
		best = fmax(best, x[ravel(ii, xd + 2, ns)]);
	}
	if (p->kind == GRAPH_POOL_MAX)
		return best;
	return s / (double)(p->count_include_pad ? padded : valid);
}

/* Pools: max/avg, ceil_mode, count_include_pad, dilations, global, 1 to 3 spatial dims. */
static void
test_pool(void)
{
	for (int t = 0; t < 60; t++) {
		struct fix f;
		struct graph_pool_attr *p = &f.n.attr.pool;
		int ns = (int)rnd(1, 3);
		int64_t xd[5], yd[5], isz, osz;
		float *x, *y;
		double *ref;
		char what[128];

		fix_init(&f, GRAPH_OP_POOL);
		p->kind = rnd(0, 1) ? GRAPH_POOL_MAX : GRAPH_POOL_AVG;
		p->global = t % 6 == 5;
		p->ceil_mode = (int)rnd(0, 1);
		p->count_include_pad = (int)rnd(0, 1);
		random_window(&p->w, ns, 0, 1);
		xd[0] = rnd(1, 2); xd[1] = rnd(1, 4);
		random_spatial(&p->w, xd + 2);
		yd[0] = xd[0]; yd[1] = xd[1];
		for (int i = 0; i < ns; i++) {
			if (p->global) {
				p->w.kernel[i] = xd[2 + i];
				p->w.stride[i] = p->w.dilation[i] = 1;
				p->w.pad_begin[i] = p->w.pad_end[i] = 0;
			}
			yd[2 + i] = pool_out(xd[2 + i], p->w.kernel[i], p->w.stride[i], p->w.dilation[i],
			    p->w.pad_begin[i], p->w.pad_end[i], p->ceil_mode);
		}
		if (p->global)
			memset(&p->w, 0, sizeof(p->w));
		x = fix_input(&f, GRAPH_DT_F32, ns + 2, xd);
		fill(x, prod(xd, ns + 2), -1, 1);
		y = fix_output(&f, GRAPH_DT_F32, ns + 2, yd);
		isz = prod(xd + 2, ns);
		osz = prod(yd + 2, ns);
		ref = malloc((size_t)prod(yd, ns + 2) * sizeof(double));
		for (int64_t pl = 0; pl < xd[0] * xd[1]; pl++)
			for (int64_t o = 0; o < osz; o++) {
				int64_t oi[3];
				struct graph_pool_attr q = *p;

				if (p->global) {
					q.w.nspatial = ns;
					for (int i = 0; i < ns; i++) {
						q.w.kernel[i] = xd[2 + i];
						q.w.stride[i] = q.w.dilation[i] = 1;
					}
				}
				unravel(o, yd + 2, ns, oi);
				ref[pl * osz + o] = ref_pool_one(&q, xd, x + pl * isz, oi);
			}
		snprintf(what, sizeof(what), "pool %dd %s global%d ceil%d cip%d k%lld s%lld d%lld p%lld/%lld",
		    ns, p->kind == GRAPH_POOL_MAX ? "max" : "avg", p->global, p->ceil_mode, p->count_include_pad,
		    (long long)p->w.kernel[0], (long long)p->w.stride[0], (long long)p->w.dilation[0],
		    (long long)p->w.pad_begin[0], (long long)p->w.pad_end[0]);
		if (run_ok(&f, what))
			check_close(y, ref, prod(yd, ns + 2), what);
		free(ref);
		fix_free(&f);
	}
}

/* A random shape of rank in [lo, hi] with dims in [1, maxd]. */
static int
random_shape(int64_t *d, int lo, int hi, int64_t maxd)
{
	int r = (int)rnd(lo, hi);

	for (int i = 0; i < r; i++)
		d[i] = rnd(1, maxd);
	return r;
}

/* A shape that broadcasts to out: a suffix of it with some dims set to 1. */
static int
broadcast_shape(const int64_t *out, int nd, int64_t *d)
{
	int r = (int)rnd(0, nd);

	for (int i = 0; i < r; i++)
		d[i] = rnd(0, 2) == 0 ? 1 : out[nd - r + i];
	return r;
}

/* Flat index into a broadcast input (rank r) of output multi-index oi (rank nd). */
static int64_t
bcast_index(const int64_t *oi, int nd, const int64_t *d, int r)
{
	int64_t i = 0;

	for (int k = 0; k < r; k++)
		i = i * d[k] + (d[k] == 1 ? 0 : oi[nd - r + k]);
	return i;
}

/* Binary float ops with broadcasting and fused activations; some large enough for threads. */
static void
test_binary_f32(void)
{
	for (int t = 0; t < 80; t++) {
		struct fix f;
		int64_t yd[8], ad[8], bd[8], n;
		int nd = random_shape(yd, 0, 5, 6), ar, br;
		enum graph_binary fn = (enum graph_binary)(t % GRAPH_BINARY_COUNT);
		float *a, *b, *y;
		double *ref;
		char what[64];

		if (graph_binary_out_bool(fn))
			fn = GRAPH_BINARY_ADD;
		if (t >= 72) {
			/* Large: same shape, scalar and row broadcasts over several threads. */
			nd = 2; yd[0] = 300; yd[1] = 257;
		}
		ar = t % 3 == 0 ? nd : broadcast_shape(yd, nd, ad);
		if (t % 3 == 0)
			memcpy(ad, yd, sizeof(yd));
		br = broadcast_shape(yd, nd, bd);
		/* The output is the broadcast of the two: widen where both are 1. */
		for (int i = 0; i < nd; i++) {
			int64_t da = i >= nd - ar ? ad[i - (nd - ar)] : 1, db = i >= nd - br ? bd[i - (nd - br)] : 1;

			yd[i] = da > db ? da : db;
		}
		fix_init(&f, GRAPH_OP_BINARY);
		f.n.attr.binary.fn = fn;
		if (rnd(0, 1))
			random_act(&f.n);
		a = fix_input(&f, GRAPH_DT_F32, ar, ad);
		b = fix_input(&f, GRAPH_DT_F32, br, bd);
		fill(a, prod(ad, ar), fn == GRAPH_BINARY_POW ? 0.1f : -2, 2);
		fill(b, prod(bd, br), fn == GRAPH_BINARY_DIV || fn == GRAPH_BINARY_MOD || fn == GRAPH_BINARY_FMOD ?
		    0.5f : -2, 2);
		y = fix_output(&f, GRAPH_DT_F32, nd, yd);
		n = prod(yd, nd);
		ref = malloc((size_t)n * sizeof(double));
		for (int64_t i = 0; i < n; i++) {
			int64_t oi[8];
			double va, vb, v;

			unravel(i, yd, nd, oi);
			va = a[bcast_index(oi, nd, ad, ar)];
			vb = b[bcast_index(oi, nd, bd, br)];
			switch (fn) {
			case GRAPH_BINARY_ADD: v = va + vb; break;
			case GRAPH_BINARY_SUB: v = va - vb; break;
			case GRAPH_BINARY_MUL: v = va * vb; break;
			case GRAPH_BINARY_DIV: v = va / vb; break;
			case GRAPH_BINARY_POW: v = pow(va, vb); break;
			case GRAPH_BINARY_MAX: v = fmax(va, vb); break;
			case GRAPH_BINARY_FMOD: v = fmod(va, vb); break;
			case GRAPH_BINARY_MOD: v = va - vb * floor(va / vb); break;
			default: v = fmin(va, vb); break;
			}
			ref[i] = ref_act(v, f.n.act, f.n.act_alpha, f.n.act_beta);
		}
		snprintf(what, sizeof(what), "binary f32 fn %d rank %d/%d/%d act %d", (int)fn, ar, br, nd, (int)f.n.act);
		if (run_ok(&f, what))
			check_close(y, ref, n, what);
		free(ref);
		fix_free(&f);
	}
}

/* Integer binary ops (INT64, INT32) and the comparisons into BOOL: exact. */
static void
test_binary_int(void)
{
	static const enum graph_binary fns[] = { GRAPH_BINARY_ADD, GRAPH_BINARY_SUB, GRAPH_BINARY_MUL,
	    GRAPH_BINARY_DIV, GRAPH_BINARY_MAX, GRAPH_BINARY_MIN, GRAPH_BINARY_EQUAL, GRAPH_BINARY_GREATER,
	    GRAPH_BINARY_LESS, GRAPH_BINARY_GREATER_OR_EQUAL, GRAPH_BINARY_LESS_OR_EQUAL };

	for (int t = 0; t < 66; t++) {
		struct fix f;
		enum graph_binary fn = fns[t % 11];
		int cmp = graph_binary_is_compare(fn);
		enum graph_dtype dt = t % 3 == 0 ? GRAPH_DT_I64 : t % 3 == 1 ? GRAPH_DT_I32 : GRAPH_DT_F32;
		int64_t yd[8], ad[8], bd[8], n, bad = 0;
		int nd, ar, br;
		void *a, *b, *y;

		if (dt == GRAPH_DT_F32 && !cmp)
			dt = GRAPH_DT_I64;
		nd = random_shape(yd, 1, 4, 5);
		ar = nd;
		memcpy(ad, yd, sizeof(yd));
		br = broadcast_shape(yd, nd, bd);
		fix_init(&f, GRAPH_OP_BINARY);
		f.n.attr.binary.fn = fn;
		a = fix_input(&f, dt, ar, ad);
		b = fix_input(&f, dt, br, bd);
		for (int64_t i = 0; i < prod(ad, ar); i++) {
			int64_t v = rnd(-20, 20);

			if (dt == GRAPH_DT_I64) ((int64_t *)a)[i] = v;
			else if (dt == GRAPH_DT_I32) ((int32_t *)a)[i] = (int32_t)v;
			else ((float *)a)[i] = (float)(v % 3);
		}
		for (int64_t i = 0; i < prod(bd, br); i++) {
			int64_t v = rnd(1, 7) * (rnd(0, 1) ? 1 : -1);

			if (cmp)
				v = rnd(-2, 2);
			if (dt == GRAPH_DT_I64) ((int64_t *)b)[i] = v;
			else if (dt == GRAPH_DT_I32) ((int32_t *)b)[i] = (int32_t)v;
			else ((float *)b)[i] = (float)v;
		}
		y = fix_output(&f, cmp ? GRAPH_DT_BOOL : dt, nd, yd);
		n = prod(yd, nd);
		if (!run_ok(&f, "binary int")) {
			fix_free(&f);
			continue;
		}
		for (int64_t i = 0; i < n; i++) {
			int64_t oi[8], ia, ib, va, vb, v, got;

			unravel(i, yd, nd, oi);
			ia = bcast_index(oi, nd, ad, ar);
			ib = bcast_index(oi, nd, bd, br);
			va = dt == GRAPH_DT_I64 ? ((int64_t *)a)[ia] : dt == GRAPH_DT_I32 ? ((int32_t *)a)[ia] :
			    (int64_t)((float *)a)[ia];
			vb = dt == GRAPH_DT_I64 ? ((int64_t *)b)[ib] : dt == GRAPH_DT_I32 ? ((int32_t *)b)[ib] :
			    (int64_t)((float *)b)[ib];
			switch (fn) {
			case GRAPH_BINARY_ADD: v = va + vb; break;
			case GRAPH_BINARY_SUB: v = va - vb; break;
			case GRAPH_BINARY_MUL: v = va * vb; break;
			case GRAPH_BINARY_DIV: v = va / vb; break;
			case GRAPH_BINARY_MAX: v = va > vb ? va : vb; break;
			case GRAPH_BINARY_MIN: v = va < vb ? va : vb; break;
			case GRAPH_BINARY_GREATER: v = va > vb; break;
			case GRAPH_BINARY_LESS: v = va < vb; break;
			case GRAPH_BINARY_GREATER_OR_EQUAL: v = va >= vb; break;
			case GRAPH_BINARY_LESS_OR_EQUAL: v = va <= vb; break;
			default: v = va == vb; break;
			}
			got = cmp ? ((uint8_t *)y)[i] : dt == GRAPH_DT_I64 ?
			    ((int64_t *)y)[i] : ((int32_t *)y)[i];
			bad += got != v;
		}
		CHECK(bad == 0, "binary int fn %d dtype %d: %lld wrong", (int)fn, (int)dt, (long long)bad);
		fix_free(&f);
	}
}

/* Every unary function (inputs in its domain), some large enough for threads. */
static void
test_unary(void)
{
	for (int fn = 0; fn < GRAPH_UNARY_COUNT; fn++)
		for (int big = 0; big < 2; big++) {
			struct fix f;
			int64_t d[4];
			int nd = random_shape(d, 0, 4, 7);
			float *x, *y;
			double *ref;
			int64_t n;
			char what[48];
			int pos = fn == GRAPH_UNARY_LOG || fn == GRAPH_UNARY_SQRT || fn == GRAPH_UNARY_RECIPROCAL;

			if (big) {
				nd = 1;
				d[0] = 100003;
			}
			fix_init(&f, GRAPH_OP_UNARY);
			f.n.attr.unary.fn = (enum graph_unary)fn;
			f.n.attr.unary.alpha = fn == GRAPH_UNARY_CLIP ? -0.3f : 0.2f;
			f.n.attr.unary.beta = fn == GRAPH_UNARY_CLIP ? 0.4f : 0.5f;
			x = fix_input(&f, GRAPH_DT_F32, nd, d);
			y = fix_output(&f, GRAPH_DT_F32, nd, d);
			n = prod(d, nd);
			fill(x, n, pos ? 0.1f : -4, 4);
			ref = malloc((size_t)n * sizeof(double));
			for (int64_t i = 0; i < n; i++)
				ref[i] = ref_act(x[i], (enum graph_unary)fn, f.n.attr.unary.alpha, f.n.attr.unary.beta);
			snprintf(what, sizeof(what), "unary fn %d n %lld", fn, (long long)n);
			if (run_ok(&f, what))
				check_close(y, ref, n, what);
			free(ref);
			fix_free(&f);
		}
}

/* PRelu with a per-channel slope; Where with broadcast condition, F32 and INT64. */
static void
test_prelu_where(void)
{
	for (int t = 0; t < 20; t++) {
		struct fix f;
		int64_t xd[4] = { rnd(1, 2), rnd(1, 5), rnd(1, 6), rnd(1, 6) }, sd[3] = { xd[1], 1, 1 };
		int64_t n = prod(xd, 4), bad = 0;
		float *x, *s, *y;
		double *ref = malloc((size_t)n * sizeof(double));

		fix_init(&f, GRAPH_OP_PRELU);
		x = fix_input(&f, GRAPH_DT_F32, 4, xd);
		s = fix_input(&f, GRAPH_DT_F32, 3, sd);
		y = fix_output(&f, GRAPH_DT_F32, 4, xd);
		fill(x, n, -1, 1);
		fill(s, xd[1], -1, 1);
		for (int64_t i = 0; i < n; i++)
			ref[i] = x[i] < 0 ? (double)s[i / (xd[2] * xd[3]) % xd[1]] * x[i] : x[i];
		if (run_ok(&f, "prelu"))
			check_close(y, ref, n, "prelu");
		free(ref);
		fix_free(&f);

		enum graph_dtype dt = t % 2 ? GRAPH_DT_I64 : GRAPH_DT_F32;
		int64_t yd[8], cd[8], ad[8], bd[8];
		int nd = random_shape(yd, 1, 4, 5), cr = broadcast_shape(yd, nd, cd), ar = nd, br;
		uint8_t *c;
		char *a, *b, *yy;
		size_t es = dt == GRAPH_DT_I64 ? 8 : 4;

		memcpy(ad, yd, sizeof(yd));
		br = broadcast_shape(yd, nd, bd);
		fix_init(&f, GRAPH_OP_WHERE);
		c = fix_input(&f, GRAPH_DT_BOOL, cr, cd);
		a = fix_input(&f, dt, ar, ad);
		b = fix_input(&f, dt, br, bd);
		yy = fix_output(&f, dt, nd, yd);
		for (int64_t i = 0; i < prod(cd, cr); i++)
			c[i] = (uint8_t)rnd(0, 1);
		for (size_t i = 0; i < (size_t)prod(ad, ar) * es; i++)
			a[i] = (char)rnd(0, 255);
		for (size_t i = 0; i < (size_t)prod(bd, br) * es; i++)
			b[i] = (char)rnd(0, 255);
		if (run_ok(&f, "where"))
			for (int64_t i = 0; i < prod(yd, nd); i++) {
				int64_t oi[8];
				const char *src;

				unravel(i, yd, nd, oi);
				src = c[bcast_index(oi, nd, cd, cr)] ? a + bcast_index(oi, nd, ad, ar) * (int64_t)es :
				    b + bcast_index(oi, nd, bd, br) * (int64_t)es;
				bad += memcmp(yy + i * (int64_t)es, src, es) != 0;
			}
		CHECK(bad == 0, "where dtype %d: %lld wrong", (int)dt, (long long)bad);
		fix_free(&f);
	}
}

/* Run a Cast of n elements from one dtype to another over the given input bytes. */
static int
run_cast(enum graph_dtype from, enum graph_dtype to, const void *x, size_t xes, int64_t n, void *y, size_t yes)
{
	struct fix f;
	int ok;

	fix_init(&f, GRAPH_OP_CAST);
	f.n.attr.cast.to = to;
	memcpy(fix_input(&f, from, 1, &n), x, (size_t)n * xes);
	fix_output(&f, to, 1, &n);
	ok = run_ok(&f, "cast");
	if (ok)
		memcpy(y, f.p[f.out[0]], (size_t)n * yes);
	fix_free(&f);
	return ok;
}

/* Cast: F16 both ways against the compiler's _Float16 (every half value, random and tie floats); integers and bools. */
static void
test_cast(void)
{
	int64_t n = 65536, bad = 0;
	uint16_t *h = malloc(65536 * 2), *h2 = malloc(65536 * 2);
	float *fl = malloc(65536 * 4);

	for (int64_t i = 0; i < n; i++)
		h[i] = (uint16_t)i;
	if (run_cast(GRAPH_DT_F16, GRAPH_DT_F32, h, 2, n, fl, 4))
		for (int64_t i = 0; i < n; i++) {
			_Float16 hv;
			float want;

			memcpy(&hv, &h[i], 2);
			want = (float)hv;
			bad += !(want == fl[i] || (isnan(want) && isnan(fl[i])));
		}
	CHECK(bad == 0, "f16 -> f32: %lld wrong", (long long)bad);
	/* Floats: random over a wide exponent range, plus exact ties between two halves. */
	for (int64_t i = 0; i < n; i++) {
		if (i % 2) {
			float m;

			fill(&m, 1, -2, 2);
			fl[i] = ldexpf(m, (int)rnd(-30, 17));
		} else {
			uint32_t bits = ((uint32_t)rnd(0, 1) << 31) | ((uint32_t)rnd(100, 142) << 23) |
			    ((uint32_t)rnd(0, 1023) << 13) | 0x1000;
			memcpy(&fl[i], &bits, 4);
		}
	}
	bad = 0;
	if (run_cast(GRAPH_DT_F32, GRAPH_DT_F16, fl, 4, n, h2, 2))
		for (int64_t i = 0; i < n; i++) {
			_Float16 hv = (_Float16)fl[i];
			uint16_t want;

			memcpy(&want, &hv, 2);
			bad += want != h2[i];
		}
	CHECK(bad == 0, "f32 -> f16: %lld wrong", (long long)bad);
	free(h);
	free(h2);
	free(fl);

	/* Integer and bool conversions with known answers. */
	int64_t i64[6] = { -3, 0, 7, 1LL << 40, -(1LL << 33) - 5, 255 };
	int32_t i32[6];
	float f32[6] = { -2.75f, -0.5f, 0.0f, 0.5f, 3.99f, 1e3f }, fo[6];
	int64_t io[6];
	uint8_t bo[6];

	if (run_cast(GRAPH_DT_I64, GRAPH_DT_I32, i64, 8, 6, i32, 4))
		for (int i = 0; i < 6; i++)
			CHECK(i32[i] == (int32_t)i64[i], "i64 -> i32 [%d]: %d", i, i32[i]);
	if (run_cast(GRAPH_DT_F32, GRAPH_DT_I64, f32, 4, 6, io, 8)) {
		static const int64_t want[6] = { -2, 0, 0, 0, 3, 1000 };

		for (int i = 0; i < 6; i++)
			CHECK(io[i] == want[i], "f32 -> i64 [%d]: %lld", i, (long long)io[i]);
	}
	if (run_cast(GRAPH_DT_F32, GRAPH_DT_BOOL, f32, 4, 6, bo, 1))
		for (int i = 0; i < 6; i++)
			CHECK(bo[i] == (f32[i] != 0.0f), "f32 -> bool [%d]: %d", i, bo[i]);
	if (run_cast(GRAPH_DT_BOOL, GRAPH_DT_F32, bo, 1, 6, fo, 4))
		for (int i = 0; i < 6; i++)
			CHECK(fo[i] == (float)bo[i], "bool -> f32 [%d]: %g", i, fo[i]);
	if (run_cast(GRAPH_DT_I64, GRAPH_DT_F32, i64, 8, 6, fo, 4))
		for (int i = 0; i < 6; i++)
			CHECK(fo[i] == (float)i64[i], "i64 -> f32 [%d]: %g", i, fo[i]);
	if (run_cast(GRAPH_DT_I64, GRAPH_DT_U8, i64, 8, 6, bo, 1))
		for (int i = 0; i < 6; i++)
			CHECK(bo[i] == (uint8_t)i64[i], "i64 -> u8 [%d]: %d", i, bo[i]);
}

/* Softmax and LogSoftmax on every axis. */
static void
test_softmax(void)
{
	for (int t = 0; t < 30; t++) {
		struct fix f;
		int64_t d[5], n, outer = 1, len, inner = 1;
		int nd = random_shape(d, 1, 5, 6), ax = (int)rnd(0, nd - 1), log_out = t % 2;
		float *x, *y;
		double *ref;

		if (t == 29) {
			nd = 2; d[0] = 400; d[1] = 129; ax = 1;
		}
		fix_init(&f, GRAPH_OP_SOFTMAX);
		f.n.attr.softmax.axis = rnd(0, 1) ? ax : ax - nd;
		f.n.attr.softmax.log = log_out;
		x = fix_input(&f, GRAPH_DT_F32, nd, d);
		y = fix_output(&f, GRAPH_DT_F32, nd, d);
		n = prod(d, nd);
		fill(x, n, -5, 5);
		ref = malloc((size_t)n * sizeof(double));
		for (int i = 0; i < ax; i++) outer *= d[i];
		len = d[ax];
		for (int i = ax + 1; i < nd; i++) inner *= d[i];
		for (int64_t o = 0; o < outer; o++)
			for (int64_t in = 0; in < inner; in++) {
				double mx = -INFINITY, s = 0;

				for (int64_t k = 0; k < len; k++)
					mx = fmax(mx, x[(o * len + k) * inner + in]);
				for (int64_t k = 0; k < len; k++)
					s += exp(x[(o * len + k) * inner + in] - mx);
				for (int64_t k = 0; k < len; k++) {
					double v = x[(o * len + k) * inner + in] - mx;

					ref[(o * len + k) * inner + in] = log_out ? v - log(s) : exp(v) / s;
				}
			}
		if (run_ok(&f, "softmax"))
			check_close(y, ref, n, log_out ? "logsoftmax" : "softmax");
		free(ref);
		fix_free(&f);
	}
}

/* LayerNorm over trailing axes, with and without scale and bias; BatchNorm. */
static void
test_norms(void)
{
	for (int t = 0; t < 30; t++) {
		struct fix f;
		int64_t d[5], n, rows = 1, len = 1;
		int nd = random_shape(d, 1, 4, 7), ax = (int)rnd(0, nd - 1), form = t % 3;
		float *x, *s = NULL, *b = NULL, *y;
		double *ref;

		fix_init(&f, GRAPH_OP_LAYERNORM);
		f.n.attr.norm.axis = rnd(0, 1) ? ax : ax - nd;
		f.n.attr.norm.eps = 1e-5f;
		x = fix_input(&f, GRAPH_DT_F32, nd, d);
		if (form > 0)
			s = fix_input(&f, GRAPH_DT_F32, nd - ax, d + ax);
		if (form > 1)
			b = fix_input(&f, GRAPH_DT_F32, nd - ax, d + ax);
		y = fix_output(&f, GRAPH_DT_F32, nd, d);
		n = prod(d, nd);
		for (int i = 0; i < nd; i++)
			*(i < ax ? &rows : &len) *= d[i];
		fill(x, n, -3, 5);
		if (s) fill(s, len, -1, 1);
		if (b) fill(b, len, -1, 1);
		ref = malloc((size_t)n * sizeof(double));
		for (int64_t r = 0; r < rows; r++) {
			double mean = 0, var = 0;

			for (int64_t k = 0; k < len; k++) mean += x[r * len + k];
			mean /= (double)len;
			for (int64_t k = 0; k < len; k++) var += pow(x[r * len + k] - mean, 2);
			var /= (double)len;
			for (int64_t k = 0; k < len; k++)
				ref[r * len + k] = (x[r * len + k] - mean) / sqrt(var + 1e-5) * (s ? s[k] : 1) + (b ? b[k] : 0);
		}
		if (run_ok(&f, "layernorm"))
			check_close(y, ref, n, "layernorm");
		free(ref);
		fix_free(&f);

		int64_t xd[4] = { rnd(1, 3), rnd(1, 6), rnd(1, 5), rnd(1, 5) }, ch = xd[1];
		float *p[4];

		fix_init(&f, GRAPH_OP_BATCHNORM);
		f.n.attr.norm.eps = 1e-3f;
		x = fix_input(&f, GRAPH_DT_F32, 4, xd);
		for (int i = 0; i < 4; i++) {
			p[i] = fix_input(&f, GRAPH_DT_F32, 1, &ch);
			fill(p[i], ch, i == 3 ? 0.1f : -1, 1);
		}
		y = fix_output(&f, GRAPH_DT_F32, 4, xd);
		n = prod(xd, 4);
		fill(x, n, -2, 2);
		ref = malloc((size_t)n * sizeof(double));
		for (int64_t i = 0; i < n; i++) {
			int64_t c = i / (xd[2] * xd[3]) % ch;

			ref[i] = (x[i] - p[2][c]) / sqrt(p[3][c] + 1e-3) * p[0][c] + p[1][c];
		}
		if (run_ok(&f, "batchnorm"))
			check_close(y, ref, n, "batchnorm");
		free(ref);
		fix_free(&f);
	}
}

/* ReduceMean/Sum/Max over random axes (negative too), keepdims or not, and over all axes. */
static void
test_reduce(void)
{
	for (int t = 0; t < 40; t++) {
		struct fix f;
		int64_t d[5], yd[5], keepd[5], n, ny;
		int nd = random_shape(d, 1, 5, 6), red[5] = { 0 }, yr = 0;
		struct graph_reduce_attr *a = &f.n.attr.reduce;
		float *x, *y;
		double *ref, *cnt;

		fix_init(&f, GRAPH_OP_REDUCE);
		a->kind = (enum graph_reduce_kind)(t % 3);
		a->keepdims = (int)rnd(0, 1);
		if (t % 5 != 4)
			for (int i = 0; i < nd; i++)
				if (rnd(0, 1)) {
					red[i] = 1;
					a->axes[a->naxes++] = rnd(0, 1) ? i : i - nd;
				}
		for (int i = 0; i < nd; i++) {
			if (a->naxes == 0)
				red[i] = 1;
			keepd[i] = red[i] ? 1 : d[i];
			if (!red[i] || a->keepdims)
				yd[yr++] = keepd[i];
		}
		x = fix_input(&f, GRAPH_DT_F32, nd, d);
		y = fix_output(&f, GRAPH_DT_F32, yr, yd);
		n = prod(d, nd);
		ny = prod(keepd, nd);
		fill(x, n, -2, 3);
		ref = malloc((size_t)ny * sizeof(double));
		cnt = calloc((size_t)ny, sizeof(double));
		for (int64_t i = 0; i < ny; i++)
			ref[i] = a->kind == GRAPH_REDUCE_MAX ? -INFINITY : 0;
		for (int64_t i = 0; i < n; i++) {
			int64_t xi[5], o;

			unravel(i, d, nd, xi);
			for (int k = 0; k < nd; k++)
				if (red[k])
					xi[k] = 0;
			o = ravel(xi, keepd, nd);
			ref[o] = a->kind == GRAPH_REDUCE_MAX ? fmax(ref[o], x[i]) : ref[o] + x[i];
			cnt[o]++;
		}
		if (a->kind == GRAPH_REDUCE_MEAN)
			for (int64_t i = 0; i < ny; i++)
				ref[i] /= cnt[i];
		if (run_ok(&f, "reduce"))
			check_close(y, ref, ny, "reduce");
		free(ref);
		free(cnt);
		fix_free(&f);
	}
}

static const enum graph_dtype move_dts[] = { GRAPH_DT_F32, GRAPH_DT_I64, GRAPH_DT_BOOL, GRAPH_DT_F16, GRAPH_DT_I32 };

/* Element size of dt. */
static size_t
esize(enum graph_dtype dt)
{
	return dt == GRAPH_DT_I64 ? 8 : dt == GRAPH_DT_F32 || dt == GRAPH_DT_I32 ? 4 : dt == GRAPH_DT_F16 ? 2 : 1;
}

/* Random bytes. */
static void
fill_bytes(void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)rnd(0, 255);
}

/* Transpose with random perms, several dtypes, exact. */
static void
test_transpose(void)
{
	for (int t = 0; t < 30; t++) {
		struct fix f;
		enum graph_dtype dt = move_dts[t % 5];
		size_t es = esize(dt);
		int64_t d[6], yd[6], n, bad = 0;
		int nd = random_shape(d, 1, 6, 5), perm[6];
		char *x, *y;

		if (t == 29) {
			nd = 3; d[0] = 64; d[1] = 128; d[2] = 33;
		}
		/* A transformer's head split, [B, S, H, D] -> [B, H, S, D]: threads start mid-way through the dims. */
		if (t == 28) {
			nd = 4; d[0] = 3; d[1] = 37; d[2] = 12; d[3] = 32;
		}
		for (int i = 0; i < nd; i++)
			perm[i] = i;
		for (int i = nd - 1; i > 0 && t != 28; i--) {
			int j = (int)rnd(0, i), tmp = perm[i];

			perm[i] = perm[j];
			perm[j] = tmp;
		}
		if (t == 28) {
			perm[1] = 2;
			perm[2] = 1;
		}
		fix_init(&f, GRAPH_OP_TRANSPOSE);
		f.n.attr.transpose.nperm = nd;
		for (int i = 0; i < nd; i++) {
			f.n.attr.transpose.perm[i] = perm[i];
			yd[i] = d[perm[i]];
		}
		x = fix_input(&f, dt, nd, d);
		y = fix_output(&f, dt, nd, yd);
		n = prod(d, nd);
		fill_bytes(x, (size_t)n * es);
		if (run_ok(&f, "transpose"))
			for (int64_t i = 0; i < n; i++) {
				int64_t yi[6], xi[6];

				unravel(i, yd, nd, yi);
				for (int k = 0; k < nd; k++)
					xi[perm[k]] = yi[k];
				bad += memcmp(y + i * (int64_t)es, x + ravel(xi, d, nd) * (int64_t)es, es) != 0;
			}
		CHECK(bad == 0, "transpose rank %d dtype %d: %lld wrong", nd, (int)dt, (long long)bad);
		fix_free(&f);
	}
}

/*
 * Concat of 1 to 4 inputs and Split into 1 to 4 outputs on a random axis,
 * exact.  The last cases are 12-24 a dim in 3 or 4 dims: large enough (32K
 * elements and more) that the copy is split into per-thread byte spans.
 */
static void
test_concat_split(void)
{
	for (int t = 0; t < 36; t++) {
		struct fix f, g;
		enum graph_dtype dt = move_dts[t % 5];
		size_t es = esize(dt);
		int64_t d[5], parts[4][5], total = 0, n;
		int big = t >= 28, nd = big ? (int)rnd(3, 4) : random_shape(d, 1, 5, 4);
		int ax, np = (int)rnd(1, 4);
		char *in[4], *y;

		for (int i = 0; big && i < nd; i++)
			d[i] = rnd(12, 24);
		ax = (int)rnd(0, nd - 1);

		fix_init(&f, GRAPH_OP_CONCAT);
		f.n.attr.concat.axis = rnd(0, 1) ? ax : ax - nd;
		for (int k = 0; k < np; k++) {
			memcpy(parts[k], d, sizeof(d));
			parts[k][ax] = rnd(0, big ? 24 : 3);
			total += parts[k][ax];
			in[k] = fix_input(&f, dt, nd, parts[k]);
			fill_bytes(in[k], (size_t)prod(parts[k], nd) * es);
		}
		d[ax] = total;
		y = fix_output(&f, dt, nd, d);
		n = prod(d, nd);
		fix_init(&g, GRAPH_OP_SPLIT);
		g.n.attr.split.axis = f.n.attr.concat.axis;
		memcpy(fix_input(&g, dt, nd, d), y, 0);
		for (int k = 0; k < np; k++)
			fix_output(&g, dt, nd, parts[k]);
		if (run_ok(&f, "concat")) {
			int64_t bad = 0;

			for (int64_t i = 0; i < n; i++) {
				int64_t yi[5], k = 0;

				unravel(i, d, nd, yi);
				while (yi[ax] >= parts[k][ax])
					yi[ax] -= parts[k++][ax];
				bad += memcmp(y + i * (int64_t)es, in[k] + ravel(yi, parts[k], nd) * (int64_t)es, es) != 0;
			}
			CHECK(bad == 0, "concat axis %d of %d parts: %lld wrong", ax, np, (long long)bad);
			/* Split the concatenation back into the parts. */
			memcpy(g.p[g.in[0]], y, (size_t)n * es);
			if (run_ok(&g, "split"))
				for (int k = 0; k < np; k++)
					CHECK(memcmp(g.p[g.out[k]], in[k], (size_t)prod(parts[k], nd) * es) == 0,
					    "split part %d differs", k);
		}
		fix_free(&f);
		fix_free(&g);
	}
}

/* Indices a slice takes along one dim, straight from the ONNX Slice definition. */
static int64_t
ref_slice_axis(int64_t start, int64_t end, int64_t step, int64_t dim, int64_t *idx)
{
	int64_t n = 0;

	if (start < 0) start += dim;
	if (end < 0) end += dim;
	if (step > 0) {
		start = start < 0 ? 0 : start > dim ? dim : start;
		end = end < 0 ? 0 : end > dim ? dim : end;
		for (int64_t i = start; i < end; i += step)
			idx[n++] = i;
	} else {
		start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
		end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
		for (int64_t i = start; i > end; i += step)
			idx[n++] = i;
	}
	return n;
}

/* Slice with random starts/ends (negative, out of range) and steps (negative too), exact. */
static void
test_slice(void)
{
	for (int t = 0; t < 40; t++) {
		struct fix f;
		enum graph_dtype dt = move_dts[t % 5];
		size_t es = esize(dt);
		int64_t d[5], yd[5], idx[5][64], bad = 0;
		int nd = random_shape(d, 1, 5, 8);
		char *x, *y;

		fix_init(&f, GRAPH_OP_SLICE);
		for (int i = 0; i < nd; i++) {
			yd[i] = d[i];
			for (int64_t k = 0; k < d[i]; k++)
				idx[i][k] = k;
		}
		for (int i = 0; i < nd; i++) {
			int k;

			if (rnd(0, 2) == 0)
				continue;
			k = f.n.attr.slice.naxes++;
			f.n.attr.slice.axes[k] = rnd(0, 1) ? i : i - nd;
			f.n.attr.slice.starts[k] = rnd(-10, 10);
			f.n.attr.slice.ends[k] = rnd(0, 4) == 0 ? (rnd(0, 1) ? INT64_MAX : INT64_MIN) : rnd(-10, 10);
			f.n.attr.slice.steps[k] = rnd(1, 3) * (rnd(0, 1) ? 1 : -1);
			yd[i] = ref_slice_axis(f.n.attr.slice.starts[k], f.n.attr.slice.ends[k],
			    f.n.attr.slice.steps[k], d[i], idx[i]);
		}
		x = fix_input(&f, dt, nd, d);
		y = fix_output(&f, dt, nd, yd);
		fill_bytes(x, (size_t)prod(d, nd) * es);
		if (run_ok(&f, "slice"))
			for (int64_t i = 0; i < prod(yd, nd); i++) {
				int64_t yi[5], xi[5];

				unravel(i, yd, nd, yi);
				for (int k = 0; k < nd; k++)
					xi[k] = idx[k][yi[k]];
				bad += memcmp(y + i * (int64_t)es, x + ravel(xi, d, nd) * (int64_t)es, es) != 0;
			}
		CHECK(bad == 0, "slice rank %d: %lld wrong", nd, (long long)bad);
		fix_free(&f);
	}
}

/* Gather on every axis with negative INT64/INT32 indices; an out-of-range index is an error. */
static void
test_gather(void)
{
	for (int t = 0; t < 30; t++) {
		struct fix f;
		enum graph_dtype dt = move_dts[t % 5], it = t % 2 ? GRAPH_DT_I32 : GRAPH_DT_I64;
		size_t es = esize(dt);
		int64_t d[4], id[3], yd[7], bad = 0, ni;
		int nd = random_shape(d, 1, 4, 5), ax = (int)rnd(0, nd - 1), ir = random_shape(id, 0, 2, 4), yr = 0;
		char *x, *y;
		void *ind;
		char *cause = NULL;

		for (int i = 0; i < ax; i++) yd[yr++] = d[i];
		for (int i = 0; i < ir; i++) yd[yr++] = id[i];
		for (int i = ax + 1; i < nd; i++) yd[yr++] = d[i];
		fix_init(&f, GRAPH_OP_GATHER);
		f.n.attr.gather.axis = rnd(0, 1) ? ax : ax - nd;
		x = fix_input(&f, dt, nd, d);
		ind = fix_input(&f, it, ir, id);
		y = fix_output(&f, dt, yr, yd);
		ni = prod(id, ir);
		fill_bytes(x, (size_t)prod(d, nd) * es);
		for (int64_t j = 0; j < ni; j++) {
			int64_t v = rnd(-d[ax], d[ax] - 1);

			if (it == GRAPH_DT_I64) ((int64_t *)ind)[j] = v; else ((int32_t *)ind)[j] = (int32_t)v;
		}
		if (run_ok(&f, "gather"))
			for (int64_t i = 0; i < prod(yd, yr); i++) {
				int64_t yi[7], xi[4], j, v;

				unravel(i, yd, yr, yi);
				j = ravel(yi + ax, id, ir);
				v = it == GRAPH_DT_I64 ? ((int64_t *)ind)[j] : ((int32_t *)ind)[j];
				for (int k = 0; k < nd; k++)
					xi[k] = k < ax ? yi[k] : k == ax ? (v < 0 ? v + d[ax] : v) : yi[k - 1 + ir];
				bad += memcmp(y + i * (int64_t)es, x + ravel(xi, d, nd) * (int64_t)es, es) != 0;
			}
		CHECK(bad == 0, "gather axis %d: %lld wrong", ax, (long long)bad);
		/* Runtime data out of range: refused with a message, never read. */
		if (ni > 0) {
			int64_t v = rnd(0, 1) ? d[ax] : -d[ax] - 1;

			if (it == GRAPH_DT_I64) ((int64_t *)ind)[ni - 1] = v; else ((int32_t *)ind)[ni - 1] = (int32_t)v;
			CHECK(fix_run(&f, &cause) != 0 && cause != NULL && strstr(cause, "out of range") != NULL,
			    "gather index %lld for dim %lld: %s", (long long)v, (long long)d[ax], cause ? cause : "accepted");
			free(cause);
		}
		fix_free(&f);
	}
}

/* GatherElements on every axis with negative INT64/INT32 indices; an out-of-range index is an error. */
static void
test_gather_elements(void)
{
	for (int t = 0; t < 30; t++) {
		struct fix f;
		enum graph_dtype dt = move_dts[t % 5], it = t % 2 ? GRAPH_DT_I32 : GRAPH_DT_I64;
		size_t es = esize(dt);
		int64_t d[4], id[4], bad = 0, ni;
		int nd = random_shape(d, 1, 4, 5), ax = (int)rnd(0, nd - 1);
		char *x, *y, *cause = NULL;
		void *ind;

		if (t >= 28) {
			/* Large enough for threads. */
			nd = 2; d[0] = 700; d[1] = 300; ax = t % 2;
		}
		for (int k = 0; k < nd; k++)
			id[k] = t >= 28 ? d[k] : k == ax ? rnd(1, 6) : rnd(1, d[k]);
		fix_init(&f, GRAPH_OP_GATHER_ELEMENTS);
		f.n.attr.gather.axis = rnd(0, 1) ? ax : ax - nd;
		x = fix_input(&f, dt, nd, d);
		ind = fix_input(&f, it, nd, id);
		y = fix_output(&f, dt, nd, id);
		ni = prod(id, nd);
		fill_bytes(x, (size_t)prod(d, nd) * es);
		for (int64_t j = 0; j < ni; j++) {
			int64_t v = rnd(-d[ax], d[ax] - 1);

			if (it == GRAPH_DT_I64) ((int64_t *)ind)[j] = v; else ((int32_t *)ind)[j] = (int32_t)v;
		}
		if (run_ok(&f, "gather_elements"))
			for (int64_t i = 0; i < ni; i++) {
				int64_t xi[4], v = it == GRAPH_DT_I64 ? ((int64_t *)ind)[i] : ((int32_t *)ind)[i];

				unravel(i, id, nd, xi);
				xi[ax] = v < 0 ? v + d[ax] : v;
				bad += memcmp(y + i * (int64_t)es, x + ravel(xi, d, nd) * (int64_t)es, es) != 0;
			}
		CHECK(bad == 0, "gather_elements axis %d rank %d: %lld wrong", ax, nd, (long long)bad);
		/* Runtime data out of range: refused with a message, never read. */
		{
			int64_t v = rnd(0, 1) ? d[ax] : -d[ax] - 1;

			if (it == GRAPH_DT_I64) ((int64_t *)ind)[ni - 1] = v; else ((int32_t *)ind)[ni - 1] = (int32_t)v;
			CHECK(fix_run(&f, &cause) != 0 && cause != NULL && strstr(cause, "out of range") != NULL,
			    "gather_elements index %lld for dim %lld: %s", (long long)v, (long long)d[ax],
			    cause ? cause : "accepted");
			free(cause);
		}
		fix_free(&f);
	}
}

/* Expand to a broadcast shape, exact. */
static void
test_expand(void)
{
	for (int t = 0; t < 20; t++) {
		struct fix f;
		enum graph_dtype dt = move_dts[t % 5];
		size_t es = esize(dt);
		int64_t yd[6], xd[6], bad = 0;
		int nd = random_shape(yd, 0, 5, 4), xr = broadcast_shape(yd, nd, xd);
		char *x, *y;

		fix_init(&f, GRAPH_OP_EXPAND);
		x = fix_input(&f, dt, xr, xd);
		y = fix_output(&f, dt, nd, yd);
		fill_bytes(x, (size_t)prod(xd, xr) * es);
		if (run_ok(&f, "expand"))
			for (int64_t i = 0; i < prod(yd, nd); i++) {
				int64_t yi[6];

				unravel(i, yd, nd, yi);
				bad += memcmp(y + i * (int64_t)es, x + bcast_index(yi, nd, xd, xr) * (int64_t)es, es) != 0;
			}
		CHECK(bad == 0, "expand: %lld wrong", (long long)bad);
		fix_free(&f);
	}
}

/* Source index of a pad along one dim (numpy's pad definitions); -1 for the constant. */
static int64_t
ref_pad_src(int64_t i, int64_t n, int64_t pb, enum graph_pad_mode mode)
{
	int64_t s = i - pb;

	if (s >= 0 && s < n)
		return s;
	if (mode == GRAPH_PAD_CONSTANT)
		return -1;
	if (mode == GRAPH_PAD_EDGE)
		return s < 0 ? 0 : n - 1;
	while (s < 0 || s >= n)
		s = s < 0 ? -s : 2 * (n - 1) - s;
	return s;
}

/* Pad: constant (incl. negative pads), reflect, edge, several dtypes, exact. */
static void
test_pad(void)
{
	for (int t = 0; t < 36; t++) {
		struct fix f;
		enum graph_pad_mode mode = (enum graph_pad_mode)(t % 3);
		enum graph_dtype dt = t % 4 == 0 ? GRAPH_DT_I64 : GRAPH_DT_F32;
		size_t es = esize(dt);
		int64_t d[5], yd[5], bad = 0;
		int nd = random_shape(d, 1, 4, 5);
		char *x, *y, fillv[8];

		fix_init(&f, GRAPH_OP_PAD);
		f.n.attr.pad.mode = mode;
		f.n.attr.pad.npads = 2 * nd;
		f.n.attr.pad.value = 1.5f;
		for (int i = 0; i < nd; i++) {
			int64_t lo = mode == GRAPH_PAD_CONSTANT ? -(d[i] - 1) / 2 : mode == GRAPH_PAD_REFLECT ? 0 : 0;
			int64_t hi = mode == GRAPH_PAD_REFLECT ? d[i] - 1 : 3;

			f.n.attr.pad.pads[i] = rnd(lo, hi);
			f.n.attr.pad.pads[nd + i] = rnd(lo, hi);
			yd[i] = d[i] + f.n.attr.pad.pads[i] + f.n.attr.pad.pads[nd + i];
		}
		x = fix_input(&f, dt, nd, d);
		y = fix_output(&f, dt, nd, yd);
		fill_bytes(x, (size_t)prod(d, nd) * es);
		if (dt == GRAPH_DT_F32) {
			float v = 1.5f;
			memcpy(fillv, &v, 4);
		} else {
			int64_t v = 1;
			memcpy(fillv, &v, 8);
		}
		if (run_ok(&f, "pad"))
			for (int64_t i = 0; i < prod(yd, nd); i++) {
				int64_t yi[5], xi[5];
				int out = 0;

				unravel(i, yd, nd, yi);
				for (int k = 0; k < nd; k++) {
					xi[k] = ref_pad_src(yi[k], d[k], f.n.attr.pad.pads[k], mode);
					out |= xi[k] < 0;
				}
				bad += memcmp(y + i * (int64_t)es, out ? fillv : x + ravel(xi, d, nd) * (int64_t)es, es) != 0;
			}
		CHECK(bad == 0, "pad mode %d rank %d dtype %d: %lld wrong", (int)mode, nd, (int)dt, (long long)bad);
		fix_free(&f);
	}
}

/* Source coordinate per the ONNX Resize definition, rounded as onnxruntime does (float; the symmetric mode's sum in double). */
static float
ref_resize_coord(int mode, float x, float scale, int64_t in, int64_t out)
{
	switch (mode) {
	case CPU_RESIZE_HALF_PIXEL_SYMMETRIC: {
		float adj = (float)out / (scale * (float)in);

		return (float)((double)((float)in / 2 * (1 - adj)) + ((double)x + 0.5) / scale - 0.5);
	}
	case CPU_RESIZE_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5f) / scale - 0.5f : 0;
	case CPU_RESIZE_ALIGN_CORNERS: return out == 1 ? 0 : x * (float)(in - 1) / (float)(out - 1);
	case CPU_RESIZE_ASYMMETRIC: return x / scale;
	default: return (x + 0.5f) / scale - 0.5f;
	}
}

/* Resize of one axis in double: the two taps and the second's weight. */
static void
ref_resize_taps(const struct graph_resize_attr *a, float scale, int64_t in, int64_t out, int64_t o,
    int64_t *i0, int64_t *i1, double *w1)
{
	double c = ref_resize_coord(a->coord, (float)o, scale, in, out), r;

	if (a->mode == GRAPH_RESIZE_NEAREST) {
		switch (a->nearest) {
		case CPU_RESIZE_ROUND_PREFER_CEIL: r = c - floor(c) == 0.5 ? ceil(c) : round(c); break;
		case CPU_RESIZE_FLOOR: r = floor(c); break;
		case CPU_RESIZE_CEIL: r = ceil(c); break;
		default: r = c - floor(c) == 0.5 ? floor(c) : round(c); break;
		}
		*i0 = *i1 = (int64_t)fmin(fmax(r, 0), (double)(in - 1));
		*w1 = 0;
		return;
	}
	c = fmin(fmax(c, 0), (double)(in - 1));
	*i0 = (int64_t)floor(c);
	*i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
	*w1 = c - (double)*i0;
}

/* Resize NCHW on H and W: nearest (4 roundings) and linear, 5 coordinate modes, scales or sizes. */
static void
test_resize(void)
{
	static const float scales[] = { 0.5f, 0.6f, 1.0f, 1.5f, 2.0f, 3.0f };

	for (int t = 0; t < 60; t++) {
		struct fix f;
		struct graph_resize_attr *a = &f.n.attr.resize;
		int64_t xd[4] = { rnd(1, 2), rnd(1, 3), rnd(1, 7), rnd(1, 7) }, yd[4], n;
		float sc[2] = { scales[rnd(0, 5)], scales[rnd(0, 5)] }, *x, *y;
		double *ref;
		char what[64];

		fix_init(&f, GRAPH_OP_RESIZE);
		a->mode = t % 2 ? GRAPH_RESIZE_LINEAR : GRAPH_RESIZE_NEAREST;
		a->coord = (int)(t / 2 % 5);
		a->nearest = (int)rnd(0, 3);
		yd[0] = xd[0];
		yd[1] = xd[1];
		if (t % 3 == 0) {
			a->nsizes = 4;
			for (int i = 0; i < 2; i++) {
				yd[2 + i] = rnd(1, 12);
				sc[i] = (float)yd[2 + i] / (float)xd[2 + i];
			}
		} else {
			a->nscales = 4;
			a->scales[0] = a->scales[1] = 1;
			for (int i = 0; i < 2; i++) {
				a->scales[2 + i] = sc[i];
				yd[2 + i] = (int64_t)floor((double)xd[2 + i] * sc[i]);
				if (yd[2 + i] < 1) {
					yd[2 + i] = 1;
					a->scales[2 + i] = sc[i] = 1.0f / (float)xd[2 + i];
				}
			}
		}
		for (int i = 0; i < a->nsizes; i++)
			a->sizes[i] = yd[i];
		x = fix_input(&f, GRAPH_DT_F32, 4, xd);
		y = fix_output(&f, GRAPH_DT_F32, 4, yd);
		fill(x, prod(xd, 4), -1, 1);
		n = prod(yd, 4);
		ref = malloc((size_t)n * sizeof(double));
		for (int64_t i = 0; i < n; i++) {
			int64_t yi[4], h0, h1, w0, w1, pl;
			double wh, ww;
			const float *p;

			unravel(i, yd, 4, yi);
			pl = yi[0] * xd[1] + yi[1];
			p = x + pl * xd[2] * xd[3];
			ref_resize_taps(a, sc[0], xd[2], yd[2], yi[2], &h0, &h1, &wh);
			ref_resize_taps(a, sc[1], xd[3], yd[3], yi[3], &w0, &w1, &ww);
			ref[i] = (1 - wh) * ((1 - ww) * p[h0 * xd[3] + w0] + ww * p[h0 * xd[3] + w1]) +
			    wh * ((1 - ww) * p[h1 * xd[3] + w0] + ww * p[h1 * xd[3] + w1]);
		}
		snprintf(what, sizeof(what), "resize mode %d coord %d nearest %d %s", (int)a->mode, a->coord,
		    a->nearest, a->nsizes ? "sizes" : "scales");
		if (run_ok(&f, what))
			check_close(y, ref, n, what);
		free(ref);
		fix_free(&f);
	}
}

/* Expect cpu_node_supported to refuse f's node with a reason containing want. */
static void
expect_refused(struct fix *f, const char *want, const char *what)
{
	char *why = NULL;

	CHECK(!cpu_node_supported(&f->g, &f->n, &why) && why != NULL && strstr(why, want) != NULL,
	    "%s: %s", what, why ? why : "accepted");
	free(why);
}

/* Unsupported attributes and dtypes are refused by name; bad shapes fail at run time without crashing. */
static void
test_refusals(void)
{
	struct fix f;
	char *cause = NULL;
	int64_t d4[4] = { 1, 2, 5, 5 }, wd[4] = { 3, 3, 3, 3 }, d2[2] = { 2, 3 };

	fix_init(&f, GRAPH_OP_POOL);
	f.n.attr.pool.global = 1;
	fix_input(&f, GRAPH_DT_F32, 4, d4);
	fix_output(&f, GRAPH_DT_F32, 4, d4);
	fix_output(&f, GRAPH_DT_I64, 4, d4);
	expect_refused(&f, "outputs", "MaxPool with Indices");
	fix_free(&f);

	fix_init(&f, GRAPH_OP_RESIZE);
	f.n.attr.resize.coord = CPU_RESIZE_TF_CROP_AND_RESIZE;
	fix_input(&f, GRAPH_DT_F32, 4, d4);
	fix_output(&f, GRAPH_DT_F32, 4, d4);
	expect_refused(&f, "tf_crop_and_resize", "tf_crop_and_resize");
	fix_free(&f);

	fix_init(&f, GRAPH_OP_BINARY);
	f.n.attr.binary.fn = GRAPH_BINARY_POW;
	fix_input(&f, GRAPH_DT_I64, 2, d2);
	fix_input(&f, GRAPH_DT_I64, 2, d2);
	fix_output(&f, GRAPH_DT_I64, 2, d2);
	expect_refused(&f, "Pow", "integer Pow");
	fix_free(&f);

	fix_init(&f, GRAPH_OP_WHERE);
	fix_input(&f, GRAPH_DT_F32, 2, d2);
	fix_input(&f, GRAPH_DT_F32, 2, d2);
	fix_input(&f, GRAPH_DT_F32, 2, d2);
	fix_output(&f, GRAPH_DT_F32, 2, d2);
	expect_refused(&f, "BOOL", "Where on a float condition");
	fix_free(&f);

	fix_init(&f, GRAPH_OP_SOFTMAX);
	f.n.act = GRAPH_UNARY_RELU;
	fix_input(&f, GRAPH_DT_F32, 2, d2);
	fix_output(&f, GRAPH_DT_F32, 2, d2);
	expect_refused(&f, "fused activation", "activation on Softmax");
	fix_free(&f);

	fix_init(&f, GRAPH_OP_CONV);
	f.n.attr.conv.nspatial = 4;
	fix_input(&f, GRAPH_DT_F32, 4, d4);
	fix_input(&f, GRAPH_DT_F32, 4, wd);
	fix_output(&f, GRAPH_DT_F32, 4, d4);
	expect_refused(&f, "spatial", "4-D conv");
	fix_free(&f);

	fix_init(&f, GRAPH_OP_MATMUL);
	fix_input(&f, GRAPH_DT_F16, 2, d2);
	fix_input(&f, GRAPH_DT_F16, 2, d2);
	fix_output(&f, GRAPH_DT_F16, 2, d2);
	expect_refused(&f, "FP16", "F16 MatMul");
	fix_free(&f);

	/* A weight that does not fit the input: a message, not a crash. */
	fix_init(&f, GRAPH_OP_CONV);
	f.n.attr.conv = (struct graph_window_attr){ .nspatial = 2, .kernel = { 3, 3 }, .stride = { 1, 1 },
	    .dilation = { 1, 1 }, .group = 1 };
	fix_input(&f, GRAPH_DT_F32, 4, d4);
	fix_input(&f, GRAPH_DT_F32, 4, wd);
	fix_output(&f, GRAPH_DT_F32, 4, (int64_t[]){ 1, 3, 3, 3 });
	CHECK(fix_run(&f, &cause) != 0 && cause != NULL && strstr(cause, "test_node") != NULL,
	    "conv with a mismatched weight: %s", cause ? cause : "accepted");
	free(cause);
	fix_free(&f);

	/* MatMul with mismatched inner dims. */
	cause = NULL;
	fix_init(&f, GRAPH_OP_MATMUL);
	fix_input(&f, GRAPH_DT_F32, 2, d2);
	fix_input(&f, GRAPH_DT_F32, 2, d2);
	fix_output(&f, GRAPH_DT_F32, 2, (int64_t[]){ 2, 3 });
	CHECK(fix_run(&f, &cause) != 0 && cause != NULL && strstr(cause, "multiply") != NULL,
	    "matmul [2,3]x[2,3]: %s", cause ? cause : "accepted");
	free(cause);
	fix_free(&f);
}

/* Reshape copies (or does nothing in place); Copy copies. */
static void
test_reshape_copy(void)
{
	struct fix f;
	int64_t d[3] = { 2, 3, 4 }, e[2] = { 6, 4 };
	int64_t *x, *y;

	fix_init(&f, GRAPH_OP_RESHAPE);
	x = fix_input(&f, GRAPH_DT_I64, 3, d);
	y = fix_output(&f, GRAPH_DT_I64, 2, e);
	for (int i = 0; i < 24; i++)
		x[i] = i * 7 - 30;
	if (run_ok(&f, "reshape"))
		CHECK(memcmp(x, y, 24 * 8) == 0, "reshape copy differs");
	/* Same address: nothing to do. */
	f.p[f.out[0]] = x;
	CHECK(run_ok(&f, "reshape in place") && x[5] == 5 * 7 - 30, "reshape in place changed data");
	f.p[f.out[0]] = y;
	f.n.op = GRAPH_OP_COPY;
	memset(y, 0, 24 * 8);
	if (run_ok(&f, "copy"))
		CHECK(memcmp(x, y, 24 * 8) == 0, "copy differs");
	fix_free(&f);
}

/* The conv and matmul tests from a thread other than the one that set the thread count (as a batcher runs nodes). */
static void *
other_thread(void *arg)
{
	test_conv();
	test_matmul();
	return arg;
}

/* Every op once on one thread and once on two (the larger cases take the threaded paths). */
int
main(void)
{
	for (int threads = 1; threads <= 2; threads++) {
		cpu_kernels_set_threads(threads);
		CHECK(cpu_kernels_threads() == threads, "thread count %d", cpu_kernels_threads());
		test_gemm();
		test_matmul();
		test_conv();
		test_conv_transpose();
		test_pool();
		test_unary();
		test_binary_f32();
		test_binary_int();
		test_prelu_where();
		test_cast();
		test_softmax();
		test_norms();
		test_reduce();
		test_transpose();
		test_concat_split();
		test_slice();
		test_gather();
		test_gather_elements();
		test_expand();
		test_pad();
		test_resize();
		test_reshape_copy();
	}
	{
		pthread_t th;

		CHECK(pthread_create(&th, NULL, other_thread, NULL) == 0 && pthread_join(th, NULL) == 0,
		    "running kernels from another thread");
	}
	test_refusals();
	return test_finish("test_cpu_kernels");
}
