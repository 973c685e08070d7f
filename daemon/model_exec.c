/* model_exec.c: one batch context: an arena laid out by the model's memory plan, its plans, graphs. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "cpu_kernels.h"
#include "error.h"
#include "graph_fold.h"
#include "graph_shape.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"

/* One compiled shape: its specialization (which owns the folded constants) and the plan over the arena. */
struct model_plan_entry {
	int valid;
	struct model_shape shape;	/* the key: zero beyond each input's ndims */
	struct graph_spec *spec;
	device_plan_t *plan;
	void **spec_consts;		/* GPU, fixed dims: device copies of the constants the specialization folded */
	device_graph_t *graph;		/* variable dims: the plan captured on its first run (NULL until then) */
	int settled;			/* its background work waited for (device_plan_settle): it may run */
	uint64_t used;			/* LRU time */
};

/* Alignment of each folded constant in a context's constants pool. */
#define MODEL_POOL_ALIGN 256

/* How an entry's plan takes its scratch: from the context's workspace, its own, or measure only. */
enum model_entry_mode { MODEL_ENTRY_SHARED, MODEL_ENTRY_OWN, MODEL_ENTRY_MEASURE };

/* Free one entry's plan, specialization and constants. */
static void
model_entry_clear(const model_t *m, struct model_plan_entry *e)
{
	size_t i;

	device_graph_destroy(e->graph);
	device_plan_free(e->plan);
	for (i = 0; e->spec_consts != NULL && i < m->graph->ntensors; i++)
		device_free(m->dev, e->spec_consts[i]);
	free(e->spec_consts);
	graph_spec_free(e->spec);
	memset(e, 0, sizeof *e);
}

/* Bytes the constants spec folded beyond the model's own take in a pool, each aligned. */
static size_t
model_folded_bytes(const model_t *m, const struct graph_spec *spec)
{
	const graph_t *g = &spec->graph;
	size_t i, b = 0;

	for (i = 0; i < g->ntensors; i++)
		if ((g->tensors[i].flags & GRAPH_TENSOR_CONST) && !(m->graph->tensors[i].flags & GRAPH_TENSOR_CONST))
			b += (g->tensors[i].nbytes + MODEL_POOL_ALIGN - 1) / MODEL_POOL_ALIGN * MODEL_POOL_ALIGN;
	return b;
}

/*
 * Variable dims on a GPU: copy e's folded constants into its slot of the
 * context's pool (sized at create for the largest shape; no allocation).
 * The slot's previous user has finished (the caller synchronised).
 */
static int
model_entry_pool_consts(model_exec_t *x, struct model_plan_entry *e, void **addrs, char **cause)
{
	const model_t *m = x->model;
	const graph_t *g = &e->spec->graph;
	size_t i, off = 0, need = model_folded_bytes(m, e->spec);
	char *slot = (char *)x->pool + (size_t)(e - x->plans) * x->pool_slot;

	if (need > x->pool_slot)
		return error_set(cause, "the constants folded at this shape take %zu bytes, more than the %zu planned at "
		    "the largest shape", need, x->pool_slot);
	for (i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *t = &g->tensors[i];
		if (!(t->flags & GRAPH_TENSOR_CONST) || (m->graph->tensors[i].flags & GRAPH_TENSOR_CONST))
			continue;
		addrs[i] = slot + off;
		if (t->nbytes > 0 && model_copy_sync(m->dev, addrs[i], t->data, t->nbytes, cause) != 0)
			return -1;
		off += (t->nbytes + MODEL_POOL_ALIGN - 1) / MODEL_POOL_ALIGN * MODEL_POOL_ALIGN;
	}
	return 0;
}

/* Addresses of the constants s folded beyond the model's own: in place on the CPU, on the device on a GPU. */
static int
model_entry_consts(model_exec_t *x, struct model_plan_entry *e, void **addrs, char **cause)
{
	const model_t *m = x->model;
	const graph_t *g = &e->spec->graph;
	size_t i;

	if (device_is_gpu(m->dev) && m->nvars > 0)
		return model_entry_pool_consts(x, e, addrs, cause);
	for (i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *t = &g->tensors[i];
		if (!(t->flags & GRAPH_TENSOR_CONST) || (m->graph->tensors[i].flags & GRAPH_TENSOR_CONST))
			continue;
		if (!device_is_gpu(m->dev)) {
			addrs[i] = (void *)t->data;
			continue;
		}
		if (e->spec_consts == NULL && (e->spec_consts = xcalloc(g->ntensors, sizeof *e->spec_consts)) == NULL)
			return error_set(cause, "out of memory");
		if (t->nbytes > 0 && model_upload(m->dev, t->data, t->nbytes, &e->spec_consts[i], cause) != 0)
			return -1;
		addrs[i] = e->spec_consts[i];
	}
	return 0;
}

