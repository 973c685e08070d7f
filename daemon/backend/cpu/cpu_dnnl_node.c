/* cpu_dnnl_node.c: the oneDNN plan's building blocks: status checks, layouts, primitive descriptors, reorder edges, which nodes oneDNN takes and in what layout their writers leave a tensor. */
#include "config.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cpu_dnnl_impl.h"
#include "error.h"

/* 0, or -1 with *cause naming the oneDNN call and its status. */
int
cpu_dnnl_check(dnnl_status_t st, const char *what, char **cause)
{
	if (st == dnnl_success)
		return 0;
	return error_set(cause, "oneDNN %s: %s", what, dnnl_status2str(st));
}

/* Plain (row-major) layout tag of ndims dims. */
dnnl_format_tag_t
cpu_dnnl_plain_tag(int ndims)
{
	static const dnnl_format_tag_t tags[] = { dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef };

	return tags[ndims - 1];
}

/* The plain fp32 layout of shape s (1 to 6 dims) into *md. */
int
cpu_dnnl_plain_md(const struct graph_shape *s, dnnl_memory_desc_t *md, char **cause)
{
	dnnl_dims_t dims;

	for (int d = 0; d < s->ndims; d++)
		dims[d] = s->dims[d];
	return cpu_dnnl_check(dnnl_memory_desc_init_by_tag(md, s->ndims, dims, dnnl_f32, cpu_dnnl_plain_tag(s->ndims)),
	    "md", cause);
}

/* Attributes asking for a user scratchpad (the plan's) into *attr. */
int
cpu_dnnl_scratch_attr(dnnl_primitive_attr_t *attr, char **cause)
{
	if (cpu_dnnl_check(dnnl_primitive_attr_create(attr), "primitive_attr_create", cause) != 0)
		return -1;
	if (cpu_dnnl_check(dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user),
	    "set_scratchpad_mode", cause) != 0) {
		dnnl_primitive_attr_destroy(*attr);
		*attr = NULL;
		return -1;
	}
	return 0;
}

/* The primitive descriptor of op od under attr (destroyed here); NULL (*pd) when oneDNN has no implementation. */
int
cpu_dnnl_pd_create(struct cpu_dnnl *d, const_dnnl_op_desc_t od, dnnl_primitive_attr_t attr, const char *what,
    dnnl_primitive_desc_t *pd, char **cause)
{
	dnnl_status_t st = dnnl_primitive_desc_create(pd, od, attr, d->eng, NULL);

	dnnl_primitive_attr_destroy(attr);
	/* No implementation for this geometry on this processor: the kernel library keeps the node. */
	if (st == dnnl_unimplemented) {
		*pd = NULL;
		return 0;
	}
	if (st != dnnl_success) {
		*pd = NULL;
		return error_set(cause, "oneDNN primitive_desc_create (%s): %s", what, dnnl_status2str(st));
	}
	return 0;
}

/*
 * Whether pd runs oneDNN's reference implementation (plain C loops, no
 * vector code): its binary over an 8-channel-blocked source took 1.1 ms
 * where the kernel library's Mul takes microseconds (regnet_y_400mf's
 * squeeze-excitation blocks after its grouped Convs).
 */
int
cpu_dnnl_pd_is_ref(const_dnnl_primitive_desc_t pd)
{
	const char *impl = NULL;

	return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl != NULL &&
	    strncmp(impl, "ref", 3) == 0;
}

/* The fp32 channels-last layout (nwc, nhwc, ndhwc) of shape s into *md; 0, or -1 when s has no such layout. */
int
cpu_dnnl_channels_last_md(const struct graph_shape *s, dnnl_memory_desc_t *md)
{
	static const dnnl_format_tag_t tags[] = { dnnl_acb, dnnl_acdb, dnnl_acdeb };
	dnnl_dims_t dims;

	if (s->ndims < 3 || s->ndims > 5)
		return -1;
	for (int d = 0; d < s->ndims; d++)
		dims[d] = s->dims[d];
	return dnnl_memory_desc_init_by_tag(md, s->ndims, dims, dnnl_f32, tags[s->ndims - 3]) == dnnl_success ? 0 : -1;
}

/* Whether md is shape s in the channels-last layout (nwc, nhwc, ndhwc) with nothing padded. */
int
cpu_dnnl_md_channels_last(const dnnl_memory_desc_t *md, const struct graph_shape *s)
{
	dnnl_memory_desc_t cl;

	return cpu_dnnl_channels_last_md(s, &cl) == 0 && dnnl_memory_desc_equal(md, &cl);
}

