/* graph_test_eval.c: a plain double-precision evaluator of small graphs, the tests' reference. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"

static int gt_quiet;	/* set while inferring shapes: failures are answers, not errors */

/* An activation or unary function of x. */
static double
ev_fn(enum graph_unary fn, double a, double b, double x)
{
	switch (fn) {
	case GRAPH_UNARY_NONE: return x;
	case GRAPH_UNARY_RELU: return x > 0 ? x : 0;
	case GRAPH_UNARY_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case GRAPH_UNARY_GELU_TANH:
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
	case GRAPH_UNARY_SIGMOID: return 1 / (1 + exp(-x));
	case GRAPH_UNARY_TANH: return tanh(x);
	case GRAPH_UNARY_LEAKY_RELU: return x >= 0 ? x : a * x;
	case GRAPH_UNARY_CLIP: return x < a ? a : x > b ? b : x;
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
	default: return NAN;
	}
}

/* a fn b. */
static double
ev_bin(enum graph_binary fn, double a, double b)
{
	switch (fn) {
	case GRAPH_BINARY_ADD: return a + b;
	case GRAPH_BINARY_SUB: return a - b;
	case GRAPH_BINARY_MUL: return a * b;
	case GRAPH_BINARY_DIV: return a / b;
	case GRAPH_BINARY_POW: return pow(a, b);
	case GRAPH_BINARY_MAX: return a > b ? a : b;
	case GRAPH_BINARY_MIN: return a < b ? a : b;
	case GRAPH_BINARY_FMOD: return fmod(a, b);
	case GRAPH_BINARY_MOD: return a - b * floor(a / b);
	default: return NAN;
	}
}

/* Element count of a shape. */
static int64_t
ev_elems(const struct graph_shape *s)
{
	int64_t n = 1;
	int k;

	for (k = 0; k < s->ndims; k++)
		n *= s->dims[k];
	return n;
}

/* A new value of shape s, zeroed. */
static struct gt_value
ev_alloc(const struct graph_shape *s)
{
	struct gt_value r;

	r.s = *s;
	r.v = calloc((size_t)ev_elems(s) + 1, sizeof *r.v);
	if (r.v == NULL)
		exit(1);
	return r;
}

/* The flat index into x of output position idx (of rank r) under numpy broadcasting. */
static int64_t
ev_bcast_index(const struct graph_shape *x, const int64_t *idx, int r)
{
	int64_t off = 0;
	int k, j;

	for (k = 0; k < x->ndims; k++) {
		j = r - x->ndims + k;
		off = off * x->dims[k] + (x->dims[k] == 1 ? 0 : idx[j]);
	}
	return off;
}

/* Advance a multi-index over shape s; 0 when it wraps. */
static int
ev_next(int64_t *idx, const struct graph_shape *s)
{
	int k;

	for (k = s->ndims - 1; k >= 0; k--) {
		if (++idx[k] < s->dims[k])
			return 1;
		idx[k] = 0;
	}
	return 0;
}

/* Element-wise binary with broadcasting, then act; -1 on shapes that do not broadcast. */
static int
ev_binary(const struct graph_node *n, const struct gt_value *a, const struct gt_value *b,
    struct gt_value *y)
{
	struct graph_shape s;
	int64_t idx[GRAPH_MAX_DIMS] = { 0 }, i = 0, da, db;
	int k;

	s.ndims = a->s.ndims > b->s.ndims ? a->s.ndims : b->s.ndims;
	for (k = 0; k < s.ndims; k++) {
		da = k - (s.ndims - a->s.ndims) >= 0 ? a->s.dims[k - (s.ndims - a->s.ndims)] : 1;
		db = k - (s.ndims - b->s.ndims) >= 0 ? b->s.dims[k - (s.ndims - b->s.ndims)] : 1;
		if (da != db && da != 1 && db != 1)
			return -1;
		s.dims[k] = da == 1 ? db : da;
	}
	*y = ev_alloc(&s);
	if (ev_elems(&s) == 0)
		return 0;
	do {
		y->v[i++] = ev_fn(n->act, n->act_alpha, n->act_beta, ev_bin(n->attr.binary.fn,
		    a->v[ev_bcast_index(&a->s, idx, s.ndims)], b->v[ev_bcast_index(&b->s, idx, s.ndims)]));
	} while (ev_next(idx, &s));
	return 0;
}

