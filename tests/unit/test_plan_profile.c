/*
 * test_plan_profile.c: device_plan_profile and model_exec_profile.  A graph
 * of a heavy MatMul (64x8192 by 8192x512; 512x2048 by 2048x1024 on a GPU) then a Relu and a bias Add is
 * profiled on the device under test (the CPU backend unless TEST_DEVICE says
 * otherwise): one entry per step in order, names and ops right, times finite
 * and >= 0, the MatMul the largest step, and the steps really ran (the
 * output matches a double-precision reference evaluator).  A copy stream is
 * refused.  On a GPU the same graph compiled at bf16 profiles as the input
 * cast, the three steps and the output cast, every one "bf16", and its output
 * is off the reference by bfloat16's rounding: between 1e-3 and 1e-2
 * normwise (a float64 model of the plan rounding x, w, b and every stored
 * tensor to bfloat16 gives 2.7e-3; the same at FP16 3.3e-4, so storage that
 * stayed FP32 or became FP16 fails, as does bfloat16 read as FP16).
 * model_exec_profile on conf/models/fashion-mlp lists fc1..fc3 and refuses a
 * batch larger than the model takes.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "graph.h"
#include "graph_test_util.h"
#include "model.h"
#include "test_util.h"

#define REPS 5

/*
 * The MatMul's sizes on the CPU: 8,192 multiply-adds per element of the
 * elementwise steps, so that the MatMul stays the largest step when the
 * sanitizers slow those loops (and not OpenBLAS or oneDNN) on a busy machine:
 * with 1,024 an ASan build under a parallel `make check` once timed the Relu
 * above it.  A GPU takes 512x2048 by 2048x1024 (main), where small kernels cost
 * relatively more.
 */
static int64_t M = 64, K = 8192, N = 512;
/* How every step of the FP32 graph ran: "cpu" on the CPU backend, the plan's precision on CUDA (no islands). */
static const char *want_how = "cpu";

/* The graph: y = relu(x @ w) + b, tensors x, w, b, h, r, y. */
static graph_t *
build_graph(const float *w, const float *b, int *xt, int *yt)
{
	const int64_t dx[2] = { M, K }, dw[2] = { K, N }, db[1] = { N }, dy[2] = { M, N };
	graph_t *g = gt_new();
	int in[2], h, r;

	gt_input(g, *xt = gt_tensor(g, "x", GRAPH_TENSOR_INPUT, 2, dx));
	in[0] = *xt;
	in[1] = gt_const(g, "w", 2, dw, w);
	h = gt_tensor(g, "h", 0, 2, dy);
	gt_node(g, "mm", GRAPH_OP_MATMUL, 2, in, h);
	r = gt_tensor(g, "r", 0, 2, dy);
	gt_unary(g, "relu", GRAPH_UNARY_RELU, h, r);
	*yt = gt_tensor(g, "y", GRAPH_TENSOR_OUTPUT, 2, dy);
	gt_binary(g, "bias", GRAPH_BINARY_ADD, r, gt_const(g, "b", 1, db, b), *yt);
	gt_output(g, *yt);
	return g;
}

/* One profile's entries: count, order, names, ops, times. */
static void
check_entries(const struct device_step_time *t, size_t n)
{
	static const char *const nodes[3] = { "mm", "relu", "bias" }, *const ops[3] = { "MatMul", "Unary", "Binary" };

	CHECK(n == 3, "%zu steps, expected 3", n);
	for (size_t i = 0; i < n && i < 3; i++) {
		CHECK(strcmp(t[i].node, nodes[i]) == 0 && strcmp(t[i].op, ops[i]) == 0, "step %zu is %s (%s), expected "
		    "%s (%s)", i, t[i].node, t[i].op, nodes[i], ops[i]);
		CHECK(isfinite(t[i].us) && t[i].us >= 0, "step %zu took %g us", i, t[i].us);
		CHECK(t[i].how != NULL && strcmp(t[i].how, want_how) == 0, "step %zu ran as %s, expected %s", i,
		    t[i].how ? t[i].how : "(null)", want_how);
	}
}

/*
 * Profile REPS times; each step's fastest run says the MatMul is the largest
 * step.  The fastest, not the median: another process on the machine only
 * ever adds time, and only to the runs it hits.  Largest, not a share of the
 * sum: under ASan the elementwise loops are instrumented while OpenBLAS is
 * not, which moves shares (M, K, N above leave 8,192 multiply-adds per element).
 */
