/* test_graph_fuse.c: each fusion applies on its pattern, not on near misses, and keeps the graph's results. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_fuse.h"
#include "graph_test_util.h"
#include "test_util.h"

#define BATCH 3			/* the batch the graphs are evaluated at (the probes use 2 and 3 too) */
#define TOL 2e-6		/* relative to the output's scale: float rounding of folded constants */

static uint64_t seed = 0x9e3779b97f4a7c15ull;	/* inputs */
static uint64_t build_seed;			/* constants: reset so that both copies of a graph agree */

/* A random FP32 constant. */
static int
rand_const(graph_t *g, const char *name, int ndims, const int64_t *dims, double lo, double hi)
{
	struct gt_value v = gt_random(ndims, dims, &build_seed, lo, hi);
	int64_t n = 1, i;
	float *f;
	int t, k;

	for (k = 0; k < ndims; k++)
		n *= dims[k];
	if ((f = malloc((size_t)n * sizeof *f + 1)) == NULL)
		exit(1);
	for (i = 0; i < n; i++)
		f[i] = (float)v.v[i];
	t = gt_const(g, name, ndims, dims, f);
	free(f);
	free(v.v);
	return t;
}

/* A graph input whose declared dim 0 is the batch. */
static int
batch_input(graph_t *g, const char *name, int ndims, const int64_t *rest)
{
	int64_t dims[GRAPH_MAX_DIMS] = { GRAPH_DIM_BATCH };
	int t;

	memcpy(dims + 1, rest, (size_t)(ndims - 1) * sizeof *rest);
	t = gt_tensor(g, name, 0, ndims, dims);
	gt_input(g, t);
	return t;
}

static int real_runs;	/* graphs the library's shape inference could take */

/* Whether the library's graph_infer_shapes handles g at both probe sizes. */
static int
real_shapes_ok(const graph_t *g)
{
	struct graph_shape in[4], *out = calloc(g->ntensors + 1, sizeof *out);
	int64_t b;
	int i, k, ok = 1;

	if (out == NULL || g->ninputs > 4)
		exit(1);
	for (b = 2; b <= 3 && ok; b++) {
		for (i = 0; i < g->ninputs; i++) {
			const struct graph_tensor *t = &g->tensors[g->inputs[i]];
			in[i].ndims = t->ndims;
			for (k = 0; k < t->ndims; k++)
				in[i].dims[k] = t->dims[k] == GRAPH_DIM_BATCH ? b : t->dims[k];
		}
		ok = graph_infer_shapes(g, in, out, NULL) == 0;
	}
	free(out);
	return ok;
}

/* Where the library's shape inference takes the graph, graph_fuse rewrites c exactly as the reference-probed b. */
static void
same_with_real_shapes(graph_t *c, const graph_t *b)
{
	char *cause = NULL;
	size_t n;

	if (real_shapes_ok(c)) {
		real_runs++;
		CHECK(graph_fuse(c, &cause) >= 0, "graph_fuse: %s", cause ? cause : "");
		CHECK(c->nnodes == b->nnodes, "real shapes: %zu nodes, reference shapes: %zu", c->nnodes,
		    b->nnodes);
		for (n = 0; n < c->nnodes && n < b->nnodes; n++)
			CHECK(c->nodes[n].op == b->nodes[n].op && c->nodes[n].act == b->nodes[n].act &&
			    c->nodes[n].ninputs == b->nodes[n].ninputs &&
			    memcmp(c->nodes[n].inputs, b->nodes[n].inputs,
			    (size_t)c->nodes[n].ninputs * sizeof(int)) == 0,
			    "real shapes: node %zu (%s) differs", n, c->nodes[n].name);
		free(cause);
	}
	graph_free(c);
}

/* Evaluate a fresh copy of the graph, fuse another, evaluate it; max output error, rewrites in *n. */
static double
fuse_equiv(graph_t *(*build)(int), int variant, graph_t **fused, int *n)
{
	struct gt_value *in, *va, *vb;
	double err = 0, e;
	char *cause = NULL;
	graph_t *a, *b;
	int i, k;

	build_seed = seed;
	a = build(variant);
	build_seed = seed;
	b = build(variant);

	in = calloc((size_t)a->ninputs, sizeof *in);
	va = calloc(a->ntensors, sizeof *va);
	if (in == NULL || va == NULL)
		exit(1);
	for (i = 0; i < a->ninputs; i++) {
		struct graph_tensor *t = &a->tensors[a->inputs[i]];
		int64_t dims[GRAPH_MAX_DIMS];
		for (k = 0; k < t->ndims; k++)
			dims[k] = t->dims[k] == GRAPH_DIM_BATCH ? BATCH : t->dims[k];
		in[i] = gt_random(t->ndims, dims, &seed, -3, 3);
	}
	*n = graph_fuse_shapes(b, gt_infer_shapes, &cause);
	CHECK(*n >= 0, "graph_fuse: %s", cause != NULL ? cause : "?");
	free(cause);
	vb = calloc(b->ntensors, sizeof *vb);
	if (vb == NULL)
		exit(1);
	if (gt_eval(a, in, va) < 0 || gt_eval(b, in, vb) < 0)
		err = 1e30;
	for (i = 0; i < a->noutputs && err < 1e30; i++)
		if ((e = gt_compare(&vb[b->outputs[i]], &va[a->outputs[i]])) > err)
			err = e;
	gt_values_free(va, a->ntensors);
	gt_values_free(vb, b->ntensors);
	gt_values_free(in, (size_t)a->ninputs);
	free(va);
	free(vb);
	free(in);
	graph_free(a);
	*fused = b;
	build_seed = seed;
	same_with_real_shapes(build(variant), b);
	return err;
}

