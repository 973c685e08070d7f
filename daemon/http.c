/* http.c: KServe v2 (JSON and binary tensors) over libmicrohttpd; an inference request waits suspended, holding no thread. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "alloc.h"
#include "error.h"
#include "http.h"
#include "http_guard.h"
#include "http_encoding.h"
#include "http_shm.h"
#include "kserve.h"
#include "kserve_config.h"
#include "log.h"
#include "pinned_pool.h"
#include "shm_registry.h"

#ifndef MHD_HTTP_CONTENT_TOO_LARGE
#define MHD_HTTP_CONTENT_TOO_LARGE 413	/* named so since libmicrohttpd 0.9.74 */
#endif

/*
 * Statuses follow Triton's HTTP front end.  400: malformed JSON (with
 * jansson's line and column), a missing or mistyped field, wrong shape,
 * datatype or element count.  404: unknown path, model or version.  405
 * with Allow: a known path with the wrong method.  413: a body over
 * max_body_bytes or over the largest request its model can need, from
 * Content-Length before any byte is read, or the moment a chunked body
 * passes it (then nothing more is read).  503: queue full, all staging
 * slots in use, the body budget (http_body_budget_bytes) in use, a request
 * timeout (Triton's "Request timeout expired" is UNAVAILABLE), shutting
 * down.  Slow connections are closed by http_guard.c.  500: a device failure.  A model that failed to load answers 503
 * with its load error for metadata and inference, and 400 for .../ready
 * (Triton's "Model version not ready").  POST /infer is the short form:
 * the body of /v2/models/{m}/infer plus "model": "{m}".  Either takes the
 * binary tensor extension: Inference-Header-Content-Length splits the
 * body into its JSON header and the tensors' raw bytes, which are copied
 * from the body straight into the pinned slot; an answer with a binary
 * output carries the same header and is application/octet-stream.
 */

#define HTTP_TYPE_JSON "application/json"
/* The answer when even an error message cannot be allocated. */
#define HTTP_OOM_BODY "{\"error\":\"out of memory\"}"
#define HTTP_TYPE_METRICS "text/plain; version=0.0.4"
#define HTTP_ALLOW_GET "GET, HEAD"
#define HTTP_ALLOW_POST "POST"
#define HTTP_ALLOW_SHM "GET, HEAD, POST"	/* http_shm.c checks each path's own */
/* A connection idle this long (never while suspended) is closed. */
#define HTTP_CONNECTION_TIMEOUT_S 60
/* http_stop waits this long for answers to requests in flight before cancelling them. */
#define HTTP_STOP_WAIT_S 30
/* First capacity of a body whose length is not announced (chunked). */
#define HTTP_BODY_CHUNK 16384
/* Most reserved up front on the word of Content-Length; more grows as bytes arrive. */
#define HTTP_BODY_TRUST (1024 * 1024)
/*
 * A model's largest sensible request body: its input at max_batch_size as
 * JSON numbers of at most HTTP_BYTES_PER_NUMBER bytes each (with their
 * separators and blanks), plus HTTP_BODY_SLACK for names, id, parameters.
 */
#define HTTP_BYTES_PER_NUMBER 64
#define HTTP_BODY_SLACK (1024 * 1024)

/* What a URL names. */
enum http_route {
	ROUTE_LIVE,		/* GET /v2/health/live */
	ROUTE_READY,		/* GET /v2/health/ready */
	ROUTE_SERVER,		/* GET /v2 */
	ROUTE_INDEX,		/* GET /v2/models, POST /v2/repository/index */
	ROUTE_MODEL,		/* GET /v2/models/{m}[/versions/1] */
	ROUTE_MODEL_READY,	/* GET /v2/models/{m}[/versions/1]/ready */
	ROUTE_MODEL_CONFIG,	/* GET /v2/models/{m}[/versions/1]/config (Triton) */
	ROUTE_MODEL_STATS,	/* GET /v2/models/{m}[/versions/1]/stats (Triton) */
	ROUTE_INFER,		/* POST /v2/models/{m}[/versions/1]/infer */
	ROUTE_INFER_SHORT,	/* POST /infer, the model named in the body */
	ROUTE_METRICS,		/* GET /metrics */
	ROUTE_SHM,		/* /v2/systemsharedmemory/..., /v2/cudasharedmemory/... (http_shm.c) */
	ROUTE_REPO_LOAD,	/* POST /v2/repository/models/{m}/load */
	ROUTE_REPO_UNLOAD,	/* POST /v2/repository/models/{m}/unload */
};

struct http_server {
	struct http_context ctx;
	struct MHD_Daemon *mhd;
	http_guard_t *guard;		/* slow connections, the body budget */
	pinned_pool_t *pool;
	batch_client_t *client;
	shm_registry_t *shm;	/* Triton's shared-memory regions */
	int shm_enabled;	/* http_shared_memory resolved */
	int port;
	int serving;		/* atomic: MHD_start_daemon returned */
	int stopping;		/* set under lock, read atomically: http_begin_shutdown ran */
	pthread_mutex_t lock;	/* active, and every request's wait state */
	pthread_cond_t idle;
	int active;		/* inference requests from submit to connection completion */
};

/*
 * One HTTP request.  While it waits on the batcher two parties hold it:
 * libmicrohttpd until its completion callback, the batcher until done
 * runs; refs counts them and the last one frees it, so done never touches
 * a request that a vanished client took away.
 */
/*
 * Where a request is in its life.  RECEIVING -> ANSWERED for everything but
 * an accepted inference, which goes RECEIVING -> SUBMITTED (with the batcher)
 * -> SUSPENDED (the connection holds no thread) -> FINISHED (the batcher is
 * done; set by its thread) -> ANSWERED; SUSPENDED is skipped when the batcher
 * finishes first.  Read and written atomically: the batcher's thread sets
 * FINISHED (under srv->lock) while libmicrohttpd's may look.
 */
enum http_state {
	HTTP_STATE_RECEIVING = 0,
	HTTP_STATE_SUBMITTED,
	HTTP_STATE_SUSPENDED,
	HTTP_STATE_FINISHED,
	HTTP_STATE_ANSWERED,
};

