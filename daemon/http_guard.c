/* http_guard.c: header deadline, minimum body rate and body budget for libmicrohttpd's connections (see http_guard.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "http_guard.h"
#include "log.h"

/* How often the watchdog looks. */
#define HTTP_GUARD_PERIOD_US 500000ULL

enum http_guard_phase {
	GUARD_HEADERS,		/* waiting for a request line and headers */
	GUARD_BODY,		/* receiving a body */
	GUARD_UNTIMED,		/* whole: waiting for inference, or answering */
};

struct http_guard_conn {
	struct http_guard_conn *prev, *next;	/* under g->lock */
	http_guard_t *g;
	int fd;
	int shut;				/* under g->lock */
	enum http_guard_phase phase;		/* atomic; written after since */
	uint64_t since_us;			/* atomic: the phase's start */
	uint64_t bytes;				/* atomic: body bytes so far */
};

struct http_guard {
	uint64_t header_us;
	uint64_t min_rate;			/* bytes per second, 0: off */
	size_t budget;
	size_t used;				/* atomic */
	uint64_t closed;			/* atomic */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stopping;				/* under lock */
	struct http_guard_conn *conns;		/* under lock */
	pthread_t thread;
};

/* Enter phase ph now. */
static void
http_guard_enter(struct http_guard_conn *gc, enum http_guard_phase ph)
{
	__atomic_store_n(&gc->since_us, clock_now_us(), __ATOMIC_RELAXED);
	__atomic_store_n(&gc->phase, ph, __ATOMIC_RELEASE);
}

/* Why gc is too slow at now, or NULL. */
static const char *
http_guard_verdict(const http_guard_t *g, const struct http_guard_conn *gc, uint64_t now)
{
	enum http_guard_phase ph = __atomic_load_n(&gc->phase, __ATOMIC_ACQUIRE);
	uint64_t since = __atomic_load_n(&gc->since_us, __ATOMIC_RELAXED);
	uint64_t bytes = __atomic_load_n(&gc->bytes, __ATOMIC_RELAXED);
	uint64_t elapsed = now > since ? now - since : 0;

	if (ph == GUARD_HEADERS && elapsed > g->header_us)
		return "no complete request headers within http_header_timeout";
	/* elapsed > grace + bytes / rate, without dividing. */
	if (ph == GUARD_BODY && g->min_rate > 0 && elapsed > g->header_us &&
	    (elapsed - g->header_us) / 1000 * g->min_rate > bytes * 1000)
		return "request body slower than http_min_body_rate";
	return NULL;
}

/* One look at every connection: shut down the slow ones' sockets. */
static void
http_guard_sweep(http_guard_t *g)
{
	uint64_t now = clock_now_us();
	struct http_guard_conn *gc;
	const char *why;

	for (gc = g->conns; gc != NULL; gc = gc->next) {
		if (gc->shut || (why = http_guard_verdict(g, gc, now)) == NULL)
			continue;
		/* Shut down, not closed: libmicrohttpd sees the end and closes its descriptor. */
		if (shutdown(gc->fd, SHUT_RDWR) != 0 && errno != ENOTCONN)
			LOG_WARN("http: shutting down a slow connection: %s", strerror(errno));
		gc->shut = 1;
		__atomic_add_fetch(&g->closed, 1, __ATOMIC_RELAXED);
		LOG_DEBUG("http: closing a connection: %s", why);
	}
}

