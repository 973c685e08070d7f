/*
 * fuzz_onnx.c: fuzz target for the ONNX decoder (onnx_model_decode).
 *
 * An input is a ModelProto.  A refused one must come with a message; an
 * accepted one is walked completely: every string read, every tensor's
 * bytes read and its size checked against its dims, every list read.
 *
 * Built with -DFUZZ_LIBFUZZER (make fuzz, tests/local.mk) it is a libFuzzer target.
 * Otherwise main() runs it over a corpus directory (default
 * $top_srcdir/tests/data/onnx-corpus): every file, every truncation of it
 * and a fixed set of byte mutations, so make check exercises it under the
 * sanitizers without clang.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_decode.h"
#ifndef FUZZ_LIBFUZZER
#include "fuzz_corpus.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Folded into every byte read, so the reads cannot be optimised away. */
static volatile unsigned fuzz_sink;

/* Read a NUL-terminated string (ASan checks it lies in memory the model owns). */
static void
fuzz_string(const char *s)
{
	if (s == NULL)
		abort();
	fuzz_sink += (unsigned)strlen(s);
}

/*
 * A tensor: dims valid, nbytes = product(dims) * element size, every byte
 * readable, data aligned to its element type (a number's size; a STRING's
 * fixed-size slots are bytes, so any address).
 */
static void
fuzz_tensor(const struct onnx_tensor *t)
{
	size_t n = 1, esize = onnx_elem_size(t->elem), i;
	size_t align = t->elem == ONNX_STRING ? 1 : esize;
	const uint8_t *p = t->data;
	int k;

	fuzz_string(t->name);
	if (esize == 0 || t->ndims < 0 || t->ndims > ONNX_MAX_DIMS || p == NULL)
		abort();
	for (k = 0; k < t->ndims; k++) {
		if (t->dims[k] < 0)
			abort();
		n *= (size_t)t->dims[k];
	}
	if (t->nbytes != n * esize)
		abort();
	if (t->nbytes < ONNX_COPY_ALIGN_MAX && (uintptr_t)p % align != 0)
		abort();
	for (i = 0; i < t->nbytes; i++)
		fuzz_sink += p[i];
}

/* An attribute: its value of its type. */
static void
fuzz_attr(const struct onnx_attr *a)
{
	size_t i;

	fuzz_string(a->name);
	fuzz_string(a->s);
	if (a->type < ONNX_ATTR_FLOAT || a->type > ONNX_ATTR_TYPE_PROTOS)
		abort();
	if (a->type == ONNX_ATTR_TENSOR)
		fuzz_tensor(&a->t);
	for (i = 0; i < a->nfloats; i++)
		fuzz_sink += a->floats[i] > 0;
	for (i = 0; i < a->nints; i++)
		fuzz_sink += (unsigned)a->ints[i];
	for (i = 0; i < a->nstrings; i++)
		fuzz_string(a->strings[i]);
}

/* A node: names, inputs, outputs, attributes, and attribute lookup by name. */
static void
fuzz_node(const struct onnx_node *n)
{
	size_t i;

	fuzz_string(n->name);
	fuzz_string(n->op_type);
	fuzz_string(n->domain);
	for (i = 0; i < n->ninputs; i++)
		fuzz_string(n->inputs[i]);
	for (i = 0; i < n->noutputs; i++)
		fuzz_string(n->outputs[i]);
	for (i = 0; i < n->nattrs; i++) {
		fuzz_attr(&n->attrs[i]);
		if (onnx_node_attr(n, n->attrs[i].name) == NULL)
			abort();
	}
}

/* Value infos: names, dims within bounds, symbolic names readable. */
static void
fuzz_value_infos(const struct onnx_value_info *v, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		fuzz_string(v[i].name);
		if (v[i].ndims < -1 || v[i].ndims > ONNX_MAX_DIMS)
			abort();
		for (k = 0; k < v[i].ndims; k++) {
			if (v[i].dims[k].param != NULL)
				fuzz_string(v[i].dims[k].param);
			if (v[i].dims[k].value < 0 || (v[i].dims[k].known && v[i].dims[k].param != NULL))
				abort();
		}
	}
}

/* Walk everything an accepted model holds. */
static void
fuzz_model(const onnx_model_t *m)
{
	const struct onnx_graph *g = &m->graph;
	size_t i;

	fuzz_string(m->producer_name);
	fuzz_string(g->name);
	if (m->nopsets == 0)
		abort();
	for (i = 0; i < m->nopsets; i++)
		fuzz_string(m->opsets[i].domain);
	fuzz_sink += (unsigned)onnx_model_opset(m, "") + (unsigned)onnx_model_opset(m, "ai.onnx");
	for (i = 0; i < g->nnodes; i++)
		fuzz_node(&g->nodes[i]);
	for (i = 0; i < g->ninitializers; i++)
		fuzz_tensor(&g->initializers[i]);
	fuzz_value_infos(g->inputs, g->ninputs);
	fuzz_value_infos(g->outputs, g->noutputs);
	fuzz_value_infos(g->value_infos, g->nvalue_infos);
}

/* Decode one input: refused with a message, or accepted and consistent. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	onnx_model_t *m = NULL;
	char *cause = NULL;

	if (onnx_model_decode(data, size, &m, &cause) == 0) {
		if (m == NULL)
			abort();
		fuzz_model(m);
		onnx_model_free(m);
	} else if (m != NULL || cause == NULL || cause[0] == '\0')
		abort();
	free(cause);
	return 0;
}

#ifndef FUZZ_LIBFUZZER
/* Bytes that matter to the format, for the plain driver's mutations. */
static const uint8_t fuzz_bytes[] = { 0x00, 0x01, 0x02, 0x07, 0x08, 0x0a, 0x0d, 0x12, 0x1a, 0x3a, 0x42,
	0x4a, 0x70, 0x7f, 0x80, 0xff };

int
main(int argc, char **argv)
{
	static const struct fuzz_corpus fc = {
		.name = "fuzz_onnx", .corpus = "onnx-corpus", .bytes = fuzz_bytes, .nbytes = sizeof fuzz_bytes,
		.mutations = 512, .one = LLVMFuzzerTestOneInput,
	};

	return fuzz_corpus_main(&fc, argc, argv);
}
#endif