/* The number of nodes of op (and fn when >= 0) in g. */
static int
count_op(const graph_t *g, enum graph_op op, int fn)
{
	size_t n;
	int c = 0;

	for (n = 0; n < g->nnodes; n++)
		if (g->nodes[n].op == op && (fn < 0 || (op == GRAPH_OP_UNARY ?
		    (int)g->nodes[n].attr.unary.fn : (int)g->nodes[n].attr.binary.fn) == fn))
			c++;
	return c;
}

/* Whether every node's inputs are written by an earlier node, or are inputs or constants. */
static int
topological(const graph_t *g)
{
	char *ready = calloc(g->ntensors + 1, 1);
	size_t n, t;
	int k, ok = 1;

	if (ready == NULL)
		exit(1);
	for (t = 0; t < g->ntensors; t++)
		ready[t] = (g->tensors[t].flags & (GRAPH_TENSOR_CONST | GRAPH_TENSOR_INPUT)) != 0;
	for (n = 0; n < g->nnodes; n++) {
		for (k = 0; k < g->nodes[n].ninputs; k++)
			if (g->nodes[n].inputs[k] >= 0 && !ready[g->nodes[n].inputs[k]])
				ok = 0;
		for (k = 0; k < g->nodes[n].noutputs; k++)
			ready[g->nodes[n].outputs[k]] = 1;
	}
	for (k = 0; k < g->noutputs; k++)
		if (!ready[g->outputs[k]])
			ok = 0;
	free(ready);
	return ok;
}

enum { BN_BIAS = 1, BN_OUT = 2, BN_TWO = 4, BN_VAR = 8 };

/* X -> Conv (3x3, pad 1, stride 2 on odd variants) -> BatchNorm -> Relu -> Y, with the variant's twist. */
static graph_t *
build_conv_bn(int v)
{
	static const int64_t xd[] = { 3, 7, 7 }, wd[] = { 4, 3, 3, 3 }, cd[] = { 4 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 4, xd), c = gt_temp(g, "c"), b = gt_temp(g, "b");
	int y = gt_temp(g, "y"), in[5], n;

	in[0] = x;
	in[1] = rand_const(g, "w", 4, wd, -1, 1);
	in[2] = rand_const(g, "cb", 1, cd, -1, 1);
	n = gt_node(g, "conv", GRAPH_OP_CONV, (v & BN_BIAS) ? 3 : 2, in, c);
	g->nodes[n].attr.conv = (struct graph_window_attr){ .nspatial = 2, .kernel = { 3, 3 },
	    .stride = { 1, 2 }, .dilation = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }, .group = 1 };
	in[0] = c;
	if (v & BN_VAR)
		gt_input(g, in[1] = gt_tensor(g, "scale", 0, 1, cd));
	else
		in[1] = rand_const(g, "scale", 1, cd, 0.5, 2);
	in[2] = rand_const(g, "bias", 1, cd, -1, 1);
	in[3] = rand_const(g, "mean", 1, cd, -0.5, 0.5);
	in[4] = rand_const(g, "var", 1, cd, 0.2, 3);
	n = gt_node(g, "bn", GRAPH_OP_BATCHNORM, 5, in, b);
	g->nodes[n].attr.norm.eps = 1e-3f;
	gt_unary(g, "relu", GRAPH_UNARY_RELU, b, y);
	gt_output(g, y);
	if (v & BN_OUT)
		gt_output(g, c);
	if (v & BN_TWO) {
		int s = gt_temp(g, "s");
		gt_unary(g, "sig", GRAPH_UNARY_SIGMOID, c, s);
		gt_output(g, s);
	}
	return g;
}

/* BatchNorm folds into the conv (then Relu into its act), and only when the conv output is the BN's alone. */
static void
test_batchnorm(void)
{
	static const int variants[] = { 0, BN_BIAS, BN_OUT, BN_TWO, BN_VAR };
	graph_t *g;
	double err;
	size_t i;
	int n, v, folds;

	for (i = 0; i < sizeof variants / sizeof variants[0]; i++) {
		v = variants[i];
		err = fuse_equiv(build_conv_bn, v, &g, &n);
		CHECK(err < TOL, "conv+bn variant %d: error %g", v, err);
		CHECK(topological(g), "conv+bn variant %d: order broken", v);
		folds = v == 0 || v == BN_BIAS;
		CHECK(count_op(g, GRAPH_OP_BATCHNORM, -1) == !folds, "variant %d: batchnorm count %d", v,
		    count_op(g, GRAPH_OP_BATCHNORM, -1));
		if (folds) {
			CHECK(g->nnodes == 1 && g->nodes[0].op == GRAPH_OP_CONV &&
			    g->nodes[0].act == GRAPH_UNARY_RELU && g->nodes[0].ninputs == 3 &&
			    g->tensors[g->nodes[0].inputs[1]].owns_data, "variant %d: %zu nodes, act %d",
			    v, g->nnodes, g->nnodes ? (int)g->nodes[0].act : -1);
			CHECK(n == 2, "variant %d: %d rewrites", v, n);
		}
		graph_free(g);
	}
}

