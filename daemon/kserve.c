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

#include "alloc.h"
#include "error.h"
#include "kserve.h"
#include "kserve_bytes.h"
#include "kserve_classify.h"
#include "kserve_params.h"
#include "kserve_regions.h"
#include "kserve_tensor.h"

/* Dump flags: compact, and enough digits that every float32 reads back exactly. */
#define KSERVE_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(9))

/* Where decoded elements go and how many have been written. */
struct kserve_sink {
	const char *input;	/* the input's name, for messages */
	unsigned char *dst;
	enum graph_dtype dtype;
	size_t esize;
	size_t count, want;
	int max_depth;		/* the shape's rank: deeper nesting is refused */
	int64_t shape[MODEL_MAX_DIMS + 1];	/* [rows, dims...] */
};

/* Parse a request body; jansson's position and text on error. */
json_t *
kserve_parse(const char *body, size_t len, char **cause)
{
	json_error_t jerr;
	json_t *root;

	if (len == 0) {
		error_set(cause, "malformed JSON at line 1, column 0: empty request body");
		return NULL;
	}
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		error_set(cause, "malformed JSON at line %d, column %d: %s",
		    jerr.line, jerr.column, jerr.text);
	return root;
}

/* Parse with the data arrays located and masked; a body the locator refuses goes to jansson whole. */
json_t *
kserve_parse_fast(const char *body, size_t len, struct tensor_text_span *spans,
    size_t *nspans, char **cause)
{
	json_t *root;
	char *masked;
	size_t n = 0, mlen;

	*nspans = 0;
	if (len == 0 || tensor_text_find_data(body, len, spans, KSERVE_MAX_SPANS, &n, NULL) != 0 ||
	    n == 0)
		return kserve_parse(body, len, cause);
	if ((masked = xmalloc(TENSOR_TEXT_MASK_BOUND(len, n))) == NULL)
		return error_set(cause, "out of memory"), NULL;
	if (tensor_text_mask_data(body, len, spans, n, masked, TENSOR_TEXT_MASK_BOUND(len, n),
	    &mlen, NULL) != 0) {
		free(masked);
		return kserve_parse(body, len, cause);
	}
	root = kserve_parse(masked, mlen, NULL);
	free(masked);
	if (root == NULL)	/* jansson's line and column must point into the body as sent */
		return kserve_parse(body, len, cause);
	*nspans = n;
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

/* "name" of a model's tensors for messages: "'a'" or "s 'a', 'b'" (after "input"/"output"). */
static void
kserve_names(const struct model_io *io, int n, char *dst, size_t len)
{
	size_t used;
	int i;

	used = (size_t)snprintf(dst, len, "%s", n == 1 ? "" : "s");
	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(dst + used, len - used, "%s'%s'", i == 0 ? " " : ", ", io[i].name);
}

/* parameters.classification of an output: a positive integer k (0 when absent). */
static int
kserve_decode_classification(const json_t *params, const char *name, int *k, char **cause)
{
	const json_t *v = params != NULL ? json_object_get(params, "classification") : NULL;

	*k = 0;
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX)
		return error_set(cause, "output '%s': parameter 'classification' must be a positive integer "
		    "(the number of classes to return)", name);
	*k = (int)json_integer_value(v);
	return 0;
}

/* One entry of "outputs": a known name, given once; binary_data overrides binary_data_output. */
static int
kserve_decode_output(const json_t *o, size_t i, const model_t *m, int *seen,
    struct kserve_infer *out, char **cause)
{
	struct kserve_shm_ref ref;
	const json_t *params;
	const char *name;
	char names[512];
	int k, binary = out->binary_output;

	if (!json_is_object(o))
		return error_set(cause, "outputs[%zu] must be an object", i);
	if (kserve_req_string(o, "name", "outputs[]: ", &name, cause) != 0)
		return -1;
	if ((k = model_output_index(m, name)) < 0) {
		kserve_names(m->outputs, m->noutputs, names, sizeof names);
		return error_set(cause, "unknown output '%s' (model '%s' has output%s)", name, m->name, names);
	}
	if (seen[k])
		return error_set(cause, "output '%s' is requested twice", name);
	seen[k] = 1;
	params = json_object_get(o, "parameters");
	if (params != NULL && !json_is_object(params))
		return error_set(cause, "outputs[%zu]: field 'parameters' must be an object", i);
	if (params != NULL && kserve_opt_bool(params, "binary_data", "outputs[]: ", &binary, cause) != 0)
		return -1;
	if (kserve_decode_classification(params, name, &out->classify[k], cause) != 0)
		return -1;
	if (out->classify[k] > 0 && m->outputs[k].dtype == GRAPH_DT_STRING)
		return error_set(cause, "output '%s': classification ranks numbers, this output is BYTES", name);
	if (kserve_shm_params(params, "output", name, &ref, cause) != 0)
		return -1;
	if (ref.region != NULL && out->classify[k] > 0)
		return error_set(cause, "output '%s': classification is answered in the body, not in a shared-memory "
		    "region (drop one of the two parameters)", name);
	if (ref.region != NULL) {
		/* Written into the region; the answer only describes it. */
		out->output_region[k] = ref.region;
		out->output_region_offset[k] = ref.offset;
		out->output_region_size[k] = ref.size;
		binary = 0;
	}
	out->binary[k] = binary;
	out->wanted[out->nwanted++] = k;
	return 0;
}

