/* test_batcher.c: batch formation, per-client order, fairness, timeouts, queue limits, cancellation, drain. */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batcher.h"
#include "log.h"
#include "onnx_build.h"
#include "repository.h"
#include "test_util.h"

#define IN 16
#define OUT 4

static device_t *dev;
static uint64_t rng = 777;
static float weights[OUT * IN], bias[OUT];
static int inline_on;			/* every batcher of this pass: batcher_set_inline_dispatch */

/* A finished request as the test sees it. */
struct result {
	struct batch_request req;
	enum batch_status status;
	char error[256];
	int done;
	uint64_t order;			/* global completion number */
	float *in, *out;		/* pinned host memory */
};

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static uint64_t completions;

/* The completion callback: record and wake the waiter. */
static void
on_done(struct batch_request *req, enum batch_status st, const char *error)
{
	struct result *r = req->user;

	pthread_mutex_lock(&done_lock);
	r->status = st;
	snprintf(r->error, sizeof r->error, "%s", error ? error : "");
	r->order = completions++;
	r->done = 1;
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&done_lock);
}

/* Wait until r is done (bounded: 20 s). */
static int
wait_done(struct result *r)
{
	struct timespec ts;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&done_lock);
	while (!r->done && rc == 0)
		rc = pthread_cond_timedwait(&done_cond, &done_lock, &ts);
	pthread_mutex_unlock(&done_lock);
	return r->done ? 0 : -1;
}

/*
 * A one-layer model directory with the given batching settings, loaded;
 * eager 0 makes every batch wait out its delay (so batch formation is
 * deterministic), 1 is the default rule (dispatch when waiting cannot help).
 */
static model_t *
make_repo(char **dirp, int max_batch, int delay_us, const char *preferred, int queue, int timeout_us, int eager)
{
	char *root = test_mkdtemp(), *dir, json[1024], *cause = NULL;
	struct test_tensor t[] = {
		{ "w", "F32", 2, { OUT, IN }, weights, sizeof weights },
		{ "b", "F32", 1, { OUT }, bias, sizeof bias },
	};
	model_t *r;

	if (asprintf(&dir, "%s/m", root) == -1 || mkdir(dir, 0700) != 0)
		abort();
	snprintf(json, sizeof json,
	    "{\"name\":\"m\",\"max_batch_size\":%d,"
	    "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"dims\":[%d]}],"
	    "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\",\"dims\":[%d]}],"
	    "\"dynamic_batching\":{\"max_queue_delay_us\":%d,\"preferred_batch_sizes\":[%s],"
	    "\"max_queue_size\":%d,\"default_timeout_us\":%d,\"eager_dispatch\":%s},"
	    "\"layers\":[{\"name\":\"fc\",\"op\":\"linear\",\"weight\":\"w\",\"bias\":\"b\"},{\"op\":\"tanh\"}]}",
	    max_batch, IN, OUT, delay_us, preferred, queue, timeout_us, eager ? "true" : "false");
	test_write_file(dir, "model.json", json, strlen(json));
	test_write_safetensors(dir, "model.safetensors", t, 2);
	if (model_load(dev, dir, &r, &cause) != 0) {
		fprintf(stderr, "FAIL: model: %s\n", cause);
		exit(1);
	}
	free(dir);
	*dirp = root;
	return r;
}

/* Everything one scenario needs. */
struct env {
	char *dir;
	model_t *model;
	struct metrics metrics;
	batcher_t *b;
	batcher_queue_t *q;
	const model_t *m;
};

/* Load the model, make metrics and a batcher (eager: see make_repo). */
static void
env_open(struct env *e, int max_batch, int delay_us, const char *preferred, int queue, int timeout_us, int eager)
{
	char *cause = NULL;
	const char *names[] = { "m" };

	e->model = make_repo(&e->dir, max_batch, delay_us, preferred, queue, timeout_us, eager);
	e->m = e->model;
	if (metrics_init(&e->metrics, names, 1) != 0 ||
	    batcher_create(dev, &e->metrics, 2, 256, &e->b, &cause) != 0 ||
	    (batcher_set_inline_dispatch(e->b, inline_on), batcher_attach(e->b, e->model, &e->q, &cause)) != 0) {
		fprintf(stderr, "FAIL: batcher_create: %s\n", cause);
		exit(1);
	}
}

/* Tear a scenario down. */
static void
env_close(struct env *e)
{
	batcher_free(e->b);
	model_free(e->model);
	metrics_free(&e->metrics);
	test_rmtree(e->dir);
	free(e->dir);
}

/* A request of rows rows with random input in pinned memory. */
static struct result *
result_new(batch_client_t *c, int rows)
{
	struct result *r = calloc(1, sizeof *r);
	char *cause = NULL;

	if (device_host_alloc(dev, (size_t)rows * IN * sizeof(float), (void **)&r->in, &cause) != 0 ||
	    device_host_alloc(dev, (size_t)rows * OUT * sizeof(float), (void **)&r->out, &cause) != 0) {
		fprintf(stderr, "FAIL: host alloc: %s\n", cause);
		exit(1);
	}
	test_fill_random(r->in, (size_t)rows * IN, &rng, -1, 1);
	for (int i = 0; i < rows * OUT; i++)
		r->out[i] = NAN;
	r->req.client = c;
	r->req.rows = rows;
	r->req.input = r->in;
	r->req.output = r->out;
	r->req.done = on_done;
	r->req.user = r;
	return r;
}

/* Free a request's memory. */
static void
result_free(struct result *r)
{
	device_host_free(dev, r->in);
	device_host_free(dev, r->out);
	free(r);
}

