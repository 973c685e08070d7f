/* test_ops.c: every op of the device plans, run as one-node graphs, against a double-precision reference. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "test_util.h"

#define TOLERANCE 1e-5

static device_t *dev;
static device_stream_t *stream;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* A one-node graph built on the stack: tensor 0 is the graph input, the last one the output. */
struct one_node {
	graph_t g;
	struct graph_tensor t[5];
	struct graph_node n;
	int ins[4], outs[1], gin[1], gout[1];
	void *addrs[5];
};

/* Double-precision reference of each element-wise function. */
static double
ref_unary(enum graph_unary fn, double x, double a, double b)
{
	switch (fn) {
	case GRAPH_UNARY_RELU:
		return x > 0 ? x : 0;
	case GRAPH_UNARY_GELU:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case GRAPH_UNARY_GELU_TANH:
		return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * pow(x, 3))));
	case GRAPH_UNARY_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case GRAPH_UNARY_TANH:
		return tanh(x);
	case GRAPH_UNARY_LEAKY_RELU:
		return x >= 0 ? x : a * x;
	case GRAPH_UNARY_CLIP:
		return fmin(fmax(x, a), b);
	case GRAPH_UNARY_HARD_SIGMOID:
		return fmax(0, fmin(1, a * x + b));
	case GRAPH_UNARY_HARD_SWISH:
		return x * fmax(0, fmin(1, x / 6 + 0.5));
	case GRAPH_UNARY_EXP:
		return exp(x);
	case GRAPH_UNARY_LOG:
		return log(x);
	case GRAPH_UNARY_SQRT:
		return sqrt(x);
	case GRAPH_UNARY_NEG:
		return -x;
	case GRAPH_UNARY_RECIPROCAL:
		return 1.0 / x;
	case GRAPH_UNARY_ERF:
		return erf(x);
	case GRAPH_UNARY_ABS:
		return fabs(x);
	case GRAPH_UNARY_CEIL:
		return ceil(x);
	case GRAPH_UNARY_FLOOR:
		return floor(x);
	case GRAPH_UNARY_ROUND:
		return rint(x);
	default:
		return x;
	}
}

/* Copy host floats into a fresh device buffer. */
static float *
to_device(const float *h, size_t n)
{
	char *cause = NULL;
	void *d;

	if (device_alloc(dev, n * sizeof(float), &d, &cause) != 0 ||
	    device_copy_h2d(stream, d, h, n * sizeof(float), &cause) != 0) {
		fprintf(stderr, "FAIL: to_device: %s\n", cause);
		exit(1);
	}
	return d;
}

/* Copy a device buffer back into host floats poisoned with NaN first. */
static float *
from_device(const float *d, size_t n)
{
	float *h = malloc(n * sizeof(float));
	char *cause = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = NAN;
	if (device_copy_d2h(stream, h, d, n * sizeof(float), &cause) != 0 ||
	    device_stream_sync(stream, &cause) != 0) {
		fprintf(stderr, "FAIL: from_device: %s\n", cause);
		exit(1);
	}
	return h;
}

/* A device buffer filled with NaN, so an op that writes nothing is caught. */
static float *
poisoned_device(size_t n)
{
	float *h = malloc(n * sizeof(float)), *d;
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = NAN;
	d = to_device(h, n);
	free(h);
	return d;
}

/* Random host floats. */
static float *
random_host(size_t n, float lo, float hi)
{
	float *h = malloc(n * sizeof(float));

	test_fill_random(h, n, &rng, lo, hi);
	return h;
}

/* Start a one-node graph of op; tensors are added with one_tensor. */
static struct graph_node *
one_init(struct one_node *o, enum graph_op op)
{
	memset(o, 0, sizeof *o);
	o->g.tensors = o->t;
	o->g.nodes = &o->n;
	o->g.nnodes = 1;
	o->g.inputs = o->gin;
	o->g.outputs = o->gout;
	o->g.ninputs = o->g.noutputs = 1;
	o->n.name = "node";
	o->n.op = op;
	o->n.inputs = o->ins;
	o->n.outputs = o->outs;
	o->n.noutputs = 1;
	return &o->n;
}