/* The requested outputs (all, in the model's order, when "outputs" is absent). */
static int
kserve_decode_outputs(const json_t *root, const model_t *m, struct kserve_infer *out,
    char **cause)
{
	const json_t *outputs = json_object_get(root, "outputs"), *o;
	int seen[MODEL_MAX_IO] = { 0 }, k;
	size_t i;

	if (outputs == NULL) {
		for (k = 0; k < m->noutputs; k++) {
			out->wanted[out->nwanted++] = k;
			out->binary[k] = out->binary_output;
		}
		return 0;
	}
	if (!json_is_array(outputs))
		return error_set(cause, "field 'outputs' must be an array");
	if (json_array_size(outputs) > (size_t)m->noutputs)
		return error_set(cause, "model '%s' has %d output%s, the request asks for %zu",
		    m->name, m->noutputs, m->noutputs == 1 ? "" : "s", json_array_size(outputs));
	json_array_foreach(outputs, i, o)
		if (kserve_decode_output(o, i, m, seen, out, cause) != 0)
			return -1;
	if (out->nwanted == 0)
		return error_set(cause, "field 'outputs' names no output");
	return 0;
}

/*
 * Check input i's "shape": [rows, dims...], rows in 1..max_batch_size (just
 * [dims...] and one row for a model without a batch dimension), dims as
 * the model allows.
 */
static int
kserve_decode_shape(const json_t *input, const model_t *m, int i, int *rows,
    int64_t *dims, char **cause)
{
	const struct model_io *io = &m->inputs[i];
	const json_t *shape = json_object_get(input, "shape"), *d;
	size_t k, batch = m->max_batch_size > 0;
	json_int_t v;

	if (shape == NULL)
		return error_set(cause, "input '%s': missing field 'shape'", io->name);
	if (!json_is_array(shape))
		return error_set(cause, "input '%s': field 'shape' must be an array", io->name);
	if (json_array_size(shape) != (size_t)io->ndims + batch)
		return error_set(cause, "input '%s': shape has %zu dimensions, the model "
		    "expects %zu%s", io->name, json_array_size(shape), (size_t)io->ndims + batch,
		    batch ? " (batch first)" : " (it has no batch dimension)");
	*rows = 1;
	json_array_foreach(shape, k, d) {
		if (!json_is_integer(d))
			return error_set(cause, "input '%s': shape[%zu] must be an integer",
			    io->name, k);
		v = json_integer_value(d);
		if (k < batch && (v < 1 || v > m->max_batch_size))
			return error_set(cause, "input '%s': batch size %" JSON_INTEGER_FORMAT
			    " is out of range (1 to %d)", io->name, v, m->max_batch_size);
		if (k < batch) {
			*rows = (int)v;
			continue;
		}
		if (k == 0 && !batch && v != io->dims[0] && model_fixed_batch(m) > 0)
			return model_fixed_batch_refuse(m, i, (int64_t)v, cause);
		if (io->dims[k - batch] >= 0 && v != io->dims[k - batch])
			return error_set(cause, "input '%s': shape[%zu] is %" JSON_INTEGER_FORMAT
			    ", the model expects %" PRId64, io->name, k, v, io->dims[k - batch]);
		dims[k - batch] = (int64_t)v;
	}
	return model_check_dims(m, i, io->ndims, dims, cause);
}

/* Flatten "data" (nested no deeper than the shape) into the sink, row-major. */
static int
kserve_decode_data(const json_t *v, int depth, struct kserve_sink *s,
    char **cause)
{
	enum kserve_put_status rc;
	const json_t *e;
	size_t i;

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
		rc = kserve_tensor_put(s->dtype, e, s->dst + s->count * s->esize);
		if (rc == KSERVE_PUT_KIND)
			return error_set(cause, "input '%s': data element %zu is not %s",
			    s->input, s->count, kserve_tensor_kind(s->dtype));
		if (rc == KSERVE_PUT_RANGE && s->dtype == GRAPH_DT_STRING)
			return error_set(cause, "input '%s': data element %zu is longer than the %d bytes "
			    "inferd holds per BYTES element", s->input, s->count, GRAPH_STRING_MAX);
		if (rc == KSERVE_PUT_RANGE)
			return error_set(cause, "input '%s': data element %zu is out of the "
			    "%s range", s->input, s->count, graph_dtype_name(s->dtype));
		s->count++;
	}
	return 0;
}

/*
 * "data" must follow the shape: nested k deep, the arrays above depth k
 * hold shape[d] arrays each, and those at depth k hold the product of the
 * remaining dims in values (k = 1 is the flat form, k = rank fully nested).
 */
static int
kserve_check_nesting(const json_t *v, int depth, const struct kserve_sink *s, char **cause)
{
	int arrays = json_array_size(v) > 0 && json_is_array(json_array_get(v, 0)), d;
	const json_t *e;
	size_t i, want = 1;

	if (arrays && json_array_size(v) != (size_t)s->shape[depth])
		return error_set(cause, "input '%s': data nested at depth %d has %zu elements, "
		    "shape[%d] is %" PRId64, s->input, depth + 1, json_array_size(v), depth,
		    s->shape[depth]);
	for (d = depth; !arrays && d < s->max_depth; d++)
		want *= (size_t)s->shape[d];
	if (!arrays && json_array_size(v) != want)
		return error_set(cause, "input '%s': data nested at depth %d has %zu values, "
		    "its shape needs %zu there", s->input, depth + 1, json_array_size(v), want);
	json_array_foreach(v, i, e) {
		if (json_is_array(e) != arrays)
			return error_set(cause, "input '%s': data at depth %d mixes arrays and values",
			    s->input, depth + 1);
		if (arrays && kserve_check_nesting(e, depth + 1, s, cause) != 0)
			return -1;
	}
	return 0;
}

