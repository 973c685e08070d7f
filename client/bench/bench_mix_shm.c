/*
 * bench_mix_shm.c: inferd-bench-mix over shared memory — one libinferd
 * connection per client, each request the list form naming every input and
 * output of the model — and the serial replay of the kept answers for --check.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mix.h"
#include "error.h"
#include "inferd.h"

/* Room in the region for the rings and allocator padding. */
#define MIX_REGION_SLACK (1024 * 1024)

/* Outputs' dims at one length. */
struct mix_out_dims {
	int ndims[MIX_MAX_TENSORS];
	int64_t dims[MIX_MAX_TENSORS][MIX_MAX_DIMS];
};

/* One client's connection: tensors sized for the longest request, output dims per length. */
struct mix_shm {
	inferd_conn_t *conn;
	const struct inferd_model *m;
	struct inferd_tensor in[MIX_MAX_TENSORS], out[MIX_MAX_TENSORS];
	struct inferd_io ins[MIX_MAX_TENSORS], outs[MIX_MAX_TENSORS];
	struct mix_out_dims *by_len;		/* [len_hi + 1] */
	size_t out_bytes[MIX_MAX_TENSORS];	/* the largest over the lengths */
};

/* Fill *cause from libinferd's last error. */
static int
mix_shm_error(char **cause, const char *what, int code)
{
	const char *detail = inferd_last_error();

	return error_set(cause, "%s: %s%s%s", what, inferd_strerror(code), *detail ? ": " : "", detail);
}

/* Point the inputs' list at length len (batch dim excluded, variable dims len). */
static void
mix_shm_inputs(struct mix_shm *s, const struct mix_model *m, int len)
{
	int i, d;

	for (i = 0; i < m->ninputs; i++) {
		s->ins[i].name = m->in[i].name;
		s->ins[i].tensor = &s->in[i];
		s->ins[i].ndims = m->in[i].ndims;
		for (d = 0; d < m->in[i].ndims; d++)
			s->ins[i].dims[d] = m->in[i].dims[d] < 0 ? len : m->in[i].dims[d];
	}
}

/* Ask the daemon the outputs' dims at every length once, so requests carry them. */
static int
mix_shm_shapes(struct mix_shm *s, const struct mix_run *r, char **cause)
{
	const struct mix_model *m = &r->model;
	struct mix_out_dims *od;
	size_t bytes;
	int len, k, d, rc;

	if ((s->by_len = calloc((size_t)r->set->len_hi + 1, sizeof *s->by_len)) == NULL)
		return error_set(cause, "out of memory");
	for (len = r->set->len_lo; len <= r->set->len_hi; len++) {
		mix_shm_inputs(s, m, len);
		for (k = 0; k < m->noutputs; k++) {
			memset(&s->outs[k], 0, sizeof s->outs[k]);
			s->outs[k].name = m->out[k].name;
		}
		if ((rc = inferd_output_dims(s->conn, s->m, 1, s->ins, m->ninputs, s->outs,
		    m->noutputs)) != 0) {
			mix_shm_error(cause, "output dims", rc);
			return error_prefix(cause, "--lengths: length %d", len);
		}
		od = &s->by_len[len];
		for (k = 0; k < m->noutputs; k++) {
			od->ndims[k] = s->outs[k].ndims;
			bytes = m->out[k].elem_bytes;
			for (d = 0; d < s->outs[k].ndims; d++) {
				od->dims[k][d] = s->outs[k].dims[d];
				bytes *= (size_t)s->outs[k].dims[d];
			}
			if (bytes > s->out_bytes[k])
				s->out_bytes[k] = bytes;
		}
	}
	return 0;
}

