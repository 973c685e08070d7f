/* graph_shapefn_values.c: following the values of small integer tensors computed from shapes (shape arithmetic). */
#include <string.h>

#include "graph_shapefn_impl.h"

/* A tensor's dims when all are constant and it has at most SF_MAX_VALUES elements: its element count, else -1. */
static int
const_dims(const struct sf *s, int t, int64_t *dims)
{
	const struct graph_shapefn_shape *x;
	int64_t count = 1;
	int i;

	if (t < 0)
		return -1;
	x = &s->f->shapes[t];
	for (i = 0; i < x->ndims; i++) {
		if (!sym_is_const(s->p, x->dims[i], &dims[i]) || dims[i] < 0)
			return -1;
		count *= dims[i];
		if (count > SF_MAX_VALUES)
			return -1;
	}
	return (int)count;
}

/* The linear index in shape in of output element lin of shape out, numpy broadcasting. */
static int
bcast_index(const int64_t *out, int on, const int64_t *in, int inn, int lin)
{
	int idx = 0, stride = 1, i;

	for (i = on - 1; i >= 0; i--) {
		int64_t c = lin % out[i];
		int j = i - (on - inn);

		lin /= (int)out[i];
		if (j >= 0) {
			idx += (int)(in[j] == 1 ? 0 : c) * stride;
			stride *= (int)in[j];
		}
	}
	return idx;
}

/* One element of an integer binary op (inferd's integer semantics: C division, Mod with the divisor's sign). */
static int
binary_value(struct sym_pool *p, enum graph_binary fn, int a, int b)
{
	int zero = sym_const(p, 0), r;

	switch (fn) {
	case GRAPH_BINARY_ADD: return sym_add(p, a, b);
	case GRAPH_BINARY_SUB: return sym_sub(p, a, b);
	case GRAPH_BINARY_MUL: return sym_mul(p, a, b);
	case GRAPH_BINARY_DIV: return sym_div(p, a, b);
	case GRAPH_BINARY_MAX: return sym_max(p, a, b);
	case GRAPH_BINARY_MIN: return sym_min(p, a, b);
	case GRAPH_BINARY_EQUAL: return sym_eq(p, a, b);
	case GRAPH_BINARY_GREATER: return sym_lt(p, b, a);
	case GRAPH_BINARY_LESS: return sym_lt(p, a, b);
	case GRAPH_BINARY_GREATER_OR_EQUAL: return sym_le(p, b, a);
	case GRAPH_BINARY_LESS_OR_EQUAL: return sym_le(p, a, b);
	case GRAPH_BINARY_AND: return sym_and(p, a, b);
	case GRAPH_BINARY_OR: return sym_or(p, a, b);
	case GRAPH_BINARY_XOR: return sym_not(p, sym_eq(p, sym_not(p, a), sym_not(p, b)));
	case GRAPH_BINARY_FMOD: return sym_mod(p, a, b);
	case GRAPH_BINARY_MOD:
		r = sym_mod(p, a, b);
		/* A remainder whose sign differs from the divisor's moves by the divisor. */
		return sym_select(p, sym_and(p, sym_not(p, sym_eq(p, r, zero)),
		    sym_not(p, sym_eq(p, sym_lt(p, r, zero), sym_lt(p, b, zero)))), sym_add(p, r, b), r);
	default: return SYM_NONE;
	}
}

/* Values of an element-wise node (BINARY, WHERE, CAST, UNARY) from its inputs', broadcast. */
static int
values_elementwise(struct sf *s)
{
	const struct graph_node *n = s->n;
	int64_t od[GRAPH_MAX_DIMS], id[3][GRAPH_MAX_DIMS];
	const int32_t *v[3];
	int32_t out[SF_MAX_VALUES];
	int cnt, k, i, on = s->f->shapes[n->outputs[0]].ndims, e[3];

	if ((cnt = const_dims(s, n->outputs[0], od)) < 0 || n->ninputs > 3 || n->act != GRAPH_UNARY_NONE)
		return 0;
	for (k = 0; k < n->ninputs; k++)
		if (const_dims(s, n->inputs[k], id[k]) < 0 || sf_values(s, n->inputs[k], &v[k]) < 0)
			return 0;
	for (i = 0; i < cnt; i++) {
		for (k = 0; k < n->ninputs; k++)
			e[k] = v[k][bcast_index(od, on, id[k], s->f->shapes[n->inputs[k]].ndims, i)];
		switch (n->op) {
		case GRAPH_OP_BINARY: out[i] = binary_value(s->p, n->attr.binary.fn, e[0], e[1]); break;
		case GRAPH_OP_WHERE: out[i] = sym_select(s->p, e[0], e[1], e[2]); break;
		case GRAPH_OP_CAST:
			out[i] = n->attr.cast.to == GRAPH_DT_BOOL ? sym_not(s->p, sym_not(s->p, e[0])) :
			    n->attr.cast.to == GRAPH_DT_F32 || n->attr.cast.to == GRAPH_DT_F16 ? SYM_NONE : e[0];
			break;
		case GRAPH_OP_UNARY:
			out[i] = n->attr.unary.fn == GRAPH_UNARY_NEG ? sym_sub(s->p, sym_const(s->p, 0), e[0]) :
			    n->attr.unary.fn == GRAPH_UNARY_NONE ? e[0] : SYM_NONE;
			break;
		default: return 0;
		}
	}
	return sf_set_values(s, 0, out, cnt);
}