/* Every constant output of the specialization fits the slot planned at the largest shape. */
static int
model_entry_const_outputs_fit(const model_t *m, const struct graph_spec *sp, char **cause)
{
	int o;

	for (o = 0; m->nconst_out > 0 && o < m->noutputs; o++) {
		const struct graph_tensor *t = &sp->graph.tensors[m->outputs[o].tensor];
		if (m->const_out[o] != SIZE_MAX && (!(t->flags & GRAPH_TENSOR_CONST) || t->nbytes > m->const_out_bytes[o]))
			return error_set(cause, "output '%s' outgrows the slot planned at the largest shape", t->name);
	}
	return 0;
}

/* Log (at debug) the constants a specialisation folded beyond the model's own: what its plan adds to memory. */
static void
model_entry_log_folded(const model_t *m, const struct graph_spec *sp, const struct graph_shape *in)
{
	const graph_t *g = &sp->graph;
	size_t i, n = 0, bytes = 0;
	char buf[128];

	if (log_threshold < LOG_LEVEL_DEBUG)
		return;
	for (i = 0; i < g->ntensors; i++)
		if ((g->tensors[i].flags & GRAPH_TENSOR_CONST) && !(m->graph->tensors[i].flags & GRAPH_TENSOR_CONST)) {
			n++;
			bytes += g->tensors[i].nbytes;
		}
	LOG_DEBUG("model '%s': the plan at input shape %s folded %zu constants of %zu bytes (%zu nodes)", m->name,
	    graph_shape_str(&in[0], buf, sizeof buf), n, bytes, sp->nfolded);
}

/*
 * Specialize the model for shape s and compile a plan over the context's
 * arena into e, its scratch as mode says; MODEL_ENTRY_MEASURE only measures
 * the workspace the plan would take (*need), leaving e empty.
 */
static int
model_entry_compile(model_exec_t *x, const struct model_shape *s, struct model_plan_entry *e,
    enum model_entry_mode mode, size_t *need, char **cause)
{
	const model_t *m = x->model;
	struct graph_shape in[MODEL_MAX_IO];
	void **addrs;
	int rc = -1;

	memset(e, 0, sizeof *e);
	e->shape = *s;
	model_graph_input_shapes(m, s, in);
	if ((addrs = xmalloc(m->graph->ntensors * sizeof *addrs)) == NULL)
		return error_set(cause, "out of memory");
	memcpy(addrs, x->addrs, m->graph->ntensors * sizeof *addrs);
	if (graph_specialize(m->graph, &cpu_fold_kernels, in, &e->spec, cause) == 0 &&
	    graph_plan_fits(&m->mem, &e->spec->graph, e->spec->shapes, cause) == 0 &&
	    model_entry_const_outputs_fit(m, e->spec, cause) == 0 &&
	    model_entry_consts(x, e, addrs, cause) == 0) {
		struct device_plan_options opts = { m->precision, x->background, model_batch_invariant(m) };

		model_entry_log_folded(m, e->spec, in);

		if (mode == MODEL_ENTRY_MEASURE)
			rc = device_plan_measure(m->dev, &e->spec->graph, &opts, e->spec->shapes, addrs, need, cause);
		else if (mode == MODEL_ENTRY_OWN)
			rc = device_plan_compile(m->dev, &e->spec->graph, &opts, e->spec->shapes, addrs, &e->plan, cause);
		else
			rc = device_plan_compile_shared(m->dev, &e->spec->graph, &opts, e->spec->shapes, addrs, x->ws,
			    x->ws_bytes, &e->plan, cause);
		e->valid = rc == 0 && mode != MODEL_ENTRY_MEASURE;
	}
	free(addrs);
	if (rc != 0 || mode == MODEL_ENTRY_MEASURE)
		model_entry_clear(m, e);
	return rc;
}

/* The output tensor t is, or -1. */
static int
model_output_of(const model_t *m, size_t t)
{
	int o;

	for (o = 0; o < m->noutputs; o++)
		if ((size_t)m->outputs[o].tensor == t)
			return o;
	return -1;
}

/* Point every tensor at its memory: planned tensors into the arena, constants where they were bound. */
static void
model_exec_bind(model_exec_t *x)
{
	const model_t *m = x->model;
	size_t i;

	for (i = 0; i < m->graph->ntensors; i++) {
		int o = model_output_of(m, i);
		if (o >= 0 && m->const_out[o] != SIZE_MAX)
			x->addrs[i] = (char *)x->arena + m->const_out[o];
		else if (m->graph->tensors[i].flags & GRAPH_TENSOR_CONST)
			x->addrs[i] = m->consts[i];
		else if (m->mem.offsets[i] != GRAPH_PLAN_NONE)
			x->addrs[i] = (char *)x->arena + m->mem.offsets[i];
		else
			x->addrs[i] = x->arena;	/* read and written by no node: an address only to satisfy the checks */
	}
}

