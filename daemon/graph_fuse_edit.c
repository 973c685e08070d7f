/* graph_fuse_edit.c: the edits the fusion passes make to the live graph (remove, move, rewire, add constants). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_fuse_impl.h"

/* Remove node n from the live graph (its memory is freed at compaction). */
void
fuse_kill(struct fuse_ctx *c, int n)
{
	struct graph_node *node = &c->g->nodes[n];
	int k;

	for (k = 0; k < node->ninputs; k++)
		if (node->inputs[k] >= 0)
			c->uses[node->inputs[k]]--;
	for (k = 0; k < node->noutputs; k++)
		if (node->outputs[k] >= 0 && c->producer[node->outputs[k]] == n)
			c->producer[node->outputs[k]] = -1;
	c->dead[n] = 1;
}

/* Move head into tail's slot, writing tail's first output. */
void
fuse_replace(struct fuse_ctx *c, int head, int tail)
{
	struct graph_node *h = &c->g->nodes[head], *t = &c->g->nodes[tail];
	int out = t->outputs[0], k;

	fuse_kill(c, tail);
	free(t->name);
	free(t->inputs);
	free(t->outputs);
	*t = *h;
	memset(h, 0, sizeof *h);
	c->dead[head] = 1;
	c->dead[tail] = 0;
	if (t->outputs[0] >= 0)
		c->producer[t->outputs[0]] = -1;
	t->outputs[0] = out;
	for (k = 0; k < t->noutputs; k++)
		if (t->outputs[k] >= 0)
			c->producer[t->outputs[k]] = tail;
	c->rewrites++;
}

/* Point input slot i of node n at tensor t. */
int
fuse_set_input(struct fuse_ctx *c, int n, int i, int t, char **cause)
{
	struct graph_node *node = &c->g->nodes[n];
	int *grown, k;

	if (i >= node->ninputs) {
		if ((grown = xrealloc(node->inputs, (size_t)(i + 1) * sizeof *grown)) == NULL)
			return error_set(cause, "graph fusion: out of memory");
		for (k = node->ninputs; k <= i; k++)
			grown[k] = -1;
		node->inputs = grown;
		node->ninputs = i + 1;
	}
	if (node->inputs[i] >= 0)
		c->uses[node->inputs[i]]--;
	node->inputs[i] = t;
	if (t >= 0)
		c->uses[t]++;
	return 0;
}

/* Grow the per-tensor arrays to hold one more tensor. */
static int
fuse_grow(struct fuse_ctx *c, char **cause)
{
	graph_t *g = c->g;
	struct graph_tensor *tensors;
	size_t cap = c->cap * 2;
	void *p;
	int k;

	if ((tensors = xrealloc(g->tensors, (g->ntensors + 1) * sizeof *tensors)) == NULL)
		return error_set(cause, "graph fusion: out of memory");
	g->tensors = tensors;
	if (g->ntensors < c->cap)
		return 0;
	if ((p = xrealloc(c->producer, cap * sizeof *c->producer)) == NULL)
		return error_set(cause, "graph fusion: out of memory");
	c->producer = p;
	if ((p = xrealloc(c->uses, cap * sizeof *c->uses)) == NULL)
		return error_set(cause, "graph fusion: out of memory");
	c->uses = p;
	for (k = 0; k < 2 && c->probe[0] != NULL; k++) {
		if ((p = xrealloc(c->probe[k], cap * sizeof *c->probe[k])) == NULL)
			return error_set(cause, "graph fusion: out of memory");
		c->probe[k] = p;
	}
	c->cap = cap;
	return 0;
}

/* Append an owned FP32 constant named base + suffix. */
int
fuse_add_const(struct fuse_ctx *c, const char *base, const char *suffix,
    int ndims, const int64_t *dims, float *data, char **cause)
{
	graph_t *g = c->g;
	struct graph_tensor *t;
	size_t len, elems = 1;
	char *name;
	int k, idx;

	len = strlen(base != NULL ? base : "") + strlen(suffix) + 1;
	if ((name = xmalloc(len)) == NULL || fuse_grow(c, cause) < 0) {
		free(name);
		free(data);
		return error_set(cause, "graph fusion: out of memory");
	}
	snprintf(name, len, "%s%s", base != NULL ? base : "", suffix);
	idx = (int)g->ntensors++;
	t = &g->tensors[idx];
	memset(t, 0, sizeof *t);
	t->name = name;
	t->dtype = GRAPH_DT_F32;
	t->flags = GRAPH_TENSOR_CONST;
	t->ndims = ndims;
	for (k = 0; k < ndims; k++) {
		t->dims[k] = dims[k];
		elems *= (size_t)dims[k];
	}
	t->data = data;
	t->nbytes = elems * sizeof(float);
	t->owns_data = 1;
	c->producer[idx] = -1;
	c->uses[idx] = 0;
	for (k = 0; k < 2 && c->probe[0] != NULL; k++) {
		c->probe[k][idx].ndims = ndims;
		memcpy(c->probe[k][idx].dims, dims, (size_t)ndims * sizeof *dims);
	}
	return idx;
}

/* Turn node n into op reading the given inputs (attributes and act cleared); -1 on no memory. */
int
fuse_rebuild(struct fuse_ctx *c, int n, enum graph_op op, const int *inputs, int nin, char **cause)
{
	struct graph_node *node = &c->g->nodes[n];
	int *in, k;

	if ((in = xmalloc((size_t)nin * sizeof *in)) == NULL)
		return error_set(cause, "graph fusion: out of memory");
	for (k = 0; k < node->ninputs; k++)
		if (node->inputs[k] >= 0)
			c->uses[node->inputs[k]]--;
	free(node->inputs);
	for (k = 0; k < nin; k++)
		if ((in[k] = inputs[k]) >= 0)
			c->uses[in[k]]++;
	node->inputs = in;
	node->ninputs = nin;
	node->op = op;
	node->act = GRAPH_UNARY_NONE;
	node->act_alpha = node->act_beta = 0;
	memset(&node->attr, 0, sizeof node->attr);
	c->rewrites++;
	return 0;
}
