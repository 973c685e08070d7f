/* cpu_dnnl.c: Conv, ConvTranspose, pools, channel Concat, BatchNormalization and Gemm/MatMul with constant weights through oneDNN: primitives made once per plan, tensors kept blocked between them. */
#include "config.h"

#include <dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cpu_conv_geom.h"
#include "cpu_dnnl_impl.h"
#include "error.h"

/* Alignment of buffers oneDNN reads with vector loads. */
#define DNNL_BUF_ALIGN 64

/*
 * Multiply-adds (a pool, a BatchNormalization: input elements) below which
 * a node's primitives are made and run on the calling thread alone: some 20
 * to 40 us on one core, about what waking the other workers and waiting for
 * them costs once the machine is busy (mobilenet_v3_small at batch 1, 52
 * such convolutions, ran three times slower on two threads than on one
 * beside other work).
 */
#define DNNL_SERIAL_MACS (1 << 20)

/*
 * What one element of a memory-bound node (a pool, a BatchNormalization, a
 * Concat, a Binary) weighs against DNNL_SERIAL_MACS: reading and writing it
 * costs about what 32 multiply-adds do, so such a node runs on every thread
 * from 32K elements on, as the kernel library's loops do (CPU_PARALLEL_MIN).
 * Counted as plain multiply-adds, densenet121's BatchNormalizations under
 * 1M elements (its later blocks, 170 us each at batch 8) ran on one thread
 * and took the same time at two threads as at one.
 */
#define DNNL_ELEMENT_MACS 32

/*
 * Weight elements from which a node runs on every thread however few its
 * multiply-adds: at one row a Gemm or Conv streams its weights once, and
 * that, not the arithmetic, is its time (mobilenet_v3_small's 1024 x 1000
 * classifier, 1M multiply-adds, took 200 us on one core for its 4 MB);
 * 2^18 floats (1 MiB) take some 50 us, and two cores' caches and memory
 * paths stream them in about half that.
 */
#define DNNL_SERIAL_WEIGHTS (1 << 18)

/* Open the CPU engine. */
int
cpu_dnnl_open(struct cpu_dnnl **out, char **cause)
{
	struct cpu_dnnl *d = xcalloc(1, sizeof *d);
	int err;

	if (d == NULL)
		return error_set(cause, "out of memory");
	if ((err = pthread_mutex_init(&d->wc.lock, NULL)) != 0) {
		free(d);
		return error_set(cause, "pthread_mutex_init: %s", strerror(err));
	}
	if (cpu_dnnl_check(dnnl_engine_create(&d->eng, dnnl_cpu, 0), "engine_create", cause) != 0) {
		pthread_mutex_destroy(&d->wc.lock);
		free(d);
		return -1;
	}
	*out = d;
	return 0;
}

/* Close the engine. */
void
cpu_dnnl_close(struct cpu_dnnl *d)
{
	if (d == NULL)
		return;
	dnnl_engine_destroy(d->eng);
	pthread_mutex_destroy(&d->wc.lock);
	free(d);
}

/* oneDNN's post-op for an activation it computes exactly as the kernel library does; 0 for none. */
static int
dnnl_act_alg(const struct graph_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
	*alpha = 0.0f;
	*beta = 0.0f;
	switch (n->act) {
	case GRAPH_UNARY_RELU: *alg = dnnl_eltwise_relu; return 1;
	case GRAPH_UNARY_LEAKY_RELU: *alg = dnnl_eltwise_relu; *alpha = n->act_alpha; return 1;
	case GRAPH_UNARY_CLIP: *alg = dnnl_eltwise_clip; *alpha = n->act_alpha; *beta = n->act_beta; return 1;
	case GRAPH_UNARY_HARD_SWISH: *alg = dnnl_eltwise_hardswish; return 1;
	default: return 0;
	}
}

/* Attributes: a user scratchpad, the residual sum and the activation as post-ops. */
static int
dnnl_node_attr(const struct graph_node *n, int resid, dnnl_primitive_attr_t *attr, char **cause)
{
	dnnl_post_ops_t po = NULL;
	dnnl_alg_kind_t alg;
	float alpha, beta;
	int rc = -1;

	if (cpu_dnnl_scratch_attr(attr, cause) != 0)
		return -1;
	if (cpu_dnnl_check(dnnl_post_ops_create(&po), "post_ops_create", cause) != 0)
		goto out;
	if (resid && cpu_dnnl_check(dnnl_post_ops_append_sum(po, 1.0f), "post_ops_append_sum", cause) != 0)
		goto out;
	if (dnnl_act_alg(n, &alg, &alpha, &beta) &&
	    cpu_dnnl_check(dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta), "append_eltwise", cause) != 0)
		goto out;
	rc = cpu_dnnl_check(dnnl_primitive_attr_set_post_ops(*attr, po), "set_post_ops", cause);
out:
	if (po != NULL)
		dnnl_post_ops_destroy(po);
	if (rc != 0) {
		dnnl_primitive_attr_destroy(*attr);
		*attr = NULL;
	}
	return rc;
}

/* The memory descriptors of a Conv (transpose 0) or ConvTranspose node's data, bias and user weights. */
struct dnnl_conv_mds {
	dnnl_memory_desc_t src, dst, sany, dany, bias, wany, wuser;
	dnnl_dims_t strides, dil, pl, pr;
};

/* m's source and destination layouts (dims xd and yd, nd of them), plain and "any". */
static int
dnnl_data_mds(struct dnnl_conv_mds *m, int nd, const dnnl_dims_t xd, const dnnl_dims_t yd, char **cause)
{
	dnnl_format_tag_t plain = cpu_dnnl_plain_tag(nd);

	return cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->src, nd, xd, dnnl_f32, plain), "md", cause) ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->dst, nd, yd, dnnl_f32, plain), "md", cause) ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->sany, nd, xd, dnnl_f32, dnnl_format_tag_any), "md", cause) ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->dany, nd, yd, dnnl_f32, dnnl_format_tag_any), "md", cause) ?
	    -1 : 0;
}

/* Fill m from the window geometry w (ns spatial dims), group count and the node's attributes. */
static int
dnnl_conv_mds_init(const struct cpu_window *w, const struct graph_window_attr *a, int64_t group, int transpose,
    struct dnnl_conv_mds *m, char **cause)
{
	int ns = a->nspatial, off = 3 - ns, g = group > 1, wn = ns + 2 + g;
	dnnl_dims_t xd = { w->n, w->c }, yd = { w->n, w->m }, wd, ws, bd = { w->m };
	int64_t oc = w->m / group, ic = w->c / group;

