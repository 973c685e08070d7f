/*
 * fuzz_kserve.c: fuzz target for the KServe v2 decoder and encoder, JSON
 * and the binary tensor extension.  Every body is decoded twice: against
 * the FP32 fixture and against the same model with BYTES tensors, whose
 * answers are encoded back and checked element for element.
 *
 * An input that starts with "#ihcl VALUE\n" is a binary-extension body:
 * VALUE stands for its Inference-Header-Content-Length header and the rest
 * of the input is the body (JSON header, then tensor bytes).  Any other
 * input is a JSON body.
 *
 * Built with -DFUZZ_LIBFUZZER (make fuzz, tests/local.mk) it is a libFuzzer target.
 * Otherwise main() runs it over a corpus directory (default
 * $top_srcdir/tests/data/kserve-corpus): every file, every truncation of
 * it and a fixed set of byte mutations, so make check exercises it under
 * the sanitizers without clang.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kserve.h"
#include "kserve_bytes.h"
#include "kserve_fixture.h"
#ifndef FUZZ_LIBFUZZER
#include "fuzz_corpus.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The model bodies are decoded against (tests/helpers/kserve_fixture.h). */
static const model_t *
fuzz_model(void)
{
	static model_t m;

	if (m.max_batch_size == 0)
		kserve_fixture_model(&m);
	return &m;
}

/* The fixture with BYTES tensors: input "input" [2,3], output "out" [2]. */
static const model_t *
fuzz_strings_model(void)
{
	static model_t m;

	if (m.max_batch_size == 0) {
		kserve_fixture_model(&m);
		snprintf(m.name, sizeof m.name, "strings");
		m.inputs[0].dtype = m.outputs[0].dtype = GRAPH_DT_STRING;
		snprintf(m.inputs[0].datatype, sizeof m.inputs[0].datatype, "BYTES");
		snprintf(m.outputs[0].datatype, sizeof m.outputs[0].datatype, "BYTES");
		m.input = m.inputs[0];
		m.output = m.outputs[0];
	}
	return &m;
}

/* The staging buffer of the BYTES model: inputs, then outputs, each aligned. */
#define FUZZ_STRING_BUF (ROWS_MAX * (IN_ELEMS + OUT_ELEMS) * GRAPH_STRING_SLOT + KSERVE_TENSOR_ALIGN)

/* Whether every one of n slots holds a length in range and zeros past it. */
static int
fuzz_slots_ok(const unsigned char *slots, size_t n)
{
	uint32_t len;
	size_t k, i;

	for (k = 0; k < n; k++, slots += GRAPH_STRING_SLOT) {
		memcpy(&len, slots, sizeof len);
		if (len > GRAPH_STRING_MAX)
			return 0;
		for (i = 4 + len; i < GRAPH_STRING_SLOT; i++)
			if (slots[i] != 0)
				return 0;
	}
	return 1;
}

/*
 * Answer an accepted BYTES request with its first rows * OUT_ELEMS input
 * strings as the output: JSON (refused only with a reason: an element that
 * is not UTF-8) must parse, and the binary section must unpack to the same
 * slots.
 */
static void
fuzz_strings_encode(const model_t *m, struct kserve_infer *ki, unsigned char *buf)
{
	static unsigned char back[ROWS_MAX * OUT_ELEMS * GRAPH_STRING_SLOT];
	size_t n = (size_t)ki->rows * OUT_ELEMS, len, hlen;
	char *cause = NULL, *s;
	json_t *doc;

	ki->output_len[0] = n * GRAPH_STRING_SLOT;
	memcpy(buf + ki->output_offset[0], buf + ki->input_offset[0], ki->output_len[0]);
	ki->nwanted = 1;
	ki->wanted[0] = 0;
	ki->binary[0] = ki->binary_output = 0;
	s = kserve_encode_infer(m, ki->id, ki, buf, &len, &hlen, &cause);
	if ((s == NULL && cause == NULL) || (s != NULL && (doc = json_loadb(s, len, JSON_ALLOW_NUL, NULL)) == NULL))
		abort();
	if (s != NULL)
		json_decref(doc);
	free(s);
	free(cause);
	cause = NULL;
	ki->binary[0] = ki->binary_output = 1;
	if ((s = kserve_encode_infer(m, ki->id, ki, buf, &len, &hlen, &cause)) == NULL ||
	    kserve_bytes_unpack((unsigned char *)s + hlen, len - hlen, n, back, "output", "out", &cause) != 0 ||
	    memcmp(back, buf + ki->output_offset[0], n * GRAPH_STRING_SLOT) != 0)
		abort();
	free(s);
	free(cause);
}

