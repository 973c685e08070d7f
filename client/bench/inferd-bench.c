/*
 * inferd-bench.c: latency and throughput of an inferd daemon, like Triton's
 * perf_analyzer — N connections over shared memory (libinferd) or HTTP/1.1
 * keep-alive, each sending requests back to back; reports requests/s,
 * rows/s, GB/s, latency percentiles and the server's mean batch size, and
 * with --limits-from the device's own limits (measured by the non-installed
 * inferd-bench-engine --limits), so that every figure is also a ratio to
 * what the hardware allows.  It links libinferd and jansson, never the
 * daemon's core.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "inferd.h"
#include "error.h"

/* Print usage. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: inferd-bench [--protocol=shm|http|http-binary] [--binary] [--socket=PATH]\n"
	    "                    [--url=http://HOST:PORT]\n"
	    "                    [--model=NAME] [--concurrency=N] [--rows=R | --input-bytes=B]\n"
	    "                    [--duration=SECONDS | --requests=N] [--warmup=SECONDS]\n"
	    "                    [--async-depth=D] [--limits-from=FILE] [--label=TEXT] [--json]\n"
	    "\n"
	    "  --protocol=P       shm (libinferd over --socket), http (KServe JSON to --url) or\n"
	    "                     http-binary (the same as http --binary); default: shm when\n"
	    "                     --socket is given, else http\n"
	    "  --binary           http: send the input as binary tensor data and ask for the\n"
	    "                     output so (KServe's binary tensor extension)\n"
	    "  --socket=PATH      the daemon's shm_socket (default " "/run/inferd/inferd.sock)\n"
	    "  --url=URL          the daemon's HTTP address; also read for GET /metrics with shm\n"
	    "  --model=NAME       model to load (default fashion-mlp); its row width comes from\n"
	    "                     the model's metadata\n"
	    "  --concurrency=N    N threads, each with its own connection (default 1)\n"
	    "  --rows=R           rows per request (default 1)\n"
	    "  --input-bytes=B    rows enough for B input bytes per request (K, M, G suffixes)\n"
	    "  --duration=S       measure for S seconds (default 5)\n"
	    "  --requests=N       measure N requests instead\n"
	    "  --warmup=S         unmeasured seconds first (default 1)\n"
	    "  --async-depth=D    shm: D requests outstanding per connection (default 1)\n"
	    "  --limits-from=FILE the device's limits, as inferd-bench-engine --limits --json\n"
	    "                     wrote them: report each result as a ratio to its limit\n"
	    "  --label=TEXT       carried into the report\n"
	    "  --json             print one JSON object instead of text\n"
	    "\n"
	    "The backend alone (--engine) and the device's limits (--limits) are measured by\n"
	    "inferd-bench-engine, built beside this program, which links the daemon's core.\n"
	    "\n"
	    "Exit status: 0 ok, 1 a failure or refused requests, 2 a usage error.\n");
}

/* Fill the settings from argv, or exit 2. */
static void
parse_args(int argc, char **argv, struct bench_settings *s)
{
	enum { O_PROTOCOL = 256, O_SOCKET, O_URL, O_MODEL, O_CONC, O_ROWS, O_INBYTES,
	    O_DURATION, O_REQUESTS, O_WARMUP, O_DEPTH, O_LIMFROM, O_LABEL, O_JSON, O_BINARY };
	static const struct option longopts[] = {
		{ "protocol", required_argument, NULL, O_PROTOCOL },
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "url", required_argument, NULL, O_URL },
		{ "model", required_argument, NULL, O_MODEL },
		{ "concurrency", required_argument, NULL, O_CONC },
		{ "rows", required_argument, NULL, O_ROWS },
		{ "input-bytes", required_argument, NULL, O_INBYTES },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "requests", required_argument, NULL, O_REQUESTS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "async-depth", required_argument, NULL, O_DEPTH },
		{ "limits-from", required_argument, NULL, O_LIMFROM },
		{ "label", required_argument, NULL, O_LABEL },
		{ "json", no_argument, NULL, O_JSON },
		{ "binary", no_argument, NULL, O_BINARY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *protocol = NULL;
	char *cause = NULL;
	int c, rows_given = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_PROTOCOL: protocol = optarg; break;
		case O_SOCKET: s->socket_path = optarg; break;
		case O_URL: s->url_text = optarg; break;
		case O_MODEL: s->model_name = optarg; break;
		case O_CONC: s->concurrency = (int)bench_parse_int("concurrency", optarg, 1, 4096); break;
		case O_ROWS: s->rows = (int)bench_parse_int("rows", optarg, 1, 1 << 20); rows_given = 1; break;
		case O_INBYTES: s->input_bytes = bench_parse_bytes("input-bytes", optarg); break;
		case O_DURATION: s->duration_s = bench_parse_seconds("duration", optarg, 0.01, 86400); break;
		case O_REQUESTS: s->requests = (uint64_t)bench_parse_int("requests", optarg, 1, 1LL << 40); break;
		case O_WARMUP: s->warmup_s = bench_parse_seconds("warmup", optarg, 0, 3600); break;
		case O_DEPTH: s->async_depth = (int)bench_parse_int("async-depth", optarg, 1, 2048); break;
		case O_LIMFROM: s->limits_from = optarg; break;
		case O_LABEL: s->label = optarg; break;
		case O_JSON: s->json = 1; break;
		case O_BINARY: s->binary = 1; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("inferd-bench (%s) %s\nlibinferd %s\n", PACKAGE_NAME, PACKAGE_VERSION,
		    inferd_version()); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	s->target_given = protocol != NULL || s->socket_path != NULL || s->url_text != NULL;
	if (optind != argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (rows_given && s->input_bytes != 0)
		bench_usage_error("give --rows or --input-bytes, not both");
	if (protocol == NULL)
		s->protocol = s->socket_path != NULL || s->url_text == NULL ? BENCH_SHM : BENCH_HTTP;
	else if (strcmp(protocol, "shm") == 0)
		s->protocol = BENCH_SHM;
	else if (strcmp(protocol, "http") == 0)
		s->protocol = BENCH_HTTP;
	else if (strcmp(protocol, "http-binary") == 0) {
		s->protocol = BENCH_HTTP;
		s->binary = 1;
	} else
		bench_usage_error("--protocol must be shm, http or http-binary");
	if (s->url_text != NULL) {
		if (httpc_url_parse(s->url_text, &s->url, &cause) != 0)
			bench_usage_error("--url: %s", cause);
		s->have_url = 1;
	}
	if (s->protocol == BENCH_HTTP && !s->have_url)
		bench_usage_error("--protocol=http needs --url");
	if (s->binary && s->protocol != BENCH_HTTP)
		bench_usage_error("--binary is for --protocol=http");
	if (s->protocol == BENCH_HTTP && s->async_depth != 1)
		bench_usage_error("--async-depth is for --protocol=shm (one HTTP request per connection at a time)");
}

/* Whether a worker has stopped on an error. */
static int
bench_failed(struct bench_run *r)
{
	return __atomic_load_n(&r->failed, __ATOMIC_ACQUIRE) > 0;
}

/* Sleep s seconds, waking early when a worker failed; -1 if one did. */
static int
bench_sleep(struct bench_run *r, double s)
{
	uint64_t end = bench_now_ns() + (uint64_t)(s * 1e9), now;
	struct timespec ts;
	uint64_t step;

	while ((now = bench_now_ns()) < end) {
		if (bench_failed(r))
			return -1;
		step = end - now < 20000000u ? end - now : 20000000u;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)step;
		nanosleep(&ts, NULL);	/* EINTR only shortens one step */
	}
	return bench_failed(r) ? -1 : 0;
}

