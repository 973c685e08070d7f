/* metrics.h: counters behind GET /metrics, updated lock-free from any thread. */
#ifndef INFERD_METRICS_H
#define INFERD_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "inferd_outcome.h"

/*
 * Why a request failed, indexing the failure counters: the CODE column of
 * inferd_outcome.h, so a batcher status is its own reason.  The OK slot
 * stays zero (successes have their own counter); LABEL names each reason.
 */
#define METRICS_REASON_ENUM(name, code, err, http, label, text, ctext) METRICS_REASON_##name = (code),
enum metrics_reason {
	INFERD_OUTCOME_MAP(METRICS_REASON_ENUM)
	METRICS_REASON_COUNT
};
#undef METRICS_REASON_ENUM

/* Batch sizes are counted in buckets whose upper bounds are these. */
#define METRICS_BATCH_BUCKETS 10
extern const int metrics_batch_bounds[METRICS_BATCH_BUCKETS];

/*
 * Distinct batch sizes counted apart per model (Triton's batch_stats): a
 * table whose slots are claimed by the first batch of a size.  Batches of
 * sizes beyond the table's room are counted in batch_other only.
 */
#define METRICS_BATCH_SIZES 128

/* One batch size's batches and their compute time. */
struct metrics_batch_size {
	uint32_t size;				/* 0: free slot; set once by compare-and-swap */
	uint64_t count;
	uint64_t compute_us;
};

/* Request latencies are counted in buckets whose upper bounds are these (microseconds). */
#define METRICS_LATENCY_BUCKETS 16
extern const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS];

/* Per-model counters; all are monotonic except where noted. */
struct metrics_model {
	char name[128];
	uint64_t success;			/* requests answered */
	uint64_t failure[METRICS_REASON_COUNT];
	uint64_t inference_count;		/* rows inferred */
	uint64_t execution_count;		/* batches executed */
	uint64_t inline_batches;		/* of those, launched by the submitting thread (no scheduler hop) */
	uint64_t inline_completions;		/* of those, completed by the submitting thread too (no completion hop) */
	uint64_t padded_batches;		/* batches of a model that pads holding a request shorter than the batch */
	uint64_t pad_positions;			/* positions of the padded dim added by padding, over rows */
	uint64_t seq_positions;			/* positions of the padded dim run, over rows (padding included) */
	uint64_t batch_hist[METRICS_BATCH_BUCKETS + 1];	/* last: +Inf */
	uint64_t queue_us;			/* sum over requests of submit → batch start */
	uint64_t compute_us;			/* sum over batches of compute time */
	uint64_t request_us;			/* sum over requests of submit → done */
	uint64_t last_inference_ms;		/* wall clock (ms since the epoch) of the last batch; not monotonic */
	struct metrics_batch_size batch_sizes[METRICS_BATCH_SIZES];
	uint64_t batch_other;			/* batches of sizes the table had no room for */
	uint64_t latency_hist[METRICS_LATENCY_BUCKETS + 1];	/* of those durations; last: +Inf */
};

/* Process-wide counters. */
struct metrics {
	uint64_t bytes_h2d, bytes_d2h;		/* copied by the pipeline */
	uint64_t staged_bytes;			/* copied through a staging buffer (HTTP) */
	uint64_t allocations_baseline;		/* device_allocation_count at start-up */
	int64_t shm_clients;			/* gauge */
	uint64_t shm_clients_refused;
	uint64_t shm_doorbells;			/* submission eventfd wake-ups the IPC thread handled */
	uint64_t shm_wakeups;			/* sleeping clients woken (futex or socket byte) */
	uint64_t http_requests;
	uint64_t http_errors;
	size_t nmodels;				/* published with release order; grows only */
	size_t capacity;
	pthread_mutex_t add_lock;		/* metrics_model_add */
	struct metrics_model *models;		/* capacity entries, never moved */
};

/* The most model names counted apart (loads and reloads reuse a name's counters). */
#define METRICS_MAX_MODELS 1024

/* Add v to a counter atomically. */
#define METRICS_ADD(field, v) __atomic_add_fetch(&(field), (v), __ATOMIC_RELAXED)

/* Make one metrics_model per name, with room for METRICS_MAX_MODELS; -1 on allocation failure. */
int metrics_init(struct metrics *m, const char *const *names, size_t n);
/*
 * The counters of model name, made when it has none (a model loaded at run
 * time); safe from any thread.  NULL when METRICS_MAX_MODELS names are used.
 */
struct metrics_model *metrics_model_add(struct metrics *m, const char *name);
void metrics_free(struct metrics *m);
/* The counters of model name, or NULL. */
struct metrics_model *metrics_find(struct metrics *m, const char *name);
/* A reason's label, as the status="..." of inferd_requests_total says it ("ok" for METRICS_REASON_OK). */
const char *metrics_reason_label(enum metrics_reason r);
/* Count one finished request that took us microseconds from submission (sum and histogram). */
void metrics_count_request(struct metrics_model *mm, uint64_t us);
/* Count one executed batch of rows rows (its size's slot, the time of day). */
void metrics_count_batch(struct metrics_model *mm, int rows, uint64_t compute_us);
/*
 * Render everything in Prometheus text format into a malloc'ed string;
 * allocations_now is the device's current allocation count, idle_plans the
 * cuDNN plan pool's size (-1: no pool, the gauge is left out).  NULL on
 * allocation failure.
 */
char *metrics_render(struct metrics *m, uint64_t allocations_now, long idle_plans);

#endif
