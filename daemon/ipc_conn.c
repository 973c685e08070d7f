/* ipc_conn.c: the control conversation with one client: hello, region checks, model and output-dims queries. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "ipc_impl.h"
#include "log.h"

/*
 * Send one message without ever blocking: a client whose socket buffer is
 * full is not reading its replies and is dropped by the caller.
 */
static int
ipc_conn_send(int fd, uint32_t type, const void *payload, size_t len)
{
	struct inferd_wire_msg h = { type, (uint32_t)len };
	struct iovec iov[2] = { { &h, sizeof h }, { (void *)payload, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len > 0 ? 2 : 1 };
	ssize_t n;

	do
		n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return n == (ssize_t)(sizeof h + len) ? 0 : -1;
}

/* Send an ERROR message with a formatted text; -1 when it could not be sent. */
int
ipc_conn_send_error(int fd, enum inferd_wire_error code, const char *fmt, ...)
{
	struct {
		struct inferd_wire_error_msg e;
		char text[256];
	} m;
	va_list ap;
	int n;

	memset(&m, 0, sizeof m);
	m.e.code = code;
	va_start(ap, fmt);
	n = vsnprintf(m.text, sizeof m.text, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof m.text)
		n = sizeof m.text - 1;
	return ipc_conn_send(fd, INFERD_WIRE_ERROR, &m, sizeof m.e + (size_t)n + 1);
}

/* Refuse the client with an error message, then have it dropped. */
static int
ipc_conn_refuse(struct ipc_client *c, enum inferd_wire_error code, const char *what)
{
	ipc_conn_send_error(c->control_fd, code, "%s", what);
	ipc_kill(c, LOG_LEVEL_WARN, "%s", what);
	return -1;
}

/* Say hello first, so a refused client reads why before it sends anything. */
int
ipc_conn_greet(ipc_server_t *s, struct ipc_client *c)
{
	struct inferd_wire_server_hello h = {
		.magic = INFERD_WIRE_MAGIC,
		.version = INFERD_PROTOCOL_VERSION,
		.max_region_bytes = s->ctx.config->max_region_bytes,
		.max_entries = INFERD_WIRE_MAX_ENTRIES,
		.nmodels = (uint32_t)repository_name_count(s->ctx.repo),
	};

	return ipc_conn_send(c->control_fd, INFERD_WIRE_SERVER_HELLO, &h, sizeof h);
}

/* 0 when fd is an eventfd (checked through its /proc link, the one reliable way). */
static int
ipc_conn_is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof link - 1);
	if (n < 0)
		return -1;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[eventfd]") == 0 ? 0 : -1;
}

/* Check the region descriptor: sealed against shrinking, big enough, not too big. */
static int
ipc_conn_check_region(ipc_server_t *s, int fd, uint64_t claimed, char *why, size_t len)
{
	uint64_t max = s->ctx.config->max_region_bytes;
	struct stat st;
	int seals;

	if ((seals = fcntl(fd, F_GET_SEALS)) == -1) {
		snprintf(why, len, "region: not a sealable memfd (F_GET_SEALS: %s)", strerror(errno));
		return -1;
	}
	if ((seals & F_SEAL_SHRINK) == 0) {
		snprintf(why, len, "region: not sealed with F_SEAL_SHRINK");
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "region: not a regular memory file");
		return -1;
	}
	if ((uint64_t)st.st_size < claimed) {
		snprintf(why, len, "region: %lld bytes, smaller than the %llu claimed",
		    (long long)st.st_size, (unsigned long long)claimed);
		return -1;
	}
	if ((uint64_t)st.st_size > max) {
		snprintf(why, len, "region: %lld bytes, more than max_region_bytes (%llu)",
		    (long long)st.st_size, (unsigned long long)max);
		return -1;
	}
	return 0;
}

