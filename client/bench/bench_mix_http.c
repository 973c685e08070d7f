/*
 * bench_mix_http.c: inferd-bench-mix over HTTP/1.1 keep-alive with KServe's
 * binary tensor extension — every input sent as raw bytes, every output asked
 * for so — and the serial replay of the kept answers for --check.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_mix.h"
#include "error.h"

/* Room for the JSON header of a request: names are at most 127 bytes each. */
#define MIX_HEADER_MAX (MIX_MAX_TENSORS * 2 * 256 + 256)

/* A worker's request buffer: the JSON header, then every input's bytes. */
struct mix_http_buf {
	char *buf;
	size_t cap;
	char path[200];
};

/* Allocate a buffer large enough for a request of the longest length. */
static int
mix_http_buf_init(struct mix_http_buf *b, const struct mix_run *r, char **cause)
{
	const struct mix_model *m = &r->model;
	int i;

	b->cap = MIX_HEADER_MAX;
	for (i = 0; i < m->ninputs; i++)
		b->cap += mix_tensor_elems(&m->in[i], r->set->len_hi) * m->in[i].elem_bytes;
	snprintf(b->path, sizeof b->path, "/v2/models/%s/infer", m->name);
	if ((b->buf = malloc(b->cap)) == NULL)
		return error_set(cause, "out of memory for a %zu-byte request", b->cap);
	return 0;
}

/* The shape of input t at length len as JSON text, batch dim 1 first. */
static void
mix_http_shape(const struct mix_tensor *t, int len, char *s, size_t n)
{
	size_t off = (size_t)snprintf(s, n, "[1");
	int d;

	for (d = 0; d < t->ndims && off < n; d++)
		off += (size_t)snprintf(s + off, n - off, ",%" PRId64, t->dims[d] < 0 ? (int64_t)len :
		    t->dims[d]);
	if (off < n)
		snprintf(s + off, n - off, "]");
}

/* Write request q into b: the header, then the inputs' bytes; the body's length, 0 if too long. */
static size_t
mix_http_body(const struct mix_run *r, const struct mix_req *q, struct mix_http_buf *b,
    size_t *hlen)
{
	const struct mix_model *m = &r->model;
	size_t off, elems[MIX_MAX_TENSORS];
	char shape[160];
	int i;

	off = (size_t)snprintf(b->buf, MIX_HEADER_MAX, "{\"inputs\":[");
	for (i = 0; i < m->ninputs && off < MIX_HEADER_MAX; i++) {
		elems[i] = mix_tensor_elems(&m->in[i], q->len);
		mix_http_shape(&m->in[i], q->len, shape, sizeof shape);
		off += (size_t)snprintf(b->buf + off, MIX_HEADER_MAX - off, "%s{\"name\":\"%s\",\"shape\":%s,"
		    "\"datatype\":\"%s\",\"parameters\":{\"binary_data_size\":%zu}}", i ? "," : "",
		    m->in[i].name, shape, m->in[i].datatype, elems[i] * m->in[i].elem_bytes);
	}
	for (i = 0; i < m->noutputs && off < MIX_HEADER_MAX; i++)
		off += (size_t)snprintf(b->buf + off, MIX_HEADER_MAX - off, "%s{\"name\":\"%s\","
		    "\"parameters\":{\"binary_data\":true}}", i ? "," : "],\"outputs\":[", m->out[i].name);
	if (off < MIX_HEADER_MAX)
		off += (size_t)snprintf(b->buf + off, MIX_HEADER_MAX - off, "]}");
	if (off >= MIX_HEADER_MAX)
		return 0;
	*hlen = off;
	for (i = 0; i < m->ninputs; i++) {
		mix_input_fill(&m->in[i], q, i, r->set->vocab, b->buf + off, elems[i]);
		off += elems[i] * m->in[i].elem_bytes;
	}
	return off;
}

/* Send request q on c and read its answer into *a; -1 with *cause on a transport error. */
static int
mix_http_send(struct httpc_conn *c, const struct mix_run *r, const struct mix_req *q,
    struct mix_http_buf *b, struct httpc_response *a, char **cause)
{
	size_t hlen = 0, blen = mix_http_body(r, q, b, &hlen), len;
	char extra[96], *req;
	int rc;

