/*
 * ipc_client.c: one shared-memory client's life: allocated when its socket is
 * accepted, marked dead (ipc_kill) by whichever part finds it misbehaving or
 * gone, and released by the server thread in the only safe order.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "ipc_impl.h"
#include "log.h"

/* Mark c to be dropped after this event batch, saying why once. */
void
ipc_kill(struct ipc_client *c, enum log_level level, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (c->dead)
		return;
	c->dead = 1;
	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_write(level, "ipc: dropping %s (uid %u): %s", c->label, (unsigned)c->uid, msg);
}

/* Close fd if open and mark it closed. */
void
ipc_close(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

/*
 * Release a client in the only safe order: stop watching its descriptors,
 * let the batcher drop its queued requests and finish those in flight,
 * then unregister and unmap the region, then close the descriptors.
 */
void
ipc_client_free(ipc_server_t *s, struct ipc_client *c)
{
	char *cause = NULL;
	int i;

	if (c->control_fd != -1)
		epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->control_fd, NULL);
	/* The client shares this eventfd: closing ours would not unregister it. */
	if (c->submit_fd != -1)
		epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->submit_fd, NULL);
	/*
	 * Hang up first, then wake a client asleep on its futex word, so it
	 * sees the hang-up at once rather than at its next look.
	 */
	if (c->control_fd != -1)
		(void)shutdown(c->control_fd, SHUT_RDWR);
	if (c->bc != NULL)
		batcher_client_close(s->ctx.batcher, c->bc);
	if (c->ready && c->hdr != NULL)
		ipc_ring_wake(c);
	if (c->registered && device_host_unregister(s->ctx.dev, c->base, &cause) != 0) {
		LOG_ERROR("ipc: %s: unregistering the region: %s", c->label, cause);
		free(cause);
	}
	if (c->base != NULL && munmap(c->base, c->region_bytes) != 0)
		LOG_ERROR("ipc: %s: munmap: %s", c->label, strerror(errno));
	ipc_ring_free(c);
	ipc_close(&c->control_fd);
	ipc_close(&c->region_fd);
	ipc_close(&c->submit_fd);
	ipc_close(&c->doorbell_fd);
	for (i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	if (c->ready)
		METRICS_ADD(s->ctx.metrics->shm_clients, -1);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Allocate a client for an accepted socket (fd and credentials); NULL when out of resources. */
struct ipc_client *
ipc_client_new(ipc_server_t *s, int fd, const struct ucred *cred)
{
	struct ipc_client *c;

	if ((c = xcalloc(1, sizeof *c)) == NULL)
		return NULL;
	if (clock_cond_init(&c->idle) != 0) {
		free(c);
		return NULL;
	}
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		pthread_cond_destroy(&c->idle);
		free(c);
		return NULL;
	}
	c->server = s;
	c->control_fd = fd;
	c->region_fd = c->submit_fd = c->doorbell_fd = -1;
	c->pid = cred->pid;
	c->uid = cred->uid;
	c->gid = cred->gid;
	c->accepted_us = clock_now_us();
	c->control_tag = (struct ipc_tag){ IPC_TAG_CONTROL, c };
	c->submit_tag = (struct ipc_tag){ IPC_TAG_SUBMIT, c };
	snprintf(c->label, sizeof c->label, "shm:%ld", (long)cred->pid);
	return c;
}
