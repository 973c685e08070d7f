/* cpu_predicate.c: element predicates into BOOL: IsNaN, IsInf (FP32 in) and Not (BOOL in). */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "cpu_kernels_impl.h"

/* PREDICATE: y[i] = isnan(x[i]), isinf(x[i]) (signs per detect_*), or !x[i]. */
int
cpu_predicate_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_node *n = c->n;
	int64_t cnt = cpu_elems(cpu_out_shape(c, 0));
	uint8_t *y = cpu_out(c, 0);
	int pos = n->attr.pred.detect_pos, neg = n->attr.pred.detect_neg;

	if (!cpu_shape_equal(cpu_in_shape(c, 0), cpu_out_shape(c, 0)))
		return cpu_fail(cause, "output shape differs from the input's");
	if (n->attr.pred.fn == GRAPH_PRED_NOT) {
		const uint8_t *x = cpu_in(c, 0);

		for (int64_t i = 0; i < cnt; i++)
			y[i] = x[i] == 0;
		return 0;
	}
	const float *x = cpu_in(c, 0);

	if (n->attr.pred.fn == GRAPH_PRED_ISNAN) {
		for (int64_t i = 0; i < cnt; i++)
			y[i] = isnan(x[i]) != 0;
		return 0;
	}
	for (int64_t i = 0; i < cnt; i++)
		y[i] = isinf(x[i]) && (x[i] > 0 ? pos : neg);
	return 0;
}
