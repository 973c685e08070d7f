/* bench_report.c: inferd-bench's results, for people or as one JSON object. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "bench.h"
#include "error.h"

/* The protocol's name in reports. */
static const char *
protocol_name(const struct bench_settings *s)
{
	if (s->protocol == BENCH_SHM)
		return "shm";
	return s->binary ? "http-binary" : "http";
}

/* Per-second rate of n over the interval. */
static double
rate(double n, const struct bench_result *res)
{
	return res->elapsed_s > 0 ? n / res->elapsed_s : 0;
}

/* Input tensor bytes per second, in GB/s (10^9). */
static double
ingest_gbps(const struct bench_result *res)
{
	return rate((double)res->requests * (double)res->input_bytes, res) / 1e9;
}

/* Input plus output tensor bytes per second, in GB/s. */
static double
total_gbps(const struct bench_result *res)
{
	return rate((double)res->requests * (double)(res->input_bytes + res->output_bytes),
	    res) / 1e9;
}

/* The server's mean batch size over the interval, 0 when unknown. */
static double
mean_batch(const struct bench_result *res)
{
	if (!res->have_server || res->d_execution == 0)
		return 0;
	return (double)res->d_inference / (double)res->d_execution;
}

/* Print the limits alone. */
void
bench_report_limits_text(FILE *f, const struct bench_limits *l)
{
	fprintf(f, "limits on %s, copies of %zu bytes (median of %d):\n", l->device,
	    l->copy_bytes, l->copy_runs);
	fprintf(f, "  pinned h2d        %8.2f GB/s\n", l->pinned_h2d_gbps);
	fprintf(f, "  pinned d2h        %8.2f GB/s\n", l->pinned_d2h_gbps);
	fprintf(f, "  pageable h2d      %8.2f GB/s\n", l->pageable_h2d_gbps);
	fprintf(f, "  registered memfd  %8.2f GB/s h2d\n", l->registered_h2d_gbps);
	fprintf(f, "  mapped kernel     %8.2f GB/s h2d (the batched-copy kernel reading the memfd)\n",
	    l->mapped_h2d_gbps);
	fprintf(f, "  floor (4 KiB in, op, 4 KiB out, sync) p50 %.1f us  p99 %.1f us  (%d runs)\n",
	    l->floor_p50_us, l->floor_p99_us, l->floor_runs);
	fprintf(f, "  mapped floor (gather kernel, op, scatter kernel, sync) p50 %.1f us  p99 %.1f us\n",
	    l->mapped_floor_p50_us, l->mapped_floor_p99_us);
	if (l->futex_runs > 0)
		fprintf(f, "  futex round trip between processes p50 %.1f us  p99 %.1f us  (%d runs)\n",
		    l->futex_p50_us, l->futex_p99_us, l->futex_runs);
}

/* The ratios of the run to the limits: each figure as a fraction of what the device allows. */
static void
report_ratios_text(FILE *f, const struct bench_result *res)
{
	const struct bench_limits *l = &res->limits;
	double p50 = bench_hist_quantile(&res->hist, 0.50) / 1e3;
	double p99 = bench_hist_quantile(&res->hist, 0.99) / 1e3;

	fprintf(f, "  vs limits         ingest %.3f x pinned h2d; registered/pinned %.3f;\n"
	    "                    p50 %.2f x floor p50; p99 %.2f x floor p50 (%.2f x floor p99)\n"
	    "                    p50 %.2f x mapped floor p50; p99 %.2f x mapped floor p50\n",
	    l->pinned_h2d_gbps > 0 ? ingest_gbps(res) / l->pinned_h2d_gbps : 0,
	    l->pinned_h2d_gbps > 0 ? l->registered_h2d_gbps / l->pinned_h2d_gbps : 0,
	    l->floor_p50_us > 0 ? p50 / l->floor_p50_us : 0,
	    l->floor_p50_us > 0 ? p99 / l->floor_p50_us : 0,
	    l->floor_p99_us > 0 ? p99 / l->floor_p99_us : 0,
	    l->mapped_floor_p50_us > 0 ? p50 / l->mapped_floor_p50_us : 0,
	    l->mapped_floor_p50_us > 0 ? p99 / l->mapped_floor_p50_us : 0);
}

