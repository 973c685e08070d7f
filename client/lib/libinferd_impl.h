/*
 * libinferd_impl.h: libinferd's private types and helpers, shared by its files.
 *
 * Dependencies point one way: libinferd.c (connect, control, metadata),
 * inferd_ring.c (submit, wait) and inferd_alloc.c (the region's allocator)
 * each use inferd_error.c (codes, texts, the last failure) and this header;
 * none of them calls into another.  Helpers shared between files are named
 * inferd__* and are hidden (the library exports only INFERD_EXPORT symbols).
 */
#ifndef LIBINFERD_IMPL_H
#define LIBINFERD_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "inferd.h"
#include "inferd_wire.h"

/* A free extent of the data area. */
struct inferd_extent {
	uint64_t offset, bytes;
};

/* What the client remembers of a request on the wire (indexed by its wire user_data). */
struct inferd_record {
	uint64_t user_data;
	int used;			/* on the wire or holding a sync result */
	int sync;			/* submitted by inferd_infer */
	int done, status;		/* set when a sync request completes */
	uint32_t detail;		/* the daemon's reason for an invalid request */
	int next_free;
};

struct inferd_conn {
	int control_fd;
	int submit_fd;			/* eventfd: we write after publishing submissions */
	int doorbell_fd;		/* our end of the socketpair the daemon writes to */
	int timeout_ms;
	int closed;			/* the daemon went away */

	uint8_t *base;
	uint64_t region_bytes;
	uint32_t sq_entries, cq_entries;
	struct inferd_wire_layout layout;
	struct inferd_wire_header *hdr;
	struct inferd_wire_sqe *sq;
	struct inferd_wire_cqe *cq;
	uint32_t sq_tail, cq_head;	/* our copies */
	unsigned inflight;		/* on the wire, not yet reaped */

	struct inferd_record *records;	/* cq_entries */
	int free_record;
	struct inferd_completion *stash; /* reaped by inferd_infer for inferd_wait; cq_entries */
	unsigned stash_head, nstash;

	unsigned nmodels;
	struct inferd_model **models;	/* by id, fetched on demand */

	struct inferd_extent *extents;	/* free list, sorted by offset */
	size_t nextents, extents_cap;
	struct inferd_tensor lists;	/* list-form tensor lists, one per submission entry; on first use */
};

/* A list-form request as the wire carries it: inputs, then outputs. */
struct inferd__list {
	uint32_t ninputs, noutputs;
	struct inferd_wire_tensor t[2 * INFERD_WIRE_MAX_TENSORS];
};

/* inferd_error.c: record a failure's message for inferd_last_error(); returns code. */
int inferd__fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* inferd_error.c: the daemon is gone: mark c closed, return INFERD_ECLOSED. */
int inferd__closed(inferd_conn_t *c);
/* inferd_error.c: the library code of a wire status. */
int inferd__status_code(int32_t status);

/* The sizes of the caller-filled structs in this release (freeze each when a field is added). */
#define INFERD__OPTIONS_SIZE_0_1 sizeof(struct inferd_options)
#define INFERD__REQUEST_SIZE_0_1 offsetof(struct inferd_request, ninputs)
#define INFERD__REQUEST_SIZE_0_2 sizeof(struct inferd_request)

/*
 * Copy a caller's struct of caller_size bytes into *dst (known bytes, zeroed
 * first): INFERD_EINVAL when caller_size is below min or covers unknown
 * non-zero bytes (a newer caller asking for something this library lacks).
 */
int inferd__struct_copy(void *dst, size_t known, size_t min, const void *src,
    size_t caller_size, const char *what);

/* Monotonic milliseconds, the one clock of the library. */
static inline int64_t
inferd__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* inferd_alloc.c: the free list of the data area. */
int inferd__alloc_init(inferd_conn_t *c);

/* inferd_tensors.c: a model tensor from MODEL_INFO (-1 when malformed); the list form. */
int inferd__tensor_info(const struct inferd_wire_tensor_info *w, struct inferd_tensor_info *t);
int inferd__list_build(const inferd_conn_t *c, const struct inferd_request *r, struct inferd__list *l);
int inferd__list_place(inferd_conn_t *c, uint32_t slot, const struct inferd__list *l, uint64_t *offset);
/* inferd_ring.c: 1 when tensor t lies inside this connection's data area with at least need bytes. */
int inferd__tensor_ok(const inferd_conn_t *c, const struct inferd_tensor *t, uint64_t need);

/* inferd_ring.c: the rings and request records. */
int inferd__ring_init(inferd_conn_t *c);
void inferd__ring_free(inferd_conn_t *c);

#endif
