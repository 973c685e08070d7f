/* onnx_import_tensors.c: the importer's name map, ONNX element types, and the tensors it appends to the graph. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "onnx_import.h"
#include "onnx_import_impl.h"

/* FNV-1a hash of a name. */
static uint64_t
name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* Grow the name map to hold at least need entries at half load. */
static int
name_map_grow(struct name_map *nm, size_t need)
{
	struct name_slot *old = nm->slots;
	size_t ocap = nm->cap, cap = 64, i;

	while (cap < 2 * need)
		cap *= 2;
	if (cap <= ocap)
		return 0;
	if ((nm->slots = xcalloc(cap, sizeof *nm->slots)) == NULL) {
		nm->slots = old;
		return -1;
	}
	nm->cap = cap;
	nm->count = 0;
	for (i = 0; i < ocap; i++)
		if (old[i].key != NULL)
			(void)name_map_put(nm, old[i].key, old[i].value);
	free(old);
	return 0;
}

/* Bind key (which must outlive the map) to value, replacing an old binding. */
int
name_map_put(struct name_map *nm, const char *key, int value)
{
	size_t i;

	if (name_map_grow(nm, nm->count + 1) < 0)
		return -1;
	for (i = name_hash(key) & (nm->cap - 1); nm->slots[i].key != NULL; i = (i + 1) & (nm->cap - 1))
		if (strcmp(nm->slots[i].key, key) == 0) {
			nm->slots[i].value = value;
			return 0;
		}
	nm->slots[i].key = key;
	nm->slots[i].value = value;
	nm->count++;
	return 0;
}

/* Value bound to key, or -1. */
int
name_map_get(const struct name_map *nm, const char *key)
{
	size_t i;

	if (nm->cap == 0)
		return -1;
	for (i = name_hash(key) & (nm->cap - 1); nm->slots[i].key != NULL; i = (i + 1) & (nm->cap - 1))
		if (strcmp(nm->slots[i].key, key) == 0)
			return nm->slots[i].value;
	return -1;
}

/* Map an ONNX element type to a graph dtype. */
int
onnx_import_dtype(int elem, enum graph_dtype *out)
{
	switch (elem) {
	case ONNX_FLOAT: *out = GRAPH_DT_F32; return 0;
	case ONNX_FLOAT16: *out = GRAPH_DT_F16; return 0;
	case ONNX_INT64: *out = GRAPH_DT_I64; return 0;
	case ONNX_INT32: *out = GRAPH_DT_I32; return 0;
	case ONNX_INT8: *out = GRAPH_DT_I8; return 0;
	case ONNX_UINT8: *out = GRAPH_DT_U8; return 0;
	case ONNX_BOOL: *out = GRAPH_DT_BOOL; return 0;
	case ONNX_STRING: *out = GRAPH_DT_STRING; return 0;
	default: return -1;
	}
}

/* Name of an ONNX element type for messages. */
const char *
onnx_elem_name(int elem)
{
	static const char *const names[] = { "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16",
	    "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
	    "COMPLEX64", "COMPLEX128", "BFLOAT16" };

	return elem >= 0 && elem < (int)(sizeof names / sizeof names[0]) ? names[elem] : "unknown";
}

/* Append a tensor named name (copied) to the graph and bind the name; returns its index or -1. */
int
imp_tensor_add(struct imp *im, const char *name, enum graph_dtype dt, char **cause)
{
	graph_t *g = im->g;
	struct graph_tensor *t;

	if (g->ntensors == im->tcap) {
		size_t cap = im->tcap ? 2 * im->tcap : 256;
		struct graph_tensor *nt = xrealloc(g->tensors, cap * sizeof *nt);

		if (nt == NULL)
			return error_set(cause, "out of memory");
		g->tensors = nt;
		im->tcap = cap;
	}
	t = &g->tensors[g->ntensors];
	memset(t, 0, sizeof *t);
	t->dtype = dt;
	t->ndims = -1;
	if ((t->name = xstrdup(name)) == NULL)
		return error_set(cause, "out of memory");
	g->ntensors++;
	if (name_map_put(&im->names, t->name, (int)g->ntensors - 1) < 0)
		return error_set(cause, "out of memory");
	return (int)g->ntensors - 1;
}

/* Add a CONST tensor viewing an ONNX tensor's bytes (no copy). */
int
imp_const_add(struct imp *im, const char *name, const struct onnx_tensor *src, char **cause)
{
	enum graph_dtype dt;
	struct graph_tensor *t;
	int k, i;

	if (onnx_import_dtype(src->elem, &dt) < 0)
		return error_set(cause, "constant '%s': dtype %s not supported", name,
		    onnx_elem_name(src->elem));
	if (src->ndims < 0 || src->ndims > GRAPH_MAX_DIMS)
		return error_set(cause, "constant '%s': rank %d not supported", name, src->ndims);
	if ((k = imp_tensor_add(im, name, dt, cause)) < 0)
		return -1;
	t = &im->g->tensors[k];
	t->flags = GRAPH_TENSOR_CONST;
	t->ndims = src->ndims;
	for (i = 0; i < src->ndims; i++)
		t->dims[i] = src->dims[i];
	t->data = src->data;
	t->nbytes = src->nbytes;
	return k;
}
