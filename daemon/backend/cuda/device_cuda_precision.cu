/* device_cuda_precision.cu: a plan's precision: FP16 or BF16 storage of the FP32 tensors, the casts at the graph's edges, and FP32 islands for ops without such kernels. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda_impl.h"
#include "error.h"

/*
 * At fp16 every FP32 tensor of the graph is stored as F16, at bf16 as
 * bfloat16 (CUDA_DT_BF16); both are 2 bytes and take the same path, the
 * "reduced" storage: intermediates at their planned address (the planner
 * sized it for FP32, so 2 bytes fit), weights in reduced copies made here once
 * (shared between the plans compiled over the same uploaded weights), graph
 * inputs and outputs in reduced buffers of their own, filled from (written
 * to) the caller's FP32 tensors by cast steps at the start (end) of the plan.
 * Ops whose compilers take the reduced dtype run on it directly; any other op
 * runs in FP32 between casts, in scratch memory its step owns, reading weights
 * from their FP32 originals.  At fp32 and tf32 the stored dtypes and
 * addresses are the graph's own.
 */

/* Alignment of scratch pieces in a wrapped step's workspace. */
#define PREC_ALIGN 256

/* Parameters of a cast step (graph input in, graph output out). */
struct prec_cast {
	const void *x;
	void *y;
	enum graph_dtype xdt, ydt;
	int64_t n;
};

/* y = x from storage X to storage Y through float, rounding to nearest even. */
template <typename X, typename Y>
static __global__ void
prec_cast_kernel(const X *x, Y *y, int64_t n)
{
	CUDA_FOR(i, n)
		y[i] = cuda_st<Y>(cuda_ld(x[i]));
}

/* Queue a cast of n elements between F32 and a reduced storage (F16, CUDA_DT_BF16), either way. */
cudaError_t
cuda_launch_cast_f(cudaStream_t stream, const void *x, enum graph_dtype xdt, void *y, enum graph_dtype ydt,
    int64_t n)
{
	if (n == 0)
		return cudaSuccess;
	if (xdt == GRAPH_DT_F32)
		CUDA_STORE_DISPATCH(ydt, T, prec_cast_kernel<float, T><<<cuda_grid(n), CUDA_THREADS, 0, stream>>>(
		    (const float *)x, (T *)y, n));
	else
		CUDA_STORE_DISPATCH(xdt, T, prec_cast_kernel<T, float><<<cuda_grid(n), CUDA_THREADS, 0, stream>>>(
		    (const T *)x, (float *)y, n));
	return cudaGetLastError();
}

/* Run a cast step. */
static int
prec_cast_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct prec_cast *p = (const struct prec_cast *)st->p;
	cudaError_t err = cuda_launch_cast_f(ex->stream, p->x, p->xdt, p->y, p->ydt, p->n);

	if (err != cudaSuccess)
		return cuda_fail(cause, err, "prec_cast_kernel<<<>>>");
	return 0;
}

/* Append a cast step (node NULL: the plan inserted it). */
static int
prec_add_cast(struct cuda_step *steps, size_t *nsteps, const void *x, enum graph_dtype xdt, void *y,
    enum graph_dtype ydt, int64_t n, char **cause)
{
	struct cuda_step *st = &steps[*nsteps];
	struct prec_cast *p;

	if (n == 0)
		return 0;
	memset(st, 0, sizeof *st);
	if ((p = (struct prec_cast *)cuda_step_params(st, sizeof *p, cause)) == NULL)
		return -1;
	p->x = x;
	p->y = y;
	p->xdt = xdt;
	p->ydt = ydt;
	p->n = n;
	st->run = prec_cast_run;
	(*nsteps)++;
	return 0;
}

