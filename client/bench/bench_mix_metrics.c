/* bench_mix_metrics.c: the server's per-model counters inferd-bench-mix reads from GET /metrics around its window. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mix.h"
#include "error.h"

/* The counters read, in struct mix_counters' order; the padding ones only where the server has them. */
static const char *const mix_counter_names[MIX_COUNTERS] = {
	"inferd_inference_count", "inferd_execution_count", "inferd_batches_padded_total",
	"inferd_padding_positions_total", "inferd_sequence_positions_total",
};

/* Find "NAME{model="M"} VALUE" at the start of a line of the exposition text; -1 when absent. */
static int
mix_metric_value(const char *text, const char *name, const char *model, uint64_t *v)
{
	char key[512];
	const char *p;
	size_t klen;

	if (snprintf(key, sizeof key, "%s{model=\"%s\"} ", name, model) >= (int)sizeof key)
		return -1;
	klen = strlen(key);
	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, klen) == 0) {
			*v = strtoull(p + klen, NULL, 10);
			return 0;
		}
	return -1;
}

/* Read model's counters from GET /metrics: the first two required, the rest where present; -1 with *cause. */
int
mix_metrics_read(const struct httpc_url *u, const char *model, struct mix_counters *c, char **cause)
{
	char *body;
	size_t len;
	int status, i, r = 0;

	memset(c, 0, sizeof *c);
	if (httpc_fetch(u, "GET", "/metrics", NULL, NULL, 0, 30, &status, &body, &len, cause) != 0)
		return error_prefix(cause, "GET /metrics");
	if (status != 200)
		r = error_set(cause, "GET /metrics: status %d", status);
	for (i = 0; r == 0 && i < MIX_COUNTERS; i++) {
		if (mix_metric_value(body, mix_counter_names[i], model, &c->v[i]) == 0)
			c->have[i] = 1;
		else if (i < 2)
			r = error_set(cause, "GET /metrics has no %s for model %s", mix_counter_names[i], model);
	}
	free(body);
	return r;
}