	for (int i = 0; i < ns; i++) {
		xd[2 + i] = w->in[off + i];
		yd[2 + i] = w->out[off + i];
		wd[g + 2 + i] = w->k[off + i];
		m->strides[i] = w->s[off + i];
		m->dil[i] = w->d[off + i] - 1;
		m->pl[i] = w->pb[off + i];
		m->pr[i] = w->pe[off + i] - (transpose ? a->output_padding[i] : 0);
	}
	if (g)
		wd[0] = group;
	wd[g] = oc;
	wd[g + 1] = ic;
	/* Row-major strides of the ONNX weight: Conv [G, oc, ic, k...], ConvTranspose [G, ic, oc, k...]. */
	ws[wn - 1] = 1;
	for (int i = wn - 2; i >= g + 2; i--)
		ws[i] = ws[i + 1] * wd[i + 1];
	ws[g + (transpose ? 0 : 1)] = w->k_sz;
	ws[g + (transpose ? 1 : 0)] = w->k_sz * (transpose ? oc : ic);
	if (g)
		ws[0] = oc * ic * w->k_sz;
	if (dnnl_data_mds(m, ns + 2, xd, yd, cause) != 0 ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->bias, 1, bd, dnnl_f32, dnnl_a), "md", cause) ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->wany, wn, wd, dnnl_f32, dnnl_format_tag_any), "md", cause) ||
	    cpu_dnnl_check(dnnl_memory_desc_init_by_strides(&m->wuser, wn, wd, dnnl_f32, ws), "md", cause))
		return -1;
	return 0;
}

/* The primitive descriptor of node c with source and destination layouts src and dst, or NULL (*pd) when oneDNN has none. */
static int
dnnl_conv_pd_as(struct cpu_dnnl *d, const struct cpu_node_ctx *c, const struct dnnl_conv_mds *m, int transpose,
    const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst, dnnl_primitive_desc_t *pd, char **cause)
{
	const dnnl_memory_desc_t *bias = cpu_has_in(c, 2) ? &m->bias : NULL;
	dnnl_primitive_attr_t attr;
	dnnl_convolution_desc_t cd;
	dnnl_deconvolution_desc_t dd;
	dnnl_status_t st;

	*pd = NULL;
	if (transpose)
		st = dnnl_dilated_deconvolution_forward_desc_init(&dd, dnnl_forward_inference, dnnl_deconvolution_direct,
		    src, &m->wany, bias, dst, m->strides, m->dil, m->pl, m->pr);
	else
		st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
		    src, &m->wany, bias, dst, m->strides, m->dil, m->pl, m->pr);
	/* A geometry oneDNN does not describe (a negative end pad, say) stays with the kernel library. */
	if (st != dnnl_success)
		return 0;
	if (dnnl_node_attr(c->n, cpu_has_in(c, 3), &attr, cause) != 0)
		return -1;
	return cpu_dnnl_pd_create(d, transpose ? (const_dnnl_op_desc_t)&dd : (const_dnnl_op_desc_t)&cd, attr,
	    transpose ? "deconvolution" : "convolution", pd, cause);
}

/*
 * The primitive descriptor of node c, or NULL (*pd) when oneDNN has no
 * implementation for it.  A ConvTranspose first asks for channels-last
 * source and destination, the layout the Convs around it here work in: left
 * to choose, oneDNN 2.6 picks 16-channel blocks for it, and a UNet's decoder
 * then reordered every ConvTranspose's input and output (a quarter of its
 * batch-1 time on one thread).  Where only oneDNN's reference kernel takes
 * channels-last, the choice goes back to oneDNN.
 */
static int
dnnl_conv_pd(struct cpu_dnnl *d, const struct cpu_node_ctx *c, const struct dnnl_conv_mds *m, int transpose,
    dnnl_primitive_desc_t *pd, char **cause)
{
	dnnl_memory_desc_t src, dst;

	*pd = NULL;
	if (transpose && cpu_dnnl_channels_last_md(cpu_in_shape(c, 0), &src) == 0 &&
	    cpu_dnnl_channels_last_md(cpu_out_shape(c, 0), &dst) == 0) {
		if (dnnl_conv_pd_as(d, c, m, transpose, &src, &dst, pd, cause) != 0)
			return -1;
		if (*pd != NULL && !cpu_dnnl_pd_is_ref(*pd))
			return 0;
		if (*pd != NULL)
			dnnl_primitive_desc_destroy(*pd);
		*pd = NULL;
	}
	return dnnl_conv_pd_as(d, c, m, transpose, &m->sany, &m->dany, pd, cause);
}

/* Bind x's arguments: memory objects over the plan's addresses, reorders where the primitive wants blocks. */
static int
dnnl_node_bind(struct cpu_dnnl *d, struct dnnl_node *x, const struct cpu_node_ctx *c,
    const struct dnnl_conv_mds *m, char **cause)
{
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(x->pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0);

	if (cpu_dnnl_edge_init(d, &m->src, smd, (void *)cpu_in(c, 0), 1, &x->in, cause) != 0 ||
	    cpu_dnnl_edge_init(d, &m->dst, dmd, cpu_out(c, 0), 0, &x->out, cause) != 0 ||
	    (c->n->op == GRAPH_OP_CONV && cpu_has_in(c, 3) && x->out.r != NULL &&
	    cpu_dnnl_edge_init(d, &m->dst, dmd, (void *)cpu_in(c, 3), 1, &x->resid_in, cause) != 0))
		return -1;
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, x->in.r != NULL ? x->in.blk : x->in.user };
	if (x->w != NULL)
		x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, x->w->mem };
	x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_DST, x->out.r != NULL ? x->out.blk : x->out.user };
	if (c->n->op != GRAPH_OP_POOL && cpu_has_in(c, 2)) {
		if (cpu_dnnl_check(dnnl_memory_create(&x->bias, &m->bias, d->eng, (void *)cpu_in(c, 2)), "memory_create",
		    cause) != 0)
			return -1;
		x->args[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, x->bias };
	}
	return 0;
}

/*
 * Whether oneDNN concatenates node n for these shapes: fp32 inputs of 3 to
 * 5 dims joined along the channels (axis 1), no fused activation, no input
 * at the output's address, something to write, and only oneDNN nodes
 * reading the result.  Into a plain result the kernel library's copies are
 * faster: densenet's Concats of up to 48 blocked 32-channel sources, one
 * reorder each, ran some 20% slower at batch 8.
 */
static int
dnnl_concat_ok(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes, void *const *ptrs)
{
	int t = n->noutputs >= 1 ? n->outputs[0] : -1, nd;
	int64_t axis;

	if (n->op != GRAPH_OP_CONCAT || t < 0 || n->ninputs < 1 || n->act != GRAPH_UNARY_NONE ||
	    g->tensors[t].dtype != GRAPH_DT_F32 || cpu_elems(&shapes[t]) == 0 || !cpu_dnnl_read_by_dnnl(g, shapes, t, NULL))
		return 0;
	nd = shapes[t].ndims;
	axis = n->attr.concat.axis < 0 ? n->attr.concat.axis + nd : n->attr.concat.axis;
	if (nd < 3 || nd > 5 || axis != 1)
		return 0;
	for (int k = 0; k < n->ninputs; k++)
		if (n->inputs[k] < 0 || g->tensors[n->inputs[k]].dtype != GRAPH_DT_F32 ||
		    shapes[n->inputs[k]].ndims != nd || ptrs[n->inputs[k]] == ptrs[t])
			return 0;
	return 1;
}

