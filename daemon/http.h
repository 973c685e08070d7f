/* http.h: the HTTP front end, KServe v2 over libmicrohttpd with JSON bodies (DESIGN §6). */
#ifndef INFERD_HTTP_H
#define INFERD_HTTP_H

#include "batcher.h"
#include "daemon_config.h"
#include "device.h"
#include "metrics.h"
#include "repository.h"

typedef struct http_server http_server_t;

/* Everything the HTTP server serves from; all outlive the server. */
struct http_context {
	const struct daemon_config *config;
	device_t *dev;
	repository_t *repo;
	batcher_t *batcher;
	struct metrics *metrics;
};

/* Bind and start serving (pinned slots are allocated here, not per request). */
int http_start(const struct http_context *ctx, http_server_t **out, char **cause);
/* Refuse new inference requests with 503 and report not ready; in-flight ones finish. */
void http_begin_shutdown(http_server_t *s);
/* Wait for requests in flight, stop the daemon threads, free (NULL is ignored). */
void http_stop(http_server_t *s);
/* The bound port (useful when http_port = 0 asked for any). */
int http_port(const http_server_t *s);

#endif