/*
 * What is known about a request (struct http_request's flags).  The first
 * three are set by libmicrohttpd's thread before submission; COMPLETED and
 * ACTIVE change only under srv->lock.
 */
enum {
	HTTP_F_NAME_TOO_LONG = 1u << 0,	/* the URL's model name does not fit */
	HTTP_F_BAD_VERSION = 1u << 1,	/* the URL's version is not a positive integer */
	HTTP_F_BINARY_OUTPUT = 1u << 4,	/* answer with the output as binary data */
	HTTP_F_COMPLETED = 1u << 5,	/* libmicrohttpd is done with the connection */
	HTTP_F_ACTIVE = 1u << 6,	/* counted in srv->active */
};

struct http_request {
	http_server_t *srv;
	struct MHD_Connection *conn;
	enum http_route route;
	const char *allow;		/* the methods its path takes */
	char model[MODEL_NAME_MAX];	/* from the URL */
	char *body;
	size_t len, cap, announced;	/* announced: Content-Length, 0 if none */
	size_t discarded;		/* body bytes of a route that takes none */
	size_t limit;			/* the largest body taken for this request */
	size_t charged;			/* bytes of the body budget held */
	struct http_guard_conn *gc;	/* the connection's timing */
	char *url;			/* ROUTE_SHM: the path, kept for dispatch */
	int post;			/* the method is POST */
	enum http_state state;		/* atomic */
	unsigned flags;			/* HTTP_F_* */
	int64_t version;		/* from the URL; 0: the newest loaded */
	/* Inference. */
	model_ref_t *ref;		/* the model version it holds until freed */
	const model_t *m;
	void *slot;
	char *id;
	struct kserve_infer ki;		/* the decoded request: where its tensors lie in the slot */
	struct batch_request breq;
	/* Under srv->lock. */
	int refs;
	enum batch_status status;
	char *error;
};

/* The request's state. */
static enum http_state
http_state(const struct http_request *req)
{
	return __atomic_load_n(&req->state, __ATOMIC_ACQUIRE);
}

/* Move the request to state st. */
static void
http_state_set(struct http_request *req, enum http_state st)
{
	__atomic_store_n(&req->state, st, __ATOMIC_RELEASE);
}

/*
 * libmicrohttpd's messages, through our log: errors while starting; once
 * serving they are mostly about malformed requests, which any client can
 * cause at will, so they go to debug rather than flood the log.
 */
static void
http_mhd_log(void *cls, const char *fmt, va_list ap)
{
	http_server_t *s = cls;
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof buf, fmt, ap);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (__atomic_load_n(&s->serving, __ATOMIC_ACQUIRE))
		LOG_DEBUG("http: %s", buf);
	else
		LOG_ERROR("http: %s", buf);
}

/*
 * Compress *body in place with the client's preferred Accept-Encoding;
 * returns the Content-Encoding to send, NULL when it goes as it is (not
 * asked for, or compressing failed: the plain body is still a good answer).
 */
static const char *
http_compress(struct http_request *req, char **body, size_t *len)
{
	const char *accept = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_ACCEPT_ENCODING);
	enum http_coding coding = http_coding_accept(accept);
	char *out, *cause = NULL;
	size_t out_len;

	if (coding == HTTP_CODING_IDENTITY || *body == NULL || *len == 0)
		return NULL;
	if (http_coding_encode(coding, *body, *len, &out, &out_len, &cause) != 0) {
		LOG_WARN("http: %s", cause);
		free(cause);
		return NULL;
	}
	free(*body);
	*body = out;
	*len = out_len;
	return http_coding_name(coding);
}

/* Queue a response that owns body (NULL means out of memory), with one optional header; counts errors. */
static enum MHD_Result
http_reply(struct http_request *req, unsigned int status, char *body, size_t len,
    const char *type, const char *header, const char *value)
{
	static char oom[] = HTTP_OOM_BODY;
	const char *coding = http_compress(req, &body, &len);
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (body == NULL)
		r = MHD_create_response_from_buffer(sizeof oom - 1, oom, MHD_RESPMEM_PERSISTENT);
	else
		r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	if (body == NULL) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		type = HTTP_TYPE_JSON;
		header = NULL;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
	    (header != NULL && MHD_add_response_header(r, header, value) != MHD_YES) ||
	    (coding != NULL && body != NULL &&
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, coding) != MHD_YES)) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(req->conn, status, r);
	MHD_destroy_response(r);
	http_state_set(req, HTTP_STATE_ANSWERED);
	http_guard_request_whole(req->gc);
	if (status >= 400)
		METRICS_ADD(req->srv->ctx.metrics->http_errors, 1);
	return ret;
}

/* Answer {"error": message} with status, and an Allow header when allow is set. */
__attribute__((format(printf, 4, 5))) static enum MHD_Result
http_error_allow(struct http_request *req, unsigned int status, const char *allow,
    const char *fmt, ...)
{
	va_list ap;
	char *msg, *body = NULL;
	size_t len = 0;
	int n;

	va_start(ap, fmt);
	n = xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0) {
		body = kserve_encode_error(msg, &len, NULL);	/* NULL: the fixed 500 body */
		free(msg);
	}
	return http_reply(req, status, body, len, HTTP_TYPE_JSON,
	    allow ? MHD_HTTP_HEADER_ALLOW : NULL, allow);
}

#define http_error(req, status, ...) http_error_allow((req), (status), NULL, __VA_ARGS__)

/* Answer 200 with a JSON body; a body that failed to encode (NULL, *cause) is a 500. */
static enum MHD_Result
http_json(struct http_request *req, char *body, size_t len, char *cause)
{
	enum MHD_Result ret;

	if (body != NULL)
		return http_reply(req, MHD_HTTP_OK, body, len, HTTP_TYPE_JSON, NULL, NULL);
	ret = http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s",
	    cause != NULL ? cause : "out of memory");
	free(cause);
	return ret;
}

/* Count a request of model name that failed before reaching the batcher. */
static void
http_count_failure(http_server_t *srv, const char *name, enum metrics_reason reason)
{
	struct metrics_model *mm = metrics_find(srv->ctx.metrics, name);

	if (mm != NULL)
		METRICS_ADD(mm->failure[reason], 1);
}