static void
check_profiles(device_plan_t *plan, device_stream_t *s)
{
	double best[3], sum;
	struct device_step_time *t;
	char *cause = NULL;
	size_t n;

	for (int i = 0; i < 3; i++)
		best[i] = INFINITY;
	for (int r = 0; r < REPS; r++) {
		if (device_plan_profile(plan, s, &t, &n, &cause) != 0) {
			CHECK(0, "profile: %s", cause);
			free(cause);
			return;
		}
		check_entries(t, n);
		for (size_t i = 0; i < 3 && i < n; i++)
			best[i] = fmin(best[i], t[i].us);
		free(t);
	}
	sum = best[0] + best[1] + best[2];
	printf("profile, fastest of %d: mm %.1f us, relu %.1f us, bias %.1f us\n", REPS, best[0], best[1], best[2]);
	/* 268M multiply-adds (1G on a GPU) against 32K-element passes (512K): the MatMul is far the largest. */
	CHECK(isfinite(sum) && sum > 0 && best[0] > best[1] && best[0] > best[2],
	    "the MatMul (%.1f us) is not the largest step (relu %.1f us, bias %.1f us)", best[0], best[1], best[2]);
}

/* The profiled run's output against the reference evaluator's: its relative error in [lo, hi). */
static void
check_output(const graph_t *g, const float *x, int yt, const float *y, double lo, double hi)
{
	struct gt_value in = { .s = { .ndims = 2, .dims = { M, K } } }, *vals = calloc(g->ntensors, sizeof *vals);
	double err;

	in.v = malloc((size_t)M * K * sizeof *in.v);
	if (vals == NULL || in.v == NULL) {
		CHECK(0, "out of memory");
		free(vals);
		free(in.v);
		return;
	}
	for (size_t i = 0; i < (size_t)M * K; i++)
		in.v[i] = x[i];
	CHECK(gt_eval(g, &in, vals) == 0 && vals[yt].v != NULL, "the reference evaluator failed");
	if (vals[yt].v != NULL) {
		err = test_rel_error(y, vals[yt].v, (size_t)M * N);
		CHECK(err >= lo && err < hi, "the profiled run's output is off the reference by %g, not in [%g, %g)", err,
		    lo, hi);
	}
	gt_values_free(vals, g->ntensors);
	free(vals);
	free(in.v);
}

/* The same graph at bf16: its profile names the casts and says bf16 throughout; its output rounds like bfloat16. */
static void
check_bf16(device_t *dev, device_stream_t *s, const graph_t *g, const struct graph_shape *shapes, void **addrs,
    const float *x, int yt)
{
	static const char *const nodes[5] = { "(precision cast)", "mm", "relu", "bias", "(precision cast)" };
	static const char *const ops[5] = { "Cast (precision)", "MatMul", "Unary", "Binary", "Cast (precision)" };
	struct device_plan_options opts = { GRAPH_PRECISION_BF16 };
	struct device_step_time *t = NULL;
	device_plan_t *plan = NULL;
	float *y = malloc((size_t)M * N * 4);
	char *cause = NULL;
	size_t n = 0;

	if (y == NULL || device_plan_compile(dev, g, &opts, shapes, addrs, &plan, &cause) != 0 ||
	    device_plan_profile(plan, s, &t, &n, &cause) != 0 ||
	    device_copy_d2h(s, y, addrs[yt], (size_t)M * N * 4, &cause) != 0 || device_stream_sync(s, &cause) != 0) {
		CHECK(0, "bf16: %s", cause ? cause : "out of memory");
		goto out;
	}
	CHECK(n == 5, "bf16: %zu steps, expected 5 (the input cast, mm, relu, bias, the output cast)", n);
	for (size_t i = 0; i < n && i < 5; i++)
		CHECK(strcmp(t[i].node, nodes[i]) == 0 && strcmp(t[i].op, ops[i]) == 0 && t[i].how != NULL &&
		    strcmp(t[i].how, "bf16") == 0, "bf16: step %zu is %s (%s) run as %s, expected %s (%s) as bf16", i,
		    t[i].node, t[i].op, t[i].how ? t[i].how : "(null)", nodes[i], ops[i]);
	check_output(g, x, yt, y, 1e-3, 1e-2);
out:
	free(t);
	free(cause);
	device_plan_free(plan);
	free(y);
}

