/*
 * ipc_hostile.c: a raw client that speaks the wire protocol directly and
 * misbehaves on purpose; after each attack the daemon must still serve a
 * well-formed request with the same bits as before.
 *
 *   ipc_hostile SOCKET all MAX_CLIENTS   every attack below, in order
 *   ipc_hostile SOCKET denied            expect refusal as a user not allowed
 *   ipc_hostile SOCKET allowed           expect a working connection
 *   ipc_hostile SOCKET hold N            open N connections, print "held", wait
 *   ipc_hostile SOCKET hang N ROWS       submit N requests of ROWS rows, print
 *                                        "accepted" once the daemon took all of
 *                                        them and some are unfinished, then wait
 *                                        to be killed
 *   ipc_hostile SOCKET queue N           fill the completion ring with N unread
 *                                        answers, queue N more that stay in the
 *                                        submission ring, print "queued", then on
 *                                        SIGUSR1 read completions until all 2N came
 *                                        back (30 s at most) and print how they
 *                                        ended; exit 0 only when every one got a
 *                                        completion, ok or shutdown
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "inferd_wire.h"

static const char *sock_path;
static int failures;

#define FAIL(...) do {							\
	failures++;							\
	fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);		\
	fprintf(stderr, __VA_ARGS__);					\
	fputc('\n', stderr);						\
} while (0)

/* A raw connection with its region. */
struct raw {
	int fd, efd, bell[2];
	uint8_t *base;
	uint64_t bytes;
	uint32_t sq_entries, cq_entries, sq_tail, cq_head;
	struct inferd_wire_layout l;
	struct inferd_wire_header *hdr;
	struct inferd_wire_sqe *sq;
	struct inferd_wire_cqe *cq;
	uint32_t model_id;
	uint64_t in_row, out_row;
};

/* The model and the reference output of the probe input. */
static float ref_out[64];
static int have_ref;

/* Connect and return the socket, or -1. */
static int
raw_dial(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", sock_path);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		fprintf(stderr, "connect %s: %s\n", sock_path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/* Send a message with optional descriptors; -1 on failure. */
static int
raw_send(int fd, uint32_t type, const void *p, uint32_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct inferd_wire_msg h = { type, len };
	struct iovec iov[2] = { { &h, sizeof h }, { (void *)p, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	struct cmsghdr *cm;

	if (nfds > 0) {
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)(sizeof h + len) ? 0 : -1;
}

/* Read exactly n bytes within timeout_ms; 0, or -1 on EOF, error or timeout. */
static int
raw_read(int fd, void *buf, size_t n, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		if (poll(&p, 1, timeout_ms) != 1)
			return -1;
		r = recv(fd, (char *)buf + got, n - got, 0);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Receive one message into buf; its type, or -1. */
static int
raw_recv(int fd, void *buf, size_t cap, uint32_t *len)
{
	struct inferd_wire_msg h;

	if (raw_read(fd, &h, sizeof h, 5000) != 0 || h.length > cap ||
	    raw_read(fd, buf, h.length, 5000) != 0)
		return -1;
	*len = h.length;
	return (int)h.type;
}

/* 1 when the daemon closes fd within 5 s (after any pending bytes). */
static int
raw_closed(int fd)
{
	char buf[4096];
	struct pollfd p = { fd, POLLIN, 0 };
	int i;

	for (i = 0; i < 100; i++) {
		if (poll(&p, 1, 5000) != 1)
			return 0;
		if (recv(fd, buf, sizeof buf, 0) <= 0)
			return 1;
	}
	return 0;
}

/* Expect an ERROR with code (then the connection closed when closes). */
static int
raw_expect_error(int fd, int32_t code, int closes, const char *what)
{
	uint8_t buf[4096];
	struct inferd_wire_error_msg e;
	uint32_t len;
	int t = raw_recv(fd, buf, sizeof buf, &len);

	if (t != INFERD_WIRE_ERROR || len <= sizeof e || buf[len - 1] != '\0') {
		FAIL("%s: expected an ERROR message, got type %d", what, t);
		return -1;
	}
	memcpy(&e, buf, sizeof e);
	if (e.code != code) {
		FAIL("%s: error code %d, expected %d (%s)", what, e.code, code, (char *)buf + sizeof e);
		return -1;
	}
	if (closes && !raw_closed(fd)) {
		FAIL("%s: the daemon kept the connection open", what);
		return -1;
	}
	printf("ok %s: refused: %s\n", what, (char *)buf + sizeof e);
	return 0;
}

/* Read the daemon's hello; 0 or -1. */
static int
raw_greeting(int fd, struct inferd_wire_server_hello *h)
{
	uint32_t len;

	if (raw_recv(fd, h, sizeof *h, &len) != INFERD_WIRE_SERVER_HELLO || len != sizeof *h ||
	    h->magic != INFERD_WIRE_MAGIC || h->version != INFERD_PROTOCOL_VERSION)
		return -1;
	return 0;
}

/* A memfd of bytes, sealed against shrinking when seal is set. */
static int
raw_memfd(uint64_t bytes, int seal)
{
	int fd = memfd_create("inferd-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd == -1 || ftruncate(fd, (off_t)bytes) != 0 ||
	    (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)) {
		perror("memfd");
		exit(2);
	}
	return fd;
}

/* Close everything of r. */
static void
raw_close(struct raw *r)
{
	if (r->base != NULL)
		munmap(r->base, r->bytes);
	close(r->fd);
	close(r->efd);
	close(r->bell[0]);
	memset(r, 0, sizeof *r);
}

/* Ask for fashion-mlp and keep its id and row sizes. */
static int
raw_query_model(struct raw *r)
{
	struct {
		struct inferd_wire_model_query q;
		char name[11];
	} m = { { 0, 11 }, "fashion-mlp" };
	static uint8_t buf[INFERD_WIRE_MAX_SERVER_PAYLOAD];
	struct inferd_wire_model_info info;
	uint32_t len;

	if (raw_send(r->fd, INFERD_WIRE_MODEL_QUERY, &m, sizeof m.q + 11, NULL, 0) != 0 ||
	    raw_recv(r->fd, buf, sizeof buf, &len) != INFERD_WIRE_MODEL_INFO || len < sizeof info)
		return -1;
	memcpy(&info, buf, sizeof info);
	r->model_id = info.id;
	r->in_row = info.input_row_bytes;
	r->out_row = info.output_row_bytes;
	return r->out_row <= sizeof ref_out ? 0 : -1;
}

/* Attach with a sealed region of the given geometry; 0, or -1 with r closed. */
static int
raw_attach(struct raw *r, uint64_t bytes, uint32_t sq, uint32_t cq)
{
	struct inferd_wire_client_hello h = { INFERD_WIRE_MAGIC, INFERD_PROTOCOL_VERSION, bytes, sq, cq };
	struct inferd_wire_server_hello sh;
	struct inferd_wire_ready ready;
	int memfd, fds[3];
	uint32_t len;

	memset(r, 0, sizeof *r);
	r->bytes = bytes;
	r->sq_entries = sq;
	r->cq_entries = cq;
	if (inferd_wire_layout(bytes, sq, cq, &r->l) != 0 || (r->fd = raw_dial()) == -1)
		return -1;
	if (raw_greeting(r->fd, &sh) != 0) {
		close(r->fd);
		return -1;
	}
	memfd = raw_memfd(bytes, 1);
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->efd == -1 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, r->bell) != 0)
		exit(2);
	r->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (r->base == MAP_FAILED)
		exit(2);
	r->hdr = (struct inferd_wire_header *)r->base;
	r->sq = (struct inferd_wire_sqe *)(r->base + r->l.sq_offset);
	r->cq = (struct inferd_wire_cqe *)(r->base + r->l.cq_offset);
	fds[0] = memfd;
	fds[1] = r->efd;
	fds[2] = r->bell[1];
	if (raw_send(r->fd, INFERD_WIRE_CLIENT_HELLO, &h, sizeof h, fds, 3) != 0 ||
	    raw_recv(r->fd, &ready, sizeof ready, &len) != INFERD_WIRE_READY || len != sizeof ready ||
	    ready.data_offset != r->l.data_offset || raw_query_model(r) != 0) {
		close(memfd);
		close(r->bell[1]);
		raw_close(r);
		return -1;
	}
	close(memfd);
	close(r->bell[1]);
	return 0;
}

/* Ring the submission doorbell; -1 when the eventfd write failed. */
static int
raw_ring(struct raw *r)
{
	uint64_t one = 1;

	return write(r->efd, &one, sizeof one) == sizeof one ? 0 : -1;
}

/* Publish one submission without ringing. */
static void
raw_publish(struct raw *r, const struct inferd_wire_sqe *e)
{
	r->sq[r->sq_tail & (r->sq_entries - 1)] = *e;
	r->sq_tail++;
	__atomic_store_n(&r->hdr->sq_tail, r->sq_tail, __ATOMIC_RELEASE);
}

/* Publish one submission and ring the doorbell when the daemon asks for it (as libinferd does). */
static void
raw_submit(struct raw *r, const struct inferd_wire_sqe *e)
{
	raw_publish(r, e);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((__atomic_load_n(&r->hdr->sq_flags, __ATOMIC_RELAXED) & INFERD_WIRE_SQ_NEED_WAKEUP) &&
	    raw_ring(r) != 0)
		exit(2);
}

/* Sleep on the region's futex word until the daemon wakes it or 100 ms pass (the wire's protocol). */
static void
raw_futex_sleep(struct raw *r)
{
	struct timespec ts = { 0, 100 * 1000000L };
	uint32_t v = __atomic_or_fetch(&r->hdr->cq_wake, INFERD_WIRE_WAKE_FUTEX, __ATOMIC_SEQ_CST);

	if (__atomic_load_n(&r->hdr->cq_tail, __ATOMIC_ACQUIRE) == r->cq_head)
		(void)syscall(SYS_futex, &r->hdr->cq_wake, FUTEX_WAIT, v, &ts, NULL, 0);
}

/* Wait up to timeout_ms for a completion; 0 with *out, or -1. */
static int
raw_complete(struct raw *r, struct inferd_wire_cqe *out, int timeout_ms)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (__atomic_load_n(&r->hdr->cq_tail, __ATOMIC_ACQUIRE) != r->cq_head) {
			*out = r->cq[r->cq_head & (r->cq_entries - 1)];
			r->cq_head++;
			__atomic_store_n(&r->hdr->cq_head, r->cq_head, __ATOMIC_RELEASE);
			/* Room freed with submissions waiting: ring if the daemon sleeps (as libinferd does). */
			if (__atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE) != r->sq_tail) {
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
				if ((__atomic_load_n(&r->hdr->sq_flags, __ATOMIC_RELAXED) &
				    INFERD_WIRE_SQ_NEED_WAKEUP) && raw_ring(r) != 0)
					exit(2);
			}
			return 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
			return -1;
		raw_futex_sleep(r);
	}
}

