/*
 * inferd-bench-mix.c: mixed-length traffic to a transformer encoder — N
 * clients, each sending one sequence at a time of a length drawn uniformly
 * per request, over HTTP (KServe binary tensors, keep-alive) or shared memory
 * (libinferd).  Reports requests, refusals by kind, served rows/s, latency
 * percentiles, the server's mean batch and the distinct lengths served; with
 * --check it runs a sample of the answers again alone afterwards and reports
 * the worst difference.  Written in C so that the load generator is not the
 * bottleneck; it links libinferd and jansson, never the daemon's core.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_mix.h"
#include "error.h"
#include "inferd.h"

/* Print usage. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: inferd-bench-mix [--protocol=http-binary|shm] [--url=http://HOST:PORT]\n"
	    "                        [--socket=PATH] [--model=NAME] [--concurrency=N]\n"
	    "                        [--duration=S] [--warmup=S] [--lengths=LO:HI] [--vocab=V]\n"
	    "                        [--check] [--check-samples=N] [--tol=T] [--seed=N]\n"
	    "                        [--label=TEXT] [--json]\n"
	    "\n"
	    "  --protocol=P       http-binary (KServe binary tensors to --url, the default) or\n"
	    "                     shm (libinferd over --socket)\n"
	    "  --url=URL          the daemon's HTTP address; with shm it is read for GET /metrics\n"
	    "  --socket=PATH      the daemon's shm_socket (default " INFERD_DEFAULT_SOCKET ")\n"
	    "  --model=NAME       the encoder (default bert); its inputs come from its metadata:\n"
	    "                     input_ids random below --vocab, attention_mask ones, other\n"
	    "                     integer inputs zeros, FP32 inputs random\n"
	    "  --concurrency=N    N client threads, each with its own connection (default 16)\n"
	    "  --duration=S       measure for S seconds (default 10)\n"
	    "  --warmup=S         unmeasured seconds first (default 2)\n"
	    "  --lengths=LO:HI    each request one sequence of a length uniform in LO..HI\n"
	    "                     (default 16:256), drawn afresh per request\n"
	    "  --vocab=V          token ids in 0..V-1 (default 1000)\n"
	    "  --check            keep the first answer and every 64th of each client, run them\n"
	    "                     again alone after the load and compare within --tol\n"
	    "  --check-samples=N  at most N answers kept in all (default 256)\n"
	    "  --tol=T            largest difference allowed, relative to the output's max\n"
	    "                     abs (default 1e-5)\n"
	    "  --seed=N           the requests' random seed (default 1)\n"
	    "  --label=TEXT       carried into the report\n"
	    "  --json             print one JSON object instead of text\n"
	    "\n"
	    "Exit status: 0 ok, 1 a failure, a refused request or a --check difference, 2 a usage error.\n");
}

/* Parse --lengths=LO:HI into s, or exit 2. */
static void
parse_lengths(const char *arg, struct mix_settings *s)
{
	char lo[32];
	const char *colon = strchr(arg, ':');

	if (colon == NULL || (size_t)(colon - arg) >= sizeof lo)
		bench_usage_error("--lengths must be LO:HI");
	memcpy(lo, arg, (size_t)(colon - arg));
	lo[colon - arg] = '\0';
	s->len_lo = (int)bench_parse_int("lengths", lo, 1, 1 << 20);
	s->len_hi = (int)bench_parse_int("lengths", colon + 1, 1, 1 << 20);
	if (s->len_hi < s->len_lo)
		bench_usage_error("--lengths=LO:HI needs LO <= HI");
}

/* Parse --tol, or exit 2. */
static double
parse_tol(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno != 0 || *arg == '\0' || *end != '\0' || !(v >= 0 && v <= 1))
		bench_usage_error("--tol must be a number from 0 to 1");
	return v;
}