/* Whether every node reading tensor t is a Concat oneDNN joins (dnnl_concat_ok), so t may stay blocked. */
static int
dnnl_read_by_concats(const graph_t *g, const struct graph_shape *shapes, void *const *ptrs, int t)
{
	int any = 0;

	for (size_t j = 0; j < g->nnodes; j++)
		for (int k = 0; k < g->nodes[j].ninputs; k++) {
			if (g->nodes[j].inputs[k] != t)
				continue;
			if (!dnnl_concat_ok(g, &g->nodes[j], shapes, ptrs))
				return 0;
			any = 1;
		}
	return any;
}

static int dnnl_link_reader_ok(const struct dnnl_node *y, const struct graph_node *r, void *const *ptrs, int t,
    int k, const dnnl_memory_desc_t *md);

/*
 * Whether tensor t, which its oneDNN writer makes in layout md, may stay in
 * it for Concat c (node i) beside readers that are not Concats: every other
 * reader is a Concat oneDNN joins that comes after c (it will find t
 * blocked), or a oneDNN node made before c taking t as its source in md
 * through a reorder (dnnl_link_reader_ok), such as the pool beside a UNet's
 * skip connection.  Those nodes then read t in place: without this the skip
 * tensor went to the plain layout and back for the pool, two passes over it.
 */
static int
dnnl_concat_src_shared(const struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, size_t i, int t,
    const dnnl_memory_desc_t *md)
{
	int others = 0;

	for (size_t j = 0; j < c->g->nnodes; j++) {
		const struct graph_node *r = &c->g->nodes[j];

		for (int k = 0; k < r->ninputs; k++) {
			if (r->inputs[k] != t || j == i)
				continue;
			if (dnnl_concat_ok(c->g, r, c->shapes, c->ptrs)) {
				if (j < i)
					return 0;
				continue;
			}
			if (j > i || p->nodes[j] == NULL || k != p->nodes[j]->in_k ||
			    !dnnl_link_reader_ok(p->nodes[j], r, c->ptrs, t, k, md))
				return 0;
			others++;
		}
	}
	return others > 0;
}

/* The readers dnnl_concat_src_shared accepted read tensor t in place. */
static int
dnnl_concat_src_share(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, size_t i, int t, char **cause)
{
	for (size_t j = 0; j < i; j++) {
		const struct graph_node *r = &c->g->nodes[j];

		for (int k = 0; k < r->ninputs; k++)
			if (r->inputs[k] == t && !dnnl_concat_ok(c->g, r, c->shapes, c->ptrs) &&
			    cpu_dnnl_edge_direct(&p->nodes[j]->in, c->ptrs[t], cause) != 0)
				return -1;
	}
	return 0;
}

/*
 * The layouts of Concat c's non-empty sources into mds (their tensors in
 * ts), *n of them, and how many are blocked (*blocked).  A source whose oneDNN
 * writer makes it blocked and whose readers are all such Concats stays
 * blocked: the writer now writes it at the tensor's own address (and so
 * when the other readers take it in that layout: dnnl_concat_src_shared).
 */
static int
dnnl_concat_srcs(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, dnnl_memory_desc_t *mds, int *ts, int *n,
    int *blocked, char **cause)
{
	size_t i = (size_t)(c->n - c->g->nodes);

	*n = 0;
	*blocked = 0;
	for (int k = 0; k < c->n->ninputs; k++) {
		int t = c->n->inputs[k];
		const struct graph_shape *s = &c->shapes[t];
		const dnnl_memory_desc_t *md;
		struct dnnl_node *w;

		if (cpu_elems(s) == 0)
			continue;
		md = cpu_dnnl_writer_md(p, c->g, c->shapes, c->ptrs, i, t, &w);
		if (md != NULL && (w->out.direct != NULL || dnnl_read_by_concats(c->g, c->shapes, c->ptrs, t) ||
		    dnnl_concat_src_shared(p, c, i, t, md))) {
			if (w->out.direct == NULL && (cpu_dnnl_edge_direct(&w->out, c->ptrs[t], cause) != 0 ||
			    dnnl_concat_src_share(p, c, i, t, cause) != 0))
				return -1;
			mds[*n] = *md;
			(*blocked)++;
		} else if (cpu_dnnl_plain_md(s, &mds[*n], cause) != 0) {
			return -1;
		}
		ts[(*n)++] = t;
	}
	return 0;
}

/*
 * Concat c's primitive descriptor over sources mds (their tensors ts, n of
 * them, blocked of them blocked); the plain layout of its output into *dst.
 */
static int
dnnl_concat_pd(struct cpu_dnnl *d, const struct cpu_node_ctx *c, const dnnl_memory_desc_t *mds, const int *ts, int n,
    int blocked, dnnl_memory_desc_t *dst, dnnl_primitive_desc_t *pd, char **cause)
{
	const struct graph_shape *ys = cpu_out_shape(c, 0);
	dnnl_memory_desc_t cl;
	dnnl_primitive_attr_t attr;
	const dnnl_memory_desc_t *want;
	dnnl_status_t st;
	int any_cl = 0;

	if (cpu_dnnl_plain_md(ys, dst, cause) != 0)
		return -1;
	for (int k = 0; k < n; k++)
		any_cl |= cpu_dnnl_md_channels_last(&mds[k], &c->shapes[ts[k]]);
	/*
	 * A channels-last source: the result channels-last too, the layout the
	 * Convs after it take (a UNet's decoder joins a ConvTranspose's 16-channel
	 * blocks and a channels-last skip tensor: its result went to blocks, to
	 * plain and to channels-last, three passes where one does).  Else all
	 * sources blocked: no destination layout given, oneDNN keeps theirs for
	 * the readers to take.  Mixed ones go plain: a blocked result would cost a
	 * reorder to plain and another out of it.
	 */
	want = blocked == n ? NULL : dst;
	if (any_cl && cpu_dnnl_channels_last_md(ys, &cl) == 0)
		want = &cl;
	if (cpu_dnnl_scratch_attr(&attr, cause) != 0)
		return -1;
	st = dnnl_concat_primitive_desc_create(pd, want, n, 1, mds, attr, d->eng);
	dnnl_primitive_attr_destroy(attr);
	return cpu_dnnl_check(st, "concat_primitive_desc_create", cause);
}