/* Submit and insist it was accepted. */
static void
submit_ok(struct env *e, struct result *r)
{
	char *cause = NULL;
	enum batch_status st = batcher_submit(e->b, e->m, &r->req, &cause);

	CHECK(st == BATCH_OK, "submit refused: %s", cause);
	free(cause);
}

/* With a long delay, N requests together make exactly ceil(N / max_batch) batches. */
static void
test_batch_count(void)
{
	struct env e;
	struct result *r[10];
	batch_client_t *c;
	char *cause = NULL;
	int i;

	env_open(&e, 4, 300000, "", 100, 10000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 10; i++)
		submit_ok(&e, r[i] = result_new(c, 1));
	for (i = 0; i < 10; i++) {
		CHECK(wait_done(r[i]) == 0 && r[i]->status == BATCH_OK, "request %d: %s", i, r[i]->error);
		result_free(r[i]);
	}
	CHECK(e.metrics.models[0].execution_count == 3, "10 requests, max 4: %llu executions, want 3",
	    (unsigned long long)e.metrics.models[0].execution_count);
	CHECK(e.metrics.models[0].inference_count == 10, "inference count %llu", (unsigned long long)e.metrics.models[0].inference_count);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* With delay 0 and one client waiting for each answer, every batch has one row. */
static void
test_no_delay(void)
{
	struct env e;
	batch_client_t *c;
	char *cause = NULL;
	int i;

	env_open(&e, 8, 0, "", 100, 10000000, 1);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 20; i++) {
		struct result *r = result_new(c, 1);
		submit_ok(&e, r);
		CHECK(wait_done(r) == 0 && r->status == BATCH_OK, "request %d", i);
		result_free(r);
	}
	CHECK(e.metrics.models[0].execution_count == 20, "%llu executions, want 20",
	    (unsigned long long)e.metrics.models[0].execution_count);
	/* A lone client's request finds the scheduler idle: launched by the submitter, or never when off. */
	CHECK(e.metrics.models[0].inline_batches == (inline_on ? 20u : 0u), "inline dispatch %s: %llu of 20 batches inline",
	    inline_on ? "on" : "off", (unsigned long long)e.metrics.models[0].inline_batches);
	/* On the CPU backend the batch has ended when its launch returns: the submitter answers it too. */
	CHECK(e.metrics.models[0].inline_completions == (inline_on && !device_is_gpu(dev) ? 20u : 0u) ||
	    (inline_on && device_is_gpu(dev) && e.metrics.models[0].inline_completions <= 20u),
	    "inline completion: %llu of 20 batches", (unsigned long long)e.metrics.models[0].inline_completions);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* Preferred size 3 with max 8 and a long delay: 7 requests go as 3, 3, 1. */
static void
test_preferred(void)
{
	struct env e;
	struct result *r[7];
	batch_client_t *c;
	char *cause = NULL;
	uint64_t *h;
	int i;

	env_open(&e, 8, 200000, "3", 100, 10000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 7; i++)
		submit_ok(&e, r[i] = result_new(c, 1));
	for (i = 0; i < 7; i++) {
		CHECK(wait_done(r[i]) == 0 && r[i]->status == BATCH_OK, "request %d", i);
		result_free(r[i]);
	}
	h = e.metrics.models[0].batch_hist;
	CHECK(e.metrics.models[0].execution_count == 3 && h[0] == 1 && h[2] == 2,
	    "batches: %llu executions, size-1 %llu, size-3..4 %llu; want 3, 1, 2",
	    (unsigned long long)e.metrics.models[0].execution_count, (unsigned long long)h[0], (unsigned long long)h[2]);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* Rows of one batch equal the same rows run alone (within 1e-5 of the output scale). */
static void
test_batched_equals_unbatched(void)
{
	struct env e;
	struct result *batched[16], *alone;
	batch_client_t *c;
	char *cause = NULL;
	int i, k;
	double maxdiff = 0, maxval = 0, rel;

	env_open(&e, 16, 200000, "", 100, 10000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 16; i++)
		submit_ok(&e, batched[i] = result_new(c, i == 5 ? 3 : 1));
	for (i = 0; i < 16; i++)
		CHECK(wait_done(batched[i]) == 0 && batched[i]->status == BATCH_OK, "batched %d", i);
	CHECK(e.metrics.models[0].execution_count <= 2, "16 requests in %llu batches",
	    (unsigned long long)e.metrics.models[0].execution_count);
	for (i = 0; i < 16; i++) {
		for (int row = 0; row < batched[i]->req.rows; row++) {
			alone = result_new(c, 1);
			memcpy(alone->in, batched[i]->in + row * IN, IN * sizeof(float));
			submit_ok(&e, alone);
			CHECK(wait_done(alone) == 0 && alone->status == BATCH_OK, "alone %d", i);
			for (k = 0; k < OUT; k++) {
				float a = alone->out[k], b = batched[i]->out[row * OUT + k];
				maxdiff = fmax(maxdiff, fabs((double)a - b));
				maxval = fmax(maxval, fabs((double)a));
			}
			result_free(alone);
		}
		result_free(batched[i]);
	}
	/*
	 * Normwise, as the engine tests measure: cuBLAS, and OpenBLAS on processors
	 * where a 1-row product takes another kernel than a batch (AVX-512), sum
	 * in another order.
	 */
	rel = maxval > 0 ? maxdiff / maxval : maxdiff;
	CHECK(rel <= 1e-5, "batched vs alone relative difference %g", rel);
	printf("batched vs unbatched: max relative difference %g\n", rel);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* Per-client order under 32 concurrent clients. */
struct order_arg {
	struct env *e;
	int ok;
};

/* One client: submit 40 requests at once, check they complete in order. */
static void *
order_client(void *p)
{
	struct order_arg *a = p;
	struct result *r[40];
	batch_client_t *c;
	char *cause = NULL;
	int i;

	a->ok = batcher_client_create(a->e->b, "t", &c, &cause) == 0;
	for (i = 0; a->ok && i < 40; i++) {
		r[i] = result_new(c, 1 + i % 3);
		a->ok &= batcher_submit(a->e->b, a->e->m, &r[i]->req, &cause) == BATCH_OK;
	}
	for (i = 0; a->ok && i < 40; i++) {
		a->ok &= wait_done(r[i]) == 0 && r[i]->status == BATCH_OK;
		if (i > 0)
			a->ok &= r[i]->order > r[i - 1]->order;
	}
	for (i = 0; i < 40; i++)
		result_free(r[i]);
	batcher_client_close(a->e->b, c);
	free(cause);
	return NULL;
}

/* 32 threads, each its own client. */
static void
test_order(void)
{
	struct env e;
	pthread_t t[32];
	struct order_arg a[32];
	int i;

	env_open(&e, 32, 500, "", 4096, 10000000, 1);
	for (i = 0; i < 32; i++) {
		a[i].e = &e;
		CHECK(pthread_create(&t[i], NULL, order_client, &a[i]) == 0, "pthread_create");
	}
	for (i = 0; i < 32; i++) {
		pthread_join(t[i], NULL);
		CHECK(a[i].ok, "client %d: requests failed or completed out of order", i);
	}
	printf("32 clients x 40 requests: mean batch %.1f rows\n",
	    (double)e.metrics.models[0].inference_count / (double)e.metrics.models[0].execution_count);
	env_close(&e);
}

/* Microseconds one request of c takes from submission to completion. */
static double
timed_request(struct env *e, batch_client_t *c)
{
	struct result *r = result_new(c, 1);
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	submit_ok(e, r);
	CHECK(wait_done(r) == 0 && r->status == BATCH_OK, "timed request: %s", r->error);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	result_free(r);
	return (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
}

/* Sort helper for latencies. */
static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * A lone client does not pay the batching window: with a 20 ms window its
 * p50 is under 10 ms (eager dispatch, the default), while with
 * eager_dispatch false every request waits the whole window.
 */
static void
test_lone_client_window(void)
{
	struct env e;
	batch_client_t *c;
	char *cause = NULL;
	double lat[40], min_lazy = 1e30;
	int i;

	env_open(&e, 8, 20000, "", 100, 10000000, 1);
	CHECK(batcher_client_create(e.b, "lone", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 40; i++)
		lat[i] = timed_request(&e, c);
	qsort(lat, 40, sizeof lat[0], cmp_double);
	CHECK(lat[20] < 10000, "lone client p50 %.0f us with a 20 ms window: the window was paid", lat[20]);
	printf("lone client, 20 ms window: p50 %.0f us, max %.0f us\n", lat[20], lat[39]);
	batcher_client_close(e.b, c);
	env_close(&e);
	env_open(&e, 8, 20000, "", 100, 10000000, 0);
	CHECK(batcher_client_create(e.b, "lone", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 3; i++)
		min_lazy = fmin(min_lazy, timed_request(&e, c));
	CHECK(min_lazy >= 20000, "eager_dispatch false: a request took %.0f us, under the 20 ms window", min_lazy);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* One client of test_load_batches: 50 requests, each waited for before the next. */
static void *
sync_client(void *p)
{
	struct order_arg *a = p;
	batch_client_t *c;
	char *cause = NULL;
	struct result *r;
	int i;

	a->ok = batcher_client_create(a->e->b, "t", &c, &cause) == 0;
	for (i = 0; a->ok && i < 50; i++) {
		r = result_new(c, 1);
		a->ok &= batcher_submit(a->e->b, a->e->m, &r->req, &cause) == BATCH_OK;
		a->ok &= wait_done(r) == 0 && r->status == BATCH_OK;
		result_free(r);
	}
	if (a->ok)
		batcher_client_close(a->e->b, c);
	free(cause);
	return NULL;
}

/* Under load batches still form: 16 clients waiting on each answer make batches of more than one row. */
static void
test_load_batches(void)
{
	struct env e;
	pthread_t t[16];
	struct order_arg a[16];
	double mean;
	int i;

	env_open(&e, 64, 20000, "", 4096, 10000000, 1);
	for (i = 0; i < 16; i++) {
		a[i].e = &e;
		CHECK(pthread_create(&t[i], NULL, sync_client, &a[i]) == 0, "pthread_create");
	}
	for (i = 0; i < 16; i++) {
		pthread_join(t[i], NULL);
		CHECK(a[i].ok, "client %d: a request failed", i);
	}
	mean = (double)e.metrics.models[0].inference_count / (double)e.metrics.models[0].execution_count;
	CHECK(e.metrics.models[0].inference_count == 16 * 50, "%llu rows run, want 800",
	    (unsigned long long)e.metrics.models[0].inference_count);
	/*
	 * With inline dispatch and completion on the CPU backend, a thread per
	 * client may find the model done before the next client submits: one row
	 * per batch is then right (the model is faster than its clients), so only
	 * the scheduler's path must batch here; test_deferred covers the other.
	 */
	if (!inline_on)
		CHECK(mean > 1.0, "16 clients: mean batch %.2f rows, batches did not form", mean);
	printf("16 waiting clients, 20 ms window: mean batch %.2f rows over %llu batches\n", mean,
	    (unsigned long long)e.metrics.models[0].execution_count);
	env_close(&e);
}

/*
 * Run 12 requests (1 or 2 rows; the last one's tensors outside the client's
 * region) as one batch in copy mode mode, inputs from in, outputs into
 * out (12 x 2 rows); the region is registered and mapped.
 */
static void
run_copy_mode(enum batch_copy_mode mode, size_t mapped_max, const float *in, float *out)
{
	const size_t region_bytes = (size_t)1 << 20, row_in = IN * sizeof(float), row_out = OUT * sizeof(float);
	char *region = aligned_alloc(4096, region_bytes), *cause = NULL;
	struct result *r[12];
	batch_client_t *c;
	struct env e;
	int i, rows;

	CHECK(region != NULL, "out of memory");
	if (region == NULL)
		return;
	env_open(&e, 32, 200000, "", 100, 10000000, 0);
	batcher_set_copy_mode(e.b, mode, mapped_max);
	CHECK(device_host_register(dev, region, region_bytes, &cause) == 0, "register: %s", cause);
	CHECK(batcher_client_create(e.b, "mapped", &c, &cause) == 0 && batcher_client_map(e.b, c, region, region_bytes,
	    &cause) == 0, "client: %s", cause);
	for (i = 0; i < 12; i++) {
		rows = 1 + i % 2;
		r[i] = result_new(c, rows);
		memcpy(r[i]->in, in + (size_t)i * 2 * IN, rows * row_in);
		if (i < 11) {
			/* Odd offsets in the region: every tensor lands somewhere else than the last. */
			r[i]->req.input = region + 4096 + (size_t)i * 1024;
			r[i]->req.output = region + 65536 + (size_t)i * 1040;
			memcpy((void *)r[i]->req.input, r[i]->in, rows * row_in);
		}
		submit_ok(&e, r[i]);
	}
	for (i = 0; i < 12; i++) {
		rows = r[i]->req.rows;
		CHECK(wait_done(r[i]) == 0 && r[i]->status == BATCH_OK, "%s: request %d: %s", batch_copy_mode_name(mode), i,
		    r[i]->error);
		memcpy(out + (size_t)i * 2 * OUT, i < 11 ? (const float *)r[i]->req.output : r[i]->out, rows * row_out);
		result_free(r[i]);
	}
	CHECK(e.metrics.models[0].execution_count == 1, "%s: %llu batches, want 1", batch_copy_mode_name(mode),
	    (unsigned long long)e.metrics.models[0].execution_count);
	batcher_client_close(e.b, c);
	CHECK(device_host_unregister(dev, region, &cause) == 0, "unregister: %s", cause);
	free(region);
	free(cause);
	env_close(&e);
}

/* The copy modes answer bit for bit alike: DMA, mapped, and auto with a threshold between the two request sizes. */
static void
test_copy_modes(void)
{
	float in[12 * 2 * IN], dma[12 * 2 * OUT], mapped[12 * 2 * OUT], mixed[12 * 2 * OUT];
	enum batch_copy_mode m;
	size_t i;

	test_fill_random(in, sizeof in / sizeof in[0], &rng, -1, 1);
	for (i = 0; i < sizeof dma / sizeof dma[0]; i++)
		dma[i] = mapped[i] = mixed[i] = NAN;
	CHECK(batch_copy_mode_parse("mapped", &m) == 0 && m == BATCH_COPY_MAPPED && batch_copy_mode_parse("dma", &m) == 0 &&
	    m == BATCH_COPY_DMA && batch_copy_mode_parse("auto", &m) == 0 && m == BATCH_COPY_AUTO &&
	    batch_copy_mode_parse("DMA", &m) == -1, "copy mode names");
	run_copy_mode(BATCH_COPY_DMA, 0, in, dma);
	run_copy_mode(BATCH_COPY_MAPPED, 0, in, mapped);
	/* 1-row inputs (64 B) and outputs (16 B) mapped, 2-row inputs (128 B) by DMA: mixed batches. */
	run_copy_mode(BATCH_COPY_AUTO, 100, in, mixed);
	for (i = 0; i < 12; i++) {
		size_t n = (size_t)(1 + i % 2) * OUT, k;
		for (k = 0; k < n; k++) {
			float a = dma[i * 2 * OUT + k];
			CHECK(isfinite(a), "request %zu value %zu not written", i, k);
			/* The copy mode moves bytes only; batches may still form differently (OpenBLAS sums by size). */
			CHECK(fabs(a - mapped[i * 2 * OUT + k]) <= 1e-5 * (fabs(a) + 1) &&
			    fabs(a - mixed[i * 2 * OUT + k]) <= 1e-5 * (fabs(a) + 1),
			    "request %zu value %zu: dma %.9g mapped %.9g auto %.9g", i, k, a, mapped[i * 2 * OUT + k],
			    mixed[i * 2 * OUT + k]);
		}
	}
	printf("copy modes dma, mapped, auto (mixed): 12 requests, equal within 1e-5\n");
}

/* A timeout fires with a clear error; a longer timeout than the default is clamped. */
static void
test_timeout(void)
{
	struct env e;
	struct result *r, *clamped;
	batch_client_t *c;
	char *cause = NULL;

	env_open(&e, 8, 2000000, "", 100, 400000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	r = result_new(c, 1);
	r->req.timeout_us = 50000;
	clamped = result_new(c, 1);
	clamped->req.timeout_us = 60000000;
	submit_ok(&e, r);
	submit_ok(&e, clamped);
	CHECK(wait_done(r) == 0 && r->status == BATCH_TIMEOUT && strstr(r->error, "timed out") != NULL,
	    "status %d error '%s'", r->status, r->error);
	CHECK(wait_done(clamped) == 0 && clamped->status == BATCH_TIMEOUT, "long timeout not clamped: %d", clamped->status);
	CHECK(e.metrics.models[0].failure[METRICS_REASON_TIMEOUT] == 2, "timeouts counted %llu",
	    (unsigned long long)e.metrics.models[0].failure[METRICS_REASON_TIMEOUT]);
	result_free(r);
	result_free(clamped);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* A full queue answers busy at once; closing a client cancels its queued requests. */
static void
test_queue_full_and_cancel(void)
{
	struct env e;
	struct result *r[5];
	batch_client_t *c;
	char *cause = NULL;
	int i;

	env_open(&e, 8, 5000000, "", 4, 10000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 4; i++)
		submit_ok(&e, r[i] = result_new(c, 1));
	r[4] = result_new(c, 1);
	CHECK(batcher_submit(e.b, e.m, &r[4]->req, &cause) == BATCH_BUSY && strstr(cause, "full") != NULL,
	    "fifth request not refused as busy: %s", cause);
	r[4]->req.rows = 9;
	CHECK(batcher_submit(e.b, e.m, &r[4]->req, &cause) == BATCH_INVALID, "9 rows accepted with max 8");
	batcher_client_close(e.b, c);
	for (i = 0; i < 4; i++) {
		CHECK(r[i]->done && r[i]->status == BATCH_CANCELLED, "request %d: status %d", i, r[i]->status);
		result_free(r[i]);
	}
	result_free(r[4]);
	CHECK(e.metrics.models[0].failure[METRICS_REASON_BUSY] == 1, "busy not counted");
	free(cause);
	env_close(&e);
}

/* The tensor-list form: the same answer as the single form; wrong dims, lengths and counts refused by name. */
static void
test_tensor_lists(void)
{
	struct env e;
	struct result *a, *b;
	batch_client_t *c;
	char *cause = NULL;
	double diff, scale;
	int i;

	env_open(&e, 8, 0, "", 100, 10000000, 1);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	a = result_new(c, 3);
	b = result_new(c, 3);
	memcpy(b->in, a->in, 3 * IN * sizeof(float));
	b->req.input = NULL;
	b->req.ninputs = b->req.noutputs = 1;
	b->req.inputs[0] = b->in;
	b->req.input_bytes[0] = 3 * IN * sizeof(float);
	b->req.outputs[0] = b->out;
	b->req.output_bytes[0] = 3 * OUT * sizeof(float);
	b->req.shape.dims[0][0] = IN;
	submit_ok(&e, a);
	submit_ok(&e, b);
	CHECK(wait_done(a) == 0 && wait_done(b) == 0 && a->status == BATCH_OK && b->status == BATCH_OK,
	    "list form: %s %s", a->error, b->error);
	/* Within 1e-5 of the scale: the two may run in one batch or apart, which OpenBLAS may sum in another order. */
	for (i = 0, diff = 0, scale = 0; i < 3 * OUT; i++) {
		diff = fmax(diff, fabs((double)a->out[i] - b->out[i]));
		scale = fmax(scale, fabs((double)a->out[i]));
	}
	CHECK(diff <= 1e-5 * scale, "list form answers differ from the single form by %g (scale %g)", diff, scale);
	b->req.shape.dims[0][0] = IN + 1;
	CHECK(batcher_submit(e.b, e.m, &b->req, &cause) == BATCH_INVALID &&
	    strstr(cause, "input 'x' dim 1 is 17") != NULL, "dims out of range: %s", cause);
	b->req.shape.dims[0][0] = IN;
	b->req.input_bytes[0]--;
	CHECK(batcher_submit(e.b, e.m, &b->req, &cause) == BATCH_INVALID && strstr(cause, "input 'x'") != NULL,
	    "short input accepted: %s", cause);
	b->req.input_bytes[0]++;
	b->req.ninputs = 2;
	CHECK(batcher_submit(e.b, e.m, &b->req, &cause) == BATCH_INVALID && strstr(cause, "2 inputs") != NULL,
	    "two inputs accepted for one: %s", cause);
	b->req.ninputs = 1;
	b->req.outputs[0] = NULL;
	CHECK(batcher_submit(e.b, e.m, &b->req, &cause) == BATCH_INVALID && strstr(cause, "no output") != NULL,
	    "a request wanting nothing accepted: %s", cause);
	for (i = 0; i < 3 * OUT; i++)
		CHECK(isfinite(b->out[i]), "output %d not written", i);
	result_free(a);
	result_free(b);
	free(cause);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* A request to the two-input model: x0 + x1, both [rows, seq]. */
struct sum_req {
	struct result r;		/* done and status; r.req is the request */
	int rows, seq;
	float *a, *b, *y;		/* pinned */
};

/* A repository of one ONNX model y = x0 + x1, inputs [N, S] sharing S (at most 6), batching delay delay_us. */
static model_t *
make_sum_repo(char **dirp, int delay_us, int eager)
{
	static const int64_t dims[] = { -1, -2 };
	char *root = test_mkdtemp(), *dir, json[512], *cause = NULL;
	model_t *r;
	size_t len;
	uint8_t *buf = onnx_build_unary("Add", "sum", 2, 2, dims, &len);

	if (asprintf(&dir, "%s/sum", root) == -1 || mkdir(dir, 0700) != 0)
		abort();
	snprintf(json, sizeof json, "{\"platform\": \"onnx\", \"max_batch_size\": 8, \"max_dims\": {\"x0\": [6]},"
	    " \"dynamic_batching\": {\"max_queue_delay_us\": %d, \"eager_dispatch\": %s}}", delay_us,
	    eager ? "true" : "false");
	test_write_file(dir, "model.onnx", (const char *)buf, len);
	test_write_file(dir, "model.json", json, strlen(json));
	free(buf);
	if (model_load(dev, dir, &r, &cause) != 0) {
		fprintf(stderr, "FAIL: sum model: %s\n", cause);
		exit(1);
	}
	free(dir);
	*dirp = root;
	return r;
}

/* A request of rows x seq random values per input, in the tensor-list form. */
static struct sum_req *
sum_req_new(batch_client_t *c, int rows, int seq)
{
	struct sum_req *q = calloc(1, sizeof *q);
	size_t n = (size_t)rows * (size_t)seq, bytes = n * sizeof(float);
	char *cause = NULL;

	if (q == NULL || device_host_alloc(dev, bytes, (void **)&q->a, &cause) != 0 ||
	    device_host_alloc(dev, bytes, (void **)&q->b, &cause) != 0 ||
	    device_host_alloc(dev, bytes, (void **)&q->y, &cause) != 0) {
		fprintf(stderr, "FAIL: host alloc: %s\n", cause);
		exit(1);
	}
	test_fill_random(q->a, n, &rng, -1, 1);
	test_fill_random(q->b, n, &rng, -1, 1);
	q->rows = rows, q->seq = seq;
	q->r.req = (struct batch_request){ .client = c, .rows = rows, .done = on_done, .user = &q->r,
	    .ninputs = 2, .noutputs = 1, .inputs = { q->a, q->b }, .input_bytes = { bytes, bytes },
	    .outputs = { q->y }, .output_bytes = { bytes } };
	q->r.req.shape.dims[0][0] = q->r.req.shape.dims[1][0] = seq;
	return q;
}

/* Wait for q, check y = a + b exactly (one float add, against double rounded once), free it. */
static void
sum_req_check(struct sum_req *q, const char *what)
{
	size_t i, n = (size_t)q->rows * (size_t)q->seq;

	CHECK(wait_done(&q->r) == 0 && q->r.status == BATCH_OK, "%s: %s", what, q->r.error);
	for (i = 0; i < n; i++)
		CHECK(q->y[i] == (float)((double)q->a[i] + (double)q->b[i]), "%s: y[%zu] = %g, want %g", what, i,
		    q->y[i], (double)q->a[i] + (double)q->b[i]);
	device_host_free(dev, q->a);
	device_host_free(dev, q->b);
	device_host_free(dev, q->y);
	free(q);
}

/*
 * Two sequence lengths: two clients' requests of 3 and 5 form two batches
 * (one per shape); one client alternating them gets one batch each, in
 * order; every answer is its own; dims past the maximum, and lengths
 * that disagree with the dims, are refused by name.
 */
static void
test_two_shapes(void)
{
	struct sum_req *q[6];
	batch_client_t *c1, *c2;
	struct metrics metrics;
	const char *names[] = { "sum" };
	model_t *repo;
	batcher_queue_t *bq;
	batcher_t *b;
	char *dir, *cause = NULL, what[64];
	int i;
	uint64_t prev_order = 0;

	repo = make_sum_repo(&dir, 300000, 0);
	CHECK(metrics_init(&metrics, names, 1) == 0 && batcher_create(dev, &metrics, 2, 0, &b, &cause) == 0 &&
	    (batcher_set_inline_dispatch(b, inline_on), batcher_attach(b, repo, &bq, &cause)) == 0,
	    "batcher: %s", cause);
	CHECK(batcher_client_create(b, "a", &c1, &cause) == 0 && batcher_client_create(b, "b", &c2, &cause) == 0,
	    "%s", cause);
	for (i = 0; i < 6; i++) {
		q[i] = sum_req_new(i % 2 ? c2 : c1, 1 + i / 2, i % 2 ? 5 : 3);
		CHECK(batcher_submit(b, repo, &q[i]->r.req, &cause) == BATCH_OK, "submit %d: %s", i, cause);
	}
	for (i = 0; i < 6; i++) {
		snprintf(what, sizeof what, "two clients, request %d", i);
		sum_req_check(q[i], what);
	}
	CHECK(metrics.models[0].execution_count == 2, "two shapes from two clients: %llu batches, want 2",
	    (unsigned long long)metrics.models[0].execution_count);
	for (i = 0; i < 4; i++) {
		q[i] = sum_req_new(c1, 2, i % 2 ? 6 : 1);
		CHECK(batcher_submit(b, repo, &q[i]->r.req, &cause) == BATCH_OK, "submit %d: %s", i, cause);
	}
	for (i = 0; i < 4; i++) {
		snprintf(what, sizeof what, "one client alternating, request %d", i);
		/* sum_req_check frees the request: keep its completion order for the next one. */
		CHECK(i == 0 || q[i]->r.order > prev_order || !q[i]->r.done, "order");
		prev_order = q[i]->r.order;
		sum_req_check(q[i], what);
	}
	CHECK(metrics.models[0].execution_count == 6, "one client alternating: %llu batches in all, want 6",
	    (unsigned long long)metrics.models[0].execution_count);
	q[0] = sum_req_new(c1, 1, 6);
	q[0]->r.req.shape.dims[1][0] = 7;
	CHECK(batcher_submit(b, repo, &q[0]->r.req, &cause) == BATCH_INVALID && cause != NULL &&
	    strstr(cause, "input 'x1' dim 1 is 7, the model's maximum is 6") != NULL, "dims past the maximum: %s", cause);
	q[0]->r.req.shape.dims[1][0] = 5;
	CHECK(batcher_submit(b, repo, &q[0]->r.req, &cause) == BATCH_INVALID && cause != NULL &&
	    strstr(cause, "input 'x1': 24 bytes given, 1 rows need 20") != NULL, "length disagreeing with dims: %s", cause);
	device_host_free(dev, q[0]->a);
	device_host_free(dev, q[0]->b);
	device_host_free(dev, q[0]->y);
	free(q[0]);
	free(cause);
	batcher_client_close(b, c1);
	batcher_client_close(b, c2);
	batcher_free(b);
	model_free(repo);
	metrics_free(&metrics);
	test_rmtree(dir);
	free(dir);
}

/* Submissions between batcher_defer_begin and _end are dispatched together: 16 clients' requests, one batch. */
static void
test_deferred(void)
{
	struct env e;
	batch_client_t *c[16];
	struct result *r[16];
	uint64_t before, inline_before;
	char *cause = NULL;
	int i;

	env_open(&e, 64, 0, "", 100, 10000000, 1);
	for (i = 0; i < 16; i++)
		CHECK(batcher_client_create(e.b, "t", &c[i], &cause) == 0, "%s", cause);
	/*
	 * One request first, then a pause: the scheduler has started and gone
	 * back to sleep (it takes whatever is queued when it wakes, which a
	 * deferral does not prevent: it only keeps the submitter from dispatching).
	 */
	submit_ok(&e, r[0] = result_new(c[0], 1));
	CHECK(wait_done(r[0]) == 0 && r[0]->status == BATCH_OK, "first request");
	result_free(r[0]);
	usleep(100000);
	before = e.metrics.models[0].execution_count;
	inline_before = e.metrics.models[0].inline_batches;
	batcher_defer_begin();
	batcher_defer_begin();	/* nests: only the outer end dispatches */
	for (i = 0; i < 16; i++)
		submit_ok(&e, r[i] = result_new(c[i], 1));
	batcher_defer_end();
	CHECK(e.metrics.models[0].execution_count == before, "an inner batcher_defer_end dispatched");
	batcher_defer_end();
	for (i = 0; i < 16; i++) {
		CHECK(wait_done(r[i]) == 0 && r[i]->status == BATCH_OK, "deferred request %d", i);
		result_free(r[i]);
	}
	CHECK(e.metrics.models[0].execution_count == before + 1 && e.metrics.models[0].inference_count == 17,
	    "16 deferred requests ran as %llu batches of %llu rows in all, want 1 of 16",
	    (unsigned long long)(e.metrics.models[0].execution_count - before),
	    (unsigned long long)e.metrics.models[0].inference_count - 1);
	CHECK(e.metrics.models[0].inline_batches - inline_before == (inline_on ? 1u : 0u), "deferred batch: %llu inline",
	    (unsigned long long)(e.metrics.models[0].inline_batches - inline_before));
	for (i = 0; i < 16; i++)
		batcher_client_close(e.b, c[i]);
	env_close(&e);
}

/*
 * A deferral whose request the scheduler took meanwhile (its window ran out
 * and it batched everything queued) dispatches nothing at its end.  The
 * deferral's end once formed an empty batch there: with nothing queued the
 * window's wake-up time overflowed past UINT64_MAX into the past.
 */
static void
test_deferred_taken(void)
{
	struct env e;
	batch_client_t *c;
	struct result *a, *b;
	uint64_t batches, inl;
	char *cause = NULL;

	env_open(&e, 64, 20000, "", 100, 10000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	submit_ok(&e, a = result_new(c, 1));	/* waits out the 20 ms window in the scheduler */
	batcher_defer_begin();
	submit_ok(&e, b = result_new(c, 1));
	CHECK(wait_done(a) == 0 && a->status == BATCH_OK && wait_done(b) == 0 && b->status == BATCH_OK,
	    "the scheduler's batch of the deferred request");
	batches = e.metrics.models[0].execution_count;
	inl = e.metrics.models[0].inline_batches;
	batcher_defer_end();
	usleep(20000);
	CHECK(e.metrics.models[0].execution_count == batches && e.metrics.models[0].inline_batches == inl,
	    "the deferral's end dispatched %llu batches (%llu inline) with nothing queued",
	    (unsigned long long)(e.metrics.models[0].execution_count - batches),
	    (unsigned long long)(e.metrics.models[0].inline_batches - inl));
	result_free(a);
	result_free(b);
	batcher_client_close(e.b, c);
	env_close(&e);
}

/* A client with 1,000 queued requests delays another's single request by at most one batch. */
static void
test_fairness(void)
{
	struct env e;
	struct result *flood[1000], *single;
	batch_client_t *a, *b;
	char *cause = NULL;
	uint64_t before;
	int i;

	env_open(&e, 8, 0, "", 2000, 30000000, 1);
	CHECK(batcher_client_create(e.b, "flood", &a, &cause) == 0 && batcher_client_create(e.b, "single", &b, &cause) == 0, "%s", cause);
	for (i = 0; i < 1000; i++)
		submit_ok(&e, flood[i] = result_new(a, 1));
	/*
	 * Counted from the moment the single request is queued: batches the flood
	 * formed while it was being submitted (a slow, e.g. sanitized, build on a
	 * busy machine forms several) are not the single request's wait.
	 */
	submit_ok(&e, single = result_new(b, 1));
	pthread_mutex_lock(&done_lock);
	before = completions;
	pthread_mutex_unlock(&done_lock);
	CHECK(wait_done(single) == 0 && single->status == BATCH_OK, "single request failed");
	/* Already launched batches (at most 2 in flight) plus the one it joins. */
	CHECK((int64_t)(single->order - before) < 3 * 8, "single request completed after %lld others",
	    (long long)(single->order - before));
	printf("fairness: single request completed %lld completions after it was queued (max batch 8)\n",
	    (long long)(single->order - before));
	for (i = 0; i < 1000; i++) {
		CHECK(wait_done(flood[i]) == 0 && flood[i]->status == BATCH_OK, "flood %d", i);
		result_free(flood[i]);
	}
	result_free(single);
	batcher_client_close(e.b, a);
	batcher_client_close(e.b, b);
	env_close(&e);
}

/* Shutdown runs what is queued without waiting out the delay, and refuses new work. */
static void
test_shutdown_drains(void)
{
	struct env e;
	struct result *r[3], *late;
	batch_client_t *c;
	char *cause = NULL;
	int i;

	env_open(&e, 8, 10000000, "", 100, 60000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	for (i = 0; i < 3; i++)
		submit_ok(&e, r[i] = result_new(c, 1));
	batcher_shutdown(e.b);
	late = result_new(c, 1);
	CHECK(batcher_submit(e.b, e.m, &late->req, &cause) == BATCH_SHUTDOWN, "submit after shutdown accepted");
	for (i = 0; i < 3; i++) {
		CHECK(wait_done(r[i]) == 0 && r[i]->status == BATCH_OK, "queued request %d not run at shutdown", i);
		result_free(r[i]);
	}
	result_free(late);
	batcher_client_close(e.b, c);
	free(cause);
	env_close(&e);
}

/*
 * Queues come and go at run time: a second queue attached after the client
 * exists takes its requests (its fifo is made on first use), computes what
 * the first computes, and detaching it with requests queued (a 10 s delay)
 * runs them at once and returns; the first queue serves on.
 */
static void
test_attach_detach(void)
{
	struct env e;
	struct result *r[3], *ref;
	batch_client_t *c;
	batcher_queue_t *q2;
	model_t *m2;
	char *cause = NULL, *dir;
	double diff, scale;
	int i, k;

	env_open(&e, 8, 10000000, "", 100, 60000000, 0);
	CHECK(batcher_client_create(e.b, "t", &c, &cause) == 0, "%s", cause);
	CHECK(asprintf(&dir, "%s/m", e.dir) != -1 && model_load(dev, dir, &m2, &cause) == 0 &&
	    batcher_attach(e.b, m2, &q2, &cause) == 0, "second queue: %s", cause);
	for (i = 0; i < 3; i++) {
		r[i] = result_new(c, 2);
		CHECK(batcher_submit_queue(e.b, q2, &r[i]->req, &cause) == BATCH_OK, "submit: %s", cause);
	}
	batcher_detach(e.b, q2);
	for (i = 0; i < 3; i++)
		CHECK(r[i]->done && r[i]->status == BATCH_OK, "request %d not run by detach: %s", i, r[i]->error);
	CHECK(batcher_submit(e.b, m2, &r[0]->req, &cause) == BATCH_INVALID && strstr(cause, "not served") != NULL,
	    "a detached model's queue still found");
	free(cause);
	cause = NULL;
	ref = result_new(c, 2);
	memcpy(ref->in, r[0]->in, 2 * IN * sizeof(float));
	submit_ok(&e, ref);
	batcher_shutdown(e.b);	/* no 10 s wait: run what is queued */
	CHECK(wait_done(ref) == 0 && ref->status == BATCH_OK, "the first queue stopped serving");
	/* The same rows within 1e-5 of the scale: queue 2 ran them in a batch of 6 rows, queue 1 alone. */
	for (k = 0, diff = 0, scale = 0; k < 2 * OUT; k++) {
		diff = fmax(diff, fabs((double)ref->out[k] - r[0]->out[k]));
		scale = fmax(scale, fabs((double)ref->out[k]));
	}
	CHECK(diff <= 1e-5 * scale, "queue 2 and queue 1 differ by %g (scale %g)", diff, scale);
	result_free(ref);
	for (i = 0; i < 3; i++)
		result_free(r[i]);
	batcher_client_close(e.b, c);
	model_free(m2);
	free(dir);
	env_close(&e);
}

/* Every scenario once (main runs them with inline dispatch off, then on). */
static void
run_all(void)
{
	test_batch_count();
	test_no_delay();
	test_preferred();
	test_batched_equals_unbatched();
	test_order();
	test_lone_client_window();
	test_load_batches();
	test_deferred();
	test_deferred_taken();
	test_copy_modes();
	test_timeout();
	test_queue_full_and_cancel();
	test_fairness();
	test_shutdown_drains();
	test_tensor_lists();
	test_two_shapes();
	test_attach_detach();
}

int
main(void)
{
	dev = test_open_device();
	log_set_level("warn");
	test_fill_random(weights, OUT * IN, &rng, -0.25f, 0.25f);
	test_fill_random(bias, OUT, &rng, -0.5f, 0.5f);
	for (inline_on = 0; inline_on <= 1; inline_on++) {
		printf("inline dispatch %s\n", inline_on ? "on" : "off");
		run_all();
	}
	device_close(dev);
	return test_finish("test_batcher");
}