/* The HTTP status of a batcher outcome: the HTTP column of inferd_outcome.h. */
static unsigned int
http_status_of(enum batch_status st)
{
#define HTTP_STATUS_OF(name, code, err, http, label, text, ctext) [code] = http,
	static const unsigned int status[] = { INFERD_OUTCOME_MAP(HTTP_STATUS_OF) };
#undef HTTP_STATUS_OF

	return (unsigned)st < sizeof status / sizeof status[0] ? status[st] :
	    MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* A URL's version: a positive decimal integer without leading zeros. */
static int
http_parse_version(const char *v, size_t n, int64_t *out)
{
	int64_t x = 0;
	size_t i;

	if (n == 0 || n > 18 || v[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Copy the model name that starts rest (up to the next '/') into req->model; its length (0: none). */
static size_t
http_route_name(struct http_request *req, const char *rest)
{
	size_t n = strcspn(rest, "/");

	if (n >= sizeof req->model)
		req->flags |= HTTP_F_NAME_TOO_LONG;
	else if (n > 0)
		memcpy(req->model, rest, n);
	return n;
}

/* Parse the rest of /v2/repository/models/{m}/load|unload. */
static const char *
http_route_repository(struct http_request *req, const char *rest)
{
	size_t n = http_route_name(req, rest);

	if (n == 0)
		return NULL;
	if (strcmp(rest + n, "/load") == 0)
		return req->route = ROUTE_REPO_LOAD, HTTP_ALLOW_POST;
	if (strcmp(rest + n, "/unload") == 0)
		return req->route = ROUTE_REPO_UNLOAD, HTTP_ALLOW_POST;
	return NULL;
}

/* Parse the rest of /v2/models/{m}...; NULL when the path names nothing. */
static const char *
http_route_model(struct http_request *req, const char *rest)
{
	size_t n = http_route_name(req, rest);
	const char *tail = rest + n, *v;

	if (n == 0)
		return NULL;
	if (strncmp(tail, "/versions/", 10) == 0) {
		v = tail + 10;
		n = strcspn(v, "/");
		if (n == 0)
			return NULL;
		if (http_parse_version(v, n, &req->version) != 0)
			req->flags |= HTTP_F_BAD_VERSION;
		tail = v + n;
	}
	if (*tail == '\0')
		return req->route = ROUTE_MODEL, HTTP_ALLOW_GET;
	if (strcmp(tail, "/ready") == 0)
		return req->route = ROUTE_MODEL_READY, HTTP_ALLOW_GET;
	if (strcmp(tail, "/config") == 0)
		return req->route = ROUTE_MODEL_CONFIG, HTTP_ALLOW_GET;
	if (strcmp(tail, "/stats") == 0)
		return req->route = ROUTE_MODEL_STATS, HTTP_ALLOW_GET;
	if (strcmp(tail, "/infer") == 0)
		return req->route = ROUTE_INFER, HTTP_ALLOW_POST;
	return NULL;
}

/* Route url; returns the methods its path takes, NULL for an unknown path. */
static const char *
http_route(struct http_request *req, const char *url)
{
	static const struct {
		const char *path;
		enum http_route route;
		const char *allow;
	} fixed[] = {
		{ "/v2/health/live", ROUTE_LIVE, HTTP_ALLOW_GET },
		{ "/v2/health/ready", ROUTE_READY, HTTP_ALLOW_GET },
		{ "/v2", ROUTE_SERVER, HTTP_ALLOW_GET },
		{ "/v2/", ROUTE_SERVER, HTTP_ALLOW_GET },
		{ "/v2/models", ROUTE_INDEX, HTTP_ALLOW_GET },
		{ "/v2/repository/index", ROUTE_INDEX, HTTP_ALLOW_POST },
		{ "/infer", ROUTE_INFER_SHORT, HTTP_ALLOW_POST },
		{ "/metrics", ROUTE_METRICS, HTTP_ALLOW_GET },
	};
	size_t i;

	for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		if (strcmp(url, fixed[i].path) == 0) {
			req->route = fixed[i].route;
			return fixed[i].allow;
		}
	}
	if (strncmp(url, "/v2/models/", 11) == 0)
		return http_route_model(req, url + 11);
	if (strncmp(url, "/v2/repository/models/", 22) == 0)
		return http_route_repository(req, url + 22);
	if (http_shm_path(url))
		return req->route = ROUTE_SHM, HTTP_ALLOW_SHM;
	return NULL;
}

/* Whether method is one of allow's. */
static int
http_method_allowed(const char *allow, const char *method)
{
	if (strcmp(allow, HTTP_ALLOW_POST) == 0)
		return strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (strcmp(allow, HTTP_ALLOW_SHM) == 0 && strcmp(method, MHD_HTTP_METHOD_POST) == 0)
		return 1;
	return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* Give back the request's share of the body budget. */
static void
http_uncharge(struct http_request *req)
{
	if (req->charged > 0)
		http_guard_release(req->srv->guard, req->charged);
	req->charged = 0;
}

/* Release what a request holds; called by whichever party lets go last. */
static void
http_request_free(struct http_request *req)
{
	if (req->slot != NULL)
		pinned_pool_put(req->srv->pool, req->slot);
	repository_release(req->ref);
	http_uncharge(req);
	kserve_infer_release(&req->ki, req->srv->shm);
	free(req->body);
	free(req->id);
	free(req->error);
	free(req->url);
	free(req);
}

/* Drop the body buffer (parsed, or discarded). */
static void
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
static enum MHD_Result
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

/* The con_cls of a request whose record could not be allocated: the rest of its calls swallow its body. */
static char http_no_record;

/* Answer a request that has no record (out of memory) with the fixed 500 at once. */
static enum MHD_Result
http_refuse_unrecorded(http_server_t *srv, struct MHD_Connection *conn, void **con_cls)
{
	static char oom[] = HTTP_OOM_BODY;
	struct MHD_Response *r;
	enum MHD_Result ret;

	*con_cls = &http_no_record;
	http_guard_request_whole(http_guard_of(conn));
	METRICS_ADD(srv->ctx.metrics->http_requests, 1);
	METRICS_ADD(srv->ctx.metrics->http_errors, 1);
	if ((r = MHD_create_response_from_buffer(sizeof oom - 1, oom, MHD_RESPMEM_PERSISTENT)) == NULL)
		return MHD_NO;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, HTTP_TYPE_JSON) != MHD_YES) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, r);
	MHD_destroy_response(r);
	return ret;
}

/* First call for a request: route it; refuse a bad path, method or size before any body is read. */
static enum MHD_Result
http_begin(http_server_t *srv, struct MHD_Connection *conn, const char *url,
    const char *method, void **con_cls)
{
	struct http_request *req;

	if ((req = xcalloc(1, sizeof *req)) == NULL)
		return http_refuse_unrecorded(srv, conn, con_cls);
	req->srv = srv;
	req->conn = conn;
	req->refs = 1;
	req->gc = http_guard_of(conn);
	http_guard_body_begins(req->gc);
	*con_cls = req;
	METRICS_ADD(srv->ctx.metrics->http_requests, 1);
	if ((req->allow = http_route(req, url)) == NULL)
		return http_error(req, MHD_HTTP_NOT_FOUND, "unknown path '%s'", url);
	if (!http_method_allowed(req->allow, method))
		return http_error_allow(req, MHD_HTTP_METHOD_NOT_ALLOWED, req->allow,
		    "method %s is not allowed on %s (allowed: %s)", method, url, req->allow);
	req->post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (req->route == ROUTE_SHM && (req->url = xstrdup(url)) == NULL)
		return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	return http_begin_body(req);
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
 * Refuse a request whose body is still arriving, at once.  libmicrohttpd
 * (before 1.0) takes no response until the body has ended, so the answer is
 * written straight to the socket, where nothing else has been written for
 * this request, and the connection is then closed by returning MHD_NO:
 * nothing more is read.  A client still sending may see the reset before
 * the answer; it learns of the refusal either way.
 */
__attribute__((format(printf, 3, 4))) static enum MHD_Result
http_refuse_now(struct http_request *req, unsigned int status, const char *fmt, ...)
{
	static char oom[] = HTTP_OOM_BODY;
	const union MHD_ConnectionInfo *info =
	    MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char msg[256], head[256], *body;
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t len = 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	http_state_set(req, HTTP_STATE_ANSWERED);
	http_guard_request_whole(req->gc);
	METRICS_ADD(req->srv->ctx.metrics->http_errors, 1);
	if (info == NULL)
		return MHD_NO;
	if ((body = kserve_encode_error(msg, &len, NULL)) == NULL) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;	/* with the fixed body */
		len = sizeof oom - 1;
	}
	n = snprintf(head, sizeof head, "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: "
	    HTTP_TYPE_JSON "\r\nContent-Length: %zu\r\n\r\n", status, MHD_get_reason_phrase_for(status), len);
	if (n > 0 && (size_t)n < sizeof head) {
		iov[0] = (struct iovec){ head, (size_t)n };
		iov[1] = (struct iovec){ body != NULL ? body : oom, len };
		/* The send buffer holds nothing of this request: one non-blocking send fits. */
		(void)sendmsg(info->connect_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	free(body);
	return MHD_NO;
}

/*
 * Take a piece of the body.  Past the request's limit, or past the body
 * budget, the request is refused at once and nothing more is read.
 */
static enum MHD_Result
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

/* Take a reference to version (0: newest) of name into req->ref; answers 404 unknown, failed_status not ready. */
static const model_t *
http_take_model(struct http_request *req, const char *name, unsigned int failed_status, enum MHD_Result *ret)
{
	char *cause = NULL;
	int rc = repository_acquire(req->srv->ctx.repo, name, req->version, &req->ref, &cause);

	if (rc == REPOSITORY_FOUND)
		return req->m = req->ref->model;
	*ret = http_error(req, rc == REPOSITORY_NOT_READY ? failed_status : MHD_HTTP_NOT_FOUND, "%s",
	    cause != NULL ? cause : "out of memory");
	free(cause);
	return NULL;
}

/* The model a URL names, or NULL when the request has been answered 404/failed_status. */
static const model_t *
http_url_model(struct http_request *req, unsigned int failed_status, enum MHD_Result *ret)
{
	if (req->flags & HTTP_F_NAME_TOO_LONG) {
		*ret = http_error(req, MHD_HTTP_NOT_FOUND, "unknown model (name longer than %d bytes)",
		    MODEL_NAME_MAX - 1);
		return NULL;
	}
	if (req->flags & HTTP_F_BAD_VERSION) {
		*ret = http_error(req, MHD_HTTP_NOT_FOUND, "model '%s': a version is a positive integer",
		    req->model);
		return NULL;
	}
	return http_take_model(req, req->model, failed_status, ret);
}

/* Queue an encoded answer: JSON, or a JSON header of hlen bytes and binary data. */
static enum MHD_Result
http_answer(struct http_request *req, char *body, size_t len, size_t hlen)
{
	char value[32];

	if (!(req->flags & HTTP_F_BINARY_OUTPUT))
		return http_json(req, body, len, NULL);
	snprintf(value, sizeof value, "%zu", hlen);
	return http_reply(req, MHD_HTTP_OK, body, len, KSERVE_TYPE_BINARY, KSERVE_HEADER_LENGTH,
	    value);
}

/* Encode the answer from the slot and queue it; the slot goes back first. */
static enum MHD_Result
http_answer_infer(struct http_request *req)
{
	const model_t *m = req->m;
	char *body, *cause = NULL;
	size_t len = 0, hlen = 0;
	enum MHD_Result ret;

	if (req->status != BATCH_OK) {
		pinned_pool_put(req->srv->pool, req->slot);
		req->slot = NULL;
		return http_error(req, http_status_of(req->status), "model '%s': %s", m->name,
		    req->error ? req->error : batch_status_str(req->status));
	}
	body = kserve_encode_infer(m, req->id, &req->ki, req->slot, &len, &hlen, &cause);
	pinned_pool_put(req->srv->pool, req->slot);
	req->slot = NULL;
	if (body != NULL)
		return http_answer(req, body, len, hlen);
	/* The request was good and ran: failing to encode its answer is ours, a 500. */
	ret = http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "model '%s': %s", m->name, cause);
	free(cause);
	return ret;
}

/* Called by a batcher thread: keep the outcome, wake the connection, let go. */
static void
http_done(struct batch_request *breq, enum batch_status status, const char *error)
{
	struct http_request *req = breq->user;
	http_server_t *srv = req->srv;
	char *copy = status != BATCH_OK && error != NULL ? xstrdup(error) : NULL;
	int last, suspended;

	pthread_mutex_lock(&srv->lock);
	req->status = status;
	req->error = copy;
	suspended = http_state(req) == HTTP_STATE_SUSPENDED;
	/* FINISHED before the resume: the resumed connection must find its answer. */
	http_state_set(req, HTTP_STATE_FINISHED);
	if (suspended && !(req->flags & HTTP_F_COMPLETED))
		MHD_resume_connection(req->conn);
	last = --req->refs == 0;
	pthread_mutex_unlock(&srv->lock);
	if (last)
		http_request_free(req);
}

/* Point the batch request at the staged inputs and the wanted outputs' room in the slot. */
static void
http_tensor_lists(struct http_request *req, const struct kserve_infer *ki)
{
	struct batch_request *b = &req->breq;
	char *slot = req->slot;
	int i;

	b->input = NULL;
	b->ninputs = req->m->ninputs;
	b->noutputs = req->m->noutputs;
	b->shape = ki->shape;
	b->layout = ki->layout;
	b->layout_set = 1;
	for (i = 0; i < b->ninputs; i++) {
		b->inputs[i] = ki->input_at[i] != NULL ? ki->input_at[i] : slot + ki->input_offset[i];
		b->input_bytes[i] = ki->input_len[i];
	}
	for (i = 0; i < b->noutputs; i++) {
		b->outputs[i] = NULL;
		b->output_bytes[i] = ki->output_len[i];
	}
	for (i = 0; i < ki->nwanted; i++)
		b->outputs[ki->wanted[i]] = ki->output_at[ki->wanted[i]] != NULL ?
		    ki->output_at[ki->wanted[i]] : slot + ki->output_offset[ki->wanted[i]];
}

/* Hand the staged request to the batcher and suspend the connection until done. */
static enum MHD_Result
http_submit(struct http_request *req, const struct kserve_infer *ki)
{
	http_server_t *srv = req->srv;
	char *cause = NULL;
	enum batch_status st;
	enum MHD_Result ret;

	req->breq.client = srv->client;
	req->breq.rows = ki->rows;
	http_tensor_lists(req, ki);
	req->breq.timeout_us = ki->timeout_us;
	req->breq.device_memory = kserve_infer_device_memory(ki);
	req->breq.done = http_done;
	req->breq.user = req;
	pthread_mutex_lock(&srv->lock);
	if (srv->stopping) {
		/* Checked under the lock, so http_stop waits for every request that passed. */
		pthread_mutex_unlock(&srv->lock);
		pinned_pool_put(srv->pool, req->slot);
		req->slot = NULL;
		return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
	}
	req->refs++;
	http_state_set(req, HTTP_STATE_SUBMITTED);
	req->flags |= HTTP_F_ACTIVE;
	srv->active++;
	pthread_mutex_unlock(&srv->lock);
	st = batcher_submit_queue(srv->ctx.batcher, req->breq.device_memory ? repository_queue_gpu(req->ref) :
	    repository_queue(req->ref), &req->breq, &cause);
	if (st != BATCH_OK) {
		pthread_mutex_lock(&srv->lock);
		req->refs--;
		http_state_set(req, HTTP_STATE_RECEIVING);
		req->flags &= ~HTTP_F_ACTIVE;
		if (--srv->active == 0)
			pthread_cond_broadcast(&srv->idle);
		pthread_mutex_unlock(&srv->lock);
		pinned_pool_put(srv->pool, req->slot);
		req->slot = NULL;
		ret = http_error(req, http_status_of(st), "%s", cause ? cause : batch_status_str(st));
		free(cause);
		return ret;
	}
	pthread_mutex_lock(&srv->lock);
	if (http_state(req) != HTTP_STATE_FINISHED) {
		/* done resumes it; until then the connection holds no thread. */
		MHD_suspend_connection(req->conn);
		http_state_set(req, HTTP_STATE_SUSPENDED);
		pthread_mutex_unlock(&srv->lock);
		return MHD_YES;
	}
	pthread_mutex_unlock(&srv->lock);
	return http_answer_infer(req);
}

/* Answer a request refused at decoding with 400 and count it invalid. */
static enum MHD_Result
http_invalid(struct http_request *req, const char *name, char *cause)
{
	enum MHD_Result ret;

	if (name != NULL)
		http_count_failure(req->srv, name, METRICS_REASON_INVALID);
	ret = http_error(req, MHD_HTTP_BAD_REQUEST, "%s", cause ? cause : "invalid request");
	free(cause);
	return ret;
}

/* Give back what staging took: the parsed header, the body, the slot. */
static void
http_unstage(struct http_request *req, json_t *root)
{
	json_decref(root);
	http_drop_body(req);
	if (req->slot != NULL)
		pinned_pool_put(req->srv->pool, req->slot);
	req->slot = NULL;
	kserve_infer_release(&req->ki, req->srv->shm);
}

/*
 * Decode the parsed header and the tensor data (JSON text at src's spans,
 * the binary section bin of the body, or shared-memory regions) straight
 * into a pinned slot or the regions, then submit it.
 */
static enum MHD_Result
http_stage(struct http_request *req, json_t *root, const struct kserve_source *src,
    const struct kserve_binary *bin)
{
	http_server_t *srv = req->srv;
	const model_t *m = req->m;
	struct kserve_infer *ki = &req->ki;
	char *cause = NULL;

	if ((req->slot = pinned_pool_get(srv->pool)) == NULL) {
		http_unstage(req, root);
		http_count_failure(srv, m->name, METRICS_REASON_BUSY);
		return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: all %zu HTTP "
		    "staging slots are in use; retry later", pinned_pool_slots(srv->pool));
	}
	if (kserve_decode_request(root, src, bin, m, req->slot, pinned_pool_slot_size(srv->pool), ki,
	    &cause) != 0) {
		http_unstage(req, root);
		return http_invalid(req, m->name, cause);
	}
	if (ki->id != NULL && (req->id = xstrdup(ki->id)) == NULL) {
		http_unstage(req, root);
		return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	ki->id = NULL;		/* borrowed from the tree freed below; req->id has it */
	if (ki->binary_output)
		req->flags |= HTTP_F_BINARY_OUTPUT;
	json_decref(root);
	http_drop_body(req);
	METRICS_ADD(srv->ctx.metrics->staged_bytes, ki->input_bytes);
	return http_submit(req, ki);
}

/* The JSON header's length: the whole body, or Inference-Header-Content-Length's bytes of it. */
static int
http_header_length(struct http_request *req, size_t *json_len, int *binary, char **cause)
{
	const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    KSERVE_HEADER_LENGTH);

	*json_len = req->len;
	*binary = v != NULL;
	return v != NULL ? kserve_header_length(v, req->len, json_len, cause) : 0;
}

/* POST /v2/models/{m}/infer and POST /infer: parse, find the model, stage, submit. */
static enum MHD_Result
http_infer(struct http_request *req)
{
	http_server_t *srv = req->srv;
	const char *name = req->route == ROUTE_INFER ? req->model : NULL;
	enum MHD_Result ret = MHD_NO;
	struct tensor_text_span spans[KSERVE_MAX_SPANS];
	struct kserve_source src = { req->body, spans, 0, srv->shm_enabled ? srv->shm : NULL };
	struct kserve_binary bin;
	char *cause = NULL;
	size_t json_len;
	int binary;
	json_t *root;

	if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE))
		return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
	if (req->route == ROUTE_INFER && http_url_model(req, MHD_HTTP_SERVICE_UNAVAILABLE, &ret) == NULL)
		return ret;
	if (http_header_length(req, &json_len, &binary, &cause) != 0)
		return http_invalid(req, name, cause);
	if ((root = kserve_parse_fast(req->body, json_len, spans, &src.nspans, &cause)) == NULL)
		return http_invalid(req, name, cause);
	if (name == NULL && (name = kserve_model_name(root, &cause)) == NULL) {
		json_decref(root);
		return http_invalid(req, NULL, cause);
	}
	if (req->route == ROUTE_INFER_SHORT && http_take_model(req, name, MHD_HTTP_SERVICE_UNAVAILABLE, &ret) == NULL) {
		json_decref(root);
		return ret;
	}
	/* The body stays until its binary section is copied into the slot. */
	if (binary) {
		bin.data = (const unsigned char *)req->body + json_len;
		bin.len = req->len - json_len;
	}
	return http_stage(req, root, &src, binary ? &bin : NULL);
}

