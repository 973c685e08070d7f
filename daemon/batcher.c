/* batcher.c: per-model queues, fair batch formation across clients, and the copy/compute pipeline. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batcher.h"
#include "clock.h"
#include "alloc.h"
#include "error.h"
#include "log.h"

/*
 * One client's queue on one model queue; linked into the queue's round-robin
 * ring while non-empty.  Made on the client's first request to that queue
 * and owned by the queue (freed when the client closes or the queue goes).
 */
struct client_fifo {
	batch_client_t *client;
	struct batch_request *head, *tail;
	int active;
	struct client_fifo *next_active;
	struct client_fifo *next_fifo;		/* the queue's list of fifos */
};

/*
 * A client's state on one device: the copy stream its requests' DMA copies
 * take there, and its mapped region's address as that device sees it.  The
 * first is the batcher's own device, made with the client; one for another
 * device (a model instance there) is made on the client's first request to
 * it, and all live until the client is closed.
 */
struct client_device {
	device_t *dev;
	device_stream_t *stream;
	char *map_dev;			/* NULL when the region is not mapped */
};

struct batch_client {
	batcher_t *batcher;
	char label[64];
	pthread_mutex_t lock;
	pthread_cond_t idle;
	uint64_t outstanding;		/* queued + in flight, all models */
	int closing;
	char *map_base;			/* batcher_client_map: the region */
	size_t map_bytes;
	struct client_device devs[BATCH_MAX_DEVICES];
	int ndevs;			/* published with release order; entries never change once published */
};

/* One preallocated batch context: buffers, events and the requests it carries. */
struct batch_slot {
	model_exec_t *exec;
	device_event_t **ev_in, **ev_out;	/* one per request position */
	device_event_t *ev_begin, *ev_compute0, *ev_compute1;
	device_copy_table_t *gather, *scatter;	/* mapped tensors: one kernel each way */
	size_t ngather, nscatter;		/* entries of this batch */
	unsigned char *dma_out;			/* per request: 1 when an output went by DMA (ev_out) */
	struct batch_request **reqs;
	int nreqs, rows;
	struct model_shape shape;		/* the dims every request of the batch shares */
	uint64_t seq;
	uint64_t launch_us;			/* host time spent queueing the batch's work */
	uint64_t first_wait_us;			/* how long its first request waited in the queue */
	enum batch_status status;		/* BATCH_OK or why the launch failed */
	char error[256];
	struct batch_slot *next;		/* free list or in-flight FIFO */
};

/* Everything for one model: its queue, its threads and its batch contexts. */
struct model_queue {
	batcher_t *batcher;
	const model_t *model;
	device_t *dev;				/* the model's device: its contexts, streams and events live there */
	struct model_queue *next_queue;		/* the batcher's list (batcher->lock) */
	int pins;				/* batcher_client_close working on it (batcher->lock) */
	int unloading;				/* batcher_detach: refuse with "being unloaded" */
	struct client_fifo *fifos;		/* every client's fifo here (q->lock) */
	uint64_t busy_us;			/* device time of its batches (atomic) */
	struct metrics_model *mm;
	pthread_mutex_t lock;
	pthread_cond_t work;			/* requests arrived, a slot freed, or stopping */
	pthread_cond_t landed;			/* a batch was launched (for the completion thread) */
	struct client_fifo *ring_head, *ring_tail;
	size_t nactive;				/* fifos in the ring */
	size_t queued, queued_rows;
	uint64_t next_deadline;			/* no queued request expires before this */
	struct batch_slot *slots, *free_slots, *inflight_head, *inflight_tail;
	int nslots;
	device_stream_t *compute;
	uint64_t seq;
	int stopping, sched_done;
	int launching;				/* a batch is being formed or launched (by sched_main or a submitter) */
	int completing;				/* a submitter completes the batch it launched (completion thread waits) */
	int draining;				/* the completion thread completes a batch it took off the FIFO */
	pthread_t sched, completion;
	int threads_started;
};

struct batcher {
	device_t *dev;
	struct metrics *metrics;
	int inflight, graph_rows;		/* every queue's batch contexts */
	pthread_mutex_t lock;			/* the queue list, pins, shut */
	pthread_cond_t unpinned;
	struct model_queue *queues;		/* attached queues, newest first */
	device_event_t *ev_epoch;		/* reference point for debug timestamps */
	int shut;
	size_t mapped_max;			/* tensors up to this size go through the batch kernels */
	int busy_clients;			/* clients with a request queued or in flight (atomic) */
	int inline_dispatch;			/* a submitter launches a batch itself when it may */
	int inline_complete;			/* ... and completes it when it has ended by then */
};

#define BATCH_STATUS_TEXT(name, code, err, http, label, text, ctext) [code] = text,
static const char *const status_names[] = {
	INFERD_OUTCOME_MAP(BATCH_STATUS_TEXT)
};
#undef BATCH_STATUS_TEXT

/* Human-readable text of a status. */
const char *
batch_status_str(enum batch_status s)
{
	return (unsigned)s < sizeof status_names / sizeof status_names[0] ? status_names[s] : "unknown";
}

/* The most rows a batch of m holds: max_batch_size, or 1 for a model without a batch dimension. */
static int
model_rows_max(const model_t *m)
{
	return m->max_batch_size > 0 ? m->max_batch_size : 1;
}

/* Count a finished request in the metrics. */
static void
batcher_count(struct model_queue *q, struct batch_request *r, enum batch_status st)
{
	if (q->mm == NULL)
		return;
	if (st == BATCH_OK)
		METRICS_ADD(q->mm->success, 1);
	else
		METRICS_ADD(q->mm->failure[(enum metrics_reason)st], 1);	/* same codes */
	if (r != NULL && r->submit_us != 0)
		METRICS_ADD(q->mm->request_us, clock_now_us() - r->submit_us);
}

