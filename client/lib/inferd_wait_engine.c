/*
 * inferd_wait_engine.c: how threads sharing a connection wait.  Completions
 * are read off the ring under the connection's lock by any waiting thread
 * and routed by record: a sync request's record is marked done, a handle
 * gets its completion, a callback is queued for the completion thread and
 * an inferd_submit request is stashed for inferd_wait.  One waiter at a
 * time sleeps in poll() on the doorbell; the others sleep on the condition
 * variable, which is broadcast after every reap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

/* Make the lock, the condition variable (on the monotonic clock) and the wake descriptor. */
int
inferd__sync_init(inferd_conn_t *c)
{
	pthread_condattr_t ca;

	if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&c->cond, &ca) != 0)
		return inferd__fail(INFERD_ESYS, "creating a condition variable failed");
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->alloc_lock, NULL);
	pthread_mutex_init(&c->control_lock, NULL);
	if ((c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		return inferd__fail(INFERD_ESYS, "eventfd: %s", strerror(errno));
	return 0;
}

/* Release what inferd__sync_init made. */
void
inferd__sync_free(inferd_conn_t *c)
{
	if (c->wake_fd != -1)
		close(c->wake_fd);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->alloc_lock);
	pthread_mutex_destroy(&c->control_lock);
}

/* Deliver record idx's outcome the way it was submitted (lock held). */
static void
inferd__route(inferd_conn_t *c, int idx, int status, uint32_t detail)
{
	struct inferd_record *rec = &c->records[idx];
	struct inferd_completion done = { .user_data = rec->user_data, .status = status, .id = rec->id };

	rec->done = 1;
	rec->status = status;
	rec->detail = detail;
	switch (rec->kind) {
	case INFERD__SYNC:
		return;		/* its waiter reads and frees the record */
	case INFERD__CALLBACK:
		c->cbq[(c->cbq_head + c->ncbq++) % c->cq_entries] = idx;
		return;		/* the completion thread frees it after the callback */
	case INFERD__HANDLE:
		rec->handle->completion = done;
		rec->handle->done = 1;
		rec->handle->record = -1;
		break;
	case INFERD__STASH:
		c->nstash_wire--;
		c->stash[(c->stash_head + c->nstash++) % c->cq_entries] = done;
		break;
	case INFERD__DISCARD:
		break;
	}
	inferd__record_release(c, idx);
}

/*
 * Move every published completion off the ring and route it (lock held);
 * then, if the daemon left submissions waiting for completion room, ring
 * its doorbell again.  The number reaped, or INFERD_EPROTO.
 */
static int
inferd__reap(inferd_conn_t *c)
{
	uint32_t tail = __atomic_load_n(&c->hdr->cq_tail, __ATOMIC_ACQUIRE);
	struct inferd_wire_cqe e;
	uint64_t one = 1;
	uint32_t idx;
	int n = 0;

	if (tail - c->cq_head > c->cq_entries)
		return inferd__fail(INFERD_EPROTO, "completion ring corrupt");
	while (c->cq_head != tail) {
		memcpy(&e, &c->cq[c->cq_head & (c->cq_entries - 1)], sizeof e);
		c->cq_head++;
		idx = (uint32_t)e.user_data;
		if (idx >= c->cq_entries || !c->records[idx].used || c->records[idx].done ||
		    inferd__wire_id(c, (int)idx) != e.user_data)
			return inferd__fail(INFERD_EPROTO, "completion for an unknown request");
		c->inflight--;
		n++;
		inferd__route(c, (int)idx, inferd__status_code(e.status), e.detail);
	}
	__atomic_store_n(&c->hdr->cq_head, c->cq_head, __ATOMIC_RELEASE);
	if (n > 0 && __atomic_load_n(&c->hdr->sq_head, __ATOMIC_ACQUIRE) != c->sq_tail)
		(void)!write(c->submit_fd, &one, sizeof one);
	return n;
}