/* GET /v2/models/{m}, .../ready, .../config and .../stats; a model that failed to load is 503 for metadata, 400 for ready (Triton's "not ready"). */
static enum MHD_Result
http_model_get(struct http_request *req)
{
	enum MHD_Result ret = MHD_NO;
	const model_t *m;
	size_t len = 0;
	char *body, *cause = NULL;

	if (req->route == ROUTE_MODEL_READY) {
		if (http_url_model(req, MHD_HTTP_BAD_REQUEST, &ret) == NULL)
			return ret;
		body = kserve_encode_flag("ready", 1, &len, &cause);
		return http_json(req, body, len, cause);
	}
	if ((m = http_url_model(req, MHD_HTTP_SERVICE_UNAVAILABLE, &ret)) == NULL)
		return ret;
	if (req->route == ROUTE_MODEL_CONFIG)
		body = kserve_encode_model_config(m, &len, &cause);
	else if (req->route == ROUTE_MODEL_STATS)
		body = kserve_encode_model_stats(m, metrics_find(req->srv->ctx.metrics, m->name),
		    &len, &cause);
	else
		body = kserve_encode_model_metadata(m, &len, &cause);
	return http_json(req, body, len, cause);
}

/* GET /metrics in Prometheus text format. */
static enum MHD_Result
http_metrics(struct http_request *req)
{
	const struct http_context *ctx = &req->srv->ctx;
	struct device_info info;
	char *text, *more, *all = NULL;

	device_info(ctx->dev, &info);
	text = metrics_render(ctx->metrics, info.allocations, info.conv_plans_idle);
	more = text != NULL ? repository_metrics_text(ctx->repo) : NULL;

	/* Part of the metrics would be a wrong answer: without all of them, a 500. */
	if (more != NULL)
		(void)xasprintf(&all, "%s%s", text, more);
	free(text);
	free(more);
	text = all;

	return http_reply(req, text ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR, text,
	    text ? strlen(text) : 0, text ? HTTP_TYPE_METRICS : HTTP_TYPE_JSON, NULL, NULL);
}

