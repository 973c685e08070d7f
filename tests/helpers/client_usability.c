/*
 * client_usability.c: libinferd's promises to an application, against a running daemon
 * serving fashion-mlp: inferd_wait with nothing outstanding returns at once with
 * INFERD_ENOPENDING; inferd_last_error() is emptied by the next call that succeeds;
 * tensor mistakes are named in words (sizes, rows, region); inferd_version().
 *
 * usage: client_usability SOCKET      exit 0 pass, 1 fail
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <inferd.h>

static int failed;

/* Report a failed check. */
#define CHECK(cond, ...) do { if (!(cond)) { failed = 1; printf("FAIL: " __VA_ARGS__); \
	printf(" (last error: '%s')\n", inferd_last_error()); } } while (0)

/* Monotonic milliseconds. */
static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* inferd_wait on an idle connection: ENOPENDING at once for -1 and a timeout, 0 for a poll. */
static void
check_wait_idle(inferd_conn_t *c, const char *when)
{
	struct inferd_completion done[2];
	long long t0 = now_ms();
	int r;

	r = inferd_wait(c, done, 2, -1);
	CHECK(r == INFERD_ENOPENDING, "%s: inferd_wait(-1) with nothing outstanding returned %d", when, r);
	CHECK(strstr(inferd_last_error(), "no request is outstanding") != NULL,
	    "%s: inferd_wait's message", when);
	r = inferd_wait(c, done, 2, 5000);
	CHECK(r == INFERD_ENOPENDING, "%s: inferd_wait(5000) with nothing outstanding returned %d", when, r);
	CHECK(now_ms() - t0 < 1000, "%s: the idle waits took %lld ms", when, now_ms() - t0);
	r = inferd_wait(c, done, 2, 0);
	CHECK(r == 0, "%s: inferd_wait(0) with nothing outstanding returned %d, want 0", when, r);
}

/* A failure leaves its message; the next successful call clears it. */
static void
check_last_error(inferd_conn_t *c, const struct inferd_model **m)
{
	int r;

	r = inferd_model_get(c, "no-such-model", m);
	CHECK(r == INFERD_ENOMODEL, "model_get(no-such-model) returned %d", r);
	CHECK(*inferd_last_error() != '\0', "a failed call left no message");
	r = inferd_model_get(c, "fashion-mlp", m);
	CHECK(r == 0, "model_get(fashion-mlp) returned %d", r);
	CHECK(*inferd_last_error() == '\0', "the message of an earlier failure survived a success");
}

/* Tensor mistakes, each named: too small for one row, for n rows, not in the region. */
static void
check_messages(inferd_conn_t *c, const struct inferd_model *m, const struct inferd_tensor *out)
{
	struct inferd_tensor small, one, stray = { 0 };
	char want[128];
	float buf[16];
	int r;

	CHECK(inferd_tensor_alloc(c, 100, &small) == 0, "alloc 100 bytes");
	CHECK(inferd_tensor_alloc(c, m->input_row_bytes, &one) == 0, "alloc one row");
	r = inferd_infer(c, m, 1, &small, out, 0);
	snprintf(want, sizeof want, "the input tensor (100 bytes) is smaller than one row of %zu bytes",
	    m->input_row_bytes);
	CHECK(r == INFERD_EINVAL && strstr(inferd_last_error(), want), "100-byte input: %d, want '%s'", r, want);
	r = inferd_infer(c, m, 2, &one, out, 0);
	snprintf(want, sizeof want, "smaller than 2 rows of %zu bytes", m->input_row_bytes);
	CHECK(r == INFERD_EINVAL && strstr(inferd_last_error(), want), "one-row input for 2 rows: %d", r);
	stray.data = buf;
	stray.bytes = sizeof buf;
	r = inferd_infer(c, m, 1, &stray, out, 0);
	CHECK(r == INFERD_EINVAL && strstr(inferd_last_error(), "does not lie in this connection's shared region"),
	    "a tensor outside the region: %d", r);
	r = inferd_infer(c, m, m->max_batch_size + 1, &one, out, 0);
	CHECK(r == INFERD_EINVAL && strstr(inferd_last_error(), "max_batch_size"), "too many rows: %d", r);
	inferd_tensor_free(c, &small);
	inferd_tensor_free(c, &one);
}

/* Submit one, reap it, and the connection is idle again. */
static void
check_round_trip(inferd_conn_t *c, const struct inferd_model *m, const struct inferd_tensor *in,
    const struct inferd_tensor *out)
{
	struct inferd_request req = { .size = sizeof req, .model = m, .rows = 1, .input = in,
	    .output = out, .user_data = 42 };
	struct inferd_completion done[2];
	struct inferd_request old = req;
	int r;

	/* Code written for an inferd.h whose request began with model puts a pointer in size. */
	old.size = (size_t)(uintptr_t)m;
	r = inferd_submit(c, &old);
	CHECK(r == INFERD_EINVAL && strstr(inferd_last_error(), "not a struct size") &&
	    strstr(inferd_last_error(), "set the fields by name"), "a pointer in size: %d '%s'", r,
	    inferd_last_error());
	CHECK(inferd_submit(c, &req) == 0, "submit");
	r = inferd_wait(c, done, 2, -1);
	CHECK(r == 1 && done[0].user_data == 42 && done[0].status == 0, "wait for the one submitted: %d", r);
	CHECK(*inferd_last_error() == '\0', "message left after a successful wait");
	check_wait_idle(c, "after reaping");
	r = inferd_infer(c, m, 1, in, out, 0);
	CHECK(r == 0 && *inferd_last_error() == '\0', "a successful infer after failures left '%s'",
	    inferd_last_error());
}

int
main(int argc, char **argv)
{
	const struct inferd_model *m = NULL;
	struct inferd_tensor in, out;
	inferd_conn_t *c;
	char version[32];

	if (argc != 2)
		return fprintf(stderr, "usage: client_usability SOCKET\n"), 1;
	alarm(60);	/* a wait that blocks is a failure, not a hung test */
	snprintf(version, sizeof version, "%d.%d", INFERD_VERSION_MAJOR, INFERD_VERSION_MINOR);
	CHECK(strcmp(inferd_version(), version) == 0, "inferd_version() is '%s', want '%s'",
	    inferd_version(), version);
	CHECK(strcmp(inferd_strerror(INFERD_ENOPENDING), "no request outstanding") == 0, "strerror");
	if (inferd_connect(argv[1], NULL, &c) != 0)
		return printf("FAIL: connect: %s\n", inferd_last_error()), 1;
	check_wait_idle(c, "fresh connection");
	check_last_error(c, &m);
	if (m == NULL)
		return 1;
	CHECK(inferd_tensor_alloc(c, m->input_row_bytes, &in) == 0, "alloc input");
	CHECK(inferd_tensor_alloc(c, m->output_row_bytes, &out) == 0, "alloc output");
	memset(in.data, 0, m->input_row_bytes);
	check_messages(c, m, &out);
	check_round_trip(c, m, &in, &out);
	inferd_close(c);
	printf("%s\n", failed ? "client_usability: FAILED" : "client_usability: all checks passed");
	return failed;
}
