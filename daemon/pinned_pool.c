/*
 * pinned_pool.c: one region of pinned host memory, cut per request into
 * pieces of whole pages, with a thread that serves waiting requests in
 * arrival order and lets them go at their deadlines.
 *
 * The allocator is first-fit over the free extents kept in address order
 * in an array made at start-up.  Why this one: a request's pieces are few
 * and large (whole tensors), so the free list stays short (never more than
 * one extent more than the pieces in use), a put merges with both
 * neighbours at once (found by binary search), and first-fit in address
 * order is among the policies that fragment least; the bookkeeping lives
 * outside the pinned region, which is DMA's, and nothing is allocated after
 * start-up.  A take scans the list (O(n) in the extents), a put searches
 * in O(log n) and moves at most the array's tail.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "log.h"
#include "pinned_pool.h"

/* A run of free bytes: [off, off + len). */
struct pinned_extent {
	size_t off, len;
};

struct pinned_pool {
	device_t *dev;
	char *base;
	size_t bytes;			/* the region's size, a multiple of PINNED_POOL_ALIGN */
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* memory came back, a waiter arrived, or stopping */
	pthread_t thread;
	struct pinned_extent *ext;	/* the free extents by address */
	size_t next, cap, free_bytes;
	struct pinned_wait *head, *tail;	/* waiters in arrival order */
	int cancelled, quit;
};

/* Round n up to a multiple of align (a power of two); 0 on overflow. */
static size_t
pinned_round_up(size_t n, size_t align)
{
	if (n > SIZE_MAX - (align - 1))
		return 0;
	return (n + align - 1) & ~(align - 1);
}

/* Add rows rows of row bytes, rounded up to align, to *total; -1 on overflow. */
static int
pinned_add_tensor(size_t *total, size_t row, int rows, size_t align)
{
	size_t one;

	if (__builtin_mul_overflow(row, (size_t)rows, &one))
		return -1;
	if (one != 0 && (one = pinned_round_up(one, align)) == 0)
		return -1;
	return __builtin_add_overflow(*total, one, total) ? -1 : 0;
}

/* Bytes the KServe codec lays a request of rows rows of m out in, every dim at its maximum. */
size_t
pinned_pool_model_bytes(const model_t *m, int rows, size_t align)
{
	struct model_shape s;
	size_t total = 0;
	int i, d;

	memset(&s, 0, sizeof s);
	s.rows = rows;
	for (i = 0; i < m->ninputs; i++)
		for (d = 0; d < m->inputs[i].ndims; d++)
			s.dims[i][d] = m->inputs[i].max_dims[d];
	for (i = 0; i < m->ninputs; i++)
		if (pinned_add_tensor(&total, model_input_row_bytes(m, i, &s), rows, align) != 0)
			return 0;
	for (i = 0; i < m->noutputs; i++)
		if (pinned_add_tensor(&total, model_output_max_row_bytes(m, i), rows, align) != 0)
			return 0;
	return total;
}

/* Cut len bytes off the first extent that holds them (lock held); -1 when none does. */
static int
pinned_alloc(pinned_pool_t *p, size_t len, size_t *off)
{
	size_t i;

	for (i = 0; i < p->next && p->ext[i].len < len; i++)
		;
	if (i == p->next)
		return -1;
	*off = p->ext[i].off;
	p->ext[i].off += len;
	p->ext[i].len -= len;
	if (p->ext[i].len == 0) {
		memmove(&p->ext[i], &p->ext[i + 1], (p->next - i - 1) * sizeof p->ext[0]);
		p->next--;
	}
	p->free_bytes -= len;
	return 0;
}