/* The daemon is gone (lock held): every request on the wire completes with INFERD_ECLOSED. */
void
inferd__complete_all_closed(inferd_conn_t *c)
{
	uint32_t i;

	c->closed = 1;
	for (i = 0; i < c->cq_entries; i++)
		if (c->records[i].used && !c->records[i].done) {
			c->inflight--;
			inferd__route(c, (int)i, INFERD_ECLOSED, 0);
		}
	pthread_cond_broadcast(&c->cond);
}

/* Empty the completion doorbell and the wake counter; 1 if the daemon hung up. */
static int
inferd__drain(inferd_conn_t *c)
{
	char buf[256];
	uint64_t v;
	ssize_t n;

	(void)!read(c->wake_fd, &v, sizeof v);
	while ((n = recv(c->doorbell_fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
		;
	return n == 0;
}

/*
 * Sleep in poll() until the doorbell rings, the daemon hangs up, the wake
 * descriptor is written or timeout_ms passes, without the lock: 0 or
 * INFERD_ECLOSED.  The control socket is watched for its hang-up only, so
 * a model reply another thread is reading does not count.
 */
static int
inferd__sleep(inferd_conn_t *c, int timeout_ms)
{
	struct pollfd p[3] = { { c->doorbell_fd, POLLIN, 0 }, { c->control_fd, POLLRDHUP, 0 },
	    { c->wake_fd, POLLIN, 0 } };
	int r;

	do
		r = poll(p, 3, timeout_ms);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		return 0;	/* poll only fails for lack of memory: look again */
	if ((p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) || (p[0].revents & (POLLHUP | POLLERR)))
		return INFERD_ECLOSED;
	if (r > 0 && inferd__drain(c))
		return INFERD_ECLOSED;
	return 0;
}

/* Milliseconds to deadline (-1: forever), 0 once passed. */
static int
inferd__left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - inferd__now_ms();
	return left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* Sleep on the condition variable until broadcast or deadline (lock held). */
static void
inferd__cond_sleep(inferd_conn_t *c, int64_t deadline)
{
	struct timespec ts;

	if (deadline < 0) {
		pthread_cond_wait(&c->cond, &c->lock);
		return;
	}
	ts.tv_sec = (time_t)(deadline / 1000);
	ts.tv_nsec = (long)(deadline % 1000) * 1000000;
	pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

/* Be the one poller for a while: sleep in poll(), then reap and wake the others (lock held). */
static int
inferd__poll_once(inferd_conn_t *c, int64_t deadline)
{
	int r;

	c->polling = 1;
	pthread_mutex_unlock(&c->lock);
	r = inferd__sleep(c, inferd__left(deadline));
	pthread_mutex_lock(&c->lock);
	c->polling = 0;
	if (r == 0)
		r = inferd__reap(c);
	if (r == INFERD_ECLOSED)
		inferd__complete_all_closed(c);
	pthread_cond_broadcast(&c->cond);
	return r < 0 ? r : 0;
}

/* Wait until ready, the deadline, or the daemon's departure (see libinferd_impl.h). */
int
inferd__await(inferd_conn_t *c, int (*ready)(inferd_conn_t *, void *), void *arg, int64_t deadline)
{
	int r;

	for (;;) {
		r = 0;
		if (!c->closed && (r = inferd__reap(c)) > 0)
			pthread_cond_broadcast(&c->cond);
		else if (r < 0)
			return r;
		/* Closed elsewhere (a failed control call): nothing on the wire will complete now. */
		if (c->closed && c->inflight > 0)
			inferd__complete_all_closed(c);
		if (ready(c, arg))
			return 1;
		if (c->closed)
			return inferd__closed(c);
		if (c->stopping || (deadline >= 0 && inferd__left(deadline) == 0))
			return 0;
		if (c->polling)
			inferd__cond_sleep(c, deadline);
		else if ((r = inferd__poll_once(c, deadline)) < 0 && r != INFERD_ECLOSED)
			return r;
	}
}