/* Check the hello's fixed fields and geometry. */
static int
ipc_conn_check_hello(ipc_server_t *s, struct ipc_client *c,
    const struct inferd_wire_client_hello *h, char *why, size_t len)
{
	if (h->magic != INFERD_WIRE_MAGIC || h->version != INFERD_PROTOCOL_VERSION) {
		snprintf(why, len, "protocol: magic %#x version %u, expected %#x version %u",
		    h->magic, h->version, INFERD_WIRE_MAGIC, INFERD_PROTOCOL_VERSION);
		return -1;
	}
	if (c->nfds != INFERD_WIRE_HELLO_FDS) {
		snprintf(why, len, "protocol: hello came with %d descriptors, expected %d",
		    c->nfds, INFERD_WIRE_HELLO_FDS);
		return -1;
	}
	if (inferd_wire_layout(h->region_bytes, h->sq_entries, h->cq_entries, &c->layout) != 0) {
		snprintf(why, len, "protocol: bad geometry (region %llu bytes, rings %u/%u)",
		    (unsigned long long)h->region_bytes, h->sq_entries, h->cq_entries);
		return -1;
	}
	if (ipc_conn_is_eventfd(c->fds[1]) != 0) {
		snprintf(why, len, "protocol: the submission doorbell is not an eventfd");
		return -1;
	}
	return 0;
}

/* Check that the completion doorbell is a socket (sends to it never block). */
static int
ipc_conn_check_doorbell(int fd, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "protocol: the completion doorbell is not a socket");
		return -1;
	}
	return 0;
}

/* Map the region, register it with the device and make the batcher client. */
static int
ipc_conn_attach(ipc_server_t *s, struct ipc_client *c, char **cause)
{
	void *p;

	p = mmap(NULL, c->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->region_fd, 0);
	if (p == MAP_FAILED)
		return error_set(cause, "mapping the region: %s", strerror(errno));
	c->base = p;
	c->hdr = p;
	c->sq = (struct inferd_wire_sqe *)(c->base + c->layout.sq_offset);
	c->cq = (struct inferd_wire_cqe *)(c->base + c->layout.cq_offset);
	if (device_host_register(s->ctx.dev, c->base, c->region_bytes, cause) != 0)
		return error_prefix(cause, "registering the region");
	c->registered = 1;
	if (ipc_ring_init(c, cause) != 0)
		return -1;
	if (batcher_client_create(s->ctx.batcher, c->label, &c->bc, cause) != 0)
		return error_prefix(cause, "batcher client");
	if (batcher_client_map(s->ctx.batcher, c->bc, c->base, c->region_bytes, cause) != 0)
		return error_prefix(cause, "mapping the region for the device");
	return 0;
}

/* Take the hello's descriptors over and start watching the submission doorbell. */
static int
ipc_conn_adopt(ipc_server_t *s, struct ipc_client *c, char **cause)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = &c->submit_tag };

	c->region_fd = c->fds[0];
	c->submit_fd = c->fds[1];
	c->doorbell_fd = c->fds[2];
	c->nfds = 0;
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, c->submit_fd, &ev) != 0)
		return error_set(cause, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* Handle CLIENT_HELLO: validate everything, map, answer READY or refuse. */
static int
ipc_conn_hello(ipc_server_t *s, struct ipc_client *c, const void *payload, uint32_t len)
{
	struct inferd_wire_client_hello h;
	struct inferd_wire_ready r = { 0 };
	char why[256];
	char *cause = NULL;

	if (c->ready || len != sizeof h)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: unexpected hello");
	memcpy(&h, payload, sizeof h);
	if (__atomic_load_n(&s->shutting_down, __ATOMIC_ACQUIRE))
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_SHUTDOWN, "the daemon is shutting down");
	if (ipc_conn_check_hello(s, c, &h, why, sizeof why) != 0)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, why);
	if (ipc_conn_check_doorbell(c->fds[2], why, sizeof why) != 0)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, why);
	if (h.region_bytes > s->ctx.config->max_region_bytes) {
		snprintf(why, sizeof why, "region: %llu bytes claimed, more than max_region_bytes (%zu)",
		    (unsigned long long)h.region_bytes, s->ctx.config->max_region_bytes);
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_REGION, why);
	}
	if (ipc_conn_check_region(s, c->fds[0], h.region_bytes, why, sizeof why) != 0)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_REGION, why);
	c->region_bytes = h.region_bytes;
	c->sq_entries = h.sq_entries;
	c->cq_entries = h.cq_entries;
	if (ipc_conn_adopt(s, c, &cause) != 0 || ipc_conn_attach(s, c, &cause) != 0) {
		snprintf(why, sizeof why, "%s", cause);
		free(cause);
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_INTERNAL, why);
	}
	c->ready = 1;
	METRICS_ADD(s->ctx.metrics->shm_clients, 1);
	r.data_offset = c->layout.data_offset;
	r.nmodels = (uint32_t)repository_name_count(s->ctx.repo);
	if (ipc_conn_send(c->control_fd, INFERD_WIRE_READY, &r, sizeof r) != 0) {
		ipc_kill(c, LOG_LEVEL_WARN, "sending READY failed");
		return -1;
	}
	LOG_INFO("ipc: %s (uid %u) attached a %llu-byte region, rings %u/%u", c->label,
	    (unsigned)c->uid, (unsigned long long)c->region_bytes, c->sq_entries, c->cq_entries);
	return 0;
}