/* One request of c is finished: wake batcher_client_close when it was the last. */
static void
client_release(batch_client_t *c)
{
	pthread_mutex_lock(&c->lock);
	if (--c->outstanding == 0) {
		__atomic_sub_fetch(&c->batcher->busy_clients, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&c->idle);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Tell the submitter, count it, and release the client's hold (called without q->lock). */
static void
finish_request(struct model_queue *q, struct batch_request *r,
    enum batch_status st, const char *error)
{
	batch_client_t *c = r->client;

	batcher_count(q, r, st);
	r->done(r, st, st == BATCH_OK ? NULL : (error ? error : batch_status_str(st)));
	client_release(c);
}

/* Finish every request of a detached list with one status. */
static void
finish_list(struct model_queue *q, struct batch_request *list,
    enum batch_status st, const char *error)
{
	struct batch_request *r, *next;

	for (r = list; r != NULL; r = next) {
		next = r->next;
		finish_request(q, r, st, error);
	}
}

/* Append f to the round-robin ring. */
static void
ring_push(struct model_queue *q, struct client_fifo *f)
{
	f->active = 1;
	f->next_active = NULL;
	q->nactive++;
	if (q->ring_tail != NULL)
		q->ring_tail->next_active = f;
	else
		q->ring_head = f;
	q->ring_tail = f;
}

/* Remove and return the ring's first fifo. */
static struct client_fifo *
ring_pop(struct model_queue *q)
{
	struct client_fifo *f = q->ring_head;

	if (f == NULL)
		return NULL;
	q->ring_head = f->next_active;
	if (q->ring_head == NULL)
		q->ring_tail = NULL;
	q->nactive--;
	f->active = 0;
	f->next_active = NULL;
	return f;
}

/* Unlink f from wherever it is in the ring. */
static void
ring_remove(struct model_queue *q, struct client_fifo *f)
{
	struct client_fifo *p, *prev = NULL;

	for (p = q->ring_head; p != NULL; prev = p, p = p->next_active) {
		if (p != f)
			continue;
		if (prev != NULL)
			prev->next_active = p->next_active;
		else
			q->ring_head = p->next_active;
		if (q->ring_tail == p)
			q->ring_tail = prev;
		q->nactive--;
		break;
	}
	f->active = 0;
	f->next_active = NULL;
}

/*
 * Take the expired requests out of every fifo; returns them as a list and
 * sets q->next_deadline to the earliest deadline still queued.  Only called
 * once that deadline has passed, so the scan is not paid on every wake-up.
 */
static struct batch_request *
take_expired(struct model_queue *q, uint64_t now)
{
	struct batch_request *expired = NULL, **tail = &expired;
	struct client_fifo *f, *next;
	uint64_t *earliest = &q->next_deadline;

	*earliest = UINT64_MAX;
	for (f = q->ring_head; f != NULL; f = next) {
		struct batch_request **pp = &f->head, *r, *last = NULL;
		next = f->next_active;
		while ((r = *pp) != NULL) {
			if (r->deadline_us > now) {
				*earliest = r->deadline_us < *earliest ? r->deadline_us : *earliest;
				last = r;
				pp = &r->next;
				continue;
			}
			*pp = r->next;
			q->queued--;
			q->queued_rows -= (size_t)r->rows;
			r->next = NULL;
			*tail = r;
			tail = &r->next;
		}
		f->tail = last;
		if (f->head == NULL)
			ring_remove(q, f);
	}
	return expired;
}

/* Submission time of the oldest queued request (fifo heads hold each client's oldest). */
static uint64_t
oldest_submit(struct model_queue *q)
{
	struct client_fifo *f;
	uint64_t oldest = UINT64_MAX;

	for (f = q->ring_head; f != NULL; f = f->next_active)
		if (f->head != NULL && f->head->submit_us < oldest)
			oldest = f->head->submit_us;
	return oldest;
}

/* Whether no batch of q is in flight: every batch context is back on the free list. */
static int
queue_idle(const struct model_queue *q)
{
	const struct batch_slot *s;
	int nfree = 0;

	for (s = q->free_slots; s != NULL; s = s->next)
		nfree++;
	return nfree == q->nslots;
}

/*
 * Whether waiting cannot grow the batch: the device has no batch of q in
 * flight, or every client with a request pending anywhere in the batcher
 * has one queued here (a client waiting on its queued requests sends no
 * more; an idle client may never send, so it is not waited for).
 */
static int
batch_cannot_grow(const struct model_queue *q)
{
	return queue_idle(q) ||
	    q->nactive >= (size_t)__atomic_load_n(&q->batcher->busy_clients, __ATOMIC_RELAXED);
}

/*
 * How many rows the next batch may hold, or 0 to keep waiting: a full batch
 * or a preferred size goes at once, and so does any batch when waiting
 * cannot grow it (eager_dispatch, the default); otherwise the oldest request
 * waits out max_queue_delay_us for company while earlier batches compute
 * (not while stopping).
 */
static int
batch_limit(struct model_queue *q, uint64_t now, uint64_t *wake)
{
	const struct model_batching *cfg = &q->model->batching;
	int max = model_rows_max(q->model), best = 0, i;
	uint64_t oldest;

	if (q->queued == 0)
		return 0;	/* nothing to batch (oldest_submit would be UINT64_MAX, the wake time past it) */
	if (q->queued_rows >= (size_t)max)
		return max;
	for (i = 0; i < cfg->npreferred; i++)
		if ((size_t)cfg->preferred[i] <= q->queued_rows && cfg->preferred[i] > best)
			best = cfg->preferred[i];
	if (best > 0)
		return best;
	oldest = oldest_submit(q);
	*wake = oldest > UINT64_MAX - cfg->max_queue_delay_us ? UINT64_MAX : oldest + cfg->max_queue_delay_us;
	if (q->stopping || now >= *wake || (cfg->eager_dispatch && batch_cannot_grow(q)))
		return max;
	return 0;
}

/* Whether a and b give every input of m the same non-batch dims. */
static int
shape_agrees(const model_t *m, const struct model_shape *a, const struct model_shape *b)
{
	int i;

	for (i = 0; i < m->ninputs; i++)
		if (memcmp(a->dims[i], b->dims[i], (size_t)m->inputs[i].ndims * sizeof a->dims[i][0]) != 0)
			return 0;
	return 1;
}

/*
 * Fill slot with requests taken round-robin over clients, at most limit rows,
 * all with the dims of the first one taken; a client whose next request does
 * not fit or has other dims waits for a later batch.
 */
static void
form_batch(struct model_queue *q, struct batch_slot *s, int limit, uint64_t now)
{
	struct client_fifo *f;
	struct batch_request *r;
	size_t misses = 0;

	s->nreqs = 0;
	s->rows = 0;
	/* Stop when full, when empty, or after a whole round where nothing fit. */
	while (s->rows < limit && q->nactive > 0 && misses < q->nactive) {
		f = ring_pop(q);
		r = f->head;
		if (s->rows + r->rows > limit ||
		    (s->nreqs > 0 && !shape_agrees(q->model, &s->shape, &r->shape))) {
			ring_push(q, f);
			misses++;
			continue;
		}
		misses = 0;
		f->head = r->next;
		if (f->head == NULL)
			f->tail = NULL;
		else
			ring_push(q, f);
		r->next = NULL;
		r->slot = s->nreqs;
		r->offset_rows = s->rows;
		r->start_us = now;
		if (s->nreqs == 0) {
			s->first_wait_us = now - r->submit_us;
			s->shape = r->shape;
		}
		s->reqs[s->nreqs++] = r;
		s->rows += r->rows;
		q->queued--;
		q->queued_rows -= (size_t)r->rows;
		if (q->mm != NULL)
			METRICS_ADD(q->mm->queue_us, now - r->submit_us);
	}
	s->shape.rows = s->rows;
	if (q->queued == 0)
		q->next_deadline = UINT64_MAX;	/* nothing queued can expire: spares the scan */
}

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

/* c's state on dev, made before any request of c reached a queue there (see client_on). */
static const struct client_device *
client_device(const batch_client_t *c, const device_t *dev)
{
	int i, n = __atomic_load_n(&c->ndevs, __ATOMIC_ACQUIRE);

	for (i = 1; i < n; i++)
		if (c->devs[i].dev == dev)
			return &c->devs[i];
	return &c->devs[0];
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
	const struct client_device *cd = client_device(r->client, q->dev);
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
	const struct client_device *cd = client_device(r->client, q->dev);
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
		src = (const char *)model_exec_output(s->exec, k) + (size_t)r->offset_rows * r->layout.row_bytes[k];
		bytes += r->output_bytes[k];
		if (copy_mapped(q, r->client, cd, r->outputs[k], r->output_bytes[k], &dev)) {
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

static void complete_batch(struct model_queue *q, struct batch_slot *s);

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
	pthread_cond_broadcast(&q->landed);
	pthread_mutex_unlock(&q->lock);
}

/*
 * Launch a formed batch outside the lock (the caller set q->launching, this
 * clears it once the batch is in flight); a failure fails the batch, in
 * order.  submitter: called by batcher_submit's thread, not sched_main.
 */
static void
dispatch(struct model_queue *q, struct batch_slot *s, int submitter)
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

/* Take a free slot, fill it with up to limit rows and mark q launching (q->lock held, a slot free). */
static struct batch_slot *
take_batch(struct model_queue *q, int limit, uint64_t now)
{
	struct batch_slot *s = q->free_slots;

	q->free_slots = s->next;
	q->launching = 1;
	form_batch(q, s, limit, now);
	if (s->nreqs == 0)	/* no request fits the preferred size: take what fits the maximum */
		form_batch(q, s, model_rows_max(q->model), now);
	return s;
}

/*
 * After an enqueue (q->lock held): when the scheduler would dispatch at once
 * and nobody is launching, take the batch here and return it for the
 * caller to dispatch after unlocking (no hand-off to sched_main); NULL
 * leaves the work to sched_main, woken.  Requests past their deadline stay
 * with sched_main, so no done callback runs on the submitter's thread.
 */
static struct batch_slot *
inline_batch(struct model_queue *q)
{
	uint64_t now, wake = UINT64_MAX;
	int limit;

	if (q->batcher->inline_dispatch && !q->launching && !q->stopping && q->free_slots != NULL) {
		now = clock_now_us();
		if (now < q->next_deadline && (limit = batch_limit(q, now, &wake)) > 0) {
			if (q->mm != NULL)
				METRICS_ADD(q->mm->inline_batches, 1);
			return take_batch(q, limit, now);
		}
	}
	pthread_cond_signal(&q->work);
	return NULL;
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
		expired = now >= q->next_deadline ? take_expired(q, now) : NULL;
		if (expired != NULL) {
			pthread_mutex_unlock(&q->lock);
			finish_list(q, expired, BATCH_TIMEOUT, NULL);
			pthread_mutex_lock(&q->lock);
			continue;
		}
		wake = UINT64_MAX;
		limit = batch_limit(q, now, &wake);
		if (limit == 0 || q->free_slots == NULL) {
			/* Wait for company, a free slot, or the first deadline. */
			wake = wake < q->next_deadline ? wake : q->next_deadline;
			if (wake == UINT64_MAX)
				pthread_cond_wait(&q->work, &q->lock);
			else
				clock_cond_wait_until(&q->work, &q->lock, wake);
			continue;
		}
		s = take_batch(q, limit, now);
		pthread_mutex_unlock(&q->lock);
		dispatch(q, s, 0);
		pthread_mutex_lock(&q->lock);
	}
	q->sched_done = 1;
	pthread_cond_broadcast(&q->landed);
	pthread_mutex_unlock(&q->lock);
	return NULL;
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
		finish_request(q, s->reqs[i], st, s->error);
	}
	if (st == BATCH_OK)
		log_batch_timeline(q, s);
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
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

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

/* Set up one model's queue: lock, conds, compute stream, slots, threads. */
static int
queue_create(batcher_t *b, struct model_queue *q, const model_t *m,
    int inflight, int graph_rows, char **cause)
{
	int i, rc;

	q->batcher = b;
	q->model = m;
	q->dev = m->dev;
	q->mm = b->metrics != NULL ? metrics_model_add(b->metrics, m->name) : NULL;
	if ((rc = pthread_mutex_init(&q->lock, NULL)) != 0 || (rc = clock_cond_init(&q->work)) != 0 ||
	    (rc = pthread_cond_init(&q->landed, NULL)) != 0)
		return error_set(cause, "model '%s': pthread init: %s", m->name, strerror(rc));
	if (device_stream_create(q->dev, DEVICE_STREAM_COMPUTE, &q->compute, cause) != 0)
		return error_prefix(cause, "model '%s': compute stream", m->name);
	q->slots = xcalloc((size_t)inflight, sizeof *q->slots);
	if (q->slots == NULL)
		return error_set(cause, "out of memory");
	q->nslots = inflight;
	q->next_deadline = UINT64_MAX;	/* nothing queued yet; enqueue lowers it */
	for (i = 0; i < inflight; i++) {
		if (slot_create(q, &q->slots[i], cause) != 0 ||
		    model_exec_capture(q->slots[i].exec, q->compute, graph_rows, cause) != 0)
			return error_prefix(cause, "model '%s': batch context %d", m->name, i);
		q->slots[i].next = q->free_slots;
		q->free_slots = &q->slots[i];
	}
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
	return 0;
}

/* Stop one queue's threads after draining, then free its resources and q itself. */
static void
queue_destroy(struct model_queue *q)
{
	struct client_fifo *f, *next;
	int i;

	if (q->threads_started) {
		pthread_mutex_lock(&q->lock);
		q->stopping = 1;
		pthread_cond_broadcast(&q->work);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->sched, NULL);
		pthread_join(q->completion, NULL);
	}
	for (i = 0; q->slots != NULL && i < q->nslots; i++)
		slot_free(q, &q->slots[i]);
	free(q->slots);
	for (f = q->fifos; f != NULL; f = next) {
		next = f->next_fifo;
		free(f);
	}
	device_stream_destroy(q->compute);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->landed);
	free(q);
}