/* A Content-Encoding body replaced by its inflated bytes (bounded by max_body_bytes); -1 when answered with an error. */
static int
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

/* /v2/systemsharedmemory and /v2/cudasharedmemory: http_shm.c answers. */
static enum MHD_Result
http_shm(struct http_request *req)
{
	http_server_t *srv = req->srv;
	struct http_shm_reply r;

	http_shm_handle(srv->shm, srv->shm_enabled, req->post, req->url, req->body, req->len, &r);
	http_drop_body(req);
	return http_reply(req, r.status, r.body, r.len, HTTP_TYPE_JSON,
	    r.allow != NULL ? MHD_HTTP_HEADER_ALLOW : NULL, r.allow);
}

/* The mode refuses explicit load/unload: answered (403 in none mode, 400 in poll mode, as Triton), 1. */
static int
http_control_refused(struct http_request *req, enum MHD_Result *ret)
{
	enum repository_control mode = repository_control_mode(req->srv->ctx.repo);

	if (mode == REPOSITORY_CONTROL_EXPLICIT)
		return 0;
	*ret = http_error(req, mode == REPOSITORY_CONTROL_NONE ? MHD_HTTP_FORBIDDEN : MHD_HTTP_BAD_REQUEST,
	    "explicit model load / unload is not allowed: model_control_mode is %s "
	    "(set model_control_mode = explicit)", repository_control_name(mode));
	return 1;
}

