/*
 * example.c: the smallest useful libinferd program, to copy from.
 *
 *   cc example.c $(pkg-config --cflags --libs inferd) -o example
 *   ./example [SOCKET [MODEL]]
 *
 * It connects, looks the model up, fills one input row in shared memory,
 * runs it synchronously, then pipelines a few asynchronous requests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inferd.h>

/* Print the error of a failed call and exit. */
static void
die(const char *what, int code)
{
	fprintf(stderr, "example: %s: %s (%s)\n", what, inferd_strerror(code), inferd_last_error());
	exit(1);
}

/* Index of the largest of n values. */
static size_t
argmax(const float *v, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

int
main(int argc, char **argv)
{
	const char *socket = argc > 1 ? argv[1] : INFERD_DEFAULT_SOCKET;
	const char *name = argc > 2 ? argv[2] : "fashion-mlp";
	const struct inferd_model *m;
	struct inferd_tensor in, out[4];
	struct inferd_completion done[4];
	inferd_conn_t *conn;
	size_t i, n, cls;
	int r, k, got;

	if ((r = inferd_connect(socket, NULL, &conn)) != 0)
		die("connect", r);
	if ((r = inferd_model_get(conn, name, &m)) != 0)
		die("model", r);

	/* Tensors live in the shared region: the daemon reads and writes them in place. */
	if ((r = inferd_tensor_alloc(conn, m->input_row_bytes, &in)) != 0)
		die("alloc", r);
	for (k = 0; k < 4; k++)
		if ((r = inferd_tensor_alloc(conn, m->output_row_bytes, &out[k])) != 0)
			die("alloc", r);
	n = m->input_row_bytes / sizeof(float);
	for (i = 0; i < n; i++)
		((float *)in.data)[i] = (float)(i % 7) / 7.0f;

	/* One synchronous request. */
	if ((r = inferd_infer(conn, m, 1, &in, &out[0], 0)) != 0)
		die("infer", r);
	cls = argmax(out[0].data, m->output_row_bytes / sizeof(float));
	printf("sync: class %zu%s%s\n", cls, cls < m->nlabels ? " " : "",
	    cls < m->nlabels ? m->labels[cls] : "");

	/* Four asynchronous ones in flight at once, reaped as they complete. */
	for (k = 0; k < 4; k++) {
		struct inferd_request req = { .size = sizeof req, .model = m, .rows = 1,
		    .input = &in, .output = &out[k], .user_data = (uint64_t)k };

		if ((r = inferd_submit(conn, &req)) != 0)
			die("submit", r);
	}
	for (got = 0; got < 4; ) {
		if ((r = inferd_wait(conn, done, 4, -1)) < 0)
			die("wait", r);
		for (k = 0; k < r; k++) {
			if (done[k].status != 0)
				die("async request", done[k].status);
			cls = argmax(out[done[k].user_data].data, m->output_row_bytes / sizeof(float));
			printf("async %llu: class %zu\n", (unsigned long long)done[k].user_data, cls);
		}
		got += r;
	}

	inferd_close(conn);
	return 0;
}