/* Upload x and the constants, compile, profile, check the entries and the output. */
static void
test_plan(device_t *dev)
{
	float *w = malloc((size_t)K * N * 4), *b = malloc(N * 4), *x = malloc((size_t)M * K * 4), *y = malloc((size_t)M * N * 4);
	uint64_t st = 42;
	int xt, yt;
	graph_t *g;
	struct graph_shape in = { .ndims = 2, .dims = { M, K } }, *shapes;
	void **addrs;
	device_stream_t *s = NULL, *cs = NULL;
	device_plan_t *plan = NULL;
	struct device_step_time *t = (struct device_step_time *)1;
	size_t n = 99;
	char *cause = NULL;

	if (w == NULL || b == NULL || x == NULL || y == NULL) {
		CHECK(0, "out of memory");
		return;
	}
	test_fill_random(w, (size_t)K * N, &st, -0.05f, 0.05f);
	test_fill_random(b, N, &st, -1, 1);
	test_fill_random(x, (size_t)M * K, &st, -1, 1);
	g = build_graph(w, b, &xt, &yt);
	shapes = calloc(g->ntensors, sizeof *shapes);
	addrs = calloc(g->ntensors, sizeof *addrs);
	if (shapes == NULL || addrs == NULL || graph_infer_shapes(g, &in, shapes, &cause) != 0 ||
	    device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, &cause) != 0 ||
	    device_stream_create(dev, DEVICE_STREAM_COPY, &cs, &cause) != 0)
		goto fail;
	for (size_t i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *gt = &g->tensors[i];
		size_t bytes = (size_t)graph_shape_elems(&shapes[i]) * 4;
		if (device_alloc(dev, bytes, &addrs[i], &cause) != 0)
			goto fail;
		if ((gt->flags & GRAPH_TENSOR_CONST) && device_copy_h2d(s, addrs[i], gt->data, bytes, &cause) != 0)
			goto fail;
	}
	if (device_copy_h2d(s, addrs[xt], x, (size_t)M * K * 4, &cause) != 0 || device_stream_sync(s, &cause) != 0 ||
	    device_plan_compile(dev, g, NULL, shapes, addrs, &plan, &cause) != 0)
		goto fail;
	check_profiles(plan, s);
	if (device_copy_d2h(s, y, addrs[yt], (size_t)M * N * 4, &cause) != 0 || device_stream_sync(s, &cause) != 0)
		goto fail;
	check_output(g, x, yt, y, 0, 1e-4);
	if (device_is_gpu(dev))
		check_bf16(dev, s, g, shapes, addrs, x, yt);
	CHECK(device_plan_profile(plan, cs, &t, &n, &cause) == -1 && cause != NULL && strstr(cause, "compute") &&
	    t == NULL && n == 0, "a copy stream: %s", cause ? cause : "accepted");
	goto out;
fail:
	CHECK(0, "setting up the graph: %s", cause ? cause : "out of memory");
out:
	free(cause);
	device_plan_free(plan);
	device_stream_destroy(s);
	device_stream_destroy(cs);
	for (size_t i = 0; addrs != NULL && i < g->ntensors; i++)
		device_free(dev, addrs[i]);
	free(addrs);
	free(shapes);
	graph_free(g);
	free(w);
	free(b);
	free(x);
	free(y);
}

/* model_exec_profile on fashion-mlp (three Gemm nodes): the rows' plan, its steps; too many rows refused. */
static void
test_model(device_t *dev)
{
	const char *top = getenv("top_srcdir");
	char *dir = NULL, *cause = NULL;
	model_t *m = NULL;
	model_exec_t *x = NULL;
	device_stream_t *s = NULL;
	struct device_step_time *t = NULL;
	size_t n = 0;
	int rows = 0;

	if (asprintf(&dir, "%s/conf/models/fashion-mlp", top ? top : ".") == -1) {
		CHECK(0, "out of memory");
		return;
	}
	if (model_load(dev, dir, &m, &cause) != 0 || model_exec_create(m, &x, &cause) != 0 ||
	    device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, &cause) != 0 ||
	    model_exec_profile(x, 4, s, &t, &n, &rows, &cause) != 0) {
		CHECK(0, "fashion-mlp: %s", cause);
		goto out;
	}
	CHECK(rows == 4 && n == 3, "profiled %d rows, %zu steps", rows, n);
	for (size_t i = 0; i < n && i < 3; i++) {
		char want[8];
		snprintf(want, sizeof want, "fc%zu", i + 1);
		CHECK(strcmp(t[i].node, want) == 0 && strcmp(t[i].op, "Gemm") == 0 && t[i].us >= 0 && t[i].how != NULL,
		    "step %zu: %s (%s) %g us", i, t[i].node, t[i].op, t[i].us);
	}
	free(t);
	t = NULL;
	CHECK(model_exec_profile(x, m->max_batch_size + 1, s, &t, &n, &rows, &cause) == -1 && cause != NULL &&
	    strstr(cause, "rows") != NULL && t == NULL, "a batch past max_batch_size: %s", cause ? cause : "accepted");
out:
	free(t);
	free(cause);
	device_stream_destroy(s);
	model_exec_free(x);
	model_free(m);
	free(dir);
}

int
main(void)
{
	device_t *dev = test_open_device();

	if (device_is_gpu(dev)) {
		M = 512;
		K = 2048;
		N = 1024;
		want_how = "fp32";
	}
	test_plan(dev);
	test_model(dev);
	device_close(dev);
	return test_finish("test_plan_profile");
}