/* Set up e between plain tensor ptr (layout user) and the primitive's layout blk; to_blk: plain is the source. */
int
cpu_dnnl_edge_init(struct cpu_dnnl *d, const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *blk, void *ptr,
    int to_blk, struct dnnl_edge *e, char **cause)
{
	dnnl_primitive_desc_t rpd;
	int rc;

	if (cpu_dnnl_check(dnnl_memory_create(&e->user, user, d->eng, ptr), "memory_create", cause) != 0)
		return -1;
	if (dnnl_memory_desc_equal(user, blk))
		return 0;
	/* The blocked copy's address is the plan's staging buffer, bound once every node is sized. */
	e->bytes = dnnl_memory_desc_get_size(blk);
	if (cpu_dnnl_check(dnnl_memory_create(&e->blk, blk, d->eng, DNNL_MEMORY_NONE), "memory_create", cause) != 0 ||
	    cpu_dnnl_check(dnnl_reorder_primitive_desc_create(&rpd, to_blk ? user : blk, d->eng, to_blk ? blk : user,
	    d->eng, NULL), "reorder_primitive_desc_create", cause) != 0)
		return -1;
	rc = cpu_dnnl_check(dnnl_primitive_create(&e->r, rpd), "primitive_create (reorder)", cause);
	dnnl_primitive_desc_destroy(rpd);
	e->args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, to_blk ? e->user : e->blk };
	e->args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, to_blk ? e->blk : e->user };
	return rc;
}

/* Free e's reorder and memory objects. */
static void
dnnl_edge_free(struct dnnl_edge *e)
{
	if (e->r != NULL)
		dnnl_primitive_destroy(e->r);
	if (e->user != NULL)
		dnnl_memory_destroy(e->user);
	if (e->blk != NULL)
		dnnl_memory_destroy(e->blk);
}

/*
 * Make e's reorder read the tensor at ptr in layout md (its writer's blocked
 * one) instead of the plain layout; 0 when oneDNN has no jit reorder
 * between the two (its generic loops are slower than the two jit passes it
 * would replace), 1 when done (dry: when it can be), -1 with *cause.
 */
int
cpu_dnnl_edge_rebase(struct cpu_dnnl *d, struct dnnl_edge *e, const dnnl_memory_desc_t *md, void *ptr, int dry,
    char **cause)
{
	const dnnl_memory_desc_t *blk;
	dnnl_primitive_desc_t rpd;
	dnnl_primitive_t r;
	dnnl_memory_t user;
	const char *impl;

	if (cpu_dnnl_check(dnnl_memory_get_memory_desc(e->blk, &blk), "memory_get_memory_desc", cause) != 0)
		return -1;
	/* A reader viewing the tensor with other dims (a flattening Gemm) keeps its reorder from plain. */
	if (md->ndims != blk->ndims || memcmp(md->dims, blk->dims, (size_t)md->ndims * sizeof md->dims[0]) != 0 ||
	    md->data_type != blk->data_type ||
	    dnnl_reorder_primitive_desc_create(&rpd, md, d->eng, blk, d->eng, NULL) != dnnl_success)
		return 0;
	impl = NULL;
	if (dnnl_primitive_desc_query(rpd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || impl == NULL ||
	    strncmp(impl, "jit", 3) != 0 || dry) {
		dnnl_primitive_desc_destroy(rpd);
		return dry && impl != NULL && strncmp(impl, "jit", 3) == 0;
	}
	if (cpu_dnnl_check(dnnl_primitive_create(&r, rpd), "primitive_create (reorder)", cause) != 0) {
		dnnl_primitive_desc_destroy(rpd);
		return -1;
	}
	dnnl_primitive_desc_destroy(rpd);
	if (cpu_dnnl_check(dnnl_memory_create(&user, md, d->eng, ptr), "memory_create", cause) != 0) {
		dnnl_primitive_destroy(r);
		return -1;
	}
	dnnl_primitive_destroy(e->r);
	dnnl_memory_destroy(e->user);
	e->r = r;
	e->user = user;
	e->args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, e->user };
	e->args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, e->blk };
	return 1;
}

/* Make e direct: its blocked copy is the tensor at ptr, its reorder gone. */
int
cpu_dnnl_edge_direct(struct dnnl_edge *e, void *ptr, char **cause)
{
	dnnl_primitive_destroy(e->r);
	e->r = NULL;
	e->bytes = 0;
	e->direct = ptr;
	return cpu_dnnl_check(dnnl_memory_set_data_handle(e->blk, ptr), "set_data_handle", cause);
}

