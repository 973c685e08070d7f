/* test_backend_ops.c: every graph op with random shapes and attributes, run on the CPU backend and on cuda:0, outputs compared. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "device.h"
#include "error.h"
#include "graph.h"
#include "test_util.h"

/*
 * The ggml test-backend-ops idea: for each op, random shapes and attributes
 * build a one-node graph; device_plan_compile/run runs it on the CPU backend
 * (the independently tested kernel library) and on the GPU; FP32 outputs must
 * agree within a normwise relative error (||gpu - cpu||_2 / ||cpu||_2) of
 * TOL_F32, every other dtype exactly.  The CUDA kernels are fp32 strict
 * (cuBLAS without TF32; cuDNN convolution engines are kept only when their
 * numerical notes promise no TF32, down-conversion, FFT or Winograd, else
 * im2col + SGEMM), so no op needs a looser bound.  The convolutions run a
 * second time with INFERD_CUDA_CONV=im2col, the path of builds without cuDNN.
 * Attention runs a second time with INFERD_CUDA_ATTENTION=cublas: at fp16
 * the first pass takes cuDNN's fused attention where it has an engine (head
 * depths that are multiples of 8), the second the cuBLAS + softmax path in
 * FP32 that shapes cuDNN refuses take.
 * The GPU outputs compared come from a CUDA-graph replay of the plan (outputs
 * poisoned first), which also proves every step capturable.  Every other GPU
 * case compiles through device_plan_measure + device_plan_compile_shared with a
 * workspace of exactly the measured size (a batch context's way), the others
 * with scratch of their own.  Per op, the log gives the cases run, the largest error and the mean
 * time of one plan run on each backend (informational).  Exits 77 without a GPU.
 * Set BACKEND_OPS_SEED to vary the random cases (the seed is printed).
 *
 * Precision (device_plan_options): the whole suite runs once per precision,
 * the GPU plan compiled at that precision, the CPU always FP32.  Bounds
 * (normwise, FP32 outputs; other dtypes exact at every precision):
 *   fp32  every op 1e-5;
 *   tf32  GEMM, MatMul, Conv, ConvTranspose, RNN, Attention 3e-3 (TF32 keeps 10 mantissa bits:
 *         2^-11 relative per product), every other op still 1e-5 (only cuBLAS
 *         and cuDNN change);
 *   fp16  GEMM, MatMul, Conv, ConvTranspose, RNN, Attention, Softmax, LayerNorm, BatchNorm,
 *         Pool, Reduce, Resize 1e-2; element-wise and data-movement ops 2e-3
 *         (FP16 storage rounds each stored value by up to 2^-11 relative);
 *   bf16  fp16's bounds times 8, the ratio of the rounding units (bfloat16
 *         keeps 8 significant bits: up to 2^-8 relative per stored value,
 *         against FP16's 2^-11): 8e-2 and 1.6e-2.  bfloat16 bits read as FP16
 *         (or the reverse) are off by far more (main checks that first).
 * At fp16 (bf16) the FP32 inputs are first rounded to FP16 (bfloat16)
 * representable values for both backends, so what differs is the GPU's
 * reduced arithmetic and storage,
 * not the input's rounding (which the plan's input cast would otherwise add,
 * and which would break the exact checks of Cast to integers or Equal).
 * A Gemm>BatchNorm>Softmax chain with constant weights (counted under Gemm)
 * covers FP16/BF16 weight copies and intermediates, which one-node cases lack.
 * BACKEND_OPS_PRECISION=fp32|tf32|fp16|bf16 runs one precision only.
 */

#define TOL_F32 1e-5
#define TOL_TF32_GEMM 3e-3
#define TOL_F16_GEMM 1e-2
#define TOL_F16_EW 2e-3
#define TOL_BF16_GEMM (8 * TOL_F16_GEMM)
#define TOL_BF16_EW (8 * TOL_F16_EW)
#define MAX_T 12
#define CASES_PER_OP 12
#define TIMED_RUNS 3

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* Uniform integer in [lo, hi]. */
static int64_t
rnd(int64_t lo, int64_t hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

/* Uniform float in [lo, hi). */
static float
rndf(float lo, float hi)
{
	return lo + (hi - lo) * (float)((double)rnd(0, 1 << 24) / (double)(1 << 24));
}

/* How a test fills an input tensor. */
enum fill { FILL_F32 = 0, FILL_POS, FILL_AWAY0, FILL_BOOL, FILL_INDEX, FILL_INT, FILL_WIDE, FILL_SPECIAL, FILL_LEN,
    FILL_MASK };

/* One case: a graph of one node, its tensors and how inputs are filled. */
struct tc {
	const char *label;
	graph_t g;
	struct graph_tensor t[MAX_T];
	struct graph_node n;
	int in[MAX_T], out[MAX_T], gin[MAX_T], gout[MAX_T];
	enum fill fill[MAX_T];
	int64_t fill_arg[MAX_T];
	void *host[MAX_T];		/* inputs' bytes */
	struct graph_shape shapes[MAX_T];
};

/* Per-op results for the log. */
struct op_stats {
	int cases, skipped;
	double max_err, cpu_us, gpu_us;
};

static device_t *cpu, *gpu;
static device_stream_t *cpu_s, *gpu_s;
static int precision;		/* the GPU plans' compile option for the cases now running */
static struct op_stats all_stats[GRAPH_PRECISION_COUNT][GRAPH_OP_COUNT];

/* The normwise bound for an FP32 output of op at the current precision. */
static double
tol_for(enum graph_op op)
{
	int gemm = op == GRAPH_OP_GEMM || op == GRAPH_OP_MATMUL || op == GRAPH_OP_CONV ||
	    op == GRAPH_OP_CONV_TRANSPOSE || op == GRAPH_OP_RNN ||
	    op == GRAPH_OP_ATTENTION;
	int reducing = gemm || op == GRAPH_OP_SOFTMAX || op == GRAPH_OP_LAYERNORM || op == GRAPH_OP_BATCHNORM ||
	    op == GRAPH_OP_POOL || op == GRAPH_OP_REDUCE || op == GRAPH_OP_RESIZE;

	/* A recurrence compounds each step's TF32 rounding (FP16's 10-bit mantissa): FP16's GEMM bound. */
	if (precision == GRAPH_PRECISION_TF32 && op == GRAPH_OP_RNN)
		return TOL_F16_GEMM;
	if (precision == GRAPH_PRECISION_TF32)
		return gemm ? TOL_TF32_GEMM : TOL_F32;
	if (precision == GRAPH_PRECISION_FP16)
		return reducing ? TOL_F16_GEMM : TOL_F16_EW;
	if (precision == GRAPH_PRECISION_BF16)
		return reducing ? TOL_BF16_GEMM : TOL_BF16_EW;
	return TOL_F32;
}

/* x rounded to the nearest FP16 value (ties to even), as a float; beyond FP16's range, infinity. */
static float
round_f16(float x)
{
	double a = fabs((double)x), q;
	int e;

	if (isnan(x) || a == 0.0)
		return x;
	if (a >= 65520.0)
		return copysignf(INFINITY, x);
	frexp(a, &e);		/* a = m 2^e, m in [0.5, 1) */
	q = e - 1 < -14 ? ldexp(1.0, -24) : ldexp(1.0, e - 1 - 10);
	return (float)(nearbyint((double)x / q) * q);
}

/* x rounded to the nearest bfloat16 value (ties to even: FP32's top 16 bits), as a float; NaN stays NaN. */
static float
round_bf16(float x)
{
	uint32_t u;

	if (isnan(x))
		return x;
	memcpy(&u, &x, 4);
	u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&x, &u, 4);
	return x;
}

/* x as the current precision stores it: FP16 or bfloat16 representable at fp16/bf16, else unchanged. */
static float
round_stored(float x)
{
	if (precision == GRAPH_PRECISION_FP16)
		return round_f16(x);
	if (precision == GRAPH_PRECISION_BF16)
		return round_bf16(x);
	return x;
}

/* Start a case of op. */
static struct graph_node *
tc_init(struct tc *c, enum graph_op op, const char *label)
{
	memset(c, 0, sizeof *c);
	c->label = label;
	c->g.tensors = c->t;
	c->g.nodes = &c->n;
	c->g.nnodes = 1;
	c->g.inputs = c->gin;
	c->g.outputs = c->gout;
	c->n.op = op;
	c->n.name = (char *)label;
	c->n.inputs = c->in;
	c->n.outputs = c->out;
	return &c->n;
}

/* Add a tensor with a declared shape (ndims < 0: inferred). */
static int
tc_tensor(struct tc *c, enum graph_dtype dt, unsigned flags, int ndims, const int64_t *dims)
{
	int i = (int)c->g.ntensors++;

	c->t[i].name = (char *)(flags & GRAPH_TENSOR_OUTPUT ? "out" : "in");
	c->t[i].dtype = dt;
	c->t[i].flags = flags;
	c->t[i].ndims = ndims;
	if (ndims > 0)
		memcpy(c->t[i].dims, dims, (size_t)ndims * sizeof *dims);
	return i;
}

/* Add the node's next input, filled as f. */
static void
tc_in(struct tc *c, enum graph_dtype dt, int ndims, const int64_t *dims, enum fill f, int64_t arg)
{
	int i = tc_tensor(c, dt, GRAPH_TENSOR_INPUT, ndims, dims);

	c->fill[i] = f;
	c->fill_arg[i] = arg;
	c->gin[c->g.ninputs++] = i;
	c->in[c->n.ninputs++] = i;
}

/* Add a constant input (e.g. Expand's shape) with the given I64 values. */
static void
tc_const_i64(struct tc *c, int64_t n, const int64_t *v)
{
	int i = tc_tensor(c, GRAPH_DT_I64, GRAPH_TENSOR_CONST, 1, &n);

	c->host[i] = malloc((size_t)n * 8 + 8);
	memcpy(c->host[i], v, (size_t)n * 8);
	c->t[i].data = c->host[i];
	c->t[i].nbytes = (size_t)n * 8;
	c->in[c->n.ninputs++] = i;
}

