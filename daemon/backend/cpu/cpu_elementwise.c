/* cpu_elementwise.c: unary functions and activations, broadcast binary ops, PRelu, Where. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cpu_kernels_impl.h"
#include "device_elementwise.h"

/* One value of fn. */
static inline float
act_one(float x, enum graph_unary fn, float a, float b)
{
	switch (fn) {
	case GRAPH_UNARY_NONE: return x;
	case GRAPH_UNARY_RELU: return x > 0.0f ? x : 0.0f;
	/* erfc, not 1 + erf: for x << 0 the sum cancels and loses every digit. */
	case GRAPH_UNARY_GELU: return 0.5f * x * erfcf(-x * (float)M_SQRT1_2);
	case GRAPH_UNARY_GELU_TANH:
		return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
	case GRAPH_UNARY_SIGMOID:
		/* Written so neither branch overflows exp. */
		if (x >= 0.0f)
			return 1.0f / (1.0f + expf(-x));
		return expf(x) / (1.0f + expf(x));
	case GRAPH_UNARY_TANH: return tanhf(x);
	case GRAPH_UNARY_LEAKY_RELU: return x >= 0.0f ? x : a * x;
	case GRAPH_UNARY_CLIP: return x < a ? a : (x > b ? b : x);
	case GRAPH_UNARY_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a * x + b));
	case GRAPH_UNARY_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
	case GRAPH_UNARY_EXP: return expf(x);
	case GRAPH_UNARY_LOG: return logf(x);
	case GRAPH_UNARY_SQRT: return sqrtf(x);
	case GRAPH_UNARY_NEG: return -x;
	case GRAPH_UNARY_RECIPROCAL: return 1.0f / x;
	case GRAPH_UNARY_ERF: return erff(x);
	case GRAPH_UNARY_ABS: return fabsf(x);
	case GRAPH_UNARY_CEIL: return ceilf(x);
	case GRAPH_UNARY_FLOOR: return floorf(x);
	case GRAPH_UNARY_ROUND: return rintf(x);
	default: return x;
	}
}

/* Whether fn is known. */
int
cpu_act_known(enum graph_unary fn)
{
	return (int)fn >= 0 && fn < GRAPH_UNARY_COUNT;
}

/* Elements per pass of the vectorised activations (a stack buffer, so y may be x). */
#define ACT_CHUNK 256

/*
 * y = fn(x) for the activations built on exp, tanh or erfc, through the
 * array functions (cpu_vmath.c); omp simd on the loops around them, which
 * GCC's cheapest vectoriser (-O2) left scalar: 5% of all-MiniLM-L6-v2's
 * batch on one thread went to GELU's two multiplications.
 */
CPU_HOT_LOOP static void
act_vector(float *y, const float *x, int64_t n, enum graph_unary fn)
{
	float t[ACT_CHUNK];

	for (int64_t lo = 0; lo < n; lo += ACT_CHUNK) {
		int64_t m = n - lo < ACT_CHUNK ? n - lo : ACT_CHUNK;
		const float *xs = x + lo;
		float *ys = y + lo;

		switch (fn) {
		case GRAPH_UNARY_SIGMOID:
			/* exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below. */
			#pragma omp simd
			for (int64_t i = 0; i < m; i++)
				t[i] = -fabsf(xs[i]);
			cpu_vexpf(t, t, m);
			#pragma omp simd
			for (int64_t i = 0; i < m; i++)
				ys[i] = (xs[i] >= 0.0f ? 1.0f : t[i]) / (1.0f + t[i]);
			break;
		case GRAPH_UNARY_GELU:
			/* erfc, not 1 + erf: for x << 0 the sum cancels and loses every digit. */
			#pragma omp simd
			for (int64_t i = 0; i < m; i++)
				t[i] = -xs[i] * (float)M_SQRT1_2;
			cpu_verfcf(t, t, m);
			#pragma omp simd
			for (int64_t i = 0; i < m; i++)
				ys[i] = 0.5f * xs[i] * t[i];
			break;
		case GRAPH_UNARY_GELU_TANH:
			#pragma omp simd
			for (int64_t i = 0; i < m; i++)
				t[i] = 0.7978845608028654f * (xs[i] + 0.044715f * xs[i] * xs[i] * xs[i]);
			cpu_vtanhf(t, t, m);
			#pragma omp simd
			for (int64_t i = 0; i < m; i++)
				ys[i] = 0.5f * xs[i] * (1.0f + t[i]);
			break;
		case GRAPH_UNARY_TANH: cpu_vtanhf(ys, xs, m); break;
		case GRAPH_UNARY_EXP: cpu_vexpf(ys, xs, m); break;
		default: cpu_verff(ys, xs, m); break;
		}
	}
}

