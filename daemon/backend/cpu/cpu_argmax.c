/* cpu_argmax.c: ArgMax and ArgMin along one axis (FP32, INT64, INT32 in; INT64 indices out). */
#include "config.h"

#include <stdint.h>

#include "cpu_kernels_impl.h"

/*
 * *out = the index of the best of len elements of type T at p, stride st, as
 * onnxruntime's loop: an element replaces the best so far only when it
 * compares strictly better (or equal too with select_last_index), so ties keep
 * the first index, and a NaN never replaces the best but stays best when it
 * comes first.
 */
#define ARGMAX_LINE(T, p, len, st, min, last, out) do {						\
	const T *p_ = (p);									\
	T b_ = p_[0];										\
	int64_t bi_ = 0;									\
	for (int64_t j_ = 1; j_ < (len); j_++) {						\
		T v_ = p_[j_ * (st)];								\
		if ((min) ? ((last) ? v_ <= b_ : v_ < b_) : ((last) ? v_ >= b_ : v_ > b_)) {	\
			b_ = v_;								\
			bi_ = j_;								\
		}										\
	}											\
	*(out) = bi_;										\
} while (0)

/* ARGMAX: per line along the axis, the index of its largest (smallest) element. */
int
cpu_argmax_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	int ax = cpu_axis(c->n->attr.argmax.axis, x->ndims), min = c->n->attr.argmax.min;
	int last = c->n->attr.argmax.last;
	int64_t outer = 1, len, inner = 1, *y = cpu_out(c, 0);
	enum graph_dtype dt = cpu_in_dtype(c, 0);

	if (ax < 0 || x->dims[ax] < 1)
		return cpu_fail(cause, "axis out of range or empty");
	for (int i = 0; i < ax; i++)
		outer *= x->dims[i];
	len = x->dims[ax];
	for (int i = ax + 1; i < x->ndims; i++)
		inner *= x->dims[i];
	if (cpu_elems(cpu_out_shape(c, 0)) != outer * inner)
		return cpu_fail(cause, "output of %lld elements, not one per line (%lld)",
		    (long long)cpu_elems(cpu_out_shape(c, 0)), (long long)(outer * inner));
	if (dt != GRAPH_DT_F32 && dt != GRAPH_DT_I64 && dt != GRAPH_DT_I32)
		return cpu_fail(cause, "input dtype %d (FP32, INT64 or INT32)", (int)dt);
#pragma omp parallel for if (cpu_parallel(outer * len * inner))
	for (int64_t l = 0; l < outer * inner; l++) {
		int64_t base = (l / inner) * len * inner + l % inner;

		if (dt == GRAPH_DT_F32)
			ARGMAX_LINE(float, (const float *)cpu_in(c, 0) + base, len, inner, min, last, y + l);
		else if (dt == GRAPH_DT_I64)
			ARGMAX_LINE(int64_t, (const int64_t *)cpu_in(c, 0) + base, len, inner, min, last, y + l);
		else
			ARGMAX_LINE(int32_t, (const int32_t *)cpu_in(c, 0) + base, len, inner, min, last, y + l);
	}
	return 0;
}