/*
 * Add a tensor of shape dims[0..ndims) at device memory addr: the first is the
 * graph input, CONST ones are node inputs (host bytes host), the last added
 * with GRAPH_TENSOR_OUTPUT is the node's output.  Returns its index.
 */
static int
one_tensor(struct one_node *o, const char *name, unsigned flags, int ndims,
    const int64_t *dims, void *addr, const float *host)
{
	int i = (int)o->g.ntensors++;
	struct graph_tensor *t = &o->t[i];

	t->name = (char *)name;
	t->dtype = GRAPH_DT_F32;
	t->flags = flags;
	t->ndims = ndims;
	memcpy(t->dims, dims, (size_t)ndims * sizeof *dims);
	t->data = host;
	t->nbytes = 0;
	for (int d = 0; host != NULL && d < ndims; d++)
		t->nbytes = (d == 0 ? sizeof(float) : t->nbytes) * (size_t)dims[d];
	o->addrs[i] = addr;
	if (flags & GRAPH_TENSOR_OUTPUT) {
		o->outs[0] = o->gout[0] = i;
	} else {
		if (flags & GRAPH_TENSOR_INPUT)
			o->gin[0] = i;
		o->ins[o->n.ninputs++] = i;
	}
	return i;
}

/* Infer shapes, compile, run and free the plan; -1 with *cause on any failure. */
static int
one_run(struct one_node *o, char **cause)
{
	struct graph_shape in, shapes[5];
	device_plan_t *p;
	int rc;

	in.ndims = o->t[o->gin[0]].ndims;
	memcpy(in.dims, o->t[o->gin[0]].dims, sizeof in.dims);
	if (graph_infer_shapes(&o->g, &in, shapes, cause) != 0 ||
	    device_plan_compile(dev, &o->g, NULL, shapes, o->addrs, &p, cause) != 0)
		return -1;
	rc = device_plan_run(p, stream, cause);
	device_plan_free(p);
	return rc;
}

/* GEMM against sum_k op(A)[r,k] op(B)[k,o] times alpha, plus beta C broadcast, then act. */
struct gemm_case {
	int rows, in, out;
	int trans_a, trans_b;
	float alpha, beta;
	int c_rows, c_cols;		/* C's shape: [c_rows, c_cols]; c_rows 0: [c_cols]; c_cols 0: no C */
	enum graph_unary act;
};