/* Check the options that depend on each other, or exit 2. */
static void
check_args(struct mix_settings *s, const char *protocol)
{
	char *cause = NULL;

	if (protocol == NULL || strcmp(protocol, "http-binary") == 0)
		s->protocol = MIX_HTTP_BINARY;
	else if (strcmp(protocol, "shm") == 0)
		s->protocol = MIX_SHM;
	else
		bench_usage_error("--protocol must be http-binary or shm");
	if (s->url_text != NULL) {
		if (httpc_url_parse(s->url_text, &s->url, &cause) != 0)
			bench_usage_error("--url: %s", cause);
		s->have_url = 1;
	}
	if (s->protocol == MIX_HTTP_BINARY && !s->have_url)
		bench_usage_error("--protocol=http-binary needs --url");
	if (s->socket_path == NULL)
		s->socket_path = INFERD_DEFAULT_SOCKET;
}

/* Fill the settings from argv, or exit 2. */
static void
parse_args(int argc, char **argv, struct mix_settings *s)
{
	enum { O_PROTOCOL = 256, O_SOCKET, O_URL, O_MODEL, O_CONC, O_DURATION, O_WARMUP, O_LENGTHS,
	    O_VOCAB, O_CHECK, O_SAMPLES, O_TOL, O_SEED, O_LABEL, O_JSON };
	static const struct option longopts[] = {
		{ "protocol", required_argument, NULL, O_PROTOCOL },
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "url", required_argument, NULL, O_URL },
		{ "model", required_argument, NULL, O_MODEL },
		{ "concurrency", required_argument, NULL, O_CONC },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "lengths", required_argument, NULL, O_LENGTHS },
		{ "vocab", required_argument, NULL, O_VOCAB },
		{ "check", no_argument, NULL, O_CHECK },
		{ "check-samples", required_argument, NULL, O_SAMPLES },
		{ "tol", required_argument, NULL, O_TOL },
		{ "seed", required_argument, NULL, O_SEED },
		{ "label", required_argument, NULL, O_LABEL },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *protocol = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_PROTOCOL: protocol = optarg; break;
		case O_SOCKET: s->socket_path = optarg; break;
		case O_URL: s->url_text = optarg; break;
		case O_MODEL: s->model_name = optarg; break;
		case O_CONC: s->concurrency = (int)bench_parse_int("concurrency", optarg, 1, 4096); break;
		case O_DURATION: s->duration_s = bench_parse_seconds("duration", optarg, 0.01, 86400); break;
		case O_WARMUP: s->warmup_s = bench_parse_seconds("warmup", optarg, 0, 3600); break;
		case O_LENGTHS: parse_lengths(optarg, s); break;
		case O_VOCAB: s->vocab = bench_parse_int("vocab", optarg, 1, 1LL << 40); break;
		case O_CHECK: s->check = 1; break;
		case O_SAMPLES: s->check_samples = (int)bench_parse_int("check-samples", optarg, 1, 1 << 20); break;
		case O_TOL: s->tol = parse_tol(optarg); break;
		case O_SEED: s->seed = (uint64_t)bench_parse_int("seed", optarg, 0, 1LL << 62); break;
		case O_LABEL: s->label = optarg; break;
		case O_JSON: s->json = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	check_args(s, protocol);
}

/* Whether a worker has stopped on an error. */
static int
mix_failed(struct mix_run *r)
{
	return __atomic_load_n(&r->failed, __ATOMIC_ACQUIRE) > 0;
}

/* Sleep s seconds, waking early when a worker failed; -1 if one did. */
static int
mix_sleep(struct mix_run *r, double s)
{
	uint64_t end = bench_now_ns() + (uint64_t)(s * 1e9), now, step;
	struct timespec ts;

	while ((now = bench_now_ns()) < end) {
		if (mix_failed(r))
			return -1;
		step = end - now < 20000000u ? end - now : 20000000u;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)step;
		nanosleep(&ts, NULL);	/* EINTR only shortens one step */
	}
	return mix_failed(r) ? -1 : 0;
}

/* Read the server's counters when --url was given; a failure only drops them. */
static int
mix_server_counters(const struct mix_run *r, struct mix_counters *c)
{
	char *cause = NULL;

	if (!r->set->have_url)
		return -1;
	if (mix_metrics_read(&r->set->url, r->model.name, c, &cause) != 0) {
		fprintf(stderr, "inferd-bench-mix: no mean batch: %s\n", cause);
		free(cause);
		return -1;
	}
	return 0;
}

