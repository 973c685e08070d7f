/*
 * inferd_output_dims.c: the output dims only the daemon can compute (a
 * strided convolution's ceil(T/2), say): the OUTPUT_DIMS round trip, the
 * connection's cache of its last answers, inferd_output_dims, and filling
 * a request's outputs given without dims.
 */
#include <stdlib.h>
#include <string.h>

#include "libinferd_impl.h"

/* Index of m's output named name, or -1. */
static int
inferd__output_index(const struct inferd_model *m, const char *name)
{
	int o;

	for (o = 0; name != NULL && o < m->noutputs; o++)
		if (strcmp(m->outputs[o].name, name) == 0)
			return o;
	return -1;
}

/* 1 when io, an output of m, gives no dims and one of them follows no input (only the daemon can compute it). */
static int
inferd__io_computed(const struct inferd_model *m, const struct inferd_io *io)
{
	int o = inferd__output_index(m, io->name), d;

	if (o < 0 || io->ndims != 0)
		return 0;
	for (d = 0; d < m->outputs[o].ndims; d++)
		if (m->outputs[o].dims[d] < 0 && m->outputs[o].follows_input[d] < 0)
			return 1;
	return 0;
}

/* The cached answer for (m, rows, in) of the current epoch, or NULL (control_lock held). */
static struct inferd__dims_entry *
inferd__dims_find(inferd_conn_t *c, const struct inferd_model *m, int rows, const int64_t (*in)[8])
{
	uint32_t epoch = __atomic_load_n(&c->dims_epoch, __ATOMIC_ACQUIRE);
	struct inferd__dims_entry *e;
	int i;

	for (i = 0; c->dims_cache != NULL && i < INFERD__DIMS_CACHE; i++) {
		e = &c->dims_cache[i];
		if (e->model == m && e->rows == rows && e->epoch == epoch &&
		    memcmp(e->in, in, (size_t)m->ninputs * sizeof e->in[0]) == 0)
			return e;
	}
	return NULL;
}

/* Where to keep a new answer: an empty entry, else the least recently used; NULL without memory (control_lock held). */
static struct inferd__dims_entry *
inferd__dims_slot(inferd_conn_t *c)
{
	struct inferd__dims_entry *e;
	int i;

	if (c->dims_cache == NULL && (c->dims_cache = calloc(INFERD__DIMS_CACHE, sizeof *c->dims_cache)) == NULL)
		return NULL;
	e = &c->dims_cache[0];
	for (i = 0; i < INFERD__DIMS_CACHE; i++) {
		if (c->dims_cache[i].model == NULL)
			return &c->dims_cache[i];
		if (c->dims_cache[i].used < e->used)
			e = &c->dims_cache[i];
	}
	return e;
}

/* 1 when output t's dims from the daemon fit its metadata: its rank, its fixed dims, at most its largest row. */
static int
inferd__dims_fit(const struct inferd_tensor_info *t, const struct inferd_wire_dims *w)
{
	uint64_t n = t->elem_bytes, max = t->elem_bytes;
	int d;

	if (w->ndims != (uint32_t)t->ndims)
		return 0;
	for (d = 0; d < t->ndims; d++) {
		if (w->dims[d] < 0 || (t->dims[d] >= 0 && w->dims[d] != t->dims[d]) ||
		    __builtin_mul_overflow(n, (uint64_t)w->dims[d], &n) ||
		    __builtin_mul_overflow(max, (uint64_t)t->max_dims[d], &max))
			return 0;
	}
	return n <= max;
}

/* Check OUTPUT_DIMS_REPLY (p, len bytes) against m and copy every output's dims into out. */
static int
inferd__dims_reply(const struct inferd_model *m, const uint8_t *p, uint32_t len, int64_t (*out)[8])
{
	struct inferd_wire_output_dims_reply h;
	struct inferd_wire_dims w;
	int o;

	if (len < sizeof h)
		return inferd__fail(INFERD_EPROTO, "OUTPUT_DIMS_REPLY of %u bytes", len);
	memcpy(&h, p, sizeof h);
	if (h.model_id != m->id || h.noutputs != (uint32_t)m->noutputs ||
	    len != sizeof h + (size_t)h.noutputs * sizeof w)
		return inferd__fail(INFERD_EPROTO, "malformed OUTPUT_DIMS_REPLY for model %s", m->name);
	for (o = 0; o < m->noutputs; o++) {
		memcpy(&w, p + sizeof h + (size_t)o * sizeof w, sizeof w);
		if (!inferd__dims_fit(&m->outputs[o], &w))
			return inferd__fail(INFERD_EPROTO, "OUTPUT_DIMS_REPLY: dims of output '%s' do not fit "
			    "its metadata", m->outputs[o].name);
		memset(out[o], 0, sizeof out[o]);
		memcpy(out[o], w.dims, (size_t)m->outputs[o].ndims * sizeof out[o][0]);
	}
	return 0;
}

/* Ask the daemon for m's output dims at rows rows and input dims in (control_lock held). */
static int
inferd__dims_fetch(inferd_conn_t *c, const struct inferd_model *m, int rows, const int64_t (*in)[8],
    int64_t (*out)[8])
{
	struct {
		struct inferd_wire_output_dims_query q;
		struct inferd_wire_dims t[INFERD_WIRE_MAX_TENSORS];
	} msg;
	uint8_t *p;
	uint32_t len;
	int k, r;

	memset(&msg, 0, sizeof msg);
	msg.q.model_id = m->id;
	msg.q.rows = (uint32_t)rows;
	msg.q.ninputs = (uint32_t)m->ninputs;
	for (k = 0; k < m->ninputs; k++) {
		msg.t[k].ndims = (uint32_t)m->inputs[k].ndims;
		memcpy(msg.t[k].dims, in[k], (size_t)m->inputs[k].ndims * sizeof msg.t[k].dims[0]);
	}
	if ((r = inferd__send(c->control_fd, INFERD_WIRE_OUTPUT_DIMS, &msg,
	    sizeof msg.q + (size_t)m->ninputs * sizeof msg.t[0], NULL, 0)) != 0 ||
	    (r = inferd__recv(c->control_fd, INFERD_WIRE_OUTPUT_DIMS_REPLY, &p, &len, c->timeout_ms)) != 0)
		return r;
	r = inferd__dims_reply(m, p, len, out);
	free(p);
	return r;
}