/* Decode one body against the BYTES model, by the tree and the fast path, and encode what is accepted. */
static void
fuzz_strings(const char *text, size_t len, const struct kserve_binary *binp, const json_t *root)
{
	static unsigned char buf[FUZZ_STRING_BUF], fast[FUZZ_STRING_BUF];
	struct tensor_text_span spans[KSERVE_MAX_SPANS];
	struct kserve_source src = { text, spans, 0, NULL };
	const model_t *m = fuzz_strings_model();
	struct kserve_infer ki, kf;
	char *cause = NULL;
	json_t *froot;
	int rc, frc = -1;

	rc = kserve_decode_infer(root, binp, m, buf, sizeof buf, &ki, &cause);
	if ((rc != 0 && cause == NULL) || (rc == 0 && (ki.input_bytes != (size_t)ki.rows * IN_ELEMS *
	    GRAPH_STRING_SLOT || !fuzz_slots_ok(buf + ki.input_offset[0], (size_t)ki.rows * IN_ELEMS))))
		abort();
	free(cause);
	cause = NULL;
	if ((froot = kserve_parse_fast(text, len, spans, &src.nspans, &cause)) != NULL) {
		frc = kserve_decode_request(froot, &src, binp, m, fast, sizeof fast, &kf, &cause);
		kserve_infer_release(&kf, NULL);
		json_decref(froot);
	}
	/* The fast path may take a NUL the whole-body parse refuses (JSON_ALLOW_NUL on data spans only). */
	if ((frc == 0 && rc == 0 && memcmp(fast, buf, ki.input_bytes) != 0) || (frc != 0 && rc == 0))
		abort();
	free(cause);
	if (rc == 0)
		fuzz_strings_encode(m, &ki, buf);
}

/* The prefix that marks a binary-extension input. */
#define FUZZ_IHCL "#ihcl "

/*
 * Split a binary-extension input into its header value (NUL-terminated in
 * value) and body; 0 when data is not one, -1 when the header line is
 * unterminated or too long (nothing to decode).
 */
static int
fuzz_split(const uint8_t *data, size_t size, char *value, size_t vsize,
    const uint8_t **body, size_t *body_len)
{
	size_t plen = sizeof FUZZ_IHCL - 1, i;

	if (size < plen || memcmp(data, FUZZ_IHCL, plen) != 0)
		return 0;
	for (i = plen; i < size && data[i] != '\n'; i++)
		;
	if (i == size || i - plen >= vsize)
		return -1;
	memcpy(value, data + plen, i - plen);
	value[i - plen] = '\0';
	*body = data + i + 1;
	*body_len = size - i - 1;
	return 1;
}

/* Whether raw holds v's n floats as little-endian bytes. */
static int
fuzz_same_le32(const char *raw, const float *v, size_t n)
{
	const unsigned char *p = (const unsigned char *)raw;
	uint32_t bits;
	size_t i;

	for (i = 0; i < n; i++, p += 4) {
		memcpy(&bits, &v[i], sizeof bits);
		if (p[0] != (bits & 0xff) || p[1] != ((bits >> 8) & 0xff) ||
		    p[2] != ((bits >> 16) & 0xff) || p[3] != bits >> 24)
			return 0;
	}
	return 1;
}

/* An accepted request's answer, as JSON and as binary: each well formed, the binary bytes exact. */
static void
fuzz_encode(const model_t *m, const struct kserve_infer *ki, const float *buf)
{
	size_t n = (size_t)ki->rows * OUT_ELEMS, len, hlen, i;
	char *cause = NULL, *s;
	json_t *header;
	int finite = 1;

	/* The decoded inputs stand in for outputs: finite floats must always encode as JSON. */
	for (i = 0; i < n; i++)
		finite &= isfinite(buf[i]) != 0;
	s = kserve_fixture_encode(m, ki->id, ki->rows, 0, buf, &len, &hlen, &cause);
	if ((s == NULL) == finite || (s != NULL && (strlen(s) != len || hlen != len)))
		abort();
	free(s);
	s = kserve_fixture_encode(m, ki->id, ki->rows, 1, buf, &len, &hlen, &cause);
	if (s == NULL || len != hlen + n * sizeof(float) || !fuzz_same_le32(s + hlen, buf, n) ||
	    (header = json_loadb(s, hlen, 0, NULL)) == NULL)
		abort();
	json_decref(header);
	free(s);
	free(cause);
}

/*
 * jansson reads a JSON real as a double, so the tree path rounds decimal ->
 * double -> float and can land one float away from the correctly rounded
 * value the fast path gives: only when the double is exactly a midpoint
 * between two floats, which ties-to-even then resolves to the even one.
 */
