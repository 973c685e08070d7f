/* ipc.c: the shared-memory IPC server: the socket, one epoll thread for every client, orderly release. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "ipc_impl.h"
#include "log.h"

/* Refuse a connection with a message; counted in inferd_shm_clients_refused_total. */
static void
ipc_refuse(ipc_server_t *s, int fd, const struct ucred *cred,
    enum inferd_wire_error code, const char *why)
{
	LOG_WARN("ipc: refused pid %ld (uid %u): %s", (long)cred->pid, (unsigned)cred->uid, why);
	ipc_conn_send_error(fd, code, "%s", why);
	METRICS_ADD(s->ctx.metrics->shm_clients_refused, 1);
	close(fd);
}

/* Admit an accepted socket: credentials, allow list, client limit, then greet. */
static void
ipc_admit(ipc_server_t *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct ucred cred;
	socklen_t len = sizeof cred;
	struct ipc_client *c;
	char why[192];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
		LOG_WARN("ipc: SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return;
	}
	if (!peer_auth_allows(&s->auth, fd, cred.uid, cred.gid)) {
		snprintf(why, sizeof why, "user %u (group %u) is not allowed to connect "
		    "(see allow_users and allow_groups)", (unsigned)cred.uid, (unsigned)cred.gid);
		ipc_refuse(s, fd, &cred, INFERD_WIRE_ERR_DENIED, why);
		return;
	}
	if (s->nclients >= (size_t)s->ctx.config->max_clients) {
		snprintf(why, sizeof why, "too many clients (max_clients = %d)",
		    s->ctx.config->max_clients);
		ipc_refuse(s, fd, &cred, INFERD_WIRE_ERR_TOO_MANY, why);
		return;
	}
	if (__atomic_load_n(&s->shutting_down, __ATOMIC_ACQUIRE)) {
		ipc_refuse(s, fd, &cred, INFERD_WIRE_ERR_SHUTDOWN, "the daemon is shutting down");
		return;
	}
	if ((c = ipc_client_new(s, fd, &cred)) == NULL) {
		ipc_refuse(s, fd, &cred, INFERD_WIRE_ERR_INTERNAL, "out of memory");
		return;
	}
	ev.data.ptr = &c->control_tag;
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0 || ipc_conn_greet(s, c) != 0) {
		LOG_WARN("ipc: %s: cannot start the conversation: %s", c->label, strerror(errno));
		ipc_client_free(s, c);
		return;
	}
	c->next = s->clients;
	s->clients = c;
	s->nclients++;
	LOG_DEBUG("ipc: %s connected (uid %u)", c->label, (unsigned)c->uid);
}

/*
 * Accept what is pending.  Out of descriptors, the spare one is given up
 * for a moment so the peer can be told and closed instead of spinning.
 */
static void
ipc_accept(ipc_server_t *s)
{
	int fd, i;

	for (i = 0; i < 64; i++) {
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1 && (errno == EMFILE || errno == ENFILE) && s->spare_fd != -1) {
			ipc_close(&s->spare_fd);
			fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd != -1) {
				LOG_WARN("ipc: out of file descriptors: refusing a connection");
				ipc_conn_send_error(fd, INFERD_WIRE_ERR_TOO_MANY, "the daemon is out of file descriptors");
				METRICS_ADD(s->ctx.metrics->shm_clients_refused, 1);
				close(fd);
			}
			s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			continue;
		}
		if (fd == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				LOG_WARN("ipc: accept: %s", strerror(errno));
			return;
		}
		ipc_admit(s, fd);
	}
}

/*
 * Take what c's ring holds; how many submissions.  Only taking counts as
 * activity: a client ringing without submitting buys itself no polling.
 */
static int
ipc_take(ipc_server_t *s, struct ipc_client *c)
{
	char *cause = NULL;
	int n = ipc_ring_take(s, c, &cause);

	if (n < 0) {
		ipc_kill(c, LOG_LEVEL_ERROR, "%s", cause);
		free(cause);
		return 0;
	}
	if (n > 0)
		__atomic_store_n(&s->activity_us, clock_now_us(), __ATOMIC_RELAXED);
	return n;
}

/* Look at every ready client's submission ring once; how many submissions were taken. */
static int
ipc_sweep(ipc_server_t *s)
{
	struct ipc_client *c;
	int n = 0;

	for (c = s->clients; c != NULL; c = c->next)
		if (c->ready && !c->dead)
			n += ipc_take(s, c);
	return n;
}