/* Mark an omitted optional input. */
static void
tc_omit(struct tc *c)
{
	c->in[c->n.ninputs++] = -1;
}

/* Add an output of dtype dt (shape inferred). */
static void
tc_out(struct tc *c, enum graph_dtype dt)
{
	int i = tc_tensor(c, dt, GRAPH_TENSOR_OUTPUT, -1, NULL);

	c->gout[c->g.noutputs++] = i;
	c->out[c->n.noutputs++] = i;
}

/* Bytes of tensor i. */
static size_t
tc_bytes(const struct tc *c, int i)
{
	return (size_t)graph_shape_elems(&c->shapes[i]) * graph_dtype_size(c->t[i].dtype);
}

/* Fill element k of an input as its fill says. */
static void
tc_fill_one(struct tc *c, int i, size_t k)
{
	double v;

	switch (c->fill[i]) {
	case FILL_POS: v = rndf(0.1f, 2.0f); break;
	case FILL_AWAY0: v = rndf(0.5f, 2.0f) * (rnd(0, 1) ? 1 : -1); break;
	case FILL_BOOL: v = (double)rnd(0, 1); break;
	case FILL_INDEX: v = (double)rnd(-c->fill_arg[i], c->fill_arg[i] - 1); break;
	case FILL_INT: v = (double)rnd(-c->fill_arg[i], c->fill_arg[i]); break;
	case FILL_WIDE: v = rndf(-300.0f, 300.0f); break;
	case FILL_SPECIAL: {
		/* NaN, either infinity, or a finite value, a quarter each. */
		static const double special[] = { NAN, INFINITY, -INFINITY };
		int64_t pick = rnd(0, 3);

		v = pick < 3 ? special[pick] : rndf(-2.0f, 2.0f);
		break;
	}
	case FILL_LEN: v = (double)rnd(0, c->fill_arg[i]); break;
	/* An additive padding mask along the last dim: 0 keeps a key, -10000 drops it; the first is always kept. */
	case FILL_MASK: v = k % (size_t)c->shapes[i].dims[c->shapes[i].ndims - 1] == 0 || rnd(0, 2) ? 0.0 : -10000.0; break;
	default: v = rndf(-1.0f, 1.0f); break;
	}
	switch (c->t[i].dtype) {
	case GRAPH_DT_F32: ((float *)c->host[i])[k] = (float)v; break;
	case GRAPH_DT_I64: ((int64_t *)c->host[i])[k] = (int64_t)v; break;
	case GRAPH_DT_I32: ((int32_t *)c->host[i])[k] = (int32_t)v; break;
	case GRAPH_DT_F16: {
		/* A half from its bits: sign, exponent 13..17, random mantissa (values around 0.01 to 4). */
		uint16_t h = (uint16_t)((rnd(0, 1) << 15) | (rnd(8, 16) << 10) | rnd(0, 1023));
		((uint16_t *)c->host[i])[k] = h;
		break;
	}
	default: ((uint8_t *)c->host[i])[k] = (uint8_t)(int64_t)v; break;
	}
}

/* Random bytes for every non-constant input. */
static void
tc_fill(struct tc *c)
{
	for (size_t i = 0; i < c->g.ntensors; i++) {
		if (!(c->t[i].flags & GRAPH_TENSOR_INPUT))
			continue;
		c->host[i] = malloc(tc_bytes(c, (int)i) + 8);
		for (size_t k = 0; k < (size_t)graph_shape_elems(&c->shapes[i]); k++) {
			tc_fill_one(c, (int)i, k);
			if (c->t[i].dtype == GRAPH_DT_F32)
				((float *)c->host[i])[k] = round_stored(((float *)c->host[i])[k]);
		}
	}
}

/*
 * On a backend with device graphs, poison the outputs, capture one plan run
 * into a graph and replay it, so the outputs compared come from the replay
 * (a step that allocates or synchronises cannot be captured and fails here).
 */
static int
tc_replay(struct tc *c, device_t *dev, device_stream_t *s, device_plan_t *plan, void *const *addrs,
    char **cause)
{
	device_graph_t *graph = NULL;
	int rc;

	if (!device_has_graphs(dev))
		return 0;
	for (int k = 0; k < c->g.noutputs; k++) {
		size_t b = tc_bytes(c, c->gout[k]);
		void *poison = malloc(b + 1);
		memset(poison, 0xff, b + 1);
		rc = device_copy_h2d(s, addrs[c->gout[k]], poison, b, cause);
		if (rc == 0)
			rc = device_stream_sync(s, cause);
		free(poison);
		if (rc != 0)
			return -1;
	}
	if (device_graph_capture_begin(s, cause) != 0)
		return -1;
	rc = device_plan_run(plan, s, cause);
	if (device_graph_capture_end(s, &graph, rc == 0 ? cause : NULL) != 0)
		return -1;
	if (rc == 0)
		rc = device_graph_launch(graph, s, cause);
	device_graph_destroy(graph);
	return rc;
}

/*
 * Compile the case: on a GPU every other time into a shared workspace of
 * exactly the measured size (*ws, freed by the caller), else with scratch of its own.
 */
static int
tc_compile(struct tc *c, device_t *dev, void *const *addrs, device_plan_t **plan, void **ws, char **cause)
{
	/* The CPU reference always computes in FP32; the GPU at the precision under test. */
	struct device_plan_options opts = { device_is_gpu(dev) ? precision : GRAPH_PRECISION_FP32 };
	static unsigned turn;
	size_t need = 0;

	if (!device_is_gpu(dev) || turn++ % 2 == 0)
		return device_plan_compile(dev, &c->g, &opts, c->shapes, addrs, plan, cause);
	if (device_plan_measure(dev, &c->g, &opts, c->shapes, addrs, &need, cause) != 0)
		return error_prefix(cause, "measuring the workspace");
	if (need > 0 && device_alloc(dev, need, ws, cause) != 0)
		return -1;
	if (device_plan_compile_shared(dev, &c->g, &opts, c->shapes, addrs, *ws, need, plan, cause) != 0)
		return error_prefix(cause, "compiling into a shared workspace of %zu bytes", need);
	return 0;
}

/* Run the case on one backend: upload, compile, run (timed), download outputs into res[]. */
static int
tc_run_on(struct tc *c, device_t *dev, device_stream_t *s, void **res, double *us, char **cause)
{
	void *addrs[MAX_T] = { 0 }, *ws = NULL;
	device_plan_t *plan = NULL;
	device_event_t *e0 = NULL, *e1 = NULL;
	int rc = -1;

	for (size_t i = 0; i < c->g.ntensors; i++) {
		size_t b = tc_bytes(c, (int)i);
		if (device_alloc(dev, b ? b : 1, &addrs[i], cause) != 0)
			goto out;
		if (c->host[i] != NULL && device_copy_h2d(s, addrs[i], c->host[i], b, cause) != 0)
			goto out;
	}
	if (tc_compile(c, dev, addrs, &plan, &ws, cause) != 0 ||
	    device_plan_run(plan, s, cause) != 0 || device_stream_sync(s, cause) != 0)
		goto out;
	if (device_event_create(dev, &e0, cause) != 0 || device_event_create(dev, &e1, cause) != 0 ||
	    device_event_record(e0, s, cause) != 0)
		goto out;
	for (int r = 0; r < TIMED_RUNS; r++)
		if (device_plan_run(plan, s, cause) != 0)
			goto out;
	if (device_event_record(e1, s, cause) != 0 || device_event_sync(e1, cause) != 0 ||
	    device_event_elapsed_us(e0, e1, us, cause) != 0)
		goto out;
	*us /= TIMED_RUNS;
	if (tc_replay(c, dev, s, plan, addrs, cause) != 0)
		goto out;
	for (int k = 0; k < c->g.noutputs; k++) {
		int i = c->gout[k];
		res[k] = malloc(tc_bytes(c, i) + 8);
		if (device_copy_d2h(s, res[k], addrs[i], tc_bytes(c, i), cause) != 0)
			goto out;
	}
	rc = device_stream_sync(s, cause);
out:
	if (e0 != NULL)
		device_event_destroy(e0);
	if (e1 != NULL)
		device_event_destroy(e1);
	device_plan_free(plan);
	if (ws != NULL)
		device_free(dev, ws);
	for (size_t i = 0; i < c->g.ntensors; i++)
		if (addrs[i] != NULL)
			device_free(dev, addrs[i]);
	return rc;
}

/* Normwise relative error of y against ref (absolute when ref is zero). */
static double
norm_err(const float *y, const float *ref, size_t n)
{
	double num = 0.0, den = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)y[i] - (double)ref[i];
		if (isnan(y[i]) != isnan(ref[i]))
			return INFINITY;
		if (isnan(y[i]))
			continue;
		num += d * d;
		den += (double)ref[i] * ref[i];
	}
	return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The value of FP16 bits h (what a kernel reading bfloat16 storage as FP16 would see). */
static float
f16_bits_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);

	return (float)((h & 0x8000) ? -v : v);
}

/*
 * That the bf16 bounds can fail: values of an output's scale, rounded to
 * bfloat16, are within a quarter of TOL_BF16_EW of themselves, and their
 * bfloat16 bits read as FP16 (a storage mix-up) are outside the loosest bf16 bound.
 */
static void
check_bf16_bound(void)
{
	enum { N = 256 };
	float ref[N], bf[N], wrong[N];

	for (int i = 0; i < N; i++) {
		uint32_t u;
		ref[i] = (float)(2.0 * sin(0.37 * i + 0.1));
		bf[i] = round_bf16(ref[i]);
		memcpy(&u, &bf[i], 4);
		wrong[i] = f16_bits_value((uint16_t)(u >> 16));
	}
	CHECK(norm_err(bf, ref, N) <= TOL_BF16_EW / 4, "bfloat16 rounding error %g above 2^-8", norm_err(bf, ref, N));
	CHECK(!(norm_err(wrong, ref, N) <= TOL_BF16_GEMM), "bfloat16 bits read as FP16 came within %g",
	    norm_err(wrong, ref, N));
}

