/*
 * bench.h: the benchmark tools' modules — latency histogram, argument parsers,
 * load workers, device limits, report.  inferd-bench (installed) uses the load
 * workers and reads device limits from a file; inferd-bench-engine (built, not
 * installed) links the daemon's core for the engine and limits measurements.
 */
#ifndef INFERD_BENCH_H
#define INFERD_BENCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "http_client.h"

/* ---- bench_hist.c: latencies in a log-linear histogram (under 0.8% error). ---- */

#define BENCH_HIST_SUB 64		/* buckets per power of two */
#define BENCH_HIST_BUCKETS (58 * BENCH_HIST_SUB + 2 * BENCH_HIST_SUB)

struct bench_hist {
	uint64_t count;
	uint64_t sum_ns, max_ns, min_ns;
	uint64_t b[BENCH_HIST_BUCKETS];
};

/* Empty the histogram. */
void bench_hist_init(struct bench_hist *h);
/* Count one latency. */
void bench_hist_add(struct bench_hist *h, uint64_t ns);
/* Add every count of src to dst. */
void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src);
/* The q-quantile (0 < q <= 1) in nanoseconds; 0 when empty. */
double bench_hist_quantile(const struct bench_hist *h, double q);

/* Monotonic time in nanoseconds. */
uint64_t bench_now_ns(void);

/* ---- bench_args.c: command-line values shared by both programs. ---- */

/* The program name usage errors start with ("inferd-bench" unless main sets it). */
extern const char *bench_prog;
/* Print "PROG: message (see --help)" and exit 2. */
__attribute__((format(printf, 1, 2), noreturn)) void bench_usage_error(const char *fmt, ...);
/* Parse an integer in [lo, hi], or exit 2 naming --name. */
long long bench_parse_int(const char *name, const char *s, long long lo, long long hi);
/* Parse seconds in [lo, hi], or exit 2 naming --name. */
double bench_parse_seconds(const char *name, const char *s, double lo, double hi);
/* Parse a byte count with an optional K, M or G suffix (1 to 16G), or exit 2. */
size_t bench_parse_bytes(const char *name, const char *s);

/* ---- the run: settings, the workers' shared state, and each worker's results. ---- */

enum bench_protocol {
	BENCH_SHM,
	BENCH_HTTP,
};

enum bench_phase {
	BENCH_PHASE_WARMUP = 0,
	BENCH_PHASE_MEASURE,
	BENCH_PHASE_STOP,
};

/* The model as the bench sees it: names and row sizes, from either protocol. */
struct bench_model {
	char name[128];
	char input_name[128], output_name[128];
	size_t input_elems, output_elems;	/* floats per row */
	char input_dims[128];			/* HTTP: ",d1,d2,..." the input's dims after the batch, as a request shapes it */
	int max_batch_size;			/* 0 when unknown (HTTP metadata has none) */
};

struct bench_settings {
	enum bench_protocol protocol;
	const char *socket_path;
	const char *url_text;
	struct httpc_url url;
	int have_url;
	const char *model_name;
	int concurrency;
	int rows;
	size_t input_bytes;			/* --input-bytes, 0 if not given */
	double duration_s;
	uint64_t requests;			/* --requests, 0: use duration */
	double warmup_s;
	int async_depth;
	int json;
	int limits;				/* inferd-bench-engine --limits */
	int futex;				/* inferd-bench-engine --futex */
	const char *limits_device;
	const char *limits_from;		/* inferd-bench --limits-from=FILE */
	int binary;				/* --binary: HTTP with binary tensors */
	const char *label;
	int target_given;			/* --protocol, --socket or --url */
	const char *engine_dir;			/* --engine=DIR: time the backend alone */
	const char *engine_device;		/* --device for --engine */
	int profile_reps;			/* --engine --profile[=REPS]: per-step profiles taken, 0 none */
};

/* ---- bench_engine.c: inferd-bench-engine --engine, the backend alone in this process. ---- */

/* Time model_exec_run on --device for --rows rows; returns the exit status. */
int bench_engine(const struct bench_settings *set);

/* What every worker shares. */
struct bench_run {
	const struct bench_settings *set;
	struct bench_model model;
	char *http_request;			/* prebuilt POST (HTTP only) */
	size_t http_request_len, http_body_len;
	size_t http_header_len;			/* --binary: the JSON header's length */
	int phase;				/* enum bench_phase, atomic */
	uint64_t tickets;			/* --requests left to claim, atomic */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready;				/* workers connected (or failed), under lock */
	int failed;				/* workers that stopped on an error, atomic */
};

