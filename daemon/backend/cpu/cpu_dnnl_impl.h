/* cpu_dnnl_impl.h: what the oneDNN plan's files share: the engine, plan and node records and their building blocks. */
#ifndef INFERD_CPU_DNNL_IMPL_H
#define INFERD_CPU_DNNL_IMPL_H

#include <dnnl.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_dnnl.h"
#include "cpu_dnnl_weights.h"
#include "cpu_kernels_impl.h"

struct cpu_dnnl {
	dnnl_engine_t eng;
	struct cpu_dnnl_wcache wc;
};

/*
 * A reorder between a tensor in the plan's plain layout and the layout the
 * primitive runs fastest in (oneDNN's blocked nChw16c and the like), through
 * one of the plan's two staging buffers.
 */
struct dnnl_edge {
	dnnl_primitive_t r;		/* NULL: the primitive takes the plain layout, or direct */
	dnnl_memory_t user, blk;
	size_t bytes;			/* of the blocked copy in a staging buffer */
	void *direct;			/* non-NULL: the blocked copy is the tensor itself, here (dnnl_plan_link) */
	dnnl_exec_arg_t args[2];
};

/* One node's primitive, its arguments bound to the plan's addresses. */
struct dnnl_node {
	dnnl_primitive_t prim;
	dnnl_primitive_desc_t pd;
	dnnl_memory_t bias, scratch;		/* NULL when the node has none */
	dnnl_memory_t src1;			/* a Binary's broadcast operand (plain), else NULL */
	dnnl_memory_t stats[4];		/* a BatchNormalization's mean, variance, scale and shift */
	struct dnnl_edge in, out, resid_in;	/* plain -> blocked src, blocked -> plain dst, residual -> dst */
	dnnl_exec_arg_t args[8];
	dnnl_exec_arg_t *cargs;		/* a Concat's arguments (args is too small), else NULL */
	dnnl_memory_t *csrc;		/* a Concat's sources, ncsrc of them */
	const float **cl_src;		/* a channels-last Concat's sources (dnnl_concat_cl), else NULL */
	int64_t *cl_ch, cl_pixels;	/* their channels; the pixels (N x spatial) */
	int nargs, ncsrc;
	int src_t, dst_t;		/* the tensors it reads as source (a Concat: its first) and writes */
	int in_k;			/* the node's input the in edge reads: 0, or a Binary's full operand */
	size_t absorbs;			/* the next node, whose work this primitive does too (a ReLU), or 0 */
	int in_place;			/* the primitive may write over its source (element by element) */
	struct dnnl_weights *w;
	const float *resid;		/* fused residual: copied into dst for the sum post-op */
	float *dst;
	size_t dst_elems, plane;	/* the output's elements, one output plane's */
	int64_t nplanes, nch;		/* output planes (N x M), output channels */
	const struct graph_node *n;	/* for an activation oneDNN does not run */
	int serial;			/* made for and run on one thread (DNNL_SERIAL_MACS) */
};

struct cpu_dnnl_plan {
	struct cpu_dnnl *d;
	dnnl_stream_t stream;
	size_t nnodes;
	struct dnnl_node **nodes;	/* NULL where the kernel library runs the node, or an earlier node absorbs it */
	void *scratch;
	void *stage[2];			/* blocked copies of a node's input and output */
};

/* 0, or -1 with *cause naming the oneDNN call and its status. */
int cpu_dnnl_check(dnnl_status_t st, const char *what, char **cause);
/* Plain (row-major) layout tag of ndims dims. */
dnnl_format_tag_t cpu_dnnl_plain_tag(int ndims);
/* The plain fp32 layout of shape s into *md. */
int cpu_dnnl_plain_md(const struct graph_shape *s, dnnl_memory_desc_t *md, char **cause);
/* Attributes asking for a user scratchpad (the plan's) into *attr. */
int cpu_dnnl_scratch_attr(dnnl_primitive_attr_t *attr, char **cause);
/*
 * The primitive descriptor of op od with attributes attr (destroyed here)
 * into *pd; NULL there when oneDNN has no implementation for it, so that the
 * kernel library keeps the node.  what names the primitive in messages.
 */
