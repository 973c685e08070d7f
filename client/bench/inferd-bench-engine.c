/*
 * inferd-bench-engine.c: the measurements that need the daemon's own engine
 * in-process, kept out of the installed inferd-bench so that it links only
 * libinferd.  Built, not installed (the benchmark scripts run it from the
 * build tree):
 *   --engine=DIR  time the backend alone on the model in DIR, no daemon;
 *   --limits      (CUDA builds) the device's copy bandwidths and its
 *                 small-request floor; inferd-bench --limits-from reads the
 *                 JSON this prints and reports every figure as a ratio to it;
 *   --futex       (any build) a cross-process futex round trip, the price
 *                 of a wake-up on the shared-memory path.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench.h"
#include "cpu_kernels.h"

/* When --limits has no --input-bytes to size its copies by: the 64 MiB large tensor. */
#define BENCH_LIMITS_DEFAULT_BYTES ((size_t)64 << 20)
/* Profiles --profile takes without a count. */
#define BENCH_PROFILE_REPS 20

/* Print usage. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: inferd-bench-engine --engine=MODEL_DIR [--device=cpu|cuda:N] [--rows=R]\n"
	    "                    [--duration=S] [--warmup=S] [--profile[=REPS]] [--label=TEXT] [--json]\n"
	    "       inferd-bench-engine --limits [--limits-device=cuda:N] [--input-bytes=B] [--json]\n"
	    "       inferd-bench-engine --futex [--label=TEXT] [--json]\n"
	    "\n"
	    "  --engine=DIR       no daemon: time the backend alone on the model in DIR\n"
	    "                     (model.json + weights), --rows a batch, like PyTorch's\n"
	    "                     raw model time in client/bench/torch_peer.py\n"
	    "  --device=D         device for --engine: cpu (default) or cuda:N\n"
	    "  --rows=R           rows a batch (default 1)\n"
	    "  --duration=S       measure for S seconds (default 5)\n"
	    "  --warmup=S         unmeasured seconds first (default 1)\n"
	    "  --profile[=REPS]   --engine: then run the plan REPS times (default 20)\n"
	    "                     uncaptured, timing each step, and report the medians\n"
	    "                     by op and the slowest nodes beside the whole run\n"
	    "  --limits           CUDA builds: measure the device's copy bandwidths and the\n"
	    "                     small-request floor (for inferd-bench --limits-from)\n"
	    "  --limits-device=D  device for --limits (default cuda:0)\n"
	    "  --input-bytes=B    --limits: copies of B bytes (K, M, G suffixes; default 64M)\n"
	    "  --futex            a cross-process futex round trip: two processes ping-pong\n"
	    "                     on a shared word, each sleeping until the other's wake\n"
	    "                     (median and p99 of 5000; --limits includes it)\n"
	    "  --label=TEXT       carried into the report\n"
	    "  --json             print one JSON object instead of text\n"
	    "\n"
	    "Exit status: 0 ok, 1 a failure, 2 a usage error (or --limits without CUDA).\n");
}

/* Fill the settings from argv, or exit 2. */
static void
parse_args(int argc, char **argv, struct bench_settings *s)
{
	enum { O_ROWS = 256, O_INBYTES, O_DURATION, O_WARMUP, O_LIMITS, O_LIMDEV, O_LABEL,
	    O_JSON, O_ENGINE, O_DEVICE, O_FUTEX, O_PROFILE };
	static const struct option longopts[] = {
		{ "rows", required_argument, NULL, O_ROWS },
		{ "input-bytes", required_argument, NULL, O_INBYTES },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "limits", no_argument, NULL, O_LIMITS },
		{ "limits-device", required_argument, NULL, O_LIMDEV },
		{ "futex", no_argument, NULL, O_FUTEX },
		{ "label", required_argument, NULL, O_LABEL },
		{ "json", no_argument, NULL, O_JSON },
		{ "engine", required_argument, NULL, O_ENGINE },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "profile", optional_argument, NULL, O_PROFILE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_ROWS: s->rows = (int)bench_parse_int("rows", optarg, 1, 1 << 20); break;
		case O_INBYTES: s->input_bytes = bench_parse_bytes("input-bytes", optarg); break;
		case O_DURATION: s->duration_s = bench_parse_seconds("duration", optarg, 0.01, 86400); break;
		case O_WARMUP: s->warmup_s = bench_parse_seconds("warmup", optarg, 0, 3600); break;
		case O_LIMITS: s->limits = 1; break;
		case O_LIMDEV: s->limits_device = optarg; break;
		case O_FUTEX: s->futex = 1; break;
		case O_LABEL: s->label = optarg; break;
		case O_JSON: s->json = 1; break;
		case O_ENGINE: s->engine_dir = optarg; break;
		case O_DEVICE: s->engine_device = optarg; break;
		case O_PROFILE:
			s->profile_reps = optarg ? (int)bench_parse_int("profile", optarg, 1, 100000) : BENCH_PROFILE_REPS;
			break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("inferd-bench-engine (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if ((s->engine_dir != NULL) + (s->limits != 0) + (s->futex != 0) != 1)
		bench_usage_error("give one of --engine=DIR, --limits or --futex");
	if (s->engine_device == NULL)
		s->engine_device = "cpu";
	else if (s->engine_dir == NULL)
		bench_usage_error("--device is for --engine (--limits takes --limits-device)");
	if (s->profile_reps != 0 && s->engine_dir == NULL)
		bench_usage_error("--profile is for --engine");
	if (s->input_bytes != 0 && s->engine_dir != NULL)
		bench_usage_error("--input-bytes is for --limits (--engine takes --rows)");
}

/* --limits: print the device's limits alone; returns the exit status. */
static int
bench_limits_only(const struct bench_settings *s)
{
	struct bench_result *res = calloc(1, sizeof *res);
	char *cause = NULL;
	int rc = -1;

#ifndef HAVE_CUDA
	free(res);
	fprintf(stderr, "inferd-bench-engine: --limits needs a CUDA build (configure --with-cuda)\n");
	return 2;
#endif
	if (res == NULL) {
		fprintf(stderr, "inferd-bench-engine: out of memory\n");
		return 1;
	}
#ifdef HAVE_CUDA
	rc = bench_limits_measure(s->limits_device,
	    s->input_bytes ? s->input_bytes : BENCH_LIMITS_DEFAULT_BYTES, &res->limits, &cause);
#endif
	if (rc == 0 && s->json)
		rc = bench_report_json(stdout, NULL, res, &cause);
	else if (rc == 0)
		bench_report_limits_text(stdout, &res->limits);
	if (rc != 0) {
		fprintf(stderr, "inferd-bench-engine: %s\n", cause);
		free(cause);
	}
	free(res);
	return rc == 0 ? 0 : 1;
}

/* --futex: the cross-process futex round trip alone; returns the exit status. */
static int
bench_futex_only(const struct bench_settings *s)
{
	struct bench_futex f;
	char *cause = NULL;

	if (bench_futex_rtt(BENCH_FUTEX_RUNS, &f, &cause) != 0) {
		fprintf(stderr, "inferd-bench-engine: %s\n", cause);
		free(cause);
		return 1;
	}
	if (s->json) {
		json_t *o = json_pack("{s:s, s:s, s:f, s:f, s:i}", "label", s->label != NULL ? s->label :
		    "futex", "tool", "futex", "futex_rtt_p50_us", f.p50_us, "futex_rtt_p99_us", f.p99_us,
		    "futex_runs", f.runs);
		int bad = o == NULL || json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9)) != 0 ||
		    putchar('\n') == EOF;

		json_decref(o);
		if (bad) {
			fprintf(stderr, "inferd-bench-engine: writing the JSON report failed\n");
			return 1;
		}
	} else
		printf("futex round trip between processes: p50 %.1f us  p99 %.1f us  (%d runs)\n",
		    f.p50_us, f.p99_us, f.runs);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Parse the options; the engine alone, the limits alone, or the futex round trip. */
int
main(int argc, char **argv)
{
	struct bench_settings s = {
		.rows = 1,
		.duration_s = 5,
		.warmup_s = 1,
		.limits_device = "cuda:0",
	};
	char *cause = NULL;

	if (cpu_threads_bound_waits(argv, &cause) != 0) {
		fprintf(stderr, "inferd-bench-engine: warning: %s\n", cause);
		free(cause);
	}
	bench_prog = "inferd-bench-engine";
	parse_args(argc, argv, &s);
	if (s.engine_dir != NULL)
		return bench_engine(&s);
	if (s.futex)
		return bench_futex_only(&s);
	return bench_limits_only(&s);
}