/* An input's parameters: binary_data_size into *size (-1 when it has none), its shared-memory place into ref. */
static int
kserve_input_parameters(const json_t *input, const char *name, json_int_t *size,
    struct kserve_shm_ref *ref, char **cause)
{
	const json_t *params = json_object_get(input, "parameters"), *v;

	*size = -1;
	memset(ref, 0, sizeof *ref);
	if (params == NULL)
		return 0;
	if (!json_is_object(params))
		return error_set(cause, "input '%s': field 'parameters' must be an object", name);
	if (kserve_shm_params(params, "input", name, ref, cause) != 0)
		return -1;
	if ((v = json_object_get(params, "binary_data_size")) == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return error_set(cause, "input '%s': parameter 'binary_data_size' must be a "
		    "non-negative integer (bytes)", name);
	if (ref->region != NULL)
		return error_set(cause, "input '%s': give shared_memory_region or binary_data_size, "
		    "not both", name);
	*size = json_integer_value(v);
	return 0;
}

/* Check inputs[j]: an object naming a model input not seen before, with its datatype; its index. */
static int
kserve_match_input(const json_t *input, size_t j, const model_t *m, const json_t **by_index,
    char **cause)
{
	const char *name, *dtype;
	char where[32], names[512];
	int i;

	if (!json_is_object(input))
		return error_set(cause, "inputs[%zu] must be an object", j);
	snprintf(where, sizeof where, "inputs[%zu]: ", j);
	if (kserve_req_string(input, "name", where, &name, cause) != 0)
		return -1;
	if ((i = model_input_index(m, name)) < 0) {
		kserve_names(m->inputs, m->ninputs, names, sizeof names);
		return error_set(cause, "unknown input '%s' (model '%s' has input%s)", name, m->name, names);
	}
	if (by_index[i] != NULL)
		return error_set(cause, "input '%s' is given twice", name);
	if (kserve_req_string(input, "datatype", where, &dtype, cause) != 0)
		return -1;
	if (strcmp(dtype, graph_dtype_name(m->inputs[i].dtype)) != 0)
		return error_set(cause, "input '%s': datatype '%s' does not match the model's '%s'",
		    name, dtype, graph_dtype_name(m->inputs[i].dtype));
	by_index[i] = input;
	return i;
}

/* Match the request's inputs to the model's: by_index[i] is input i's object, order[j] the index of inputs[j]. */
static int
kserve_find_inputs(const json_t *root, const model_t *m, const json_t **by_index,
    int *order, size_t *n, char **cause)
{
	const json_t *inputs = json_object_get(root, "inputs"), *input;
	size_t j;
	int i;

	if (inputs == NULL)
		return error_set(cause, "missing field 'inputs'");
	if (!json_is_array(inputs))
		return error_set(cause, "field 'inputs' must be an array");
	if (json_array_size(inputs) > (size_t)m->ninputs)
		return error_set(cause, "model '%s' takes %d input%s, the request has %zu",
		    m->name, m->ninputs, m->ninputs == 1 ? "" : "s", json_array_size(inputs));
	json_array_foreach(inputs, j, input) {
		if ((i = kserve_match_input(input, j, m, by_index, cause)) < 0)
			return -1;
		order[j] = i;
	}
	*n = json_array_size(inputs);
	for (i = 0; i < m->ninputs; i++)
		if (by_index[i] == NULL)
			return error_set(cause, "missing input '%s' (model '%s' takes %d input%s, "
			    "the request has %zu)", m->inputs[i].name, m->name, m->ninputs,
			    m->ninputs == 1 ? "" : "s", *n);
	return 0;
}

/* Every input's shape, agreeing on rows, into out->rows and out->shape. */
static int
kserve_decode_shapes(const json_t **by_index, const model_t *m, struct kserve_infer *out,
    char **cause)
{
	int i, rows = 0;

	for (i = 0; i < m->ninputs; i++) {
		if (kserve_decode_shape(by_index[i], m, i, &rows, out->shape.dims[i], cause) != 0)
			return -1;
		if (i > 0 && rows != out->rows)
			return error_set(cause, "input '%s': batch size %d disagrees with input '%s' (%d)",
			    m->inputs[i].name, rows, m->inputs[0].name, out->rows);
		out->rows = rows;
	}
	out->shape.rows = out->rows;
	return 0;
}

/* Place one tensor of rows x row bytes at *off in a buffer of cap bytes; -1 when it does not fit. */
static int
kserve_place(size_t *off, int rows, size_t row, size_t cap, size_t *at, size_t *len)
{
	size_t end;

	if (__builtin_mul_overflow((size_t)rows, row, len) || __builtin_add_overflow(*off, *len, &end) ||
	    end > cap)
		return -1;
	*at = *off;
	*off = end + (KSERVE_TENSOR_ALIGN - end % KSERVE_TENSOR_ALIGN) % KSERVE_TENSOR_ALIGN;
	return 0;
}

/* Lay every input, then every output, out in the caller's buffer. */
static int
kserve_layout(const model_t *m, size_t buf_bytes, struct kserve_infer *out, char **cause)
{
	size_t off = 0, row;
	int i;

	if (model_output_layout(m, &out->shape, &out->layout, cause) != 0)
		return -1;
	for (i = 0; i < m->ninputs; i++) {
		row = model_input_row_bytes(m, i, &out->shape);
		if (kserve_place(&off, out->rows, row, buf_bytes, &out->input_offset[i], &out->input_len[i]) != 0)
			return error_set(cause, "input '%s': %zu bytes do not fit the %zu-byte staging slot",
			    m->inputs[i].name, (size_t)out->rows * row, buf_bytes);
		out->input_bytes += out->input_len[i];
	}
	for (i = 0; i < m->noutputs; i++) {
		row = out->layout.row_bytes[i];
		if (kserve_place(&off, out->rows, row, buf_bytes, &out->output_offset[i], &out->output_len[i]) != 0)
			return error_set(cause, "output '%s': %zu bytes do not fit the %zu-byte staging slot",
			    m->outputs[i].name, (size_t)out->rows * row, buf_bytes);
	}
	out->staged_bytes = off;
	return 0;
}

/* Take an input's binary_data_size bytes from the binary section at *offset into buf. */
static int
kserve_decode_binary(const struct kserve_binary *bin, size_t *offset, json_int_t size,
    const struct model_io *io, void *buf, size_t bytes, char **cause)
{
	size_t esize = graph_dtype_size(io->dtype);

	if (bin == NULL)
		return error_set(cause, "input '%s': binary_data_size without the binary tensor "
		    "extension's " KSERVE_HEADER_LENGTH " header", io->name);
	if (io->dtype == GRAPH_DT_STRING) {
		if (bin->len - *offset < (uint64_t)size)
			return error_set(cause, "input '%s': binary data is missing: %" JSON_INTEGER_FORMAT
			    " bytes announced, %zu left after the JSON header", io->name, size, bin->len - *offset);
		if (kserve_bytes_unpack(bin->data + *offset, (size_t)size, bytes / esize, buf, "input",
		    io->name, cause) != 0)
			return -1;
		*offset += (size_t)size;
		return 0;
	}
	if ((uint64_t)size != bytes)
		return error_set(cause, "input '%s': binary_data_size is %" JSON_INTEGER_FORMAT
		    ", its shape needs %zu bytes (%s)", io->name, size, bytes, graph_dtype_name(io->dtype));
	if (bin->len - *offset < bytes)
		return error_set(cause, "input '%s': binary data is missing: %zu bytes announced, "
		    "%zu left after the JSON header", io->name, bytes, bin->len - *offset);
	kserve_tensor_copy_le(buf, bin->data + *offset, bytes / esize, esize);
	*offset += bytes;
	return 0;
}

/* Decode input i's "data" array into buf (bytes long). */
static int
kserve_decode_json_data(const json_t *input, const model_t *m, int i,
    const struct kserve_infer *ki, void *buf, size_t bytes, char **cause)
{
	const struct model_io *io = &m->inputs[i];
	int batch = m->max_batch_size > 0;
	struct kserve_sink sink = { io->name, buf, io->dtype, graph_dtype_size(io->dtype), 0, 0,
	    io->ndims + batch, { ki->rows } };
	const json_t *data = json_object_get(input, "data");

	sink.want = bytes / sink.esize;
	memcpy(&sink.shape[batch], ki->shape.dims[i], (size_t)io->ndims * sizeof sink.shape[0]);
	if (data == NULL)
		return error_set(cause, "input '%s': missing field 'data'", io->name);
	if (!json_is_array(data))
		return error_set(cause, "input '%s': field 'data' must be an array", io->name);
	if (kserve_decode_data(data, 1, &sink, cause) != 0)
		return -1;
	if (sink.count != sink.want)
		return error_set(cause, "input '%s': data has %zu elements, its shape needs %zu",
		    io->name, sink.count, sink.want);
	return kserve_check_nesting(data, 0, &sink, cause);
}

/*
 * Decode input i's data from the request text at span sp.  The codec takes
 * flat or fully nested arrays of valid numbers; whatever it refuses is
 * judged again by jansson and the tree decoder, so the answer (a nesting
 * the tree path also takes, or its message) is the same as without it.
 */
static int
kserve_decode_text(const char *text, const struct tensor_text_span *sp, const model_t *m,
    int i, const struct kserve_infer *ki, void *dst, size_t bytes, char **cause)
{
	const struct model_io *io = &m->inputs[i];
	int64_t shape[MODEL_MAX_DIMS + 1];
	int nd = 0, rc;
	json_error_t jerr;
	json_t *tmp, *data;

	if (m->max_batch_size > 0)
		shape[nd++] = ki->rows;
	memcpy(shape + nd, ki->shape.dims[i], (size_t)io->ndims * sizeof shape[0]);
	nd += io->ndims;
	if (tensor_text_decode(text + sp->off, sp->len, io->dtype, shape, nd, dst,
	    bytes / graph_dtype_size(io->dtype), NULL, NULL) == 0)
		return 0;
	/* BYTES elements may hold NUL (Triton's string example sends "he\u0000llo"); slots keep lengths. */
	if ((data = json_loadb(text + sp->off, sp->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr)) == NULL)
		return error_set(cause, "input '%s': malformed JSON in 'data' at byte %d: %s",
		    io->name, jerr.position, jerr.text);
	if ((tmp = json_object()) == NULL || json_object_set_new(tmp, "data", data) != 0) {
		json_decref(tmp);
		return error_set(cause, "out of memory");
	}
	rc = kserve_decode_json_data(tmp, m, i, ki, dst, bytes, cause);
	json_decref(tmp);
	return rc;
}

/*
 * Write input i (inputs[j] of the request) into buf: from "data" (the
 * tree, or src's text when masked), binary_data_size bytes of bin at
 * *offset, or point it into a shared-memory region.
 */
static int
kserve_decode_tensor(const json_t *input, const struct kserve_source *src, size_t j,
    const struct kserve_binary *bin, size_t *offset, const model_t *m, int i,
    struct kserve_infer *ki, unsigned char *buf, char **cause)
{
	const char *name = m->inputs[i].name;
	const json_t *data = json_object_get(input, "data");
	struct kserve_shm_ref ref;
	json_int_t size;

