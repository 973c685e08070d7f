/* ipc_ring.c: the rings in a client's region: take submissions, validate, hand to the batcher, complete. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "alloc.h"
#include "error.h"
#include "ipc_impl.h"
#include "log.h"

/* Make one request slot per completion entry: in flight never exceeds that. */
int
ipc_ring_init(struct ipc_client *c, char **cause)
{
	uint32_t i;

	if ((c->slots = xcalloc(c->cq_entries, sizeof *c->slots)) == NULL)
		return error_set(cause, "out of memory for %u request slots", c->cq_entries);
	for (i = 0; i < c->cq_entries; i++) {
		c->slots[i].client = c;
		c->slots[i].next_free = i + 1 < c->cq_entries ? (int)i + 1 : -1;
	}
	c->free_slot = 0;
	c->sq_head = 0;
	c->cq_tail = 0;
	__atomic_store_n(&c->hdr->sq_head, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->hdr->cq_tail, 0, __ATOMIC_RELEASE);
	/* While the IPC thread polls, this ring is polled too; else it needs the doorbell. */
	__atomic_store_n(&c->hdr->sq_flags, c->server->armed ? INFERD_WIRE_SQ_NEED_WAKEUP : 0,
	    __ATOMIC_SEQ_CST);
	return 0;
}

/* Free the slots (nothing may be in flight). */
void
ipc_ring_free(struct ipc_client *c)
{
	free(c->slots);
	c->slots = NULL;
}

/* Wire status of a batcher outcome: both are inferd_outcome.h's codes. */
static int32_t
ipc_ring_status(enum batch_status st)
{
	_Static_assert((int)BATCH_INTERNAL == (int)INFERD_WIRE_INTERNAL, "one outcome table");
	return (int32_t)st;
}

/*
 * Wake the client if it said it sleeps (wire header: cq_wake), after
 * completions were published: a full fence orders the cq_tail store before
 * the load of cq_wake, and the exchange leaves 0 behind, so a client that
 * set a bit after we looked fails its FUTEX_WAIT at once and one that set
 * it before gets exactly one wake for everything published so far.  The
 * word is the client's to spoil: garbage costs at most one FUTEX_WAKE and
 * one non-blocking send per call, and unknown bits are ignored.
 */