/* Run one GEMM case; the MLP's linear layer is trans_b = 1, alpha = beta = 1, C = [out]. */
static void
test_gemm(const struct gemm_case *gc)
{
	int m = gc->rows, k = gc->in, n = gc->out, r, o, j;
	size_t cn = (size_t)(gc->c_rows ? gc->c_rows : 1) * gc->c_cols;
	/* Weights scaled as a trained layer's are (1/sqrt(in)), so activations see O(1) inputs. */
	float scale = 1.0f / sqrtf((float)k);
	float *a = random_host((size_t)m * k, -1, 1), *b = random_host((size_t)k * n, -scale, scale);
	float *c = random_host(cn > 0 ? cn : 1, -1, 1), *y;
	float *da = to_device(a, (size_t)m * k), *db = to_device(b, (size_t)k * n);
	float *dc = to_device(c, cn > 0 ? cn : 1), *dy = poisoned_device((size_t)m * n);
	double *ref = malloc((size_t)m * n * sizeof(double));
	int64_t ad[2] = { gc->trans_a ? k : m, gc->trans_a ? m : k };
	int64_t bd[2] = { gc->trans_b ? n : k, gc->trans_b ? k : n };
	int64_t cd[2] = { gc->c_rows, gc->c_cols }, yd[2] = { m, n };
	struct one_node g;
	struct graph_node *node = one_init(&g, GRAPH_OP_GEMM);
	char *cause = NULL;

	node->attr.gemm = (struct graph_gemm_attr){ gc->trans_a, gc->trans_b, gc->alpha, gc->beta };
	node->act = gc->act;
	one_tensor(&g, "A", GRAPH_TENSOR_INPUT, 2, ad, da, NULL);
	one_tensor(&g, "B", GRAPH_TENSOR_CONST, 2, bd, db, b);
	if (gc->c_cols > 0)
		one_tensor(&g, "C", GRAPH_TENSOR_CONST, gc->c_rows ? 2 : 1, gc->c_rows ? cd : cd + 1, dc, c);
	one_tensor(&g, "Y", GRAPH_TENSOR_OUTPUT, 2, yd, dy, NULL);
	CHECK(one_run(&g, &cause) == 0, "%s", cause);
	y = from_device(dy, (size_t)m * n);
	for (r = 0; r < m; r++) {
		for (o = 0; o < n; o++) {
			double acc = 0.0, cv = 0.0;
			for (j = 0; j < k; j++)
				acc += (double)a[gc->trans_a ? (size_t)j * m + r : (size_t)r * k + j] *
				    b[gc->trans_b ? (size_t)o * k + j : (size_t)j * n + o];
			if (gc->c_cols > 0)
				cv = c[(gc->c_rows > 1 ? (size_t)r * gc->c_cols : 0) + (gc->c_cols > 1 ? (size_t)o : 0)];
			ref[(size_t)r * n + o] = ref_unary(gc->act, gc->alpha * acc + gc->beta * cv, 0, 0);
		}
	}
	double err = test_rel_error(y, ref, (size_t)m * n);
	CHECK(err <= TOLERANCE, "gemm %dx%d->%d trans %d%d alpha %g beta %g C [%d,%d] act=%d: relative error %g",
	    m, k, n, gc->trans_a, gc->trans_b, gc->alpha, gc->beta, gc->c_rows, gc->c_cols, gc->act, err);
	device_free(dev, da);
	device_free(dev, db);
	device_free(dev, dc);
	device_free(dev, dy);
	free(a);
	free(b);
	free(c);
	free(y);
	free(ref);
	free(cause);
}

/* linear as the MLP compiles it: y = act(x w^T + bias), bias optional. */
static void
test_linear(int rows, int in, int out, int with_bias, enum graph_unary act)
{
	struct gemm_case gc = { rows, in, out, 0, 1, 1.0f, 1.0f, 0, with_bias ? out : 0, act };

	test_gemm(&gc);
}

/* Element-wise function fn over n values in [lo, hi), in place or into a fresh buffer. */
static void
test_unary(size_t n, enum graph_unary fn, float alpha, float beta, float lo,
    float hi, int in_place)
{
	float *x = random_host(n, lo, hi), *y, *dx = to_device(x, n);
	float *dy = in_place ? dx : poisoned_device(n);
	double *ref = malloc(n * sizeof(double));
	int64_t dims[1] = { (int64_t)n };
	struct one_node g;
	struct graph_node *node = one_init(&g, GRAPH_OP_UNARY);
	char *cause = NULL;
	size_t i;

	node->attr.unary.fn = fn;
	node->attr.unary.alpha = alpha;
	node->attr.unary.beta = beta;
	one_tensor(&g, "x", GRAPH_TENSOR_INPUT, 1, dims, dx, NULL);
	one_tensor(&g, "y", GRAPH_TENSOR_OUTPUT, 1, dims, dy, NULL);
	CHECK(one_run(&g, &cause) == 0, "%s", cause);
	y = from_device(dy, n);
	for (i = 0; i < n; i++)
		ref[i] = ref_unary(fn, x[i], alpha, beta);
	double err = test_rel_error(y, ref, n);
	CHECK(err <= TOLERANCE, "unary %d over %zu (in place %d): relative error %g", fn, n, in_place, err);
	if (!in_place)
		device_free(dev, dy);
	device_free(dev, dx);
	free(x);
	free(y);
	free(ref);
	free(cause);
}

/* Element-wise activation in place, as the MLP runs an unfused one. */
static void
test_activation(size_t n, enum graph_unary act)
{
	test_unary(n, act, 0, 0, -6, 6, 1);
}