/* m's output dims at rows rows and input dims in (zero-padded): the cache's, else the daemon's, then kept. */
static int
inferd__dims_get(inferd_conn_t *c, const struct inferd_model *m, int rows, const int64_t (*in)[8],
    int64_t (*out)[8])
{
	struct inferd__dims_entry *e;
	uint32_t epoch;
	int r = 0;

	pthread_mutex_lock(&c->control_lock);
	epoch = __atomic_load_n(&c->dims_epoch, __ATOMIC_ACQUIRE);
	if (c->closed)
		r = inferd__closed(c);
	else if ((e = inferd__dims_find(c, m, rows, in)) != NULL) {
		memcpy(out, e->out, sizeof e->out);
		e->used = ++c->dims_clock;
	} else if ((r = inferd__dims_fetch(c, m, rows, in, out)) == INFERD_ECLOSED)
		r = inferd__closed(c);
	else if (r == 0 && (e = inferd__dims_slot(c)) != NULL) {
		*e = (struct inferd__dims_entry){ .model = m, .rows = rows, .epoch = epoch, .used = ++c->dims_clock };
		memcpy(e->in, in, sizeof e->in);
		memcpy(e->out, out, sizeof e->out);
	}
	pthread_mutex_unlock(&c->control_lock);
	return r;
}

/* Fill a request's outputs given without dims whose dims only the daemon can compute (see libinferd_impl.h). */
int
inferd__outputs_resolve(inferd_conn_t *c, struct inferd_request *r, struct inferd_io *outs)
{
	const struct inferd_model *m = r->model;
	int64_t in[INFERD_WIRE_MAX_TENSORS][8], dims[INFERD_WIRE_MAX_TENSORS][8];
	int i, o, rc, need = 0;

	/* A request of the wrong form or counts is left to inferd__list_build, which says what is wrong. */
	if (r->input != NULL || r->output != NULL || r->outputs == NULL || r->noutputs < 1 ||
	    r->noutputs > m->noutputs)
		return 0;
	for (i = 0; i < r->noutputs; i++)
		need |= inferd__io_computed(m, &r->outputs[i]);
	if (!need)
		return 0;
	if ((rc = inferd__inputs_dims(m, r->inputs, r->ninputs, in)) != 0 ||
	    (rc = inferd__dims_get(c, m, r->rows, (const int64_t (*)[8])in, dims)) != 0)
		return rc;
	for (i = 0; i < r->noutputs; i++) {
		outs[i] = r->outputs[i];
		if (outs[i].ndims == 0 && (o = inferd__output_index(m, outs[i].name)) >= 0) {
			outs[i].ndims = m->outputs[o].ndims;
			memcpy(outs[i].dims, dims[o], sizeof outs[i].dims);
		}
	}
	r->outputs = outs;
	return 0;
}

/* Check inferd_output_dims's model and rows against the connection. */
static int
inferd__dims_args(inferd_conn_t *c, const struct inferd_model *m, int rows)
{
	int max = m->max_batch_size > 0 ? m->max_batch_size : 1;

	if (m->id >= c->models_cap || c->models[m->id] != m)
		return inferd__fail(INFERD_EINVAL, "the model was not looked up on this connection "
		    "(use inferd_model_get on it)");
	if (rows < 1 || rows > max)
		return inferd__fail(INFERD_EINVAL, "rows is %d; model %s takes 1 to %d rows", rows, m->name, max);
	return 0;
}

/* The dims of a model's outputs for given rows and input dims. */
int
inferd_output_dims(inferd_conn_t *c, const struct inferd_model *m, int rows, const struct inferd_io *inputs,
    int ninputs, struct inferd_io *outputs, int noutputs)
{
	int64_t in[INFERD_WIRE_MAX_TENSORS][8], dims[INFERD_WIRE_MAX_TENSORS][8];
	int i, o, rc;

	inferd__clear_error();
	if (c == NULL || m == NULL || noutputs < 0 || (noutputs > 0 && outputs == NULL))
		return inferd__fail(INFERD_EINVAL, "inferd_output_dims: bad argument");
	if ((rc = inferd__reconnect_if_needed(c)) != 0 || (rc = inferd__dims_args(c, m, rows)) != 0)
		return rc;
	for (i = 0; i < noutputs; i++)
		if (inferd__output_index(m, outputs[i].name) < 0)
			return inferd__fail(INFERD_EINVAL, "the model has no output '%s'",
			    outputs[i].name ? outputs[i].name : "(null)");
	if ((rc = inferd__inputs_dims(m, inputs, ninputs, in)) != 0 ||
	    (rc = inferd__dims_get(c, m, rows, (const int64_t (*)[8])in, dims)) != 0)
		return rc;
	for (i = 0; i < noutputs; i++) {
		o = inferd__output_index(m, outputs[i].name);
		outputs[i].ndims = m->outputs[o].ndims;
		memcpy(outputs[i].dims, dims[o], sizeof outputs[i].dims);
	}
	return 0;
}