/* Print the results for people. */
void
bench_report_text(FILE *f, const struct bench_run *r, const struct bench_result *res)
{
	const struct bench_settings *s = r->set;
	const struct bench_hist *h = &res->hist;

	fprintf(f, "inferd-bench: %s %s, model %s, %d connection%s x depth %d, %d row%s/request "
	    "(%zu B in, %zu B out%s), %.2f s measured\n",
	    protocol_name(s),
	    s->protocol == BENCH_SHM ? (s->socket_path ? s->socket_path : "(default socket)") : s->url_text,
	    r->model.name, s->concurrency, s->concurrency == 1 ? "" : "s", s->async_depth,
	    s->rows, s->rows == 1 ? "" : "s", res->input_bytes, res->output_bytes,
	    s->protocol == BENCH_SHM ? "" : s->binary ? ", binary tensors" : ", as JSON",
	    res->elapsed_s);
	if (s->label != NULL)
		fprintf(f, "  label             %s\n", s->label);
	fprintf(f, "  requests          %llu ok, %llu refused, %llu outputs checked\n",
	    (unsigned long long)res->requests, (unsigned long long)res->errors,
	    (unsigned long long)res->checked);
	fprintf(f, "  throughput        %.1f req/s, %.1f rows/s, %.3f GB/s (in+out tensors)\n",
	    rate((double)res->requests, res), rate((double)res->requests * s->rows, res),
	    total_gbps(res));
	fprintf(f, "  latency us        p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  mean %.1f\n",
	    bench_hist_quantile(h, 0.50) / 1e3, bench_hist_quantile(h, 0.90) / 1e3,
	    bench_hist_quantile(h, 0.99) / 1e3, (double)h->max_ns / 1e3,
	    h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0.0);
	if (res->have_server)
		fprintf(f, "  server batch      mean %.2f rows (%llu rows in %llu executions)\n",
		    mean_batch(res), (unsigned long long)res->d_inference,
		    (unsigned long long)res->d_execution);
	if (res->errors > 0)
		fprintf(f, "  first refusal     %s\n", res->first_error);
	if (res->have_limits) {
		bench_report_limits_text(f, &res->limits);
		report_ratios_text(f, res);
	}
}

/* The limits as a JSON object. */
static json_t *
limits_json(const struct bench_limits *l)
{
	return json_pack("{s:s, s:I, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:i}",
	    "device", l->device, "copy_bytes", (json_int_t)l->copy_bytes,
	    "copy_runs", l->copy_runs,
	    "pinned_h2d_gbps", l->pinned_h2d_gbps, "pinned_d2h_gbps", l->pinned_d2h_gbps,
	    "pageable_h2d_gbps", l->pageable_h2d_gbps,
	    "registered_h2d_gbps", l->registered_h2d_gbps, "mapped_h2d_gbps", l->mapped_h2d_gbps,
	    "floor_p50_us", l->floor_p50_us, "floor_p99_us", l->floor_p99_us,
	    "floor_runs", l->floor_runs,
	    "mapped_floor_p50_us", l->mapped_floor_p50_us, "mapped_floor_p99_us", l->mapped_floor_p99_us,
	    "futex_rtt_p50_us", l->futex_p50_us, "futex_rtt_p99_us", l->futex_p99_us, "futex_runs", l->futex_runs);
}

/* Each result as a ratio to its limit. */
static json_t *
ratios_json(const struct bench_result *res)
{
	const struct bench_limits *l = &res->limits;
	double p50 = bench_hist_quantile(&res->hist, 0.50) / 1e3;
	double p99 = bench_hist_quantile(&res->hist, 0.99) / 1e3;

	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
	    "ingest_over_pinned_h2d", l->pinned_h2d_gbps > 0 ? ingest_gbps(res) / l->pinned_h2d_gbps : 0,
	    "registered_over_pinned_h2d", l->pinned_h2d_gbps > 0 ? l->registered_h2d_gbps / l->pinned_h2d_gbps : 0,
	    "p50_over_floor_p50", l->floor_p50_us > 0 ? p50 / l->floor_p50_us : 0,
	    "p99_over_floor_p50", l->floor_p50_us > 0 ? p99 / l->floor_p50_us : 0,
	    "p99_over_floor_p99", l->floor_p99_us > 0 ? p99 / l->floor_p99_us : 0,
	    "p50_over_mapped_floor_p50", l->mapped_floor_p50_us > 0 ? p50 / l->mapped_floor_p50_us : 0,
	    "p99_over_mapped_floor_p50", l->mapped_floor_p50_us > 0 ? p99 / l->mapped_floor_p50_us : 0);
}

/* Latencies in microseconds. */
static json_t *
latency_json(const struct bench_hist *h)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}",
	    "p50", bench_hist_quantile(h, 0.50) / 1e3, "p90", bench_hist_quantile(h, 0.90) / 1e3,
	    "p99", bench_hist_quantile(h, 0.99) / 1e3, "max", (double)h->max_ns / 1e3,
	    "min", h->count ? (double)h->min_ns / 1e3 : 0.0,
	    "mean", h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0.0);
}

/* The server's counters over the interval, or null. */
static json_t *
server_json(const struct bench_result *res)
{
	if (!res->have_server)
		return json_null();
	return json_pack("{s:I, s:I, s:f}", "inference_count_delta", (json_int_t)res->d_inference,
	    "execution_count_delta", (json_int_t)res->d_execution, "mean_batch", mean_batch(res));
}

/* The settings of the run. */
static json_t *
settings_json(const struct bench_run *r, const struct bench_result *res)
{
	const struct bench_settings *s = r->set;

	return json_pack("{s:s, s:s?, s:s?, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:f, s:f, s:I}",
	    "protocol", protocol_name(s),
	    "socket", s->protocol == BENCH_SHM ? s->socket_path : NULL,
	    "url", s->have_url ? s->url_text : NULL,
	    "model", r->model.name, "concurrency", s->concurrency, "rows", s->rows,
	    "async_depth", s->async_depth,
	    "input_bytes_per_request", (json_int_t)res->input_bytes,
	    "output_bytes_per_request", (json_int_t)res->output_bytes,
	    "request_body_bytes", (json_int_t)(s->protocol == BENCH_HTTP ? r->http_body_len : 0),
	    "warmup_s", s->warmup_s, "duration_s", s->duration_s,
	    "requests_asked", (json_int_t)s->requests);
}

