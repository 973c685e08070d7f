/* cpu_dnnl_binary.c: Add and Mul of a tensor oneDNN leaves blocked by a per-channel or scalar operand as oneDNN's binary primitive, so a squeeze-excitation block's scale * x needs no reorders. */
#include "config.h"

#include <dnnl.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "cpu_dnnl_impl.h"
#include "error.h"

/* Whether byte ranges a (an bytes) and b (bn bytes) share no byte. */
static int
dnnl_disjoint(const void *a, size_t an, const void *b, size_t bn)
{
	const char *x = a, *y = b;

	return x + an <= y || y + bn <= x;
}

/*
 * The input of Binary c oneDNN takes as its full operand, its layout the
 * channels-last one its oneDNN writer makes (*md), or -1: the kernel library
 * keeps the node.  Over a plain full operand oneDNN would only add reorders
 * (one pass over the tensor either way); over one another reader takes
 * plain, the writer's reorder to plain stays and this node's own would be
 * extra; over channel blocks (aBcd8b after grouped Convs) oneDNN 2.6 has
 * only its reference binary, 1.1 ms where the kernel library's Mul takes
 * microseconds.
 * The output may be the full operand's bytes (oneDNN's binary works in
 * place) but no other byte of either operand: it is written while they are read.
 */
static int
dnnl_binary_full_input(const struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, const dnnl_memory_desc_t **md)
{
	size_t i = (size_t)(c->n - c->g->nodes), ybytes = (size_t)cpu_elems(cpu_out_shape(c, 0)) * sizeof(float);
	const void *y = cpu_out(c, 0);
	struct dnnl_node *w;

	for (int k = 0; k < 2; k++) {
		int t = c->n->inputs[k];
		const void *x = cpu_in(c, k), *o = cpu_in(c, 1 - k);

		if (!cpu_dnnl_binary_full(c->shapes, c->n, k) || ybytes == 0 ||
		    (*md = cpu_dnnl_writer_md(p, c->g, c->shapes, c->ptrs, i, t, &w)) == NULL ||
		    !cpu_dnnl_md_channels_last(*md, &c->shapes[t]) || !cpu_dnnl_read_by_dnnl(c->g, c->shapes, t, *md))
			continue;
		if ((x != y && !dnnl_disjoint(x, ybytes, y, ybytes)) ||
		    !dnnl_disjoint(o, (size_t)cpu_elems(cpu_in_shape(c, 1 - k)) * sizeof(float), y, ybytes))
			return -1;
		return k;
	}
	return -1;
}

/*
 * The primitive descriptor of Binary c: its full operand (input k) in
 * layout src0, the other plain with the full one's rank (*src1), the output
 * in the layout oneDNN picks (src0's); NULL (*pd) when oneDNN has none.
 */
static int
dnnl_binary_pd(struct cpu_dnnl *d, const struct cpu_node_ctx *c, int k, const dnnl_memory_desc_t *src0,
    dnnl_memory_desc_t *src1, dnnl_primitive_desc_t *pd, char **cause)
{
	const struct graph_shape *ys = cpu_out_shape(c, 0), *os = cpu_in_shape(c, 1 - k);
	struct graph_shape s1 = { .ndims = ys->ndims };
	int lead = ys->ndims - os->ndims;
	dnnl_memory_desc_t dany;
	dnnl_binary_desc_t bd;
	dnnl_primitive_attr_t attr;
	dnnl_dims_t yd;

	*pd = NULL;
	for (int j = 0; j < ys->ndims; j++) {
		s1.dims[j] = j < lead ? 1 : os->dims[j - lead];
		yd[j] = ys->dims[j];
	}
	if (cpu_dnnl_plain_md(&s1, src1, cause) != 0 ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&dany, ys->ndims, yd, dnnl_f32, dnnl_format_tag_any), "md",
	    cause) != 0)
		return -1;
	if (dnnl_binary_desc_init(&bd, c->n->attr.binary.fn == GRAPH_BINARY_MUL ? dnnl_binary_mul : dnnl_binary_add,
	    src0, src1, &dany) != dnnl_success)
		return 0;
	if (cpu_dnnl_scratch_attr(&attr, cause) != 0)
		return -1;
	return cpu_dnnl_pd_create(d, &bd, attr, "binary", pd, cause);
}

/* Bind x's arguments: the full operand (input k) and the output through reorders, the other operand plain (src1). */
static int
dnnl_binary_bind(struct cpu_dnnl *d, struct dnnl_node *x, const struct cpu_node_ctx *c, int k,
    const dnnl_memory_desc_t *src1, char **cause)
{
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(x->pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0);
	dnnl_memory_desc_t plain;

	if (cpu_dnnl_plain_md(cpu_out_shape(c, 0), &plain, cause) != 0 ||
	    cpu_dnnl_edge_init(d, &plain, smd, (void *)cpu_in(c, k), 1, &x->in, cause) != 0 ||
	    cpu_dnnl_edge_init(d, &plain, dmd, cpu_out(c, 0), 0, &x->out, cause) != 0 ||
	    cpu_dnnl_check(dnnl_memory_create(&x->src1, src1, d->eng, (void *)cpu_in(c, 1 - k)), "memory_create",
	    cause) != 0)
		return -1;
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SRC_0, x->in.r != NULL ? x->in.blk : x->in.user };
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SRC_1, x->src1 };
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_DST, x->out.r != NULL ? x->out.blk : x->out.user };
	return 0;
}

/* The oneDNN node for Add or Mul c by a per-channel or scalar operand, or NULL (*out) when the kernel library keeps it. */
int
cpu_dnnl_binary_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	const dnnl_memory_desc_t *src0;
	dnnl_memory_desc_t src1;
	struct dnnl_node *x;
	int k;

	*out = NULL;
	if ((k = dnnl_binary_full_input(p, c, &src0)) < 0)
		return 0;
	if ((x = xcalloc(1, sizeof *x)) == NULL)
		return error_set(cause, "out of memory");
	if (dnnl_binary_pd(p->d, c, k, src0, &src1, &x->pd, cause) != 0)
		goto fail;
	/* Only a vectorised binary beats the kernel library's one pass over a plain copy. */
	if (x->pd == NULL || cpu_dnnl_pd_is_ref(x->pd)) {
		cpu_dnnl_node_free(p->d, x);
		return 0;
	}
	if (cpu_dnnl_check(dnnl_primitive_create(&x->prim, x->pd), "primitive_create", cause) != 0 ||
	    dnnl_binary_bind(p->d, x, c, k, &src1, cause) != 0)
		goto fail;
	x->in_k = k;
	x->in_place = 1;	/* oneDNN's binary may write over its first source */
	x->dst = cpu_out(c, 0);
	x->dst_elems = (size_t)cpu_elems(cpu_out_shape(c, 0));
	x->n = c->n;
	*out = x;
	return 0;
fail:
	cpu_dnnl_node_free(p->d, x);
	return -1;
}