/* Record the epoch event once so debug timestamps share an origin. */
static int
batcher_record_epoch(batcher_t *b, char **cause)
{
	device_stream_t *s;
	int r;

	if (device_event_create(b->dev, &b->ev_epoch, cause) != 0 ||
	    device_stream_create(b->dev, DEVICE_STREAM_COPY, &s, cause) != 0)
		return -1;
	r = device_event_record(b->ev_epoch, s, cause) != 0 || device_stream_sync(s, cause) != 0 ? -1 : 0;
	device_stream_destroy(s);
	return r;
}

/* Create a batcher without queues; batcher_attach adds them. */
int
batcher_create(device_t *dev, struct metrics *metrics, int inflight, int graph_rows,
    batcher_t **out, char **cause)
{
	batcher_t *b;
	int rc;

	if (inflight < 1)
		return error_set(cause, "inflight batches must be at least 1");
	if ((b = xcalloc(1, sizeof *b)) == NULL)
		return error_set(cause, "out of memory");
	if ((rc = pthread_mutex_init(&b->lock, NULL)) != 0 || (rc = pthread_cond_init(&b->unpinned, NULL)) != 0) {
		free(b);
		return error_set(cause, "batcher: pthread init: %s", strerror(rc));
	}
	b->dev = dev;
	b->metrics = metrics;
	b->inflight = inflight;
	b->graph_rows = graph_rows;
	b->inline_complete = 1;
	batcher_set_copy_mode(b, BATCH_COPY_AUTO, BATCH_MAPPED_MAX_DEFAULT);
	if (batcher_record_epoch(b, cause) != 0) {
		batcher_free(b);
		return -1;
	}
	*out = b;
	return 0;
}