/* Values of GATHER with constant indices. */
static int
values_gather(struct sf *s)
{
	const struct graph_node *n = s->n;
	int64_t xd[GRAPH_MAX_DIMS], idd[GRAPH_MAX_DIMS], ax, idx, outer = 1, inner = 1, o, j, k, c;
	const int32_t *x, *ix;
	int32_t out[SF_MAX_VALUES];
	int cnt = 0, xn = s->f->shapes[n->inputs[0]].ndims, ni, i;

	if (const_dims(s, n->inputs[0], xd) < 0 || (ni = const_dims(s, n->inputs[1], idd)) < 0 ||
	    sf_values(s, n->inputs[0], &x) < 0 || sf_values(s, n->inputs[1], &ix) < 0 ||
	    sf_axis(n->attr.gather.axis, xn, &ax) < 0)
		return 0;
	for (i = 0; i < ax; i++)
		outer *= xd[i];
	for (i = (int)ax + 1; i < xn; i++)
		inner *= xd[i];
	for (o = 0; o < outer; o++)
		for (j = 0; j < ni; j++) {
			if (!sym_is_const(s->p, ix[j], &idx) || (idx < 0 ? idx + xd[ax] : idx) < 0 ||
			    (idx < 0 ? idx + xd[ax] : idx) >= xd[ax])
				return 0;
			idx = idx < 0 ? idx + xd[ax] : idx;
			for (k = 0; k < inner; k++) {
				c = (o * xd[ax] + idx) * inner + k;
				if (cnt == SF_MAX_VALUES)
					return 0;
				out[cnt++] = x[c];
			}
		}
	return sf_set_values(s, 0, out, cnt);
}

/* Values of CONCAT along a constant axis. */
static int
values_concat(struct sf *s)
{
	const struct graph_node *n = s->n;
	int64_t d[GRAPH_MAX_DIMS], ax, outer = 1, inner, o, i;
	int32_t out[SF_MAX_VALUES];
	const int32_t *v;
	int cnt = 0, k, rank = s->f->shapes[n->outputs[0]].ndims;

	if (const_dims(s, n->outputs[0], d) < 0 || sf_axis(n->attr.concat.axis, rank, &ax) < 0)
		return 0;
	for (i = 0; i < ax; i++)
		outer *= d[i];
	for (o = 0; o < outer; o++)
		for (k = 0; k < n->ninputs; k++) {
			if (const_dims(s, n->inputs[k], d) < 0 || sf_values(s, n->inputs[k], &v) < 0)
				return 0;
			for (inner = 1, i = ax; i < rank; i++)
				inner *= d[i];
			for (i = 0; i < inner; i++) {
				if (cnt == SF_MAX_VALUES)
					return 0;
				out[cnt++] = v[o * inner + i];
			}
		}
	return sf_set_values(s, 0, out, cnt);
}

/* Values of a 1-D SLICE with constant bounds. */
static int
values_slice(struct sf *s)
{
	const struct graph_node *n = s->n;
	int64_t d[GRAPH_MAX_DIMS], len, st, start, i;
	const int32_t *v;
	int32_t out[SF_MAX_VALUES];

	if (n->ninputs > 1 || n->attr.slice.naxes != 1 || s->f->shapes[n->inputs[0]].ndims != 1 ||
	    const_dims(s, n->inputs[0], d) < 0 || sf_values(s, n->inputs[0], &v) < 0 ||
	    !sym_is_const(s->p, s->f->shapes[n->outputs[0]].dims[0], &len))
		return 0;
	st = n->attr.slice.steps[0];
	start = n->attr.slice.starts[0];
	if (start < 0)
		start += d[0];
	start = st > 0 ? (start < 0 ? 0 : start > d[0] ? d[0] : start) :
	    (start < 0 ? 0 : start > d[0] - 1 ? d[0] - 1 : start);
	for (i = 0; i < len; i++)
		out[i] = v[start + i * st];
	return sf_set_values(s, 0, out, (int)len);
}