/* Add the results to the settings object. */
static int
results_json(json_t *o, const struct bench_run *r, const struct bench_result *res)
{
	int bad = 0;

	bad |= json_object_set_new(o, "label", r->set->label ? json_string(r->set->label) : json_null());
	bad |= json_object_set_new(o, "elapsed_s", json_real(res->elapsed_s));
	bad |= json_object_set_new(o, "requests", json_integer((json_int_t)res->requests));
	bad |= json_object_set_new(o, "errors", json_integer((json_int_t)res->errors));
	bad |= json_object_set_new(o, "first_error", res->errors ? json_string(res->first_error) : json_null());
	bad |= json_object_set_new(o, "checked", json_integer((json_int_t)res->checked));
	bad |= json_object_set_new(o, "reconnects", json_integer((json_int_t)res->reconnects));
	bad |= json_object_set_new(o, "requests_per_s", json_real(rate((double)res->requests, res)));
	bad |= json_object_set_new(o, "rows_per_s", json_real(rate((double)res->requests * r->set->rows, res)));
	bad |= json_object_set_new(o, "gb_per_s", json_real(total_gbps(res)));
	bad |= json_object_set_new(o, "ingest_gb_per_s", json_real(ingest_gbps(res)));
	bad |= json_object_set_new(o, "latency_us", latency_json(&res->hist));
	bad |= json_object_set_new(o, "server", server_json(res));
	bad |= json_object_set_new(o, "limits", res->have_limits ? limits_json(&res->limits) : json_null());
	bad |= json_object_set_new(o, "ratios", res->have_limits ? ratios_json(res) : json_null());
	return bad ? -1 : 0;
}

/* Print the results as one JSON object and a newline; -1 with *cause. */
int
bench_report_json(FILE *f, const struct bench_run *r, const struct bench_result *res,
    char **cause)
{
	json_t *o;
	int bad;

	if (r == NULL)		/* --limits alone */
		o = json_pack("{s:o}", "limits", limits_json(&res->limits));
	else if ((o = settings_json(r, res)) != NULL && results_json(o, r, res) != 0) {
		json_decref(o);
		o = NULL;
	}
	if (o == NULL)
		return error_set(cause, "out of memory building the JSON report");
	bad = json_dumpf(o, f, JSON_COMPACT | JSON_REAL_PRECISION(9)) != 0 || fputc('\n', f) == EOF;
	json_decref(o);
	if (bad)
		return error_set(cause, "writing the JSON report failed");
	return 0;
}

/* Read the limits from the JSON inferd-bench-engine --limits --json wrote; -1 with *cause. */
int
bench_report_limits_read(const char *path, struct bench_limits *l, char **cause)
{
	json_error_t jerr;
	json_int_t copy_bytes = 0;
	const char *device = NULL;
	json_t *root;
	int bad;

	memset(l, 0, sizeof *l);
	if ((root = json_load_file(path, 0, &jerr)) == NULL)
		return error_set(cause, "%s: %s (line %d)", path, jerr.text, jerr.line);
	/* The mapped and futex figures are optional: limits files written before they existed still read. */
	bad = json_unpack_ex(root, &jerr, 0,
	    "{s:{s:s, s:I, s:i, s:F, s:F, s:F, s:F, s:F, s:F, s:i, s?F, s?F, s?F, s?F, s?F, s?i}}",
	    "limits", "device", &device, "copy_bytes", &copy_bytes, "copy_runs", &l->copy_runs,
	    "pinned_h2d_gbps", &l->pinned_h2d_gbps, "pinned_d2h_gbps", &l->pinned_d2h_gbps,
	    "pageable_h2d_gbps", &l->pageable_h2d_gbps, "registered_h2d_gbps", &l->registered_h2d_gbps,
	    "floor_p50_us", &l->floor_p50_us, "floor_p99_us", &l->floor_p99_us,
	    "floor_runs", &l->floor_runs, "mapped_h2d_gbps", &l->mapped_h2d_gbps,
	    "mapped_floor_p50_us", &l->mapped_floor_p50_us, "mapped_floor_p99_us", &l->mapped_floor_p99_us,
	    "futex_rtt_p50_us", &l->futex_p50_us, "futex_rtt_p99_us", &l->futex_p99_us,
	    "futex_runs", &l->futex_runs) != 0;
	if (!bad && copy_bytes <= 0) {
		bad = 1;
		snprintf(jerr.text, sizeof jerr.text, "copy_bytes must be positive");
	}
	if (!bad) {
		snprintf(l->device, sizeof l->device, "%s", device);
		l->copy_bytes = (size_t)copy_bytes;
	}
	json_decref(root);
	if (bad)
		return error_set(cause, "%s: not a limits report: %s", path, jerr.text);
	return 0;
}
