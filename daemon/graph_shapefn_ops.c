/* graph_shapefn_ops.c: each op's output shapes over symbolic dims, as graph_shape.c computes them over numbers. */
#include <math.h>
#include <string.h>

#include "graph_shapefn_impl.h"

typedef int (*sf_fn)(struct sf *);

/* The constant c. */
static int
K(struct sf *s, int64_t c)
{
	return sym_const(s->p, c);
}

/* Require a == b. */
static int
require_eq(struct sf *s, int a, int b, const char *what)
{
	return sf_require(s, sym_eq(s->p, a, b), what);
}

/* Require two shapes equal, dim by dim (ranks must agree). */
static int
require_same(struct sf *s, const struct graph_shapefn_shape *a, const struct graph_shapefn_shape *b,
    const char *what)
{
	int i;

	if (a->ndims != b->ndims)
		return sf_fail(s, what);
	for (i = 0; i < a->ndims; i++)
		if (require_eq(s, a->dims[i], b->dims[i], what) < 0)
			return -1;
	return 0;
}

/* Require that b broadcasts to a and gives a. */
static int
require_broadcasts_to(struct sf *s, const struct graph_shapefn_shape *a, const struct graph_shapefn_shape *b,
    const char *what)
{
	struct graph_shapefn_shape r;

	if (sf_broadcast(s, a, b, &r) < 0)
		return -1;
	return require_same(s, &r, a, what);
}

/* UNARY, SOFTMAX, LAYERNORM, CAST, COPY, BATCHNORM, PRELU, PREDICATE, TRILU, CUMSUM: X's shape. */
static int
sf_same(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	const struct graph_node *n = s->n;
	int64_t ax;

	if (n->op == GRAPH_OP_SOFTMAX && sf_axis(n->attr.softmax.axis, x->ndims, &ax) < 0)
		return sf_fail(s, "softmax axis out of range");
	if (n->op == GRAPH_OP_LAYERNORM && sf_axis(n->attr.norm.axis, x->ndims, &ax) < 0)
		return sf_fail(s, "layer-norm axis out of range");
	if (n->op == GRAPH_OP_LAYERNORM && sf_has(s, 3) &&
	    require_same(s, sf_in(s, 3), x, "the layer-norm residual differs from X's shape") < 0)
		return -1;
	if (n->op == GRAPH_OP_BATCHNORM && (x->ndims < 2 || n->ninputs < 5))
		return sf_fail(s, "batch-norm needs rank >= 2 and 5 inputs");
	if (n->op == GRAPH_OP_BATCHNORM &&
	    require_eq(s, sf_elems(s, sf_in(s, 1)), x->dims[1], "batch-norm parameters do not match the channels") < 0)
		return -1;
	if (n->op == GRAPH_OP_TRILU && x->ndims < 2)
		return sf_fail(s, "Trilu needs a rank of at least 2");
	if (n->op == GRAPH_OP_CUMSUM && n->ninputs < 2 && sf_axis(n->attr.cumsum.axis, x->ndims, &ax) < 0)
		return sf_fail(s, "CumSum axis out of range");
	if (n->op == GRAPH_OP_PRELU &&
	    require_broadcasts_to(s, x, sf_in(s, 1), "the slope does not broadcast to X") < 0)
		return -1;
	return sf_set_out(s, 0, x);
}

/* BINARY and WHERE: numpy broadcast of all inputs. */
static int
sf_bcast(struct sf *s)
{
	struct graph_shapefn_shape r = *sf_in(s, 0);
	int k;

	for (k = 1; k < s->n->ninputs; k++)
		if (sf_broadcast(s, &r, sf_in(s, k), &r) < 0)
			return -1;
	return sf_set_out(s, 0, &r);
}

/* GEMM: [M,K] x [K,N] with transposes; C broadcasts to [M,N]. */
static int
sf_gemm(struct sf *s)
{
	const struct graph_shapefn_shape *a = sf_in(s, 0), *b = sf_in(s, 1);
	const struct graph_gemm_attr *g = &s->n->attr.gemm;
	struct graph_shapefn_shape r = { 2, { 0 } };

	if (a->ndims != 2 || b->ndims != 2)
		return sf_fail(s, "Gemm needs 2-D A and B");
	r.dims[0] = g->trans_a ? a->dims[1] : a->dims[0];
	r.dims[1] = g->trans_b ? b->dims[0] : b->dims[1];
	if (require_eq(s, g->trans_a ? a->dims[0] : a->dims[1], g->trans_b ? b->dims[1] : b->dims[0],
	    "Gemm inner dimensions differ") < 0)
		return -1;
	if (sf_has(s, 2) && require_broadcasts_to(s, &r, sf_in(s, 2), "Gemm C does not broadcast to [M,N]") < 0)
		return -1;
	return sf_set_out(s, 0, &r);
}

/* MATMUL: numpy matmul (1-D operands promoted and dropped, batch dims broadcast). */
static int
sf_matmul(struct sf *s)
{
	struct graph_shapefn_shape a = *sf_in(s, 0), b = *sf_in(s, 1), ba, bb, r;
	int a1 = a.ndims == 1, b1 = b.ndims == 1;

	if (a.ndims < 1 || b.ndims < 1)
		return sf_fail(s, "MatMul operands must have rank >= 1");
	if (a1) {
		a.ndims = 2; a.dims[1] = a.dims[0]; a.dims[0] = K(s, 1);
	}
	if (b1) {
		b.ndims = 2; b.dims[1] = K(s, 1);
	}
	if (require_eq(s, a.dims[a.ndims - 1], b.dims[b.ndims - 2], "MatMul inner dimensions differ") < 0)
		return -1;
	ba = a; ba.ndims -= 2;
	bb = b; bb.ndims -= 2;
	if (sf_broadcast(s, &ba, &bb, &r) < 0)
		return -1;
	if (r.ndims + 2 > GRAPH_MAX_DIMS)
		return sf_fail(s, "MatMul result beyond the maximum rank");
	if (!a1)
		r.dims[r.ndims++] = a.dims[a.ndims - 2];
	if (!b1)
		r.dims[r.ndims++] = b.dims[b.ndims - 1];
	if (sf_has(s, 2) && require_broadcasts_to(s, &r, sf_in(s, 2), "the MatMul bias does not broadcast to the output") < 0)
		return -1;
	return sf_set_out(s, 0, &r);
}

