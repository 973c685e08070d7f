/* inferd_ring.c: submissions and completions through the region's rings, sync and async. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

/* Make the request records and the completion stash. */
int
inferd__ring_init(inferd_conn_t *c)
{
	uint32_t i;

	c->records = calloc(c->cq_entries, sizeof *c->records);
	c->stash = calloc(c->cq_entries, sizeof *c->stash);
	if (c->records == NULL || c->stash == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	for (i = 0; i < c->cq_entries; i++)
		c->records[i].next_free = i + 1 < c->cq_entries ? (int)i + 1 : -1;
	c->free_record = 0;
	return 0;
}

/* Free the records and the stash. */
void
inferd__ring_free(inferd_conn_t *c)
{
	free(c->records);
	free(c->stash);
}

/* Requests submitted and not yet reaped. */
unsigned
inferd_outstanding(inferd_conn_t *c)
{
	return c != NULL ? c->inflight + c->nstash : 0;
}

/* The descriptor an event loop polls for completions. */
int
inferd_fd(inferd_conn_t *c)
{
	return c != NULL ? c->doorbell_fd : INFERD_EINVAL;
}

/* Which check an invalid request failed, as the daemon reported it. */
static const char *
inferd__detail_text(uint32_t detail)
{
	switch (detail) {
	case INFERD_WIRE_DETAIL_MODEL:
		return "(unknown model)";
	case INFERD_WIRE_DETAIL_DATATYPE:
		return "(wrong datatype)";
	case INFERD_WIRE_DETAIL_ROWS:
		return "(rows out of range)";
	case INFERD_WIRE_DETAIL_LENGTH:
		return "(tensor length is not rows x row bytes)";
	case INFERD_WIRE_DETAIL_RANGE:
		return "(tensor outside the region's data area)";
	case INFERD_WIRE_DETAIL_ALIGN:
		return "(tensor offset not 4-byte aligned)";
	case INFERD_WIRE_DETAIL_FLAGS:
		return "(unknown flags)";
	case INFERD_WIRE_DETAIL_TENSORS:
		return "(tensor list: a count, index or reserved field wrong, or a tensor twice)";
	case INFERD_WIRE_DETAIL_DIMS:
		return "(tensor dims outside what the model takes)";
	default:
		return "";
	}
}

/* Ring the submission doorbell (never blocks: the eventfd is non-blocking). */
static void
inferd__ring_doorbell(inferd_conn_t *c)
{
	uint64_t one = 1;

	(void)!write(c->submit_fd, &one, sizeof one);
}

/* 1 when tensor t lies inside this connection's data area with at least need bytes. */
int
inferd__tensor_ok(const inferd_conn_t *c, const struct inferd_tensor *t, uint64_t need)
{
	return t != NULL && t->offset >= c->layout.data_offset && t->offset <= c->region_bytes &&
	    t->bytes <= c->region_bytes - t->offset && t->bytes >= need &&
	    t->data == c->base + t->offset;
}

/* Check a request before it goes on the wire. */
static int
inferd__request_ok(inferd_conn_t *c, const struct inferd_request *r)
{
	const struct inferd_model *m = r->model;

	if (m == NULL || m->id >= c->nmodels || c->models[m->id] != m)
		return inferd__fail(INFERD_EINVAL, "the model does not belong to this connection");
	/* A model without a batch dimension (max_batch_size 0) takes one row. */
	if (r->rows < 1 || r->rows > (m->max_batch_size > 0 ? m->max_batch_size : 1))
		return inferd__fail(INFERD_EINVAL, "rows %d outside 1..%d for %s", r->rows,
		    m->max_batch_size > 0 ? m->max_batch_size : 1, m->name);
	if (r->input == NULL && r->output == NULL && (r->ninputs != 0 || r->noutputs != 0))
		return 0;	/* the list form: inferd__list_build checks it */
	if (r->ninputs != 0 || r->noutputs != 0)
		return inferd__fail(INFERD_EINVAL, "give input/output or inputs/outputs, not both");
	if (m->ninputs != 1 || m->noutputs != 1 || m->input_row_bytes == 0)
		return inferd__fail(INFERD_EINVAL, "model %s has %d inputs and %d outputs%s: name them "
		    "with inputs/outputs", m->name, m->ninputs, m->noutputs,
		    m->input_row_bytes == 0 ? " of variable dims" : "");
	if (!inferd__tensor_ok(c, r->input, (uint64_t)r->rows * m->input_row_bytes))
		return inferd__fail(INFERD_EINVAL, "the input tensor is not a block of this region of %llu bytes",
		    (unsigned long long)r->rows * m->input_row_bytes);
	if (!inferd__tensor_ok(c, r->output, (uint64_t)r->rows * m->output_row_bytes))
		return inferd__fail(INFERD_EINVAL, "the output tensor is not a block of this region of %llu bytes",
		    (unsigned long long)r->rows * m->output_row_bytes);
	return 0;
}

/* Publish one submission; sync marks a request of inferd_infer. */
static int
inferd__push(inferd_conn_t *c, const struct inferd_request *r, int sync)
{
	struct inferd_wire_sqe *e;
	struct inferd__list list;
	uint64_t list_offset = 0;
	uint32_t head;
	int idx, rc;

	if (c->closed)
		return inferd__closed(c);
	if (c->inflight + c->nstash >= c->cq_entries)
		return inferd__fail(INFERD_EAGAIN, "%u requests outstanding: reap some first", c->cq_entries);
	head = __atomic_load_n(&c->hdr->sq_head, __ATOMIC_ACQUIRE);
	if (c->sq_tail - head >= c->sq_entries)
		return inferd__fail(INFERD_EAGAIN, "the submission ring is full");
	if (r->input == NULL) {
		if ((rc = inferd__list_build(c, r, &list)) != 0 ||
		    (rc = inferd__list_place(c, c->sq_tail & (c->sq_entries - 1), &list, &list_offset)) != 0)
			return rc;
	}
	idx = c->free_record;
	c->free_record = c->records[idx].next_free;
	c->records[idx] = (struct inferd_record){ r->user_data, 1, sync, 0, 0, 0, -1 };
	e = &c->sq[c->sq_tail & (c->sq_entries - 1)];
	if (r->input == NULL)
		*e = (struct inferd_wire_sqe){
			.user_data = (uint64_t)idx,
			.model_id = r->model->id,
			.rows = (uint32_t)r->rows,
			.flags = INFERD_WIRE_SQE_LIST,
			.list_offset = list_offset,
			.ninputs = list.ninputs,
			.noutputs = list.noutputs,
			.timeout_us = r->timeout_us,
		};
	else
		*e = (struct inferd_wire_sqe){
		.user_data = (uint64_t)idx,
		.model_id = r->model->id,
		.datatype = INFERD_WIRE_FP32,
		.rows = (uint32_t)r->rows,
		.input_offset = r->input->offset,
		.input_bytes = (uint64_t)r->rows * r->model->input_row_bytes,
		.output_offset = r->output->offset,
		.output_bytes = (uint64_t)r->rows * r->model->output_row_bytes,
		.timeout_us = r->timeout_us,
	};
	c->sq_tail++;
	__atomic_store_n(&c->hdr->sq_tail, c->sq_tail, __ATOMIC_RELEASE);
	c->inflight++;
	inferd__ring_doorbell(c);
	return idx;
}

/* Queue a request without waiting. */
int
inferd_submit(inferd_conn_t *c, const struct inferd_request *r)
{
	struct inferd_request req = INFERD_REQUEST_INIT;
	int idx, rc;

	if (c == NULL || r == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_submit: bad argument");
	if ((rc = inferd__struct_copy(&req, INFERD__REQUEST_SIZE_0_2, INFERD__REQUEST_SIZE_0_1, r, r->size,
	    "INFERD_REQUEST")) != 0 || (rc = inferd__request_ok(c, &req)) != 0)
		return rc;
	r = &req;
	idx = inferd__push(c, r, 0);
	return idx < 0 ? idx : 0;
}

/*
 * Move every published completion off the ring: sync ones into their
 * record, async ones into the stash.  Then, if the daemon left submissions
 * waiting for completion room, ring the doorbell again.
 */
static int
inferd__reap(inferd_conn_t *c)
{
	uint32_t tail = __atomic_load_n(&c->hdr->cq_tail, __ATOMIC_ACQUIRE);
	struct inferd_wire_cqe e;
	struct inferd_record *rec;
	int n = 0;

	if (tail - c->cq_head > c->cq_entries)
		return inferd__fail(INFERD_EPROTO, "completion ring corrupt");
	while (c->cq_head != tail) {
		memcpy(&e, &c->cq[c->cq_head & (c->cq_entries - 1)], sizeof e);
		c->cq_head++;
		if (e.user_data >= c->cq_entries || !c->records[e.user_data].used)
			return inferd__fail(INFERD_EPROTO, "completion for an unknown request");
		rec = &c->records[e.user_data];
		c->inflight--;
		n++;
		if (rec->sync) {
			rec->done = 1;
			rec->status = inferd__status_code(e.status);
			rec->detail = e.detail;
			continue;
		}
		c->stash[(c->stash_head + c->nstash) % c->cq_entries] =
		    (struct inferd_completion){ .user_data = rec->user_data,
		    .status = inferd__status_code(e.status) };
		c->nstash++;
		rec->used = 0;
		rec->next_free = c->free_record;
		c->free_record = (int)e.user_data;
	}
	__atomic_store_n(&c->hdr->cq_head, c->cq_head, __ATOMIC_RELEASE);
	if (n > 0 && __atomic_load_n(&c->hdr->sq_head, __ATOMIC_ACQUIRE) != c->sq_tail)
		inferd__ring_doorbell(c);
	return n;
}

/* Empty the completion doorbell; 1 if the daemon hung up. */
static int
inferd__drain_doorbell(inferd_conn_t *c)
{
	char buf[256];
	ssize_t n;

	while ((n = recv(c->doorbell_fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
		;
	return n == 0;
}

/* Sleep until the doorbell rings, the daemon hangs up, or timeout_ms passes; 0 on timeout. */
static int
inferd__sleep(inferd_conn_t *c, int timeout_ms)
{
	struct pollfd p[2] = { { c->doorbell_fd, POLLIN, 0 }, { c->control_fd, POLLIN, 0 } };
	int r;

	do
		r = poll(p, 2, timeout_ms);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		return inferd__fail(INFERD_ESYS, "poll: %s", strerror(errno));
	/* The daemon never speaks unasked: anything on the control socket is its goodbye. */
	if (p[1].revents != 0 || (p[0].revents & (POLLHUP | POLLERR)))
		return inferd__closed(c);
	if (r > 0 && inferd__drain_doorbell(c))
		return inferd__closed(c);
	return r;
}

/* Hand stashed completions to the caller. */
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

/* Reap up to max completions, waiting up to timeout_ms for the first. */
int
inferd_wait(inferd_conn_t *c, struct inferd_completion *out, unsigned max, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : inferd__now_ms() + timeout_ms;
	int r, left;

	if (c == NULL || out == NULL || max == 0)
		return inferd__fail(INFERD_EINVAL, "inferd_wait: bad argument");
	for (;;) {
		if (c->nstash == 0 && !c->closed && (r = inferd__reap(c)) < 0)
			return r;
		if (c->nstash > 0)
			return (int)inferd__unstash(c, out, max);
		if (c->closed)
			return inferd__closed(c);
		left = deadline < 0 ? -1 : (int)(deadline - inferd__now_ms());
		if (deadline >= 0 && left <= 0)
			return 0;
		if ((r = inferd__sleep(c, left)) < 0)
			return r;
	}
}

/* Wait for the sync request in record idx; its status. */
static int
inferd__wait_record(inferd_conn_t *c, int idx)
{
	struct inferd_record *rec = &c->records[idx];
	int r;

	while (!rec->done) {
		if ((r = inferd__reap(c)) < 0)
			return r;
		if (rec->done)
			break;
		if ((r = inferd__sleep(c, -1)) < 0)
			return r;
	}
	r = rec->status;
	if (r != 0)
		inferd__fail(r, "the daemon answered: %s%s%s", inferd_strerror(r),
		    rec->detail ? " " : "", inferd__detail_text(rec->detail));
	rec->used = 0;
	rec->next_free = c->free_record;
	c->free_record = idx;
	return r;
}

/* Publish a checked request as a sync one and wait for it. */
static int
inferd__run_sync(inferd_conn_t *c, const struct inferd_request *r)
{
	int idx, rc;

	/* Rings full of asynchronous requests: make room by stashing their completions. */
	while ((idx = inferd__push(c, r, 1)) == INFERD_EAGAIN) {
		if (c->inflight == 0)
			return inferd__fail(INFERD_EAGAIN, "%u completions are waiting for inferd_wait",
			    c->nstash);
		if ((rc = inferd__reap(c)) < 0 || (rc == 0 && (rc = inferd__sleep(c, -1)) < 0))
			return rc;
	}
	if (idx < 0)
		return idx;
	return inferd__wait_record(c, idx);
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

	if (c == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_infer: no connection");
	if ((rc = inferd__request_ok(c, &r)) != 0)
		return rc;
	return inferd__run_sync(c, &r);
}

/* Run one request of either form and wait for it. */
int
inferd_run(inferd_conn_t *c, const struct inferd_request *r)
{
	struct inferd_request req = INFERD_REQUEST_INIT;
	int rc;

	if (c == NULL || r == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_run: bad argument");
	if ((rc = inferd__struct_copy(&req, INFERD__REQUEST_SIZE_0_2, INFERD__REQUEST_SIZE_0_1, r, r->size,
	    "INFERD_REQUEST")) != 0 || (rc = inferd__request_ok(c, &req)) != 0)
		return rc;
	return inferd__run_sync(c, &req);
}
