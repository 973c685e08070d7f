/* model_config.c: model.json's serving settings: batching, labels, and the ONNX keys (max_dims, rename, plan_cache). */
#include "config.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "file_copy.h"
#include "model.h"
#include "model_config.h"
#include "model_impl.h"

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
	v = json_object_get(db, "eager_dispatch");
	if (v != NULL && !json_is_boolean(v)) {
		error_set(cause, "\"eager_dispatch\" must be true or false");
		goto fail;
	}
	b->eager_dispatch = v == NULL || json_is_true(v);
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
	m->labels = xcalloc(json_array_size(labels) + 1, sizeof *m->labels);
	if (m->labels == NULL)
		return error_set(cause, "out of memory");
	json_array_foreach(labels, i, v) {
		if (!json_is_string(v))
			return error_set(cause, "labels[%zu] must be a string", i);
		if ((m->labels[i] = xstrdup(json_string_value(v))) == NULL)
			return error_set(cause, "out of memory");
		m->nlabels++;
	}
	return 0;
}

/* "dynamic_batching", "labels", "warmup", "instance_group" and "padding" into m. */
int
model_config_serving(model_t *m, json_t *root, char **cause)
{
	if (model_parse_batching(root, m, cause) != 0 || model_parse_labels(m, root, cause) != 0 ||
	    model_config_warmup(m, root, cause) != 0 || model_config_instances(m, root, cause) != 0 ||
	    model_config_padding(m, root, cause) != 0)
		return -1;
	return 0;
}

/* The keys an ONNX model's model.json may have. */
static const char *const model_onnx_keys[] = {
	"name", "platform", "max_batch_size", "dynamic_batching", "labels", "max_dims", "rename", "plan_cache",
	"description", "inputs", "outputs", "precision", "version_policy", "warmup", "instance_group",
	"padding", "batch_invariant",
};

/* Refuse a key outside model_onnx_keys (a misspelt setting would otherwise be ignored silently). */
static int
model_config_keys(json_t *root, char **cause)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(root, key, v) {
		for (i = 0; i < sizeof model_onnx_keys / sizeof model_onnx_keys[0]; i++)
			if (strcmp(key, model_onnx_keys[i]) == 0)
				break;
		if (i == sizeof model_onnx_keys / sizeof model_onnx_keys[0])
			return error_set(cause, "unknown key \"%s\"", key);
	}
	return 0;
}

/* "precision": "fp32" (default, strict), "tf32", "fp16" or "bf16": how a GPU backend computes the graph. */
static int
model_config_precision(model_t *m, json_t *root, char **cause)
{
	json_t *v = json_object_get(root, "precision");

	if (v == NULL)
		return 0;
	if (!json_is_string(v) || graph_precision_parse(json_string_value(v), &m->precision) != 0)
		return error_set(cause, "\"precision\" must be \"fp32\", \"tf32\", \"fp16\" or \"bf16\"");
	return 0;
}

/*
 * "batch_invariant": true (default) or false: whether a request's answer may
 * depend on the requests batched with it, through reduced-precision GEMMs
 * whose cuBLAS choice splits K for some batch sizes (false: fastest per batch).
 */
static int
model_config_invariant(model_t *m, json_t *root, char **cause)
{
	json_t *v = json_object_get(root, "batch_invariant");

	if (v != NULL && !json_is_boolean(v))
		return error_set(cause, "\"batch_invariant\" must be true or false");
	m->batch_invariant = v == NULL || json_is_true(v);
	return 0;
}