/* Build a queue for m (contexts, graphs, threads) and start accepting requests for it. */
int
batcher_attach(batcher_t *b, const model_t *m, batcher_queue_t **out, char **cause)
{
	struct model_queue *q = xcalloc(1, sizeof *q);

	if (q == NULL)
		return error_set(cause, "out of memory");
	if (queue_create(b, q, m, b->inflight, b->graph_rows, cause) != 0) {
		queue_destroy(q);
		return -1;
	}
	pthread_mutex_lock(&b->lock);
	if (b->shut) {
		pthread_mutex_unlock(&b->lock);
		queue_destroy(q);
		return error_set(cause, "model '%s': %s", m->name, batch_status_str(BATCH_SHUTDOWN));
	}
	q->next_queue = b->queues;
	b->queues = q;
	pthread_mutex_unlock(&b->lock);
	*out = q;
	return 0;
}

/* Unlink q from the batcher's list and wait until no client close works on it. */
static void
batcher_unlink(batcher_t *b, struct model_queue *q)
{
	struct model_queue **pp;

	pthread_mutex_lock(&b->lock);
	for (pp = &b->queues; *pp != NULL; pp = &(*pp)->next_queue)
		if (*pp == q) {
			*pp = q->next_queue;
			break;
		}
	while (q->pins > 0)
		pthread_cond_wait(&b->unpinned, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

/* Stop accepting for q, finish what it holds, join its threads, free it. */
void
batcher_detach(batcher_t *b, batcher_queue_t *q)
{
	if (q == NULL)
		return;
	pthread_mutex_lock(&q->lock);
	q->unloading = 1;
	pthread_mutex_unlock(&q->lock);
	batcher_unlink(b, q);
	queue_destroy(q);
}

/* Requests queued plus batches in flight. */
size_t
batcher_queue_load(batcher_queue_t *q)
{
	struct batch_slot *s;
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->queued;
	for (s = q->inflight_head; s != NULL; s = s->next)
		n++;
	pthread_mutex_unlock(&q->lock);
	return n;
}

/* Seconds of device time q's batches took so far. */
device_t *
batcher_queue_device(const batcher_queue_t *q)
{
	return q->dev;
}

/* Device seconds of q's batches. */
double
batcher_queue_busy_seconds(const batcher_queue_t *q)
{
	return q != NULL ? (double)__atomic_load_n(&q->busy_us, __ATOMIC_RELAXED) / 1e6 : 0;
}

/* The device memory of q's batch contexts and compute stream, added to *sum. */
void
batcher_queue_memory(const batcher_queue_t *q, struct model_memory *sum)
{
	int i;

	for (i = 0; i < q->nslots; i++)
		if (q->slots[i].exec != NULL)
			model_memory_add(sum, &q->slots[i].exec->memory);
	sum->workspace += device_stream_bytes(q->compute);
}

/* Stop accepting new requests; queued ones still run. */
void
batcher_shutdown(batcher_t *b)
{
	struct model_queue *q;

	pthread_mutex_lock(&b->lock);
	b->shut = 1;
	for (q = b->queues; q != NULL; q = q->next_queue) {
		pthread_mutex_lock(&q->lock);
		q->stopping = 1;
		pthread_cond_broadcast(&q->work);
		pthread_mutex_unlock(&q->lock);
	}
	pthread_mutex_unlock(&b->lock);
}

/* Drain, join and free every queue still attached, then the batcher. */
void
batcher_free(batcher_t *b)
{
	struct model_queue *q;

	if (b == NULL)
		return;
	while ((q = b->queues) != NULL) {
		b->queues = q->next_queue;
		queue_destroy(q);
	}
	device_event_destroy(b->ev_epoch);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->unpinned);
	free(b);
}

/* Parse a copy mode's name. */
int
batch_copy_mode_parse(const char *s, enum batch_copy_mode *out)
{
	static const enum batch_copy_mode modes[] = { BATCH_COPY_AUTO, BATCH_COPY_DMA, BATCH_COPY_MAPPED };
	size_t i;

	for (i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(s, batch_copy_mode_name(modes[i])) == 0) {
			*out = modes[i];
			return 0;
		}
	return -1;
}

/* The copy mode's name. */
const char *
batch_copy_mode_name(enum batch_copy_mode mode)
{
	return mode == BATCH_COPY_DMA ? "dma" : mode == BATCH_COPY_MAPPED ? "mapped" : "auto";
}

/* Whether a submitter completes a batch it launched that has already ended (batcher_set_inline_complete). */
void
batcher_set_inline_complete(batcher_t *b, int on)
{
	b->inline_complete = on != 0;
}

/* Whether a submitter may launch a batch itself (batcher_set_inline_dispatch). */
void
batcher_set_inline_dispatch(batcher_t *b, int on)
{
	b->inline_dispatch = on != 0;
}

/* Resolve the mode into the largest tensor the batch kernels copy. */
void
batcher_set_copy_mode(batcher_t *b, enum batch_copy_mode mode, size_t mapped_max_bytes)
{
	if (mode == BATCH_COPY_DMA)
		b->mapped_max = 0;
	else if (mode == BATCH_COPY_MAPPED || device_is_integrated(b->dev))
		b->mapped_max = SIZE_MAX;
	else
		b->mapped_max = mapped_max_bytes;
}

/* Remember c's region and its device address, unless no tensor will ever be mapped. */
int
batcher_client_map(batcher_t *b, batch_client_t *c, void *base, size_t bytes, char **cause)
{
	void *dev;

	if (b->mapped_max == 0)
		return 0;
	if (base == NULL || bytes == 0)
		return error_set(cause, "client %s: empty region", c->label);
	if (device_host_mapped(b->dev, base, &dev, cause) != 0)
		return error_prefix(cause, "client %s: the region's device address", c->label);
	c->map_base = base;
	c->devs[0].map_dev = dev;
	c->map_bytes = bytes;
	return 0;
}

/* Find the attached queue of model m. */
static struct model_queue *
batcher_queue(batcher_t *b, const model_t *m)
{
	struct model_queue *q;

	pthread_mutex_lock(&b->lock);
	for (q = b->queues; q != NULL && q->model != m; q = q->next_queue)
		;
	pthread_mutex_unlock(&b->lock);
	return q;
}

/* Create a client with its own copy stream. */
int
batcher_client_create(batcher_t *b, const char *label, batch_client_t **out,
    char **cause)
{
	batch_client_t *c;
	int rc;

	if ((c = xcalloc(1, sizeof *c)) == NULL)
		return error_set(cause, "out of memory");
	c->batcher = b;
	snprintf(c->label, sizeof c->label, "%s", label);
	if ((rc = pthread_mutex_init(&c->lock, NULL)) != 0 || (rc = pthread_cond_init(&c->idle, NULL)) != 0) {
		free(c);
		return error_set(cause, "client %s: pthread init: %s", label, strerror(rc));
	}
	c->devs[0].dev = b->dev;
	c->ndevs = 1;
	if (device_stream_create(b->dev, DEVICE_STREAM_COPY, &c->devs[0].stream, cause) != 0) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->idle);
		free(c);
		return error_prefix(cause, "client %s: copy stream", label);
	}
	*out = c;
	return 0;
}