/* A device buffer of bytes (at least 1) owned by the plan's precision state. */
static void *
prec_alloc(struct cuda_prec *pr, size_t bytes, char **cause)
{
	void *d = NULL;
	cudaError_t err = CUDA_QUIET(cudaMalloc(&d, bytes ? bytes : 1));

	if (err != cudaSuccess) {
		cuda_fail(cause, err, "cudaMalloc(reduced-precision tensor, %zu bytes)", bytes);
		return NULL;
	}
	pr->owned[pr->nowned++] = d;
	pr->owned_bytes += bytes ? bytes : 1;
	return d;
}

/*
 * Reduced copies of weights, shared by every plan that converts the same FP32
 * device buffer (a model compiles one plan per batch size or shape, all over
 * the same uploaded weights), counted, freed with the last plan using them.
 * The FP32 buffer outlives every plan compiled over it, so its address names
 * its contents while an entry exists.
 */
struct prec_shared {
	int ordinal;
	const void *src;
	int64_t n;
	enum graph_dtype dt;		/* the copy's dtype: F16 or CUDA_DT_BF16 */
	void *copy;
	int refs;
	struct prec_shared *next;
};

static pthread_mutex_t prec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prec_shared *prec_cache;

/* A new entry: n FP32 elements at f32 converted to dt on the device (synchronously, at compile). */
static struct prec_shared *
prec_shared_new(int ordinal, const void *f32, int64_t n, enum graph_dtype dt, char **cause)
{
	struct prec_shared *e = (struct prec_shared *)calloc(1, sizeof *e);
	cudaError_t err;

	if (e == NULL) {
		error_set(cause, "out of memory");
		return NULL;
	}
	err = CUDA_QUIET(cudaMalloc(&e->copy, (size_t)(n > 0 ? n : 1) * 2));
	if (err == cudaSuccess)
		err = cuda_launch_cast_f(0, f32, GRAPH_DT_F32, e->copy, dt, n);
	if (err == cudaSuccess)
		err = cudaStreamSynchronize(0);
	if (err != cudaSuccess) {
		if (e->copy != NULL)
			(void)CUDA_QUIET(cudaFree(e->copy));
		free(e);
		cuda_fail(cause, err, "converting a weight to %s (%lld elements)", cuda_dtype_name(dt), (long long)n);
		return NULL;
	}
	e->ordinal = ordinal;
	e->src = f32;
	e->n = n;
	e->dt = dt;
	return e;
}

/* The dt copy of an uploaded FP32 weight (shared, counted; the plan releases it in cuda_prec_free). */
static void *
prec_weight(struct cuda_prec *pr, int ordinal, const void *f32, int64_t n, enum graph_dtype dt, char **cause)
{
	struct prec_shared *e;

	pthread_mutex_lock(&prec_lock);
	for (e = prec_cache; e != NULL; e = e->next)
		if (e->ordinal == ordinal && e->src == f32 && e->n == n && e->dt == dt)
			break;
	if (e == NULL && (e = prec_shared_new(ordinal, f32, n, dt, cause)) != NULL) {
		e->next = prec_cache;
		prec_cache = e;
		pr->new_weight_bytes += (size_t)(n > 0 ? n : 1) * 2;
	}
	if (e != NULL) {
		e->refs++;
		pr->weights[pr->nweights++] = e;
	}
	pthread_mutex_unlock(&prec_lock);
	return e != NULL ? e->copy : NULL;
}

/* Drop one reference to a shared weight; the last frees it. */
static void
prec_weight_release(struct prec_shared *e)
{
	struct prec_shared **pp;

	pthread_mutex_lock(&prec_lock);
	if (--e->refs == 0) {
		for (pp = &prec_cache; *pp != NULL && *pp != e; pp = &(*pp)->next)
			;
		if (*pp == e)
			*pp = e->next;
		(void)CUDA_QUIET(cudaFree(e->copy));
		free(e);
	}
	pthread_mutex_unlock(&prec_lock);
}

