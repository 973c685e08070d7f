/* graph_fold_eval.c: exact host evaluation of the small nodes constant folding computes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "graph_fold_eval.h"

/* Whether dt is an integer type (BOOL included). */
static int
dt_is_int(enum graph_dtype dt)
{
	return dt == GRAPH_DT_I64 || dt == GRAPH_DT_I32 || dt == GRAPH_DT_I8 || dt == GRAPH_DT_U8 ||
	    dt == GRAPH_DT_BOOL;
}

/* Element i of p as an integer. */
static int64_t
ld_i(enum graph_dtype dt, const void *p, size_t i)
{
	switch (dt) {
	case GRAPH_DT_I64: { int64_t v; memcpy(&v, (const char *)p + 8 * i, 8); return v; }
	case GRAPH_DT_I32: { int32_t v; memcpy(&v, (const char *)p + 4 * i, 4); return v; }
	case GRAPH_DT_I8: return ((const int8_t *)p)[i];
	case GRAPH_DT_U8: case GRAPH_DT_BOOL: return ((const uint8_t *)p)[i];
	case GRAPH_DT_F32: { float v; memcpy(&v, (const char *)p + 4 * i, 4); return (int64_t)v; }
	default: return 0;
	}
}

/* Element i of p as a double. */
static double
ld_d(enum graph_dtype dt, const void *p, size_t i)
{
	if (dt == GRAPH_DT_F32) {
		float v;

		memcpy(&v, (const char *)p + 4 * i, 4);
		return v;
	}
	return (double)ld_i(dt, p, i);
}

/* Store integer v as element i of p. */
static void
st_i(enum graph_dtype dt, void *p, size_t i, int64_t v)
{
	switch (dt) {
	case GRAPH_DT_I64: memcpy((char *)p + 8 * i, &v, 8); break;
	case GRAPH_DT_I32: { int32_t w = (int32_t)v; memcpy((char *)p + 4 * i, &w, 4); break; }
	case GRAPH_DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
	case GRAPH_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case GRAPH_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case GRAPH_DT_F32: { float w = (float)v; memcpy((char *)p + 4 * i, &w, 4); break; }
	default: break;
	}
}

/* Store double v as element i of p (integers truncate toward zero, as a C cast). */
static void
st_d(enum graph_dtype dt, void *p, size_t i, double v)
{
	if (dt == GRAPH_DT_F32) {
		float w = (float)v;

		memcpy((char *)p + 4 * i, &w, 4);
	} else if (dt == GRAPH_DT_BOOL)
		((uint8_t *)p)[i] = v != 0;
	else
		st_i(dt, p, i, (int64_t)v);
}

/* Index into a tensor of shape in for linear index lin of shape out, numpy-broadcast. */
static size_t
bcast_index(const struct graph_shape *out, const struct graph_shape *in, size_t lin)
{
	size_t idx = 0, stride = 1;
	int i, j;

	for (i = out->ndims - 1, j = in->ndims - 1; i >= 0; i--, j--) {
		size_t c = lin % (size_t)out->dims[i];

		lin /= (size_t)out->dims[i];
		if (j >= 0) {
			if (in->dims[j] != 1)
				idx += c * stride;
			stride *= (size_t)in->dims[j];
		}
	}
	return idx;
}

/* Allocate n elements of dt (at least one byte). */
static void *
alloc_elems(enum graph_dtype dt, int64_t n)
{
	size_t b = (size_t)n * graph_dtype_size(dt);

	return xcalloc(1, b ? b : 1);
}