/* Compare output k of both backends. */
static void
tc_compare(struct tc *c, int k, const void *cpu_y, const void *gpu_y)
{
	int i = c->gout[k];
	size_t n = (size_t)graph_shape_elems(&c->shapes[i]);
	struct op_stats *st = &all_stats[precision][c->n.op];

	if (c->t[i].dtype == GRAPH_DT_F32) {
		double err = norm_err((const float *)gpu_y, (const float *)cpu_y, n), tol = tol_for(c->n.op);
		if (err > st->max_err)
			st->max_err = err;
		CHECK(err <= tol, "%s at %s: output %d: normwise relative error %g > %g", c->label,
		    graph_precision_name(precision), k, err, tol);
		return;
	}
	CHECK(memcmp(cpu_y, gpu_y, tc_bytes(c, i)) == 0, "%s at %s: output %d (%s) differs", c->label,
	    graph_precision_name(precision), k, graph_dtype_name(c->t[i].dtype));
}

/* A constant FP32 tensor (a weight) with random values as f (stored-dtype representable, like the inputs). */
static int
tc_const_f32(struct tc *c, int ndims, const int64_t *dims, enum fill f)
{
	int i = tc_tensor(c, GRAPH_DT_F32, GRAPH_TENSOR_CONST, ndims, dims);
	int64_t n = 1;

	for (int d = 0; d < ndims; d++)
		n *= dims[d];
	c->host[i] = malloc((size_t)n * 4 + 8);
	c->fill[i] = f;
	for (int64_t k = 0; k < n; k++) {
		tc_fill_one(c, i, (size_t)k);
		((float *)c->host[i])[k] = round_stored(((float *)c->host[i])[k]);
	}
	c->t[i].data = c->host[i];
	c->t[i].nbytes = (size_t)n * 4;
	return i;
}

/* Run a built case on both backends and compare; free it. */
static void
tc_run(struct tc *c)
{
	struct graph_shape ins[MAX_T];
	void *ry_cpu[MAX_T] = { 0 }, *ry_gpu[MAX_T] = { 0 };
	double cu = 0, gu = 0;
	char *cause = NULL, *why = NULL;
	struct op_stats *st = &all_stats[precision][c->n.op];

	for (int k = 0; k < c->g.ninputs; k++) {
		const struct graph_tensor *t = &c->t[c->gin[k]];
		ins[k].ndims = t->ndims;
		memcpy(ins[k].dims, t->dims, sizeof ins[k].dims);
	}
	if (graph_infer_shapes(&c->g, ins, c->shapes, &cause) != 0) {
		/* The generator made an impossible case (e.g. a window larger than the input): count it, move on. */
		if (getenv("BACKEND_OPS_VERBOSE") != NULL)
			printf("skipped %s: %s\n", c->label, cause);
		st->skipped++;
		goto out;
	}
	for (size_t j = 0; j < c->g.nnodes; j++) {
		if (!device_supports_node(cpu, &c->g, &c->g.nodes[j], &why)) {
			if (getenv("BACKEND_OPS_VERBOSE") != NULL)
				printf("skipped %s: the CPU backend refuses it: %s\n", c->label, why);
			st->skipped++;
			goto out;
		}
		CHECK(device_supports_node(gpu, &c->g, &c->g.nodes[j], &why), "%s: the GPU refuses it: %s", c->label,
		    why);
	}
	tc_fill(c);
	if (tc_run_on(c, cpu, cpu_s, ry_cpu, &cu, &cause) != 0) {
		CHECK(0, "%s: CPU: %s", c->label, cause);
		goto out;
	}
	if (tc_run_on(c, gpu, gpu_s, ry_gpu, &gu, &cause) != 0) {
		CHECK(0, "%s: GPU: %s", c->label, cause);
		goto out;
	}
	for (int k = 0; k < c->g.noutputs; k++)
		tc_compare(c, k, ry_cpu[k], ry_gpu[k]);
	st->cases++;
	st->cpu_us += cu;
	st->gpu_us += gu;
out:
	for (int k = 0; k < MAX_T; k++) {
		free(ry_cpu[k]);
		free(ry_gpu[k]);
		free(c->host[k]);
	}
	free(cause);
	free(why);
}

/* A random fused activation. */
static void
rnd_act(struct graph_node *n)
{
	static const enum graph_unary acts[] = { GRAPH_UNARY_NONE, GRAPH_UNARY_RELU, GRAPH_UNARY_GELU,
		GRAPH_UNARY_SIGMOID, GRAPH_UNARY_TANH, GRAPH_UNARY_LEAKY_RELU, GRAPH_UNARY_CLIP };

	n->act = acts[rnd(0, 6)];
	n->act_alpha = n->act == GRAPH_UNARY_CLIP ? -0.5f : 0.1f;
	n->act_beta = 0.5f;
}

/* A random shape of rank nd with dims in [lo, hi]. */
static void
rnd_shape(int64_t *d, int nd, int lo, int hi)
{
	for (int i = 0; i < nd; i++)
		d[i] = rnd(lo, hi);
}

