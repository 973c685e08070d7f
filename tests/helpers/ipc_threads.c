/*
 * ipc_threads.c: libinferd shared by threads, per-request completion and cancel.
 *
 *   ipc_threads SOCKET share NTHREADS NREQ
 *       one connection, fashion-mlp: single-thread answers first (inferd_run,
 *       one thread), then NTHREADS threads sharing the connection each run
 *       NREQ requests synchronously, NREQ with callbacks and NREQ with
 *       handles, while one more thread runs inferd_submit/inferd_wait; every
 *       answer must equal the single-thread one, every id come back, and
 *       inferd_wait must return only its own thread's completions
 *   ipc_threads SOCKET sync NTHREADS NREQ
 *       the same, the synchronous phase only
 *   ipc_threads SOCKET cancel MODEL
 *       MODEL batches after a long delay: six of eight queued requests
 *       cancelled (by handle and by user_data) complete with
 *       INFERD_ECANCELLED at once, the other two complete with the right
 *       answer; a cancel after completion changes nothing
 *   ipc_threads SOCKET reconnect on|off GOFILE
 *       answer once, print "ready", wait for GOFILE to exist (the test
 *       restarts the daemon meanwhile), then answer again: with the
 *       reconnect option the same connection, tensors and model answer
 *       right (synchronously and by callback); without it, INFERD_ECLOSED
 * Exit 0 on success, 1 on a wrong result, 2 on a usage or setup error.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inferd.h"

#define NROWS 64		/* distinct inputs */
#define DEPTH 4			/* requests each thread keeps in flight */
#define IN_FLOATS 784
#define OUT_FLOATS 10

static inferd_conn_t *conn;
static const struct inferd_model *model;
static struct inferd_tensor inputs[NROWS];
static float ref[NROWS][OUT_FLOATS];
static int failures;
static struct inferd_options options = INFERD_OPTIONS_INIT;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

/* Count a failure and say what it was. */
static void
bad(const char *fmt, const char *what, long a, long b)
{
	pthread_mutex_lock(&fail_lock);
	if (failures++ < 20) {
		fprintf(stderr, fmt, what, a, b);
		fputc('\n', stderr);
	}
	pthread_mutex_unlock(&fail_lock);
}

/* Exit with the library's message. */
static void
die(const char *what, int r)
{
	fprintf(stderr, "ipc_threads: %s: %s: %s\n", what, inferd_strerror(r), inferd_last_error());
	exit(2);
}

/* Milliseconds on the monotonic clock. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Compare an output with input row k's single-thread answer (batching may reorder sums). */
static void
check_output(const float *out, int k, const char *what)
{
	int i;

	for (i = 0; i < OUT_FLOATS; i++)
		if (!(fabsf(out[i] - ref[k][i]) <= 1e-4f * (1.0f + fabsf(ref[k][i])))) {
			bad("%s: row %ld logit %ld differs from the single-thread answer", what, k, i);
			return;
		}
}

/* Connect, find the model, make NROWS inputs and (when want_ref) their single-thread answers. */
static void
setup(const char *sock, const char *name, int want_ref)
{
	struct inferd_tensor out;
	struct inferd_request r = INFERD_REQUEST_INIT;
	int k, i, rc;

	if ((rc = inferd_connect(sock, &options, &conn)) != 0)
		die("connect", rc);
	if ((rc = inferd_model_get(conn, name, &model)) != 0)
		die("model", rc);
	if ((rc = inferd_tensor_alloc(conn, OUT_FLOATS * 4, &out)) != 0)
		die("alloc", rc);
	for (k = 0; k < NROWS; k++) {
		if ((rc = inferd_tensor_alloc(conn, IN_FLOATS * 4, &inputs[k])) != 0)
			die("alloc", rc);
		for (i = 0; i < IN_FLOATS; i++)
			((float *)inputs[k].data)[i] = (float)((k * 7919 + i * 104729) % 1000) / 1000.0f;
		if (!want_ref)
			continue;
		r.model = model;
		r.rows = 1;
		r.input = &inputs[k];
		r.output = &out;
		if ((rc = inferd_run(conn, &r)) != 0)
			die("reference run", rc);
		memcpy(ref[k], out.data, sizeof ref[k]);
	}
	inferd_tensor_free(conn, &out);
}

/* One worker thread's state. */
struct worker {
	pthread_t thread;
	int index, nreq;
	struct inferd_tensor out[DEPTH];
	char ids[DEPTH][32];
	int row[DEPTH];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int busy[DEPTH];		/* callback requests in flight per output */
	int done;			/* callbacks run */
};