/* POST /v2/repository/models/{m}/load (optional {"parameters":{"config":"<json>"}}) and .../unload. */
static enum MHD_Result
http_repository_control(struct http_request *req)
{
	repository_t *repo = req->srv->ctx.repo;
	enum MHD_Result ret;
	char *config = NULL, *cause = NULL;
	int rc;

	if (http_control_refused(req, &ret))
		return ret;
	if (req->flags & HTTP_F_NAME_TOO_LONG)
		return http_error(req, MHD_HTTP_BAD_REQUEST, "model name longer than %d bytes", MODEL_NAME_MAX - 1);
	if (req->route == ROUTE_REPO_LOAD &&
	    kserve_decode_load_request(req->body, req->len, &config, &cause) != 0) {
		http_drop_body(req);
		ret = http_error(req, MHD_HTTP_BAD_REQUEST, "%s", cause);
		free(cause);
		return ret;
	}
	http_drop_body(req);
	if (req->route == ROUTE_REPO_LOAD)
		rc = repository_load_model(repo, req->model, config, &cause);
	else
		rc = repository_unload_model(repo, req->model, &cause);
	free(config);
	if (rc != 0) {
		ret = http_error(req, MHD_HTTP_BAD_REQUEST, "failed to %s '%s': %s",
		    req->route == ROUTE_REPO_LOAD ? "load" : "unload", req->model, cause ? cause : "out of memory");
		free(cause);
		return ret;
	}
	return http_json(req, xstrdup("{}"), 2, NULL);
}

