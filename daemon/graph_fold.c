/* graph_fold.c: constant folding at load and per-shape specialization (design in graph_fold.h). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "graph_fold.h"
#include "graph_fold_eval.h"
#include "graph_shape.h"

/* Whether optional input k is present. */
static int
has_input(const struct graph_node *n, int k)
{
	return k < n->ninputs && n->inputs[k] >= 0;
}

/* Read optional integer input k: 1 read (cnt -1 when absent), 0 not constant yet. */
static int
opt_ints(const graph_t *g, const struct graph_node *n, int k, int64_t *v, int max, int *cnt)
{
	*cnt = -1;
	if (!has_input(n, k))
		return 1;
	return graph_const_ints(g, n->inputs[k], v, max, cnt);
}

/* SLICE bounds from inputs starts, ends[, axes[, steps]]. */
static int
resolve_slice(graph_t *g, struct graph_node *n, char **cause)
{
	int64_t v[4][GRAPH_MAX_DIMS];
	int cnt[4], k;

	for (k = 0; k < 4; k++)
		if (!opt_ints(g, n, k + 1, v[k], GRAPH_MAX_DIMS, &cnt[k]))
			return 0;
	if (cnt[0] < 0 || cnt[1] != cnt[0] || (cnt[2] >= 0 && cnt[2] != cnt[0]) ||
	    (cnt[3] >= 0 && cnt[3] != cnt[0]))
		return error_set(cause, "slice starts/ends/axes/steps differ in length");
	n->attr.slice.naxes = cnt[0];
	for (k = 0; k < cnt[0]; k++) {
		n->attr.slice.starts[k] = v[0][k];
		n->attr.slice.ends[k] = v[1][k];
		n->attr.slice.axes[k] = cnt[2] >= 0 ? v[2][k] : k;
		n->attr.slice.steps[k] = cnt[3] >= 0 ? v[3][k] : 1;
		if (n->attr.slice.steps[k] == 0)
			return error_set(cause, "slice step is 0");
	}
	n->ninputs = 1;
	return 1;
}

/* A CONST numeric scalar as a float: 1 read, 0 not constant. */
static int
const_scalar_float(const graph_t *g, int t, float *out)
{
	const struct graph_tensor *x = &g->tensors[t];
	int64_t v;
	int cnt;

	if (!(x->flags & GRAPH_TENSOR_CONST))
		return 0;
	if (x->dtype == GRAPH_DT_F32 && x->nbytes >= 4) {
		memcpy(out, x->data, 4);
		return 1;
	}
	if (graph_const_ints(g, t, &v, 1, &cnt) && cnt == 1) {
		*out = (float)v;
		return 1;
	}
	return x->nbytes == 0 ? (*out = 0, 1) : 0;
}

/* PAD pads from inputs pads[, constant_value[, axes]] (axes need the data's rank). */
static int
resolve_pad(graph_t *g, struct graph_node *n, int rank, char **cause)
{
	int64_t pads[2 * GRAPH_MAX_DIMS], axes[GRAPH_MAX_DIMS];
	int np, na, k;

	if (!opt_ints(g, n, 1, pads, 2 * GRAPH_MAX_DIMS, &np) || !opt_ints(g, n, 3, axes, GRAPH_MAX_DIMS, &na))
		return 0;
	if (has_input(n, 2) && !const_scalar_float(g, n->inputs[2], &n->attr.pad.value))
		return 0;
	if (na < 0) {
		memcpy(n->attr.pad.pads, pads, sizeof(int64_t) * (size_t)np);
		n->attr.pad.npads = np;
		n->ninputs = 1;
		return 1;
	}
	if (rank < 0)
		return 0;
	if (np != 2 * na)
		return error_set(cause, "pads length is not twice the axes count");
	memset(n->attr.pad.pads, 0, sizeof n->attr.pad.pads);
	for (k = 0; k < na; k++) {
		int64_t ax = axes[k] < 0 ? axes[k] + rank : axes[k];

		if (ax < 0 || ax >= rank)
			return error_set(cause, "pad axis %lld out of range", (long long)axes[k]);
		n->attr.pad.pads[ax] = pads[k];
		n->attr.pad.pads[ax + rank] = pads[k + na];
	}
	n->attr.pad.npads = 2 * rank;
	n->ninputs = 1;
	return 1;
}