/* The index of the first extent after off (binary search, lock held). */
static size_t
pinned_find(const pinned_pool_t *p, size_t off)
{
	size_t lo = 0, hi = p->next, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (p->ext[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Return [off, off + len) to the free extents, merged with its neighbours (lock held); aborts on a double put. */
static void
pinned_release(pinned_pool_t *p, size_t off, size_t len)
{
	size_t i = pinned_find(p, off);
	int left = i > 0 && p->ext[i - 1].off + p->ext[i - 1].len == off;
	int right = i < p->next && off + len == p->ext[i].off;

	if ((i > 0 && p->ext[i - 1].off + p->ext[i - 1].len > off) || (i < p->next && off + len > p->ext[i].off)) {
		LOG_ERROR("pinned pool: [%zu, %zu) returned while partly free", off, off + len);
		abort();
	}
	p->free_bytes += len;
	if (left && right) {
		p->ext[i - 1].len += len + p->ext[i].len;
		memmove(&p->ext[i], &p->ext[i + 1], (p->next - i - 1) * sizeof p->ext[0]);
		p->next--;
	} else if (left) {
		p->ext[i - 1].len += len;
	} else if (right) {
		p->ext[i].off = off;
		p->ext[i].len += len;
	} else {
		/* cap holds every extent possible: each lies between two pieces in use. */
		memmove(&p->ext[i + 1], &p->ext[i], (p->next - i) * sizeof p->ext[0]);
		p->ext[i] = (struct pinned_extent){ off, len };
		p->next++;
	}
}

/* Unlink *pw from the waiters (lock held). */
static struct pinned_wait *
pinned_unlink(pinned_pool_t *p, struct pinned_wait **pw, struct pinned_wait *prev)
{
	struct pinned_wait *w = *pw;

	*pw = w->next;
	if (p->tail == w)
		p->tail = prev;
	return w;
}

/*
 * The next waiter to answer (lock held), unlinked, with its memory in *mem:
 * the first in line while it fits, or one whose deadline passed (or any,
 * cancelled) with NULL; NULL when none is due.  *next_us gets the earliest
 * deadline of those left.
 */
static struct pinned_wait *
pinned_due(pinned_pool_t *p, uint64_t now, void **mem, uint64_t *next_us)
{
	struct pinned_wait **pw, *prev = NULL;
	size_t off;

	*mem = NULL;
	*next_us = UINT64_MAX;
	if (p->head != NULL && !p->cancelled && pinned_alloc(p, p->head->bytes, &off) == 0) {
		*mem = p->base + off;
		return pinned_unlink(p, &p->head, NULL);
	}
	for (pw = &p->head; *pw != NULL; prev = *pw, pw = &(*pw)->next) {
		if (p->cancelled || (*pw)->deadline_us <= now)
			return pinned_unlink(p, pw, prev);
		if ((*pw)->deadline_us < *next_us)
			*next_us = (*pw)->deadline_us;
	}
	return NULL;
}

/* The pool's thread: answer waiters as memory comes back or their deadlines pass. */
static void *
pinned_thread(void *arg)
{
	pinned_pool_t *p = arg;
	struct pinned_wait *w;
	uint64_t next_us;
	void *mem;

	pthread_mutex_lock(&p->lock);
	while (!p->quit || p->head != NULL) {
		if ((w = pinned_due(p, clock_now_us(), &mem, &next_us)) != NULL) {
			/* done may take its owner's locks, which are held around pinned_pool_take. */
			pthread_mutex_unlock(&p->lock);
			w->done(w, mem);
			pthread_mutex_lock(&p->lock);
		} else if (next_us == UINT64_MAX) {
			pthread_cond_wait(&p->wake, &p->lock);
		} else {
			clock_cond_wait_until(&p->wake, &p->lock, next_us);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Free what pinned_pool_create made so far (NULL members are skipped). */
static void
pinned_destroy(pinned_pool_t *p)
{
	if (p->base != NULL)
		device_host_free(p->dev, p->base);
	free(p->ext);
	free(p);
}

/* Make the locks and start the thread; -1 with *cause. */
static int
pinned_start(pinned_pool_t *p, char **cause)
{
	int rc;

	if ((rc = pthread_mutex_init(&p->lock, NULL)) != 0)
		return error_set(cause, "pinned pool: pthread_mutex_init: %s", strerror(rc));
	if ((rc = clock_cond_init(&p->wake)) != 0) {
		pthread_mutex_destroy(&p->lock);
		return error_set(cause, "pinned pool: pthread_cond_init: %s", strerror(rc));
	}
	if ((rc = pthread_create(&p->thread, NULL, pinned_thread, p)) != 0) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		return error_set(cause, "pinned pool: pthread_create: %s", strerror(rc));
	}
	return 0;
}

/* Allocate the region in one pinned allocation, all of it free, and start the thread. */
int
pinned_pool_create(device_t *dev, size_t pool_bytes, pinned_pool_t **out, char **cause)
{
	pinned_pool_t *p;
	size_t bytes = pinned_round_up(pool_bytes ? pool_bytes : 1, PINNED_POOL_ALIGN);

	if (bytes == 0)
		return error_set(cause, "pinned pool: %zu bytes is too large", pool_bytes);
	if ((p = xcalloc(1, sizeof *p)) == NULL)
		return error_set(cause, "pinned pool: out of memory");
	p->dev = dev;
	p->bytes = p->free_bytes = bytes;
	/* Free extents are separated by pieces in use, so at most half the pages (rounded up) are extents. */
	p->cap = bytes / PINNED_POOL_ALIGN / 2 + 1;
	if ((p->ext = xcalloc(p->cap, sizeof *p->ext)) == NULL) {
		error_set(cause, "pinned pool: out of memory for %zu extents", p->cap);
		pinned_destroy(p);
		return -1;
	}
	if (device_host_alloc(dev, bytes, (void **)&p->base, cause) != 0) {
		pinned_destroy(p);
		return error_prefix(cause, "pinned pool: %zu bytes (pinned_pool_bytes)", bytes);
	}
	p->ext[0] = (struct pinned_extent){ 0, bytes };
	p->next = 1;
	if (pinned_start(p, cause) != 0) {
		pinned_destroy(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* Stop the thread and free the region. */
void
pinned_pool_free(pinned_pool_t *p)
{
	int rc;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->cancelled = 1;	/* the thread answers whoever still waits, then ends */
	p->quit = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if ((rc = pthread_join(p->thread, NULL)) != 0)
		LOG_ERROR("pinned pool: pthread_join: %s", strerror(rc));
	if (p->free_bytes != p->bytes)
		LOG_ERROR("pinned pool: freed with %zu of %zu bytes still in use", p->bytes - p->free_bytes, p->bytes);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	pinned_destroy(p);
}

/* Take w->bytes now, or queue w. */
enum pinned_take
pinned_pool_take(pinned_pool_t *p, struct pinned_wait *w, void **mem)
{
	size_t off, len = pinned_round_up(w->bytes ? w->bytes : 1, PINNED_POOL_ALIGN);
	enum pinned_take r = PINNED_WAITING;

	if (len == 0 || len > p->bytes)
		return PINNED_REFUSED;
	w->bytes = len;
	w->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->cancelled) {
		r = PINNED_REFUSED;
	} else if (p->head == NULL && pinned_alloc(p, len, &off) == 0) {
		*mem = p->base + off;
		r = PINNED_TAKEN;
	} else {
		if (p->tail != NULL)
			p->tail->next = w;
		else
			p->head = w;
		p->tail = w;
		pthread_cond_broadcast(&p->wake);
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* Give back bytes at mem; a pointer that is not the pool's is a broken invariant. */
void
pinned_pool_put(pinned_pool_t *p, void *mem, size_t bytes)
{
	uintptr_t off = (uintptr_t)mem - (uintptr_t)p->base;
	size_t len = pinned_round_up(bytes ? bytes : 1, PINNED_POOL_ALIGN);

	if ((uintptr_t)mem < (uintptr_t)p->base || off % PINNED_POOL_ALIGN != 0 || len == 0 ||
	    off > p->bytes || len > p->bytes - off) {
		LOG_ERROR("pinned pool: %p (%zu bytes) is not a piece of it", mem, bytes);
		abort();
	}
	pthread_mutex_lock(&p->lock);
	pinned_release(p, (size_t)off, len);
	if (p->head != NULL)
		pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

/* Answer every waiter with NULL and refuse later waits. */
void
pinned_pool_cancel_waits(pinned_pool_t *p)
{
	pthread_mutex_lock(&p->lock);
	p->cancelled = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

/* The region's size. */
size_t
pinned_pool_bytes(const pinned_pool_t *p)
{
	return p->bytes;
}

/* Bytes free now. */
size_t
pinned_pool_free_bytes(pinned_pool_t *p)
{
	size_t n;

	pthread_mutex_lock(&p->lock);
	n = p->free_bytes;
	pthread_mutex_unlock(&p->lock);
	return n;
}