/* Softmax (or log-softmax) over the last axis of [rows, cols]; in place or not. */
static void
test_softmax_mode(int rows, int cols, float scale, int as_log, int in_place)
{
	size_t n = (size_t)rows * cols;
	float *x = random_host(n, -scale, scale), *y, *dx = to_device(x, n);
	float *dy = in_place ? dx : poisoned_device(n);
	double *ref = malloc(n * sizeof(double));
	int64_t dims[2] = { rows, cols };
	struct one_node g;
	char *cause = NULL;
	int r, c;

	one_init(&g, GRAPH_OP_SOFTMAX)->attr.softmax.axis = -1;
	g.n.attr.softmax.log = as_log;
	one_tensor(&g, "x", GRAPH_TENSOR_INPUT, 2, dims, dx, NULL);
	one_tensor(&g, "y", GRAPH_TENSOR_OUTPUT, 2, dims, dy, NULL);
	CHECK(one_run(&g, &cause) == 0, "%s", cause);
	y = from_device(dy, n);
	for (r = 0; r < rows; r++) {
		double max = x[(size_t)r * cols], sum = 0;
		for (c = 0; c < cols; c++)
			max = fmax(max, x[(size_t)r * cols + c]);
		for (c = 0; c < cols; c++)
			sum += exp(x[(size_t)r * cols + c] - max);
		for (c = 0; c < cols; c++)
			ref[(size_t)r * cols + c] = as_log ? x[(size_t)r * cols + c] - max - log(sum) :
			    exp(x[(size_t)r * cols + c] - max) / sum;
	}
	double err = test_rel_error(y, ref, n);
	CHECK(err <= TOLERANCE, "softmax %dx%d scale %g log %d: relative error %g", rows, cols, scale, as_log, err);
	if (!in_place)
		device_free(dev, dy);
	device_free(dev, dx);
	free(x);
	free(y);
	free(ref);
	free(cause);
}

/* Row-wise softmax in place, as the MLP runs it. */
static void
test_softmax(int rows, int cols, float scale)
{
	test_softmax_mode(rows, cols, scale, 0, 1);
}

/* Layer norm of x[outer, inner] viewed as rank 3 [outer, a, inner / a] over axis 1; with and without scale and bias. */
static void
test_layernorm_shape(int rows, int cols, int split, int affine)
{
	size_t n = (size_t)rows * cols;
	float *x = random_host(n, -3, 5), *g = random_host((size_t)cols, 0.5f, 2), *b = random_host((size_t)cols, -1, 1);
	float *dx = to_device(x, n), *dg = to_device(g, (size_t)cols), *db = to_device(b, (size_t)cols), *y;
	double *ref = malloc(n * sizeof(double));
	int64_t dims3[3] = { rows, split, cols / split }, pdims[2] = { split, cols / split };
	struct one_node o;
	char *cause = NULL;
	int r, c;

	one_init(&o, GRAPH_OP_LAYERNORM)->attr.norm.axis = split > 1 ? 1 : -1;
	o.n.attr.norm.eps = 1e-5f;
	one_tensor(&o, "x", GRAPH_TENSOR_INPUT, split > 1 ? 3 : 2, split > 1 ? dims3 : (int64_t[]){ rows, cols }, dx, NULL);
	if (affine) {
		one_tensor(&o, "gamma", GRAPH_TENSOR_CONST, split > 1 ? 2 : 1, split > 1 ? pdims : pdims + 1, dg, g);
		one_tensor(&o, "beta", GRAPH_TENSOR_CONST, split > 1 ? 2 : 1, split > 1 ? pdims : pdims + 1, db, b);
	}
	one_tensor(&o, "y", GRAPH_TENSOR_OUTPUT, split > 1 ? 3 : 2, split > 1 ? dims3 : (int64_t[]){ rows, cols }, dx, NULL);
	CHECK(one_run(&o, &cause) == 0, "%s", cause);
	y = from_device(dx, n);
	for (r = 0; r < rows; r++) {
		double mean = 0, var = 0;
		for (c = 0; c < cols; c++)
			mean += x[(size_t)r * cols + c];
		mean /= cols;
		for (c = 0; c < cols; c++)
			var += pow(x[(size_t)r * cols + c] - mean, 2);
		var /= cols;
		for (c = 0; c < cols; c++) {
			double v = (x[(size_t)r * cols + c] - mean) / sqrt(var + (double)1e-5f);
			ref[(size_t)r * cols + c] = affine ? v * g[c] + b[c] : v;
		}
	}
	double err = test_rel_error(y, ref, n);
	CHECK(err <= TOLERANCE, "layernorm %dx%d split %d affine=%d: relative error %g", rows, cols, split, affine, err);
	device_free(dev, dx);
	device_free(dev, dg);
	device_free(dev, db);
	free(x);
	free(g);
	free(b);
	free(y);
	free(ref);
	free(cause);
}