enum { LIN_CONV = 0, LIN_GEMM, LIN_MATMUL };
enum { B_GOOD = 0, B_GOOD2, B_SCALAR, B_WRONG_AXIS, B_INPUT, B_ACT_OUT };

/* X -> Conv/Gemm/MatMul -> Add(bias) -> activation -> Y; v = kind * 16 + bias variant. */
static graph_t *
build_linear(int v)
{
	static const int64_t xc[] = { 3, 5, 5 }, wc[] = { 4, 3, 3, 3 }, xg[] = { 6 }, wg[] = { 5, 6 };
	static const int64_t xm[] = { 4, 6 }, wm[] = { 6, 5 }, g5[] = { 5 }, c4[] = { 1, 4, 1, 1 };
	static const int64_t c41[] = { 4, 1 }, c31[] = { 3, 1 }, c411[] = { 4, 1, 1 }, m15[] = { 1, 5 };
	graph_t *g = gt_new();
	int kind = v / 16, bv = v % 16, x, in[3], l = gt_temp(g, "l"), a = gt_temp(g, "a");
	int y = gt_temp(g, "y"), k, n, u;

	if (kind == LIN_CONV) {
		x = batch_input(g, "x", 4, xc);
		in[1] = rand_const(g, "w", 4, wc, -1, 1);
		in[0] = x;
		n = gt_node(g, "conv", GRAPH_OP_CONV, 2, in, l);
		g->nodes[n].attr.conv = (struct graph_window_attr){ .nspatial = 2, .kernel = { 3, 3 },
		    .stride = { 1, 1 }, .dilation = { 1, 1 }, .group = 1 };
		k = bv == B_GOOD ? rand_const(g, "k", 4, c4, -1, 1) : bv == B_GOOD2 ?
		    rand_const(g, "k", 3, c411, -1, 1) : bv == B_WRONG_AXIS ? rand_const(g, "k", 2, c31, -1, 1) :
		    rand_const(g, "k", 1, c4, -1, 1);
	} else if (kind == LIN_GEMM) {
		x = batch_input(g, "x", 2, xg);
		in[0] = x;
		in[1] = rand_const(g, "w", 2, wg, -1, 1);
		in[2] = rand_const(g, "c", 1, g5, -1, 1);
		n = gt_node(g, "gemm", GRAPH_OP_GEMM, 3, in, l);
		g->nodes[n].attr.gemm = (struct graph_gemm_attr){ 0, 1, 0.75f, 0.5f };
		k = bv == B_GOOD2 ? rand_const(g, "k", 2, m15, -1, 1) : bv == B_SCALAR ?
		    rand_const(g, "k", 1, c4, -1, 1) : bv == B_WRONG_AXIS ? rand_const(g, "k", 2, c31, -1, 1) :
		    rand_const(g, "k", 1, g5, -1, 1);
	} else {
		x = batch_input(g, "x", 3, xm);
		in[0] = x;
		in[1] = rand_const(g, "w", 2, wm, -1, 1);
		gt_node(g, "matmul", GRAPH_OP_MATMUL, 2, in, l);
		k = bv == B_GOOD2 ? rand_const(g, "k", 2, m15, -1, 1) : bv == B_WRONG_AXIS ?
		    rand_const(g, "k", 2, c41, -1, 1) : rand_const(g, "k", 1, g5, -1, 1);
	}
	if (bv == B_SCALAR && kind != LIN_GEMM)
		k = gt_scalar(g, "ks", 0.25f);
	if (bv == B_INPUT) {
		int64_t d = kind == LIN_CONV ? 1 : 5;
		gt_input(g, k = gt_tensor(g, "kin", 0, 1, &d));
	}
	gt_binary(g, "add", GRAPH_BINARY_ADD, bv == B_GOOD2 ? k : l, bv == B_GOOD2 ? l : k, a);
	u = gt_unary(g, "act", kind == LIN_CONV ? GRAPH_UNARY_LEAKY_RELU : kind == LIN_GEMM ?
	    GRAPH_UNARY_CLIP : GRAPH_UNARY_GELU, a, y);
	g->nodes[u].attr.unary.alpha = kind == LIN_CONV ? 0.1f : 0;
	g->nodes[u].attr.unary.beta = 6;
	gt_output(g, y);
	if (bv == B_ACT_OUT)
		gt_output(g, a);
	return g;
}

/* Bias and activation fuse into Conv/Gemm/MatMul for per-channel constants, not for others. */
static void
test_bias_act(void)
{
	static const int bvs[] = { B_GOOD, B_GOOD2, B_SCALAR, B_WRONG_AXIS, B_INPUT, B_ACT_OUT };
	static const enum graph_op ops[] = { GRAPH_OP_CONV, GRAPH_OP_GEMM, GRAPH_OP_MATMUL };
	static const enum graph_unary acts[] = { GRAPH_UNARY_LEAKY_RELU, GRAPH_UNARY_CLIP, GRAPH_UNARY_GELU };
	graph_t *g;
	double err;
	size_t i;
	int kind, n, bv, want;

	for (kind = 0; kind < 3; kind++)
		for (i = 0; i < sizeof bvs / sizeof bvs[0]; i++) {
			bv = bvs[i];
			err = fuse_equiv(build_linear, kind * 16 + bv, &g, &n);
			CHECK(err < TOL, "linear %d/%d: error %g", kind, bv, err);
			CHECK(topological(g), "linear %d/%d: order broken", kind, bv);
			want = bv <= B_SCALAR ? 1 : bv == B_ACT_OUT ? 2 : 3;
			CHECK((int)g->nnodes == want, "linear %d/%d: %zu nodes, want %d", kind, bv, g->nnodes, want);
			CHECK(g->nodes[0].op == ops[kind], "linear %d/%d: first op %d", kind, bv,
			    (int)g->nodes[0].op);
			if (want == 1)
				CHECK(g->nodes[0].act == acts[kind] && g->nodes[0].ninputs == 3 &&
				    g->tensors[g->nodes[0].inputs[2]].ndims == 1, "linear %d/%d: act %d, %d inputs",
				    kind, bv, (int)g->nodes[0].act, g->nodes[0].ninputs);
			if (want == 2)
				CHECK(g->nodes[0].act == GRAPH_UNARY_NONE && g->nodes[0].ninputs == 3,
				    "linear %d/%d: bias without act expected", kind, bv);
			graph_free(g);
		}
}

