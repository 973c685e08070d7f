/* inferd_requests.c: the request calls — submit, wait, run, infer — each checking the request and the connection first. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

/* Say what is wrong with tensor t (what: "input" or "output") for rows rows of row_bytes. */
static int
inferd__tensor_check(const inferd_conn_t *c, const struct inferd_tensor *t, const char *what,
    int rows, size_t row_bytes)
{
	uint64_t need = (uint64_t)rows * row_bytes;

	if (t == NULL)
		return inferd__fail(INFERD_EINVAL, "no %s tensor (it is NULL)", what);
	if (t->offset < c->layout.data_offset || t->offset > c->region_bytes ||
	    t->bytes > c->region_bytes - t->offset || t->data != c->base + t->offset)
		return inferd__fail(INFERD_EINVAL, "the %s tensor does not lie in this connection's "
		    "shared region: allocate it with inferd_tensor_alloc on the same connection", what);
	if (t->bytes < need && rows == 1)
		return inferd__fail(INFERD_EINVAL, "the %s tensor (%zu bytes) is smaller than one row "
		    "of %zu bytes", what, t->bytes, row_bytes);
	if (t->bytes < need)
		return inferd__fail(INFERD_EINVAL, "the %s tensor (%zu bytes) is smaller than %d rows "
		    "of %zu bytes (%llu bytes)", what, t->bytes, rows, row_bytes, (unsigned long long)need);
	return 0;
}

/* Check a request before it goes on the wire. */
static int
inferd__request_ok(inferd_conn_t *c, const struct inferd_request *r)
{
	const struct inferd_model *m = r->model;
	int rc;

	if (m == NULL || m->id >= c->models_cap || c->models[m->id] != m)
		return inferd__fail(INFERD_EINVAL, "the model was not looked up on this connection "
		    "(use inferd_model_get on it)");
	/* A model without a batch dimension (max_batch_size 0) takes one row. */
	if (r->rows < 1 || r->rows > (m->max_batch_size > 0 ? m->max_batch_size : 1))
		return inferd__fail(INFERD_EINVAL, m->max_batch_size > 0 ? "rows is %d; model %s takes "
		    "1 to %d rows (its max_batch_size)" : "rows is %d; model %s has no batch dimension "
		    "(max_batch_size 0), so it takes exactly %d row", r->rows, m->name,
		    m->max_batch_size > 0 ? m->max_batch_size : 1);
	if (r->input == NULL && r->output == NULL && (r->ninputs != 0 || r->noutputs != 0))
		return 0;	/* the list form: inferd__list_build checks it */
	if (r->ninputs != 0 || r->noutputs != 0)
		return inferd__fail(INFERD_EINVAL, "the request gives both input/output and "
		    "inputs/outputs: give one form");
	if (m->ninputs != 1 || m->noutputs != 1 || m->input_row_bytes == 0)
		return inferd__fail(INFERD_EINVAL, "model %s has %d input%s and %d output%s%s: name them "
		    "with inputs/outputs (struct inferd_io lists)", m->name, m->ninputs,
		    m->ninputs == 1 ? "" : "s", m->noutputs, m->noutputs == 1 ? "" : "s",
		    m->input_row_bytes == 0 ? " of variable dims" : "");
	if ((rc = inferd__tensor_check(c, r->input, "input", r->rows, m->input_row_bytes)) != 0)
		return rc;
	return inferd__tensor_check(c, r->output, "output", r->rows, m->output_row_bytes);
}

/* Check and copy a caller's request. */
int
inferd__request_copy(inferd_conn_t *c, const struct inferd_request *r, struct inferd_request *dst,
    struct inferd_io *outs)
{
	int rc;

	if ((rc = inferd__reconnect_if_needed(c)) != 0)
		return rc;
	if ((rc = inferd__struct_copy(dst, INFERD__REQUEST_SIZE_0_3, INFERD__REQUEST_SIZE_0_1, r, r->size,
	    "INFERD_REQUEST")) != 0)
		return rc;
	if ((rc = inferd__request_ok(c, dst)) != 0)
		return rc;
	return inferd__outputs_resolve(c, dst, outs);
}

