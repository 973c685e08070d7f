/* pinned_pool.h: one region of pinned host memory that HTTP requests stage their tensors in, each taking what it needs. */
#ifndef INFERD_PINNED_POOL_H
#define INFERD_PINNED_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "model.h"

/* Every piece handed out is a multiple of this and starts at one. */
#define PINNED_POOL_ALIGN 4096

typedef struct pinned_pool pinned_pool_t;

/*
 * A request for memory that waits.  The pool calls done exactly once, from
 * its own thread and holding none of its locks: with the memory (bytes
 * long, rounded up to PINNED_POOL_ALIGN), or with NULL when deadline_us
 * (clock_now_us) passed first or the waits were cancelled.
 */
struct pinned_wait {
	size_t bytes;
	uint64_t deadline_us;
	void (*done)(struct pinned_wait *w, void *mem);
	struct pinned_wait *next;	/* the pool's */
};

/* What pinned_pool_take did with a request. */
enum pinned_take {
	PINNED_TAKEN,		/* the memory is the caller's now */
	PINNED_WAITING,		/* queued: done will be called */
	PINNED_REFUSED,		/* larger than the pool, or the waits were cancelled */
};

/*
 * Bytes the KServe codec lays one request of m out in (kserve.h: every
 * input, then every output, each at a multiple of align) for rows rows with
 * every dim at its maximum; 0 on overflow.
 */
size_t pinned_pool_model_bytes(const model_t *m, int rows, size_t align);

/*
 * Allocate pool_bytes (rounded up to PINNED_POOL_ALIGN, at least one page)
 * of pinned host memory in one device_host_alloc, and start the thread
 * that hands it to waiters.  -1 with *cause on failure.
 */
int pinned_pool_create(device_t *dev, size_t pool_bytes, pinned_pool_t **out, char **cause);
/* Stop the thread and free the region; every piece must be back and no one waiting (NULL is ignored). */
void pinned_pool_free(pinned_pool_t *p);
/*
 * Take w->bytes now, or queue w behind the requests already waiting (first
 * come, first served, so a large request is not starved by small ones).
 */
enum pinned_take pinned_pool_take(pinned_pool_t *p, struct pinned_wait *w, void **mem);
/* Give back bytes at mem (as taken); the waiters that now fit are served. */
void pinned_pool_put(pinned_pool_t *p, void *mem, size_t bytes);
/* Call every waiter's done with NULL, and refuse every later wait. */
void pinned_pool_cancel_waits(pinned_pool_t *p);
/* The region's size. */
size_t pinned_pool_bytes(const pinned_pool_t *p);
/* Bytes free now. */
size_t pinned_pool_free_bytes(pinned_pool_t *p);

#endif
