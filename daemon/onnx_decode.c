/* onnx_decode.c: ONNX ModelProto, GraphProto, NodeProto, AttributeProto and ValueInfoProto, decoded in place. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "file_copy.h"
#include "onnx_decode_impl.h"

/* Field numbers (onnx.proto). */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER = 2, MODEL_GRAPH = 7, MODEL_OPSET = 8 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INIT = 5, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12,
	GRAPH_VALUE_INFO = 13, GRAPH_SPARSE_INIT = 15 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTR = 5, NODE_DOMAIN = 7 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_S = 4, ATTR_T = 5, ATTR_FLOATS = 7, ATTR_INTS = 8,
	ATTR_STRINGS = 9, ATTR_TYPE = 20, ATTR_REF = 21 };
/* Count the occurrences of each field number below nfields in the message r. */
static int
dec_count(struct onnx_dec *d, const struct pb_reader *r, size_t *counts, uint32_t nfields)
{
	struct pb_reader c = *r;
	struct pb_field f;
	int rc;

	memset(counts, 0, nfields * sizeof *counts);
	while ((rc = dec_next(d, &c, &f)) > 0)
		if (f.num < nfields)
			counts[f.num]++;
	return rc;
}

/* An arena array of n elements of size each (never NULL on success, even for n = 0). */
static void *
dec_array(struct onnx_dec *d, size_t n, size_t size)
{
	if (n > SIZE_MAX / size) {
		dec_err(d, "%zu elements overflow the address space", n);
		return NULL;
	}
	return dec_alloc(d, n * size);
}

/* A repeated string field's next element (pass 2 of a two-pass message). */
static int
dec_string_at(struct onnx_dec *d, const struct pb_field *f, const char *fname, const char **arr, size_t *k)
{
	size_t plen = dec_push(d, fname, (long long)*k);
	int rc = dec_string(d, f, fname, &arr[*k]);

	dec_pop(d, plen);
	(*k)++;
	return rc;
}

/* The attribute type a value field (by number) stands for; 0 for fields that hold no value. */
static int
attr_field_type(uint32_t num)
{
	static const int8_t types[] = {
		[2] = ONNX_ATTR_FLOAT, [3] = ONNX_ATTR_INT, [4] = ONNX_ATTR_STRING, [5] = ONNX_ATTR_TENSOR,
		[6] = ONNX_ATTR_GRAPH, [7] = ONNX_ATTR_FLOATS, [8] = ONNX_ATTR_INTS, [9] = ONNX_ATTR_STRINGS,
		[10] = ONNX_ATTR_TENSORS, [11] = ONNX_ATTR_GRAPHS, [14] = ONNX_ATTR_TYPE_PROTO,
		[15] = ONNX_ATTR_TYPE_PROTOS, [22] = ONNX_ATTR_SPARSE_TENSOR, [23] = ONNX_ATTR_SPARSE_TENSORS,
	};

	return num < sizeof types / sizeof types[0] ? types[num] : 0;
}

/* What pass 1 learns about an AttributeProto. */
struct attr_scan {
	int64_t type;
	uint32_t fields;	/* bit per value field present (types 1..14) */
	size_t nfloats, nints, nstrings, ntensors;
};

/* Pass 1 over an attribute: its type field, which value fields it has, how many list elements. */
static int
attr_scan(struct onnx_dec *d, const struct pb_reader *r, struct attr_scan *s)
{
	struct pb_reader c = *r;
	struct pb_field f;
	int rc;

	memset(s, 0, sizeof *s);
	while ((rc = dec_next(d, &c, &f)) > 0) {
		if (attr_field_type(f.num) != 0)
			s->fields |= 1u << attr_field_type(f.num);
		if (f.num == ATTR_TYPE && dec_int(d, &f, "type", 1, &s->type) != 0)
			return -1;
		if (f.num == ATTR_REF)
			return dec_err(d, "ref_attr_name: attribute references are only valid inside functions");
		if (f.num == ATTR_FLOATS && pb_scalars_count(&c, &f, PB_FIXED32, &s->nfloats, d->cause) != 0)
			return dec_fail(d);
		if (f.num == ATTR_INTS && pb_scalars_count(&c, &f, PB_VARINT, &s->nints, d->cause) != 0)
			return dec_fail(d);
		s->nstrings += f.num == ATTR_STRINGS;
		s->ntensors += f.num == ATTR_T;
	}
	return rc;
}