/* The fifo of client c on q, or NULL; *prevp gets the link pointing at it (q->lock held). */
static struct client_fifo *
fifo_find(struct model_queue *q, const batch_client_t *c, struct client_fifo ***prevp)
{
	struct client_fifo **pp;

	for (pp = &q->fifos; *pp != NULL; pp = &(*pp)->next_fifo)
		if ((*pp)->client == c)
			break;
	if (prevp != NULL)
		*prevp = pp;
	return *pp;
}

/* Drop the client's queued requests and its fifo on q; returns them as a list. */
static struct batch_request *
take_client_requests(struct model_queue *q, batch_client_t *c)
{
	struct client_fifo *f, **pp;
	struct batch_request *list = NULL, *r;

	pthread_mutex_lock(&q->lock);
	if ((f = fifo_find(q, c, &pp)) != NULL) {
		list = f->head;
		for (r = list; r != NULL; r = r->next) {
			q->queued--;
			q->queued_rows -= (size_t)r->rows;
		}
		if (f->active)
			ring_remove(q, f);
		*pp = f->next_fifo;
		free(f);
	}
	pthread_mutex_unlock(&q->lock);
	return list;
}

/* Take c's requests off one queue that still has a fifo of c, pinned; NULL when none has. */
static struct model_queue *
client_take_one(batcher_t *b, batch_client_t *c, struct batch_request **list)
{
	struct model_queue *q;
	int has;

	pthread_mutex_lock(&b->lock);
	for (q = b->queues; q != NULL; q = q->next_queue) {
		pthread_mutex_lock(&q->lock);
		has = fifo_find(q, c, NULL) != NULL;
		pthread_mutex_unlock(&q->lock);
		if (has)
			break;
	}
	if (q != NULL) {
		q->pins++;
		*list = take_client_requests(q, c);
	}
	pthread_mutex_unlock(&b->lock);
	return q;
}