/* Connect, learn the output dims and allocate every tensor for the longest request. */
static int
mix_shm_open(struct mix_shm *s, const struct mix_run *r, char **cause)
{
	const struct mix_model *m = &r->model;
	struct inferd_options o = INFERD_OPTIONS_INIT;
	size_t in_bytes[MIX_MAX_TENSORS], total = MIX_REGION_SLACK;
	int i, rc;

	memset(s, 0, sizeof *s);
	o.sq_entries = 4;
	o.region_bytes = 16 * 1024 * 1024;	/* for the dims lookup; reconnected below */
	if ((rc = inferd_connect(r->set->socket_path, &o, &s->conn)) != 0)
		return mix_shm_error(cause, r->set->socket_path, rc);
	if ((rc = inferd_model_get(s->conn, r->set->model_name, &s->m)) != 0)
		return mix_shm_error(cause, r->set->model_name, rc);
	if (mix_shm_shapes(s, r, cause) != 0)
		return -1;
	for (i = 0; i < m->ninputs; i++)
		total += (in_bytes[i] = mix_tensor_elems(&m->in[i], r->set->len_hi) * m->in[i].elem_bytes) + 256;
	for (i = 0; i < m->noutputs; i++)
		total += s->out_bytes[i] + 256;
	if (total > o.region_bytes) {
		inferd_close(s->conn);
		o.region_bytes = total;
		if ((rc = inferd_connect(r->set->socket_path, &o, &s->conn)) != 0 ||
		    (rc = inferd_model_get(s->conn, r->set->model_name, &s->m)) != 0)
			return mix_shm_error(cause, r->set->socket_path, rc);
	}
	for (i = 0; i < m->ninputs; i++)
		if ((rc = inferd_tensor_alloc(s->conn, in_bytes[i], &s->in[i])) != 0)
			return mix_shm_error(cause, "allocating an input", rc);
	for (i = 0; i < m->noutputs; i++)
		if ((rc = inferd_tensor_alloc(s->conn, s->out_bytes[i] ? s->out_bytes[i] : 1, &s->out[i])) != 0)
			return mix_shm_error(cause, "allocating an output", rc);
	return 0;
}

/* Close the connection and free the dims table. */
static void
mix_shm_close(struct mix_shm *s)
{
	inferd_close(s->conn);
	free(s->by_len);
}

/* Run request q and wait; the outputs' bytes in nbytes; libinferd's code. */
static int
mix_shm_send(struct mix_shm *s, const struct mix_run *r, const struct mix_req *q, size_t *nbytes)
{
	const struct mix_model *m = &r->model;
	struct inferd_request req = INFERD_REQUEST_INIT;
	const struct mix_out_dims *od = &s->by_len[q->len];
	int i, d;

	mix_shm_inputs(s, m, q->len);
	for (i = 0; i < m->ninputs; i++)
		mix_input_fill(&m->in[i], q, i, r->set->vocab, s->in[i].data,
		    mix_tensor_elems(&m->in[i], q->len));
	for (i = 0; i < m->noutputs; i++) {
		s->outs[i].name = m->out[i].name;
		s->outs[i].tensor = &s->out[i];
		s->outs[i].ndims = od->ndims[i];
		nbytes[i] = m->out[i].elem_bytes;
		for (d = 0; d < od->ndims[i]; d++)
			nbytes[i] *= (size_t)(s->outs[i].dims[d] = od->dims[i][d]);
	}
	req.model = s->m;
	req.rows = 1;
	req.ninputs = m->ninputs;
	req.inputs = s->ins;
	req.noutputs = m->noutputs;
	req.outputs = s->outs;
	return inferd_run(s->conn, &req);
}

/* Whether code is the daemon's answer to the request (a refusal) rather than a failure here. */
static int
mix_shm_refusal(int code)
{
	return code == INFERD_EBUSY || code == INFERD_ETIMEDOUT || code == INFERD_EREQUEST ||
	    code == INFERD_ECANCELLED || code == INFERD_ESHUTDOWN || code == INFERD_EINTERNAL ||
	    code == INFERD_ESHAPE;
}

