/* http_server.c: KServe v2 over libmicrohttpd: start and stop, its threads, and each connection's request record from first call to completion. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "alloc.h"
#include "error.h"
#include "http.h"
#include "http_guard.h"
#include "http_internal.h"
#include "http_shm.h"
#include "log.h"
#include "pinned_pool.h"
#include "shm_registry.h"

/*
 * libmicrohttpd's messages, through our log: errors while starting; once
 * serving they are mostly about malformed requests, which any client can
 * cause at will, so they go to debug rather than flood the log.
 */
static void
http_mhd_log(void *cls, const char *fmt, va_list ap)
{
	http_server_t *s = cls;
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof buf, fmt, ap);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (__atomic_load_n(&s->serving, __ATOMIC_ACQUIRE))
		LOG_DEBUG("http: %s", buf);
	else
		LOG_ERROR("http: %s", buf);
}

/* The con_cls of a request whose record could not be allocated: the rest of its calls swallow its body. */
static char http_no_record;

/* Answer a request that has no record (out of memory) with the fixed 500 at once. */
static enum MHD_Result
http_refuse_unrecorded(http_server_t *srv, struct MHD_Connection *conn, void **con_cls)
{
	static char oom[] = HTTP_OOM_BODY;
	struct MHD_Response *r;
	enum MHD_Result ret;

	*con_cls = &http_no_record;
	http_guard_request_whole(http_guard_of(conn));
	METRICS_ADD(srv->ctx.metrics->http_requests, 1);
	METRICS_ADD(srv->ctx.metrics->http_errors, 1);
	if ((r = MHD_create_response_from_buffer(sizeof oom - 1, oom, MHD_RESPMEM_PERSISTENT)) == NULL)
		return MHD_NO;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, HTTP_TYPE_JSON) != MHD_YES) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, r);
	MHD_destroy_response(r);
	return ret;
}

/* First call for a request: route it; refuse a bad path, method or size before any body is read. */
static enum MHD_Result
http_begin(http_server_t *srv, struct MHD_Connection *conn, const char *url,
    const char *method, void **con_cls)
{
	struct http_request *req;

	if ((req = xcalloc(1, sizeof *req)) == NULL)
		return http_refuse_unrecorded(srv, conn, con_cls);
	req->srv = srv;
	req->conn = conn;
	req->refs = 1;
	req->gc = http_guard_of(conn);
	http_guard_body_begins(req->gc);
	*con_cls = req;
	METRICS_ADD(srv->ctx.metrics->http_requests, 1);
	if ((req->allow = http_route(req, url)) == NULL)
		return http_error(req, MHD_HTTP_NOT_FOUND, "unknown path '%s'", url);
	if (!http_method_allowed(req->allow, method))
		return http_error_allow(req, MHD_HTTP_METHOD_NOT_ALLOWED, req->allow,
		    "method %s is not allowed on %s (allowed: %s)", method, url, req->allow);
	req->post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (req->route == ROUTE_SHM && (req->url = xstrdup(url)) == NULL)
		return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	return http_begin_body(req);
}

/* libmicrohttpd's access handler: called once for the headers, per body piece, at the end, and after a resume. */
static enum MHD_Result
http_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_request *req = *con_cls;

	if (req == NULL)
		return http_begin(cls, conn, url, method, con_cls);
	if ((void *)req == &http_no_record) {	/* answered 500 at its start */
		*upload_data_size = 0;
		return MHD_YES;
	}
	switch (http_state(req)) {
	case HTTP_STATE_ANSWERED:
		*upload_data_size = 0;
		return MHD_YES;
	case HTTP_STATE_RECEIVING:
		if (*upload_data_size != 0)
			return http_receive(req, upload_data, upload_data_size);
		return http_dispatch(req);
	case HTTP_STATE_FINISHED:
		return http_answer_infer(req);
	case HTTP_STATE_STAGED:
		return http_staging_done(req);
	default:	/* resumed early, or polled: the batcher or the pinned pool is not done yet */
		return MHD_YES;
	}
}