/* Swap dims i and j of a symbolic shape. */
static void
sf_swap_dims(struct graph_shapefn_shape *x, int i, int j)
{
	int t = x->dims[i];

	x->dims[i] = x->dims[j];
	x->dims[j] = t;
}

/*
 * ATTENTION: Q's leading dims and rows, V's depth; guards that K and V fit Q and the mask broadcasts to the scores.
 * seq_major tensors ([..., S, H, D]) are read with their heads and sequence swapped, the output swapped back.
 */
static int
sf_attention(struct sf *s)
{
	struct graph_shapefn_shape q = *sf_in(s, 0), k = *sf_in(s, 1), v = *sf_in(s, 2);
	struct graph_shapefn_shape scores, r;
	int rank = q.ndims, kt = s->n->attr.attention.k_transposed, sm = s->n->attr.attention.seq_major, i;

	if (rank < (sm ? 3 : 2) || k.ndims != rank || v.ndims != rank || (sm && kt))
		return sf_fail(s, sm ? "seq-major attention needs Q, K and V of one rank, at least 3, K not transposed" :
		    "attention needs Q, K and V of one rank, at least 2");
	if (sm) {
		sf_swap_dims(&q, rank - 3, rank - 2);
		sf_swap_dims(&k, rank - 3, rank - 2);
		sf_swap_dims(&v, rank - 3, rank - 2);
	}
	for (i = 0; i < rank - 2; i++)
		if (require_eq(s, k.dims[i], q.dims[i], "attention's Q and K differ in their leading dims") < 0 ||
		    require_eq(s, v.dims[i], q.dims[i], "attention's Q and V differ in their leading dims") < 0)
			return -1;
	if (require_eq(s, k.dims[kt ? rank - 2 : rank - 1], q.dims[rank - 1], "attention's K has another depth than Q") < 0 ||
	    require_eq(s, v.dims[rank - 2], k.dims[kt ? rank - 1 : rank - 2], "attention's V has another length than K") < 0)
		return -1;
	scores = q;
	scores.dims[rank - 1] = k.dims[kt ? rank - 1 : rank - 2];
	if (sf_has(s, 3) && require_broadcasts_to(s, &scores, sf_in(s, 3), "attention's mask does not broadcast to the scores") < 0)
		return -1;
	r = q;
	r.dims[rank - 1] = v.dims[rank - 1];
	if (sm)
		sf_swap_dims(&r, rank - 3, rank - 2);
	return sf_set_out(s, 0, &r);
}

/* Check the window attributes against X's rank. */
static int
window_check(struct sf *s, const struct graph_window_attr *w, const struct graph_shapefn_shape *x)
{
	int i;

	if (w->nspatial < 1 || w->nspatial > 3 || x->ndims != 2 + w->nspatial)
		return sf_fail(s, "input rank does not match the window");
	for (i = 0; i < w->nspatial; i++)
		if (w->stride[i] < 1 || w->dilation[i] < 1 || w->pad_begin[i] < 0 || w->pad_end[i] < 0)
			return sf_fail(s, "strides/dilations must be >= 1 and pads >= 0");
	return 0;
}

/* in + pads - dilation (k - 1) - 1, required >= 0 (the window fits the padded input). */
static int
window_span(struct sf *s, const struct graph_window_attr *w, int i, int in, int k, const char *what)
{
	struct sym_pool *p = s->p;
	int span = sym_sub(p, sym_add(p, in, K(s, w->pad_begin[i] + w->pad_end[i])),
	    sym_add(p, sym_mul(p, K(s, w->dilation[i]), sym_sub(p, k, K(s, 1))), K(s, 1)));

	if (sf_require(s, sym_le(p, K(s, 0), span), what) < 0)
		return SYM_NONE;
	return span;
}

/* CONV: [N, C, spatial] * [M, C/group, k] -> [N, M, out]; B is [M], Z the output's shape. */
static int
sf_conv(struct sf *s)
{
	const struct graph_window_attr *w = &s->n->attr.conv;
	const struct graph_shapefn_shape *x = sf_in(s, 0), *wt = sf_in(s, 1);
	struct sym_pool *p = s->p;
	struct graph_shapefn_shape r;
	int i, k, span;

	if (window_check(s, w, x) < 0)
		return -1;
	if (wt->ndims != x->ndims || w->group < 1)
		return sf_fail(s, "the weight does not match the input's rank, or group < 1");
	if (require_eq(s, sym_mul(p, wt->dims[1], K(s, w->group)), x->dims[1],
	    "the weight does not match the input channels and group") < 0 ||
	    require_eq(s, sym_mod(p, wt->dims[0], K(s, w->group)), K(s, 0), "output channels do not divide by group") < 0)
		return -1;
	r.ndims = x->ndims;
	r.dims[0] = x->dims[0];
	r.dims[1] = wt->dims[0];
	for (i = 0; i < w->nspatial; i++) {
		k = w->kernel[i] > 0 ? K(s, w->kernel[i]) : wt->dims[2 + i];
		if (require_eq(s, k, wt->dims[2 + i], "kernel_shape differs from the weight") < 0 ||
		    (span = window_span(s, w, i, x->dims[2 + i], k, "the kernel is larger than the padded input")) < 0)
			return -1;
		r.dims[2 + i] = sym_add(p, sym_div(p, span, K(s, w->stride[i])), K(s, 1));
	}
	if (sf_has(s, 2) && require_eq(s, sf_elems(s, sf_in(s, 2)), r.dims[1], "bias length differs from output channels") < 0)
		return -1;
	if (sf_has(s, 3) && require_same(s, sf_in(s, 3), &r, "the residual input differs from the output shape") < 0)
		return -1;
	return sf_set_out(s, 0, &r);
}