/* The whole request is in: answer it, or start its inference. */
static enum MHD_Result
http_dispatch(struct http_request *req)
{
	http_server_t *srv = req->srv;
	size_t len = 0;
	char *body, *cause = NULL;

	http_guard_request_whole(req->gc);
	if (http_decode_body(req) != 0)
		return MHD_YES;		/* answered */
	switch (req->route) {
	case ROUTE_LIVE:
		body = kserve_encode_flag("live", 1, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_READY:
		if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE))
			return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
		body = kserve_encode_flag("ready", 1, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_SERVER:
		body = kserve_encode_server_metadata(&len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_INDEX:
		body = repository_index_json(srv->ctx.repo, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_REPO_LOAD:
	case ROUTE_REPO_UNLOAD:
		return http_repository_control(req);
	case ROUTE_MODEL:
	case ROUTE_MODEL_READY:
	case ROUTE_MODEL_CONFIG:
	case ROUTE_MODEL_STATS:
		return http_model_get(req);
	case ROUTE_METRICS:
		return http_metrics(req);
	case ROUTE_SHM:
		return http_shm(req);
	case ROUTE_INFER:
	case ROUTE_INFER_SHORT:
		return http_infer(req);
	}
	return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "unrouted request");
}

/* libmicrohttpd's access handler: called once for the headers, per body piece, at the end, and after a resume. */
static enum MHD_Result
http_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_request *req = *con_cls;

	if (req == NULL)
		return http_begin(cls, conn, url, method, con_cls);
	if ((void *)req == &http_no_record) {	/* answered 500 at its start */
		*upload_data_size = 0;
		return MHD_YES;
	}
	switch (http_state(req)) {
	case HTTP_STATE_ANSWERED:
		*upload_data_size = 0;
		return MHD_YES;
	case HTTP_STATE_RECEIVING:
		if (*upload_data_size != 0)
			return http_receive(req, upload_data, upload_data_size);
		return http_dispatch(req);
	case HTTP_STATE_FINISHED:
		return http_answer_infer(req);
	default:	/* resumed early, or polled: the batcher is not done yet */
		return MHD_YES;
	}
}

/* libmicrohttpd is done with a request (answered, client gone, or stopping): let go of it. */
static void
http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct http_request *req = *con_cls;
	http_server_t *srv = cls;
	int last;

	(void)toe;
	http_guard_request_done(http_guard_of(conn));
	*con_cls = NULL;
	if (req == NULL || (void *)req == &http_no_record)
		return;
	pthread_mutex_lock(&srv->lock);
	req->flags |= HTTP_F_COMPLETED;
	if (req->flags & HTTP_F_ACTIVE) {
		req->flags &= ~HTTP_F_ACTIVE;
		if (--srv->active == 0)
			pthread_cond_broadcast(&srv->idle);
	}
	last = --req->refs == 0;
	pthread_mutex_unlock(&srv->lock);
	if (last)
		http_request_free(req);
}

/* Resolve listen_address:port into addr; -1 with *cause. */
static int
http_resolve(const char *host, int port, struct sockaddr_storage *addr,
    int *ipv6, char **cause)
{
	struct addrinfo hints, *res;
	char service[16];
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(service, sizeof service, "%d", port);
	if ((rc = getaddrinfo(host, service, &hints, &res)) != 0)
		return error_set(cause, "listen_address '%s': %s", host, gai_strerror(rc));
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*ipv6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	return 0;
}

/* Start libmicrohttpd on the configured address with a pool of threads. */
static int
http_start_daemon(http_server_t *s, char **cause)
{
	const struct daemon_config *c = s->ctx.config;
	struct sockaddr_storage addr;
	const union MHD_DaemonInfo *info;
	/*
	 * poll(), not epoll: libmicrohttpd's epoll mode is edge-triggered, and a
	 * client's FIN that arrives with its request (or with part of one) is
	 * never seen, so the connection sits in CLOSE_WAIT until the header
	 * deadline and counts against the per-client limit meanwhile.  poll() is
	 * level-triggered; each pool thread polls only its own connections.
	 */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
	    MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int ipv6 = 0;

	if (http_resolve(c->listen_address, c->http_port, &addr, &ipv6, cause) != 0)
		return -1;
	if (ipv6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	/* The logger goes first so that even option errors reach our log. */
	s->mhd = MHD_start_daemon(flags, (uint16_t)c->http_port, NULL, NULL, http_access, s,
	    MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, s,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(c->http_threads > 0 ? c->http_threads : 1),
	    MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
	    MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, s->guard,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)c->http_max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)c->http_max_connections_per_client,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_CONNECTION_TIMEOUT_S,
	    MHD_OPTION_END);
	if (s->mhd == NULL)
		return error_set(cause, "cannot serve HTTP on %s:%d%s%s", c->listen_address,
		    c->http_port, errno ? ": " : "", errno ? strerror(errno) : "");
	__atomic_store_n(&s->serving, 1, __ATOMIC_RELEASE);
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info != NULL ? info->port : c->http_port;
	return 0;
}