/* GEMM: transposes, alpha/beta, C broadcast, fused act. */
static void
case_gemm(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_GEMM, "Gemm");
	int64_t m = rnd(1, 70), k = rnd(1, 70), nn = rnd(1, 70), a[2], b[2], cd[2];
	int cs = (int)rnd(0, 4);

	n->attr.gemm.trans_a = (int)rnd(0, 1);
	n->attr.gemm.trans_b = (int)rnd(0, 1);
	n->attr.gemm.alpha = rndf(0.5f, 2.0f);
	n->attr.gemm.beta = rndf(0.5f, 2.0f);
	rnd_act(n);
	a[0] = n->attr.gemm.trans_a ? k : m;
	a[1] = n->attr.gemm.trans_a ? m : k;
	b[0] = n->attr.gemm.trans_b ? nn : k;
	b[1] = n->attr.gemm.trans_b ? k : nn;
	tc_in(&c, GRAPH_DT_F32, 2, a, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 2, b, FILL_F32, 0);
	cd[0] = cs == 2 ? m : 1;
	cd[1] = cs == 3 ? 1 : nn;
	if (cs == 1)
		tc_in(&c, GRAPH_DT_F32, 1, &nn, FILL_F32, 0);
	else if (cs >= 2)
		tc_in(&c, GRAPH_DT_F32, 2, cd, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* MATMUL: batched with broadcast batch dims, 1-D operands, bias and act. */
static void
case_matmul(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_MATMUL, "MatMul");
	int64_t m = rnd(1, 40), k = rnd(1, 40), nn = rnd(1, 40), b1 = rnd(1, 3), b2 = rnd(1, 4);
	int64_t a[4] = { b1, b2, m, k }, b[4] = { b2, k, nn }, bias = nn;
	int form = (int)rnd(0, 4);

	rnd_act(n);
	if (form == 0) {		/* [b1,b2,M,K] x [b2,K,N] */
		tc_in(&c, GRAPH_DT_F32, 4, a, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 3, b, FILL_F32, 0);
	} else if (form == 1) {	/* [b1,1,M,K] x [b2,K,N]: irregular broadcast */
		a[1] = 1;
		tc_in(&c, GRAPH_DT_F32, 4, a, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 3, b, FILL_F32, 0);
	} else if (form == 2) {	/* [b2,M,K] x [K,N] */
		tc_in(&c, GRAPH_DT_F32, 3, a + 1, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 2, b + 1, FILL_F32, 0);
	} else if (form == 3) {	/* [K] x [b2,K,N] */
		tc_in(&c, GRAPH_DT_F32, 1, &k, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 3, b, FILL_F32, 0);
	} else {		/* [b2,M,K] x [K] */
		tc_in(&c, GRAPH_DT_F32, 3, a + 1, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 1, &k, FILL_F32, 0);
		bias = 1;
	}
	if (rnd(0, 1))
		tc_in(&c, GRAPH_DT_F32, 1, &bias, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* A random window over ns spatial dims of in[]; returns 0 when the output would be empty. */
static int
rnd_window(struct graph_window_attr *w, int ns, const int64_t *in, int transpose)
{
	w->nspatial = ns;
	for (int i = 0; i < ns; i++) {
		w->kernel[i] = rnd(1, 3);
		w->stride[i] = rnd(1, 2);
		w->dilation[i] = rnd(1, 2);
		w->pad_begin[i] = rnd(0, w->kernel[i] - 1);
		w->pad_end[i] = rnd(0, w->kernel[i] - 1);
		w->output_padding[i] = transpose ? rnd(0, w->stride[i] - 1) : 0;
		if (!transpose && in[i] + w->pad_begin[i] + w->pad_end[i] < w->dilation[i] * (w->kernel[i] - 1) + 1)
			return 0;
	}
	return 1;
}

/* CONV / CONV_TRANSPOSE: 1-3 spatial dims, groups (depthwise too), strides, pads, dilations, bias, residual. */
static void
case_conv(int transpose)
{
	struct tc c;
	const char *forced = getenv("INFERD_CUDA_CONV");
	int im2col = forced != NULL && strcmp(forced, "im2col") == 0;
	struct graph_node *n = tc_init(&c, transpose ? GRAPH_OP_CONV_TRANSPOSE : GRAPH_OP_CONV,
	    transpose ? (im2col ? "ConvTranspose (im2col)" : "ConvTranspose") : (im2col ? "Conv (im2col)" : "Conv"));
	int ns = (int)rnd(1, 3) == 3 ? (int)rnd(1, 3) : 2, g;
	int64_t x[5], w[5], m, out[5], cnt;

	if (ns == 3)
		rnd_shape(x + 2, 3, 1, 6);
	else
		rnd_shape(x + 2, ns, 1, 14);
	x[0] = rnd(1, 3);
	g = (int)(rnd(0, 3) == 0 ? rnd(2, 4) : 1);
	x[1] = g * rnd(1, 4);
	if (!transpose && rnd(0, 4) == 0)
		g = (int)x[1];		/* depthwise */
	m = g * rnd(1, 4);
	if (!rnd_window(&n->attr.conv, ns, x + 2, transpose))
		return;
	n->attr.conv.group = g;
	w[0] = transpose ? x[1] : m;
	w[1] = transpose ? m / g : x[1] / g;
	for (int i = 0; i < ns; i++)
		w[2 + i] = n->attr.conv.kernel[i];
	if (!transpose)
		rnd_act(n);
	tc_in(&c, GRAPH_DT_F32, ns + 2, x, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, ns + 2, w, FILL_F32, 0);
	if (rnd(0, 1))
		tc_in(&c, GRAPH_DT_F32, 1, &m, FILL_F32, 0);
	else
		tc_omit(&c);
	if (!transpose && rnd(0, 2) == 0) {	/* residual Z of the output's shape */
		out[0] = x[0];
		out[1] = m;
		cnt = 1;
		for (int i = 0; i < ns; i++) {
			const struct graph_window_attr *a = &n->attr.conv;
			out[2 + i] = (x[2 + i] + a->pad_begin[i] + a->pad_end[i] - a->dilation[i] * (a->kernel[i] - 1) - 1) /
			    a->stride[i] + 1;
			cnt *= out[2 + i];
		}
		if (cnt > 0)
			tc_in(&c, GRAPH_DT_F32, ns + 2, out, FILL_F32, 0);
	}
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* UNARY: every function on a fitting domain. */
static void
case_unary(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_UNARY, "Unary");
	int64_t d[3];
	enum graph_unary fn = (enum graph_unary)rnd(0, GRAPH_UNARY_COUNT - 1);
	int pos = fn == GRAPH_UNARY_LOG || fn == GRAPH_UNARY_SQRT || fn == GRAPH_UNARY_RECIPROCAL;

	rnd_shape(d, 3, 1, 30);
	n->attr.unary.fn = fn;
	n->attr.unary.alpha = fn == GRAPH_UNARY_CLIP ? -0.3f : 0.2f;
	n->attr.unary.beta = 0.4f;
	tc_in(&c, GRAPH_DT_F32, 3, d, pos ? FILL_POS : FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* Broadcast partner of shape d (rank nd): some dims 1, maybe fewer dims. */
static int
rnd_bcast(const int64_t *d, int nd, int64_t *o)
{
	int k = (int)rnd(0, nd - 1), drop = nd - (int)rnd(1, nd);

	for (int i = drop; i < nd; i++)
		o[i - drop] = rnd(0, 2) == 0 ? 1 : d[i];
	(void)k;
	return nd - drop;
}

/*
 * BINARY (FP32 with act, integer; mode 2: a comparison, or And/Or/Xor on BOOL,
 * into BOOL) and PRELU (mode 1), with broadcasting.
 */
static void
case_binary(int mode)
{
	static const enum graph_binary bools[] = { GRAPH_BINARY_EQUAL, GRAPH_BINARY_GREATER, GRAPH_BINARY_LESS,
	    GRAPH_BINARY_GREATER_OR_EQUAL, GRAPH_BINARY_LESS_OR_EQUAL, GRAPH_BINARY_AND, GRAPH_BINARY_OR,
	    GRAPH_BINARY_XOR };
	int prelu = mode == 1;
	struct tc c;
	struct graph_node *n = tc_init(&c, prelu ? GRAPH_OP_PRELU : GRAPH_OP_BINARY, prelu ? "PRelu" : "Binary");
	int64_t a[4], b[4];
	int nd = (int)rnd(1, 4), nb, cmp;
	enum graph_binary fn = (enum graph_binary)rnd(0, GRAPH_BINARY_COUNT - 1);
	enum graph_dtype dt = prelu || rnd(0, 2) ? GRAPH_DT_F32 : rnd(0, 1) ? GRAPH_DT_I64 : GRAPH_DT_I32;
	enum fill fa, fb;

	rnd_shape(a, nd, 1, 12);
	if (dt == GRAPH_DT_F32 && rnd(0, 1))	/* rows of whole 16-byte vectors: the vector kernels */
		a[nd - 1] = 8 * rnd(1, 8);
	nb = rnd_bcast(a, nd, b);
	if ((dt != GRAPH_DT_F32 && fn == GRAPH_BINARY_POW) || graph_binary_out_bool(fn))
		fn = GRAPH_BINARY_MUL;
	if (mode == 2)
		fn = bools[rnd(0, 7)];
	if (graph_binary_is_logical(fn))
		dt = GRAPH_DT_BOOL;
	n->attr.binary.fn = fn;
	cmp = mode == 2;
	if (dt == GRAPH_DT_F32 && !cmp && !prelu)
		rnd_act(n);
	/* Comparisons get few distinct values (integral floats too), so ties occur. */
	fa = dt == GRAPH_DT_BOOL ? FILL_BOOL : fn == GRAPH_BINARY_POW ? FILL_POS :
	    dt == GRAPH_DT_F32 && !cmp ? FILL_F32 : FILL_INT;
	/* Float divisors stay away from 0; integer ones may be 0, which both backends define as giving 0. */
	fb = dt == GRAPH_DT_BOOL ? FILL_BOOL : fn == GRAPH_BINARY_DIV || (dt == GRAPH_DT_F32 &&
	    (fn == GRAPH_BINARY_MOD || fn == GRAPH_BINARY_FMOD)) ? FILL_AWAY0 :
	    dt == GRAPH_DT_F32 && !cmp ? FILL_F32 : FILL_INT;
	if (rnd(0, 1) && !prelu) {	/* the broadcast operand first */
		tc_in(&c, dt, nb, b, fa, cmp ? 2 : 5);
		tc_in(&c, dt, nd, a, fb, cmp ? 2 : 5);
	} else {
		tc_in(&c, dt, nd, a, fa, cmp ? 2 : 5);
		tc_in(&c, dt, nb, b, fb, cmp ? 2 : 5);
	}
	tc_out(&c, cmp ? GRAPH_DT_BOOL : dt);
	tc_run(&c);
}

/* SOFTMAX / LOGSOFTMAX on any axis. */
static void
case_softmax(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_SOFTMAX, "Softmax");
	int nd = (int)rnd(1, 4);
	int64_t d[4];

	rnd_shape(d, nd, 1, 20);
	if (rnd(0, 3) == 0)
		d[nd - 1] = rnd(500, 3000);
	else if (rnd(0, 2) == 0)	/* attention-length rows: the warp kernel's middle register counts */
		d[nd - 1] = rnd(21, 300);
	n->attr.softmax.axis = rnd(-nd, nd - 1);
	n->attr.softmax.log = (int)rnd(0, 1);
	tc_in(&c, GRAPH_DT_F32, nd, d, FILL_WIDE, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* A sequence length for an attention case: 77, 129 or 1 to 90 (lengths that are multiples of nothing). */
static int64_t
attention_len(void)
{
	int64_t pick[3] = { 77, 129, rnd(1, 90) };

	return pick[rnd(0, 2)];
}

/*
 * ATTENTION: leading dims [B, H] (or [B*H]), query and key lengths that are
 * multiples of nothing, head depth 64 or 128 (what cuDNN's fused attention
 * takes at fp16) or odd ones (which an fp16 plan runs in FP32), K given
 * transposed or not, a padding mask [B, 1, 1, Sk] of 0 / -10000 (every row
 * keeps at least its first key), a full [Sq, Sk] mask, or none.  A third of
 * the untransposed cases are seq-major (Q, K, V, output [B, S, H, D], the
 * heads' rows interleaved: strided cuDNN tensors at fp16/bf16, pointer-array
 * GEMMs in FP32).
 */
static void
case_attention(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_ATTENTION, "Attention");
	int64_t b = rnd(1, 3), h = rnd(1, 4), sq = attention_len(), sk = rnd(0, 1) ? sq : attention_len();
	int64_t depth[4] = { 64, 128, rnd(1, 40), rnd(65, 256) }, d = depth[rnd(0, 3)], dv = rnd(0, 2) ? d : rnd(1, 96);
	static int turn;
	/* K transposed on every other case, so both forms always run (on a GPU the transposed one is copied to
	 * [..., Sk, D] before cuDNN, which must never see K^T with Sk contiguous). */
	int kt = turn++ % 2, form = (int)rnd(0, 2), lead3 = rnd(0, 3) == 0, sm = !kt && !lead3 && rnd(0, 2) == 0;
	int64_t q[4] = { b, h, sq, d }, k[4] = { b, h, kt ? d : sk, kt ? sk : d }, v[4] = { b, h, sk, dv };
	int64_t pad[4] = { b, 1, 1, sk }, full[2] = { sq, sk };

	n->attr.attention.scale = (float)(1.0 / sqrt((double)d));
	n->attr.attention.k_transposed = kt;
	n->attr.attention.seq_major = sm;
	if (sm) {	/* [B, S, H, D] */
		int64_t qs[4] = { b, sq, h, d }, ks[4] = { b, sk, h, d }, vs[4] = { b, sk, h, dv };

		tc_in(&c, GRAPH_DT_F32, 4, qs, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 4, ks, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 4, vs, FILL_F32, 0);
	} else if (lead3) {	/* one leading dim, B*H */
		q[1] *= q[0]; k[1] *= k[0]; v[1] *= v[0];
		tc_in(&c, GRAPH_DT_F32, 3, q + 1, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 3, k + 1, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 3, v + 1, FILL_F32, 0);
		form = form == 1 ? 2 : form;
	} else {
		tc_in(&c, GRAPH_DT_F32, 4, q, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 4, k, FILL_F32, 0);
		tc_in(&c, GRAPH_DT_F32, 4, v, FILL_F32, 0);
	}
	if (form == 1)
		tc_in(&c, GRAPH_DT_F32, 4, pad, FILL_MASK, 0);
	else if (form == 2)
		tc_in(&c, GRAPH_DT_F32, 2, full, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* LAYERNORM over trailing axes, scale/bias full, scalar or omitted, with or without the fused residual. */
static void
case_layernorm(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_LAYERNORM, "LayerNorm");
	int nd = (int)rnd(1, 4), ax;
	int64_t d[4], len = 1, one = 1;

	rnd_shape(d, nd, 1, 24);
	ax = (int)rnd(0, nd - 1);
	for (int i = ax; i < nd; i++)
		len *= d[i];
	n->attr.norm.axis = ax - (rnd(0, 1) ? nd : 0);
	n->attr.norm.eps = 1e-5f;
	int resid = (int)rnd(0, 1);	/* the fused residual Add: input 3, X's shape */

	tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	for (int k = 0; k < 2; k++)
		if (rnd(0, 2) > 0)
			tc_in(&c, GRAPH_DT_F32, 1, rnd(0, 3) ? &len : &one, FILL_F32, 0);
		else if (k == 0 || resid)
			tc_omit(&c);
	if (resid)
		tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/*
 * LAYERNORM of transformer rows ([rows, hidden] or [n, seq, hidden]): hidden
 * sizes of whole 16-byte vectors up to the warp kernel's largest, and a few
 * beside (not a multiple of 8, or beyond it), full scale and bias, with or
 * without the fused residual.
 */
static void
case_layernorm_rows(void)
{
	static const int64_t hidden[] = { 64, 256, 384, 512, 768, 776, 1024, 2048, 770, 4096 };
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_LAYERNORM, "LayerNorm");
	int nd = (int)rnd(2, 3), resid = (int)rnd(0, 1);
	int64_t d[3], len;

	d[0] = rnd(1, 9);
	d[1] = rnd(1, 37);
	d[nd - 1] = len = hidden[rnd(0, (int64_t)(sizeof hidden / sizeof hidden[0]) - 1)];
	n->attr.norm.axis = -1;
	n->attr.norm.eps = 1e-12f;
	tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 1, &len, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 1, &len, FILL_F32, 0);
	if (resid)
		tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* BATCHNORM in inference form. */
static void
case_batchnorm(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_BATCHNORM, "BatchNorm");
	int nd = (int)rnd(2, 4);
	int64_t d[4];

	rnd_shape(d, nd, 1, 16);
	n->attr.norm.eps = 1e-5f;
	tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	for (int k = 0; k < 4; k++)
		tc_in(&c, GRAPH_DT_F32, 1, &d[1], k == 3 ? FILL_POS : FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* POOL: max/avg, ceil_mode, count_include_pad, dilations (max), global. */
static void
case_pool(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_POOL, "Pool");
	struct graph_pool_attr *a = &n->attr.pool;
	int ns = (int)rnd(1, 3);
	int64_t x[5];

	x[0] = rnd(1, 3);
	x[1] = rnd(1, 6);
	rnd_shape(x + 2, ns, 2, ns == 3 ? 7 : 15);
	a->kind = (enum graph_pool_kind)rnd(0, 1);
	a->global = rnd(0, 5) == 0;
	a->ceil_mode = (int)rnd(0, 1);
	a->count_include_pad = (int)rnd(0, 1);
	if (!a->global && !rnd_window(&a->w, ns, x + 2, 0))
		return;
	for (int i = 0; i < ns && a->kind == GRAPH_POOL_AVG; i++)
		a->w.dilation[i] = 1;
	tc_in(&c, GRAPH_DT_F32, ns + 2, x, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* INSTANCENORM and GROUPNORM (scale and bias per group or per channel) over ranks 2 to 4. */
static void
case_groupnorm(int instance)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, instance ? GRAPH_OP_INSTANCENORM : GRAPH_OP_GROUPNORM,
	    instance ? "InstanceNorm" : "GroupNorm");
	struct graph_groupnorm_attr *a = &n->attr.groupnorm;
	int nd = (int)rnd(2, 4);
	int64_t d[4], want;

	rnd_shape(d, nd, 1, 12);
	a->groups = instance ? 0 : rnd(1, 3);
	if (!instance)
		d[1] = a->groups * rnd(1, 4);
	a->eps = 1e-5f;
	a->per_channel = instance || (int)rnd(0, 1);
	want = a->per_channel ? d[1] : a->groups;
	tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 1, &want, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 1, &want, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* REDUCE of a random kind over a random axis set (or all), keepdims either way. */
static void
case_reduce(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_REDUCE, "Reduce");
	struct graph_reduce_attr *a = &n->attr.reduce;
	int nd = (int)rnd(1, 4);
	int64_t d[4];

	rnd_shape(d, nd, 1, 20);
	a->kind = (enum graph_reduce_kind)rnd(0, GRAPH_REDUCE_COUNT - 1);
	a->keepdims = (int)rnd(0, 1);
	for (int i = 0; i < nd; i++)
		if (rnd(0, 1))
			a->axes[a->naxes++] = i - (rnd(0, 1) ? nd : 0);
	/* A product of hundreds of values in [-1, 1] underflows FP16's range (an fp16 plan stores it): -1, 0, 1. */
	if (a->kind == GRAPH_REDUCE_PROD)
		tc_in(&c, GRAPH_DT_F32, nd, d, FILL_INT, 1);
	else
		tc_in(&c, GRAPH_DT_F32, nd, d, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* A data dtype for data-movement ops. */
static enum graph_dtype
rnd_data_dt(void)
{
	static const enum graph_dtype dts[] = { GRAPH_DT_F32, GRAPH_DT_F32, GRAPH_DT_I64, GRAPH_DT_F16, GRAPH_DT_U8 };

	return dts[rnd(0, 4)];
}

/* TRANSPOSE: a random permutation of rank 1 to 5. */
static void
case_transpose(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_TRANSPOSE, "Transpose");
	int nd = (int)rnd(1, 5);
	int64_t d[5];
	enum graph_dtype dt = rnd_data_dt();

	/* Half the cases keep the last dim, often a multiple of 8 (the wide-copy path: attention's heads). */
	int keep_last = nd > 1 && rnd(0, 1);

	rnd_shape(d, nd, 1, 9);
	if (keep_last && rnd(0, 1))
		d[nd - 1] = 8 * rnd(1, 8);
	n->attr.transpose.nperm = nd;
	for (int i = 0; i < nd; i++)
		n->attr.transpose.perm[i] = i;
	for (int i = nd - 1 - keep_last; i > 0; i--) {
		int j = (int)rnd(0, i);
		int64_t t = n->attr.transpose.perm[i];
		n->attr.transpose.perm[i] = n->attr.transpose.perm[j];
		n->attr.transpose.perm[j] = t;
	}
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_out(&c, dt);
	tc_run(&c);
}

/* CONCAT (several inputs) or SPLIT (several outputs) along a random axis. */
static void
case_concat_split(int split)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, split ? GRAPH_OP_SPLIT : GRAPH_OP_CONCAT, split ? "Split" : "Concat");
	int nd = (int)rnd(1, 4), ax, pieces = (int)rnd(1, 4);
	int64_t d[4], total = 0;
	enum graph_dtype dt = rnd_data_dt();
	static int64_t sizes[8];

	rnd_shape(d, nd, 1, 8);
	ax = (int)rnd(0, nd - 1);
	for (int k = 0; k < pieces; k++) {
		sizes[k] = rnd(1, 5);
		total += sizes[k];
	}
	if (split) {
		n->attr.split.axis = ax;
		n->attr.split.nsplit = pieces;
		n->attr.split.split = sizes;
		d[ax] = total;
		tc_in(&c, dt, nd, d, FILL_INT, 100);
		for (int k = 0; k < pieces; k++)
			tc_out(&c, dt);
	} else {
		n->attr.concat.axis = ax - (rnd(0, 1) ? nd : 0);
		for (int k = 0; k < pieces; k++) {
			d[ax] = sizes[k];
			tc_in(&c, dt, nd, d, FILL_INT, 100);
		}
		tc_out(&c, dt);
	}
	tc_run(&c);
}

/* SLICE: random starts/ends (past the ends too), negative steps. */
static void
case_slice(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_SLICE, "Slice");
	int nd = (int)rnd(1, 4);
	int64_t d[4];
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, nd, 1, 12);
	for (int i = 0; i < nd; i++) {
		if (rnd(0, 2) == 0)
			continue;
		int k = n->attr.slice.naxes++;
		n->attr.slice.axes[k] = i - (rnd(0, 1) ? nd : 0);
		n->attr.slice.steps[k] = rnd(0, 1) ? rnd(1, 3) : -rnd(1, 3);
		n->attr.slice.starts[k] = rnd(-d[i] - 2, d[i] + 2);
		n->attr.slice.ends[k] = rnd(-d[i] - 2, d[i] + 2);
	}
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_out(&c, dt);
	tc_run(&c);
}

/* GATHER: any axis, INT64/INT32 indices of rank 0 to 2, negative indices. */
static void
case_gather(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_GATHER, "Gather");
	int nd = (int)rnd(1, 3), ni = (int)rnd(0, 2), ax;
	int64_t d[3], id[2];
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, nd, 1, 10);
	rnd_shape(id, ni, 1, 6);
	ax = (int)rnd(0, nd - 1);
	n->attr.gather.axis = ax - (rnd(0, 1) ? nd : 0);
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_in(&c, rnd(0, 1) ? GRAPH_DT_I64 : GRAPH_DT_I32, ni, id, FILL_INDEX, d[ax]);
	tc_out(&c, dt);
	tc_run(&c);
}

