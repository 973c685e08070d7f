/* batcher_launch.c: launching a batch (copies, compute) and completing it, the queue's two threads, creating and destroying a queue. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batcher_impl.h"
#include "clock.h"
#include "alloc.h"
#include "error.h"
#include "log.h"

/*
 * Whether a tensor of c at host address p, bytes long, goes through the
 * batch kernels: small enough for the mode, and inside c's mapped region;
 * *dev gets its device address.
 */
static int
copy_mapped(const struct model_queue *q, const batch_client_t *c, const struct client_device *cd,
    const void *p, size_t bytes, void **dev)
{
	const char *h = p;
	size_t off;

	if (cd->map_dev == NULL || bytes > q->batcher->mapped_max || h < c->map_base)
		return 0;
	off = (size_t)(h - c->map_base);
	if (off > c->map_bytes || bytes > c->map_bytes - off)
		return 0;
	*dev = cd->map_dev + off;
	return 1;
}

/* Add one entry to a batch kernel's table (sized at creation for every tensor a batch can hold). */
static void
copy_entry_add(device_copy_table_t *t, size_t *n, void *dst, const void *src, size_t bytes)
{
	struct device_copy_entry *e = &device_copy_entries(t)[(*n)++];

	e->dst = dst;
	e->src = src;
	e->bytes = bytes;
}

/*
 * Queue one request's input copies: small mapped tensors join the batch's
 * gather table, the others are copied on its client's stream, which then
 * marks ev_in for the compute stream to wait on.
 */
static int
launch_copy_in(struct model_queue *q, struct batch_slot *s, int i, char **cause)
{
	struct batch_request *r = s->reqs[i];
	const struct client_device *cd = batcher_client_device(r->client, q->dev);
	device_stream_t *cs = cd->stream;
	size_t bytes = 0;
	void *dev;
	char *dst;
	int k, dma = 0;

	/* The batch's start is only read by the debug timeline: spare the call otherwise. */
	if (i == 0 && log_threshold >= LOG_LEVEL_DEBUG && device_event_record(s->ev_begin, cs, cause) != 0)
		return -1;
	for (k = 0; k < r->ninputs; k++) {
		dst = (char *)model_exec_input(s->exec, k) +
		    (size_t)r->offset_rows * model_input_row_bytes(q->model, k, &s->shape);
		bytes += r->input_bytes[k];
		if (s->padded && batcher_pad_input(q->model, r, &s->shape, k)) {
			if (batcher_pad_copy_in(q, cs, r, &s->shape, k, dst, cause) != 0)
				return -1;
			dma = 1;
			continue;
		}
		if (copy_mapped(q, r->client, cd, r->inputs[k], r->input_bytes[k], &dev)) {
			copy_entry_add(s->gather, &s->ngather, dst, dev, r->input_bytes[k]);
			continue;
		}
		if (device_copy_h2d(cs, dst, r->inputs[k], r->input_bytes[k], cause) != 0)
			return -1;
		dma = 1;
	}
	if (dma && (device_event_record(s->ev_in[i], cs, cause) != 0 ||
	    device_stream_wait_event(q->compute, s->ev_in[i], cause) != 0))
		return -1;
	if (q->batcher->metrics != NULL)
		METRICS_ADD(q->batcher->metrics->bytes_h2d, bytes);
	return 0;
}

/*
 * One request's wanted outputs, in two passes.  Pass 0 (before ev_compute1):
 * small mapped tensors join the scatter table; dma_out[i] says whether any
 * other is left.  Pass 1 (after it): those are copied on the client's
 * stream once the compute (and scatter) are done, marked by ev_out.
 */
static int
launch_copy_out(struct model_queue *q, struct batch_slot *s, int i, int pass, char **cause)
{
	struct batch_request *r = s->reqs[i];
	const struct client_device *cd = batcher_client_device(r->client, q->dev);
	device_stream_t *cs = cd->stream;
	size_t bytes = 0;
	const char *src;
	void *dev;
	int k;

	if (pass == 0)
		s->dma_out[i] = 0;
	else if (device_stream_wait_event(cs, s->ev_compute1, cause) != 0)
		return -1;
	for (k = 0; k < r->noutputs; k++) {
		if (r->outputs[k] == NULL)
			continue;
		src = (const char *)model_exec_output(s->exec, k) +
		    (size_t)r->offset_rows * (s->padded ? s->layout.row_bytes[k] : r->layout.row_bytes[k]);
		bytes += r->output_bytes[k];
		if (s->padded && batcher_pad_output(q->model, r, &s->layout, k)) {
			/* A slice of strided rows: copies of its runs, after the compute. */
			if (pass == 0)
				s->dma_out[i] = 1;
			else if (batcher_pad_copy_out(q->model, cs, r, &s->layout, k, src, cause) != 0)
				return -1;
		} else if (copy_mapped(q, r->client, cd, r->outputs[k], r->output_bytes[k], &dev)) {
			if (pass == 0)
				copy_entry_add(s->scatter, &s->nscatter, dev, src, r->output_bytes[k]);
		} else if (pass == 0)
			s->dma_out[i] = 1;
		else if (device_copy_d2h(cs, r->outputs[k], src, r->output_bytes[k], cause) != 0)
			return -1;
	}
	if (pass == 1 && device_event_record(s->ev_out[i], cs, cause) != 0)
		return -1;
	if (pass == 0 && q->batcher->metrics != NULL)
		METRICS_ADD(q->batcher->metrics->bytes_d2h, bytes);
	return 0;
}