	if (kserve_input_parameters(input, name, &size, &ref, cause) != 0)
		return -1;
	if ((size >= 0 || ref.region != NULL) && data != NULL)
		return error_set(cause, "input '%s': give 'data' or parameters.%s, not both", name,
		    size >= 0 ? "binary_data_size" : "shared_memory_region");
	if (ref.region != NULL && m->inputs[i].dtype == GRAPH_DT_STRING)
		return kserve_shm_take_bytes(src, &ref, name, ki, buf + ki->input_offset[i],
		    ki->input_len[i], cause);
	if (ref.region != NULL) {
		ki->input_bytes -= ki->input_len[i];	/* not staged */
		return kserve_shm_take(src, &ref, "input", name, ki->input_len[i], 1, ki,
		    &ki->input_at[i], cause);
	}
	if (size >= 0)
		return kserve_decode_binary(bin, offset, size, &m->inputs[i],
		    buf + ki->input_offset[i], ki->input_len[i], cause);
	if (json_is_null(data) && src != NULL && src->text != NULL && j < src->nspans &&
	    src->spans[j].present)
		return kserve_decode_text(src->text, &src->spans[j], m, i, ki,
		    buf + ki->input_offset[i], ki->input_len[i], cause);
	return kserve_decode_json_data(input, m, i, ki, buf + ki->input_offset[i],
	    ki->input_len[i], cause);
}

/* Point the outputs asked for in shared memory into their regions. */
static int
kserve_place_outputs(const struct kserve_source *src, const model_t *m,
    struct kserve_infer *out, char **cause)
{
	struct kserve_shm_ref ref;
	int k;