/* Row-wise layer norm in place, as the MLP runs it. */
static void
test_layernorm(int rows, int cols, int affine)
{
	test_layernorm_shape(rows, cols, 1, affine);
}

/* COPY produces a distinct tensor with the same bytes. */
static void
test_copy(size_t n)
{
	float *x = random_host(n, -1, 1), *dx = to_device(x, n), *dy = poisoned_device(n), *y;
	int64_t dims[1] = { (int64_t)n };
	struct one_node g;
	char *cause = NULL;

	one_init(&g, GRAPH_OP_COPY);
	one_tensor(&g, "x", GRAPH_TENSOR_INPUT, 1, dims, dx, NULL);
	one_tensor(&g, "y", GRAPH_TENSOR_OUTPUT, 1, dims, dy, NULL);
	CHECK(one_run(&g, &cause) == 0, "%s", cause);
	y = from_device(dy, n);
	CHECK(memcmp(x, y, n * sizeof *x) == 0, "copy of %zu floats differs", n);
	device_free(dev, dx);
	device_free(dev, dy);
	free(x);
	free(y);
	free(cause);
}

/* Events order work across streams and report elapsed time. */
static void
test_events(void)
{
	device_event_t *a, *b;
	char *cause = NULL;
	double us = -1;

	CHECK(device_event_create(dev, &a, &cause) == 0 && device_event_create(dev, &b, &cause) == 0, "%s", cause);
	CHECK(device_event_record(a, stream, &cause) == 0, "%s", cause);
	CHECK(device_event_record(b, stream, &cause) == 0, "%s", cause);
	CHECK(device_event_sync(b, &cause) == 0, "%s", cause);
	CHECK(device_event_query(b, &cause) == 1, "event not complete after sync");
	CHECK(device_event_elapsed_us(a, b, &us, &cause) == 0 && us >= 0, "elapsed %g: %s", us, cause);
	device_event_destroy(a);
	device_event_destroy(b);
	free(cause);
}

/* A unary graph over [rows, 4] whose input declares a batch dimension. */
static void
batch_graph(struct one_node *g, void *buf)
{
	int64_t dims[2] = { GRAPH_DIM_BATCH, 4 };

	one_init(g, GRAPH_OP_UNARY)->attr.unary.fn = GRAPH_UNARY_RELU;
	one_tensor(g, "x", GRAPH_TENSOR_INPUT, 2, dims, buf, NULL);
	one_tensor(g, "y", GRAPH_TENSOR_OUTPUT, 2, dims, buf, NULL);
}

