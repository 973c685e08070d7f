/* graph_plan.c: liveness of every computed tensor and a best-fit layout of all of them in one arena. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_plan.h"

#define PLAN_UNSEEN INT64_MAX

/* Liveness and layout state: one lifetime per tensor, one slot per alias group (its root). */
struct plan_state {
	const graph_t *g;
	int64_t *start, *end;	/* first writer, last reader (node indices; -1 = before the first) */
	int *root;		/* alias group of each tensor */
	int *order;		/* group roots in placement order */
	size_t nitems;
	size_t *size, *gsize, *offset;	/* per tensor: own bytes; per root: group bytes and offset */
};

/* Bytes of tensor t at shape s, rounded up to alignment; -1 with *cause when impossible. */
static int
plan_bytes(const graph_t *g, int t, const struct graph_shape *s, size_t alignment, size_t *out,
    char **cause)
{
	size_t n = graph_dtype_size(g->tensors[t].dtype), elems = 1;
	int k;

	if (n == 0 || s->ndims < 0 || s->ndims > GRAPH_MAX_DIMS)
		return error_set(cause, "tensor %s: no valid shape or type to plan", g->tensors[t].name);
	for (k = 0; k < s->ndims; k++) {
		if (s->dims[k] < 0)
			return error_set(cause, "tensor %s: dim %d is %lld", g->tensors[t].name, k,
			    (long long)s->dims[k]);
		if (s->dims[k] > 0 && elems > SIZE_MAX / (size_t)s->dims[k])
			return error_set(cause, "tensor %s: size overflows", g->tensors[t].name);
		elems *= (size_t)s->dims[k];
	}
	if (elems > (SIZE_MAX - alignment) / n)
		return error_set(cause, "tensor %s: size overflows", g->tensors[t].name);
	*out = (elems * n + alignment - 1) & ~(alignment - 1);
	return 0;
}

/* Whether t lives in the arena (not a constant). */
static int
plan_is_arena(const graph_t *g, int t)
{
	return t >= 0 && !(g->tensors[t].flags & GRAPH_TENSOR_CONST);
}

/* Record when each non-constant tensor is first written and last read; -1 on a malformed graph. */
static int
plan_liveness(struct plan_state *st, char **cause)
{
	const graph_t *g = st->g;
	const struct graph_node *node;
	size_t k;
	int i, t;

	for (i = 0; i < g->ninputs; i++)
		if (plan_is_arena(g, g->inputs[i]))
			st->start[g->inputs[i]] = st->end[g->inputs[i]] = -1;
	for (k = 0; k < g->nnodes; k++) {
		node = &g->nodes[k];
		for (i = 0; i < node->ninputs; i++) {
			if (!plan_is_arena(g, t = node->inputs[i]))
				continue;
			if (st->start[t] == PLAN_UNSEEN)
				return error_set(cause, "node %s reads tensor %s before anything writes it",
				    node->name, g->tensors[t].name);
			st->end[t] = (int64_t)k;
		}
		for (i = 0; i < node->noutputs; i++)
			if (plan_is_arena(g, t = node->outputs[i]) && st->start[t] == PLAN_UNSEEN)
				st->start[t] = st->end[t] = (int64_t)k;
	}
	/* Inputs stay intact for the whole run, so a plan or captured graph can be run again on the same
	 * input (graph timing at start-up, warm-up, a re-run after a failed copy-out) without re-copying it. */
	for (i = 0; i < g->ninputs; i++)
		if (plan_is_arena(g, g->inputs[i]))
			st->end[g->inputs[i]] = (int64_t)g->nnodes;
	for (i = 0; i < g->noutputs; i++) {
		if (!plan_is_arena(g, t = g->outputs[i]))
			continue;
		if (st->start[t] == PLAN_UNSEEN)
			return error_set(cause, "graph output %s is never written", g->tensors[t].name);
		st->end[t] = (int64_t)g->nnodes;
	}
	return 0;
}

/* The root of t's alias group. */
static int
plan_find(const struct plan_state *st, int t)
{
	while (st->root[t] != t)
		t = st->root[t];
	return t;
}

/* Let each reshape whose input dies at it write into the input's bytes. */
static void
plan_alias(struct plan_state *st)
{
	const graph_t *g = st->g;
	const struct graph_node *node;
	size_t k;
	int a, b;

	for (k = 0; k < g->nnodes; k++) {
		node = &g->nodes[k];
		if (node->op != GRAPH_OP_RESHAPE || node->ninputs < 1 || node->noutputs != 1)
			continue;
		a = node->inputs[0];
		b = node->outputs[0];
		if (!plan_is_arena(g, a) || !plan_is_arena(g, b) || a == b ||
		    (g->tensors[a].flags & GRAPH_TENSOR_OUTPUT) || st->end[a] != (int64_t)k ||
		    st->start[b] != (int64_t)k || st->size[a] != st->size[b] || st->root[b] != b)
			continue;
		st->root[b] = plan_find(st, a);
	}
}