/* RESIZE scales (FP32) or sizes (INT64) from inputs X, roi, scales, sizes. */
static int
resolve_resize(graph_t *g, struct graph_node *n, char **cause)
{
	struct graph_resize_attr *a = &n->attr.resize;
	int cnt = 0;

	if (has_input(n, 2)) {
		const struct graph_tensor *t = &g->tensors[n->inputs[2]];

		if (!(t->flags & GRAPH_TENSOR_CONST))
			return 0;
		if (t->dtype != GRAPH_DT_F32 || t->nbytes > sizeof a->scales)
			return error_set(cause, "resize scales must be at most %d FLOAT values",
			    GRAPH_MAX_DIMS);
		memcpy(a->scales, t->data, t->nbytes);
		a->nscales = (int)(t->nbytes / 4);
	}
	if (!opt_ints(g, n, 3, a->sizes, GRAPH_MAX_DIMS, &cnt))
		return 0;
	a->nsizes = cnt > 0 ? cnt : 0;
	if (a->nsizes == 0 && a->nscales == 0)
		return error_set(cause, "resize needs scales or sizes");
	if (a->nsizes > 0)
		a->nscales = 0;
	n->ninputs = 1;
	return 1;
}

/* SPLIT sizes from the optional split input (the node owns the array). */
static int
resolve_split(graph_t *g, struct graph_node *n, char **cause)
{
	int64_t v[256];
	int cnt;

	if (!opt_ints(g, n, 1, v, 256, &cnt))
		return 0;
	if (cnt > 0) {
		if ((n->attr.split.split = xmalloc(sizeof(int64_t) * (size_t)cnt)) == NULL)
			return error_set(cause, "out of memory");
		memcpy(n->attr.split.split, v, sizeof(int64_t) * (size_t)cnt);
		n->attr.split.nsplit = cnt;
	}
	n->ninputs = 1;
	return 1;
}

/* Resolve value inputs into attributes when constant. */
int
graph_node_resolve(graph_t *g, struct graph_node *n, int rank, char **cause)
{
	if (n->ninputs <= 1)
		return 1;
	switch (n->op) {
	case GRAPH_OP_SLICE: return resolve_slice(g, n, cause);
	case GRAPH_OP_PAD: return resolve_pad(g, n, rank, cause);
	case GRAPH_OP_RESIZE: return resolve_resize(g, n, cause);
	case GRAPH_OP_SPLIT: return resolve_split(g, n, cause);
	default: return 1;
	}
}

/* Whether every present input of n is a constant. */
static int
inputs_const(const graph_t *g, const struct graph_node *n)
{
	int k;

	for (k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0 && !(g->tensors[n->inputs[k]].flags & GRAPH_TENSOR_CONST))
			return 0;
	return 1;
}

/* Largest constant folding may create, in bytes (a malformed model's ConstantOfShape cannot exhaust memory). */
#define FOLD_MAX_BYTES ((int64_t)1 << 30)

/* Refuse folding outputs larger than FOLD_MAX_BYTES. */
static int
fold_size_check(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes,
    char **cause)
{
	int k;

	for (k = 0; k < n->noutputs; k++) {
		int64_t e;

		if (n->outputs[k] < 0)
			continue;
		e = graph_shape_elems(&shapes[n->outputs[k]]);
		if (e < 0 || e > FOLD_MAX_BYTES / (int64_t)graph_dtype_size(g->tensors[n->outputs[k]].dtype))
			return error_set(cause, "node '%s': folded constant of %lld elements is too large",
			    n->name, (long long)e);
	}
	return 0;
}