/* Clear every cached plan and graph (the caller knows none is in flight). */
static void
model_exec_clear_plans(model_exec_t *x)
{
	int i;

	for (i = 0; i < x->nplans; i++)
		model_entry_clear(x->model, &x->plans[i]);
}

/*
 * After the plan for s failed to compile within the workspace: 1 when it
 * needs more, and the workspace has been grown to that and every plan
 * cleared (their steps hold the old address); 0 when it does not (its
 * failure is another, *cause kept); -1 on an error of its own.
 */
static int
model_exec_grow(model_exec_t *x, const struct model_shape *s, struct model_plan_entry *e, char **cause)
{
	const model_t *m = x->model;
	char *why = NULL;
	size_t need = 0;

	if (model_entry_compile(x, s, e, MODEL_ENTRY_MEASURE, &need, &why) != 0 || need <= x->ws_bytes) {
		free(why);
		return 0;
	}
	model_exec_clear_plans(x);
	if (x->ws != NULL)
		device_free(m->dev, x->ws);
	x->ws = NULL;
	x->ws_bytes = 0;
	if (device_alloc(m->dev, need, &x->ws, cause) != 0)
		return error_prefix(cause, "growing the shared workspace to %zu bytes", need);
	x->ws_bytes = need;
	return 1;
}

/*
 * The batch size a run of rows rows runs at.  On a GPU a batch runs at one
 * of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (powers of two and the points halfway
 * between) and the largest size, the next one up: its extra rows are
 * computed from whatever the arena holds and never read.  Rows are
 * independent (dynamic batching relies on it already), so every answer is
 * the same, at most half as many rows again computed, and a context
 * compiles and captures 12 sizes instead of 64 at the default max_batch_size
 * (with variable dims, 12 shapes per length instead of 64).  The CPU backend
 * runs every size as it is: its plans cost nothing to make.
 */
int
model_exec_rows_run(const model_exec_t *x, int rows)
{
	int b = 1, max = model_max_rows(x->model);

	if (!x->bucketed)
		return rows;
	while (b < rows)
		b = b < 2 ? 2 : (b & (b - 1)) == 0 ? b + b / 2 : b / 3 * 4;
	return b > max ? max : b;	/* the largest size, not the plan cache's slots (variable dims) */
}

/*
 * Compile a plan per batch size max..1 rows (models without variable dims;
 * on a GPU only the sizes model_exec_rows_run runs; on the CPU, whose sizes
 * are not bucketed, only 1 row now: a size's plan makes a oneDNN primitive
 * per convolution, a just-in-time compilation, and 64 sizes of a ResNet-50
 * took 8 s to load where onnxruntime makes its session in 0.3 s, so the other
 * sizes compile on their first batch; the workspace measure has prepared
 * every kernel at the largest size already).
 * Another size may need more workspace than the largest (its engines differ):
 * then the workspace grows and every size compiles again, all before any
 * graph is captured.
 */
static int
model_exec_fixed_plans(model_exec_t *x, char **cause)
{
	const model_t *m = x->model;
	struct model_shape s;
	int r, grown;

	for (r = x->nplans; r >= 1; r--) {
		if (model_exec_rows_run(x, r) != r || (!x->bucketed && r != 1))
			continue;
		model_shape_max(m, r, &s);
		if (model_entry_compile(x, &s, &x->plans[r - 1], MODEL_ENTRY_SHARED, NULL, cause) == 0)
			continue;
		if ((grown = model_exec_grow(x, &s, &x->plans[r - 1], cause)) == 0)
			return error_prefix(cause, "%d rows", r);
		if (grown < 0)
			return -1;
		r = x->nplans + 1;
	}
	return 0;
}

/*
 * The context's device memory beyond the arena, all of it now: on a GPU with
 * variable dims a pool for the constants each cached shape folds (a slot per
 * cache entry, sized at the largest shape); then one scratch workspace shared
 * by all its plans (on the CPU too: the kernels' im2col buffers), sized by
 * compiling the largest shape's plan once to measure it.  Plans for other
 * shapes choose engines within it.
 */
