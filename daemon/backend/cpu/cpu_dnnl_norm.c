/* cpu_dnnl_norm.c: BatchNormalization with constant statistics as oneDNN's inference primitive, on a source oneDNN leaves blocked, with a ReLU after it fused. */
#include "config.h"

#include <dnnl.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "cpu_dnnl_impl.h"
#include "error.h"

/*
 * The node after BatchNormalization i when it is a ReLU that alone reads
 * i's output (no graph output), so that i's primitive may write the ReLU's
 * output itself and i's own is never written; 0 when there is none.  The
 * ReLU's output is then written a node early, while the memory plan may
 * still hand its bytes to i's source (which dies at i): it must be the
 * source's bytes exactly (in place) or none of them.
 */
static size_t
dnnl_bnorm_relu(const graph_t *g, size_t i, const struct graph_shape *shapes, void *const *ptrs)
{
	const struct graph_node *n = &g->nodes[i], *r = i + 1 < g->nnodes ? &g->nodes[i + 1] : NULL;
	int s = n->inputs[0], t = n->outputs[0], u;
	const char *sp, *up;
	size_t bytes;

	if (r == NULL || (g->tensors[t].flags & GRAPH_TENSOR_OUTPUT) || r->op != GRAPH_OP_UNARY ||
	    r->attr.unary.fn != GRAPH_UNARY_RELU || r->act != GRAPH_UNARY_NONE || r->ninputs != 1 ||
	    r->inputs[0] != t || r->noutputs != 1 || (u = r->outputs[0]) < 0 || g->tensors[u].dtype != GRAPH_DT_F32 ||
	    !cpu_shape_equal(&shapes[u], &shapes[t]))
		return 0;
	for (size_t j = 0; j < g->nnodes; j++)
		for (int k = 0; k < g->nodes[j].ninputs; k++)
			if (g->nodes[j].inputs[k] == t && j != i + 1)
				return 0;
	sp = ptrs[s];
	up = ptrs[u];
	bytes = (size_t)cpu_elems(&shapes[s]) * sizeof(float);
	if (sp != up && sp < up + bytes && up < sp + bytes)
		return 0;
	return i + 1;
}

/*
 * The blocked layout node c's source comes in from its oneDNN writer when
 * only oneDNN nodes read it (dnnl_plan_link may then drop the reorders on
 * both sides), else NULL: the kernel library keeps the node.  A plain
 * source stays there because oneDNN's norm over plain NCHW is slow (at 1
 * thread, densenet121's 62 norms at batch 8 took 72 ms through it, 9 ms in
 * the kernel library), and a blocked source that ends up plain after all
 * would cost two reorders for the one pass the fused ReLU saves.
 */
static const dnnl_memory_desc_t *
dnnl_bnorm_src_md(const struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c)
{
	struct dnnl_node *w;
	const dnnl_memory_desc_t *md = cpu_dnnl_writer_md(p, c->g, c->shapes, c->ptrs, (size_t)(c->n - c->g->nodes),
	    c->n->inputs[0], &w);

	return md != NULL && cpu_dnnl_read_by_dnnl(c->g, c->shapes, c->n->inputs[0], md) ? md : NULL;
}

/*
 * The primitive descriptor of BatchNormalization c over source layout src,
 * statistics given (global), scale and shift applied, the ReLU fused when
 * relu; NULL (*pd) when oneDNN has no implementation for it.
 */
static int
dnnl_bnorm_pd(struct cpu_dnnl *d, const struct cpu_node_ctx *c, const dnnl_memory_desc_t *src, int relu,
    dnnl_primitive_desc_t *pd, char **cause)
{
	unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift | (relu ? dnnl_fuse_norm_relu : 0);
	dnnl_batch_normalization_desc_t bd;
	dnnl_primitive_attr_t attr;

	*pd = NULL;
	if (dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, src, c->n->attr.norm.eps,
	    flags) != dnnl_success)
		return 0;
	if (cpu_dnnl_scratch_attr(&attr, cause) != 0)
		return -1;
	return cpu_dnnl_pd_create(d, &bd, attr, "batch normalization", pd, cause);
}

