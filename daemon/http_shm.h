/* http_shm.h: Triton's system and CUDA shared-memory endpoints (register, status, unregister) over HTTP. */
#ifndef INFERD_HTTP_SHM_H
#define INFERD_HTTP_SHM_H

#include <stddef.h>

#include "daemon_config.h"
#include "shm_registry.h"

/*
 * Contract.  Paths, as Triton has them (X is systemsharedmemory or
 * cudasharedmemory):
 *   GET  /v2/X/status, /v2/X/region/{name}/status
 *   POST /v2/X/region/{name}/register   system: {"key", "offset"?, "byte_size"}
 *                                       CUDA: {"raw_handle": {"b64"}, "device_id", "byte_size"}
 *   POST /v2/X/unregister, /v2/X/region/{name}/unregister
 * Answers are JSON: status is an array of regions, register and unregister
 * answer {} (200); errors are {"error": "..."} with 400 (bad body, size or
 * offset), 403 (turned off, or owner / mode refused), 404 (unknown path or
 * region, no such shm object), 405 (wrong method, with Allow), 409 (name
 * taken), 500 (a system or device call failed).
 */

/* The largest register body read (the rest is refused as too large). */
#define HTTP_SHM_MAX_BODY 4096

/* What to answer: status, a malloc'ed JSON body of len bytes, and Allow for a 405. */
struct http_shm_reply {
	unsigned int status;
	char *body;		/* NULL: out of memory */
	size_t len;
	const char *allow;
};

/* 1 when url is under /v2/systemsharedmemory or /v2/cudasharedmemory. */
int http_shm_path(const char *url);
/* Whether the endpoints are on: http_shared_memory on, or auto with a loopback listen_address. */
int http_shm_enabled(const struct daemon_config *c);
/* Answer one request on such a path (enabled as http_shm_enabled said; body may be NULL). */
void http_shm_handle(shm_registry_t *r, int enabled, int post, const char *url,
    const char *body, size_t len, struct http_shm_reply *out);

#endif
