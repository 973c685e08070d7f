/* graph_shapefn_ctx.c: what every shape function works with: failures and guards, outputs, broadcasting, small integer values. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_fold_eval.h"
#include "graph_shapefn.h"
#include "graph_shapefn_impl.h"

int
sf_fail(struct sf *s, const char *why)
{
	return error_set(s->cause, "node '%s' (%s): %s", s->n->name ? s->n->name : "?", graph_op_name(s->n->op), why);
}

int
sf_require(struct sf *s, int cond, const char *what)
{
	struct graph_shapefn *f = s->f;
	int64_t v;
	size_t i;

	if (cond < 0)
		return sf_fail(s, s->p->oom ? "out of memory" : "a shape condition cannot be followed");
	if (sym_is_const(s->p, cond, &v))
		return v ? 0 : sf_fail(s, what);
	for (i = 0; i < f->nguards; i++)
		if (f->guards[i].cond == cond)
			return 0;
	if (f->nguards == f->guards_cap) {
		size_t cap = f->guards_cap ? f->guards_cap * 2 : 32;
		struct graph_shapefn_guard *ng = xrealloc(f->guards, cap * sizeof *ng);
		if (ng == NULL)
			return error_set(s->cause, "out of memory");
		f->guards = ng;
		f->guards_cap = cap;
	}
	f->guards[f->nguards].cond = cond;
	f->guards[f->nguards].node = s->node;
	f->guards[f->nguards++].what = what;
	return 0;
}

int
sf_set_out(struct sf *s, int k, const struct graph_shapefn_shape *r)
{
	int64_t lo, hi;
	int i;

	if (r->ndims < 0 || r->ndims > GRAPH_MAX_DIMS)
		return sf_fail(s, "output rank out of range");
	for (i = 0; i < r->ndims; i++) {
		if (r->dims[i] < 0)
			return sf_fail(s, s->p->oom ? "out of memory" : "an output dim cannot be followed");
		sym_bounds(s->p, r->dims[i], &lo, &hi);
		if (lo < 0 && sf_require(s, sym_le(s->p, sym_const(s->p, 0), r->dims[i]), "an output dim is negative") < 0)
			return -1;
		if (hi > SYM_DIM_MAX &&
		    sf_require(s, sym_le(s->p, r->dims[i], sym_const(s->p, SYM_DIM_MAX)), "an output dim is too large") < 0)
			return -1;
	}
	if (k < s->n->noutputs && s->n->outputs[k] >= 0)
		s->f->shapes[s->n->outputs[k]] = *r;
	return 0;
}

int
sf_axis(int64_t axis, int rank, int64_t *out)
{
	if (axis < -rank || axis >= rank)
		return -1;
	*out = axis < 0 ? axis + rank : axis;
	return 0;
}

int
sf_elems(struct sf *s, const struct graph_shapefn_shape *x)
{
	int e = sym_const(s->p, 1), i;

	for (i = 0; i < x->ndims; i++)
		e = sym_mul(s->p, e, x->dims[i]);
	return e;
}

/* One broadcast dim: equal ids, or one side 1, are decided; otherwise a guard. */
static int
broadcast_dim(struct sf *s, int da, int db, int *out)
{
	struct sym_pool *p = s->p;
	int one = sym_const(p, 1), ok;

	if (da == db || sym_eq(p, db, one) == one) {
		*out = da;
		return 0;
	}
	if (sym_eq(p, da, one) == one) {
		*out = db;
		return 0;
	}
	ok = sym_or(p, sym_or(p, sym_eq(p, da, db), sym_eq(p, da, one)), sym_eq(p, db, one));
	*out = sym_select(p, sym_eq(p, da, one), db, da);
	return sf_require(s, ok, "input shapes do not broadcast");
}

int
sf_broadcast(struct sf *s, const struct graph_shapefn_shape *a, const struct graph_shapefn_shape *b,
    struct graph_shapefn_shape *out)
{
	struct graph_shapefn_shape r;
	int n = a->ndims > b->ndims ? a->ndims : b->ndims, i, one = sym_const(s->p, 1);

	memset(&r, 0, sizeof r);
	r.ndims = n;
	for (i = 0; i < n; i++) {
		int ia = i - (n - a->ndims), ib = i - (n - b->ndims);

		if (broadcast_dim(s, ia >= 0 ? a->dims[ia] : one, ib >= 0 ? b->dims[ib] : one, &r.dims[i]) < 0)
			return -1;
	}
	*out = r;
	return 0;
}

/* Whether dt is an integer (or BOOL) dtype whose values may be followed. */
static int
int_dtype(enum graph_dtype dt)
{
	return dt == GRAPH_DT_I64 || dt == GRAPH_DT_I32 || dt == GRAPH_DT_I8 || dt == GRAPH_DT_U8 ||
	    dt == GRAPH_DT_BOOL;
}

/* Read a small integer constant's values into expressions (once). */
static int
const_values(struct sf *s, int t)
{
	const struct graph_tensor *x = &s->g->tensors[t];
	size_t esz = graph_dtype_size(x->dtype), cnt = esz ? x->nbytes / esz : 0, i;
	int32_t *v;

	if (!int_dtype(x->dtype) || x->data == NULL || cnt > SF_MAX_VALUES)
		return -1;
	if ((v = xcalloc(cnt + 1, sizeof *v)) == NULL)
		return -1;
	for (i = 0; i < cnt; i++) {
		const unsigned char *b = (const unsigned char *)x->data + i * esz;
		int64_t e = 0;
		int32_t e32;

		switch (x->dtype) {
		case GRAPH_DT_I64: memcpy(&e, b, 8); break;
		case GRAPH_DT_I32: memcpy(&e32, b, 4); e = e32; break;
		case GRAPH_DT_I8: e = (int8_t)b[0]; break;
		default: e = b[0]; break;
		}
		v[i] = sym_const(s->p, e);
	}
	s->f->values[t] = v;
	s->f->nvalues[t] = (int)cnt;
	return (int)cnt;
}

int
sf_values(struct sf *s, int t, const int32_t **v)
{
	if (t < 0)
		return -1;
	if (s->f->values[t] == NULL && ((s->g->tensors[t].flags & GRAPH_TENSOR_CONST) == 0 || const_values(s, t) < 0))
		return -1;
	*v = s->f->values[t];
	return s->f->nvalues[t];
}

int
sf_set_values(struct sf *s, int k, const int32_t *v, int n)
{
	int t = k < s->n->noutputs ? s->n->outputs[k] : -1, i;
	int32_t *c;

	if (t < 0 || n > SF_MAX_VALUES || !int_dtype(s->g->tensors[t].dtype))
		return 0;
	for (i = 0; i < n; i++)
		if (v[i] < 0)
			return 0;
	if ((c = xcalloc((size_t)n + 1, sizeof *c)) == NULL)
		return error_set(s->cause, "out of memory");
	memcpy(c, v, (size_t)n * sizeof *c);
	free(s->f->values[t]);
	s->f->values[t] = c;
	s->f->nvalues[t] = n;
	return 0;
}