/* ONNX model.json (root may be NULL): platform, name, max_batch_size, plan_cache, precision, batching, labels. */
int
model_config_onnx(model_t *m, json_t *root, int has_batch, char **cause)
{
	json_t *empty = NULL;
	const char *platform, *name;
	long long n;
	int rc = -1;

	if (root == NULL)
		root = empty = json_object();
	if (root == NULL)
		return error_set(cause, "out of memory");
	platform = json_string_value(json_object_get(root, "platform"));
	name = json_string_value(json_object_get(root, "name"));
	if (model_config_keys(root, cause) != 0)
		goto out;
	if (json_object_get(root, "platform") != NULL && (platform == NULL || strcmp(platform, "onnx") != 0)) {
		error_set(cause, "\"platform\" must be \"onnx\" next to model.onnx");
		goto out;
	}
	if (json_object_get(root, "name") != NULL && (name == NULL || strcmp(name, m->name) != 0)) {
		error_set(cause, "\"name\" must be the directory's name, '%s'", m->name);
		goto out;
	}
	if (model_json_int(root, "max_batch_size", has_batch ? 1 : 0, has_batch ? MODEL_MAX_BATCH : 0,
	    has_batch ? MODEL_DEFAULT_BATCH : 0, &n, cause) != 0) {
		error_prefix(cause, has_batch ? "the graph has a batch dimension" : "the graph has no batch dimension");
		goto out;
	}
	m->max_batch_size = (int)n;
	if (model_json_int(root, "plan_cache", 1, 4096, MODEL_DEFAULT_PLAN_CACHE, &n, cause) != 0)
		goto out;
	m->plan_cache = (int)n;
	if (model_config_precision(m, root, cause) != 0 || model_config_invariant(m, root, cause) != 0)
		goto out;
	rc = model_config_serving(m, root, cause);
out:
	json_decref(empty);
	return rc;
}

/*
 * "max_dims": {"input": [d1, d2, ...]}: the input's non-batch dims, each the
 * fixed value or the maximum of a variable dim.  *out = the entry for dim d
 * (0 when the input has no entry).
 */
int
model_config_max_dim(json_t *root, const char *input, int d, int64_t fixed, int64_t *out, char **cause)
{
	json_t *md = root == NULL ? NULL : json_object_get(root, "max_dims"), *arr, *v;

	*out = 0;
	if (md == NULL)
		return 0;
	if (!json_is_object(md))
		return error_set(cause, "\"max_dims\" must be an object of arrays");
	if ((arr = json_object_get(md, input)) == NULL)
		return 0;
	if (!json_is_array(arr))
		return error_set(cause, "max_dims \"%s\" must be an array of the input's dims after the batch", input);
	v = json_array_get(arr, (size_t)d);
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1LL << 30))
		return error_set(cause, "max_dims \"%s\"[%d] must be an integer in [1, 2^30]", input, d);
	if (fixed >= 0 && json_integer_value(v) != fixed)
		return error_set(cause, "max_dims \"%s\"[%d] is %lld but the dim is fixed at %lld", input, d,
		    (long long)json_integer_value(v), (long long)fixed);
	*out = json_integer_value(v);
	return 0;
}

/* The new name "rename" gives a tensor, or its own name. */
const char *
model_config_rename(json_t *root, const char *name)
{
	json_t *r = root == NULL ? NULL : json_object_get(root, "rename");
	const char *to = json_string_value(json_object_get(r, name));

	return to != NULL && *to != '\0' ? to : name;
}

/* The members an "inputs" (input 1) or "outputs" entry may have: model.json's, and Triton's that inferd honours. */
static int
model_config_io_members(json_t *obj, int input, size_t k, char **cause)
{
	const char *key, *extra = input ? "format" : "label_filename";
	json_t *v;

	if (!json_is_object(obj))
		return error_set(cause, "%s[%zu] must be an object", input ? "inputs" : "outputs", k);
	json_object_foreach(obj, key, v)
		if (strcmp(key, "name") != 0 && strcmp(key, "datatype") != 0 && strcmp(key, "dims") != 0 &&
		    strcmp(key, extra) != 0)
			return error_set(cause, "%s[%zu]: unknown member \"%s\" (an entry has \"name\", \"datatype\", "
			    "\"dims\" and \"%s\")", input ? "inputs" : "outputs", k, key, extra);
	return 0;
}