/* The attribute's type: its type field, which every value field present must agree with, or the one field set. */
static int
attr_type(struct onnx_dec *d, const struct attr_scan *s, int *type)
{
	int t;

	if (s->type < 0 || s->type > ONNX_ATTR_TYPE_PROTOS)
		return dec_err(d, "unknown attribute type %lld", (long long)s->type);
	if (s->ntensors > 1)
		return dec_err(d, "field t appears %zu times (merging is not supported)", s->ntensors);
	if (s->type != 0) {
		if ((s->fields & ~(1u << s->type)) != 0)
			return dec_err(d, "attribute of type %lld also sets a value field of type %d",
			    (long long)s->type, __builtin_ctz(s->fields & ~(1u << s->type)));
		*type = (int)s->type;
		return 0;
	}
	if (s->fields == 0)
		return dec_err(d, "attribute has neither a type nor a value");
	t = __builtin_ctz(s->fields);
	if (s->fields != 1u << t)
		return dec_err(d, "attribute has no type and several value fields");
	*type = t;
	return 0;
}

/* Store one FLOATS element (pb_scalars_each callback). */
static int
attr_put_float(void *arg, uint64_t v, char **cause)
{
	struct onnx_attr *a = arg;
	uint32_t bits = (uint32_t)v;

	(void)cause;
	memcpy((float *)a->floats + a->nfloats++, &bits, sizeof bits);
	return 0;
}

/* Store one INTS element (pb_scalars_each callback). */
static int
attr_put_int(void *arg, uint64_t v, char **cause)
{
	struct onnx_attr *a = arg;

	(void)cause;
	((int64_t *)a->ints)[a->nints++] = (int64_t)v;
	return 0;
}

/* Pass 2 over an attribute: one field into a. */
static int
attr_field(struct onnx_dec *d, const struct pb_reader *c, const struct pb_field *f, struct onnx_attr *a)
{
	uint32_t bits;

	switch (f->num) {
	case ATTR_NAME:
		return dec_string(d, f, "name", &a->name);
	case ATTR_F:
		if (dec_expect(d, f, PB_FIXED32, "f") != 0)
			return -1;
		bits = (uint32_t)f->u;
		memcpy(&a->f, &bits, sizeof bits);
		return 0;
	case ATTR_I:
		return dec_int(d, f, "i", 0, &a->i);
	case ATTR_S:
		return dec_string(d, f, "s", &a->s);
	case ATTR_T:
		return dec_tensor(d, c, f, &a->t);
	case ATTR_FLOATS:
		return pb_scalars_each(c, f, PB_FIXED32, attr_put_float, a, d->cause) ? dec_fail(d) : 0;
	case ATTR_INTS:
		return pb_scalars_each(c, f, PB_VARINT, attr_put_int, a, d->cause) ? dec_fail(d) : 0;
	case ATTR_STRINGS:
		return dec_string_at(d, f, "strings", (const char **)a->strings, &a->nstrings);
	default:
		return 0;
	}
}

