/*
 * inferctl_http.c: inferctl's HTTP half, KServe v2 JSON, each request on
 * its own connection through the clients' minimal HTTP/1.1 client
 * (http_client.h says why it is not a library).  The JSON is built and
 * parsed with jansson, as everywhere else in inferd.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http_client.h"
#include "inferctl.h"

/* Seconds a connection may stall before inferctl gives up. */
#define CTL_HTTP_TIMEOUT_S 30

/* A reply: status and body. */
struct ctl_reply {
	int status;
	char *body;
	size_t len;
};

/* One request on its own connection; the reply is malloc'ed into r. */
static int
http_request(const struct ctl_http *h, const char *method, const char *path,
    const char *body, struct ctl_reply *r)
{
	struct httpc_url u;
	char *cause = NULL;

	memset(r, 0, sizeof *r);
	if (httpc_url_set(&u, h->host, h->port, &cause) != 0 ||
	    httpc_fetch(&u, method, path, "application/json", body, body ? strlen(body) : 0,
	    CTL_HTTP_TIMEOUT_S, &r->status, &r->body, &r->len, &cause) != 0) {
		fprintf(stderr, "inferctl: %s %s on %s:%s: %s\n", method, path, h->host, h->port,
		    cause);
		free(cause);
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

/* max_batch_size and the output's labels from GET /v2/models/NAME/config (Triton's shape). */
static int
http_model_config(const struct ctl_http *h, const char *name, struct ctl_model *m)
{
	json_t *j, *v;
	char path[512];
	int r = 0;

	snprintf(path, sizeof path, "/v2/models/%s/config", name);
	if ((j = http_json(h, "GET", path, NULL)) == NULL)
		return -1;
	v = json_object_get(j, "max_batch_size");
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 1 << 30)
		m->max_batch_size = (int)json_integer_value(v);
	v = json_array_get(json_object_get(j, "output"), 0);
	if (m->nlabels == 0 && json_is_object(v) && http_labels(v, m) != 0) {
		fprintf(stderr, "inferctl: %s: out of memory for the labels\n", path);
		r = -1;
	}
	json_decref(j);
	return r;
}

/* Print one tensor of a configuration as "side: NAME DTYPE [-1, dims]"; -1 when malformed. */
static int
http_print_config_tensor(const char *side, json_t *t, int batch)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const char *type = json_string_value(json_object_get(t, "data_type"));
	json_t *dims = json_object_get(t, "dims"), *d;
	size_t i;

	if (name == NULL || type == NULL || !json_is_array(dims))
		return -1;
	printf("%s: %s %s [%s", side, name, strncmp(type, "TYPE_", 5) == 0 ? type + 5 : type,
	    batch ? "-1" : "");
	json_array_foreach(dims, i, d)
		printf("%s%lld", batch || i > 0 ? ", " : "", (long long)json_integer_value(d));
	printf("]\n");
	return 0;
}

/* Print every tensor of the configuration's side ("input" or "output"); -1 when malformed. */
static int
http_print_config_side(json_t *j, const char *side, int batch)
{
	json_t *a = json_object_get(j, side), *t;
	size_t i;

	if (!json_is_array(a))
		return -1;
	json_array_foreach(a, i, t)
		if (http_print_config_tensor(side, t, batch) != 0)
			return -1;
	return 0;
}

/* `model NAME` over HTTP: GET /v2/models/NAME/config, printed as over shared memory. */
int
ctl_http_print_model(const struct ctl_http *h, const char *name)
{
	struct ctl_model m = { 0 };
	char path[512];
	json_t *j, *v;
	int batch, r = -1;
	size_t i;

	snprintf(path, sizeof path, "/v2/models/%s/config", name);
	if ((j = http_json(h, "GET", path, NULL)) == NULL)
		return -1;
	v = json_object_get(j, "max_batch_size");
	batch = json_is_integer(v) && json_integer_value(v) > 0;
	printf("name: %s\n", name);
	if (batch)
		printf("max_batch_size: %lld\n", (long long)json_integer_value(v));
	if (http_print_config_side(j, "input", batch) != 0 || http_print_config_side(j, "output", batch) != 0)
		fprintf(stderr, "inferctl: %s: unexpected model configuration\n", path);
	else if (http_labels(json_array_get(json_object_get(j, "output"), 0), &m) != 0)
		fprintf(stderr, "inferctl: %s: out of memory for the labels\n", path);
	else
		r = 0;
	if (r == 0 && m.nlabels > 0) {
		printf("labels:");
		for (i = 0; i < m.nlabels; i++)
			printf(" %zu=\"%s\"", i, m.labels[i]);
		printf("\n");
	}
	ctl_model_free(&m);
	json_decref(j);
	return r;
}

