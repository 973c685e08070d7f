/* cpu_groupnorm.c: InstanceNormalization and GroupNormalization (FP32): each group of channels normalised, then scaled per group or channel. */
#include "config.h"

#include <math.h>

#include "cpu_kernels_impl.h"

/* Mean and 1 / sqrt(variance + eps) of n values (two passes in double: the groups can be large). */
static void
group_stats(const float *x, int64_t n, float eps, double *mean, float *inv)
{
	double s = 0.0, v = 0.0;

	for (int64_t i = 0; i < n; i++)
		s += x[i];
	*mean = s / (double)n;
	for (int64_t i = 0; i < n; i++)
		v += (x[i] - *mean) * (x[i] - *mean);
	*inv = (float)(1.0 / sqrt(v / (double)n + eps));
}

/* INSTANCENORM, GROUPNORM: X [N, C, ...]; scale and bias per channel, or per group (GroupNormalization, opset 18). */
int
cpu_groupnorm_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *s = cpu_in_shape(c, 0);
	const struct graph_groupnorm_attr *a = &c->n->attr.groupnorm;
	const float *x = cpu_in(c, 0), *scale = cpu_in(c, 1), *bias = cpu_in(c, 2);
	float *y = cpu_out(c, 0);
	int64_t ch, groups, cpg, inner = 1, want;

	if (s->ndims < 2 || !cpu_shape_equal(s, cpu_out_shape(c, 0)))
		return cpu_fail(cause, "X must be [N, C, ...] and the output of its shape");
	ch = s->dims[1];
	groups = c->n->op == GRAPH_OP_INSTANCENORM ? ch : a->groups;
	want = c->n->op == GRAPH_OP_INSTANCENORM || a->per_channel ? ch : groups;
	if (groups < 1 || ch % groups != 0 || cpu_elems(cpu_in_shape(c, 1)) != want ||
	    cpu_elems(cpu_in_shape(c, 2)) != want)
		return cpu_fail(cause, "%lld channels in %lld groups, or scale and bias not of %lld values",
		    (long long)ch, (long long)groups, (long long)want);
	for (int i = 2; i < s->ndims; i++)
		inner *= s->dims[i];
	cpg = ch / groups;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(cpu_elems(s)))
	for (int64_t ng = 0; ng < s->dims[0] * groups; ng++) {
		const float *xg = x + ng * cpg * inner;
		float *yg = y + ng * cpg * inner, inv;
		double mean;

		group_stats(xg, cpg * inner, a->eps, &mean, &inv);
		for (int64_t k = 0; k < cpg; k++) {
			int64_t p = want == ch ? (ng % groups) * cpg + k : ng % groups;
			float mul = inv * scale[p], mu = (float)mean;

			/* x - mean first: folding the mean into the bias cancels badly when the variance is tiny. */
			for (int64_t i = 0; i < inner; i++)
				yg[k * inner + i] = (xg[k * inner + i] - mu) * mul + bias[p];
		}
	}
	return 0;
}