/* Copy NUL-terminated string src into a fixed wire field. */
static void
ipc_conn_copy_name(char *dst, const char *src)
{
	snprintf(dst, INFERD_WIRE_NAME_MAX, "%s", src);
}

/* Describe one model tensor for the wire. */
static void
ipc_conn_fill_tensor(const struct model_io *io, struct inferd_wire_tensor_info *t)
{
	int d;

	memset(t, 0, sizeof *t);
	memset(t->follows, 0xff, sizeof t->follows);	/* -1 */
	ipc_conn_copy_name(t->name, io->name);
	t->datatype = ipc_wire_datatype(io->dtype);
	t->ndims = (uint32_t)io->ndims;
	for (d = 0; d < io->ndims && d < INFERD_WIRE_MAX_DIMS; d++) {
		t->dims[d] = io->dims[d];
		t->max_dims[d] = io->max_dims[d];
	}
}

/*
 * Which input dim output o's variable dim d equals (as input * 256 + dim):
 * the first input dim of the graph variable that the output dim's function
 * is exactly; -2 when it is computed otherwise.
 */
static int32_t
ipc_conn_follows(const model_t *m, int o, int d)
{
	int v = m->outputs[o].var[d], i, k;

	for (i = 0; v >= 0 && i < m->ninputs; i++)
		for (k = 0; k < m->inputs[i].ndims; k++)
			if (m->inputs[i].var[k] == v)
				return i * 256 + k;
	return -2;
}

/* Bytes of one row of io when its dims are fixed, else 0. */
static uint64_t
ipc_conn_row_bytes(const struct model_io *io)
{
	uint64_t n = graph_dtype_size(io->dtype);
	int d;

	for (d = 0; d < io->ndims; d++) {
		if (io->dims[d] < 0)
			return 0;
		n *= (uint64_t)io->dims[d];
	}
	return n;
}

/* Fill the fixed part of MODEL_INFO for model id (input 0 and output 0 in the old fields). */
static void
ipc_conn_fill_info(const model_t *m, uint32_t id, struct inferd_wire_model_info *info)
{
	const struct model_io *in = &m->inputs[0], *out = &m->outputs[0];
	int i;

	memset(info, 0, sizeof *info);
	info->id = id;
	info->max_batch_size = (uint32_t)m->max_batch_size;
	info->datatype = ipc_wire_datatype(in->dtype);
	ipc_conn_copy_name(info->name, m->name);
	ipc_conn_copy_name(info->input_name, in->name);
	ipc_conn_copy_name(info->output_name, out->name);
	info->input_ndims = (uint32_t)in->ndims;
	info->output_ndims = (uint32_t)out->ndims;
	for (i = 0; i < in->ndims && i < INFERD_WIRE_MAX_DIMS; i++)
		info->input_dims[i] = in->dims[i];
	for (i = 0; i < out->ndims && i < INFERD_WIRE_MAX_DIMS; i++)
		info->output_dims[i] = out->dims[i];
	info->input_row_bytes = ipc_conn_row_bytes(in);
	info->output_row_bytes = ipc_conn_row_bytes(out);
	info->ninputs = (uint32_t)m->ninputs;
	info->noutputs = (uint32_t)m->noutputs;
}