/* Set (asleep) or clear (polling) NEED_WAKEUP in every ready client's ring. */
static void
ipc_need_wakeup(ipc_server_t *s, int on)
{
	struct ipc_client *c;

	for (c = s->clients; c != NULL; c = c->next)
		if (c->ready && !c->dead)
			__atomic_store_n(&c->hdr->sq_flags, on ? INFERD_WIRE_SQ_NEED_WAKEUP : 0,
			    __ATOMIC_RELAXED);
	s->armed = on;
}

/*
 * About to sleep: ask every client for the doorbell, then, after a full
 * fence, look at every ring once more.  A client publishes its tail,
 * fences, then reads the flag, so either it sees the flag and rings, or
 * this look sees its submission: no wake-up is lost.  1 when the look
 * found work (the thread stays awake).
 */
static int
ipc_arm(ipc_server_t *s)
{
	ipc_need_wakeup(s, 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return ipc_sweep(s) > 0;
}

/* 1 while the rings are polled: within shm_poll_us of the last activity. */
static int
ipc_polling(ipc_server_t *s)
{
	uint64_t poll_us = (uint64_t)s->ctx.config->shm_poll_us;

	return poll_us > 0 &&
	    clock_now_us() - __atomic_load_n(&s->activity_us, __ATOMIC_RELAXED) < poll_us;
}

/* The submission doorbell rang: reset it (never blocking) and take the submissions. */
static void
ipc_submissions(ipc_server_t *s, struct ipc_client *c)
{
	uint64_t v;
	struct iovec iov = { &v, sizeof v };

	/*
	 * The client shares this eventfd and could clear O_NONBLOCK, so reset it
	 * with a per-call RWF_NOWAIT read; where that is unsupported the counter
	 * just grows, which edge-triggered epoll does not mind.
	 */
	(void)preadv2(c->submit_fd, &iov, 1, -1, RWF_NOWAIT);
	METRICS_ADD(s->ctx.metrics->shm_doorbells, 1);
	(void)ipc_take(s, c);
}

/* The control socket has news: messages, or the client went away. */
static void
ipc_control(ipc_server_t *s, struct ipc_client *c, uint32_t events)
{
	if (ipc_conn_readable(s, c) != 0 || c->dead)
		return;
	if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
		LOG_INFO("ipc: %s hung up", c->label);
		c->dead = 1;
	}
}

/* Drop connections that never said hello in time. */
static void
ipc_expire(ipc_server_t *s)
{
	uint64_t now = clock_now_us();
	struct ipc_client *c;

	for (c = s->clients; c != NULL; c = c->next)
		if (!c->ready && !c->dead && now - c->accepted_us > IPC_HANDSHAKE_US)
			ipc_kill(c, LOG_LEVEL_WARN, "no hello within %llu s",
			    (unsigned long long)(IPC_HANDSHAKE_US / 1000000));
}

/* Release every client marked dead. */
static void
ipc_reap(ipc_server_t *s)
{
	struct ipc_client **pp = &s->clients, *c;

	while ((c = *pp) != NULL) {
		if (c->dead) {
			*pp = c->next;
			s->nclients--;
			ipc_client_free(s, c);
		} else
			pp = &c->next;
	}
}

/* Wait a second at most while a handshake is pending; otherwise sleep until an event. */
static int
ipc_poll_timeout(const ipc_server_t *s)
{
	const struct ipc_client *c;

	for (c = s->clients; c != NULL; c = c->next)
		if (!c->ready)
			return 1000;
	return -1;
}