	if (blen == 0)
		return error_set(cause, "the model's tensor names make too long a request header");
	snprintf(extra, sizeof extra, "Inference-Header-Content-Length: %zu\r\n", hlen);
	if ((req = httpc_build(c->url, "POST", b->path, extra, "application/octet-stream", b->buf,
	    blen, &len)) == NULL)
		return error_set(cause, "out of memory building a request");
	rc = httpc_roundtrip(c, req, len, a, cause);
	free(req);
	return rc;
}

/* The index of the model's output called name; -1 when none. */
static int
mix_output_index(const struct mix_model *m, const char *name)
{
	int i;

	for (i = 0; name != NULL && i < m->noutputs; i++)
		if (strcmp(m->out[i].name, name) == 0)
			return i;
	return -1;
}

/* The JSON header's length of a binary answer; -1 with *cause. */
static int
mix_http_hlen(const struct httpc_response *a, size_t *hlen, char **cause)
{
	const char *v = httpc_header(a, "Inference-Header-Content-Length", hlen);
	char num[32];

	if (v == NULL || *hlen == 0 || *hlen >= sizeof num || strspn(v, "0123456789") < *hlen)
		return error_set(cause, "answer without a valid Inference-Header-Content-Length");
	memcpy(num, v, *hlen);
	num[*hlen] = '\0';
	*hlen = (size_t)strtoull(num, NULL, 10);
	if (*hlen > a->body_len)
		return error_set(cause, "answer's header length %zu exceeds its %zu-byte body", *hlen,
		    a->body_len);
	return 0;
}

/*
 * Split an answer into every output's bytes, in the model's order: each
 * output once, batch dim 1, binary sizes adding up to the body.  -1 with *cause.
 */
static int
mix_http_outputs(const struct mix_run *r, const struct httpc_response *a,
    const unsigned char **bytes, size_t *nbytes, char **cause)
{
	const json_t *outs, *o;
	json_error_t jerr;
	json_t *root;
	size_t hlen, i, off, size;
	int k, rc = 0;

	if (mix_http_hlen(a, &hlen, cause) != 0)
		return -1;
	if ((root = json_loadb(a->body, hlen, 0, &jerr)) == NULL)
		return error_set(cause, "answer's header is not JSON: %s", jerr.text);
	outs = json_object_get(root, "outputs");
	if (json_array_size(outs) != (size_t)r->model.noutputs)
		rc = error_set(cause, "answer has %zu outputs, %d asked", json_array_size(outs),
		    r->model.noutputs);
	memset(nbytes, 0, MIX_MAX_TENSORS * sizeof *nbytes);
	off = hlen;
	json_array_foreach(outs, i, o) {
		if (rc != 0)
			break;
		k = mix_output_index(&r->model, json_string_value(json_object_get(o, "name")));
		size = (size_t)json_integer_value(json_object_get(json_object_get(o, "parameters"),
		    "binary_data_size"));
		if (k < 0 || bytes[k] != NULL)
			rc = error_set(cause, "answer's output %zu is not one asked for, once", i);
		else if (json_integer_value(json_array_get(json_object_get(o, "shape"), 0)) != 1)
			rc = error_set(cause, "answer's output %s does not have batch dim 1", r->model.out[k].name);
		else if (size > a->body_len - off)
			rc = error_set(cause, "answer's output %s overruns the body", r->model.out[k].name);
		else {
			bytes[k] = (const unsigned char *)a->body + off;
			nbytes[k] = size;
			off += size;
		}
	}
	if (rc == 0 && off != a->body_len)
		rc = error_set(cause, "answer has %zu bytes after its outputs", a->body_len - off);
	json_decref(root);
	return rc;
}

