/* cpu_topk.c: TopK along one axis (FP32): the k largest or smallest values and their INT64 indices, sorted. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "cpu_kernels_impl.h"

/* One candidate: its value and its index along the axis. */
struct topk_item {
	float v;
	int64_t i;
};

/* Largest first; equal values by lower index (as onnxruntime). */
static int
topk_cmp_desc(const void *pa, const void *pb)
{
	const struct topk_item *a = pa, *b = pb;

	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Smallest first; equal values by lower index. */
static int
topk_cmp_asc(const void *pa, const void *pb)
{
	const struct topk_item *a = pa, *b = pb;

	if (a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Scratch: one line of candidates. */
size_t
cpu_topk_workspace(const struct cpu_node_ctx *c)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	int ax = cpu_axis(c->n->attr.topk.axis, x->ndims);

	return ax < 0 ? 0 : (size_t)x->dims[ax] * sizeof(struct topk_item);
}

/* TOPK: per line along the axis, sort the candidates (qsort: libc's, the lines are short) and keep k. */
int
cpu_topk_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	int ax = cpu_axis(c->n->attr.topk.axis, x->ndims);
	int64_t k = c->n->attr.topk.k, outer = 1, len, inner = 1;
	struct topk_item *it = c->ws;
	const float *src = cpu_in(c, 0);
	float *val = cpu_out(c, 0);
	int64_t *idx = cpu_out(c, 1);

	if (ax < 0 || k > x->dims[ax] || cpu_out_shape(c, 0)->dims[ax] != k)
		return cpu_fail(cause, "axis out of range or k beyond the axis");
	for (int i = 0; i < ax; i++)
		outer *= x->dims[i];
	len = x->dims[ax];
	for (int i = ax + 1; i < x->ndims; i++)
		inner *= x->dims[i];
	for (int64_t l = 0; l < outer * inner; l++) {
		int64_t o = l / inner, in = l % inner;

		for (int64_t j = 0; j < len; j++) {
			it[j].v = src[(o * len + j) * inner + in];
			it[j].i = j;
		}
		qsort(it, (size_t)len, sizeof *it, c->n->attr.topk.largest ? topk_cmp_desc : topk_cmp_asc);
		for (int64_t j = 0; j < k; j++) {
			val[(o * k + j) * inner + in] = it[j].v;
			idx[(o * k + j) * inner + in] = it[j].i;
		}
	}
	return 0;
}
