/* safetensors.c: the safetensors format (8-byte LE header length, JSON header, raw data), validated. */
#include "config.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "file_copy.h"
#include "safetensors.h"

/* Header lengths beyond this are refused before parsing (the format's own limit is 100 MB). */
#define ST_MAX_HEADER (100u * 1024 * 1024)

struct st_file {
	char *path;
	const uint8_t *bytes;	/* the whole file, a private copy (file_copy.h) */
	size_t size;
	const uint8_t *data;	/* start of the data section */
	uint64_t data_size;
	size_t count;
	struct st_tensor *tensors;
};

static const struct {
	const char *name;
	size_t size;
} st_dtypes[] = {
	{ "F64", 8 }, { "F32", 4 }, { "F16", 2 }, { "BF16", 2 },
	{ "I64", 8 }, { "I32", 4 }, { "I16", 2 }, { "I8", 1 },
	{ "U64", 8 }, { "U32", 4 }, { "U16", 2 }, { "U8", 1 },
	{ "BOOL", 1 }, { "F8_E4M3", 1 }, { "F8_E5M2", 1 },
};

/* Element size of a dtype name; 0 if unknown. */
static size_t
st_dtype_size(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
		if (strcmp(st_dtypes[i].name, name) == 0)
			return st_dtypes[i].size;
	return 0;
}

/* Read a JSON integer into a uint64 range-checked value. */
static int
st_json_u64(json_t *v, uint64_t *out)
{
	json_int_t i;

	if (!json_is_integer(v))
		return -1;
	i = json_integer_value(v);
	if (i < 0)
		return -1;
	*out = (uint64_t)i;
	return 0;
}

/* Parse one tensor entry: dtype, shape, data_offsets, and their agreement. */
static int
st_parse_tensor(st_file_t *f, const char *name, json_t *obj,
    struct st_tensor *t, char **cause)
{
	json_t *dtype, *shape, *offs, *dim;
	uint64_t count = 1, d;
	size_t i;

	if (!json_is_object(obj))
		return error_set(cause, "tensor '%s': entry is not an object", name);
	dtype = json_object_get(obj, "dtype");
	shape = json_object_get(obj, "shape");
	offs = json_object_get(obj, "data_offsets");
	if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offs))
		return error_set(cause, "tensor '%s': needs string dtype, array shape and array data_offsets", name);
	t->elem_size = st_dtype_size(json_string_value(dtype));
	if (t->elem_size == 0)
		return error_set(cause, "tensor '%s': unknown dtype '%s'", name, json_string_value(dtype));
	snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dtype));
	if (json_array_size(shape) > ST_MAX_DIMS)
		return error_set(cause, "tensor '%s': %zu dimensions (at most %d)", name, json_array_size(shape), ST_MAX_DIMS);
	t->ndim = (int)json_array_size(shape);
	json_array_foreach(shape, i, dim) {
		if (st_json_u64(dim, &d) != 0 || (d != 0 && count > UINT64_MAX / d))
			return error_set(cause, "tensor '%s': bad shape dimension %zu", name, i);
		t->shape[i] = (int64_t)d;
		count *= d;
	}
	if (json_array_size(offs) != 2 || st_json_u64(json_array_get(offs, 0), &t->begin) != 0 ||
	    st_json_u64(json_array_get(offs, 1), &t->end) != 0 || t->begin > t->end)
		return error_set(cause, "tensor '%s': data_offsets must be [begin, end] with begin <= end", name);
	if (t->end > f->data_size)
		return error_set(cause, "tensor '%s': data_offsets [%llu, %llu] point outside the data section (%llu bytes; file truncated?)",
		    name, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)f->data_size);
	if (count > UINT64_MAX / t->elem_size || t->end - t->begin != count * t->elem_size)
		return error_set(cause, "tensor '%s': data_offsets cover %llu bytes but shape and dtype need %llu",
		    name, (unsigned long long)(t->end - t->begin), (unsigned long long)(count * t->elem_size));
	t->name = xstrdup(name);
	if (t->name == NULL)
		return error_set(cause, "out of memory");
	return 0;
}