/* Count one answer of request q: a refusal by status, or an answer checked and maybe kept. */
static int
mix_http_answer(struct mix_worker *w, const struct mix_req *q, const struct httpc_response *a,
    uint64_t ns, int measured, char **cause)
{
	const struct mix_run *r = w->run;
	const unsigned char *bytes[MIX_MAX_TENSORS] = { NULL };
	size_t nbytes[MIX_MAX_TENSORS];

	if (a->status != 200) {
		if (measured)
			mix_kinds_add(&w->refused, a->status, a->body, a->body_len);
		else
			w->refused_outside++;
		return 0;
	}
	if (mix_http_outputs(r, a, bytes, nbytes, cause) != 0)
		return error_prefix(cause, "request of length %d", q->len);
	mix_worker_answered(w, q->len, ns, measured);
	if (r->set->check && (w->answers == 0 || w->answers % 64 == 0))
		mix_sample_keep(w, q, bytes, nbytes, r->model.noutputs);
	w->answers++;
	return 0;
}

/* One client: requests back to back on one keep-alive connection until told to stop. */
void *
mix_http_worker(void *arg)
{
	struct mix_worker *w = arg;
	struct mix_run *r = w->run;
	struct httpc_conn c = { .fd = -1 };
	struct mix_http_buf b = { NULL, 0, "" };
	struct httpc_response a;
	struct mix_req q;
	char *cause = NULL;
	uint64_t t0, ns;
	int measured;

	if (mix_http_buf_init(&b, r, &cause) != 0 || httpc_connect(&c, &r->set->url, 60, &cause) != 0) {
		mix_worker_fail(w, cause);
		mix_worker_ready(w);
		free(b.buf);
		return NULL;
	}
	mix_worker_ready(w);
	while (__atomic_load_n(&r->phase, __ATOMIC_ACQUIRE) != BENCH_PHASE_STOP) {
		q = mix_req_draw(&w->rng, r->set->len_lo, r->set->len_hi);
		measured = mix_measuring(r);
		t0 = bench_now_ns();
		if (mix_http_send(&c, r, &q, &b, &a, &cause) != 0) {
			mix_worker_fail(w, cause);
			break;
		}
		ns = bench_now_ns() - t0;
		measured = measured && mix_measuring(r);
		w->sent += measured;
		if (mix_http_answer(w, &q, &a, ns, measured, &cause) != 0) {
			mix_worker_fail(w, cause);
			break;
		}
	}
	httpc_close(&c);
	free(b.buf);
	return NULL;
}

/* Run sample s again alone on c and compare every output with the answer under load. */
static int
mix_http_check_one(const struct mix_run *r, struct httpc_conn *c, struct mix_http_buf *b,
    const struct mix_sample *s, struct mix_result *res, char **cause)
{
	const unsigned char *bytes[MIX_MAX_TENSORS] = { NULL };
	size_t nbytes[MIX_MAX_TENSORS];
	struct httpc_response a;

	if (mix_http_send(c, r, &s->req, b, &a, cause) != 0)
		return -1;
	if (a.status != 200)
		return error_set(cause, "status %d: %.200s", a.status, a.body);
	if (mix_http_outputs(r, &a, bytes, nbytes, cause) != 0)
		return -1;
	return mix_sample_compare(&r->model, s, bytes, nbytes, res, cause);
}

/* Run the samples again one at a time on one connection, comparing; -1 with *cause. */
int
mix_http_check(struct mix_run *r, struct mix_worker *w, int nw, struct mix_result *res,
    char **cause)
{
	struct httpc_conn c = { .fd = -1 };
	struct mix_http_buf b = { NULL, 0, "" };
	int i, j, rc = 0;

	if (mix_http_buf_init(&b, r, cause) != 0)
		return -1;
	if (httpc_connect(&c, &r->set->url, 60, cause) != 0) {
		free(b.buf);
		return -1;
	}
	for (i = 0; i < nw && rc == 0; i++)
		for (j = 0; j < w[i].nsamples && rc == 0; j++)
			if (mix_http_check_one(r, &c, &b, &w[i].samples[j], res, cause) != 0)
				rc = error_prefix(cause, "--check, request of length %d run alone",
				    w[i].samples[j].req.len);
	httpc_close(&c);
	free(b.buf);
	return rc;
}