void
ipc_ring_wake(struct ipc_client *c)
{
	static const char one = 1;
	uint32_t w;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->hdr->cq_wake, __ATOMIC_RELAXED) == 0)
		return;
	w = __atomic_exchange_n(&c->hdr->cq_wake, 0, __ATOMIC_SEQ_CST);
	if ((w & (INFERD_WIRE_WAKE_FUTEX | INFERD_WIRE_WAKE_SOCKET)) && c->server->ctx.metrics != NULL)
		METRICS_ADD(c->server->ctx.metrics->shm_wakeups, 1);
	if (w & INFERD_WIRE_WAKE_FUTEX)
		(void)syscall(SYS_futex, &c->hdr->cq_wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	if ((w & INFERD_WIRE_WAKE_SOCKET) && c->doorbell_fd != -1)
		(void)send(c->doorbell_fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/*
 * Post a completion for slot, free the slot and wake the client if it
 * sleeps.  The completion is sure to fit: the slot was reserved against cq
 * room.  Posting counts as activity: the client's next submission is
 * likely soon, so the IPC thread keeps polling for it.
 */
static void
ipc_ring_complete(struct ipc_client *c, int slot, int32_t status, uint32_t detail)
{
	struct inferd_wire_cqe *e;

	pthread_mutex_lock(&c->lock);
	e = &c->cq[c->cq_tail & (c->cq_entries - 1)];
	__atomic_store_n(&e->user_data, c->slots[slot].user_data, __ATOMIC_RELAXED);
	__atomic_store_n(&e->status, status, __ATOMIC_RELAXED);
	__atomic_store_n(&e->detail, detail, __ATOMIC_RELAXED);
	c->cq_tail++;
	__atomic_store_n(&c->hdr->cq_tail, c->cq_tail, __ATOMIC_RELEASE);
	c->slots[slot].next_free = c->free_slot;
	c->free_slot = slot;
	if (--c->inflight == 0)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
	__atomic_store_n(&c->server->activity_us, clock_now_us(), __ATOMIC_RELAXED);
	ipc_ring_wake(c);
}

/* The batcher finished a request (any batcher thread). */
static void
ipc_ring_done(struct batch_request *req, enum batch_status st, const char *error)
{
	struct ipc_slot *sl = (struct ipc_slot *)req;
	struct ipc_client *c = sl->client;
	model_ref_t *ref = sl->ref;	/* read first: once completed, the slot may be reused */

	if (st != BATCH_OK)
		LOG_DEBUG("ipc: %s request %llu: %s", c->label,
		    (unsigned long long)sl->user_data, error);
	sl->ref = NULL;
	ipc_ring_complete(c, (int)(sl - c->slots), ipc_ring_status(st), INFERD_WIRE_DETAIL_NONE);
	repository_release(ref);
}

/*
 * Take a slot if the completion ring is sure to have room for it: returns
 * the slot, -2 when the ring is full (wait for the client to read), -1 with
 * *cause when the client's cq_head is impossible.
 */
static int
ipc_ring_reserve(struct ipc_client *c, char **cause)
{
	uint32_t head, used;
	int slot;

	pthread_mutex_lock(&c->lock);
	head = __atomic_load_n(&c->hdr->cq_head, __ATOMIC_ACQUIRE);
	used = c->cq_tail - head;
	if (used > c->cq_entries) {
		pthread_mutex_unlock(&c->lock);
		return error_set(cause, "completion ring corrupt: head %u, tail %u, %u entries",
		    head, c->cq_tail, c->cq_entries);
	}
	if (used + c->inflight >= c->cq_entries) {
		pthread_mutex_unlock(&c->lock);
		return -2;
	}
	slot = c->free_slot;
	c->free_slot = c->slots[slot].next_free;
	c->inflight++;
	pthread_mutex_unlock(&c->lock);
	return slot;
}

/* Copy a submission out of shared memory, reading each field exactly once. */
static void
ipc_ring_copy(const struct inferd_wire_sqe *src, struct inferd_wire_sqe *dst)
{
	dst->user_data = __atomic_load_n(&src->user_data, __ATOMIC_RELAXED);
	dst->model_id = __atomic_load_n(&src->model_id, __ATOMIC_RELAXED);
	dst->datatype = __atomic_load_n(&src->datatype, __ATOMIC_RELAXED);
	dst->rows = __atomic_load_n(&src->rows, __ATOMIC_RELAXED);
	dst->flags = __atomic_load_n(&src->flags, __ATOMIC_RELAXED);
	dst->input_offset = __atomic_load_n(&src->input_offset, __ATOMIC_RELAXED);
	dst->input_bytes = __atomic_load_n(&src->input_bytes, __ATOMIC_RELAXED);
	dst->output_offset = __atomic_load_n(&src->output_offset, __ATOMIC_RELAXED);
	dst->output_bytes = __atomic_load_n(&src->output_bytes, __ATOMIC_RELAXED);
	dst->timeout_us = __atomic_load_n(&src->timeout_us, __ATOMIC_RELAXED);
}

/* 1 when [off, off + len) lies inside the data area (no sum is formed, so nothing wraps). */
static int
ipc_ring_in_data(const struct ipc_client *c, uint64_t off, uint64_t len)
{
	return off >= c->layout.data_offset && off <= c->region_bytes &&
	    len <= c->region_bytes - off;
}

/*
 * The single form's byte counts for rows rows, for a model of one input
 * with fixed dims and one output; 0 for any other model or on overflow.
 */
static int
ipc_ring_single_rows(const model_t *m, uint32_t rows, uint64_t *in, uint64_t *out)
{
	struct model_shape shape;
	struct model_layout layout;
	int d;

	if (m->ninputs != 1 || m->noutputs != 1)
		return 0;
	memset(&shape, 0, sizeof shape);
	for (d = 0; d < m->inputs[0].ndims; d++)
		if ((shape.dims[0][d] = m->inputs[0].dims[d]) < 0)
			return 0;
	shape.rows = (int)rows;
	if (model_output_layout(m, &shape, &layout, NULL) != 0)
		return 0;
	return !__builtin_mul_overflow((uint64_t)model_input_row_bytes(m, 0, &shape), rows, in) &&
	    !__builtin_mul_overflow((uint64_t)layout.row_bytes[0], rows, out);
}

/* Validate a copied single-form submission of model m. */
static uint32_t
ipc_ring_validate(const struct ipc_client *c, const struct inferd_wire_sqe *e, const model_t *m)
{
	uint64_t in, out;

	if (e->flags != 0)
		return INFERD_WIRE_DETAIL_FLAGS;
	if (e->datatype != INFERD_WIRE_FP32)
		return INFERD_WIRE_DETAIL_DATATYPE;
	if (e->rows < 1 || e->rows > (uint32_t)(m->max_batch_size > 0 ? m->max_batch_size : 1))
		return INFERD_WIRE_DETAIL_ROWS;
	if (!ipc_ring_single_rows(m, e->rows, &in, &out) || e->input_bytes != in || e->output_bytes != out)
		return INFERD_WIRE_DETAIL_LENGTH;
	if (!ipc_ring_in_data(c, e->input_offset, e->input_bytes) ||
	    !ipc_ring_in_data(c, e->output_offset, e->output_bytes))
		return INFERD_WIRE_DETAIL_RANGE;
	if (e->input_offset % INFERD_WIRE_TENSOR_ALIGN != 0 ||
	    e->output_offset % INFERD_WIRE_TENSOR_ALIGN != 0)
		return INFERD_WIRE_DETAIL_ALIGN;
	return INFERD_WIRE_DETAIL_NONE;
}

/* Check one list tensor's place: inside the data area, aligned, exactly want bytes. */
static uint32_t
ipc_ring_check_place(const struct ipc_client *c, const struct inferd_wire_tensor *t, int rows,
    size_t row)
{
	uint64_t want;

	if (__builtin_mul_overflow((uint64_t)row, (uint64_t)rows, &want) || t->bytes != want)
		return INFERD_WIRE_DETAIL_LENGTH;
	if (!ipc_ring_in_data(c, t->offset, t->bytes))
		return INFERD_WIRE_DETAIL_RANGE;
	if (t->offset % INFERD_WIRE_TENSOR_ALIGN != 0)
		return INFERD_WIRE_DETAIL_ALIGN;
	return INFERD_WIRE_DETAIL_NONE;
}

/* The list's inputs: each model input once, its datatype, its dims as the model takes them. */
static uint32_t
ipc_ring_list_inputs(const model_t *m, const struct ipc_submission *sub, struct batch_request *r)
{
	const struct inferd_wire_tensor *t;
	int seen[MODEL_MAX_IO] = { 0 };
	uint32_t k, d;

	for (k = 0; k < sub->e.ninputs; k++) {
		t = &sub->t[k];
		if (t->index >= (uint32_t)m->ninputs || seen[t->index] || t->reserved != 0)
			return INFERD_WIRE_DETAIL_TENSORS;
		seen[t->index] = 1;
		if (t->datatype != ipc_wire_datatype(m->inputs[t->index].dtype))
			return INFERD_WIRE_DETAIL_DATATYPE;
		if (t->ndims != (uint32_t)m->inputs[t->index].ndims ||
		    model_check_dims(m, (int)t->index, (int)t->ndims, t->dims, NULL) != 0)
			return INFERD_WIRE_DETAIL_DIMS;
		for (d = 0; d < t->ndims; d++)
			r->shape.dims[t->index][d] = t->dims[d];
	}
	return INFERD_WIRE_DETAIL_NONE;
}

/* The list's outputs: each at most once, with its datatype and the dims the inputs make (r's layout). */
static uint32_t
ipc_ring_list_outputs(const model_t *m, const struct ipc_submission *sub, struct batch_request *r)
{
	const struct inferd_wire_tensor *t;
	int seen[MODEL_MAX_IO] = { 0 };
	uint32_t k;

	if (model_output_layout(m, &r->shape, &r->layout, NULL) != 0)
		return INFERD_WIRE_DETAIL_DIMS;
	r->layout_set = 1;

	for (k = sub->e.ninputs; k < sub->e.ninputs + sub->e.noutputs; k++) {
		t = &sub->t[k];
		if (t->index >= (uint32_t)m->noutputs || seen[t->index] || t->reserved != 0)
			return INFERD_WIRE_DETAIL_TENSORS;
		seen[t->index] = 1;
		if (t->datatype != ipc_wire_datatype(m->outputs[t->index].dtype))
			return INFERD_WIRE_DETAIL_DATATYPE;
		if (t->ndims != (uint32_t)m->outputs[t->index].ndims ||
		    memcmp(r->layout.dims[t->index], t->dims, t->ndims * sizeof t->dims[0]) != 0)
			return INFERD_WIRE_DETAIL_DIMS;
	}
	return INFERD_WIRE_DETAIL_NONE;
}

/* Validate a list-form submission against m and fill r's tensor lists from it. */
static uint32_t
ipc_ring_validate_list(const struct ipc_client *c, const model_t *m,
    const struct ipc_submission *sub, struct batch_request *r)
{
	const struct inferd_wire_tensor *t;
	uint32_t detail, k;
	size_t row;

	if (sub->e.datatype != 0)
		return INFERD_WIRE_DETAIL_DATATYPE;
	if (sub->e.ninputs != (uint32_t)m->ninputs || sub->e.noutputs < 1 ||
	    sub->e.noutputs > (uint32_t)m->noutputs)
		return INFERD_WIRE_DETAIL_TENSORS;
	r->shape.rows = (int)sub->e.rows;
	if ((detail = ipc_ring_list_inputs(m, sub, r)) != INFERD_WIRE_DETAIL_NONE ||
	    (detail = ipc_ring_list_outputs(m, sub, r)) != INFERD_WIRE_DETAIL_NONE)
		return detail;
	r->shape.rows = (int)sub->e.rows;
	r->ninputs = m->ninputs;
	r->noutputs = m->noutputs;
	for (k = 0; k < sub->e.ninputs + sub->e.noutputs; k++) {
		t = &sub->t[k];
		row = k < sub->e.ninputs ? model_input_row_bytes(m, (int)t->index, &r->shape) :
		    r->layout.row_bytes[t->index];
		if ((detail = ipc_ring_check_place(c, t, (int)sub->e.rows, row)) != INFERD_WIRE_DETAIL_NONE)
			return detail;
		if (k < sub->e.ninputs) {
			r->inputs[t->index] = c->base + t->offset;
			r->input_bytes[t->index] = t->bytes;
		} else {
			r->outputs[t->index] = c->base + t->offset;
			r->output_bytes[t->index] = t->bytes;
		}
	}
	return INFERD_WIRE_DETAIL_NONE;
}

/*
 * Validate a copied submission of either form and fill r; *refp gets a
 * reference to the model its id names (the caller releases it), *mp its
 * model.  An id whose model was unloaded is DETAIL_UNLOADED.
 */
static uint32_t
ipc_ring_check(ipc_server_t *s, const struct ipc_client *c, const struct ipc_submission *sub,
    struct batch_request *r, model_ref_t **refp, const model_t **mp)
{
	const struct inferd_wire_sqe *e = &sub->e;
	uint32_t detail;
	int rc = repository_acquire_id(s->ctx.repo, e->model_id, refp, NULL);

	if (rc != REPOSITORY_FOUND)
		return rc == REPOSITORY_UNKNOWN ? INFERD_WIRE_DETAIL_MODEL : INFERD_WIRE_DETAIL_UNLOADED;
	*mp = (*refp)->model;
	if ((*mp)->strings)	/* BYTES models are not offered here (ipc_conn_query says why) */
		return INFERD_WIRE_DETAIL_MODEL;
	if (e->flags == INFERD_WIRE_SQE_LIST) {
		if (sub->detail != INFERD_WIRE_DETAIL_NONE)
			return sub->detail;
		if (e->rows < 1 || e->rows > (uint32_t)((*mp)->max_batch_size > 0 ? (*mp)->max_batch_size : 1))
			return INFERD_WIRE_DETAIL_ROWS;
		return ipc_ring_validate_list(c, *mp, sub, r);
	}
	if ((detail = ipc_ring_validate(c, e, *mp)) != INFERD_WIRE_DETAIL_NONE)
		return detail;
	r->input = c->base + e->input_offset;
	r->output = c->base + e->output_offset;
	return INFERD_WIRE_DETAIL_NONE;
}

/* Validate one copied submission and queue it, or complete it with the reason. */
static void
ipc_ring_submit(ipc_server_t *s, struct ipc_client *c, int slot,
    const struct ipc_submission *sub)
{
	const struct inferd_wire_sqe *e = &sub->e;
	struct ipc_slot *sl = &c->slots[slot];
	const model_t *m = NULL;
	model_ref_t *ref = NULL;
	struct metrics_model *mm;
	enum batch_status st;
	char *cause = NULL;
	uint32_t detail;

	sl->user_data = e->user_data;
	sl->model = NULL;
	sl->ref = NULL;
	memset(&sl->req, 0, sizeof sl->req);
	detail = ipc_ring_check(s, c, sub, &sl->req, &ref, &m);
	if (detail != INFERD_WIRE_DETAIL_NONE) {
		LOG_DEBUG("ipc: %s request %llu refused (check %u)", c->label,
		    (unsigned long long)e->user_data, detail);
		if (m != NULL && s->ctx.metrics != NULL &&
		    (mm = metrics_find(s->ctx.metrics, m->name)) != NULL)
			METRICS_ADD(mm->failure[METRICS_REASON_INVALID], 1);
		repository_release(ref);
		ipc_ring_complete(c, slot, INFERD_WIRE_INVALID, detail);
		return;
	}
	sl->req.client = c->bc;
	sl->req.rows = (int)e->rows;
	sl->req.timeout_us = e->timeout_us;
	sl->req.done = ipc_ring_done;
	sl->req.user = sl;
	/*
	 * The slot holds the reference and its model from before the submit:
	 * done may run at once, even inside batcher_submit_queue (inline completion).
	 */
	sl->ref = ref;
	sl->model = m;
	if (__atomic_load_n(&s->shutting_down, __ATOMIC_ACQUIRE))
		st = BATCH_SHUTDOWN;
	else
		st = batcher_submit_queue(s->ctx.batcher, repository_queue(ref), &sl->req, &cause);
	if (st != BATCH_OK) {
		sl->model = NULL;
		sl->ref = NULL;
		repository_release(ref);
		LOG_DEBUG("ipc: %s request %llu: %s", c->label, (unsigned long long)e->user_data,
		    cause != NULL ? cause : batch_status_str(st));
		free(cause);
		ipc_ring_complete(c, slot, ipc_ring_status(st), INFERD_WIRE_DETAIL_NONE);
	}
}

/*
 * Copy a list-form submission's tensors out of shared memory, each field
 * read once, after checking the count is bounded and the list lies in the
 * data area (sub->detail says which check failed).
 */
static void
ipc_ring_copy_list(const struct ipc_client *c, struct ipc_submission *sub)
{
	const struct inferd_wire_tensor *src;
	uint32_t n = sub->e.ninputs + sub->e.noutputs, k, d;
	struct inferd_wire_tensor *t;

	sub->detail = INFERD_WIRE_DETAIL_NONE;
	if (sub->e.flags != INFERD_WIRE_SQE_LIST)
		return;
	if (sub->e.ninputs > INFERD_WIRE_MAX_TENSORS || sub->e.noutputs > INFERD_WIRE_MAX_TENSORS ||
	    sub->e.list_reserved[0] != 0 || sub->e.list_reserved[1] != 0) {
		sub->detail = INFERD_WIRE_DETAIL_TENSORS;
		return;
	}
	if (!ipc_ring_in_data(c, sub->e.list_offset, (uint64_t)n * sizeof *src)) {
		sub->detail = INFERD_WIRE_DETAIL_RANGE;
		return;
	}
	if (sub->e.list_offset % 8 != 0) {
		sub->detail = INFERD_WIRE_DETAIL_ALIGN;
		return;
	}
	src = (const struct inferd_wire_tensor *)(c->base + sub->e.list_offset);
	for (k = 0; k < n; k++) {
		t = &sub->t[k];
		t->index = __atomic_load_n(&src[k].index, __ATOMIC_RELAXED);
		t->datatype = __atomic_load_n(&src[k].datatype, __ATOMIC_RELAXED);
		t->ndims = __atomic_load_n(&src[k].ndims, __ATOMIC_RELAXED);
		t->reserved = __atomic_load_n(&src[k].reserved, __ATOMIC_RELAXED);
		for (d = 0; d < INFERD_WIRE_MAX_DIMS; d++)
			t->dims[d] = __atomic_load_n(&src[k].dims[d], __ATOMIC_RELAXED);
		t->offset = __atomic_load_n(&src[k].offset, __ATOMIC_RELAXED);
		t->bytes = __atomic_load_n(&src[k].bytes, __ATOMIC_RELAXED);
		if (t->ndims > INFERD_WIRE_MAX_DIMS) {
			sub->detail = INFERD_WIRE_DETAIL_TENSORS;
			return;
		}
	}
}

/*
 * Take every submission the completion ring has room for: how many were
 * taken, or -1 with *cause.  The tail is read once; a tail more than the
 * ring ahead of our head is an error (the caller drops the client), so the
 * loop is bounded by sq_entries.  A ring with nothing new costs two loads.
 */
int
ipc_ring_take(ipc_server_t *s, struct ipc_client *c, char **cause)
{
	struct ipc_submission sub;
	uint32_t tail, avail, i;
	int slot;

	tail = __atomic_load_n(&c->hdr->sq_tail, __ATOMIC_ACQUIRE);
	avail = tail - c->sq_head;
	if (avail > c->sq_entries)
		return error_set(cause, "submission ring corrupt: tail %u, head %u, %u entries",
		    tail, c->sq_head, c->sq_entries);
	for (i = 0; i < avail; i++) {
		slot = ipc_ring_reserve(c, cause);
		if (slot == -2)
			break;
		if (slot < 0)
			return -1;
		ipc_ring_copy(&c->sq[c->sq_head & (c->sq_entries - 1)], &sub.e);
		/* Before the entry is released: the client may reuse its list after that. */
		ipc_ring_copy_list(c, &sub);
		c->sq_head++;
		__atomic_store_n(&c->hdr->sq_head, c->sq_head, __ATOMIC_RELEASE);
		ipc_ring_submit(s, c, slot, &sub);
	}
	return (int)i;
}

/* Take every submission the completion ring has room for; 0, or -1 with *cause. */
int
ipc_ring_drain(ipc_server_t *s, struct ipc_client *c, char **cause)
{
	return ipc_ring_take(s, c, cause) < 0 ? -1 : 0;
}

/* Wait until nothing of c is in flight, or until deadline_us (monotonic). */
void
ipc_ring_wait_idle(struct ipc_client *c, uint64_t deadline_us)
{
	struct timespec ts = { (time_t)(deadline_us / 1000000), (long)(deadline_us % 1000000) * 1000 };

	pthread_mutex_lock(&c->lock);
	while (c->inflight > 0)
		if (pthread_cond_timedwait(&c->idle, &c->lock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&c->lock);
}

/*
 * Cancel the queued request that carried user_data.  Slots are only reused
 * by this (the epoll) thread, so a slot's user_data and model are stable
 * here; one whose request already finished is not in any queue, which
 * batcher_cancel sees.
 */
int
ipc_ring_cancel(ipc_server_t *s, struct ipc_client *c, uint64_t user_data)
{
	uint32_t i;

	for (i = 0; i < c->cq_entries; i++)
		if (c->slots[i].model != NULL && c->slots[i].user_data == user_data)
			return batcher_cancel(s->ctx.batcher, NULL, &c->slots[i].req);
	return 0;
}

/* 1 when the client hung up its control socket: nobody will read its completions. */
static int
ipc_ring_peer_gone(const struct ipc_client *c)
{
	struct pollfd p = { c->control_fd, POLLRDHUP, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/*
 * At shutdown (s->shutting_down set, so every submission taken now is
 * completed at once with SHUTDOWN): take everything left in c's ring,
 * waiting for the client to free completion entries, until the ring is
 * empty, the client hangs up or deadline_us passes.  Returns the number
 * of submissions left unanswered, or -1 with *cause when the ring is corrupt.
 */
long
ipc_ring_finish(ipc_server_t *s, struct ipc_client *c, uint64_t deadline_us, char **cause)
{
	uint32_t left;

	for (;;) {
		if (ipc_ring_drain(s, c, cause) != 0)
			return -1;
		left = __atomic_load_n(&c->hdr->sq_tail, __ATOMIC_ACQUIRE) - c->sq_head;
		if (left == 0 || left > c->sq_entries)
			return left > c->sq_entries ? 0 : (long)left;
		if (clock_now_us() >= deadline_us || ipc_ring_peer_gone(c))
			return (long)left;
		/* The completion ring is full: give the client a moment to read it. */
		(void)poll(NULL, 0, 1);
	}
}
