/* model.c: parsing model.json, checking the layer graph against the weights, uploading them. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "safetensors.h"

/* Largest max_batch_size accepted; keeps every buffer size far from overflow. */
#define MODEL_MAX_BATCH 65536
/* Largest row width accepted for inputs, outputs and layers. */
#define MODEL_MAX_WIDTH (1 << 24)

static const struct {
	const char *name;
	enum model_op op;
	enum device_act act;
} model_ops[] = {
	{ "linear", MODEL_OP_LINEAR, DEVICE_ACT_NONE },
	{ "relu", MODEL_OP_ACTIVATION, DEVICE_ACT_RELU },
	{ "gelu", MODEL_OP_ACTIVATION, DEVICE_ACT_GELU },
	{ "sigmoid", MODEL_OP_ACTIVATION, DEVICE_ACT_SIGMOID },
	{ "tanh", MODEL_OP_ACTIVATION, DEVICE_ACT_TANH },
	{ "softmax", MODEL_OP_SOFTMAX, DEVICE_ACT_NONE },
	{ "layernorm", MODEL_OP_LAYERNORM, DEVICE_ACT_NONE },
	{ "identity", MODEL_OP_IDENTITY, DEVICE_ACT_NONE },
};

/* Get an integer member in [lo, hi], or def when absent (def < 0: required). */
static int
model_json_int(json_t *obj, const char *key, long long lo, long long hi,
    long long def, long long *out, char **cause)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL) {
		if (def < 0)
			return error_set(cause, "missing \"%s\"", key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return error_set(cause, "\"%s\" must be an integer in [%lld, %lld]", key, lo, hi);
	*out = json_integer_value(v);
	return 0;
}

/* Copy a string member into buf; required unless def is non-NULL. */
static int
model_json_str(json_t *obj, const char *key, const char *def, char *buf,
    size_t len, char **cause)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	if (v == NULL && def != NULL)
		s = def;
	else if (!json_is_string(v))
		return error_set(cause, "\"%s\" must be a string", key);
	else
		s = json_string_value(v);
	if (strlen(s) == 0 || strlen(s) >= len)
		return error_set(cause, "\"%s\" must be 1 to %zu characters", key, len - 1);
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

/* Parse the one entry of "inputs" or "outputs". */
static int
model_parse_io(json_t *root, const char *key, struct model_io *io, char **cause)
{
	json_t *arr = json_object_get(root, key), *obj, *dims, *d;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) != 1)
		return error_set(cause, "\"%s\" must be an array of exactly one tensor", key);
	obj = json_array_get(arr, 0);
	if (!json_is_object(obj))
		return error_set(cause, "\"%s\"[0] must be an object", key);
	if (model_json_str(obj, "name", NULL, io->name, sizeof io->name, cause) != 0 ||
	    model_json_str(obj, "datatype", NULL, io->datatype, sizeof io->datatype, cause) != 0)
		return error_prefix(cause, "%s[0]", key);
	if (strcmp(io->datatype, "FP32") != 0)
		return error_set(cause, "%s[0] '%s': datatype %s not supported (only FP32)", key, io->name, io->datatype);
	dims = json_object_get(obj, "dims");
	if (!json_is_array(dims) || json_array_size(dims) == 0 || json_array_size(dims) > MODEL_MAX_DIMS)
		return error_set(cause, "%s[0] '%s': \"dims\" must be an array of 1 to %d integers", key, io->name, MODEL_MAX_DIMS);
	io->ndims = (int)json_array_size(dims);
	io->row_elems = 1;
	json_array_foreach(dims, i, d) {
		if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > MODEL_MAX_WIDTH ||
		    io->row_elems * (size_t)json_integer_value(d) > MODEL_MAX_WIDTH)
			return error_set(cause, "%s[0] '%s': dims must be positive and their product at most %d", key, io->name, MODEL_MAX_WIDTH);
		io->dims[i] = json_integer_value(d);
		io->row_elems *= (size_t)io->dims[i];
	}
	return 0;
}

