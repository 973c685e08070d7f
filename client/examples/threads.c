/*
 * threads.c: several threads sharing one libinferd connection, each request
 * completing on its own: a callback per request in some threads, a handle
 * waited for in others.
 *
 *   cc threads.c $(pkg-config --cflags --libs inferd) -pthread -o threads
 *   ./threads [SOCKET [MODEL [THREADS [REQUESTS]]]]
 *
 * Each thread classifies REQUESTS inputs of its own.  The connection and its
 * shared region are made once; tensors are allocated from any thread.  A
 * request's output belongs to the daemon until its completion arrives.
 * Prints each thread's class counts and exits 0 when every request
 * succeeded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inferd.h>

static inferd_conn_t *conn;
static const struct inferd_model *model;

/* One thread's work: its tensors and what its requests answered. */
struct job {
	pthread_t thread;
	int index, requests;
	struct inferd_tensor in, out;
	char id[32];
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	int done, status;		/* set by the callback */
	int counts[10], failed;
};

/* Print a failed call's error and exit. */
static void
die(const char *what, int code)
{
	fprintf(stderr, "threads: %s: %s (%s)\n", what, inferd_strerror(code), inferd_last_error());
	exit(1);
}

/* Index of the largest of n values. */
static int
argmax(const float *v, int n)
{
	int i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

/* Fill input row n of a job with something to classify. */
static void
fill_input(struct job *j, int n)
{
	float *x = j->in.data;
	size_t i, count = model->input_row_bytes / sizeof(float);

	for (i = 0; i < count; i++)
		x[i] = (float)((i * 31 + (size_t)n * 7 + (size_t)j->index * 13) % 256) / 255.0f;
}

/* Callback: runs on the connection's completion thread; tell the submitting thread. */
static void
on_complete(const struct inferd_completion *c, void *user)
{
	struct job *j = user;

	pthread_mutex_lock(&j->lock);
	j->status = c->status;
	j->done = 1;
	pthread_cond_signal(&j->done_cond);
	pthread_mutex_unlock(&j->lock);
}

/* Record one answer. */
static void
tally(struct job *j, int status)
{
	if (status != 0)
		j->failed++;
	else
		j->counts[argmax(j->out.data, 10)]++;
}

/* Even threads: a callback per request. */
static void
run_with_callbacks(struct job *j, struct inferd_request *r)
{
	int n, rc;

	for (n = 0; n < j->requests; n++) {
		fill_input(j, n);
		j->done = 0;
		if ((rc = inferd_submit_cb(conn, r, on_complete, j)) != 0)
			die("inferd_submit_cb", rc);
		pthread_mutex_lock(&j->lock);
		while (!j->done)
			pthread_cond_wait(&j->done_cond, &j->lock);
		pthread_mutex_unlock(&j->lock);
		tally(j, j->status);
	}
}

/* Odd threads: a handle per request, waited for. */
static void
run_with_handles(struct job *j, struct inferd_request *r)
{
	struct inferd_completion c;
	inferd_handle_t *h;
	int n, rc;

	for (n = 0; n < j->requests; n++) {
		fill_input(j, n);
		if ((rc = inferd_submit_handle(conn, r, &h)) != 0)
			die("inferd_submit_handle", rc);
		if ((rc = inferd_handle_wait(h, -1, &c)) != 0)
			die("inferd_handle_wait", rc);
		tally(j, c.status);
		inferd_handle_free(h);
	}
}

/* One thread: allocate its tensors, run its requests, free its tensors. */
static void *
job_main(void *arg)
{
	struct job *j = arg;
	int rc;

	if ((rc = inferd_tensor_alloc(conn, model->input_row_bytes, &j->in)) != 0 ||
	    (rc = inferd_tensor_alloc(conn, model->output_row_bytes, &j->out)) != 0)
		die("inferd_tensor_alloc", rc);
	snprintf(j->id, sizeof j->id, "thread-%d", j->index);
	struct inferd_request r = {
		.size = sizeof r, .model = model, .rows = 1, .input = &j->in, .output = &j->out,
		.user_data = (uint64_t)j->index, .id = j->id,
	};
	if (j->index % 2 == 0)
		run_with_callbacks(j, &r);
	else
		run_with_handles(j, &r);
	inferd_tensor_free(conn, &j->in);
	inferd_tensor_free(conn, &j->out);
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *socket = argc > 1 ? argv[1] : INFERD_DEFAULT_SOCKET;
	const char *name = argc > 2 ? argv[2] : "fashion-mlp";
	int nthreads = argc > 3 ? atoi(argv[3]) : 4, requests = argc > 4 ? atoi(argv[4]) : 100;
	struct job *jobs;
	int i, k, rc, failed = 0;

	if (nthreads < 1 || requests < 1 || (jobs = calloc((size_t)nthreads, sizeof *jobs)) == NULL)
		return 2;
	if ((rc = inferd_connect(socket, NULL, &conn)) != 0)
		die("inferd_connect", rc);
	if ((rc = inferd_model_get(conn, name, &model)) != 0)
		die("inferd_model_get", rc);
	if (model->input_row_bytes == 0 || model->output_row_bytes != 10 * sizeof(float))
		die("this example wants a model of fixed input and 10 output floats", INFERD_EINVAL);
	for (i = 0; i < nthreads; i++) {
		jobs[i].index = i;
		jobs[i].requests = requests;
		pthread_mutex_init(&jobs[i].lock, NULL);
		pthread_cond_init(&jobs[i].done_cond, NULL);
		if (pthread_create(&jobs[i].thread, NULL, job_main, &jobs[i]) != 0)
			return 2;
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(jobs[i].thread, NULL);
		printf("thread %d (%s):", i, i % 2 == 0 ? "callbacks" : "handles");
		for (k = 0; k < 10; k++)
			printf(" %d", jobs[i].counts[k]);
		printf(", %d failed\n", jobs[i].failed);
		failed += jobs[i].failed;
	}
	inferd_close(conn);
	free(jobs);
	return failed == 0 ? 0 : 1;
}