struct bench_worker {
	pthread_t thread;
	struct bench_run *run;
	struct bench_hist hist;
	uint64_t requests;			/* measured and successful */
	uint64_t errors;			/* measured and refused by the server */
	uint64_t checked;			/* responses whose output was checked */
	uint64_t reconnects;
	char first_error[256];			/* the first refusal's message */
	char *fatal;				/* why the worker stopped early, or NULL */
};

/*
 * bench_run.c.  Before each request: 0 to go on, with *ticket set when it is
 * one of the --requests counted; -1 when the worker should stop.
 */
int bench_begin(struct bench_run *r, int *ticket);
/* After it: whether the request just completed counts in the results. */
int bench_counts(struct bench_run *r, int ticket);
/* Stop on an error: keep cause as the worker's reason. */
void bench_worker_fail(struct bench_worker *w, char *cause);
/* Tell the main thread this worker is connected (or has failed). */
void bench_worker_ready(struct bench_worker *w);
/* Note a refused request (status text and message). */
void bench_worker_refused(struct bench_worker *w, const char *what, const char *msg,
    size_t len);

/* bench_load_http.c: the HTTP worker thread and what it needs from the server. */
void *bench_http_worker(void *arg);
/* Fetch the model's metadata over HTTP; -1 with *cause. */
int bench_http_model(const struct httpc_url *u, const char *name,
    struct bench_model *m, char **cause);
/*
 * Build the POST for rows rows of random floats: a KServe JSON body, or
 * with --binary a JSON header and the raw floats, outputs asked in binary.
 */
int bench_http_prepare(struct bench_run *r, char **cause);
/* Read inferd_inference_count and inferd_execution_count of model from GET /metrics. */
int bench_metrics_read(const struct httpc_url *u, const char *model,
    uint64_t *inference, uint64_t *execution, char **cause);

/* bench_load_shm.c: the shared-memory worker thread, and metadata over shm. */
void *bench_shm_worker(void *arg);
int bench_shm_model(const char *socket_path, const char *name,
    struct bench_model *m, char **cause);

/* ---- bench_limits.c: what the device itself can do (CUDA builds). ---- */

struct bench_limits {
	char device[256];
	size_t copy_bytes;
	double pinned_h2d_gbps, pinned_d2h_gbps;
	double pageable_h2d_gbps;
	double registered_h2d_gbps;		/* a memfd mapping, device_host_register'ed */
	double mapped_h2d_gbps;			/* the same mapping read by the batched-copy kernel */
	double floor_p50_us, floor_p99_us;	/* 4 KiB in, tiny op, 4 KiB out, sync */
	double mapped_floor_p50_us, mapped_floor_p99_us;	/* the same, the copies by the batched-copy kernel */
	int copy_runs, floor_runs;
	double futex_p50_us, futex_p99_us;	/* a cross-process futex round trip (bench_futex.c) */
	int futex_runs;
};

/* Measure the limits on device spec with copies of copy_bytes; -1 with *cause. */
int bench_limits_measure(const char *spec, size_t copy_bytes, struct bench_limits *l,
    char **cause);

/* ---- bench_futex.c: a cross-process futex round trip (any build). ---- */

struct bench_futex {
	double p50_us, p99_us;
	int runs;
};

/* Round trips timed by default: enough for a stable median in well under a second. */
#define BENCH_FUTEX_RUNS 5000

/* Measure runs cross-process futex round trips: the median and p99 in *f; -1 with *cause. */
int bench_futex_rtt(int runs, struct bench_futex *f, char **cause);

/* ---- bench_report.c: the results, as text or one JSON object. ---- */

struct bench_result {
	double elapsed_s;			/* the measured interval */
	uint64_t requests, errors, checked, reconnects;
	struct bench_hist hist;			/* latencies of the successful requests */
	size_t input_bytes, output_bytes;	/* tensor bytes per request */
	char first_error[256];
	int have_server;			/* the server's counters were read */
	uint64_t d_inference, d_execution;
	int have_limits;
	struct bench_limits limits;
};

/* Print the results for people. */
void bench_report_text(FILE *f, const struct bench_run *r, const struct bench_result *res);
/* Print the results as one JSON object and a newline; -1 with *cause. */
int bench_report_json(FILE *f, const struct bench_run *r, const struct bench_result *res,
    char **cause);
/* Print the limits alone (inferd-bench-engine --limits). */
void bench_report_limits_text(FILE *f, const struct bench_limits *l);
/* Read the limits from the JSON inferd-bench-engine --limits --json wrote; -1 with *cause. */
int bench_report_limits_read(const char *path, struct bench_limits *l, char **cause);

#endif
