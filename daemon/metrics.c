/* metrics.c: Prometheus text exposition of the counters. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "metrics.h"
#include "text_buf.h"

const int metrics_batch_bounds[METRICS_BATCH_BUCKETS] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };

#define METRICS_REASON_LABEL(name, code, err, http, label, text, ctext) [code] = label,
static const char *const metrics_reason_names[METRICS_REASON_COUNT] = {
	INFERD_OUTCOME_MAP(METRICS_REASON_LABEL)
};
#undef METRICS_REASON_LABEL

/* Make the per-model counters. */
int
metrics_init(struct metrics *m, const char *const *names, size_t n)
{
	size_t i;

	memset(m, 0, sizeof *m);
	m->capacity = n > METRICS_MAX_MODELS ? n : METRICS_MAX_MODELS;
	m->models = xcalloc(m->capacity, sizeof *m->models);
	if (m->models == NULL || pthread_mutex_init(&m->add_lock, NULL) != 0) {
		free(m->models);
		m->models = NULL;
		return -1;
	}
	m->nmodels = n;
	for (i = 0; i < n; i++)
		snprintf(m->models[i].name, sizeof m->models[i].name, "%s", names[i]);
	return 0;
}

/* Free the per-model counters. */
void
metrics_free(struct metrics *m)
{
	if (m->models != NULL)
		pthread_mutex_destroy(&m->add_lock);
	free(m->models);
	m->models = NULL;
	m->nmodels = 0;
}

/* How many models have counters (entries below it are fully written). */
static size_t
metrics_count_models(struct metrics *m)
{
	return __atomic_load_n(&m->nmodels, __ATOMIC_ACQUIRE);
}

/* Find a model's counters. */
struct metrics_model *
metrics_find(struct metrics *m, const char *name)
{
	size_t i;

	for (i = 0; i < metrics_count_models(m); i++)
		if (strcmp(m->models[i].name, name) == 0)
			return &m->models[i];
	return NULL;
}

/* Find a model's counters, or make them. */
struct metrics_model *
metrics_model_add(struct metrics *m, const char *name)
{
	struct metrics_model *mm;

	pthread_mutex_lock(&m->add_lock);
	if ((mm = metrics_find(m, name)) == NULL && m->nmodels < m->capacity) {
		mm = &m->models[m->nmodels];
		snprintf(mm->name, sizeof mm->name, "%s", name);
		__atomic_store_n(&m->nmodels, m->nmodels + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&m->add_lock);
	return mm;
}

/* 100 µs to 30 s, about three buckets a decade: inference spans a CPU MLP's sub-millisecond to a queued LLM's seconds. */
const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 10000000, 30000000,
};

/* A reason's label. */
const char *
metrics_reason_label(enum metrics_reason r)
{
	return r >= 0 && r < METRICS_REASON_COUNT ? metrics_reason_names[r] : "unknown";
}

/* Count one finished request: its duration into the sum and its histogram bucket. */
void
metrics_count_request(struct metrics_model *mm, uint64_t us)
{
	int b = 0;

	while (b < METRICS_LATENCY_BUCKETS && us > metrics_latency_bounds_us[b])
		b++;
	METRICS_ADD(mm->request_us, us);
	METRICS_ADD(mm->latency_hist[b], 1);
}

/* The slot of batch size rows, claimed when new; NULL when the table is full. */
static struct metrics_batch_size *
metrics_batch_slot(struct metrics_model *mm, uint32_t rows)
{
	struct metrics_batch_size *s;
	uint32_t seen;
	size_t i, start = rows % METRICS_BATCH_SIZES;

	for (i = 0; i < METRICS_BATCH_SIZES; i++) {
		s = &mm->batch_sizes[(start + i) % METRICS_BATCH_SIZES];
		seen = __atomic_load_n(&s->size, __ATOMIC_ACQUIRE);
		if (seen == 0) {
			seen = 0;
			if (__atomic_compare_exchange_n(&s->size, &seen, rows, 0, __ATOMIC_ACQ_REL,
			    __ATOMIC_ACQUIRE))
				return s;
		}
		if (seen == rows)
			return s;
	}
	return NULL;
}