enum { G_DIV = 0, G_MUL_HALF_LAST, G_HALF_X, G_DIV_TWO, G_ERF_OUT, G_OTHER_X, G_ADD_TWO, G_FFN };

/* x -> the decomposed exact GELU in one of torch's orders (or a near miss) -> y. */
static graph_t *
build_gelu(int v)
{
	static const int64_t xd[] = { 2, 7 }, wd[] = { 7, 7 }, bd[] = { 7 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 3, xd), d = gt_temp(g, "d"), e = gt_temp(g, "e");
	int a = gt_temp(g, "a"), m = gt_temp(g, "m"), y = gt_temp(g, "y"), in[2], z = x;

	if (v == G_FFN) {	/* x = MatMul(input, W) + b: the transformer FFN's first half */
		int mm = gt_temp(g, "mm"), xb = gt_temp(g, "xb");
		in[0] = x;
		in[1] = rand_const(g, "w", 2, wd, -1, 1);
		gt_node(g, "matmul", GRAPH_OP_MATMUL, 2, in, mm);
		gt_binary(g, "bias", GRAPH_BINARY_ADD, mm, rand_const(g, "b", 1, bd, -1, 1), xb);
		x = z = xb;
	}
	if (v == G_OTHER_X)
		gt_unary(g, "neg", GRAPH_UNARY_NEG, x, z = gt_temp(g, "z"));
	if (v == G_MUL_HALF_LAST)
		gt_binary(g, "scale", GRAPH_BINARY_MUL, gt_scalar(g, "rs2", (float)(1 / sqrt(2.0))), x, d);
	else
		gt_binary(g, "scale", GRAPH_BINARY_DIV, x, gt_scalar(g, "s2",
		    v == G_DIV_TWO ? 2.0f : (float)sqrt(2.0)), d);
	gt_unary(g, "erf", GRAPH_UNARY_ERF, d, e);
	gt_binary(g, "one", GRAPH_BINARY_ADD, v == G_MUL_HALF_LAST ? gt_scalar(g, "c1", 1) : e,
	    v == G_MUL_HALF_LAST ? e : gt_scalar(g, "c1", v == G_ADD_TWO ? 2 : 1), a);
	if (v == G_MUL_HALF_LAST) {
		gt_binary(g, "half", GRAPH_BINARY_MUL, a, gt_scalar(g, "h", 0.5f), m);
		gt_binary(g, "out", GRAPH_BINARY_MUL, x, m, y);
	} else if (v == G_HALF_X) {
		gt_binary(g, "half", GRAPH_BINARY_MUL, gt_scalar(g, "h", 0.5f), x, m);
		gt_binary(g, "out", GRAPH_BINARY_MUL, m, a, y);
	} else {
		gt_binary(g, "xa", GRAPH_BINARY_MUL, z, a, m);
		gt_binary(g, "out", GRAPH_BINARY_MUL, m, gt_scalar(g, "h", 0.5f), y);
	}
	gt_output(g, y);
	if (v == G_ERF_OUT)
		gt_output(g, e);
	return g;
}

/* The decomposed GELU becomes one node in every exported order; the near misses stay as they are. */
static void
test_gelu(void)
{
	graph_t *g;
	double err;
	int v, n, fused;

	for (v = G_DIV; v <= G_FFN; v++) {
		err = fuse_equiv(build_gelu, v, &g, &n);
		CHECK(err < TOL, "gelu variant %d: error %g", v, err);
		CHECK(topological(g), "gelu variant %d: order broken", v);
		fused = v <= G_HALF_X || v == G_FFN;
		CHECK(count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_ERF) == !fused, "gelu variant %d: erf count %d",
		    v, count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_ERF));
		if (v == G_FFN)
			CHECK(g->nnodes == 1 && g->nodes[0].op == GRAPH_OP_MATMUL &&
			    g->nodes[0].act == GRAPH_UNARY_GELU && g->nodes[0].ninputs == 3,
			    "ffn: %zu nodes, act %d", g->nnodes, (int)g->nodes[0].act);
		else if (fused)
			CHECK(g->nnodes == 1 && count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_GELU) == 1,
			    "gelu variant %d: %zu nodes", v, g->nnodes);
		else
			CHECK(count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_GELU) == 0 && n == 0,
			    "gelu variant %d fused (%d rewrites)", v, n);
		graph_free(g);
	}
}