/* Decode the AttributeProto in f into a. */
static int
dec_attr(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_attr *a)
{
	struct attr_scan s;
	struct pb_reader c;
	struct pb_field g;
	int rc;

	if (dec_expect(d, f, PB_LEN, "attribute") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	if (attr_scan(d, &c, &s) != 0 || attr_type(d, &s, &a->type) != 0)
		return -1;
	a->name = a->s = "";
	if ((a->floats = dec_array(d, s.nfloats, sizeof(float))) == NULL ||
	    (a->ints = dec_array(d, s.nints, sizeof(int64_t))) == NULL ||
	    (a->strings = dec_array(d, s.nstrings, sizeof(char *))) == NULL)
		return -1;
	while ((rc = dec_next(d, &c, &g)) > 0)
		if (attr_field(d, &c, &g, a) != 0)
			return -1;
	if (rc == 0 && a->name[0] == '\0')
		return dec_err(d, "attribute has no name");
	if (rc == 0 && a->type == ONNX_ATTR_TENSOR && s.ntensors == 0)
		return dec_err(d, "attribute '%s' of type TENSOR has no tensor", a->name);
	return rc;
}

/* Decode the NodeProto in f into n. */
static int
dec_node(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_node *n)
{
	size_t counts[NODE_DOMAIN + 1], na = 0, plen;
	struct pb_reader c;
	struct pb_field g;
	int rc = 0;

	if (dec_expect(d, f, PB_LEN, "node") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	if (dec_count(d, &c, counts, NODE_DOMAIN + 1) != 0)
		return -1;
	n->name = n->op_type = n->domain = "";
	if ((n->inputs = dec_array(d, counts[NODE_INPUT], sizeof(char *))) == NULL ||
	    (n->outputs = dec_array(d, counts[NODE_OUTPUT], sizeof(char *))) == NULL ||
	    (n->attrs = dec_array(d, counts[NODE_ATTR], sizeof *n->attrs)) == NULL)
		return -1;
	while (rc == 0 && (rc = dec_next(d, &c, &g)) > 0) {
		rc = 0;
		if (g.num == NODE_INPUT)
			rc = dec_string_at(d, &g, "input", (const char **)n->inputs, &n->ninputs);
		else if (g.num == NODE_OUTPUT)
			rc = dec_string_at(d, &g, "output", (const char **)n->outputs, &n->noutputs);
		else if (g.num == NODE_NAME)
			rc = dec_string(d, &g, "name", &n->name);
		else if (g.num == NODE_OP_TYPE)
			rc = dec_string(d, &g, "op_type", &n->op_type);
		else if (g.num == NODE_DOMAIN)
			rc = dec_string(d, &g, "domain", &n->domain);
		else if (g.num == NODE_ATTR) {
			plen = dec_push(d, "attribute", (long long)na);
			rc = dec_attr(d, &c, &g, (struct onnx_attr *)&n->attrs[na++]);
			dec_pop(d, plen);
		}
	}
	n->nattrs = na;
	if (rc == 0 && n->op_type[0] == '\0')
		return dec_err(d, "node has no op_type");
	return rc;
}

/* Decode a TensorShapeProto.Dimension into dim (a oneof: the last of dim_value and dim_param wins). */
static int
dec_dim(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_dim *dim)
{
	struct pb_reader c;
	struct pb_field g;
	int rc;

	if (dec_expect(d, f, PB_LEN, "dim") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	while ((rc = dec_next(d, &c, &g)) > 0) {
		if (g.num == 1) {
			if (dec_int(d, &g, "dim_value", 0, &dim->value) != 0)
				return -1;
			if (dim->value < 0)
				return dec_err(d, "dim_value %lld is negative", (long long)dim->value);
			dim->known = 1;
			dim->param = NULL;
		} else if (g.num == 2) {
			if (dec_string(d, &g, "dim_param", &dim->param) != 0)
				return -1;
			dim->known = 0;
			dim->value = 0;
		}
	}
	return rc;
}

/* Decode a TensorShapeProto into v's dims. */
static int
dec_shape(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_value_info *v)
{
	struct pb_reader c;
	struct pb_field g;
	size_t plen;
	int rc;

	if (dec_expect(d, f, PB_LEN, "shape") != 0)
		return -1;
	if (v->ndims >= 0)
		return dec_err(d, "field shape appears twice (merging is not supported)");
	pb_init_sub(&c, r, f);
	v->ndims = 0;
	while ((rc = dec_next(d, &c, &g)) > 0) {
		if (g.num != 1)
			continue;
		if (v->ndims == ONNX_MAX_DIMS)
			return dec_err(d, "shape has more than %d dims", ONNX_MAX_DIMS);
		plen = dec_push(d, "dim", v->ndims);
		rc = dec_dim(d, &c, &g, &v->dims[v->ndims++]);
		dec_pop(d, plen);
		if (rc != 0)
			return -1;
	}
	return rc;
}

/* Decode a TypeProto: for a tensor type, its elem_type and shape; other types leave v's defaults. */
static int
dec_type(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_value_info *v)
{
	struct pb_reader c, t;
	struct pb_field g, h;
	int64_t elem = 0;
	int rc;

	if (dec_expect(d, f, PB_LEN, "type") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	while ((rc = dec_next(d, &c, &g)) > 0) {
		if (g.num != 1)
			continue;
		if (dec_expect(d, &g, PB_LEN, "tensor_type") != 0)
			return -1;
		pb_init_sub(&t, &c, &g);
		while ((rc = dec_next(d, &t, &h)) > 0) {
			if (h.num == 1 && dec_int(d, &h, "elem_type", 1, &elem) != 0)
				return -1;
			if (h.num == 1)
				v->elem = (int)elem;
			if (h.num == 2 && dec_shape(d, &t, &h, v) != 0)
				return -1;
		}
		if (rc != 0)
			return -1;
	}
	return rc;
}

/* Decode the ValueInfoProto in f into v. */
static int
dec_value_info(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f,
    struct onnx_value_info *v)
{
	struct pb_reader c;
	struct pb_field g;
	int rc, ntypes = 0;

	if (dec_expect(d, f, PB_LEN, "value info") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	v->name = "";
	v->ndims = -1;
	while ((rc = dec_next(d, &c, &g)) > 0) {
		if (g.num == 1 && dec_string(d, &g, "name", &v->name) != 0)
			return -1;
		if (g.num == 2 && ntypes++ > 0)
			return dec_err(d, "field type appears twice (merging is not supported)");
		if (g.num == 2 && dec_type(d, &c, &g, v) != 0)
			return -1;
	}
	return rc;
}

/* The graph's arrays, sized by pass 1. */
static int
graph_alloc(struct onnx_dec *d, const size_t *counts, struct onnx_graph *g)
{
	if (counts[GRAPH_SPARSE_INIT] > 0)
		return dec_err(d, "sparse initializers are not supported (%zu in the graph)",
		    counts[GRAPH_SPARSE_INIT]);
	g->name = "";
	if ((g->nodes = dec_array(d, counts[GRAPH_NODE], sizeof *g->nodes)) == NULL ||
	    (g->initializers = dec_array(d, counts[GRAPH_INIT], sizeof *g->initializers)) == NULL ||
	    (g->inputs = dec_array(d, counts[GRAPH_INPUT], sizeof *g->inputs)) == NULL ||
	    (g->outputs = dec_array(d, counts[GRAPH_OUTPUT], sizeof *g->outputs)) == NULL ||
	    (g->value_infos = dec_array(d, counts[GRAPH_VALUE_INFO], sizeof *g->value_infos)) == NULL)
		return -1;
	return 0;
}

/* Pass 2 over a graph: one field into g. */
static int
graph_field(struct onnx_dec *d, const struct pb_reader *c, const struct pb_field *f, struct onnx_graph *g)
{
	size_t plen;
	int rc;

	if (f->num == GRAPH_NAME)
		return dec_string(d, f, "name", &g->name);
	if (f->num == GRAPH_NODE) {
		plen = dec_push(d, "node", (long long)g->nnodes);
		rc = dec_node(d, c, f, (struct onnx_node *)&g->nodes[g->nnodes++]);
	} else if (f->num == GRAPH_INIT) {
		plen = dec_push(d, "initializer", (long long)g->ninitializers);
		rc = dec_tensor(d, c, f, (struct onnx_tensor *)&g->initializers[g->ninitializers++]);
	} else if (f->num == GRAPH_INPUT) {
		plen = dec_push(d, "input", (long long)g->ninputs);
		rc = dec_value_info(d, c, f, (struct onnx_value_info *)&g->inputs[g->ninputs++]);
	} else if (f->num == GRAPH_OUTPUT) {
		plen = dec_push(d, "output", (long long)g->noutputs);
		rc = dec_value_info(d, c, f, (struct onnx_value_info *)&g->outputs[g->noutputs++]);
	} else if (f->num == GRAPH_VALUE_INFO) {
		plen = dec_push(d, "value_info", (long long)g->nvalue_infos);
		rc = dec_value_info(d, c, f, (struct onnx_value_info *)&g->value_infos[g->nvalue_infos++]);
	} else
		return 0;
	dec_pop(d, plen);
	return rc;
}

/* Decode the GraphProto in f into g. */
static int
dec_graph(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_graph *g)
{
	size_t counts[GRAPH_SPARSE_INIT + 1], plen;
	struct pb_reader c;
	struct pb_field h;
	int rc = -1;

	if (dec_expect(d, f, PB_LEN, "graph") != 0)
		return -1;
	plen = dec_push(d, "graph", -1);
	pb_init_sub(&c, r, f);
	if (dec_count(d, &c, counts, GRAPH_SPARSE_INIT + 1) != 0 || graph_alloc(d, counts, g) != 0)
		goto out;
	while ((rc = dec_next(d, &c, &h)) > 0)
		if (graph_field(d, &c, &h, g) != 0) {
			rc = -1;
			break;
		}
out:
	dec_pop(d, plen);
	return rc;
}

/* Decode the OperatorSetIdProto in f into o. */
static int
dec_opset(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f, struct onnx_opset *o)
{
	struct pb_reader c;
	struct pb_field g;
	int rc;

	if (dec_expect(d, f, PB_LEN, "opset_import") != 0)
		return -1;
	pb_init_sub(&c, r, f);
	o->domain = "";
	while ((rc = dec_next(d, &c, &g)) > 0) {
		if (g.num == 1 && dec_string(d, &g, "domain", &o->domain) != 0)
			return -1;
		if (g.num == 2 && dec_int(d, &g, "version", 0, &o->version) != 0)
			return -1;
	}
	return rc;
}

/* Pass 2 over the model: one field into m. */
static int
model_field(struct onnx_dec *d, const struct pb_reader *c, const struct pb_field *f, onnx_model_t *m)
{
	size_t plen;
	int rc;

	switch (f->num) {
	case MODEL_IR_VERSION:
		return dec_int(d, f, "ir_version", 0, &m->ir_version);
	case MODEL_PRODUCER:
		return dec_string(d, f, "producer_name", &m->producer_name);
	case MODEL_GRAPH:
		return dec_graph(d, c, f, &m->graph);
	case MODEL_OPSET:
		plen = dec_push(d, "opset_import", (long long)m->nopsets);
		rc = dec_opset(d, c, f, (struct onnx_opset *)&m->opsets[m->nopsets++]);
		dec_pop(d, plen);
		return rc;
	default:
		return 0;
	}
}

/* Decode the ModelProto in buf into the priv's model. */
static int
dec_model(struct onnx_dec *d, const uint8_t *buf, size_t len)
{
	onnx_model_t *m = &d->priv->model;
	size_t counts[MODEL_OPSET + 1];
	struct pb_reader r;
	struct pb_field f;
	int rc;

	pb_init(&r, buf, len, buf);
	if (dec_count(d, &r, counts, MODEL_OPSET + 1) != 0)
		return -1;
	if (counts[MODEL_GRAPH] == 0)
		return dec_err(d, "the model has no graph");
	if (counts[MODEL_GRAPH] > 1)
		return dec_err(d, "field graph appears %zu times (merging is not supported)",
		    counts[MODEL_GRAPH]);
	if (counts[MODEL_OPSET] == 0)
		return dec_err(d, "the model imports no opset (opset_import is required)");
	m->producer_name = "";
	if ((m->opsets = dec_array(d, counts[MODEL_OPSET], sizeof *m->opsets)) == NULL)
		return -1;
	while ((rc = dec_next(d, &r, &f)) > 0)
		if (model_field(d, &r, &f, m) != 0)
			return -1;
	return rc;
}

/*
 * Align t in place when it views the .onnx file's copy at an address its
 * element size does not divide: its bytes move down by less than that size
 * (7 at most).  Such a view is ONNX_COPY_ALIGN_MAX bytes or more (smaller
 * ones were copied into the arena), so the 8 bytes before it are its own
 * framing: the raw_data field's tag and length (4 bytes at least) and, at
 * worst, its TensorProto's tag and length in the parent (4 more), all decoded
 * by now and viewed by nothing.  So the weights end aligned without a second
 * copy of them.
 */
static void
dec_align_view(const struct onnx_priv *pv, struct onnx_tensor *t)
{
	const uint8_t *p = t->data;
	size_t esize = onnx_elem_size(t->elem), k;

	if (pv->bytes == NULL || esize <= 1 || p < pv->bytes || p >= pv->bytes + pv->size ||
	    (k = (uintptr_t)p % esize) == 0 || (size_t)(p - pv->bytes) < 8 || t->nbytes < ONNX_COPY_ALIGN_MAX)
		return;
	memmove(pv->bytes + (p - pv->bytes) - k, p, t->nbytes);
	t->data = p - k;
}

/* Align every tensor viewing the .onnx file's copy: the initializers and the nodes' tensor attributes. */
static void
dec_align_views(struct onnx_priv *pv)
{
	const struct onnx_graph *g = &pv->model.graph;
	size_t i, k;

	for (i = 0; i < g->ninitializers; i++)
		dec_align_view(pv, (struct onnx_tensor *)&g->initializers[i]);
	for (i = 0; i < g->nnodes; i++)
		for (k = 0; k < g->nodes[i].nattrs; k++)
			if (g->nodes[i].attrs[k].type == ONNX_ATTR_TENSOR)
				dec_align_view(pv, (struct onnx_tensor *)&g->nodes[i].attrs[k].t);
}

/* Decode buf (len bytes) into a new model; it owns and frees owned (buf itself, or NULL). */
static int
onnx_decode_common(const uint8_t *buf, size_t len, uint8_t *owned, int dirfd, onnx_model_t **out,
    char **cause)
{
	struct onnx_priv *pv;
	struct onnx_dec d;

	*out = NULL;
	if ((pv = xcalloc(1, sizeof *pv)) == NULL) {
		file_copy_free(owned, len);
		return error_set(cause, "out of memory");
	}
	pv->model.priv = pv;
	pv->bytes = owned;
	pv->size = owned != NULL ? len : 0;
	dec_arena_init(pv, len);
	memset(&d, 0, sizeof d);
	d.priv = pv;
	d.dirfd = dirfd;
	d.cause = cause;
	if (dec_model(&d, buf, len) != 0) {
		onnx_model_free(&pv->model);
		return -1;
	}
	dec_align_views(pv);
	*out = &pv->model;
	return 0;
}

/* Decode a model held in memory (external data refused). */
int
onnx_model_decode(const void *buf, size_t len, onnx_model_t **out, char **cause)
{
	return onnx_decode_common(buf, len, NULL, -1, out, cause);
}

/* Open the directory holding path (external data locations are relative to it). */
static int
onnx_open_dir(const char *path, char **cause)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (slash == NULL)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = xstrndup(path, (size_t)(slash - path));
	if (dir == NULL)
		return error_set(cause, "out of memory");
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		error_set(cause, "%s: %s", dir, strerror(errno));
	free(dir);
	return fd;
}

/* Copy a model file and decode it; external data is looked up beside it. */
int
onnx_model_load(const char *path, onnx_model_t **out, char **cause)
{
	uint8_t *bytes = NULL;
	size_t len = 0;
	int dirfd, rc;

	*out = NULL;
	if (file_copy_read(AT_FDCWD, path, &bytes, &len, cause) != 0)
		return error_prefix(cause, "%s", path);
	if (len == 0) {
		error_set(cause, "empty file");
		return error_prefix(cause, "%s", path);
	}
	if ((dirfd = onnx_open_dir(path, cause)) < 0) {
		file_copy_free(bytes, len);
		return error_prefix(cause, "%s", path);
	}
	rc = onnx_decode_common(bytes, len, bytes, dirfd, out, cause);
	close(dirfd);
	if (rc != 0)
		return error_prefix(cause, "%s", path);
	return 0;
}

/* Give back the pages of the file copies that no range of keep touches. */
size_t
onnx_model_release_unused(onnx_model_t *m, const struct file_range *keep, size_t n)
{
	struct onnx_priv *pv = m->priv;
	size_t i, given = file_copy_release(pv->bytes, pv->size, keep, n);

	for (i = 0; i < pv->n_ext; i++)
		given += file_copy_release(pv->ext[i].bytes, pv->ext[i].size, keep, n);
	return given;
}

/* Free the arena and the copies of the model file and its external data. */
void
onnx_model_free(onnx_model_t *m)
{
	struct onnx_priv *pv;

	if (m == NULL)
		return;
	pv = m->priv;
	dec_ext_free(pv);
	dec_arena_free(pv);
	file_copy_free(pv->bytes, pv->size);
	free(pv);
}

/* The opset version imported for a domain, "" and "ai.onnx" alike. */
int64_t
onnx_model_opset(const onnx_model_t *m, const char *domain)
{
	size_t i;

	if (strcmp(domain, "ai.onnx") == 0)
		domain = "";
	for (i = 0; i < m->nopsets; i++) {
		const char *od = strcmp(m->opsets[i].domain, "ai.onnx") == 0 ? "" : m->opsets[i].domain;

		if (strcmp(od, domain) == 0)
			return m->opsets[i].version;
	}
	return 0;
}

/* A node's attribute by name. */
const struct onnx_attr *
onnx_node_attr(const struct onnx_node *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}