/* 1 when op n runs on reduced (F16, BF16) tensors itself (its compiler reads the stored dtypes). */
static int
prec_native(const struct graph_node *n)
{
	switch (n->op) {
	case GRAPH_OP_GEMM: case GRAPH_OP_MATMUL: case GRAPH_OP_CONV: case GRAPH_OP_CONV_TRANSPOSE:
	case GRAPH_OP_UNARY: case GRAPH_OP_BINARY: case GRAPH_OP_PRELU: case GRAPH_OP_WHERE: case GRAPH_OP_CAST:
	case GRAPH_OP_SOFTMAX: case GRAPH_OP_LAYERNORM: case GRAPH_OP_POOL:
	case GRAPH_OP_TRANSPOSE: case GRAPH_OP_RESHAPE: case GRAPH_OP_CONCAT: case GRAPH_OP_SPLIT:
	case GRAPH_OP_SLICE: case GRAPH_OP_GATHER: case GRAPH_OP_EXPAND: case GRAPH_OP_PAD: case GRAPH_OP_COPY:
	case GRAPH_OP_GATHER_ELEMENTS: case GRAPH_OP_TRILU: case GRAPH_OP_GATHER_ND:
	case GRAPH_OP_ATTENTION: case GRAPH_OP_TILE:
		return 1;
	case GRAPH_OP_SCATTER_ND:
		/* Byte-generic without a reduction; a reduction's arithmetic runs in FP32. */
		return n->attr.nd.reduce == GRAPH_SCATTER_NONE;
	default:
		return 0;
	}
}

/* 1 when a node that runs on reduced storage itself reads constant t (so t needs a reduced copy). */
static int
prec_native_weight(const graph_t *g, size_t t)
{
	for (size_t i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		for (int k = 0; k < n->ninputs; k++)
			if (n->inputs[k] == (int)t && prec_native(n))
				return 1;
	}
	return 0;
}

/* Whether tensor t is a graph input (role GRAPH_TENSOR_INPUT) or output, by its flags or the graph's lists. */
static int
prec_role(const graph_t *g, size_t t, unsigned role)
{
	int count = role == GRAPH_TENSOR_INPUT ? g->ninputs : g->noutputs;
	const int *list = role == GRAPH_TENSOR_INPUT ? g->inputs : g->outputs;

	if (g->tensors[t].flags & role)
		return 1;
	for (int k = 0; k < count; k++)
		if (list[k] == (int)t)
			return 1;
	return 0;
}

/* Store tensor t as dt (F16 or CUDA_DT_BF16): its reduced home, and the input cast when the graph fills it. */
static int
prec_tensor(struct cuda_prec *pr, const struct cuda_compile *cc, size_t t, void *const *addrs,
    enum graph_dtype dt, struct cuda_step *steps, size_t *nsteps, char **cause)
{
	const struct graph_tensor *gt = &cc->g->tensors[t];
	int64_t n = graph_shape_elems(&cc->shapes[t]);
	int in = prec_role(cc->g, t, GRAPH_TENSOR_INPUT), out = prec_role(cc->g, t, GRAPH_TENSOR_OUTPUT);

	pr->dtypes[t] = dt;
	if (gt->flags & GRAPH_TENSOR_CONST) {
		if (!prec_native_weight(cc->g, t))
			return 0;	/* read in FP32 by the ops that run in FP32 */
		pr->addrs[t] = prec_weight(pr, cc->ordinal, addrs[t], n, dt, cause);
		return pr->addrs[t] == NULL ? -1 : 0;
	}
	if (!in && !out)
		return 0;
	if ((pr->addrs[t] = prec_alloc(pr, (size_t)n * 2, cause)) == NULL)
		return -1;
	if (in)
		return prec_add_cast(steps, nsteps, addrs[t], GRAPH_DT_F32, pr->addrs[t], dt, n, cause);
	return 0;
}

/*
 * The storage of a plan's FP32 tensors at precision: F16 at fp16,
 * CUDA_DT_BF16 at bf16, F32 (the graph's own) otherwise.
 */
static enum graph_dtype
prec_store_dtype(int precision)
{
	return precision == GRAPH_PRECISION_FP16 ? GRAPH_DT_F16 : precision == GRAPH_PRECISION_BF16 ? CUDA_DT_BF16 :
	    GRAPH_DT_F32;
}