/* Parse "dynamic_batching" (all members optional). */
static int
model_parse_batching(json_t *root, model_t *m, char **cause)
{
	json_t *db = json_object_get(root, "dynamic_batching"), *pref, *v;
	struct model_batching *b = &m->batching;
	long long n;
	size_t i;

	if (db == NULL)
		db = json_object();
	else if (!json_is_object(db))
		return error_set(cause, "\"dynamic_batching\" must be an object");
	else
		json_incref(db);
	if (model_json_int(db, "max_queue_delay_us", 0, 10000000, 100, &n, cause) != 0)
		goto fail;
	b->max_queue_delay_us = (uint64_t)n;
	if (model_json_int(db, "max_queue_size", 1, 1 << 20, 1024, &n, cause) != 0)
		goto fail;
	b->max_queue_size = (size_t)n;
	if (model_json_int(db, "default_timeout_us", 1, 3600LL * 1000000, 30000000, &n, cause) != 0)
		goto fail;
	b->default_timeout_us = (uint64_t)n;
	pref = json_object_get(db, "preferred_batch_sizes");
	if (pref != NULL && (!json_is_array(pref) || json_array_size(pref) > MODEL_MAX_PREFERRED)) {
		error_set(cause, "\"preferred_batch_sizes\" must be an array of at most %d sizes", MODEL_MAX_PREFERRED);
		goto fail;
	}
	json_array_foreach(pref, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > m->max_batch_size) {
			error_set(cause, "preferred_batch_sizes[%zu] must be in [1, max_batch_size]", i);
			goto fail;
		}
		b->preferred[b->npreferred++] = (int)json_integer_value(v);
	}
	json_decref(db);
	return 0;
fail:
	json_decref(db);
	return error_prefix(cause, "dynamic_batching");
}

/* Look up an op by name. */
static int
model_find_op(const char *name, struct model_layer *l)
{
	size_t i;

	for (i = 0; i < sizeof model_ops / sizeof model_ops[0]; i++) {
		if (strcmp(model_ops[i].name, name) == 0) {
			l->op = model_ops[i].op;
			l->act = model_ops[i].act;
			return 0;
		}
	}
	return -1;
}

/* Find tensor key's name in obj, check it is F32 with the expected shape, upload it. */
static int
model_upload_tensor(model_t *m, st_file_t *st, json_t *obj, const char *key,
    int required, int64_t d0, int64_t d1, float **out, char **cause)
{
	json_t *v = json_object_get(obj, key);
	const struct st_tensor *t;
	const char *name;
	int ndim = d1 > 0 ? 2 : 1;

	*out = NULL;
	if (v == NULL && !required)
		return 0;
	if (!json_is_string(v))
		return error_set(cause, "\"%s\" must name a tensor", key);
	name = json_string_value(v);
	t = st_find(st, name);
	if (t == NULL)
		return error_set(cause, "missing tensor '%s' in the weights file", name);
	if (strcmp(t->dtype, "F32") != 0)
		return error_set(cause, "tensor '%s': dtype %s not supported (only F32)", name, t->dtype);
	if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1)) {
		char have[96] = "";
		int i;
		for (i = 0; i < t->ndim; i++)
			snprintf(have + strlen(have), sizeof have - strlen(have), "%s%lld", i ? "," : "", (long long)t->shape[i]);
		if (ndim == 2)
			return error_set(cause, "tensor '%s' has shape [%s], expected [%lld,%lld]", name, have, (long long)d0, (long long)d1);
		return error_set(cause, "tensor '%s' has shape [%s], expected [%lld]", name, have, (long long)d0);
	}
	if (device_alloc(m->dev, t->end - t->begin, (void **)out, cause) != 0)
		return -1;
	return 0;
}

/* Copy every uploaded tensor's bytes to the device, synchronously, at load. */
static int
model_copy_weights(model_t *m, st_file_t *st, json_t *layers, char **cause)
{
	device_stream_t *s;
	json_t *obj;
	size_t i;
	int rc = 0;

	if (device_stream_create(m->dev, DEVICE_STREAM_COPY, &s, cause) != 0)
		return -1;
	json_array_foreach(layers, i, obj) {
		struct model_layer *l = &m->layers[i];
		const char *wkey = l->op == MODEL_OP_LAYERNORM ? "gamma" : "weight";
		const char *bkey = l->op == MODEL_OP_LAYERNORM ? "beta" : "bias";
		const struct st_tensor *t;

		if (l->weight != NULL && (t = st_find(st, json_string_value(json_object_get(obj, wkey)))) != NULL)
			rc |= device_copy_h2d(s, l->weight, st_data(st, t), t->end - t->begin, cause);
		if (l->bias != NULL && (t = st_find(st, json_string_value(json_object_get(obj, bkey)))) != NULL)
			rc |= device_copy_h2d(s, l->bias, st_data(st, t), t->end - t->begin, cause);
	}
	if (rc == 0)
		rc = device_stream_sync(s, cause);
	device_stream_destroy(s);
	return rc;
}