/*
 * Let Concat x (sources mds of tensors ts, n of them) join channels-last
 * sources into a channels-last result by hand (dnnl_node_exec): oneDNN
 * 2.6's concat copies each pixel's run of each source's channels with an
 * overhead that dominates runs this short (densenet's 32 channels: 10.6 ms
 * of its 62 Concats at batch 8 on one thread; about 4.5 ms in this loop).
 */
static int
dnnl_concat_cl(struct dnnl_node *x, const struct cpu_node_ctx *c, const dnnl_memory_desc_t *mds, const int *ts,
    int n, char **cause)
{
	const struct graph_shape *ys = cpu_out_shape(c, 0);

	if (!cpu_dnnl_md_channels_last(dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0), ys))
		return 0;
	for (int k = 0; k < n; k++)
		if (!cpu_dnnl_md_channels_last(&mds[k], &c->shapes[ts[k]]))
			return 0;
	if ((x->cl_src = xcalloc((size_t)n, sizeof *x->cl_src)) == NULL ||
	    (x->cl_ch = xcalloc((size_t)n, sizeof *x->cl_ch)) == NULL)
		return error_set(cause, "out of memory");
	for (int k = 0; k < n; k++) {
		x->cl_src[k] = c->ptrs[ts[k]];
		x->cl_ch[k] = c->shapes[ts[k]].dims[1];
	}
	x->cl_pixels = cpu_elems(ys) / ys->dims[1];
	x->nch = ys->dims[1];
	return 0;
}

/*
 * The oneDNN node for Concat c (NULL in *out when oneDNN does not join it):
 * its sources as their writers left them, blocked or plain, in one pass.
 */
static int
dnnl_concat_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	int n, blocked, *ts = xcalloc((size_t)c->n->ninputs, sizeof *ts);
	dnnl_memory_desc_t *mds = xcalloc((size_t)c->n->ninputs, sizeof *mds), dst;
	struct dnnl_node *x = xcalloc(1, sizeof *x);

	*out = NULL;
	if (ts == NULL || mds == NULL || x == NULL || (x->csrc = xcalloc((size_t)c->n->ninputs, sizeof *x->csrc)) == NULL ||
	    (x->cargs = xcalloc((size_t)c->n->ninputs + 3, sizeof *x->cargs)) == NULL) {
		error_set(cause, "out of memory");
		goto fail;
	}
	if (dnnl_concat_srcs(p, c, mds, ts, &n, &blocked, cause) != 0 ||
	    dnnl_concat_pd(p->d, c, mds, ts, n, blocked, &dst, &x->pd, cause) != 0 ||
	    cpu_dnnl_check(dnnl_primitive_create(&x->prim, x->pd), "primitive_create", cause) != 0)
		goto fail;
	for (int k = 0; k < n; k++) {
		if (cpu_dnnl_check(dnnl_memory_create(&x->csrc[k], &mds[k], p->d->eng, c->ptrs[ts[k]]), "memory_create",
		    cause) != 0)
			goto fail;
		x->ncsrc++;
		x->cargs[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_MULTIPLE_SRC + k, x->csrc[k] };
	}
	if (cpu_dnnl_edge_init(p->d, &dst, dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0), cpu_out(c, 0), 0,
	    &x->out, cause) != 0)
		goto fail;
	x->cargs[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_DST, x->out.r != NULL ? x->out.blk : x->out.user };
	if (dnnl_concat_cl(x, c, mds, ts, n, cause) != 0)
		goto fail;
	x->dst = cpu_out(c, 0);
	x->dst_elems = (size_t)cpu_elems(cpu_out_shape(c, 0));
	x->n = c->n;
	*out = x;
	free(ts);
	free(mds);
	return 0;
fail:
	cpu_dnnl_node_free(p->d, x);
	free(ts);
	free(mds);
	return -1;
}

/*
 * The pool's primitive descriptor, or NULL (*pd) when oneDNN does not
 * compute it as the kernel library does: an average whose ceil_mode window
 * overhangs the end padding, counting padding, would count the overhang.
 */
static int
dnnl_pool_pd(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, const struct cpu_window *w,
    struct dnnl_conv_mds *m, dnnl_primitive_desc_t *pd, char **cause)
{
	const struct graph_pool_attr *a = &c->n->attr.pool;
	const dnnl_memory_desc_t *bsrc;
	struct dnnl_node *writer;
	int ns = a->global ? cpu_in_shape(c, 0)->ndims - 2 : a->w.nspatial, off = 3 - ns;
	dnnl_dims_t xd = { w->n, w->c }, yd = { w->n, w->c }, k;
	dnnl_primitive_attr_t attr;
	dnnl_pooling_v2_desc_t pdsc;
	dnnl_alg_kind_t alg;

	*pd = NULL;
	for (int i = 0; i < ns; i++) {
		int64_t j = off + i, span = (w->k[j] - 1) * w->d[j] + 1;

		xd[2 + i] = w->in[j];
		yd[2 + i] = w->out[j];
		k[i] = w->k[j];
		m->strides[i] = w->s[j];
		m->dil[i] = w->d[j] - 1;
		m->pl[i] = w->pb[j];
		/* The end pad the last window reaches: past pad_end only under ceil_mode. */
		m->pr[i] = (w->out[j] - 1) * w->s[j] + span - w->in[j] - w->pb[j];
		if (a->kind == GRAPH_POOL_AVG && a->count_include_pad && m->pr[i] > w->pe[j])
			return 0;
		m->pr[i] = m->pr[i] > w->pe[j] ? m->pr[i] : w->pe[j];
	}
	alg = a->kind == GRAPH_POOL_MAX ? dnnl_pooling_max :
	    a->count_include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
	if (dnnl_data_mds(m, ns + 2, xd, yd, cause) != 0)
		return -1;
	/*
	 * Pooling takes its source in the layout given (no "any"): the blocked
	 * one its oneDNN writer makes (dnnl_plan_link may then drop both
	 * reorders), else the plain one; the output as it likes.  A global pool
	 * stays with the kernel library unless its source is channels-last and
	 * only oneDNN reads it (a squeeze-excitation block's): over plain planes
	 * both make one pass, and a reorder would only add one.  Channels-last
	 * only, as for the Binary beside it (cpu_dnnl_binary.c), so that the two
	 * agree on whether the source may stay blocked.
	 */
	bsrc = cpu_dnnl_writer_md(p, c->g, c->shapes, c->ptrs, (size_t)(c->n - c->g->nodes), c->n->inputs[0], &writer);
	if (a->global && (bsrc == NULL || !cpu_dnnl_md_channels_last(bsrc, &c->shapes[c->n->inputs[0]]) ||
	    !cpu_dnnl_read_by_dnnl(c->g, c->shapes, c->n->inputs[0], bsrc)))
		return 0;
	if (dnnl_pooling_v2_forward_desc_init(&pdsc, dnnl_forward_inference, alg, bsrc != NULL ? bsrc : &m->src,
	    &m->dany, m->strides, k, m->dil, m->pl, m->pr) != dnnl_success)
		return 0;
	if (cpu_dnnl_scratch_attr(&attr, cause) != 0)
		return -1;
	return cpu_dnnl_pd_create(p->d, &pdsc, attr, "pooling", pd, cause);
}

