/*
 * fuzz_tensor_text.c: fuzz target for the tensor data codec and the request
 * body scanner.
 *
 * An input is "DNdd..TEXT": D picks the datatype ((D - '0') mod the dtype
 * count: '0' FP32, '1' FP16, '2' INT64, '3' INT32, '4' INT8, '5' UINT8,
 * '6' BOOL), N the rank ((N - '0') mod 4), then one byte per dimension
 * ((d - '0') mod 10), then the data text.  Checked: a refusal always has a
 * message; an accepted text encodes, and the encoder's text decodes back to
 * the same bytes; stopping after the array (consumed) accepts whatever the
 * strict form does.  The whole input is also scanned as a request body, its
 * spans masked and decoded; where jansson accepts the body, the scanner must
 * too, jansson must accept the masked copy with each located "data" null, and
 * each span must hold exactly the original's inputs[i].data.
 *
 * Built with -DFUZZ_LIBFUZZER (make fuzz-tensor-text) it is a libFuzzer
 * target.  Otherwise main() runs it over a corpus directory (default
 * $top_srcdir/tests/data/tensor-text-corpus): every file, every truncation
 * and a fixed set of byte mutations, under the sanitizers in make check.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tensor_text.h"
#ifndef FUZZ_LIBFUZZER
#include "fuzz_corpus.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_ELEMS (9 * 9 * 9)
#define FUZZ_MAX_SPANS 8

/* Element bytes by dtype (graph.h's order). */
static const size_t fuzz_elem_size[GRAPH_DT_COUNT] = {4, 2, 8, 4, 1, 1, 1};

/* Encode what was decoded, decode that text again: the same bytes, or abort. */
static void
fuzz_round_trip(enum graph_dtype dt, const int64_t *shape, int ndims, const void *v, size_t n)
{
	static char text[FUZZ_MAX_ELEMS * 22 + 3];
	static unsigned char again[FUZZ_MAX_ELEMS * 8];
	char *cause = NULL;
	size_t len;

	if (tensor_text_encode(dt, v, n, text, sizeof text, &len, &cause) != 0 ||
	    strlen(text) != len ||
	    tensor_text_decode(text, len, dt, shape, ndims, again, n, NULL, &cause) != 0 ||
	    memcmp(again, v, n * fuzz_elem_size[dt]) != 0)
		abort();
}

/* Decode text both ways; on success check the round trip. */
static void
fuzz_decode(const char *text, size_t len, enum graph_dtype dt, const int64_t *shape, int ndims,
    size_t n)
{
	static unsigned char out[FUZZ_MAX_ELEMS * 8];
	char *cause = NULL;
	size_t consumed = 0;
	int strict = tensor_text_decode(text, len, dt, shape, ndims, out, n, NULL, &cause);

	if ((strict != 0) != (cause != NULL))
		abort();
	free(cause);
	cause = NULL;
	if (strict == 0)
		fuzz_round_trip(dt, shape, ndims, out, n);
	if (tensor_text_decode(text, len, dt, shape, ndims, out, n, &consumed, &cause) == 0) {
		if (consumed > len)
			abort();
	} else if (strict == 0 || cause == NULL) {
		abort();
	}
	free(cause);
}

/* Where jansson accepts the body: the scanner agrees with it, span by span; abort otherwise. */
static void
fuzz_compare_jansson(const char *body, size_t len, int found, const struct tensor_text_span *sp,
    size_t nspans, const char *masked, size_t mlen)
{
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL), *mroot, *inputs, *span;
	size_t i;

	if (root == NULL)
		return;
	inputs = json_object_get(root, "inputs");
	if (!json_is_object(root) || (json_is_array(inputs) && json_array_size(inputs) > FUZZ_MAX_SPANS)) {
		json_decref(root);
		return;	/* refused for a reason of its own: more inputs than room */
	}
	if (!found || (mroot = json_loadb(masked, mlen, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		abort();
	if (json_is_array(inputs) != (nspans == json_array_size(inputs) && json_is_array(inputs)))
		abort();
	for (i = 0; json_is_array(inputs) && i < nspans; i++) {
		json_t *orig = json_object_get(json_array_get(inputs, i), "data");
		json_t *m = json_object_get(json_array_get(json_object_get(mroot, "inputs"), i), "data");
		if ((orig != NULL) != (sp[i].present != 0) || (orig != NULL && !json_is_null(m)))
			abort();
		if (orig == NULL)
			continue;
		span = json_loadb(body + sp[i].off, sp[i].len, JSON_DECODE_ANY, NULL);
		if (span == NULL || !json_equal(span, orig))
			abort();
		json_decref(span);
	}
	json_decref(mroot);
	json_decref(root);
}

/* Scan the input as a request body; mask it and decode every span found. */
static void
fuzz_body(const char *body, size_t len, enum graph_dtype dt, const int64_t *shape, int ndims,
    size_t n)
{
	struct tensor_text_span sp[FUZZ_MAX_SPANS];
	size_t nspans = 0, mlen, cap;
	char *cause = NULL, *masked;

	if (tensor_text_find_data(body, len, sp, FUZZ_MAX_SPANS, &nspans, &cause) != 0) {
		if (cause == NULL)
			abort();
		free(cause);
		fuzz_compare_jansson(body, len, 0, sp, 0, NULL, 0);
		return;
	}
	cap = TENSOR_TEXT_MASK_BOUND(len, nspans);
	if ((masked = malloc(cap)) == NULL)
		return;
	if (tensor_text_mask_data(body, len, sp, nspans, masked, cap, &mlen, &cause) != 0 ||
	    mlen >= cap || strlen(masked) > mlen)
		abort();
	for (size_t i = 0; i < nspans; i++)
		if (sp[i].present && (sp[i].off > len || sp[i].len > len - sp[i].off))
			abort();
		else if (sp[i].present)
			fuzz_decode(body + sp[i].off, sp[i].len, dt, shape, ndims, n);
	fuzz_compare_jansson(body, len, 1, sp, nspans, masked, mlen);
	free(masked);
}

/* Read the header, then run the decoder and the body scanner over the text. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t shape[3];
	enum graph_dtype dt;
	size_t n = 1, at;
	int ndims;

	if (size < 2)
		return 0;
	dt = (enum graph_dtype)((unsigned char)(data[0] - '0') % GRAPH_DT_COUNT);
	ndims = (unsigned char)(data[1] - '0') % 4;
	if (size < 2 + (size_t)ndims)
		return 0;
	for (int i = 0; i < ndims; i++) {
		shape[i] = (unsigned char)(data[2 + i] - '0') % 10;
		n *= (size_t)shape[i];
	}
	at = 2 + (size_t)ndims;
	fuzz_decode((const char *)data + at, size - at, dt, shape, ndims, n);
	fuzz_body((const char *)data + at, size - at, dt, shape, ndims, n);
	return 0;
}

#ifndef FUZZ_LIBFUZZER
/* Bytes that matter to the format, for the plain driver's mutations. */
static const uint8_t fuzz_bytes[] = "[]{}\",:-+.eE0919\\u\x00\xff ntfaINl";

int
main(int argc, char **argv)
{
	static const struct fuzz_corpus fc = {
		.name = "fuzz_tensor_text", .corpus = "tensor-text-corpus", .bytes = fuzz_bytes, .nbytes = sizeof fuzz_bytes - 1,
		.mutations = 256, .one = LLVMFuzzerTestOneInput,
	};

	return fuzz_corpus_main(&fc, argc, argv);
}
#endif
