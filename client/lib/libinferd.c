/* libinferd.c: connecting to the daemon, the control conversation, model metadata. */
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
#define INFERD_DEFAULT_TIMEOUT_MS 10000
/* Spinning on the completion ring before sleeping: long enough for a small request on a fast path. */
#define INFERD_DEFAULT_SPIN_US 50
#define INFERD_MAX_SPIN_US 10000

/* The library version. */
const char *
inferd_version(void)
{
#define INFERD__STR(x) #x
#define INFERD__VERSION(a, b) INFERD__STR(a) "." INFERD__STR(b)
	return INFERD__VERSION(INFERD_VERSION_MAJOR, INFERD_VERSION_MINOR);
}

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
static int
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
static int
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

/* Allocate the connection with everything closed. */
static inferd_conn_t *
inferd__conn_new(const struct inferd_options *o)
{
	inferd_conn_t *c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->control_fd = c->submit_fd = c->doorbell_fd = -1;
	c->region_fd = -1;
	c->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : INFERD_DEFAULT_TIMEOUT_MS;
	c->reconnect = o && o->reconnect;
	c->reconnect_max_ms = o && o->reconnect_max_ms > 0 ? o->reconnect_max_ms : INFERD_DEFAULT_TIMEOUT_MS;
	c->spin_us = !o || o->spin_us == 0 ? INFERD_DEFAULT_SPIN_US : o->spin_us < 0 ? 0 :
	    o->spin_us > INFERD_MAX_SPIN_US ? INFERD_MAX_SPIN_US : o->spin_us;
	if (inferd__sync_init(c) != 0) {
		inferd__sync_free(c);
		free(c);
		return NULL;
	}
	return c;
}

/* Connect, create and hand over the region. */
int
inferd_connect(const char *socket_path, const struct inferd_options *opts,
    inferd_conn_t **out)
{
	struct inferd_wire_server_hello h;
	struct inferd_options o = INFERD_OPTIONS_INIT;
	inferd_conn_t *c;
	int memfd = -1, r;

	inferd__clear_error();
	if (out == NULL)
		return inferd__fail(INFERD_EINVAL, "out is NULL");
	*out = NULL;
	if (opts != NULL && (r = inferd__struct_copy(&o, INFERD__OPTIONS_SIZE_0_3, INFERD__OPTIONS_SIZE_0_1, opts,
	    opts->size, "INFERD_OPTIONS")) != 0)
		return r;
	opts = &o;
	if ((c = inferd__conn_new(opts)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	if ((r = inferd__dial(socket_path ? socket_path : INFERD_DEFAULT_SOCKET, &c->control_fd)) != 0 ||
	    (r = inferd__server_hello(c, &h)) != 0 || (r = inferd__geometry(c, opts, &h)) != 0 ||
	    (r = inferd__region(c, &memfd)) != 0 || (r = inferd__attach(c, memfd)) != 0 ||
	    (r = inferd__ring_init(c)) != 0 || (r = inferd__alloc_init(c)) != 0)
		goto fail;
	/* The daemon holds its own reference; the mapping keeps ours alive (kept to reconnect). */
	if (opts->reconnect) {
		c->region_fd = memfd;
		if ((c->socket_path = strdup(socket_path ? socket_path : INFERD_DEFAULT_SOCKET)) == NULL) {
			r = inferd__fail(INFERD_ENOMEM, "out of memory");
			goto fail;
		}
	} else {
		close(memfd);
	}
	memfd = -1;
	c->models_cap = inferd__models_cap(c->nmodels);
	if ((c->models = calloc(c->models_cap, sizeof *c->models)) == NULL) {
		r = inferd__fail(INFERD_ENOMEM, "out of memory");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (memfd != -1)
		close(memfd);
	inferd_close(c);
	return r;
}

/* Close the connection and release the region. */
void
inferd_close(inferd_conn_t *c)
{
	unsigned i;

	if (c == NULL)
		return;
	inferd__async_stop(c);
	if (c->region_fd != -1)
		close(c->region_fd);
	free(c->socket_path);
	inferd__retired_free(c);
	if (c->control_fd != -1)
		close(c->control_fd);
	if (c->submit_fd != -1)
		close(c->submit_fd);
	if (c->doorbell_fd != -1)
		close(c->doorbell_fd);
	if (c->base != NULL)
		munmap(c->base, c->region_bytes);
	if (c->models != NULL)
		for (i = 0; i < c->nmodels; i++)
			free(c->models[i]);
	free(c->models);
	free(c->dims_cache);
	inferd__ring_free(c);
	free(c->extents);
	inferd__sync_free(c);
	free(c);
}

/* Number of models served. */
unsigned
inferd_model_count(inferd_conn_t *c)
{
	return c != NULL ? c->nmodels : 0;
}

/* Check that the labels after the fixed part are nlabels NUL-terminated strings filling it. */
static int
inferd__labels_ok(const uint8_t *p, size_t len, uint32_t nlabels)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] == '\0')
			n++;
	return n == nlabels && (len == 0 || p[len - 1] == '\0');
}