/* Parse one layer, check it against the running width, upload its tensors. */
static int
model_parse_layer(model_t *m, st_file_t *st, json_t *obj, size_t idx,
    int *width, char **cause)
{
	struct model_layer *l = &m->layers[idx];
	const char *op;
	long long out;
	json_t *eps;

	if (!json_is_object(obj))
		return error_set(cause, "layer %zu: not an object", idx);
	snprintf(l->name, sizeof l->name, "%zu", idx);
	if (json_is_string(json_object_get(obj, "name")))
		snprintf(l->name, sizeof l->name, "%s", json_string_value(json_object_get(obj, "name")));
	op = json_string_value(json_object_get(obj, "op"));
	if (op == NULL)
		return error_set(cause, "layer %zu '%s': missing \"op\"", idx, l->name);
	if (model_find_op(op, l) != 0)
		return error_set(cause, "layer %zu '%s': unknown op '%s'", idx, l->name, op);
	l->in = l->out = *width;
	switch (l->op) {
	case MODEL_OP_LINEAR:
		if (!json_is_string(json_object_get(obj, "weight")))
			return error_set(cause, "layer %zu '%s': linear needs \"weight\"", idx, l->name);
		{
			const struct st_tensor *t = st_find(st, json_string_value(json_object_get(obj, "weight")));
			out = (t != NULL && t->ndim == 2) ? t->shape[0] : 0;
		}
		if (out < 1 || out > MODEL_MAX_WIDTH)
			out = 1;	/* the shape check below names the real problem */
		l->out = (int)out;
		if (model_upload_tensor(m, st, obj, "weight", 1, l->out, l->in, &l->weight, cause) != 0 ||
		    model_upload_tensor(m, st, obj, "bias", 0, l->out, 0, &l->bias, cause) != 0)
			return error_prefix(cause, "layer %zu '%s'", idx, l->name);
		break;
	case MODEL_OP_LAYERNORM:
		eps = json_object_get(obj, "eps");
		l->eps = eps == NULL ? 1e-5f : (float)json_number_value(eps);
		if ((eps != NULL && !json_is_number(eps)) || !(l->eps > 0.0f))
			return error_set(cause, "layer %zu '%s': \"eps\" must be a positive number", idx, l->name);
		if (model_upload_tensor(m, st, obj, "gamma", 0, l->in, 0, &l->weight, cause) != 0 ||
		    model_upload_tensor(m, st, obj, "beta", 0, l->in, 0, &l->bias, cause) != 0)
			return error_prefix(cause, "layer %zu '%s'", idx, l->name);
		break;
	default:
		break;
	}
	*width = l->out;
	if (l->out > m->max_width)
		m->max_width = l->out;
	return 0;
}

/* Fuse an activation into the linear layer before it (one kernel instead of two). */
static void
model_fuse_activations(model_t *m)
{
	size_t i;

	for (i = 1; i < m->nlayers; i++) {
		struct model_layer *prev = &m->layers[i - 1], *l = &m->layers[i];
		if (l->op == MODEL_OP_ACTIVATION && prev->op == MODEL_OP_LINEAR &&
		    prev->act == DEVICE_ACT_NONE) {
			prev->act = l->act;
			l->op = MODEL_OP_IDENTITY;
			l->act = DEVICE_ACT_NONE;
		}
	}
	m->last_linear = -1;
	for (i = 0; i < m->nlayers; i++)
		if (m->layers[i].op == MODEL_OP_LINEAR)
			m->last_linear = (int)i;
}

/* Parse "layers", checking each against the weights and the running width. */
static int
model_parse_layers(model_t *m, json_t *root, const char *weights_path, char **cause)
{
	json_t *layers = json_object_get(root, "layers"), *obj;
	st_file_t *st;
	int width = (int)m->input.row_elems, rc = 0;
	size_t i;

	if (!json_is_array(layers) || json_array_size(layers) == 0)
		return error_set(cause, "\"layers\" must be a non-empty array");
	if (st_open(weights_path, &st, cause) != 0)
		return -1;
	m->layers = calloc(json_array_size(layers), sizeof *m->layers);
	if (m->layers == NULL) {
		st_close(st);
		return error_set(cause, "out of memory");
	}
	m->nlayers = json_array_size(layers);
	m->max_width = width;
	json_array_foreach(layers, i, obj) {
		if ((rc = model_parse_layer(m, st, obj, i, &width, cause)) != 0)
			break;
	}
	if (rc == 0 && (size_t)width != m->output.row_elems)
		rc = error_set(cause, "layers produce %d values per row but output '%s' has %zu", width, m->output.name, m->output.row_elems);
	if (rc == 0)
		rc = model_copy_weights(m, st, layers, cause);
	st_close(st);
	if (rc == 0)
		model_fuse_activations(m);
	return rc;
}

