/* bench_load_http.c: load over HTTP — model metadata, the KServe JSON body, the worker, /metrics. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench.h"
#include "error.h"

/* Every this many responses one is parsed and its output checked (and the first). */
#define BENCH_CHECK_EVERY 256

/* Product of a metadata shape's dimensions after the batch one; 0 if malformed. */
static size_t
bench_shape_elems(const json_t *shape)
{
	const json_t *d;
	size_t i, n = 1;

	if (!json_is_array(shape) || json_array_size(shape) < 2)
		return 0;
	json_array_foreach(shape, i, d) {
		if (i == 0)
			continue;
		if (!json_is_integer(d) || json_integer_value(d) < 1 ||
		    json_integer_value(d) > (1 << 24) || n > ((size_t)1 << 32))
			return 0;
		n *= (size_t)json_integer_value(d);
	}
	return n;
}

/* Name and row width of inputs[0] or outputs[0] of the metadata. */
static int
bench_tensor_meta(const json_t *root, const char *key, char *name, size_t name_len,
    size_t *elems, char **cause)
{
	const json_t *t = json_array_get(json_object_get(root, key), 0);
	const char *n = json_string_value(json_object_get(t, "name"));
	const char *dt = json_string_value(json_object_get(t, "datatype"));

	if (n == NULL || dt == NULL)
		return error_set(cause, "model metadata has no %s[0] with a name and datatype", key);
	if (strcmp(dt, "FP32") != 0)
		return error_set(cause, "%s[0] is %s: inferd-bench sends FP32 only", key, dt);
	if ((*elems = bench_shape_elems(json_object_get(t, "shape"))) == 0)
		return error_set(cause, "%s[0] has a malformed shape", key);
	snprintf(name, name_len, "%s", n);
	return 0;
}

/* Fetch the model's metadata over HTTP; -1 with *cause. */
int
bench_http_model(const struct bench_url *u, const char *name,
    struct bench_model *m, char **cause)
{
	char path[256], *body;
	json_error_t jerr;
	json_t *root;
	size_t len;
	int status, r;

	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	if (snprintf(path, sizeof path, "/v2/models/%s", name) >= (int)sizeof path)
		return error_set(cause, "model name too long");
	if (bench_http_get(u, path, &status, &body, &len, cause) != 0)
		return -1;
	if (status != 200) {
		error_set(cause, "GET %s: status %d: %.200s", path, status, body);
		free(body);
		return -1;
	}
	root = json_loadb(body, len, 0, &jerr);
	free(body);
	if (root == NULL)
		return error_set(cause, "GET %s: bad JSON: %s", path, jerr.text);
	r = bench_tensor_meta(root, "inputs", m->input_name, sizeof m->input_name,
	    &m->input_elems, cause);
	if (r == 0)
		r = bench_tensor_meta(root, "outputs", m->output_name, sizeof m->output_name,
		    &m->output_elems, cause);
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

/* A float in [0, 1) from a xorshift generator: random, yet the same body every run. */
static float
bench_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (float)(*state >> 40) / (float)(1u << 24);
}

/* Build the KServe JSON body's POST for rows rows of random floats. */
int
bench_http_prepare(struct bench_run *r, char **cause)
{
	const struct bench_model *m = &r->model;
	struct bench_buf b = { malloc(65536), 0, 65536 };
	uint64_t state = 0x9e3779b97f4a7c15u;
	size_t i, n = (size_t)r->set->rows * m->input_elems;
	char path[256];
	int bad;

	if (b.s == NULL)
		return error_set(cause, "out of memory");
	bad = bench_buf_printf(&b, "{\"inputs\":[{\"name\":\"%s\",\"shape\":[%d,%zu],"
	    "\"datatype\":\"FP32\",\"data\":[", m->input_name, r->set->rows, m->input_elems);
	for (i = 0; i < n && bad == 0; i++)
		bad = bench_buf_printf(&b, "%s%.9g", i ? "," : "", (double)bench_random(&state));
	if (bad == 0)
		bad = bench_buf_printf(&b, "]}]}");
	snprintf(path, sizeof path, "/v2/models/%s/infer", m->name);
	if (bad == 0)
		r->http_request = bench_http_build(&r->set->url, "POST", path, b.s, b.len,
		    &r->http_request_len);
	r->http_body_len = b.len;
	free(b.s);
	if (bad != 0 || r->http_request == NULL)
		return error_set(cause, "out of memory building the request body");
	return 0;
}