/* Evaluate n with the host kernels passed in (tensor ops on constants): 1 done, 0 not supported. */
static int
fold_with_kernels(const graph_t *g, const struct graph_fold_kernels *kern, const struct graph_node *n,
    const struct graph_shape *shapes, void **outs, char **cause)
{
	void **ptrs;
	void *ws = NULL;
	size_t wsz;
	int k, rc = -1;

	if (kern == NULL || !kern->supported(g, n, NULL))
		return 0;
	if ((ptrs = xcalloc(g->ntensors + 1, sizeof *ptrs)) == NULL)
		return error_set(cause, "out of memory");
	for (k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0)
			ptrs[n->inputs[k]] = (void *)(uintptr_t)g->tensors[n->inputs[k]].data;
	for (k = 0; k < n->noutputs; k++) {
		size_t b;

		if (n->outputs[k] < 0)
			continue;
		b = (size_t)graph_shape_elems(&shapes[n->outputs[k]]) *
		    graph_dtype_size(g->tensors[n->outputs[k]].dtype);
		if ((outs[k] = ptrs[n->outputs[k]] = xmalloc(b ? b : 1)) == NULL)
			goto out;
	}
	wsz = kern->workspace(g, n, shapes);
	if ((ws = xmalloc(wsz ? wsz : 1)) != NULL)
		rc = kern->run(g, n, shapes, ptrs, ws, cause) < 0 ? -1 : 1;
out:
	if (rc < 0) {
		if (cause != NULL && *cause == NULL)
			error_set(cause, "out of memory");
		for (k = 0; k < n->noutputs; k++)
			free(outs[k]), outs[k] = NULL;
	}
	free(ws);
	free(ptrs);
	return rc;
}

/* Evaluate n (shapes of its inputs set) and turn its outputs into owned constants: 1 folded, 0 not. */
static int
fold_node(graph_t *g, const struct graph_fold_kernels *kern, const struct graph_node *n, struct graph_shape *shapes,
    char **cause)
{
	void *outs[256] = { 0 };
	int k, rc;

	if (n->noutputs > 256)
		return 0;
	if (graph_infer_node(g, n, shapes, cause) < 0 || fold_size_check(g, n, shapes, cause) < 0)
		return -1;
	rc = graph_eval_node(g, n, shapes, outs, cause);
	if (rc == 0)
		rc = fold_with_kernels(g, kern, n, shapes, outs, cause);
	if (rc <= 0)
		return rc;
	for (k = 0; k < n->noutputs; k++) {
		struct graph_tensor *t;

		if (n->outputs[k] < 0) {
			free(outs[k]);
			continue;
		}
		t = &g->tensors[n->outputs[k]];
		t->flags |= GRAPH_TENSOR_CONST;
		t->ndims = shapes[n->outputs[k]].ndims;
		memcpy(t->dims, shapes[n->outputs[k]].dims, sizeof t->dims);
		t->data = outs[k];
		t->nbytes = (size_t)graph_shape_elems(&shapes[n->outputs[k]]) * graph_dtype_size(t->dtype);
		t->owns_data = 1;
	}
	return 1;
}

/* Seed shapes[] of n's constant inputs from their declared dims. */
static void
const_input_shapes(const graph_t *g, const struct graph_node *n, struct graph_shape *shapes)
{
	int k;

	for (k = 0; k < n->ninputs; k++) {
		const struct graph_tensor *t;

		if (n->inputs[k] < 0)
			continue;
		t = &g->tensors[n->inputs[k]];
		shapes[n->inputs[k]].ndims = t->ndims;
		memcpy(shapes[n->inputs[k]].dims, t->dims, sizeof t->dims);
	}
}

/* Mark nodes none of whose outputs is read (by a live node or as a graph output) as removed. */
static void
mark_dead(const graph_t *g, unsigned char *removed)
{
	size_t *uses = xcalloc(g->ntensors + 1, sizeof *uses), i;
	int k, live;

	if (uses == NULL)
		return;		/* dead-node removal is an optimisation; skipping it is safe */
	for (k = 0; k < g->noutputs; k++)
		uses[g->outputs[k]]++;
	for (i = 0; i < g->nnodes; i++)
		for (k = 0; k < g->nodes[i].ninputs && !removed[i]; k++)
			if (g->nodes[i].inputs[k] >= 0)
				uses[g->nodes[i].inputs[k]]++;
	for (i = g->nnodes; i-- > 0;) {
		const struct graph_node *n = &g->nodes[i];

		if (removed[i])
			continue;
		for (live = 0, k = 0; k < n->noutputs; k++)
			live |= n->outputs[k] >= 0 && uses[n->outputs[k]] > 0;
		if (live)
			continue;
		removed[i] = 1;
		for (k = 0; k < n->ninputs; k++)
			if (n->inputs[k] >= 0)
				uses[n->inputs[k]]--;
	}
	free(uses);
}