/* CONV_TRANSPOSE: stride (in - 1) + output_padding + dilation (k - 1) + 1 - pads, at least 1. */
static int
sf_conv_transpose(struct sf *s)
{
	const struct graph_window_attr *w = &s->n->attr.conv;
	const struct graph_shapefn_shape *x = sf_in(s, 0), *wt = sf_in(s, 1);
	struct sym_pool *p = s->p;
	struct graph_shapefn_shape r;
	int i, k, o;

	if (window_check(s, w, x) < 0)
		return -1;
	if (wt->ndims != x->ndims || w->group < 1)
		return sf_fail(s, "the weight does not match the input's rank, or group < 1");
	if (require_eq(s, wt->dims[0], x->dims[1], "the weight does not match the input channels") < 0 ||
	    require_eq(s, sym_mod(p, x->dims[1], K(s, w->group)), K(s, 0), "input channels do not divide by group") < 0)
		return -1;
	r.ndims = x->ndims;
	r.dims[0] = x->dims[0];
	r.dims[1] = sym_mul(p, wt->dims[1], K(s, w->group));
	for (i = 0; i < w->nspatial; i++) {
		k = w->kernel[i] > 0 ? K(s, w->kernel[i]) : wt->dims[2 + i];
		o = sym_add(p, sym_mul(p, K(s, w->stride[i]), sym_sub(p, x->dims[2 + i], K(s, 1))),
		    sym_mul(p, sym_sub(p, k, K(s, 1)), K(s, w->dilation[i])));
		o = sym_add(p, o, K(s, w->output_padding[i] + 1 - w->pad_begin[i] - w->pad_end[i]));
		if (require_eq(s, k, wt->dims[2 + i], "kernel_shape differs from the weight") < 0 ||
		    sf_require(s, sym_le(p, K(s, 1), o), "the transposed convolution's output is empty") < 0)
			return -1;
		r.dims[2 + i] = o;
	}
	if (sf_has(s, 2) && require_eq(s, sf_elems(s, sf_in(s, 2)), r.dims[1], "bias length differs from output channels") < 0)
		return -1;
	return sf_set_out(s, 0, &r);
}

/* POOL: window output size with floor or ceil_mode (the last window must start inside the input or left pad). */
static int
sf_pool(struct sf *s)
{
	const struct graph_pool_attr *a = &s->n->attr.pool;
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = *x;
	struct sym_pool *p = s->p;
	int i, span, st, o, last;

	if (a->global) {
		if (x->ndims < 3)
			return sf_fail(s, "global pooling needs rank >= 3");
		for (i = 2; i < x->ndims; i++)
			r.dims[i] = K(s, 1);
		return sf_set_out(s, 0, &r);
	}
	if (window_check(s, &a->w, x) < 0)
		return -1;
	for (i = 0; i < a->w.nspatial; i++) {
		if (a->w.kernel[i] < 1)
			return sf_fail(s, "pool kernel must be >= 1");
		span = window_span(s, &a->w, i, x->dims[2 + i], K(s, a->w.kernel[i]), "the pool window is larger than the padded input");
		if (span < 0)
			return -1;
		st = K(s, a->w.stride[i]);
		o = sym_add(p, a->ceil_mode ? sym_ceil_div(p, span, st) : sym_div(p, span, st), K(s, 1));
		if (a->ceil_mode) {
			last = sym_mul(p, sym_sub(p, o, K(s, 1)), st);
			o = sym_select(p, sym_le(p, sym_add(p, x->dims[2 + i], K(s, a->w.pad_begin[i])), last),
			    sym_sub(p, o, K(s, 1)), o);
		}
		r.dims[2 + i] = o;
	}
	return sf_set_out(s, 0, &r);
}

/* REDUCE over axes (all when naxes is 0), keeping size-1 dims when keepdims. */
static int
sf_reduce(struct sf *s)
{
	const struct graph_reduce_attr *a = &s->n->attr.reduce;
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = { 0, { 0 } };
	int red[GRAPH_MAX_DIMS] = { 0 }, i;
	int64_t ax;

	for (i = 0; i < a->naxes; i++) {
		if (sf_axis(a->axes[i], x->ndims, &ax) < 0 || red[ax])
			return sf_fail(s, "reduce axis out of range or repeated");
		red[ax] = 1;
	}
	for (i = 0; i < x->ndims; i++) {
		if (!(a->naxes == 0 || red[i]))
			r.dims[r.ndims++] = x->dims[i];
		else if (a->keepdims)
			r.dims[r.ndims++] = K(s, 1);
	}
	return sf_set_out(s, 0, &r);
}

/* TRANSPOSE by perm (reversed dims when perm is empty). */
static int
sf_transpose(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = { x->ndims, { 0 } };
	int seen[GRAPH_MAX_DIMS] = { 0 }, i;

	if (s->n->attr.transpose.nperm != 0 && s->n->attr.transpose.nperm != x->ndims)
		return sf_fail(s, "perm length differs from the rank");
	for (i = 0; i < x->ndims; i++) {
		int64_t q = s->n->attr.transpose.nperm ? s->n->attr.transpose.perm[i] : x->ndims - 1 - i;

		if (q < 0 || q >= x->ndims || seen[q])
			return sf_fail(s, "perm is not a permutation");
		seen[q] = 1;
		r.dims[i] = x->dims[q];
	}
	return sf_set_out(s, 0, &r);
}

/* The target's values: the input's followed values, or the output's declared (fixed) shape. */
static int
reshape_values(struct sf *s, int32_t *t, int *cnt)
{
	const struct graph_tensor *o = &s->g->tensors[s->n->outputs[0]];
	const int32_t *v;
	int i;

	if (!sf_has(s, 1)) {
		if (o->ndims < 0)
			return sf_fail(s, "reshape without a target shape");
		*cnt = o->ndims;
		for (i = 0; i < o->ndims; i++)
			t[i] = K(s, o->dims[i]);
		return 0;
	}
	if ((*cnt = sf_values(s, s->n->inputs[1], &v)) < 0)
		return sf_fail(s, "the reshape target is computed from values the shape function cannot follow");
	if (*cnt > GRAPH_MAX_DIMS)
		return sf_fail(s, "the reshape target has too many dims");
	memcpy(t, v, (size_t)*cnt * sizeof *t);
	return 0;
}

