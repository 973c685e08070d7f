/*
 * bench_mix.h: inferd-bench-mix, mixed-length traffic to a transformer encoder —
 * each request one sequence of a length drawn per request — over HTTP (binary
 * tensors) or shared memory.  The model's tensors (bench_mix_model.c), the
 * request contents and answer comparison (bench_mix_data.c), the HTTP and shm
 * workers (bench_mix_http.c, bench_mix_shm.c), the server's counters
 * (bench_mix_metrics.c) and the report (bench_mix_report.c); inferd-bench-mix.c
 * drives the run.
 */
#ifndef INFERD_BENCH_MIX_H
#define INFERD_BENCH_MIX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

#define MIX_MAX_TENSORS 8
#define MIX_MAX_DIMS 8
/* Refusal kinds kept apart in the report (HTTP statuses or libinferd codes); more are "other". */
#define MIX_MAX_KINDS 16

enum mix_protocol {
	MIX_HTTP_BINARY,
	MIX_SHM,
};

/* One input or output: dims exclude the batch dim, -1 where a request gives it. */
struct mix_tensor {
	char name[128];
	char datatype[16];
	size_t elem_bytes;
	int ndims;
	int64_t dims[MIX_MAX_DIMS];
};

/* The model as the load generator sees it, from either protocol's metadata. */
struct mix_model {
	char name[128];
	int ninputs, noutputs;
	struct mix_tensor in[MIX_MAX_TENSORS], out[MIX_MAX_TENSORS];
};

struct mix_settings {
	enum mix_protocol protocol;
	const char *socket_path;
	const char *url_text;
	struct httpc_url url;
	int have_url;
	const char *model_name;
	int concurrency;
	double duration_s, warmup_s;
	int len_lo, len_hi;			/* --lengths=LO:HI */
	int64_t vocab;
	int check;				/* --check */
	int check_samples;			/* at most this many answers kept for --check */
	double tol;
	int json;
	const char *label;
	uint64_t seed;
};

/* One request's contents: everything is derived from its seed and length. */
struct mix_req {
	uint64_t seed;
	int len;
};

/* An answer kept for --check: the request and its outputs' bytes, as answered under load. */
struct mix_sample {
	struct mix_req req;
	size_t nbytes[MIX_MAX_TENSORS];
	unsigned char *bytes[MIX_MAX_TENSORS];
};

/* Refusals counted by kind: an HTTP status, or a libinferd code. */
struct mix_kinds {
	int code[MIX_MAX_KINDS];
	uint64_t count[MIX_MAX_KINDS];
	int n;
	uint64_t other;
	char first[256];			/* the first refusal's message */
};

/* The server's counters of the model: inferences, executions, padded batches, pad and sequence positions. */
#define MIX_COUNTERS 5
enum { MIX_INFERENCES, MIX_EXECUTIONS, MIX_PADDED_BATCHES, MIX_PAD_POSITIONS, MIX_SEQ_POSITIONS };
struct mix_counters {
	uint64_t v[MIX_COUNTERS];
	int have[MIX_COUNTERS];			/* the server exposes it */
};

struct mix_run;

/* One client thread: its connection, counts and samples. */
struct mix_worker {
	pthread_t thread;
	struct mix_run *run;
	int index;
	uint64_t rng;
	struct bench_hist hist;			/* latencies of answered requests, measured window */
	uint64_t sent, ok, tokens;		/* measured window */
	uint64_t refused_outside;		/* refusals in the warm-up or after the window */
	struct mix_kinds refused;		/* measured window */
	struct mix_sample *samples;
	int nsamples, max_samples;
	uint64_t answers;			/* answers seen, for sampling */
	unsigned char *seen;			/* lengths answered, [len_hi + 1] */
	char *fatal;				/* why the worker stopped early, or NULL */
};

/* What the workers share with the main thread. */
struct mix_run {
	const struct mix_settings *set;
	struct mix_model model;
	int phase;				/* enum bench_phase, atomic */
	int failed;				/* workers stopped on an error, atomic */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready;
};

