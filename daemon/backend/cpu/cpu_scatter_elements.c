/* cpu_scatter_elements.c: ScatterElements: each update lands where its own position points, the axis coordinate taken from indices. */
#include "config.h"

#include <string.h>

#include "cpu_kernels_impl.h"

/* Index k of the indices (INT64 or INT32). */
static int64_t
index_at(const void *ix, enum graph_dtype dt, int64_t k)
{
	return dt == GRAPH_DT_I64 ? ((const int64_t *)ix)[k] : ((const int32_t *)ix)[k];
}

/* Advance a row-major position over dims by one (an odometer). */
static void
position_next(int64_t *pos, const struct graph_shape *s)
{
	for (int i = s->ndims - 1; i >= 0; i--) {
		if (++pos[i] < s->dims[i])
			return;
		pos[i] = 0;
	}
}

/* The data's element offset for the index position pos whose axis coordinate is v; -1 when out of range. */
static int64_t
target_offset(const struct graph_shape *d, const int64_t *pos, int ax, int64_t v)
{
	int64_t off = 0;

	if (v < 0)
		v += d->dims[ax];
	if (v < 0 || v >= d->dims[ax])
		return -1;
	for (int i = 0; i < d->ndims; i++)
		off = off * d->dims[i] + (i == ax ? v : pos[i]);
	return off;
}

/* SCATTER_ELEMENTS: y = data, then every update in row-major order takes (or is combined into) its target. */
int
cpu_scatter_elements_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *d = cpu_in_shape(c, 0), *ix = cpu_in_shape(c, 1);
	enum graph_dtype dt = cpu_out_dtype(c, 0), it = cpu_in_dtype(c, 1);
	size_t es = cpu_dtype_size(dt);
	int ax = cpu_axis(c->n->attr.scatter.axis, d->ndims);
	int64_t pos[GRAPH_MAX_DIMS] = { 0 }, n = cpu_elems(ix);

	if (ax < 0 || ix->ndims != d->ndims || !cpu_shape_equal(ix, cpu_in_shape(c, 2)) ||
	    !cpu_shape_equal(d, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "axis out of range, or indices, updates and output not of the shapes the data needs");
	for (int i = 0; i < d->ndims; i++)
		if (i != ax && ix->dims[i] > d->dims[i])
			return cpu_fail(cause, "indices larger than the data in dim %d", i);
	if (cpu_out(c, 0) != cpu_in(c, 0))
		memcpy(cpu_out(c, 0), cpu_in(c, 0), (size_t)cpu_elems(d) * es);
	for (int64_t k = 0; k < n; k++, position_next(pos, ix)) {
		int64_t off = target_offset(d, pos, ax, index_at(cpu_in(c, 1), it, k));

		if (off < 0)
			return cpu_fail(cause, "index %lld at element %lld is out of range for an axis of %lld",
			    (long long)index_at(cpu_in(c, 1), it, k), (long long)k, (long long)d->dims[ax]);
		cpu_scatter_combine(c->n->attr.scatter.reduce, dt, (char *)cpu_out(c, 0) + (size_t)off * es,
		    (const char *)cpu_in(c, 2) + (size_t)k * es, 1, es);
	}
	return 0;
}