/* Free one node's primitive, memory objects and weight reference (lock not held). */
void
cpu_dnnl_node_free(struct cpu_dnnl *d, struct dnnl_node *x)
{
	if (x == NULL)
		return;
	dnnl_edge_free(&x->in);
	dnnl_edge_free(&x->out);
	dnnl_edge_free(&x->resid_in);
	if (x->bias != NULL)
		dnnl_memory_destroy(x->bias);
	if (x->src1 != NULL)
		dnnl_memory_destroy(x->src1);
	if (x->scratch != NULL)
		dnnl_memory_destroy(x->scratch);
	for (int i = 0; i < 4; i++)
		if (x->stats[i] != NULL)
			dnnl_memory_destroy(x->stats[i]);
	for (int i = 0; i < x->ncsrc; i++)
		if (x->csrc[i] != NULL)
			dnnl_memory_destroy(x->csrc[i]);
	free(x->csrc);
	free(x->cargs);
	free(x->cl_src);
	free(x->cl_ch);
	if (x->prim != NULL)
		dnnl_primitive_destroy(x->prim);
	if (x->pd != NULL)
		dnnl_primitive_desc_destroy(x->pd);
	if (x->w != NULL)
		cpu_dnnl_weights_unref(&d->wc, x->w);
	free(x);
}

/* Whether BatchNormalization n is inference with constants oneDNN may take: fp32, all five inputs, no activation. */
static int
dnnl_bnorm_eligible(const graph_t *g, const struct graph_node *n)
{
	if (n->ninputs != 5 || n->noutputs != 1 || n->outputs[0] < 0 || n->act != GRAPH_UNARY_NONE ||
	    g->tensors[n->outputs[0]].dtype != GRAPH_DT_F32)
		return 0;
	for (int i = 0; i < 5; i++)
		if (n->inputs[i] < 0 || g->tensors[n->inputs[i]].dtype != GRAPH_DT_F32 ||
		    (i > 0 && !(g->tensors[n->inputs[i]].flags & GRAPH_TENSOR_CONST)))
			return 0;
	return 1;
}

/* Whether Binary n is an fp32 Add or Mul of two tensors with no activation (cpu_dnnl_binary_create takes the shapes). */
static int
dnnl_binary_eligible(const graph_t *g, const struct graph_node *n)
{
	if ((n->attr.binary.fn != GRAPH_BINARY_ADD && n->attr.binary.fn != GRAPH_BINARY_MUL) || n->ninputs != 2 ||
	    n->noutputs != 1 || n->outputs[0] < 0 || n->act != GRAPH_UNARY_NONE ||
	    g->tensors[n->outputs[0]].dtype != GRAPH_DT_F32)
		return 0;
	for (int i = 0; i < 2; i++)
		if (n->inputs[i] < 0 || g->tensors[n->inputs[i]].dtype != GRAPH_DT_F32)
			return 0;
	return 1;
}

/*
 * Whether oneDNN may take node n: a Conv, ConvTranspose, MatMul or Gemm (A
 * not transposed, alpha 1, C added as is) with weights known at load, a
 * pool (a global one only on a source oneDNN leaves blocked: dnnl_pool_pd),
 * a BatchNormalization with constant statistics, or an Add or Mul by a
 * per-channel operand (cpu_dnnl_binary.c); fp32 throughout.  A Concat:
 * dnnl_concat_ok (cpu_dnnl.c), with the plan's shapes.
 */
int
cpu_dnnl_node_eligible(const graph_t *g, const struct graph_node *n)
{
	if (n->op == GRAPH_OP_CONCAT)
		return 1;	/* dnnl_concat_ok decides, with the shapes */
	if (n->op == GRAPH_OP_BATCHNORM)
		return dnnl_bnorm_eligible(g, n);
	if (n->op == GRAPH_OP_BINARY)
		return dnnl_binary_eligible(g, n);
	if (n->op == GRAPH_OP_POOL)
		return n->ninputs >= 1 && n->inputs[0] >= 0 && n->noutputs >= 1 &&
		    g->tensors[n->inputs[0]].dtype == GRAPH_DT_F32 && g->tensors[n->outputs[0]].dtype == GRAPH_DT_F32;
	if (n->op == GRAPH_OP_GEMM && (n->attr.gemm.trans_a || n->attr.gemm.alpha != 1.0f ||
	    (n->ninputs >= 3 && n->inputs[2] >= 0 && n->attr.gemm.beta != 1.0f)))
		return 0;
	if (n->op != GRAPH_OP_CONV && n->op != GRAPH_OP_CONV_TRANSPOSE && n->op != GRAPH_OP_GEMM &&
	    n->op != GRAPH_OP_MATMUL)
		return 0;
	if (n->ninputs < 2 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->noutputs < 1)
		return 0;
	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i] >= 0 && g->tensors[n->inputs[i]].dtype != GRAPH_DT_F32)
			return 0;
	if (g->tensors[n->outputs[0]].dtype != GRAPH_DT_F32)
		return 0;
	return (g->tensors[n->inputs[1]].flags & GRAPH_TENSOR_CONST) != 0;
}