/* Act on one epoll event. */
static void
ipc_event(ipc_server_t *s, const struct epoll_event *ev)
{
	const struct ipc_tag *t = ev->data.ptr;
	uint64_t v;

	switch (t->kind) {
	case IPC_TAG_LISTEN:
		ipc_accept(s);
		break;
	case IPC_TAG_WAKE:
		if (read(s->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
			LOG_WARN("ipc: reading the wake-up eventfd: %s", strerror(errno));
		break;
	case IPC_TAG_CONTROL:
		if (!t->client->dead)
			ipc_control(s, t->client, ev->events);
		break;
	case IPC_TAG_SUBMIT:
		if (!t->client->dead && t->client->ready)
			ipc_submissions(s, t->client);
		break;
	}
}

/* Complete with SHUTDOWN every submission still in c's ring (bounded by deadline). */
static void
ipc_finish_ring(ipc_server_t *s, struct ipc_client *c, uint64_t deadline)
{
	char *cause = NULL;
	long left;

	if (!c->ready || c->dead)
		return;
	left = ipc_ring_finish(s, c, deadline, &cause);
	if (left < 0) {
		ipc_kill(c, LOG_LEVEL_ERROR, "%s", cause);
		free(cause);
	} else if (left > 0)
		LOG_WARN("ipc: %s: %ld submissions left unanswered at shutdown: the client "
		    "stopped reading its completions or hung up", c->label, left);
}

/*
 * At stop: every submission already in a ring is completed (SHUTDOWN,
 * since new work is refused), requests in flight finish (both bounded),
 * then every client is released and its socket closed.
 */
static void
ipc_release_all(ipc_server_t *s)
{
	uint64_t deadline = clock_now_us() + IPC_DRAIN_US;
	struct ipc_client *c;

	for (c = s->clients; c != NULL; c = c->next)
		ipc_finish_ring(s, c, deadline);
	for (c = s->clients; c != NULL; c = c->next)
		ipc_ring_wait_idle(c, deadline);
	for (c = s->clients; c != NULL; c = c->next)
		c->dead = 1;
	ipc_reap(s);
}

/*
 * The IPC thread: one epoll loop for the socket, every control socket and
 * every doorbell.  Within shm_poll_us of activity it polls the rings
 * (epoll_wait without sleeping, then a sweep), with NEED_WAKEUP clear so
 * clients make no system call; then it arms NEED_WAKEUP and sleeps.
 */
static void *
ipc_thread(void *arg)
{
	ipc_server_t *s = arg;
	struct epoll_event ev[64];
	int i, n, polling, taken;

	while (!__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
		polling = ipc_polling(s);
		if (polling && s->armed)
			ipc_need_wakeup(s, 0);
		if (!polling && !s->armed) {
			batcher_defer_begin();
			taken = ipc_arm(s);
			batcher_defer_end();
			if (taken)
				continue;
		}
		n = epoll_wait(s->epoll_fd, ev, 64, polling ? 0 : ipc_poll_timeout(s));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			LOG_ERROR("ipc: epoll_wait: %s; shared-memory clients are no longer served",
			    strerror(errno));
			break;
		}
		/*
		 * Everything taken in one pass is queued before any of it is
		 * dispatched, so it batches; any wake-up also sweeps every ring (two
		 * loads each), so a submission whose client did not ring is taken
		 * with the next one that did.
		 */
		batcher_defer_begin();
		for (i = 0; i < n; i++)
			ipc_event(s, &ev[i]);
		taken = polling || n > 0 ? ipc_sweep(s) : 0;
		batcher_defer_end();
		/* Polling must not starve the threads that compute what was taken. */
		if (polling && taken == 0)
			sched_yield();
		ipc_expire(s);
		ipc_reap(s);
	}
	ipc_release_all(s);
	return NULL;
}

/* Refuse to replace a socket another daemon is still listening on. */
static int
ipc_check_stale(const struct sockaddr_un *sun, char **cause)
{
	struct stat st;
	int fd, r;

	if (lstat(sun->sun_path, &st) != 0)
		return errno == ENOENT ? 0 : error_set(cause, "%s", strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return error_set(cause, "exists and is not a socket");
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return error_set(cause, "socket: %s", strerror(errno));
	r = connect(fd, (const struct sockaddr *)sun, sizeof *sun);
	close(fd);
	if (r == 0)
		return error_set(cause, "another daemon is listening on it");
	if (unlink(sun->sun_path) != 0)
		return error_set(cause, "removing the stale socket: %s", strerror(errno));
	return 0;
}

/* Bind and listen on the socket path, with the mode and group ipc_access_apply decides. */
static int
ipc_listen(ipc_server_t *s, char **cause)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;

	if (strlen(s->path) >= sizeof sun.sun_path)
		return error_set(cause, "path longer than %zu bytes", sizeof sun.sun_path - 1);
	strcpy(sun.sun_path, s->path);
	if (ipc_check_stale(&sun, cause) != 0)
		return -1;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd == -1)
		return error_set(cause, "socket: %s", strerror(errno));
	if (bind(s->listen_fd, (struct sockaddr *)&sun, sizeof sun) != 0)
		return error_set(cause, "bind: %s", strerror(errno));
	s->bound = 1;
	/* Connecting needs write permission: the mode follows the allow lists. */
	if (ipc_access_apply(s->path, s->ctx.config, &s->auth, cause) != 0)
		return -1;
	if (lstat(s->path, &st) != 0)
		return error_set(cause, "%s", strerror(errno));
	s->bound_ino = st.st_ino;
	if (listen(s->listen_fd, 128) != 0)
		return error_set(cause, "listen: %s", strerror(errno));
	return 0;
}