static int
model_exec_device_memory(model_exec_t *x, char **cause)
{
	const model_t *m = x->model;
	struct graph_shape in[MODEL_MAX_IO];
	struct graph_spec *spec = NULL;
	struct model_shape s;
	size_t need = 0;

	model_shape_max(m, model_max_rows(m), &s);
	if (m->nvars > 0 && device_is_gpu(m->dev)) {
		model_graph_input_shapes(m, &s, in);
		if (graph_specialize(m->graph, &cpu_fold_kernels, in, &spec, cause) != 0)
			return -1;
		x->pool_slot = model_folded_bytes(m, spec);
		graph_spec_free(spec);
		if (x->pool_slot > 0 && ((size_t)x->nplans > SIZE_MAX / x->pool_slot ||
		    device_alloc(m->dev, x->pool_slot * (size_t)x->nplans, &x->pool, cause) != 0))
			return error_prefix(cause, "the pool of folded constants (%d shapes of %zu bytes)", x->nplans,
			    x->pool_slot);
	}
	/* Slot 0 (empty yet, left empty): its pool slot holds the probe's folded constants. */
	if (model_entry_compile(x, &s, &x->plans[0], MODEL_ENTRY_MEASURE, &need, cause) != 0)
		return error_prefix(cause, "measuring the workspace at %d rows", s.rows);
	x->ws_bytes = need;
	if (need > 0 && device_alloc(m->dev, need, &x->ws, cause) != 0)
		return error_prefix(cause, "the shared workspace");
	return 0;
}

/* Variable dims on a GPU: compile the largest shape's plan into the cache now, so a model the device cannot run fails at load. */
static int
model_exec_first_plan(model_exec_t *x, char **cause)
{
	struct model_shape s;

	model_shape_max(x->model, model_max_rows(x->model), &s);
	if (model_entry_compile(x, &s, &x->plans[0], MODEL_ENTRY_SHARED, NULL, cause) != 0)
		return error_prefix(cause, "at the largest shape (%d rows)", s.rows);
	x->plans[0].used = ++x->clock;
	return 0;
}

/*
 * Variable dims on a GPU with padding on (model_padding.h): every batch runs
 * at a row size model_exec_rows_run gives and at a length bucket, so those
 * shapes are compiled now, the shortest lengths first, as many as the plan
 * cache holds: after the load no batch waits for a compile (a shape's graph
 * is still captured on its first run).
 */
static int
model_exec_warm_buckets(model_exec_t *x, char **cause)
{
	const model_t *m = x->model;
	struct model_shape s;
	int b, r, k, d, i = 1;

	if (!x->bucketed || m->nvars == 0 || !m->padding.on)
		return 0;
	for (b = 0; b < m->padding.nbuckets; b++)
		for (r = 1; r <= model_max_rows(m) && i < x->nplans; r++) {
			if (model_exec_rows_run(x, r) != r)
				continue;
			model_shape_max(m, r, &s);
			for (k = 0; k < m->ninputs; k++)
				for (d = 0; d < m->inputs[k].ndims; d++)
					if (m->inputs[k].var[d] == m->padding.var)
						s.dims[k][d] = m->padding.buckets[b];
			if (memcmp(&s, &x->plans[0].shape, sizeof s) == 0)
				continue;
			if (model_entry_compile(x, &s, &x->plans[i], MODEL_ENTRY_SHARED, NULL, cause) != 0)
				return error_prefix(cause, "compiling %d rows of length %lld", r, (long long)m->padding.buckets[b]);
			x->plans[i++].used = ++x->clock;
		}
	return 0;
}

/*
 * Before e's first run: wait for the engines its compile left to worker
 * threads (built side by side with every other plan's; one still queued is
 * built by this thread at once).  A plan whose engine could not be built is
 * compiled again without background work, which takes another way for it.
 */
static int
model_entry_settle(model_exec_t *x, struct model_plan_entry *e, char **cause)
{
	struct model_shape s;
	uint64_t used;
	int r;

	if (e->settled)
		return 0;
	if ((r = device_plan_settle(e->plan, cause)) < 0)
		return -1;
	if (r > 0) {
		s = e->shape;
		used = e->used;
		model_entry_clear(x->model, e);
		x->background = 0;
		r = model_entry_compile(x, &s, e, MODEL_ENTRY_SHARED, NULL, cause);
		x->background = 1;
		if (r != 0)
			return error_prefix(cause, "compiling %d rows again", s.rows);
		e->used = used;
	}
	e->settled = 1;
	return 0;
}

/* Settle every compiled plan (fixed dims: before any graph is captured from them). */
static int
model_exec_settle(model_exec_t *x, char **cause)
{
	int i;

	for (i = 0; i < x->nplans; i++)
		if (x->plans[i].valid && model_entry_settle(x, &x->plans[i], cause) != 0)
			return -1;
	return 0;
}

/* How many plans the context holds compiled. */
static int
model_exec_compiled(const model_exec_t *x)
{
	int i, n = 0;

	for (i = 0; i < x->nplans; i++)
		n += x->plans[i].valid;
	return n;
}

/* How many graphs the context holds captured. */
static int
model_exec_captured(const model_exec_t *x)
{
	int i, n = 0;

	for (i = 0; i < x->ngraphs; i++)
		n += x->graphs[i] != NULL;
	return n;
}

/* Bytes of a context's arena (never 0: a graph whose tensors are all constants still gets an address). */
static size_t
model_exec_arena_bytes(const model_t *m)
{
	return m->arena_bytes > 0 ? m->arena_bytes : 64;
}

