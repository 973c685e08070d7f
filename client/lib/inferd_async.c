/*
 * inferd_async.c: per-request completion for threads sharing a connection:
 * callbacks (run on the connection's completion thread), handles (waited
 * for one by one) and cancellation (a CANCEL message to the daemon).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libinferd_impl.h"

/* The completion thread has work: a callback due, or inferd_close. */
static int
inferd__thread_ready(inferd_conn_t *c, void *arg)
{
	(void)arg;
	return c->ncbq > 0 || c->stopping;
}

/* Run the due callbacks one by one, without the lock (lock held on entry and exit). */
static void
inferd__run_callbacks(inferd_conn_t *c)
{
	struct inferd_completion done;
	struct inferd_record *rec;
	inferd_callback_fn cb;
	void *user;
	int idx;

	while (c->ncbq > 0) {
		idx = c->cbq[c->cbq_head];
		c->cbq_head = (c->cbq_head + 1) % c->cq_entries;
		c->ncbq--;
		rec = &c->records[idx];
		done = (struct inferd_completion){ .user_data = rec->user_data, .status = rec->status,
		    .id = rec->id };
		cb = rec->cb;
		user = rec->cb_user;
		/* Freed first, so a callback that submits again finds room. */
		inferd__record_release(c, idx);
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		cb(&done, user);
		pthread_mutex_lock(&c->lock);
	}
}

/*
 * The completion thread: waits like any other thread (taking its turn in
 * poll()) and runs callbacks; after the daemon went away it only runs the
 * ECLOSED callbacks and then sleeps until inferd_close.
 */
