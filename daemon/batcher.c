/* batcher.c: the batcher's public entry points: create, attach and detach queues, check and submit requests. */
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
	b->background_contexts = -1;
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
	if (batcher_queue_create(b, q, m, b->inflight, b->graph_rows, cause) != 0) {
		batcher_queue_destroy(q);
		return -1;
	}
	pthread_mutex_lock(&b->lock);
	if (b->shut) {
		pthread_mutex_unlock(&b->lock);
		batcher_queue_destroy(q);
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
	batcher_queue_destroy(q);
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

/* Set the request log (batcher_set_request_log). */
void
batcher_set_request_log(batcher_t *b, struct request_log *l)
{
	b->request_log = l;
}

/* Requests queued on q and batches in flight there now (for the gauges of /metrics). */
void
batcher_queue_depth(batcher_queue_t *q, size_t *queued, size_t *inflight)
{
	struct batch_slot *s;

	pthread_mutex_lock(&q->lock);
	*queued = q->queued;
	*inflight = 0;
	for (s = q->inflight_head; s != NULL; s = s->next)
		(*inflight)++;
	pthread_mutex_unlock(&q->lock);
}

/* The device q's instance runs on. */
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

/*
 * The device memory of q's batch contexts and compute stream, added to *sum.
 * A context the builder has yet to make counts as the first one's size (the
 * same model and shapes: the same arena, plans and graphs).
 */
void
batcher_queue_memory(batcher_queue_t *q, struct model_memory *sum)
{
	int i;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < q->nslots; i++)
		if (q->slots[i < q->nbuilt ? i : 0].exec != NULL)
			model_memory_add(sum, &q->slots[i < q->nbuilt ? i : 0].exec->memory);
	pthread_mutex_unlock(&q->lock);
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
		pthread_cond_broadcast(&q->returned);
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
		batcher_queue_destroy(q);
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
	if (q->dev != q->batcher->dev && batcher_client_on(req->client, q->dev, cause) != 0)
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
	if ((f = batcher_fifo_get(q, req->client)) == NULL) {
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
		batcher_ring_push(q, f);
	q->queued++;
	q->queued_rows += (size_t)req->rows;
	return BATCH_OK;
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
		found = batcher_unqueue(q, req);
		pthread_mutex_unlock(&q->lock);
		if (found)
			break;
	}
	if (found)
		q->pins++;	/* finished outside b->lock; detach waits for it */
	pthread_mutex_unlock(&b->lock);
	if (!found)
		return 0;
	batcher_finish_request(q, req, BATCH_CANCELLED, "cancelled by the client");
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
		s = batcher_inline_batch(q);
		pthread_mutex_unlock(&q->lock);
		if (s != NULL)
			batcher_dispatch(q, s, 1);
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
			s = batcher_inline_batch(q);
		pthread_mutex_unlock(&q->lock);
		/* req may be finished (and reused) once s is in flight: not touched after this. */
		if (s != NULL)
			batcher_dispatch(q, s, 1);
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