/* RESHAPE to a target: 0 copies the input dim (unless allowzero), one -1 is inferred. */
static int
reshape_target(struct sf *s, const struct graph_shapefn_shape *x, struct graph_shapefn_shape *r)
{
	struct sym_pool *p = s->p;
	int32_t t[GRAPH_MAX_DIMS];
	int cnt = 0, i, infer = -1, known = K(s, 1), total = sf_elems(s, x);
	int64_t c, lo, hi;

	if (reshape_values(s, t, &cnt) < 0)
		return -1;
	r->ndims = cnt;
	for (i = 0; i < cnt; i++) {
		int d = t[i];

		sym_bounds(p, d, &lo, &hi);
		if (sym_is_const(p, d, &c) && c == -1) {
			if (infer >= 0)
				return sf_fail(s, "the reshape target has two -1 dims");
			infer = i;
			continue;
		}
		if (lo < 0)
			return sf_fail(s, "a reshape target dim may be negative for some input shapes");
		if (lo == 0 && !s->n->attr.reshape.allowzero) {
			if (i >= x->ndims)
				return sf_fail(s, "reshape target 0 past the input rank");
			d = sym_select(p, sym_eq(p, d, K(s, 0)), x->dims[i], d);
		}
		r->dims[i] = d;
		known = sym_mul(p, known, d);
	}
	if (infer < 0)
		return require_eq(s, known, total, "the reshape target changes the element count");
	if (sf_require(s, sym_and(p, sym_not(p, sym_eq(p, known, K(s, 0))),
	    sym_eq(p, sym_mod(p, total, known), K(s, 0))), "the reshape target does not divide the element count") < 0)
		return -1;
	r->dims[infer] = sym_div(p, total, known);
	return 0;
}

/* SQUEEZE: drop the listed size-1 axes (all size-1 axes when none are listed, which must then be fixed). */
static int
reshape_squeeze(struct sf *s, const struct graph_shapefn_shape *x, struct graph_shapefn_shape *r)
{
	int drop[GRAPH_MAX_DIMS] = { 0 }, i;
	int64_t ax, c;

	for (i = 0; i < s->n->attr.reshape.naxes; i++) {
		if (sf_axis(s->n->attr.reshape.axes[i], x->ndims, &ax) < 0)
			return sf_fail(s, "squeeze axis out of range");
		if (require_eq(s, x->dims[ax], K(s, 1), "a squeezed axis is not of size 1") < 0)
			return -1;
		drop[ax] = 1;
	}
	r->ndims = 0;
	for (i = 0; i < x->ndims; i++) {
		if (s->n->attr.reshape.naxes == 0 && !sym_is_const(s->p, x->dims[i], &c))
			return sf_fail(s, "squeeze without axes of a variable dim (the rank would depend on the shape)");
		if (!(s->n->attr.reshape.naxes ? drop[i] : c == 1))
			r->dims[r->ndims++] = x->dims[i];
	}
	return 0;
}

/* UNSQUEEZE: insert size-1 dims at the listed axes of the output. */
static int
reshape_unsqueeze(struct sf *s, const struct graph_shapefn_shape *x, struct graph_shapefn_shape *r)
{
	int ins[GRAPH_MAX_DIMS] = { 0 }, i, k = 0, rank = x->ndims + s->n->attr.reshape.naxes;
	int64_t ax;

	if (rank > GRAPH_MAX_DIMS)
		return sf_fail(s, "unsqueeze beyond the maximum rank");
	for (i = 0; i < s->n->attr.reshape.naxes; i++) {
		if (sf_axis(s->n->attr.reshape.axes[i], rank, &ax) < 0 || ins[ax])
			return sf_fail(s, "unsqueeze axis out of range or repeated");
		ins[ax] = 1;
	}
	r->ndims = rank;
	for (i = 0; i < rank; i++)
		r->dims[i] = ins[i] ? K(s, 1) : x->dims[k++];
	return 0;
}

/* RESHAPE in its four kinds. */
static int
sf_reshape(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = { 0, { 0 } };
	int64_t ax, i;
	int a, b;

	switch (s->n->attr.reshape.kind) {
	case GRAPH_RESHAPE_SHAPE:
		if (reshape_target(s, x, &r) < 0)
			return -1;
		break;
	case GRAPH_RESHAPE_FLATTEN:
		ax = s->n->attr.reshape.axis < 0 ? s->n->attr.reshape.axis + x->ndims : s->n->attr.reshape.axis;
		if (ax < 0 || ax > x->ndims)
			return sf_fail(s, "flatten axis out of range");
		for (i = 0, a = b = K(s, 1); i < x->ndims; i++)
			*(i < ax ? &a : &b) = sym_mul(s->p, i < ax ? a : b, x->dims[i]);
		r.ndims = 2; r.dims[0] = a; r.dims[1] = b;
		break;
	case GRAPH_RESHAPE_SQUEEZE:
		if (reshape_squeeze(s, x, &r) < 0)
			return -1;
		break;
	case GRAPH_RESHAPE_UNSQUEEZE:
		if (reshape_unsqueeze(s, x, &r) < 0)
			return -1;
		break;
	default:
		return sf_fail(s, "unknown reshape kind");
	}
	return sf_set_out(s, 0, &r);
}

/* CONCAT along axis: other dims equal. */
static int
sf_concat(struct sf *s)
{
	struct graph_shapefn_shape r = *sf_in(s, 0);
	int64_t ax;
	int k, i;

	if (sf_axis(s->n->attr.concat.axis, r.ndims, &ax) < 0)
		return sf_fail(s, "concat axis out of range");
	for (k = 1; k < s->n->ninputs; k++) {
		const struct graph_shapefn_shape *x = sf_in(s, k);

		if (x->ndims != r.ndims)
			return sf_fail(s, "concat inputs differ in rank");
		for (i = 0; i < r.ndims; i++)
			if (i != ax && require_eq(s, x->dims[i], r.dims[i], "concat inputs differ off the axis") < 0)
				return -1;
		r.dims[ax] = sym_add(s->p, r.dims[ax], x->dims[ax]);
	}
	return sf_set_out(s, 0, &r);
}

/* The split sizes: the attribute, or the split input's followed values; *n 0 for equal chunks. */
static int
split_sizes(struct sf *s, int32_t *v, int *n)
{
	const int32_t *x;
	int i;

	*n = 0;
	if (sf_has(s, 1)) {
		if ((*n = sf_values(s, s->n->inputs[1], &x)) < 0)
			return sf_fail(s, "the split sizes are computed from values the shape function cannot follow");
		memcpy(v, x, (size_t)*n * sizeof *v);
		return 0;
	}
	if (s->n->attr.split.nsplit > 256)
		return sf_fail(s, "too many split sizes");
	for (i = 0; i < s->n->attr.split.nsplit; i++)
		v[i] = K(s, s->n->attr.split.split[i]);
	*n = s->n->attr.split.nsplit;
	return 0;
}