/* A well-formed one-row request: input at the data area's start, output after it. */
static struct inferd_wire_sqe
raw_good(const struct raw *r, uint64_t user_data)
{
	struct inferd_wire_sqe e = {
		.user_data = user_data,
		.model_id = r->model_id,
		.datatype = INFERD_WIRE_FP32,
		.rows = 1,
		.input_offset = r->l.data_offset,
		.input_bytes = r->in_row,
		.output_offset = r->l.data_offset + 65536,
		.output_bytes = r->out_row,
	};

	return e;
}

/* Fill the probe input: a fixed ramp. */
static void
raw_fill_input(struct raw *r)
{
	float *in = (float *)(r->base + r->l.data_offset);
	size_t i;

	for (i = 0; i < r->in_row / 4; i++)
		in[i] = (float)((i * 37) % 255) / 255.0f;
}

/*
 * 1 when the output at got (bytes long) is the reference's within 1e-5 of
 * each value's scale: on a GPU a row's bits depend on the batch it rode in
 * (cuBLAS picks kernels by batch size), so two answers to the same input
 * may differ in the last place.
 */
static int
ref_matches(const void *got, size_t bytes)
{
	const float *a = ref_out, *b = got;
	size_t i;

	for (i = 0; i < bytes / sizeof(float); i++)
		if (!(fabsf(a[i] - b[i]) <= 1e-5f * fmaxf(1.0f, fabsf(a[i]))))
			return 0;
	return 1;
}

/* Run the probe through r; 0 when it succeeds with the reference's answer. */
static int
raw_probe(struct raw *r, const char *what)
{
	struct inferd_wire_sqe e = raw_good(r, 77);
	struct inferd_wire_cqe c;

	raw_fill_input(r);
	memset(r->base + e.output_offset, 0xff, r->out_row);
	raw_submit(r, &e);
	if (raw_complete(r, &c, 10000) != 0 || c.user_data != 77 || c.status != INFERD_WIRE_OK) {
		FAIL("%s: the probe request failed", what);
		return -1;
	}
	if (!have_ref) {
		memcpy(ref_out, r->base + e.output_offset, r->out_row);
		have_ref = 1;
	} else if (!ref_matches(r->base + e.output_offset, r->out_row)) {
		FAIL("%s: the probe's output differs from the reference", what);
		return -1;
	}
	return 0;
}