enum { HS_CONV = 0, HS_SWAPPED, HS_ALPHA, HS_OTHER_X, HS_SIG_OUT };

/* x * HardSigmoid(x) (alpha 1/6, beta 1/2) as torch exports HardSwish, after a Conv, and its near misses. */
static graph_t *
build_hardswish(int v)
{
	static const int64_t xc[] = { 3, 5, 5 }, wc[] = { 4, 3, 3, 3 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 4, xc), l = gt_temp(g, "l"), h = gt_temp(g, "h"), y = gt_temp(g, "y");
	int in[2], n, u, z = l;

	in[0] = x;
	in[1] = rand_const(g, "w", 4, wc, -1, 1);
	n = gt_node(g, "conv", GRAPH_OP_CONV, 2, in, l);
	g->nodes[n].attr.conv = (struct graph_window_attr){ .nspatial = 2, .kernel = { 3, 3 },
	    .stride = { 1, 1 }, .dilation = { 1, 1 }, .group = 1 };
	u = gt_unary(g, "hsig", GRAPH_UNARY_HARD_SIGMOID, l, h);
	g->nodes[u].attr.unary.alpha = v == HS_ALPHA ? 0.2f : 1.0f / 6.0f;
	g->nodes[u].attr.unary.beta = 0.5f;
	if (v == HS_OTHER_X)
		gt_unary(g, "neg", GRAPH_UNARY_NEG, l, z = gt_temp(g, "z"));
	gt_binary(g, "mul", GRAPH_BINARY_MUL, v == HS_SWAPPED ? h : z, v == HS_SWAPPED ? z : h, y);
	gt_output(g, y);
	if (v == HS_SIG_OUT)
		gt_output(g, h);
	return g;
}

/* x * HardSigmoid(x) becomes HardSwish folded into the Conv, in either order; the near misses stay. */
static void
test_hardswish(void)
{
	graph_t *g;
	double err;
	int v, n;

	for (v = HS_CONV; v <= HS_SIG_OUT; v++) {
		err = fuse_equiv(build_hardswish, v, &g, &n);
		CHECK(err < TOL, "hardswish variant %d: error %g", v, err);
		CHECK(topological(g), "hardswish variant %d: order broken", v);
		if (v <= HS_SWAPPED)
			CHECK(g->nnodes == 1 && g->nodes[0].op == GRAPH_OP_CONV &&
			    g->nodes[0].act == GRAPH_UNARY_HARD_SWISH, "hardswish variant %d: %zu nodes, act %d", v,
			    g->nnodes, (int)g->nodes[0].act);
		else
			CHECK(count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_HARD_SIGMOID) == 1 &&
			    count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_HARD_SWISH) == 0 &&
			    count_op(g, GRAPH_OP_BINARY, GRAPH_BINARY_MUL) == 1,
			    "hardswish variant %d fused (%zu nodes)", v, g->nnodes);
		graph_free(g);
	}
}

enum { T_TORCH = 0, T_HF, T_KAPPA, T_SQUARE };

/* x -> tanh-approximated GELU as torch exports it (x*x*x, 0.5 last) or as HF writes it (Pow, 0.5 x first). */
static graph_t *
build_gelu_tanh(int v)
{
	static const int64_t xd[] = { 5 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 2, xd), cube = gt_temp(g, "cube"), kc = gt_temp(g, "kc");
	int in = gt_temp(g, "in"), u = gt_temp(g, "u"), t = gt_temp(g, "t"), a = gt_temp(g, "a");
	int m = gt_temp(g, "m"), y = gt_temp(g, "y"), xx;

	if (v == T_HF || v == T_SQUARE) {
		gt_binary(g, "half", GRAPH_BINARY_MUL, x, gt_scalar(g, "h", 0.5f), m);
		gt_binary(g, "cube", GRAPH_BINARY_POW, x, gt_scalar(g, "p", v == T_SQUARE ? 2 : 3), cube);
		gt_binary(g, "kappa", GRAPH_BINARY_MUL, cube, gt_scalar(g, "k", 0.044715f), kc);
		gt_binary(g, "inner", GRAPH_BINARY_ADD, x, kc, in);
	} else {
		gt_binary(g, "sq", GRAPH_BINARY_MUL, x, x, xx = gt_temp(g, "xx"));
		gt_binary(g, "cube", GRAPH_BINARY_MUL, x, xx, cube);
		gt_binary(g, "kappa", GRAPH_BINARY_MUL, gt_scalar(g, "k", v == T_KAPPA ? 0.05f : 0.044715f),
		    cube, kc);
		gt_binary(g, "inner", GRAPH_BINARY_ADD, kc, x, in);
	}
	gt_binary(g, "beta", GRAPH_BINARY_MUL, gt_scalar(g, "b", (float)sqrt(2 / M_PI)), in, u);
	gt_unary(g, "tanh", GRAPH_UNARY_TANH, u, t);
	gt_binary(g, "one", GRAPH_BINARY_ADD, gt_scalar(g, "c1", 1), t, a);
	if (v == T_HF || v == T_SQUARE)
		gt_binary(g, "out", GRAPH_BINARY_MUL, m, a, y);
	else {
		gt_binary(g, "xa", GRAPH_BINARY_MUL, x, a, m);
		gt_binary(g, "out", GRAPH_BINARY_MUL, gt_scalar(g, "h", 0.5f), m, y);
	}
	gt_output(g, y);
	return g;
}

