/* bench_mix_metrics.c: the server's per-model counters inferd-bench-mix reads from GET /metrics around its window. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http_get.h"
#include "bench_mix.h"
#include "error.h"

/* The counters read, in struct mix_counters' order; the padding ones only where the server has them. */
static const char *const mix_counter_names[MIX_COUNTERS] = {
	"inferd_inference_count", "inferd_execution_count", "inferd_batches_padded_total",
	"inferd_padding_positions_total", "inferd_sequence_positions_total",
};

/* Read model's counters from GET /metrics: the first two required, the rest where present; -1 with *cause. */
int
mix_metrics_read(const struct httpc_url *u, const char *model, struct mix_counters *c, char **cause)
{
	char *text;
	int i, r = 0;

	memset(c, 0, sizeof *c);
	if (bench_http_get_metrics(u, &text, cause) != 0)
		return -1;
	for (i = 0; r == 0 && i < MIX_COUNTERS; i++) {
		if (bench_metric_value(text, mix_counter_names[i], model, &c->v[i]) == 0)
			c->have[i] = 1;
		else if (i < 2)
			r = error_set(cause, "GET /metrics has no %s for model %s", mix_counter_names[i], model);
	}
	free(text);
	return r;
}