/* Cancel queued requests, wait for in-flight ones, free the client. */
void
batcher_client_close(batcher_t *b, batch_client_t *c)
{
	struct batch_request *list = NULL;
	struct model_queue *q;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = 1;
	pthread_mutex_unlock(&c->lock);
	while ((q = client_take_one(b, c, &list)) != NULL) {
		finish_list(q, list, BATCH_CANCELLED, NULL);
		pthread_mutex_lock(&b->lock);
		if (--q->pins == 0)
			pthread_cond_broadcast(&b->unpinned);
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_lock(&c->lock);
	while (c->outstanding > 0)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < c->ndevs; i++)
		device_stream_destroy(c->devs[i].stream);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->idle);
	free(c);
}

/* Turn the single-tensor form into the tensor lists (the model has one fixed-dims input, one output). */
static enum batch_status
submit_single(const model_t *m, struct batch_request *req, char **cause)
{
	int d;

	if (req->output == NULL) {
		error_set(cause, "request lacks its output buffer");
		return BATCH_INVALID;
	}
	if (m->ninputs != 1 || m->noutputs != 1) {
		error_set(cause, "model '%s' has %d inputs and %d outputs: name every tensor", m->name, m->ninputs, m->noutputs);
		return BATCH_INVALID;
	}
	for (d = 0; d < m->inputs[0].ndims; d++) {
		if (m->inputs[0].dims[d] < 0) {
			error_set(cause, "input '%s' has variable dims: give them", m->inputs[0].name);
			return BATCH_INVALID;
		}
		req->shape.dims[0][d] = m->inputs[0].dims[d];
	}
	req->ninputs = req->noutputs = 1;
	req->inputs[0] = req->input;
	req->outputs[0] = req->output;
	req->shape.rows = req->rows;
	if (model_output_layout(m, &req->shape, &req->layout, cause) != 0)
		return BATCH_INVALID;
	req->layout_set = 1;
	req->input_bytes[0] = (size_t)req->rows * model_input_row_bytes(m, 0, &req->shape);
	req->output_bytes[0] = (size_t)req->rows * req->layout.row_bytes[0];
	return BATCH_OK;
}

/* Whether len is exactly rows rows of row bytes (overflow-safe); *want gets the product. */
static int
submit_length_ok(int rows, size_t row, size_t len, size_t *want)
{
	return !__builtin_mul_overflow((size_t)rows, row, want) && *want == len;
}