/* libmicrohttpd is done with a request (answered, client gone, or stopping): let go of it. */
static void
http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct http_request *req = *con_cls;
	http_server_t *srv = cls;
	int last;

	(void)toe;
	http_guard_request_done(http_guard_of(conn));
	*con_cls = NULL;
	if (req == NULL || (void *)req == &http_no_record)
		return;
	pthread_mutex_lock(&srv->lock);
	req->flags |= HTTP_F_COMPLETED;
	if (req->flags & HTTP_F_ACTIVE) {
		req->flags &= ~HTTP_F_ACTIVE;
		if (--srv->active == 0)
			pthread_cond_broadcast(&srv->idle);
	}
	last = --req->refs == 0;
	pthread_mutex_unlock(&srv->lock);
	if (last)
		http_request_free(req);
}

/* Resolve listen_address:port into addr; -1 with *cause. */
static int
http_resolve(const char *host, int port, struct sockaddr_storage *addr,
    int *ipv6, char **cause)
{
	struct addrinfo hints, *res;
	char service[16];
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(service, sizeof service, "%d", port);
	if ((rc = getaddrinfo(host, service, &hints, &res)) != 0)
		return error_set(cause, "listen_address '%s': %s", host, gai_strerror(rc));
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*ipv6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	return 0;
}

/* Start libmicrohttpd on the configured address with a pool of threads. */
static int
http_start_daemon(http_server_t *s, char **cause)
{
	const struct daemon_config *c = s->ctx.config;
	struct sockaddr_storage addr;
	const union MHD_DaemonInfo *info;
	/*
	 * poll(), not epoll: libmicrohttpd's epoll mode is edge-triggered, and a
	 * client's FIN that arrives with its request (or with part of one) is
	 * never seen, so the connection sits in CLOSE_WAIT until the header
	 * deadline and counts against the per-client limit meanwhile.  poll() is
	 * level-triggered; each pool thread polls only its own connections.
	 */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
	    MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int ipv6 = 0;

	if (http_resolve(c->listen_address, c->http_port, &addr, &ipv6, cause) != 0)
		return -1;
	if (ipv6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	/* The logger goes first so that even option errors reach our log. */
	s->mhd = MHD_start_daemon(flags, (uint16_t)c->http_port, NULL, NULL, http_access, s,
	    MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, s,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(c->http_threads > 0 ? c->http_threads : 1),
	    MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
	    MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, s->guard,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)c->http_max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)c->http_max_connections_per_client,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_CONNECTION_TIMEOUT_S,
	    MHD_OPTION_END);
	if (s->mhd == NULL)
		return error_set(cause, "cannot serve HTTP on %s:%d%s%s", c->listen_address,
		    c->http_port, errno ? ": " : "", errno ? strerror(errno) : "");
	__atomic_store_n(&s->serving, 1, __ATOMIC_RELEASE);
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info != NULL ? info->port : c->http_port;
	return 0;
}

/* Make the shared-memory registry (always: a request may name a region only when the endpoints are on). */
static int
http_shm_start(http_server_t *s, char **cause)
{
	const struct daemon_config *c = s->ctx.config;
	struct shm_registry_config rc = {
		.dev = s->ctx.dev,
		.allow_users = c->allow_users,
		.allow_groups = c->allow_groups,
		.max_region_bytes = c->max_region_bytes,
	};

	s->shm_enabled = http_shm_enabled(c);
	LOG_INFO("http: Triton shared-memory registration %s (http_shared_memory = %s)",
	    s->shm_enabled ? "on" : "off", c->http_shared_memory ? c->http_shared_memory : "auto");
	return shm_registry_create(&rc, &s->shm, cause) != 0 ? error_prefix(cause, "http") : 0;
}

