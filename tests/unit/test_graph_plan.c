/* test_graph_plan.c: the memory plan never overlaps live tensors, respects alignment and reuses memory. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_fuse.h"
#include "graph_plan.h"
#include "graph_test_util.h"
#include "test_util.h"

static uint64_t seed = 0x2545f4914f6cdd1dull;

/* A random number below n. */
static size_t
rnd(size_t n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (size_t)(seed % n);
}

/* Shapes from the declared dims (all fixed in these tests). */
static struct graph_shape *
declared_shapes(const graph_t *g)
{
	struct graph_shape *s = calloc(g->ntensors + 1, sizeof *s);
	size_t t;

	if (s == NULL)
		exit(1);
	for (t = 0; t < g->ntensors; t++) {
		s[t].ndims = g->tensors[t].ndims;
		memcpy(s[t].dims, g->tensors[t].dims, sizeof s[t].dims);
	}
	return s;
}

/* First writer and last reader of every tensor, computed here from scratch (-2 = not in the arena). */
static void
lifetimes(const graph_t *g, long *first, long *last)
{
	size_t t, n;
	int k;

	for (t = 0; t < g->ntensors; t++)
		first[t] = last[t] = -2;
	for (k = 0; k < g->ninputs; k++)
		first[g->inputs[k]] = last[g->inputs[k]] = -1;
	for (n = 0; n < g->nnodes; n++) {
		for (k = 0; k < g->nodes[n].noutputs; k++)
			if (first[g->nodes[n].outputs[k]] == -2)
				first[g->nodes[n].outputs[k]] = last[g->nodes[n].outputs[k]] = (long)n;
		for (k = 0; k < g->nodes[n].ninputs; k++)
			if (g->nodes[n].inputs[k] >= 0 &&
			    !(g->tensors[g->nodes[n].inputs[k]].flags & GRAPH_TENSOR_CONST))
				last[g->nodes[n].inputs[k]] = (long)n;
	}
	for (k = 0; k < g->noutputs; k++)
		last[g->outputs[k]] = (long)g->nnodes;
}

/* Whether a RESHAPE reads one of a, b and writes the other. */
static int
reshape_pair(const graph_t *g, size_t a, size_t b)
{
	size_t n;

	for (n = 0; n < g->nnodes; n++)
		if (g->nodes[n].op == GRAPH_OP_RESHAPE &&
		    (((size_t)g->nodes[n].inputs[0] == a && (size_t)g->nodes[n].outputs[0] == b) ||
		    ((size_t)g->nodes[n].inputs[0] == b && (size_t)g->nodes[n].outputs[0] == a)))
			return 1;
	return 0;
}

/* Check the plan against the graph: every pair alive together is disjoint (aliases allowed), alignment, bounds. */
static void
check_plan(const graph_t *g, const struct graph_shape *s, const struct graph_memory_plan *p,
    size_t align, const char *what)
{
	long *first = calloc(g->ntensors + 1, sizeof *first), *last = calloc(g->ntensors + 1, sizeof *last);
	size_t a, b, need;

	if (first == NULL || last == NULL)
		exit(1);
	lifetimes(g, first, last);
	CHECK(p->arena_bytes <= p->naive_bytes, "%s: arena %zu > naive %zu", what, p->arena_bytes,
	    p->naive_bytes);
	CHECK(p->arena_bytes % align == 0, "%s: arena %zu not aligned", what, p->arena_bytes);
	for (a = 0; a < g->ntensors; a++) {
		if (first[a] == -2 || (g->tensors[a].flags & GRAPH_TENSOR_CONST)) {
			CHECK(p->offsets[a] == GRAPH_PLAN_NONE, "%s: tensor %zu planned", what, a);
			continue;
		}
		need = (size_t)graph_shape_elems(&s[a]) * graph_dtype_size(g->tensors[a].dtype);
		CHECK(p->offsets[a] != GRAPH_PLAN_NONE && p->offsets[a] % align == 0 && p->sizes[a] >= need &&
		    p->offsets[a] + p->sizes[a] <= p->arena_bytes, "%s: tensor %zu at %zu size %zu", what, a,
		    p->offsets[a], p->sizes[a]);
		for (b = a + 1; b < g->ntensors; b++) {
			if (first[b] == -2 || (g->tensors[b].flags & GRAPH_TENSOR_CONST) ||
			    first[a] > last[b] || first[b] > last[a] || p->sizes[a] == 0 || p->sizes[b] == 0)
				continue;
			if (reshape_pair(g, a, b) && p->offsets[a] == p->offsets[b])
				continue;	/* a reshape writing into its dying input */
			CHECK(p->offsets[a] + p->sizes[a] <= p->offsets[b] ||
			    p->offsets[b] + p->sizes[b] <= p->offsets[a],
			    "%s: tensors %zu [%ld,%ld] and %zu [%ld,%ld] overlap", what, a, first[a], last[a], b,
			    first[b], last[b]);
		}
	}
	free(first);
	free(last);
}

