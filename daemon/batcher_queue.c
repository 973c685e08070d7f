/* batcher_queue.c: a model queue's client fifos, and when and how its next batch is formed. */
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

/* Append f to the round-robin ring. */
void
batcher_ring_push(struct model_queue *q, struct client_fifo *f)
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
struct batch_request *
batcher_take_expired(struct model_queue *q, uint64_t now)
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

/* Whether no batch of q is in flight: every built batch context is back on the free list (or the builder's). */
static int
queue_idle(const struct model_queue *q)
{
	const struct batch_slot *s;
	int nfree = q->claimed;

	for (s = q->free_slots; s != NULL; s = s->next)
		nfree++;
	return nfree == q->nbuilt;
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
int
batcher_batch_limit(struct model_queue *q, uint64_t now, uint64_t *wake)
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

/*
 * How deep batch formation looks into an unordered client's fifo for a
 * request that fits the batch: deep enough that HTTP's one shared fifo
 * batches past a few heads of other shapes, bounded so that forming a
 * batch stays a short walk under the queue's lock.
 */
#define BATCH_SCAN_DEPTH 64

/*
 * The request of f the batch takes next, or NULL: its head, or for an
 * unordered client its oldest of the first BATCH_SCAN_DEPTH that fits;
 * *prevp gets the request before it (NULL: the head).
 */
static struct batch_request *
fifo_pick(struct model_queue *q, struct batch_slot *s, struct client_fifo *f, int limit,
    struct batch_request **prevp)
{
	struct batch_request *r, *prev = NULL;
	int depth = f->client->unordered ? BATCH_SCAN_DEPTH : 1;

	for (r = f->head; r != NULL && depth-- > 0; prev = r, r = r->next)
		/*
		 * A model with strings runs each request alone: text one client sent
		 * that a Cast cannot parse fails its run, and must not fail another's.
		 */
		if (s->rows + r->rows <= limit && (s->nreqs == 0 ||
		    (!q->model->strings && batcher_pad_agrees(q->model, &s->shape, &r->shape)))) {
			*prevp = prev;
			return r;
		}
	return NULL;
}

/* Unlink r (after prev, NULL for the head) from f; f goes back to the ring's end while it has more. */
static void
fifo_take(struct model_queue *q, struct client_fifo *f, struct batch_request *prev, struct batch_request *r)
{
	if (prev != NULL)
		prev->next = r->next;
	else
		f->head = r->next;
	if (f->tail == r)
		f->tail = prev;
	if (f->head != NULL)
		batcher_ring_push(q, f);
	r->next = NULL;
}

/* Put r into slot s at its next position (q->lock held). */
static void
slot_add(struct model_queue *q, struct batch_slot *s, struct batch_request *r, uint64_t now)
{
	r->slot = s->nreqs;
	r->offset_rows = s->rows;
	r->start_us = now;
	if (s->nreqs == 0) {
		s->first_wait_us = now - r->submit_us;
		s->shape = r->shape;
		batcher_pad_shape(q->model, &s->shape);
	}
	s->reqs[s->nreqs++] = r;
	s->rows += r->rows;
	q->queued--;
	q->queued_rows -= (size_t)r->rows;
	if (q->mm != NULL)
		METRICS_ADD(q->mm->queue_us, now - r->submit_us);
}

/* Whether s holds a request shorter than the batch, and its padding in the metrics. */
static void
slot_count_padding(struct model_queue *q, struct batch_slot *s)
{
	uint64_t pad = 0, run = 0;
	int i, k;

	s->padded = 0;
	if (!q->model->padding.on)
		return;
	for (i = 0; i < s->nreqs; i++) {
		for (k = 0; k < q->model->ninputs; k++)
			s->padded |= batcher_pad_input(q->model, s->reqs[i], &s->shape, k);
		batcher_pad_count(q->model, s->reqs[i], &s->shape, &pad, &run);
	}
	if (q->mm == NULL)
		return;
	METRICS_ADD(q->mm->padded_batches, (uint64_t)s->padded);
	METRICS_ADD(q->mm->pad_positions, pad);
	METRICS_ADD(q->mm->seq_positions, run);
}

/*
 * Fill slot with requests taken round-robin over clients, at most limit
 * rows, all sharing the first one's dims (or its bucket of the padded dim);
 * a client whose next request does not fit waits for a later batch.
 */
static void
form_batch(struct model_queue *q, struct batch_slot *s, int limit, uint64_t now)
{
	struct client_fifo *f;
	struct batch_request *r, *prev;
	size_t misses = 0;

	s->nreqs = 0;
	s->rows = 0;
	/* Stop when full, when empty, or after a whole round where nothing fit. */
	while (s->rows < limit && q->nactive > 0 && misses < q->nactive) {
		f = ring_pop(q);
		if ((r = fifo_pick(q, s, f, limit, &prev)) == NULL) {
			batcher_ring_push(q, f);
			misses++;
			continue;
		}
		misses = 0;
		fifo_take(q, f, prev, r);
		slot_add(q, s, r, now);
	}
	s->shape.rows = s->rows;
	slot_count_padding(q, s);
	if (q->queued == 0)
		q->next_deadline = UINT64_MAX;	/* nothing queued can expire: spares the scan */
}

/* Take a free slot, fill it with up to limit rows and mark q launching (q->lock held, a slot free). */
struct batch_slot *
batcher_take_batch(struct model_queue *q, int limit, uint64_t now)
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
struct batch_slot *
batcher_inline_batch(struct model_queue *q)
{
	uint64_t now, wake = UINT64_MAX;
	int limit;

	if (q->batcher->inline_dispatch && !q->launching && !q->stopping && q->free_slots != NULL) {
		now = clock_now_us();
		if (now < q->next_deadline && (limit = batcher_batch_limit(q, now, &wake)) > 0) {
			if (q->mm != NULL)
				METRICS_ADD(q->mm->inline_batches, 1);
			return batcher_take_batch(q, limit, now);
		}
	}
	pthread_cond_signal(&q->work);
	return NULL;
}

/* The fifo of client c on q, or NULL; *prevp gets the link pointing at it (q->lock held). */
struct client_fifo *
batcher_fifo_find(struct model_queue *q, const batch_client_t *c, struct client_fifo ***prevp)
{
	struct client_fifo **pp;

	for (pp = &q->fifos; *pp != NULL; pp = &(*pp)->next_fifo)
		if ((*pp)->client == c)
			break;
	if (prevp != NULL)
		*prevp = pp;
	return *pp;
}

/* The fifo of req's client on q, made on its first request there (q->lock held). */
struct client_fifo *
batcher_fifo_get(struct model_queue *q, batch_client_t *c)
{
	struct client_fifo *f = batcher_fifo_find(q, c, NULL);

	if (f == NULL && (f = xcalloc(1, sizeof *f)) != NULL) {
		f->client = c;
		f->next_fifo = q->fifos;
		q->fifos = f;
	}
	return f;
}

/* Unlink req from its client's fifo on q if it is there; 1 when it was (q->lock held). */
int
batcher_unqueue(struct model_queue *q, struct batch_request *req)
{
	struct client_fifo *f = batcher_fifo_find(q, req->client, NULL);
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

/* Drop the client's queued requests and its fifo on q; returns them as a list. */
struct batch_request *
batcher_take_client_requests(struct model_queue *q, batch_client_t *c)
{
	struct client_fifo *f, **pp;
	struct batch_request *list = NULL, *r;

	pthread_mutex_lock(&q->lock);
	if ((f = batcher_fifo_find(q, c, &pp)) != NULL) {
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