/* The tanh GELU becomes UNARY GELU_TANH in both spellings; a wrong constant or power leaves it. */
static void
test_gelu_tanh(void)
{
	graph_t *g;
	double err;
	int v, n, fused;

	for (v = T_TORCH; v <= T_SQUARE; v++) {
		err = fuse_equiv(build_gelu_tanh, v, &g, &n);
		CHECK(err < TOL, "gelu tanh variant %d: error %g", v, err);
		CHECK(topological(g), "gelu tanh variant %d: order broken", v);
		fused = v <= T_HF;
		CHECK((g->nnodes == 1 && count_op(g, GRAPH_OP_UNARY, GRAPH_UNARY_GELU_TANH) == 1) == fused &&
		    n == fused, "gelu tanh variant %d: %zu nodes, %d rewrites", v, g->nnodes, n);
		graph_free(g);
	}
}

enum { R_GOOD = 0, R_SWAPPED, R_BROADCAST, R_SUM_OUT };

/* x -> conv a -> relu -> conv b -> Add(., x) -> relu -> y: a ResNet basic block without BN. */
static graph_t *
build_residual(int v)
{
	static const int64_t xd[] = { 4, 5, 5 }, wd[] = { 4, 4, 3, 3 }, bd[] = { 4 };
	static const struct graph_window_attr same = { .nspatial = 2, .kernel = { 3, 3 },
	    .stride = { 1, 1 }, .dilation = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }, .group = 1 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 4, xd), ca = gt_temp(g, "ca"), ra = gt_temp(g, "ra");
	int cb = gt_temp(g, "cb"), s = gt_temp(g, "s"), y = gt_temp(g, "y"), in[3], n, z = x;

	if (v == R_BROADCAST) {	/* a [N, C, 1, 1] tensor: Add broadcasts it, no residual */
		n = gt_node(g, "pool", GRAPH_OP_REDUCE, 1, &x, z = gt_temp(g, "pool"));
		g->nodes[n].attr.reduce = (struct graph_reduce_attr){ .kind = GRAPH_REDUCE_MEAN, .naxes = 2,
		    .axes = { 2, 3 }, .keepdims = 1 };
	}
	in[0] = x;
	in[1] = rand_const(g, "wa", 4, wd, -0.5, 0.5);
	in[2] = rand_const(g, "ba", 1, bd, -0.5, 0.5);
	n = gt_node(g, "conv_a", GRAPH_OP_CONV, 3, in, ca);
	g->nodes[n].attr.conv = same;
	gt_unary(g, "relu_a", GRAPH_UNARY_RELU, ca, ra);
	in[0] = ra;
	in[1] = rand_const(g, "wb", 4, wd, -0.5, 0.5);
	in[2] = rand_const(g, "bb", 1, bd, -0.5, 0.5);
	n = gt_node(g, "conv_b", GRAPH_OP_CONV, 3, in, cb);
	g->nodes[n].attr.conv = same;
	gt_binary(g, "sum", GRAPH_BINARY_ADD, v == R_SWAPPED ? z : cb, v == R_SWAPPED ? cb : z, s);
	gt_unary(g, "relu", GRAPH_UNARY_RELU, s, y);
	gt_output(g, y);
	if (v == R_SUM_OUT)
		gt_output(g, s);
	return g;
}

/* The residual Add joins conv b as its Z input (then Relu as its act), only for a same-shape tensor. */
static void
test_residual(void)
{
	graph_t *g;
	double err;
	int v, n, b;

	for (v = R_GOOD; v <= R_SUM_OUT; v++) {
		err = fuse_equiv(build_residual, v, &g, &n);
		CHECK(err < TOL, "residual variant %d: error %g", v, err);
		CHECK(topological(g), "residual variant %d: order broken", v);
		CHECK(count_op(g, GRAPH_OP_CONV, -1) == 2, "residual variant %d: convs", v);
		b = (int)g->nnodes - 1;
		while (b >= 0 && g->nodes[b].op != GRAPH_OP_CONV)
			b--;
		if (v == R_BROADCAST) {
			CHECK(count_op(g, GRAPH_OP_BINARY, GRAPH_BINARY_ADD) == 1 && g->nodes[b].ninputs == 3,
			    "broadcast add fused as a residual");
		} else {
			CHECK(b >= 0 && g->nodes[b].ninputs == 4 && g->nodes[b].inputs[3] == 0,
			    "residual variant %d: conv b has no Z", v);
			CHECK(b >= 0 && g->nodes[b].act == (v == R_SUM_OUT ? GRAPH_UNARY_NONE : GRAPH_UNARY_RELU),
			    "residual variant %d: act %d", v, b >= 0 ? (int)g->nodes[b].act : -1);
			CHECK((int)g->nnodes == (v == R_SUM_OUT ? 3 : 2), "residual variant %d: %zu nodes", v,
			    g->nnodes);
		}
		graph_free(g);
	}
}

enum { L_POW = 0, L_MUL_POSAXIS, L_PLAIN, L_AXIS1, L_POW3, L_DIFF_OUT, L_DIFF_TWO, L_SHORT_GAMMA };

