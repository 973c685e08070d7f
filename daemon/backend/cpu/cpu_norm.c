/* cpu_norm.c: softmax and log-softmax on any axis, layer norm, batch norm (inference), reductions. */
#include "config.h"

#include <math.h>

#include "cpu_kernels_impl.h"

/* Sizes around an axis: outer x len x inner. */
static void
axis_split(const struct graph_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < axis; i++)
		*outer *= s->dims[i];
	*len = s->dims[axis];
	for (int i = axis + 1; i < s->ndims; i++)
		*inner *= s->dims[i];
}

/* y *= 1 / sum over a contiguous line. */
static void
softmax_scale(float *y, int64_t len, double sum)
{
	float inv = (float)(1.0 / sum);

	for (int64_t i = 0; i < len; i++)
		y[i] *= inv;
}

/* Softmax of len values at stride st. */
static void
softmax_line(const float *x, float *y, int64_t len, int64_t st, int log_out)
{
	float mx = -INFINITY;
	double sum = 0.0;

	for (int64_t i = 0; i < len; i++)
		if (x[i * st] > mx)
			mx = x[i * st];
	if (st == 1 && !log_out) {
		/* A contiguous line: exp over the whole line at once, vectorised (cpu_vmath.c). */
		for (int64_t i = 0; i < len; i++)
			y[i] = x[i] - mx;
		cpu_vexpf(y, y, len);
		for (int64_t i = 0; i < len; i++)
			sum += y[i];
		softmax_scale(y, len, sum);
		return;
	}
	for (int64_t i = 0; i < len; i++) {
		float e = expf(x[i * st] - mx);

		sum += e;
		if (!log_out)
			y[i * st] = e;
	}
	if (log_out) {
		float ls = (float)log(sum);

		for (int64_t i = 0; i < len; i++)
			y[i * st] = x[i * st] - mx - ls;
	} else {
		float inv = (float)(1.0 / sum);

		for (int64_t i = 0; i < len; i++)
			y[i * st] *= inv;
	}
}

/* SOFTMAX: along one axis (log = 1: LogSoftmax). */
int
cpu_softmax_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	int axis = cpu_axis(c->n->attr.softmax.axis, xs->ndims);
	int64_t outer, len, inner, lines;
	const float *x = cpu_in(c, 0);
	float *y = cpu_out(c, 0);

	if (axis < 0)
		return cpu_fail(cause, "axis %lld outside rank %d", (long long)c->n->attr.softmax.axis,
		    xs->ndims);
	if (!cpu_shape_equal(xs, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "output shape differs from the input's");
	axis_split(xs, axis, &outer, &len, &inner);
	lines = outer * inner;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(lines * len))
	for (int64_t l = 0; l < lines; l++) {
		int64_t off = l / inner * len * inner + l % inner;

		softmax_line(x + off, y + off, len, inner, c->n->attr.softmax.log);
	}
	return 0;
}

/* Element i of the normalised row: x[i], plus the residual's when there is one (a fused Add, in FP32). */
static inline float
layernorm_in(const float *x, const float *z, int64_t i)
{
	return z != NULL ? x[i] + z[i] : x[i];
}

/* Normalise one row of len values (x + z when z): (x - mean) / sqrt(var + eps) * scale + bias. */
CPU_HOT_LOOP static void
layernorm_row(const float *x, const float *z, float *y, int64_t len, float eps, const float *scale, int64_t sst,
    const float *bias, int64_t bst)
{
	double mean = 0.0, var = 0.0;
	float inv, m;

	/* omp simd: the sums in double need reassociating to vectorise (their order is no part of the result's precision). */
	#pragma omp simd reduction(+:mean)
	for (int64_t i = 0; i < len; i++)
		mean += layernorm_in(x, z, i);
	mean /= (double)len;
	#pragma omp simd reduction(+:var)
	for (int64_t i = 0; i < len; i++)
		var += ((double)layernorm_in(x, z, i) - mean) * ((double)layernorm_in(x, z, i) - mean);
	var /= (double)len;
	inv = (float)(1.0 / sqrt(var + (double)eps));
	m = (float)mean;
	/* A scale and a bias of the row's length, as every exported model has: the loop without tests or strides vectorises. */
	if (scale != NULL && bias != NULL && sst == 1 && bst == 1) {
		#pragma omp simd
		for (int64_t i = 0; i < len; i++)
			y[i] = (layernorm_in(x, z, i) - m) * inv * scale[i] + bias[i];
		return;
	}
	#pragma omp simd
	for (int64_t i = 0; i < len; i++) {
		float v = (layernorm_in(x, z, i) - m) * inv;

		if (scale != NULL)
			v *= scale[i * sst];
		if (bias != NULL)
			v += bias[i * bst];
		y[i] = v;
	}
}

