/*
 * http_guard.h: the HTTP limits libmicrohttpd does not enforce itself.
 *
 * A connection must deliver its request line and headers within
 * http_header_timeout seconds of its start (or of the previous answer on a
 * keep-alive connection), and a request body at least http_min_body_rate
 * bytes per second averaged over the whole body after a grace of
 * http_header_timeout; libmicrohttpd's own timeout restarts on every byte,
 * so a trickle would defeat it.  A watchdog thread checks every connection
 * twice a second and shuts down the socket of a slow one, which makes
 * libmicrohttpd close it; the socket is only shut down, never closed, and
 * only between the connection's start and close notifications, so a reused
 * descriptor is never touched.  Waiting for inference and sending the answer
 * are not timed here.
 *
 * The guard also holds the budget for request bodies being buffered, all
 * connections together (http_body_budget_bytes).
 */
#ifndef INFERD_HTTP_GUARD_H
#define INFERD_HTTP_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "daemon_config.h"

typedef struct http_guard http_guard_t;
/* One connection's timing; libmicrohttpd's socket context. */
struct http_guard_conn;

/* Start the watchdog thread; -1 with *cause. */
int http_guard_start(const struct daemon_config *c, http_guard_t **out, char **cause);
/* Stop the thread and free (every connection is closed: libmicrohttpd stopped first). NULL is ignored. */
void http_guard_stop(http_guard_t *g);
/* MHD_OPTION_NOTIFY_CONNECTION's callback, cls the guard: tracks connections from start to close. */
void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode toe);
/* The connection's record, NULL if it has none (out of memory at its start). */
struct http_guard_conn *http_guard_of(struct MHD_Connection *conn);
/* The headers are in: time the body from now. */
void http_guard_body_begins(struct http_guard_conn *gc);
/* n more body bytes arrived. */
void http_guard_body_bytes(struct http_guard_conn *gc, size_t n);
/* The request is whole (answered or waiting for inference): stop timing it. */
void http_guard_request_whole(struct http_guard_conn *gc);
/* The answer is sent: time the next request's headers from now. */
void http_guard_request_done(struct http_guard_conn *gc);
/* Connections closed for being too slow so far. */
uint64_t http_guard_closed(const http_guard_t *g);

/* Take n bytes of the body budget; -1 when that would exceed it. */
int http_guard_reserve(http_guard_t *g, size_t n);
/* Give back n bytes taken with http_guard_reserve. */
void http_guard_release(http_guard_t *g, size_t n);

#endif