/* Drop removed nodes, freeing what they own. */
static size_t
compact_nodes(graph_t *g, const unsigned char *removed)
{
	size_t i, keep = 0, gone = 0;

	for (i = 0; i < g->nnodes; i++) {
		struct graph_node *n = &g->nodes[i];

		if (!removed[i]) {
			g->nodes[keep++] = *n;
			continue;
		}
		gone++;
		free(n->name);
		free(n->inputs);
		free(n->outputs);
		if (n->op == GRAPH_OP_SPLIT)
			free(n->attr.split.split);
	}
	g->nnodes = keep;
	return gone;
}

/* Renumber tensor index *t through map (stale indices past ninputs are cleared by the caller). */
static void
remap(int *t, const int *map)
{
	if (*t >= 0)
		*t = map[*t];
}

/* Remove tensors nothing references any more; indices are renumbered. */
static int
compact_tensors(graph_t *g, char **cause)
{
	int *map = xmalloc(sizeof(int) * (g->ntensors + 1)), k;
	size_t i, keep = 0;

	if (map == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < g->ntensors; i++)
		map[i] = -1;
	for (k = 0; k < g->ninputs; k++)
		map[g->inputs[k]] = 0;
	for (k = 0; k < g->noutputs; k++)
		map[g->outputs[k]] = 0;
	for (i = 0; i < g->nnodes; i++) {
		for (k = 0; k < g->nodes[i].ninputs; k++)
			if (g->nodes[i].inputs[k] >= 0)
				map[g->nodes[i].inputs[k]] = 0;
		for (k = 0; k < g->nodes[i].noutputs; k++)
			if (g->nodes[i].outputs[k] >= 0)
				map[g->nodes[i].outputs[k]] = 0;
	}
	for (i = 0; i < g->ntensors; i++) {
		if (map[i] < 0) {
			free(g->tensors[i].name);
			if (g->tensors[i].owns_data)
				free((void *)(uintptr_t)g->tensors[i].data);
			continue;
		}
		map[i] = (int)keep;
		g->tensors[keep++] = g->tensors[i];
	}
	g->ntensors = keep;
	for (k = 0; k < g->ninputs; k++)
		remap(&g->inputs[k], map);
	for (k = 0; k < g->noutputs; k++)
		remap(&g->outputs[k], map);
	for (i = 0; i < g->nnodes; i++) {
		for (k = 0; k < g->nodes[i].ninputs; k++)
			remap(&g->nodes[i].inputs[k], map);
		for (k = 0; k < g->nodes[i].noutputs; k++)
			remap(&g->nodes[i].outputs[k], map);
	}
	free(map);
	return 0;
}

/* Fold constant nodes, drop dead ones and unreferenced tensors. */
int
graph_fold_constants(graph_t *g, const struct graph_fold_kernels *kern, size_t *nremoved, char **cause)
{
	struct graph_shape *shapes = xcalloc(g->ntensors + 1, sizeof *shapes);
	unsigned char *removed = xcalloc(g->nnodes + 1, 1);
	size_t i;
	int rc = -1, r;

	if (shapes == NULL || removed == NULL) {
		error_set(cause, "out of memory");
		goto out;
	}
	for (i = 0; i < g->nnodes; i++) {
		struct graph_node *n = &g->nodes[i];
		int rank = n->ninputs > 0 && n->inputs[0] >= 0 ? g->tensors[n->inputs[0]].ndims : -1;

		if (graph_node_resolve(g, n, rank, cause) < 0) {
			error_prefix(cause, "node '%s'", n->name);
			goto out;
		}
		if (n->ninputs == 0 || !inputs_const(g, n))
			continue;
		const_input_shapes(g, n, shapes);
		if ((r = fold_node(g, kern, n, shapes, cause)) < 0)
			goto out;
		removed[i] = r == 1;
	}
	mark_dead(g, removed);
	*nremoved = compact_nodes(g, removed);
	rc = compact_tensors(g, cause);
out:
	free(shapes);
	free(removed);
	return rc;
}