/* An input's Triton "format": FORMAT_NONE, or FORMAT_NCHW / FORMAT_NHWC on an input of 3 dims after the batch. */
static int
model_config_io_format(struct model_io *io, json_t *v, size_t k, char **cause)
{
	const char *f = json_string_value(v);

	if (v == NULL)
		return 0;
	if (f == NULL || (strcmp(f, "FORMAT_NONE") != 0 && strcmp(f, "FORMAT_NCHW") != 0 &&
	    strcmp(f, "FORMAT_NHWC") != 0))
		return error_set(cause, "inputs[%zu] '%s': \"format\" must be \"FORMAT_NONE\", \"FORMAT_NCHW\" or "
		    "\"FORMAT_NHWC\"", k, io->name);
	if (strcmp(f, "FORMAT_NONE") != 0 && io->ndims != 3)
		return error_set(cause, "inputs[%zu] '%s': %s needs 3 dims after the batch (C, H, W in its order); the "
		    "graph's input has %d", k, io->name, f, io->ndims);
	snprintf(io->format, sizeof io->format, "%s", strcmp(f, "FORMAT_NONE") == 0 ? "" : f);
	return 0;
}

/* An output's label_filename: the class names of the model's first output. */
static int
model_config_io_labels(model_t *m, int i, json_t *v, size_t k, char **cause)
{
	const char *file = json_string_value(v);

	if (v == NULL)
		return 0;
	if (file == NULL)
		return error_set(cause, "outputs[%zu]: \"label_filename\" must be a string", k);
	if (i != 0)
		return error_set(cause, "outputs[%zu] '%s': label_filename is taken for the model's first output, '%s', "
		    "only", k, m->outputs[i].name, m->outputs[0].name);
	return model_config_triton_labels(m, file, cause) != 0 ? error_prefix(cause, "outputs[%zu]", k) : 0;
}

/* One declared tensor of "inputs"/"outputs" against the model's io of that name. */
static int
model_config_io_one(model_t *m, json_t *obj, int input, size_t k, char **cause)
{
	const char *key = input ? "inputs" : "outputs", *name = json_string_value(json_object_get(obj, "name"));
	const char *dt = json_string_value(json_object_get(obj, "datatype"));
	json_t *dims = json_object_get(obj, "dims"), *d;
	struct model_io *io;
	int i;
	size_t j;

	if (model_config_io_members(obj, input, k, cause) != 0)
		return -1;
	i = name == NULL ? -1 : input ? model_input_index(m, name) : model_output_index(m, name);
	if (i < 0)
		return error_set(cause, "%s[%zu]: the graph has no %s named '%s'", key, k, input ? "input" : "output",
		    name ? name : "(no \"name\")");
	io = input ? &m->inputs[i] : &m->outputs[i];
	if (dt != NULL && strcmp(dt, io->datatype) != 0)
		return error_set(cause, "%s[%zu] '%s': datatype %s, the graph's is %s", key, k, name, dt, io->datatype);
	if (input ? model_config_io_format(io, json_object_get(obj, "format"), k, cause) != 0 :
	    model_config_io_labels(m, i, json_object_get(obj, "label_filename"), k, cause) != 0)
		return -1;
	if (dims == NULL)
		return 0;
	if (!json_is_array(dims) || json_array_size(dims) != (size_t)io->ndims)
		return error_set(cause, "%s[%zu] '%s': \"dims\" must list the graph's %d dims after the batch", key, k, name, io->ndims);
	json_array_foreach(dims, j, d)
		if (!json_is_integer(d) || json_integer_value(d) != io->dims[j])
			return error_set(cause, "%s[%zu] '%s': dims[%zu] is not the graph's %lld", key, k, name, j,
			    (long long)io->dims[j]);
	return 0;
}

/* Declared "inputs"/"outputs" (optional, documentation) must agree with the graph. */
int
model_config_check_io(model_t *m, json_t *root, char **cause)
{
	json_t *arr, *obj;
	size_t k;
	int input;

	for (input = 1; root != NULL && input >= 0; input--) {
		arr = json_object_get(root, input ? "inputs" : "outputs");
		if (arr == NULL)
			continue;
		if (!json_is_array(arr))
			return error_set(cause, "\"%s\" must be an array of tensors", input ? "inputs" : "outputs");
		json_array_foreach(arr, k, obj)
			if (model_config_io_one(m, obj, input, k, cause) != 0)
				return -1;
	}
	return 0;
}