/*
 * Queue the whole batch: copies in (DMA on client streams, the gather
 * kernel on the compute stream), compute, the scatter kernel, then the
 * batch's one event ev_compute1, then the DMA copies out on client streams;
 * see docs/ARCHITECTURE.md.
 */
static int
launch_batch(struct model_queue *q, struct batch_slot *s, char **cause)
{
	int i;

	s->ngather = s->nscatter = 0;
	if (s->padded && batcher_pad_layout(q->model, s, cause) != 0)
		return -1;
	for (i = 0; i < s->nreqs; i++)
		if (launch_copy_in(q, s, i, cause) != 0)
			return -1;
	if (device_copy_batch(q->compute, s->gather, s->ngather, cause) != 0 ||
	    device_event_record(s->ev_compute0, q->compute, cause) != 0 ||
	    model_exec_run(s->exec, &s->shape, q->compute, cause) != 0)
		return -1;
	for (i = 0; i < s->nreqs; i++)
		if (launch_copy_out(q, s, i, 0, cause) != 0)
			return -1;
	/* One event covers the compute and every mapped output (the scatter is a few microseconds of it). */
	if (device_copy_batch(q->compute, s->scatter, s->nscatter, cause) != 0 ||
	    device_event_record(s->ev_compute1, q->compute, cause) != 0)
		return -1;
	for (i = 0; i < s->nreqs; i++)
		if (s->dma_out[i] && launch_copy_out(q, s, i, 1, cause) != 0)
			return -1;
	return 0;
}

/* Hand a launched slot to the completion thread. */
static void
push_inflight(struct model_queue *q, struct batch_slot *s)
{
	s->next = NULL;
	if (q->inflight_tail != NULL)
		q->inflight_tail->next = s;
	else
		q->inflight_head = s;
	q->inflight_tail = s;
	pthread_cond_signal(&q->landed);
}

/* Debug line with the batch's device timeline, relative to the batcher's epoch event. */
static void
log_batch_timeline(struct model_queue *q, struct batch_slot *s)
{
	double t_begin = 0, t_c0 = 0, t_c1 = 0, t_end = 0;
	device_event_t *epoch = q->batcher->ev_epoch;

	/* Events of two devices have no common clock: the timeline covers the batcher's device. */
	if (log_threshold < LOG_LEVEL_DEBUG || q->dev != q->batcher->dev)
		return;
	if (device_event_elapsed_us(epoch, s->ev_begin, &t_begin, NULL) != 0 ||
	    device_event_elapsed_us(epoch, s->ev_compute0, &t_c0, NULL) != 0 ||
	    device_event_elapsed_us(epoch, s->ev_compute1, &t_c1, NULL) != 0 ||
	    device_event_elapsed_us(epoch, s->dma_out[s->nreqs - 1] ? s->ev_out[s->nreqs - 1] : s->ev_compute1,
	    &t_end, NULL) != 0)
		return;
	LOG_DEBUG("batch model=%s seq=%llu rows=%d requests=%d queued=%lluus launch=%lluus copy_in_start=%.1fus compute=[%.1f, %.1f]us copies_done=%.1fus",
	    q->model->name, (unsigned long long)s->seq, s->rows, s->nreqs,
	    (unsigned long long)s->first_wait_us, (unsigned long long)s->launch_us,
	    t_begin, t_c0, t_c1, t_end);
}

/* Count the batch once its compute has finished (before any client hears of it). */
static enum batch_status
account_batch(struct model_queue *q, struct batch_slot *s)
{
	double compute_us = 0;
	char *cause = NULL;

	if (device_event_sync(s->ev_compute1, &cause) != 0) {
		LOG_ERROR("model '%s': waiting for batch: %s", q->model->name, cause);
		snprintf(s->error, sizeof s->error, "inference failed: %s", cause);
		free(cause);
		return BATCH_INTERNAL;
	}
	if (device_event_elapsed_us(s->ev_compute0, s->ev_compute1, &compute_us, NULL) != 0)
		compute_us = 0;
	if (q->mm != NULL)
		metrics_count_batch(q->mm, s->rows, (uint64_t)compute_us);
	METRICS_ADD(q->busy_us, (uint64_t)compute_us);
	return BATCH_OK;
}