static int
fuzz_rounded_twice(float tree, float fast)
{
	uint32_t tb;

	if (!isfinite(tree) || !isfinite(fast) || nextafterf(tree, fast) != fast)
		return 0;
	memcpy(&tb, &tree, sizeof tb);
	return (tb & 1) == 0;
}

/*
 * The same double rounding at the top of the range: text just under
 * FLT_MAX + half an ulp rounds to FLT_MAX on the fast path but can reach the
 * midpoint as a double, which the tree path refuses as out of range.
 */
static int
fuzz_holds_flt_max(const float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fabsf(v[i]) == FLT_MAX)
			return 1;
	return 0;
}

/*
 * The fast path (data decoded from the text at located spans) must answer
 * as the tree path did: accepted with equal values (== : "-0" is -0.0f
 * there, as strtof reads it, where jansson's integer 0 gives +0.0f; the
 * same bits otherwise), or refused.
 */
static void
fuzz_fast_path(const char *text, size_t len, const struct kserve_binary *binp, const model_t *m,
    int tree_rc, const struct kserve_infer *tree, const float *tree_buf)
{
	static float buf[FIXTURE_BUF_FLOATS];
	struct tensor_text_span spans[KSERVE_MAX_SPANS];
	struct kserve_source src = { text, spans, 0, NULL };
	struct kserve_infer ki;
	char *cause = NULL;
	json_t *root;
	size_t i;
	int rc = -1;

	if ((root = kserve_parse_fast(text, len, spans, &src.nspans, &cause)) != NULL) {
		rc = kserve_decode_request(root, &src, binp, m, buf, sizeof buf, &ki, &cause);
		kserve_infer_release(&ki, NULL);
		json_decref(root);
	}
	if (rc != 0 && cause == NULL)
		abort();
	if (rc != tree_rc && !(rc == 0 && fuzz_holds_flt_max(buf, ki.input_bytes / sizeof(float))))
		abort();
	for (i = 0; rc == 0 && tree_rc == 0 && i < tree->input_bytes / sizeof(float); i++)
		if (!(buf[i] == tree_buf[i]) && memcmp(&buf[i], &tree_buf[i], sizeof buf[i]) != 0 &&
		    !fuzz_rounded_twice(tree_buf[i], buf[i]))
			abort();	/* binary data may hold NaNs: those must be the same bits */
	free(cause);
}

/* Decode one body; when it is accepted, check the result and encode an answer from it. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const model_t *m = fuzz_model();
	float buf[FIXTURE_BUF_FLOATS];
	struct kserve_binary bin, *binp = NULL;
	struct kserve_infer ki;
	char *cause = NULL, value[64];
	json_t *root;
	size_t json_len = size;
	int split, rc;

	if ((split = fuzz_split(data, size, value, sizeof value, &data, &size)) < 0)
		return 0;
	json_len = size;
	if (split && kserve_header_length(value, size, &json_len, &cause) != 0) {
		if (cause == NULL || json_len != size)
			abort();
		free(cause);
		return 0;
	}
	if (split) {
		bin.data = data + json_len;
		bin.len = size - json_len;
		binp = &bin;
	}
	if ((root = kserve_parse((const char *)data, json_len, &cause)) == NULL) {
		if (cause == NULL)
			abort();
		free(cause);
		return 0;
	}
	kserve_model_name(root, &cause);
	rc = kserve_decode_infer(root, binp, m, buf, sizeof buf, &ki, &cause);
	if (rc == 0) {
		if (ki.rows < 1 || ki.rows > ROWS_MAX || ki.input_bytes != (size_t)ki.rows * IN_ELEMS * sizeof(float))
			abort();
	} else if (cause == NULL) {
		abort();
	}
	fuzz_fast_path((const char *)data, json_len, binp, m, rc, &ki, buf);
	if (rc == 0)
		fuzz_encode(m, &ki, buf);
	fuzz_strings((const char *)data, json_len, binp, root);
	json_decref(root);
	free(cause);
	return 0;
}

#ifndef FUZZ_LIBFUZZER
/* Bytes that matter to the format, for the plain driver's mutations. */
static const uint8_t fuzz_bytes[] = "[]{}\",:-+.eE0919\\u\x00\xff";

int
main(int argc, char **argv)
{
	static const struct fuzz_corpus fc = {
		.name = "fuzz_kserve", .corpus = "kserve-corpus", .bytes = fuzz_bytes, .nbytes = sizeof fuzz_bytes - 1,
		.mutations = 256, .one = LLVMFuzzerTestOneInput,
	};

	return fuzz_corpus_main(&fc, argc, argv);
}
#endif