/* Stored dtypes and addresses of every tensor; at fp16/bf16, reduced homes and the input casts. */
int
cuda_prec_prepare(struct cuda_prec *pr, struct cuda_compile *cc, void *const *addrs,
    struct cuda_step *steps, size_t *nsteps, char **cause)
{
	const graph_t *g = cc->g;
	enum graph_dtype dt = prec_store_dtype(cc->precision);
	cudaError_t err;

	memset(pr, 0, sizeof *pr);
	if (cc->precision < GRAPH_PRECISION_FP32 || cc->precision >= GRAPH_PRECISION_COUNT)
		return error_set(cause, "unknown precision %d", cc->precision);
	pr->dtypes = (enum graph_dtype *)malloc((g->ntensors + 1) * sizeof *pr->dtypes);
	pr->addrs = (void **)malloc((g->ntensors + 1) * sizeof *pr->addrs);
	pr->owned = (void **)calloc(g->ntensors + 1, sizeof *pr->owned);
	pr->weights = (struct prec_shared **)calloc(g->ntensors + 1, sizeof *pr->weights);
	if (pr->dtypes == NULL || pr->addrs == NULL || pr->owned == NULL || pr->weights == NULL)
		return error_set(cause, "out of memory");
	for (size_t t = 0; t < g->ntensors; t++) {
		pr->dtypes[t] = g->tensors[t].dtype;
		pr->addrs[t] = addrs[t];
	}
	cc->dtypes = pr->dtypes;
	cc->addrs = pr->addrs;
	if (dt == GRAPH_DT_F32)
		return 0;
	/* The weights may have been uploaded by async copies on any stream; they must have landed before conversion. */
	if ((err = cudaDeviceSynchronize()) != cudaSuccess)
		return cuda_fail(cause, err, "cudaDeviceSynchronize (before converting weights to %s)",
		    graph_precision_name(cc->precision));
	for (size_t t = 0; t < g->ntensors; t++)
		if (g->tensors[t].dtype == GRAPH_DT_F32 && prec_tensor(pr, cc, t, addrs, dt, steps, nsteps, cause) != 0)
			return error_prefix(cause, "tensor '%s'", g->tensors[t].name ? g->tensors[t].name : "?");
	return 0;
}

/* The output casts, reduced home to the caller's FP32 tensor. */
int
cuda_prec_finish(const struct cuda_prec *pr, const struct cuda_compile *cc, void *const *addrs,
    struct cuda_step *steps, size_t *nsteps, char **cause)
{
	const graph_t *g = cc->g;
	enum graph_dtype dt = prec_store_dtype(cc->precision);

	if (dt == GRAPH_DT_F32)
		return 0;
	for (int k = 0; k < g->noutputs; k++) {
		int t = g->outputs[k];
		if (t < 0 || (size_t)t >= g->ntensors || g->tensors[t].dtype != GRAPH_DT_F32 ||
		    (g->tensors[t].flags & GRAPH_TENSOR_CONST))
			continue;
		/* An output listed twice is cast twice, harmlessly. */
		if (prec_add_cast(steps, nsteps, pr->addrs[t], dt, addrs[t], GRAPH_DT_F32,
		    graph_shape_elems(&cc->shapes[t]), cause) != 0)
			return -1;
	}
	return 0;
}

/* Free the reduced buffers and tables. */
void
cuda_prec_free(struct cuda_prec *pr)
{
	for (size_t i = 0; i < pr->nowned; i++)
		(void)CUDA_QUIET(cudaFree(pr->owned[i]));
	for (size_t i = 0; i < pr->nweights; i++)
		prec_weight_release(pr->weights[i]);
	(void)cudaGetLastError();
	free(pr->owned);
	free(pr->weights);
	free(pr->dtypes);
	free(pr->addrs);
	memset(pr, 0, sizeof *pr);
}

