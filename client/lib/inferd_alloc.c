/* inferd_alloc.c: a first-fit allocator over the region's data area (its bookkeeping stays private). */
#include <stdlib.h>
#include <string.h>

#include "libinferd_impl.h"

/* Blocks are multiples of a cache line, so tensors never share one. */
#define INFERD_ALLOC_ALIGN 64u

/* Start with the whole data area free. */
int
inferd__alloc_init(inferd_conn_t *c)
{
	c->extents_cap = 16;
	if ((c->extents = calloc(c->extents_cap, sizeof *c->extents)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	c->extents[0].offset = c->layout.data_offset;
	c->extents[0].bytes = c->region_bytes - c->layout.data_offset;
	c->nextents = 1;
	return 0;
}

/* Allocate bytes inside the region. */
int
inferd_tensor_alloc(inferd_conn_t *c, size_t bytes, struct inferd_tensor *t)
{
	int r;

	inferd__clear_error();
	if (c == NULL || t == NULL || bytes == 0)
		return inferd__fail(INFERD_EINVAL, "inferd_tensor_alloc: bad argument");
	pthread_mutex_lock(&c->alloc_lock);
	r = inferd__alloc_locked(c, bytes, t);
	pthread_mutex_unlock(&c->alloc_lock);
	return r;
}

/* First fit, alloc_lock held. */
int
inferd__alloc_locked(inferd_conn_t *c, size_t bytes, struct inferd_tensor *t)
{
	uint64_t need;
	size_t i;
	if (bytes > c->region_bytes)
		return inferd__fail(INFERD_ENOSPACE, "%zu bytes do not fit in a %llu-byte region",
		    bytes, (unsigned long long)c->region_bytes);
	need = ((uint64_t)bytes + INFERD_ALLOC_ALIGN - 1) / INFERD_ALLOC_ALIGN * INFERD_ALLOC_ALIGN;
	for (i = 0; i < c->nextents; i++)
		if (c->extents[i].bytes >= need)
			break;
	if (i == c->nextents)
		return inferd__fail(INFERD_ENOSPACE, "no free block of %zu bytes in the region", bytes);
	t->offset = c->extents[i].offset;
	t->bytes = bytes;
	t->data = c->base + t->offset;
	c->extents[i].offset += need;
	c->extents[i].bytes -= need;
	if (c->extents[i].bytes == 0) {
		memmove(&c->extents[i], &c->extents[i + 1], (c->nextents - i - 1) * sizeof *c->extents);
		c->nextents--;
	}
	return 0;
}

/* Make room for one more extent; -1 when out of memory. */
static int
inferd__alloc_grow(inferd_conn_t *c)
{
	struct inferd_extent *e;

	if (c->nextents < c->extents_cap)
		return 0;
	if ((e = realloc(c->extents, 2 * c->extents_cap * sizeof *e)) == NULL)
		return -1;
	c->extents = e;
	c->extents_cap *= 2;
	return 0;
}

/* Return a block, merging it with free neighbours (alloc_lock held). */
static void
inferd__free_locked(inferd_conn_t *c, struct inferd_tensor *t)
{
	uint64_t off, len;
	size_t i;

	off = t->offset;
	len = ((uint64_t)t->bytes + INFERD_ALLOC_ALIGN - 1) / INFERD_ALLOC_ALIGN * INFERD_ALLOC_ALIGN;
	memset(t, 0, sizeof *t);
	for (i = 0; i < c->nextents && c->extents[i].offset < off; i++)
		;
	if (i > 0 && c->extents[i - 1].offset + c->extents[i - 1].bytes == off) {
		c->extents[i - 1].bytes += len;
		if (i < c->nextents && off + len == c->extents[i].offset) {
			c->extents[i - 1].bytes += c->extents[i].bytes;
			memmove(&c->extents[i], &c->extents[i + 1], (c->nextents - i - 1) * sizeof *c->extents);
			c->nextents--;
		}
		return;
	}
	if (i < c->nextents && off + len == c->extents[i].offset) {
		c->extents[i].offset = off;
		c->extents[i].bytes += len;
		return;
	}
	/* Out of memory for the list: the block is lost, nothing else breaks. */
	if (inferd__alloc_grow(c) != 0)
		return;
	memmove(&c->extents[i + 1], &c->extents[i], (c->nextents - i) * sizeof *c->extents);
	c->extents[i].offset = off;
	c->extents[i].bytes = len;
	c->nextents++;
}

/* Return a block. */
void
inferd_tensor_free(inferd_conn_t *c, struct inferd_tensor *t)
{
	if (c == NULL || t == NULL || t->data == NULL)
		return;
	pthread_mutex_lock(&c->alloc_lock);
	inferd__free_locked(c, t);
	pthread_mutex_unlock(&c->alloc_lock);
}
