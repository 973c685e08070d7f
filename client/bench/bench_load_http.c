/* bench_load_http.c: load over HTTP — model metadata, the KServe body (JSON or binary), the worker, /metrics. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench.h"
#include "bench_http_get.h"
#include "error.h"

/* Every this many responses one is parsed and its output checked (and the first). */
#define BENCH_CHECK_EVERY 256
/* The random floats' seed: the same body every run, JSON or binary. */
#define BENCH_SEED 0x9e3779b97f4a7c15u

/*
 * Product of a metadata shape's dimensions after the batch one, and those
 * dims as ",d1,d2,..." into dims (a request for an image model carries
 * [rows, 3, 224, 224], not a flat row); 0 if malformed.
 */
static size_t
bench_shape_elems(const json_t *shape, char *dims, size_t dims_len)
{
	const json_t *d;
	size_t i, n = 1, used = 0;
	int w;

	if (!json_is_array(shape) || json_array_size(shape) < 2)
		return 0;
	json_array_foreach(shape, i, d) {
		if (i == 0)
			continue;
		if (!json_is_integer(d) || json_integer_value(d) < 1 ||
		    json_integer_value(d) > (1 << 24) || n > ((size_t)1 << 32))
			return 0;
		n *= (size_t)json_integer_value(d);
		w = snprintf(dims + used, dims_len - used, ",%lld", (long long)json_integer_value(d));
		if (w < 0 || (size_t)w >= dims_len - used)
			return 0;
		used += (size_t)w;
	}
	return n;
}

/* Name and row width of inputs[0] or outputs[0] of the metadata. */
static int
bench_tensor_meta(const json_t *root, const char *key, char *name, size_t name_len,
    size_t *elems, char *dims, size_t dims_len, char **cause)
{
	const json_t *t = json_array_get(json_object_get(root, key), 0);
	const char *n = json_string_value(json_object_get(t, "name"));
	const char *dt = json_string_value(json_object_get(t, "datatype"));

	if (n == NULL || dt == NULL)
		return error_set(cause, "model metadata has no %s[0] with a name and datatype", key);
	if (strcmp(dt, "FP32") != 0)
		return error_set(cause, "%s[0] is %s: inferd-bench sends FP32 only", key, dt);
	if ((*elems = bench_shape_elems(json_object_get(t, "shape"), dims, dims_len)) == 0)
		return error_set(cause, "%s[0] has a malformed shape", key);
	snprintf(name, name_len, "%s", n);
	return 0;
}

/* Fetch the model's metadata over HTTP; -1 with *cause. */
int
bench_http_model(const struct httpc_url *u, const char *name,
    struct bench_model *m, char **cause)
{
	char path[256], out_dims[128];
	json_t *root;
	int r;

	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	if (snprintf(path, sizeof path, "/v2/models/%s", name) >= (int)sizeof path)
		return error_set(cause, "model name too long");
	if (bench_http_get_json(u, path, &root, cause) != 0)
		return -1;
	r = bench_tensor_meta(root, "inputs", m->input_name, sizeof m->input_name,
	    &m->input_elems, m->input_dims, sizeof m->input_dims, cause);
	if (r == 0)
		r = bench_tensor_meta(root, "outputs", m->output_name, sizeof m->output_name,
		    &m->output_elems, out_dims, sizeof out_dims, cause);
	json_decref(root);
	return r;
}

/* A growable string. */
struct bench_buf {
	char *s;
	size_t len, cap;
};

/* Append formatted text; -1 when out of memory. */
__attribute__((format(printf, 2, 3))) static int
bench_buf_printf(struct bench_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *ns;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return 0;
		}
		if ((ns = realloc(b->s, b->cap * 2 + (size_t)n + 1)) == NULL)
			return -1;
		b->s = ns;
		b->cap = b->cap * 2 + (size_t)n + 1;
	}
}

/* Make room for n more bytes; -1 when out of memory. */
static int
bench_buf_reserve(struct bench_buf *b, size_t n)
{
	char *ns;

	if (b->cap - b->len >= n)
		return 0;
	if ((ns = realloc(b->s, b->len + n)) == NULL)
		return -1;
	b->s = ns;
	b->cap = b->len + n;
	return 0;
}

/* A float in [0, 1) from a xorshift generator: random, yet the same body every run. */
static float
bench_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (float)(*state >> 40) / (float)(1u << 24);
}

