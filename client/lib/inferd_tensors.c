/*
 * inferd_tensors.c: the request's tensor-list form and the models' tensor
 * tables: names resolved to the model's indices, dims and sizes checked
 * here with a message naming the tensor, then written as the wire's list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libinferd_impl.h"

/* The wire's datatypes by code: KServe name and element bytes. */
static const struct {
	const char *name;
	size_t bytes;
} inferd__dtypes[] = {
	[INFERD_WIRE_FP32] = { "FP32", 4 }, [INFERD_WIRE_FP16] = { "FP16", 2 },
	[INFERD_WIRE_INT64] = { "INT64", 8 }, [INFERD_WIRE_INT32] = { "INT32", 4 },
	[INFERD_WIRE_INT8] = { "INT8", 1 }, [INFERD_WIRE_UINT8] = { "UINT8", 1 },
	[INFERD_WIRE_BOOL] = { "BOOL", 1 },
};

/* Fill a public tensor description from the wire's; -1 when the wire's is malformed. */
int
inferd__tensor_info(const struct inferd_wire_tensor_info *w, struct inferd_tensor_info *t)
{
	uint32_t d;

	if (w->datatype < INFERD_WIRE_FP32 || w->datatype > INFERD_WIRE_BOOL || w->ndims > 8 ||
	    memchr(w->name, '\0', sizeof w->name) == NULL)
		return -1;
	memset(t, 0, sizeof *t);
	memcpy(t->name, w->name, sizeof t->name);
	t->datatype = inferd__dtypes[w->datatype].name;
	t->elem_bytes = inferd__dtypes[w->datatype].bytes;
	t->ndims = (int)w->ndims;
	for (d = 0; d < 8; d++)
		t->follows_input[d] = t->follows_dim[d] = -1;
	for (d = 0; d < w->ndims; d++) {
		if (w->follows[d] >= 0 && w->follows[d] / 256 < INFERD_WIRE_MAX_TENSORS && w->follows[d] % 256 < 8) {
			t->follows_input[d] = w->follows[d] / 256;
			t->follows_dim[d] = w->follows[d] % 256;
		}
		if (w->dims[d] < -1 || w->dims[d] == 0 || w->max_dims[d] < 1 ||
		    (w->dims[d] > 0 && w->max_dims[d] != w->dims[d]))
			return -1;
		t->dims[d] = w->dims[d];
		t->max_dims[d] = w->max_dims[d];
	}
	return 0;
}

/* The wire code of a public datatype name (one of the table's pointers). */
static uint32_t
inferd__dtype_code(const char *name)
{
	uint32_t i;

	for (i = INFERD_WIRE_FP32; i <= INFERD_WIRE_BOOL; i++)
		if (strcmp(inferd__dtypes[i].name, name) == 0)
			return i;
	return 0;
}

