/*
 * inferctl_http.c: inferctl's HTTP half, KServe v2 JSON.
 *
 * No HTTP client library: libcurl is not among the project's dependencies,
 * and these four requests (GETs and one POST, each on its own connection
 * with "Connection: close") need only a request line, two headers and a
 * reader for a Content-Length or chunked body.  The JSON is built and
 * parsed with jansson, as everywhere else in inferd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "inferctl.h"

/* Replies larger than this are refused (the demo's are a few KiB). */
#define CTL_HTTP_MAX_REPLY (256u << 20)
/* Seconds a connection may stall before inferctl gives up. */
#define CTL_HTTP_TIMEOUT_S 30

/* A reply: status and body. */
struct ctl_reply {
	int status;
	char *body;
	size_t len;
};

/* Connect to the server with send/receive timeouts. */
static int
http_dial(const struct ctl_http *h)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct timeval tv = { CTL_HTTP_TIMEOUT_S, 0 };
	int fd = -1, r;

	if ((r = getaddrinfo(h->host, h->port, &hints, &res)) != 0) {
		fprintf(stderr, "inferctl: %s:%s: %s\n", h->host, h->port, gai_strerror(r));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol)) == -1)
			continue;
		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0 &&
		    connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		fprintf(stderr, "inferctl: cannot connect to %s:%s: %s\n", h->host, h->port, strerror(errno));
	return fd;
}

