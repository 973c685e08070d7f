/* http.h: the HTTP front end, KServe v2 over libmicrohttpd: JSON bodies and the binary tensor extension (docs/ARCHITECTURE.md, "HTTP front end"). */
#ifndef INFERD_HTTP_H
#define INFERD_HTTP_H

#include "door.h"

typedef struct http_server http_server_t;

/*
 * Bind and start serving (before the start-up loads: health, metadata and
 * the repository index answer at once).  The pinned staging memory
 * (config->pinned_pool_bytes, one allocation that each inference request
 * takes exactly its tensors' bytes from) and the server's batcher client
 * are made here, never per request.
 */
int http_start(const struct door_context *ctx, http_server_t **out, char **cause);
/* Refuse new inference requests with 503 and report not ready; in-flight ones finish. */
void http_begin_shutdown(http_server_t *s);
/*
 * Wait (at most 30 s) for requests in flight to be answered, close the
 * batcher client, stop the daemon threads, free (NULL is ignored).  Call it
 * before batcher_free; the batcher may already be shut down.
 */
void http_stop(http_server_t *s);
/* The bound port (useful when http_port = 0 asked for any). */
int http_port(const http_server_t *s);

#endif