/* SPLIT along axis by sizes, or into equal chunks (the last smaller, as ONNX 18's num_outputs). */
static int
sf_split(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = *x;
	struct sym_pool *p = s->p;
	int32_t sizes[256];
	int64_t ax;
	int k, ns, total = K(s, 0), chunk;

	if (sf_axis(s->n->attr.split.axis, x->ndims, &ax) < 0 || s->n->noutputs < 1 || s->n->noutputs > 256)
		return sf_fail(s, "split axis out of range, or too many outputs");
	if (split_sizes(s, sizes, &ns) < 0)
		return -1;
	if (ns && ns != s->n->noutputs)
		return sf_fail(s, "split sizes differ in number from the outputs");
	for (k = 0; k < ns; k++) {
		if (sf_require(s, sym_le(p, K(s, 0), sizes[k]), "a split size is negative") < 0)
			return -1;
		total = sym_add(p, total, sizes[k]);
	}
	if (ns && require_eq(s, total, x->dims[ax], "split sizes do not add up to the axis") < 0)
		return -1;
	chunk = sym_ceil_div(p, x->dims[ax], K(s, s->n->noutputs));
	for (k = 0; k < s->n->noutputs; k++) {
		r.dims[ax] = ns ? sizes[k] : k < s->n->noutputs - 1 ? chunk :
		    sym_sub(p, x->dims[ax], sym_mul(p, chunk, K(s, s->n->noutputs - 1)));
		if (sf_set_out(s, k, &r) < 0)
			return -1;
	}
	return 0;
}

/* Clamp v into [lo, hi]. */
static int
clamp(struct sym_pool *p, int v, int lo, int hi)
{
	return sym_min(p, sym_max(p, v, lo), hi);
}

/* Length of one sliced axis with ONNX's clamping rules (step a non-zero constant). */
static int
slice_len(struct sf *s, int dim, int start, int end, int64_t step)
{
	struct sym_pool *p = s->p;
	int zero = K(s, 0), one = K(s, 1);

	start = sym_select(p, sym_lt(p, start, zero), sym_add(p, start, dim), start);
	end = sym_select(p, sym_lt(p, end, zero), sym_add(p, end, dim), end);
	if (step > 0) {
		start = clamp(p, start, zero, dim);
		end = clamp(p, end, zero, dim);
		return sym_select(p, sym_lt(p, start, end),
		    sym_div(p, sym_add(p, sym_sub(p, end, start), K(s, step - 1)), K(s, step)), zero);
	}
	start = clamp(p, start, zero, sym_sub(p, dim, one));
	end = clamp(p, end, K(s, -1), sym_sub(p, dim, one));
	return sym_select(p, sym_lt(p, end, start),
	    sym_div(p, sym_add(p, sym_sub(p, start, end), K(s, -step - 1)), K(s, -step)), zero);
}

/* Slice bound list k (1 starts, 2 ends, 3 axes, 4 steps) from the attributes or the followed inputs; -1 absent. */
static int
slice_list(struct sf *s, int k, int32_t *v)
{
	const struct graph_node *n = s->n;
	const int64_t *a = k == 1 ? n->attr.slice.starts : k == 2 ? n->attr.slice.ends :
	    k == 3 ? n->attr.slice.axes : n->attr.slice.steps;
	const int32_t *x;
	int cnt, i;

	if (n->ninputs <= 1) {
		for (i = 0; i < n->attr.slice.naxes; i++)
			v[i] = K(s, a[i]);
		return n->attr.slice.naxes;
	}
	if (!sf_has(s, k))
		return -1;
	if ((cnt = sf_values(s, n->inputs[k], &x)) < 0 || cnt > GRAPH_MAX_DIMS)
		return -2;
	memcpy(v, x, (size_t)cnt * sizeof *v);
	return cnt;
}

/* SLICE with starts/ends (constant or followed), constant axes and steps. */
static int
sf_slice(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = *x;
	int32_t v[4][GRAPH_MAX_DIMS];
	int cnt[4], seen[GRAPH_MAX_DIMS] = { 0 }, i, k;
	int64_t ax, st;

	for (k = 0; k < 4; k++)
		if ((cnt[k] = slice_list(s, k + 1, v[k])) == -2)
			return sf_fail(s, "the slice bounds are computed from values the shape function cannot follow");
	if (cnt[0] < 0 || cnt[1] != cnt[0] || (cnt[2] >= 0 && cnt[2] != cnt[0]) || (cnt[3] >= 0 && cnt[3] != cnt[0]))
		return sf_fail(s, "slice starts/ends/axes/steps differ in length");
	for (i = 0; i < cnt[0]; i++) {
		ax = i;
		st = 1;
		if ((cnt[2] >= 0 && !sym_is_const(s->p, v[2][i], &ax)) || (cnt[3] >= 0 && !sym_is_const(s->p, v[3][i], &st)))
			return sf_fail(s, "slice axes and steps must not depend on the input shapes");
		if (sf_axis(ax, x->ndims, &ax) < 0 || seen[ax])
			return sf_fail(s, "slice axis out of range or repeated");
		if (st == 0)
			return sf_fail(s, "slice step is 0");
		seen[ax] = 1;
		r.dims[ax] = slice_len(s, x->dims[ax], v[0][i], v[1][i], st);
	}
	return sf_set_out(s, 0, &r);
}

/* GATHER: data's shape with the axis replaced by the indices' shape. */
static int
sf_gather(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0), *ix = sf_in(s, 1);
	struct graph_shapefn_shape r = { 0, { 0 } };
	int64_t ax;
	int i;

	if (sf_axis(s->n->attr.gather.axis, x->ndims, &ax) < 0)
		return sf_fail(s, "gather axis out of range");
	if (x->ndims - 1 + ix->ndims > GRAPH_MAX_DIMS)
		return sf_fail(s, "gather result beyond the maximum rank");
	for (i = 0; i < ax; i++)
		r.dims[r.ndims++] = x->dims[i];
	for (i = 0; i < ix->ndims; i++)
		r.dims[r.ndims++] = ix->dims[i];
	for (i = (int)ax + 1; i < x->ndims; i++)
		r.dims[r.ndims++] = x->dims[i];
	return sf_set_out(s, 0, &r);
}