/* Device bytes of the constants entry e's specialization folded and uploaded for itself (GPU, fixed dims). */
static uint64_t
model_entry_spec_bytes(const model_t *m, const struct model_plan_entry *e)
{
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; e->spec_consts != NULL && i < m->graph->ntensors; i++)
		if (e->spec_consts[i] != NULL)
			bytes += e->spec->graph.tensors[i].nbytes;
	return bytes;
}

/*
 * Count what the context holds once created: its arena (activations), its
 * shared workspace and what its plans allocated of their own (workspace),
 * the constants its shapes folded (the pool, or each plan's uploads) and the
 * FP16 weight copies its plans created (weights).
 */
static void
model_exec_tally(model_exec_t *x)
{
	const model_t *m = x->model;
	size_t own, half;
	int i;

	x->memory.activations = model_exec_arena_bytes(m);
	x->memory.workspace = x->ws_bytes;
	x->memory.weights = x->pool != NULL ? (uint64_t)x->pool_slot * (uint64_t)x->nplans : 0;
	for (i = 0; i < x->nplans; i++) {
		if (!x->plans[i].valid)
			continue;
		device_plan_memory(x->plans[i].plan, &own, &half);
		x->memory.workspace += own;
		x->memory.weights += half + model_entry_spec_bytes(m, &x->plans[i]);
	}
}

/*
 * Allocate a context's arena for the model's largest batch and compile its
 * plans: every bucket's when warm (a serving context), else only the
 * largest shape's, the rest on first use (a context of the load's checks,
 * which run a shape or two).  Fixed dims settle every plan now (graphs are
 * captured from them next); variable dims settle each plan on its first run,
 * so the engines of all buckets build side by side while the model serves.
 */
static int
model_exec_create_as(const model_t *m, int warm, model_exec_t **out, char **cause)
{
	uint64_t t0 = clock_now_us(), t1 = t0;
	model_exec_t *x;
	int rc;

	x = xcalloc(1, sizeof *x);
	if (x == NULL)
		return error_set(cause, "out of memory");
	x->model = m;
	x->nplans = m->nvars > 0 ? m->plan_cache : model_max_rows(m);
	x->bucketed = device_has_graphs(m->dev);
	x->addrs = xcalloc(m->graph->ntensors, sizeof *x->addrs);
	x->plans = xcalloc((size_t)x->nplans, sizeof *x->plans);
	if (x->addrs == NULL || x->plans == NULL)
		rc = error_set(cause, "out of memory");
	else
		rc = device_alloc(m->dev, model_exec_arena_bytes(m), &x->arena, cause);
	if (rc != 0)
		error_prefix(cause, "model '%s': allocating the batch arena", m->name);
	else {
		model_exec_bind(x);
		x->background = 1;
		rc = model_exec_device_memory(x, cause);
		t1 = clock_now_us();
		/*
		 * A lazy context's runs compile what they take (the serving contexts
		 * check the largest shape).  On the CPU the workspace measure above
		 * already prepared every kernel at the largest shape (all but
		 * oneDNN's primitives, which only a plan that runs makes): a serving
		 * context there compiles each shape on its first batch (BERT-base's
		 * largest, 64 x 512, cost 0.55 s of a 1.6 s load and may never come).
		 */
		if (rc == 0 && (m->nvars == 0 || (warm && x->bucketed)))
			rc = m->nvars == 0 ? model_exec_fixed_plans(x, cause) : model_exec_first_plan(x, cause);
		if (rc == 0 && warm)
			rc = model_exec_warm_buckets(x, cause);
		if (rc == 0 && m->nvars == 0)
			rc = model_exec_settle(x, cause);
		if (rc != 0)
			error_prefix(cause, "model '%s': compiling for the %s device", m->name, device_name(m->dev));
	}
	if (rc != 0) {
		model_exec_free(x);
		return -1;
	}
	model_exec_tally(x);
	LOG_DEBUG("model '%s': a %s context in %.3f s (workspace measured in %.3f s, %d plans compiled)", m->name,
	    warm ? "serving" : "checking", (double)(clock_now_us() - t0) / 1e6, (double)(t1 - t0) / 1e6,
	    model_exec_compiled(x));
	*out = x;
	return 0;
}

/* A serving context: every bucket compiled now. */
int
model_exec_create(const model_t *m, model_exec_t **out, char **cause)
{
	return model_exec_create_as(m, 1, out, cause);
}

/* A context for a check at load: the largest shape compiled now, any other on its first run. */
int
model_exec_create_lazy(const model_t *m, model_exec_t **out, char **cause)
{
	return model_exec_create_as(m, 0, out, cause);
}

