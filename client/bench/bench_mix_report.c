/* bench_mix_report.c: inferd-bench-mix's results, as text or one JSON object. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "bench_mix.h"
#include "error.h"
#include "inferd.h"

/* The name of a refusal kind: its HTTP status, or libinferd's name for its code. */
static const char *
mix_kind_label(const struct mix_run *r, int code)
{
	if (r->set->protocol == MIX_SHM)
		return code == INFERD_EBUSY ? "busy" : "other";
	return code == 503 ? "busy" : "other";
}

/* The server's side of the window: mean batch, and the padding where the server counts it. */
static void
mix_report_server_text(FILE *f, const struct mix_result *res)
{
	const struct mix_counters *c = &res->server;

	if (!res->have_server || c->v[MIX_EXECUTIONS] == 0) {
		fprintf(f, "server: mean batch not read (give --url)\n");
		return;
	}
	fprintf(f, "server: %llu inferences in %llu executions, mean batch %.3f\n",
	    (unsigned long long)c->v[MIX_INFERENCES], (unsigned long long)c->v[MIX_EXECUTIONS],
	    (double)c->v[MIX_INFERENCES] / (double)c->v[MIX_EXECUTIONS]);
	if (c->have[MIX_PADDED_BATCHES] && c->have[MIX_PAD_POSITIONS] && c->have[MIX_SEQ_POSITIONS])
		fprintf(f, "server: %llu padded batches, padding %.1f%% of %llu sequence positions\n",
		    (unsigned long long)c->v[MIX_PADDED_BATCHES], c->v[MIX_SEQ_POSITIONS] ?
		    100.0 * (double)c->v[MIX_PAD_POSITIONS] / (double)c->v[MIX_SEQ_POSITIONS] : 0.0,
		    (unsigned long long)c->v[MIX_SEQ_POSITIONS]);
}

/* The server's side as JSON: mean batch, and the padding counters the server has. */
static json_t *
mix_report_server_json(const struct mix_result *res)
{
	static const char *const keys[MIX_COUNTERS] = { "inferences", "executions", "padded_batches",
		"pad_positions", "sequence_positions" };
	const struct mix_counters *c = &res->server;
	json_t *o = json_object();
	int i;

	for (i = 0; i < MIX_COUNTERS; i++)
		if (c->have[i])
			json_object_set_new(o, keys[i], json_integer((json_int_t)c->v[i]));
	json_object_set_new(o, "mean_batch", json_real((double)c->v[MIX_INFERENCES] /
	    (double)c->v[MIX_EXECUTIONS]));
	return o;
}

/* Print the results for people. */
void
mix_report_text(FILE *f, const struct mix_run *r, const struct mix_result *res)
{
	const struct mix_settings *s = r->set;
	double secs = res->elapsed_s > 0 ? res->elapsed_s : 1;
	int i;

	fprintf(f, "model %s over %s, %d clients, lengths %d..%d, %.1f s measured%s%s\n", r->model.name,
	    s->protocol == MIX_SHM ? "shm" : "http-binary", s->concurrency, s->len_lo, s->len_hi,
	    res->elapsed_s, s->label ? ", " : "", s->label ? s->label : "");
	fprintf(f, "requests sent %llu, answered ok %llu, refused %llu (%llu outside the window)\n",
	    (unsigned long long)res->sent, (unsigned long long)res->ok,
	    (unsigned long long)(res->sent - res->ok), (unsigned long long)res->refused_outside);
	for (i = 0; i < res->refused.n; i++)
		fprintf(f, "  refused %s (%d): %llu\n", mix_kind_label(r, res->refused.code[i]),
		    res->refused.code[i], (unsigned long long)res->refused.count[i]);
	if (res->refused.other > 0)
		fprintf(f, "  refused, other kinds: %llu\n", (unsigned long long)res->refused.other);
	if (res->refused.first[0] != '\0')
		fprintf(f, "  first refusal: %s\n", res->refused.first);
	fprintf(f, "served rows/s %.1f, tokens/s %.0f\n", (double)res->ok / secs, (double)res->tokens / secs);
	fprintf(f, "latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n",
	    bench_hist_quantile(&res->hist, 0.50) / 1e6, bench_hist_quantile(&res->hist, 0.90) / 1e6,
	    bench_hist_quantile(&res->hist, 0.99) / 1e6, (double)res->hist.max_ns / 1e6);
	fprintf(f, "distinct lengths answered %d\n", res->distinct_lengths);
	mix_report_server_text(f, res);
	if (s->check)
		fprintf(f, "check: %d answers run again alone, worst difference %.3g of the output's max abs "
		    "(tolerance %g): %s\n", res->checked, res->worst_diff, s->tol,
		    res->check_mismatch == 0 && res->worst_diff <= s->tol ? "ok" : "FAILED");
}