/* GATHER_ELEMENTS: the indices' shape, no dim beyond the data's off the axis. */
static int
sf_gather_elements(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0), *ix = sf_in(s, 1);
	int64_t ax;
	int i;

	if (sf_axis(s->n->attr.gather.axis, x->ndims, &ax) < 0 || ix->ndims != x->ndims)
		return sf_fail(s, "GatherElements axis out of range, or indices not of the data's rank");
	for (i = 0; i < x->ndims; i++)
		if (i != ax && sf_require(s, sym_le(s->p, ix->dims[i], x->dims[i]),
		    "GatherElements indices exceed the data's dims off the axis") < 0)
			return -1;
	return sf_set_out(s, 0, ix);
}

/* A shape from a followed value input (Expand's shape, ConstantOfShape's input). */
static int
shape_from_values(struct sf *s, int k, struct graph_shapefn_shape *t)
{
	const int32_t *v;
	int cnt;

	if ((cnt = sf_values(s, s->n->inputs[k], &v)) < 0)
		return sf_fail(s, "the shape is computed from values the shape function cannot follow");
	if (cnt > GRAPH_MAX_DIMS)
		return sf_fail(s, "the shape has too many dims");
	t->ndims = cnt;
	memcpy(t->dims, v, (size_t)cnt * sizeof *v);
	return 0;
}

/* EXPAND: broadcast of the input with the shape tensor's values. */
static int
sf_expand(struct sf *s)
{
	struct graph_shapefn_shape t, r;

	if (shape_from_values(s, 1, &t) < 0 || sf_broadcast(s, sf_in(s, 0), &t, &r) < 0)
		return -1;
	return sf_set_out(s, 0, &r);
}

/* Pads (begin then end per axis, 2 * rank) from the attribute or the followed pads[, axes] inputs. */
static int
pad_list(struct sf *s, int rank, int32_t *pads)
{
	const int32_t *v, *axv;
	int np, na, k;
	int64_t ax;

	if (s->n->ninputs <= 1) {
		if (s->n->attr.pad.npads != 2 * rank)
			return sf_fail(s, "pads length is not twice the rank");
		for (k = 0; k < 2 * rank; k++)
			pads[k] = K(s, s->n->attr.pad.pads[k]);
		return 0;
	}
	if ((np = sf_values(s, s->n->inputs[1], &v)) < 0)
		return sf_fail(s, "the pads are computed from values the shape function cannot follow");
	na = sf_has(s, 3) ? sf_values(s, s->n->inputs[3], &axv) : rank;
	if (na < 0 || np != 2 * na || na > GRAPH_MAX_DIMS)
		return sf_fail(s, "pads and axes do not agree (or are not followed)");
	for (k = 0; k < 2 * rank; k++)
		pads[k] = K(s, 0);
	for (k = 0; k < na; k++) {
		ax = k;
		if (sf_has(s, 3) && (!sym_is_const(s->p, axv[k], &ax) || sf_axis(ax, rank, &ax) < 0))
			return sf_fail(s, "pad axes must be constant and in range");
		pads[ax] = v[k];
		pads[ax + rank] = v[k + na];
	}
	return 0;
}

/* PAD: each dim grows by its begin and end pads (negative pads crop). */
static int
sf_pad(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = *x;
	struct sym_pool *p = s->p;
	int32_t pads[2 * GRAPH_MAX_DIMS];
	int i, zero = K(s, 0);

	if (pad_list(s, x->ndims, pads) < 0)
		return -1;
	for (i = 0; i < x->ndims; i++) {
		r.dims[i] = sym_add(p, x->dims[i], sym_add(p, pads[i], pads[i + x->ndims]));
		if (sf_require(s, sym_le(p, zero, r.dims[i]), "negative pads crop past the input") < 0)
			return -1;
		if (s->n->attr.pad.mode == GRAPH_PAD_REFLECT && sf_require(s, sym_or(p, sym_le(p, K(s, 2), x->dims[i]),
		    sym_and(p, sym_le(p, pads[i], zero), sym_le(p, pads[i + x->ndims], zero))),
		    "reflect padding needs dims >= 2") < 0)
			return -1;
	}
	return sf_set_out(s, 0, &r);
}

/* RESIZE: sizes when given (constant or followed), else floor(dim * scale) with constant scales. */
static int
sf_resize(struct sf *s)
{
	const struct graph_resize_attr *a = &s->n->attr.resize;
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	struct graph_shapefn_shape r = *x;
	const struct graph_tensor *sc;
	const int32_t *sizes = NULL;
	float scales[GRAPH_MAX_DIMS];
	int i, ns = 0, nsc = 0;

	if (s->n->ninputs <= 1) {
		ns = a->nsizes;
		nsc = a->nscales;
		memcpy(scales, a->scales, sizeof scales);
	} else {
		if (sf_has(s, 3) && (ns = sf_values(s, s->n->inputs[3], &sizes)) < 0)
			return sf_fail(s, "the resize sizes are computed from values the shape function cannot follow");
		if (ns <= 0 && sf_has(s, 2)) {
			sc = &s->g->tensors[s->n->inputs[2]];
			if (!(sc->flags & GRAPH_TENSOR_CONST) || sc->dtype != GRAPH_DT_F32 || sc->nbytes > sizeof scales)
				return sf_fail(s, "resize scales must be constant FLOAT values");
			memcpy(scales, sc->data, sc->nbytes);
			nsc = (int)(sc->nbytes / 4);
		}
	}
	if ((ns > 0 ? ns : nsc) != x->ndims)
		return sf_fail(s, "resize scales/sizes length differs from the rank");
	for (i = 0; i < x->ndims; i++) {
		if (ns > 0)
			r.dims[i] = sizes != NULL ? sizes[i] : K(s, a->sizes[i]);
		else if (scales[i] > 0)
			r.dims[i] = sym_floor_scale(s->p, x->dims[i], (double)scales[i]);
		else
			return sf_fail(s, "resize scale must be positive");
		if (sf_require(s, sym_le(s->p, K(s, 1), r.dims[i]), "resize to an empty size") < 0)
			return -1;
	}
	return sf_set_out(s, 0, &r);
}