/* Free a specialization. */
void
graph_spec_free(struct graph_spec *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; s->graph.tensors != NULL && i < s->graph.ntensors; i++)
		if (s->graph.tensors[i].owns_data)
			free((void *)(uintptr_t)s->graph.tensors[i].data);
	for (i = 0; s->graph.nodes != NULL && i < s->graph.nnodes; i++)
		if (s->graph.nodes[i].op == GRAPH_OP_SPLIT &&
		    s->graph.nodes[i].attr.split.split != s->source->nodes[s->node_src[i]].attr.split.split)
			free(s->graph.nodes[i].attr.split.split);
	free(s->graph.tensors);
	free(s->graph.nodes);
	free(s->node_src);
	free(s->shapes);
	free(s);
}

/* What graph_fold_mark_growth decides with while it specializes: NULL in an ordinary specialization. */
struct fold_marking {
	graph_fold_runs_fn runs;
	void *arg;
	unsigned char *no_fold;		/* per source node */
	size_t count;
};

/* Whether folding n (inputs constant, output shapes inferred) would turn small constants into a large one. */
static int
fold_grows(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes)
{
	int64_t in = 0, out = 0, e;
	int k;

	for (k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0)
			in += (int64_t)g->tensors[n->inputs[k]].nbytes;
	for (k = 0; k < n->noutputs; k++) {
		if (n->outputs[k] < 0)
			continue;
		e = graph_shape_elems(&shapes[n->outputs[k]]);
		if (e < 0 || e > FOLD_MAX_BYTES)
			return 1;
		out += e * (int64_t)graph_dtype_size(g->tensors[n->outputs[k]].dtype);
	}
	return out > GRAPH_FOLD_GROW_FLOOR && out / GRAPH_FOLD_GROWTH > in;
}

/* Whether n (source node i, inputs constant) stays at run time: marked, or marked now because it grows. */
static int
spec_keeps(const struct graph_spec *sp, struct fold_marking *mk, struct graph_node *n, size_t i)
{
	if (mk == NULL || n->op == GRAPH_OP_SHAPE)
		return n->no_fold;
	n->no_fold = fold_grows(&sp->graph, n, sp->shapes) && mk->runs(mk->arg, &sp->graph, n);
	mk->no_fold[i] = (unsigned char)n->no_fold;
	mk->count += (size_t)n->no_fold;
	return n->no_fold;
}

/* Specialize source node i: resolve, infer, fold when its inputs are constants (or it is SHAPE): 1 folded. */
static int
spec_node(struct graph_spec *sp, const struct graph_fold_kernels *kern, struct graph_node *n,
    const struct graph_node *src, struct fold_marking *mk, size_t i, char **cause)
{
	graph_t *g = &sp->graph;
	int rank = n->ninputs > 0 && n->inputs[0] >= 0 ? sp->shapes[n->inputs[0]].ndims : -1, rc;

	if ((rc = graph_node_resolve(g, n, rank, cause)) < 0)
		return error_prefix(cause, "node '%s'", n->name);
	if (rc == 0)
		return error_set(cause, "node '%s': its bounds/sizes depend on tensor values, not "
		    "only on the input shapes", n->name);
	if (graph_infer_node(g, n, sp->shapes, cause) < 0)
		return -1;
	rc = 0;
	if (n->op == GRAPH_OP_SHAPE || (inputs_const(g, n) && !spec_keeps(sp, mk, n, i)))
		rc = fold_node(g, kern, n, sp->shapes, cause);
	if (rc == 1 && n->op == GRAPH_OP_SPLIT && n->attr.split.split != src->attr.split.split)
		free(n->attr.split.split);
	if (rc == 0 && !n->no_fold && (n->op == GRAPH_OP_SHAPE || n->op == GRAPH_OP_CONSTANT_OF_SHAPE ||
	    n->op == GRAPH_OP_RANGE))
		return error_set(cause, "node '%s': shape arithmetic on tensor values is not "
		    "supported", n->name);
	return rc;
}

