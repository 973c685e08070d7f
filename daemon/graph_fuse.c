/* graph_fuse.c: the fusion driver (probes, the passes in order, compaction). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_fuse.h"
#include "graph_fuse_impl.h"

/* Shapes under one probe: batch and variable dims set to the given sizes; -1 when inference fails. */
static int
fuse_probe(const graph_t *g, graph_fuse_infer_fn infer, int64_t batch, int64_t var,
    struct graph_shape *shapes)
{
	struct graph_shape *in;
	const struct graph_tensor *t;
	char *cause = NULL;
	int i, k, rc;

	if ((in = xcalloc((size_t)g->ninputs + 1, sizeof *in)) == NULL)
		return -1;
	for (i = 0; i < g->ninputs; i++) {
		t = &g->tensors[g->inputs[i]];
		if (t->ndims < 0 || t->ndims > GRAPH_MAX_DIMS) {
			free(in);
			return -1;
		}
		in[i].ndims = t->ndims;
		for (k = 0; k < t->ndims; k++)
			in[i].dims[k] = t->dims[k] == GRAPH_DIM_BATCH ? batch :
			    GRAPH_DIM_IS_VAR(t->dims[k]) ? var : t->dims[k];
	}
	rc = infer(g, in, shapes, &cause);
	free(cause);
	free(in);
	return rc;
}

/* Refuse a node whose tensor indices fall outside the graph or that has no output. */
static int
fuse_check_node(const graph_t *g, size_t n, char **cause)
{
	const struct graph_node *node = &g->nodes[n];
	int k;

	if (node->noutputs < 1 || node->outputs == NULL || (node->ninputs > 0 && node->inputs == NULL))
		return error_set(cause, "graph fusion: node %s has no outputs or no input list",
		    node->name != NULL ? node->name : "(unnamed)");
	for (k = 0; k < node->ninputs; k++)
		if (node->inputs[k] < -1 || node->inputs[k] >= (int64_t)g->ntensors)
			return error_set(cause, "graph fusion: node %s reads tensor %d, out of range",
			    node->name != NULL ? node->name : "(unnamed)", node->inputs[k]);
	for (k = 0; k < node->noutputs; k++)
		if (node->outputs[k] < -1 || node->outputs[k] >= (int64_t)g->ntensors)
			return error_set(cause, "graph fusion: node %s writes tensor %d, out of range",
			    node->name != NULL ? node->name : "(unnamed)", node->outputs[k]);
	return 0;
}

/* Set up producers, uses and the two probes for g; -1 with *cause on no memory. */
static int
fuse_ctx_init(struct fuse_ctx *c, graph_t *g, graph_fuse_infer_fn infer, char **cause)
{
	static const int64_t sizes[2][2] = { { 2, 3 }, { 3, 5 } };
	size_t n, i;
	int p, k;

	memset(c, 0, sizeof *c);
	c->g = g;
	c->cap = g->ntensors + 1;
	c->dead = xcalloc(g->nnodes + 1, 1);
	c->producer = xmalloc(c->cap * sizeof *c->producer);
	c->uses = xcalloc(c->cap, sizeof *c->uses);
	for (p = 0; p < 2; p++)
		c->probe[p] = xcalloc(c->cap, sizeof *c->probe[p]);
	if (c->dead == NULL || c->producer == NULL || c->uses == NULL || c->probe[0] == NULL ||
	    c->probe[1] == NULL)
		return error_set(cause, "graph fusion: out of memory");
	for (i = 0; i < c->cap; i++)
		c->producer[i] = -1;
	for (n = 0; n < g->nnodes; n++) {
		if (fuse_check_node(g, n, cause) < 0)
			return -1;
		for (k = 0; k < g->nodes[n].ninputs; k++)
			if (g->nodes[n].inputs[k] >= 0)
				c->uses[g->nodes[n].inputs[k]]++;
		for (k = 0; k < g->nodes[n].noutputs; k++)
			if (g->nodes[n].outputs[k] >= 0)
				c->producer[g->nodes[n].outputs[k]] = (int)n;
	}
	for (p = 0; p < 2; p++)
		if (fuse_probe(g, infer, sizes[p][0], sizes[p][1], c->probe[p]) < 0) {
			free(c->probe[0]);
			free(c->probe[1]);
			c->probe[0] = c->probe[1] = NULL;
			break;
		}
	return 0;
}

/* Free the fusion state. */
static void
fuse_ctx_free(struct fuse_ctx *c)
{
	free(c->dead);
	free(c->producer);
	free(c->uses);
	free(c->probe[0]);
	free(c->probe[1]);
}

/* Free the removed nodes and close the gaps, keeping the live nodes' order. */
static void
fuse_compact(struct fuse_ctx *c)
{
	graph_t *g = c->g;
	size_t n, kept = 0;

	for (n = 0; n < g->nnodes; n++) {
		if (c->dead[n]) {
			free(g->nodes[n].name);
			free(g->nodes[n].inputs);
			free(g->nodes[n].outputs);
			continue;
		}
		if (kept != n)
			g->nodes[kept] = g->nodes[n];
		kept++;
	}
	g->nnodes = kept;
}

/* Fuse with the daemon's shape inference. */
int
graph_fuse(graph_t *g, char **cause)
{
	return graph_fuse_shapes(g, graph_infer_shapes, cause);
}

/* Run passes once each, in order, on one fusion context; the rewrite count or -1. */
static int
fuse_run(graph_t *g, graph_fuse_infer_fn infer, int (*const *passes)(struct fuse_ctx *, char **), size_t npasses,
    const struct graph_fuse_target *target, char **cause)
{
	struct fuse_ctx c;
	size_t i;
	int rc = 0;

	if (g == NULL || infer == NULL)
		return error_set(cause, "graph fusion: no graph");
	if (fuse_ctx_init(&c, g, infer, cause) < 0) {
		fuse_ctx_free(&c);
		return -1;
	}
	if (target != NULL) {
		c.supports = target->supports;
		c.supports_arg = target->arg;
	}
	for (i = 0; i < npasses && rc == 0; i++)
		rc = passes[i](&c, cause);
	fuse_compact(&c);
	fuse_ctx_free(&c);
	return rc < 0 ? -1 : c.rewrites;
}

/* Run every backend-independent pass once, in the order that lets later ones see the earlier results. */
int
graph_fuse_shapes(graph_t *g, graph_fuse_infer_fn infer, char **cause)
{
	static int (*const passes[])(struct fuse_ctx *, char **) = {
		fuse_pass_noop, fuse_pass_gelu, fuse_pass_hardswish, fuse_pass_layernorm, fuse_pass_batchnorm,
		fuse_pass_bias, fuse_pass_residual, fuse_pass_residual_norm, fuse_pass_act,
	};

	return fuse_run(g, infer, passes, sizeof passes / sizeof passes[0], NULL, cause);
}

/* The passes whose fused ops only some backends run, for the backend target names. */
int
graph_fuse_for(graph_t *g, const struct graph_fuse_target *target, char **cause)
{
	static int (*const passes[])(struct fuse_ctx *, char **) = { fuse_pass_attention };

	return fuse_run(g, target != NULL && target->infer != NULL ? target->infer : graph_infer_shapes, passes,
	    sizeof passes / sizeof passes[0], target, cause);
}