/* SHAPE: a 1-D I64 of the clamped [start, end) part of X's dims; its values are those dims. */
static int
sf_shape(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	int64_t rank = x->ndims, st = s->n->attr.shape.start, en = s->n->attr.shape.end;
	struct graph_shapefn_shape r = { 1, { 0 } };

	if (st < 0)
		st += rank;
	if (en < 0)
		en += rank;
	st = st < 0 ? 0 : st > rank ? rank : st;
	en = en < 0 ? 0 : en > rank ? rank : en;
	if (en < st)
		en = st;
	r.dims[0] = K(s, en - st);
	if (sf_set_out(s, 0, &r) < 0)
		return -1;
	return sf_set_values(s, 0, &x->dims[st], (int)(en - st));
}

/* CONSTANT_OF_SHAPE: the shape is the input's values. */
static int
sf_constant_of_shape(struct sf *s)
{
	struct graph_shapefn_shape r;

	if (shape_from_values(s, 0, &r) < 0)
		return -1;
	return sf_set_out(s, 0, &r);
}

/* A RANGE operand: a followed integer value, or a constant of any numeric dtype as a double. */
static int
range_operand(struct sf *s, int k, int *sym, double *num)
{
	const struct graph_tensor *x = &s->g->tensors[s->n->inputs[k]];
	const int32_t *v;
	int64_t c;

	*sym = SYM_NONE;
	if (x->dtype == GRAPH_DT_F32) {
		float f;
		if (!(x->flags & GRAPH_TENSOR_CONST) || x->nbytes < 4)
			return sf_fail(s, "a FLOAT range operand must be constant");
		memcpy(&f, x->data, 4);
		*num = f;
		return 0;
	}
	if (sf_values(s, s->n->inputs[k], &v) < 1)
		return sf_fail(s, "a range operand is computed from values the shape function cannot follow");
	*sym = v[0];
	*num = sym_is_const(s->p, v[0], &c) ? (double)c : 0;
	return 0;
}

/* RANGE: max(ceil((limit - start) / delta), 0) elements. */
static int
sf_range(struct sf *s)
{
	struct graph_shapefn_shape r = { 1, { 0 } };
	struct sym_pool *p = s->p;
	double num[3];
	int sym[3], k, all_const = 1, a;
	int64_t d;

	for (k = 0; k < 3; k++) {
		if (range_operand(s, k, &sym[k], &num[k]) < 0)
			return -1;
		all_const &= sym[k] < 0 || sym_is_const(p, sym[k], NULL);
	}
	if (all_const) {
		double len;
		if (num[2] == 0)
			return sf_fail(s, "range delta is 0");
		len = ceil((num[1] - num[0]) / num[2]);
		r.dims[0] = K(s, len > 0 ? (int64_t)len : 0);
		return sf_set_out(s, 0, &r);
	}
	if (sym[0] < 0 || sym[1] < 0 || !sym_is_const(p, sym[2], &d) || d == 0)
		return sf_fail(s, "a range over the input shapes needs integer operands and a constant, non-zero delta");
	a = d > 0 ? sym_sub(p, sym[1], sym[0]) : sym_sub(p, sym[0], sym[1]);
	d = d > 0 ? d : -d;
	r.dims[0] = sym_max(p, sym_div(p, sym_add(p, a, K(s, d - 1)), K(s, d)), K(s, 0));
	return sf_set_out(s, 0, &r);
}

/* The indices' last dim of GATHER_ND/SCATTER_ND (input 1), which must not depend on the input shapes. */
static int
nd_depth(struct sf *s, int64_t *m)
{
	const struct graph_shapefn_shape *ix = sf_in(s, 1);

	if (ix->ndims < 1 || !sym_is_const(s->p, ix->dims[ix->ndims - 1], m) || *m < 1)
		return sf_fail(s, "the indices' last dim must be a constant of at least 1");
	return 0;
}

/* GATHER_ND: indices' dims but the last (m), then data's dims after batch_dims + m. */
static int
sf_gather_nd(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0), *ix = sf_in(s, 1);
	struct graph_shapefn_shape r = { 0, { 0 } };
	int64_t b = s->n->attr.nd.batch_dims, m;
	int i;

	if (nd_depth(s, &m) < 0)
		return -1;
	if (b < 0 || b >= ix->ndims || b + m > x->ndims || ix->ndims - 1 + x->ndims - b - m > GRAPH_MAX_DIMS)
		return sf_fail(s, "GatherND batch_dims or indices' last dim out of range");
	for (i = 0; i < b; i++)
		if (require_eq(s, ix->dims[i], x->dims[i], "GatherND batch dims of data and indices differ") < 0)
			return -1;
	for (i = 0; i < ix->ndims - 1; i++)
		r.dims[r.ndims++] = ix->dims[i];
	for (i = (int)(b + m); i < x->ndims; i++)
		r.dims[r.ndims++] = x->dims[i];
	return sf_set_out(s, 0, &r);
}

/* SCATTER_ND: data's shape; updates are indices' dims but the last (m), then data's dims after m. */
static int
sf_scatter_nd(struct sf *s)
{
	const struct graph_shapefn_shape *x = sf_in(s, 0), *ix = sf_in(s, 1), *u = sf_in(s, 2);
	int64_t m;
	int i;

	if (nd_depth(s, &m) < 0)
		return -1;
	if (m > x->ndims || u->ndims != ix->ndims - 1 + x->ndims - (int)m)
		return sf_fail(s, "ScatterND indices' last dim beyond the data's rank, or updates of the wrong rank");
	for (i = 0; i < ix->ndims - 1; i++)
		if (require_eq(s, u->dims[i], ix->dims[i], "ScatterND updates differ from the indices' dims") < 0)
			return -1;
	for (i = (int)m; i < x->ndims; i++)
		if (require_eq(s, u->dims[ix->ndims - 1 + i - m], x->dims[i],
		    "ScatterND updates differ from the data's trailing dims") < 0)
			return -1;
	return sf_set_out(s, 0, x);
}

