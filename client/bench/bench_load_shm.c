/* bench_load_shm.c: load over shared memory through libinferd, synchronous or D requests deep. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"
#include "inferd.h"

/* Every this many responses one output is checked (and the first). */
#define BENCH_CHECK_EVERY 256
/* A request not completed in this long stops the worker: the daemon is stuck. */
#define BENCH_WAIT_MS 30000
/* Room in the region for the rings and allocator padding. */
#define BENCH_REGION_SLACK (1024 * 1024)

/* One request slot of a connection: its tensors and when it was submitted. */
struct bench_slot {
	struct inferd_tensor in, out;
	uint64_t t0;
	int ticket, checking;
};

/* A worker's connection and its slots. */
struct bench_shm {
	inferd_conn_t *conn;
	const struct inferd_model *m;
	struct bench_slot *slots;
	int nslots;
};

/* Fill *cause from libinferd's last error. */
static int
bench_shm_error(char **cause, const char *what, int code)
{
	const char *detail = inferd_last_error();

	return error_set(cause, "%s: %s%s%s", what, inferd_strerror(code),
	    *detail ? ": " : "", detail);
}

/* Fetch the model's metadata over the socket; -1 with *cause. */
int
bench_shm_model(const char *socket_path, const char *name, struct bench_model *m,
    char **cause)
{
	const struct inferd_model *im;
	inferd_conn_t *conn;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = inferd_connect(socket_path, NULL, &conn)) != 0)
		return bench_shm_error(cause, socket_path, rc);
	if ((rc = inferd_model_get(conn, name, &im)) != 0) {
		bench_shm_error(cause, name, rc);
		inferd_close(conn);
		return -1;
	}
	if (strcmp(im->datatype, "FP32") != 0) {
		error_set(cause, "model %s is %s: inferd-bench sends FP32 only", name, im->datatype);
		inferd_close(conn);
		return -1;
	}
	snprintf(m->name, sizeof m->name, "%s", im->name);
	snprintf(m->input_name, sizeof m->input_name, "%s", im->input_name);
	snprintf(m->output_name, sizeof m->output_name, "%s", im->output_name);
	m->input_elems = im->input_row_bytes / sizeof(float);
	m->output_elems = im->output_row_bytes / sizeof(float);
	m->max_batch_size = im->max_batch_size;
	inferd_close(conn);
	return 0;
}

/* Smallest power of two at least n. */
static unsigned
bench_pow2(unsigned n)
{
	unsigned p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Connect with a region sized for depth requests and allocate their tensors. */
static int
bench_shm_open(struct bench_shm *s, const struct bench_run *r, char **cause)
{
	const struct bench_settings *set = r->set;
	size_t in = (size_t)set->rows * r->model.input_elems * sizeof(float);
	size_t out = (size_t)set->rows * r->model.output_elems * sizeof(float);
	struct inferd_options o = INFERD_OPTIONS_INIT;
	uint64_t state = 0x2545f4914f6cdd1du;
	int i, rc;
	size_t k;

	o.region_bytes = (size_t)set->async_depth * (in + out + 256) + BENCH_REGION_SLACK;
	o.sq_entries = bench_pow2((unsigned)set->async_depth);
	o.cq_entries = o.sq_entries * 2;
	if ((rc = inferd_connect(set->socket_path, &o, &s->conn)) != 0)
		return bench_shm_error(cause, set->socket_path, rc);
	if ((rc = inferd_model_get(s->conn, set->model_name, &s->m)) != 0)
		return bench_shm_error(cause, set->model_name, rc);
	if ((s->slots = calloc((size_t)set->async_depth, sizeof *s->slots)) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < set->async_depth; i++, s->nslots++) {
		if ((rc = inferd_tensor_alloc(s->conn, in, &s->slots[i].in)) != 0 ||
		    (rc = inferd_tensor_alloc(s->conn, out, &s->slots[i].out)) != 0)
			return bench_shm_error(cause, "allocating tensors", rc);
		for (k = 0; k < in / sizeof(float); k++) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			((float *)s->slots[i].in.data)[k] = (float)(state >> 40) / (float)(1u << 24);
		}
	}
	return 0;
}

/* Release the tensors and the connection. */
static void
bench_shm_close(struct bench_shm *s)
{
	int i;

	for (i = 0; i < s->nslots; i++) {
		inferd_tensor_free(s->conn, &s->slots[i].in);
		inferd_tensor_free(s->conn, &s->slots[i].out);
	}
	free(s->slots);
	inferd_close(s->conn);
}

/* Before a checked request: poison the output so a missing write shows. */
static void
bench_shm_poison(struct bench_slot *sl)
{
	size_t k;

	for (k = 0; k < sl->out.bytes / sizeof(float); k++)
		((float *)sl->out.data)[k] = NAN;
	sl->checking = 1;
}