/* The JSON body: rows rows of random floats, printed so that each reads back exactly. */
static int
bench_body_json(struct bench_run *r, struct bench_buf *b)
{
	const struct bench_model *m = &r->model;
	uint64_t state = BENCH_SEED;
	size_t i, n = (size_t)r->set->rows * m->input_elems;
	int bad;

	bad = bench_buf_printf(b, "{\"inputs\":[{\"name\":\"%s\",\"shape\":[%d%s],"
	    "\"datatype\":\"FP32\",\"data\":[", m->input_name, r->set->rows, m->input_dims);
	for (i = 0; i < n && bad == 0; i++)
		bad = bench_buf_printf(b, "%s%.9g", i ? "," : "", (double)bench_random(&state));
	return bad == 0 ? bench_buf_printf(b, "]}]}") : -1;
}

/*
 * The binary body: a JSON header that announces the input's bytes and asks
 * for the output in binary, then the same floats as the JSON body carries,
 * little-endian as the extension has them.
 */
static int
bench_body_binary(struct bench_run *r, struct bench_buf *b)
{
	const struct bench_model *m = &r->model;
	uint64_t state = BENCH_SEED;
	size_t i, n = (size_t)r->set->rows * m->input_elems;
	unsigned char *p;
	uint32_t bits;
	float f;

	if (bench_buf_printf(b, "{\"inputs\":[{\"name\":\"%s\",\"shape\":[%d%s],"
	    "\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":%zu}}],"
	    "\"outputs\":[{\"name\":\"%s\",\"parameters\":{\"binary_data\":true}}]}",
	    m->input_name, r->set->rows, m->input_dims, n * sizeof(float), m->output_name) != 0 ||
	    bench_buf_reserve(b, n * sizeof(float)) != 0)
		return -1;
	r->http_header_len = b->len;
	for (i = 0, p = (unsigned char *)b->s + b->len; i < n; i++, p += 4) {
		f = bench_random(&state);
		memcpy(&bits, &f, sizeof bits);
		p[0] = (unsigned char)bits, p[1] = (unsigned char)(bits >> 8);
		p[2] = (unsigned char)(bits >> 16), p[3] = (unsigned char)(bits >> 24);
	}
	b->len += n * sizeof(float);
	return 0;
}

/* Build the POST for rows rows of random floats, as JSON or (--binary) binary tensors. */
int
bench_http_prepare(struct bench_run *r, char **cause)
{
	struct bench_buf b = { malloc(65536), 0, 65536 };
	char path[256], extra[96];
	int bad;

	if (b.s == NULL)
		return error_set(cause, "out of memory");
	bad = r->set->binary ? bench_body_binary(r, &b) : bench_body_json(r, &b);
	snprintf(path, sizeof path, "/v2/models/%s/infer", r->model.name);
	snprintf(extra, sizeof extra, "Inference-Header-Content-Length: %zu\r\n", r->http_header_len);
	if (bad == 0)
		r->http_request = httpc_build(&r->set->url, "POST", path, r->set->binary ? extra : NULL,
		    r->set->binary ? "application/octet-stream" : "application/json", b.s, b.len,
		    &r->http_request_len);
	r->http_body_len = b.len;
	free(b.s);
	if (bad != 0 || r->http_request == NULL)
		return error_set(cause, "out of memory building the request body");
	return 0;
}

/* outputs[0] of an answer's JSON, checked for name and rows; NULL with *cause. */
static const json_t *
bench_output_tensor(const struct bench_run *r, const json_t *root, char **cause)
{
	const json_t *out = json_array_get(json_object_get(root, "outputs"), 0);
	const char *name = json_string_value(json_object_get(out, "name"));

	if (name == NULL || strcmp(name, r->model.output_name) != 0)
		return error_set(cause, "answer's outputs[0] is not named '%s'", r->model.output_name),
		    NULL;
	if (json_integer_value(json_array_get(json_object_get(out, "shape"), 0)) != r->set->rows)
		return error_set(cause, "answer's shape does not start with %d rows", r->set->rows), NULL;
	return out;
}

/* A JSON answer's output: a flat array (KServe's data is flat, row-major) of rows x width numbers. */
static int
bench_check_json(const json_t *out, size_t want, char **cause)
{
	const json_t *data = json_object_get(out, "data"), *v;
	size_t i;

	if (!json_is_array(data) || json_array_size(data) != want)
		return error_set(cause, "answer's data is not an array of %zu numbers", want);
	json_array_foreach(data, i, v)
		if (!json_is_number(v))
			return error_set(cause, "answer's data element %zu is not a number", i);
	return 0;
}

