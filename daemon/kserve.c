/* kserve.c: KServe v2 request decoding and response encoding with jansson, JSON and binary tensors. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "kserve.h"
#include "kserve_params.h"

/* Dump flags: compact, and enough digits that every float32 reads back exactly. */
#define KSERVE_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(9))

/* Where decoded floats go and how many have been written. */
struct kserve_sink {
	const char *input;	/* the input's name, for messages */
	float *dst;
	size_t count, want;
	int max_depth;		/* the shape's rank: deeper nesting is refused */
};

/* Parse a request body; jansson's position and text on error. */
json_t *
kserve_parse(const char *body, size_t len, char **cause)
{
	json_error_t jerr;
	json_t *root;

	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		error_set(cause, "malformed JSON at line %d, column %d: %s",
		    jerr.line, jerr.column, jerr.text);
	return root;
}

/* The "model" member of a short-form body. */
const char *
kserve_model_name(const json_t *root, char **cause)
{
	const json_t *v;

	if (!json_is_object(root)) {
		error_set(cause, "request body must be a JSON object");
		return NULL;
	}
	v = json_object_get(root, "model");
	if (v == NULL) {
		error_set(cause, "missing field 'model' (POST /infer names its model in the body)");
		return NULL;
	}
	if (!json_is_string(v)) {
		error_set(cause, "field 'model' must be a string");
		return NULL;
	}
	return json_string_value(v);
}

/* A member that must be a string when present; -1 with *cause if mistyped. */
static int
kserve_opt_string(const json_t *obj, const char *key, const char *where,
    const char **out, char **cause)
{
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return error_set(cause, "%sfield '%s' must be a string", where, key);
	*out = json_string_value(v);
	return 0;
}

/* A member that must be present and a string. */
static int
kserve_req_string(const json_t *obj, const char *key, const char *where,
    const char **out, char **cause)
{
	if (kserve_opt_string(obj, key, where, out, cause) != 0)
		return -1;
	if (*out == NULL)
		return error_set(cause, "%smissing field '%s'", where, key);
	return 0;
}