/* Check every tensor of the list form against the model. */
static enum batch_status
submit_check_tensors(const model_t *m, struct batch_request *req, char **cause)
{
	size_t want = 0;
	int i, nwanted = 0;

	if (req->ninputs != m->ninputs || req->noutputs != m->noutputs) {
		error_set(cause, "model '%s': request has %d inputs and %d outputs, the model %d and %d",
		    m->name, req->ninputs, req->noutputs, m->ninputs, m->noutputs);
		return BATCH_INVALID;
	}
	for (i = 0; i < m->ninputs; i++) {
		if (model_check_dims(m, i, m->inputs[i].ndims, req->shape.dims[i], cause) != 0)
			return BATCH_INVALID;
		if (req->inputs[i] == NULL ||
		    !submit_length_ok(req->rows, model_input_row_bytes(m, i, &req->shape), req->input_bytes[i], &want)) {
			error_set(cause, "input '%s': %zu bytes given, %d rows need %zu", m->inputs[i].name,
			    req->input_bytes[i], req->rows, want);
			return BATCH_INVALID;
		}
	}
	if (!req->layout_set && model_output_layout(m, &req->shape, &req->layout, cause) != 0)
		return BATCH_INVALID;
	req->layout_set = 1;
	for (i = 0; i < m->noutputs; i++) {
		if (req->outputs[i] == NULL)
			continue;
		nwanted++;
		if (!submit_length_ok(req->rows, req->layout.row_bytes[i], req->output_bytes[i], &want)) {
			error_set(cause, "output '%s': %zu bytes given, %d rows need %zu", m->outputs[i].name,
			    req->output_bytes[i], req->rows, want);
			return BATCH_INVALID;
		}
	}
	if (nwanted == 0) {
		error_set(cause, "model '%s': request wants no output", m->name);
		return BATCH_INVALID;
	}
	return BATCH_OK;
}

/*
 * Make c's state on dev (a queue on another device than the batcher's) if
 * it has none yet: a copy stream, and the region's address there.  Once per
 * client and device, on its first request there.
 */