/* A binary answer's output: announced as want floats, and exactly that many bytes after the header. */
static int
bench_check_binary(const json_t *out, size_t want, size_t raw, char **cause)
{
	const json_t *size = json_object_get(json_object_get(out, "parameters"), "binary_data_size");

	if (json_object_get(out, "data") != NULL)
		return error_set(cause, "binary answer also carries JSON data");
	if (json_integer_value(size) != (json_int_t)(want * sizeof(float)))
		return error_set(cause, "answer's binary_data_size is not %zu", want * sizeof(float));
	if (raw != want * sizeof(float))
		return error_set(cause, "answer has %zu binary bytes, expected %zu", raw,
		    want * sizeof(float));
	return 0;
}

/* The JSON header's length of a binary answer (Inference-Header-Content-Length); -1 with *cause. */
static int
bench_answer_header(const struct httpc_response *a, size_t *hlen, char **cause)
{
	const char *v = httpc_header(a, "Inference-Header-Content-Length", hlen);
	char num[32];

	if (v == NULL)
		return error_set(cause, "binary answer without Inference-Header-Content-Length");
	if (*hlen == 0 || *hlen >= sizeof num || strspn(v, "0123456789") < *hlen)
		return error_set(cause, "bad Inference-Header-Content-Length in the answer");
	memcpy(num, v, *hlen);
	num[*hlen] = '\0';
	*hlen = (size_t)strtoull(num, NULL, 10);
	if (*hlen > a->body_len)
		return error_set(cause, "answer's Inference-Header-Content-Length %zu exceeds its "
		    "%zu-byte body", *hlen, a->body_len);
	return 0;
}

/* Check an answer: its output is named as the model says and holds rows x width values. */
static int
bench_check_output(const struct bench_run *r, const struct httpc_response *a, char **cause)
{
	size_t want = (size_t)r->set->rows * r->model.output_elems, hlen = a->body_len;
	const json_t *out;
	json_error_t jerr;
	json_t *root;
	int rc;

	if (r->set->binary && bench_answer_header(a, &hlen, cause) != 0)
		return -1;
	if ((root = json_loadb(a->body, hlen, 0, &jerr)) == NULL)
		return error_set(cause, "answer is not JSON: %s", jerr.text);
	if ((out = bench_output_tensor(r, root, cause)) == NULL)
		rc = -1;
	else if (r->set->binary)
		rc = bench_check_binary(out, want, a->body_len - hlen, cause);
	else
		rc = bench_check_json(out, want, cause);
	json_decref(root);
	return rc;
}

/* Keep requesting on one connection until told to stop. */
void *
bench_http_worker(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *r = w->run;
	struct httpc_conn c = { .fd = -1 };
	struct httpc_response a;
	char *cause = NULL, what[32];
	uint64_t t0, n;
	int ticket;

	if (httpc_connect(&c, &r->set->url, 0, &cause) != 0) {
		bench_worker_fail(w, cause);
		bench_worker_ready(w);
		return NULL;
	}
	bench_worker_ready(w);
	for (n = 0; bench_begin(r, &ticket) == 0; n++) {
		t0 = bench_now_ns();
		if (httpc_roundtrip(&c, r->http_request, r->http_request_len, &a, &cause) != 0) {
			bench_worker_fail(w, cause);
			break;
		}
		if (bench_counts(r, ticket)) {
			if (a.status != 200) {
				snprintf(what, sizeof what, "HTTP %d", a.status);
				w->errors++;
				bench_worker_refused(w, what, a.body, a.body_len);
				continue;
			}
			bench_hist_add(&w->hist, bench_now_ns() - t0);
			w->requests++;
		}
		if (a.status == 200 && (n == 0 || n % BENCH_CHECK_EVERY == 0)) {
			if (bench_check_output(r, &a, &cause) != 0) {
				bench_worker_fail(w, cause);
				break;
			}
			w->checked++;
		}
	}
	w->reconnects = c.reconnects;
	httpc_close(&c);
	return NULL;
}

/* Read inferd_inference_count and inferd_execution_count of model from GET /metrics. */
int
bench_metrics_read(const struct httpc_url *u, const char *model,
    uint64_t *inference, uint64_t *execution, char **cause)
{
	char *text;
	int r = 0;

	if (bench_http_get_metrics(u, &text, cause) != 0)
		return -1;
	if (bench_metric_value(text, "inferd_inference_count", model, inference) != 0 ||
	    bench_metric_value(text, "inferd_execution_count", model, execution) != 0)
		r = error_set(cause, "GET /metrics has no inferd_inference_count or "
		    "inferd_execution_count for model %s", model);
	free(text);
	return r;
}
