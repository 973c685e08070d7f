/* batcher_contexts.c: a queue's batch contexts: building and capturing them, the background builder, freeing them. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "batcher_impl.h"
#include "clock.h"
#include "alloc.h"
#include "error.h"
#include "log.h"
#include "metrics.h"

/* Allocate one batch context and its events. */
static int
slot_create(struct model_queue *q, struct batch_slot *s, char **cause)
{
	device_t *dev = q->dev;
	int n = model_rows_max(q->model), i;

	s->reqs = xcalloc((size_t)n, sizeof *s->reqs);
	s->ev_in = xcalloc((size_t)n, sizeof *s->ev_in);
	s->ev_out = xcalloc((size_t)n, sizeof *s->ev_out);
	s->dma_out = xcalloc((size_t)n, sizeof *s->dma_out);
	if (s->reqs == NULL || s->ev_in == NULL || s->ev_out == NULL || s->dma_out == NULL)
		return error_set(cause, "out of memory");
	/* Every request has at least one row, so a batch holds at most n of each tensor. */
	if (device_copy_table_create(dev, (size_t)n * (size_t)q->model->ninputs, &s->gather, cause) != 0 ||
	    device_copy_table_create(dev, (size_t)n * (size_t)q->model->noutputs, &s->scatter, cause) != 0)
		return -1;
	if (model_exec_create(q->model, &s->exec, cause) != 0 ||
	    device_event_create(dev, &s->ev_begin, cause) != 0 ||
	    device_event_create(dev, &s->ev_compute0, cause) != 0 ||
	    device_event_create(dev, &s->ev_compute1, cause) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (device_event_create(dev, &s->ev_in[i], cause) != 0 ||
		    device_event_create(dev, &s->ev_out[i], cause) != 0)
			return -1;
	return 0;
}

/* Free one batch context (partially created ones too). */
static void
slot_free(struct model_queue *q, struct batch_slot *s)
{
	int i;

	for (i = 0; s->ev_in != NULL && i < model_rows_max(q->model); i++) {
		device_event_destroy(s->ev_in[i]);
		device_event_destroy(s->ev_out[i]);
	}
	device_event_destroy(s->ev_begin);
	device_event_destroy(s->ev_compute0);
	device_event_destroy(s->ev_compute1);
	device_copy_table_destroy(s->gather);
	device_copy_table_destroy(s->scatter);
	free(s->dma_out);
	model_exec_free(s->exec);
	free(s->reqs);
	free(s->ev_in);
	free(s->ev_out);
}

/* One batch context, ready to serve: created, its graphs captured on stream s. */
static int
slot_build(struct model_queue *q, struct batch_slot *s, device_stream_t *stream, char **cause)
{
	return slot_create(q, s, cause) != 0 || model_exec_capture(s->exec, stream, q->graph_rows, cause) != 0 ? -1 : 0;
}

/*
 * Whether q builds its contexts after the first in the background: a GPU
 * context costs a few hundred milliseconds of plans and graph captures, and
 * the model can serve from one while the others are made (auto: on a GPU).
 */
static int
contexts_in_background(const struct model_queue *q)
{
	int mode = q->batcher->background_contexts;

	return q->nslots > 1 && (mode > 0 || (mode < 0 && device_is_gpu(q->dev)));
}

/*
 * Allocate q's inflight batch contexts and build the first (all of them
 * when not in the background) on the compute stream, onto the free list.
 * In the background the first is created without its graphs: it serves by
 * running its plans, and the builder captures them once the other contexts
 * serve (a ResNet-50's captures were a quarter of its restart).
 */
int
batcher_contexts_create(struct model_queue *q, int inflight, char **cause)
{
	int i, now, bg;

	q->slots = xcalloc((size_t)inflight, sizeof *q->slots);
	if (q->slots == NULL)
		return error_set(cause, "out of memory");
	q->nslots = inflight;
	bg = contexts_in_background(q);
	now = bg ? 1 : inflight;
	for (i = 0; i < now; i++) {
		if ((bg ? slot_create(q, &q->slots[i], cause) : slot_build(q, &q->slots[i], q->compute, cause)) != 0)
			return error_prefix(cause, "model '%s': batch context %d", q->model->name, i);
		q->slots[i].next = q->free_slots;
		q->free_slots = &q->slots[i];
		q->nbuilt = i + 1;
	}
	q->capture_first = bg;
	return 0;
}

/*
 * Capture the first context's graphs on stream: taken off the free list
 * when it comes back (waiting on q->returned, never on q->work, whose
 * signals belong to the scheduler), captured, put back.  Ends early when
 * q stops; a failed capture leaves the context serving by its plans.
 */
static void
contexts_capture_first(struct model_queue *q, device_stream_t *stream)
{
	struct batch_slot *s = &q->slots[0], **pp = NULL;
	char *cause = NULL;
	uint64_t t0 = clock_now_us();
	int rc;

	pthread_mutex_lock(&q->lock);
	while (!q->stopping) {
		for (pp = &q->free_slots; *pp != NULL && *pp != s; pp = &(*pp)->next)
			;
		if (*pp == s)
			break;
		q->builder_waiting = 1;
		pthread_cond_wait(&q->returned, &q->lock);
		q->builder_waiting = 0;
	}
	if (q->stopping) {
		pthread_mutex_unlock(&q->lock);
		return;
	}
	*pp = s->next;
	q->claimed++;
	pthread_mutex_unlock(&q->lock);
	rc = model_exec_capture(s->exec, stream, q->graph_rows, &cause);
	if (rc != 0)
		LOG_WARN("model '%s': batch context 1 serves without CUDA graphs: %s", q->model->name,
		    cause != NULL ? cause : "?");
	else
		LOG_DEBUG("model '%s': batch context 1's graphs captured in the background in %.3f s", q->model->name,
		    (double)(clock_now_us() - t0) / 1e6);
	free(cause);
	pthread_mutex_lock(&q->lock);
	s->next = q->free_slots;
	q->free_slots = s;
	q->claimed--;
	q->capture_first = 0;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

/* Count device allocations from now on (inferd_allocations_after_startup). */
static void
contexts_set_baseline(batcher_t *b)
{
	if (b->metrics != NULL)
		__atomic_store_n(&b->metrics->allocations_baseline, device_allocation_count(b->dev), __ATOMIC_RELAXED);
}

/* A builder has ended: the last one to end after start-up sets the allocation baseline. */
static void
contexts_builder_done(batcher_t *b)
{
	pthread_mutex_lock(&b->lock);
	if (--b->building == 0 && b->baseline_pending) {
		b->baseline_pending = 0;
		contexts_set_baseline(b);
		LOG_DEBUG("every start-up batch context is built: device allocations counted from here");
	}
	pthread_mutex_unlock(&b->lock);
}

/*
 * The builder: q's contexts after the first, one at a time on a stream of
 * its own (a capture on the compute stream would take in the batches the
 * scheduler launches there), each onto the free list as soon as it is
 * ready, then the first context's graphs.  One that fails is left out with
 * a warning: the model serves on with fewer contexts.  A stopping queue
 * ends it between two contexts.
 */
static void *
contexts_builder_main(void *arg)
{
	struct model_queue *q = arg;
	const model_t *m = q->model;
	device_stream_t *stream = NULL;
	char *cause = NULL;
	uint64_t t0 = clock_now_us();
	int i = q->nbuilt, first = q->nbuilt, stop = 0;

	if (device_stream_create(q->dev, DEVICE_STREAM_COMPUTE, &stream, &cause) == 0)
		for (; i < q->nslots; i++) {
			pthread_mutex_lock(&q->lock);
			stop = q->stopping;
			pthread_mutex_unlock(&q->lock);
			if (stop || slot_build(q, &q->slots[i], stream, &cause) != 0)
				break;
			pthread_mutex_lock(&q->lock);
			q->slots[i].next = q->free_slots;
			q->free_slots = &q->slots[i];
			q->nbuilt = i + 1;
			pthread_cond_broadcast(&q->work);
			pthread_mutex_unlock(&q->lock);
		}
	if (i < q->nslots && !stop) {
		LOG_WARN("model '%s': batch context %d of %d was not built (%s): it serves with %d", m->name, i + 1,
		    q->nslots, cause != NULL ? cause : "?", i);
		slot_free(q, &q->slots[i]);
		memset(&q->slots[i], 0, sizeof q->slots[i]);
		pthread_mutex_lock(&q->lock);
		q->nslots = q->nbuilt;
		pthread_mutex_unlock(&q->lock);
	} else if (!stop)
		LOG_DEBUG("model '%s': %d more batch contexts built in the background in %.3f s", m->name,
		    q->nslots - first, (double)(clock_now_us() - t0) / 1e6);
	if (!stop && stream != NULL && q->capture_first)
		contexts_capture_first(q, stream);
	device_stream_destroy(stream);
	free(cause);
	contexts_builder_done(q->batcher);
	return NULL;
}

/* Start q's builder when contexts are left to build (its threads already run). */
int
batcher_contexts_start_builder(struct model_queue *q, char **cause)
{
	batcher_t *b = q->batcher;
	int rc;

	if (q->nbuilt == q->nslots)
		return 0;
	pthread_mutex_lock(&b->lock);
	b->building++;
	pthread_mutex_unlock(&b->lock);
	if ((rc = pthread_create(&q->builder, NULL, contexts_builder_main, q)) != 0) {
		contexts_builder_done(b);
		return error_set(cause, "model '%s': pthread_create (batch context builder): %s", q->model->name,
		    strerror(rc));
	}
	q->builder_started = 1;
	return 0;
}

/* Wait for q's builder (the caller has set q->stopping: it ends after the context it is on). */
void
batcher_contexts_join_builder(struct model_queue *q)
{
	if (q->builder_started)
		pthread_join(q->builder, NULL);
	q->builder_started = 0;
}

/* Free q's contexts (the builder joined): built, partly built and never built ones alike. */
void
batcher_contexts_free(struct model_queue *q)
{
	int i;

	for (i = 0; q->slots != NULL && i < q->nslots; i++)
		slot_free(q, &q->slots[i]);
	free(q->slots);
	q->slots = NULL;
}

/* batcher_set_background_contexts: -1 auto (on a GPU), 0 never, 1 always. */
void
batcher_set_background_contexts(batcher_t *b, int mode)
{
	b->background_contexts = mode < 0 ? -1 : mode > 0;
}

/*
 * The start-up loads are done: device allocations are counted from now on
 * (inferd_allocations_after_startup), or from when the last builder still
 * making their contexts ends.
 */
void
batcher_startup_finish(batcher_t *b)
{
	pthread_mutex_lock(&b->lock);
	if (b->building > 0)
		b->baseline_pending = 1;
	else
		contexts_set_baseline(b);
	pthread_mutex_unlock(&b->lock);
}