/* y = fn(x) over n elements; the common activations get their own loops so they vectorise. */
static void
unary_span(float *y, const float *x, int64_t n, enum graph_unary fn, float a, float b)
{
	switch (fn) {
	case GRAPH_UNARY_NONE:
		if (y != x)
			memmove(y, x, (size_t)n * sizeof(float));
		return;
	/* omp simd: at -O2 GCC's cheapest vectoriser leaves loops of unknown length scalar. */
	case GRAPH_UNARY_RELU:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] > 0.0f ? x[i] : 0.0f;
		return;
	case GRAPH_UNARY_CLIP:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
		return;
	case GRAPH_UNARY_HARD_SIGMOID:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = fmaxf(0.0f, fminf(1.0f, a * x[i] + b));
		return;
	case GRAPH_UNARY_HARD_SWISH:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] * fmaxf(0.0f, fminf(1.0f, x[i] / 6.0f + 0.5f));
		return;
	case GRAPH_UNARY_LEAKY_RELU:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] >= 0.0f ? x[i] : a * x[i];
		return;
	case GRAPH_UNARY_SIGMOID: case GRAPH_UNARY_GELU: case GRAPH_UNARY_GELU_TANH: case GRAPH_UNARY_TANH:
	case GRAPH_UNARY_EXP: case GRAPH_UNARY_ERF:
		act_vector(y, x, n, fn);
		return;
	default:
		for (int64_t i = 0; i < n; i++)
			y[i] = act_one(x[i], fn, a, b);
	}
}

/* y = fn(x), in chunks over threads when large. */
static void
unary_apply(float *y, const float *x, int64_t n, enum graph_unary fn, float a, float b)
{
	int64_t chunk = 8192;

	if (!cpu_parallel(n)) {
		unary_span(y, x, n, fn, a, b);
		return;
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static)
	for (int64_t lo = 0; lo < n; lo += chunk)
		unary_span(y + lo, x + lo, n - lo < chunk ? n - lo : chunk, fn, a, b);
}

/* Activation in place. */
void
cpu_act_inplace(float *y, int64_t n, enum graph_unary fn, float alpha, float beta)
{
	if (fn != GRAPH_UNARY_NONE)
		unary_apply(y, y, n, fn, alpha, beta);
}

/* UNARY: y = fn(x), then the fused activation. */
int
cpu_unary_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_node *n = c->n;
	int64_t cnt = cpu_elems(cpu_in_shape(c, 0));

	if (cpu_elems(cpu_out_shape(c, 0)) != cnt)
		return cpu_fail(cause, "output has %lld elements, input %lld",
		    (long long)cpu_elems(cpu_out_shape(c, 0)), (long long)cnt);
	unary_apply(cpu_out(c, 0), cpu_in(c, 0), cnt, n->attr.unary.fn, n->attr.unary.alpha,
	    n->attr.unary.beta);
	cpu_act_inplace(cpu_out(c, 0), cnt, n->act, n->act_alpha, n->act_beta);
	return 0;
}

struct binary_arg {
	enum graph_binary fn;
	enum graph_dtype dt;
	void *y;
	const void *a, *b;
	enum graph_unary act;
	float alpha, beta;
};