/* The oneDNN node for pool c, or NULL (*out) when the kernel library keeps it. */
static int
dnnl_pool_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	struct dnnl_conv_mds m;
	struct cpu_window w;
	struct dnnl_node *x;

	*out = NULL;
	if (cpu_pool_node_geom(c, &w, cause) != 0)
		return -1;
	if (w.n * w.c * w.out_sz == 0)
		return 0;
	if ((x = xcalloc(1, sizeof *x)) == NULL)
		return error_set(cause, "out of memory");
	if (dnnl_pool_pd(p, c, &w, &m, &x->pd, cause) != 0)
		goto fail;
	/* A global pool's reference implementation would lose to the kernel library's one pass. */
	if (x->pd == NULL || (c->n->attr.pool.global && cpu_dnnl_pd_is_ref(x->pd))) {
		cpu_dnnl_node_free(p->d, x);
		return 0;
	}
	if (cpu_dnnl_check(dnnl_primitive_create(&x->prim, x->pd), "primitive_create", cause) != 0 ||
	    dnnl_node_bind(p->d, x, c, &m, cause) != 0)
		goto fail;
	x->dst = cpu_out(c, 0);
	x->n = c->n;
	*out = x;
	return 0;
fail:
	cpu_dnnl_node_free(p->d, x);
	return -1;
}

/*
 * The matmul of Gemm or MatMul c over all of A's rows at once: B a 2-D
 * weight and the bias one value per output column, else the kernel library
 * keeps it (*pd NULL).  The weights go into the layout oneDNN picks, once:
 * sgemm would repack them on every call.
 */
static int
dnnl_linear_pd(struct cpu_dnnl *d, const struct cpu_node_ctx *c, struct dnnl_conv_mds *m,
    dnnl_primitive_desc_t *pd, char **cause)
{
	const struct graph_shape *as = cpu_in_shape(c, 0), *bs = cpu_in_shape(c, 1), *cs;
	int tb = c->n->op == GRAPH_OP_GEMM && c->n->attr.gemm.trans_b;
	int64_t k = as->ndims >= 2 ? as->dims[as->ndims - 1] : 0, n, rows;
	dnnl_primitive_attr_t attr;
	dnnl_matmul_desc_t md;

	*pd = NULL;
	if (k == 0 || bs->ndims != 2 || (tb ? bs->dims[1] : bs->dims[0]) != k)
		return 0;
	n = tb ? bs->dims[0] : bs->dims[1];
	rows = cpu_elems(as) / k;
	cs = cpu_has_in(c, 2) ? cpu_in_shape(c, 2) : NULL;
	if (rows * n == 0 || cpu_elems(cpu_out_shape(c, 0)) != rows * n ||
	    (cs != NULL && (cs->ndims < 1 || cs->dims[cs->ndims - 1] != n || cpu_elems(cs) != n)))
		return 0;
	if (cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->src, 2, (dnnl_dims_t){ rows, k }, dnnl_f32, dnnl_ab), "md",
	    cause) || cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->dst, 2, (dnnl_dims_t){ rows, n }, dnnl_f32, dnnl_ab),
	    "md", cause) || cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->bias, 2, (dnnl_dims_t){ 1, n }, dnnl_f32,
	    dnnl_ab), "md", cause) || cpu_dnnl_check(dnnl_memory_desc_init_by_tag(&m->wany, 2, (dnnl_dims_t){ k, n },
	    dnnl_f32, dnnl_format_tag_any), "md", cause) || cpu_dnnl_check(dnnl_memory_desc_init_by_strides(&m->wuser, 2,
	    (dnnl_dims_t){ k, n }, dnnl_f32, tb ? (dnnl_dims_t){ 1, k } : (dnnl_dims_t){ n, 1 }), "md", cause))
		return -1;
	if (dnnl_matmul_desc_init(&md, &m->src, &m->wany, cs != NULL ? &m->bias : NULL, &m->dst) != dnnl_success)
		return 0;
	if (dnnl_node_attr(c->n, 0, &attr, cause) != 0)
		return -1;
	return cpu_dnnl_pd_create(d, &md, attr, "matmul", pd, cause);
}

/* The oneDNN node for Gemm or MatMul c, or NULL (*out) when the kernel library keeps it. */
static int
dnnl_linear_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	const struct graph_shape *ys = cpu_out_shape(c, 0);
	struct dnnl_conv_mds m;
	struct dnnl_node *x;

	*out = NULL;
	if ((x = xcalloc(1, sizeof *x)) == NULL)
		return error_set(cause, "out of memory");
	if (dnnl_linear_pd(p->d, c, &m, &x->pd, cause) != 0)
		goto fail;
	if (x->pd == NULL) {
		free(x);
		return 0;
	}
	if (cpu_dnnl_weights_get(&p->d->wc, p->d->eng, p->stream, &m.wuser, cpu_in(c, 1), dnnl_memory_desc_get_size(&m.wuser),
	    dnnl_primitive_desc_query_md(x->pd, dnnl_query_weights_md, 0), &x->w, cause) != 0 ||
	    cpu_dnnl_check(dnnl_primitive_create(&x->prim, x->pd), "primitive_create", cause) != 0 ||
	    dnnl_node_bind(p->d, x, c, &m, cause) != 0)
		goto fail;
	x->dst = cpu_out(c, 0);
	x->nch = ys->dims[ys->ndims - 1];
	x->dst_elems = (size_t)cpu_elems(ys);
	x->plane = (size_t)x->nch;
	x->nplanes = (int64_t)x->dst_elems / x->nch;
	x->n = c->n;
	*out = x;
	return 0;
fail:
	cpu_dnnl_node_free(p->d, x);
	return -1;
}