/* Bad calls are refused with a message instead of crashing. */
static void
test_refusals(void)
{
	struct graph_shape in = { 2, { 0, 4 } }, shapes[2] = { { 2, { 2, 4 } }, { 2, { 2, 5 } } };
	device_stream_t *copy;
	device_plan_t *p = NULL;
	struct one_node g;
	device_t *bad;
	char *cause = NULL;
	void *buf = poisoned_device(8);

	CHECK(device_open("tpu:0", &bad, &cause) != 0 && cause != NULL && strstr(cause, "tpu:0") != NULL,
	    "unknown device accepted: %s", cause ? cause : "(no message)");
	CHECK(device_alloc(dev, 0, &buf, &cause) != 0, "zero-byte allocation accepted");
	batch_graph(&g, buf);
	CHECK(graph_infer_shapes(&g.g, &in, shapes, &cause) != 0 && strstr(cause, "'x'") != NULL,
	    "zero-row batch accepted");
	shapes[0] = (struct graph_shape){ 2, { 2, 4 } };
	shapes[1] = (struct graph_shape){ 2, { 2, 5 } };
	CHECK(device_plan_compile(dev, &g.g, NULL, shapes, g.addrs, &p, &cause) != 0 && strstr(cause, "'y'") != NULL,
	    "plan with a wrong output shape accepted");
	shapes[1].dims[1] = 4;
	CHECK(device_plan_compile(dev, &g.g, NULL, shapes, g.addrs, &p, &cause) == 0, "%s", cause);
	CHECK(device_stream_create(dev, DEVICE_STREAM_COPY, &copy, &cause) == 0, "%s", cause);
	CHECK(p != NULL && device_plan_run(p, copy, &cause) != 0 && strstr(cause, "compute") != NULL,
	    "compute on a copy stream accepted");
	device_plan_free(p);
	device_stream_destroy(copy);
	device_free(dev, buf);
	free(cause);
}

/* Ops and dtypes the backend lacks: supports_node says no with a reason, compile names the node. */
static void
test_unsupported(void)
{
	int64_t xd[4] = { 1, 1, 4, 4 }, wd[4] = { 1, 1, 3, 3 }, yd[4] = { 1, 1, 2, 2 };
	struct graph_shape shapes[3] = { { 4, { 1, 1, 4, 4 } }, { 4, { 1, 1, 3, 3 } }, { 4, { 1, 1, 2, 2 } } }, in;
	float w[9] = { 0 };
	device_plan_t *p;
	struct one_node g;
	char *why = NULL, *cause = NULL;
	int buf;

	one_init(&g, GRAPH_OP_CONV)->name = "conv1";
	one_tensor(&g, "x", GRAPH_TENSOR_INPUT, 4, xd, &buf, NULL);
	one_tensor(&g, "w", GRAPH_TENSOR_CONST, 4, wd, &buf, w);
	one_tensor(&g, "y", GRAPH_TENSOR_OUTPUT, 4, yd, &buf, NULL);
	CHECK(device_supports_node(dev, &g.g, &g.n, &why) == 0 && why != NULL && strstr(why, "Conv") != NULL,
	    "Conv reported as supported: %s", why ? why : "(no message)");
	CHECK(device_plan_compile(dev, &g.g, NULL, shapes, g.addrs, &p, &cause) != 0 && strstr(cause, "conv1") != NULL &&
	    strstr(cause, "Conv") != NULL, "plan with a Conv compiled: %s", cause ? cause : "(no message)");
	printf("refused as expected: %s\n", cause);
	in = shapes[0];
	CHECK(graph_infer_shapes(&g.g, &in, shapes, &cause) != 0 &&
	    strstr(cause, "'conv1'") != NULL, "Conv without spatial dims inferred: %s", cause);
	one_init(&g, GRAPH_OP_UNARY)->attr.unary.fn = GRAPH_UNARY_RELU;
	one_tensor(&g, "h", GRAPH_TENSOR_INPUT, 4, xd, &buf, NULL);
	one_tensor(&g, "y", GRAPH_TENSOR_OUTPUT, 4, xd, &buf, NULL);
	g.t[0].dtype = GRAPH_DT_F16;
	CHECK(device_supports_node(dev, &g.g, &g.n, &why) == 0 && why != NULL && strstr(why, "FP16") != NULL,
	    "FP16 reported as supported: %s", why ? why : "(no message)");
	free(why);
	free(cause);
}

/* Compile g (a one-node graph) into the shared workspace ws of bytes (or its own when own), run it, return y. */
static float *
ws_conv_run(struct one_node *g, const struct graph_shape *shapes, int own, void *ws, size_t bytes, float *dy,
    size_t ny, char **cause)
{
	device_plan_t *p = NULL;
	int rc;

	rc = own ? device_plan_compile(dev, &g->g, NULL, shapes, g->addrs, &p, cause) :
	    device_plan_compile_shared(dev, &g->g, NULL, shapes, g->addrs, ws, bytes, &p, cause);
	if (rc == 0)
		rc = device_plan_run(p, stream, cause);
	if (rc == 0)
		rc = device_stream_sync(stream, cause);
	device_plan_free(p);
	return rc == 0 ? from_device(dy, ny) : NULL;
}

