/* cpu_tile.c: Tile, the input repeated along each dim, any dtype (strings move as their fixed slots). */
#include "config.h"

#include <string.h>

#include "cpu_kernels_impl.h"

/*
 * TILE: output dim d is the input's times its repeat, so output coordinate c
 * reads input coordinate c mod the input's dim.  The repeats come from the
 * shapes (the output's dims over the input's), so a node whose repeats were
 * an input folded at specialisation needs nothing more.  Each output row
 * (the last dim) is its input row copied once per repeat of the last dim.
 */
int
cpu_tile_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *x = cpu_in_shape(c, 0), *y = cpu_out_shape(c, 0);
	size_t es = cpu_dtype_size(cpu_out_dtype(c, 0));
	int64_t rows = 1, xlen, ylen, xst[GRAPH_MAX_DIMS];
	const char *src = cpu_in(c, 0);
	char *dst = cpu_out(c, 0);
	int nd = x->ndims;

	if (y->ndims != nd)
		return cpu_fail(cause, "output rank %d differs from the input's %d", y->ndims, nd);
	for (int d = 0; d < nd; d++)
		if (x->dims[d] == 0 ? y->dims[d] != 0 : y->dims[d] % x->dims[d] != 0)
			return cpu_fail(cause, "output dim %d (%lld) is not a multiple of the input's (%lld)", d,
			    (long long)y->dims[d], (long long)x->dims[d]);
	if (cpu_elems(y) == 0)
		return 0;
	if (nd == 0) {
		memcpy(dst, src, es);
		return 0;
	}
	xlen = x->dims[nd - 1];
	ylen = y->dims[nd - 1];
	xst[nd - 1] = 1;
	for (int d = nd - 2; d >= 0; d--)
		xst[d] = xst[d + 1] * x->dims[d + 1];
	for (int d = 0; d < nd - 1; d++)
		rows *= y->dims[d];
#pragma omp parallel for if (cpu_parallel(rows * ylen))
	for (int64_t r = 0; r < rows; r++) {
		int64_t at = 0, rest = r;
		char *out = dst + (size_t)(r * ylen) * es;

		for (int d = nd - 2; d >= 0; d--) {
			at += (rest % y->dims[d]) % x->dims[d] * xst[d];
			rest /= y->dims[d];
		}
		for (int64_t k = 0; k < ylen; k += xlen)
			memcpy(out + (size_t)k * es, src + (size_t)at * es, (size_t)xlen * es);
	}
	return 0;
}