/* Queue a request without waiting. */
int
inferd_submit(inferd_conn_t *c, const struct inferd_request *r)
{
	struct inferd_request req = INFERD_REQUEST_INIT;
	struct inferd_io outs[INFERD_WIRE_MAX_TENSORS];
	int idx, rc;

	inferd__clear_error();
	if (c == NULL || r == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_submit: bad argument");
	if ((rc = inferd__request_copy(c, r, &req, outs)) != 0)
		return rc;
	pthread_mutex_lock(&c->lock);
	idx = inferd__push(c, &req, INFERD__STASH);
	pthread_mutex_unlock(&c->lock);
	return idx < 0 ? idx : 0;
}

/* Hand stashed completions to the caller (lock held). */
static unsigned
inferd__unstash(inferd_conn_t *c, struct inferd_completion *out, unsigned max)
{
	unsigned n = 0;

	while (n < max && c->nstash > 0) {
		out[n++] = c->stash[c->stash_head];
		c->stash_head = (c->stash_head + 1) % c->cq_entries;
		c->nstash--;
	}
	return n;
}

/* inferd_wait is done waiting: something is stashed, or nothing of inferd_submit is on the wire. */
static int
inferd__stash_ready(inferd_conn_t *c, void *arg)
{
	(void)arg;
	return c->nstash > 0 || c->nstash_wire == 0;
}

/*
 * Reap up to max completions of inferd_submit's requests, waiting up to
 * timeout_ms for the first.  With none of them on the wire a wait would
 * never end: INFERD_ENOPENDING at once (other threads' callback, handle and
 * synchronous requests do not count).
 */
int
inferd_wait(inferd_conn_t *c, struct inferd_completion *out, unsigned max, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : inferd__now_ms() + timeout_ms;
	int r;

	inferd__clear_error();
	if (c == NULL || out == NULL || max == 0)
		return inferd__fail(INFERD_EINVAL, "inferd_wait: bad argument");
	pthread_mutex_lock(&c->lock);
	r = inferd__await(c, inferd__stash_ready, NULL, deadline);
	if (c->nstash > 0)
		r = (int)inferd__unstash(c, out, max);
	else if (c->closed)
		r = inferd__closed(c);
	else if (r >= 0 && c->nstash_wire == 0 && timeout_ms != 0)
		r = inferd__fail(INFERD_ENOPENDING, "inferd_wait: no request is outstanding "
		    "(every one submitted with inferd_submit has been reaped)");
	else if (r > 0)
		r = 0;
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* A sync request is done waiting: its record completed. */
static int
inferd__record_ready(inferd_conn_t *c, void *arg)
{
	return c->records[*(int *)arg].done;
}

/* Wait for the sync request in record idx (lock held); its status. */
static int
inferd__wait_record(inferd_conn_t *c, int idx)
{
	struct inferd_record *rec = &c->records[idx];
	int r;

	r = inferd__await(c, inferd__record_ready, &idx, -1);
	if (!rec->done)
		return r;	/* cannot happen: the engine completes every record when the daemon goes */
	r = rec->status;
	if (r != 0)
		inferd__fail(r, "the daemon answered: %s%s%s", inferd_strerror(r),
		    rec->detail ? " " : "", inferd__detail_text(rec->detail));
	inferd__record_release(c, idx);
	return r;
}

/* Room for one more submission, or nothing more will come. */
static int
inferd__room(inferd_conn_t *c, void *arg)
{
	(void)arg;
	return c->free_record >= 0 && c->inflight + c->nstash < c->cq_entries &&
	    c->sq_tail - __atomic_load_n(&c->hdr->sq_head, __ATOMIC_ACQUIRE) < c->sq_entries;
}

/* Publish a checked request as a sync one and wait for it. */
static int
inferd__run_sync(inferd_conn_t *c, const struct inferd_request *r)
{
	int idx, rc;

	pthread_mutex_lock(&c->lock);
	/* Rings full of asynchronous requests: wait until their completions make room. */
	while ((idx = inferd__push(c, r, INFERD__SYNC)) == INFERD_EAGAIN) {
		if (c->inflight == 0) {
			pthread_mutex_unlock(&c->lock);
			return inferd__fail(INFERD_EAGAIN, "%u completions are waiting for inferd_wait",
			    c->nstash);
		}
		if ((rc = inferd__await(c, inferd__room, NULL, -1)) < 0) {
			pthread_mutex_unlock(&c->lock);
			return rc;
		}
	}
	rc = idx < 0 ? idx : inferd__wait_record(c, idx);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Run one request and wait for it. */
int
inferd_infer(inferd_conn_t *c, const struct inferd_model *m, int rows,
    const struct inferd_tensor *input, const struct inferd_tensor *output,
    uint64_t timeout_us)
{
	struct inferd_request r = {
		.size = sizeof r, .model = m, .rows = rows, .input = input, .output = output,
		.timeout_us = timeout_us,
	};
	int rc;

	inferd__clear_error();
	if (c == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_infer: no connection");
	if ((rc = inferd__reconnect_if_needed(c)) != 0 || (rc = inferd__request_ok(c, &r)) != 0)
		return rc;
	return inferd__run_sync(c, &r);
}

/* Run one request of either form and wait for it. */
int
inferd_run(inferd_conn_t *c, const struct inferd_request *r)
{
	struct inferd_request req = INFERD_REQUEST_INIT;
	struct inferd_io outs[INFERD_WIRE_MAX_TENSORS];
	int rc;

	inferd__clear_error();
	if (c == NULL || r == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_run: bad argument");
	if ((rc = inferd__request_copy(c, r, &req, outs)) != 0)
		return rc;
	return inferd__run_sync(c, &req);
}