/*
 * A convolution (im2col on both backends) compiled into a shared workspace of
 * exactly device_plan_measure's size gives the plan's own result; one byte
 * less is refused naming the sizes on the CPU, and on CUDA runs fewer images
 * per column buffer, with the same result.
 */
static void
test_shared_workspace(void)
{
	int64_t xd[4] = { 2, 3, 8, 8 }, wd[4] = { 4, 3, 3, 3 }, yd[4] = { 2, 4, 6, 6 };
	float *x = random_host(2 * 3 * 64, -1, 1), *w = random_host(4 * 27, -1, 1), *dx, *dw, *dy;
	float *own = NULL, *shared = NULL, *less = NULL;
	struct graph_shape in, shapes[3];
	struct one_node g;
	struct graph_node *n;
	char *cause = NULL;
	size_t need = 0, ny = 2 * 4 * 36, i;
	void *ws = NULL;
	double err = 0;

	setenv("INFERD_CUDA_CONV", "im2col", 1);
	dx = to_device(x, 2 * 3 * 64);
	dw = to_device(w, 4 * 27);
	dy = poisoned_device(ny);
	n = one_init(&g, GRAPH_OP_CONV);
	n->attr.conv.nspatial = 2;
	for (i = 0; i < 2; i++) {
		n->attr.conv.kernel[i] = 3;
		n->attr.conv.stride[i] = n->attr.conv.dilation[i] = 1;
	}
	n->attr.conv.group = 1;
	one_tensor(&g, "x", GRAPH_TENSOR_INPUT, 4, xd, dx, NULL);
	one_tensor(&g, "w", GRAPH_TENSOR_CONST, 4, wd, dw, w);
	one_tensor(&g, "y", GRAPH_TENSOR_OUTPUT, 4, yd, dy, NULL);
	in.ndims = 4;
	memcpy(in.dims, xd, sizeof xd);
	CHECK(graph_infer_shapes(&g.g, &in, shapes, &cause) == 0, "conv shapes: %s", cause);
	CHECK(device_plan_measure(dev, &g.g, NULL, shapes, g.addrs, &need, &cause) == 0 && need > 0,
	    "measure: %s (need %zu)", cause ? cause : "no workspace", need);
	if (need > 0 && device_alloc(dev, need, &ws, &cause) == 0) {
		own = ws_conv_run(&g, shapes, 1, NULL, 0, dy, ny, &cause);
		shared = ws_conv_run(&g, shapes, 0, ws, need, dy, ny, &cause);
		CHECK(own != NULL && shared != NULL, "conv: %s", cause);
		free(cause);
		cause = NULL;
		less = ws_conv_run(&g, shapes, 0, ws, need - 1, dy, ny, &cause);
		if (device_is_gpu(dev))
			CHECK(less != NULL, "one byte less on CUDA: %s", cause);
		else
			CHECK(less == NULL && cause != NULL && strstr(cause, "workspace") != NULL,
			    "one byte less on the CPU: %s", cause ? cause : "compiled");
		for (i = 0; own != NULL && shared != NULL && i < ny; i++) {
			err = fmax(err, fabs((double)own[i] - shared[i]));
			if (less != NULL)
				err = fmax(err, fabs((double)own[i] - less[i]));
		}
		CHECK(err <= 1e-5, "shared workspace result differs by %g", err);
		device_free(dev, ws);
	}
	unsetenv("INFERD_CUDA_CONV");
	device_free(dev, dx);
	device_free(dev, dw);
	device_free(dev, dy);
	free(x);
	free(w);
	free(own);
	free(shared);
	free(less);
	free(cause);
}

