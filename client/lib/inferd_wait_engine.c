/*
 * inferd_wait_engine.c: how threads sharing a connection wait.  Completions
 * are read off the ring under the connection's lock by any waiting thread
 * and routed by record: a sync request's record is marked done, a handle
 * gets its completion, a callback is queued for the completion thread and
 * an inferd_submit request is stashed for inferd_wait.  One waiter at a
 * time waits on the completion ring itself: it spins for spin_us, then
 * sleeps in FUTEX_WAIT on the region's cq_wake word, which the daemon
 * wakes only when told (inferd_wire.h); the others sleep on the condition
 * variable, which is broadcast after every reap.  A daemon that dies
 * cannot wake anyone, so the futex sleep is cut into slices of
 * INFERD__HANGUP_CHECK_MS, after each of which the control socket is
 * checked for a hang-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

/* Tell the core we spin (less power, and a hyper-thread sibling runs on). */
static inline void
inferd__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* How often a thread asleep on the futex looks whether the daemon hung up (a dead one wakes nobody). */
#define INFERD__HANGUP_CHECK_MS 100

/* Make the lock and the condition variable (on the monotonic clock). */
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
	return 0;
}

/* Release what inferd__sync_init made. */
void
inferd__sync_free(inferd_conn_t *c)
{
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
 * Move the completions published up to tail off the ring and route them
 * (lock held); the number reaped, or INFERD_EPROTO.
 */
static int
inferd__reap_to(inferd_conn_t *c, uint32_t tail)
{
	struct inferd_wire_cqe e;
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
		if (e.status == INFERD_WIRE_INVALID && e.detail == INFERD_WIRE_DETAIL_DIMS)
			__atomic_add_fetch(&c->dims_epoch, 1, __ATOMIC_RELEASE);
		inferd__route(c, (int)idx, inferd__status_code(e.status), e.detail);
	}
	__atomic_store_n(&c->hdr->cq_head, c->cq_head, __ATOMIC_RELEASE);
	return n;
}

/*
 * For inferd_fd's event loop: empty the doorbell socket, then ask the
 * daemon for a byte again; 1 when completions were published meanwhile
 * (reap again), 0 otherwise.  The fence orders our request before the
 * last look at cq_tail, against the daemon's tail store, fence and look
 * at cq_wake: a completion either is seen here or sends a byte.
 */
static int
inferd__rearm_fd(inferd_conn_t *c)
{
	char buf[256];

	while (recv(c->doorbell_fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
	__atomic_fetch_or(&c->hdr->cq_wake, INFERD_WIRE_WAKE_SOCKET, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&c->hdr->cq_tail, __ATOMIC_ACQUIRE) != c->cq_head;
}

/*
 * Move every published completion off the ring and route it (lock held);
 * then, if the daemon left submissions waiting for completion room, ring
 * its doorbell again (if it sleeps).  The number reaped, or INFERD_EPROTO.
 */
static int
inferd__reap(inferd_conn_t *c)
{
	int n = 0, r;

	do {
		r = inferd__reap_to(c, __atomic_load_n(&c->hdr->cq_tail, __ATOMIC_ACQUIRE));
		if (r < 0)
			return r;
		n += r;
	} while (c->fd_mode && inferd__rearm_fd(c));
	if (n > 0 && __atomic_load_n(&c->hdr->sq_head, __ATOMIC_ACQUIRE) != c->sq_tail)
		inferd__ring_doorbell(c);
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

/* 1 when the daemon hung up the control socket. */
static int
inferd__hung_up_now(inferd_conn_t *c)
{
	struct pollfd p = { c->control_fd, POLLRDHUP, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* 1 when the wait should end: a completion past seen, or inferd_close. */
static int
inferd__ring_moved(inferd_conn_t *c, uint32_t seen)
{
	return __atomic_load_n(&c->hdr->cq_tail, __ATOMIC_ACQUIRE) != seen ||
	    __atomic_load_n(&c->stopping, __ATOMIC_ACQUIRE);
}

/* Spin up to spin_us for the ring to move past seen; 1 when it did. */
static int
inferd__spin(inferd_conn_t *c, uint32_t seen)
{
	struct timespec ts;
	int64_t end, now;
	unsigned i;

	if (c->spin_us <= 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (int64_t)c->spin_us * 1000;
	do {
		for (i = 0; i < 16; i++) {
			if (inferd__ring_moved(c, seen))
				return 1;
			inferd__cpu_relax();
		}
		/* The daemon's threads may need this core: let them run. */
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	} while (now < end);
	return 0;
}

/*
 * Wait without the lock for the completion ring to move past seen: spin,
 * then sleep in FUTEX_WAIT on cq_wake (for at most timeout_ms, and at most
 * a hang-up check's slice).  0, or INFERD_ECLOSED when the daemon hung up.
 * Setting the bit, the full fence and the last look at cq_tail pair with
 * the daemon's tail store, fence and look at cq_wake: no wake-up is lost.
 */
static int
inferd__sleep(inferd_conn_t *c, uint32_t seen, int timeout_ms)
{
	struct timespec ts;
	uint32_t v;
	long r;

	if (inferd__spin(c, seen))
		return 0;
	v = __atomic_or_fetch(&c->hdr->cq_wake, INFERD_WIRE_WAKE_FUTEX, __ATOMIC_SEQ_CST);
	if (inferd__ring_moved(c, seen))
		return 0;
	if (timeout_ms < 0 || timeout_ms > INFERD__HANGUP_CHECK_MS)
		timeout_ms = INFERD__HANGUP_CHECK_MS;
	ts.tv_sec = timeout_ms / 1000;
	ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
	/* Shared, not FUTEX_PRIVATE: the daemon wakes it from its own mapping. */
	r = syscall(SYS_futex, &c->hdr->cq_wake, FUTEX_WAIT, v, &ts, NULL, 0);
	if (inferd__ring_moved(c, seen))
		return 0;
	/* A timeout, or a wake with nothing new (the daemon letting us go): did it hang up? */
	if ((r == 0 || errno == ETIMEDOUT) && inferd__hung_up_now(c))
		return INFERD_ECLOSED;
	return 0;
}

/* Wake the thread asleep on the completion ring (inferd_close, reconnect). */
void
inferd__wake_poller(inferd_conn_t *c)
{
	if (c->hdr == NULL)
		return;
	__atomic_store_n(&c->hdr->cq_wake, c->fd_mode ? INFERD_WIRE_WAKE_SOCKET : 0, __ATOMIC_SEQ_CST);
	(void)syscall(SYS_futex, &c->hdr->cq_wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
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

/*
 * Be the one poller for a while: wait on the ring, then reap and wake the
 * others (lock held).  What the daemon published before hanging up is
 * reaped first; the rest completes with INFERD_ECLOSED.
 */
static int
inferd__poll_once(inferd_conn_t *c, int64_t deadline)
{
	uint32_t seen = c->cq_head;
	int r, n;

	c->polling = 1;
	pthread_mutex_unlock(&c->lock);
	r = inferd__sleep(c, seen, inferd__left(deadline));
	pthread_mutex_lock(&c->lock);
	c->polling = 0;
	n = inferd__reap(c);
	if (r == 0)
		r = n;
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