/* No tensor shares bytes with a graph input: inputs stay intact for the whole run. */
static void
check_inputs_private(const graph_t *g, const struct graph_memory_plan *p, const char *what)
{
	for (int i = 0; i < g->ninputs; i++) {
		size_t a = (size_t)g->inputs[i];

		if (p->offsets[a] == GRAPH_PLAN_NONE)
			continue;
		for (size_t t = 0; t < p->ntensors; t++)
			if (t != a && p->offsets[t] != GRAPH_PLAN_NONE && p->sizes[t] > 0 &&
			    p->offsets[t] < p->offsets[a] + p->sizes[a] && p->offsets[a] < p->offsets[t] + p->sizes[t])
				CHECK(0, "%s: tensor %zu overlaps input %zu", what, t, a);
	}
}

/* Plan g at its declared shapes, check it, and return it. */
static struct graph_memory_plan
plan_checked(const graph_t *g, size_t align, const char *what)
{
	struct graph_shape *s = declared_shapes(g);
	struct graph_memory_plan p;
	char *cause = NULL;

	if (graph_plan_memory(g, s, align, &p, &cause) < 0) {
		CHECK(0, "%s: %s", what, cause);
		free(cause);
	} else {
		check_plan(g, s, &p, align, what);
		check_inputs_private(g, &p, what);
	}
	free(s);
	return p;
}

/* A chain of same-size tensors needs the input's slot (kept intact for the whole run) and two
 * alternating slots for the rest, whatever its length. */
static void
test_chain(void)
{
	static const int64_t d[] = { 64 };
	struct graph_memory_plan p;
	graph_t *g = gt_new();
	int t = gt_tensor(g, "x", 0, 1, d), k, u;
	char name[16];

	gt_input(g, t);
	for (k = 0; k < 12; k++) {
		snprintf(name, sizeof name, "t%d", k);
		u = gt_tensor(g, name, 0, 1, d);
		gt_unary(g, name, GRAPH_UNARY_RELU, t, u);
		t = u;
	}
	gt_output(g, t);
	p = plan_checked(g, 64, "chain");
	CHECK(p.arena_bytes == 3 * 256, "chain arena %zu, want 768", p.arena_bytes);
	CHECK(p.naive_bytes == 13 * 256, "chain naive %zu", p.naive_bytes);
	graph_plan_free(&p);
	graph_free(g);
}

/* A reshape writes in place when its input dies there, not when the input is read later. */
static void
test_reshape(void)
{
	static const int64_t d[] = { 4, 6 }, f[] = { 24 };
	struct graph_memory_plan p;
	graph_t *g;
	int x, a, b, c, e, late;

	for (late = 0; late < 2; late++) {
		g = gt_new();
		gt_input(g, x = gt_tensor(g, "x", 0, 2, d));
		a = gt_tensor(g, "a", 0, 2, d);
		b = gt_tensor(g, "b", 0, 1, f);
		c = gt_tensor(g, "c", 0, 1, f);
		gt_unary(g, "relu", GRAPH_UNARY_RELU, x, a);
		gt_node(g, "reshape", GRAPH_OP_RESHAPE, 1, &a, b);
		gt_unary(g, "neg", GRAPH_UNARY_NEG, b, c);
		gt_output(g, c);
		if (late) {
			e = gt_tensor(g, "e", 0, 2, d);
			gt_unary(g, "exp", GRAPH_UNARY_EXP, a, e);
			gt_output(g, e);
		}
		p = plan_checked(g, 32, late ? "reshape, input read later" : "reshape");
		CHECK((p.offsets[a] == p.offsets[b]) == !late, "reshape (late %d): offsets %zu %zu", late,
		    p.offsets[a], p.offsets[b]);
		graph_plan_free(&p);
		graph_free(g);
	}
}

