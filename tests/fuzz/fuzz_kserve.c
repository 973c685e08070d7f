/*
 * fuzz_kserve.c: fuzz target for the KServe v2 decoder and encoder, JSON
 * and the binary tensor extension.
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

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kserve.h"
#include "kserve_fixture.h"

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
	if (rc != tree_rc || (rc != 0 && cause == NULL))
		abort();
	for (i = 0; rc == 0 && i < tree->input_bytes / sizeof(float); i++)
		if (!(buf[i] == tree_buf[i]) && memcmp(&buf[i], &tree_buf[i], sizeof buf[i]) != 0)
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
	json_decref(root);
	free(cause);
	return 0;
}

#ifndef FUZZ_LIBFUZZER
/* Read a whole file; NULL on error. */
static uint8_t *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Run one input, every prefix of it, and mutations with bytes that matter to JSON. */
static size_t
run_variants(const uint8_t *data, size_t len, uint64_t *rng)
{
	static const uint8_t bytes[] = "[]{}\",:-+.eE0919\\u\x00\xff";
	uint8_t *copy = malloc(len + 1);
	size_t i, runs = 0, at;

	if (copy == NULL)
		return 0;
	for (i = 0; i <= len; i++, runs++) {
		memcpy(copy, data, i);
		LLVMFuzzerTestOneInput(copy, i);
	}
	for (i = 0; len > 0 && i < 256; i++, runs++) {
		memcpy(copy, data, len);
		*rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
		at = (size_t)(*rng % len);
		copy[at] = bytes[(*rng >> 32) % (sizeof bytes - 1)];
		LLVMFuzzerTestOneInput(copy, len);
	}
	free(copy);
	return runs;
}

int
main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char dir[4096], path[8192];
	struct dirent *e;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	size_t files = 0, runs = 0, len;
	uint8_t *data;
	DIR *d;

	if (argc > 1)
		snprintf(dir, sizeof dir, "%s", argv[1]);
	else
		snprintf(dir, sizeof dir, "%s/tests/data/kserve-corpus", top ? top : ".");
	if ((d = opendir(dir)) == NULL) {
		perror(dir);
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((data = read_file(path, &len)) == NULL) {
			perror(path);
			closedir(d);
			return 1;
		}
		runs += run_variants(data, len, &rng);
		files++;
		free(data);
	}
	closedir(d);
	printf("fuzz_kserve: %zu inputs from %zu corpus files\n", runs, files);
	return files > 0 ? 0 : 1;
}
#endif
