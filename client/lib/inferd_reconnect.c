/*
 * inferd_reconnect.c: the reconnect option.  When the daemon has gone away
 * (every request in flight was completed with INFERD_ECLOSED when that was
 * noticed), the next submission or model lookup dials the same socket
 * again and hands over the same region memfd, so the application's tensors
 * stay where they are; the rings restart at zero and the models the
 * application holds get the new daemon's ids.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

/* Pause between attempts while the daemon is not back yet. */
#define INFERD_RECONNECT_PAUSE_MS 50

/* Free the models that a reconnect found gone. */
void
inferd__retired_free(inferd_conn_t *c)
{
	size_t i;

	for (i = 0; i < c->nretired; i++)
		free(c->retired[i]);
	free(c->retired);
	c->retired = NULL;
	c->nretired = 0;
}

/* Keep model m for the application but refuse it from now on (its id is out of range). */
static int
inferd__retire(inferd_conn_t *c, struct inferd_model *m)
{
	struct inferd_model **r = realloc(c->retired, (c->nretired + 1) * sizeof *r);

	if (r == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	c->retired = r;
	m->id = UINT32_MAX;
	c->retired[c->nretired++] = m;
	return 0;
}

/* Give the cached models (old, n of them) the new daemon's ids, by name. */
static int
inferd__remap_models(inferd_conn_t *c, struct inferd_model **old, unsigned n)
{
	struct inferd_model **now, *fresh;
	unsigned i;
	int r = 0;

	unsigned cap = inferd__models_cap(c->nmodels > n ? c->nmodels : n);

	if ((now = calloc(cap, sizeof *now)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	for (i = 0; i < n && r == 0; i++) {
		if (old[i] == NULL)
			continue;
		fresh = NULL;
		r = inferd__model_fetch(c, old[i]->name, old[i]->version, 0, &fresh);
		if (r == 0 && fresh->id < cap && now[fresh->id] == NULL) {
			old[i]->id = fresh->id;
			now[fresh->id] = old[i];
		} else if (r == 0 || r == INFERD_ENOMODEL) {
			r = inferd__retire(c, old[i]);
		}
		free(fresh);
	}
	if (r != 0) {
		free(now);
		return r;
	}
	free(old);
	c->models = now;
	c->models_cap = cap;
	return 0;
}

/* Close the descriptors of the dead connection. */
static void
inferd__drop_fds(inferd_conn_t *c)
{
	if (c->control_fd != -1)
		close(c->control_fd);
	if (c->submit_fd != -1)
		close(c->submit_fd);
	if (c->doorbell_fd != -1)
		close(c->doorbell_fd);
	c->control_fd = c->submit_fd = c->doorbell_fd = -1;
}

/* One attempt: dial, hello, the same region with fresh rings, the models again (both locks held). */
static int
inferd__reconnect_once(inferd_conn_t *c)
{
	struct inferd_wire_server_hello h;
	unsigned old_n = c->nmodels;
	int r;

	inferd__drop_fds(c);
	if ((r = inferd__dial(c->socket_path, &c->control_fd)) != 0 || (r = inferd__server_hello(c, &h)) != 0)
		return r;
	if (h.max_region_bytes < c->region_bytes || h.max_entries < c->cq_entries)
		return inferd__fail(INFERD_EREFUSED, "the restarted daemon takes regions of at most %llu "
		    "bytes and %u ring entries; this connection's are larger",
		    (unsigned long long)h.max_region_bytes, h.max_entries);
	c->sq_tail = c->cq_head = 0;
	__atomic_store_n(&c->hdr->sq_tail, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->hdr->cq_head, 0, __ATOMIC_RELEASE);
	if ((r = inferd__attach(c, c->region_fd)) != 0) {
		c->nmodels = old_n;
		return r;
	}
	if ((r = inferd__remap_models(c, c->models, old_n)) != 0) {
		c->nmodels = old_n;
		return r;
	}
	/* The new daemon may serve other versions of the models: ask for output dims again. */
	__atomic_add_fetch(&c->dims_epoch, 1, __ATOMIC_RELEASE);
	c->closed = 0;
	return 0;
}

/* Try until it works or reconnect_max_ms passes (both locks held). */
static int
inferd__reconnect(inferd_conn_t *c)
{
	int64_t deadline = inferd__now_ms() + c->reconnect_max_ms;
	struct timespec pause = { 0, INFERD_RECONNECT_PAUSE_MS * 1000000L };
	int r;

	while ((r = inferd__reconnect_once(c)) != 0) {
		if (r == INFERD_EREFUSED || r == INFERD_EDENIED || r == INFERD_ENOMEM ||
		    inferd__now_ms() + INFERD_RECONNECT_PAUSE_MS > deadline)
			break;
		nanosleep(&pause, NULL);
	}
	if (r != 0) {
		inferd__drop_fds(c);
		c->closed = 1;
		return inferd__fail(INFERD_ECLOSED, "the daemon went away and reconnecting to %s failed "
		    "within %d ms: %s", c->socket_path, c->reconnect_max_ms, inferd_last_error());
	}
	return 0;
}

/* 1 when the daemon has hung up the control socket (control_lock held). */
static int
inferd__hung_up(inferd_conn_t *c)
{
	struct pollfd p = { c->control_fd, POLLRDHUP, 0 };

	if (c->control_fd == -1)
		return 1;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* Reconnect when the option is on and the daemon is gone (see libinferd_impl.h). */
int
inferd__reconnect_if_needed(inferd_conn_t *c)
{
	int r = 0;

	if (!c->reconnect)
		return 0;
	pthread_mutex_lock(&c->control_lock);
	pthread_mutex_lock(&c->lock);
	if ((!c->closed && inferd__hung_up(c)) || (c->closed && c->inflight > 0))
		inferd__complete_all_closed(c);
	if (c->closed) {
		/* Wake the poller: it sees the hang-up and leaves its wait. */
		while (c->polling) {
			inferd__wake_poller(c);
			pthread_cond_wait(&c->cond, &c->lock);
		}
		r = inferd__reconnect(c);
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}