/* Step through a scale/bias of n elements over a row of len: 1 when n == len, 0 when n == 1. */
static int
norm_param_step(const struct cpu_node_ctx *c, int i, int64_t len, int64_t *st, const float **p, char **cause)
{
	int64_t n;

	*p = NULL;
	*st = 0;
	if (!cpu_has_in(c, i))
		return 0;
	n = cpu_elems(cpu_in_shape(c, i));
	if (n != len && n != 1)
		return cpu_fail(cause, "input %d has %lld elements, the normalised size is %lld", i,
		    (long long)n, (long long)len);
	*p = cpu_in(c, i);
	*st = n == len ? 1 : 0;
	return 0;
}

/* LAYERNORM: normalise over dims [axis, rank). */
int
cpu_layernorm_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	int axis = cpu_axis(c->n->attr.norm.axis, xs->ndims);
	int64_t rows = 1, len = 1, sst, bst;
	const float *scale, *bias, *x = cpu_in(c, 0), *z = NULL;
	float *y = cpu_out(c, 0);

	if (axis < 0)
		return cpu_fail(cause, "axis %lld outside rank %d", (long long)c->n->attr.norm.axis, xs->ndims);
	if (!cpu_shape_equal(xs, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "output shape differs from the input's");
	if (cpu_has_in(c, 3)) {
		if (!cpu_shape_equal(xs, cpu_in_shape(c, 3)))
			return cpu_fail(cause, "the residual's shape differs from the input's");
		z = cpu_in(c, 3);
	}
	for (int i = 0; i < xs->ndims; i++)
		*(i < axis ? &rows : &len) *= xs->dims[i];
	if (norm_param_step(c, 1, len, &sst, &scale, cause) != 0 ||
	    norm_param_step(c, 2, len, &bst, &bias, cause) != 0)
		return -1;
	if (len == 0)
		return 0;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(rows * len))
	for (int64_t r = 0; r < rows; r++)
		layernorm_row(x + r * len, z != NULL ? z + r * len : NULL, y + r * len, len, c->n->attr.norm.eps, scale,
		    sst, bias, bst);
	return 0;
}

/* BATCHNORM: per channel (dim 1) y = (x - mean) / sqrt(var + eps) * scale + bias. */
int
cpu_batchnorm_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	const float *x = cpu_in(c, 0), *sc = cpu_in(c, 1), *bi = cpu_in(c, 2), *mu = cpu_in(c, 3),
	    *var = cpu_in(c, 4);
	float *y = cpu_out(c, 0);
	int64_t ch, inner = 1, planes;

	if (xs->ndims < 2 || !cpu_shape_equal(xs, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "input must have rank >= 2 and the output's shape");
	ch = xs->dims[1];
	for (int i = 1; i <= 4; i++)
		if (cpu_elems(cpu_in_shape(c, i)) != ch)
			return cpu_fail(cause, "input %d has %lld elements, not %lld channels", i,
			    (long long)cpu_elems(cpu_in_shape(c, i)), (long long)ch);
	for (int i = 2; i < xs->ndims; i++)
		inner *= xs->dims[i];
	planes = xs->dims[0] * ch;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(planes * inner))
	for (int64_t p = 0; p < planes; p++) {
		int64_t k = p % ch;
		float a = (float)((double)sc[k] / sqrt((double)var[k] + (double)c->n->attr.norm.eps));
		float b = bi[k] - mu[k] * a;

		#pragma omp simd
		for (int64_t i = 0; i < inner; i++)
			y[p * inner + i] = x[p * inner + i] * a + b;
	}
	return 0;
}

/* Reduction geometry: input strides, which dims are reduced, output elements. */
struct reduce_geom {
	int nd;
	int64_t dims[GRAPH_MAX_DIMS], st[GRAPH_MAX_DIMS];
	int red[GRAPH_MAX_DIMS];
	int64_t nout, nred;
};

/* Mark the reduced axes and check the output's size. */
static int
reduce_geom_init(const struct cpu_node_ctx *c, struct reduce_geom *r, char **cause)
{
	const struct graph_reduce_attr *a = &c->n->attr.reduce;
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	int64_t st = 1;

	r->nd = xs->ndims;
	for (int i = r->nd - 1; i >= 0; i--) {
		r->dims[i] = xs->dims[i];
		r->st[i] = st;
		st *= xs->dims[i];
		r->red[i] = a->naxes == 0;
	}
	for (int k = 0; k < a->naxes; k++) {
		int ax = cpu_axis(a->axes[k], r->nd);

		if (ax < 0)
			return cpu_fail(cause, "axis %lld outside rank %d", (long long)a->axes[k], r->nd);
		r->red[ax] = 1;
	}
	r->nout = r->nred = 1;
	for (int i = 0; i < r->nd; i++)
		*(r->red[i] ? &r->nred : &r->nout) *= r->dims[i];
	if (cpu_elems(cpu_out_shape(c, 0)) != r->nout)
		return cpu_fail(cause, "output has %lld elements, the reduction gives %lld",
		    (long long)cpu_elems(cpu_out_shape(c, 0)), (long long)r->nout);
	return 0;
}