/*
 * Whether Binary n reads its input k as the full operand (the output's
 * shape, 3 to 5 dims) against a per-channel or scalar other one (its dims,
 * right-aligned, 1 or the output's, every spatial one 1): what
 * cpu_dnnl_binary_create takes, the other operand read plain.
 */
int
cpu_dnnl_binary_full(const struct graph_shape *shapes, const struct graph_node *n, int k)
{
	const struct graph_shape *y = &shapes[n->outputs[0]], *o = &shapes[n->inputs[1 - k]];
	int lead = y->ndims - o->ndims;

	if (n->inputs[0] == n->inputs[1] || y->ndims < 3 || y->ndims > 5 || lead < 0 ||
	    !cpu_shape_equal(&shapes[n->inputs[k]], y))
		return 0;
	for (int d = lead; d < y->ndims; d++)
		if (o->dims[d - lead] != 1 && (d >= 2 || o->dims[d - lead] != y->dims[d]))
			return 0;
	return 1;
}

/*
 * Whether every node reading tensor t is one oneDNN may take, Concats
 * aside (so a Concat may write t blocked), a Binary only where t is its
 * full operand (the other is read plain) and t's layout md (NULL:
 * unknown) is channels-last, the only one cpu_dnnl_binary_create takes.
 */
int
cpu_dnnl_read_by_dnnl(const graph_t *g, const struct graph_shape *shapes, int t, const dnnl_memory_desc_t *md)
{
	int any = 0;

	if (g->tensors[t].flags & GRAPH_TENSOR_OUTPUT)
		return 0;
	for (size_t j = 0; j < g->nnodes; j++)
		for (int k = 0; k < g->nodes[j].ninputs; k++) {
			const struct graph_node *r = &g->nodes[j];

			if (r->inputs[k] != t)
				continue;
			if (r->op == GRAPH_OP_CONCAT || !cpu_dnnl_node_eligible(g, r) ||
			    (r->op == GRAPH_OP_BINARY && (md == NULL || !cpu_dnnl_md_channels_last(md, &shapes[t]) ||
			    !cpu_dnnl_binary_full(shapes, r, k))))
				return 0;
			any = 1;
		}
	return any;
}

/* The oneDNN node before i writing tensor t, or NULL. */
static struct dnnl_node *
dnnl_writer(const struct cpu_dnnl_plan *p, size_t i, int t)
{
	for (size_t j = 0; j < i; j++)
		if (p->nodes[j] != NULL && p->nodes[j]->dst_t == t)
			return p->nodes[j];
	return NULL;
}

/*
 * Whether oneDNN node x may write its output blocked at the tensor's own
 * address: not a graph output, not over its own source unless x works in
 * place, not with a residual at that address (its reorder would overwrite
 * itself).
 */
int
cpu_dnnl_out_linkable(const graph_t *g, const struct dnnl_node *x, void *const *ptrs)
{
	int t = x->dst_t;

	return t >= 0 && !(g->tensors[t].flags & GRAPH_TENSOR_OUTPUT) && (x->in_place || ptrs[x->src_t] != ptrs[t]) &&
	    !(x->resid_in.r != NULL && x->resid == x->dst);
}

/*
 * The blocked layout the oneDNN writer of tensor t (a node before i) makes
 * it in, when t may stay in it (cpu_dnnl_out_linkable) and it takes the plain
 * layout's bytes (no channel padding); NULL when t is plain.  Sets *w to
 * the writer.
 */
const dnnl_memory_desc_t *
cpu_dnnl_writer_md(const struct cpu_dnnl_plan *p, const graph_t *g, const struct graph_shape *shapes,
    void *const *ptrs, size_t i, int t, struct dnnl_node **w)
{
	struct dnnl_node *x = dnnl_writer(p, i, t);
	const dnnl_memory_desc_t *md;

	*w = x;
	if (x == NULL || (x->out.r == NULL && x->out.direct == NULL) || !cpu_dnnl_out_linkable(g, x, ptrs))
		return NULL;
	md = dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0);
	return dnnl_memory_desc_get_size(md) == (size_t)cpu_elems(&shapes[t]) * sizeof(float) ? md : NULL;
}