/* Merge each alias group's lifetimes and sizes into its root, and list the roots. */
static void
plan_groups(struct plan_state *st)
{
	size_t t, n = st->g->ntensors;
	int r;

	for (t = 0; t < n; t++) {
		if (st->start[t] == PLAN_UNSEEN || (r = plan_find(st, (int)t)) == (int)t)
			continue;
		if (st->start[t] < st->start[r])
			st->start[r] = st->start[t];
		if (st->end[t] > st->end[r])
			st->end[r] = st->end[t];
		if (st->size[t] > st->gsize[r])
			st->gsize[r] = st->size[t];
	}
	for (t = 0; t < n; t++)
		if (st->start[t] != PLAN_UNSEEN && st->root[t] == (int)t)
			st->order[st->nitems++] = (int)t;
}

/* Larger groups first, then earlier ones, then by index: a stable, deterministic order. */
static int
plan_cmp(const void *pa, const void *pb, void *arg)
{
	const struct plan_state *st = arg;
	int a = *(const int *)pa, b = *(const int *)pb;

	if (st->gsize[a] != st->gsize[b])
		return st->gsize[a] > st->gsize[b] ? -1 : 1;
	if (st->start[a] != st->start[b])
		return st->start[a] < st->start[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Offset order of placed groups, for the gap scan. */
static int
plan_cmp_offset(const void *pa, const void *pb, void *arg)
{
	const struct plan_state *st = arg;
	int a = *(const int *)pa, b = *(const int *)pb;

	if (st->offset[a] != st->offset[b])
		return st->offset[a] < st->offset[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Place group r in the tightest gap between the placed groups alive with it (or after them all). */
static size_t
plan_place(struct plan_state *st, size_t placed, int r, int *live)
{
	size_t i, nlive = 0, end = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
	int o;

	for (i = 0; i < placed; i++) {
		o = st->order[i];
		if (st->start[o] <= st->end[r] && st->start[r] <= st->end[o])
			live[nlive++] = o;
	}
	qsort_r(live, nlive, sizeof *live, plan_cmp_offset, st);
	for (i = 0; i < nlive; i++) {
		o = live[i];
		if (st->offset[o] >= end && st->offset[o] - end >= st->gsize[r] &&
		    st->offset[o] - end < best_gap) {
			best_gap = st->offset[o] - end;
			best = end;
		}
		if (st->offset[o] + st->gsize[o] > end)
			end = st->offset[o] + st->gsize[o];
	}
	return best != SIZE_MAX ? best : end;
}

/* Free the working arrays. */
static void
plan_state_free(struct plan_state *st)
{
	free(st->start);
	free(st->end);
	free(st->root);
	free(st->order);
	free(st->size);
	free(st->gsize);
	free(st->offset);
}

/* Allocate the working arrays and size every tensor written or read; -1 with *cause. */
static int
plan_state_init(struct plan_state *st, const graph_t *g, const struct graph_shape *shapes,
    size_t alignment, char **cause)
{
	size_t n = g->ntensors + 1, t;

	memset(st, 0, sizeof *st);
	st->g = g;
	st->start = xmalloc(n * sizeof *st->start);
	st->end = xmalloc(n * sizeof *st->end);
	st->root = xmalloc(n * sizeof *st->root);
	st->order = xmalloc(n * sizeof *st->order);
	st->size = xcalloc(n, sizeof *st->size);
	st->gsize = xcalloc(n, sizeof *st->gsize);
	st->offset = xcalloc(n, sizeof *st->offset);
	if (st->start == NULL || st->end == NULL || st->root == NULL || st->order == NULL ||
	    st->size == NULL || st->gsize == NULL || st->offset == NULL)
		return error_set(cause, "memory plan: out of memory");
	for (t = 0; t < n; t++) {
		st->start[t] = PLAN_UNSEEN;
		st->end[t] = -2;
		st->root[t] = (int)t;
	}
	if (plan_liveness(st, cause) < 0)
		return -1;
	for (t = 0; t < g->ntensors; t++) {
		if (st->start[t] == PLAN_UNSEEN)
			continue;
		if (plan_bytes(g, (int)t, &shapes[t], alignment, &st->size[t], cause) < 0)
			return error_prefix(cause, "memory plan");
		st->gsize[t] = st->size[t];
	}
	return 0;
}

/* Whether every tensor index in g lies inside its tensor array. */
static int
plan_check_indices(const graph_t *g, char **cause)
{
	size_t k;
	int i;

	for (i = 0; i < g->ninputs + g->noutputs; i++) {
		int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
		if (t < 0 || (size_t)t >= g->ntensors)
			return error_set(cause, "memory plan: graph input/output index %d out of range", t);
	}
	for (k = 0; k < g->nnodes; k++)
		for (i = 0; i < g->nodes[k].ninputs + g->nodes[k].noutputs; i++) {
			int t = i < g->nodes[k].ninputs ? g->nodes[k].inputs[i] :
			    g->nodes[k].outputs[i - g->nodes[k].ninputs];
			if (t < -1 || t >= (int64_t)g->ntensors)
				return error_set(cause, "memory plan: node %s: tensor index %d out of range",
				    g->nodes[k].name, t);
		}
	return 0;
}

/* Lay every group out and copy the result into out; -1 with *cause. */
static int
plan_layout(struct plan_state *st, struct graph_memory_plan *out, char **cause)
{
	size_t i, t, off;
	int *live, r;

	if ((live = xmalloc((st->nitems + 1) * sizeof *live)) == NULL)
		return error_set(cause, "memory plan: out of memory");
	qsort_r(st->order, st->nitems, sizeof *st->order, plan_cmp, st);
	for (i = 0; i < st->nitems; i++) {
		r = st->order[i];
		off = plan_place(st, i, r, live);
		if (off > SIZE_MAX - st->gsize[r]) {
			free(live);
			return error_set(cause, "memory plan: the arena's size overflows");
		}
		st->offset[r] = off;
		if (off + st->gsize[r] > out->arena_bytes)
			out->arena_bytes = off + st->gsize[r];
	}
	free(live);
	for (t = 0; t < st->g->ntensors; t++) {
		out->offsets[t] = GRAPH_PLAN_NONE;
		if (st->start[t] == PLAN_UNSEEN)
			continue;
		out->offsets[t] = st->offset[plan_find(st, (int)t)];
		out->sizes[t] = st->size[t];
		out->naive_bytes += st->size[t];
	}
	return 0;
}

/* Plan g's arena at the given shapes. */
int
graph_plan_memory(const graph_t *g, const struct graph_shape *shapes, size_t alignment,
    struct graph_memory_plan *out, char **cause)
{
	struct plan_state st;

	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (g == NULL || shapes == NULL || out == NULL)
		return error_set(cause, "memory plan: no graph, shapes or result");
	if (alignment == 0 || (alignment & (alignment - 1)) != 0)
		return error_set(cause, "memory plan: alignment %zu is not a power of two", alignment);
	if (plan_check_indices(g, cause) < 0)
		return -1;
	out->ntensors = g->ntensors;
	out->offsets = xcalloc(g->ntensors + 1, sizeof *out->offsets);
	out->sizes = xcalloc(g->ntensors + 1, sizeof *out->sizes);
	if (out->offsets == NULL || out->sizes == NULL) {
		graph_plan_free(out);
		return error_set(cause, "memory plan: out of memory");
	}
	if (plan_state_init(&st, g, shapes, alignment, cause) < 0) {
		plan_state_free(&st);
		graph_plan_free(out);
		return -1;
	}
	plan_alias(&st);
	plan_groups(&st);
	if (plan_layout(&st, out, cause) < 0) {
		plan_state_free(&st);
		graph_plan_free(out);
		return -1;
	}
	plan_state_free(&st);
	return 0;
}

/* Check that no planned tensor outgrows its slot at these shapes. */
int
graph_plan_fits(const struct graph_memory_plan *plan, const graph_t *g,
    const struct graph_shape *shapes, char **cause)
{
	size_t t, bytes;

	if (plan == NULL || g == NULL || shapes == NULL || plan->ntensors != g->ntensors)
		return error_set(cause, "memory plan: the plan is not for this graph");
	for (t = 0; t < g->ntensors; t++) {
		if (plan->offsets[t] == GRAPH_PLAN_NONE)
			continue;
		if (plan_bytes(g, (int)t, &shapes[t], 1, &bytes, cause) < 0)
			return error_prefix(cause, "memory plan");
		if (bytes > plan->sizes[t])
			return error_set(cause, "memory plan: tensor %s needs %zu bytes, its slot has %zu",
			    g->tensors[t].name, bytes, plan->sizes[t]);
	}
	return 0;
}

/* Free the plan's arrays. */
void
graph_plan_free(struct graph_memory_plan *plan)
{
	if (plan == NULL)
		return;
	free(plan->offsets);
	free(plan->sizes);
	plan->offsets = plan->sizes = NULL;
	plan->ntensors = 0;
	plan->arena_bytes = plan->naive_bytes = 0;
}