/* Integer fields of the configuration (ModelConfig's and model.json's) that may arrive quoted. */
static const char *const model_config_int_keys[] = {
	"max_batch_size", "max_queue_delay_microseconds", "preferred_batch_size", "preferred_batch_sizes",
	"max_queue_size", "default_timeout_microseconds", "num_versions", "versions", "count", "gpus",
	"dims", "plan_cache", "batch_sizes",
};

/* A quoted decimal integer as protobuf's JSON mapping writes int64 ("16", "-1"), made a number; others left. */
static int
model_config_unquote_one(json_t *parent, const char *key, size_t index, json_t *v)
{
	const char *s = json_string_value(v), *digits;
	json_t *n;
	long long x;

	if (s == NULL)
		return 0;
	digits = s + (*s == '-');
	if (*digits == '\0' || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 18)
		return 0;	/* not a number, or past int64's 18 safe digits: left for the field's own check */
	x = strtoll(s, NULL, 10);
	if ((n = json_integer(x)) == NULL)
		return -1;
	return json_is_array(parent) ? json_array_set_new(parent, index, n) : json_object_set_new(parent, key, n);
}

/*
 * Accept Triton's override JSON as protobuf parses it: an integer field may be
 * a quoted number ({"max_batch_size": "16"}), at any depth, alone or in an array.
 */
static int
model_config_unquote(json_t *obj)
{
	const char *key;
	json_t *v, *e;
	size_t i, k;

	json_object_foreach(obj, key, v) {
		for (k = 0; k < sizeof model_config_int_keys / sizeof model_config_int_keys[0]; k++)
			if (strcmp(key, model_config_int_keys[k]) == 0)
				break;
		if (k < sizeof model_config_int_keys / sizeof model_config_int_keys[0]) {
			if (model_config_unquote_one(obj, key, 0, v) != 0)
				return -1;
			v = json_object_get(obj, key);	/* the old value is gone when it was replaced */
			json_array_foreach(v, i, e)
				if (model_config_unquote_one(v, NULL, i, e) != 0)
					return -1;
		} else if (json_is_object(v) && model_config_unquote(v) != 0) {
			return -1;
		}
		json_array_foreach(v, i, e)
			if (json_is_object(e) && model_config_unquote(e) != 0)
				return -1;
	}
	return 0;
}