/* The refusals as {"kinds": [{"code", "kind", "count"}], "other", "first"}. */
static json_t *
mix_report_refused(const struct mix_run *r, const struct mix_result *res)
{
	json_t *kinds = json_array(), *o;
	int i;

	for (i = 0; i < res->refused.n; i++)
		json_array_append_new(kinds, json_pack("{s:i, s:s, s:I}", "code", res->refused.code[i],
		    "kind", mix_kind_label(r, res->refused.code[i]), "count",
		    (json_int_t)res->refused.count[i]));
	o = json_pack("{s:o, s:I, s:I, s:s}", "kinds", kinds, "other", (json_int_t)res->refused.other,
	    "outside_window", (json_int_t)res->refused_outside, "first", res->refused.first);
	return o;
}

/* Print the results as one JSON object; -1 with *cause. */
int
mix_report_json(FILE *f, const struct mix_run *r, const struct mix_result *res, char **cause)
{
	const struct mix_settings *s = r->set;
	double secs = res->elapsed_s > 0 ? res->elapsed_s : 1;
	json_t *o;
	int rc;

	o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:f, s:I, s:I, s:I, s:o, s:f, s:f, s:{s:f, s:f, s:f, s:f}, s:i}",
	    "model", r->model.name, "protocol", s->protocol == MIX_SHM ? "shm" : "http-binary",
	    "concurrency", s->concurrency, "len_lo", s->len_lo, "len_hi", s->len_hi,
	    "elapsed_s", res->elapsed_s, "sent", (json_int_t)res->sent, "ok", (json_int_t)res->ok,
	    "failed", (json_int_t)(res->sent - res->ok), "refused", mix_report_refused(r, res),
	    "rows_per_s", (double)res->ok / secs, "tokens_per_s", (double)res->tokens / secs,
	    "latency_ms", "p50", bench_hist_quantile(&res->hist, 0.50) / 1e6,
	    "p90", bench_hist_quantile(&res->hist, 0.90) / 1e6,
	    "p99", bench_hist_quantile(&res->hist, 0.99) / 1e6, "max", (double)res->hist.max_ns / 1e6,
	    "distinct_lengths", res->distinct_lengths);
	if (o == NULL)
		return error_set(cause, "out of memory building the JSON report");
	if (s->label != NULL)
		json_object_set_new(o, "label", json_string(s->label));
	if (res->have_server && res->server.v[MIX_EXECUTIONS] > 0)
		json_object_set_new(o, "server", mix_report_server_json(res));
	if (s->check)
		json_object_set_new(o, "check", json_pack("{s:i, s:f, s:f, s:b}", "checked", res->checked,
		    "worst_diff", res->worst_diff, "tol", s->tol,
		    "ok", res->check_mismatch == 0 && res->worst_diff <= s->tol));
	rc = json_dumpf(o, f, JSON_COMPACT);
	json_decref(o);
	if (rc != 0 || fputc('\n', f) == EOF)
		return error_set(cause, "writing the JSON report failed");
	return 0;
}
