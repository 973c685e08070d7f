/* batcher_clients.c: batch clients, their copy streams and mapped regions, and telling them a request finished. */
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
#include "request_log.h"

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

/* Append r's line to the request log. */
static void
batcher_log_request(struct model_queue *q, const struct batch_request *r, enum batch_status st)
{
	uint64_t now = clock_now_us();
	struct request_log_entry e = {
		.model = q->model->name, .version = q->model->version,
		.status = metrics_reason_label((enum metrics_reason)st), .rows = r->rows,
		.queue_us = (r->start_us != 0 ? r->start_us : now) - r->submit_us, .total_us = now - r->submit_us,
	};

	request_log_write(q->batcher->request_log, &e);
}

/* Count a finished request in the metrics. */
void
batcher_count(struct model_queue *q, struct batch_request *r, enum batch_status st)
{
	if (q->mm == NULL)
		return;
	if (st == BATCH_OK)
		METRICS_ADD(q->mm->success, 1);
	else
		METRICS_ADD(q->mm->failure[(enum metrics_reason)st], 1);	/* same codes */
	if (r != NULL && r->submit_us != 0)
		metrics_count_request(q->mm, clock_now_us() - r->submit_us);
	if (q->batcher->request_log != NULL && r != NULL && r->submit_us != 0)
		batcher_log_request(q, r, st);
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
void
batcher_finish_request(struct model_queue *q, struct batch_request *r,
    enum batch_status st, const char *error)
{
	batch_client_t *c = r->client;

	batcher_count(q, r, st);
	r->done(r, st, st == BATCH_OK ? NULL : (error ? error : batch_status_str(st)));
	client_release(c);
}

/* Finish every request of a detached list with one status. */
void
batcher_finish_list(struct model_queue *q, struct batch_request *list,
    enum batch_status st, const char *error)
{
	struct batch_request *r, *next;

	for (r = list; r != NULL; r = next) {
		next = r->next;
		batcher_finish_request(q, r, st, error);
	}
}

/* c's state on dev, made before any request of c reached a queue there (see batcher_client_on). */
const struct client_device *
batcher_client_device(const batch_client_t *c, const device_t *dev)
{
	int i, n = __atomic_load_n(&c->ndevs, __ATOMIC_ACQUIRE);

	for (i = 1; i < n; i++)
		if (c->devs[i].dev == dev)
			return &c->devs[i];
	return &c->devs[0];
}

/*
 * Make c's state on dev (a queue on another device than the batcher's) if
 * it has none yet: a copy stream, and the region's address there.  Once per
 * client and device, on its first request there.
 */
int
batcher_client_on(batch_client_t *c, device_t *dev, char **cause)
{
	struct client_device *cd;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (batcher_client_device(c, dev)->dev == dev)
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

/* Let batches take c's queued requests in any order (batcher_client_set_unordered). */
void
batcher_client_set_unordered(batch_client_t *c)
{
	c->unordered = 1;
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
		has = batcher_fifo_find(q, c, NULL) != NULL;
		pthread_mutex_unlock(&q->lock);
		if (has)
			break;
	}
	if (q != NULL) {
		q->pins++;
		*list = batcher_take_client_requests(q, c);
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
		batcher_finish_list(q, list, BATCH_CANCELLED, NULL);
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