int cpu_dnnl_pd_create(struct cpu_dnnl *d, const_dnnl_op_desc_t od, dnnl_primitive_attr_t attr, const char *what,
    dnnl_primitive_desc_t *pd, char **cause);

/* Whether pd runs oneDNN's reference (unvectorised) implementation. */
int cpu_dnnl_pd_is_ref(const_dnnl_primitive_desc_t pd);
/* Set up e between plain tensor ptr (layout user) and the primitive's layout blk; to_blk: plain is the source. */
int cpu_dnnl_edge_init(struct cpu_dnnl *d, const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *blk, void *ptr,
    int to_blk, struct dnnl_edge *e, char **cause);
/* Make e's reorder read the tensor at ptr in layout md, not plain (dry: only say whether it can): 1 done, 0 no jit reorder for it, -1 error. */
int cpu_dnnl_edge_rebase(struct cpu_dnnl *d, struct dnnl_edge *e, const dnnl_memory_desc_t *md, void *ptr, int dry,
    char **cause);
/* Make e direct: its blocked copy is the tensor at ptr, its reorder gone. */
int cpu_dnnl_edge_direct(struct dnnl_edge *e, void *ptr, char **cause);
/* Free one node's primitive, memory objects and weight reference (NULL is fine). */
void cpu_dnnl_node_free(struct cpu_dnnl *d, struct dnnl_node *x);

/* Whether oneDNN may take node n (its shapes aside): see cpu_dnnl_node.c. */
int cpu_dnnl_node_eligible(const graph_t *g, const struct graph_node *n);
/* Whether Binary n reads input k as its full operand against a per-channel or scalar one (cpu_dnnl_node.c). */
int cpu_dnnl_binary_full(const struct graph_shape *shapes, const struct graph_node *n, int k);
/* The fp32 channels-last layout (nwc, nhwc, ndhwc) of shape s into *md; -1 when s has none (not 3-5 dims). */
int cpu_dnnl_channels_last_md(const struct graph_shape *s, dnnl_memory_desc_t *md);
/* Whether md is shape s channels-last (nwc, nhwc, ndhwc) with nothing padded. */
int cpu_dnnl_md_channels_last(const dnnl_memory_desc_t *md, const struct graph_shape *s);
/*
 * Whether every node reading tensor t (in layout md; NULL: unknown) is one
 * oneDNN may take as it is, Concats aside (so a Concat may write t blocked).
 */
int cpu_dnnl_read_by_dnnl(const graph_t *g, const struct graph_shape *shapes, int t, const dnnl_memory_desc_t *md);
/* Whether oneDNN node x may write its output blocked at the tensor's own address. */
int cpu_dnnl_out_linkable(const graph_t *g, const struct dnnl_node *x, void *const *ptrs);
/*
 * The blocked layout the oneDNN writer of tensor t (a node before i) makes
 * it in, when t may stay in it and it takes the plain layout's bytes; NULL
 * when t is plain.  Sets *w to the writer (NULL when oneDNN writes no t).
 */
const dnnl_memory_desc_t *cpu_dnnl_writer_md(const struct cpu_dnnl_plan *p, const graph_t *g,
    const struct graph_shape *shapes, void *const *ptrs, size_t i, int t, struct dnnl_node **w);

/* The oneDNN node for Add or Mul c by a per-channel operand, or NULL (*out) for the kernel library. */
int cpu_dnnl_binary_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out,
    char **cause);
/* The oneDNN node for BatchNormalization c (a ReLU after it absorbed), or NULL (*out) for the kernel library. */
int cpu_dnnl_bnorm_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out,
    char **cause);

#endif