/* A member that must be a boolean when present: 1, 0, or -1 with *cause if mistyped. */
static int
kserve_opt_bool(const json_t *obj, const char *key, const char *where, int *out,
    char **cause)
{
	const json_t *v = json_object_get(obj, key);

	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return error_set(cause, "%sparameter '%s' must be true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

/* Read the request-level "parameters": the timeout in microseconds, binary_data_output. */
static int
kserve_decode_parameters(const json_t *root, struct kserve_infer *out,
    char **cause)
{
	static const char *const keys[] = { "timeout_us", "timeout" };
	const json_t *params = json_object_get(root, "parameters"), *v;
	size_t i;

	if (params == NULL)
		return 0;
	if (!json_is_object(params))
		return error_set(cause, "field 'parameters' must be an object");
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		v = json_object_get(params, keys[i]);
		if (v == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return error_set(cause, "parameter '%s' must be a non-negative integer "
			    "(microseconds)", keys[i]);
		out->timeout_us = (uint64_t)json_integer_value(v);
	}
	return kserve_opt_bool(params, "binary_data_output", "", &out->binary_output, cause);
}

/* Check the requested outputs: known names; binary_data overrides binary_data_output. */
static int
kserve_decode_outputs(const json_t *root, const model_t *m, struct kserve_infer *out,
    char **cause)
{
	const json_t *outputs = json_object_get(root, "outputs"), *o, *params;
	const char *name;
	size_t i;

	if (outputs == NULL)
		return 0;
	if (!json_is_array(outputs))
		return error_set(cause, "field 'outputs' must be an array");
	json_array_foreach(outputs, i, o) {
		if (!json_is_object(o))
			return error_set(cause, "outputs[%zu] must be an object", i);
		if (kserve_req_string(o, "name", "outputs[]: ", &name, cause) != 0)
			return -1;
		if (strcmp(name, m->output.name) != 0)
			return error_set(cause, "unknown output '%s' (model '%s' has output '%s')",
			    name, m->name, m->output.name);
		params = json_object_get(o, "parameters");
		if (params != NULL && !json_is_object(params))
			return error_set(cause, "outputs[%zu]: field 'parameters' must be an object", i);
		if (params != NULL && kserve_opt_bool(params, "binary_data", "outputs[]: ",
		    &out->binary_output, cause) != 0)
			return -1;
	}
	return 0;
}

/* Check "shape" against the model: [rows, dims...] with rows in 1..max_batch_size. */
static int
kserve_decode_shape(const json_t *input, const model_t *m, int *rows,
    char **cause)
{
	const struct model_io *io = &m->input;
	const json_t *shape = json_object_get(input, "shape"), *d;
	json_int_t v;
	size_t i;

	if (shape == NULL)
		return error_set(cause, "input '%s': missing field 'shape'", io->name);
	if (!json_is_array(shape))
		return error_set(cause, "input '%s': field 'shape' must be an array", io->name);
	if (json_array_size(shape) != (size_t)io->ndims + 1)
		return error_set(cause, "input '%s': shape has %zu dimensions, the model "
		    "expects %d (batch first)", io->name, json_array_size(shape), io->ndims + 1);
	json_array_foreach(shape, i, d) {
		if (!json_is_integer(d))
			return error_set(cause, "input '%s': shape[%zu] must be an integer",
			    io->name, i);
		v = json_integer_value(d);
		if (i == 0 && (v < 1 || v > m->max_batch_size))
			return error_set(cause, "input '%s': batch size %" JSON_INTEGER_FORMAT
			    " is out of range (1 to %d)", io->name, v, m->max_batch_size);
		if (i > 0 && v != io->dims[i - 1])
			return error_set(cause, "input '%s': shape[%zu] is %" JSON_INTEGER_FORMAT
			    ", the model expects %" PRId64, io->name, i, v, io->dims[i - 1]);
	}
	*rows = (int)json_integer_value(json_array_get(shape, 0));
	return 0;
}

/* Convert a JSON number to float32, refusing values outside its range. */
static int
kserve_to_float(const json_t *v, float *out)
{
	double d;

	if (json_is_integer(v))
		d = (double)json_integer_value(v);
	else if (json_is_real(v))
		d = json_real_value(v);
	else
		return -1;
	if (fabs(d) > FLT_MAX) {
		/* Within half an ulp of FLT_MAX still rounds to it (as "3.40282347e+38" does). */
		if (!(fabs(d) < (double)FLT_MAX * (1.0 + 0x1p-24)))
			return -2;
		d = copysign((double)FLT_MAX, d);
	}
	*out = (float)d;
	return 0;
}

/* Flatten "data" (nested no deeper than the shape) into the sink, row-major. */
static int
kserve_decode_data(const json_t *v, int depth, struct kserve_sink *s,
    char **cause)
{
	const json_t *e;
	size_t i;
	int rc;

	if (depth > s->max_depth)
		return error_set(cause, "input '%s': data is nested deeper than its shape (%d)",
		    s->input, s->max_depth);
	json_array_foreach(v, i, e) {
		if (json_is_array(e)) {
			if (kserve_decode_data(e, depth + 1, s, cause) != 0)
				return -1;
			continue;
		}
		if (s->count == s->want)
			return error_set(cause, "input '%s': data has more than the %zu "
			    "elements its shape needs", s->input, s->want);
		rc = kserve_to_float(e, &s->dst[s->count]);
		if (rc == -1)
			return error_set(cause, "input '%s': data element %zu is not a number",
			    s->input, s->count);
		if (rc == -2)
			return error_set(cause, "input '%s': data element %zu is out of the "
			    "FP32 range", s->input, s->count);
		s->count++;
	}
	return 0;
}

/* An input's parameters.binary_data_size into *size, or -1 when it has none. */
static int
kserve_input_parameters(const json_t *input, const char *name, json_int_t *size,
    char **cause)
{
	const json_t *params = json_object_get(input, "parameters"), *v;

	*size = -1;
	if (params == NULL)
		return 0;
	if (!json_is_object(params))
		return error_set(cause, "input '%s': field 'parameters' must be an object", name);
	if ((v = json_object_get(params, "binary_data_size")) == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return error_set(cause, "input '%s': parameter 'binary_data_size' must be a "
		    "non-negative integer (bytes)", name);
	*size = json_integer_value(v);
	return 0;
}

/* Find the one input and check its name and datatype. */
static const json_t *
kserve_find_input(const json_t *root, const model_t *m, char **cause)
{
	const json_t *inputs = json_object_get(root, "inputs"), *input;
	const char *name, *dtype;

	if (inputs == NULL)
		return error_set(cause, "missing field 'inputs'"), NULL;
	if (!json_is_array(inputs))
		return error_set(cause, "field 'inputs' must be an array"), NULL;
	if (json_array_size(inputs) != 1)
		return error_set(cause, "model '%s' takes 1 input, the request has %zu",
		    m->name, json_array_size(inputs)), NULL;
	input = json_array_get(inputs, 0);
	if (!json_is_object(input))
		return error_set(cause, "inputs[0] must be an object"), NULL;
	if (kserve_req_string(input, "name", "inputs[0]: ", &name, cause) != 0)
		return NULL;
	if (strcmp(name, m->input.name) != 0)
		return error_set(cause, "unknown input '%s' (model '%s' has input '%s')",
		    name, m->name, m->input.name), NULL;
	if (kserve_req_string(input, "datatype", "inputs[0]: ", &dtype, cause) != 0)
		return NULL;
	if (strcmp(dtype, m->input.datatype) != 0)
		return error_set(cause, "input '%s': datatype '%s' does not match the model's '%s'",
		    name, dtype, m->input.datatype), NULL;
	return input;
}

/* The JSON header's length from Inference-Header-Content-Length's value. */
int
kserve_header_length(const char *value, size_t body_len, size_t *json_len,
    char **cause)
{
	unsigned long long v;
	size_t n = strlen(value);

	if (n == 0 || n > 20 || strspn(value, "0123456789") != n)
		return error_set(cause, KSERVE_HEADER_LENGTH " must be a byte count, not '%.40s'",
		    value);
	errno = 0;
	v = strtoull(value, NULL, 10);
	if (errno != 0 || v > body_len)
		return error_set(cause, KSERVE_HEADER_LENGTH " %s exceeds the body's %zu bytes",
		    value, body_len);
	if (v == 0)
		return error_set(cause, KSERVE_HEADER_LENGTH " is 0: the body must start with a "
		    "JSON inference header");
	*json_len = (size_t)v;
	return 0;
}

/* Copy n little-endian float32s from src to dst in host order. */
static void
kserve_copy_le32(void *dst, const unsigned char *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char *d = dst;
	size_t i;

	for (i = 0; i < n; i++, d += 4, src += 4) {
		d[0] = src[3], d[1] = src[2], d[2] = src[1], d[3] = src[0];
	}
#else
	memcpy(dst, src, n * 4);
#endif
}

/* Take an input's binary_data_size bytes from the binary section at *offset into buf. */
static int
kserve_decode_binary(const struct kserve_binary *bin, size_t *offset, json_int_t size,
    const char *name, void *buf, size_t bytes, char **cause)
{
	if (bin == NULL)
		return error_set(cause, "input '%s': binary_data_size without the binary tensor "
		    "extension's " KSERVE_HEADER_LENGTH " header", name);
	if ((uint64_t)size != bytes)
		return error_set(cause, "input '%s': binary_data_size is %" JSON_INTEGER_FORMAT
		    ", its shape needs %zu bytes (FP32)", name, size, bytes);
	if (bin->len - *offset < bytes)
		return error_set(cause, "input '%s': binary data is missing: %zu bytes announced, "
		    "%zu left after the JSON header", name, bytes, bin->len - *offset);
	kserve_copy_le32(buf, bin->data + *offset, bytes / sizeof(float));
	*offset += bytes;
	return 0;
}

/* Decode the input's "data" array into buf. */
static int
kserve_decode_json_data(const json_t *input, const model_t *m, void *buf, size_t bytes,
    char **cause)
{
	struct kserve_sink sink = { m->input.name, buf, 0, bytes / sizeof(float), m->input.ndims + 1 };
	const json_t *data = json_object_get(input, "data");

	if (data == NULL)
		return error_set(cause, "input '%s': missing field 'data'", m->input.name);
	if (!json_is_array(data))
		return error_set(cause, "input '%s': field 'data' must be an array", m->input.name);
	if (kserve_decode_data(data, 1, &sink, cause) != 0)
		return -1;
	if (sink.count != sink.want)
		return error_set(cause, "input '%s': data has %zu elements, its shape needs %zu",
		    m->input.name, sink.count, sink.want);
	return 0;
}

/* Write the input's tensor into buf: from "data", or binary_data_size bytes of bin at *offset. */
static int
kserve_decode_tensor(const json_t *input, const struct kserve_binary *bin,
    size_t *offset, const model_t *m, void *buf, size_t bytes, char **cause)
{
	const char *name = m->input.name;
	json_int_t size;

	if (kserve_input_parameters(input, name, &size, cause) != 0)
		return -1;
	if (size < 0)
		return kserve_decode_json_data(input, m, buf, bytes, cause);
	if (json_object_get(input, "data") != NULL)
		return error_set(cause, "input '%s': give 'data' or parameters.binary_data_size, "
		    "not both", name);
	return kserve_decode_binary(bin, offset, size, name, buf, bytes, cause);
}

/* Check the request and write its input tensor into buf. */
int
kserve_decode_infer(const json_t *root, const struct kserve_binary *bin,
    const model_t *m, void *buf, size_t buf_bytes, struct kserve_infer *out,
    char **cause)
{
	const json_t *input;
	size_t bytes, offset = 0;

	memset(out, 0, sizeof *out);
	if (!json_is_object(root))
		return error_set(cause, "request body must be a JSON object");
	if (kserve_check_parameters(root, cause) != 0 ||
	    kserve_opt_string(root, "id", "", &out->id, cause) != 0 ||
	    kserve_decode_parameters(root, out, cause) != 0 ||
	    kserve_decode_outputs(root, m, out, cause) != 0)
		return -1;
	if ((input = kserve_find_input(root, m, cause)) == NULL ||
	    kserve_decode_shape(input, m, &out->rows, cause) != 0)
		return -1;
	/* model_input_bytes by hand: this file links without the model loader (see the fuzz target). */
	bytes = (size_t)out->rows * m->input.row_elems * sizeof(float);
	if (bytes > buf_bytes)
		return error_set(cause, "input '%s': %zu bytes do not fit the %zu-byte staging slot",
		    m->input.name, bytes, buf_bytes);
	if (kserve_decode_tensor(input, bin, &offset, m, buf, bytes, cause) != 0)
		return -1;
	if (bin != NULL && offset != bin->len)
		return error_set(cause, "%zu bytes of binary data are left over after the inputs took "
		    "%zu (check binary_data_size and " KSERVE_HEADER_LENGTH ")", bin->len - offset,
		    offset);
	out->input_bytes = bytes;
	return 0;
}

/* Dump and free a JSON value (NULL: building it ran out of memory); NULL with *cause. */
static char *
kserve_dump(json_t *v, size_t *len, char **cause)
{
	char *s;

	if (v == NULL)
		return error_set(cause, "out of memory building the JSON body"), NULL;
	s = json_dumps(v, KSERVE_DUMP_FLAGS);
	json_decref(v);
	if (s == NULL)
		return error_set(cause, "out of memory writing the JSON body"), NULL;
	if (len != NULL)
		*len = strlen(s);
	return s;
}

/* A shape array: -1 (any batch) or rows, then the tensor's dims. */
static json_t *
kserve_shape(const struct model_io *io, json_int_t batch)
{
	json_t *shape = json_array();
	int i;

	if (shape == NULL || json_array_append_new(shape, json_integer(batch)) != 0) {
		json_decref(shape);
		return NULL;
	}
	for (i = 0; i < io->ndims; i++) {
		if (json_array_append_new(shape, json_integer(io->dims[i])) != 0) {
			json_decref(shape);
			return NULL;
		}
	}
	return shape;
}

/* The output data array; NULL with *cause for a value JSON cannot carry. */
static json_t *
kserve_float_array(const model_t *m, const float *v, size_t n, char **cause)
{
	json_t *a = json_array();
	size_t i;

	if (a == NULL)
		return error_set(cause, "out of memory"), NULL;
	for (i = 0; i < n; i++) {
		if (!isfinite(v[i])) {
			json_decref(a);
			return error_set(cause, "output '%s': element %zu is %s, which JSON cannot "
			    "carry (check the input values)", m->output.name, i,
			    isnan(v[i]) ? "NaN" : "infinite"), NULL;
		}
		if (json_array_append_new(a, json_real(v[i])) != 0) {
			json_decref(a);
			return error_set(cause, "out of memory"), NULL;
		}
	}
	return a;
}

/* The output tensor: its values as "data", or (binary) their byte count as a parameter. */
static json_t *
kserve_output_tensor(const model_t *m, int rows, int binary, const float *output,
    char **cause)
{
	size_t n = (size_t)rows * m->output.row_elems;
	json_t *data, *t;

	if (binary)
		t = json_pack("{s:s, s:s, s:o, s:{s:I}}", "name", m->output.name,
		    "datatype", m->output.datatype, "shape", kserve_shape(&m->output, rows),
		    "parameters", "binary_data_size", (json_int_t)(n * sizeof(float)));
	else if ((data = kserve_float_array(m, output, n, cause)) == NULL)
		return NULL;
	else
		t = json_pack("{s:s, s:s, s:o, s:o}", "name", m->output.name,
		    "datatype", m->output.datatype, "shape", kserve_shape(&m->output, rows),
		    "data", data);
	if (t == NULL)
		error_set(cause, "out of memory");
	return t;
}

/* Append n floats to the JSON header at s (header_len bytes) as little-endian bytes. */
static char *
kserve_append_le32(char *s, size_t header_len, const float *v, size_t n)
{
	char *p = realloc(s, header_len + n * sizeof(float));

	if (p == NULL) {
		free(s);
		return NULL;
	}
	/* The same byte swap reads and writes: it is its own inverse. */
	kserve_copy_le32(p + header_len, (const unsigned char *)v, n);
	return p;
}

/* Encode the answer to an inference request, as JSON or as a JSON header and binary data. */
char *
kserve_encode_infer(const model_t *m, const char *id, int rows, int binary,
    const float *output, size_t *len, size_t *header_len, char **cause)
{
	size_t n = (size_t)rows * m->output.row_elems;
	json_t *tensor, *resp;
	char *s;

	if ((tensor = kserve_output_tensor(m, rows, binary, output, cause)) == NULL)
		return NULL;
	resp = json_pack("{s:s, s:s, s:[o]}", "model_name", m->name,
	    "model_version", KSERVE_MODEL_VERSION, "outputs", tensor);
	if (resp != NULL && id != NULL && json_object_set_new(resp, "id", json_string(id)) != 0) {
		json_decref(resp);
		resp = NULL;
	}
	if ((s = kserve_dump(resp, header_len, cause)) == NULL)
		return NULL;
	if (binary && (s = kserve_append_le32(s, *header_len, output, n)) == NULL)
		return error_set(cause, "out of memory"), NULL;
	*len = *header_len + (binary ? n * sizeof(float) : 0);
	return s;
}

/* Server metadata, with the KServe extensions implemented. */
char *
kserve_encode_server_metadata(size_t *len, char **cause)
{
	return kserve_dump(json_pack("{s:s, s:s, s:[s]}", "name", PACKAGE_NAME,
	    "version", PACKAGE_VERSION, "extensions", KSERVE_EXT_BINARY), len, cause);
}

/* One tensor's metadata: name, datatype, shape with -1 for the batch. */
static json_t *
kserve_tensor_metadata(const struct model_io *io)
{
	return json_pack("{s:s, s:s, s:o}", "name", io->name, "datatype", io->datatype,
	    "shape", kserve_shape(io, -1));
}

/* Model metadata. */
char *
kserve_encode_model_metadata(const model_t *m, size_t *len, char **cause)
{
	return kserve_dump(json_pack("{s:s, s:[s], s:s, s:[o], s:[o]}", "name", m->name,
	    "versions", KSERVE_MODEL_VERSION, "platform", KSERVE_PLATFORM,
	    "inputs", kserve_tensor_metadata(&m->input),
	    "outputs", kserve_tensor_metadata(&m->output)), len, cause);
}

/* Copy s with every byte outside printable ASCII replaced, so JSON accepts it. */
static char *
kserve_ascii(const char *s)
{
	char *t = strdup(s), *p;

	if (t == NULL)
		return NULL;
	for (p = t; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	return t;
}

/* A JSON string of s, even when s is not UTF-8. */
static json_t *
kserve_string(const char *s)
{
	json_t *v = json_string(s);
	char *t;

	if (v != NULL || (t = kserve_ascii(s)) == NULL)
		return v;
	v = json_string(t);
	free(t);
	return v;
}

/* The repository index, Triton's shape: [{"name","version","state"[,"reason"]}]. */
char *
kserve_encode_repository_index(const repository_t *r, size_t *len, char **cause)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < r->count; i++)
		if (json_array_append_new(a, json_pack("{s:o, s:s, s:s}", "name",
		    kserve_string(r->models[i]->name), "version", KSERVE_MODEL_VERSION,
		    "state", "READY")) != 0)
			a = (json_decref(a), NULL);
	for (i = 0; a != NULL && i < r->nfailures; i++)
		if (json_array_append_new(a, json_pack("{s:o, s:s, s:s, s:o}", "name",
		    kserve_string(r->failures[i].name), "version", KSERVE_MODEL_VERSION,
		    "state", "UNAVAILABLE", "reason", kserve_string(r->failures[i].error))) != 0)
			a = (json_decref(a), NULL);
	return kserve_dump(a, len, cause);
}

/* {"error": msg}. */
char *
kserve_encode_error(const char *msg, size_t *len, char **cause)
{
	return kserve_dump(json_pack("{s:o}", "error", kserve_string(msg)), len, cause);
}

/* {"key": true|false}. */
char *
kserve_encode_flag(const char *key, int value, size_t *len, char **cause)
{
	return kserve_dump(json_pack("{s:b}", key, value), len, cause);
}
