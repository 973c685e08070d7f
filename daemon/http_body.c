/* http_body.c: reading HTTP request bodies: Content-Length and per-model limits, the body budget, growth as bytes arrive, Content-Encoding decoding. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <microhttpd.h>

#include "alloc.h"
#include "http_encoding.h"
#include "http_internal.h"
#include "repository.h"

/* Give back the request's share of the body budget. */
void
http_uncharge(struct http_request *req)
{
	if (req->charged > 0)
		http_guard_release(req->srv->guard, req->charged);
	req->charged = 0;
}

/* Drop the body buffer (parsed, or discarded). */
void
http_drop_body(struct http_request *req)
{
	free(req->body);
	req->body = NULL;
	req->len = req->cap = 0;
	http_uncharge(req);
}

/* Collects the Content-Length headers: how many, and whether they disagree. */
struct http_lengths {
	int count, differ;
	const char *first;
};

/* MHD_get_connection_values' iterator for http_lengths. */
static enum MHD_Result
http_length_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct http_lengths *l = cls;

	(void)kind;
	if (key == NULL || value == NULL || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
		return MHD_YES;
	if (l->count++ == 0)
		l->first = value;
	else if (strcmp(l->first, value) != 0)
		l->differ = 1;
	return MHD_YES;
}

/* A model's largest sensible request body (see HTTP_BYTES_PER_NUMBER); SIZE_MAX: no bound (strings). */
static size_t
http_model_body_bound(const model_t *m)
{
	size_t rows = m->max_batch_size > 0 ? (size_t)m->max_batch_size : 1, numbers = 0, n, bound;
	int i;

	for (i = 0; i < m->ninputs; i++) {
		if (strcmp(m->inputs[i].datatype, "BYTES") == 0)
			return SIZE_MAX;	/* a string has no length bound here */
		if (__builtin_mul_overflow(m->inputs[i].row_elems, rows, &n) ||
		    __builtin_add_overflow(numbers, n, &numbers))
			return SIZE_MAX;
	}
	if (__builtin_mul_overflow(numbers, (size_t)HTTP_BYTES_PER_NUMBER, &bound) ||
	    __builtin_add_overflow(bound, (size_t)HTTP_BODY_SLACK, &bound))
		return SIZE_MAX;
	return bound;
}

/* repository_foreach: raise *arg to ref's model's body bound. */
static void
http_bound_of(const model_ref_t *ref, void *arg)
{
	size_t *bound = arg, b = http_model_body_bound(ref->model);

	if (b > *bound)
		*bound = b;
}

/* The largest body this request may have: max_body_bytes, or less for the model it names (any loaded model's for POST /infer). */
static size_t
http_body_limit(const struct http_request *req)
{
	const http_server_t *srv = req->srv;
	size_t limit = srv->ctx.config->max_body_bytes, bound = HTTP_BODY_SLACK;
	model_ref_t *ref;

	if (req->route == ROUTE_SHM || req->route == ROUTE_REPO_LOAD)	/* small JSON, no model's bound */
		return limit;
	if (req->route == ROUTE_INFER && !(req->flags & HTTP_F_NAME_TOO_LONG) &&
	    repository_acquire(srv->ctx.repo, req->model, req->version, &ref, NULL) == REPOSITORY_FOUND) {
		bound = http_model_body_bound(ref->model);
		repository_release(ref);
	} else {
		repository_foreach(srv->ctx.repo, http_bound_of, &bound);
	}
	return bound < limit ? bound : limit;
}

/* Name the limit a body ran into, for the 413's message. */
static const char *
http_limit_name(const struct http_request *req, char *buf, size_t size)
{
	if (req->limit == req->srv->ctx.config->max_body_bytes)
		snprintf(buf, size, "max_body_bytes (%zu)", req->limit);
	else
		snprintf(buf, size, "%zu bytes, the largest request %s can take", req->limit,
		    req->route == ROUTE_INFER ? "this model" : "any model");
	return buf;
}