/* The loaded models (the first 64), for sizing the staging slots. */
struct http_models {
	const model_t *m[64];
	size_t n;
};

/* repository_foreach: collect ref's model. */
static void
http_collect_model(const model_ref_t *ref, void *arg)
{
	struct http_models *h = arg;

	if (h->n < sizeof h->m / sizeof h->m[0])
		h->m[h->n++] = ref->model;
}

/*
 * Staging slot size: what the models loaded at start-up need, or
 * HTTP_BODY_SLACK when none is (models loaded later stage the requests
 * that fit; a larger one is refused naming the slot size).
 */
static size_t
http_slot_bytes(repository_t *repo)
{
	struct http_models h = { .n = 0 };
	size_t slot;

	repository_foreach(repo, http_collect_model, &h);
	slot = pinned_pool_slot_bytes_for(h.m, h.n);
	return h.n > 0 ? slot : HTTP_BODY_SLACK;
}

/* Make the shared-memory registry (always: a request may name a region only when the endpoints are on). */
static int
http_shm_start(http_server_t *s, char **cause)
{
	const struct daemon_config *c = s->ctx.config;
	struct shm_registry_config rc = {
		.dev = s->ctx.dev,
		.allow_users = c->allow_users,
		.allow_groups = c->allow_groups,
		.max_region_bytes = c->max_region_bytes,
	};

	s->shm_enabled = http_shm_enabled(c);
	LOG_INFO("http: Triton shared-memory registration %s (http_shared_memory = %s)",
	    s->shm_enabled ? "on" : "off", c->http_shared_memory ? c->http_shared_memory : "auto");
	return shm_registry_create(&rc, &s->shm, cause) != 0 ? error_prefix(cause, "http") : 0;
}

/* Allocate the server and its pinned slots; the daemon starts later. */
static int
http_create(const struct http_context *ctx, http_server_t **out, char **cause)
{
	http_server_t *s;
	size_t slot;
	int rc;

	if (ctx->config == NULL || ctx->dev == NULL || ctx->repo == NULL ||
	    ctx->batcher == NULL || ctx->metrics == NULL)
		return error_set(cause, "http: incomplete context");
	if ((s = xcalloc(1, sizeof *s)) == NULL)
		return error_set(cause, "http: out of memory");
	s->ctx = *ctx;
	if ((rc = pthread_mutex_init(&s->lock, NULL)) != 0 || (rc = pthread_cond_init(&s->idle, NULL)) != 0) {
		free(s);
		return error_set(cause, "http: pthread init: %s", strerror(rc));
	}
	if (http_shm_start(s, cause) != 0) {
		pthread_cond_destroy(&s->idle);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return -1;
	}
	slot = http_slot_bytes(ctx->repo);
	if (http_guard_start(ctx->config, &s->guard, cause) != 0 ||
	    pinned_pool_create(ctx->dev, ctx->config->pinned_pool_bytes, slot, &s->pool, cause) != 0 ||
	    batcher_client_create(ctx->batcher, "http", &s->client, cause) != 0) {
		pinned_pool_free(s->pool);
		http_guard_stop(s->guard);
		shm_registry_free(s->shm);
		pthread_cond_destroy(&s->idle);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return error_prefix(cause, "http");
	}
	/* Every HTTP request is answered on its own connection: batches may take them in any order. */
	batcher_client_set_unordered(s->client);
	*out = s;
	return 0;
}

/* Free what http_create made (the daemon is stopped). */
static void
http_destroy(http_server_t *s)
{
	batcher_client_close(s->ctx.batcher, s->client);
	pinned_pool_free(s->pool);
	http_guard_stop(s->guard);
	shm_registry_free(s->shm);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Bind and start serving. */
int
http_start(const struct http_context *ctx, http_server_t **out, char **cause)
{
	http_server_t *s = NULL;

	if (http_create(ctx, &s, cause) != 0)
		return -1;
	if (http_start_daemon(s, cause) != 0) {
		http_destroy(s);
		return -1;
	}
	LOG_INFO("http: %d threads, %zu pinned staging slots of %zu bytes",
	    ctx->config->http_threads, pinned_pool_slots(s->pool), pinned_pool_slot_size(s->pool));
	*out = s;
	return 0;
}

/* Refuse new inference requests; readiness turns 503. */
void
http_begin_shutdown(http_server_t *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->lock);
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->lock);
}

/* Wait up to HTTP_STOP_WAIT_S for requests in flight to be answered. */
static void
http_wait_idle(http_server_t *s)
{
	struct timespec deadline;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += HTTP_STOP_WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (s->active > 0 && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&s->idle, &s->lock, &deadline);
	if (s->active > 0)
		LOG_WARN("http: %d requests still unanswered after %d s; stopping anyway",
		    s->active, HTTP_STOP_WAIT_S);
	pthread_mutex_unlock(&s->lock);
}

/*
 * Stop: answer what is in flight, then close the batcher client (its done
 * callbacks have all run after that, so no connection stays suspended, which
 * MHD_stop_daemon requires), then stop the daemon and free the slots.
 */
void
http_stop(http_server_t *s)
{
	if (s == NULL)
		return;
	http_begin_shutdown(s);
	http_wait_idle(s);
	batcher_client_close(s->ctx.batcher, s->client);
	s->client = NULL;
	MHD_stop_daemon(s->mhd);
	http_guard_stop(s->guard);
	pinned_pool_free(s->pool);
	shm_registry_free(s->shm);	/* every request is answered: no region is in use */
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The bound port. */
int
http_port(const http_server_t *s)
{
	return s->port;
}