/* Count the numbers of a (possibly nested) JSON array; -1 if anything else is in it. */
static long
bench_count_numbers(const json_t *a, int depth)
{
	const json_t *v;
	size_t i;
	long n = 0, k;

	if (depth > 8)
		return -1;
	json_array_foreach(a, i, v) {
		if (json_is_number(v))
			n++;
		else if (json_is_array(v) && (k = bench_count_numbers(v, depth + 1)) >= 0)
			n += k;
		else
			return -1;
	}
	return n;
}

/* Check an answer: its output tensor is named as the model says and holds rows x width numbers. */
static int
bench_check_output(const struct bench_run *r, const char *body, size_t len, char **cause)
{
	const json_t *out, *shape;
	json_error_t jerr;
	json_t *root;
	long want = (long)((size_t)r->set->rows * r->model.output_elems), got;
	const char *name;

	if ((root = json_loadb(body, len, 0, &jerr)) == NULL)
		return error_set(cause, "answer is not JSON: %s", jerr.text);
	out = json_array_get(json_object_get(root, "outputs"), 0);
	name = json_string_value(json_object_get(out, "name"));
	shape = json_object_get(out, "shape");
	got = bench_count_numbers(json_object_get(out, "data"), 0);
	if (name == NULL || strcmp(name, r->model.output_name) != 0)
		error_set(cause, "answer's outputs[0] is not named '%s'", r->model.output_name);
	else if (json_integer_value(json_array_get(shape, 0)) != r->set->rows)
		error_set(cause, "answer's shape does not start with %d rows", r->set->rows);
	else if (got != want)
		error_set(cause, "answer has %ld numbers, expected %ld", got, want);
	else {
		json_decref(root);
		return 0;
	}
	json_decref(root);
	return -1;
}

/* Keep requesting on one connection until told to stop. */
void *
bench_http_worker(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *r = w->run;
	struct bench_http c = { .fd = -1 };
	const char *body;
	char *cause = NULL, what[32];
	size_t len;
	uint64_t t0, n;
	int status, ticket;

	if (bench_http_connect(&c, &r->set->url, &cause) != 0) {
		bench_worker_fail(w, cause);
		bench_worker_ready(w);
		return NULL;
	}
	bench_worker_ready(w);
	for (n = 0; bench_begin(r, &ticket) == 0; n++) {
		t0 = bench_now_ns();
		if (bench_http_roundtrip(&c, r->http_request, r->http_request_len, &status,
		    &body, &len, &cause) != 0) {
			bench_worker_fail(w, cause);
			break;
		}
		if (bench_counts(r, ticket)) {
			if (status != 200) {
				snprintf(what, sizeof what, "HTTP %d", status);
				w->errors++;
				bench_worker_refused(w, what, body, len);
				continue;
			}
			bench_hist_add(&w->hist, bench_now_ns() - t0);
			w->requests++;
		}
		if (status == 200 && (n == 0 || n % BENCH_CHECK_EVERY == 0)) {
			if (bench_check_output(r, body, len, &cause) != 0) {
				bench_worker_fail(w, cause);
				break;
			}
			w->checked++;
		}
	}
	w->reconnects = c.reconnects;
	bench_http_close(&c);
	return NULL;
}

/* Find "NAME{model="M"} VALUE" at the start of a line of the exposition text. */
static int
bench_metric_value(const char *text, const char *name, const char *model, uint64_t *v)
{
	char key[512];
	const char *p = text;
	size_t klen;

	if (snprintf(key, sizeof key, "%s{model=\"%s\"} ", name, model) >= (int)sizeof key)
		return -1;
	klen = strlen(key);
	for (; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen) == 0) {
			*v = strtoull(p + klen, NULL, 10);
			return 0;
		}
	}
	return -1;
}

/* Read inferd_inference_count and inferd_execution_count of model from GET /metrics. */
int
bench_metrics_read(const struct bench_url *u, const char *model,
    uint64_t *inference, uint64_t *execution, char **cause)
{
	char *body;
	size_t len;
	int status, r = 0;

	if (bench_http_get(u, "/metrics", &status, &body, &len, cause) != 0)
		return error_prefix(cause, "GET /metrics");
	if (status != 200)
		r = error_set(cause, "GET /metrics: status %d", status);
	else if (bench_metric_value(body, "inferd_inference_count", model, inference) != 0 ||
	    bench_metric_value(body, "inferd_execution_count", model, execution) != 0)
		r = error_set(cause, "GET /metrics has no inferd_inference_count or "
		    "inferd_execution_count for model %s", model);
	free(body);
	return r;
}