/* x [N, 4, 8] -> ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta -> y. */
static graph_t *
build_layernorm(int v)
{
	static const int64_t xd[] = { 4, 8 }, gd[] = { 8 }, g1[] = { 1 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 3, xd), mean = gt_temp(g, "mean"), d = gt_temp(g, "d");
	int sq = gt_temp(g, "sq"), var = gt_temp(g, "var"), ve = gt_temp(g, "ve"), sd = gt_temp(g, "sd");
	int q = gt_temp(g, "q"), sc = gt_temp(g, "sc"), y = gt_temp(g, "y"), n, gamma;
	struct graph_reduce_attr r = { .kind = GRAPH_REDUCE_MEAN, .naxes = 1, .keepdims = 1 };

	r.axes[0] = v == L_MUL_POSAXIS ? 2 : v == L_AXIS1 ? 1 : -1;
	n = gt_node(g, "mean1", GRAPH_OP_REDUCE, 1, &x, mean);
	g->nodes[n].attr.reduce = r;
	gt_binary(g, "sub", GRAPH_BINARY_SUB, x, mean, d);
	if (v == L_MUL_POSAXIS)
		gt_binary(g, "sq", GRAPH_BINARY_MUL, d, d, sq);
	else
		gt_binary(g, "sq", GRAPH_BINARY_POW, d, gt_scalar(g, "two", v == L_POW3 ? 3 : 2), sq);
	n = gt_node(g, "mean2", GRAPH_OP_REDUCE, 1, &sq, var);
	g->nodes[n].attr.reduce = r;
	gt_binary(g, "eps", GRAPH_BINARY_ADD, var, gt_scalar(g, "eps", 1e-5f), ve);
	gt_unary(g, "sqrt", GRAPH_UNARY_SQRT, ve, sd);
	gt_binary(g, "div", GRAPH_BINARY_DIV, d, sd, v == L_PLAIN ? y : q);
	if (v != L_PLAIN) {
		gamma = v == L_SHORT_GAMMA ? rand_const(g, "gamma", 1, g1, 0.5, 2) :
		    rand_const(g, "gamma", 1, gd, 0.5, 2);
		gt_binary(g, "scale", GRAPH_BINARY_MUL, v == L_MUL_POSAXIS ? gamma : q,
		    v == L_MUL_POSAXIS ? q : gamma, sc);
		gt_binary(g, "shift", GRAPH_BINARY_ADD, sc, rand_const(g, "beta", 1, gd, -1, 1), y);
	}
	gt_output(g, y);
	if (v == L_DIFF_OUT)
		gt_output(g, d);
	if (v == L_DIFF_TWO) {	/* a third reader of x - mean */
		int ad = gt_temp(g, "ad");
		gt_unary(g, "abs", GRAPH_UNARY_ABS, d, ad);
		gt_output(g, ad);
	}
	return g;
}

/* The 9-node LayerNorm becomes one LAYERNORM over the last axis with the model's eps; near misses stay. */
static void
test_layernorm(void)
{
	graph_t *g;
	double err;
	int v, n, ln, fused;

	for (v = L_POW; v <= L_SHORT_GAMMA; v++) {
		err = fuse_equiv(build_layernorm, v, &g, &n);
		CHECK(err < TOL, "layernorm variant %d: error %g", v, err);
		CHECK(topological(g), "layernorm variant %d: order broken", v);
		fused = v <= L_PLAIN || v == L_SHORT_GAMMA;
		ln = gt_find(g, GRAPH_OP_LAYERNORM, -1);
		CHECK((ln >= 0) == fused, "layernorm variant %d: fused %d", v, ln >= 0);
		if (ln < 0)
			CHECK(n == 0, "layernorm variant %d: %d rewrites", v, n);
		else {
			CHECK(fabsf(g->nodes[ln].attr.norm.eps - 1e-5f) < 1e-12f && g->nodes[ln].attr.norm.axis == -1,
			    "layernorm variant %d: eps %g axis %lld", v, g->nodes[ln].attr.norm.eps,
			    (long long)g->nodes[ln].attr.norm.axis);
			CHECK(g->nodes[ln].ninputs == (v == L_PLAIN ? 1 : v == L_SHORT_GAMMA ? 1 : 3),
			    "layernorm variant %d: %d inputs", v, g->nodes[ln].ninputs);
			CHECK((int)g->nnodes == (v == L_SHORT_GAMMA ? 3 : 1), "layernorm variant %d: %zu nodes",
			    v, g->nnodes);
		}
		graph_free(g);
	}
}

enum { N_GOOD = 0, N_SUM_OUT, N_CONST, N_BROADCAST };

/* x, r [N, 4, 8] -> Add -> LayerNormalization (gamma, beta) -> y: a post-norm transformer's residual. */
static graph_t *
build_residual_norm(int v)
{
	static const int64_t xd[] = { 4, 8 }, gd[] = { 8 }, bd[] = { 1, 8 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 3, xd), s = gt_temp(g, "s"), y = gt_temp(g, "y"), in[3], n;
	int r = v == N_CONST ? rand_const(g, "r", 2, bd, -1, 1) : v == N_BROADCAST ? batch_input(g, "r", 3, bd) :
	    batch_input(g, "r", 3, xd);

	gt_binary(g, "sum", GRAPH_BINARY_ADD, x, r, s);
	in[0] = s;
	in[1] = rand_const(g, "gamma", 1, gd, 0.5, 2);
	in[2] = rand_const(g, "beta", 1, gd, -1, 1);
	n = gt_node(g, "ln", GRAPH_OP_LAYERNORM, 3, in, y);
	g->nodes[n].attr.norm.axis = -1;
	g->nodes[n].attr.norm.eps = 1e-5f;
	gt_output(g, y);
	if (v == N_SUM_OUT)
		gt_output(g, s);
	return g;
}