/* Send MODEL_INFO for model id: every tensor, then its labels when they fit. */
static int
ipc_conn_send_info(struct ipc_client *c, const model_t *m, uint32_t id)
{
	struct inferd_wire_model_info *info;
	struct inferd_wire_tensor_info *t;
	size_t i, fixed, len;
	int r, d;

	fixed = sizeof *info + (size_t)(m->ninputs + m->noutputs) * sizeof *t;
	len = fixed;
	for (i = 0; i < m->nlabels; i++)
		len += strlen(m->labels[i]) + 1;
	if (len > INFERD_WIRE_MAX_SERVER_PAYLOAD)
		len = fixed;
	if ((info = xmalloc(len)) == NULL)
		return ipc_conn_send_error(c->control_fd, INFERD_WIRE_ERR_INTERNAL,
		    "out of memory describing model %s", m->name);
	ipc_conn_fill_info(m, id, info);
	t = (struct inferd_wire_tensor_info *)(info + 1);
	for (i = 0; i < (size_t)m->ninputs; i++)
		ipc_conn_fill_tensor(&m->inputs[i], t++);
	for (i = 0; i < (size_t)m->noutputs; i++, t++) {
		ipc_conn_fill_tensor(&m->outputs[i], t);
		for (d = 0; d < m->outputs[i].ndims && d < INFERD_WIRE_MAX_DIMS; d++)
			if (m->outputs[i].dims[d] < 0)
				t->follows[d] = ipc_conn_follows(m, (int)i, d);
	}
	if (len > fixed) {
		char *p = (char *)t;

		info->nlabels = (uint32_t)m->nlabels;
		for (i = 0; i < m->nlabels; i++)
			p = stpcpy(p, m->labels[i]) + 1;
	}
	r = ipc_conn_send(c->control_fd, INFERD_WIRE_MODEL_INFO, info, len);
	free(info);
	return r;
}

/* Answer a query the registry refused with NO_MODEL and its reason. */
static int
ipc_conn_no_model(struct ipc_client *c, char *why)
{
	if (ipc_conn_send_error(c->control_fd, INFERD_WIRE_ERR_NO_MODEL, "%s", why ? why : "out of memory") != 0)
		ipc_kill(c, LOG_LEVEL_WARN, "not reading its replies");
	free(why);
	return 0;
}

/*
 * Handle MODEL_QUERY: a model by name or by id, optionally followed by an
 * int64 version after the name (0 or absent: the newest loaded; a version
 * gets an id of its own).
 */
static int
ipc_conn_query(ipc_server_t *s, struct ipc_client *c, const uint8_t *payload, uint32_t len)
{
	struct inferd_wire_model_query q;
	char name[INFERD_WIRE_NAME_MAX], *why = NULL;
	model_ref_t *ref;
	int64_t version = 0;
	uint32_t id;
	int r;

	if (!c->ready || len < sizeof q)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: unexpected model query");
	memcpy(&q, payload, sizeof q);
	if (q.name_length >= sizeof name || (q.name_length != len - sizeof q &&
	    (q.name_length == 0 || q.name_length + sizeof version != len - sizeof q)))
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: bad model query length");
	if (q.name_length + sizeof version == len - sizeof q)
		memcpy(&version, payload + sizeof q + q.name_length, sizeof version);
	if (version < 0)
		return ipc_conn_no_model(c, xstrdup("a model version is a positive number"));
	id = q.id;
	if (q.name_length != 0) {
		memcpy(name, payload + sizeof q, q.name_length);
		name[q.name_length] = '\0';
		if (repository_id(s->ctx.repo, name, version, &id, &why) != 0)
			return ipc_conn_no_model(c, why);
	}
	if (repository_acquire_id(s->ctx.repo, id, &ref, &why) != REPOSITORY_FOUND)
		return ipc_conn_no_model(c, why);
	if (ref->model->strings) {
		if (xasprintf(&why, "model '%s' has BYTES (string) tensors, which the shared-memory door does "
		    "not carry: send its requests over HTTP (KServe v2: JSON, binary data or Triton shared "
		    "memory)", ref->model->name) < 0)
			why = NULL;
		repository_release(ref);
		return ipc_conn_no_model(c, why);
	}
	r = ipc_conn_send_info(c, ref->model, id);
	repository_release(ref);
	if (r != 0)
		ipc_kill(c, LOG_LEVEL_WARN, "not reading its replies");
	return 0;
}

/*
 * Check OUTPUT_DIMS's structure (counts, reserved fields, the dims past
 * ndims, the length) and copy its inputs' dims into in; -1 when malformed.
 */
static int
ipc_conn_dims_parse(const uint8_t *payload, uint32_t len, struct inferd_wire_output_dims_query *q,
    struct inferd_wire_dims *in)
{
	uint32_t k, d;

