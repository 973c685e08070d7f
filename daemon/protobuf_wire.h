/* protobuf_wire.h: a bounds-checked reader of the protobuf wire format (no schema, no copies). */
#ifndef INFERD_PROTOBUF_WIRE_H
#define INFERD_PROTOBUF_WIRE_H

#include <stddef.h>
#include <stdint.h>

/*
 * A cursor over one message's bytes.  Every read checks the bounds; nothing
 * is copied: length-delimited fields are returned as views into the buffer.
 * Errors return -1 with a message naming the byte offset (from base) and the
 * problem.  Groups (wire types 3 and 4, deprecated) are refused.
 */

enum pb_wire { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2, PB_FIXED32 = 5 };

struct pb_reader {
	const uint8_t *p, *end;
	const uint8_t *base;	/* offsets in messages count from here */
};

/* One field: its number, wire type and value (u for numeric types, p/n for PB_LEN). */
struct pb_field {
	uint32_t num;
	int wire;
	uint64_t u;
	const uint8_t *p;
	size_t n;
	size_t at;		/* offset of the field's tag from base */
};

/* Start reading len bytes at buf; offsets in messages count from base. */
void pb_init(struct pb_reader *r, const uint8_t *buf, size_t len, const uint8_t *base);
/* Start reading the payload of a PB_LEN field, keeping r's base. */
void pb_init_sub(struct pb_reader *sub, const struct pb_reader *r, const struct pb_field *f);
/* Read the next field: 1 when one was read, 0 at the end, -1 on corrupt input. */
int pb_next(struct pb_reader *r, struct pb_field *f, char **cause);
/* Refuse f unless it has wire type wire (message names the field and both types). */
int pb_expect(const struct pb_field *f, int wire, char **cause);

/*
 * A repeated scalar field comes packed (one PB_LEN field holding elements of
 * elem_wire) or unpacked (one element per field); both are accepted.
 */
/* Count the elements in one occurrence of a repeated scalar field. */
int pb_scalars_count(const struct pb_reader *r, const struct pb_field *f, int elem_wire,
    size_t *n, char **cause);
/* Call fn on each element of one occurrence of a repeated scalar field; stops at fn's -1. */
int pb_scalars_each(const struct pb_reader *r, const struct pb_field *f, int elem_wire,
    int (*fn)(void *arg, uint64_t v, char **cause), void *arg, char **cause);

#endif