/*
 * Bind x's arguments: the source and destination through reorders where
 * the layout is blocked, dst the tensor written (the ReLU's when fused), the
 * four statistics where the graph keeps them.
 */
static int
dnnl_bnorm_bind(struct cpu_dnnl *d, struct dnnl_node *x, const struct cpu_node_ctx *c, const dnnl_memory_desc_t *plain,
    void *dst, char **cause)
{
	static const int stat_args[4] = { DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE };
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(x->pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0);
	dnnl_memory_desc_t vec;

	if (cpu_dnnl_edge_init(d, plain, smd, (void *)cpu_in(c, 0), 1, &x->in, cause) != 0 ||
	    cpu_dnnl_edge_init(d, plain, dmd, dst, 0, &x->out, cause) != 0 ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&vec, 1, (dnnl_dims_t){ cpu_in_shape(c, 0)->dims[1] }, dnnl_f32,
	    dnnl_a), "md", cause) != 0)
		return -1;
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, x->in.r != NULL ? x->in.blk : x->in.user };
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_DST, x->out.r != NULL ? x->out.blk : x->out.user };
	/* ONNX's inputs 1 to 4: scale, bias, mean, variance. */
	for (int k = 0; k < 4; k++) {
		if (cpu_dnnl_check(dnnl_memory_create(&x->stats[k], &vec, d->eng, (void *)cpu_in(c, k + 1)),
		    "memory_create", cause) != 0)
			return -1;
		x->args[x->nargs++] = (dnnl_exec_arg_t){ stat_args[k], x->stats[k] };
	}
	return 0;
}

/* The oneDNN node for BatchNormalization c (a ReLU after it absorbed), or NULL (*out) when the kernel library keeps it. */
int
cpu_dnnl_bnorm_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	const dnnl_memory_desc_t *src;
	size_t relu;
	dnnl_memory_desc_t plain;
	struct dnnl_node *x;
	void *dst;

	*out = NULL;
	if (xs->ndims < 2 || xs->ndims > 5 || cpu_elems(xs) == 0 || !cpu_shape_equal(xs, cpu_out_shape(c, 0)))
		return 0;
	for (int k = 1; k <= 4; k++)
		if (cpu_elems(cpu_in_shape(c, k)) != xs->dims[1])
			return 0;	/* the kernel library names the mismatch */
	if ((src = dnnl_bnorm_src_md(p, c)) == NULL)
		return 0;
	relu = dnnl_bnorm_relu(c->g, (size_t)(c->n - c->g->nodes), c->shapes, c->ptrs);
	dst = relu != 0 ? c->ptrs[c->g->nodes[relu].outputs[0]] : cpu_out(c, 0);
	if (cpu_dnnl_plain_md(xs, &plain, cause) != 0)
		return -1;
	if ((x = xcalloc(1, sizeof *x)) == NULL)
		return error_set(cause, "out of memory");
	if (dnnl_bnorm_pd(p->d, c, src, relu != 0, &x->pd, cause) != 0)
		goto fail;
	if (x->pd == NULL) {
		free(x);
		return 0;
	}
	if (cpu_dnnl_check(dnnl_primitive_create(&x->prim, x->pd), "primitive_create", cause) != 0 ||
	    dnnl_bnorm_bind(p->d, x, c, &plain, dst, cause) != 0)
		goto fail;
	x->absorbs = relu;
	x->in_place = 1;	/* oneDNN's batch normalization may read and write one buffer */
	x->dst = dst;
	x->dst_elems = (size_t)cpu_elems(xs);
	x->n = c->n;
	*out = x;
	return 0;
fail:
	cpu_dnnl_node_free(p->d, x);
	return -1;
}
