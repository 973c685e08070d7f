/* graph_test_util.c: hand-built graphs and an independent double-precision evaluator for the graph tests. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"

/* realloc or exit. */
static void *
gt_grow(void *p, size_t n)
{
	if ((p = realloc(p, n ? n : 1)) == NULL) {
		fprintf(stderr, "graph test: out of memory\n");
		exit(1);
	}
	return p;
}

/* strdup or exit. */
static char *
gt_strdup(const char *s)
{
	char *d = gt_grow(NULL, strlen(s) + 1);

	return strcpy(d, s);
}

/* An empty graph. */
graph_t *
gt_new(void)
{
	graph_t *g = gt_grow(NULL, sizeof *g);

	memset(g, 0, sizeof *g);
	return g;
}

/* Append an FP32 tensor with a declared shape. */
int
gt_tensor(graph_t *g, const char *name, unsigned flags, int ndims, const int64_t *dims)
{
	struct graph_tensor *t;

	g->tensors = gt_grow(g->tensors, (g->ntensors + 1) * sizeof *g->tensors);
	t = &g->tensors[g->ntensors];
	memset(t, 0, sizeof *t);
	t->name = gt_strdup(name);
	t->dtype = GRAPH_DT_F32;
	t->flags = flags;
	t->ndims = ndims;
	if (ndims > 0)
		memcpy(t->dims, dims, (size_t)ndims * sizeof *dims);
	return (int)g->ntensors++;
}

/* Append an owned FP32 constant holding a copy of data. */
int
gt_const(graph_t *g, const char *name, int ndims, const int64_t *dims, const float *data)
{
	int t = gt_tensor(g, name, GRAPH_TENSOR_CONST, ndims, dims), k;
	size_t n = 1;
	void *copy;

	for (k = 0; k < ndims; k++)
		n *= (size_t)dims[k];
	copy = gt_grow(NULL, n * sizeof(float));
	memcpy(copy, data, n * sizeof(float));
	g->tensors[t].data = copy;
	g->tensors[t].nbytes = n * sizeof(float);
	g->tensors[t].owns_data = 1;
	return t;
}

/* Append a rank-0 FP32 constant. */
int
gt_scalar(graph_t *g, const char *name, float v)
{
	return gt_const(g, name, 0, NULL, &v);
}

/* Append an intermediate tensor whose shape is left to inference. */
int
gt_temp(graph_t *g, const char *name)
{
	return gt_tensor(g, name, 0, -1, NULL);
}

/* Append a node with one output and zeroed attributes (Gemm: alpha = beta = 1). */
int
gt_node(graph_t *g, const char *name, enum graph_op op, int nin, const int *in, int out)
{
	struct graph_node *n;

	g->nodes = gt_grow(g->nodes, (g->nnodes + 1) * sizeof *g->nodes);
	n = &g->nodes[g->nnodes];
	memset(n, 0, sizeof *n);
	n->name = gt_strdup(name);
	n->op = op;
	n->ninputs = nin;
	n->inputs = gt_grow(NULL, (size_t)nin * sizeof *n->inputs);
	if (nin > 0)
		memcpy(n->inputs, in, (size_t)nin * sizeof *in);
	n->noutputs = 1;
	n->outputs = gt_grow(NULL, sizeof *n->outputs);
	n->outputs[0] = out;
	if (op == GRAPH_OP_GEMM)
		n->attr.gemm.alpha = n->attr.gemm.beta = 1;
	return (int)g->nnodes++;
}

/* Append a BINARY node. */
int
gt_binary(graph_t *g, const char *name, enum graph_binary fn, int a, int b, int out)
{
	int in[2] = { a, b }, n = gt_node(g, name, GRAPH_OP_BINARY, 2, in, out);

	g->nodes[n].attr.binary.fn = fn;
	return n;
}

/* Append a UNARY node. */
int
gt_unary(graph_t *g, const char *name, enum graph_unary fn, int x, int out)
{
	int n = gt_node(g, name, GRAPH_OP_UNARY, 1, &x, out);

	g->nodes[n].attr.unary.fn = fn;
	return n;
}

/* Declare t the next graph input. */
void
gt_input(graph_t *g, int t)
{
	g->inputs = gt_grow(g->inputs, (size_t)(g->ninputs + 1) * sizeof *g->inputs);
	g->inputs[g->ninputs++] = t;
	g->tensors[t].flags |= GRAPH_TENSOR_INPUT;
}

/* Declare t the next graph output. */
void
gt_output(graph_t *g, int t)
{
	g->outputs = gt_grow(g->outputs, (size_t)(g->noutputs + 1) * sizeof *g->outputs);
	g->outputs[g->noutputs++] = t;
	g->tensors[t].flags |= GRAPH_TENSOR_OUTPUT;
}

/* The first node of op (and fn), or -1. */
int
gt_find(const graph_t *g, enum graph_op op, int fn)
{
	size_t n;

	for (n = 0; n < g->nnodes; n++) {
		if (g->nodes[n].op != op)
			continue;
		if (fn >= 0 && op == GRAPH_OP_UNARY && (int)g->nodes[n].attr.unary.fn != fn)
			continue;
		if (fn >= 0 && op == GRAPH_OP_BINARY && (int)g->nodes[n].attr.binary.fn != fn)
			continue;
		return (int)n;
	}
	return -1;
}

/* A value of uniform random elements from a xorshift state. */
struct gt_value
gt_random(int ndims, const int64_t *dims, uint64_t *state, double lo, double hi)
{
	struct gt_value r;
	int64_t n = 1, i;
	int k;

	memset(&r, 0, sizeof r);
	r.s.ndims = ndims;
	for (k = 0; k < ndims; k++) {
		r.s.dims[k] = dims[k];
		n *= dims[k];
	}
	r.v = gt_grow(NULL, (size_t)n * sizeof *r.v);
	for (i = 0; i < n; i++) {
		*state ^= *state << 13;
		*state ^= *state >> 7;
		*state ^= *state << 17;
		r.v[i] = lo + (hi - lo) * (double)(*state >> 11) / 9007199254740992.0;
	}
	return r;
}

/* Free the elements of n values. */
void
gt_values_free(struct gt_value *vals, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(vals[i].v);
		vals[i].v = NULL;
	}
}

/* Element count of a shape. */
static int64_t
gt_elems(const struct graph_shape *s)
{
	int64_t n = 1;
	int k;

	for (k = 0; k < s->ndims; k++)
		n *= s->dims[k];
	return n;
}

/* Largest difference relative to the reference's scale (at least 1). */
double
gt_compare(const struct gt_value *a, const struct gt_value *b)
{
	double err = 0, scale = 1;
	int64_t i, n = gt_elems(&a->s);

	if (a->v == NULL || b->v == NULL || a->s.ndims != b->s.ndims ||
	    memcmp(a->s.dims, b->s.dims, (size_t)a->s.ndims * sizeof a->s.dims[0]) != 0)
		return 1e30;
	for (i = 0; i < n; i++)
		if (fabs(b->v[i]) > scale)
			scale = fabs(b->v[i]);
	for (i = 0; i < n; i++)
		if (fabs(a->v[i] - b->v[i]) > err)
			err = fabs(a->v[i] - b->v[i]);
	return err / scale;
}