/* Wait for e; on failure log it, keep the message in s->error and return BATCH_INTERNAL. */
static enum batch_status
sync_copy(struct model_queue *q, struct batch_slot *s, device_event_t *e)
{
	char *cause = NULL;

	if (device_event_sync(e, &cause) == 0)
		return BATCH_OK;
	LOG_ERROR("model '%s': waiting for batch: %s", q->model->name, cause);
	snprintf(s->error, sizeof s->error, "inference failed: %s", cause);
	free(cause);
	return BATCH_INTERNAL;
}

/* Wait for the batch (its compute and scatter), then for each request's own DMA copy-out in order, and tell its client at once. */
static void
complete_batch(struct model_queue *q, struct batch_slot *s)
{
	enum batch_status st = s->status;
	int i;

	if (st == BATCH_OK)
		st = account_batch(q, s);
	for (i = 0; i < s->nreqs; i++) {
		if (st == BATCH_OK && s->dma_out[i])
			st = sync_copy(q, s, s->ev_out[i]);
		batcher_finish_request(q, s->reqs[i], st, s->error);
	}
	if (st == BATCH_OK)
		log_batch_timeline(q, s);
}

/*
 * Complete a batch on the thread that launched it (q->completing set by
 * it): finish its requests and free its context.  q is not touched after
 * the last unlock: a detach may free it then.
 */
static void
complete_inline(struct model_queue *q, struct batch_slot *s)
{
	complete_batch(q, s);
	if (q->mm != NULL)
		METRICS_ADD(q->mm->inline_completions, 1);
	pthread_mutex_lock(&q->lock);
	s->next = q->free_slots;
	q->free_slots = s;
	q->completing = 0;
	pthread_cond_signal(&q->work);
	if (q->builder_waiting)
		if (q->builder_waiting)
			pthread_cond_broadcast(&q->returned);
	pthread_cond_broadcast(&q->landed);
	pthread_mutex_unlock(&q->lock);
}

/*
 * Launch a formed batch outside the lock (the caller set q->launching, this
 * clears it once the batch is in flight); a failure fails the batch, in
 * order.  submitter: called by batcher_submit's thread, not sched_main.
 */
void
batcher_dispatch(struct model_queue *q, struct batch_slot *s, int submitter)
{
	char *cause = NULL;
	int ended, own;

	s->status = BATCH_OK;
	s->error[0] = '\0';
	s->launch_us = clock_now_us();
	if (launch_batch(q, s, &cause) != 0) {
		LOG_ERROR("model '%s': batch of %d rows failed to launch: %s", q->model->name, s->rows, cause);
		s->status = BATCH_INTERNAL;
		snprintf(s->error, sizeof s->error, "inference failed: %s", cause ? cause : "device error");
		free(cause);
		/* What was queued reads this context's copy tables: let it finish before the context is reused. */
		if (device_stream_sync(q->compute, NULL) != 0)
			LOG_ERROR("model '%s': the compute stream failed too", q->model->name);
	}
	s->launch_us = clock_now_us() - s->launch_us;
	/*
	 * A batch that has already ended (the CPU backend computes at launch) is
	 * completed here rather than by waking the completion thread, unless an
	 * earlier one is still to be completed (completions keep launch order).
	 */
	ended = submitter && q->batcher->inline_complete && s->status == BATCH_OK &&
	    device_event_query(s->ev_compute1, NULL) == 1;
	pthread_mutex_lock(&q->lock);
	s->seq = q->seq++;
	own = ended && q->inflight_head == NULL && !q->completing && !q->draining;
	if (own)
		q->completing = 1;
	else
		push_inflight(q, s);
	q->launching = 0;
	/* A submitter launched it: the scheduler may have work it deferred meanwhile, or must stop. */
	if (submitter && (q->queued > 0 || q->stopping))
		pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	if (own)
		complete_inline(q, s);
}