/* 2-D convolution, groups 1: y = act(conv(x, w) + b + z). */
static int
ev_conv(const struct graph_node *n, const struct gt_value *in[4], struct gt_value *y)
{
	const struct gt_value *x = in[0], *w = in[1];
	const struct graph_window_attr *a = &n->attr.conv;
	struct graph_shape s = { 4, { 0 } };
	int64_t N, M, C, H, W, kh, kw, oy, ox, m, c, i, j, b, iy, ix;
	double acc;

	if (x->s.ndims != 4 || w->s.ndims != 4 || w->s.dims[1] != x->s.dims[1])
		return -1;
	N = x->s.dims[0]; C = x->s.dims[1]; H = x->s.dims[2]; W = x->s.dims[3];
	M = w->s.dims[0]; kh = w->s.dims[2]; kw = w->s.dims[3];
	s.dims[0] = N; s.dims[1] = M;
	s.dims[2] = (H + a->pad_begin[0] + a->pad_end[0] - a->dilation[0] * (kh - 1) - 1) / a->stride[0] + 1;
	s.dims[3] = (W + a->pad_begin[1] + a->pad_end[1] - a->dilation[1] * (kw - 1) - 1) / a->stride[1] + 1;
	*y = ev_alloc(&s);
	for (b = 0; b < N; b++)
	for (m = 0; m < M; m++)
	for (oy = 0; oy < s.dims[2]; oy++)
	for (ox = 0; ox < s.dims[3]; ox++) {
		acc = in[2] != NULL ? in[2]->v[m] : 0;
		for (c = 0; c < C; c++)
		for (i = 0; i < kh; i++)
		for (j = 0; j < kw; j++) {
			iy = oy * a->stride[0] - a->pad_begin[0] + i * a->dilation[0];
			ix = ox * a->stride[1] - a->pad_begin[1] + j * a->dilation[1];
			if (iy < 0 || iy >= H || ix < 0 || ix >= W)
				continue;
			acc += x->v[((b * C + c) * H + iy) * W + ix] * w->v[((m * C + c) * kh + i) * kw + j];
		}
		i = ((b * M + m) * s.dims[2] + oy) * s.dims[3] + ox;
		if (in[3] != NULL)
			acc += in[3]->v[i];
		y->v[i] = ev_fn(n->act, n->act_alpha, n->act_beta, acc);
	}
	return 0;
}

/* Batch normalization over axis 1. */
static int
ev_batchnorm(const struct graph_node *n, const struct gt_value *in[5], struct gt_value *y)
{
	int64_t C = in[0]->s.dims[1], inner = 1, total = ev_elems(&in[0]->s), i, c;
	int k;

	for (k = 2; k < in[0]->s.ndims; k++)
		inner *= in[0]->s.dims[k];
	*y = ev_alloc(&in[0]->s);
	for (i = 0; i < total; i++) {
		c = (i / inner) % C;
		y->v[i] = in[1]->v[c] * (in[0]->v[i] - in[3]->v[c]) / sqrt(in[4]->v[c] + n->attr.norm.eps) +
		    in[2]->v[c];
	}
	return 0;
}

/* Mean or sum over the node's axes (all when none), keepdims or not. */
static int
ev_reduce(const struct graph_node *n, const struct gt_value *x, struct gt_value *y)
{
	const struct graph_reduce_attr *a = &n->attr.reduce;
	struct graph_shape s = x->s, o;
	int64_t idx[GRAPH_MAX_DIMS] = { 0 }, cnt = 1, off, i = 0;
	int red[GRAPH_MAX_DIMS] = { 0 }, k, ax;

	for (k = 0; k < a->naxes; k++) {
		ax = (int)(a->axes[k] < 0 ? a->axes[k] + x->s.ndims : a->axes[k]);
		if (ax < 0 || ax >= x->s.ndims)
			return -1;
		red[ax] = 1;
	}
	for (k = 0; k < x->s.ndims; k++) {
		if (a->naxes == 0)
			red[k] = 1;
		if (red[k]) {
			cnt *= s.dims[k];
			s.dims[k] = 1;
		}
	}
	*y = ev_alloc(&s);
	do {
		for (off = 0, k = 0; k < s.ndims; k++)
			off = off * s.dims[k] + (red[k] ? 0 : idx[k]);
		y->v[off] += x->v[i++];
	} while (ev_next(idx, &x->s));
	for (i = 0; i < ev_elems(&s); i++)
		if (a->kind == GRAPH_REDUCE_MEAN)
			y->v[i] /= (double)cnt;
	if (!a->keepdims) {
		o.ndims = 0;
		for (k = 0; k < s.ndims; k++)
			if (!red[k])
				o.dims[o.ndims++] = s.dims[k];
		y->s = o;
	}
	return 0;
}

