/* protobuf_wire.c: the protobuf wire format, read field by field with every length checked. */
#include "config.h"

#include <string.h>

#include "error.h"
#include "protobuf_wire.h"

/* Field numbers are 29 bits in the wire format. */
#define PB_MAX_FIELD ((1u << 29) - 1)

/* Start a reader over len bytes at buf. */
void
pb_init(struct pb_reader *r, const uint8_t *buf, size_t len, const uint8_t *base)
{
	r->p = buf;
	r->end = buf + len;
	r->base = base;
}

/* Start a reader over a length-delimited field's payload. */
void
pb_init_sub(struct pb_reader *sub, const struct pb_reader *r, const struct pb_field *f)
{
	pb_init(sub, f->p, f->n, r->base);
}

/* Offset of p from the reader's base, for messages. */
static size_t
pb_offset(const struct pb_reader *r, const uint8_t *p)
{
	return (size_t)(p - r->base);
}

/* Read a varint of at most 10 bytes whose value fits 64 bits. */
static int
pb_varint(struct pb_reader *r, uint64_t *v, char **cause)
{
	const uint8_t *start = r->p;
	uint64_t x = 0;
	unsigned shift;

	for (shift = 0; shift < 64; shift += 7) {
		if (r->p == r->end)
			return error_set(cause, "truncated varint at byte %zu", pb_offset(r, start));
		x |= (uint64_t)(*r->p & 0x7f) << shift;
		if ((*r->p++ & 0x80) == 0) {
			if (shift == 63 && r->p[-1] > 1)
				break;
			*v = x;
			return 0;
		}
	}
	return error_set(cause, "varint longer than 64 bits at byte %zu", pb_offset(r, start));
}

/* Read n little-endian bytes (4 or 8). */
static int
pb_fixed(struct pb_reader *r, unsigned n, uint64_t *v, char **cause)
{
	uint64_t x = 0;
	unsigned i;

	if ((size_t)(r->end - r->p) < n)
		return error_set(cause, "truncated fixed%u value at byte %zu", n * 8, pb_offset(r, r->p));
	for (i = 0; i < n; i++)
		x |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	*v = x;
	return 0;
}

/* Read the value of a field whose tag has been read. */
static int
pb_value(struct pb_reader *r, struct pb_field *f, char **cause)
{
	switch (f->wire) {
	case PB_VARINT:
		return pb_varint(r, &f->u, cause);
	case PB_FIXED64:
		return pb_fixed(r, 8, &f->u, cause);
	case PB_FIXED32:
		return pb_fixed(r, 4, &f->u, cause);
	case PB_LEN:
		if (pb_varint(r, &f->u, cause) != 0)
			return -1;
		if (f->u > (uint64_t)(r->end - r->p))
			return error_set(cause, "field %u at byte %zu: length %llu runs past the end "
			    "(%zu bytes left)", f->num, f->at, (unsigned long long)f->u,
			    (size_t)(r->end - r->p));
		f->p = r->p;
		f->n = (size_t)f->u;
		r->p += f->n;
		return 0;
	case 3:
	case 4:
		return error_set(cause, "field %u at byte %zu: groups (wire type %d) are not supported",
		    f->num, f->at, f->wire);
	default:
		return error_set(cause, "field %u at byte %zu: invalid wire type %d", f->num, f->at, f->wire);
	}
}

/* Read the next field (tag and value), checking every length against the end. */
int
pb_next(struct pb_reader *r, struct pb_field *f, char **cause)
{
	uint64_t key;

	if (r->p == r->end)
		return 0;
	memset(f, 0, sizeof *f);
	f->at = pb_offset(r, r->p);
	if (pb_varint(r, &key, cause) != 0)
		return -1;
	if (key >> 3 == 0 || key >> 3 > PB_MAX_FIELD)
		return error_set(cause, "invalid field number %llu at byte %zu",
		    (unsigned long long)(key >> 3), f->at);
	f->num = (uint32_t)(key >> 3);
	f->wire = (int)(key & 7);
	if (pb_value(r, f, cause) != 0)
		return -1;
	return 1;
}

/* A wire type's name, for messages. */
static const char *
pb_wire_name(int wire)
{
	switch (wire) {
	case PB_VARINT: return "varint";
	case PB_FIXED64: return "fixed64";
	case PB_LEN: return "length-delimited";
	case PB_FIXED32: return "fixed32";
	default: return "invalid";
	}
}

/* Refuse a field of another wire type. */
int
pb_expect(const struct pb_field *f, int wire, char **cause)
{
	if (f->wire == wire)
		return 0;
	return error_set(cause, "field %u at byte %zu: wire type %s, expected %s", f->num, f->at,
	    pb_wire_name(f->wire), pb_wire_name(wire));
}

/* Read one element of elem_wire from a packed payload. */
static int
pb_scalar(struct pb_reader *r, int elem_wire, uint64_t *v, char **cause)
{
	if (elem_wire == PB_VARINT)
		return pb_varint(r, v, cause);
	return pb_fixed(r, elem_wire == PB_FIXED64 ? 8 : 4, v, cause);
}

/* Visit the elements of one occurrence of a repeated scalar field, packed or not. */
int
pb_scalars_each(const struct pb_reader *r, const struct pb_field *f, int elem_wire,
    int (*fn)(void *arg, uint64_t v, char **cause), void *arg, char **cause)
{
	struct pb_reader sub;
	uint64_t v;

	if (f->wire == elem_wire)
		return fn(arg, f->u, cause);
	if (pb_expect(f, PB_LEN, cause) != 0)
		return error_prefix(cause, "repeated %s field", pb_wire_name(elem_wire));
	pb_init_sub(&sub, r, f);
	while (sub.p != sub.end) {
		if (pb_scalar(&sub, elem_wire, &v, cause) != 0 || fn(arg, v, cause) != 0)
			return -1;
	}
	return 0;
}

/* Count one element (pb_scalars_each callback). */
static int
pb_count_one(void *arg, uint64_t v, char **cause)
{
	(void)v;
	(void)cause;
	(*(size_t *)arg)++;
	return 0;
}

/* Count the elements of one occurrence of a repeated scalar field, packed or not. */
int
pb_scalars_count(const struct pb_reader *r, const struct pb_field *f, int elem_wire,
    size_t *n, char **cause)
{
	if (f->wire == PB_LEN && elem_wire != PB_VARINT) {
		size_t w = elem_wire == PB_FIXED64 ? 8 : 4;

		if (f->n % w != 0)
			return error_set(cause, "field %u at byte %zu: packed length %zu is not a multiple "
			    "of %zu", f->num, f->at, f->n, w);
		*n += f->n / w;
		return 0;
	}
	return pb_scalars_each(r, f, elem_wire, pb_count_one, n, cause);
}