/* The daemon still serves a fresh client correctly. */
static void
check_alive(const char *after)
{
	struct raw r;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0) {
		FAIL("after %s: cannot attach", after);
		return;
	}
	raw_probe(&r, after);
	raw_close(&r);
}

/* Hello variants refused by the daemon: each gets an ERROR and the door. */
static void
attack_hello(const char *what, struct inferd_wire_client_hello h, uint32_t len,
    int memfd, int nfds, int32_t code)
{
	struct inferd_wire_server_hello sh;
	int fds[4], i, fd = raw_dial(), pair[2];

	if (fd == -1 || raw_greeting(fd, &sh) != 0) {
		FAIL("%s: no greeting", what);
		if (fd != -1)
			close(fd);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
		exit(2);
	fds[0] = memfd;
	fds[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fds[2] = pair[1];
	fds[3] = eventfd(0, EFD_CLOEXEC);
	if (raw_send(fd, INFERD_WIRE_CLIENT_HELLO, &h, len, fds, nfds) != 0)
		FAIL("%s: send", what);
	else
		raw_expect_error(fd, code, 1, what);
	for (i = 1; i < 4; i++)
		close(fds[i]);
	close(pair[0]);
	close(fd);
	check_alive(what);
}

/* Every malformed or dishonest hello. */
static void
attacks_on_hello(void)
{
	struct inferd_wire_client_hello good = { INFERD_WIRE_MAGIC, INFERD_PROTOCOL_VERSION, 1 << 20, 4, 4 }, h;
	int memfd = raw_memfd(1 << 20, 1), small = raw_memfd(1 << 16, 1), unsealed = raw_memfd(1 << 20, 0);
	int huge = raw_memfd(2ULL << 30, 1);

	h = good, h.magic = 0xdeadbeef;
	attack_hello("bad magic", h, sizeof h, memfd, 3, INFERD_WIRE_ERR_PROTOCOL);
	h = good, h.version = 99;
	attack_hello("bad version", h, sizeof h, memfd, 3, INFERD_WIRE_ERR_PROTOCOL);
	attack_hello("short hello", good, 10, memfd, 3, INFERD_WIRE_ERR_PROTOCOL);
	attack_hello("hello without descriptors", good, sizeof good, memfd, 0, INFERD_WIRE_ERR_PROTOCOL);
	attack_hello("hello with 4 descriptors", good, sizeof good, memfd, 4, INFERD_WIRE_ERR_PROTOCOL);
	h = good, h.sq_entries = 3;
	attack_hello("ring not a power of two", h, sizeof h, memfd, 3, INFERD_WIRE_ERR_PROTOCOL);
	h = good, h.sq_entries = 8;
	attack_hello("sq larger than cq", h, sizeof h, memfd, 3, INFERD_WIRE_ERR_PROTOCOL);
	attack_hello("unsealed region", good, sizeof good, unsealed, 3, INFERD_WIRE_ERR_REGION);
	attack_hello("region smaller than claimed", good, sizeof good, small, 3, INFERD_WIRE_ERR_REGION);
	h = good, h.region_bytes = 2ULL << 30;
	attack_hello("region over max_region_bytes", h, sizeof h, huge, 3, INFERD_WIRE_ERR_REGION);
	h = good, h.region_bytes = 1 << 12;
	attack_hello("region too small for its rings", h, sizeof h, memfd, 3, INFERD_WIRE_ERR_PROTOCOL);
	close(memfd);
	close(small);
	close(unsealed);
	close(huge);
}

/* The submission doorbell must be an eventfd: a pipe is refused. */
static void
attack_pipe_doorbell(void)
{
	struct inferd_wire_client_hello h = { INFERD_WIRE_MAGIC, INFERD_PROTOCOL_VERSION, 1 << 20, 4, 4 };
	struct inferd_wire_server_hello sh;
	int fd = raw_dial(), memfd = raw_memfd(1 << 20, 1), p[2], pair[2], fds[3];

	if (fd == -1 || raw_greeting(fd, &sh) != 0 || pipe2(p, O_CLOEXEC) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
		exit(2);
	fds[0] = memfd;
	fds[1] = p[1];
	fds[2] = pair[1];
	if (raw_send(fd, INFERD_WIRE_CLIENT_HELLO, &h, sizeof h, fds, 3) != 0)
		FAIL("pipe doorbell: send");
	else
		raw_expect_error(fd, INFERD_WIRE_ERR_PROTOCOL, 1, "pipe as doorbell");
	close(p[0]);
	close(p[1]);
	close(pair[0]);
	close(pair[1]);
	close(memfd);
	close(fd);
	check_alive("pipe as doorbell");
}

/* CANCEL: before the hello or of the wrong length drops the client; of an unknown request changes nothing. */
static void
attack_cancel(void)
{
	struct inferd_wire_server_hello sh;
	struct inferd_wire_cancel m = { 12345 };
	struct raw r;
	int fd;

	if ((fd = raw_dial()) == -1 || raw_greeting(fd, &sh) != 0)
		exit(2);
	raw_send(fd, INFERD_WIRE_CANCEL, &m, sizeof m, NULL, 0);
	raw_expect_error(fd, INFERD_WIRE_ERR_PROTOCOL, 1, "cancel before hello");
	close(fd);
	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	raw_send(r.fd, INFERD_WIRE_CANCEL, &m, sizeof m - 1, NULL, 0);
	raw_expect_error(r.fd, INFERD_WIRE_ERR_PROTOCOL, 1, "cancel with a short payload");
	raw_close(&r);
	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	raw_send(r.fd, INFERD_WIRE_CANCEL, &m, sizeof m, NULL, 0);
	m.user_data = 0;
	raw_send(r.fd, INFERD_WIRE_CANCEL, &m, sizeof m, NULL, 0);
	raw_probe(&r, "cancel of unknown requests (same connection)");
	/* Request 78 has finished: cancelling it now is harmless (the probe is 77). */
	{
		struct inferd_wire_sqe e = raw_good(&r, 78);
		struct inferd_wire_cqe c;

		raw_submit(&r, &e);
		if (raw_complete(&r, &c, 10000) != 0 || c.user_data != 78 || c.status != INFERD_WIRE_OK)
			FAIL("cancel: request 78 failed");
	}
	m.user_data = 78;
	raw_send(r.fd, INFERD_WIRE_CANCEL, &m, sizeof m, NULL, 0);
	raw_probe(&r, "cancel of a finished request (same connection)");
	raw_close(&r);
}

/* An OUTPUT_DIMS query with room for every input. */
struct dims_msg {
	struct inferd_wire_output_dims_query q;
	struct inferd_wire_dims t[INFERD_WIRE_MAX_TENSORS];
};

/* A well-formed OUTPUT_DIMS for r's model (fashion-mlp: one input of in_row / 4 values). */
static void
dims_good(const struct raw *r, struct dims_msg *m)
{
	memset(m, 0, sizeof *m);
	m->q.model_id = r->model_id;
	m->q.rows = 1;
	m->q.ninputs = 1;
	m->t[0].ndims = 1;
	m->t[0].dims[0] = (int64_t)(r->in_row / 4);
}

/* Bytes of m as its ninputs say (at most the whole struct). */
static uint32_t
dims_len(const struct dims_msg *m)
{
	uint32_t n = m->q.ninputs < INFERD_WIRE_MAX_TENSORS ? m->q.ninputs : INFERD_WIRE_MAX_TENSORS;

	return (uint32_t)(sizeof m->q + n * sizeof m->t[0]);
}

/* Ask r's model's output dims; the reply must be fashion-mlp's one output of out_row / 4 values. */
static void
dims_answered(struct raw *r, const char *what)
{
	static uint8_t buf[INFERD_WIRE_MAX_SERVER_PAYLOAD];
	struct inferd_wire_output_dims_reply h;
	struct inferd_wire_dims d;
	struct dims_msg m;
	uint32_t len;

	dims_good(r, &m);
	if (raw_send(r->fd, INFERD_WIRE_OUTPUT_DIMS, &m, dims_len(&m), NULL, 0) != 0 ||
	    raw_recv(r->fd, buf, sizeof buf, &len) != INFERD_WIRE_OUTPUT_DIMS_REPLY || len != sizeof h + sizeof d) {
		FAIL("%s: no OUTPUT_DIMS_REPLY of %zu bytes", what, sizeof h + sizeof d);
		return;
	}
	memcpy(&h, buf, sizeof h);
	memcpy(&d, buf + sizeof h, sizeof d);
	if (h.model_id != r->model_id || h.noutputs != 1 || d.ndims != 1 || d.dims[0] != (int64_t)(r->out_row / 4))
		FAIL("%s: OUTPUT_DIMS_REPLY model %u, %u outputs, ndims %u, dim %lld", what, h.model_id, h.noutputs,
		    d.ndims, (long long)d.dims[0]);
	else
		printf("ok %s: output dims [%lld]\n", what, (long long)d.dims[0]);
}

/* Send len bytes of m on a fresh connection: ERR_PROTOCOL and the connection dropped. */
static void
dims_dropped(const struct dims_msg *m, uint32_t len, const char *what)
{
	struct raw r;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	raw_send(r.fd, INFERD_WIRE_OUTPUT_DIMS, m, len, NULL, 0);
	raw_expect_error(r.fd, INFERD_WIRE_ERR_PROTOCOL, 1, what);
	raw_close(&r);
}

/* Send m on r's connection: an ERROR of code, the connection kept (its probe and a good query still work). */
static void
dims_refused(struct raw *r, const struct dims_msg *m, int32_t code, const char *what)
{
	raw_send(r->fd, INFERD_WIRE_OUTPUT_DIMS, m, dims_len(m), NULL, 0);
	if (raw_expect_error(r->fd, code, 0, what) == 0) {
		raw_probe(r, what);
		dims_answered(r, what);
	}
}

/* OUTPUT_DIMS malformed (dropped) or asking what the model does not take (refused, connection kept). */
static void
attack_output_dims(void)
{
	struct inferd_wire_server_hello sh;
	struct raw r, bystander;
	struct dims_msg m;
	int fd;

	if (raw_attach(&bystander, 1 << 20, 4, 4) != 0 || raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	dims_answered(&bystander, "output dims query");
	dims_good(&r, &m);
	if ((fd = raw_dial()) == -1 || raw_greeting(fd, &sh) != 0)
		exit(2);
	raw_send(fd, INFERD_WIRE_OUTPUT_DIMS, &m, dims_len(&m), NULL, 0);
	raw_expect_error(fd, INFERD_WIRE_ERR_PROTOCOL, 1, "output dims before hello");
	close(fd);
	dims_dropped(&m, dims_len(&m) - 8, "output dims: a short payload");
	dims_dropped(&m, dims_len(&m) + sizeof m.t[0], "output dims: an input more than ninputs says");
	dims_dropped(&m, sizeof m.q - 4, "output dims: a cut header");
	m.t[0].ndims = 9;
	dims_dropped(&m, dims_len(&m), "output dims: ndims 9");
	dims_good(&r, &m);
	m.t[0].dims[5] = 7;
	dims_dropped(&m, dims_len(&m), "output dims: a dim past ndims");
	dims_good(&r, &m);
	m.t[0].reserved = 1;
	dims_dropped(&m, dims_len(&m), "output dims: a tensor's reserved field");
	dims_good(&r, &m);
	m.q.reserved = 1;
	dims_dropped(&m, dims_len(&m), "output dims: the query's reserved field");
	dims_good(&r, &m);
	m.q.ninputs = 0;
	dims_dropped(&m, dims_len(&m), "output dims: 0 inputs");
	m.q.ninputs = INFERD_WIRE_MAX_TENSORS + 1;
	dims_dropped(&m, sizeof m, "output dims: 17 inputs");
	m.q.ninputs = 0xffffffffu;
	dims_dropped(&m, sizeof m, "output dims: 2^32 - 1 inputs");

	dims_good(&r, &m);
	m.t[0].dims[0] = INT64_MAX;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: a dim of 2^63 - 1");
	m.t[0].dims[0] = -1;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: a dim of -1");
	m.t[0].dims[0] = 0;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: a dim of 0");
	m.t[0].dims[0] = (int64_t)(r.in_row / 4) - 1;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: a fixed dim one short");
	dims_good(&r, &m);
	m.q.rows = 0;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: 0 rows");
	m.q.rows = 0xffffffffu;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: 2^32 - 1 rows");
	dims_good(&r, &m);
	m.q.ninputs = 2;
	m.t[1] = m.t[0];
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: 2 inputs of a model of 1");
	dims_good(&r, &m);
	m.t[0].ndims = 2;
	m.t[0].dims[1] = 1;
	dims_refused(&r, &m, INFERD_WIRE_ERR_SHAPE, "output dims: 2 dims of an input of 1");
	dims_good(&r, &m);
	m.q.model_id = 0x7fffffffu;
	dims_refused(&r, &m, INFERD_WIRE_ERR_NO_MODEL, "output dims: an unknown model id");
	raw_close(&r);
	raw_probe(&bystander, "output dims attacks (a client connected throughout)");
	dims_answered(&bystander, "output dims attacks (a client connected throughout)");
	raw_close(&bystander);
	check_alive("output dims attacks");
}

/* Control messages that are not allowed: each drops the client. */
static void
attack_messages(void)
{
	struct inferd_wire_server_hello sh;
	struct {
		struct inferd_wire_model_query q;
		char name[8];
	} q = { { 0, 200 }, "x" };
	struct raw r;
	int fd;

	if ((fd = raw_dial()) == -1 || raw_greeting(fd, &sh) != 0)
		exit(2);
	raw_send(fd, 99, "abc", 3, NULL, 0);
	raw_expect_error(fd, INFERD_WIRE_ERR_PROTOCOL, 1, "unknown message type");
	close(fd);
	if ((fd = raw_dial()) == -1 || raw_greeting(fd, &sh) != 0)
		exit(2);
	raw_send(fd, INFERD_WIRE_MODEL_QUERY, &q, sizeof q.q, NULL, 0);
	raw_expect_error(fd, INFERD_WIRE_ERR_PROTOCOL, 1, "model query before hello");
	close(fd);
	if ((fd = raw_dial()) == -1 || raw_greeting(fd, &sh) != 0)
		exit(2);
	/* A header claiming 4 GiB of payload is refused at once, not buffered. */
	{
		struct inferd_wire_msg h = { INFERD_WIRE_CLIENT_HELLO, 0xffffffffu };

		if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != sizeof h)
			FAIL("huge length: send");
		raw_expect_error(fd, INFERD_WIRE_ERR_PROTOCOL, 1, "4 GiB message length");
	}
	close(fd);
	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	raw_send(r.fd, INFERD_WIRE_MODEL_QUERY, &q, sizeof q, NULL, 0);
	raw_expect_error(r.fd, INFERD_WIRE_ERR_PROTOCOL, 1, "model query with a lying length");
	raw_close(&r);
	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	q.q.name_length = 5;
	memcpy(q.name, "nope!", 5);
	raw_send(r.fd, INFERD_WIRE_MODEL_QUERY, &q, sizeof q.q + 5, NULL, 0);
	raw_expect_error(r.fd, INFERD_WIRE_ERR_NO_MODEL, 0, "unknown model name");
	raw_probe(&r, "unknown model name (same connection)");
	raw_close(&r);
	attack_cancel();
	attack_output_dims();
	check_alive("bad messages");
}

/* One bad descriptor: completed with INVALID and the expected detail. */
static void
attack_descriptor(struct raw *r, const char *what, struct inferd_wire_sqe e, uint32_t detail)
{
	struct inferd_wire_cqe c;

	raw_submit(r, &e);
	if (raw_complete(r, &c, 10000) != 0) {
		FAIL("%s: no completion", what);
		return;
	}
	if (c.user_data != e.user_data || c.status != INFERD_WIRE_INVALID || c.detail != detail)
		FAIL("%s: completion {%llu, status %d, detail %u}, expected INVALID detail %u", what,
		    (unsigned long long)c.user_data, c.status, c.detail, detail);
	else
		printf("ok %s: invalid (detail %u)\n", what, detail);
}

/* Where the list-form attacks keep their tensor list: a page into the data area. */
#define LIST_AT(r) ((r)->l.data_offset + 131072)

/* A good list-form submission of the probe model: its one input and one output, the list written. */
static struct inferd_wire_sqe
raw_good_list(struct raw *r, uint64_t user_data, struct inferd_wire_tensor *t)
{
	struct inferd_wire_sqe e = {
		.user_data = user_data, .model_id = r->model_id, .rows = 1,
		.flags = INFERD_WIRE_SQE_LIST, .list_offset = LIST_AT(r), .ninputs = 1, .noutputs = 1,
	};

	memset(t, 0, 2 * sizeof *t);
	t[0] = (struct inferd_wire_tensor){ .index = 0, .datatype = INFERD_WIRE_FP32, .ndims = 1,
	    .dims = { (int64_t)(r->in_row / 4) }, .offset = r->l.data_offset, .bytes = r->in_row };
	t[1] = (struct inferd_wire_tensor){ .index = 0, .datatype = INFERD_WIRE_FP32, .ndims = 1,
	    .dims = { (int64_t)(r->out_row / 4) }, .offset = r->l.data_offset + 65536, .bytes = r->out_row };
	return e;
}

/* Submit e with the list t written into the region first. */
static void
attack_list(struct raw *r, const char *what, struct inferd_wire_sqe e, const struct inferd_wire_tensor *t,
    uint32_t detail)
{
	memcpy(r->base + LIST_AT(r), t, 2 * sizeof *t);
	attack_descriptor(r, what, e, detail);
}

/* The probe through a good tensor list answers exactly as the single form does. */
static void
raw_probe_list(struct raw *r)
{
	struct inferd_wire_tensor t[2];
	struct inferd_wire_sqe e = raw_good_list(r, 39, t);
	struct inferd_wire_cqe c;

	raw_fill_input(r);
	memset(r->base + t[1].offset, 0xff, r->out_row);
	memcpy(r->base + LIST_AT(r), t, sizeof t);
	raw_submit(r, &e);
	if (raw_complete(r, &c, 10000) != 0 || c.user_data != 39 || c.status != INFERD_WIRE_OK)
		FAIL("list probe: request failed (status %d, detail %u)", c.status, c.detail);
	else if (!have_ref || !ref_matches(r->base + t[1].offset, r->out_row))
		FAIL("list probe: output differs from the single form's");
	else
		printf("ok list probe: the same output as the single form\n");
}

/*
 * Tensor lists that lie: counts, indices, datatypes, dims, lengths and
 * places; the probe model has one FP32 input of fixed dims and one output.
 */
static void
attacks_on_lists(void)
{
	struct inferd_wire_tensor t[2];
	struct inferd_wire_sqe e;
	struct raw r;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	e = raw_good_list(&r, 20, t), e.ninputs = 1000;
	attack_list(&r, "list: a count past the maximum", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 21, t), e.ninputs = 2;
	attack_list(&r, "list: more inputs than the model", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 22, t), e.noutputs = 0;
	attack_list(&r, "list: no output wanted", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 23, t), e.list_offset = r.bytes - 8;
	attack_list(&r, "list: running past the region", e, t, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good_list(&r, 24, t), e.list_offset = 64;
	attack_list(&r, "list: over the ring header", e, t, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good_list(&r, 25, t), e.list_offset += 4;
	attack_list(&r, "list: misaligned", e, t, INFERD_WIRE_DETAIL_ALIGN);
	e = raw_good_list(&r, 26, t), t[0].index = 1;
	attack_list(&r, "list: input index past the model's", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 27, t), t[1].index = 5;
	attack_list(&r, "list: output index past the model's", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 28, t), t[0].datatype = INFERD_WIRE_INT64;
	attack_list(&r, "list: wrong input datatype", e, t, INFERD_WIRE_DETAIL_DATATYPE);
	e = raw_good_list(&r, 29, t), t[0].dims[0]++;
	attack_list(&r, "list: input dims not the model's", e, t, INFERD_WIRE_DETAIL_DIMS);
	e = raw_good_list(&r, 30, t), t[0].ndims = 9;
	attack_list(&r, "list: more dims than the wire has", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 31, t), t[1].dims[0] = 3;
	attack_list(&r, "list: output dims not what the inputs make", e, t, INFERD_WIRE_DETAIL_DIMS);
	e = raw_good_list(&r, 32, t), t[0].bytes += 4;
	attack_list(&r, "list: input length not rows x row bytes", e, t, INFERD_WIRE_DETAIL_LENGTH);
	e = raw_good_list(&r, 33, t), t[1].offset = r.bytes - 4;
	attack_list(&r, "list: output past the region", e, t, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good_list(&r, 34, t), t[0].offset = UINT64_MAX - 3;
	attack_list(&r, "list: input offset wrapping", e, t, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good_list(&r, 35, t), t[0].offset += 2;
	attack_list(&r, "list: misaligned input", e, t, INFERD_WIRE_DETAIL_ALIGN);
	e = raw_good_list(&r, 36, t), t[0].reserved = 1;
	attack_list(&r, "list: reserved field set", e, t, INFERD_WIRE_DETAIL_TENSORS);
	e = raw_good_list(&r, 37, t), e.datatype = INFERD_WIRE_FP32;
	attack_list(&r, "list: a datatype in the entry", e, t, INFERD_WIRE_DETAIL_DATATYPE);
	e = raw_good_list(&r, 38, t), e.list_reserved[1] = 7;
	attack_list(&r, "list: entry's reserved field set", e, t, INFERD_WIRE_DETAIL_TENSORS);
	raw_probe(&r, "bad tensor lists (same connection)");
	raw_probe_list(&r);
	raw_close(&r);
}

/* Descriptors pointing anywhere but the data area, and every other lie. */
static void
attacks_on_descriptors(void)
{
	struct inferd_wire_sqe e;
	struct raw r;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	e = raw_good(&r, 1), e.input_offset = r.bytes;
	attack_descriptor(&r, "input past the region", e, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good(&r, 2), e.output_offset = r.bytes - 4;
	attack_descriptor(&r, "output running past the region", e, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good(&r, 3), e.input_offset = UINT64_MAX - 1023;
	attack_descriptor(&r, "input offset+length wrapping", e, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good(&r, 4), e.output_offset = 0;
	attack_descriptor(&r, "output over the ring header", e, INFERD_WIRE_DETAIL_RANGE);
	e = raw_good(&r, 5), e.input_offset += 2;
	attack_descriptor(&r, "misaligned input", e, INFERD_WIRE_DETAIL_ALIGN);
	e = raw_good(&r, 6), e.model_id = 12345;
	attack_descriptor(&r, "unknown model id", e, INFERD_WIRE_DETAIL_MODEL);
	e = raw_good(&r, 7), e.datatype = 7;
	attack_descriptor(&r, "wrong datatype", e, INFERD_WIRE_DETAIL_DATATYPE);
	e = raw_good(&r, 8), e.rows = 0;
	attack_descriptor(&r, "zero rows", e, INFERD_WIRE_DETAIL_ROWS);
	e = raw_good(&r, 9), e.rows = 100000;
	attack_descriptor(&r, "rows over max_batch_size", e, INFERD_WIRE_DETAIL_ROWS);
	e = raw_good(&r, 10), e.rows = 2;
	attack_descriptor(&r, "rows disagreeing with the lengths", e, INFERD_WIRE_DETAIL_LENGTH);
	e = raw_good(&r, 11), e.input_bytes = UINT64_MAX;
	attack_descriptor(&r, "huge input length", e, INFERD_WIRE_DETAIL_LENGTH);
	e = raw_good(&r, 12), e.flags = 2;
	attack_descriptor(&r, "unknown flags", e, INFERD_WIRE_DETAIL_FLAGS);
	raw_probe(&r, "bad descriptors (same connection)");
	raw_close(&r);
	attacks_on_lists();
	check_alive("bad descriptors");
}

static int flip_stop;

/* Flip the descriptor slot between valid and hostile values until told to stop. */
static void *
flipper(void *arg)
{
	struct raw *r = arg;
	volatile struct inferd_wire_sqe *e = &r->sq[0];
	uint64_t good_off = r->l.data_offset, n = 0;

	while (!__atomic_load_n(&flip_stop, __ATOMIC_RELAXED)) {
		e->rows = (n & 1) ? 1 : 100000;
		e->input_offset = (n & 2) ? good_off : UINT64_MAX - 63;
		e->output_bytes = (n & 4) ? r->out_row : 1;
		n++;
	}
	return NULL;
}

/*
 * A descriptor rewritten after the doorbell: the daemon copies it once, so
 * each request either runs correctly or is refused; never anything else.
 */
static void
attack_rewrite(void)
{
	struct inferd_wire_cqe c;
	struct inferd_wire_sqe e;
	struct raw r;
	pthread_t t;
	int i, ok = 0, invalid = 0;

	/* One-entry rings so the flipper always hits the slot in use. */
	if (raw_attach(&r, 1 << 20, 1, 1) != 0)
		exit(2);
	raw_fill_input(&r);
	if (pthread_create(&t, NULL, flipper, &r) != 0)
		exit(2);
	for (i = 0; i < 400; i++) {
		e = raw_good(&r, (uint64_t)i);
		memset(r.base + e.output_offset, 0xff, r.out_row);
		raw_submit(&r, &e);
		if (raw_complete(&r, &c, 10000) != 0 || c.user_data != (uint64_t)i) {
			FAIL("rewrite: request %d got no proper completion", i);
			break;
		}
		if (c.status == INFERD_WIRE_OK) {
			ok++;
			if (!ref_matches(r.base + e.output_offset, r.out_row))
				FAIL("rewrite: request %d succeeded with a wrong output", i);
		} else if (c.status == INFERD_WIRE_INVALID)
			invalid++;
		else
			FAIL("rewrite: request %d: status %d", i, c.status);
	}
	__atomic_store_n(&flip_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	printf("ok descriptor rewritten after the doorbell: %d ran, %d refused\n", ok, invalid);
	raw_close(&r);
	check_alive("descriptor rewrite");
}

/* Garbage ring indices get the client disconnected. */
static void
attacks_on_indices(void)
{
	struct inferd_wire_sqe e;
	struct raw r;
	uint64_t one = 1;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	__atomic_store_n(&r.hdr->sq_tail, 0x7fffffffu, __ATOMIC_RELEASE);
	if (write(r.efd, &one, sizeof one) != sizeof one)
		exit(2);
	if (!raw_closed(r.fd))
		FAIL("garbage sq_tail: still connected");
	else
		printf("ok garbage sq_tail: disconnected\n");
	raw_close(&r);
	check_alive("garbage sq_tail");

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	__atomic_store_n(&r.hdr->cq_head, 12345678u, __ATOMIC_RELEASE);
	e = raw_good(&r, 1);
	raw_submit(&r, &e);
	if (!raw_closed(r.fd))
		FAIL("garbage cq_head: still connected");
	else
		printf("ok garbage cq_head: disconnected\n");
	raw_close(&r);
	check_alive("garbage cq_head");
}

/* Completions not read: the daemon holds further submissions, then takes them on the doorbell. */
static void
attack_flow_control(void)
{
	struct inferd_wire_cqe c;
	struct inferd_wire_sqe e;
	struct raw r;
	uint64_t one = 1;
	int i, n = 0;

	if (raw_attach(&r, 1 << 20, 2, 2) != 0)
		exit(2);
	raw_fill_input(&r);
	for (i = 0; i < 2; i++) {
		e = raw_good(&r, (uint64_t)i);
		raw_submit(&r, &e);
	}
	/* Wait for both to complete without reading them, then queue two more. */
	for (i = 0; i < 100 && __atomic_load_n(&r.hdr->cq_tail, __ATOMIC_ACQUIRE) != 2; i++)
		usleep(20000);
	for (i = 2; i < 4; i++) {
		e = raw_good(&r, (uint64_t)i);
		raw_submit(&r, &e);
	}
	usleep(200000);
	if (__atomic_load_n(&r.hdr->sq_head, __ATOMIC_ACQUIRE) != 2 ||
	    __atomic_load_n(&r.hdr->cq_tail, __ATOMIC_ACQUIRE) != 2)
		FAIL("flow control: the daemon took submissions its completion ring cannot hold");
	while (n < 4 && raw_complete(&r, &c, 5000) == 0) {
		if (c.user_data != (uint64_t)n || c.status != INFERD_WIRE_OK)
			FAIL("flow control: completion %d: user_data %llu status %d", n,
			    (unsigned long long)c.user_data, c.status);
		n++;
		if (n == 2 && write(r.efd, &one, sizeof one) != sizeof one)
			exit(2);
	}
	if (n != 4)
		FAIL("flow control: %d of 4 completions", n);
	else
		printf("ok flow control: submissions waited for completion room\n");
	raw_close(&r);
	check_alive("flow control");
}

static int scribble_stop;

/* Scribble over the doorbell words the daemon writes or reads until told to stop. */
static void *
scribbler(void *arg)
{
	struct raw *r = arg;
	uint32_t n = 0x9e3779b9u;

	while (!__atomic_load_n(&scribble_stop, __ATOMIC_RELAXED)) {
		n = n * 1664525u + 1013904223u;
		__atomic_store_n(&r->hdr->sq_flags, n >> 30 ? INFERD_WIRE_SQ_NEED_WAKEUP : n, __ATOMIC_RELAXED);
		__atomic_store_n(&r->hdr->cq_wake, n, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * A client that sets NEED_WAKEUP falsely and corrupts its futex word while
 * it works (so the daemon wakes it for nothing, or not at all): its own
 * requests still complete correctly, and another client is served.
 */
static void
attack_wake_words(void)
{
	struct inferd_wire_cqe c;
	struct inferd_wire_sqe e;
	struct raw r;
	pthread_t t;
	int i, ok = 0;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	raw_fill_input(&r);
	__atomic_store_n(&scribble_stop, 0, __ATOMIC_RELAXED);
	if (pthread_create(&t, NULL, scribbler, &r) != 0)
		exit(2);
	for (i = 0; i < 200; i++) {
		e = raw_good(&r, (uint64_t)i);
		memset(r.base + e.output_offset, 0xff, r.out_row);
		/* Ring always: the flag it reads is its own scribble. */
		raw_publish(&r, &e);
		if (raw_ring(&r) != 0)
			exit(2);
		if (raw_complete(&r, &c, 10000) != 0 || c.user_data != (uint64_t)i ||
		    c.status != INFERD_WIRE_OK) {
			FAIL("scribbled wake words: request %d got no proper completion", i);
			break;
		}
		if (!ref_matches(r.base + e.output_offset, r.out_row))
			FAIL("scribbled wake words: request %d: wrong output", i);
		else
			ok++;
		if (i == 100)
			check_alive("scribbled wake words (another client, meanwhile)");
	}
	__atomic_store_n(&scribble_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	printf("ok NEED_WAKEUP and the futex word scribbled over: %d of 200 requests right\n", ok);
	raw_close(&r);
	check_alive("scribbled wake words");
}

/*
 * A client that never writes its eventfd: its submission is taken when the
 * daemon polls the rings, which another client's activity starts, and it
 * stalls nobody meanwhile.
 */
static void
attack_silent(void)
{
	struct inferd_wire_sqe e;
	struct inferd_wire_cqe c;
	struct raw r;

	if (raw_attach(&r, 1 << 20, 4, 4) != 0)
		exit(2);
	raw_fill_input(&r);
	e = raw_good(&r, 5);
	memset(r.base + e.output_offset, 0xff, r.out_row);
	raw_publish(&r, &e);
	check_alive("a client that never rings (another client, meanwhile)");
	if (raw_complete(&r, &c, 10000) != 0 || c.user_data != 5 || c.status != INFERD_WIRE_OK ||
	    !ref_matches(r.base + e.output_offset, r.out_row))
		FAIL("silent client: its submission was not served while the daemon polled");
	else
		printf("ok a client that never rings: served when the daemon polled the rings\n");
	raw_close(&r);
}

/* Open max greeted connections; 0, or -1 (all closed) when the daemon refused one. */
static int
crowd_fill(int *fds, int max)
{
	struct inferd_wire_server_hello sh;
	int i, j;

	for (i = 0; i < max; i++)
		if ((fds[i] = raw_dial()) == -1 || raw_greeting(fds[i], &sh) != 0) {
			for (j = 0; j <= i; j++)
				if (fds[j] != -1)
					close(fds[j]);
			return -1;
		}
	return 0;
}

/*
 * max_clients connections, then one more that is refused; then room again.
 * Earlier clients' hang-ups reach the daemon asynchronously, so filling is
 * retried for a few seconds.
 */
static void
attack_crowd(int max)
{
	int *fds = calloc((size_t)max, sizeof *fds), i, fd;
	struct raw r;

	for (i = 0; i < 50 && crowd_fill(fds, max) != 0; i++)
		usleep(100000);
	if (i == 50) {
		FAIL("crowd: could not open %d connections", max);
		free(fds);
		return;
	}
	if ((fd = raw_dial()) != -1) {
		raw_expect_error(fd, INFERD_WIRE_ERR_TOO_MANY, 1, "max_clients + 1");
		close(fd);
	}
	for (i = 0; i < max; i++)
		close(fds[i]);
	free(fds);
	for (i = 0; i < 50; i++) {
		if (raw_attach(&r, 1 << 20, 4, 4) == 0) {
			raw_probe(&r, "after the crowd left");
			raw_close(&r);
			return;
		}
		usleep(100000);
	}
	FAIL("crowd: no room after the crowd left");
}

/* Submit n requests of rows rows, report once the daemon holds all of them, then wait to die. */
static int
hang(int n, int rows)
{
	struct inferd_wire_sqe e;
	uint32_t entries = 1;
	struct raw r;
	int i;

	while (entries < (uint32_t)n)
		entries *= 2;
	if (raw_attach(&r, 32 << 20, entries, entries) != 0)
		return 2;
	for (i = 0; i < n; i++) {
		e = raw_good(&r, (uint64_t)i);
		e.rows = (uint32_t)rows;
		e.input_bytes = r.in_row * (uint64_t)rows;
		e.output_offset = r.l.data_offset + (16 << 20);
		e.output_bytes = r.out_row * (uint64_t)rows;
		raw_submit(&r, &e);
	}
	alarm(60);
	while (__atomic_load_n(&r.hdr->sq_head, __ATOMIC_ACQUIRE) != (uint32_t)n)
		usleep(100);
	printf("accepted %d, completed %u\n", n, __atomic_load_n(&r.hdr->cq_tail, __ATOMIC_ACQUIRE));
	fflush(stdout);
	pause();
	return 0;
}

/* Submit n one-row requests starting at user_data first. */
static void
queue_submit(struct raw *r, int first, int n)
{
	struct inferd_wire_sqe e;
	int i;

	for (i = 0; i < n; i++) {
		e = raw_good(r, (uint64_t)(first + i));
		raw_submit(r, &e);
	}
}

/*
 * Fill the completion ring with n answers left unread, then queue n more
 * that stay in the submission ring; on SIGUSR1 read every completion.
 */
static int
queue(int n)
{
	struct inferd_wire_cqe cqe;
	uint32_t entries = 1;
	int sig, got = 0, ok = 0, shut = 0, other = 0;
	struct raw r;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (n < 1 || n > 4096 || sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return 2;
	while (entries < (uint32_t)n)
		entries *= 2;
	if (raw_attach(&r, 1 << 20, entries, entries) != 0)
		return 2;
	raw_fill_input(&r);
	queue_submit(&r, 0, n);
	alarm(120);
	while (__atomic_load_n(&r.hdr->cq_tail, __ATOMIC_ACQUIRE) != (uint32_t)n)
		usleep(1000);
	queue_submit(&r, n, n);
	printf("queued %d\n", 2 * n);
	fflush(stdout);
	if (sigwait(&set, &sig) != 0)
		return 2;
	for (; got < 2 * n; got++) {
		if (raw_complete(&r, &cqe, 30000) != 0)
			break;
		if (cqe.status == INFERD_WIRE_OK)
			ok++;
		else if (cqe.status == INFERD_WIRE_SHUTDOWN)
			shut++;
		else
			other++;
	}
	printf("completions %d of %d: ok %d, shutdown %d, other %d\n", got, 2 * n, ok, shut, other);
	return got == 2 * n && other == 0 ? 0 : 1;
}

/* Hold n greeted connections until killed. */
static int
hold(int n)
{
	int *fds = calloc((size_t)n, sizeof *fds);

	if (fds == NULL || crowd_fill(fds, n) != 0)
		return 1;
	alarm(60);
	printf("held %d\n", n);
	fflush(stdout);
	pause();
	return 0;
}

/* Connect as a user the daemon should refuse. */
static int
denied(void)
{
	struct inferd_wire_server_hello sh;
	int fd = raw_dial();

	if (fd == -1)
		return 2;
	if (raw_greeting(fd, &sh) == 0) {
		FAIL("denied: the daemon greeted a user it should refuse");
		return 1;
	}
	close(fd);
	fd = raw_dial();
	raw_expect_error(fd, INFERD_WIRE_ERR_DENIED, 1, "user not allowed");
	close(fd);
	return failures ? 1 : 0;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ipc_hostile SOCKET all MAX_CLIENTS | denied | allowed | hold N | hang N ROWS | queue N\n");
		return 2;
	}
	sock_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(argv[2], "queue") == 0 && argc == 4)
		return queue(atoi(argv[3]));
	if (strcmp(argv[2], "hang") == 0 && argc == 5)
		return hang(atoi(argv[3]), atoi(argv[4]));
	if (strcmp(argv[2], "hold") == 0 && argc == 4)
		return hold(atoi(argv[3]));
	if (strcmp(argv[2], "denied") == 0)
		return denied();
	if (strcmp(argv[2], "allowed") == 0) {
		check_alive("allowed user");
		return failures ? 1 : 0;
	}
	if (strcmp(argv[2], "all") != 0 || argc != 4)
		return 2;
	check_alive("start");
	attacks_on_hello();
	attack_pipe_doorbell();
	attack_messages();
	attacks_on_descriptors();
	attack_rewrite();
	attacks_on_indices();
	attack_flow_control();
	attack_wake_words();
	attack_silent();
	attack_crowd(atoi(argv[3]));
	check_alive("everything");
	printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}