/* An op run in FP32 at fp16/bf16: its FP32 step, and the casts around it into and out of scratch. */
#define PREC_MAX_CASTS 64
struct prec_wrap {
	struct cuda_step inner;
	int nin, nout;
	struct prec_cast in[PREC_MAX_CASTS], out[PREC_MAX_CASTS];
};

/* Casts in, the FP32 step, casts out. */
static int
prec_wrap_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct prec_wrap *w = (const struct prec_wrap *)st->p;
	cudaError_t err;

	for (int i = 0; i < w->nin; i++)
		if ((err = cuda_launch_cast_f(ex->stream, w->in[i].x, w->in[i].xdt, w->in[i].y, GRAPH_DT_F32,
		    w->in[i].n)) != cudaSuccess)
			return cuda_fail(cause, err, "prec_cast_kernel<<<>>> (to FP32)");
	if (w->inner.run != NULL && w->inner.run(&w->inner, ex, cause) != 0)
		return -1;
	for (int i = 0; i < w->nout; i++)
		if ((err = cuda_launch_cast_f(ex->stream, w->out[i].x, GRAPH_DT_F32, w->out[i].y, w->out[i].ydt,
		    w->out[i].n)) != cudaSuccess)
			return cuda_fail(cause, err, "prec_cast_kernel<<<>>> (from FP32)");
	return 0;
}

/* Release the FP32 step's parameters and workspace. */
static void
prec_wrap_fini(struct cuda_step *st)
{
	struct prec_wrap *w = (struct prec_wrap *)st->p;

	if (w == NULL)
		return;
	if (w->inner.fini != NULL)
		w->inner.fini(&w->inner);
	free(w->inner.p);
	cuda_step_ws_free(&w->inner);
	memset(&w->inner, 0, sizeof w->inner);
}

/* 1 when tensor t is stored reduced for an FP32 graph tensor (it needs a cast around an FP32 op). */
static int
prec_is_lowered(const struct cuda_compile *cc, int t)
{
	return t >= 0 && cc->g->tensors[t].dtype == GRAPH_DT_F32 && cuda_dt_reduced(cc->dtypes[t]);
}

/* Scratch bytes for the node's lowered tensors in FP32 (each piece aligned). */
static size_t
prec_scratch_bytes(const struct cuda_compile *cc, const struct graph_node *n)
{
	size_t b = 0;

	for (int k = 0; k < n->ninputs + n->noutputs; k++) {
		int t = k < n->ninputs ? n->inputs[k] : n->outputs[k - n->ninputs];
		if (prec_is_lowered(cc, t) && !(cc->g->tensors[t].flags & GRAPH_TENSOR_CONST))
			b += ((size_t)graph_shape_elems(&cc->shapes[t]) * 4 + PREC_ALIGN - 1) / PREC_ALIGN * PREC_ALIGN;
	}
	return b;
}

/*
 * Point tensor t (k-th of the node, an output when out) at FP32 scratch in
 * the wrapped view, with its cast; a weight at its FP32 original instead.
 */
static void
prec_lower_one(const struct cuda_compile *cc, struct prec_wrap *w, int t, int out, void **addrs2,
    enum graph_dtype *dt2, char **scratch)
{
	int64_t n = graph_shape_elems(&cc->shapes[t]);
	struct prec_cast *c;

	if (dt2[t] == GRAPH_DT_F32)
		return;		/* listed twice */
	dt2[t] = GRAPH_DT_F32;
	if (cc->g->tensors[t].flags & GRAPH_TENSOR_CONST) {
		addrs2[t] = cc->graph_addrs[t];
		return;
	}
	addrs2[t] = *scratch;
	*scratch += ((size_t)n * 4 + PREC_ALIGN - 1) / PREC_ALIGN * PREC_ALIGN;
	c = out ? &w->out[w->nout++] : &w->in[w->nin++];
	c->x = out ? addrs2[t] : cc->addrs[t];
	c->y = out ? cc->addrs[t] : addrs2[t];
	c->xdt = out ? GRAPH_DT_F32 : cc->dtypes[t];
	c->ydt = out ? cc->dtypes[t] : GRAPH_DT_F32;
	c->n = n;
}