/* LayerNorm over the last axis with optional scale and bias, of input 0 plus the optional residual (input 3). */
static int
ev_layernorm(const struct graph_node *n, const struct gt_value *in[4], struct gt_value *y)
{
	int64_t D = in[0]->s.dims[in[0]->s.ndims - 1], rows = ev_elems(&in[0]->s) / D, r, j;
	const struct gt_value *z = n->ninputs > 3 ? in[3] : NULL;
	double mean, var, *x;

	if ((n->attr.norm.axis != -1 && n->attr.norm.axis != in[0]->s.ndims - 1) ||
	    (z != NULL && ev_elems(&z->s) != ev_elems(&in[0]->s)) || (x = malloc((size_t)D * sizeof *x)) == NULL)
		return -1;
	*y = ev_alloc(&in[0]->s);
	for (r = 0; r < rows; r++) {
		for (j = 0; j < D; j++)
			x[j] = in[0]->v[r * D + j] + (z != NULL ? z->v[r * D + j] : 0);
		for (mean = 0, j = 0; j < D; j++)
			mean += x[j] / (double)D;
		for (var = 0, j = 0; j < D; j++)
			var += (x[j] - mean) * (x[j] - mean) / (double)D;
		for (j = 0; j < D; j++)
			y->v[r * D + j] = (x[j] - mean) / sqrt(var + n->attr.norm.eps) *
			    (in[1] != NULL ? in[1]->v[j] : 1) + (in[2] != NULL ? in[2]->v[j] : 0);
	}
	free(x);
	return 0;
}

/* A[..., M, K] @ B[K, N] + bias[N], then act. */
static int
ev_matmul(const struct graph_node *n, const struct gt_value *in[3], struct gt_value *y)
{
	const struct gt_value *a = in[0], *b = in[1];
	struct graph_shape s = a->s;
	int64_t K = a->s.dims[a->s.ndims - 1], N, rows, r, j, k;
	double acc;

	if (a->s.ndims < 2 || b->s.ndims != 2 || b->s.dims[0] != K)
		return -1;
	N = b->s.dims[1];
	s.dims[s.ndims - 1] = N;
	rows = ev_elems(&a->s) / K;
	*y = ev_alloc(&s);
	for (r = 0; r < rows; r++)
		for (j = 0; j < N; j++) {
			acc = in[2] != NULL ? in[2]->v[j] : 0;
			for (k = 0; k < K; k++)
				acc += a->v[r * K + k] * b->v[k * N + j];
			y->v[r * N + j] = ev_fn(n->act, n->act_alpha, n->act_beta, acc);
		}
	return 0;
}

/* act(alpha op(A) op(B) + beta C) with C broadcast to [M, N]. */
static int
ev_gemm(const struct graph_node *n, const struct gt_value *in[3], struct gt_value *y)
{
	const struct graph_gemm_attr *g = &n->attr.gemm;
	const struct gt_value *a = in[0], *b = in[1];
	struct graph_shape s = { 2, { 0 } };
	int64_t M, K, N, i, j, k, idx[2];
	double acc;

	if (a->s.ndims != 2 || b->s.ndims != 2)
		return -1;
	M = g->trans_a ? a->s.dims[1] : a->s.dims[0];
	K = g->trans_a ? a->s.dims[0] : a->s.dims[1];
	N = g->trans_b ? b->s.dims[0] : b->s.dims[1];
	s.dims[0] = M;
	s.dims[1] = N;
	*y = ev_alloc(&s);
	for (i = 0; i < M; i++)
		for (j = 0; j < N; j++) {
			for (acc = 0, k = 0; k < K; k++)
				acc += (g->trans_a ? a->v[k * M + i] : a->v[i * K + k]) *
				    (g->trans_b ? b->v[j * K + k] : b->v[k * N + j]);
			acc *= g->alpha;
			idx[0] = i;
			idx[1] = j;
			if (in[2] != NULL)
				acc += g->beta * in[2]->v[ev_bcast_index(&in[2]->s, idx, 2)];
			y->v[i * N + j] = ev_fn(n->act, n->act_alpha, n->act_beta, acc);
		}
	return 0;
}