/* Check Content-Length against the limits and hold its bytes of the budget; answers when refused. */
enum MHD_Result
http_begin_body(struct http_request *req)
{
	http_server_t *srv = req->srv;
	struct http_lengths l = { 0, 0, NULL };
	unsigned long long announced;
	char *end, what[96];

	MHD_get_connection_values(req->conn, MHD_HEADER_KIND, http_length_header, &l);
	if (l.differ)	/* RFC 9112, 6.3: an unrecoverable framing error */
		return http_error(req, MHD_HTTP_BAD_REQUEST, "conflicting Content-Length headers");
	req->limit = http_body_limit(req);
	if (l.count == 0)
		return MHD_YES;
	errno = 0;
	announced = strtoull(l.first, &end, 10);
	if (errno != 0 || end == l.first)
		return MHD_YES;		/* libmicrohttpd refuses a malformed one itself */
	if (announced > req->limit)
		return http_error(req, MHD_HTTP_CONTENT_TOO_LARGE, "request body of %llu bytes "
		    "exceeds %s", announced, http_limit_name(req, what, sizeof what));
	if ((req->route == ROUTE_INFER || req->route == ROUTE_INFER_SHORT || req->route == ROUTE_SHM) &&
	    announced > 0) {
		if (http_guard_reserve(srv->guard, (size_t)announced) != 0)
			return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: the memory "
			    "for request bodies (http_body_budget_bytes) is in use; retry later");
		req->charged = (size_t)announced;
	}
	req->announced = (size_t)announced;
	return MHD_YES;
}

/* Make room for n more body bytes: 0, -1 when memory is short, -2 over the body budget. */
static int
http_body_reserve(struct http_request *req, size_t n, size_t max)
{
	size_t cap = req->cap, need = req->len + n;	/* need <= max: checked by the caller */
	size_t limit = req->announced >= need ? req->announced : max;
	char *p;

	if (need <= cap)
		return 0;
	if (cap == 0)
		cap = req->announced ? HTTP_BODY_TRUST : HTTP_BODY_CHUNK;
	while (cap < need)
		cap = cap > limit / 2 ? limit : cap * 2;
	if (cap > limit)
		cap = limit;
	if (cap > req->charged) {
		if (http_guard_reserve(req->srv->guard, cap - req->charged) != 0)
			return -2;
		req->charged = cap;
	}
	if ((p = xrealloc(req->body, cap)) == NULL)
		return -1;
	req->body = p;
	req->cap = cap;
	return 0;
}

/*
 * Take a piece of the body.  Past the request's limit, or past the body
 * budget, the request is refused at once and nothing more is read.
 */
enum MHD_Result
http_receive(struct http_request *req, const char *data, size_t *size)
{
	size_t n = *size, max = req->limit;
	char what[96];
	int r;

	*size = 0;
	http_guard_body_bytes(req->gc, n);
	if (req->route != ROUTE_INFER && req->route != ROUTE_INFER_SHORT && req->route != ROUTE_SHM &&
	    req->route != ROUTE_REPO_LOAD) {
		/* Other routes take no body: it is counted, not kept, and bounded all the same. */
		if (n > max - req->discarded)
			return http_refuse_now(req, MHD_HTTP_CONTENT_TOO_LARGE, "request body exceeds %s",
			    http_limit_name(req, what, sizeof what));
		req->discarded += n;
		return MHD_YES;
	}
	if (n > max - req->len) {
		http_drop_body(req);
		return http_refuse_now(req, MHD_HTTP_CONTENT_TOO_LARGE, "request body exceeds %s",
		    http_limit_name(req, what, sizeof what));
	}
	if ((r = http_body_reserve(req, n, max)) != 0) {
		http_drop_body(req);
		if (r == -2)
			return http_refuse_now(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: the "
			    "memory for request bodies (http_body_budget_bytes) is in use; retry later");
		return http_refuse_now(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory for the body");
	}
	memcpy(req->body + req->len, data, n);
	req->len += n;
	return MHD_YES;
}

/* A Content-Encoding body replaced by its inflated bytes (bounded by max_body_bytes); -1 when answered with an error. */
int
http_decode_body(struct http_request *req)
{
	static const unsigned int status[] = {
		[-HTTP_CODING_UNSUPPORTED] = MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
		[-HTTP_CODING_MALFORMED] = MHD_HTTP_BAD_REQUEST,
		[-HTTP_CODING_TOO_LARGE] = MHD_HTTP_CONTENT_TOO_LARGE,
		[-HTTP_CODING_NO_MEMORY] = MHD_HTTP_INTERNAL_SERVER_ERROR,
	};
	const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_ENCODING);
	enum http_coding coding;
	enum http_coding_error e;
	char *cause = NULL, *out = NULL;
	size_t out_len = 0;

	if (v == NULL || req->len == 0)
		return 0;
	e = http_coding_parse(v, &coding, &cause);
	if (e == HTTP_CODING_OK && coding == HTTP_CODING_IDENTITY)
		return 0;
	if (e == HTTP_CODING_OK)
		e = http_coding_decode(coding, req->body, req->len,
		    req->srv->ctx.config->max_body_bytes, &out, &out_len, &cause);
	if (e != HTTP_CODING_OK) {
		http_drop_body(req);
		http_error(req, status[-e], "%s", cause);
		free(cause);
		return -1;
	}
	free(req->body);
	req->body = out;
	req->len = req->cap = out_len;
	return 0;
}