/* Random DAGs with random sizes, outputs, reshapes and alignments: every check_plan property holds. */
static void
test_random(void)
{
	static const size_t aligns[] = { 1, 16, 256 };
	struct graph_memory_plan p;
	int64_t d[2];
	graph_t *g;
	int round, n, k, nt, in[2], t, out, cst;
	char name[32];

	for (round = 0; round < 300; round++) {
		g = gt_new();
		d[0] = 1 + (int64_t)rnd(8);
		d[1] = 1 + (int64_t)rnd(33);
		for (k = 0; k < 1 + (int)rnd(2); k++)
			gt_input(g, gt_tensor(g, "in", 0, 2, d));
		d[0] = 1;
		cst = gt_const(g, "w", 0, NULL, (float[]){ 1 });
		n = 2 + (int)rnd(40);
		for (k = 0; k < n; k++) {
			nt = (int)g->ntensors;
			do
				t = (int)rnd((size_t)nt);
			while (t == cst);
			snprintf(name, sizeof name, "n%d", k);
			if (rnd(5) == 0) {	/* a reshape of t to one flat dim */
				int64_t e = graph_shape_elems(&(struct graph_shape){ g->tensors[t].ndims,
				    { g->tensors[t].dims[0], g->tensors[t].dims[1] } });
				out = gt_tensor(g, name, 0, 1, &e);
				gt_node(g, name, GRAPH_OP_RESHAPE, 1, &t, out);
			} else {
				d[0] = 1 + (int64_t)rnd(8);
				d[1] = 1 + (int64_t)rnd(100);
				out = gt_tensor(g, name, 0, 2, d);
				in[0] = t;
				in[1] = rnd(3) == 0 ? cst : (int)rnd((size_t)nt);
				gt_binary(g, name, GRAPH_BINARY_ADD, in[0], in[1], out);
			}
			if (rnd(6) == 0 || k == n - 1)
				gt_output(g, out);
		}
		snprintf(name, sizeof name, "random %d", round);
		p = plan_checked(g, aligns[rnd(3)], name);
		graph_plan_free(&p);
		graph_free(g);
	}
}

/* Constants and tensors no node touches stay out of the arena; smaller shapes fit, larger ones are refused. */
static void
test_fits(void)
{
	static const int64_t d[] = { 8, 16 }, w[] = { 16 };
	struct graph_shape *s;
	struct graph_memory_plan p;
	graph_t *g = gt_new();
	float wv[16] = { 0 };
	int x, c, y, orphan, in[2];
	char *cause = NULL;

	gt_input(g, x = gt_tensor(g, "x", 0, 2, d));
	c = gt_const(g, "w", 1, w, wv);
	orphan = gt_tensor(g, "orphan", 0, 2, d);
	y = gt_tensor(g, "y", 0, 2, d);
	in[0] = x;
	in[1] = c;
	gt_node(g, "add", GRAPH_OP_BINARY, 2, in, y);
	gt_output(g, y);
	p = plan_checked(g, 64, "fits");
	CHECK(p.offsets[c] == GRAPH_PLAN_NONE && p.offsets[orphan] == GRAPH_PLAN_NONE,
	    "constant or orphan planned: %zu %zu", p.offsets[c], p.offsets[orphan]);
	CHECK(p.arena_bytes == 2 * 8 * 16 * 4, "arena %zu", p.arena_bytes);
	s = declared_shapes(g);
	s[x].dims[0] = s[y].dims[0] = 3;
	CHECK(graph_plan_fits(&p, g, s, &cause) == 0, "smaller shapes refused: %s", cause ? cause : "");
	free(cause);
	cause = NULL;
	s[y].dims[0] = 9;
	CHECK(graph_plan_fits(&p, g, s, &cause) < 0 && cause != NULL && strstr(cause, "y") != NULL,
	    "a larger output fits: %s", cause ? cause : "(no cause)");
	free(cause);
	free(s);
	graph_plan_free(&p);
	graph_free(g);
}