/* After it: every output float must have been written, and finite. */
static int
bench_shm_check(struct bench_slot *sl, size_t out_bytes, char **cause)
{
	size_t k;

	sl->checking = 0;
	for (k = 0; k < out_bytes / sizeof(float); k++)
		if (!isfinite(((const float *)sl->out.data)[k]))
			return error_set(cause, "output float %zu was not written or is not finite", k);
	return 0;
}

/* Queue slot i; 0 or an INFERD_E* code. */
static int
bench_shm_submit(struct bench_shm *s, const struct bench_run *r, int i, uint64_t n)
{
	struct inferd_request req = { .size = sizeof req, .model = s->m, .rows = r->set->rows,
	    .input = &s->slots[i].in, .output = &s->slots[i].out, .user_data = (uint64_t)i };

	if (n % BENCH_CHECK_EVERY == 0)
		bench_shm_poison(&s->slots[i]);
	s->slots[i].t0 = bench_now_ns();
	return inferd_submit(s->conn, &req);
}

/*
 * Account one finished request: a latency when it counts, a refusal for a
 * request-level error; -1 with *cause for a broken connection or output.
 */
static int
bench_shm_finish(struct bench_worker *w, struct bench_shm *s, struct bench_slot *sl,
    int status, char **cause)
{
	uint64_t t1 = bench_now_ns();
	size_t out = (size_t)w->run->set->rows * s->m->output_row_bytes;

	/* Codes from INFERD_EBUSY down are about the request; those above it, the connection. */
	if (status != 0 && status > INFERD_EBUSY)
		return bench_shm_error(cause, "request", status);
	if (status == 0 && sl->checking) {
		if (bench_shm_check(sl, out, cause) != 0)
			return -1;
		w->checked++;
	}
	sl->checking = 0;
	if (!bench_counts(w->run, sl->ticket))
		return 0;
	if (status != 0) {
		w->errors++;
		bench_worker_refused(w, inferd_strerror(status), inferd_last_error(),
		    strlen(inferd_last_error()));
		return 0;
	}
	bench_hist_add(&w->hist, t1 - sl->t0);
	w->requests++;
	return 0;
}

/* One request at a time with inferd_infer. */
static int
bench_shm_sync(struct bench_worker *w, struct bench_shm *s, char **cause)
{
	const struct bench_run *r = w->run;
	struct bench_slot *sl = &s->slots[0];
	uint64_t n;
	int rc;

	for (n = 0; bench_begin(w->run, &sl->ticket) == 0; n++) {
		if (n % BENCH_CHECK_EVERY == 0)
			bench_shm_poison(sl);
		sl->t0 = bench_now_ns();
		rc = inferd_infer(s->conn, s->m, r->set->rows, &sl->in, &sl->out, 0);
		if (bench_shm_finish(w, s, sl, rc, cause) != 0)
			return -1;
	}
	return 0;
}

/* Keep depth requests outstanding with inferd_submit and inferd_wait. */
static int
bench_shm_async(struct bench_worker *w, struct bench_shm *s, char **cause)
{
	struct inferd_completion comp[64];
	struct bench_slot *sl;
	int i, k, got, rc, outstanding = 0, stopping = 0;
	uint64_t n = 0;

	for (i = 0; i < s->nslots && !stopping; i++) {
		if (bench_begin(w->run, &s->slots[i].ticket) != 0)
			stopping = 1;
		else if ((rc = bench_shm_submit(s, w->run, i, n++)) != 0)
			return bench_shm_error(cause, "submit", rc);
		else
			outstanding++;
	}
	while (outstanding > 0) {
		got = inferd_wait(s->conn, comp, 64, BENCH_WAIT_MS);
		if (got < 0)
			return bench_shm_error(cause, "wait", got);
		if (got == 0)
			return error_set(cause, "no completion in %d ms", BENCH_WAIT_MS);
		for (k = 0; k < got; k++) {
			i = (int)comp[k].user_data;
			if (i < 0 || i >= s->nslots)
				return error_set(cause, "completion for unknown slot %d", i);
			sl = &s->slots[i];
			outstanding--;
			if (bench_shm_finish(w, s, sl, comp[k].status, cause) != 0)
				return -1;
			if (stopping || bench_begin(w->run, &sl->ticket) != 0) {
				stopping = 1;
				continue;
			}
			if ((rc = bench_shm_submit(s, w->run, i, n++)) != 0)
				return bench_shm_error(cause, "submit", rc);
			outstanding++;
		}
	}
	return 0;
}

/* Keep requesting on one connection until told to stop. */
void *
bench_shm_worker(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_shm s = { 0 };
	char *cause = NULL;
	int r;

	if (bench_shm_open(&s, w->run, &cause) != 0) {
		bench_worker_fail(w, cause);
		bench_worker_ready(w);
		if (s.conn != NULL)
			bench_shm_close(&s);
		return NULL;
	}
	bench_worker_ready(w);
	if (w->run->set->async_depth == 1)
		r = bench_shm_sync(w, &s, &cause);
	else
		r = bench_shm_async(w, &s, &cause);
	if (r != 0)
		bench_worker_fail(w, cause);
	bench_shm_close(&s);
	return NULL;
}