	if (len < sizeof *q)
		return -1;
	memcpy(q, payload, sizeof *q);
	if (q->reserved != 0 || q->ninputs < 1 || q->ninputs > INFERD_WIRE_MAX_TENSORS ||
	    len != sizeof *q + q->ninputs * sizeof *in)
		return -1;
	memcpy(in, payload + sizeof *q, q->ninputs * sizeof *in);
	for (k = 0; k < q->ninputs; k++) {
		if (in[k].ndims > INFERD_WIRE_MAX_DIMS || in[k].reserved != 0)
			return -1;
		for (d = in[k].ndims; d < INFERD_WIRE_MAX_DIMS; d++)
			if (in[k].dims[d] != 0)
				return -1;
	}
	return 0;
}

/* The shape OUTPUT_DIMS asks about, checked as a list-form submission's inputs are; -1 naming what m refuses. */
static int
ipc_conn_dims_shape(const model_t *m, const struct inferd_wire_output_dims_query *q,
    const struct inferd_wire_dims *in, struct model_shape *shape, char **why)
{
	uint32_t max_rows = (uint32_t)(m->max_batch_size > 0 ? m->max_batch_size : 1), k;

	if (q->rows < 1 || q->rows > max_rows)
		return error_set(why, "model '%s': %u rows, it takes 1 to %u", m->name, q->rows, max_rows);
	if (q->ninputs != (uint32_t)m->ninputs)
		return error_set(why, "model '%s' takes %d input%s, the query gives %u", m->name, m->ninputs,
		    m->ninputs == 1 ? "" : "s", q->ninputs);
	memset(shape, 0, sizeof *shape);
	shape->rows = (int)q->rows;
	for (k = 0; k < q->ninputs; k++) {
		if (model_check_dims(m, (int)k, (int)in[k].ndims, in[k].dims, why) != 0)
			return error_prefix(why, "model '%s'", m->name);
		memcpy(shape->dims[k], in[k].dims, in[k].ndims * sizeof in[k].dims[0]);
	}
	return 0;
}

/* Send OUTPUT_DIMS_REPLY: every output's dims in layout l of model id. */
static int
ipc_conn_send_dims(struct ipc_client *c, const model_t *m, uint32_t id, const struct model_layout *l)
{
	struct {
		struct inferd_wire_output_dims_reply h;
		struct inferd_wire_dims t[INFERD_WIRE_MAX_TENSORS];
	} r;
	int o;

	memset(&r, 0, sizeof r);
	r.h.model_id = id;
	r.h.noutputs = (uint32_t)m->noutputs;
	for (o = 0; o < m->noutputs; o++) {
		r.t[o].ndims = (uint32_t)m->outputs[o].ndims;
		memcpy(r.t[o].dims, l->dims[o], (size_t)m->outputs[o].ndims * sizeof r.t[o].dims[0]);
	}
	return ipc_conn_send(c->control_fd, INFERD_WIRE_OUTPUT_DIMS_REPLY, &r,
	    sizeof r.h + (size_t)m->noutputs * sizeof r.t[0]);
}

/*
 * Handle OUTPUT_DIMS: the dims of every output of a model for a request's
 * rows and input dims, from the same layout a submission of that shape is
 * checked against (model_output_layout), or ERR_SHAPE naming what the
 * model refuses.
 */
static int
ipc_conn_output_dims(ipc_server_t *s, struct ipc_client *c, const uint8_t *payload, uint32_t len)
{
	struct inferd_wire_output_dims_query q;
	struct inferd_wire_dims in[INFERD_WIRE_MAX_TENSORS];
	struct model_shape shape;
	struct model_layout layout;
	model_ref_t *ref;
	char *why = NULL;
	int rc, r;

	if (!c->ready || ipc_conn_dims_parse(payload, len, &q, in) != 0)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: bad output dims query");
	if (repository_acquire_id(s->ctx.repo, q.model_id, &ref, &why) != REPOSITORY_FOUND)
		return ipc_conn_no_model(c, why);
	rc = ipc_conn_dims_shape(ref->model, &q, in, &shape, &why);
	if (rc == 0 && model_output_layout(ref->model, &shape, &layout, &why) != 0)
		rc = error_prefix(&why, "model '%s'", ref->model->name);
	if (rc == 0)
		r = ipc_conn_send_dims(c, ref->model, q.model_id, &layout);
	else
		r = ipc_conn_send_error(c->control_fd, INFERD_WIRE_ERR_SHAPE, "%s", why ? why : "out of memory");
	repository_release(ref);
	free(why);
	if (r != 0)
		ipc_kill(c, LOG_LEVEL_WARN, "not reading its replies");
	return 0;
}