/* GET /v2/models/NAME, then max_batch_size and labels from its configuration. */
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
	json_decref(j);
	/* KServe metadata has no batch limit and no labels: Triton's configuration has them. */
	if (http_model_config(h, name, m) != 0) {
		ctl_model_free(m);
		return -1;
	}
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

/* A model name that can go into a URL path as it is (no escaping: the daemon's names are directory names). */
static int
http_name_ok(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;

	if (*p == '\0' || *p == '.') {
		fprintf(stderr, "inferctl: '%s' is not a model name\n", name);
		return 0;
	}
	for (; *p != '\0'; p++)
		if (*p <= ' ' || *p >= 0x7f || strchr("/?#%\\\"", *p) != NULL) {
			fprintf(stderr, "inferctl: model name '%s' has a character a URL path cannot carry as is\n", name);
			return 0;
		}
	return 1;
}

/* POST path with body; any 2xx is success, otherwise the server's message is printed. */
static int
http_post_ok(const struct ctl_http *h, const char *path, const char *body)
{
	struct ctl_reply r;
	const char *msg;
	json_t *j;

	if (http_request(h, "POST", path, body, &r) != 0)
		return -1;
	if (r.status >= 200 && r.status < 300) {
		free(r.body);
		return 0;
	}
	j = json_loadb(r.body, r.len, 0, NULL);
	msg = j ? json_string_value(json_object_get(j, "error")) : NULL;
	fprintf(stderr, "inferctl: POST %s: HTTP %d: %s\n", path, r.status, msg ? msg : r.body);
	json_decref(j);
	free(r.body);
	return -1;
}

/* The load request's body: {} or {"parameters": {"config": "<config text>"}}. */
static char *
http_load_body(const char *config)
{
	json_t *root = config == NULL ? json_object() :
	    json_pack("{s:{s:s}}", "parameters", "config", config);
	char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;

	json_decref(root);
	return s;
}

/* POST /v2/repository/models/NAME/load, with config (a JSON object text) when not NULL. */
int
ctl_http_load(const struct ctl_http *h, const char *name, const char *config, const char *verb)
{
	char path[512], *body;
	int r;

	if (!http_name_ok(name))
		return -1;
	if ((body = http_load_body(config)) == NULL) {
		fprintf(stderr, "inferctl: out of memory\n");
		return -1;
	}
	snprintf(path, sizeof path, "/v2/repository/models/%s/load", name);
	r = http_post_ok(h, path, body);
	free(body);
	if (r == 0)
		printf("%s %s\n", verb, name);
	return r;
}

/* POST /v2/repository/models/NAME/unload. */
int
ctl_http_unload(const struct ctl_http *h, const char *name)
{
	char path[512];

	if (!http_name_ok(name))
		return -1;
	snprintf(path, sizeof path, "/v2/repository/models/%s/unload", name);
	if (http_post_ok(h, path, "{}") != 0)
		return -1;
	printf("unloaded %s\n", name);
	return 0;
}

/* A member of an index entry as text: a string as is, a number printed, absent or empty "-". */
static const char *
http_index_field(json_t *e, const char *key, char *buf, size_t len)
{
	json_t *v = json_object_get(e, key);

	if (json_is_string(v) && json_string_length(v) > 0)
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
		return buf;
	}
	return "-";
}

/* POST /v2/repository/index: one line per model version: name, version, state, reason. */
int
ctl_http_index(const struct ctl_http *h)
{
	json_t *j = http_json(h, "POST", "/v2/repository/index", "{}"), *e;
	char version[32];
	size_t i;

	if (j == NULL)
		return -1;
	if (!json_is_array(j)) {
		fprintf(stderr, "inferctl: POST /v2/repository/index: not a JSON array\n");
		json_decref(j);
		return -1;
	}
	printf("%-24s %-8s %-12s %s\n", "NAME", "VERSION", "STATE", "REASON");
	json_array_foreach(j, i, e)
		printf("%-24s %-8s %-12s %s\n", http_index_field(e, "name", NULL, 0),
		    http_index_field(e, "version", version, sizeof version), http_index_field(e, "state", NULL, 0),
		    http_index_field(e, "reason", NULL, 0));
	json_decref(j);
	return 0;
}