/* Free a context (NULL is ignored). */
void
model_exec_free(model_exec_t *x)
{
	int i;

	if (x == NULL)
		return;
	for (i = 0; i < x->ngraphs; i++)
		device_graph_destroy(x->graphs[i]);
	free(x->graphs);
	free(x->graph_rows);
	if (x->plans != NULL)
		model_exec_clear_plans(x);
	free(x->plans);
	if (x->ws != NULL)
		device_free(x->model->dev, x->ws);
	if (x->pool != NULL)
		device_free(x->model->dev, x->pool);
	if (x->arena != NULL)
		device_free(x->model->dev, x->arena);
	free(x->addrs);
	free(x);
}

/* Where input i starts in the arena. */
void *
model_exec_input(model_exec_t *x, int i)
{
	if (i < 0 || i >= x->model->ninputs)
		return NULL;
	return x->addrs[x->model->inputs[i].tensor];
}

/* Where output o starts in the arena. */
void *
model_exec_output(model_exec_t *x, int o)
{
	if (o < 0 || o >= x->model->noutputs)
		return NULL;
	return x->addrs[x->model->outputs[o].tensor];
}

/* The cached entry for shape s, compiling it into the least recently used slot when missing. */
static int
model_exec_lookup(model_exec_t *x, const struct model_shape *s, device_stream_t *st, struct model_plan_entry **out,
    char **cause)
{
	struct model_plan_entry *victim = &x->plans[0];
	int i;

	for (i = 0; i < x->nplans; i++) {
		struct model_plan_entry *e = &x->plans[i];
		if (e->valid && e->shape.rows == s->rows && memcmp(e->shape.dims, s->dims, sizeof s->dims) == 0) {
			*out = e;
			return 0;
		}
		if (!e->valid || (victim->valid && e->used < victim->used))
			victim = e;
	}
	/* The victim's plan, graph and pool slot may still be in use by work queued on st. */
	if (victim->valid && device_stream_sync(st, cause) != 0)
		return -1;
	if (victim->valid)
		model_entry_clear(x->model, victim);
	if (model_entry_compile(x, s, victim, MODEL_ENTRY_SHARED, NULL, cause) != 0 &&
	    model_entry_compile(x, s, victim, MODEL_ENTRY_OWN, NULL, cause) != 0)
		return -1;
	*out = victim;
	return 0;
}

/* Copy the values of outputs that are constants for this shape into their slots. */
static int
model_exec_const_outputs(model_exec_t *x, const struct model_plan_entry *e, device_stream_t *st, char **cause)
{
	const model_t *m = x->model;
	int o;

	for (o = 0; m->nconst_out > 0 && o < m->noutputs; o++) {
		const struct graph_tensor *t = &e->spec->graph.tensors[m->outputs[o].tensor];
		if (m->const_out[o] == SIZE_MAX || t->nbytes == 0)
			continue;
		if (device_copy_h2d(st, (char *)x->arena + m->const_out[o], t->data, t->nbytes, cause) != 0)
			return -1;
	}
	return 0;
}

/* Capture e's plan on st into a graph (variable dims: on the shape's first run). */
static int
model_entry_capture(struct model_plan_entry *e, device_stream_t *st, char **cause)
{
	device_graph_t *g = NULL;
	int rc;

	/* Run once first: a first launch may load a kernel's module, not allowed while capturing (model_exec_capture). */
	if (device_plan_run(e->plan, st, cause) != 0 || device_stream_sync(st, cause) != 0)
		return error_prefix(cause, "running a plan before capturing it");
	if (device_graph_capture_begin(st, cause) != 0)
		return error_prefix(cause, "capturing a graph");
	rc = device_plan_run(e->plan, st, cause);
	/* End the capture even after a failure, so the stream is usable again. */
	if (device_graph_capture_end(st, &g, rc == 0 ? cause : NULL) != 0) {
		g = NULL;
		rc = -1;
	}
	if (rc != 0) {
		device_graph_destroy(g);
		return error_prefix(cause, "capturing a graph");
	}
	e->graph = g;
	return 0;
}

/* The plan for rows rows of a model without variable dims, compiled now if its size was left for first use. */
static int
model_exec_fixed_entry(model_exec_t *x, int rows, struct model_plan_entry **out, char **cause)
{
	struct model_plan_entry *e = &x->plans[rows - 1];
	struct model_shape s;

	if (!e->valid) {
		model_shape_max(x->model, rows, &s);
		if (model_entry_compile(x, &s, e, MODEL_ENTRY_SHARED, NULL, cause) != 0 ||
		    model_entry_settle(x, e, cause) != 0)
			return error_prefix(cause, "compiling %d rows", rows);
	}
	*out = e;
	return 0;
}