/* The oneDNN node for c, or NULL (*out) when the kernel library keeps it. */
static int
dnnl_node_create(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	int transpose = c->n->op == GRAPH_OP_CONV_TRANSPOSE;
	struct dnnl_conv_mds m;
	struct cpu_window w;
	struct dnnl_node *x;
	int64_t cg, mg;

	if (c->n->op == GRAPH_OP_POOL)
		return dnnl_pool_create(p, c, out, cause);
	if (c->n->op == GRAPH_OP_CONCAT) {
		*out = NULL;
		return dnnl_concat_ok(c->g, c->n, c->shapes, c->ptrs) ? dnnl_concat_create(p, c, out, cause) : 0;
	}
	if (c->n->op == GRAPH_OP_GEMM || c->n->op == GRAPH_OP_MATMUL)
		return dnnl_linear_create(p, c, out, cause);
	if (c->n->op == GRAPH_OP_BATCHNORM)
		return cpu_dnnl_bnorm_create(p, c, out, cause);
	if (c->n->op == GRAPH_OP_BINARY)
		return cpu_dnnl_binary_create(p, c, out, cause);
	*out = NULL;
	if (cpu_conv_node_geom(c, transpose, &w, &cg, &mg, cause) != 0)
		return -1;
	if (w.n * w.m * w.out_sz == 0 || w.c == 0)
		return 0;
	if ((x = xcalloc(1, sizeof *x)) == NULL)
		return error_set(cause, "out of memory");
	if (dnnl_conv_mds_init(&w, &c->n->attr.conv, w.c / cg, transpose, &m, cause) != 0 ||
	    dnnl_conv_pd(p->d, c, &m, transpose, &x->pd, cause) != 0)
		goto fail;
	if (x->pd == NULL) {
		free(x);
		return 0;
	}
	if (cpu_dnnl_weights_get(&p->d->wc, p->d->eng, p->stream, &m.wuser, cpu_in(c, 1), dnnl_memory_desc_get_size(&m.wuser),
	    dnnl_primitive_desc_query_md(x->pd, dnnl_query_weights_md, 0), &x->w, cause) != 0 ||
	    cpu_dnnl_check(dnnl_primitive_create(&x->prim, x->pd), "primitive_create", cause) != 0 ||
	    dnnl_node_bind(p->d, x, c, &m, cause) != 0)
		goto fail;
	x->resid = cpu_has_in(c, 3) ? cpu_in(c, 3) : NULL;
	x->dst = cpu_out(c, 0);
	x->plane = (size_t)w.out_sz;
	x->nplanes = w.n * w.m;
	x->nch = w.m;
	x->dst_elems = (size_t)(w.n * w.m * w.out_sz);
	x->n = c->n;
	*out = x;
	return 0;
fail:
	cpu_dnnl_node_free(p->d, x);
	return -1;
}

/* An aligned buffer of at least n bytes (NULL for 0) into *out; -1 when out of memory. */
static int
dnnl_buffer(size_t n, void **out, char **cause)
{
	*out = NULL;
	if (n > 0 &&
	    (*out = aligned_alloc(DNNL_BUF_ALIGN, (n + DNNL_BUF_ALIGN - 1) / DNNL_BUF_ALIGN * DNNL_BUF_ALIGN)) == NULL)
		return error_set(cause, "out of memory for %zu bytes of oneDNN buffers", n);
	return 0;
}

/* The scratchpad and the two staging buffers every node of p shares, each the largest any node asks for. */
static int
dnnl_plan_buffers(struct cpu_dnnl_plan *p, char **cause)
{
	size_t need[3] = { 0, 0, 0 };

	for (size_t i = 0; i < p->nnodes; i++) {
		struct dnnl_node *x = p->nodes[i];
		size_t s;

		if (x == NULL)
			continue;
		s = dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(x->pd, dnnl_query_scratchpad_md, 0));
		need[0] = s > need[0] ? s : need[0];
		need[1] = x->in.bytes > need[1] ? x->in.bytes : need[1];
		need[2] = x->out.bytes > need[2] ? x->out.bytes : need[2];
	}
	if (dnnl_buffer(need[0], &p->scratch, cause) != 0 || dnnl_buffer(need[1], &p->stage[0], cause) != 0 ||
	    dnnl_buffer(need[2], &p->stage[1], cause) != 0)
		return -1;
	for (size_t i = 0; i < p->nnodes; i++) {
		struct dnnl_node *x = p->nodes[i];
		const dnnl_memory_desc_t *md;

		if (x == NULL)
			continue;
		if ((x->in.blk != NULL && x->in.direct == NULL &&
		    cpu_dnnl_check(dnnl_memory_set_data_handle(x->in.blk, p->stage[0]), "set_data_handle", cause) != 0) ||
		    (x->out.blk != NULL && x->out.direct == NULL &&
		    cpu_dnnl_check(dnnl_memory_set_data_handle(x->out.blk, p->stage[1]), "set_data_handle", cause) != 0) ||
		    (x->resid_in.blk != NULL && cpu_dnnl_check(dnnl_memory_set_data_handle(x->resid_in.blk,
		    x->out.direct != NULL ? x->out.direct : p->stage[1]), "set_data_handle", cause) != 0))
			return -1;
		md = dnnl_primitive_desc_query_md(x->pd, dnnl_query_scratchpad_md, 0);
		if (dnnl_memory_desc_get_size(md) == 0)
			continue;
		if (cpu_dnnl_check(dnnl_memory_create(&x->scratch, md, p->d->eng, p->scratch), "memory_create", cause) != 0)
			return -1;
		(x->cargs != NULL ? x->cargs : x->args)[x->nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, x->scratch };
	}
	return 0;
}

/* Whether edge e's primitive takes tensor t (at address ptr) blocked in layout md through a reorder. */
static int
dnnl_link_edge_ok(const struct dnnl_edge *e, const dnnl_memory_desc_t *blk, const dnnl_memory_desc_t *md)
{
	return e->r != NULL && e->direct == NULL && dnnl_memory_desc_equal(blk, md);
}

/* Whether node y may read tensor t (at ptr) in layout md at input k: its source, or a Conv's residual. */
static int
dnnl_link_reader_ok(const struct dnnl_node *y, const struct graph_node *r, void *const *ptrs, int t, int k,
    const dnnl_memory_desc_t *md)
{
	if (y == NULL || r->noutputs < 1 || r->outputs[0] < 0)
		return 0;
	if (k == y->in_k)
		return (y->in_place || ptrs[y->dst_t] != ptrs[t]) &&
		    dnnl_link_edge_ok(&y->in, dnnl_primitive_desc_query_md(y->pd, dnnl_query_src_md, 0), md);
	/* The residual, copied as it is into the blocked output the sum post-op adds to. */
	return k == 3 && r->op == GRAPH_OP_CONV && y->resid_in.direct == NULL &&
	    dnnl_link_edge_ok(&y->resid_in, dnnl_primitive_desc_query_md(y->pd, dnnl_query_dst_md, 0), md);
}

/*
 * The readers of tensor t when every one is a oneDNN node taking t blocked
 * in layout md (dnnl_link_reader_ok), as node index * 2 + (1 for the
 * residual); their count into *n (0 when any reader is not such a node).
 */
static void
dnnl_link_readers(const struct cpu_dnnl_plan *p, const graph_t *g, void *const *ptrs, int t,
    const dnnl_memory_desc_t *md, size_t *readers, size_t *n)
{
	*n = 0;
	for (size_t j = 0; j < g->nnodes; j++) {
		const struct graph_node *r = &g->nodes[j];

		for (int k = 0; k < r->ninputs; k++) {
			if (r->inputs[k] != t)
				continue;
			if (!dnnl_link_reader_ok(p->nodes[j], r, ptrs, t, k, md)) {
				*n = 0;
				return;
			}
			readers[(*n)++] = j * 2 + (k == 3);
		}
	}
}