/* Run one node on computed values. */
static int
ev_node(const struct graph_node *n, const struct gt_value *in[8], struct gt_value *y)
{
	int64_t i;

	switch (n->op) {
	case GRAPH_OP_BINARY: return ev_binary(n, in[0], in[1], y);
	case GRAPH_OP_UNARY:
		*y = ev_alloc(&in[0]->s);
		for (i = 0; i < ev_elems(&in[0]->s); i++)
			y->v[i] = ev_fn(n->attr.unary.fn, n->attr.unary.alpha, n->attr.unary.beta, in[0]->v[i]);
		return 0;
	case GRAPH_OP_CONV: return ev_conv(n, in, y);
	case GRAPH_OP_BATCHNORM: return ev_batchnorm(n, in, y);
	case GRAPH_OP_REDUCE: return ev_reduce(n, in[0], y);
	case GRAPH_OP_LAYERNORM: return ev_layernorm(n, in, y);
	case GRAPH_OP_MATMUL: return ev_matmul(n, in, y);
	case GRAPH_OP_GEMM: return ev_gemm(n, in, y);
	default: return -1;
	}
}

/* A constant's value. */
static struct gt_value
ev_const(const struct graph_tensor *t)
{
	struct graph_shape s;
	struct gt_value r;
	int64_t i;

	s.ndims = t->ndims;
	memcpy(s.dims, t->dims, sizeof s.dims);
	r = ev_alloc(&s);
	for (i = 0; i < ev_elems(&s); i++)
		r.v[i] = ((const float *)t->data)[i];
	return r;
}

/* Evaluate every node in order on double values. */
int
gt_eval(const graph_t *g, const struct gt_value *inputs, struct gt_value *vals)
{
	const struct gt_value *in[8];
	const struct graph_node *n;
	size_t t, k;
	int i;

	memset(vals, 0, g->ntensors * sizeof *vals);
	for (t = 0; t < g->ntensors; t++)
		if (g->tensors[t].flags & GRAPH_TENSOR_CONST)
			vals[t] = ev_const(&g->tensors[t]);
	for (i = 0; i < g->ninputs; i++) {
		vals[g->inputs[i]] = ev_alloc(&inputs[i].s);
		memcpy(vals[g->inputs[i]].v, inputs[i].v, (size_t)ev_elems(&inputs[i].s) * sizeof(double));
	}
	for (k = 0; k < g->nnodes; k++) {
		n = &g->nodes[k];
		memset(in, 0, sizeof in);
		for (i = 0; i < n->ninputs && i < 8; i++)
			if (n->inputs[i] >= 0 && (in[i] = &vals[n->inputs[i]])->v == NULL) {
				if (!gt_quiet)
					fprintf(stderr, "eval: node %s reads unset tensor %s\n", n->name,
				    g->tensors[n->inputs[i]].name);
				return -1;
			}
		if (ev_node(n, in, &vals[n->outputs[0]]) < 0) {
			if (!gt_quiet)
				fprintf(stderr, "eval: node %s (op %d) cannot run\n", n->name, (int)n->op);
			return -1;
		}
	}
	return 0;
}

/* Shapes from running the evaluator on zero inputs. */
int
gt_infer_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause)
{
	struct gt_value *in, *vals;
	size_t t;
	int i, rc;

	in = calloc((size_t)g->ninputs + 1, sizeof *in);
	vals = calloc(g->ntensors + 1, sizeof *vals);
	if (in == NULL || vals == NULL)
		exit(1);
	for (i = 0; i < g->ninputs; i++) {
		in[i].s = input_shapes[i];
		if ((in[i].v = calloc((size_t)ev_elems(&input_shapes[i]) + 1, sizeof(double))) == NULL)
			exit(1);
	}
	gt_quiet = 1;
	rc = gt_eval(g, in, vals);
	for (t = 0; t < g->ntensors && rc == 0; t++)
		shapes[t] = vals[t].s;
	gt_values_free(vals, g->ntensors);
	gt_values_free(in, (size_t)g->ninputs);
	free(vals);
	free(in);
	gt_quiet = 0;
	if (rc < 0 && cause != NULL) {
		free(*cause);
		*cause = strdup("the reference evaluator cannot run this graph");
	}
	return rc;
}
