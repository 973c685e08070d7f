/* http_internal.h: what the HTTP front end's files share (http_server.c, http_route.c, http_infer.c, http_body.c, http_reply.c); not for other modules. */
#ifndef INFERD_HTTP_INTERNAL_H
#define INFERD_HTTP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "batcher.h"
#include "http.h"
#include "http_guard.h"
#include "kserve.h"
#include "pinned_pool.h"
#include "shm_registry.h"
#include "tensor_text.h"

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
 * passes it (then nothing more is read), or a request whose tensors need
 * more than the whole pinned staging memory (pinned_pool_bytes).  503:
 * queue full, the staging memory still in use when the request's timeout
 * ran out, the body budget (http_body_budget_bytes) in use, a request
 * timeout (Triton's "Request timeout expired" is UNAVAILABLE), shutting
 * down.  Slow connections are closed by http_guard.c.  500: a device
 * failure.  A model that failed to load answers 503
 * with its load error for metadata and inference, and 400 for .../ready
 * (Triton's "Model version not ready").  POST /infer is the short form:
 * the body of /v2/models/{m}/infer plus "model": "{m}".  Either takes the
 * binary tensor extension: Inference-Header-Content-Length splits the
 * body into its JSON header and the tensors' raw bytes, which are copied
 * from the body straight into pinned staging memory; an answer with a binary
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
	ROUTE_ALL_STATS,	/* GET /v2/models/stats: every model's (Triton) */
	ROUTE_INFER,		/* POST /v2/models/{m}[/versions/1]/infer */
	ROUTE_INFER_SHORT,	/* POST /infer, the model named in the body */
	ROUTE_METRICS,		/* GET /metrics */
	ROUTE_SHM,		/* /v2/systemsharedmemory/..., /v2/cudasharedmemory/... (http_shm.c) */
	ROUTE_REPO_LOAD,	/* POST /v2/repository/models/{m}/load */
	ROUTE_REPO_UNLOAD,	/* POST /v2/repository/models/{m}/unload */
};

struct http_server {
	struct door_context ctx;
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
	int active;		/* inference requests from staging or submit to connection completion */
};

/*
 * One HTTP request.  While it waits on the batcher (or on the pinned pool
 * for staging memory) two parties hold it: libmicrohttpd until its
 * completion callback, the batcher (the pool) until done runs; refs counts
 * them and the last one frees it, so done never touches a request that a
 * vanished client took away.
 */
/*
 * Where a request is in its life.  RECEIVING -> ANSWERED for everything but
 * an accepted inference, which goes RECEIVING [-> STAGING (suspended until
 * the pinned pool has its memory) -> STAGED (set by the pool's thread)]
 * -> SUBMITTED (with the batcher)
 * -> SUSPENDED (the connection holds no thread) -> FINISHED (the batcher is
 * done; set by its thread) -> ANSWERED; SUSPENDED is skipped when the batcher
 * finishes first.  Read and written atomically: the batcher's thread sets
 * FINISHED and the pool's STAGED (under srv->lock) while libmicrohttpd's may look.
 */
enum http_state {
	HTTP_STATE_RECEIVING = 0,
	HTTP_STATE_SUBMITTED,
	HTTP_STATE_SUSPENDED,
	HTTP_STATE_FINISHED,
	HTTP_STATE_ANSWERED,
	HTTP_STATE_STAGING,
	HTTP_STATE_STAGED,
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
	HTTP_F_ACTIVE = 1u << 6,	/* counted in srv->active (waiting for staging memory, or submitted) */
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
	void *slot;			/* its staging memory from the pinned pool, slot_bytes long */
	size_t slot_bytes;
	struct pinned_wait wait;	/* for the staging memory when none was free */
	uint64_t deadline_us;		/* when its timeout runs out (clock_now_us) */
	json_t *root;			/* the parsed header, while staging */
	struct tensor_text_span spans[KSERVE_MAX_SPANS];
	struct kserve_source src;	/* the header's text and spans, the shm registry */
	struct kserve_binary bin;	/* the body's binary section */
	int binary;			/* bin is set */
	char *id;
	struct kserve_infer ki;		/* the decoded request: where its tensors lie in the slot */
	struct batch_request breq;
	/* Under srv->lock. */
	int refs;
	enum batch_status status;
	char *error;
};

/* The request's state. */
static inline enum http_state
http_state(const struct http_request *req)
{
	return __atomic_load_n(&req->state, __ATOMIC_ACQUIRE);
}

/* Move the request to state st. */
static inline void
http_state_set(struct http_request *req, enum http_state st)
{
	__atomic_store_n(&req->state, st, __ATOMIC_RELEASE);
}

/* http_reply.c: writing answers. */
/* Queue a response that owns body (NULL means out of memory), with one optional header; counts errors. */
enum MHD_Result http_reply(struct http_request *req, unsigned int status, char *body, size_t len,
    const char *type, const char *header, const char *value);
/* Answer {"error": message} with status, and an Allow header when allow is set. */
__attribute__((format(printf, 4, 5))) enum MHD_Result http_error_allow(struct http_request *req,
    unsigned int status, const char *allow, const char *fmt, ...);
#define http_error(req, status, ...) http_error_allow((req), (status), NULL, __VA_ARGS__)
/* Answer 200 with a JSON body; a body that failed to encode (NULL, *cause) is a 500. */
enum MHD_Result http_json(struct http_request *req, char *body, size_t len, char *cause);
/* Refuse a request whose body is still arriving, straight to the socket; MHD_NO closes the connection. */
__attribute__((format(printf, 3, 4))) enum MHD_Result http_refuse_now(struct http_request *req,
    unsigned int status, const char *fmt, ...);

/* http_body.c: reading request bodies. */
/* Give back the request's share of the body budget. */
void http_uncharge(struct http_request *req);
/* Drop the body buffer (parsed, or discarded). */
void http_drop_body(struct http_request *req);
/* Check Content-Length against the limits and hold its bytes of the budget; answers when refused. */
enum MHD_Result http_begin_body(struct http_request *req);
/* Take a piece of the body; past the request's limit or the body budget it is refused at once. */
enum MHD_Result http_receive(struct http_request *req, const char *data, size_t *size);
/* A Content-Encoding body replaced by its inflated bytes; -1 when answered with an error. */
int http_decode_body(struct http_request *req);

/* http_infer.c: the inference path. */
/* Release what a request holds; called by whichever party lets go last. */
void http_request_free(struct http_request *req);
/* The model a URL names, or NULL when the request has been answered 404/failed_status. */
const model_t *http_url_model(struct http_request *req, unsigned int failed_status, enum MHD_Result *ret);
/* POST /v2/models/{m}/infer and POST /infer: parse, find the model, stage, submit. */
enum MHD_Result http_infer(struct http_request *req);
/* Encode the answer from the staging memory and queue it; the memory goes back first. */
enum MHD_Result http_answer_infer(struct http_request *req);
/* Resumed by the pinned pool (HTTP_STATE_STAGED): fill its memory and submit, or answer 503. */
enum MHD_Result http_staging_done(struct http_request *req);

/* http_route.c: routing and the answers that are not inference. */
/* Route url; returns the methods its path takes, NULL for an unknown path. */
const char *http_route(struct http_request *req, const char *url);
/* Whether method is one of allow's. */
int http_method_allowed(const char *allow, const char *method);
/* The whole request is in: answer it, or start its inference. */
enum MHD_Result http_dispatch(struct http_request *req);

#endif
