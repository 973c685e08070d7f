/* graph_shape.c: shape inference for every graph op, node by node. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "graph_shape.h"
#include "graph_shape_impl.h"

typedef int (*shape_fn)(const graph_t *, const struct graph_node *, struct graph_shape *, char **);

/* UNARY, SOFTMAX, LAYERNORM, CAST, COPY, BATCHNORM, PRELU, PREDICATE, TRILU, CUMSUM: the output has X's shape. */
static int
shape_same(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	int64_t ax;
	struct graph_shape b;

	(void)g;
	if (n->op == GRAPH_OP_SOFTMAX && gs_norm_axis(n->attr.softmax.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "softmax axis out of range", x);
	if (n->op == GRAPH_OP_LAYERNORM && gs_norm_axis(n->attr.norm.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "layer-norm axis out of range", x);
	if (n->op == GRAPH_OP_LAYERNORM && n->ninputs > 3 && n->inputs[3] >= 0 && !gs_shape_eq(in_shape(n, s, 3), x))
		return gs_node_shape_error(n, cause, "layer-norm residual differs from X's shape", x);
	if (n->op == GRAPH_OP_BATCHNORM && (x->ndims < 2 || n->ninputs < 5 ||
	    graph_shape_elems(in_shape(n, s, 1)) != x->dims[1]))
		return gs_node_shape_error(n, cause, "batch-norm parameters do not match channels", x);
	if (n->op == GRAPH_OP_TRILU && x->ndims < 2)
		return gs_node_shape_error(n, cause, "Trilu needs a rank of at least 2", x);
	if (n->op == GRAPH_OP_CUMSUM && n->ninputs < 2 && gs_norm_axis(n->attr.cumsum.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "CumSum axis out of range", x);
	if (n->op == GRAPH_OP_PRELU && (n->ninputs < 2 ||
	    graph_shape_broadcast(x, in_shape(n, s, 1), &b) < 0 || !gs_shape_eq(&b, x)))
		return gs_node_shape_error(n, cause, "slope does not broadcast to X", x);
	return gs_set_out(n, s, 0, x, cause);
}

/* BINARY and WHERE: numpy broadcast of all inputs. */
static int
shape_broadcast(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	struct graph_shape r = *in_shape(n, s, 0);
	int k;

	(void)g;
	for (k = 1; k < n->ninputs; k++)
		if (graph_shape_broadcast(&r, in_shape(n, s, k), &r) < 0) {
			char a[160], b[160];

			return error_set(cause, "node '%s': shapes %s and %s do not broadcast",
			    n->name, graph_shape_str(&r, a, sizeof a),
			    graph_shape_str(in_shape(n, s, k), b, sizeof b));
		}
	return gs_set_out(n, s, 0, &r, cause);
}

/* GEMM: [M,K] x [K,N] with transposes; C broadcasts to [M,N]. */
static int
shape_gemm(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *a = in_shape(n, s, 0), *b = in_shape(n, s, 1);
	struct graph_shape r = { 2, { 0 } }, c;
	int64_t ka, kb;

	(void)g;
	if (a->ndims != 2 || b->ndims != 2)
		return gs_node_shape_error(n, cause, "Gemm needs 2-D A and B", a->ndims != 2 ? a : b);
	r.dims[0] = n->attr.gemm.trans_a ? a->dims[1] : a->dims[0];
	ka = n->attr.gemm.trans_a ? a->dims[0] : a->dims[1];
	kb = n->attr.gemm.trans_b ? b->dims[1] : b->dims[0];
	r.dims[1] = n->attr.gemm.trans_b ? b->dims[0] : b->dims[1];
	if (ka != kb)
		return gs_node_shape_error(n, cause, "Gemm inner dimensions differ", b);
	if (n->ninputs > 2 && n->inputs[2] >= 0 &&
	    (graph_shape_broadcast(&r, in_shape(n, s, 2), &c) < 0 || !gs_shape_eq(&c, &r)))
		return gs_node_shape_error(n, cause, "Gemm C does not broadcast to [M,N]",
		    in_shape(n, s, 2));
	return gs_set_out(n, s, 0, &r, cause);
}

/* MATMUL: numpy matmul (1-D operands promoted and dropped, batch dims broadcast). */
static int
shape_matmul(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	struct graph_shape a = *in_shape(n, s, 0), b = *in_shape(n, s, 1), ba, bb, r, c;
	int a1 = a.ndims == 1, b1 = b.ndims == 1;

	(void)g;
	if (a.ndims < 1 || b.ndims < 1)
		return gs_node_shape_error(n, cause, "MatMul operands must have rank >= 1", &a);
	if (a1) {
		a.ndims = 2; a.dims[1] = a.dims[0]; a.dims[0] = 1;
	}
	if (b1) {
		b.ndims = 2; b.dims[1] = 1;
	}
	if (a.dims[a.ndims - 1] != b.dims[b.ndims - 2])
		return gs_node_shape_error(n, cause, "MatMul inner dimensions differ", in_shape(n, s, 1));
	ba = a; ba.ndims -= 2;
	bb = b; bb.ndims -= 2;
	if (graph_shape_broadcast(&ba, &bb, &r) < 0 || r.ndims + 2 > GRAPH_MAX_DIMS)
		return gs_node_shape_error(n, cause, "MatMul batch dimensions do not broadcast", &a);
	if (!a1)
		r.dims[r.ndims++] = a.dims[a.ndims - 2];
	if (!b1)
		r.dims[r.ndims++] = b.dims[b.ndims - 1];
	if (n->ninputs > 2 && n->inputs[2] >= 0 &&
	    (graph_shape_broadcast(&r, in_shape(n, s, 2), &c) < 0 || !gs_shape_eq(&c, &r)))
		return gs_node_shape_error(n, cause, "MatMul bias does not broadcast to the output",
		    in_shape(n, s, 2));
	return gs_set_out(n, s, 0, &r, cause);
}

/*
 * ATTENTION: Q, K and V share their leading dims; K's depth is Q's, V's rows are K's; the mask broadcasts to the
 * scores.  seq_major tensors ([..., S, H, D]) are checked in the dense form, the output swapped back.
 */
static int
shape_attention(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *in[3] = { in_shape(n, s, 0), in_shape(n, s, 1), in_shape(n, s, 2) };
	struct graph_shape qkv[3], scores, c, r;
	const struct graph_shape *q = &qkv[0], *k = &qkv[1], *v = &qkv[2];
	int rank = in[0]->ndims, kt = n->attr.attention.k_transposed, sm = n->attr.attention.seq_major, i;
	int64_t heads;

	(void)g;
	if (graph_attention_shapes(n, in, qkv, &heads) != 0)
		return gs_node_shape_error(n, cause, sm ? "seq-major attention needs Q, K and V of one rank, at least 3, "
		    "K not transposed" : "attention needs Q, K and V of one rank, at least 2", in[0]);
	for (i = 0; i < rank - 2; i++)
		if (k->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
			return gs_node_shape_error(n, cause, "attention's Q, K and V differ in their leading dims", in[1]);
	if (k->dims[kt ? rank - 2 : rank - 1] != q->dims[rank - 1])
		return gs_node_shape_error(n, cause, "attention's K has another depth than Q", in[1]);
	if (v->dims[rank - 2] != k->dims[kt ? rank - 1 : rank - 2])
		return gs_node_shape_error(n, cause, "attention's V has another length than K", in[2]);
	scores = *q;
	scores.dims[rank - 1] = k->dims[kt ? rank - 1 : rank - 2];
	if (n->ninputs > 3 && n->inputs[3] >= 0 &&
	    (graph_shape_broadcast(&scores, in_shape(n, s, 3), &c) < 0 || !gs_shape_eq(&c, &scores)))
		return gs_node_shape_error(n, cause, "attention's mask does not broadcast to the scores", in_shape(n, s, 3));
	r = *in[0];	/* Q's layout, V's depth */
	r.dims[rank - 1] = v->dims[rank - 1];
	return gs_set_out(n, s, 0, &r, cause);
}

/* Kernel extent of spatial axis i: the attribute, or the weight's dim when it is 0. */
static int64_t
window_kernel(const struct graph_window_attr *w, const struct graph_shape *wt, int i)
{
	return w->kernel[i] > 0 ? w->kernel[i] : wt->dims[2 + i];
}

/* Check the window attributes against X's rank. */
static int
window_check(const struct graph_node *n, const struct graph_window_attr *w,
    const struct graph_shape *x, char **cause)
{
	int i;

	if (w->nspatial < 1 || w->nspatial > 3 || x->ndims != 2 + w->nspatial)
		return gs_node_shape_error(n, cause, "input rank does not match the window", x);
	for (i = 0; i < w->nspatial; i++)
		if (w->stride[i] < 1 || w->dilation[i] < 1 || w->pad_begin[i] < 0 || w->pad_end[i] < 0)
			return gs_node_error(n, cause, "strides/dilations must be >= 1 and pads >= 0");
	return 0;
}

/* CONV: [N, C, spatial] * [M, C/group, k] -> [N, M, out]; B is [M], Z the output's shape. */
static int
shape_conv(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_window_attr *w = &n->attr.conv;
	const struct graph_shape *x = in_shape(n, s, 0), *wt = in_shape(n, s, 1);
	struct graph_shape r;
	int i;

	(void)g;
	if (window_check(n, w, x, cause) < 0)
		return -1;
	if (wt->ndims != x->ndims || w->group < 1 || wt->dims[1] * w->group != x->dims[1] ||
	    wt->dims[0] % w->group != 0)
		return gs_node_shape_error(n, cause, "weight does not match input channels and group", wt);
	r.ndims = x->ndims;
	r.dims[0] = x->dims[0];
	r.dims[1] = wt->dims[0];
	for (i = 0; i < w->nspatial; i++) {
		int64_t k = window_kernel(w, wt, i);
		int64_t span = x->dims[2 + i] + w->pad_begin[i] + w->pad_end[i] - w->dilation[i] * (k - 1) - 1;

		if (k != wt->dims[2 + i] || span < 0)
			return gs_node_shape_error(n, cause, "kernel larger than the padded input", x);
		r.dims[2 + i] = span / w->stride[i] + 1;
	}
	if (n->ninputs > 2 && n->inputs[2] >= 0 && graph_shape_elems(in_shape(n, s, 2)) != r.dims[1])
		return gs_node_error(n, cause, "bias length differs from output channels");
	if (n->ninputs > 3 && n->inputs[3] >= 0 && !gs_shape_eq(in_shape(n, s, 3), &r))
		return gs_node_error(n, cause, "residual input differs from the output shape");
	return gs_set_out(n, s, 0, &r, cause);
}

/* CONV_TRANSPOSE: [N, C, in] * [C, M/group, k] -> [N, M, stride (in-1) + op + dil (k-1) + 1 - pads]. */
static int
shape_conv_transpose(const graph_t *g, const struct graph_node *n, struct graph_shape *s,
    char **cause)
{
	const struct graph_window_attr *w = &n->attr.conv;
	const struct graph_shape *x = in_shape(n, s, 0), *wt = in_shape(n, s, 1);
	struct graph_shape r;
	int i;

	(void)g;
	if (window_check(n, w, x, cause) < 0)
		return -1;
	if (wt->ndims != x->ndims || w->group < 1 || wt->dims[0] != x->dims[1] ||
	    x->dims[1] % w->group != 0)
		return gs_node_shape_error(n, cause, "weight does not match input channels and group", wt);
	r.ndims = x->ndims;
	r.dims[0] = x->dims[0];
	r.dims[1] = wt->dims[1] * w->group;
	for (i = 0; i < w->nspatial; i++) {
		int64_t k = window_kernel(w, wt, i);

		r.dims[2 + i] = w->stride[i] * (x->dims[2 + i] - 1) + w->output_padding[i] +
		    (k - 1) * w->dilation[i] + 1 - w->pad_begin[i] - w->pad_end[i];
		if (k != wt->dims[2 + i] || r.dims[2 + i] < 1 || x->dims[2 + i] < 1)
			return gs_node_shape_error(n, cause, "transposed convolution output is empty", x);
	}
	if (n->ninputs > 2 && n->inputs[2] >= 0 && graph_shape_elems(in_shape(n, s, 2)) != r.dims[1])
		return gs_node_error(n, cause, "bias length differs from output channels");
	return gs_set_out(n, s, 0, &r, cause);
}

/* POOL: window output size with floor or ceil_mode (the last window must start inside the input or left pad). */
static int
shape_pool(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_pool_attr *p = &n->attr.pool;
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = *x;
	int i;

	(void)g;
	if (p->global) {
		if (x->ndims < 3)
			return gs_node_shape_error(n, cause, "global pooling needs rank >= 3", x);
		for (i = 2; i < x->ndims; i++)
			r.dims[i] = 1;
		return gs_set_out(n, s, 0, &r, cause);
	}
	if (window_check(n, &p->w, x, cause) < 0)
		return -1;
	for (i = 0; i < p->w.nspatial; i++) {
		int64_t in = x->dims[2 + i], st = p->w.stride[i];
		int64_t span = in + p->w.pad_begin[i] + p->w.pad_end[i] -
		    p->w.dilation[i] * (p->w.kernel[i] - 1) - 1;
		int64_t o;

		if (p->w.kernel[i] < 1 || span < 0)
			return gs_node_shape_error(n, cause, "pool window larger than the padded input", x);
		o = (p->ceil_mode ? (span + st - 1) / st : span / st) + 1;
		if (p->ceil_mode && (o - 1) * st >= in + p->w.pad_begin[i])
			o--;
		r.dims[2 + i] = o;
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* REDUCE over axes (all when naxes is 0), keeping size-1 dims when keepdims. */
static int
shape_reduce(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_reduce_attr *a = &n->attr.reduce;
	const struct graph_shape *x = in_shape(n, s, 0);
	int red[GRAPH_MAX_DIMS] = { 0 }, i;
	struct graph_shape r = { 0, { 0 } };

	(void)g;
	for (i = 0; i < a->naxes; i++) {
		int64_t ax;

		if (gs_norm_axis(a->axes[i], x->ndims, &ax) < 0 || red[ax])
			return gs_node_shape_error(n, cause, "reduce axis out of range or repeated", x);
		red[ax] = 1;
	}
	for (i = 0; i < x->ndims; i++) {
		int reduced = a->naxes == 0 || red[i];

		if (!reduced)
			r.dims[r.ndims++] = x->dims[i];
		else if (a->keepdims)
			r.dims[r.ndims++] = 1;
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* TRANSPOSE by perm (reversed dims when perm is empty). */
static int
shape_transpose(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = { x->ndims, { 0 } };
	int seen[GRAPH_MAX_DIMS] = { 0 }, i;

	(void)g;
	if (n->attr.transpose.nperm != 0 && n->attr.transpose.nperm != x->ndims)
		return gs_node_shape_error(n, cause, "perm length differs from the rank", x);
	for (i = 0; i < x->ndims; i++) {
		int64_t p = n->attr.transpose.nperm ? n->attr.transpose.perm[i] : x->ndims - 1 - i;

		if (p < 0 || p >= x->ndims || seen[p])
			return gs_node_shape_error(n, cause, "perm is not a permutation", x);
		seen[p] = 1;
		r.dims[i] = x->dims[p];
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* RESHAPE to a target shape tensor: 0 copies the input dim (unless allowzero), one -1 is inferred. */
static int
reshape_target(const graph_t *g, const struct graph_node *n, const struct graph_shape *x,
    struct graph_shape *r, char **cause)
{
	int64_t t[GRAPH_MAX_DIMS], known = 1, total = graph_shape_elems(x);
	int cnt, i, infer = -1;

	if (n->ninputs < 2 || n->inputs[1] < 0) {
		const struct graph_tensor *o = &g->tensors[n->outputs[0]];

		/* A reshape built without a target takes its output's declared, fixed shape. */
		if (o->ndims < 0)
			return gs_node_error(n, cause, "reshape without a target shape");
		cnt = o->ndims;
		memcpy(t, o->dims, sizeof(int64_t) * (size_t)cnt);
	} else if (gs_const_ints(g, n, n->inputs[1], t, GRAPH_MAX_DIMS, &cnt, cause) < 0)
		return -1;
	r->ndims = cnt;
	for (i = 0; i < cnt; i++) {
		int64_t d = t[i];

		if (d == 0 && !n->attr.reshape.allowzero) {
			if (i >= x->ndims)
				return gs_node_shape_error(n, cause, "target 0 past the input rank", x);
			d = x->dims[i];
		}
		if (d == -1) {
			if (infer >= 0)
				return gs_node_error(n, cause, "reshape target has two -1 dims");
			infer = i;
			d = 1;
		} else if (d < 0)
			return gs_node_error(n, cause, "reshape target has a negative dim");
		r->dims[i] = d;
		known *= d;
	}
	if (infer >= 0) {
		if (known == 0 || total % known != 0)
			return gs_node_shape_error(n, cause, "cannot infer the -1 of the reshape target", x);
		r->dims[infer] = total / known;
	} else if (known != total)
		return gs_node_shape_error(n, cause, "reshape target changes the element count", x);
	return 0;
}

/* SQUEEZE: drop the listed size-1 axes (all size-1 axes when none are listed). */
static int
reshape_squeeze(const struct graph_node *n, const struct graph_shape *x, struct graph_shape *r,
    char **cause)
{
	int drop[GRAPH_MAX_DIMS] = { 0 }, i;
	int64_t ax;

	for (i = 0; i < n->attr.reshape.naxes; i++) {
		if (gs_norm_axis(n->attr.reshape.axes[i], x->ndims, &ax) < 0 || x->dims[ax] != 1)
			return gs_node_shape_error(n, cause, "squeeze axis out of range or not of size 1", x);
		drop[ax] = 1;
	}
	r->ndims = 0;
	for (i = 0; i < x->ndims; i++)
		if (!(n->attr.reshape.naxes ? drop[i] : x->dims[i] == 1))
			r->dims[r->ndims++] = x->dims[i];
	return 0;
}

/* UNSQUEEZE: insert size-1 dims at the listed axes of the output. */
static int
reshape_unsqueeze(const struct graph_node *n, const struct graph_shape *x, struct graph_shape *r,
    char **cause)
{
	int ins[GRAPH_MAX_DIMS] = { 0 }, i, k = 0, rank = x->ndims + n->attr.reshape.naxes;
	int64_t ax;

	if (rank > GRAPH_MAX_DIMS)
		return gs_node_shape_error(n, cause, "unsqueeze beyond the maximum rank", x);
	for (i = 0; i < n->attr.reshape.naxes; i++) {
		if (gs_norm_axis(n->attr.reshape.axes[i], rank, &ax) < 0 || ins[ax])
			return gs_node_shape_error(n, cause, "unsqueeze axis out of range or repeated", x);
		ins[ax] = 1;
	}
	r->ndims = rank;
	for (i = 0; i < rank; i++)
		r->dims[i] = ins[i] ? 1 : x->dims[k++];
	return 0;
}

/* RESHAPE in its four kinds (target shape, Flatten, Squeeze, Unsqueeze). */
static int
shape_reshape(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = { 0, { 0 } };
	int64_t ax, i, a = 1, b = 1;

	switch (n->attr.reshape.kind) {
	case GRAPH_RESHAPE_SHAPE:
		if (reshape_target(g, n, x, &r, cause) < 0)
			return -1;
		break;
	case GRAPH_RESHAPE_FLATTEN:
		/* Flatten's axis lies in [-rank, rank]: a negative one counts from rank, not rank + 1. */
		ax = n->attr.reshape.axis < 0 ? n->attr.reshape.axis + x->ndims : n->attr.reshape.axis;
		if (ax < 0 || ax > x->ndims)
			return gs_node_shape_error(n, cause, "flatten axis out of range", x);
		for (i = 0; i < x->ndims; i++)
			*(i < ax ? &a : &b) *= x->dims[i];
		r.ndims = 2; r.dims[0] = a; r.dims[1] = b;
		break;
	case GRAPH_RESHAPE_SQUEEZE:
		if (reshape_squeeze(n, x, &r, cause) < 0)
			return -1;
		break;
	case GRAPH_RESHAPE_UNSQUEEZE:
		if (reshape_unsqueeze(n, x, &r, cause) < 0)
			return -1;
		break;
	default:
		return gs_node_error(n, cause, "unknown reshape kind");
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* CONCAT along axis: other dims equal. */
static int
shape_concat(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	struct graph_shape r = *in_shape(n, s, 0);
	int64_t ax;
	int k, i;

	(void)g;
	if (gs_norm_axis(n->attr.concat.axis, r.ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "concat axis out of range", &r);
	for (k = 1; k < n->ninputs; k++) {
		const struct graph_shape *x = in_shape(n, s, k);

		if (x->ndims != r.ndims)
			return gs_node_shape_error(n, cause, "concat inputs differ in rank", x);
		for (i = 0; i < r.ndims; i++)
			if (i != ax && x->dims[i] != r.dims[i])
				return gs_node_shape_error(n, cause, "concat inputs differ off the axis", x);
		r.dims[ax] += x->dims[ax];
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* SPLIT along axis by sizes, or into equal chunks (the last smaller, as ONNX 18's num_outputs). */
static int
shape_split(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = *x;
	int64_t ax, total = 0, chunk;
	int k;

	(void)g;
	if (n->ninputs > 1)
		return gs_node_error(n, cause, "split sizes are not constant (specialize the graph first)");
	if (gs_norm_axis(n->attr.split.axis, x->ndims, &ax) < 0 || n->noutputs < 1)
		return gs_node_shape_error(n, cause, "split axis out of range", x);
	if (n->attr.split.nsplit) {
		if (n->attr.split.nsplit != n->noutputs)
			return gs_node_error(n, cause, "split sizes differ in number from the outputs");
		for (k = 0; k < n->noutputs; k++) {
			if (n->attr.split.split[k] < 0)
				return gs_node_error(n, cause, "negative split size");
			total += n->attr.split.split[k];
		}
		if (total != x->dims[ax])
			return gs_node_shape_error(n, cause, "split sizes do not add up to the axis", x);
	}
	chunk = (x->dims[ax] + n->noutputs - 1) / n->noutputs;
	for (k = 0; k < n->noutputs; k++) {
		if (n->attr.split.nsplit)
			r.dims[ax] = n->attr.split.split[k];
		else
			r.dims[ax] = k < n->noutputs - 1 ? chunk :
			    x->dims[ax] - chunk * (n->noutputs - 1);
		if (r.dims[ax] < 0)
			return gs_node_shape_error(n, cause, "axis too short for the outputs", x);
		if (gs_set_out(n, s, k, &r, cause) < 0)
			return -1;
	}
	return 0;
}

/* Length of one sliced axis with ONNX's clamping rules. */
static int64_t
slice_len(int64_t dim, int64_t start, int64_t end, int64_t step)
{
	if (start < 0)
		start += dim;
	if (end < 0)
		end += dim;
	if (step > 0) {
		start = start < 0 ? 0 : start > dim ? dim : start;
		end = end < 0 ? 0 : end > dim ? dim : end;
		return end > start ? (end - start + step - 1) / step : 0;
	}
	start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
	end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
	return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

/* SLICE with resolved starts/ends/axes/steps. */
static int
shape_slice(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = *x;
	int seen[GRAPH_MAX_DIMS] = { 0 }, i;

	(void)g;
	if (n->ninputs > 1)
		return gs_node_error(n, cause, "slice bounds are not constant (specialize the graph first)");
	for (i = 0; i < n->attr.slice.naxes; i++) {
		int64_t ax, st = n->attr.slice.steps[i];

		if (gs_norm_axis(n->attr.slice.axes[i], x->ndims, &ax) < 0 || seen[ax])
			return gs_node_shape_error(n, cause, "slice axis out of range or repeated", x);
		if (st == 0)
			return gs_node_error(n, cause, "slice step is 0");
		seen[ax] = 1;
		r.dims[ax] = slice_len(x->dims[ax], n->attr.slice.starts[i], n->attr.slice.ends[i], st);
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* GATHER: data's shape with the axis replaced by the indices' shape. */
static int
shape_gather(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0), *ix = in_shape(n, s, 1);
	struct graph_shape r = { 0, { 0 } };
	int64_t ax;
	int i;

	(void)g;
	if (gs_norm_axis(n->attr.gather.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "gather axis out of range", x);
	if (x->ndims - 1 + ix->ndims > GRAPH_MAX_DIMS)
		return gs_node_shape_error(n, cause, "gather result beyond the maximum rank", x);
	for (i = 0; i < ax; i++)
		r.dims[r.ndims++] = x->dims[i];
	for (i = 0; i < ix->ndims; i++)
		r.dims[r.ndims++] = ix->dims[i];
	for (i = (int)ax + 1; i < x->ndims; i++)
		r.dims[r.ndims++] = x->dims[i];
	return gs_set_out(n, s, 0, &r, cause);
}

/* GATHER_ELEMENTS: indices' shape; same rank as data, no dim beyond data's off the axis (as onnxruntime). */
static int
shape_gather_elements(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0), *ix = in_shape(n, s, 1);
	int64_t ax;
	int i;

	(void)g;
	if (gs_norm_axis(n->attr.gather.axis, x->ndims, &ax) < 0)
		return gs_node_shape_error(n, cause, "GatherElements axis out of range", x);
	if (ix->ndims != x->ndims)
		return gs_node_shape_error(n, cause, "GatherElements indices must have the data's rank", ix);
	for (i = 0; i < x->ndims; i++)
		if (i != ax && ix->dims[i] > x->dims[i])
			return gs_node_shape_error(n, cause,
			    "GatherElements indices exceed the data's dims off the axis", ix);
	return gs_set_out(n, s, 0, ix, cause);
}

/* EXPAND: broadcast of the input with the shape tensor's values. */
static int
shape_expand(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	struct graph_shape t, r;
	int cnt;

	if (n->ninputs < 2 || gs_const_ints(g, n, n->inputs[1], t.dims, GRAPH_MAX_DIMS, &cnt, cause) < 0)
		return n->ninputs < 2 ? gs_node_error(n, cause, "expand without a shape") : -1;
	t.ndims = cnt;
	if (graph_shape_broadcast(in_shape(n, s, 0), &t, &r) < 0)
		return gs_node_shape_error(n, cause, "expand shape does not broadcast", in_shape(n, s, 0));
	return gs_set_out(n, s, 0, &r, cause);
}

/* PAD: each dim grows by its begin and end pads (negative pads crop). */
static int
shape_pad(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = *x;
	int i;

	(void)g;
	if (n->ninputs > 1)
		return gs_node_error(n, cause, "pads are not constant (specialize the graph first)");
	if (n->attr.pad.npads != 2 * x->ndims)
		return gs_node_shape_error(n, cause, "pads length is not twice the rank", x);
	for (i = 0; i < x->ndims; i++) {
		r.dims[i] = x->dims[i] + n->attr.pad.pads[i] + n->attr.pad.pads[i + x->ndims];
		if (r.dims[i] < 0)
			return gs_node_shape_error(n, cause, "negative pads crop past the input", x);
		if (n->attr.pad.mode == GRAPH_PAD_REFLECT && x->dims[i] < 2 &&
		    (n->attr.pad.pads[i] > 0 || n->attr.pad.pads[i + x->ndims] > 0))
			return gs_node_shape_error(n, cause, "reflect padding needs dims >= 2", x);
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* RESIZE: sizes when given, else floor(dim * scale). */
static int
shape_resize(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_resize_attr *a = &n->attr.resize;
	const struct graph_shape *x = in_shape(n, s, 0);
	struct graph_shape r = *x;
	int i;

	(void)g;
	if (n->ninputs > 1)
		return gs_node_error(n, cause, "resize scales/sizes are not constant (specialize first)");
	if ((a->nsizes ? a->nsizes : a->nscales) != x->ndims)
		return gs_node_shape_error(n, cause, "resize scales/sizes length differs from the rank", x);
	for (i = 0; i < x->ndims; i++) {
		if (a->nsizes)
			r.dims[i] = a->sizes[i];
		else if (a->scales[i] > 0)
			r.dims[i] = (int64_t)floor((double)x->dims[i] * (double)a->scales[i]);
		else
			return gs_node_error(n, cause, "resize scale must be positive");
		if (r.dims[i] < 1)
			return gs_node_shape_error(n, cause, "resize to an empty size", x);
	}
	return gs_set_out(n, s, 0, &r, cause);
}

/* SHAPE: a 1-D I64 of the clamped [start, end) part of X's rank. */
static int
shape_shape(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	int64_t rank = in_shape(n, s, 0)->ndims, st = n->attr.shape.start, en = n->attr.shape.end;
	struct graph_shape r = { 1, { 0 } };

	(void)g;
	if (st < 0)
		st += rank;
	if (en < 0)
		en += rank;
	st = st < 0 ? 0 : st > rank ? rank : st;
	en = en < 0 ? 0 : en > rank ? rank : en;
	r.dims[0] = en > st ? en - st : 0;
	return gs_set_out(n, s, 0, &r, cause);
}

/* CONSTANT_OF_SHAPE: the shape is the (constant) input's values. */
static int
shape_constant_of_shape(const graph_t *g, const struct graph_node *n, struct graph_shape *s,
    char **cause)
{
	struct graph_shape r;
	int cnt;

	if (gs_const_ints(g, n, n->inputs[0], r.dims, GRAPH_MAX_DIMS, &cnt, cause) < 0)
		return -1;
	r.ndims = cnt;
	return gs_set_out(n, s, 0, &r, cause);
}

/* Read element 0 of a CONST numeric scalar as a double. */
static int
const_scalar(const graph_t *g, const struct graph_node *n, int t, double *out, char **cause)
{
	const struct graph_tensor *x = &g->tensors[t];

	if (!(x->flags & GRAPH_TENSOR_CONST) || x->data == NULL || x->nbytes < graph_dtype_size(x->dtype))
		return error_set(cause, "node '%s': input '%s' must be a constant scalar", n->name,
		    x->name);
	switch (x->dtype) {
	case GRAPH_DT_F32: { float v; memcpy(&v, x->data, 4); *out = v; return 0; }
	case GRAPH_DT_I64: { int64_t v; memcpy(&v, x->data, 8); *out = (double)v; return 0; }
	case GRAPH_DT_I32: { int32_t v; memcpy(&v, x->data, 4); *out = v; return 0; }
	default:
		return error_set(cause, "node '%s': range input '%s' must be FP32, INT64 or INT32",
		    n->name, x->name);
	}
}

/* RANGE: max(ceil((limit - start) / delta), 0) elements. */
static int
shape_range(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	double v[3], len;
	struct graph_shape r = { 1, { 0 } };
	int k;

	for (k = 0; k < 3; k++)
		if (const_scalar(g, n, n->inputs[k], &v[k], cause) < 0)
			return -1;
	if (v[2] == 0)
		return gs_node_error(n, cause, "range delta is 0");
	len = ceil((v[1] - v[0]) / v[2]);
	r.dims[0] = len > 0 ? (int64_t)len : 0;
	return gs_set_out(n, s, 0, &r, cause);
}

/* The shape function of each op. */
/* GATHER_ND: indices' dims but the last (m), then data's dims after batch_dims + m. */
static int
shape_gather_nd(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0), *ix = in_shape(n, s, 1);
	struct graph_shape r = { 0, { 0 } };
	int64_t b = n->attr.nd.batch_dims, m;
	int i;

	(void)g;
	if (ix->ndims < 1 || b < 0 || b >= ix->ndims || b >= x->ndims)
		return gs_node_shape_error(n, cause, "GatherND indices rank or batch_dims out of range", ix);
	m = ix->dims[ix->ndims - 1];
	if (m < 1 || b + m > x->ndims)
		return gs_node_shape_error(n, cause, "GatherND indices' last dim exceeds the data's rank", ix);
	if (ix->ndims - 1 + x->ndims - b - m > GRAPH_MAX_DIMS)
		return gs_node_shape_error(n, cause, "GatherND result beyond the maximum rank", ix);
	for (i = 0; i < b; i++)
		if (ix->dims[i] != x->dims[i])
			return gs_node_shape_error(n, cause, "GatherND batch dims of data and indices differ", ix);
	for (i = 0; i < ix->ndims - 1; i++)
		r.dims[r.ndims++] = ix->dims[i];
	for (i = (int)(b + m); i < x->ndims; i++)
		r.dims[r.ndims++] = x->dims[i];
	return gs_set_out(n, s, 0, &r, cause);
}

/* SCATTER_ND: data's shape; updates must be indices' dims but the last (m), then data's dims after m. */
static int
shape_scatter_nd(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_shape *x = in_shape(n, s, 0), *ix = in_shape(n, s, 1), *u = in_shape(n, s, 2);
	int64_t m;
	int i;

	(void)g;
	if (ix->ndims < 1 || (m = ix->dims[ix->ndims - 1]) < 1 || m > x->ndims)
		return gs_node_shape_error(n, cause, "ScatterND indices' last dim is not in [1, data rank]", ix);
	if (u->ndims != ix->ndims - 1 + x->ndims - (int)m)
		return gs_node_shape_error(n, cause, "ScatterND updates of the wrong rank", u);
	for (i = 0; i < ix->ndims - 1; i++)
		if (u->dims[i] != ix->dims[i])
			return gs_node_shape_error(n, cause, "ScatterND updates differ from the indices' dims", u);
	for (i = (int)m; i < x->ndims; i++)
		if (u->dims[ix->ndims - 1 + i - m] != x->dims[i])
			return gs_node_shape_error(n, cause, "ScatterND updates differ from the data's trailing dims", u);
	return gs_set_out(n, s, 0, x, cause);
}

/* RNN: X [T, B, I]; W, R, B, sequence_lens, initial states and P as ONNX; Y [T, D, B, H], Y_h and Y_c [D, B, H]. */
static int
shape_rnn(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	const struct graph_rnn_attr *a = &n->attr.rnn;
	const struct graph_shape *x = in_shape(n, s, 0);
	int64_t gates = a->cell == GRAPH_RNN_LSTM ? 4 : a->cell == GRAPH_RNN_GRU ? 3 : 1, d = a->ndir, h = a->hidden;
	struct graph_shape want[8] = {
		{ 3, { 0 } }, { 3, { d, gates * h, x->dims[2] } }, { 3, { d, gates * h, h } }, { 2, { d, 2 * gates * h } },
		{ 1, { x->dims[1] } }, { 3, { d, x->dims[1], h } }, { 3, { d, x->dims[1], h } }, { 2, { d, 3 * h } },
	};
	struct graph_shape y = { 4, { x->dims[0], d, x->dims[1], h } }, yh = { 3, { d, x->dims[1], h } };
	int k;

	(void)g;
	if (x->ndims != 3)
		return gs_node_shape_error(n, cause, "X must be [seq, batch, input]", x);
	for (k = 1; k < n->ninputs && k < 8; k++)
		if (n->inputs[k] >= 0 && !gs_shape_eq(in_shape(n, s, k), &want[k]))
			return gs_node_shape_error(n, cause, k == 7 && a->cell != GRAPH_RNN_LSTM ?
			    "too many inputs for the cell" : "a weight, bias, length or state input of the wrong shape",
			    in_shape(n, s, k));
	if (n->ninputs > 8 || (n->ninputs > 6 && a->cell != GRAPH_RNN_LSTM))
		return gs_node_error(n, cause, "too many inputs for the cell");
	if (gs_set_out(n, s, 0, &y, cause) < 0 || (n->noutputs > 1 && gs_set_out(n, s, 1, &yh, cause) < 0))
		return -1;
	return n->noutputs > 2 ? gs_set_out(n, s, 2, &yh, cause) : 0;
}

/* TOPK: X's shape with the axis k long, twice (values, indices). */
static int
shape_topk(const graph_t *g, const struct graph_node *n, struct graph_shape *s, char **cause)
{
	struct graph_shape r = *in_shape(n, s, 0);
	int64_t ax;

	(void)g;
	if (gs_norm_axis(n->attr.topk.axis, r.ndims, &ax) < 0 || n->attr.topk.k > r.dims[ax])
		return gs_node_shape_error(n, cause, "TopK axis out of range or k beyond the axis", &r);
	r.dims[ax] = n->attr.topk.k;
	if (gs_set_out(n, s, 0, &r, cause) < 0)
		return -1;
	return gs_set_out(n, s, 1, &r, cause);
}

static const shape_fn shape_fns[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = shape_gemm,
	[GRAPH_OP_MATMUL] = shape_matmul,
	[GRAPH_OP_CONV] = shape_conv,
	[GRAPH_OP_CONV_TRANSPOSE] = shape_conv_transpose,
	[GRAPH_OP_UNARY] = shape_same,
	[GRAPH_OP_BINARY] = shape_broadcast,
	[GRAPH_OP_PRELU] = shape_same,
	[GRAPH_OP_SOFTMAX] = shape_same,
	[GRAPH_OP_LAYERNORM] = shape_same,
	[GRAPH_OP_BATCHNORM] = shape_same,
	[GRAPH_OP_POOL] = shape_pool,
	[GRAPH_OP_REDUCE] = shape_reduce,
	[GRAPH_OP_TRANSPOSE] = shape_transpose,
	[GRAPH_OP_RESHAPE] = shape_reshape,
	[GRAPH_OP_CONCAT] = shape_concat,
	[GRAPH_OP_SPLIT] = shape_split,
	[GRAPH_OP_SLICE] = shape_slice,
	[GRAPH_OP_GATHER] = shape_gather,
	[GRAPH_OP_EXPAND] = shape_expand,
	[GRAPH_OP_PAD] = shape_pad,
	[GRAPH_OP_RESIZE] = shape_resize,
	[GRAPH_OP_CAST] = shape_same,
	[GRAPH_OP_WHERE] = shape_broadcast,
	[GRAPH_OP_COPY] = shape_same,
	[GRAPH_OP_GATHER_ELEMENTS] = shape_gather_elements,
	[GRAPH_OP_ATTENTION] = shape_attention,
	[GRAPH_OP_SHAPE] = shape_shape,
	[GRAPH_OP_CONSTANT_OF_SHAPE] = shape_constant_of_shape,
	[GRAPH_OP_RANGE] = shape_range,
	[GRAPH_OP_PREDICATE] = shape_same,
	[GRAPH_OP_TRILU] = shape_same,
	[GRAPH_OP_CUMSUM] = shape_same,
	[GRAPH_OP_GATHER_ND] = shape_gather_nd,
	[GRAPH_OP_SCATTER_ND] = shape_scatter_nd,
	[GRAPH_OP_RNN] = shape_rnn,
	[GRAPH_OP_TOPK] = shape_topk,
	[GRAPH_OP_SCATTER_ELEMENTS] = graph_shape_scatter_elements,
	[GRAPH_OP_ONEHOT] = graph_shape_onehot,
	[GRAPH_OP_INSTANCENORM] = graph_shape_groupnorm,
	[GRAPH_OP_GROUPNORM] = graph_shape_groupnorm,
	[GRAPH_OP_EINSUM] = graph_shape_einsum,
	[GRAPH_OP_ARGMAX] = graph_shape_argmax,
	[GRAPH_OP_TILE] = graph_shape_tile,
};

/* Minimum input count of each op (optional inputs beyond it may be -1). */
static const int shape_min_inputs[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = 2, [GRAPH_OP_MATMUL] = 2, [GRAPH_OP_CONV] = 2,
	[GRAPH_OP_CONV_TRANSPOSE] = 2, [GRAPH_OP_UNARY] = 1, [GRAPH_OP_BINARY] = 2,
	[GRAPH_OP_PRELU] = 2, [GRAPH_OP_SOFTMAX] = 1, [GRAPH_OP_LAYERNORM] = 1,
	[GRAPH_OP_BATCHNORM] = 5, [GRAPH_OP_POOL] = 1, [GRAPH_OP_REDUCE] = 1,
	[GRAPH_OP_TRANSPOSE] = 1, [GRAPH_OP_RESHAPE] = 1, [GRAPH_OP_CONCAT] = 1,
	[GRAPH_OP_SPLIT] = 1, [GRAPH_OP_SLICE] = 1, [GRAPH_OP_GATHER] = 2, [GRAPH_OP_EXPAND] = 2,
	[GRAPH_OP_PAD] = 1, [GRAPH_OP_RESIZE] = 1, [GRAPH_OP_CAST] = 1, [GRAPH_OP_WHERE] = 3,
	[GRAPH_OP_COPY] = 1, [GRAPH_OP_GATHER_ELEMENTS] = 2, [GRAPH_OP_ATTENTION] = 3, [GRAPH_OP_SHAPE] = 1,
	[GRAPH_OP_CONSTANT_OF_SHAPE] = 1,
	[GRAPH_OP_RANGE] = 3, [GRAPH_OP_PREDICATE] = 1, [GRAPH_OP_TRILU] = 1, [GRAPH_OP_CUMSUM] = 1,
	[GRAPH_OP_GATHER_ND] = 2, [GRAPH_OP_SCATTER_ND] = 3, [GRAPH_OP_RNN] = 3, [GRAPH_OP_TOPK] = 1,
	[GRAPH_OP_SCATTER_ELEMENTS] = 3, [GRAPH_OP_ONEHOT] = 3, [GRAPH_OP_INSTANCENORM] = 3, [GRAPH_OP_GROUPNORM] = 3,
	[GRAPH_OP_EINSUM] = 1, [GRAPH_OP_ARGMAX] = 1, [GRAPH_OP_TILE] = 1,
};

/* Check the node's tensor indices before any shape is read. */
static int
node_check_indices(const graph_t *g, const struct graph_node *n, char **cause)
{
	int k;

	if ((unsigned)n->op >= GRAPH_OP_COUNT || shape_fns[n->op] == NULL)
		return gs_node_error(n, cause, "unknown op");
	if (n->ninputs < shape_min_inputs[n->op] || n->noutputs < 1)
		return gs_node_error(n, cause, "too few inputs or outputs for the op");
	for (k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= (int)g->ntensors || n->inputs[k] < -1 ||
		    (n->inputs[k] < 0 && k < shape_min_inputs[n->op]))
			return gs_node_error(n, cause, "input tensor index out of range");
	for (k = 0; k < n->noutputs; k++)
		if (n->outputs[k] >= (int)g->ntensors || n->outputs[k] < -1)
			return gs_node_error(n, cause, "output tensor index out of range");
	return 0;
}

/* Shapes of node n's outputs. */
int
graph_infer_node(const graph_t *g, const struct graph_node *n, struct graph_shape *shapes,
    char **cause)
{
	if (node_check_indices(g, n, cause) < 0)
		return -1;
	return shape_fns[n->op](g, n, shapes, cause);
}

/* Check one concrete input shape against its declaration; vars[] binds batch (slot 0) and variable dims. */
static int
input_shape_check(const graph_t *g, int t, const struct graph_shape *s, int64_t *vars,
    char **cause)
{
	const struct graph_tensor *x = &g->tensors[t];
	int64_t total = 1;
	int i;

	if (s->ndims < 0 || s->ndims > GRAPH_MAX_DIMS || (x->ndims >= 0 && s->ndims != x->ndims))
		return error_set(cause, "input '%s': rank %d, the model declares %d", x->name,
		    s->ndims, x->ndims);
	for (i = 0; i < s->ndims; i++) {
		int64_t d = x->ndims >= 0 ? x->dims[i] : s->dims[i], *slot;

		/* An empty request tensor is refused here, once, rather than by every kernel. */
		if (s->dims[i] < 1 || s->dims[i] > SHAPE_DIM_MAX || total > SHAPE_DIM_MAX / s->dims[i])
			return error_set(cause, "input '%s': dim %d is %" PRId64 " (empty or too large)",
			    x->name, i, s->dims[i]);
		total *= s->dims[i];
		if (d >= 0) {
			if (d != s->dims[i])
				return error_set(cause, "input '%s': dim %d is %" PRId64 ", the model "
				    "declares %" PRId64, x->name, i, s->dims[i], d);
			continue;
		}
		slot = d == GRAPH_DIM_BATCH ? &vars[0] : GRAPH_DIM_VAR_INDEX(d) < g->nvars ?
		    &vars[1 + GRAPH_DIM_VAR_INDEX(d)] : NULL;
		if (slot == NULL)
			return error_set(cause, "input '%s': dim %d has an undeclared variable", x->name, i);
		if (*slot >= 0 && *slot != s->dims[i])
			return error_set(cause, "input '%s': dim %d is %" PRId64 " but the same "
			    "dimension is %" PRId64 " elsewhere", x->name, i, s->dims[i], *slot);
		*slot = s->dims[i];
	}
	return 0;
}

/* Shapes of constants from their declarations, inputs from the request. */
int
graph_shapes_seed(const graph_t *g, const struct graph_shape *input_shapes, struct graph_shape *shapes,
    char **cause)
{
	int64_t vars[1 + 64];
	size_t i;
	int k, j;

	if (g->nvars > 64)
		return error_set(cause, "graph has %d variable dimensions, at most 64", g->nvars);
	for (k = 0; k < 1 + 64; k++)
		vars[k] = -1;
	for (i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *x = &g->tensors[i];

		shapes[i].ndims = 0;
		if (!(x->flags & GRAPH_TENSOR_CONST))
			continue;
		if (x->ndims < 0 || x->ndims > GRAPH_MAX_DIMS)
			return error_set(cause, "constant '%s' has no shape", x->name);
		shapes[i].ndims = x->ndims;
		for (j = 0; j < x->ndims; j++)
			shapes[i].dims[j] = x->dims[j];
	}
	for (k = 0; k < g->ninputs; k++) {
		if (input_shape_check(g, g->inputs[k], &input_shapes[k], vars, cause) < 0)
			return -1;
		shapes[g->inputs[k]] = input_shapes[k];
	}
	return 0;
}

/* Refuse a node reading a tensor that is neither a constant, an input, nor written by an earlier node. */
static int
node_inputs_known(const graph_t *g, const struct graph_node *n, const unsigned char *known,
    char **cause)
{
	int k;

	for (k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0 && n->inputs[k] < (int)g->ntensors && !known[n->inputs[k]])
			return error_set(cause, "node '%s': input '%s' is computed by no earlier node",
			    n->name ? n->name : "?", g->tensors[n->inputs[k]].name);
	return 0;
}

/* Shapes of every tensor for concrete input shapes. */
int
graph_infer_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause)
{
	unsigned char *known = xcalloc(g->ntensors + 1, 1);
	size_t i;
	int k, rc = -1;

	if (known == NULL)
		return error_set(cause, "out of memory");
	if (graph_shapes_seed(g, input_shapes, shapes, cause) < 0)
		goto out;
	for (i = 0; i < g->ntensors; i++)
		known[i] = (g->tensors[i].flags & GRAPH_TENSOR_CONST) != 0;
	for (k = 0; k < g->ninputs; k++)
		known[g->inputs[k]] = 1;
	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];

		if (node_inputs_known(g, n, known, cause) < 0 || graph_infer_node(g, n, shapes, cause) < 0)
			goto out;
		for (k = 0; k < n->noutputs; k++)
			if (n->outputs[k] >= 0)
				known[n->outputs[k]] = 1;
	}
	rc = 0;
out:
	free(known);
	return rc;
}
