/* onnx_decode_tensor.c: TensorProto: dims and type checked, bytes as views (raw_data, external data) or converted. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "file_copy.h"
#include "graph.h"
#include "onnx_decode_impl.h"

/* TensorProto field numbers (onnx.proto). */
enum { T_DIMS = 1, T_DATA_TYPE = 2, T_SEGMENT = 3, T_FLOAT_DATA = 4, T_INT32_DATA = 5, T_STRING_DATA = 6,
	T_INT64_DATA = 7, T_NAME = 8, T_RAW_DATA = 9, T_DOUBLE_DATA = 10, T_UINT64_DATA = 11,
	T_EXTERNAL_DATA = 13, T_DATA_LOCATION = 14 };

/* The data of an empty tensor points here. */
static const int64_t tensor_empty[2];

/* What pass 1 learns about a TensorProto. */
struct tensor_scan {
	int64_t data_type, location;
	int ndims;
	int64_t dims[ONNX_MAX_DIMS];
	const struct pb_field *raw;	/* the last raw_data, or NULL */
	struct pb_field raw_field;
	uint32_t typed_num;		/* the typed *_data field used, 0 when none */
	size_t ntyped;
	struct pb_field ext_location, ext_offset, ext_length;	/* n = 0 and p = NULL when absent */
};

/* Bytes per element of a data type (0: no fixed width or not supported); STRING elements are graph.h's slots. */
size_t
onnx_elem_size(int elem)
{
	switch (elem) {
	case ONNX_STRING:
		return GRAPH_STRING_SLOT;
	case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL:
		return 1;
	case ONNX_UINT16: case ONNX_INT16: case ONNX_FLOAT16: case ONNX_BFLOAT16:
		return 2;
	case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32:
		return 4;
	case ONNX_INT64: case ONNX_DOUBLE: case ONNX_UINT64:
		return 8;
	default:
		return 0;
	}
}

/* The typed field that holds elem's values, per the spec's TensorProto comments; 0 for none. */
static uint32_t
tensor_typed_field(int64_t elem)
{
	switch (elem) {
	case ONNX_FLOAT:
		return T_FLOAT_DATA;
	case ONNX_INT32: case ONNX_INT16: case ONNX_INT8: case ONNX_UINT16: case ONNX_UINT8: case ONNX_BOOL:
	case ONNX_FLOAT16: case ONNX_BFLOAT16:
		return T_INT32_DATA;
	case ONNX_INT64:
		return T_INT64_DATA;
	case ONNX_DOUBLE:
		return T_DOUBLE_DATA;
	case ONNX_UINT32: case ONNX_UINT64:
		return T_UINT64_DATA;
	case ONNX_STRING:
		return T_STRING_DATA;
	default:
		return 0;
	}
}

/* A typed field's name and element wire type. */
static const char *
tensor_typed_name(uint32_t num, int *wire)
{
	*wire = num == T_FLOAT_DATA ? PB_FIXED32 : num == T_DOUBLE_DATA ? PB_FIXED64 :
	    num == T_STRING_DATA ? PB_LEN : PB_VARINT;
	switch (num) {
	case T_STRING_DATA: return "string_data";
	case T_FLOAT_DATA: return "float_data";
	case T_INT32_DATA: return "int32_data";
	case T_INT64_DATA: return "int64_data";
	case T_DOUBLE_DATA: return "double_data";
	default: return "uint64_data";
	}
}

/* Append one dim (pb_scalars_each callback). */
static int
tensor_put_dim(void *arg, uint64_t v, char **cause)
{
	struct tensor_scan *s = arg;

	if (s->ndims == ONNX_MAX_DIMS)
		return error_set(cause, "tensor has more than %d dims", ONNX_MAX_DIMS);
	if ((int64_t)v < 0)
		return error_set(cause, "dims[%d] = %lld is negative", s->ndims, (long long)v);
	s->dims[s->ndims++] = (int64_t)v;
	return 0;
}

