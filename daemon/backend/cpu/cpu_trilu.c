/* cpu_trilu.c: Trilu, the upper or lower triangle of each matrix in the last two dims, any dtype. */
#include "config.h"

#include <string.h>

#include "cpu_kernels_impl.h"

/*
 * TRILU: per matrix [rows, cols], keep x[i][j] where j - i >= k (upper) or
 * j - i <= k (lower), zero elsewhere; a row is a kept run and a zeroed run.
 */
int
cpu_trilu_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	size_t es = cpu_dtype_size(cpu_out_dtype(c, 0));
	int64_t rows, cols, mats, k = c->n->attr.trilu.k;
	const char *src = cpu_in(c, 0);
	char *dst = cpu_out(c, 0);

	if (x->ndims < 2 || !cpu_shape_equal(x, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "needs rank >= 2 and the output of the input's shape");
	if (cpu_has_in(c, 1)) {
		if (cpu_elems(cpu_in_shape(c, 1)) != 1)
			return cpu_fail(cause, "k is not a scalar");
		k = cpu_in_scalar(c, 1);
	}
	/* Past the matrix either way is all kept or all zeroed; the clamp keeps i + k from overflowing. */
	k = k < -x->dims[x->ndims - 2] - 1 ? -x->dims[x->ndims - 2] - 1 : k > x->dims[x->ndims - 1] + 1 ?
	    x->dims[x->ndims - 1] + 1 : k;
	rows = x->dims[x->ndims - 2];
	cols = x->dims[x->ndims - 1];
	mats = rows * cols > 0 ? cpu_elems(x) / (rows * cols) : 0;
#pragma omp parallel for if (cpu_parallel(mats * rows * cols))
	for (int64_t r = 0; r < mats * rows; r++) {
		int64_t i = r % rows, first, end;
		const char *s = src + (size_t)(r * cols) * es;
		char *d = dst + (size_t)(r * cols) * es;

		/* Upper keeps columns [i + k, cols); lower keeps [0, i + k], both clamped to the row. */
		first = c->n->attr.trilu.upper ? i + k : 0;
		end = c->n->attr.trilu.upper ? cols : i + k + 1;
		first = first < 0 ? 0 : first > cols ? cols : first;
		end = end < first ? first : end > cols ? cols : end;
		memset(d, 0, (size_t)first * es);
		memcpy(d + (size_t)first * es, s + (size_t)first * es, (size_t)(end - first) * es);
		memset(d + (size_t)end * es, 0, (size_t)(cols - end) * es);
	}
	return 0;
}