/* Give each worker its generator, histogram and sample space, then start it. */
static int
mix_start(struct mix_run *r, struct mix_worker *w, int *started, char **cause)
{
	void *(*fn)(void *) = r->set->protocol == MIX_SHM ? mix_shm_worker : mix_http_worker;
	int i, rc, quota = (r->set->check_samples + r->set->concurrency - 1) / r->set->concurrency;

	for (i = 0; i < r->set->concurrency; i++) {
		w[i].run = r;
		w[i].index = i;
		w[i].rng = (r->set->seed + 1) * 0x9e3779b97f4a7c15u + (uint64_t)i * 0xbf58476d1ce4e5b9u;
		w[i].rng = w[i].rng ? w[i].rng : 1;
		bench_hist_init(&w[i].hist);
		w[i].max_samples = r->set->check ? quota : 0;
		if ((w[i].seen = calloc((size_t)r->set->len_hi + 1, 1)) == NULL ||
		    (quota > 0 && (w[i].samples = calloc((size_t)quota, sizeof *w[i].samples)) == NULL))
			return error_set(cause, "out of memory for worker %d", i);
	}
	for (i = 0; i < r->set->concurrency; i++) {
		if ((rc = pthread_create(&w[i].thread, NULL, fn, &w[i])) != 0)
			return error_set(cause, "starting worker %d: %s", i, strerror(rc));
		(*started)++;
	}
	pthread_mutex_lock(&r->lock);
	while (r->ready < r->set->concurrency)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* Warm up, measure, stop; the server's counters around the measured window. */
static void
mix_phases(struct mix_run *r, struct mix_result *res)
{
	struct mix_counters c0, c1;
	uint64_t t0, t1;
	int have0, i;

	if (mix_failed(r) || mix_sleep(r, r->set->warmup_s) != 0)
		return;
	have0 = mix_server_counters(r, &c0) == 0;
	t0 = bench_now_ns();
	__atomic_store_n(&r->phase, BENCH_PHASE_MEASURE, __ATOMIC_RELEASE);
	mix_sleep(r, r->set->duration_s);
	__atomic_store_n(&r->phase, BENCH_PHASE_STOP, __ATOMIC_RELEASE);
	t1 = bench_now_ns();
	if (have0 && !mix_failed(r))
		res->have_server = mix_server_counters(r, &c1) == 0;
	res->elapsed_s = (double)(t1 - t0) / 1e9;
	for (i = 0; res->have_server && i < MIX_COUNTERS; i++) {
		res->server.have[i] = c0.have[i] && c1.have[i];
		res->server.v[i] = c1.v[i] - c0.v[i];
	}
}

/* Add up the workers' results; -1 with *cause (the first worker's failure). */
static int
mix_collect(struct mix_run *r, struct mix_worker *w, int n, struct mix_result *res, char **cause)
{
	int i, len, failed = -1;

	bench_hist_init(&res->hist);
	for (i = 0; i < n; i++) {
		bench_hist_merge(&res->hist, &w[i].hist);
		res->sent += w[i].sent;
		res->ok += w[i].ok;
		res->tokens += w[i].tokens;
		res->refused_outside += w[i].refused_outside;
		mix_kinds_merge(&res->refused, &w[i].refused);
		if (w[i].fatal != NULL && failed < 0)
			failed = i;
	}
	for (len = r->set->len_lo; len <= r->set->len_hi; len++)
		for (i = 0; i < n; i++)
			if (w[i].seen != NULL && w[i].seen[len]) {
				res->distinct_lengths++;
				break;
			}
	if (failed >= 0)
		return error_set(cause, "client %d: %s", failed, w[failed].fatal);
	return 0;
}

/* Free what the workers kept. */
static void
mix_workers_free(struct mix_worker *w, int n)
{
	int i, j, k;

	for (i = 0; i < n; i++) {
		for (j = 0; j < w[i].nsamples; j++)
			for (k = 0; k < MIX_MAX_TENSORS; k++)
				free(w[i].samples[j].bytes[k]);
		free(w[i].samples);
		free(w[i].seen);
		free(w[i].fatal);
	}
	free(w);
}

/* Run the load, then (--check) the samples alone; -1 with *cause. */
static int
mix_execute(struct mix_run *r, struct mix_result *res, char **cause)
{
	struct mix_worker *w;
	int started = 0, rc, i;

	if ((w = calloc((size_t)r->set->concurrency, sizeof *w)) == NULL)
		return error_set(cause, "out of memory for %d clients", r->set->concurrency);
	rc = mix_start(r, w, &started, cause);
	if (rc == 0)
		mix_phases(r, res);
	__atomic_store_n(&r->phase, BENCH_PHASE_STOP, __ATOMIC_RELEASE);
	for (i = 0; i < started; i++)
		pthread_join(w[i].thread, NULL);
	if (rc == 0)
		rc = mix_collect(r, w, started, res, cause);
	if (rc == 0 && r->set->check)
		rc = r->set->protocol == MIX_SHM ? mix_shm_check(r, w, started, res, cause) :
		    mix_http_check(r, w, started, res, cause);
	mix_workers_free(w, r->set->concurrency);
	return rc;
}

/* Everything after the arguments: returns the exit status. */
static int
mix_main(const struct mix_settings *s)
{
	struct mix_run r;
	struct mix_result *res;
	char *cause = NULL;
	int status = 1;

	memset(&r, 0, sizeof r);
	r.set = s;
	if ((res = calloc(1, sizeof *res)) == NULL || pthread_mutex_init(&r.lock, NULL) != 0 ||
	    pthread_cond_init(&r.cond, NULL) != 0) {
		fprintf(stderr, "inferd-bench-mix: out of memory\n");
		return 1;
	}
	if ((s->protocol == MIX_SHM ? mix_model_shm(s->socket_path, s->model_name, &r.model, &cause) :
	    mix_model_http(&s->url, s->model_name, &r.model, &cause)) != 0 ||
	    mix_execute(&r, res, &cause) != 0)
		goto out;
	if (s->json ? mix_report_json(stdout, &r, res, &cause) != 0 :
	    (mix_report_text(stdout, &r, res), 0))
		goto out;
	status = 0;
	if (res->sent != res->ok || res->refused_outside > 0) {
		fprintf(stderr, "inferd-bench-mix: %llu requests refused; first: %s\n",
		    (unsigned long long)(res->sent - res->ok + res->refused_outside), res->refused.first);
		status = 1;
	}
	if (res->ok == 0) {
		fprintf(stderr, "inferd-bench-mix: no request answered in the measured window\n");
		status = 1;
	}
	if (s->check && (res->check_mismatch > 0 || res->worst_diff > s->tol)) {
		fprintf(stderr, "inferd-bench-mix: answers under load differ from the same requests alone "
		    "by %.3g of the output's max abs (tolerance %g)\n", res->worst_diff, s->tol);
		status = 1;
	}
out:
	if (cause != NULL) {
		fprintf(stderr, "inferd-bench-mix: %s\n", cause);
		free(cause);
	}
	free(res);
	pthread_cond_destroy(&r.cond);
	pthread_mutex_destroy(&r.lock);
	return status;
}

/* Parse the options, then run. */
int
main(int argc, char **argv)
{
	struct mix_settings s = {
		.model_name = "bert",
		.concurrency = 16,
		.duration_s = 10,
		.warmup_s = 2,
		.len_lo = 16,
		.len_hi = 256,
		.vocab = 1000,
		.check_samples = 256,
		.tol = 1e-5,
		.seed = 1,
	};

	bench_prog = "inferd-bench-mix";
	parse_args(argc, argv, &s);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		fprintf(stderr, "inferd-bench-mix: ignoring SIGPIPE: %s\n", strerror(errno));
		return 1;
	}
	return mix_main(&s);
}