/* Handle CANCEL: take what was published before it, then cancel the request if still queued. */
static int
ipc_conn_cancel(ipc_server_t *s, struct ipc_client *c, const uint8_t *payload, uint32_t len)
{
	struct inferd_wire_cancel m;
	char *cause = NULL;

	if (!c->ready || len != sizeof m)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: bad cancel");
	memcpy(&m, payload, sizeof m);
	if (ipc_ring_drain(s, c, &cause) != 0) {
		ipc_kill(c, LOG_LEVEL_WARN, "%s", cause);
		free(cause);
		return 0;
	}
	if (ipc_ring_cancel(s, c, m.user_data))
		LOG_DEBUG("ipc: %s request %llu cancelled", c->label, (unsigned long long)m.user_data);
	return 0;
}

/* Act on one complete message in c->in. */
static int
ipc_conn_dispatch(ipc_server_t *s, struct ipc_client *c)
{
	struct inferd_wire_msg h;
	const uint8_t *payload = c->in + sizeof h;

	memcpy(&h, c->in, sizeof h);
	if (h.type != INFERD_WIRE_CLIENT_HELLO && c->nfds > 0)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: descriptors sent out of turn");
	switch (h.type) {
	case INFERD_WIRE_CLIENT_HELLO:
		return ipc_conn_hello(s, c, payload, h.length);
	case INFERD_WIRE_MODEL_QUERY:
		return ipc_conn_query(s, c, payload, h.length);
	case INFERD_WIRE_CANCEL:
		return ipc_conn_cancel(s, c, payload, h.length);
	case INFERD_WIRE_OUTPUT_DIMS:
		return ipc_conn_output_dims(s, c, payload, h.length);
	default:
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: unknown message type");
	}
}

/* Keep the descriptors that came with a read; -1 if there were too many or cut. */
static int
ipc_conn_take_fds(struct ipc_client *c, struct msghdr *mh)
{
	struct cmsghdr *cm;
	size_t i, n;
	int fd, bad = (mh->msg_flags & MSG_CTRUNC) != 0;

	for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (c->nfds < INFERD_WIRE_HELLO_FDS)
				c->fds[c->nfds++] = fd;
			else {
				close(fd);
				bad = 1;
			}
		}
	}
	return bad ? -1 : 0;
}

/* Bytes to read next so that c->in never holds more than one message. */
static size_t
ipc_conn_wanted(const struct ipc_client *c)
{
	struct inferd_wire_msg h;

	if (c->inlen < sizeof h)
		return sizeof h - c->inlen;
	memcpy(&h, c->in, sizeof h);
	return sizeof h + h.length - c->inlen;
}

/* Read once; 1 when a message is complete, 0 when more is needed, -1 on EOF/error. */
static int
ipc_conn_read(struct ipc_client *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * (INFERD_WIRE_HELLO_FDS + 1))];
	} cbuf;
	struct iovec iov = { c->in + c->inlen, ipc_conn_wanted(c) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf.buf, .msg_controllen = sizeof cbuf.buf };
	struct inferd_wire_msg h;
	ssize_t n;

	do
		n = recvmsg(c->control_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n == 0) {
		LOG_INFO("ipc: %s disconnected", c->label);
		c->dead = 1;
		return -1;
	}
	if (n < 0) {
		ipc_kill(c, LOG_LEVEL_WARN, "read error: %s", strerror(errno));
		return -1;
	}
	if (ipc_conn_take_fds(c, &mh) != 0)
		return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: too many descriptors");
	c->inlen += (size_t)n;
	if (c->inlen == sizeof h) {
		memcpy(&h, c->in, sizeof h);
		if (h.length > INFERD_WIRE_MAX_CLIENT_PAYLOAD)
			return ipc_conn_refuse(c, INFERD_WIRE_ERR_PROTOCOL, "protocol: message too long");
	}
	return c->inlen >= sizeof h && ipc_conn_wanted(c) == 0 ? 1 : 2;
}

/* The control socket is readable: read and act on every complete message. */
int
ipc_conn_readable(ipc_server_t *s, struct ipc_client *c)
{
	int r;

	for (;;) {
		r = ipc_conn_read(c);
		if (r <= 0)
			return r;
		if (r == 1) {
			if (ipc_conn_dispatch(s, c) != 0 || c->dead)
				return -1;
			c->inlen = 0;
		}
	}
}