/* The scheduling thread of one model: wait, form fair batches, launch them. */
static void *
sched_main(void *arg)
{
	struct model_queue *q = arg;
	struct batch_request *expired;
	uint64_t now, wake;
	struct batch_slot *s;
	int limit;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		if (q->launching) {
			/* A submitter is launching: never two launches at once (launch order is completion order). */
			pthread_cond_wait(&q->work, &q->lock);
			continue;
		}
		if (q->queued == 0) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->work, &q->lock);
			continue;
		}
		now = clock_now_us();
		expired = now >= q->next_deadline ? batcher_take_expired(q, now) : NULL;
		if (expired != NULL) {
			pthread_mutex_unlock(&q->lock);
			batcher_finish_list(q, expired, BATCH_TIMEOUT, NULL);
			pthread_mutex_lock(&q->lock);
			continue;
		}
		wake = UINT64_MAX;
		limit = batcher_batch_limit(q, now, &wake);
		if (limit == 0 || q->free_slots == NULL) {
			/* Wait for company, a free slot, or the first deadline. */
			wake = wake < q->next_deadline ? wake : q->next_deadline;
			if (wake == UINT64_MAX)
				pthread_cond_wait(&q->work, &q->lock);
			else
				clock_cond_wait_until(&q->work, &q->lock, wake);
			continue;
		}
		s = batcher_take_batch(q, limit, now);
		pthread_mutex_unlock(&q->lock);
		batcher_dispatch(q, s, 0);
		pthread_mutex_lock(&q->lock);
	}
	q->sched_done = 1;
	pthread_cond_broadcast(&q->landed);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* The completion thread of one model: finish launched batches in launch order. */
static void *
completion_main(void *arg)
{
	struct model_queue *q = arg;
	struct batch_slot *s;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		/* A submitter completing its own batch goes first: it was launched before any queued here. */
		if (q->inflight_head == NULL || q->completing) {
			if (q->sched_done && !q->completing)
				break;
			pthread_cond_wait(&q->landed, &q->lock);
			continue;
		}
		s = q->inflight_head;
		q->inflight_head = s->next;
		if (q->inflight_head == NULL)
			q->inflight_tail = NULL;
		q->draining = 1;
		pthread_mutex_unlock(&q->lock);
		complete_batch(q, s);
		pthread_mutex_lock(&q->lock);
		q->draining = 0;
		s->next = q->free_slots;
		q->free_slots = s;
		pthread_cond_signal(&q->work);
		if (q->builder_waiting)
		if (q->builder_waiting)
			pthread_cond_broadcast(&q->returned);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* Set up one model's queue: lock, conds, compute stream, batch contexts, threads (and the contexts' builder). */
int
batcher_queue_create(batcher_t *b, struct model_queue *q, const model_t *m,
    int inflight, int graph_rows, char **cause)
{
	int rc;

	q->batcher = b;
	q->model = m;
	q->dev = m->dev;
	q->graph_rows = graph_rows;
	q->mm = b->metrics != NULL ? metrics_model_add(b->metrics, m->name) : NULL;
	if ((rc = pthread_mutex_init(&q->lock, NULL)) != 0 || (rc = clock_cond_init(&q->work)) != 0 ||
	    (rc = pthread_cond_init(&q->landed, NULL)) != 0 || (rc = pthread_cond_init(&q->returned, NULL)) != 0)
		return error_set(cause, "model '%s': pthread init: %s", m->name, strerror(rc));
	if (device_stream_create(q->dev, DEVICE_STREAM_COMPUTE, &q->compute, cause) != 0)
		return error_prefix(cause, "model '%s': compute stream", m->name);
	if (batcher_pad_create(q, cause) != 0)
		return -1;
	q->next_deadline = UINT64_MAX;	/* nothing queued yet; enqueue lowers it */
	if (batcher_contexts_create(q, inflight, cause) != 0)
		return -1;
	if ((rc = pthread_create(&q->sched, NULL, sched_main, q)) != 0)
		return error_set(cause, "model '%s': pthread_create: %s", m->name, strerror(rc));
	if ((rc = pthread_create(&q->completion, NULL, completion_main, q)) != 0) {
		pthread_mutex_lock(&q->lock);
		q->stopping = 1;
		pthread_cond_broadcast(&q->work);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->sched, NULL);
		return error_set(cause, "model '%s': pthread_create: %s", m->name, strerror(rc));
	}
	q->threads_started = 1;
	return batcher_contexts_start_builder(q, cause);
}

/* Stop one queue's threads (its builder first) after draining, then free its resources and q itself. */
void
batcher_queue_destroy(struct model_queue *q)
{
	struct client_fifo *f, *next;

	if (q->threads_started) {
		pthread_mutex_lock(&q->lock);
		q->stopping = 1;
		pthread_cond_broadcast(&q->work);
		pthread_cond_broadcast(&q->returned);
		pthread_mutex_unlock(&q->lock);
		batcher_contexts_join_builder(q);
		pthread_join(q->sched, NULL);
		pthread_join(q->completion, NULL);
	}
	batcher_contexts_free(q);
	for (f = q->fifos; f != NULL; f = next) {
		next = f->next_fifo;
		free(f);
	}
	batcher_pad_free(q);
	device_stream_destroy(q->compute);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->landed);
	pthread_cond_destroy(&q->returned);
	free(q);
}
