/* onnx_decode_reader.c: the decoder's context: the model's metadata arena, the message path errors name, field readers. */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "onnx_decode_impl.h"

/* Arena chunks hold small allocations together; larger ones get a chunk of their own. */
#define ARENA_CHUNK (64u * 1024)
/* Metadata beyond this (plus 16 bytes per input byte: int64_data of 1-byte varints grows 8x) is refused. */
#define ARENA_BASE_LIMIT (64u * 1024 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	_Alignas(16) uint8_t data[];
};

/* Allocate zeroed, 16-byte aligned memory from the model's arena. */
void *
dec_alloc(struct onnx_dec *d, size_t n)
{
	struct onnx_priv *pv = d->priv;
	struct arena_chunk *c = pv->chunks;
	size_t size;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	if (c == NULL || c->size - c->used < n) {
		size = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
		if (size > pv->arena_limit - pv->arena_total) {
			dec_err(d, "the model's metadata needs more than %zu bytes of memory", pv->arena_limit);
			return NULL;
		}
		if ((c = xcalloc(1, sizeof *c + size)) == NULL) {
			dec_err(d, "out of memory (%zu bytes)", size);
			return NULL;
		}
		c->size = size;
		pv->arena_total += size;
		/* A dedicated chunk goes behind the current one, which keeps its free space. */
		if (size != ARENA_CHUNK && pv->chunks != NULL) {
			c->next = pv->chunks->next;
			pv->chunks->next = c;
		} else {
			c->next = pv->chunks;
			pv->chunks = c;
		}
	}
	p = c->data + c->used;
	c->used += n;
	return p;
}

/* Append a segment to the message path. */
size_t
dec_push(struct onnx_dec *d, const char *name, long long index)
{
	size_t old = d->plen, room = sizeof d->path - old;
	int k;

	if (index >= 0)
		k = snprintf(d->path + old, room, "%s%s[%lld]", old ? "." : "", name, index);
	else
		k = snprintf(d->path + old, room, "%s%s", old ? "." : "", name);
	d->plen = k < 0 || (size_t)k >= room ? sizeof d->path - 1 : old + (size_t)k;
	return old;
}

/* Append "('name')" to the path (nothing for an empty name); returns the length to restore. */
size_t
dec_push_quoted(struct onnx_dec *d, const char *name)
{
	size_t old = d->plen, room = sizeof d->path - old;
	int k;

	if (name[0] == '\0')
		return old;
	k = snprintf(d->path + old, room, "('%s')", name);
	d->plen = k < 0 || (size_t)k >= room ? sizeof d->path - 1 : old + (size_t)k;
	return old;
}

/* Cut the message path back. */
void
dec_pop(struct onnx_dec *d, size_t plen)
{
	d->plen = plen;
	d->path[plen] = '\0';
}

/* Set the cause to a message prefixed with the message path. */
int
dec_err(struct onnx_dec *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (d->plen == 0)
		return error_set(d->cause, "%s", msg);
	return error_set(d->cause, "%s: %s", d->path, msg);
}

/* Prefix the message path to a lower layer's cause. */
int
dec_fail(struct onnx_dec *d)
{
	if (d->plen == 0)
		return -1;
	return error_prefix(d->cause, "%s", d->path);
}

/* Read the next field of r, errors prefixed with the message path. */
int
dec_next(struct onnx_dec *d, struct pb_reader *r, struct pb_field *f)
{
	int rc = pb_next(r, f, d->cause);

	if (rc < 0)
		dec_fail(d);
	return rc;
}

/* Refuse a field of another wire type, naming it. */
int
dec_expect(struct onnx_dec *d, const struct pb_field *f, int wire, const char *fname)
{
	static const char *const names[] = { "varint", "fixed64", "length-delimited", "group start",
		"group end", "fixed32", "invalid", "invalid" };

	if (f->wire == wire)
		return 0;
	return dec_err(d, "%s (field %u) at byte %zu: wire type %s, expected %s", fname, f->num, f->at,
	    names[f->wire & 7], names[wire & 7]);
}

/* Copy a string field into the arena, NUL-terminated. */
int
dec_string(struct onnx_dec *d, const struct pb_field *f, const char *fname, const char **out)
{
	char *s;

	if (dec_expect(d, f, PB_LEN, fname) != 0)
		return -1;
	if (memchr(f->p, '\0', f->n) != NULL)
		return dec_err(d, "%s at byte %zu holds a NUL byte", fname, f->at);
	if ((s = dec_alloc(d, f->n + 1)) == NULL)
		return -1;
	memcpy(s, f->p, f->n);
	*out = s;
	return 0;
}

/* Read a varint field as a signed integer, range-checked for int32 fields. */
int
dec_int(struct onnx_dec *d, const struct pb_field *f, const char *fname, int is32, int64_t *out)
{
	int64_t v;

	if (dec_expect(d, f, PB_VARINT, fname) != 0)
		return -1;
	v = (int64_t)f->u;
	if (is32 && (v < INT32_MIN || v > INT32_MAX))
		return dec_err(d, "%s = %lld at byte %zu is out of the int32 range", fname, (long long)v, f->at);
	*out = v;
	return 0;
}


/* Set the arena's limit for a model file of len bytes. */
void
dec_arena_init(struct onnx_priv *pv, size_t len)
{
	pv->arena_limit = ARENA_BASE_LIMIT + (len > (SIZE_MAX - ARENA_BASE_LIMIT) / 16 ?
	    SIZE_MAX - ARENA_BASE_LIMIT : len * 16);
}

/* Free the arena's chunks. */
void
dec_arena_free(struct onnx_priv *pv)
{
	struct arena_chunk *c, *next;

	for (c = pv->chunks; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	pv->chunks = NULL;
}