static void *
inferd__thread_main(void *arg)
{
	inferd_conn_t *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		inferd__run_callbacks(c);
		if (c->stopping)
			break;
		if (c->closed)
			pthread_cond_wait(&c->cond, &c->lock);
		else
			(void)inferd__await(c, inferd__thread_ready, NULL, -1);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Stop and join the completion thread; callbacks not yet run are dropped. */
void
inferd__async_stop(inferd_conn_t *c)
{
	if (!c->thread_started)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	inferd__wake_poller(c);
	pthread_join(c->thread, NULL);
	c->thread_started = 0;
}

/* Queue a request whose completion goes to a callback. */
int
inferd_submit_cb(inferd_conn_t *c, const struct inferd_request *r, inferd_callback_fn cb, void *user)
{
	struct inferd_request req = INFERD_REQUEST_INIT;
	struct inferd_io outs[INFERD_WIRE_MAX_TENSORS];
	int idx, rc;

	if (c == NULL || r == NULL || cb == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_submit_cb: bad argument (NULL)");
	if ((rc = inferd__request_copy(c, r, &req, outs)) != 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	if (!c->thread_started) {
		if ((rc = pthread_create(&c->thread, NULL, inferd__thread_main, c)) != 0) {
			pthread_mutex_unlock(&c->lock);
			return inferd__fail(INFERD_ESYS, "starting the completion thread: %s", strerror(rc));
		}
		c->thread_started = 1;
	}
	if ((idx = inferd__push(c, &req, INFERD__CALLBACK)) >= 0) {
		c->records[idx].cb = cb;
		c->records[idx].cb_user = user;
	}
	pthread_mutex_unlock(&c->lock);
	return idx < 0 ? idx : 0;
}

/* Queue a request and hand back a handle for it. */
int
inferd_submit_handle(inferd_conn_t *c, const struct inferd_request *r, inferd_handle_t **out)
{
	struct inferd_request req = INFERD_REQUEST_INIT;
	struct inferd_io outs[INFERD_WIRE_MAX_TENSORS];
	inferd_handle_t *h;
	int idx, rc;

	if (out != NULL)
		*out = NULL;
	if (c == NULL || r == NULL || out == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_submit_handle: bad argument (NULL)");
	if ((rc = inferd__request_copy(c, r, &req, outs)) != 0)
		return rc;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	h->conn = c;
	pthread_mutex_lock(&c->lock);
	if ((idx = inferd__push(c, &req, INFERD__HANDLE)) >= 0) {
		c->records[idx].handle = h;
		h->record = idx;
		h->wire = inferd__wire_id(c, idx);
	}
	pthread_mutex_unlock(&c->lock);
	if (idx < 0) {
		free(h);
		return idx;
	}
	*out = h;
	return 0;
}

/* The handle's request completed. */
static int
inferd__handle_ready(inferd_conn_t *c, void *arg)
{
	(void)c;
	return ((inferd_handle_t *)arg)->done;
}

/* Wait for one handle's request. */
int
inferd_handle_wait(inferd_handle_t *h, int timeout_ms, struct inferd_completion *out)
{
	int64_t deadline = timeout_ms < 0 ? -1 : inferd__now_ms() + timeout_ms;
	inferd_conn_t *c;
	int r;

	if (h == NULL || out == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_handle_wait: bad argument (NULL)");
	c = h->conn;
	pthread_mutex_lock(&c->lock);
	r = inferd__await(c, inferd__handle_ready, h, deadline);
	if (h->done) {
		*out = h->completion;
		r = h->completion.status == INFERD_ECLOSED ? inferd__closed(c) : 0;
	} else if (r >= 0) {
		r = inferd__fail(INFERD_EAGAIN, "the request did not complete within %d ms", timeout_ms);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Free a handle; an unfinished request's completion will be dropped. */
void
inferd_handle_free(inferd_handle_t *h)
{
	inferd_conn_t *c;

	if (h == NULL)
		return;
	c = h->conn;
	pthread_mutex_lock(&c->lock);
	if (!h->done && h->record >= 0) {
		c->records[h->record].kind = INFERD__DISCARD;
		c->records[h->record].handle = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	free(h);
}

/* Send CANCEL for each wire id (control lock taken here). */
static int
inferd__send_cancels(inferd_conn_t *c, const uint64_t *ids, int n)
{
	struct {
		struct inferd_wire_msg h;
		struct inferd_wire_cancel m;
	} msg = { { INFERD_WIRE_CANCEL, sizeof(struct inferd_wire_cancel) }, { 0 } };
	ssize_t w;
	int i;

	pthread_mutex_lock(&c->control_lock);
	for (i = 0; i < n; i++) {
		msg.m.user_data = ids[i];
		do
			w = send(c->control_fd, &msg, sizeof msg, MSG_NOSIGNAL);
		while (w == -1 && errno == EINTR);
		if (w != (ssize_t)sizeof msg) {
			pthread_mutex_unlock(&c->control_lock);
			if (w == -1 && (errno == EPIPE || errno == ECONNRESET))
				return inferd__fail(INFERD_ECLOSED, "the daemon closed the connection");
			return inferd__fail(INFERD_ESYS, "sending a cancel: %s",
			    w == -1 ? strerror(errno) : "short write");
		}
	}
	pthread_mutex_unlock(&c->control_lock);
	return n;
}

/* Ask the daemon to cancel every request in flight with user_data. */
int
inferd_cancel(inferd_conn_t *c, uint64_t user_data)
{
	uint64_t *ids;
	uint32_t i;
	int n = 0, r;

	if (c == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_cancel: no connection");
	if ((ids = malloc(c->cq_entries * sizeof *ids)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->cq_entries; i++)
		if (c->records[i].used && !c->records[i].done && c->records[i].user_data == user_data)
			ids[n++] = inferd__wire_id(c, (int)i);
	r = c->closed ? inferd__closed(c) : 0;
	pthread_mutex_unlock(&c->lock);
	if (r == 0)
		r = inferd__send_cancels(c, ids, n);
	free(ids);
	return r;
}

/* Ask the daemon to cancel one handle's request. */
int
inferd_handle_cancel(inferd_handle_t *h)
{
	inferd_conn_t *c;
	uint64_t id;
	int pending, closed;

	if (h == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_handle_cancel: no handle");
	c = h->conn;
	pthread_mutex_lock(&c->lock);
	pending = !h->done;
	closed = c->closed;
	id = h->wire;
	pthread_mutex_unlock(&c->lock);
	if (!pending)
		return 0;
	if (closed)
		return inferd__fail(INFERD_ECLOSED, "the daemon closed the connection");
	return inferd__send_cancels(c, &id, 1);
}
