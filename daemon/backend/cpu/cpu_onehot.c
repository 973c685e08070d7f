/* cpu_onehot.c: OneHot: the values' off everywhere, on where an index (negative from the end) points along the axis. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cpu_kernels_impl.h"

/* Index k of the indices as an integer (floats truncated as onnxruntime casts them); 0 when it has none. */
static int
index_at(const void *ix, enum graph_dtype dt, int64_t k, int64_t *v)
{
	double f;

	switch (dt) {
	case GRAPH_DT_I64: *v = ((const int64_t *)ix)[k]; return 1;
	case GRAPH_DT_I32: *v = ((const int32_t *)ix)[k]; return 1;
	case GRAPH_DT_I8: *v = ((const int8_t *)ix)[k]; return 1;
	case GRAPH_DT_U8: *v = ((const uint8_t *)ix)[k]; return 1;
	case GRAPH_DT_F16: f = cpu_f16_to_f32(((const uint16_t *)ix)[k]); break;
	default: f = ((const float *)ix)[k]; break;
	}
	/* NaN or beyond int64 points nowhere: the whole line stays off. */
	if (!(fabs(f) < 9e18))
		return 0;
	*v = (int64_t)f;
	return 1;
}

/* ONEHOT: the output has indices' shape with depth inserted at the axis. */
int
cpu_onehot_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *ix = cpu_in_shape(c, 0), *y = cpu_out_shape(c, 0);
	size_t es = cpu_dtype_size(cpu_out_dtype(c, 0));
	int ax = cpu_axis(c->n->attr.onehot.axis, ix->ndims + 1);
	const char *val = cpu_in(c, 2);
	char *out = cpu_out(c, 0);
	int64_t depth, inner = 1, n = cpu_elems(ix), total;

	if (ax < 0 || y->ndims != ix->ndims + 1 || cpu_elems(cpu_in_shape(c, 2)) != 2 ||
	    cpu_in_dtype(c, 2) != cpu_out_dtype(c, 0))
		return cpu_fail(cause, "axis out of range, values not [off, on] of the output's dtype, or the output's rank");
	depth = y->dims[ax];
	for (int i = ax; i < ix->ndims; i++)
		inner *= ix->dims[i];
	total = cpu_elems(y);
	for (int64_t i = 0; i < total; i++)
		memcpy(out + (size_t)i * es, val, es);
	for (int64_t k = 0; k < n; k++) {
		int64_t v, o = k / inner, j = k % inner;

		if (!index_at(cpu_in(c, 0), cpu_in_dtype(c, 0), k, &v))
			continue;
		if (v < 0)
			v += depth;
		if (v >= 0 && v < depth)
			memcpy(out + (size_t)((o * depth + v) * inner + j) * es, val + es, es);
	}
	return 0;
}