/* GATHER_ELEMENTS: rank 1 to 4, any axis (negative too), INT64/INT32 indices with negative values. */
static void
case_gather_elements(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_GATHER_ELEMENTS, "GatherElements");
	int nd = (int)rnd(1, 4), ax = (int)rnd(0, nd - 1);
	int64_t d[4], id[4];
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, nd, 1, 10);
	if (rnd(0, 3) == 0)
		d[nd - 1] = rnd(200, 2000);
	for (int k = 0; k < nd; k++)
		id[k] = k == ax ? rnd(1, 12) : rnd(1, d[k]);
	n->attr.gather.axis = ax - (rnd(0, 1) ? nd : 0);
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_in(&c, rnd(0, 1) ? GRAPH_DT_I64 : GRAPH_DT_I32, nd, id, FILL_INDEX, d[ax]);
	tc_out(&c, dt);
	tc_run(&c);
}

/* EXPAND to a broadcast shape given as a constant. */
static void
case_expand(void)
{
	struct tc c;
	int nd = (int)rnd(1, 4), nb;
	int64_t d[4], x[4];
	enum graph_dtype dt = rnd_data_dt();

	tc_init(&c, GRAPH_OP_EXPAND, "Expand");
	rnd_shape(d, nd, 1, 8);
	nb = rnd_bcast(d, nd, x);
	tc_in(&c, dt, nb, x, FILL_INT, 100);
	tc_const_i64(&c, nd, d);
	tc_out(&c, dt);
	tc_run(&c);
}