/* Parse a config override: a JSON object text, its errors with line and column. */
static int
model_config_parse_override(const char *text, json_t **out, char **cause)
{
	json_error_t jerr;

	*out = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	/* jansson leaves no text when it cannot allocate its lexer. */
	if (*out == NULL && (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0'))
		return error_set(cause, "config override: out of memory parsing it");
	if (*out == NULL)
		return error_set(cause, "config override: line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return error_set(cause, "config override: not a JSON object");
	}
	if (model_config_triton_override(text, out, cause) != 0) {
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	if (model_config_unquote(*out) != 0) {
		json_decref(*out);
		*out = NULL;
		return error_set(cause, "config override: out of memory");
	}
	return 0;
}

/* Load path as a JSON object, reporting line and column (read as the model files are: file_copy.h). */
static int
model_config_load_file(const char *path, json_t **out, char **cause)
{
	json_error_t jerr;
	uint8_t *text = NULL;
	size_t len = 0;

	*out = NULL;
	if (file_copy_read(AT_FDCWD, path, &text, &len, cause) != 0)
		return error_prefix(cause, "%s", path);
	*out = json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES, &jerr);
	file_copy_free(text, len);
	/* jansson leaves no text when it cannot allocate its lexer. */
	if (*out == NULL && (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0'))
		return error_set(cause, "%s: out of memory parsing it", path);
	if (*out == NULL)
		return error_set(cause, "%s: line %d, column %d: %s", path, jerr.line, jerr.column, jerr.text);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return error_set(cause, "%s: not a JSON object", path);
	}
	return 0;
}

/* dir/model.json when present (required: also when absent, to say so), merged with dir/config.pbtxt. */
static int
model_config_files(const char *dir, int required, json_t **out, char **cause)
{
	json_t *triton = NULL;
	struct stat st;
	char *path;
	int rc = 0;

	*out = NULL;
	if (model_config_triton_read(dir, &triton, cause) != 0)
		return -1;
	if (asprintf(&path, "%s/model.json", dir) == -1) {
		json_decref(triton);
		return error_set(cause, "out of memory");
	}
	if (stat(path, &st) == 0 || (required && triton == NULL))
		rc = model_config_load_file(path, out, cause);
	free(path);
	if (rc == 0 && triton != NULL && *out != NULL)
		rc = model_config_triton_merge(*out, triton, dir, cause);
	else if (rc == 0 && triton != NULL)
		*out = json_incref(triton);
	json_decref(triton);
	if (rc != 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

/* Load dir/model.json and dir/config.pbtxt (NULL when both absent and optional) with override's keys replacing theirs. */
int
model_config_read(const char *dir, const char *override, int required, json_t **out, char **cause)
{
	json_t *ov = NULL;
	int rc;

	*out = NULL;
	if (override != NULL && model_config_parse_override(override, &ov, cause) != 0)
		return -1;
	rc = model_config_files(dir, required && ov == NULL, out, cause);
	if (rc == 0 && ov != NULL && *out == NULL && (*out = json_object()) == NULL)
		rc = error_set(cause, "out of memory");
	if (rc == 0 && ov != NULL && json_object_update(*out, ov) != 0)
		rc = error_set(cause, "out of memory");
	if (rc != 0) {
		json_decref(*out);
		*out = NULL;
	}
	json_decref(ov);
	return rc;
}

/* "batch_sizes" of warm-up entry k: 1 to MODEL_MAX_WARMUP_SIZES sizes in [1, max rows]; default [1]. */
static int
model_warmup_sizes(const model_t *m, json_t *obj, size_t k, struct model_warmup_entry *w, char **cause)
{
	json_t *arr = json_object_get(obj, "batch_sizes"), *v;
	int rows = model_max_rows(m);
	size_t i;

	if (arr == NULL) {
		w->batch_sizes[w->nsizes++] = 1;
		return 0;
	}
	if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > MODEL_MAX_WARMUP_SIZES)
		return error_set(cause, "warmup[%zu]: \"batch_sizes\" must be an array of 1 to %d sizes", k,
		    MODEL_MAX_WARMUP_SIZES);
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > rows)
			return error_set(cause, "warmup[%zu]: batch_sizes[%zu] must be an integer in [1, %d]%s", k, i, rows,
			    m->max_batch_size == 0 ? " (the model has no batch dimension)" : " (max_batch_size)");
		w->batch_sizes[w->nsizes++] = (int)json_integer_value(v);
	}
	return 0;
}

/* "data" of warm-up entry k: "zeros" (default), "random", or a file name inside the model directory. */
static int
model_warmup_data(json_t *obj, size_t k, struct model_warmup_entry *w, char **cause)
{
	json_t *v = json_object_get(obj, "data");
	const char *s = v == NULL ? "zeros" : json_string_value(v);

	if (s == NULL || *s == '\0' || strlen(s) >= sizeof w->file)
		return error_set(cause, "warmup[%zu]: \"data\" must be \"zeros\", \"random\" or a file name (1 to %zu characters)",
		    k, sizeof w->file - 1);
	if (strcmp(s, "zeros") == 0)
		w->data = MODEL_WARMUP_ZEROS;
	else if (strcmp(s, "random") == 0)
		w->data = MODEL_WARMUP_RANDOM;
	else if (strchr(s, '/') != NULL || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return error_set(cause, "warmup[%zu]: \"data\" '%s' must be a file name inside the model directory", k, s);
	else {
		w->data = MODEL_WARMUP_FILE;
		memcpy(w->file, s, strlen(s) + 1);
	}
	return 0;
}

/* "warmup": [{"batch_sizes": [...], "data": ...}, ...] into m->warmup. */
int
model_config_warmup(model_t *m, json_t *root, char **cause)
{
	json_t *arr = json_object_get(root, "warmup"), *obj, *v;
	const char *key;
	size_t k;

	memset(&m->warmup, 0, sizeof m->warmup);
	if (arr == NULL)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > MODEL_MAX_WARMUP)
		return error_set(cause, "\"warmup\" must be an array of at most %d entries", MODEL_MAX_WARMUP);
	json_array_foreach(arr, k, obj) {
		struct model_warmup_entry *w = &m->warmup.entries[k];
		if (!json_is_object(obj))
			return error_set(cause, "warmup[%zu] must be an object {\"batch_sizes\", \"data\"}", k);
		json_object_foreach(obj, key, v)
			if (strcmp(key, "batch_sizes") != 0 && strcmp(key, "data") != 0)
				return error_set(cause, "warmup[%zu]: unknown key \"%s\"", k, key);
		if (model_warmup_sizes(m, obj, k, w, cause) != 0 || model_warmup_data(obj, k, w, cause) != 0)
			return -1;
		m->warmup.count++;
	}
	return 0;
}

/* "buckets": ascending lengths >= 1. */
static int
padding_parse_buckets(struct model_padding *p, json_t *arr, char **cause)
{
	json_t *v;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > MODEL_MAX_BUCKETS - 1)
		return error_set(cause, "\"buckets\" must be an array of 1 to %d lengths", MODEL_MAX_BUCKETS - 1);
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    (i > 0 && json_integer_value(v) <= p->buckets[i - 1]))
			return error_set(cause, "\"buckets\"[%zu] must be an integer above the one before it (and >= 1)", i);
		p->buckets[p->nbuckets++] = json_integer_value(v);
	}
	return 0;
}