/* A request of worker w on output slot s for input row k. */
static struct inferd_request
make_request(struct worker *w, int s, int k, uint64_t tag)
{
	struct inferd_request r = INFERD_REQUEST_INIT;

	w->row[s] = k;
	snprintf(w->ids[s], sizeof w->ids[s], "w%d-s%d-k%d", w->index, s, k);
	r.model = model;
	r.rows = 1;
	r.input = &inputs[k];
	r.output = &w->out[s];
	r.user_data = tag;
	r.id = w->ids[s];
	return r;
}

/* NREQ synchronous runs. */
static void
work_sync(struct worker *w)
{
	struct inferd_request r;
	int n, k, rc;

	for (n = 0; n < w->nreq; n++) {
		k = (w->index * 31 + n) % NROWS;
		r = make_request(w, 0, k, 0);
		if ((rc = inferd_run(conn, &r)) != 0) {
			bad("%s: inferd_run failed (%ld, row %ld)", inferd_last_error(), rc, k);
			continue;
		}
		check_output(w->out[0].data, k, "sync");
	}
}

/* A callback: check the answer and the id, free the output slot. */
static void
on_done(const struct inferd_completion *c, void *user)
{
	struct worker *w = user;
	int s = (int)(c->user_data & 0xff);

	if (c->status != 0)
		bad("%s: callback status %ld (slot %ld)", inferd_strerror(c->status), c->status, s);
	else if (c->id != w->ids[s])
		bad("%s: callback id wrong (worker %ld slot %ld)", "id", w->index, s);
	else
		check_output(w->out[s].data, w->row[s], "callback");
	pthread_mutex_lock(&w->lock);
	w->busy[s] = 0;
	w->done++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* NREQ callback requests, DEPTH in flight. */
static void
work_callbacks(struct worker *w)
{
	struct inferd_request r;
	int n, s, rc;

	for (n = 0; n < w->nreq; n++) {
		pthread_mutex_lock(&w->lock);
		for (;;) {
			for (s = 0; s < DEPTH && w->busy[s]; s++)
				;
			if (s < DEPTH)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
		}
		w->busy[s] = 1;
		pthread_mutex_unlock(&w->lock);
		r = make_request(w, s, (w->index * 17 + n) % NROWS, (uint64_t)w->index << 8 | (uint64_t)s);
		if ((rc = inferd_submit_cb(conn, &r, on_done, w)) != 0)
			die("inferd_submit_cb", rc);
	}
	pthread_mutex_lock(&w->lock);
	while (w->done < w->nreq)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* NREQ handle requests, DEPTH in flight, waited for in submission order. */
static void
work_handles(struct worker *w)
{
	inferd_handle_t *h[DEPTH] = { NULL };
	struct inferd_completion c;
	struct inferd_request r;
	int n, s, rc;

	for (n = 0; n < w->nreq + DEPTH; n++) {
		s = n % DEPTH;
		if (h[s] != NULL) {
			if ((rc = inferd_handle_wait(h[s], -1, &c)) != 0 || c.status != 0)
				bad("%s: handle wait %ld status %ld", inferd_last_error(), rc, c.status);
			else if (c.id != w->ids[s] || c.user_data != (uint64_t)n - DEPTH)
				bad("%s: handle completion for another request (%ld, %ld)", "id", n, s);
			else
				check_output(w->out[s].data, w->row[s], "handle");
			inferd_handle_free(h[s]);
			h[s] = NULL;
		}
		if (n >= w->nreq)
			continue;
		r = make_request(w, s, (w->index * 13 + n) % NROWS, (uint64_t)n);
		if ((rc = inferd_submit_handle(conn, &r, &h[s])) != 0)
			die("inferd_submit_handle", rc);
	}
}

/* The thread doing inferd_submit/inferd_wait beside the others: it must see only its own. */
static void
work_stash(struct worker *w)
{
	struct inferd_completion c[DEPTH];
	struct inferd_request r;
	int n, s, i, got, rc;

	for (n = 0; n < w->nreq; n += DEPTH) {
		for (s = 0; s < DEPTH; s++) {
			r = make_request(w, s, (n + s) % NROWS, 0x5a5a0000u + (uint64_t)s);
			if ((rc = inferd_submit(conn, &r)) != 0)
				die("inferd_submit", rc);
		}
		for (got = 0; got < DEPTH; got += rc)
			if ((rc = inferd_wait(conn, c + got, DEPTH - got, 10000)) <= 0) {
				bad("%s: inferd_wait returned %ld after %ld", inferd_last_error(), rc, got);
				return;
			}
		for (i = 0; i < DEPTH; i++) {
			s = (int)(c[i].user_data & 0xff);
			if ((c[i].user_data & ~0xffull) != 0x5a5a0000u || c[i].status != 0)
				bad("%s: inferd_wait returned user_data %#lx status %ld", "stash",
				    (long)c[i].user_data, c[i].status);
			else
				check_output(w->out[s].data, w->row[s], "stash");
		}
	}
}

static int phase;

/* A worker thread: the phase's kind of request. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	if (w->index < 0)
		work_stash(w);
	else if (phase == 0)
		work_sync(w);
	else if (phase == 1)
		work_callbacks(w);
	else
		work_handles(w);
	return NULL;
}

/* Start nthreads workers (plus the stash thread after the sync phase) and join them. */
static void
run_phase(struct worker *ws, int nthreads, int nreq)
{
	int i, n = nthreads + (phase > 0);
	double t0 = now_ms();

	for (i = 0; i < n; i++) {
		ws[i].index = i < nthreads ? i : -1;
		ws[i].nreq = nreq;
		ws[i].done = 0;
		if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0)
			exit(2);
	}
	for (i = 0; i < n; i++)
		pthread_join(ws[i].thread, NULL);
	printf("phase %s: %d threads x %d requests in %.0f ms\n",
	    phase == 0 ? "sync" : phase == 1 ? "callbacks" : "handles", nthreads, nreq, now_ms() - t0);
}

/* The share mode. */
static int
run_share(const char *sock, int nthreads, int nreq, int nphases)
{
	struct worker *ws = calloc((size_t)nthreads + 1, sizeof *ws);
	int i, s, rc;

	setup(sock, "fashion-mlp", 1);
	for (i = 0; i <= nthreads; i++) {
		pthread_mutex_init(&ws[i].lock, NULL);
		pthread_cond_init(&ws[i].cond, NULL);
		for (s = 0; s < DEPTH; s++)
			if ((rc = inferd_tensor_alloc(conn, OUT_FLOATS * 4, &ws[i].out[s])) != 0)
				die("alloc", rc);
	}
	for (phase = 0; phase < nphases; phase++)
		run_phase(ws, nthreads, nreq);
	if (inferd_outstanding(conn) != 0)
		bad("%s: %ld requests still outstanding", "outstanding", (long)inferd_outstanding(conn), 0);
	inferd_close(conn);
	free(ws);
	printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

/* Submit one single-row request of row k on output out with a handle. */
static inferd_handle_t *
submit_one(int k, struct inferd_tensor *out, uint64_t tag, const char *id)
{
	struct inferd_request r = INFERD_REQUEST_INIT;
	inferd_handle_t *h;
	int rc;

	r.model = model;
	r.rows = 1;
	r.input = &inputs[k];
	r.output = out;
	r.user_data = tag;
	r.id = id;
	if ((rc = inferd_submit_handle(conn, &r, &h)) != 0)
		die("inferd_submit_handle", rc);
	return h;
}

/* The cancel mode: the model waits long before batching, so requests stay queued. */
static int
run_cancel(const char *sock, const char *name)
{
	static const char *ids[8] = { "c0", "c1", "c2", "c3", "c4", "c5", "k6", "k7" };
	struct inferd_tensor out[8];
	inferd_handle_t *h[8];
	struct inferd_completion c;
	double t0, t;
	int i, rc, n;

	setup(sock, name, 0);
	for (i = 0; i < 8; i++)
		if ((rc = inferd_tensor_alloc(conn, OUT_FLOATS * 4, &out[i])) != 0)
			die("alloc", rc);
	t0 = now_ms();
	for (i = 0; i < 8; i++)
		h[i] = submit_one(3, &out[i], i < 4 ? (uint64_t)i : i < 6 ? 100 : 200 + (uint64_t)i, ids[i]);
	for (i = 0; i < 4; i++)
		if ((rc = inferd_handle_cancel(h[i])) != 1)
			bad("%s: inferd_handle_cancel returned %ld (request %ld)", inferd_last_error(), rc, i);
	if ((n = inferd_cancel(conn, 100)) != 2)
		bad("%s: inferd_cancel(100) asked %ld cancels, not 2%ld", inferd_last_error(), n, 0);
	for (i = 0; i < 6; i++) {
		rc = inferd_handle_wait(h[i], 10000, &c);
		t = now_ms() - t0;
		if (rc != 0 || c.status != INFERD_ECANCELLED || strcmp(c.id, ids[i]) != 0)
			bad("%s: cancelled request %ld: status %ld", inferd_strerror(c.status), i, c.status);
		else if (t > 1500)
			bad("%s: cancelled request %ld completed only after %ld ms", "late", i, (long)t);
	}
	printf("six cancelled after %.0f ms\n", now_ms() - t0);
	for (i = 6; i < 8; i++) {
		if ((rc = inferd_handle_wait(h[i], 20000, &c)) != 0 || c.status != 0)
			bad("%s: request %ld not cancelled failed (%ld)", inferd_strerror(c.status), i, c.status);
		else if (memcmp(out[i].data, out[6].data, OUT_FLOATS * 4) != 0)
			bad("%s: requests %ld and %ld of one row disagree", "answer", 6, i);
		if ((rc = inferd_handle_cancel(h[i])) != 0)
			bad("%s: cancel after completion returned %ld (%ld)", "cancel", rc, i);
		if (inferd_handle_wait(h[i], 0, &c) != 0 || c.status != 0)
			bad("%s: completion changed after a late cancel (%ld)%ld", "cancel", i, 0);
	}
	printf("two completed after %.0f ms\n", now_ms() - t0);
	for (i = 0; i < 8; i++)
		inferd_handle_free(h[i]);
	inferd_close(conn);
	printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

/* Callback of the reconnect mode: store the status and signal. */
static pthread_mutex_t rc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rc_cond = PTHREAD_COND_INITIALIZER;
static int rc_done, rc_status;

static void
on_reconnect_done(const struct inferd_completion *c, void *user)
{
	(void)user;
	pthread_mutex_lock(&rc_lock);
	rc_status = c->status;
	rc_done = 1;
	pthread_cond_broadcast(&rc_cond);
	pthread_mutex_unlock(&rc_lock);
}

/* One callback request of row 0; its status. */
static int
callback_once(struct inferd_tensor *out)
{
	struct inferd_request r = INFERD_REQUEST_INIT;
	int rc;

	r.model = model;
	r.rows = 1;
	r.input = &inputs[0];
	r.output = out;
	rc_done = 0;
	if ((rc = inferd_submit_cb(conn, &r, on_reconnect_done, NULL)) != 0)
		return rc;
	pthread_mutex_lock(&rc_lock);
	while (!rc_done)
		pthread_cond_wait(&rc_cond, &rc_lock);
	pthread_mutex_unlock(&rc_lock);
	return rc_status;
}

/* The reconnect mode: answer, wait for go_file (the daemon restarted meanwhile), answer again. */
static int
run_reconnect(const char *sock, int on, const char *go_file)
{
	struct inferd_request r = INFERD_REQUEST_INIT;
	struct inferd_tensor out;
	int i, rc;

	options.reconnect = on;
	options.reconnect_max_ms = 20000;
	setup(sock, "fashion-mlp", 1);
	if ((rc = inferd_tensor_alloc(conn, OUT_FLOATS * 4, &out)) != 0)
		die("alloc", rc);
	if ((rc = callback_once(&out)) != 0)
		die("callback before the restart", rc);
	printf("ready\n");
	for (i = 0; access(go_file, F_OK) != 0; i++) {
		if (i > 1200)
			die("no go file in 60 s", 0);
		usleep(50000);
	}
	r.model = model;
	r.rows = 1;
	r.input = &inputs[5];
	r.output = &out;
	rc = inferd_run(conn, &r);
	printf("after the restart: %s (%s)\n", inferd_strerror(rc), inferd_last_error());
	if (!on) {
		if (rc != INFERD_ECLOSED)
			bad("%s: without reconnect the call returned %ld, not ECLOSED (%ld)", "reconnect", rc, INFERD_ECLOSED);
	} else if (rc != 0) {
		bad("%s: with reconnect the call failed (%ld)%ld", inferd_last_error(), rc, 0);
	} else {
		check_output(out.data, 5, "after reconnect");
		if ((rc = callback_once(&out)) != 0)
			bad("%s: a callback after the reconnect failed (%ld)%ld", inferd_strerror(rc), rc, 0);
		else
			check_output(out.data, 0, "callback after reconnect");
	}
	inferd_close(conn);
	printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 5 && strcmp(argv[2], "share") == 0)
		return run_share(argv[1], atoi(argv[3]), atoi(argv[4]), 3);
	if (argc == 5 && strcmp(argv[2], "sync") == 0)
		return run_share(argv[1], atoi(argv[3]), atoi(argv[4]), 1);
	if (argc == 5 && strcmp(argv[2], "reconnect") == 0)
		return run_reconnect(argv[1], strcmp(argv[3], "on") == 0, argv[4]);
	if (argc == 4 && strcmp(argv[2], "cancel") == 0)
		return run_cancel(argv[1], argv[3]);
	fprintf(stderr, "usage: ipc_threads SOCKET share|sync NTHREADS NREQ | cancel MODEL | reconnect on|off GOFILE\n");
	return 2;
}