/* Queue the plan for shape s (already checked and normalised) on st. */
static int
model_exec_queue(model_exec_t *x, const struct model_shape *s, device_stream_t *st, char **cause)
{
	struct model_shape run = *s;
	struct model_plan_entry *e;

	run.rows = model_exec_rows_run(x, s->rows);
	if (x->model->nvars == 0) {
		if (model_exec_fixed_entry(x, run.rows, &e, cause) != 0)
			return -1;
	} else if (model_exec_lookup(x, &run, st, &e, cause) != 0 || model_entry_settle(x, e, cause) != 0)
		return -1;
	e->used = ++x->clock;
	if (x->model->nvars > 0 && run.rows <= x->lazy_graph_rows) {
		if (e->graph == NULL && model_entry_capture(e, st, cause) != 0)
			return -1;
		if (device_graph_launch(e->graph, st, cause) != 0)
			return -1;
	} else if (device_plan_run(e->plan, st, cause) != 0)
		return -1;
	return model_exec_const_outputs(x, e, st, cause);
}

/* Run the model: a captured graph when there is one for this size, else its plan. */
int
model_exec_run(model_exec_t *x, const struct model_shape *shape, device_stream_t *st, char **cause)
{
	const model_t *m = x->model;
	struct model_shape s;

	if (model_shape_normalise(m, shape, &s, cause) != 0)
		return error_prefix(cause, "model '%s'", m->name);
	if (s.rows <= x->ngraphs && x->graph_rows != NULL) {
		if (device_graph_launch(x->graphs[x->graph_rows[s.rows - 1] - 1], st, cause) != 0)
			return error_prefix(cause, "model '%s': %d rows", m->name, s.rows);
		return 0;
	}
	if (model_exec_queue(x, &s, st, cause) != 0)
		return error_prefix(cause, "model '%s'", m->name);
	return 0;
}

/* model_exec_run with every dim at its maximum. */
int
model_exec_run_rows(model_exec_t *x, int rows, device_stream_t *st, char **cause)
{
	struct model_shape s;

	model_shape_max(x->model, rows, &s);
	return model_exec_run(x, &s, st, cause);
}

/* Profile the plan model_exec_run_rows runs for rows rows (model.h), at the rows its graph pads to. */
int
model_exec_profile(model_exec_t *x, int rows, device_stream_t *st, struct device_step_time **out, size_t *n,
    int *ran_rows, char **cause)
{
	const model_t *m = x->model;
	struct model_shape want, s;
	struct model_plan_entry *e;

	model_shape_max(m, rows, &want);
	if (model_shape_normalise(m, &want, &s, cause) != 0)
		return error_prefix(cause, "model '%s'", m->name);
	if (s.rows <= x->ngraphs && x->graph_rows != NULL)
		s.rows = x->graph_rows[s.rows - 1];
	s.rows = model_exec_rows_run(x, s.rows);
	if (m->nvars == 0) {
		if (model_exec_fixed_entry(x, s.rows, &e, cause) != 0)
			return error_prefix(cause, "model '%s'", m->name);
	} else if (model_exec_lookup(x, &s, st, &e, cause) != 0 || model_entry_settle(x, e, cause) != 0)
		return error_prefix(cause, "model '%s'", m->name);
	e->used = ++x->clock;
	*ran_rows = s.rows;
	if (device_plan_profile(e->plan, st, out, n, cause) != 0)
		return error_prefix(cause, "model '%s': profiling %d rows", m->name, s.rows);
	return 0;
}

/* Launches of each graph timed when choosing; the median is kept. */
#define MODEL_TUNE_RUNS 5

/* Median device time of graph g over MODEL_TUNE_RUNS launches, in microseconds. */
static int
model_time_graph(device_graph_t *g, device_stream_t *s, device_event_t *a,
    device_event_t *b, double *us, char **cause)
{
	double t[MODEL_TUNE_RUNS], v;
	int i, j;

	for (i = 0; i < MODEL_TUNE_RUNS; i++) {
		if (device_event_record(a, s, cause) != 0 || device_graph_launch(g, s, cause) != 0 ||
		    device_event_record(b, s, cause) != 0 || device_event_sync(b, cause) != 0 ||
		    device_event_elapsed_us(a, b, &t[i], cause) != 0)
			return -1;
		for (j = i; j > 0 && t[j - 1] > t[j]; j--) {
			v = t[j];
			t[j] = t[j - 1];
			t[j - 1] = v;
		}
	}
	*us = t[MODEL_TUNE_RUNS / 2];
	return 0;
}

