/*
 * bench_tensor_text.c: the tensor data codec's speed on the demo request
 * (docs/examples/fashion-request.json: 784 FP32 values), beside jansson and a
 * plain strtof loop over the same text, in one run on one core.
 *
 * Usage: client/bench/bench_tensor_text [request.json [milliseconds per figure]]
 * Each figure is the best of 25 short timed runs (so a run that other work
 * on a shared machine interrupted does not count); MB/s counts the data
 * text's bytes (decode), the bytes printed (encode) or the body's bytes
 * (request).  Run it pinned to one core: taskset -c 1 client/bench/bench_tensor_text.
 * Not installed, not a test.
 */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensor_text.h"

#define ELEMS 784
#define BENCH_TRIALS 25

/* What one timed operation works on. */
struct bench {
	const char *body, *data;	/* the request, and its input's data text */
	size_t body_len, data_len;
	float v[ELEMS];
	char *out;
	size_t out_cap, out_len;
	double sink;			/* keeps results alive */
};

typedef int (*bench_fn)(struct bench *b);

/* Seconds on the monotonic clock. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The codec: data text to floats. */
static int
run_decode(struct bench *b)
{
	int64_t shape[2] = {1, ELEMS};

	return tensor_text_decode(b->data, b->data_len, GRAPH_DT_F32, shape, 2, b->v, ELEMS, NULL, NULL);
}

/* jansson: data text to a tree, then to floats. */
static int
run_jansson(struct bench *b)
{
	json_t *a = json_loadb(b->data, b->data_len, JSON_DECODE_ANY, NULL), *x;
	size_t i;

	if (a == NULL || json_array_size(a) != ELEMS)
		return -1;
	json_array_foreach(a, i, x)
		b->v[i] = (float)json_number_value(x);
	json_decref(a);
	return 0;
}

/* A plain strtof loop over the data text (no validation beyond strtof's). */
static int
run_strtof(struct bench *b)
{
	const char *p = b->data + 1;
	char *end;

	for (size_t i = 0; i < ELEMS; i++, p = end + 1)
		if ((b->v[i] = strtof(p, &end)), end == p)
			return -1;
	return 0;
}

/* The codec: floats to text. */
static int
run_encode(struct bench *b)
{
	return tensor_text_encode(GRAPH_DT_F32, b->v, ELEMS, b->out, b->out_cap, &b->out_len, NULL);
}

/* jansson: floats to a tree to text, as kserve.c prints outputs today. */
static int
run_jansson_dump(struct bench *b)
{
	json_t *a = json_array();
	char *s;

	for (size_t i = 0; i < ELEMS; i++)
		json_array_append_new(a, json_real(b->v[i]));
	s = json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(a);
	if (s == NULL)
		return -1;
	b->out_len = strlen(s);
	free(s);
	return 0;
}

/* snprintf "%.9g" per float. */
static int
run_printf(struct bench *b)
{
	size_t n = 0;

	b->out[n++] = '[';
	for (size_t i = 0; i < ELEMS; i++)
		n += (size_t)snprintf(b->out + n, b->out_cap - n, "%s%.9g", i ? "," : "", b->v[i]);
	b->out[n++] = ']';
	b->out_len = n;
	return 0;
}

/* Whole request, today: jansson parses the body, floats taken from its tree. */
static int
run_body_jansson(struct bench *b)
{
	json_t *root = json_loadb(b->body, b->body_len, JSON_REJECT_DUPLICATES, NULL), *x;
	json_t *a = json_object_get(json_array_get(json_object_get(root, "inputs"), 0), "data");
	size_t i;

	if (json_array_size(a) != ELEMS)
		return json_decref(root), -1;
	json_array_foreach(a, i, x)
		b->v[i] = (float)json_number_value(x);
	json_decref(root);
	return 0;
}