/* Values of a node that keeps its input's elements in order (reshapes, copies). */
static int
values_same(struct sf *s)
{
	const int32_t *v;
	int cnt;

	if ((cnt = sf_values(s, s->n->inputs[0], &v)) < 0)
		return 0;
	return sf_set_values(s, 0, v, cnt);
}

/* Values of EXPAND (broadcast of the input to the output's constant shape). */
static int
values_expand(struct sf *s)
{
	int64_t od[GRAPH_MAX_DIMS], id[GRAPH_MAX_DIMS];
	int32_t out[SF_MAX_VALUES];
	const int32_t *v;
	int cnt, i;

	if ((cnt = const_dims(s, s->n->outputs[0], od)) < 0 || const_dims(s, s->n->inputs[0], id) < 0 ||
	    sf_values(s, s->n->inputs[0], &v) < 0)
		return 0;
	for (i = 0; i < cnt; i++)
		out[i] = v[bcast_index(od, s->f->shapes[s->n->outputs[0]].ndims, id,
		    s->f->shapes[s->n->inputs[0]].ndims, i)];
	return sf_set_values(s, 0, out, cnt);
}

/* Values of TILE (output coordinate c reads the input's c mod its dim, per dim; both shapes constant). */
static int
values_tile(struct sf *s)
{
	int64_t od[GRAPH_MAX_DIMS], id[GRAPH_MAX_DIMS];
	int32_t out[SF_MAX_VALUES];
	const int32_t *v;
	int cnt, nd = s->f->shapes[s->n->outputs[0]].ndims, i, d;

	if ((cnt = const_dims(s, s->n->outputs[0], od)) < 0 || const_dims(s, s->n->inputs[0], id) < 0 ||
	    sf_values(s, s->n->inputs[0], &v) < 0 || s->f->shapes[s->n->inputs[0]].ndims != nd)
		return 0;
	for (i = 0; i < cnt; i++) {
		int64_t lin = i, at = 0, st = 1;

		for (d = nd - 1; d >= 0; d--) {
			at += lin % od[d] % id[d] * st;
			st *= id[d];
			lin /= od[d];
		}
		out[i] = v[at];
	}
	return sf_set_values(s, 0, out, cnt);
}

/* Values of CONSTANT_OF_SHAPE (its fill) and RANGE (start + i delta) of constant length. */
static int
values_generator(struct sf *s)
{
	int64_t d[GRAPH_MAX_DIMS];
	int32_t out[SF_MAX_VALUES];
	const int32_t *a, *b;
	int cnt, i;

	if ((cnt = const_dims(s, s->n->outputs[0], d)) < 0)
		return 0;
	if (s->n->op == GRAPH_OP_CONSTANT_OF_SHAPE) {
		for (i = 0; i < cnt; i++)
			out[i] = sym_const(s->p, (int64_t)s->n->attr.fill.value);
		return sf_set_values(s, 0, out, cnt);
	}
	if (sf_values(s, s->n->inputs[0], &a) < 1 || sf_values(s, s->n->inputs[2], &b) < 1)
		return 0;
	for (i = 0; i < cnt; i++)
		out[i] = sym_add(s->p, a[0], sym_mul(s->p, sym_const(s->p, i), b[0]));
	return sf_set_values(s, 0, out, cnt);
}

/* Values of the node's outputs when they are small integer tensors computed from followed values. */
int
sf_values_node(struct sf *s)
{
	switch (s->n->op) {
	case GRAPH_OP_BINARY:
	case GRAPH_OP_WHERE:
	case GRAPH_OP_CAST:
	case GRAPH_OP_UNARY:
		return values_elementwise(s);
	case GRAPH_OP_GATHER:
		return values_gather(s);
	case GRAPH_OP_CONCAT:
		return values_concat(s);
	case GRAPH_OP_SLICE:
		return values_slice(s);
	case GRAPH_OP_RESHAPE:
	case GRAPH_OP_COPY:
		return values_same(s);
	case GRAPH_OP_EXPAND:
		return values_expand(s);
	case GRAPH_OP_TILE:
		return values_tile(s);
	case GRAPH_OP_CONSTANT_OF_SHAPE:
	case GRAPH_OP_RANGE:
		return values_generator(s);
	default:
		return 0;
	}
}
