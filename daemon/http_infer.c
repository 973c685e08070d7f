/* http_infer.c: the HTTP inference path: parse the header, stage the tensors in pinned memory, submit to the batcher, answer when it is done. */
#include "config.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "http_internal.h"
#include "kserve.h"
#include "log.h"
#include "pinned_pool.h"
#include "repository.h"

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

/* Give the request's staging memory back to the pinned pool (none is ignored). */
static void
http_slot_put(struct http_request *req)
{
	if (req->slot != NULL)
		pinned_pool_put(req->srv->pool, req->slot, req->slot_bytes);
	req->slot = NULL;
	req->slot_bytes = 0;
}

/* Release what a request holds; called by whichever party lets go last. */
void
http_request_free(struct http_request *req)
{
	http_slot_put(req);
	json_decref(req->root);
	repository_release(req->ref);
	http_uncharge(req);
	kserve_infer_release(&req->ki, req->srv->shm);
	free(req->body);
	free(req->id);
	free(req->error);
	free(req->url);
	free(req);
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
const model_t *
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
enum MHD_Result
http_answer_infer(struct http_request *req)
{
	const model_t *m = req->m;
	char *body, *cause = NULL;
	size_t len = 0, hlen = 0;
	enum MHD_Result ret;

	if (req->status != BATCH_OK) {
		http_slot_put(req);
		return http_error(req, http_status_of(req->status), "model '%s': %s", m->name,
		    req->error ? req->error : batch_status_str(req->status));
	}
	body = kserve_encode_infer(m, req->id, &req->ki, req->slot, &len, &hlen, &cause);
	http_slot_put(req);
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
		http_slot_put(req);
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
		http_slot_put(req);
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

/* Give back what staging took: the parsed header, the body, the staging memory. */
static void
http_unstage(struct http_request *req)
{
	json_decref(req->root);
	req->root = NULL;
	http_drop_body(req);
	http_slot_put(req);
	kserve_infer_release(&req->ki, req->srv->shm);
}

/* Decode the tensor data into the staging memory (or the regions), then submit. */
static enum MHD_Result
http_fill(struct http_request *req)
{
	http_server_t *srv = req->srv;
	struct kserve_infer *ki = &req->ki;
	char *cause = NULL;

	if (kserve_decode_tensors(req->root, &req->src, req->binary ? &req->bin : NULL, req->m, req->slot, ki,
	    &cause) != 0) {
		http_unstage(req);
		return http_invalid(req, req->m->name, cause);
	}
	if (ki->id != NULL && (req->id = xstrdup(ki->id)) == NULL) {
		http_unstage(req);
		return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	ki->id = NULL;		/* borrowed from the tree freed below; req->id has it */
	if (ki->binary_output)
		req->flags |= HTTP_F_BINARY_OUTPUT;
	json_decref(req->root);
	req->root = NULL;
	http_drop_body(req);
	METRICS_ADD(srv->ctx.metrics->staged_bytes, ki->input_bytes);
	return http_submit(req, ki);
}

/* Called by the pinned pool's thread: keep the memory (NULL: none in time), wake the connection, let go. */
static void
http_staged(struct pinned_wait *w, void *mem)
{
	struct http_request *req = (struct http_request *)((char *)w - offsetof(struct http_request, wait));
	http_server_t *srv = req->srv;
	int last;

	pthread_mutex_lock(&srv->lock);
	req->slot = mem;
	req->slot_bytes = mem != NULL ? w->bytes : 0;
	http_state_set(req, HTTP_STATE_STAGED);
	if (!(req->flags & HTTP_F_COMPLETED))
		MHD_resume_connection(req->conn);
	last = --req->refs == 0;
	pthread_mutex_unlock(&srv->lock);
	if (last)
		http_request_free(req);
}

/* The request's deadline: its timeout (at most the model's default_timeout_us, which also stands in for none). */
static uint64_t
http_deadline(const struct http_request *req)
{
	uint64_t timeout = req->ki.timeout_us, most = req->m->batching.default_timeout_us;

	return clock_now_us() + (timeout == 0 || timeout > most ? most : timeout);
}

/*
 * Take the staging memory the request's layout needs from the pinned pool.
 * When it is in use, the connection is suspended (holding no thread: the
 * memory comes back through other connections' threads) until the pool's
 * thread hands it over or the deadline passes; http_staging_done goes on.
 */
static enum MHD_Result
http_take_slot(struct http_request *req)
{
	http_server_t *srv = req->srv;
	enum pinned_take taken;
	void *mem = NULL;

	req->wait = (struct pinned_wait){ .bytes = req->ki.staged_bytes, .deadline_us = req->deadline_us,
	    .done = http_staged };
	pthread_mutex_lock(&srv->lock);
	if ((taken = pinned_pool_take(srv->pool, &req->wait, &mem)) == PINNED_WAITING) {
		/* Counted active so that http_stop waits for it; suspended before the pool can answer. */
		req->refs++;
		req->flags |= HTTP_F_ACTIVE;
		srv->active++;
		http_state_set(req, HTTP_STATE_STAGING);
		MHD_suspend_connection(req->conn);
		pthread_mutex_unlock(&srv->lock);
		return MHD_YES;
	}
	pthread_mutex_unlock(&srv->lock);
	if (taken == PINNED_REFUSED) {	/* the size was checked: the waits were cancelled */
		http_unstage(req);
		return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
	}
	req->slot = mem;
	req->slot_bytes = req->wait.bytes;
	return http_fill(req);
}

/* Resumed by the pinned pool: fill the memory it handed over and submit, or answer 503 (none in time, or stopping). */
enum MHD_Result
http_staging_done(struct http_request *req)
{
	http_server_t *srv = req->srv;
	uint64_t now = clock_now_us();

	pthread_mutex_lock(&srv->lock);
	http_state_set(req, HTTP_STATE_RECEIVING);
	req->flags &= ~HTTP_F_ACTIVE;	/* http_submit counts it again */
	if (--srv->active == 0)
		pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->lock);
	if (req->slot != NULL) {
		/* What is left of its timeout goes to the batcher. */
		req->ki.timeout_us = req->deadline_us > now ? req->deadline_us - now : 1;
		return http_fill(req);
	}
	http_unstage(req);
	if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE))
		return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
	http_count_failure(srv, req->m->name, METRICS_REASON_BUSY);
	return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: %zu bytes of HTTP staging memory "
	    "(pinned_pool_bytes = %zu, shared by all HTTP requests) were not free within the request's timeout; "
	    "retry later or raise pinned_pool_bytes", req->wait.bytes, pinned_pool_bytes(srv->pool));
}

