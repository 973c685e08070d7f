/* cpu_cumsum.c: CumSum along one axis (FP32, INT64, INT32), inclusive or exclusive, forward or reversed. */
#include "config.h"

#include <stdint.h>

#include "cpu_kernels_impl.h"

/* Running sum of one line of len elements at stride st, element type T summed in A (integers wrap, unsigned). */
#define CUMSUM_LINE(T, A, x, y, len, st, excl, rev) do {				\
	A acc_ = 0;									\
	for (int64_t j_ = 0; j_ < (len); j_++) {					\
		int64_t at_ = ((rev) ? (len) - 1 - j_ : j_) * (st);			\
		A v_ = (A)(x)[at_];							\
		if (excl) {								\
			(y)[at_] = (T)acc_;						\
			acc_ += v_;							\
		} else {								\
			acc_ += v_;							\
			(y)[at_] = (T)acc_;						\
		}									\
	}										\
} while (0)

/* CUMSUM: y along the axis is the running sum of x (FP32 accumulates in float, as onnxruntime). */
int
cpu_cumsum_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	int64_t axis = cpu_has_in(c, 1) ? cpu_in_scalar(c, 1) : c->n->attr.cumsum.axis;
	int ax = cpu_axis(axis, x->ndims);
	int excl = c->n->attr.cumsum.exclusive, rev = c->n->attr.cumsum.reverse;
	enum graph_dtype dt = cpu_out_dtype(c, 0);
	int64_t outer = 1, len, inner = 1;

	if (cpu_has_in(c, 1) && cpu_elems(cpu_in_shape(c, 1)) != 1)
		return cpu_fail(cause, "axis is not a scalar");
	if (ax < 0 || !cpu_shape_equal(x, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "axis out of range or the output not of the input's shape");
	for (int i = 0; i < ax; i++)
		outer *= x->dims[i];
	len = x->dims[ax];
	for (int i = ax + 1; i < x->ndims; i++)
		inner *= x->dims[i];
#pragma omp parallel for if (cpu_parallel(outer * len * inner))
	for (int64_t l = 0; l < outer * inner; l++) {
		int64_t base = (l / inner) * len * inner + l % inner;

		if (dt == GRAPH_DT_F32)
			CUMSUM_LINE(float, float, (const float *)cpu_in(c, 0) + base, (float *)cpu_out(c, 0) + base,
			    len, inner, excl, rev);
		else if (dt == GRAPH_DT_I64)
			CUMSUM_LINE(int64_t, uint64_t, (const int64_t *)cpu_in(c, 0) + base,
			    (int64_t *)cpu_out(c, 0) + base, len, inner, excl, rev);
		else
			CUMSUM_LINE(int32_t, uint32_t, (const int32_t *)cpu_in(c, 0) + base,
			    (int32_t *)cpu_out(c, 0) + base, len, inner, excl, rev);
	}
	return 0;
}