/* PAD: constant (negative pads crop), reflect, edge. */
static void
case_pad(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_PAD, "Pad");
	int nd = (int)rnd(1, 4);
	int64_t d[4];
	enum graph_dtype dt = rnd(0, 2) ? GRAPH_DT_F32 : rnd_data_dt();

	rnd_shape(d, nd, 2, 8);
	n->attr.pad.mode = (enum graph_pad_mode)rnd(0, 2);
	n->attr.pad.npads = 2 * nd;
	n->attr.pad.value = rndf(-2.0f, 2.0f);
	for (int i = 0; i < 2 * nd; i++)
		n->attr.pad.pads[i] = n->attr.pad.mode == GRAPH_PAD_CONSTANT ? rnd(-1, 3) : rnd(0, d[i % nd] - 1);
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_out(&c, dt);
	tc_run(&c);
}

/* RESIZE: nearest/linear on the last 2 dims, every coordinate and rounding mode, scales or sizes. */
static void
case_resize(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_RESIZE, "Resize");
	struct graph_resize_attr *a = &n->attr.resize;
	static const float scales[] = { 0.5f, 0.75f, 1.0f, 1.5f, 2.0f, 3.0f };
	int64_t d[4];

	rnd_shape(d, 4, 1, 3);
	rnd_shape(d + 2, 2, 2, 12);
	a->mode = (enum graph_resize_mode)rnd(0, 1);
	a->coord = (int)rnd(0, 4);
	a->nearest = (int)rnd(0, 3);
	if (rnd(0, 1)) {
		a->nscales = 4;
		for (int i = 0; i < 4; i++)
			a->scales[i] = i < 2 ? 1.0f : scales[rnd(0, 5)];
	} else {
		a->nsizes = 4;
		for (int i = 0; i < 4; i++)
			a->sizes[i] = i < 2 ? d[i] : rnd(1, 20);
	}
	tc_in(&c, GRAPH_DT_F32, 4, d, FILL_F32, 0);
	tc_out(&c, GRAPH_DT_F32);
	tc_run(&c);
}

/* CAST between the graph dtypes (F16 included). */
static void
case_cast(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_CAST, "Cast");
	static const enum graph_dtype dts[] = { GRAPH_DT_F32, GRAPH_DT_F16, GRAPH_DT_I64, GRAPH_DT_I32, GRAPH_DT_I8,
		GRAPH_DT_U8, GRAPH_DT_BOOL };
	enum graph_dtype from = dts[rnd(0, 6)], to = dts[rnd(0, 6)];
	int64_t d[2];

	rnd_shape(d, 2, 1, 40);
	n->attr.cast.to = to;
	tc_in(&c, from, 2, d, from == GRAPH_DT_F32 ? FILL_WIDE : FILL_INT, 300);
	tc_out(&c, to);
	tc_run(&c);
}

/* WHERE with a broadcast condition and operands. */
static void
case_where(void)
{
	struct tc c;
	int nd = (int)rnd(1, 4), nc, nx;
	int64_t d[4], cd[4], xd[4];
	enum graph_dtype dt = rnd_data_dt();

	tc_init(&c, GRAPH_OP_WHERE, "Where");
	rnd_shape(d, nd, 1, 9);
	nc = rnd_bcast(d, nd, cd);
	nx = rnd_bcast(d, nd, xd);
	tc_in(&c, GRAPH_DT_BOOL, nc, cd, FILL_BOOL, 0);
	tc_in(&c, dt, nx, xd, FILL_INT, 100);
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_out(&c, dt);
	tc_run(&c);
}

/* COPY and RESHAPE (flatten) of any dtype. */
static void
case_copy(void)
{
	struct tc c;
	int reshape = (int)rnd(0, 1);
	struct graph_node *n = tc_init(&c, reshape ? GRAPH_OP_RESHAPE : GRAPH_OP_COPY, reshape ? "Reshape" : "Copy");
	int64_t d[3];
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, 3, 1, 10);
	if (reshape) {
		n->attr.reshape.kind = GRAPH_RESHAPE_FLATTEN;
		n->attr.reshape.axis = rnd(0, 2);
	}
	tc_in(&c, dt, 3, d, FILL_INT, 100);
	tc_out(&c, dt);
	tc_run(&c);
}

/*
 * A three-node graph with weights as constants and tensors between nodes:
 * Gemm(x, W, C) -> BatchNorm(scale, bias, mean, var) -> Softmax -> y.  At fp16
 * it takes the paths one-node cases cannot: weights converted to FP16 at
 * compile (Gemm), weights read in FP32 by an op run between casts
 * (BatchNorm), and FP16 intermediates in the planned memory.  Counted under Gemm.
 */
static void
case_chain(void)
{
	struct tc c;
	struct graph_node nodes[3];
	int64_t b = rnd(1, 9), k = rnd(1, 40), nn = rnd(2, 40), xd[2] = { b, k }, wd[2] = { k, nn };
	int x, w, cb, h1, h2, y, bn[4], in0[3], in1[5], in2[1], out0[1], out1[1], out2[1];

	tc_init(&c, GRAPH_OP_GEMM, "Chain Gemm>BatchNorm>Softmax");
	memset(nodes, 0, sizeof nodes);
	x = tc_tensor(&c, GRAPH_DT_F32, GRAPH_TENSOR_INPUT, 2, xd);
	c.fill[x] = FILL_F32;
	c.gin[c.g.ninputs++] = x;
	w = tc_const_f32(&c, 2, wd, FILL_F32);
	cb = tc_const_f32(&c, 1, &nn, FILL_F32);
	for (int j = 0; j < 4; j++)
		bn[j] = tc_const_f32(&c, 1, &nn, j == 3 ? FILL_POS : FILL_F32);
	h1 = tc_tensor(&c, GRAPH_DT_F32, 0, -1, NULL);
	h2 = tc_tensor(&c, GRAPH_DT_F32, 0, -1, NULL);
	y = tc_tensor(&c, GRAPH_DT_F32, GRAPH_TENSOR_OUTPUT, -1, NULL);
	c.gout[c.g.noutputs++] = y;
	in0[0] = x, in0[1] = w, in0[2] = cb, out0[0] = h1;
	nodes[0] = (struct graph_node){ .name = (char *)"gemm", .op = GRAPH_OP_GEMM, .ninputs = 3, .noutputs = 1,
	    .inputs = in0, .outputs = out0 };
	nodes[0].attr.gemm.alpha = nodes[0].attr.gemm.beta = 1.0f;
	rnd_act(&nodes[0]);
	in1[0] = h1, out1[0] = h2;
	for (int j = 0; j < 4; j++)
		in1[1 + j] = bn[j];
	nodes[1] = (struct graph_node){ .name = (char *)"bn", .op = GRAPH_OP_BATCHNORM, .ninputs = 5, .noutputs = 1,
	    .inputs = in1, .outputs = out1 };
	nodes[1].attr.norm.eps = 1e-5f;
	in2[0] = h2, out2[0] = y;
	nodes[2] = (struct graph_node){ .name = (char *)"softmax", .op = GRAPH_OP_SOFTMAX, .ninputs = 1,
	    .noutputs = 1, .inputs = in2, .outputs = out2 };
	nodes[2].attr.softmax.axis = -1;
	c.g.nodes = nodes;
	c.g.nnodes = 3;
	tc_run(&c);
}

/* PREDICATE: IsNaN, IsInf (either sign or one) on FP32 with NaN and infinities, Not on BOOL. */
static void
case_predicate(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_PREDICATE, "IsNaN/IsInf/Not");
	int nd = (int)rnd(1, 4);
	int64_t d[4];

	rnd_shape(d, nd, 1, 13);
	n->attr.pred.fn = (enum graph_predicate)rnd(0, 2);
	n->attr.pred.detect_pos = (int)rnd(0, 1);
	n->attr.pred.detect_neg = (int)rnd(0, 1);
	if (n->attr.pred.fn == GRAPH_PRED_NOT)
		tc_in(&c, GRAPH_DT_BOOL, nd, d, FILL_BOOL, 0);
	else
		tc_in(&c, GRAPH_DT_F32, nd, d, FILL_SPECIAL, 0);
	tc_out(&c, GRAPH_DT_BOOL);
	tc_run(&c);
}

/* TRILU: upper or lower, k an attribute or an INT64/INT32 input (past the matrix either way), odd sizes. */
static void
case_trilu(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_TRILU, "Trilu");
	int nd = (int)rnd(2, 4);
	int64_t d[4], one = 1;
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, nd, 1, 9);
	d[nd - 1] = rnd(1, 17);
	n->attr.trilu.upper = (int)rnd(0, 1);
	n->attr.trilu.k = rnd(-20, 20);
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	if (rnd(0, 1))
		tc_in(&c, rnd(0, 1) ? GRAPH_DT_I64 : GRAPH_DT_I32, 1, &one, FILL_INT, 12);
	tc_out(&c, dt);
	tc_run(&c);
}

