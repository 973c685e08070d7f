/* cpu_scatter.c: GatherND and ScatterND, which address slices of the data by index tuples. */
#include "config.h"

#include <string.h>

#include "cpu_kernels_impl.h"

/* Index tuples over the data's dims [first, first + m): element strides and bounds. */
struct nd_map {
	int64_t m, stride[GRAPH_MAX_DIMS], bound[GRAPH_MAX_DIMS];
};

/* Set up the map for data shape d with tuples of m indices starting at dim first. */
static void
nd_map_init(struct nd_map *map, const struct graph_shape *d, int first, int64_t m)
{
	int64_t st = 1;

	map->m = m;
	for (int i = d->ndims - 1; i >= first; i--) {
		if (i < first + m) {
			map->stride[i - first] = st;
			map->bound[i - first] = d->dims[i];
		}
		st *= d->dims[i];
	}
}

/* Element offset of one tuple (negative indices count from the end); -1 when an index is out of range. */
static int64_t
nd_offset(const struct nd_map *map, const int64_t *idx)
{
	int64_t off = 0;

	for (int64_t j = 0; j < map->m; j++) {
		int64_t v = idx[j] < 0 ? idx[j] + map->bound[j] : idx[j];

		if (v < 0 || v >= map->bound[j])
			return -1;
		off += v * map->stride[j];
	}
	return off;
}

/* Product of dims [from, to) of s. */
static int64_t
dims_prod(const struct graph_shape *s, int from, int to)
{
	int64_t p = 1;

	for (int i = from; i < to; i++)
		p *= s->dims[i];
	return p;
}

/* GATHER_ND: each index tuple (after batch_dims shared dims) selects a slice of the data. */
int
cpu_gather_nd_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *d = cpu_in_shape(c, 0), *ix = cpu_in_shape(c, 1);
	int b = (int)c->n->attr.nd.batch_dims;
	size_t es = cpu_dtype_size(cpu_out_dtype(c, 0));
	const int64_t *idx = cpu_in(c, 1);
	int64_t m, nb, nt, slice, dstride;
	struct nd_map map;

	if (ix->ndims < 1 || b < 0 || b >= ix->ndims || (m = ix->dims[ix->ndims - 1]) < 1 || b + m > d->ndims)
		return cpu_fail(cause, "indices' rank, last dim or batch_dims out of range");
	nd_map_init(&map, d, b, m);
	nb = dims_prod(d, 0, b);
	nt = dims_prod(ix, b, ix->ndims - 1);
	slice = dims_prod(d, b + (int)m, d->ndims);
	dstride = dims_prod(d, b, d->ndims);
	if (nb * nt * slice != cpu_elems(cpu_out_shape(c, 0)))
		return cpu_fail(cause, "output size differs from the indices' tuples times the slice");
	for (int64_t t = 0; t < nb * nt; t++) {
		int64_t off = nd_offset(&map, idx + t * m);

		if (off < 0)
			return cpu_fail(cause, "index tuple %lld is out of range", (long long)t);
		memcpy((char *)cpu_out(c, 0) + (size_t)(t * slice) * es,
		    (const char *)cpu_in(c, 0) + (size_t)((t / nt) * dstride + off) * es, (size_t)slice * es);
	}
	return 0;
}

/* a combined with v by reduction (integers as unsigned, so add and mul wrap). */
#define SCATTER_COMBINE(red, a, v) ((red) == GRAPH_SCATTER_ADD ? (a) + (v) : (red) == GRAPH_SCATTER_MUL ? \
	(a) * (v) : (red) == GRAPH_SCATTER_MAX ? ((a) > (v) ? (a) : (v)) : ((a) < (v) ? (a) : (v)))

/* Combine n updates into y by reduction (NONE copies); also ScatterElements' (cpu_scatter_elements.c). */
void
cpu_scatter_combine(enum graph_scatter_reduce red, enum graph_dtype dt, char *y, const char *u, int64_t n, size_t es)
{
	if (red == GRAPH_SCATTER_NONE) {
		memcpy(y, u, (size_t)n * es);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		if (dt == GRAPH_DT_F32) {
			float *a = (float *)y + i, v = ((const float *)u)[i];

			*a = SCATTER_COMBINE(red, *a, v);
		} else if (dt == GRAPH_DT_I64) {
			int64_t *a = (int64_t *)y + i, v = ((const int64_t *)u)[i];

			*a = red == GRAPH_SCATTER_ADD || red == GRAPH_SCATTER_MUL ?
			    (int64_t)SCATTER_COMBINE(red, (uint64_t)*a, (uint64_t)v) : SCATTER_COMBINE(red, *a, v);
		} else {
			int32_t *a = (int32_t *)y + i, v = ((const int32_t *)u)[i];

			*a = red == GRAPH_SCATTER_ADD || red == GRAPH_SCATTER_MUL ?
			    (int32_t)SCATTER_COMBINE(red, (uint32_t)*a, (uint32_t)v) : SCATTER_COMBINE(red, *a, v);
		}
	}
}

/* SCATTER_ND: y = data, then each index tuple's slice takes (or is combined with) its updates, in order. */
int
cpu_scatter_nd_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *d = cpu_in_shape(c, 0), *ix = cpu_in_shape(c, 1);
	enum graph_dtype dt = cpu_out_dtype(c, 0);
	size_t es = cpu_dtype_size(dt);
	const int64_t *idx = cpu_in(c, 1);
	int64_t m, nt, slice;
	struct nd_map map;

	if (ix->ndims < 1 || (m = ix->dims[ix->ndims - 1]) < 1 || m > d->ndims ||
	    !cpu_shape_equal(d, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "indices' last dim out of range, or the output not of the data's shape");
	nd_map_init(&map, d, 0, m);
	nt = dims_prod(ix, 0, ix->ndims - 1);
	slice = dims_prod(d, (int)m, d->ndims);
	if (nt * slice != cpu_elems(cpu_in_shape(c, 2)))
		return cpu_fail(cause, "updates' size differs from the indices' tuples times the slice");
	memcpy(cpu_out(c, 0), cpu_in(c, 0), (size_t)cpu_elems(d) * es);
	for (int64_t t = 0; t < nt; t++) {
		int64_t off = nd_offset(&map, idx + t * m);

		if (off < 0)
			return cpu_fail(cause, "index tuple %lld is out of range", (long long)t);
		cpu_scatter_combine(c->n->attr.nd.reduce, dt, (char *)cpu_out(c, 0) + (size_t)off * es,
		    (const char *)cpu_in(c, 2) + (size_t)(t * slice) * es, slice, es);
	}
	return 0;
}