/* RNN: Y [T, D, B, H], Y_h and Y_c [D, B, H]; the weights, lengths and states checked against X's dims. */
static int
sf_rnn(struct sf *s)
{
	const struct graph_rnn_attr *a = &s->n->attr.rnn;
	const struct graph_shapefn_shape *x = sf_in(s, 0);
	int64_t gates = a->cell == GRAPH_RNN_LSTM ? 4 : a->cell == GRAPH_RNN_GRU ? 3 : 1;
	int d = K(s, a->ndir), h = K(s, a->hidden), gh = K(s, gates * a->hidden), k;
	struct graph_shapefn_shape want[8], y = { 4, { 0 } }, yh = { 3, { 0 } };

	if (x->ndims != 3 || s->n->ninputs > 8 || (s->n->ninputs > 6 && a->cell != GRAPH_RNN_LSTM))
		return sf_fail(s, "X must be [seq, batch, input], with at most the cell's inputs");
	want[1] = (struct graph_shapefn_shape){ 3, { d, gh, x->dims[2] } };
	want[2] = (struct graph_shapefn_shape){ 3, { d, gh, h } };
	want[3] = (struct graph_shapefn_shape){ 2, { d, K(s, 2 * gates * a->hidden) } };
	want[4] = (struct graph_shapefn_shape){ 1, { x->dims[1] } };
	want[5] = want[6] = (struct graph_shapefn_shape){ 3, { d, x->dims[1], h } };
	want[7] = (struct graph_shapefn_shape){ 2, { d, K(s, 3 * a->hidden) } };
	for (k = 1; k < s->n->ninputs; k++)
		if (sf_has(s, k) && require_same(s, sf_in(s, k), &want[k],
		    "an RNN weight, bias, length or state input of the wrong shape") < 0)
			return -1;
	y = (struct graph_shapefn_shape){ 4, { x->dims[0], d, x->dims[1], h } };
	yh = want[5];
	if (sf_set_out(s, 0, &y) < 0 || sf_set_out(s, 1, &yh) < 0)
		return -1;
	return sf_set_out(s, 2, &yh);
}

/* TOPK: X's shape with the axis k long, twice; k must not exceed the axis. */
static int
sf_topk(struct sf *s)
{
	struct graph_shapefn_shape r = *sf_in(s, 0);
	int64_t ax;

	if (sf_axis(s->n->attr.topk.axis, r.ndims, &ax) < 0)
		return sf_fail(s, "TopK axis out of range");
	if (sf_require(s, sym_le(s->p, K(s, s->n->attr.topk.k), r.dims[ax]), "TopK's k exceeds the axis") < 0)
		return -1;
	r.dims[ax] = K(s, s->n->attr.topk.k);
	if (sf_set_out(s, 0, &r) < 0)
		return -1;
	return sf_set_out(s, 1, &r);
}

static const sf_fn sf_fns[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = sf_gemm,
	[GRAPH_OP_MATMUL] = sf_matmul,
	[GRAPH_OP_CONV] = sf_conv,
	[GRAPH_OP_CONV_TRANSPOSE] = sf_conv_transpose,
	[GRAPH_OP_UNARY] = sf_same,
	[GRAPH_OP_BINARY] = sf_bcast,
	[GRAPH_OP_PRELU] = sf_same,
	[GRAPH_OP_SOFTMAX] = sf_same,
	[GRAPH_OP_LAYERNORM] = sf_same,
	[GRAPH_OP_BATCHNORM] = sf_same,
	[GRAPH_OP_POOL] = sf_pool,
	[GRAPH_OP_REDUCE] = sf_reduce,
	[GRAPH_OP_TRANSPOSE] = sf_transpose,
	[GRAPH_OP_RESHAPE] = sf_reshape,
	[GRAPH_OP_CONCAT] = sf_concat,
	[GRAPH_OP_SPLIT] = sf_split,
	[GRAPH_OP_SLICE] = sf_slice,
	[GRAPH_OP_GATHER] = sf_gather,
	[GRAPH_OP_EXPAND] = sf_expand,
	[GRAPH_OP_PAD] = sf_pad,
	[GRAPH_OP_RESIZE] = sf_resize,
	[GRAPH_OP_CAST] = sf_same,
	[GRAPH_OP_WHERE] = sf_bcast,
	[GRAPH_OP_COPY] = sf_same,
	[GRAPH_OP_GATHER_ELEMENTS] = sf_gather_elements,
	[GRAPH_OP_ATTENTION] = sf_attention,
	[GRAPH_OP_SHAPE] = sf_shape,
	[GRAPH_OP_CONSTANT_OF_SHAPE] = sf_constant_of_shape,
	[GRAPH_OP_RANGE] = sf_range,
	[GRAPH_OP_PREDICATE] = sf_same,
	[GRAPH_OP_TRILU] = sf_same,
	[GRAPH_OP_CUMSUM] = sf_same,
	[GRAPH_OP_GATHER_ND] = sf_gather_nd,
	[GRAPH_OP_SCATTER_ND] = sf_scatter_nd,
	[GRAPH_OP_RNN] = sf_rnn,
	[GRAPH_OP_TOPK] = sf_topk,
	[GRAPH_OP_SCATTER_ELEMENTS] = sf_scatter_elements,
	[GRAPH_OP_ONEHOT] = sf_onehot,
	[GRAPH_OP_INSTANCENORM] = sf_groupnorm,
	[GRAPH_OP_GROUPNORM] = sf_groupnorm,
	[GRAPH_OP_EINSUM] = sf_einsum,
	[GRAPH_OP_ARGMAX] = sf_argmax,
	[GRAPH_OP_TILE] = sf_tile,
};

/* Output shapes of the node (its inputs' shapes set; graph_infer_shapes has checked the node's indices). */
int
sf_shape_node(struct sf *s)
{
	int k;

	if ((unsigned)s->n->op >= GRAPH_OP_COUNT || sf_fns[s->n->op] == NULL || s->n->noutputs < 1)
		return sf_fail(s, "unknown op");
	for (k = 0; k < s->n->ninputs; k++)
		if (s->n->inputs[k] >= (int)s->g->ntensors || s->n->inputs[k] < -1)
			return sf_fail(s, "input tensor index out of range");
	for (k = 0; k < s->n->noutputs; k++)
		if (s->n->outputs[k] >= (int)s->g->ntensors || s->n->outputs[k] < -1)
			return sf_fail(s, "output tensor index out of range");
	return sf_fns[s->n->op](s);
}