	for (k = 0; k < m->noutputs; k++) {
		if (out->output_region[k] == NULL)
			continue;
		ref.region = out->output_region[k];
		ref.offset = out->output_region_offset[k];
		ref.size = out->output_region_size[k];
		/* A BYTES output is staged as slots and packed into its region with the answer. */
		if (kserve_shm_take(src, &ref, "output", m->outputs[k].name,
		    m->outputs[k].dtype == GRAPH_DT_STRING ? ref.size : out->output_len[k], 0, out,
		    m->outputs[k].dtype == GRAPH_DT_STRING ? &out->output_pack[k] : &out->output_at[k],
		    cause) != 0)
			return -1;
		if (m->outputs[k].dtype == GRAPH_DT_STRING &&
		    shm_region_kind(out->regions[out->nregions - 1]) == SHM_KIND_CUDA)
			return error_set(cause, "output '%s': BYTES tensors go to system shared memory, "
			    "not CUDA shared memory", m->outputs[k].name);
		out->output_shm[k] = out->regions[out->nregions - 1];
		out->output_region[k] = NULL;	/* the tree goes before the answer is written */
	}
	return 0;
}

/* Check the request and write its input tensors into buf (the tree's data only). */
int
kserve_decode_infer(const json_t *root, const struct kserve_binary *bin,
    const model_t *m, void *buf, size_t buf_bytes, struct kserve_infer *out,
    char **cause)
{
	return kserve_decode_request(root, NULL, bin, m, buf, buf_bytes, out, cause);
}

/* Check the request's header and lay its tensors out for buf_bytes of buffer, without touching a buffer. */
static int
kserve_decode_plan(const json_t *root, const struct kserve_source *src, const model_t *m,
    size_t buf_bytes, struct kserve_infer *out, char **cause)
{
	const json_t *by_index[MODEL_MAX_IO] = { 0 };
	int order[MODEL_MAX_IO];
	size_t n = 0;

	memset(out, 0, sizeof *out);
	if (!json_is_object(root))
		return error_set(cause, "request body must be a JSON object");
	if (kserve_check_parameters(root, cause) != 0 ||
	    kserve_opt_string(root, "id", "", &out->id, cause) != 0 ||
	    kserve_decode_parameters(root, out, cause) != 0 ||
	    kserve_decode_outputs(root, m, out, cause) != 0)
		return -1;
	if (kserve_find_inputs(root, m, by_index, order, &n, cause) != 0 ||
	    kserve_decode_shapes(by_index, m, out, cause) != 0 ||
	    kserve_layout(m, buf_bytes, out, cause) != 0 ||
	    kserve_place_outputs(src, m, out, cause) != 0)
		return -1;
	return 0;
}

/* Check the request and lay it out, for a buffer of out->staged_bytes to be found. */
int
kserve_decode_layout(const json_t *root, const struct kserve_source *src, const model_t *m,
    struct kserve_infer *out, char **cause)
{
	return kserve_decode_plan(root, src, m, SIZE_MAX, out, cause);
}

/* Write the input tensors of a request laid out by kserve_decode_layout into buf, or point them into shared memory. */
int
kserve_decode_tensors(const json_t *root, const struct kserve_source *src,
    const struct kserve_binary *bin, const model_t *m, void *buf, struct kserve_infer *out,
    char **cause)
{
	const json_t *by_index[MODEL_MAX_IO] = { 0 };
	int order[MODEL_MAX_IO];
	size_t offset = 0, n = 0, j;

	if (kserve_find_inputs(root, m, by_index, order, &n, cause) != 0)
		return -1;
	/* In the request's order: binary sections follow it. */
	for (j = 0; j < n; j++)
		if (kserve_decode_tensor(by_index[order[j]], src, j, bin, &offset, m, order[j], out,
		    buf, cause) != 0)
			return -1;
	if (bin != NULL && offset != bin->len)
		return error_set(cause, "%zu bytes of binary data are left over after the inputs took "
		    "%zu (check binary_data_size and " KSERVE_HEADER_LENGTH ")", bin->len - offset,
		    offset);
	out->binary_output = 0;
	for (j = 0; j < (size_t)out->nwanted; j++)
		out->binary_output |= out->binary[out->wanted[j]];
	return 0;
}

/* Check the request and write its input tensors into buf, or point them into shared memory. */
int
kserve_decode_request(const json_t *root, const struct kserve_source *src,
    const struct kserve_binary *bin, const model_t *m, void *buf, size_t buf_bytes,
    struct kserve_infer *out, char **cause)
{
	if (kserve_decode_plan(root, src, m, buf_bytes, out, cause) != 0)
		return -1;
	return kserve_decode_tensors(root, src, bin, m, buf, out, cause);
}

/* Dump and free a JSON value (NULL: building it ran out of memory); NULL with *cause. */
char *
kserve_json_body(json_t *v, size_t *len, char **cause)
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

/* A shape array: batch (-1: any; left out when the model has no batch dimension) then dims (-1: variable). */
static json_t *
kserve_shape(const model_t *m, json_int_t batch, int ndims, const int64_t *dims)
{
	json_t *shape = json_array();
	int i;

	if (shape == NULL || (m->max_batch_size > 0 && json_array_append_new(shape, json_integer(batch)) != 0)) {
		json_decref(shape);
		return NULL;
	}
	for (i = 0; i < ndims; i++) {
		if (json_array_append_new(shape, json_integer(dims[i])) != 0) {
			json_decref(shape);
			return NULL;
		}
	}
	return shape;
}

/*
 * Output o's description: name, datatype, shape, and "data": null where
 * its values go (kserve_splice_data prints them there), or parameters
 * naming its binary bytes; nothing more for an output in shared memory.
 */
static json_t *
kserve_output_tensor(const model_t *m, int o, const struct kserve_infer *ki, const unsigned char *buf,
    const struct kserve_classes *cls, char **cause)
{
	const struct model_io *io = &m->outputs[o];
	size_t bytes = ki->output_len[o];
	json_t *t;

	if (ki->classify[o] > 0) {
		if ((t = kserve_classified_tensor(m, o, ki, &cls[o])) == NULL)
			error_set(cause, "out of memory (or a class label that is not UTF-8)");
		return t;
	}
	t = json_pack("{s:s, s:s, s:o}", "name", io->name, "datatype", graph_dtype_name(io->dtype),
	    "shape", kserve_shape(m, ki->rows, io->ndims, ki->layout.dims[o]));
	/*
	 * An output written to shared memory is described by name, datatype and
	 * shape only, as Triton answers: Triton's C++ client (perf_analyzer)
	 * reads any "parameters" of an output as binary_data_size and fails
	 * without it, and the caller knows where it asked the data to go.
	 */
	if (io->dtype == GRAPH_DT_STRING)
		bytes = kserve_bytes_packed_size(buf + ki->output_offset[o], ki->output_len[o] / GRAPH_STRING_SLOT);
	if (t != NULL && ki->output_shm[o] == NULL && ki->binary[o])
		json_object_set_new(t, "parameters", json_pack("{s:I}", "binary_data_size", (json_int_t)bytes));
	else if (t != NULL && ki->output_shm[o] == NULL)
		json_object_set_new(t, "data", json_null());
	if (t == NULL)
		error_set(cause, "out of memory");
	return t;
}

/* 1 when output o goes back as JSON numbers (a classified output's strings are in the tree already). */
static int
kserve_json_output(const struct kserve_infer *ki, int o)
{
	return !ki->binary[o] && ki->output_shm[o] == NULL && ki->classify[o] == 0;
}

/* Most bytes of output o's values as JSON text. */
static size_t
kserve_text_bound(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf, int o)
{
	if (m->outputs[o].dtype == GRAPH_DT_STRING)
		return kserve_bytes_json_bound(buf + ki->output_offset[o], ki->output_len[o] / GRAPH_STRING_SLOT);
	return tensor_text_encode_bound(m->outputs[o].dtype, ki->output_len[o]);
}

/* Output o's values as a JSON array at out (cap bytes, kserve_text_bound at least). */
static int
kserve_text(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf, int o, char *out,
    size_t cap, size_t *len, char **cause)
{
	enum graph_dtype dt = m->outputs[o].dtype;

	if (dt == GRAPH_DT_STRING)
		return kserve_bytes_json(buf + ki->output_offset[o], ki->output_len[o] / GRAPH_STRING_SLOT, out,
		    cap, len, cause);
	return tensor_text_encode(dt, buf + ki->output_offset[o], ki->output_len[o] / graph_dtype_size(dt),
	    out, cap, len, cause);
}

/*
 * Print each JSON output's values where the header has "data":null, in the
 * answer's order (that text cannot occur elsewhere: inside a JSON string
 * its quotes are escaped).  Returns the new text (s is freed) or NULL.
 */
static char *
kserve_splice_data(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf,
    char *s, size_t *len, char **cause)
{
	static const char mark[] = "\"data\":null";
	const size_t mlen = sizeof mark - 1, skip = sizeof "\"data\":" - 1;
	size_t cap = *len + 1, used = 0, from = 0, n, tlen;
	const char *at;
	char *out, *grown;
	int k, o;

	for (k = 0; k < ki->nwanted; k++)
		if (kserve_json_output(ki, ki->wanted[k]))
			cap += kserve_text_bound(m, ki, buf, ki->wanted[k]);
	if ((out = xmalloc(cap)) == NULL) {
		free(s);
		return error_set(cause, "out of memory"), NULL;
	}
	for (k = 0; k < ki->nwanted; k++) {
		o = ki->wanted[k];
		if (!kserve_json_output(ki, o))
			continue;
		at = strstr(s + from, mark);
		n = (size_t)(at - s) + skip - from;
		memcpy(out + used, s + from, n);
		used += n;
		from += n + (mlen - skip);
		if (kserve_text(m, ki, buf, o, out + used, cap - used, &tlen, cause) != 0) {
			free(s);
			free(out);
			return error_prefix(cause, "output '%s'", m->outputs[o].name), NULL;
		}
		used += tlen;
	}
	memcpy(out + used, s + from, *len - from + 1);
	used += *len - from;
	free(s);
	*len = used;
	if ((grown = xrealloc(out, used + 1)) != NULL)
		out = grown;
	return out;
}

/* Append the binary outputs, in the answer's order, to the JSON header at s (header_len bytes). */
static char *
kserve_append_binary(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf,
    const struct kserve_classes *cls, char *s, size_t header_len, size_t *len)
{
	size_t total = header_len, esize;
	char *p;
	int k, o;

	for (k = 0; k < ki->nwanted; k++) {
		o = ki->wanted[k];
		if (!ki->binary[o])
			continue;
		if (m->outputs[o].dtype == GRAPH_DT_STRING)
			total += kserve_bytes_packed_size(buf + ki->output_offset[o],
			    ki->output_len[o] / GRAPH_STRING_SLOT);
		else
			total += ki->classify[o] > 0 ? cls[o].bytes : ki->output_len[o];
	}
	if ((p = xrealloc(s, total + 1)) == NULL) {
		free(s);
		return NULL;
	}
	*len = header_len;
	for (k = 0; k < ki->nwanted; k++) {
		o = ki->wanted[k];
		if (!ki->binary[o])
			continue;
		if (ki->classify[o] > 0) {
			kserve_classes_binary(&cls[o], (unsigned char *)p + *len);
			*len += cls[o].bytes;
			continue;
		}
		if (m->outputs[o].dtype == GRAPH_DT_STRING) {
			esize = ki->output_len[o] / GRAPH_STRING_SLOT;
			kserve_bytes_pack(buf + ki->output_offset[o], esize, (unsigned char *)p + *len);
			*len += kserve_bytes_packed_size(buf + ki->output_offset[o], esize);
			continue;
		}
		esize = graph_dtype_size(m->outputs[o].dtype);
		/* The same byte swap reads and writes: it is its own inverse. */
		kserve_tensor_copy_le(p + *len, buf + ki->output_offset[o], ki->output_len[o] / esize, esize);
		*len += ki->output_len[o];
	}
	return p;
}

/* The response's JSON tree: model, version, id, each wanted output described. */
static json_t *
kserve_response_tree(const model_t *m, const char *id, const struct kserve_infer *ki,
    const unsigned char *buf, const struct kserve_classes *cls, char **cause)
{
	json_t *outputs = json_array(), *tensor, *resp;
	char version[24];
	int k;

	if (outputs == NULL)
		return error_set(cause, "out of memory"), NULL;
	for (k = 0; k < ki->nwanted; k++) {
		if ((tensor = kserve_output_tensor(m, ki->wanted[k], ki, buf, cls, cause)) == NULL) {
			json_decref(outputs);
			return NULL;
		}
		if (json_array_append_new(outputs, tensor) != 0) {
			json_decref(outputs);
			return error_set(cause, "out of memory"), NULL;
		}
	}
	snprintf(version, sizeof version, "%lld", (long long)m->version);
	resp = json_pack("{s:s, s:s, s:o}", "model_name", m->name,
	    "model_version", version, "outputs", outputs);
	if (resp != NULL && id != NULL && json_object_set_new(resp, "id", json_string(id)) != 0) {
		json_decref(resp);
		resp = NULL;
	}
	if (resp == NULL)
		error_set(cause, "out of memory");
	return resp;
}

/* Encode the answer to an inference request, as JSON or as a JSON header and binary data. */
char *
kserve_encode_infer(const model_t *m, const char *id, const struct kserve_infer *ki,
    const void *buf, size_t *len, size_t *header_len, char **cause)
{
	struct kserve_classes cls[MODEL_MAX_IO];
	json_t *resp = NULL;
	char *s = NULL;
	int o;

	memset(cls, 0, sizeof cls);
	if (kserve_bytes_pack_regions(m, ki, buf, cause) != 0 ||
	    kserve_classify_outputs(m, ki, buf, cls, cause) != 0 ||
	    (resp = kserve_response_tree(m, id, ki, buf, cls, cause)) == NULL)
		goto out;
	if ((s = kserve_json_body(resp, header_len, cause)) == NULL ||
	    (s = kserve_splice_data(m, ki, buf, s, header_len, cause)) == NULL)
		goto out;
	*len = *header_len;
	if (ki->binary_output && (s = kserve_append_binary(m, ki, buf, cls, s, *header_len, len)) == NULL)
		error_set(cause, "out of memory");
out:
	for (o = 0; o < MODEL_MAX_IO; o++)
		kserve_classes_free(&cls[o]);
	return s;
}

/* Server metadata, with the KServe extensions implemented. */
char *
kserve_encode_server_metadata(const struct kserve_server_info *info, size_t *len, char **cause)
{
	json_t *ext = json_pack("[s,s,s,s,s]", KSERVE_EXT_BINARY, KSERVE_EXT_STATISTICS,
	    KSERVE_EXT_REPOSITORY, KSERVE_EXT_CONFIGURATION, KSERVE_EXT_CLASSIFICATION);

	if (ext != NULL && info->system_shm && json_array_append_new(ext, json_string(KSERVE_EXT_SYSTEM_SHM)) != 0)
		ext = (json_decref(ext), NULL);
	if (ext != NULL && info->cuda_shm && json_array_append_new(ext, json_string(KSERVE_EXT_CUDA_SHM)) != 0)
		ext = (json_decref(ext), NULL);
	return kserve_json_body(json_pack("{s:s, s:s, s:o}", "name", PACKAGE_NAME,
	    "version", PACKAGE_VERSION, "extensions", ext), len, cause);
}

/* Tensors' metadata: name, datatype, shape with -1 for the batch and variable dims. */
static json_t *
kserve_tensors_metadata(const model_t *m, const struct model_io *io, int n)
{
	json_t *a = json_array();
	int i;

	for (i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", io[i].name,
		    "datatype", graph_dtype_name(io[i].dtype),
		    "shape", kserve_shape(m, -1, io[i].ndims, io[i].dims))) != 0)
			a = (json_decref(a), NULL);
	return a;
}