/* Running state of one reduction: a sum, product or log-sum-exp scale in acc, the max/min (or LSE shift) in best. */
struct reduce_acc {
	double acc;
	float best;
};

/* Start a reduction of kind: the value of an empty reduction. */
static void
reduce_start(enum graph_reduce_kind kind, struct reduce_acc *a)
{
	a->acc = kind == GRAPH_REDUCE_PROD ? 1.0 : 0.0;
	a->best = kind == GRAPH_REDUCE_MIN ? INFINITY : -INFINITY;
}

/* Fold v into the reduction (NaN wins max and min). */
static void
reduce_fold(enum graph_reduce_kind kind, struct reduce_acc *a, float v)
{
	switch (kind) {
	case GRAPH_REDUCE_MAX:
		if (v > a->best || isnan(v))
			a->best = v;
		break;
	case GRAPH_REDUCE_MIN:
		if (v < a->best || isnan(v))
			a->best = v;
		break;
	case GRAPH_REDUCE_PROD:
		a->acc *= v;
		break;
	case GRAPH_REDUCE_L1:
		a->acc += fabs((double)v);
		break;
	case GRAPH_REDUCE_L2:
	case GRAPH_REDUCE_SUMSQUARE:
		a->acc += (double)v * v;
		break;
	case GRAPH_REDUCE_LOGSUMEXP:
		/* Single pass: rescale the running sum whenever the shift (the max so far) grows. */
		if (v > a->best || isnan(v)) {
			a->acc = a->acc * exp((double)a->best - v) + 1.0;
			a->best = v;
		} else if (v > -INFINITY && a->best < INFINITY) {
			a->acc += exp((double)v - a->best);
		}
		break;
	default:
		a->acc += v;
	}
}

/* The reduction's result over nred elements. */
static float
reduce_finish(enum graph_reduce_kind kind, const struct reduce_acc *a, int64_t nred)
{
	switch (kind) {
	case GRAPH_REDUCE_MAX:
	case GRAPH_REDUCE_MIN:
		return a->best;
	case GRAPH_REDUCE_MEAN:
		return nred > 0 ? (float)(a->acc / (double)nred) : NAN;
	case GRAPH_REDUCE_L2:
		return (float)sqrt(a->acc);
	case GRAPH_REDUCE_LOGSUMEXP:
		return a->acc > 0.0 ? (float)(a->best + log(a->acc)) : a->best;
	default:
		return (float)a->acc;
	}
}

/* Reduce the input over the reduced dims for output element o. */
static float
reduce_one(const struct reduce_geom *r, enum graph_reduce_kind kind, const float *x, int64_t o)
{
	int64_t base = 0, idx[GRAPH_MAX_DIMS] = { 0 };
	struct reduce_acc a;

	reduce_start(kind, &a);
	for (int i = r->nd - 1; i >= 0; i--)
		if (!r->red[i]) {
			base += o % r->dims[i] * r->st[i];
			o /= r->dims[i];
		}
	for (int64_t k = 0; k < r->nred; k++) {
		int64_t off = base;

		for (int i = 0; i < r->nd; i++)
			off += idx[i] * r->st[i];
		reduce_fold(kind, &a, x[off]);
		/* Step the odometer over the reduced dims only. */
		for (int i = r->nd - 1; i >= 0; i--)
			if (r->red[i] && ++idx[i] < r->dims[i])
				break;
			else if (r->red[i])
				idx[i] = 0;
	}
	return reduce_finish(kind, &a, r->nred);
}

/* REDUCE: mean, sum, max, min, product, L1, L2, sum of squares or log-sum-exp over axes. */
int
cpu_reduce_run(const struct cpu_node_ctx *c, char **cause)
{
	struct reduce_geom r;
	const float *x = cpu_in(c, 0);
	float *y = cpu_out(c, 0);

	if (reduce_geom_init(c, &r, cause) != 0)
		return -1;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(r.nout * r.nred))
	for (int64_t o = 0; o < r.nout; o++)
		y[o] = reduce_one(&r, c->n->attr.reduce.kind, x, o);
	return 0;
}