/* Let each size r run the fastest captured graph of r or more rows (layer models only: their ops are row-wise). */
static int
model_exec_choose(model_exec_t *x, device_stream_t *s, char **cause)
{
	device_event_t *a = NULL, *b = NULL;
	double *us, best;
	int r, rc = -1, n = x->ngraphs, rowwise = strcmp(x->model->platform, "inferd_mlp") == 0;

	us = xcalloc((size_t)n, sizeof *us);
	x->graph_rows = xcalloc((size_t)n, sizeof *x->graph_rows);
	if (us == NULL || x->graph_rows == NULL) {
		free(us);
		return error_set(cause, "out of memory");
	}
	/* Only a layer model may run a larger graph for fewer rows: the others need no timing. */
	if (rowwise && (device_event_create(x->model->dev, &a, cause) != 0 ||
	    device_event_create(x->model->dev, &b, cause) != 0))
		goto out;
	for (r = 0; rowwise && r < n; r++)
		if (x->graphs[r] != NULL && model_time_graph(x->graphs[r], s, a, b, &us[r], cause) != 0)
			goto out;
	/* From the largest size down, so each size knows the best at or above it (sizes not captured: that one). */
	x->graph_rows[n - 1] = n;
	best = us[n - 1];
	for (r = n - 1; r >= 1; r--) {
		if (x->graphs[r - 1] == NULL)
			x->graph_rows[r - 1] = x->graph_rows[r];
		else if (!rowwise || us[r - 1] <= best) {
			best = us[r - 1];
			x->graph_rows[r - 1] = r;
		} else
			x->graph_rows[r - 1] = x->graph_rows[r];
	}
	rc = 0;
out:
	device_event_destroy(a);
	device_event_destroy(b);
	free(us);
	return rc;
}

/*
 * The device's free memory now into *free_bytes; 0 when the backend cannot
 * tell.  Capturing allocates inside CUDA, out of reach of any counter, so the
 * graphs' memory is the free memory before minus after (at the driver's page
 * granularity; another model loading on the device at the same time blurs it).
 */
static int
model_exec_free_bytes(device_t *dev, size_t *free_bytes, char **cause)
{
	size_t total;
	int rc = device_memory_info(dev, free_bytes, &total, cause);

	if (rc == 1)
		*free_bytes = 0;
	return rc < 0 ? error_prefix(cause, "reading the device's free memory") : 0;
}

/* Capture one graph per batch size 1..max_rows, then choose which each size runs. */
int
model_exec_capture(model_exec_t *x, device_stream_t *s, int max_rows, char **cause)
{
	const model_t *m = x->model;
	struct model_shape sh;
	device_graph_t *g;
	size_t before, after;
	uint64_t t0 = clock_now_us(), t1;
	int rows, rc;

	if (!device_has_graphs(m->dev) || max_rows <= 0 || m->nconst_out > 0)
		return 0;
	if (max_rows > model_max_rows(m))
		max_rows = model_max_rows(m);
	max_rows = model_exec_rows_run(x, max_rows);
	if (m->nvars > 0) {
		/* Each exact shape is captured on its first run and cached with its plan. */
		x->lazy_graph_rows = max_rows;
		return 0;
	}
	if (model_exec_free_bytes(m->dev, &before, cause) != 0)
		return error_prefix(cause, "model '%s'", m->name);
	x->graphs = xcalloc((size_t)max_rows, sizeof *x->graphs);
	if (x->graphs == NULL)
		return error_set(cause, "out of memory");
	for (rows = 1; rows <= max_rows; rows++) {
		x->ngraphs = rows;
		if (model_exec_rows_run(x, rows) != rows)
			continue;
		g = NULL;
		model_shape_max(m, rows, &sh);
		/*
		 * Run once before capturing: a kernel's first launch may load its
		 * module (CUDA's lazy loading, cuBLAS picking a kernel for a new
		 * size), which is not allowed inside a capture while other streams
		 * work, as when a model is reloaded beside a serving version.
		 */
		if (model_exec_queue(x, &sh, s, cause) != 0 || device_stream_sync(s, cause) != 0)
			return error_prefix(cause, "model '%s': running %d rows before capturing them", m->name, rows);
		if (device_graph_capture_begin(s, cause) != 0)
			return error_prefix(cause, "model '%s': capturing %d rows", m->name, rows);
		rc = model_exec_queue(x, &sh, s, cause);
		/* End the capture even after a failure, so the stream is usable again. */
		if (device_graph_capture_end(s, &g, rc == 0 ? cause : NULL) != 0) {
			g = NULL;
			rc = -1;
		}
		if (rc != 0) {
			device_graph_destroy(g);
			return error_prefix(cause, "model '%s': capturing %d rows", m->name, rows);
		}
		x->graphs[rows - 1] = g;
	}
	t1 = clock_now_us();
	if (model_exec_choose(x, s, cause) != 0)
		return error_prefix(cause, "model '%s': timing its graphs", m->name);
	LOG_DEBUG("model '%s': %d graphs captured in %.3f s (chosen in %.3f s)", m->name, model_exec_captured(x),
	    (double)(t1 - t0) / 1e6, (double)(clock_now_us() - t1) / 1e6);
	if (model_exec_free_bytes(m->dev, &after, cause) != 0)
		return error_prefix(cause, "model '%s'", m->name);
	x->memory.graphs = before > after ? before - after : 0;
	return 0;
}