/* The watchdog: sweep every HTTP_GUARD_PERIOD_US until stopped. */
static void *
http_guard_thread(void *arg)
{
	http_guard_t *g = arg;
	struct timespec ts;
	uint64_t next;

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		http_guard_sweep(g);
		next = clock_now_us() + HTTP_GUARD_PERIOD_US;
		ts.tv_sec = (time_t)(next / 1000000);
		ts.tv_nsec = (long)(next % 1000000) * 1000;
		(void)pthread_cond_timedwait(&g->wake, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* Start the watchdog thread; -1 with *cause. */
int
http_guard_start(const struct daemon_config *c, http_guard_t **out, char **cause)
{
	http_guard_t *g;
	int r;

	if ((g = xcalloc(1, sizeof *g)) == NULL)
		return error_set(cause, "out of memory");
	g->header_us = (uint64_t)c->http_header_timeout * 1000000;
	g->min_rate = c->http_min_body_rate;
	g->budget = c->http_body_budget_bytes;
	if ((r = pthread_mutex_init(&g->lock, NULL)) != 0 || (r = clock_cond_init(&g->wake)) != 0) {
		free(g);
		return error_set(cause, "pthread init: %s", strerror(r));
	}
	if ((r = pthread_create(&g->thread, NULL, http_guard_thread, g)) != 0) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return error_set(cause, "pthread_create: %s", strerror(r));
	}
	*out = g;
	return 0;
}

/* Stop the thread and free. */
void
http_guard_stop(http_guard_t *g)
{
	struct http_guard_conn *gc;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	while ((gc = g->conns) != NULL) {	/* none, once libmicrohttpd has stopped */
		g->conns = gc->next;
		free(gc);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* A connection started: record it, its headers timed from now. */
static void
http_guard_add(http_guard_t *g, struct MHD_Connection *conn, void **socket_context)
{
	const union MHD_ConnectionInfo *info;
	struct http_guard_conn *gc;

	*socket_context = NULL;
	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (info == NULL || (gc = xcalloc(1, sizeof *gc)) == NULL) {
		LOG_WARN("http: a connection goes untimed (%s)", info ? "out of memory" : "no descriptor");
		return;
	}
	gc->g = g;
	gc->fd = info->connect_fd;
	http_guard_enter(gc, GUARD_HEADERS);
	pthread_mutex_lock(&g->lock);
	gc->next = g->conns;
	if (g->conns != NULL)
		g->conns->prev = gc;
	g->conns = gc;
	pthread_mutex_unlock(&g->lock);
	*socket_context = gc;
}

/* A connection closed (its descriptor is closed after this returns): forget it. */
static void
http_guard_remove(http_guard_t *g, struct http_guard_conn *gc)
{
	pthread_mutex_lock(&g->lock);
	if (gc->prev != NULL)
		gc->prev->next = gc->next;
	else
		g->conns = gc->next;
	if (gc->next != NULL)
		gc->next->prev = gc->prev;
	pthread_mutex_unlock(&g->lock);
	free(gc);
}

/* MHD_OPTION_NOTIFY_CONNECTION's callback. */
void
http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		http_guard_add(cls, conn, socket_context);
	else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context != NULL) {
		http_guard_remove(cls, *socket_context);
		*socket_context = NULL;
	}
}

/* The connection's record. */
struct http_guard_conn *
http_guard_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info != NULL ? info->socket_context : NULL;
}

/* The headers are in: time the body. */
void
http_guard_body_begins(struct http_guard_conn *gc)
{
	if (gc == NULL)
		return;
	__atomic_store_n(&gc->bytes, 0, __ATOMIC_RELAXED);
	http_guard_enter(gc, GUARD_BODY);
}

/* Count body bytes. */
void
http_guard_body_bytes(struct http_guard_conn *gc, size_t n)
{
	if (gc != NULL)
		__atomic_add_fetch(&gc->bytes, n, __ATOMIC_RELAXED);
}

/* Stop timing a whole request. */
void
http_guard_request_whole(struct http_guard_conn *gc)
{
	if (gc != NULL)
		http_guard_enter(gc, GUARD_UNTIMED);
}

/* Time the next request's headers. */
void
http_guard_request_done(struct http_guard_conn *gc)
{
	if (gc != NULL)
		http_guard_enter(gc, GUARD_HEADERS);
}

/* Connections closed for slowness. */
uint64_t
http_guard_closed(const http_guard_t *g)
{
	return __atomic_load_n(&g->closed, __ATOMIC_RELAXED);
}

/* Take n bytes of the body budget. */
int
http_guard_reserve(http_guard_t *g, size_t n)
{
	size_t used = __atomic_load_n(&g->used, __ATOMIC_RELAXED);

	do {
		if (n > g->budget - used)
			return -1;
	} while (!__atomic_compare_exchange_n(&g->used, &used, used + n, 1,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 0;
}

/* Give back n bytes of the budget. */
void
http_guard_release(http_guard_t *g, size_t n)
{
	__atomic_sub_fetch(&g->used, n, __ATOMIC_RELAXED);
}