/* Check MODEL_INFO's fixed part; the bytes of its tensor table in *tables. */
static int
inferd__model_info_ok(const struct inferd_wire_model_info *w, uint32_t len, size_t *tables)
{
	if (w->ninputs < 1 || w->ninputs > INFERD_WIRE_MAX_TENSORS || w->noutputs < 1 ||
	    w->noutputs > INFERD_WIRE_MAX_TENSORS || w->input_ndims > 8 || w->output_ndims > 8 ||
	    memchr(w->name, '\0', sizeof w->name) == NULL ||
	    memchr(w->input_name, '\0', sizeof w->input_name) == NULL ||
	    memchr(w->output_name, '\0', sizeof w->output_name) == NULL)
		return -1;
	*tables = (size_t)(w->ninputs + w->noutputs) * sizeof(struct inferd_wire_tensor_info);
	return len - sizeof *w >= *tables ? 0 : -1;
}

/* Fill the model's tensor tables from the wire's, right after the fixed part. */
static int
inferd__model_tensors(struct inferd_model *m, struct inferd_tensor_info *t, const uint8_t *p,
    uint32_t n)
{
	struct inferd_wire_tensor_info w;
	uint32_t i;

	for (i = 0; i < n; i++) {
		memcpy(&w, p + i * sizeof w, sizeof w);
		if (inferd__tensor_info(&w, &t[i]) != 0)
			return -1;
	}
	m->inputs = t;
	m->outputs = t + m->ninputs;
	return 0;
}