/* Count one completed request: a refusal by code, or an answer maybe kept. */
static int
mix_shm_answer(struct mix_worker *w, struct mix_shm *s, const struct mix_req *q, int rc,
    const size_t *nbytes, uint64_t ns, int measured, char **cause)
{
	const unsigned char *bytes[MIX_MAX_TENSORS];
	const char *msg;
	int i;

	if (rc != 0 && !mix_shm_refusal(rc))
		return mix_shm_error(cause, "request", rc);
	if (rc != 0) {
		msg = inferd_last_error();
		if (measured)
			mix_kinds_add(&w->refused, rc, msg, strlen(msg));
		else
			w->refused_outside++;
		return 0;
	}
	mix_worker_answered(w, q->len, ns, measured);
	if (w->run->set->check && (w->answers == 0 || w->answers % 64 == 0)) {
		for (i = 0; i < w->run->model.noutputs; i++)
			bytes[i] = s->out[i].data;
		mix_sample_keep(w, q, bytes, nbytes, w->run->model.noutputs);
	}
	w->answers++;
	return 0;
}

/* One client: requests back to back on its own connection until told to stop. */
void *
mix_shm_worker(void *arg)
{
	struct mix_worker *w = arg;
	struct mix_run *r = w->run;
	size_t nbytes[MIX_MAX_TENSORS];
	struct mix_shm s;
	struct mix_req q;
	char *cause = NULL;
	uint64_t t0, ns;
	int measured, rc;

	if (mix_shm_open(&s, r, &cause) != 0) {
		mix_worker_fail(w, cause);
		mix_worker_ready(w);
		mix_shm_close(&s);
		return NULL;
	}
	mix_worker_ready(w);
	while (__atomic_load_n(&r->phase, __ATOMIC_ACQUIRE) != BENCH_PHASE_STOP) {
		q = mix_req_draw(&w->rng, r->set->len_lo, r->set->len_hi);
		measured = mix_measuring(r);
		t0 = bench_now_ns();
		rc = mix_shm_send(&s, r, &q, nbytes);
		ns = bench_now_ns() - t0;
		measured = measured && mix_measuring(r);
		w->sent += measured;
		if (mix_shm_answer(w, &s, &q, rc, nbytes, ns, measured, &cause) != 0) {
			mix_worker_fail(w, cause);
			break;
		}
	}
	mix_shm_close(&s);
	return NULL;
}

/* Run sample p again alone and compare every output with the answer under load. */
static int
mix_shm_check_one(const struct mix_run *r, struct mix_shm *s, const struct mix_sample *p,
    struct mix_result *res, char **cause)
{
	const unsigned char *bytes[MIX_MAX_TENSORS] = { NULL };
	size_t nbytes[MIX_MAX_TENSORS];
	int k, rc;

	if ((rc = mix_shm_send(s, r, &p->req, nbytes)) != 0)
		return mix_shm_error(cause, "request", rc);
	for (k = 0; k < r->model.noutputs; k++)
		bytes[k] = s->out[k].data;
	return mix_sample_compare(&r->model, p, bytes, nbytes, res, cause);
}

/* Run the samples again one at a time on one connection, comparing; -1 with *cause. */
int
mix_shm_check(struct mix_run *r, struct mix_worker *w, int nw, struct mix_result *res,
    char **cause)
{
	struct mix_shm s;
	int i, j, rc = 0;

	if (mix_shm_open(&s, r, cause) != 0) {
		mix_shm_close(&s);
		return -1;
	}
	for (i = 0; i < nw && rc == 0; i++)
		for (j = 0; j < w[i].nsamples && rc == 0; j++)
			if (mix_shm_check_one(r, &s, &w[i].samples[j], res, cause) != 0)
				rc = error_prefix(cause, "--check, request of length %d run alone",
				    w[i].samples[j].req.len);
	mix_shm_close(&s);
	return rc;
}