/* Integer binary op; -1 on integer division by zero. */
static int
bin_i(enum graph_binary fn, int64_t a, int64_t b, int64_t *r)
{
	int64_t k;

	switch (fn) {
	case GRAPH_BINARY_ADD: *r = (int64_t)((uint64_t)a + (uint64_t)b); return 0;
	case GRAPH_BINARY_SUB: *r = (int64_t)((uint64_t)a - (uint64_t)b); return 0;
	case GRAPH_BINARY_MUL: *r = (int64_t)((uint64_t)a * (uint64_t)b); return 0;
	case GRAPH_BINARY_DIV:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return -1;
		*r = a / b;
		return 0;
	case GRAPH_BINARY_POW:
		for (*r = 1, k = 0; k < b && k < 64; k++)
			*r *= a;
		return 0;
	case GRAPH_BINARY_EQUAL: *r = a == b; return 0;
	case GRAPH_BINARY_MAX: *r = a > b ? a : b; return 0;
	case GRAPH_BINARY_MIN: *r = a < b ? a : b; return 0;
	case GRAPH_BINARY_GREATER: *r = a > b; return 0;
	case GRAPH_BINARY_LESS: *r = a < b; return 0;
	case GRAPH_BINARY_GREATER_OR_EQUAL: *r = a >= b; return 0;
	case GRAPH_BINARY_LESS_OR_EQUAL: *r = a <= b; return 0;
	case GRAPH_BINARY_AND: *r = a != 0 && b != 0; return 0;
	case GRAPH_BINARY_OR: *r = a != 0 || b != 0; return 0;
	case GRAPH_BINARY_XOR: *r = (a != 0) != (b != 0); return 0;
	case GRAPH_BINARY_MOD:
	case GRAPH_BINARY_FMOD:
		if (b == 0)
			return -1;
		*r = b == -1 ? 0 : a % b;
		if (fn == GRAPH_BINARY_MOD && *r != 0 && (*r < 0) != (b < 0))
			*r += b;
		return 0;
	default: return -1;
	}
}