/* Parse optional "labels": an array of strings. */
static int
model_parse_labels(model_t *m, json_t *root, char **cause)
{
	json_t *labels = json_object_get(root, "labels"), *v;
	size_t i;

	if (labels == NULL)
		return 0;
	if (!json_is_array(labels))
		return error_set(cause, "\"labels\" must be an array of strings");
	m->labels = calloc(json_array_size(labels) + 1, sizeof *m->labels);
	if (m->labels == NULL)
		return error_set(cause, "out of memory");
	json_array_foreach(labels, i, v) {
		if (!json_is_string(v))
			return error_set(cause, "labels[%zu] must be a string", i);
		if ((m->labels[i] = strdup(json_string_value(v))) == NULL)
			return error_set(cause, "out of memory");
		m->nlabels++;
	}
	return 0;
}

/* Parse the description in root; errors are prefixed by the caller. */
static int
model_parse(model_t *m, json_t *root, char **cause)
{
	char weights[256], *path;
	long long n;
	int rc;

	if (!json_is_object(root))
		return error_set(cause, "not a JSON object");
	if (model_json_str(root, "name", NULL, m->name, sizeof m->name, cause) != 0 ||
	    model_json_int(root, "max_batch_size", 1, MODEL_MAX_BATCH, -1, &n, cause) != 0)
		return -1;
	m->max_batch_size = (int)n;
	if (model_parse_io(root, "inputs", &m->input, cause) != 0 ||
	    model_parse_io(root, "outputs", &m->output, cause) != 0 ||
	    model_parse_batching(root, m, cause) != 0 ||
	    model_parse_labels(m, root, cause) != 0 ||
	    model_json_str(root, "weights", "model.safetensors", weights, sizeof weights, cause) != 0)
		return -1;
	if (strchr(weights, '/') != NULL)
		return error_set(cause, "\"weights\" must be a file name inside the model directory");
	if (asprintf(&path, "%s/%s", m->dir, weights) == -1)
		return error_set(cause, "out of memory");
	rc = model_parse_layers(m, root, path, cause);
	free(path);
	return rc;
}

/* Load dir/model.json and its weights onto dev. */
int
model_load(device_t *dev, const char *dir, model_t **out, char **cause)
{
	json_error_t jerr;
	json_t *root;
	model_t *m;
	char *path;
	int rc = -1;

	m = calloc(1, sizeof *m);
	if (m == NULL || (m->dir = strdup(dir)) == NULL) {
		free(m);
		return error_set(cause, "out of memory");
	}
	m->dev = dev;
	if (asprintf(&path, "%s/model.json", dir) == -1) {
		model_free(m);
		return error_set(cause, "out of memory");
	}
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		error_set(cause, "%s: line %d, column %d: %s", path, jerr.line, jerr.column, jerr.text);
	else if ((rc = model_parse(m, root, cause)) != 0)
		error_prefix(cause, "%s", path);
	json_decref(root);
	free(path);
	if (rc != 0) {
		model_free(m);
		return -1;
	}
	*out = m;
	return 0;
}

/* Free the model. */
void
model_free(model_t *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->nlayers; i++) {
		device_free(m->dev, m->layers[i].weight);
		device_free(m->dev, m->layers[i].bias);
	}
	free(m->layers);
	for (i = 0; i < m->nlabels; i++)
		free(m->labels[i]);
	free(m->labels);
	free(m->dir);
	free(m);
}

/* Input bytes for rows rows. */
size_t
model_input_bytes(const model_t *m, int rows)
{
	return (size_t)rows * m->input.row_elems * sizeof(float);
}

/* Output bytes for rows rows. */
size_t
model_output_bytes(const model_t *m, int rows)
{
	return (size_t)rows * m->output.row_elems * sizeof(float);
}