/* Build the public model (its tensors, its labels) from MODEL_INFO. */
int
inferd__model_build(const uint8_t *p, uint32_t len, struct inferd_model **out)
{
	struct inferd_wire_model_info w;
	struct inferd_tensor_info *tensors;
	struct inferd_model *m;
	const char **labels;
	size_t rest, tables, i;
	char *text;

	if (len < sizeof w)
		return inferd__fail(INFERD_EPROTO, "MODEL_INFO of %u bytes", len);
	memcpy(&w, p, sizeof w);
	if (inferd__model_info_ok(&w, len, &tables) != 0)
		return inferd__fail(INFERD_EPROTO, "malformed MODEL_INFO");
	rest = len - sizeof w - tables;
	if (!inferd__labels_ok(p + sizeof w + tables, rest, w.nlabels))
		return inferd__fail(INFERD_EPROTO, "malformed MODEL_INFO labels");
	if ((m = calloc(1, sizeof *m + (w.ninputs + w.noutputs) * sizeof *tensors +
	    w.nlabels * sizeof(char *) + rest)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	m->id = w.id;
	memcpy(m->name, w.name, sizeof m->name);
	memcpy(m->input_name, w.input_name, sizeof m->input_name);
	memcpy(m->output_name, w.output_name, sizeof m->output_name);
	m->max_batch_size = (int)w.max_batch_size;
	m->input_ndims = (int)w.input_ndims;
	m->output_ndims = (int)w.output_ndims;
	memcpy(m->input_dims, w.input_dims, sizeof m->input_dims);
	memcpy(m->output_dims, w.output_dims, sizeof m->output_dims);
	m->input_row_bytes = w.input_row_bytes;
	m->output_row_bytes = w.output_row_bytes;
	m->ninputs = (int)w.ninputs;
	m->noutputs = (int)w.noutputs;
	tensors = (struct inferd_tensor_info *)(m + 1);
	if (inferd__model_tensors(m, tensors, p + sizeof w, w.ninputs + w.noutputs) != 0) {
		free(m);
		return inferd__fail(INFERD_EPROTO, "malformed MODEL_INFO tensor");
	}
	m->datatype = m->inputs[0].datatype;
	labels = (const char **)(tensors + w.ninputs + w.noutputs);
	text = (char *)(labels + w.nlabels);
	memcpy(text, p + sizeof w + tables, rest);
	for (i = 0; i < w.nlabels; i++) {
		labels[i] = text;
		text += strlen(text) + 1;
	}
	m->nlabels = w.nlabels;
	m->labels = labels;
	*out = m;
	return 0;
}

/* Room for the model cache. */
unsigned
inferd__models_cap(unsigned nmodels)
{
	return nmodels > INFERD__MODELS_MIN ? nmodels : INFERD__MODELS_MIN;
}

/* Ask the daemon for a model by name (and version, 0: the newest) or id and cache it. */
static int
inferd__model_query(inferd_conn_t *c, const char *name, int64_t version, unsigned id,
    const struct inferd_model **out)
{
	struct inferd_model *model = NULL;
	int r;

	if (c->closed)
		return inferd__closed(c);
	if ((r = inferd__model_fetch(c, name, version, id, &model)) != 0)
		return r == INFERD_ECLOSED ? inferd__closed(c) : r;
	id = model->id;
	if (id >= c->models_cap) {
		free(model);
		return inferd__fail(INFERD_EPROTO, "model id %u out of range", id);
	}
	if (id >= c->nmodels)
		c->nmodels = id + 1;	/* a model the daemon loaded after the hello */
	if (c->models[id] == NULL)
		c->models[id] = model;
	else
		free(model);
	*out = c->models[id];
	return 0;
}

/*
 * Ask the daemon for a model by name (or else id): a new struct in *out.
 * A version other than 0 follows the name on the wire (that version's own id).
 */
int
inferd__model_fetch(inferd_conn_t *c, const char *name, int64_t version, unsigned id,
    struct inferd_model **out)
{
	struct {
		struct inferd_wire_model_query q;
		char name[INFERD_WIRE_NAME_MAX + sizeof(int64_t)];
	} m;
	size_t n = name ? strlen(name) : 0, extra = name != NULL && version != 0 ? sizeof version : 0;
	uint8_t *p;
	uint32_t len;
	int r;

	if (n >= INFERD_WIRE_NAME_MAX)
		return inferd__fail(INFERD_ENOMODEL, "model name '%s' is too long", name);
	m.q.id = id;
	m.q.name_length = (uint32_t)n;
	memcpy(m.name, name ? name : "", n);
	memcpy(m.name + n, &version, extra);
	if ((r = inferd__send(c->control_fd, INFERD_WIRE_MODEL_QUERY, &m, sizeof m.q + n + extra, NULL, 0)) != 0 ||
	    (r = inferd__recv(c->control_fd, INFERD_WIRE_MODEL_INFO, &p, &len, c->timeout_ms)) != 0)
		return r;
	r = inferd__model_build(p, len, out);
	free(p);
	if (r == 0)
		(*out)->version = extra ? version : 0;
	return r;
}

/* Look a model (and version, 0: the newest) up by name in the cache, else ask the daemon (control_lock held). */
static int
inferd__model_by_name(inferd_conn_t *c, const char *name, int64_t version, const struct inferd_model **out)
{
	unsigned i;

	for (i = 0; i < c->nmodels; i++)
		if (c->models[i] != NULL && c->models[i]->version == version && strcmp(c->models[i]->name, name) == 0) {
			*out = c->models[i];
			return 0;
		}
	return inferd__model_query(c, name, version, 0, out);
}

/* Look a model up by name. */
int
inferd_model_get(inferd_conn_t *c, const char *name, const struct inferd_model **out)
{
	int r;

	inferd__clear_error();
	if (c == NULL || name == NULL || *name == '\0' || out == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_model_get: bad argument");
	if ((r = inferd__reconnect_if_needed(c)) != 0)
		return r;
	pthread_mutex_lock(&c->control_lock);
	r = inferd__model_by_name(c, name, 0, out);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}

/* Look a version of a model up by name. */
int
inferd_model_get_version(inferd_conn_t *c, const char *name, int64_t version, const struct inferd_model **out)
{
	int r;

	inferd__clear_error();
	if (c == NULL || name == NULL || *name == '\0' || out == NULL || version < 0)
		return inferd__fail(INFERD_EINVAL, "inferd_model_get_version: bad argument");
	if ((r = inferd__reconnect_if_needed(c)) != 0)
		return r;
	pthread_mutex_lock(&c->control_lock);
	r = inferd__model_by_name(c, name, version, out);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}

/* Look a model up by id. */
int
inferd_model_get_id(inferd_conn_t *c, unsigned id, const struct inferd_model **out)
{
	int r = 0;

	inferd__clear_error();
	if (c == NULL || out == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_model_get_id: bad argument");
	if ((r = inferd__reconnect_if_needed(c)) != 0)
		return r;
	if (id >= c->models_cap)
		return inferd__fail(INFERD_ENOMODEL, "no model with id %u (%u served)", id, c->nmodels);
	pthread_mutex_lock(&c->control_lock);
	if (c->models[id] != NULL)
		*out = c->models[id];
	else
		r = inferd__model_query(c, NULL, 0, id, out);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}