/* Model metadata. */
char *
kserve_encode_model_metadata(const model_t *m, size_t *len, char **cause)
{
	char version[24];

	snprintf(version, sizeof version, "%lld", (long long)m->version);
	return kserve_json_body(json_pack("{s:s, s:[s], s:s, s:o, s:o}", "name", m->name,
	    "versions", version, "platform", m->platform != NULL ? m->platform : KSERVE_PLATFORM,
	    "inputs", kserve_tensors_metadata(m, m->inputs, m->ninputs),
	    "outputs", kserve_tensors_metadata(m, m->outputs, m->noutputs)), len, cause);
}

/* Copy s with every byte outside printable ASCII replaced, so JSON accepts it. */
static char *
kserve_ascii(const char *s)
{
	char *t = xstrdup(s), *p;

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

/* A repository load request's body. */
int
kserve_decode_load_request(const char *body, size_t len, char **config, char **cause)
{
	json_t *root, *params, *v;
	json_error_t err;
	const char *key;
	int rc = -1;

	*config = NULL;
	if (len == 0)
		return 0;
	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return error_set(cause, "malformed JSON at line %d, column %d: %s", err.line, err.column, err.text);
	params = json_object_get(root, "parameters");
	if (!json_is_object(root) || (params != NULL && !json_is_object(params))) {
		error_set(cause, "a load request is {\"parameters\": {\"config\": \"<model.json text>\"}}");
		goto out;
	}
	json_object_foreach(params, key, v) {
		if (strcmp(key, "config") != 0) {
			error_set(cause, "load parameter '%s' is not supported (only \"config\")", key);
			goto out;
		}
		if (!json_is_string(v)) {
			error_set(cause, "load parameter \"config\" must be a string holding model.json's JSON");
			goto out;
		}
		if ((*config = xstrdup(json_string_value(v))) == NULL) {
			error_set(cause, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* {"error": msg}. */
char *
kserve_encode_error(const char *msg, size_t *len, char **cause)
{
	return kserve_json_body(json_pack("{s:o}", "error", kserve_string(msg)), len, cause);
}

/* {"key": true|false}. */
char *
kserve_encode_flag(const char *key, int value, size_t *len, char **cause)
{
	return kserve_json_body(json_pack("{s:b}", key, value), len, cause);
}