/* Compile n in FP32 between casts of its reduced-stored tensors. */
static int
prec_wrap_compile(const struct cuda_compile *cc, const struct graph_node *n, cuda_compile_fn fn,
    struct cuda_step *st, char **cause)
{
	size_t nt = cc->g->ntensors;
	struct cuda_compile cc2 = *cc;
	struct prec_wrap *w;
	void **addrs2;
	enum graph_dtype *dt2;
	char *scratch;
	int rc;

	if (n->ninputs > PREC_MAX_CASTS || n->noutputs > PREC_MAX_CASTS)
		return error_set(cause, "more than %d inputs or outputs to run in FP32", PREC_MAX_CASTS);
	if ((w = (struct prec_wrap *)cuda_step_params(st, sizeof *w, cause)) == NULL)
		return -1;
	st->fini = prec_wrap_fini;
	if (cuda_step_scratch(cc, st, prec_scratch_bytes(cc, n), cause) != 0)
		return -1;
	/* The FP32 step inside takes its own scratch past the island's. */
	cc2.ws_off = cc->ws_off + st->ws_bytes;
	addrs2 = (void **)malloc((nt + 1) * sizeof *addrs2);
	dt2 = (enum graph_dtype *)malloc((nt + 1) * sizeof *dt2);
	if (addrs2 == NULL || dt2 == NULL) {
		free(addrs2);
		free(dt2);
		return error_set(cause, "out of memory");
	}
	memcpy(addrs2, cc->addrs, nt * sizeof *addrs2);
	memcpy(dt2, cc->dtypes, nt * sizeof *dt2);
	scratch = (char *)st->ws;
	for (int k = 0; k < n->ninputs; k++)
		if (prec_is_lowered(cc, n->inputs[k]))
			prec_lower_one(cc, w, n->inputs[k], 0, addrs2, dt2, &scratch);
	for (int k = 0; k < n->noutputs; k++)
		if (prec_is_lowered(cc, n->outputs[k]))
			prec_lower_one(cc, w, n->outputs[k], 1, addrs2, dt2, &scratch);
	cc2.addrs = addrs2;
	cc2.dtypes = dt2;
	w->inner.n = n;
	rc = fn(&cc2, n, &w->inner, cause);
	free(addrs2);
	free(dt2);
	if (rc == 0 && w->inner.run != NULL)
		st->run = prec_wrap_run;
	return rc;
}

/* 1 when st runs its node in FP32 between casts (an FP16/BF16 plan's FP32 island). */
int
cuda_prec_step_island(const struct cuda_step *st)
{
	return st->run == prec_wrap_run;
}

/* Forget what a compiler that answered CUDA_COMPILE_FALLBACK set up (keeping the node). */
static void
prec_step_reset(struct cuda_step *st)
{
	const struct graph_node *n = st->n;

	cuda_step_clear(st);
	st->n = n;
}

/*
 * Compile n: as it is at fp32/tf32 or when it runs on its reduced storage itself, else (or
 * when its compiler answers CUDA_COMPILE_FALLBACK) wrapped in FP32.
 */
int
cuda_prec_compile_node(const struct cuda_compile *cc, const struct graph_node *n, cuda_compile_fn fn,
    struct cuda_step *st, char **cause)
{
	int rc;

	if (prec_store_dtype(cc->precision) == GRAPH_DT_F32)
		return fn(cc, n, st, cause);
	if (prec_native(n)) {
		if ((rc = fn(cc, n, st, cause)) != CUDA_COMPILE_FALLBACK)
			return rc;
		prec_step_reset(st);
		return prec_wrap_compile(cc, n, fn, st, cause);
	}
	for (int k = 0; k < n->ninputs + n->noutputs; k++)
		if (prec_is_lowered(cc, k < n->ninputs ? n->inputs[k] : n->outputs[k - n->ninputs]))
			return prec_wrap_compile(cc, n, fn, st, cause);
	return fn(cc, n, st, cause);
}