/* Float span with the four usual fast loops, then the activation. */
static void
binary_span_f32(struct binary_arg *p, float *y, const float *a, int64_t sa, const float *b,
    int64_t sb, int64_t n)
{
	/*
	 * A broadcast first operand of Add or Mul (a squeeze-excitation block's
	 * scale * x) takes the loops of a broadcast second one: IEEE addition
	 * and multiplication commute exactly.
	 */
	if ((p->fn == GRAPH_BINARY_ADD || p->fn == GRAPH_BINARY_MUL) && !sa && sb) {
		const float *t = a;

		a = b;
		b = t;
		sa = sb;
		sb = 0;
	}
	/* omp simd: at -O2 GCC's cheapest vectoriser leaves loops of unknown length scalar. */
	if (p->fn == GRAPH_BINARY_ADD && sa && sb) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = a[i] + b[i];
	} else if (p->fn == GRAPH_BINARY_MUL && sa && sb) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = a[i] * b[i];
	} else if (p->fn == GRAPH_BINARY_ADD && sa && !sb) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = a[i] + b[0];
	} else if (p->fn == GRAPH_BINARY_MUL && sa && !sb) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = a[i] * b[0];
	} else {
		for (int64_t i = 0; i < n; i++)
			y[i] = device_binary_f32(p->fn, a[i * sa], b[i * sb]);
	}
	if (p->act != GRAPH_UNARY_NONE)
		unary_span(y, y, n, p->act, p->alpha, p->beta);
}

/* Element i of an integer or bool tensor as int64. */
static inline int64_t
load_int(enum graph_dtype dt, const void *p, int64_t i)
{
	switch (dt) {
	case GRAPH_DT_I64: return ((const int64_t *)p)[i];
	case GRAPH_DT_I32: return ((const int32_t *)p)[i];
	case GRAPH_DT_I8: return ((const int8_t *)p)[i];
	default: return ((const uint8_t *)p)[i];
	}
}

/* Comparison fn of a and b (any arithmetic type): 1 or 0; NaN compares false (not-equal is not an op). */
#define CMP_APPLY(fn, a, b) ((fn) == GRAPH_BINARY_EQUAL ? (a) == (b) : (fn) == GRAPH_BINARY_GREATER ? (a) > (b) : \
	(fn) == GRAPH_BINARY_LESS ? (a) < (b) : (fn) == GRAPH_BINARY_GREATER_OR_EQUAL ? (a) >= (b) : (a) <= (b))

/* A comparison (Equal, Greater, Less, GreaterOrEqual, LessOrEqual) over any dtype into BOOL. */
static void
binary_span_compare(struct binary_arg *p, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	uint8_t *y = (uint8_t *)p->y + yo;

	for (int64_t i = 0; i < n; i++) {
		int64_t ia = xo[0] + i * st[0], ib = xo[1] + i * st[1];

		if (p->dt == GRAPH_DT_F32) {
			float a = ((const float *)p->a)[ia], b = ((const float *)p->b)[ib];

			y[i] = CMP_APPLY(p->fn, a, b);
		} else if (p->dt == GRAPH_DT_F16) {
			float a = cpu_f16_to_f32(((const uint16_t *)p->a)[ia]);
			float b = cpu_f16_to_f32(((const uint16_t *)p->b)[ib]);

			y[i] = CMP_APPLY(p->fn, a, b);
		} else {
			int64_t a = load_int(p->dt, p->a, ia), b = load_int(p->dt, p->b, ib);

			y[i] = CMP_APPLY(p->fn, a, b);
		}
	}
}

/* And, Or, Xor over BOOL inputs (any nonzero byte is true) into BOOL. */
static void
binary_span_logical(struct binary_arg *p, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	uint8_t *y = (uint8_t *)p->y + yo;
	const uint8_t *a = (const uint8_t *)p->a + xo[0], *b = (const uint8_t *)p->b + xo[1];

	for (int64_t i = 0; i < n; i++)
		y[i] = p->fn == GRAPH_BINARY_AND ? a[i * st[0]] && b[i * st[1]] :
		    p->fn == GRAPH_BINARY_OR ? a[i * st[0]] || b[i * st[1]] : !a[i * st[0]] != !b[i * st[1]];
}