/* The Add joins the LayerNorm as its residual only for two computed tensors of one shape read by the norm alone. */
static void
test_residual_norm(void)
{
	graph_t *g;
	double err;
	int v, n, ln;

	for (v = N_GOOD; v <= N_BROADCAST; v++) {
		err = fuse_equiv(build_residual_norm, v, &g, &n);
		CHECK(err < TOL, "residual norm variant %d: error %g", v, err);
		CHECK(topological(g), "residual norm variant %d: order broken", v);
		ln = gt_find(g, GRAPH_OP_LAYERNORM, -1);
		CHECK(ln >= 0, "residual norm variant %d: no LayerNorm", v);
		if (ln < 0) {
			graph_free(g);
			continue;
		}
		if (v == N_GOOD)
			CHECK(g->nnodes == 1 && g->nodes[ln].ninputs == 4 && g->nodes[ln].inputs[0] == g->inputs[0] &&
			    g->nodes[ln].inputs[3] == g->inputs[1], "residual norm: not fused (%zu nodes, %d inputs)",
			    g->nnodes, g->nodes[ln].ninputs);
		else
			CHECK(g->nnodes == 2 && g->nodes[ln].ninputs == 3 && n == 0,
			    "residual norm variant %d: fused (%zu nodes, %d rewrites)", v, g->nnodes, n);
		graph_free(g);
	}
}

enum { P_ZERO = 0, P_ZERO_TWO_READERS, P_NONZERO, P_OUTPUT, P_UNRESOLVED };

/* x -> Pad (zeros, or a near miss) -> Relu (and a Sigmoid for two readers) -> y. */
static graph_t *
build_pad(int v)
{
	static const int64_t xd[] = { 4, 5, 6 };
	graph_t *g = gt_new();
	int x = batch_input(g, "x", 4, xd), p = gt_temp(g, "p"), y = gt_temp(g, "y"), in[2] = { x, -1 }, k;
	struct graph_node *pad;

	if (v == P_UNRESOLVED)	/* pads still an input: not known to be zero */
		in[1] = gt_scalar(g, "pads", 0);
	k = gt_node(g, "pad", GRAPH_OP_PAD, v == P_UNRESOLVED ? 2 : 1, in, p);
	pad = &g->nodes[k];
	pad->attr.pad.mode = GRAPH_PAD_CONSTANT;
	pad->attr.pad.npads = 8;
	pad->attr.pad.pads[7] = v == P_NONZERO;
	gt_unary(g, "relu", GRAPH_UNARY_RELU, p, y);
	gt_output(g, y);
	if (v == P_ZERO_TWO_READERS) {
		int z = gt_temp(g, "z");

		gt_unary(g, "sigmoid", GRAPH_UNARY_SIGMOID, p, z);
		gt_output(g, z);
	}
	if (v == P_OUTPUT)
		gt_output(g, p);
	return g;
}

/* A Pad of zeros goes, its readers reading its input; one adding anything, a graph output or unresolved stays. */
static void
test_pad_zero(void)
{
	char *cause = NULL;
	graph_t *g;
	int v, n, removed;

	for (v = P_ZERO; v <= P_UNRESOLVED; v++) {
		g = build_pad(v);
		n = graph_fuse_shapes(g, gt_infer_shapes, &cause);
		CHECK(n >= 0, "pad variant %d: %s", v, cause != NULL ? cause : "?");
		removed = v <= P_ZERO_TWO_READERS;
		CHECK(n == removed && (gt_find(g, GRAPH_OP_PAD, -1) < 0) == removed && topological(g),
		    "pad variant %d: %d rewrites, %zu nodes", v, n, g->nnodes);
		if (removed)
			for (size_t i = 0; i < g->nnodes; i++)
				CHECK(g->nodes[i].op == GRAPH_OP_UNARY && g->nodes[i].inputs[0] == g->inputs[0],
				    "pad variant %d: node %zu reads tensor %d, not the input", v, i, g->nodes[i].inputs[0]);
		free(cause);
		cause = NULL;
		graph_free(g);
	}
}

/* A node naming a tensor outside the graph is refused with its name, and the graph is left as it was. */
static void
test_errors(void)
{
	graph_t *g = build_gelu(G_DIV);
	char *cause = NULL;
	size_t nodes = g->nnodes;

	g->nodes[1].inputs[0] = (int)g->ntensors + 7;
	CHECK(graph_fuse_shapes(g, gt_infer_shapes, &cause) < 0 && cause != NULL &&
	    strstr(cause, "erf") != NULL, "out-of-range tensor accepted: %s", cause ? cause : "(none)");
	CHECK(g->nnodes == nodes, "graph changed on error");
	free(cause);
	cause = NULL;
	CHECK(graph_fuse(NULL, &cause) < 0 && cause != NULL, "NULL graph accepted");
	free(cause);
	graph_free(g);
}

int
main(void)
{
	test_batchnorm();
	test_bias_act();
	test_gelu();
	test_gelu_tanh();
	test_hardswish();
	test_residual();
	test_layernorm();
	test_residual_norm();
	test_pad_zero();
	test_errors();
	printf("graph_fuse with the library's shape inference: %d graphs compared\n", real_runs);
	return test_finish("test_graph_fuse");
}
