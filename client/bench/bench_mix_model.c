/* bench_mix_model.c: inferd-bench-mix's view of the model — every input and output, from HTTP or shm metadata. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_http_get.h"
#include "bench_mix.h"
#include "error.h"
#include "inferd.h"

/* Bytes of one element of a KServe datatype; 0 when unknown. */
static size_t
mix_datatype_bytes(const char *dt)
{
	static const struct { const char *name; size_t bytes; } types[] = {
		{ "FP32", 4 }, { "FP16", 2 }, { "BF16", 2 }, { "FP64", 8 }, { "INT64", 8 },
		{ "INT32", 4 }, { "INT16", 2 }, { "INT8", 1 }, { "UINT8", 1 }, { "BOOL", 1 },
	};
	size_t i;

	for (i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strcmp(types[i].name, dt) == 0)
			return types[i].bytes;
	return 0;
}

/* One tensor of the metadata's inputs or outputs, its batch dim dropped. */
static int
mix_tensor_json(const json_t *j, struct mix_tensor *t, char **cause)
{
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *dt = json_string_value(json_object_get(j, "datatype"));
	const json_t *shape = json_object_get(j, "shape"), *d;
	size_t i;

	if (name == NULL || dt == NULL || !json_is_array(shape) || json_array_size(shape) < 1 ||
	    json_array_size(shape) > MIX_MAX_DIMS + 1)
		return error_set(cause, "a tensor of the metadata lacks a name, datatype or shape");
	snprintf(t->name, sizeof t->name, "%s", name);
	snprintf(t->datatype, sizeof t->datatype, "%s", dt);
	if ((t->elem_bytes = mix_datatype_bytes(dt)) == 0)
		return error_set(cause, "tensor %s has datatype %s, which inferd-bench-mix does not know",
		    name, dt);
	t->ndims = (int)json_array_size(shape) - 1;
	json_array_foreach(shape, i, d) {
		if (!json_is_integer(d) || json_integer_value(d) < -1)
			return error_set(cause, "tensor %s has a malformed shape", name);
		if (i > 0)
			t->dims[i - 1] = json_integer_value(d);
	}
	return 0;
}

/* The "inputs" or "outputs" list of the metadata into ts[0 .. *n). */
static int
mix_tensors_json(const json_t *root, const char *key, struct mix_tensor *ts, int *n, char **cause)
{
	const json_t *list = json_object_get(root, key), *j;
	size_t i;

	if (!json_is_array(list) || json_array_size(list) == 0 ||
	    json_array_size(list) > MIX_MAX_TENSORS)
		return error_set(cause, "model metadata's %s is not a list of 1 to %d tensors", key,
		    MIX_MAX_TENSORS);
	json_array_foreach(list, i, j)
		if (mix_tensor_json(j, &ts[i], cause) != 0)
			return -1;
	*n = (int)json_array_size(list);
	return 0;
}

/* GET /v2/models/NAME; -1 with *cause. */
int
mix_model_http(const struct httpc_url *u, const char *name, struct mix_model *m, char **cause)
{
	char path[256];
	json_t *root;
	int r;

	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	if (snprintf(path, sizeof path, "/v2/models/%s", name) >= (int)sizeof path)
		return error_set(cause, "model name too long");
	if (bench_http_get_json(u, path, &root, cause) != 0)
		return -1;
	r = mix_tensors_json(root, "inputs", m->in, &m->ninputs, cause);
	if (r == 0)
		r = mix_tensors_json(root, "outputs", m->out, &m->noutputs, cause);
	json_decref(root);
	return r;
}

/* One tensor of libinferd's metadata. */
static int
mix_tensor_info(const struct inferd_tensor_info *ti, struct mix_tensor *t, char **cause)
{
	int d;

	snprintf(t->name, sizeof t->name, "%s", ti->name);
	snprintf(t->datatype, sizeof t->datatype, "%s", ti->datatype);
	if ((t->elem_bytes = mix_datatype_bytes(ti->datatype)) == 0)
		return error_set(cause, "tensor %s has datatype %s, which inferd-bench-mix does not know",
		    ti->name, ti->datatype);
	if (ti->ndims < 0 || ti->ndims > MIX_MAX_DIMS)
		return error_set(cause, "tensor %s has %d dims", ti->name, ti->ndims);
	t->ndims = ti->ndims;
	for (d = 0; d < ti->ndims; d++)
		t->dims[d] = ti->dims[d];
	return 0;
}

/* The same through libinferd's model lookup; -1 with *cause. */
int
mix_model_shm(const char *socket_path, const char *name, struct mix_model *m, char **cause)
{
	const struct inferd_model *im;
	inferd_conn_t *conn;
	int rc, i, r = 0;

	memset(m, 0, sizeof *m);
	if ((rc = inferd_connect(socket_path, NULL, &conn)) != 0)
		return error_set(cause, "%s: %s: %s", socket_path, inferd_strerror(rc),
		    inferd_last_error());
	if ((rc = inferd_model_get(conn, name, &im)) != 0) {
		error_set(cause, "model %s: %s: %s", name, inferd_strerror(rc), inferd_last_error());
		inferd_close(conn);
		return -1;
	}
	snprintf(m->name, sizeof m->name, "%s", im->name);
	if (im->ninputs < 1 || im->ninputs > MIX_MAX_TENSORS || im->noutputs < 1 ||
	    im->noutputs > MIX_MAX_TENSORS)
		r = error_set(cause, "model %s has %d inputs and %d outputs (1 to %d each here)", name,
		    im->ninputs, im->noutputs, MIX_MAX_TENSORS);
	m->ninputs = im->ninputs;
	m->noutputs = im->noutputs;
	for (i = 0; r == 0 && i < im->ninputs; i++)
		r = mix_tensor_info(&im->inputs[i], &m->in[i], cause);
	for (i = 0; r == 0 && i < im->noutputs; i++)
		r = mix_tensor_info(&im->outputs[i], &m->out[i], cause);
	inferd_close(conn);
	return r;
}

/* Element count of tensor t at sequence length len (every variable dim len); 0 if malformed. */
size_t
mix_tensor_elems(const struct mix_tensor *t, int len)
{
	size_t n = 1;
	int d;

	for (d = 0; d < t->ndims; d++) {
		if (t->dims[d] == 0 || t->dims[d] > (1 << 24) || n > ((size_t)1 << 36))
			return 0;
		n *= t->dims[d] < 0 ? (size_t)len : (size_t)t->dims[d];
	}
	return n;
}
