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

/* Make the request records, the completion stash and the callback queue. */
int
inferd__ring_init(inferd_conn_t *c)
{
	uint32_t i;

	c->records = calloc(c->cq_entries, sizeof *c->records);
	c->stash = calloc(c->cq_entries, sizeof *c->stash);
	c->cbq = calloc(c->cq_entries, sizeof *c->cbq);
	if (c->records == NULL || c->stash == NULL || c->cbq == NULL)
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
	free(c->cbq);
}

/* Requests of inferd_submit not yet reaped by inferd_wait. */
unsigned
inferd_outstanding(inferd_conn_t *c)
{
	unsigned n;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->nstash_wire + c->nstash;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/*
 * The descriptor an event loop polls for completions.  From now on the
 * daemon is asked for a byte on it whenever it publishes completions after
 * the last reap (the reap asks again: inferd_wait_engine.c).
 */
int
inferd_fd(inferd_conn_t *c)
{
	if (c == NULL)
		return INFERD_EINVAL;
	pthread_mutex_lock(&c->lock);
	c->fd_mode = 1;
	__atomic_fetch_or(&c->hdr->cq_wake, INFERD_WIRE_WAKE_SOCKET, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&c->lock);
	return c->doorbell_fd;
}

/* Which check an invalid request failed, as the daemon reported it. */
const char *
inferd__detail_text(uint32_t detail)
{
	switch (detail) {
	case INFERD_WIRE_DETAIL_MODEL:
		return "(unknown model)";
	case INFERD_WIRE_DETAIL_UNLOADED:
		return "(model unloaded)";
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

/*
 * Ring the submission doorbell when the daemon sleeps (never blocks: the
 * eventfd is non-blocking).  Called after sq_tail was stored: the full
 * fence orders that store before the load of sq_flags, against the
 * daemon's store of the flag, fence and last look at sq_tail.
 */
void
inferd__ring_doorbell(inferd_conn_t *c)
{
	uint64_t one = 1;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->hdr->sq_flags, __ATOMIC_RELAXED) & INFERD_WIRE_SQ_NEED_WAKEUP)
		(void)!write(c->submit_fd, &one, sizeof one);
}

/* The wire user_data of record idx. */
uint64_t
inferd__wire_id(const inferd_conn_t *c, int idx)
{
	return (uint64_t)c->records[idx].gen << 32 | (uint32_t)idx;
}

/* Return record idx to the free list (lock held). */
void
inferd__record_release(inferd_conn_t *c, int idx)
{
	c->records[idx].used = 0;
	c->records[idx].handle = NULL;
	c->records[idx].next_free = c->free_record;
	c->free_record = idx;
}

/* Write the submission entry for record idx (list_offset for the list form). */
static void
inferd__fill_sqe(inferd_conn_t *c, const struct inferd_request *r, int idx,
    const struct inferd__list *list, uint64_t list_offset)
{
	struct inferd_wire_sqe *e = &c->sq[c->sq_tail & (c->sq_entries - 1)];

	if (r->input == NULL)
		*e = (struct inferd_wire_sqe){
			.user_data = inferd__wire_id(c, idx),
			.model_id = r->model->id,
			.rows = (uint32_t)r->rows,
			.flags = INFERD_WIRE_SQE_LIST,
			.list_offset = list_offset,
			.ninputs = list->ninputs,
			.noutputs = list->noutputs,
			.timeout_us = r->timeout_us,
		};
	else
		*e = (struct inferd_wire_sqe){
			.user_data = inferd__wire_id(c, idx),
			.model_id = r->model->id,
			.datatype = INFERD_WIRE_FP32,
			.rows = (uint32_t)r->rows,
			.input_offset = r->input->offset,
			.input_bytes = (uint64_t)r->rows * r->model->input_row_bytes,
			.output_offset = r->output->offset,
			.output_bytes = (uint64_t)r->rows * r->model->output_row_bytes,
			.timeout_us = r->timeout_us,
		};
}

/* Publish one checked submission (lock held); its record index or a negative code. */
int
inferd__push(inferd_conn_t *c, const struct inferd_request *r, enum inferd__kind kind)
{
	struct inferd__list list;
	uint64_t list_offset = 0;
	uint32_t head;
	int idx, rc;

	if (c->closed)
		return inferd__closed(c);
	if (c->free_record < 0 || c->inflight + c->nstash >= c->cq_entries)
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
	c->records[idx] = (struct inferd_record){ .user_data = r->user_data, .id = r->id,
	    .gen = ++c->gen, .used = 1, .kind = kind, .next_free = -1 };
	inferd__fill_sqe(c, r, idx, &list, list_offset);
	if (kind == INFERD__STASH)
		c->nstash_wire++;
	c->sq_tail++;
	__atomic_store_n(&c->hdr->sq_tail, c->sq_tail, __ATOMIC_RELEASE);
	c->inflight++;
	inferd__ring_doorbell(c);
	return idx;
}