/* Count one batch: execution, rows, histogram bucket, its size's slot, compute time, time of day. */
void
metrics_count_batch(struct metrics_model *mm, int rows, uint64_t compute_us)
{
	struct metrics_batch_size *slot;
	struct timespec now;
	int b = 0;

	while (b < METRICS_BATCH_BUCKETS && rows > metrics_batch_bounds[b])
		b++;
	METRICS_ADD(mm->execution_count, 1);
	METRICS_ADD(mm->inference_count, (uint64_t)rows);
	METRICS_ADD(mm->batch_hist[b], 1);
	METRICS_ADD(mm->compute_us, compute_us);
	if (rows > 0 && (slot = metrics_batch_slot(mm, (uint32_t)rows)) != NULL) {
		METRICS_ADD(slot->count, 1);
		METRICS_ADD(slot->compute_us, compute_us);
	} else {
		METRICS_ADD(mm->batch_other, 1);
	}
	/* CLOCK_REALTIME cannot fail with a valid clock id and pointer; a failure leaves the last time. */
	if (clock_gettime(CLOCK_REALTIME, &now) == 0)
		__atomic_store_n(&mm->last_inference_ms,
		    (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u, __ATOMIC_RELAXED);
}

/* Read a counter atomically. */
static uint64_t
metrics_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* One counter family with a model label. */
static void
metrics_render_per_model(struct text_buf *b, struct metrics *m,
    const char *name, const char *help, size_t offset)
{
	size_t i;

	text_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (i = 0; i < metrics_count_models(m); i++) {
		const uint64_t *v = (const uint64_t *)((const char *)&m->models[i] + offset);
		text_buf_printf(b, "%s{model=\"%s\"} %llu\n", name, m->models[i].name,
		    (unsigned long long)metrics_load(v));
	}
}

/* Requests by model and outcome. */
static void
metrics_render_requests(struct text_buf *b, struct metrics *m)
{
	size_t i;
	int r;

	text_buf_printf(b, "# HELP inferd_requests_total Inference requests by model and outcome.\n"
	    "# TYPE inferd_requests_total counter\n");
	for (i = 0; i < metrics_count_models(m); i++) {
		struct metrics_model *mm = &m->models[i];
		text_buf_printf(b, "inferd_requests_total{model=\"%s\",status=\"%s\"} %llu\n",
		    mm->name, metrics_reason_names[METRICS_REASON_OK],
		    (unsigned long long)metrics_load(&mm->success));
		for (r = METRICS_REASON_OK + 1; r < METRICS_REASON_COUNT; r++)
			text_buf_printf(b, "inferd_requests_total{model=\"%s\",status=\"%s\"} %llu\n",
			    mm->name, metrics_reason_names[r], (unsigned long long)metrics_load(&mm->failure[r]));
	}
}

/* The batch-size histogram of each model. */
static void
metrics_render_histogram(struct text_buf *b, struct metrics *m)
{
	size_t i;
	int k;

	text_buf_printf(b, "# HELP inferd_batch_size Rows per executed batch.\n# TYPE inferd_batch_size histogram\n");
	for (i = 0; i < metrics_count_models(m); i++) {
		struct metrics_model *mm = &m->models[i];
		uint64_t cum = 0;
		for (k = 0; k <= METRICS_BATCH_BUCKETS; k++) {
			cum += metrics_load(&mm->batch_hist[k]);
			if (k < METRICS_BATCH_BUCKETS)
				text_buf_printf(b, "inferd_batch_size_bucket{model=\"%s\",le=\"%d\"} %llu\n",
				    mm->name, metrics_batch_bounds[k], (unsigned long long)cum);
			else
				text_buf_printf(b, "inferd_batch_size_bucket{model=\"%s\",le=\"+Inf\"} %llu\n",
				    mm->name, (unsigned long long)cum);
		}
		text_buf_printf(b, "inferd_batch_size_sum{model=\"%s\"} %llu\ninferd_batch_size_count{model=\"%s\"} %llu\n",
		    mm->name, (unsigned long long)metrics_load(&mm->inference_count),
		    mm->name, (unsigned long long)metrics_load(&mm->execution_count));
	}
}

/* The request latency histogram of each model, in seconds as Prometheus names durations. */
static void
metrics_render_latency(struct text_buf *b, struct metrics *m)
{
	uint64_t cum;
	size_t i;
	int k;

	text_buf_printf(b, "# HELP inferd_request_duration_seconds Seconds from submission to completion per request "
	    "(answered or failed in the batcher).\n# TYPE inferd_request_duration_seconds histogram\n");
	for (i = 0; i < metrics_count_models(m); i++) {
		struct metrics_model *mm = &m->models[i];
		cum = 0;
		for (k = 0; k < METRICS_LATENCY_BUCKETS; k++) {
			cum += metrics_load(&mm->latency_hist[k]);
			text_buf_printf(b, "inferd_request_duration_seconds_bucket{model=\"%s\",le=\"%g\"} %llu\n",
			    mm->name, (double)metrics_latency_bounds_us[k] / 1e6, (unsigned long long)cum);
		}
		cum += metrics_load(&mm->latency_hist[METRICS_LATENCY_BUCKETS]);
		text_buf_printf(b, "inferd_request_duration_seconds_bucket{model=\"%s\",le=\"+Inf\"} %llu\n"
		    "inferd_request_duration_seconds_sum{model=\"%s\"} %.6f\n"
		    "inferd_request_duration_seconds_count{model=\"%s\"} %llu\n", mm->name, (unsigned long long)cum,
		    mm->name, (double)metrics_load(&mm->request_us) / 1e6, mm->name, (unsigned long long)cum);
	}
}

/* One unlabelled sample with its HELP and TYPE lines. */
static void
metrics_render_one(struct text_buf *b, const char *name, const char *type,
    const char *help, long long v)
{
	text_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name, v);
}