/* CUMSUM: FP32/INT64/INT32, exclusive and reverse, the axis an attribute or an input (negative too). */
static void
case_cumsum(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_CUMSUM, "CumSum");
	static const enum graph_dtype dts[] = { GRAPH_DT_F32, GRAPH_DT_I64, GRAPH_DT_I32 };
	int nd = (int)rnd(1, 4);
	int64_t d[4], one = 1;
	enum graph_dtype dt = dts[rnd(0, 2)];

	rnd_shape(d, nd, 1, 9);
	if (rnd(0, 3) == 0)
		d[rnd(0, nd - 1)] = rnd(100, 700);
	n->attr.cumsum.axis = rnd(-nd, nd - 1);
	n->attr.cumsum.exclusive = (int)rnd(0, 1);
	n->attr.cumsum.reverse = (int)rnd(0, 1);
	tc_in(&c, dt, nd, d, dt == GRAPH_DT_F32 ? FILL_F32 : FILL_INT, 1000);
	if (rnd(0, 1))
		tc_in(&c, rnd(0, 1) ? GRAPH_DT_I64 : GRAPH_DT_I32, 1, &one, FILL_INDEX, nd);
	tc_out(&c, dt);
	tc_run(&c);
}

/* Index tuples of m over dims d (from dim first): the smallest of those dims bounds every index. */
static int64_t
nd_bound(const int64_t *d, int first, int64_t m)
{
	int64_t b = d[first];

	for (int64_t j = 1; j < m; j++)
		b = d[first + j] < b ? d[first + j] : b;
	return b;
}

/* GATHER_ND: batch_dims 0 to 2, tuples of 1 to the remaining rank, negative indices. */
static void
case_gather_nd(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_GATHER_ND, "GatherND");
	int nd = (int)rnd(1, 4), b = (int)rnd(0, nd - 1 < 2 ? nd - 1 : 2), ni = 0;
	int64_t d[4], id[GRAPH_MAX_DIMS], m;
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, nd, 1, 7);
	m = rnd(1, nd - b);
	for (int k = 0; k < b; k++)
		id[ni++] = d[k];
	for (int k = (int)rnd(0, 2); k > 0; k--)
		id[ni++] = rnd(1, 5);
	id[ni++] = m;
	n->attr.nd.batch_dims = b;
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	tc_in(&c, GRAPH_DT_I64, ni, id, FILL_INDEX, nd_bound(d, b, m));
	tc_out(&c, dt);
	tc_run(&c);
}

/* SCATTER_ND: every reduction (none on any dtype), tuples repeating often (small dims, many tuples). */
static void
case_scatter_nd(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_SCATTER_ND, "ScatterND");
	static const enum graph_dtype red_dts[] = { GRAPH_DT_F32, GRAPH_DT_I64, GRAPH_DT_I32 };
	int nd = (int)rnd(1, 4), ni = 0, nu = 0;
	int64_t d[4], id[GRAPH_MAX_DIMS], ud[GRAPH_MAX_DIMS], m;
	enum graph_scatter_reduce red = (enum graph_scatter_reduce)rnd(0, 4);
	enum graph_dtype dt = red == GRAPH_SCATTER_NONE ? rnd_data_dt() : red_dts[rnd(0, 2)];

	rnd_shape(d, nd, 1, 6);
	m = rnd(1, nd);
	for (int k = (int)rnd(1, 2); k > 0; k--) {
		id[ni++] = rnd(1, 9);
		ud[nu++] = id[ni - 1];
	}
	id[ni++] = m;
	for (int k = (int)m; k < nd; k++)
		ud[nu++] = d[k];
	n->attr.nd.reduce = red;
	tc_in(&c, dt, nd, d, FILL_INT, 20);
	tc_in(&c, GRAPH_DT_I64, ni, id, FILL_INDEX, nd_bound(d, 0, m));
	/* Products of repeated tuples stay within FP16's range (an fp16 plan stores the output in FP16). */
	tc_in(&c, dt, nu, ud, FILL_INT, red == GRAPH_SCATTER_MUL ? 1 : 20);
	tc_out(&c, dt);
	tc_run(&c);
}

/* TOPK: any axis, k 1 to the axis, largest or smallest, ties (integer-valued inputs), lines past the sort path. */
static void
case_topk(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_TOPK, "TopK");
	int nd = (int)rnd(1, 3), ax = (int)rnd(0, nd - 1);
	int64_t d[3];

	rnd_shape(d, nd, 1, 9);
	if (rnd(0, 3) == 0)
		d[ax] = rnd(0, 1) ? rnd(100, 4096) : rnd(4097, 12000);
	n->attr.topk.axis = ax - (rnd(0, 1) ? nd : 0);
	n->attr.topk.k = d[ax] > 40 && rnd(0, 1) ? rnd(1, 8) : rnd(1, d[ax]);
	n->attr.topk.largest = (int)rnd(0, 1);
	tc_in(&c, GRAPH_DT_F32, nd, d, rnd(0, 1) ? FILL_F32 : FILL_INT, 4);
	tc_out(&c, GRAPH_DT_F32);
	tc_out(&c, GRAPH_DT_I64);
	tc_run(&c);
}

/*
 * ARGMAX: ArgMax or ArgMin on FP32 (NaN and infinities in some), INT64 or
 * INT32 with many ties, any axis (negative too), keepdims, select_last_index;
 * long contiguous lines (the GPU's block-per-line path) in some.
 */
static void
case_argmax(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_ARGMAX, "ArgMax/ArgMin");
	static const enum graph_dtype dts[] = { GRAPH_DT_F32, GRAPH_DT_F32, GRAPH_DT_I64, GRAPH_DT_I32 };
	int nd = (int)rnd(1, 4), ax = (int)rnd(0, nd - 1);
	int64_t d[4];
	enum graph_dtype dt = dts[rnd(0, 3)];
	enum fill f = dt != GRAPH_DT_F32 ? FILL_INT : rnd(0, 2) == 0 ? FILL_SPECIAL : rnd(0, 1) ? FILL_F32 : FILL_INT;

	rnd_shape(d, nd, 1, 9);
	if (rnd(0, 2) == 0) {
		ax = nd - 1;
		d[ax] = rnd(200, 5000);
	}
	n->attr.argmax.axis = ax - (rnd(0, 1) ? nd : 0);
	n->attr.argmax.keepdims = (int)rnd(0, 1);
	n->attr.argmax.min = (int)rnd(0, 1);
	n->attr.argmax.last = (int)rnd(0, 1);
	tc_in(&c, dt, nd, d, f, 3);
	tc_out(&c, GRAPH_DT_I64);
	tc_run(&c);
}

/* TILE: ranks 1 to 5, repeats 0 to 3 in the node or a constant input, any data dtype. */
static void
case_tile(void)
{
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_TILE, "Tile");
	int nd = (int)rnd(1, 5);
	int64_t d[5], reps[5];
	enum graph_dtype dt = rnd_data_dt();

	rnd_shape(d, nd, 1, 6);
	for (int k = 0; k < nd; k++)
		reps[k] = rnd(0, 7) == 0 ? 0 : rnd(1, 3);
	tc_in(&c, dt, nd, d, FILL_INT, 100);
	n->attr.tile.nreps = -1;
	if (rnd(0, 1))
		tc_const_i64(&c, nd, reps);
	else {
		n->attr.tile.nreps = nd;
		memcpy(n->attr.tile.reps, reps, sizeof reps);
	}
	tc_out(&c, dt);
	tc_run(&c);
}

/* RNN attributes: ONNX's default activations, or a random one per slot with alpha/beta; clip; GRU/LSTM flags. */
static void
rnn_attrs(struct graph_rnn_attr *a)
{
	static const enum graph_rnn_act dflt[3][3] = {
		{ GRAPH_RNN_ACT_TANH }, { GRAPH_RNN_ACT_SIGMOID, GRAPH_RNN_ACT_TANH },
		{ GRAPH_RNN_ACT_SIGMOID, GRAPH_RNN_ACT_TANH, GRAPH_RNN_ACT_TANH } };
	int nact = a->cell == GRAPH_RNN_LSTM ? 3 : a->cell == GRAPH_RNN_GRU ? 2 : 1, any = rnd(0, 2) == 0;

	for (int dir = 0; dir < a->ndir; dir++)
		for (int k = 0; k < nact; k++) {
			a->act[dir * nact + k] = any ? (enum graph_rnn_act)rnd(0, GRAPH_RNN_ACT_COUNT - 1) :
			    dflt[a->cell][k];
			/* ThresholdedRelu jumps at alpha: TF32's rounding of the GEMMs may move a value across it. */
			if (precision == GRAPH_PRECISION_TF32 && a->act[dir * nact + k] == GRAPH_RNN_ACT_THRESHOLDED_RELU)
				a->act[dir * nact + k] = GRAPH_RNN_ACT_RELU;
			a->alpha[dir * nact + k] = rndf(0.1f, 1.0f);
			a->beta[dir * nact + k] = rndf(0.0f, 0.5f);
		}
	/* Unbounded activations (Affine, Relu, Softplus...) grow without bound over the steps: clip keeps them finite. */
	a->clip = any || rnd(0, 2) == 0 ? rndf(0.5f, 3.0f) : 0.0f;
	a->linear_before_reset = a->cell == GRAPH_RNN_GRU && rnd(0, 1);
	a->input_forget = a->cell == GRAPH_RNN_LSTM && rnd(0, 3) == 0;
}

/*
 * RNN, GRU, LSTM: forward, reverse or bidirectional; bias, sequence_lens
 * (0 to seq, a length 0 included), initial states and peepholes each present
 * or omitted; Y with Y_h (and Y_c) or alone.
 */