/* The dtype table round-trips and op names read as ONNX's. */
static void
test_graph_names(void)
{
	enum graph_dtype dt;
	int i;

	for (i = 0; i < GRAPH_DT_COUNT; i++)
		CHECK(graph_dtype_parse(graph_dtype_name((enum graph_dtype)i), &dt) == 0 && (int)dt == i &&
		    graph_dtype_size(dt) > 0, "dtype %d does not round-trip", i);
	CHECK(graph_dtype_size(GRAPH_DT_I64) == 8 && graph_dtype_size(GRAPH_DT_F16) == 2, "dtype sizes wrong");
	CHECK(graph_dtype_parse("FP33", &dt) != 0, "unknown dtype parsed");
	CHECK(strcmp(graph_op_name(GRAPH_OP_LAYERNORM), "LayerNormalization") == 0, "op name wrong");
	for (i = 0; i < GRAPH_OP_COUNT; i++)
		CHECK(strcmp(graph_op_name((enum graph_op)i), "?") != 0, "op %d has no name", i);
}

int
main(void)
{
	static const enum graph_unary acts[] = { GRAPH_UNARY_NONE, GRAPH_UNARY_RELU, GRAPH_UNARY_GELU, GRAPH_UNARY_SIGMOID, GRAPH_UNARY_TANH };
	static const struct gemm_case general[] = {
		{ 5, 7, 3, 1, 0, 0.5f, 2.0f, 5, 3, GRAPH_UNARY_NONE },
		{ 4, 9, 6, 1, 1, 1.5f, -1.0f, 4, 1, GRAPH_UNARY_RELU },
		{ 33, 17, 65, 0, 0, 1.0f, 0.25f, 1, 1, GRAPH_UNARY_GELU_TANH },
		{ 8, 64, 16, 0, 1, 2.0f, 0.0f, 0, 0, GRAPH_UNARY_LEAKY_RELU },
	};
	char *cause = NULL;
	size_t a;
	int fn;

	dev = test_open_device();
	if (device_stream_create(dev, DEVICE_STREAM_COMPUTE, &stream, &cause) != 0) {
		fprintf(stderr, "FAIL: stream: %s\n", cause);
		return 1;
	}
	for (a = 0; a < sizeof acts / sizeof acts[0]; a++) {
		test_linear(1, 1, 1, 1, acts[a]);
		test_linear(7, 33, 5, 0, acts[a]);
		test_linear(64, 784, 256, 1, acts[a]);
		test_linear(3, 257, 1025, 1, acts[a]);
		if (acts[a] != GRAPH_UNARY_NONE) {
			test_activation(1, acts[a]);
			test_activation(100003, acts[a]);
		}
	}
	for (a = 0; a < sizeof general / sizeof general[0]; a++)
		test_gemm(&general[a]);
	for (fn = GRAPH_UNARY_NONE; fn < GRAPH_UNARY_COUNT; fn++) {
		int positive = fn == GRAPH_UNARY_LOG || fn == GRAPH_UNARY_SQRT || fn == GRAPH_UNARY_RECIPROCAL;
		test_unary(1000, (enum graph_unary)fn, fn == GRAPH_UNARY_CLIP ? -1.0f : 0.2f,
		    fn == GRAPH_UNARY_CLIP ? 2.0f : 0.5f, positive ? 0.1f : -6.0f, 6.0f, 0);
	}
	test_softmax(1, 1, 1);
	test_softmax(5, 10, 10);
	test_softmax(3, 1000, 50);
	test_softmax(2, 70000, 5);
	test_softmax_mode(4, 300, 20, 1, 0);
	test_softmax_mode(3, 5000, 5, 1, 1);
	test_softmax_mode(6, 129, 8, 0, 0);
	test_layernorm(1, 1, 1);
	test_layernorm(4, 7, 0);
	test_layernorm(9, 768, 1);
	test_layernorm(2, 5000, 1);
	test_layernorm_shape(3, 48, 4, 1);
	test_copy(1);
	test_copy(4099);
	test_events();
	test_refusals();
	test_unsupported();
	test_shared_workspace();
	test_graph_names();
	device_stream_destroy(stream);
	device_close(dev);
	free(cause);
	return test_finish("test_ops");
}