static int
client_on(batch_client_t *c, device_t *dev, char **cause)
{
	struct client_device *cd;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (client_device(c, dev)->dev == dev)
		goto out;
	if (c->ndevs == BATCH_MAX_DEVICES) {
		rc = error_set(cause, "client %s: more than %d devices", c->label, BATCH_MAX_DEVICES);
		goto out;
	}
	cd = &c->devs[c->ndevs];
	cd->dev = dev;
	if (device_stream_create(dev, DEVICE_STREAM_COPY, &cd->stream, cause) != 0) {
		rc = error_prefix(cause, "client %s: copy stream on %s", c->label, device_name(dev));
		goto out;
	}
	if (c->map_base != NULL && device_host_mapped(dev, c->map_base, (void **)&cd->map_dev, cause) != 0) {
		device_stream_destroy(cd->stream);
		rc = error_prefix(cause, "client %s: the region's address on %s", c->label, device_name(dev));
		goto out;
	}
	__atomic_store_n(&c->ndevs, c->ndevs + 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Check what can be checked before queueing. */
static enum batch_status
submit_check(struct model_queue *q, struct batch_request *req, char **cause)
{
	enum batch_status st;

	if (req->client == NULL || req->done == NULL) {
		error_set(cause, "request lacks client, buffers or completion");
		return BATCH_INVALID;
	}
	if (req->rows < 1 || req->rows > model_rows_max(q->model)) {
		error_set(cause, "model '%s': %d rows (must be 1 to %d)", q->model->name, req->rows, model_rows_max(q->model));
		return BATCH_INVALID;
	}
	if (req->device_memory && !device_is_gpu(q->dev)) {
		error_set(cause, "model '%s': an instance on %s cannot read CUDA shared memory", q->model->name,
		    device_name(q->dev));
		return BATCH_INVALID;
	}
	if (req->input != NULL && (st = submit_single(q->model, req, cause)) != BATCH_OK)
		return st;
	req->shape.rows = req->rows;
	if ((st = submit_check_tensors(q->model, req, cause)) != BATCH_OK)
		return st;
	if (q->dev != q->batcher->dev && client_on(req->client, q->dev, cause) != 0)
		return BATCH_INTERNAL;
	return BATCH_OK;
}

/* Why q takes no request now, or BATCH_OK (q->lock held). */
static enum batch_status
enqueue_refusal(struct model_queue *q, char **cause)
{
	if (q->unloading) {
		error_set(cause, "model '%s' is being unloaded", q->model->name);
		return BATCH_INVALID;
	}
	if (q->stopping) {
		error_set(cause, "%s", batch_status_str(BATCH_SHUTDOWN));
		return BATCH_SHUTDOWN;
	}
	if (q->queued >= q->model->batching.max_queue_size) {
		error_set(cause, "model '%s': queue is full (%zu requests waiting)", q->model->name, q->queued);
		return BATCH_BUSY;
	}
	return BATCH_OK;
}

/* The fifo of req's client on q, made on its first request there (q->lock held). */
static struct client_fifo *
enqueue_fifo(struct model_queue *q, batch_client_t *c)
{
	struct client_fifo *f = fifo_find(q, c, NULL);

	if (f == NULL && (f = xcalloc(1, sizeof *f)) != NULL) {
		f->client = c;
		f->next_fifo = q->fifos;
		q->fifos = f;
	}
	return f;
}

/* Append req to its client's fifo (q->lock held); the caller wakes the scheduler or dispatches. */
static enum batch_status
enqueue(struct model_queue *q, struct batch_request *req, char **cause)
{
	const struct model_batching *cfg = &q->model->batching;
	struct client_fifo *f;
	uint64_t timeout = req->timeout_us;
	enum batch_status st;

	if ((st = enqueue_refusal(q, cause)) != BATCH_OK)
		return st;
	pthread_mutex_lock(&req->client->lock);
	if (req->client->closing) {
		pthread_mutex_unlock(&req->client->lock);
		error_set(cause, "client is closing");
		return BATCH_INVALID;
	}
	if ((f = enqueue_fifo(q, req->client)) == NULL) {
		pthread_mutex_unlock(&req->client->lock);
		error_set(cause, "out of memory");
		return BATCH_INTERNAL;
	}
	if (req->client->outstanding++ == 0)
		__atomic_add_fetch(&q->batcher->busy_clients, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&req->client->lock);
	if (timeout == 0 || timeout > cfg->default_timeout_us)
		timeout = cfg->default_timeout_us;
	req->submit_us = clock_now_us();
	req->deadline_us = req->submit_us + timeout;
	if (req->deadline_us < q->next_deadline)
		q->next_deadline = req->deadline_us;
	req->next = NULL;
	if (f->tail != NULL)
		f->tail->next = req;
	else
		f->head = req;
	f->tail = req;
	if (!f->active)
		ring_push(q, f);
	q->queued++;
	q->queued_rows += (size_t)req->rows;
	return BATCH_OK;
}

/* Unlink req from its client's fifo on q if it is there; 1 when it was (q->lock held). */
static int
unqueue(struct model_queue *q, struct batch_request *req)
{
	struct client_fifo *f = fifo_find(q, req->client, NULL);
	struct batch_request *r, *prev = NULL;

	if (f == NULL)
		return 0;
	for (r = f->head; r != NULL && r != req; prev = r, r = r->next)
		;
	if (r == NULL)
		return 0;
	if (prev != NULL)
		prev->next = r->next;
	else
		f->head = r->next;
	if (f->tail == r)
		f->tail = prev;
	if (f->head == NULL && f->active)
		ring_remove(q, f);
	q->queued--;
	q->queued_rows -= (size_t)r->rows;
	return 1;
}

/* Cancel a request still queued on m's queue (any queue when m is NULL). */
int
batcher_cancel(batcher_t *b, const model_t *m, struct batch_request *req)
{
	struct model_queue *q;
	int found = 0;

	if (req == NULL || req->client == NULL)
		return 0;
	pthread_mutex_lock(&b->lock);
	for (q = b->queues; q != NULL; q = q->next_queue) {
		if (m != NULL && q->model != m)
			continue;
		pthread_mutex_lock(&q->lock);
		found = unqueue(q, req);
		pthread_mutex_unlock(&q->lock);
		if (found)
			break;
	}
	if (found)
		q->pins++;	/* finished outside b->lock; detach waits for it */
	pthread_mutex_unlock(&b->lock);
	if (!found)
		return 0;
	finish_request(q, req, BATCH_CANCELLED, "cancelled by the client");
	pthread_mutex_lock(&b->lock);
	if (--q->pins == 0)
		pthread_cond_broadcast(&b->unpinned);
	pthread_mutex_unlock(&b->lock);
	return 1;
}

/*
 * Queues whose dispatch this thread deferred to batcher_defer_end, each
 * pinned (a detach waits) until then.  Per thread: the IPC thread sweeping
 * every client's ring is the user.
 */
#define DEFER_MAX 16
static __thread struct {
	int depth;
	int n;
	struct model_queue *q[DEFER_MAX];
} deferred;

/* Defer q's dispatch (not under q->lock: b->lock is taken); 0 when it cannot be, and the submit dispatches now. */
static int
defer_add(struct model_queue *q)
{
	batcher_t *b = q->batcher;
	int i;

	for (i = 0; i < deferred.n; i++)
		if (deferred.q[i] == q)
			return 1;
	if (deferred.n == DEFER_MAX)
		return 0;
	pthread_mutex_lock(&b->lock);
	q->pins++;
	pthread_mutex_unlock(&b->lock);
	deferred.q[deferred.n++] = q;
	return 1;
}

/* Start a batch of submissions on this thread (nests): their dispatch waits for batcher_defer_end. */
void
batcher_defer_begin(void)
{
	deferred.depth++;
}

/* Dispatch what the submissions since batcher_defer_begin queued: one batch per queue where the rule says go. */
void
batcher_defer_end(void)
{
	struct model_queue *q;
	struct batch_slot *s;
	batcher_t *b;

	if (--deferred.depth > 0)
		return;
	while (deferred.n > 0) {
		q = deferred.q[--deferred.n];
		b = q->batcher;
		pthread_mutex_lock(&q->lock);
		s = inline_batch(q);
		pthread_mutex_unlock(&q->lock);
		if (s != NULL)
			dispatch(q, s, 1);
		pthread_mutex_lock(&b->lock);
		if (--q->pins == 0)
			pthread_cond_broadcast(&b->unpinned);
		pthread_mutex_unlock(&b->lock);
	}
}

/* Queue req on q. */
enum batch_status
batcher_submit_queue(batcher_t *b, batcher_queue_t *q, struct batch_request *req,
    char **cause)
{
	struct batch_slot *s = NULL;
	enum batch_status st;
	int defer;

	(void)b;
	st = submit_check(q, req, cause);
	if (st == BATCH_OK) {
		defer = deferred.depth > 0 && defer_add(q);
		pthread_mutex_lock(&q->lock);
		st = enqueue(q, req, cause);
		if (st == BATCH_OK && !defer)
			s = inline_batch(q);
		pthread_mutex_unlock(&q->lock);
		/* req may be finished (and reused) once s is in flight: not touched after this. */
		if (s != NULL)
			dispatch(q, s, 1);
	}
	if (st != BATCH_OK)
		batcher_count(q, NULL, st);
	return st;
}

/* Queue req for model m (found among the attached queues). */
enum batch_status
batcher_submit(batcher_t *b, const model_t *m, struct batch_request *req,
    char **cause)
{
	struct model_queue *q = batcher_queue(b, m);

	if (q == NULL) {
		error_set(cause, "model '%s' is not served", m->name);
		return BATCH_INVALID;
	}
	return batcher_submit_queue(b, q, req, cause);
}