/* Write all of buf. */
static int
http_write(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read until the server closes. */
static char *
http_read_all(int fd, size_t *len)
{
	size_t cap = 65536;
	char *buf = malloc(cap + 1), *grown;
	ssize_t n;

	*len = 0;
	while (buf != NULL) {
		if (*len == cap) {
			if (cap >= CTL_HTTP_MAX_REPLY || (grown = realloc(buf, 2 * cap + 1)) == NULL)
				break;
			buf = grown;
			cap *= 2;
		}
		n = recv(fd, buf + *len, cap - *len, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0) {
			buf[*len] = '\0';
			return buf;
		}
		if (n < 0)
			break;
		*len += (size_t)n;
	}
	free(buf);
	return NULL;
}

/* Decode a chunked body in place; -1 if malformed. */
static int
http_dechunk(char *body, size_t *len)
{
	char *in = body, *end = body + *len, *out = body, *line;
	unsigned long n;

	for (;;) {
		if ((line = memmem(in, (size_t)(end - in), "\r\n", 2)) == NULL)
			return -1;
		errno = 0;
		n = strtoul(in, NULL, 16);
		if (errno != 0 || n > (size_t)(end - line - 2))
			return -1;
		if (n == 0)
			break;
		memmove(out, line + 2, n);
		out += n;
		in = line + 2 + n + 2;
		if (in > end)
			return -1;
	}
	*len = (size_t)(out - body);
	*out = '\0';
	return 0;
}

/* Split a raw reply into status and body. */
static int
http_parse(char *raw, size_t len, struct ctl_reply *r)
{
	char *hdr_end = memmem(raw, len, "\r\n\r\n", 4), *p;
	int chunked = 0;

	if (hdr_end == NULL || sscanf(raw, "HTTP/%*d.%*d %d", &r->status) != 1)
		return -1;
	*hdr_end = '\0';
	for (p = strstr(raw, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, "Transfer-Encoding:", 18) == 0 && strcasestr(p + 20, "chunked") != NULL)
			chunked = 1;
	r->len = len - (size_t)(hdr_end + 4 - raw);
	memmove(raw, hdr_end + 4, r->len);
	raw[r->len] = '\0';
	r->body = raw;
	return chunked ? http_dechunk(r->body, &r->len) : 0;
}

/* One request on its own connection; the reply is malloc'ed into r. */
static int
http_request(const struct ctl_http *h, const char *method, const char *path,
    const char *body, struct ctl_reply *r)
{
	char *head = NULL, *raw;
	size_t blen = body ? strlen(body) : 0, len;
	int fd, n;

	memset(r, 0, sizeof *r);
	if ((fd = http_dial(h)) == -1)
		return -1;
	n = asprintf(&head, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	    method, path, h->host, h->port, blen);
	if (n < 0 || http_write(fd, head, (size_t)n) != 0 || (blen > 0 && http_write(fd, body, blen) != 0)) {
		fprintf(stderr, "inferctl: sending to %s:%s: %s\n", h->host, h->port, strerror(errno));
		free(n < 0 ? NULL : head);
		close(fd);
		return -1;
	}
	free(head);
	raw = http_read_all(fd, &len);
	close(fd);
	if (raw == NULL || http_parse(raw, len, r) != 0) {
		fprintf(stderr, "inferctl: bad or no HTTP reply from %s:%s\n", h->host, h->port);
		free(raw);
		return -1;
	}
	return 0;
}

/* Request and parse a JSON reply with status 200; errors print the server's message. */
static json_t *
http_json(const struct ctl_http *h, const char *method, const char *path, const char *body)
{
	struct ctl_reply r;
	json_error_t err;
	json_t *j;
	const char *msg;

	if (http_request(h, method, path, body, &r) != 0)
		return NULL;
	j = json_loadb(r.body, r.len, 0, &err);
	if (r.status != 200) {
		msg = j ? json_string_value(json_object_get(j, "error")) : NULL;
		fprintf(stderr, "inferctl: %s %s: HTTP %d: %s\n", method, path, r.status,
		    msg ? msg : r.body);
		json_decref(j);
		j = NULL;
	} else if (j == NULL)
		fprintf(stderr, "inferctl: %s %s: bad JSON: %s\n", method, path, err.text);
	free(r.body);
	return j;
}

/* GET /v2/health/ready. */
int
ctl_http_health(const struct ctl_http *h)
{
	json_t *j = http_json(h, "GET", "/v2/health/ready", NULL);

	if (j == NULL)
		return -1;
	json_decref(j);
	printf("ok: http://%s:%s is ready\n", h->host, h->port);
	return 0;
}

/* GET /v2/models: the repository index. */
int
ctl_http_models(const struct ctl_http *h)
{
	json_t *j = http_json(h, "GET", "/v2/models", NULL), *e;
	const char *state;
	size_t i;

	if (j == NULL)
		return -1;
	if (!json_is_array(j)) {
		fprintf(stderr, "inferctl: GET /v2/models: not a JSON array\n");
		json_decref(j);
		return -1;
	}
	json_array_foreach(j, i, e) {
		state = json_string_value(json_object_get(e, "state"));
		if (state == NULL || strcmp(state, "READY") == 0)
			printf("%s\n", json_string_value(json_object_get(e, "name")));
	}
	json_decref(j);
	return 0;
}

/* Read a tensor's "shape" (with -1 first for the batch) into dims. */
static int
http_dims(json_t *t, char *name, size_t namelen, int64_t *dims, int *ndims, size_t *elems)
{
	json_t *shape = json_object_get(t, "shape"), *d;
	const char *n = json_string_value(json_object_get(t, "name"));
	size_t i;

	if (n == NULL || !json_is_array(shape) || json_array_size(shape) < 1 ||
	    json_array_size(shape) > 9)
		return -1;
	snprintf(name, namelen, "%s", n);
	*ndims = 0;
	*elems = 1;
	json_array_foreach(shape, i, d) {
		if (i == 0)
			continue;
		if (!json_is_integer(d) || json_integer_value(d) <= 0)
			return -1;
		dims[(*ndims)++] = json_integer_value(d);
		*elems *= (size_t)json_integer_value(d);
	}
	return 0;
}

/* Labels, when the metadata carries them (as "labels" or parameters.labels). */
static int
http_labels(json_t *j, struct ctl_model *m)
{
	json_t *a = json_object_get(j, "labels"), *e;
	size_t i;

	if (a == NULL)
		a = json_object_get(json_object_get(j, "parameters"), "labels");
	if (!json_is_array(a) || json_array_size(a) == 0)
		return 0;
	if ((m->labels = calloc(json_array_size(a), sizeof *m->labels)) == NULL)
		return -1;
	json_array_foreach(a, i, e) {
		if ((m->labels[i] = strdup(json_is_string(e) ? json_string_value(e) : "")) == NULL)
			return -1;
		m->nlabels = i + 1;
	}
	return 0;
}

/* GET /v2/models/NAME, and max_batch_size from its config when offered. */
int
ctl_http_model(const struct ctl_http *h, const char *name, struct ctl_model *m)
{
	char path[512];
	json_t *j;

	memset(m, 0, sizeof *m);
	snprintf(path, sizeof path, "/v2/models/%s", name);
	if ((j = http_json(h, "GET", path, NULL)) == NULL)
		return -1;
	snprintf(m->name, sizeof m->name, "%s", name);
	if (http_dims(json_array_get(json_object_get(j, "inputs"), 0), m->input_name,
	    sizeof m->input_name, m->in_dims, &m->in_ndims, &m->in_elems) != 0 ||
	    http_dims(json_array_get(json_object_get(j, "outputs"), 0), m->output_name,
	    sizeof m->output_name, m->out_dims, &m->out_ndims, &m->out_elems) != 0 ||
	    http_labels(j, m) != 0) {
		fprintf(stderr, "inferctl: %s: unexpected model metadata\n", path);
		json_decref(j);
		ctl_model_free(m);
		return -1;
	}
	/* KServe metadata has no batch limit: 0 here, and the daemon checks. */
	m->max_batch_size = json_is_integer(json_object_get(j, "max_batch_size")) ?
	    (int)json_integer_value(json_object_get(j, "max_batch_size")) : 0;
	json_decref(j);
	return 0;
}

/* The KServe v2 request body for rows rows of in. */
static char *
http_infer_body(const struct ctl_model *m, int rows, const float *in)
{
	json_t *shape = json_array(), *data = json_array(), *root;
	size_t i, n = (size_t)rows * m->in_elems;
	char *s;
	int k;

	json_array_append_new(shape, json_integer(rows));
	for (k = 0; k < m->in_ndims; k++)
		json_array_append_new(shape, json_integer(m->in_dims[k]));
	for (i = 0; i < n; i++)
		json_array_append_new(data, json_real(in[i]));
	root = json_pack("{s:[{s:s, s:o, s:s, s:o}]}", "inputs", "name", m->input_name,
	    "shape", shape, "datatype", "FP32", "data", data);
	s = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	return s;
}

/* POST /v2/models/NAME/infer and copy the output data into out. */
int
ctl_http_infer(const struct ctl_http *h, const struct ctl_model *m, int rows,
    const float *in, float *out)
{
	char path[512], *body;
	json_t *j, *data, *v;
	size_t i, n = (size_t)rows * m->out_elems;

	if ((body = http_infer_body(m, rows, in)) == NULL) {
		fprintf(stderr, "inferctl: out of memory\n");
		return -1;
	}
	snprintf(path, sizeof path, "/v2/models/%s/infer", m->name);
	j = http_json(h, "POST", path, body);
	free(body);
	if (j == NULL)
		return -1;
	data = json_object_get(json_array_get(json_object_get(j, "outputs"), 0), "data");
	if (!json_is_array(data) || json_array_size(data) != n) {
		fprintf(stderr, "inferctl: %s: the reply has no %zu output values\n", path, n);
		json_decref(j);
		return -1;
	}
	json_array_foreach(data, i, v)
		out[i] = (float)json_number_value(v);
	json_decref(j);
	return 0;
}
