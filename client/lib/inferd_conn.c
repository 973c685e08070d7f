/* inferd_conn.c: the control socket — messages with deadlines, the daemon's hello, the region handed over. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

#define INFERD_DEFAULT_REGION (64u << 20)
#define INFERD_DEFAULT_SQ 256u

/* Milliseconds left until deadline (monotonic ms); -1 stays -1 (forever). */
static int
inferd__remaining(int64_t deadline)
{
	int64_t now;

	if (deadline < 0)
		return -1;
	now = inferd__now_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

/* A deadline timeout_ms from now (-1: none). */
static int64_t
inferd__deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	return inferd__now_ms() + timeout_ms;
}

/* Read exactly len bytes before the deadline. */
static int
inferd__read_full(int fd, void *buf, size_t len, int64_t deadline)
{
	struct pollfd p = { fd, POLLIN, 0 };
	size_t got = 0;
	ssize_t n;
	int r;

	while (got < len) {
		r = poll(&p, 1, inferd__remaining(deadline));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return inferd__fail(INFERD_ESYS, "poll: %s", strerror(errno));
		if (r == 0)
			return inferd__fail(INFERD_EAGAIN, "no reply from the daemon in time");
		n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == 0 || (n == -1 && errno == ECONNRESET))
			return inferd__fail(INFERD_ECLOSED, "the daemon closed the connection");
		if (n == -1)
			return inferd__fail(INFERD_ESYS, "recv: %s", strerror(errno));
		got += (size_t)n;
	}
	return 0;
}

/* Map a daemon ERROR message to a code, keeping its text as the detail. */
static int
inferd__error_reply(const uint8_t *p, uint32_t len)
{
	struct inferd_wire_error_msg e;
	const char *text;

	if (len <= sizeof e || p[len - 1] != '\0')
		return inferd__fail(INFERD_EPROTO, "malformed error message from the daemon");
	memcpy(&e, p, sizeof e);
	text = (const char *)p + sizeof e;
	switch (e.code) {
	case INFERD_WIRE_ERR_DENIED:
		return inferd__fail(INFERD_EDENIED, "%s", text);
	case INFERD_WIRE_ERR_TOO_MANY:
	case INFERD_WIRE_ERR_REGION:
		return inferd__fail(INFERD_EREFUSED, "%s", text);
	case INFERD_WIRE_ERR_NO_MODEL:
		return inferd__fail(INFERD_ENOMODEL, "%s", text);
	case INFERD_WIRE_ERR_SHUTDOWN:
		return inferd__fail(INFERD_ESHUTDOWN, "%s", text);
	case INFERD_WIRE_ERR_INTERNAL:
		return inferd__fail(INFERD_EINTERNAL, "%s", text);
	case INFERD_WIRE_ERR_SHAPE:
		return inferd__fail(INFERD_ESHAPE, "%s", text);
	default:
		return inferd__fail(INFERD_EPROTO, "%s", text);
	}
}

/*
 * Receive one message of the expected type into a malloc'ed *payload; an
 * ERROR from the daemon becomes its code.
 */
int
inferd__recv(int fd, uint32_t want, uint8_t **payload, uint32_t *len, int timeout_ms)
{
	int64_t deadline = inferd__deadline(timeout_ms);
	struct inferd_wire_msg h;
	uint8_t *p;
	int r;

	*payload = NULL;
	if ((r = inferd__read_full(fd, &h, sizeof h, deadline)) != 0)
		return r;
	if (h.length > INFERD_WIRE_MAX_SERVER_PAYLOAD)
		return inferd__fail(INFERD_EPROTO, "reply of %u bytes is too long", h.length);
	if ((p = malloc(h.length + 1)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	if ((r = inferd__read_full(fd, p, h.length, deadline)) != 0) {
		free(p);
		return r;
	}
	if (h.type == INFERD_WIRE_ERROR) {
		r = inferd__error_reply(p, h.length);
		free(p);
		return r;
	}
	if (h.type != want) {
		free(p);
		return inferd__fail(INFERD_EPROTO, "unexpected message type %u from the daemon", h.type);
	}
	*payload = p;
	*len = h.length;
	return 0;
}

/* Send one message, with descriptors when fds is not NULL. */
int
inferd__send(int fd, uint32_t type, const void *payload, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * INFERD_WIRE_HELLO_FDS)];
	} cbuf;
	struct inferd_wire_msg h = { type, (uint32_t)len };
	struct iovec iov[2] = { { &h, sizeof h }, { (void *)payload, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds > 0) {
		memset(&cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EPIPE || errno == ECONNRESET))
		return inferd__fail(INFERD_ECLOSED, "the daemon closed the connection");
	if (n != (ssize_t)(sizeof h + len))
		return inferd__fail(INFERD_ESYS, "sendmsg: %s", n == -1 ? strerror(errno) : "short write");
	return 0;
}

/* Connect the control socket. */
int
inferd__dial(const char *path, int *out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sun.sun_path)
		return inferd__fail(INFERD_EINVAL, "socket path %s is too long", path);
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return inferd__fail(INFERD_ESYS, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		inferd__fail(INFERD_ECONNECT, "connecting to %s: %s", path, strerror(errno));
		close(fd);
		return INFERD_ECONNECT;
	}
	*out = fd;
	return 0;
}