/* Start the workers and wait until every one is connected or failed. */
static int
bench_start(struct bench_run *r, struct bench_worker *w, int *started, char **cause)
{
	void *(*fn)(void *) = r->set->protocol == BENCH_SHM ? bench_shm_worker : bench_http_worker;
	int i, rc;

	for (i = 0; i < r->set->concurrency; i++) {
		w[i].run = r;
		bench_hist_init(&w[i].hist);
		if ((rc = pthread_create(&w[i].thread, NULL, fn, &w[i])) != 0) {
			__atomic_store_n(&r->phase, BENCH_PHASE_STOP, __ATOMIC_RELEASE);
			return error_set(cause, "starting worker %d: %s", i, strerror(rc));
		}
		(*started)++;
	}
	pthread_mutex_lock(&r->lock);
	while (r->ready < r->set->concurrency)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* Read the server's counters when --url was given; a failure only drops them. */
static int
bench_server_counters(const struct bench_run *r, uint64_t *inf, uint64_t *exec)
{
	char *cause = NULL;

	if (!r->set->have_url)
		return -1;
	if (bench_metrics_read(&r->set->url, r->model.name, inf, exec, &cause) != 0) {
		fprintf(stderr, "inferd-bench: no mean batch size: %s\n", cause);
		free(cause);
		return -1;
	}
	return 0;
}

/* Warm up, measure, stop: the phases every worker follows. */
static void
bench_phases(struct bench_run *r, struct bench_worker *w, int started,
    struct bench_result *res)
{
	uint64_t inf0 = 0, exec0 = 0, inf1 = 0, exec1 = 0, t0, t1;
	int ok = 1, have0 = 0, i;

	if (bench_failed(r) || bench_sleep(r, r->set->warmup_s) != 0)
		ok = 0;
	if (ok)
		have0 = bench_server_counters(r, &inf0, &exec0) == 0;
	t0 = bench_now_ns();
	__atomic_store_n(&r->phase, BENCH_PHASE_MEASURE, __ATOMIC_RELEASE);
	if (ok && r->set->requests == 0)
		bench_sleep(r, r->set->duration_s);
	if (r->set->requests == 0 || !ok)
		__atomic_store_n(&r->phase, BENCH_PHASE_STOP, __ATOMIC_RELEASE);
	t1 = bench_now_ns();
	/* After a failure the run is not reported, so the server is not asked. */
	if (r->set->requests == 0 && have0 && !bench_failed(r))
		res->have_server = bench_server_counters(r, &inf1, &exec1) == 0;
	for (i = 0; i < started; i++)
		pthread_join(w[i].thread, NULL);
	if (r->set->requests != 0) {
		t1 = bench_now_ns();
		if (have0 && !bench_failed(r))
			res->have_server = bench_server_counters(r, &inf1, &exec1) == 0;
	}
	res->elapsed_s = (double)(t1 - t0) / 1e9;
	res->d_inference = inf1 - inf0;
	res->d_execution = exec1 - exec0;
}

/* Add up the workers' results; -1 with *cause (the first worker's failure). */
static int
bench_collect(struct bench_worker *w, int n, struct bench_result *res, char **cause)
{
	int i, failed = -1;

	bench_hist_init(&res->hist);
	for (i = 0; i < n; i++) {
		bench_hist_merge(&res->hist, &w[i].hist);
		res->requests += w[i].requests;
		res->errors += w[i].errors;
		res->checked += w[i].checked;
		res->reconnects += w[i].reconnects;
		if (res->first_error[0] == '\0' && w[i].first_error[0] != '\0')
			memcpy(res->first_error, w[i].first_error, sizeof res->first_error);
		if (w[i].fatal != NULL && failed < 0)
			failed = i;
	}
	if (failed >= 0) {
		error_set(cause, "connection %d: %s", failed, w[failed].fatal);
		for (i = 0; i < n; i++)
			free(w[i].fatal);
		return -1;
	}
	return 0;
}

/* Run the load: start, warm up, measure, collect. */
static int
bench_execute(struct bench_run *r, struct bench_result *res, char **cause)
{
	struct bench_worker *w;
	int started = 0, rc;

	if ((w = calloc((size_t)r->set->concurrency, sizeof *w)) == NULL)
		return error_set(cause, "out of memory for %d workers", r->set->concurrency);
	r->tickets = r->set->requests;
	rc = bench_start(r, w, &started, cause);
	if (rc == 0)
		bench_phases(r, w, started, res);
	else	/* bench_start has told the started workers to stop */
		for (int i = 0; i < started; i++)
			pthread_join(w[i].thread, NULL);
	if (bench_collect(w, started, res, rc == 0 ? cause : NULL) != 0)
		rc = -1;
	free(w);
	return rc;
}

/* Model metadata over the chosen protocol, then rows from --input-bytes. */
static int
bench_resolve_model(struct bench_run *r, struct bench_settings *s, char **cause)
{
	size_t row;

	if (s->protocol == BENCH_SHM) {
		if (bench_shm_model(s->socket_path, s->model_name, &r->model, cause) != 0)
			return -1;
	} else if (bench_http_model(&s->url, s->model_name, &r->model, cause) != 0)
		return -1;
	row = r->model.input_elems * sizeof(float);
	if (s->input_bytes != 0) {
		if (s->input_bytes / row > (size_t)(1 << 20))
			return error_set(cause, "--input-bytes=%zu needs too many rows", s->input_bytes);
		s->rows = (int)((s->input_bytes + row - 1) / row);
	}
	if (r->model.max_batch_size > 0 && s->rows > r->model.max_batch_size)
		return error_set(cause, "%d rows of %zu bytes per request, but model %s takes at most %d "
		    "(for a larger tensor use a model with wider rows)", s->rows, row, r->model.name,
		    r->model.max_batch_size);
	return 0;
}

/* Everything after the arguments: returns the exit status. */
static int
bench_main(struct bench_settings *s)
{
	struct bench_run r;
	struct bench_result *res;
	char *cause = NULL;
	int status = 1;

	memset(&r, 0, sizeof r);
	r.set = s;
	if ((res = calloc(1, sizeof *res)) == NULL ||
	    pthread_mutex_init(&r.lock, NULL) != 0 || pthread_cond_init(&r.cond, NULL) != 0) {
		fprintf(stderr, "inferd-bench: out of memory\n");
		return 1;
	}
	if (bench_resolve_model(&r, s, &cause) != 0)
		goto out;
	res->input_bytes = (size_t)s->rows * r.model.input_elems * sizeof(float);
	res->output_bytes = (size_t)s->rows * r.model.output_elems * sizeof(float);
	if (s->limits_from != NULL) {
		if (bench_report_limits_read(s->limits_from, &res->limits, &cause) != 0)
			goto out;
		res->have_limits = 1;
	}
	if (s->protocol == BENCH_HTTP && bench_http_prepare(&r, &cause) != 0)
		goto out;
	if (bench_execute(&r, res, &cause) != 0)
		goto out;
	if (s->json ? bench_report_json(stdout, &r, res, &cause) != 0 :
	    (bench_report_text(stdout, &r, res), 0))
		goto out;
	status = 0;
	if (res->errors > 0) {
		fprintf(stderr, "inferd-bench: %llu request%s refused; first: %s\n",
		    (unsigned long long)res->errors, res->errors == 1 ? " was" : "s were",
		    res->first_error);
		status = 1;
	} else if (res->requests == 0) {
		fprintf(stderr, "inferd-bench: no request completed in the measured interval\n");
		status = 1;
	}
out:
	if (cause != NULL) {
		fprintf(stderr, "inferd-bench: %s\n", cause);
		free(cause);
	}
	free(r.http_request);
	free(res);
	pthread_cond_destroy(&r.cond);
	pthread_mutex_destroy(&r.lock);
	return status;
}

/* Parse the options, then run. */
int
main(int argc, char **argv)
{
	struct bench_settings s = {
		.model_name = "fashion-mlp",
		.concurrency = 1,
		.rows = 1,
		.duration_s = 5,
		.warmup_s = 1,
		.async_depth = 1,
	};

	bench_prog = "inferd-bench";
	parse_args(argc, argv, &s);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		fprintf(stderr, "inferd-bench: ignoring SIGPIPE: %s\n", strerror(errno));
		return 1;
	}
	return bench_main(&s);
}
