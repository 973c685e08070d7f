/* graph_fuse_noop.c: nodes exporters leave that compute nothing (a Pad of zeros), removed so that their readers read their input. */
#include "config.h"

#include <stddef.h>

#include "graph_fuse_impl.h"

/* Whether node n is a Pad adding nothing: every pad (its amounts folded from constants) zero. */
static int
noop_pad(const struct graph_node *n)
{
	if (n->op != GRAPH_OP_PAD || n->ninputs != 1 || n->inputs[0] < 0 || n->noutputs != 1 || n->outputs[0] < 0)
		return 0;
	for (int k = 0; k < n->attr.pad.npads; k++)
		if (n->attr.pad.pads[k] != 0)
			return 0;
	return 1;
}

/*
 * Drop every Pad of zeros whose output is no graph output: its readers read
 * its input instead.  torch exports one before each AveragePool of
 * DenseNet's transitions, where it would cost a copy, and, on the CPU,
 * keep the Conv before it from handing the pool its output in oneDNN's
 * blocked layout.
 */
int
fuse_pass_noop(struct fuse_ctx *c, char **cause)
{
	for (size_t n = 0; n < c->g->nnodes; n++) {
		const struct graph_node *pad = &c->g->nodes[n];
		int in, out;

		if (c->dead[n] || !noop_pad(pad) || (c->g->tensors[pad->outputs[0]].flags & GRAPH_TENSOR_OUTPUT))
			continue;
		in = pad->inputs[0];
		out = pad->outputs[0];
		for (size_t r = n + 1; r < c->g->nnodes; r++)
			for (int k = 0; !c->dead[r] && k < c->g->nodes[r].ninputs; k++)
				if (c->g->nodes[r].inputs[k] == out && fuse_set_input(c, (int)r, k, in, cause) < 0)
					return -1;
		fuse_kill(c, (int)n);
		c->rewrites++;
	}
	return 0;
}