/* Allocate the server and its pinned staging memory; the daemon starts later. */
static int
http_create(const struct door_context *ctx, http_server_t **out, char **cause)
{
	http_server_t *s;
	int rc;

	if (ctx->config == NULL || ctx->dev == NULL || ctx->repo == NULL ||
	    ctx->batcher == NULL || ctx->metrics == NULL)
		return error_set(cause, "http: incomplete context");
	if ((s = xcalloc(1, sizeof *s)) == NULL)
		return error_set(cause, "http: out of memory");
	s->ctx = *ctx;
	if ((rc = pthread_mutex_init(&s->lock, NULL)) != 0 || (rc = pthread_cond_init(&s->idle, NULL)) != 0) {
		free(s);
		return error_set(cause, "http: pthread init: %s", strerror(rc));
	}
	if (http_shm_start(s, cause) != 0) {
		pthread_cond_destroy(&s->idle);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return -1;
	}
	if (http_guard_start(ctx->config, &s->guard, cause) != 0 ||
	    pinned_pool_create(ctx->dev, ctx->config->pinned_pool_bytes, &s->pool, cause) != 0 ||
	    batcher_client_create(ctx->batcher, "http", &s->client, cause) != 0) {
		pinned_pool_free(s->pool);
		http_guard_stop(s->guard);
		shm_registry_free(s->shm);
		pthread_cond_destroy(&s->idle);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return error_prefix(cause, "http");
	}
	/* Every HTTP request is answered on its own connection: batches may take them in any order. */
	batcher_client_set_unordered(s->client);
	*out = s;
	return 0;
}

/* Free what http_create made (the daemon is stopped). */
static void
http_destroy(http_server_t *s)
{
	batcher_client_close(s->ctx.batcher, s->client);
	pinned_pool_free(s->pool);
	http_guard_stop(s->guard);
	shm_registry_free(s->shm);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Bind and start serving. */
int
http_start(const struct door_context *ctx, http_server_t **out, char **cause)
{
	http_server_t *s = NULL;

	if (http_create(ctx, &s, cause) != 0)
		return -1;
	if (http_start_daemon(s, cause) != 0) {
		http_destroy(s);
		return -1;
	}
	LOG_INFO("http: %d threads, %zu bytes of pinned staging memory (pinned_pool_bytes), taken per request",
	    ctx->config->http_threads, pinned_pool_bytes(s->pool));
	LOG_INFO("http: listening on port %d (ready once the start-up loads have finished)", s->port);
	*out = s;
	return 0;
}

/* Refuse new inference requests; readiness turns 503. */
void
http_begin_shutdown(http_server_t *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->lock);
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->lock);
	/* Requests waiting for staging memory are answered 503 now rather than at their timeouts. */
	pinned_pool_cancel_waits(s->pool);
}

/* Wait up to HTTP_STOP_WAIT_S for requests in flight to be answered. */
static void
http_wait_idle(http_server_t *s)
{
	struct timespec deadline;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += HTTP_STOP_WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (s->active > 0 && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&s->idle, &s->lock, &deadline);
	if (s->active > 0)
		LOG_WARN("http: %d requests still unanswered after %d s; stopping anyway",
		    s->active, HTTP_STOP_WAIT_S);
	pthread_mutex_unlock(&s->lock);
}

/*
 * Stop: answer what is in flight, then close the batcher client (its done
 * callbacks have all run after that, so no connection stays suspended, which
 * MHD_stop_daemon requires), then stop the daemon and free the staging memory.
 */
void
http_stop(http_server_t *s)
{
	if (s == NULL)
		return;
	http_begin_shutdown(s);
	http_wait_idle(s);
	batcher_client_close(s->ctx.batcher, s->client);
	s->client = NULL;
	MHD_stop_daemon(s->mhd);
	http_guard_stop(s->guard);
	pinned_pool_free(s->pool);
	shm_registry_free(s->shm);	/* every request is answered: no region is in use */
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The bound port. */
int
http_port(const http_server_t *s)
{
	return s->port;
}