/* One StringStringEntryProto of external_data: location, offset and length are kept, others ignored. */
static int
tensor_ext_entry(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct tensor_scan *s)
{
	struct pb_field g, key = { 0 }, value = { 0 };
	struct pb_reader c;
	int rc;

	if (dec_expect(d, f, PB_LEN, "external_data") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	while ((rc = dec_next(d, &c, &g)) > 0) {
		if ((g.num == 1 || g.num == 2) && dec_expect(d, &g, PB_LEN, g.num == 1 ? "key" : "value") != 0)
			return -1;
		if (g.num == 1)
			key = g;
		else if (g.num == 2)
			value = g;
	}
	if (rc != 0)
		return -1;
	if (key.n == 8 && memcmp(key.p, "location", 8) == 0)
		s->ext_location = value;
	else if (key.n == 6 && memcmp(key.p, "offset", 6) == 0)
		s->ext_offset = value;
	else if (key.n == 6 && memcmp(key.p, "length", 6) == 0)
		s->ext_length = value;
	return 0;
}

/* Pass 1, typed fields: all elements must come from one field; count them. */
static int
tensor_scan_typed(struct onnx_dec *d, const struct pb_reader *c, const struct pb_field *f, struct tensor_scan *s)
{
	int wire, other;

	if (s->typed_num != 0 && s->typed_num != f->num)
		return dec_err(d, "tensor has both %s and %s", tensor_typed_name(s->typed_num, &other),
		    tensor_typed_name(f->num, &wire));
	s->typed_num = f->num;
	tensor_typed_name(f->num, &wire);
	if (f->num == T_STRING_DATA) {	/* one field per string: repeated bytes are never packed */
		if (dec_expect(d, f, PB_LEN, "string_data") != 0)
			return -1;
		s->ntyped++;
		return 0;
	}
	if (pb_scalars_count(c, f, wire, &s->ntyped, d->cause) != 0)
		return dec_fail(d);
	return 0;
}

/* Pass 1: one field of a TensorProto. */
static int
tensor_scan_field(struct onnx_dec *d, const struct pb_reader *c, const struct pb_field *f,
    struct tensor_scan *s, struct onnx_tensor *t)
{
	switch (f->num) {
	case T_DIMS:
		return pb_scalars_each(c, f, PB_VARINT, tensor_put_dim, s, d->cause) ? dec_fail(d) : 0;
	case T_DATA_TYPE:
		return dec_int(d, f, "data_type", 1, &s->data_type);
	case T_SEGMENT:
		return dec_err(d, "segmented tensors are not supported");
	case T_FLOAT_DATA: case T_STRING_DATA: case T_INT32_DATA: case T_INT64_DATA: case T_DOUBLE_DATA: case T_UINT64_DATA:
		return tensor_scan_typed(d, c, f, s);
	case T_NAME:
		return dec_string(d, f, "name", &t->name);
	case T_RAW_DATA:
		if (dec_expect(d, f, PB_LEN, "raw_data") != 0)
			return -1;
		s->raw_field = *f;
		s->raw = &s->raw_field;
		return 0;
	case T_EXTERNAL_DATA:
		return tensor_ext_entry(d, c, f, s);
	case T_DATA_LOCATION:
		return dec_int(d, f, "data_location", 1, &s->location);
	default:
		return 0;
	}
}

/* The element count and byte size of the tensor's dims, refusing overflow. */
static int
tensor_size(struct onnx_dec *d, const struct tensor_scan *s, size_t esize, size_t *count, size_t *nbytes)
{
	size_t n = 1;
	int i;

	for (i = 0; i < s->ndims; i++) {
		if (s->dims[i] != 0 && n > SIZE_MAX / esize / (uint64_t)s->dims[i])
			return dec_err(d, "dims overflow: the tensor's byte size does not fit 64 bits");
		n *= (size_t)s->dims[i];
	}
	*count = n;
	*nbytes = n * esize;
	return 0;
}

/* Where pass 2 converts typed values to. */
struct tensor_fill {
	uint8_t *dst;
	size_t k, count;
	int64_t elem;
};

/* Write the low n bytes of v little-endian. */
static void
put_le(uint8_t *p, uint64_t v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Whether a typed value fits elem's width (int32_data and uint64_data values are narrowed). */
static int
tensor_value_fits(int64_t elem, uint64_t v)
{
	int64_t s = (int64_t)v;

	switch (elem) {
	case ONNX_INT32:
		return s >= INT32_MIN && s <= INT32_MAX;
	case ONNX_INT8: case ONNX_UINT8:
		return s >= -128 && s <= 255;
	case ONNX_INT16: case ONNX_UINT16: case ONNX_FLOAT16: case ONNX_BFLOAT16:
		return s >= -32768 && s <= 65535;
	case ONNX_BOOL:
		return v <= 1;
	case ONNX_UINT32:
		return v <= UINT32_MAX;
	default:
		return 1;
	}
}

/* Store one typed value at its element's width (pb_scalars_each callback). */
static int
tensor_put_value(void *arg, uint64_t v, char **cause)
{
	struct tensor_fill *fl = arg;
	size_t esize = onnx_elem_size((int)fl->elem);

	if (fl->k == fl->count)
		return error_set(cause, "more values than the dims hold");
	if (!tensor_value_fits(fl->elem, v))
		return error_set(cause, "value %lld at index %zu does not fit the element type %lld",
		    (long long)v, fl->k, (long long)fl->elem);
	put_le(fl->dst + fl->k * esize, v, esize);
	fl->k++;
	return 0;
}

/* Pass 2 for string_data: each string into its slot; longer than a slot holds is refused. */
static int
tensor_fill_strings(struct onnx_dec *d, const struct pb_reader *r, struct onnx_tensor *t)
{
	struct pb_reader c = *r;
	struct pb_field f;
	uint8_t *dst;
	size_t k = 0;
	int rc;

	if ((dst = dec_alloc(d, t->nbytes)) == NULL)
		return -1;
	while ((rc = dec_next(d, &c, &f)) > 0) {
		if (f.num != T_STRING_DATA)
			continue;
		if (f.n > GRAPH_STRING_MAX)
			return dec_err(d, "string_data[%zu] is %zu bytes long, inferd holds at most %d per string",
			    k, f.n, GRAPH_STRING_MAX);
		graph_string_put(dst + k++ * GRAPH_STRING_SLOT, f.p, f.n);
	}
	t->data = dst;
	return rc;
}

/* Pass 2 for typed fields: convert every element of field num into an arena buffer. */
static int
tensor_fill_typed(struct onnx_dec *d, const struct pb_reader *r, const struct tensor_scan *s,
    struct onnx_tensor *t, size_t count)
{
	struct tensor_fill fl = { NULL, 0, count, s->data_type };
	struct pb_reader c = *r;
	struct pb_field f;
	int rc, wire;

	if (s->typed_num == T_STRING_DATA)
		return tensor_fill_strings(d, r, t);
	if ((fl.dst = dec_alloc(d, t->nbytes)) == NULL)
		return -1;
	tensor_typed_name(s->typed_num, &wire);
	while ((rc = dec_next(d, &c, &f)) > 0)
		if (f.num == s->typed_num && pb_scalars_each(&c, &f, wire, tensor_put_value, &fl, d->cause) != 0)
			return dec_fail(d);
	t->data = fl.dst;
	return rc;
}

/* Point t at bytes p in a file's copy, or at an aligned arena copy when they are small and misaligned. */
static int
tensor_view(struct onnx_dec *d, const uint8_t *p, size_t esize, struct onnx_tensor *t)
{
	void *copy;

	if (t->nbytes == 0) {
		t->data = tensor_empty;
		return 0;
	}
	if ((uintptr_t)p % esize == 0 || t->nbytes >= ONNX_COPY_ALIGN_MAX) {
		t->data = p;
		return 0;
	}
	if ((copy = dec_alloc(d, t->nbytes)) == NULL)
		return -1;
	memcpy(copy, p, t->nbytes);
	t->data = copy;
	return 0;
}

/* Inline data: raw_data or one typed field, of exactly the size the dims say. */
static int
tensor_inline(struct onnx_dec *d, const struct pb_reader *r, const struct tensor_scan *s,
    struct onnx_tensor *t, size_t count, size_t esize)
{
	int wire;

	if (s->raw != NULL && s->typed_num != 0)
		return dec_err(d, "tensor has both raw_data and %s", tensor_typed_name(s->typed_num, &wire));
	if (s->raw != NULL && s->data_type == ONNX_STRING)
		return dec_err(d, "a STRING tensor keeps its strings in string_data, not raw_data");
	if (s->raw != NULL) {
		if (s->raw->n != t->nbytes)
			return dec_err(d, "raw_data holds %zu bytes, the dims and data type need %zu",
			    s->raw->n, t->nbytes);
		return tensor_view(d, s->raw->p, esize, t);
	}
	if (s->typed_num == 0) {
		if (count == 0)
			return tensor_view(d, NULL, esize, t);
		return dec_err(d, "tensor has no data (%zu elements expected)", count);
	}
	if (s->typed_num != tensor_typed_field(s->data_type))
		return dec_err(d, "%s cannot hold data type %lld", tensor_typed_name(s->typed_num, &wire),
		    (long long)s->data_type);
	if (s->ntyped != count)
		return dec_err(d, "%s holds %zu values, the dims need %zu", tensor_typed_name(s->typed_num, &wire),
		    s->ntyped, count);
	return tensor_fill_typed(d, r, s, t, count);
}

/* A decimal external_data value (offset, length) as a size_t. */
static int
ext_number(struct onnx_dec *d, const struct pb_field *f, const char *key, size_t *out)
{
	size_t v = 0, i;

	if (f->n == 0 || f->n > 20)
		return dec_err(d, "external_data %s '%.*s' is not a decimal number", key, (int)f->n, (const char *)f->p);
	for (i = 0; i < f->n; i++) {
		if (f->p[i] < '0' || f->p[i] > '9')
			return dec_err(d, "external_data %s '%.*s' is not a decimal number", key, (int)f->n,
			    (const char *)f->p);
		if (v > (SIZE_MAX - 9) / 10)
			return dec_err(d, "external_data %s '%.*s' is too large", key, (int)f->n, (const char *)f->p);
		v = v * 10 + (size_t)(f->p[i] - '0');
	}
	*out = v;
	return 0;
}

/* Refuse locations that are empty, absolute, hold NUL bytes or a ".." component (they must stay in the model's directory). */
static int
ext_check_location(struct onnx_dec *d, const struct pb_field *f)
{
	size_t i, start = 0;

	if (f->p == NULL || f->n == 0)
		return dec_err(d, "external data without a location");
	if (memchr(f->p, '\0', f->n) != NULL)
		return dec_err(d, "external data location holds a NUL byte");
	if (f->p[0] == '/' || f->p[0] == '\\')
		return dec_err(d, "external data location '%.*s' is absolute", (int)f->n, (const char *)f->p);
	for (i = 0; i <= f->n; i++) {
		if (i < f->n && f->p[i] != '/' && f->p[i] != '\\')
			continue;
		if (i - start == 2 && f->p[start] == '.' && f->p[start + 1] == '.')
			return dec_err(d, "external data location '%.*s' leaves the model's directory",
			    (int)f->n, (const char *)f->p);
		start = i + 1;
	}
	return 0;
}

/* Copy the external file location (relative to the model's directory) into e. */
static int
ext_read(struct onnx_dec *d, const char *location, struct onnx_ext_file *e)
{
	char *why = NULL;
	int rc;

	if (file_copy_read(d->dirfd, location, &e->bytes, &e->size, &why) == 0)
		return 0;
	rc = dec_err(d, "external data '%s': %s", location, why);
	free(why);
	return rc;
}

/* The copy of external file location, read on first use and shared afterwards. */
static const struct onnx_ext_file *
ext_file(struct onnx_dec *d, const char *location)
{
	struct onnx_priv *pv = d->priv;
	struct onnx_ext_file e, *grown;
	size_t i;

	for (i = 0; i < pv->n_ext; i++)
		if (strcmp(pv->ext[i].location, location) == 0)
			return &pv->ext[i];
	if (pv->n_ext == pv->ext_cap) {
		if ((grown = xrealloc(pv->ext, (pv->ext_cap * 2 + 4) * sizeof *grown)) == NULL) {
			dec_err(d, "out of memory");
			return NULL;
		}
		pv->ext = grown;
		pv->ext_cap = pv->ext_cap * 2 + 4;
	}
	if ((e.location = xstrdup(location)) == NULL) {
		dec_err(d, "out of memory");
		return NULL;
	}
	if (ext_read(d, location, &e) != 0) {
		free(e.location);
		return NULL;
	}
	pv->ext[pv->n_ext] = e;
	return &pv->ext[pv->n_ext++];
}

/* Free and forget every external data file's copy. */
void
dec_ext_free(struct onnx_priv *pv)
{
	size_t i;

	for (i = 0; i < pv->n_ext; i++) {
		file_copy_free(pv->ext[i].bytes, pv->ext[i].size);
		free(pv->ext[i].location);
	}
	free(pv->ext);
	pv->ext = NULL;
	pv->n_ext = pv->ext_cap = 0;
}

/* External data: location (checked), offset (default 0) and length (default: what the dims need) inside the file. */
static int
tensor_external(struct onnx_dec *d, const struct tensor_scan *s, struct onnx_tensor *t, size_t esize)
{
	const struct onnx_ext_file *e;
	size_t offset = 0, length = t->nbytes;
	char location[4096];

	if (s->raw != NULL || s->typed_num != 0)
		return dec_err(d, "tensor has data_location EXTERNAL and inline data");
	if (ext_check_location(d, &s->ext_location) != 0)
		return -1;
	if (d->dirfd < 0)
		return dec_err(d, "external data refused: the model was not loaded from a file");
	if (s->ext_location.n >= sizeof location)
		return dec_err(d, "external data location is longer than %zu bytes", sizeof location - 1);
	memcpy(location, s->ext_location.p, s->ext_location.n);
	location[s->ext_location.n] = '\0';
	if ((s->ext_offset.p != NULL && ext_number(d, &s->ext_offset, "offset", &offset) != 0) ||
	    (s->ext_length.p != NULL && ext_number(d, &s->ext_length, "length", &length) != 0))
		return -1;
	if (length != t->nbytes)
		return dec_err(d, "external data length %zu, the dims and data type need %zu", length, t->nbytes);
	if ((e = ext_file(d, location)) == NULL)
		return -1;
	if (offset > e->size || length > e->size - offset)
		return dec_err(d, "external data '%s': bytes %zu..%zu lie past its end (%zu bytes)", location,
		    offset, offset + length, e->size);
	return tensor_view(d, e->bytes == NULL ? NULL : e->bytes + offset, esize, t);
}

/* Place the data of a scanned tensor: its size from dims and type, then external, raw or typed bytes. */
static int
tensor_place(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f,
    const struct tensor_scan *s, struct onnx_tensor *t)
{
	struct pb_reader c;
	size_t esize, count = 0;

	if ((esize = onnx_elem_size((int)s->data_type)) == 0)
		return dec_err(d, "data type %lld is not supported", (long long)s->data_type);
	t->elem = (int)s->data_type;
	t->ndims = s->ndims;
	memcpy(t->dims, s->dims, sizeof s->dims);
	if (tensor_size(d, s, esize, &count, &t->nbytes) != 0)
		return -1;
	if (s->location == 1 && s->data_type == ONNX_STRING)
		return dec_err(d, "a STRING tensor cannot live in external data");
	if (s->location == 1)
		return tensor_external(d, s, t, esize);
	if (s->location != 0)
		return dec_err(d, "unknown data_location %lld", (long long)s->location);
	if (s->ext_location.p != NULL)
		return dec_err(d, "external_data without data_location EXTERNAL");
	pb_init_sub(&c, r, f);
	return tensor_inline(d, &c, s, t, count, esize);
}

/* Decode a TensorProto: pass 1 reads dims, type and where the data is; then the data is placed. */
int
dec_tensor(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_tensor *t)
{
	struct tensor_scan s;
	struct pb_reader c;
	struct pb_field g;
	size_t plen;
	int rc;

	if (t->elem != ONNX_UNDEFINED || t->name != NULL)
		return dec_err(d, "tensor field appears twice (merging is not supported)");
	if (dec_expect(d, f, PB_LEN, "tensor") != 0)
		return -1;
	memset(&s, 0, sizeof s);
	t->name = "";
	pb_init_sub(&c, r, f);
	while ((rc = dec_next(d, &c, &g)) > 0)
		if (tensor_scan_field(d, &c, &g, &s, t) != 0)
			return -1;
	if (rc != 0)
		return -1;
	/* Messages from here on name the tensor too: graph.initializer[3]('conv1.weight'). */
	plen = dec_push_quoted(d, t->name);
	rc = tensor_place(d, r, f, &s, t);
	dec_pop(d, plen);
	return rc;
}