/* Read and check the daemon's hello. */
int
inferd__server_hello(inferd_conn_t *c, struct inferd_wire_server_hello *h)
{
	uint8_t *p;
	uint32_t len;
	int r;

	if ((r = inferd__recv(c->control_fd, INFERD_WIRE_SERVER_HELLO, &p, &len, c->timeout_ms)) != 0)
		return r;
	if (len != sizeof *h) {
		free(p);
		return inferd__fail(INFERD_EPROTO, "daemon hello of %u bytes", len);
	}
	memcpy(h, p, sizeof *h);
	free(p);
	if (h->magic != INFERD_WIRE_MAGIC || h->version != INFERD_PROTOCOL_VERSION)
		return inferd__fail(INFERD_EPROTO, "daemon speaks protocol %u (magic %#x); this library speaks %u",
		    h->version, h->magic, INFERD_PROTOCOL_VERSION);
	return 0;
}

/* Choose the geometry from the options and the daemon's limits. */
int
inferd__geometry(inferd_conn_t *c, const struct inferd_options *o,
    const struct inferd_wire_server_hello *h)
{
	c->region_bytes = o && o->region_bytes ? o->region_bytes : INFERD_DEFAULT_REGION;
	c->sq_entries = o && o->sq_entries ? o->sq_entries : INFERD_DEFAULT_SQ;
	c->cq_entries = o && o->cq_entries ? o->cq_entries : 2 * c->sq_entries;
	if (c->cq_entries > h->max_entries && !(o && o->cq_entries))
		c->cq_entries = h->max_entries;
	if (c->region_bytes > h->max_region_bytes)
		return inferd__fail(INFERD_EINVAL, "a region of %llu bytes exceeds the daemon's max_region_bytes (%llu)",
		    (unsigned long long)c->region_bytes, (unsigned long long)h->max_region_bytes);
	if (c->cq_entries > h->max_entries ||
	    inferd_wire_layout(c->region_bytes, c->sq_entries, c->cq_entries, &c->layout) != 0)
		return inferd__fail(INFERD_EINVAL, "bad geometry: region %llu bytes, rings %u/%u "
		    "(powers of two, sq <= cq <= %u, and room for the rings)",
		    (unsigned long long)c->region_bytes, c->sq_entries, c->cq_entries, h->max_entries);
	return 0;
}

/* Create the sealed region and map it. */
int
inferd__region(inferd_conn_t *c, int *memfd)
{
	void *p;

	if ((*memfd = memfd_create("inferd-region", MFD_CLOEXEC | MFD_ALLOW_SEALING)) == -1)
		return inferd__fail(INFERD_ESYS, "memfd_create: %s", strerror(errno));
	if (ftruncate(*memfd, (off_t)c->region_bytes) != 0)
		return inferd__fail(INFERD_ESYS, "sizing the region: %s", strerror(errno));
	/* Sealed so that nobody can shrink it under the daemon's mapping (SIGBUS). */
	if (fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		return inferd__fail(INFERD_ESYS, "sealing the region: %s", strerror(errno));
	p = mmap(NULL, c->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *memfd, 0);
	if (p == MAP_FAILED)
		return inferd__fail(INFERD_ESYS, "mapping the region: %s", strerror(errno));
	c->base = p;
	c->hdr = p;
	c->sq = (struct inferd_wire_sqe *)(c->base + c->layout.sq_offset);
	c->cq = (struct inferd_wire_cqe *)(c->base + c->layout.cq_offset);
	c->hdr->magic = INFERD_WIRE_MAGIC;
	c->hdr->version = INFERD_PROTOCOL_VERSION;
	c->hdr->sq_entries = c->sq_entries;
	c->hdr->cq_entries = c->cq_entries;
	return 0;
}

/* Send the hello with the region and both doorbells, then wait for READY. */
int
inferd__attach(inferd_conn_t *c, int memfd)
{
	struct inferd_wire_client_hello h = { INFERD_WIRE_MAGIC, INFERD_PROTOCOL_VERSION,
	    c->region_bytes, c->sq_entries, c->cq_entries };
	struct inferd_wire_ready ready;
	int fds[INFERD_WIRE_HELLO_FDS], pair[2], r;
	uint8_t *p;
	uint32_t len;

	if ((c->submit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		return inferd__fail(INFERD_ESYS, "eventfd: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0)
		return inferd__fail(INFERD_ESYS, "socketpair: %s", strerror(errno));
	c->doorbell_fd = pair[0];
	fds[0] = memfd;
	fds[1] = c->submit_fd;
	fds[2] = pair[1];
	r = inferd__send(c->control_fd, INFERD_WIRE_CLIENT_HELLO, &h, sizeof h, fds, 3);
	close(pair[1]);
	if (r != 0)
		return r;
	if ((r = inferd__recv(c->control_fd, INFERD_WIRE_READY, &p, &len, c->timeout_ms)) != 0)
		return r;
	if (len != sizeof ready) {
		free(p);
		return inferd__fail(INFERD_EPROTO, "READY of %u bytes", len);
	}
	memcpy(&ready, p, sizeof ready);
	free(p);
	if (ready.data_offset != c->layout.data_offset)
		return inferd__fail(INFERD_EPROTO, "the daemon computed another region layout");
	c->nmodels = ready.nmodels;
	return 0;
}