/*
 * The readers of tensor t when every one is a oneDNN node taking t as its
 * source through a reorder into another blocked layout than md, and oneDNN
 * has a jit reorder from md into each (readers and *n as dnnl_link_readers).
 */
static int
dnnl_link_readers_rebase(struct cpu_dnnl_plan *p, const graph_t *g, void *const *ptrs, int t,
    const dnnl_memory_desc_t *md, size_t *readers, size_t *n, char **cause)
{
	int rc;

	*n = 0;
	for (size_t j = 0; j < g->nnodes; j++) {
		const struct graph_node *r = &g->nodes[j];
		struct dnnl_node *y = p->nodes[j];

		for (int k = 0; k < r->ninputs; k++) {
			if (r->inputs[k] != t)
				continue;
			if (y == NULL || k != y->in_k || y->in.r == NULL || y->in.direct != NULL || r->noutputs < 1 ||
			    r->outputs[0] < 0 || !(y->in_place || ptrs[y->dst_t] != ptrs[t]) ||
			    (rc = cpu_dnnl_edge_rebase(p->d, &y->in, md, ptrs[t], 1, cause)) == 0) {
				*n = 0;
				return 0;
			}
			if (rc < 0)
				return -1;
			readers[(*n)++] = j * 2;
		}
	}
	return 0;
}

/*
 * Keep tensors blocked between oneDNN nodes.  Where node i's output is read
 * only by oneDNN nodes that want it in the very layout i writes (as their
 * source, or as a Conv's residual in the layout of that Conv's output), and that
 * layout takes the plain one's bytes (no channel padding: the channels a
 * multiple of the block), i writes it blocked at the tensor's own address and
 * its readers read it there: two reorders fewer per tensor.  Where they
 * want it in another blocked layout (a ConvTranspose's 16-channel blocks
 * after a channels-last Conv), i still writes its own at the tensor's address
 * and each reader's reorder starts from it: one pass instead of two.  A graph
 * output, a tensor any other node reads, and a residual sharing the output's
 * address (its reorder would overwrite itself) stay plain.
 */
static int
dnnl_plan_link(struct cpu_dnnl_plan *p, const graph_t *g, const struct graph_shape *shapes, void *const *ptrs,
    char **cause)
{
	size_t *readers = xcalloc(2 * g->nnodes + 1, sizeof *readers), n;
	int rc = 0;

	if (readers == NULL)
		return error_set(cause, "out of memory");
	for (size_t i = 0; i < g->nnodes && rc == 0; i++) {
		struct dnnl_node *x = p->nodes[i];
		const dnnl_memory_desc_t *md;
		int t, rebase;

		if (x == NULL || x->out.r == NULL || !cpu_dnnl_out_linkable(g, x, ptrs))
			continue;
		t = x->dst_t;
		md = dnnl_primitive_desc_query_md(x->pd, dnnl_query_dst_md, 0);
		if (dnnl_memory_desc_get_size(md) != (size_t)cpu_elems(&shapes[t]) * sizeof(float))
			continue;
		dnnl_link_readers(p, g, ptrs, t, md, readers, &n);
		rebase = n == 0;
		if (rebase && dnnl_link_readers_rebase(p, g, ptrs, t, md, readers, &n, cause) != 0)
			rc = -1;
		if (n == 0 || rc != 0)
			continue;
		rc = cpu_dnnl_edge_direct(&x->out, ptrs[t], cause);
		for (size_t j = 0; j < n && rc == 0; j++) {
			struct dnnl_node *y = p->nodes[readers[j] / 2];

			if (rebase) {
				rc = cpu_dnnl_edge_rebase(p->d, &y->in, md, ptrs[t], 0, cause) == 1 ? 0 :
				    error_set(cause, "oneDNN refused a reorder it had offered");
				continue;
			}
			if (readers[j] % 2 == 0) {
				rc = cpu_dnnl_edge_direct(&y->in, ptrs[t], cause);
				continue;
			}
			/* The residual's reorder becomes a copy (dnnl_node_exec); its target stays the output's. */
			dnnl_primitive_destroy(y->resid_in.r);
			y->resid_in.r = NULL;
			y->resid_in.direct = ptrs[t];
		}
	}
	free(readers);
	return rc;
}

/* Node n's multiply-adds (a memory-bound node's elements weighed by DNNL_ELEMENT_MACS), against DNNL_SERIAL_MACS. */
static int64_t
dnnl_node_macs(const struct graph_node *n, const struct graph_shape *shapes)
{
	const struct graph_shape *x = &shapes[n->inputs[0]], *y = &shapes[n->outputs[0]], *w;

	if (n->op == GRAPH_OP_POOL || n->op == GRAPH_OP_BATCHNORM)
		return cpu_elems(x) * DNNL_ELEMENT_MACS;
	if (n->op == GRAPH_OP_CONCAT || n->op == GRAPH_OP_BINARY)
		return cpu_elems(y) * DNNL_ELEMENT_MACS;
	w = &shapes[n->inputs[1]];
	if (n->op == GRAPH_OP_CONV || n->op == GRAPH_OP_CONV_TRANSPOSE)
		return w->ndims > 0 && w->dims[0] > 0 ?
		    cpu_elems(n->op == GRAPH_OP_CONV ? y : x) * (cpu_elems(w) / w->dims[0]) : 0;
	return x->ndims > 0 ? cpu_elems(y) * x->dims[x->ndims - 1] : 0;	/* Gemm, MatMul: rows x N x K */
}

/* Node n's weight elements (a Conv's, ConvTranspose's, Gemm's or MatMul's second input; 0 for the others), against DNNL_SERIAL_WEIGHTS. */
static int64_t
dnnl_node_weights(const struct graph_node *n, const struct graph_shape *shapes)
{
	if (n->op != GRAPH_OP_CONV && n->op != GRAPH_OP_CONV_TRANSPOSE && n->op != GRAPH_OP_GEMM &&
	    n->op != GRAPH_OP_MATMUL)
		return 0;
	return cpu_elems(&shapes[n->inputs[1]]);
}

/* Set the calling thread's OpenMP team size, which oneDNN's primitives take as theirs, to n; the previous one. */
static int
dnnl_threads_set(int n)
{
#ifdef _OPENMP
	int prev = omp_get_max_threads();

	omp_set_num_threads(n);
	return prev;
#else
	(void)n;
	return 1;
#endif
}