static void
case_rnn(int cell)
{
	static const char *labels[] = { "RNN", "GRU", "LSTM" };
	struct tc c;
	struct graph_node *n = tc_init(&c, GRAPH_OP_RNN, labels[cell]);
	struct graph_rnn_attr *a = &n->attr.rnn;
	int64_t t = rnd(1, 7), b = rnd(1, 5), in = rnd(1, 13), h = rnd(1, 17), gh, x[3], w[3], r[3], bd[2], sd[3], pd[2];
	int ninputs = cell == GRAPH_RNN_LSTM ? 8 : 6;

	a->cell = (enum graph_rnn_cell)cell;
	a->ndir = (int)rnd(1, 2);
	a->reverse = a->ndir == 1 && rnd(0, 1);
	a->hidden = h;
	rnn_attrs(a);
	gh = (cell == GRAPH_RNN_LSTM ? 4 : cell == GRAPH_RNN_GRU ? 3 : 1) * h;
	x[0] = t, x[1] = b, x[2] = in;
	w[0] = r[0] = bd[0] = sd[0] = pd[0] = a->ndir;
	w[1] = r[1] = gh, w[2] = in, r[2] = h;
	bd[1] = 2 * gh, sd[1] = b, sd[2] = h, pd[1] = 3 * h;
	tc_in(&c, GRAPH_DT_F32, 3, x, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 3, w, FILL_F32, 0);
	tc_in(&c, GRAPH_DT_F32, 3, r, FILL_F32, 0);
	for (int i = 3; i < ninputs; i++) {
		if (rnd(0, 2) == 0) {
			tc_omit(&c);
			continue;
		}
		if (i == 4)
			tc_in(&c, GRAPH_DT_I32, 1, &b, FILL_LEN, t);
		else
			tc_in(&c, GRAPH_DT_F32, i == 3 ? 2 : i == 7 ? 2 : 3, i == 3 ? bd : i == 7 ? pd : sd, FILL_F32, 0);
	}
	tc_out(&c, GRAPH_DT_F32);
	if (rnd(0, 3) != 0) {
		tc_out(&c, GRAPH_DT_F32);
		if (cell == GRAPH_RNN_LSTM)
			tc_out(&c, GRAPH_DT_F32);
	}
	tc_run(&c);
}

/* Print one line per op at the current precision: cases, largest error, its bound, mean microseconds of a plan run per backend. */
static void
print_stats(void)
{
	printf("precision %s (GPU) vs FP32 (CPU):\n", graph_precision_name(precision));
	printf("%-20s %6s %7s %12s %10s %12s %12s\n", "op", "cases", "skipped", "max err", "bound", "cpu us",
	    "gpu us");
	for (int op = 0; op < GRAPH_OP_COUNT; op++) {
		const struct op_stats *s = &all_stats[precision][op];
		if (s->cases == 0 && s->skipped == 0)
			continue;
		printf("%-20s %6d %7d %12.3g %10.0e %12.1f %12.1f\n", graph_op_name((enum graph_op)op), s->cases,
		    s->skipped, s->max_err, tol_for((enum graph_op)op), s->cases ? s->cpu_us / s->cases : 0.0,
		    s->cases ? s->gpu_us / s->cases : 0.0);
	}
}

/*
 * Open both backends and a compute stream on each; exit 77 without a GPU.
 * BACKEND_OPS_DEVICE names the second backend (default cuda:0); "cpu" checks
 * the case generators on a machine without a GPU (the comparison is then trivial).
 */
static void
open_backends(void)
{
	const char *second = getenv("BACKEND_OPS_DEVICE");
	char *cause = NULL;

	if (second == NULL || *second == '\0')
		second = "cuda:0";
	if (strncmp(second, "cuda", 4) == 0 && device_cuda_count() == 0) {
		printf("SKIP: no CUDA device (the CPU/GPU comparison needs a GPU)\n");
		exit(TEST_SKIP);
	}
	if (device_open("cpu", &cpu, &cause) != 0 || device_open(second, &gpu, &cause) != 0 ||
	    device_stream_create(cpu, DEVICE_STREAM_COMPUTE, &cpu_s, &cause) != 0 ||
	    device_stream_create(gpu, DEVICE_STREAM_COMPUTE, &gpu_s, &cause) != 0) {
		fprintf(stderr, "FAIL: opening the backends: %s\n", cause);
		exit(1);
	}
	printf("cpu: %s\ngpu: %s\n", device_name(cpu), device_name(gpu));
}

/* A fixed 3x3 convolution with bias and ReLU (one key for cuDNN's plan pool). */
static void
fixed_conv(struct tc *c)
{
	struct graph_node *n = tc_init(c, GRAPH_OP_CONV, "Conv (plan pool)");
	int64_t x[4] = { 2, 8, 16, 16 }, w[4] = { 16, 8, 3, 3 }, m = 16;

	n->attr.conv.nspatial = 2;
	n->attr.conv.group = 1;
	for (int i = 0; i < 2; i++) {
		n->attr.conv.kernel[i] = 3;
		n->attr.conv.stride[i] = 1;
		n->attr.conv.dilation[i] = 1;
		n->attr.conv.pad_begin[i] = 1;
		n->attr.conv.pad_end[i] = 1;
	}
	n->act = GRAPH_UNARY_RELU;
	tc_in(c, GRAPH_DT_F32, 4, x, FILL_F32, 0);
	tc_in(c, GRAPH_DT_F32, 4, w, FILL_F32, 0);
	tc_in(c, GRAPH_DT_F32, 1, &m, FILL_F32, 0);
	tc_out(c, GRAPH_DT_F32);
}

/* Idle cuDNN convolution plans in the process's pool (-1 without cuDNN). */
static long
plans_idle(void)
{
	struct device_info info;

	device_info(gpu, &info);
	return info.conv_plans_idle;
}

/*
 * cuDNN's plan pool (at fp32, on cuDNN's path): a compiled and freed
 * convolution leaves its plan in the pool, and compiling the same
 * convolution again takes that plan instead of building another.  Each
 * compile is also checked against the CPU backend, as every case is.
 */
static void
check_plan_pool(void)
{
	const char *pool = getenv("INFERD_CUDA_DNN_PLAN_POOL");
	long before = plans_idle(), once, twice;
	struct tc c;

	if (before < 0 || (pool != NULL && strcmp(pool, "0") == 0)) {
		printf("plan pool: not checked (%s)\n", before < 0 ? "built without cuDNN" : "INFERD_CUDA_DNN_PLAN_POOL=0");
		return;
	}
	fixed_conv(&c);
	tc_run(&c);
	once = plans_idle();
	fixed_conv(&c);
	tc_run(&c);
	twice = plans_idle();
	CHECK(once > before, "a compiled and freed convolution left no plan in the pool (%ld idle, then %ld)", before,
	    once);
	CHECK(twice == once, "compiling the same convolution again built another plan (%ld idle, then %ld)", once,
	    twice);
	printf("plan pool: %ld idle plans before, %ld after one compile, %ld after the same again\n", before, once,
	    twice);
}

/* Every op's cases at the current precision, the convolutions again on the im2col path; then the table. */
static void
run_precision(void)
{
	unsetenv("INFERD_CUDA_CONV");
	unsetenv("INFERD_CUDA_ATTENTION");
	for (int i = 0; i < CASES_PER_OP; i++) {
		case_gemm();
		case_matmul();
		case_conv(0);
		case_conv(1);
		case_unary();
		case_binary(0);
		case_binary(1);
		case_binary(2);
		case_softmax();
		case_attention();
		case_layernorm();
		case_layernorm_rows();
		case_batchnorm();
		case_pool();
		case_reduce();
		case_groupnorm(0);
		case_groupnorm(1);
		case_transpose();
		case_concat_split(0);
		case_concat_split(1);
		case_slice();
		case_gather();
		case_gather_elements();
		case_expand();
		case_pad();
		case_resize();
		case_cast();
		case_where();
		case_copy();
		case_chain();
		case_predicate();
		case_trilu();
		case_cumsum();
		case_gather_nd();
		case_scatter_nd();
		case_topk();
		case_argmax();
		case_tile();
		for (int cell = GRAPH_RNN_PLAIN; cell <= GRAPH_RNN_LSTM; cell++)
			case_rnn(cell);
	}
	/* The convolutions again on the im2col + cuBLAS path that builds without cuDNN use. */
	setenv("INFERD_CUDA_CONV", "im2col", 1);
	for (int i = 0; i < CASES_PER_OP; i++) {
		case_conv(0);
		case_conv(1);
	}
	unsetenv("INFERD_CUDA_CONV");
	/* Attention again on the cuBLAS + softmax path an FP16 plan takes where cuDNN has no engine. */
	setenv("INFERD_CUDA_ATTENTION", "cublas", 1);
	for (int i = 0; i < CASES_PER_OP; i++)
		case_attention();
	unsetenv("INFERD_CUDA_ATTENTION");
	print_stats();
}

int
main(void)
{
	const char *seed = getenv("BACKEND_OPS_SEED"), *only = getenv("BACKEND_OPS_PRECISION");
	int one = -1;

	if (seed != NULL && strtoull(seed, NULL, 0) != 0)
		rng = strtoull(seed, NULL, 0);
	if (only != NULL && *only != '\0' && graph_precision_parse(only, &one) != 0) {
		fprintf(stderr, "FAIL: BACKEND_OPS_PRECISION=%s: not fp32, tf32, fp16 or bf16\n", only);
		return 1;
	}
	printf("seed 0x%llx, %d cases per op and precision; bounds (normwise, FP32 outputs): fp32 %g; "
	    "tf32 %g GEMM/MatMul/Conv, %g others; fp16 %g GEMM/Conv/reductions/norms, %g element-wise and "
	    "data movement; bf16 %g and %g; other dtypes exact\n", (unsigned long long)rng, CASES_PER_OP, TOL_F32,
	    TOL_TF32_GEMM, TOL_F32, TOL_F16_GEMM, TOL_F16_EW, TOL_BF16_GEMM, TOL_BF16_EW);
	check_bf16_bound();
	if (test_failures != 0)		/* before open_backends, which skips without a GPU */
		return test_finish("test_backend_ops");
	open_backends();
	precision = GRAPH_PRECISION_FP32;
	unsetenv("INFERD_CUDA_CONV");
	check_plan_pool();
	for (precision = 0; precision < GRAPH_PRECISION_COUNT; precision++)
		if (one < 0 || one == precision)
			run_precision();
	precision = 0;
	device_stream_destroy(cpu_s);
	device_stream_destroy(gpu_s);
	device_close(cpu);
	device_close(gpu);
	return test_finish("test_backend_ops");
}