/*
 * Lay the parsed header out against the model, then take staging memory
 * for exactly its tensors (a request larger than the whole pool is 413)
 * and decode the tensor data (JSON text at the spans, the binary section of
 * the body, or shared-memory regions) into it or the regions.
 */
static enum MHD_Result
http_stage(struct http_request *req)
{
	http_server_t *srv = req->srv;
	const model_t *m = req->m;
	char *cause = NULL;

	if (kserve_decode_layout(req->root, &req->src, m, &req->ki, &cause) != 0) {
		http_unstage(req);
		return http_invalid(req, m->name, cause);
	}
	if (req->ki.staged_bytes > pinned_pool_bytes(srv->pool)) {
		http_unstage(req);
		http_count_failure(srv, m->name, METRICS_REASON_INVALID);
		return http_error(req, MHD_HTTP_CONTENT_TOO_LARGE, "model '%s': this request's tensors need %zu "
		    "bytes of HTTP staging memory, more than all of pinned_pool_bytes (%zu); send fewer rows or "
		    "raise pinned_pool_bytes", m->name, req->ki.staged_bytes, pinned_pool_bytes(srv->pool));
	}
	req->deadline_us = http_deadline(req);
	return http_take_slot(req);
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
enum MHD_Result
http_infer(struct http_request *req)
{
	http_server_t *srv = req->srv;
	const char *name = req->route == ROUTE_INFER ? req->model : NULL;
	enum MHD_Result ret = MHD_NO;
	char *cause = NULL;
	size_t json_len;

	if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE))
		return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
	if (req->route == ROUTE_INFER && http_url_model(req, MHD_HTTP_SERVICE_UNAVAILABLE, &ret) == NULL)
		return ret;
	if (http_header_length(req, &json_len, &req->binary, &cause) != 0)
		return http_invalid(req, name, cause);
	req->src = (struct kserve_source){ req->body, req->spans, 0, srv->shm_enabled ? srv->shm : NULL };
	/* Kept in the request: staging may wait for memory with the connection suspended. */
	if ((req->root = kserve_parse_fast(req->body, json_len, req->spans, &req->src.nspans, &cause)) == NULL)
		return http_invalid(req, name, cause);
	if (name == NULL && (name = kserve_model_name(req->root, &cause)) == NULL)
		return http_invalid(req, NULL, cause);
	if (req->route == ROUTE_INFER_SHORT && http_take_model(req, name, MHD_HTTP_SERVICE_UNAVAILABLE, &ret) == NULL)
		return ret;
	/* The body stays until its binary section is copied into the staging memory. */
	if (req->binary) {
		req->bin.data = (const unsigned char *)req->body + json_len;
		req->bin.len = req->len - json_len;
	}
	return http_stage(req);
}