/* Watch fd for input with tag t. */
static int
ipc_watch(ipc_server_t *s, int fd, struct ipc_tag *t, char **cause)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t };

	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return error_set(cause, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* Everything but the thread. */
static int
ipc_setup(ipc_server_t *s, char **cause)
{
	if (peer_auth_init(&s->auth, s->ctx.config->allow_users, s->ctx.config->allow_groups,
	    cause) != 0)
		return -1;
	if ((s->path = xstrdup(s->ctx.config->shm_socket)) == NULL)
		return error_set(cause, "out of memory");
	if ((s->epoll_fd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return error_set(cause, "epoll_create1: %s", strerror(errno));
	if ((s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		return error_set(cause, "eventfd: %s", strerror(errno));
	if ((s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		return error_set(cause, "/dev/null: %s", strerror(errno));
	if (ipc_listen(s, cause) != 0)
		return -1;
	s->listen_tag = (struct ipc_tag){ IPC_TAG_LISTEN, NULL };
	s->wake_tag = (struct ipc_tag){ IPC_TAG_WAKE, NULL };
	if (ipc_watch(s, s->listen_fd, &s->listen_tag, cause) != 0 ||
	    ipc_watch(s, s->wake_fd, &s->wake_tag, cause) != 0)
		return -1;
	return 0;
}

/* Free the server's own resources (the thread is gone, the clients released). */
static void
ipc_free(ipc_server_t *s)
{
	struct stat st;

	ipc_close(&s->listen_fd);
	/* Remove the socket file only while it is still ours. */
	if (s->bound && lstat(s->path, &st) == 0 && st.st_ino == s->bound_ino &&
	    unlink(s->path) != 0)
		LOG_WARN("ipc: removing %s: %s", s->path, strerror(errno));
	ipc_close(&s->epoll_fd);
	ipc_close(&s->wake_fd);
	ipc_close(&s->spare_fd);
	peer_auth_free(&s->auth);
	free(s->path);
	free(s);
}

/* Create, bind and listen on config->shm_socket, and start its thread. */
int
ipc_start(const struct door_context *ctx, ipc_server_t **out, char **cause)
{
	ipc_server_t *s;
	int r;

	*out = NULL;
	if ((s = xcalloc(1, sizeof *s)) == NULL)
		return error_set(cause, "out of memory");
	s->ctx = *ctx;
	s->listen_fd = s->epoll_fd = s->wake_fd = s->spare_fd = -1;
	s->armed = 1;	/* asleep until the first submission: new rings ask for the doorbell */
	if (ipc_setup(s, cause) != 0) {
		ipc_free(s);
		return -1;
	}
	if ((r = pthread_create(&s->thread, NULL, ipc_thread, s)) != 0) {
		ipc_free(s);
		return error_set(cause, "pthread_create: %s", strerror(r));
	}
	*out = s;
	return 0;
}

/* Refuse new connections and submissions; requests already accepted finish. */
void
ipc_begin_shutdown(ipc_server_t *s)
{
	if (s != NULL)
		__atomic_store_n(&s->shutting_down, 1, __ATOMIC_RELEASE);
}

/* Disconnect every client (releasing regions in the safe order), join, free. */
void
ipc_stop(ipc_server_t *s)
{
	uint64_t one = 1;
	int r;

	if (s == NULL)
		return;
	__atomic_store_n(&s->shutting_down, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	if (write(s->wake_fd, &one, sizeof one) != sizeof one)
		LOG_ERROR("ipc: waking the IPC thread: %s", strerror(errno));
	if ((r = pthread_join(s->thread, NULL)) != 0)
		LOG_ERROR("ipc: pthread_join: %s", strerror(r));
	ipc_free(s);
}