/* Bad arguments and malformed graphs are refused with a message. */
static void
test_errors(void)
{
	static const int64_t d[] = { 4 };
	struct graph_memory_plan p;
	struct graph_shape *s;
	graph_t *g = gt_new();
	int x, u, y;
	char *cause = NULL;

	gt_input(g, x = gt_tensor(g, "x", 0, 1, d));
	u = gt_tensor(g, "never_written", 0, 1, d);
	y = gt_tensor(g, "y", 0, 1, d);
	gt_binary(g, "add", GRAPH_BINARY_ADD, x, u, y);
	gt_output(g, y);
	s = declared_shapes(g);
	CHECK(graph_plan_memory(g, s, 3, &p, &cause) < 0 && cause != NULL && strstr(cause, "alignment"),
	    "alignment 3 accepted");
	free(cause);
	cause = NULL;
	CHECK(graph_plan_memory(g, s, 16, &p, &cause) < 0 && cause != NULL &&
	    strstr(cause, "never_written") != NULL, "a read of an unwritten tensor accepted: %s",
	    cause ? cause : "");
	CHECK(p.offsets == NULL && p.arena_bytes == 0, "failed plan not empty");
	free(cause);
	cause = NULL;
	g->nodes[0].inputs[1] = x;
	s[y].dims[0] = -5;
	CHECK(graph_plan_memory(g, s, 16, &p, &cause) < 0 && cause != NULL, "a negative dim accepted");
	free(cause);
	graph_plan_free(NULL);
	free(s);
	graph_free(g);
}

/* Shapes of every tensor of g at batch b (inputs' batch dim), from the reference evaluator. */
static struct graph_shape *
batch_shapes(const graph_t *g, int64_t b)
{
	struct graph_shape in[4], *s = calloc(g->ntensors + 1, sizeof *s);
	int i, k;

	if (s == NULL || g->ninputs > 4)
		exit(1);
	for (i = 0; i < g->ninputs; i++) {
		in[i].ndims = g->tensors[g->inputs[i]].ndims;
		for (k = 0; k < in[i].ndims; k++)
			in[i].dims[k] = g->tensors[g->inputs[i]].dims[k] == GRAPH_DIM_BATCH ? b :
			    g->tensors[g->inputs[i]].dims[k];
	}
	CHECK(gt_infer_shapes(g, in, s, NULL) == 0, "reference shapes failed");
	return s;
}

/* After fusion, the tensors of removed nodes stay out of the arena; the plan at batch 8 serves batch 2. */
static void
test_after_fusion(void)
{
	static const int64_t xd[] = { GRAPH_DIM_BATCH, 2, 4, 4 }, wd[] = { 3, 2, 1, 1 }, cd[] = { 3 };
	static const float w[6] = { 1, 2, 3, 4, 5, 6 }, one[3] = { 1, 1, 1 }, zero[3] = { 0 };
	struct graph_memory_plan p;
	struct graph_shape *s;
	graph_t *g = gt_new();
	int x = gt_tensor(g, "x", 0, 4, xd), c = gt_temp(g, "c"), b = gt_temp(g, "b"), y = gt_temp(g, "y");
	int in[5], n;
	char *cause = NULL;

	gt_input(g, x);
	in[0] = x;
	in[1] = gt_const(g, "w", 4, wd, w);
	n = gt_node(g, "conv", GRAPH_OP_CONV, 2, in, c);
	g->nodes[n].attr.conv = (struct graph_window_attr){ .nspatial = 2, .kernel = { 1, 1 },
	    .stride = { 1, 1 }, .dilation = { 1, 1 }, .group = 1 };
	in[0] = c;
	in[1] = in[4] = gt_const(g, "one", 1, cd, one);
	in[2] = in[3] = gt_const(g, "zero", 1, cd, zero);
	gt_node(g, "bn", GRAPH_OP_BATCHNORM, 5, in, b);
	gt_unary(g, "relu", GRAPH_UNARY_RELU, b, y);
	gt_output(g, y);
	CHECK(graph_fuse_shapes(g, gt_infer_shapes, &cause) == 2 && g->nnodes == 1, "fusion: %s",
	    cause ? cause : "not the expected 2 rewrites");
	free(cause);
	cause = NULL;
	s = batch_shapes(g, 8);
	CHECK(graph_plan_memory(g, s, 128, &p, &cause) == 0, "plan: %s", cause ? cause : "");
	check_plan(g, s, &p, 128, "after fusion");
	CHECK(p.offsets[c] == GRAPH_PLAN_NONE && p.offsets[b] == GRAPH_PLAN_NONE, "orphans planned");
	CHECK(p.arena_bytes == (8 * 2 * 16 + 8 * 3 * 16) * 4, "arena %zu", p.arena_bytes);
	free(s);
	s = batch_shapes(g, 2);
	CHECK(graph_plan_fits(&p, g, s, &cause) == 0, "batch 2 does not fit: %s", cause ? cause : "");
	free(cause);
	free(s);
	graph_plan_free(&p);
	graph_free(g);
}

int
main(void)
{
	test_chain();
	test_reshape();
	test_random();
	test_fits();
	test_errors();
	test_after_fusion();
	return test_finish("test_graph_plan");
}