/* "values": {"input": pad value, ...}. */
static int
padding_parse_values(struct model_padding *p, json_t *obj, char **cause)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj) || json_object_size(obj) == 0 || json_object_size(obj) > MODEL_MAX_IO)
		return error_set(cause, "\"values\" must name 1 to %d inputs and their pad values", MODEL_MAX_IO);
	json_object_foreach(obj, key, v) {
		if (!json_is_number(v))
			return error_set(cause, "\"values\".\"%s\" must be a number", key);
		if (strlen(key) >= MODEL_NAME_MAX)
			return error_set(cause, "\"values\".\"%s\": name too long", key);
		strcpy(p->value_names[p->nvalues], key);
		p->value_of[p->nvalues++] = json_number_value(v);
	}
	return 0;
}

/* "padding" (optional): false, or {"dim": {"input": name, "index": k}, "values": {...}, "buckets": [...]}. */
int
model_config_padding(model_t *m, json_t *root, char **cause)
{
	struct model_padding *p = &m->padding;
	json_t *v = json_object_get(root, "padding"), *dim;
	long long k;

	memset(p, 0, sizeof *p);
	if (v == NULL)
		return 0;
	if (json_is_false(v)) {
		p->mode = MODEL_PADDING_OFF;
		return 0;
	}
	p->mode = MODEL_PADDING_DECLARED;
	dim = json_is_object(v) ? json_object_get(v, "dim") : NULL;
	if (dim == NULL || !json_is_object(dim))
		return error_set(cause, "\"padding\" must be false or an object with \"dim\": {\"input\": name, \"index\": k}");
	if (model_json_str(dim, "input", NULL, p->dim_input, sizeof p->dim_input, cause) != 0 ||
	    model_json_int(dim, "index", 0, MODEL_MAX_DIMS, -1, &k, cause) != 0)
		return error_prefix(cause, "\"padding\".\"dim\"");
	p->dim = (int)k;
	if (padding_parse_values(p, json_object_get(v, "values"), cause) != 0 ||
	    (json_object_get(v, "buckets") != NULL && padding_parse_buckets(p, json_object_get(v, "buckets"), cause) != 0))
		return error_prefix(cause, "\"padding\"");
	return 0;
}