/* Copy g's tensor and node arrays into sp (names and index arrays shared). */
static int
spec_copy(struct graph_spec *sp, const graph_t *g, char **cause)
{
	size_t i;

	sp->source = g;
	sp->graph = *g;
	sp->graph.tensors = xmalloc(sizeof *g->tensors * (g->ntensors + 1));
	sp->graph.nodes = xmalloc(sizeof *g->nodes * (g->nnodes + 1));
	sp->node_src = xmalloc(sizeof *sp->node_src * (g->nnodes + 1));
	sp->shapes = xcalloc(g->ntensors + 1, sizeof *sp->shapes);
	if (sp->graph.tensors == NULL || sp->graph.nodes == NULL || sp->node_src == NULL ||
	    sp->shapes == NULL) {
		sp->graph.nnodes = 0;
		sp->graph.ntensors = 0;
		return error_set(cause, "out of memory");
	}
	memcpy(sp->graph.tensors, g->tensors, sizeof *g->tensors * g->ntensors);
	memcpy(sp->graph.nodes, g->nodes, sizeof *g->nodes * g->nnodes);
	for (i = 0; i < g->ntensors; i++)
		sp->graph.tensors[i].owns_data = 0;
	sp->graph.nnodes = 0;	/* grows as runtime nodes are kept */
	return 0;
}

/* Specialize g for concrete input shapes, deciding the no_fold marks into mk when it is not NULL. */
static int
spec_run(const graph_t *g, const struct graph_fold_kernels *kern, const struct graph_shape *input_shapes,
    struct fold_marking *mk, struct graph_spec **out, char **cause)
{
	struct graph_spec *sp = xcalloc(1, sizeof *sp);
	size_t i;
	int rc;

	if (sp == NULL)
		return error_set(cause, "out of memory");
	if (spec_copy(sp, g, cause) < 0 || graph_shapes_seed(g, input_shapes, sp->shapes, cause) < 0)
		goto fail;
	for (i = 0; i < g->nnodes; i++) {
		struct graph_node n = g->nodes[i];

		if ((rc = spec_node(sp, kern, &n, &g->nodes[i], mk, i, cause)) < 0)
			goto fail;
		if (rc == 1) {
			sp->nfolded++;
			continue;
		}
		sp->node_src[sp->graph.nnodes] = i;
		sp->graph.nodes[sp->graph.nnodes++] = n;
	}
	*out = sp;
	return 0;
fail:
	graph_spec_free(sp);
	return -1;
}

/* Specialize g for concrete input shapes. */
int
graph_specialize(const graph_t *g, const struct graph_fold_kernels *kern, const struct graph_shape *input_shapes,
    struct graph_spec **out, char **cause)
{
	return spec_run(g, kern, input_shapes, NULL, out, cause);
}

/* Mark the nodes whose folding would grow small constants into a large one; how many. */
size_t
graph_fold_mark_growth(graph_t *g, const struct graph_fold_kernels *kern, const struct graph_shape *input_shapes,
    graph_fold_runs_fn runs, void *arg)
{
	struct fold_marking mk = { runs, arg, xcalloc(g->nnodes + 1, 1), 0 };
	struct graph_spec *sp = NULL;
	size_t i;

	if (mk.no_fold == NULL)
		return 0;	/* marking saves memory; without it folding stays as it was */
	/* A failure here (a marked node's values needed later) leaves every node unmarked. */
	if (spec_run(g, kern, input_shapes, &mk, &sp, NULL) != 0)
		mk.count = 0;
	for (i = 0; i < g->nnodes; i++)
		g->nodes[i].no_fold = mk.count > 0 && mk.no_fold[i];
	graph_spec_free(sp);
	free(mk.no_fold);
	return mk.count;
}
