/* onnx_build.c: a minimal protobuf writer for the ModelProto fields onnx_build_unary needs. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_build.h"

struct pb {
	uint8_t *p;
	size_t len, cap;
};

/* Append n bytes, growing the buffer. */
static void
pb_put(struct pb *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		if ((b->p = realloc(b->p, b->cap)) == NULL) {
			fprintf(stderr, "onnx_build: out of memory\n");
			exit(99);
		}
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

/* Append a base-128 varint. */
static void
pb_varint(struct pb *b, uint64_t v)
{
	uint8_t c;

	do {
		c = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		pb_put(b, &c, 1);
	} while (v);
}

/* Field with a varint value. */
static void
pb_int(struct pb *b, int field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

/* Field with a length-delimited value (a string or an embedded message), freeing the message. */
static void
pb_bytes(struct pb *b, int field, const void *data, size_t n)
{
	pb_varint(b, ((uint64_t)field << 3) | 2);
	pb_varint(b, n);
	pb_put(b, data, n);
}

static void
pb_str(struct pb *b, int field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

static void
pb_msg(struct pb *b, int field, struct pb *m)
{
	pb_bytes(b, field, m->p, m->len);
	free(m->p);
	memset(m, 0, sizeof *m);
}

/* ValueInfoProto: name and a FP32 tensor type of the given dims. */
static void
onnx_value_info(struct pb *out, int field, const char *name, int ndims, const int64_t *dims)
{
	struct pb vi = { 0 }, type = { 0 }, tt = { 0 }, shape = { 0 }, dim = { 0 };
	int d;

	for (d = 0; d < ndims; d++) {
		if (dims[d] >= 0)
			pb_int(&dim, 1, (uint64_t)dims[d]);
		else
			pb_str(&dim, 2, dims[d] == -1 ? "N" : "S");
		pb_msg(&shape, 1, &dim);
	}
	pb_int(&tt, 1, 1);	/* elem_type FLOAT */
	pb_msg(&tt, 2, &shape);
	pb_msg(&type, 1, &tt);
	pb_str(&vi, 1, name);
	pb_msg(&vi, 2, &type);
	pb_msg(out, field, &vi);
}

/* One-node model; see onnx_build.h. */
uint8_t *
onnx_build_unary(const char *op_type, const char *node_name, int ninputs, int ndims,
    const int64_t *dims, size_t *len)
{
	struct pb model = { 0 }, graph = { 0 }, node = { 0 }, opset = { 0 };
	char name[16];
	int i;

	for (i = 0; i < ninputs; i++) {
		snprintf(name, sizeof name, "x%d", i);
		pb_str(&node, 1, name);
	}
	pb_str(&node, 2, "y");
	pb_str(&node, 3, node_name);
	pb_str(&node, 4, op_type);
	pb_msg(&graph, 1, &node);
	pb_str(&graph, 2, "g");
	for (i = 0; i < ninputs; i++) {
		snprintf(name, sizeof name, "x%d", i);
		onnx_value_info(&graph, 11, name, ndims, dims);
	}
	onnx_value_info(&graph, 12, "y", ndims, dims);
	pb_int(&model, 1, 8);		/* ir_version */
	pb_str(&opset, 1, "");
	pb_int(&opset, 2, 17);
	pb_msg(&model, 8, &opset);
	pb_msg(&model, 7, &graph);
	*len = model.len;
	return model.p;
}