/* Whole request, planned: find the data span, jansson on the masked body, the codec on the span. */
static int
run_body_codec(struct bench *b)
{
	struct tensor_text_span sp[4];
	size_t n, mlen;
	int64_t shape[2] = {1, ELEMS};
	json_t *root;

	if (tensor_text_find_data(b->body, b->body_len, sp, 4, &n, NULL) != 0 || n != 1 ||
	    tensor_text_mask_data(b->body, b->body_len, sp, n, b->out, b->out_cap, &mlen, NULL) != 0 ||
	    (root = json_loadb(b->out, mlen, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		return -1;
	json_decref(root);
	return tensor_text_decode(b->body + sp[0].off, sp[0].len, GRAPH_DT_F32, shape, 2, b->v,
	    ELEMS, NULL, NULL);
}

/* Best MB/s of BENCH_TRIALS runs of fn, together about ms milliseconds; *us: that run's time per call. */
static double
measure(struct bench *b, bench_fn fn, int encode, double ms, double *us)
{
	double best = 0, t0, t;
	long reps = 1, r;

	for (t = 0; t < ms * 1e-3 / BENCH_TRIALS; reps *= 2) {	/* calibrate */
		t0 = now();
		for (r = 0; r < reps; r++)
			if (fn(b) != 0)
				return -1;
		t = now() - t0;
	}
	for (int k = 0; k < BENCH_TRIALS; k++) {
		t0 = now();
		for (r = 0; r < reps; r++)
			fn(b);
		t = (now() - t0) / (double)reps;
		if (best == 0 || t < best)
			best = t;
	}
	b->sink += b->v[ELEMS - 1];
	*us = best * 1e6;
	return (double)(encode ? b->out_len : b->data_len) / best / 1e6;
}

/* Read a whole file into a NUL-terminated buffer; NULL on error. */
static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
		buf[n] = '\0';
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

int
main(int argc, char **argv)
{
	static const struct { const char *name; bench_fn fn; int encode; } runs[] = {
		{"decode  tensor_text_decode", run_decode, 0},
		{"decode  jansson json_loadb + values", run_jansson, 0},
		{"decode  strtof loop", run_strtof, 0},
		{"encode  tensor_text_encode", run_encode, 1},
		{"encode  jansson json_dumps (%.9g)", run_jansson_dump, 1},
		{"encode  snprintf %.9g loop", run_printf, 1},
		{"request jansson whole body", run_body_jansson, 0},
		{"request find + mask + jansson + decode", run_body_codec, 0},
	};
	const char *top = getenv("top_srcdir");
	char path[4096];
	struct bench b = {0};
	struct tensor_text_span sp[4];
	size_t n;
	double ms = argc > 2 ? atof(argv[2]) : 500, us;

	snprintf(path, sizeof path, "%s", argc > 1 ? argv[1] : "");
	if (argc <= 1)
		snprintf(path, sizeof path, "%s/docs/examples/fashion-request.json", top ? top : ".");
	if ((b.body = slurp(path, &b.body_len)) == NULL) {
		perror(path);
		return 1;
	}
	if (tensor_text_find_data(b.body, b.body_len, sp, 4, &n, NULL) != 0 || n < 1 || !sp[0].present) {
		fprintf(stderr, "%s: no inputs[0].data\n", path);
		return 1;
	}
	b.data = b.body + sp[0].off, b.data_len = sp[0].len;
	b.out_cap = TENSOR_TEXT_MASK_BOUND(b.body_len, 4) + tensor_text_encode_bound(GRAPH_DT_F32, ELEMS);
	b.out = malloc(b.out_cap);
	printf("%s: data %zu bytes, %d FP32 values; body %zu bytes\n", path, b.data_len, ELEMS, b.body_len);
	for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
		double mbs = measure(&b, runs[i].fn, runs[i].encode, ms, &us);
		if (mbs < 0) {
			fprintf(stderr, "%s failed\n", runs[i].name);
			return 1;
		}
		printf("%-42s %8.1f MB/s %9.2f us/call\n", runs[i].name, runs[i].fn == run_body_jansson ||
		    runs[i].fn == run_body_codec ? (double)b.body_len / us : mbs, us);
	}
	/* The decoders and the encoder on dense data: k/255 for every pixel, no zero shortcut. */
	char *dense = malloc(tensor_text_encode_bound(GRAPH_DT_F32, ELEMS));
	for (size_t i = 0; i < ELEMS; i++)
		b.v[i] = (float)(i % 254 + 1) / 255.0f;
	if (dense == NULL || tensor_text_encode(GRAPH_DT_F32, b.v, ELEMS, dense,
	    tensor_text_encode_bound(GRAPH_DT_F32, ELEMS), &b.data_len, NULL) != 0)
		return 1;
	b.data = dense;
	printf("dense data (k/255 as printed by the encoder): %zu bytes\n", b.data_len);
	for (size_t i = 0; i < 4; i++) {
		double mbs = measure(&b, runs[i].fn, runs[i].encode, ms, &us);
		printf("%-42s %8.1f MB/s %9.2f us/call\n", runs[i].name, mbs, us);
	}
	free(dense);
	free((void *)b.body);
	free(b.out);
	return b.sink == 12345.0;	/* never: keeps the results observable */
}
