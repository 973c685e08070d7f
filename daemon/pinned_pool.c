/* pinned_pool.c: a fixed stack of pinned host slots, taken and returned in O(1). */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "log.h"
#include "pinned_pool.h"

struct pinned_pool {
	device_t *dev;
	char *base;		/* nslots * slot_bytes of pinned memory */
	size_t slot_bytes, nslots;
	pthread_mutex_t lock;
	size_t nfree;
	void **free;		/* a stack of the free slots */
};

/* Round n up to a multiple of align (a power of two); 0 on overflow. */
static size_t
pinned_round_up(size_t n, size_t align)
{
	if (n > SIZE_MAX - (align - 1))
		return 0;
	return (n + align - 1) & ~(align - 1);
}

/* The shape of m's largest request: max_batch_size rows (1 without a batch dimension), every dim at its maximum. */
static void
pinned_max_shape(const model_t *m, struct model_shape *s)
{
	int i, d;

	memset(s, 0, sizeof *s);
	s->rows = m->max_batch_size > 0 ? m->max_batch_size : 1;
	for (i = 0; i < m->ninputs; i++)
		for (d = 0; d < m->inputs[i].ndims; d++)
			s->dims[i][d] = m->inputs[i].max_dims[d];
}

/* Bytes of n tensors of rows rows each, every one rounded up to PINNED_POOL_OUTPUT_ALIGN; 0 on overflow. */
static size_t
pinned_tensors_bytes(const model_t *m, int n, int output, const struct model_shape *s)
{
	size_t total = 0, one, row;
	int i;

	for (i = 0; i < n; i++) {
		row = output ? model_output_max_row_bytes(m, i) : model_input_row_bytes(m, i, s);
		if (__builtin_mul_overflow(row, (size_t)s->rows, &one))
			return 0;
		if (one != 0 && (one = pinned_round_up(one, PINNED_POOL_OUTPUT_ALIGN)) == 0)
			return 0;
		if (__builtin_add_overflow(total, one, &total))
			return 0;
	}
	return total;
}

/* Where model m's outputs start inside a slot: its largest inputs, each rounded up. */
size_t
pinned_pool_output_offset(const model_t *m)
{
	struct model_shape s;

	pinned_max_shape(m, &s);
	return pinned_tensors_bytes(m, m->ninputs, 0, &s);
}

/* Bytes one slot needs to stage any request of the models. */
size_t
pinned_pool_slot_bytes_for(const model_t *const *models, size_t n)
{
	size_t i, need, best = PINNED_POOL_ALIGN;
	struct model_shape s;
	const model_t *m;

	for (i = 0; i < n; i++) {
		m = models[i];
		pinned_max_shape(m, &s);
		need = pinned_tensors_bytes(m, m->ninputs, 0, &s) + pinned_tensors_bytes(m, m->noutputs, 1, &s);
		need = pinned_round_up(need, PINNED_POOL_ALIGN);
		if (need > best)
			best = need;
	}
	return best;
}

/* Allocate the slots in one pinned allocation and stack them all as free. */
int
pinned_pool_create(device_t *dev, size_t pool_bytes, size_t slot_bytes,
    pinned_pool_t **out, char **cause)
{
	pinned_pool_t *p;
	size_t i;
	int rc;

	if (slot_bytes == 0)
		return error_set(cause, "pinned pool: zero-byte slots");
	if ((p = xcalloc(1, sizeof *p)) == NULL)
		return error_set(cause, "pinned pool: out of memory");
	p->dev = dev;
	p->slot_bytes = slot_bytes;
	p->nslots = pool_bytes / slot_bytes ? pool_bytes / slot_bytes : 1;
	if (p->nslots > SIZE_MAX / slot_bytes || (p->free = xcalloc(p->nslots, sizeof *p->free)) == NULL) {
		error_set(cause, "pinned pool: out of memory for %zu slots", p->nslots);
		free(p);
		return -1;
	}
	if (device_host_alloc(dev, p->nslots * slot_bytes, (void **)&p->base, cause) != 0) {
		error_prefix(cause, "pinned pool: %zu slots of %zu bytes", p->nslots, slot_bytes);
		free(p->free);
		free(p);
		return -1;
	}
	if ((rc = pthread_mutex_init(&p->lock, NULL)) != 0) {
		device_host_free(dev, p->base);
		free(p->free);
		free(p);
		return error_set(cause, "pinned pool: pthread_mutex_init: %s", strerror(rc));
	}
	for (i = 0; i < p->nslots; i++)
		p->free[i] = p->base + (p->nslots - 1 - i) * slot_bytes;
	p->nfree = p->nslots;
	*out = p;
	return 0;
}

/* Free the slots. */
void
pinned_pool_free(pinned_pool_t *p)
{
	if (p == NULL)
		return;
	if (p->nfree != p->nslots)
		LOG_ERROR("pinned pool: freed with %zu of %zu slots still in use",
		    p->nslots - p->nfree, p->nslots);
	device_host_free(p->dev, p->base);
	pthread_mutex_destroy(&p->lock);
	free(p->free);
	free(p);
}

/* Take a free slot; NULL when every slot is in use. */
void *
pinned_pool_get(pinned_pool_t *p)
{
	void *slot = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->nfree > 0)
		slot = p->free[--p->nfree];
	pthread_mutex_unlock(&p->lock);
	return slot;
}

/* Give a slot back; a foreign pointer or one slot too many is a broken invariant. */
void
pinned_pool_put(pinned_pool_t *p, void *slot)
{
	uintptr_t off = (uintptr_t)slot - (uintptr_t)p->base;

	if ((uintptr_t)slot < (uintptr_t)p->base || off % p->slot_bytes != 0 ||
	    off / p->slot_bytes >= p->nslots) {
		LOG_ERROR("pinned pool: %p is not one of its slots", slot);
		abort();
	}
	pthread_mutex_lock(&p->lock);
	if (p->nfree >= p->nslots) {
		pthread_mutex_unlock(&p->lock);
		LOG_ERROR("pinned pool: slot %p returned twice", slot);
		abort();
	}
	p->free[p->nfree++] = slot;
	pthread_mutex_unlock(&p->lock);
}

/* The size of each slot. */
size_t
pinned_pool_slot_size(const pinned_pool_t *p)
{
	return p->slot_bytes;
}

/* The number of slots. */
size_t
pinned_pool_slots(const pinned_pool_t *p)
{
	return p->nslots;
}

/* The number of slots free now. */
size_t
pinned_pool_free_slots(pinned_pool_t *p)
{
	size_t n;

	pthread_mutex_lock(&p->lock);
	n = p->nfree;
	pthread_mutex_unlock(&p->lock);
	return n;
}