/* Floating binary op. */
static double
bin_d(enum graph_binary fn, double a, double b)
{
	switch (fn) {
	case GRAPH_BINARY_ADD: return a + b;
	case GRAPH_BINARY_SUB: return a - b;
	case GRAPH_BINARY_MUL: return a * b;
	case GRAPH_BINARY_DIV: return a / b;
	case GRAPH_BINARY_POW: return pow(a, b);
	case GRAPH_BINARY_EQUAL: return a == b;
	case GRAPH_BINARY_MAX: return a > b ? a : b;
	case GRAPH_BINARY_GREATER: return a > b;
	case GRAPH_BINARY_LESS: return a < b;
	case GRAPH_BINARY_GREATER_OR_EQUAL: return a >= b;
	case GRAPH_BINARY_LESS_OR_EQUAL: return a <= b;
	case GRAPH_BINARY_AND: return a != 0 && b != 0;
	case GRAPH_BINARY_OR: return a != 0 || b != 0;
	case GRAPH_BINARY_XOR: return (a != 0) != (b != 0);
	case GRAPH_BINARY_FMOD: return fmod(a, b);
	case GRAPH_BINARY_MOD: {
		double r = fmod(a, b);

		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	default: return a < b ? a : b;
	}
}

/* BINARY with broadcasting: exact in integers when both inputs are integers. */
static int
eval_binary(const graph_t *g, const struct graph_node *n, const struct graph_shape *s, void **outs,
    char **cause)
{
	const struct graph_tensor *a = &g->tensors[n->inputs[0]], *b = &g->tensors[n->inputs[1]];
	const struct graph_shape *os = &s[n->outputs[0]];
	enum graph_dtype odt = g->tensors[n->outputs[0]].dtype;
	int ints = dt_is_int(a->dtype) && dt_is_int(b->dtype);
	int64_t i, cnt = graph_shape_elems(os);

	if ((outs[0] = alloc_elems(odt, cnt)) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < cnt; i++) {
		size_t ia = bcast_index(os, &s[n->inputs[0]], (size_t)i);
		size_t ib = bcast_index(os, &s[n->inputs[1]], (size_t)i);
		int64_t r;

		if (!ints) {
			st_d(odt, outs[0], (size_t)i, bin_d(n->attr.binary.fn, ld_d(a->dtype, a->data, ia),
			    ld_d(b->dtype, b->data, ib)));
			continue;
		}
		if (bin_i(n->attr.binary.fn, ld_i(a->dtype, a->data, ia), ld_i(b->dtype, b->data, ib),
		    &r) < 0) {
			free(outs[0]);
			outs[0] = NULL;
			return error_set(cause, "node '%s': integer division by zero", n->name);
		}
		st_i(odt, outs[0], (size_t)i, r);
	}
	return 1;
}

/* Floating unary op (the ones exported graphs apply to constants); 0 when not covered. */
static int
un_d(enum graph_unary fn, double x, double *r)
{
	switch (fn) {
	case GRAPH_UNARY_NONE: *r = x; return 1;
	case GRAPH_UNARY_RELU: *r = x > 0 ? x : 0; return 1;
	case GRAPH_UNARY_NEG: *r = -x; return 1;
	case GRAPH_UNARY_ABS: *r = fabs(x); return 1;
	case GRAPH_UNARY_CEIL: *r = ceil(x); return 1;
	case GRAPH_UNARY_FLOOR: *r = floor(x); return 1;
	case GRAPH_UNARY_ROUND: *r = rint(x); return 1;
	case GRAPH_UNARY_SQRT: *r = sqrt(x); return 1;
	case GRAPH_UNARY_EXP: *r = exp(x); return 1;
	case GRAPH_UNARY_LOG: *r = log(x); return 1;
	case GRAPH_UNARY_RECIPROCAL: *r = 1.0 / x; return 1;
	case GRAPH_UNARY_SIGMOID: *r = 1.0 / (1.0 + exp(-x)); return 1;
	case GRAPH_UNARY_TANH: *r = tanh(x); return 1;
	case GRAPH_UNARY_ERF: *r = erf(x); return 1;
	default: return 0;
	}
}

/* UNARY (and CAST: a unary identity into another dtype). */
static int
eval_unary(const graph_t *g, const struct graph_node *n, const struct graph_shape *s, void **outs,
    char **cause)
{
	const struct graph_tensor *x = &g->tensors[n->inputs[0]];
	enum graph_dtype odt = g->tensors[n->outputs[0]].dtype;
	enum graph_unary fn = n->op == GRAPH_OP_CAST ? GRAPH_UNARY_NONE : n->attr.unary.fn;
	int64_t i, cnt = graph_shape_elems(&s[n->outputs[0]]);
	double r;

	if (!un_d(fn, 0.5, &r))
		return 0;
	if ((outs[0] = alloc_elems(odt, cnt)) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < cnt; i++) {
		if (fn == GRAPH_UNARY_NONE && dt_is_int(x->dtype) && dt_is_int(odt)) {
			st_i(odt, outs[0], (size_t)i, ld_i(x->dtype, x->data, (size_t)i));
			continue;
		}
		(void)un_d(fn, ld_d(x->dtype, x->data, (size_t)i), &r);
		if (dt_is_int(odt) && fn != GRAPH_UNARY_NONE)
			r = trunc(r);
		st_d(odt, outs[0], (size_t)i, r);
	}
	return 1;
}

/* WHERE with broadcasting (bytes of X or Y). */
static int
eval_where(const graph_t *g, const struct graph_node *n, const struct graph_shape *s, void **outs,
    char **cause)
{
	const struct graph_shape *os = &s[n->outputs[0]];
	size_t esz = graph_dtype_size(g->tensors[n->outputs[0]].dtype);
	const struct graph_tensor *c = &g->tensors[n->inputs[0]];
	int64_t i, cnt = graph_shape_elems(os);

	if ((outs[0] = alloc_elems(g->tensors[n->outputs[0]].dtype, cnt)) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < cnt; i++) {
		int pick = ld_i(c->dtype, c->data, bcast_index(os, &s[n->inputs[0]], (size_t)i)) ? 1 : 2;
		size_t at = bcast_index(os, &s[n->inputs[pick]], (size_t)i);

		memcpy((char *)outs[0] + esz * (size_t)i,
		    (const char *)g->tensors[n->inputs[pick]].data + esz * at, esz);
	}
	return 1;
}

/* SHAPE, CONSTANT_OF_SHAPE and RANGE. */
static int
eval_generator(const graph_t *g, const struct graph_node *n, const struct graph_shape *s,
    void **outs, char **cause)
{
	enum graph_dtype odt = g->tensors[n->outputs[0]].dtype;
	int64_t i, cnt = graph_shape_elems(&s[n->outputs[0]]), st;
	const struct graph_shape *x = &s[n->inputs[0]];

	if ((outs[0] = alloc_elems(odt, cnt)) == NULL)
		return error_set(cause, "out of memory");
	if (n->op == GRAPH_OP_SHAPE) {
		st = n->attr.shape.start < 0 ? n->attr.shape.start + x->ndims : n->attr.shape.start;
		st = st < 0 ? 0 : st;
		for (i = 0; i < cnt; i++)
			st_i(GRAPH_DT_I64, outs[0], (size_t)i, x->dims[st + i]);
	} else if (n->op == GRAPH_OP_CONSTANT_OF_SHAPE) {
		for (i = 0; i < cnt; i++)
			st_d(odt, outs[0], (size_t)i, n->attr.fill.value);
	} else {
		const struct graph_tensor *a = &g->tensors[n->inputs[0]], *d = &g->tensors[n->inputs[2]];

		for (i = 0; i < cnt; i++)
			if (dt_is_int(odt))
				st_i(odt, outs[0], (size_t)i, ld_i(a->dtype, a->data, 0) +
				    i * ld_i(d->dtype, d->data, 0));
			else
				st_d(odt, outs[0], (size_t)i, ld_d(a->dtype, a->data, 0) +
				    (double)i * ld_d(d->dtype, d->data, 0));
	}
	return 1;
}

/* Row-major strides of a shape (elements). */
static void
shape_strides(const struct graph_shape *s, int64_t *st)
{
	int i;
	int64_t acc = 1;

	for (i = s->ndims - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= s->dims[i];
	}
}

/* Per-axis effective start and step of a resolved SLICE (identity on other axes). */
static void
slice_plan(const struct graph_node *n, const struct graph_shape *x, int64_t *start, int64_t *step)
{
	int i;

	for (i = 0; i < x->ndims; i++) {
		start[i] = 0;
		step[i] = 1;
	}
	for (i = 0; i < n->attr.slice.naxes; i++) {
		int64_t ax = n->attr.slice.axes[i] < 0 ? n->attr.slice.axes[i] + x->ndims :
		    n->attr.slice.axes[i], d = x->dims[ax], b = n->attr.slice.starts[i];

		step[ax] = n->attr.slice.steps[i];
		if (b < 0)
			b += d;
		if (step[ax] > 0)
			b = b < 0 ? 0 : b > d ? d : b;
		else
			b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
		start[ax] = b;
	}
}

/* Data movement (SLICE, TRANSPOSE, EXPAND, TILE, RESHAPE, COPY): out coord -> in element. */
static int
eval_move(const graph_t *g, const struct graph_node *n, const struct graph_shape *s, void **outs,
    char **cause)
{
	const struct graph_shape *os = &s[n->outputs[0]], *xs = &s[n->inputs[0]];
	const struct graph_tensor *x = &g->tensors[n->inputs[0]];
	size_t esz = graph_dtype_size(x->dtype);
	int64_t i, cnt = graph_shape_elems(os), xst[GRAPH_MAX_DIMS], start[GRAPH_MAX_DIMS],
	    step[GRAPH_MAX_DIMS];

	if ((outs[0] = alloc_elems(x->dtype, cnt)) == NULL)
		return error_set(cause, "out of memory");
	shape_strides(xs, xst);
	if (n->op == GRAPH_OP_SLICE)
		slice_plan(n, xs, start, step);
	for (i = 0; i < cnt; i++) {
		size_t at = (size_t)i;

		if (n->op == GRAPH_OP_EXPAND) {
			at = bcast_index(os, xs, (size_t)i);
		} else if (n->op == GRAPH_OP_SLICE || n->op == GRAPH_OP_TRANSPOSE || n->op == GRAPH_OP_TILE) {
			int64_t lin = i, c, d;

			at = 0;
			for (d = os->ndims - 1; d >= 0; d--) {
				c = lin % os->dims[d];
				lin /= os->dims[d];
				if (n->op == GRAPH_OP_SLICE)
					at += (size_t)((start[d] + c * step[d]) * xst[d]);
				else if (n->op == GRAPH_OP_TILE)
					at += (size_t)(c % xs->dims[d] * xst[d]);
				else
					at += (size_t)(c * xst[n->attr.transpose.nperm ?
					    n->attr.transpose.perm[d] : os->ndims - 1 - d]);
			}
		}
		memcpy((char *)outs[0] + esz * (size_t)i, (const char *)x->data + esz * at, esz);
	}
	return 1;
}

/* GATHER along axis (negative indices count from the end). */
static int
eval_gather(const graph_t *g, const struct graph_node *n, const struct graph_shape *s, void **outs,
    char **cause)
{
	const struct graph_shape *xs = &s[n->inputs[0]];
	const struct graph_tensor *x = &g->tensors[n->inputs[0]], *ix = &g->tensors[n->inputs[1]];
	size_t esz = graph_dtype_size(x->dtype);
	int64_t ax = n->attr.gather.axis < 0 ? n->attr.gather.axis + xs->ndims : n->attr.gather.axis;
	int64_t outer = 1, inner = 1, nidx = graph_shape_elems(&s[n->inputs[1]]), o, k, d;

	if (!dt_is_int(ix->dtype))
		return 0;
	for (d = 0; d < xs->ndims; d++)
		if (d < ax)
			outer *= xs->dims[d];
		else if (d > ax)
			inner *= xs->dims[d];
	if ((outs[0] = alloc_elems(x->dtype, outer * nidx * inner)) == NULL)
		return error_set(cause, "out of memory");
	for (o = 0; o < outer; o++)
		for (k = 0; k < nidx; k++) {
			int64_t j = ld_i(ix->dtype, ix->data, (size_t)k);

			if (j < 0)
				j += xs->dims[ax];
			if (j < 0 || j >= xs->dims[ax]) {
				free(outs[0]);
				outs[0] = NULL;
				return error_set(cause, "node '%s': gather index out of range", n->name);
			}
			memcpy((char *)outs[0] + esz * (size_t)((o * nidx + k) * inner),
			    (const char *)x->data + esz * (size_t)((o * xs->dims[ax] + j) * inner),
			    esz * (size_t)inner);
		}
	return 1;
}

/* CONCAT (inputs into one) and SPLIT (one into outputs) along an axis. */
static int
eval_concat_split(const graph_t *g, const struct graph_node *n, const struct graph_shape *s,
    void **outs, char **cause)
{
	int split = n->op == GRAPH_OP_SPLIT, nparts = split ? n->noutputs : n->ninputs, k;
	const struct graph_shape *whole = split ? &s[n->inputs[0]] : &s[n->outputs[0]];
	size_t esz = graph_dtype_size(g->tensors[n->inputs[0]].dtype);
	int64_t axv = split ? n->attr.split.axis : n->attr.concat.axis;
	int64_t ax = axv < 0 ? axv + whole->ndims : axv, outer = 1, inner = 1, o, off = 0, d;
	char *big;

	for (d = 0; d < whole->ndims; d++)
		if (d < ax)
			outer *= whole->dims[d];
		else if (d > ax)
			inner *= whole->dims[d];
	big = split ? (char *)(uintptr_t)g->tensors[n->inputs[0]].data :
	    (outs[0] = alloc_elems(g->tensors[n->outputs[0]].dtype, graph_shape_elems(whole)));
	if (big == NULL)
		return error_set(cause, "out of memory");
	for (k = 0; k < nparts; k++) {
		int t = split ? n->outputs[k] : n->inputs[k];
		int64_t len = t >= 0 ? s[t].dims[ax] : 0;
		char *part = NULL;

		if (split && (outs[k] = alloc_elems(g->tensors[n->inputs[0]].dtype,
		    outer * len * inner)) == NULL) {
			while (--k >= 0)
				free(outs[k]), outs[k] = NULL;
			return error_set(cause, "out of memory");
		}
		part = split ? outs[k] : (char *)(uintptr_t)g->tensors[t].data;
		for (o = 0; o < outer && len > 0; o++) {
			char *w = big + esz * (size_t)((o * whole->dims[ax] + off) * inner);
			char *p = part + esz * (size_t)(o * len * inner);

			if (split)
				memcpy(p, w, esz * (size_t)(len * inner));
			else
				memcpy(w, p, esz * (size_t)(len * inner));
		}
		off += len;
	}
	return 1;
}

/* Values of a CONST integer tensor. */
int
graph_const_ints(const graph_t *g, int t, int64_t *out, int max, int *n)
{
	const struct graph_tensor *x;
	size_t esz, cnt, i;

	if (t < 0 || (size_t)t >= g->ntensors)
		return 0;
	x = &g->tensors[t];
	if (!(x->flags & GRAPH_TENSOR_CONST) || (x->dtype != GRAPH_DT_I64 && x->dtype != GRAPH_DT_I32))
		return 0;
	esz = graph_dtype_size(x->dtype);
	cnt = x->nbytes / esz;
	if (cnt > (size_t)max || (cnt > 0 && x->data == NULL))
		return 0;
	for (i = 0; i < cnt; i++)
		out[i] = ld_i(x->dtype, x->data, i);
	*n = (int)cnt;
	return 1;
}

/* Whether every dtype n touches is one the evaluator handles (STRING folds through the CPU kernels). */
static int
eval_dtypes_ok(const graph_t *g, const struct graph_node *n)
{
	int k;
	enum graph_dtype dt;

	for (k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0 && ((dt = g->tensors[n->inputs[k]].dtype) == GRAPH_DT_F16 ||
		    dt == GRAPH_DT_STRING))
			return 0;
	for (k = 0; k < n->noutputs; k++)
		if (n->outputs[k] >= 0 && ((dt = g->tensors[n->outputs[k]].dtype) == GRAPH_DT_F16 ||
		    dt == GRAPH_DT_STRING))
			return 0;
	return 1;
}

/* Evaluate one node on constants. */
int
graph_eval_node(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes,
    void **outs, char **cause)
{
	if (!eval_dtypes_ok(g, n) || n->act != GRAPH_UNARY_NONE)
		return 0;
	switch (n->op) {
	case GRAPH_OP_SHAPE: case GRAPH_OP_CONSTANT_OF_SHAPE: case GRAPH_OP_RANGE:
		return eval_generator(g, n, shapes, outs, cause);
	case GRAPH_OP_BINARY:
		return eval_binary(g, n, shapes, outs, cause);
	case GRAPH_OP_UNARY: case GRAPH_OP_CAST:
		return eval_unary(g, n, shapes, outs, cause);
	case GRAPH_OP_WHERE:
		return eval_where(g, n, shapes, outs, cause);
	case GRAPH_OP_GATHER:
		return eval_gather(g, n, shapes, outs, cause);
	case GRAPH_OP_CONCAT: case GRAPH_OP_SPLIT:
		return eval_concat_split(g, n, shapes, outs, cause);
	case GRAPH_OP_SLICE: case GRAPH_OP_TRANSPOSE: case GRAPH_OP_EXPAND: case GRAPH_OP_TILE:
	case GRAPH_OP_RESHAPE: case GRAPH_OP_COPY:
		return eval_move(g, n, shapes, outs, cause);
	default:
		return 0;
	}
}