/* Order tensors by their first byte. */
static int
st_cmp_begin(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Refuse byte ranges that overlap (the format forbids it; it would alias weights). */
static int
st_check_overlap(st_file_t *f, char **cause)
{
	struct st_tensor *sorted;
	size_t i;
	int rc = 0;

	if (f->count < 2)
		return 0;
	sorted = xmalloc(f->count * sizeof *sorted);
	if (sorted == NULL)
		return error_set(cause, "out of memory");
	memcpy(sorted, f->tensors, f->count * sizeof *sorted);
	qsort(sorted, f->count, sizeof *sorted, st_cmp_begin);
	for (i = 1; i < f->count && rc == 0; i++) {
		if (sorted[i].begin < sorted[i - 1].end)
			rc = error_set(cause, "tensors '%s' and '%s' overlap in the data section",
			    sorted[i - 1].name, sorted[i].name);
	}
	free(sorted);
	return rc;
}

/* Parse the JSON header into f->tensors. */
static int
st_parse_header(st_file_t *f, const char *text, size_t len, char **cause)
{
	json_error_t jerr;
	json_t *root, *value;
	const char *key;
	int rc = 0;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	/* Every parse error has a text; jansson leaves none when it cannot allocate its lexer. */
	if (root == NULL && (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0'))
		return error_set(cause, "out of memory parsing the header");
	if (root == NULL)
		return error_set(cause, "header is not JSON (line %d, column %d: %s)", jerr.line, jerr.column, jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return error_set(cause, "header is not a JSON object");
	}
	f->tensors = xcalloc(json_object_size(root) + 1, sizeof *f->tensors);
	if (f->tensors == NULL) {
		json_decref(root);
		return error_set(cause, "out of memory");
	}
	json_object_foreach(root, key, value) {
		if (strcmp(key, "__metadata__") == 0)
			continue;
		if (st_parse_tensor(f, key, value, &f->tensors[f->count], cause) != 0) {
			rc = -1;
			break;
		}
		f->count++;
	}
	json_decref(root);
	if (rc == 0)
		rc = st_check_overlap(f, cause);
	return rc;
}

/* Read the file into private memory and check that the header length fits. */
static int
st_read(st_file_t *f, char **cause)
{
	uint8_t *bytes;
	uint64_t hlen = 0;
	int i;

	if (file_copy_read(AT_FDCWD, f->path, &bytes, &f->size, cause) != 0)
		return -1;
	f->bytes = bytes;
	if (f->size < 8)
		return error_set(cause, "file is %zu bytes, shorter than the 8-byte header length", f->size);
	for (i = 7; i >= 0; i--)
		hlen = hlen << 8 | f->bytes[i];
	if (hlen > ST_MAX_HEADER || hlen > f->size - 8)
		return error_set(cause, "header length %llu is larger than the file (%zu bytes)", (unsigned long long)hlen, f->size);
	f->data = f->bytes + 8 + hlen;
	f->data_size = f->size - 8 - hlen;
	return st_parse_header(f, (const char *)f->bytes + 8, (size_t)hlen, cause);
}

/* Read and validate a safetensors file. */
int
st_open(const char *path, st_file_t **out, char **cause)
{
	st_file_t *f;

	f = xcalloc(1, sizeof *f);
	if (f == NULL || (f->path = xstrdup(path)) == NULL) {
		free(f);
		return error_set(cause, "out of memory");
	}
	if (st_read(f, cause) != 0) {
		error_prefix(cause, "%s", path);
		st_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

/* Free the copy and the table. */
void
st_close(st_file_t *f)
{
	size_t i;

	if (f == NULL)
		return;
	for (i = 0; i < f->count; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	file_copy_free((uint8_t *)f->bytes, f->size);
	free(f->path);
	free(f);
}

/* Find a tensor by name. */
const struct st_tensor *
st_find(const st_file_t *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->count; i++)
		if (strcmp(f->tensors[i].name, name) == 0)
			return &f->tensors[i];
	return NULL;
}

/* The tensor's bytes. */
const void *
st_data(const st_file_t *f, const struct st_tensor *t)
{
	return f->data + t->begin;
}

/* Number of tensors. */
size_t
st_count(const st_file_t *f)
{
	return f->count;
}

/* The i-th tensor. */
const struct st_tensor *
st_at(const st_file_t *f, size_t i)
{
	return i < f->count ? &f->tensors[i] : NULL;
}