/* One span of a binary op, by dtype. */
static void
binary_span(void *arg, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	struct binary_arg *p = arg;

	if (graph_binary_is_logical(p->fn)) {
		binary_span_logical(p, yo, xo, st, n);
	} else if (graph_binary_is_compare(p->fn)) {
		binary_span_compare(p, yo, xo, st, n);
	} else if (p->dt == GRAPH_DT_F32) {
		binary_span_f32(p, (float *)p->y + yo, (const float *)p->a + xo[0], st[0],
		    (const float *)p->b + xo[1], st[1], n);
	} else if (p->dt == GRAPH_DT_I64) {
		int64_t *y = (int64_t *)p->y + yo;

		for (int64_t i = 0; i < n; i++)
			y[i] = device_binary_i64(p->fn, load_int(p->dt, p->a, xo[0] + i * st[0]),
			    load_int(p->dt, p->b, xo[1] + i * st[1]));
	} else {
		int32_t *y = (int32_t *)p->y + yo;

		for (int64_t i = 0; i < n; i++)
			y[i] = (int32_t)device_binary_i64(p->fn, load_int(p->dt, p->a, xo[0] + i * st[0]),
			    load_int(p->dt, p->b, xo[1] + i * st[1]));
	}
}

/* BINARY: y = act(a fn b) with broadcasting. */
int
cpu_binary_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *in[2] = { cpu_in_shape(c, 0), cpu_in_shape(c, 1) };
	struct binary_arg p = { c->n->attr.binary.fn, cpu_in_dtype(c, 0), cpu_out(c, 0), cpu_in(c, 0),
	    cpu_in(c, 1), c->n->act, c->n->act_alpha, c->n->act_beta };
	struct cpu_bcast b;

	if (cpu_bcast_init(&b, cpu_out_shape(c, 0), in, 2, cause) != 0)
		return -1;
	cpu_bcast_run(&b, binary_span, &p);
	return 0;
}

/* One PRelu span: y = x < 0 ? slope x : x. */
static void
prelu_span(void *arg, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	struct binary_arg *p = arg;
	float *y = (float *)p->y + yo;
	const float *x = (const float *)p->a + xo[0], *s = (const float *)p->b + xo[1];

	for (int64_t i = 0; i < n; i++) {
		float v = x[i * st[0]];

		y[i] = v < 0.0f ? s[i * st[1]] * v : v;
	}
}

/* PRELU: slope broadcast onto x. */
int
cpu_prelu_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *in[2] = { cpu_in_shape(c, 0), cpu_in_shape(c, 1) };
	struct binary_arg p = { .y = cpu_out(c, 0), .a = cpu_in(c, 0), .b = cpu_in(c, 1) };
	struct cpu_bcast b;

	if (cpu_bcast_init(&b, cpu_out_shape(c, 0), in, 2, cause) != 0)
		return -1;
	cpu_bcast_run(&b, prelu_span, &p);
	return 0;
}

struct where_arg {
	size_t esize;
	char *y;
	const uint8_t *cond;
	const char *x, *z;
};

/* One Where span, byte-generic. */
static void
where_span(void *arg, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	struct where_arg *p = arg;
	size_t es = p->esize;

	for (int64_t i = 0; i < n; i++) {
		const char *src = p->cond[xo[0] + i * st[0]] ?
		    p->x + (size_t)(xo[1] + i * st[1]) * es : p->z + (size_t)(xo[2] + i * st[2]) * es;

		memcpy(p->y + (size_t)(yo + i) * es, src, es);
	}
}

/* WHERE: y = cond ? x : z with broadcasting, any dtype. */
int
cpu_where_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *in[3] = { cpu_in_shape(c, 0), cpu_in_shape(c, 1), cpu_in_shape(c, 2) };
	struct where_arg p = { cpu_dtype_size(cpu_out_dtype(c, 0)), cpu_out(c, 0), cpu_in(c, 0),
	    cpu_in(c, 1), cpu_in(c, 2) };
	struct cpu_bcast b;

	if (cpu_bcast_init(&b, cpu_out_shape(c, 0), in, 3, cause) != 0)
		return -1;
	cpu_bcast_run(&b, where_span, &p);
	return 0;
}