/* Render everything in Prometheus text format. */
char *
metrics_render(struct metrics *m, uint64_t allocations_now, long idle_plans)
{
	struct text_buf b;
	uint64_t base = metrics_load(&m->allocations_baseline);

	if (text_buf_init(&b, 8192) != 0)
		return NULL;
	metrics_render_requests(&b, m);
	metrics_render_per_model(&b, m, "inferd_inference_count", "Rows inferred (inference_count / execution_count is the mean batch size).",
	    offsetof(struct metrics_model, inference_count));
	metrics_render_per_model(&b, m, "inferd_execution_count", "Batches executed.",
	    offsetof(struct metrics_model, execution_count));
	metrics_render_per_model(&b, m, "inferd_batches_inline_total", "Batches launched by the submitting thread itself (inline_dispatch), without a hand-off to the scheduler.",
	    offsetof(struct metrics_model, inline_batches));
	metrics_render_per_model(&b, m, "inferd_batches_completed_inline_total", "Batches the submitting thread also completed itself (inline_complete), without a hand-off to the completion thread.",
	    offsetof(struct metrics_model, inline_completions));
	metrics_render_per_model(&b, m, "inferd_batches_padded_total", "Batches holding requests padded to a longer length (models that batch across lengths).",
	    offsetof(struct metrics_model, padded_batches));
	metrics_render_per_model(&b, m, "inferd_padding_positions_total", "Positions of the padded dim added by padding, summed over rows (the waste is this over inferd_sequence_positions_total).",
	    offsetof(struct metrics_model, pad_positions));
	metrics_render_per_model(&b, m, "inferd_sequence_positions_total", "Positions of the padded dim computed, padding included, summed over rows (models that batch across lengths).",
	    offsetof(struct metrics_model, seq_positions));
	metrics_render_per_model(&b, m, "inferd_queue_duration_us", "Microseconds requests waited before their batch started, summed.",
	    offsetof(struct metrics_model, queue_us));
	metrics_render_per_model(&b, m, "inferd_compute_duration_us", "Microseconds of model execution, summed over batches.",
	    offsetof(struct metrics_model, compute_us));
	metrics_render_per_model(&b, m, "inferd_request_duration_us", "Microseconds from submission to completion, summed over requests.",
	    offsetof(struct metrics_model, request_us));
	metrics_render_histogram(&b, m);
	metrics_render_latency(&b, m);
	metrics_render_one(&b, "inferd_copy_h2d_bytes_total", "counter", "Bytes copied host to device by the pipeline.", (long long)metrics_load(&m->bytes_h2d));
	metrics_render_one(&b, "inferd_copy_d2h_bytes_total", "counter", "Bytes copied device to host by the pipeline.", (long long)metrics_load(&m->bytes_d2h));
	metrics_render_one(&b, "inferd_staged_bytes_total", "counter", "Bytes that went through a staging buffer (HTTP bodies; 0 for shared memory).", (long long)metrics_load(&m->staged_bytes));
	metrics_render_one(&b, "inferd_allocations_after_startup", "gauge", "Device and pinned allocations made since start-up finished.", (long long)(allocations_now - base));
	if (idle_plans >= 0)
		metrics_render_one(&b, "inferd_cudnn_plans_idle", "gauge", "cuDNN convolution plans waiting in the pool for a later load of the same shapes.", (long long)idle_plans);
	metrics_render_one(&b, "inferd_shm_clients", "gauge", "Shared-memory clients connected.", (long long)__atomic_load_n(&m->shm_clients, __ATOMIC_RELAXED));
	metrics_render_one(&b, "inferd_shm_clients_refused_total", "counter", "Shared-memory connections refused.", (long long)metrics_load(&m->shm_clients_refused));
	metrics_render_one(&b, "inferd_shm_doorbells_total", "counter", "Submission doorbells (eventfd wake-ups) the shared-memory thread handled; none while it polls.", (long long)metrics_load(&m->shm_doorbells));
	metrics_render_one(&b, "inferd_shm_wakeups_total", "counter", "Shared-memory clients woken after completions (at most one per sleep); none while they spin.", (long long)metrics_load(&m->shm_wakeups));
	metrics_render_one(&b, "inferd_http_requests_total", "counter", "HTTP requests received.", (long long)metrics_load(&m->http_requests));
	metrics_render_one(&b, "inferd_http_errors_total", "counter", "HTTP requests answered with an error status.", (long long)metrics_load(&m->http_errors));
	return text_buf_finish(&b);
}