/* Index of the tensor named name among n, or -1. */
static int
inferd__find(const struct inferd_tensor_info *t, int n, const char *name)
{
	int i;

	for (i = 0; name != NULL && i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * The dims io gives for tensor t into w: its own; else the model's fixed
 * dims, and for an output the input dims its variable ones follow (in[],
 * the inputs' dims by index); 0 or INFERD_EINVAL.
 */
static int
inferd__io_dims(const char *side, const struct inferd_tensor_info *t, const struct inferd_io *io,
    const int64_t (*in)[8], struct inferd_wire_tensor *w)
{
	int d;

	w->ndims = (uint32_t)t->ndims;
	for (d = 0; d < t->ndims; d++) {
		if (io->ndims != 0)
			w->dims[d] = io->dims[d];
		else if (t->dims[d] >= 0)
			w->dims[d] = t->dims[d];
		else if (in != NULL && t->follows_input[d] >= 0)
			w->dims[d] = in[t->follows_input[d]][t->follows_dim[d]];
		else
			return inferd__fail(INFERD_EINVAL, "%s '%s' has variable dims: give them", side, t->name);
	}
	if (io->ndims != 0 && io->ndims != t->ndims)
		return inferd__fail(INFERD_EINVAL, "%s '%s' has %d non-batch dims, the request gives %d",
		    side, t->name, t->ndims, io->ndims);
	for (d = 0; d < t->ndims; d++) {
		if (t->dims[d] >= 0 && w->dims[d] != t->dims[d])
			return inferd__fail(INFERD_EINVAL, "%s '%s' dim %d is %lld, the model's is %lld", side,
			    t->name, d + 1, (long long)w->dims[d], (long long)t->dims[d]);
		if (w->dims[d] < 1 || w->dims[d] > t->max_dims[d])
			return inferd__fail(INFERD_EINVAL, "%s '%s' dim %d is %lld, the model's maximum is %lld",
			    side, t->name, d + 1, (long long)w->dims[d], (long long)t->max_dims[d]);
	}
	return 0;
}

/*
 * Every input's dims of a list naming each input of m once (ios, n of
 * them), by the model's input index and zero past each input's ndims; 0,
 * or INFERD_EINVAL naming the tensor as inferd__list_build does.
 */
int
inferd__inputs_dims(const struct inferd_model *m, const struct inferd_io *ios, int n, int64_t (*in)[8])
{
	int seen[INFERD_WIRE_MAX_TENSORS] = { 0 };
	struct inferd_wire_tensor w;
	int i, k, rc;

	if (n != m->ninputs || ios == NULL)
		return inferd__fail(INFERD_EINVAL, "model %s takes %d inputs, the request gives %d", m->name,
		    m->ninputs, n);
	memset(in, 0, INFERD_WIRE_MAX_TENSORS * sizeof in[0]);
	for (i = 0; i < n; i++) {
		if ((k = inferd__find(m->inputs, m->ninputs, ios[i].name)) < 0)
			return inferd__fail(INFERD_EINVAL, "the model has no input '%s'",
			    ios[i].name ? ios[i].name : "(null)");
		if (seen[k]++)
			return inferd__fail(INFERD_EINVAL, "input '%s' is given twice", ios[i].name);
		memset(&w, 0, sizeof w);
		if ((rc = inferd__io_dims("input", &m->inputs[k], &ios[i], NULL, &w)) != 0)
			return rc;
		memcpy(in[k], w.dims, sizeof in[k]);
	}
	return 0;
}

/* Resolve one io of side against the model's tensors into w, checking its tensor's size. */
static int
inferd__io_build(const inferd_conn_t *c, const char *side, const struct inferd_tensor_info *tabs,
    int n, int *seen, const struct inferd_io *io, int rows, const int64_t (*in)[8],
    struct inferd_wire_tensor *w)
{
	const struct inferd_tensor_info *t;
	uint64_t bytes;
	int i, d, rc;

	if ((i = inferd__find(tabs, n, io->name)) < 0)
		return inferd__fail(INFERD_EINVAL, "the model has no %s '%s'", side, io->name ? io->name : "(null)");
	if (seen[i]++)
		return inferd__fail(INFERD_EINVAL, "%s '%s' is given twice", side, io->name);
	t = &tabs[i];
	memset(w, 0, sizeof *w);
	w->index = (uint32_t)i;
	w->datatype = inferd__dtype_code(t->datatype);
	if ((rc = inferd__io_dims(side, t, io, in, w)) != 0)
		return rc;
	bytes = t->elem_bytes * (uint64_t)rows;
	for (d = 0; d < t->ndims; d++)
		bytes *= (uint64_t)w->dims[d];	/* bounded by the model's maxima */
	if (!inferd__tensor_ok(c, io->tensor, bytes))
		return inferd__fail(INFERD_EINVAL, "%s '%s': the tensor is not a block of this region of "
		    "%llu bytes", side, t->name, (unsigned long long)bytes);
	w->offset = io->tensor->offset;
	w->bytes = bytes;
	return 0;
}

/* Check a list-form request against its model and build the wire's list in l. */
int
inferd__list_build(const inferd_conn_t *c, const struct inferd_request *r, struct inferd__list *l)
{
	const struct inferd_model *m = r->model;
	int seen_in[INFERD_WIRE_MAX_TENSORS] = { 0 }, seen_out[INFERD_WIRE_MAX_TENSORS] = { 0 };
	int64_t in[INFERD_WIRE_MAX_TENSORS][8];
	int i, rc;

	if (r->input != NULL || r->output != NULL)
		return inferd__fail(INFERD_EINVAL, "give input/output or inputs/outputs, not both");
	if (r->ninputs != m->ninputs || r->inputs == NULL)
		return inferd__fail(INFERD_EINVAL, "model %s takes %d inputs, the request gives %d", m->name,
		    m->ninputs, r->ninputs);
	if (r->noutputs < 1 || r->noutputs > m->noutputs || r->outputs == NULL)
		return inferd__fail(INFERD_EINVAL, "model %s has %d outputs, the request asks for %d", m->name,
		    m->noutputs, r->noutputs);
	for (i = 0; i < r->ninputs; i++) {
		if ((rc = inferd__io_build(c, "input", m->inputs, m->ninputs, seen_in, &r->inputs[i], r->rows,
		    NULL, &l->t[i])) != 0)
			return rc;
		memcpy(in[l->t[i].index], l->t[i].dims, sizeof in[0]);
	}
	for (i = 0; i < r->noutputs; i++)
		if ((rc = inferd__io_build(c, "output", m->outputs, m->noutputs, seen_out, &r->outputs[i],
		    r->rows, (const int64_t (*)[8])in, &l->t[r->ninputs + i])) != 0)
			return rc;
	l->ninputs = (uint32_t)r->ninputs;
	l->noutputs = (uint32_t)r->noutputs;
	return 0;
}

/*
 * Write l into the list area of submission slot slot (allocated in the
 * region on first use: one list per ring entry, reused once the daemon has
 * taken the entry, which it copies the list out of first); *offset gets
 * where it lies.
 */
int
inferd__list_place(inferd_conn_t *c, uint32_t slot, const struct inferd__list *l, uint64_t *offset)
{
	const size_t one = 2 * INFERD_WIRE_MAX_TENSORS * sizeof(struct inferd_wire_tensor);
	int rc;

	if (c->lists.data == NULL) {
		/* Under the connection's lock; the allocator's own lock nests inside it. */
		pthread_mutex_lock(&c->alloc_lock);
		rc = inferd__alloc_locked(c, (size_t)c->sq_entries * one, &c->lists);
		pthread_mutex_unlock(&c->alloc_lock);
		if (rc != 0)
			return rc;
	}
	*offset = c->lists.offset + (uint64_t)slot * one;
	memcpy(c->base + *offset, l->t, (size_t)(l->ninputs + l->noutputs) * sizeof l->t[0]);
	return 0;
}

/* 1 when tensor t lies inside this connection's data area with at least need bytes. */
int
inferd__tensor_ok(const inferd_conn_t *c, const struct inferd_tensor *t, uint64_t need)
{
	return t != NULL && t->offset >= c->layout.data_offset && t->offset <= c->region_bytes &&
	    t->bytes <= c->region_bytes - t->offset && t->bytes >= need &&
	    t->data == c->base + t->offset;
}