/* Node c's oneDNN node into *out (NULL when the kernel library keeps it), made on one thread when small. */
static int
dnnl_node_make(struct cpu_dnnl_plan *p, const struct cpu_node_ctx *c, struct dnnl_node **out, char **cause)
{
	int serial = dnnl_node_macs(c->n, c->shapes) < DNNL_SERIAL_MACS && dnnl_node_weights(c->n, c->shapes) <
	    DNNL_SERIAL_WEIGHTS, prev = serial ? dnnl_threads_set(1) : 0, rc;
	struct dnnl_node *x;

	rc = dnnl_node_create(p, c, out, cause);
	if (serial)
		dnnl_threads_set(prev);
	if (rc != 0 || (x = *out) == NULL)
		return rc;
	x->serial = serial;
	x->src_t = c->n->inputs[x->in_k];
	x->dst_t = x->absorbs != 0 ? c->g->nodes[x->absorbs].outputs[0] : c->n->outputs[0];
	return 0;
}

/* Whether node i's work is done by the node before it (a ReLU fused into a BatchNormalization). */
static int
dnnl_absorbed(const struct cpu_dnnl_plan *p, size_t i)
{
	return i > 0 && p->nodes[i - 1] != NULL && p->nodes[i - 1]->absorbs == i;
}

/* Make the plan's primitives. */
int
cpu_dnnl_plan_create(struct cpu_dnnl *d, const graph_t *g, const struct graph_shape *shapes, void *const *ptrs,
    struct cpu_dnnl_plan **out, char **cause)
{
	struct cpu_dnnl_plan *p = xcalloc(1, sizeof *p);

	if (p == NULL || (p->nodes = xcalloc(g->nnodes ? g->nnodes : 1, sizeof *p->nodes)) == NULL) {
		free(p);
		return error_set(cause, "out of memory");
	}
	p->d = d;
	p->nnodes = g->nnodes;
	if (cpu_dnnl_check(dnnl_stream_create(&p->stream, d->eng, dnnl_stream_default_flags), "stream_create", cause) != 0)
		goto fail;
	for (size_t i = 0; i < g->nnodes; i++) {
		struct cpu_node_ctx c = { g, &g->nodes[i], shapes, ptrs, NULL };

		if (!dnnl_absorbed(p, i) && cpu_dnnl_node_eligible(g, c.n) && dnnl_node_make(p, &c, &p->nodes[i],
		    cause) != 0) {
			error_prefix(cause, "node '%s' (%s)", c.n->name ? c.n->name : "?", graph_op_name(c.n->op));
			goto fail;
		}
	}
	if (dnnl_plan_link(p, g, shapes, ptrs, cause) != 0 || dnnl_plan_buffers(p, cause) != 0)
		goto fail;
	*out = p;
	return 0;
fail:
	cpu_dnnl_plan_free(p);
	return -1;
}

/* The node's activation where oneDNN did not fuse it, per output plane over the kernels' threads. */
static void
dnnl_node_act(const struct dnnl_node *x)
{
	dnnl_alg_kind_t alg;
	float a, b;

	if (x->n->act == GRAPH_UNARY_NONE || dnnl_act_alg(x->n, &alg, &a, &b))
		return;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel((int64_t)x->dst_elems))
	for (int64_t i = 0; i < x->nplanes; i++)
		cpu_act_inplace(x->dst + i * (int64_t)x->plane, (int64_t)x->plane, x->n->act, x->n->act_alpha,
		    x->n->act_beta);
}

/* Channels-last Concat x by hand (dnnl_concat_cl): per pixel, each source's channels in turn. */
static void
dnnl_concat_cl_run(const struct cpu_dnnl_plan *p, const struct dnnl_node *x)
{
	float *dst = x->out.direct != NULL ? x->out.direct : x->out.r != NULL ? p->stage[1] : x->dst;

	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) \
	    if (!x->serial && cpu_parallel((int64_t)x->dst_elems))
	for (int64_t px = 0; px < x->cl_pixels; px++) {
		float *d = dst + px * x->nch;

		for (int k = 0; k < x->ncsrc; k++) {
			memcpy(d, x->cl_src[k] + px * x->cl_ch[k], (size_t)x->cl_ch[k] * sizeof(float));
			d += x->cl_ch[k];
		}
	}
}

/* Run e's reorder. */
static int
dnnl_edge_run(struct cpu_dnnl_plan *p, struct dnnl_edge *e, char **cause)
{
	return cpu_dnnl_check(dnnl_primitive_execute(e->r, p->stream, 2, e->args), "reorder", cause);
}

/* Run x: the residual into place, the reorders and the primitive, the activation oneDNN did not fuse. */
static int
dnnl_node_exec(struct cpu_dnnl_plan *p, struct dnnl_node *x, char **cause)
{
	if (x->resid_in.r != NULL) {
		if (dnnl_edge_run(p, &x->resid_in, cause) != 0)
			return -1;
	} else if (x->resid_in.direct != NULL) {
		void *to = x->out.direct != NULL ? x->out.direct : p->stage[1];

		if (to != x->resid_in.direct)
			memcpy(to, x->resid_in.direct, x->dst_elems * sizeof(float));
	} else if (x->resid != NULL && x->resid != x->dst) {
		memcpy(x->dst, x->resid, x->dst_elems * sizeof(float));
	}
	if (x->cl_src != NULL)
		dnnl_concat_cl_run(p, x);
	if ((x->in.r != NULL && dnnl_edge_run(p, &x->in, cause) != 0) ||
	    (x->cl_src == NULL && cpu_dnnl_check(dnnl_primitive_execute(x->prim, p->stream, x->nargs,
	    x->cargs != NULL ? x->cargs : x->args), "primitive_execute", cause) != 0) ||
	    (x->out.r != NULL && dnnl_edge_run(p, &x->out, cause) != 0) ||
	    cpu_dnnl_check(dnnl_stream_wait(p->stream), "stream_wait", cause) != 0)
		return -1;
	dnnl_node_act(x);
	return 0;
}

/* Run node i if oneDNN has it (a small one on this thread alone); nothing when the node before did its work. */
int
cpu_dnnl_plan_run_node(struct cpu_dnnl_plan *p, size_t i, char **cause)
{
	struct dnnl_node *x = p->nodes[i];
	int prev, rc;

	if (x == NULL)
		return dnnl_absorbed(p, i);
	prev = x->serial ? dnnl_threads_set(1) : 0;
	rc = dnnl_node_exec(p, x, cause);
	if (x->serial)
		dnnl_threads_set(prev);
	return rc != 0 ? -1 : 1;
}

/* Free the plan's nodes, scratchpad and stream. */
void
cpu_dnnl_plan_free(struct cpu_dnnl_plan *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nnodes; i++)
		cpu_dnnl_node_free(p->d, p->nodes[i]);
	if (p->stream != NULL)
		dnnl_stream_destroy(p->stream);
	free(p->scratch);
	free(p->stage[0]);
	free(p->stage[1]);
	free(p->nodes);
	free(p);
}