/* The result of the measured window, added up over the workers. */
struct mix_result {
	double elapsed_s;
	uint64_t sent, ok, tokens, refused_outside;
	struct mix_kinds refused;
	struct bench_hist hist;
	int distinct_lengths;
	int have_server;
	struct mix_counters server;		/* deltas over the window; have[] where read both times */
	int checked;				/* --check: answers run again alone */
	double worst_diff;			/* the largest difference, relative to the output's max abs */
	int check_mismatch;			/* answers whose shape or bytes differ outright */
};

/* ---- bench_mix_model.c: the model's tensors from its metadata. ---- */

/* GET /v2/models/NAME; -1 with *cause. */
int mix_model_http(const struct httpc_url *u, const char *name, struct mix_model *m, char **cause);
/* The same through libinferd's model lookup; -1 with *cause. */
int mix_model_shm(const char *socket_path, const char *name, struct mix_model *m, char **cause);
/* Element count of tensor t at sequence length len (every variable dim len); 0 if malformed. */
size_t mix_tensor_elems(const struct mix_tensor *t, int len);

/* ---- bench_mix_data.c: request contents and answer comparison. ---- */

/* A fresh request: its seed and a length uniform in [lo, hi], from the worker's generator. */
struct mix_req mix_req_draw(uint64_t *rng, int lo, int hi);
/* Fill input t's buf (elems elements) for request q by t's name and datatype. */
void mix_input_fill(const struct mix_tensor *t, const struct mix_req *q, int index, int64_t vocab,
    void *buf, size_t elems);
/*
 * Compare output t's answer under load (a, an bytes) with its answer alone
 * (b, bn): the largest difference relative to b's largest magnitude in
 * *diff; -1 with *cause when sizes differ or a datatype is compared exactly and differs.
 */
int mix_output_compare(const struct mix_tensor *t, const unsigned char *a, size_t an,
    const unsigned char *b, size_t bn, double *diff, char **cause);
/* Compare sample s's outputs under load with bytes/nbytes (the same request alone) into res; -1 with *cause. */
int mix_sample_compare(const struct mix_model *m, const struct mix_sample *s,
    const unsigned char *const *bytes, const size_t *nbytes, struct mix_result *res, char **cause);
/* Keep a copy of an answer's outputs as worker w's next sample; 0 when not kept. */
int mix_sample_keep(struct mix_worker *w, const struct mix_req *q, const unsigned char *const *bytes,
    const size_t *nbytes, int n);
/* Count a refusal of kind code (HTTP status or libinferd code) with its message. */
void mix_kinds_add(struct mix_kinds *k, int code, const char *msg, size_t len);
/* Add src's counts to dst. */
void mix_kinds_merge(struct mix_kinds *dst, const struct mix_kinds *src);

/* ---- the workers: each runs requests back to back; --check replays one serially. ---- */

/* Whether an answer just received counts in the measured window. */
int mix_measuring(const struct mix_run *r);
/* Stop on an error: keep cause as the worker's reason. */
void mix_worker_fail(struct mix_worker *w, char *cause);
/* Tell the main thread this worker is connected (or has failed). */
void mix_worker_ready(struct mix_worker *w);
/* Note one answered request of length len that took ns (counts only while measuring). */
void mix_worker_answered(struct mix_worker *w, int len, uint64_t ns, int measured);

/* bench_mix_http.c */
void *mix_http_worker(void *arg);
/* Run the samples again one at a time on one connection, comparing; -1 with *cause. */
int mix_http_check(struct mix_run *r, struct mix_worker *w, int nw, struct mix_result *res,
    char **cause);

/* bench_mix_shm.c */
void *mix_shm_worker(void *arg);
int mix_shm_check(struct mix_run *r, struct mix_worker *w, int nw, struct mix_result *res,
    char **cause);

/* ---- bench_mix_metrics.c ---- */

/* Read model's counters from GET /metrics: the first two required, the rest where present; -1 with *cause. */
int mix_metrics_read(const struct httpc_url *u, const char *model, struct mix_counters *c, char **cause);

/* ---- bench_mix_report.c ---- */

/* Print the results for people. */
void mix_report_text(FILE *f, const struct mix_run *r, const struct mix_result *res);
/* Print the results as one JSON object; -1 with *cause. */
int mix_report_json(FILE *f, const struct mix_run *r, const struct mix_result *res, char **cause);

#endif
