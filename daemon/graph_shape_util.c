/* graph_shape_util.c: what every shape function works with: formatting, broadcasting, refusals, constant inputs, outputs. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "graph_shape.h"
#include "graph_shape_impl.h"

/* Format a shape as "[2,3,4]". */
const char *
graph_shape_str(const struct graph_shape *s, char *buf, size_t len)
{
	size_t off = 0;
	int i, k;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	k = snprintf(buf, len, "[");
	off = k > 0 ? (size_t)k : 0;
	for (i = 0; i < s->ndims && off < len; i++) {
		k = snprintf(buf + off, len - off, "%s%" PRId64, i ? "," : "", s->dims[i]);
		off += k > 0 ? (size_t)k : 0;
	}
	if (off < len)
		snprintf(buf + off, len - off, "]");
	return buf;
}

/* numpy broadcast of two shapes. */
int
graph_shape_broadcast(const struct graph_shape *a, const struct graph_shape *b,
    struct graph_shape *out)
{
	int n = a->ndims > b->ndims ? a->ndims : b->ndims, i;
	struct graph_shape r;

	memset(&r, 0, sizeof r);
	r.ndims = n;
	for (i = 0; i < n; i++) {
		int ia = i - (n - a->ndims), ib = i - (n - b->ndims);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return -1;
		r.dims[i] = da == 1 ? db : da;
	}
	*out = r;
	return 0;
}

/* Whether two shapes are equal (rank and dims; nothing past the rank is compared). */
int
gs_shape_eq(const struct graph_shape *a, const struct graph_shape *b)
{
	return a->ndims == b->ndims &&
	    memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)(a->ndims > 0 ? a->ndims : 0)) == 0;
}


/* Refuse a node with a formatted reason. */
int
gs_node_error(const struct graph_node *n, char **cause, const char *what)
{
	return error_set(cause, "node '%s': %s", n->name ? n->name : "?", what);
}

/* Refuse a node whose input shape does not fit. */
int
gs_node_shape_error(const struct graph_node *n, char **cause, const char *what,
    const struct graph_shape *s)
{
	char b[160];

	return error_set(cause, "node '%s': %s (input shape %s)", n->name ? n->name : "?", what,
	    graph_shape_str(s, b, sizeof b));
}

/* Normalise an axis into [0, rank); -1 when out of range. */
int
gs_norm_axis(int64_t axis, int rank, int64_t *out)
{
	if (axis < -rank || axis >= rank)
		return -1;
	*out = axis < 0 ? axis + rank : axis;
	return 0;
}

/* Read a CONST integer tensor (I64 or I32) of at most max elements into out. */
int
gs_const_ints(const graph_t *g, const struct graph_node *n, int t, int64_t *out, int max,
    int *count, char **cause)
{
	const struct graph_tensor *x = &g->tensors[t];
	size_t esz, cnt, i;

	if (!(x->flags & GRAPH_TENSOR_CONST) || x->data == NULL)
		return error_set(cause, "node '%s': input '%s' must be a constant "
		    "(specialize the graph for its input shapes first)", n->name, x->name);
	if (x->dtype != GRAPH_DT_I64 && x->dtype != GRAPH_DT_I32)
		return error_set(cause, "node '%s': input '%s' must be INT64 or INT32", n->name,
		    x->name);
	esz = x->dtype == GRAPH_DT_I64 ? 8 : 4;
	cnt = x->nbytes / esz;
	if ((int64_t)cnt > max)
		return error_set(cause, "node '%s': input '%s' has %zu values, at most %d fit",
		    n->name, x->name, cnt, max);
	for (i = 0; i < cnt; i++) {
		if (esz == 8) {
			memcpy(&out[i], (const char *)x->data + 8 * i, 8);
		} else {
			int32_t v;

			memcpy(&v, (const char *)x->data + 4 * i, 4);
			out[i] = v;
		}
	}
	*count = (int)cnt;
	return 0;
}

/* Set output k to shape r, checking dims stay in range. */
int
gs_set_out(const struct graph_node *n, struct graph_shape *s, int k, const struct graph_shape *r,
    char **cause)
{
	int64_t total;
	int i;

	if (r->ndims < 0 || r->ndims > GRAPH_MAX_DIMS)
		return gs_node_error(n, cause, "output rank out of range");
	for (i = 0, total = 1; i < r->ndims; i++) {
		if (r->dims[i] < 0 || r->dims[i] > SHAPE_DIM_MAX)
			return gs_node_error(n, cause, "output dimension negative or too large");
		/* Every product of dims stays far from overflow: kernels multiply them freely. */
		if (r->dims[i] > 0 && total > SHAPE_DIM_MAX / r->dims[i])
			return gs_node_error(n, cause, "output has too many elements");
		total *= r->dims[i];
	}
	if (k < n->noutputs && n->outputs[k] >= 0)
		s[n->outputs[k]] = *r;
	return 0;
}
