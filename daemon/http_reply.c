/* http_reply.c: writing the HTTP front end's answers: responses (inference answers compressed as the client accepts), JSON errors, and the refusal sent while a body still arrives. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <jansson.h>
#include <microhttpd.h>

#include "alloc.h"
#include "http_encoding.h"
#include "http_internal.h"
#include "kserve.h"
#include "log.h"

/*
 * Compress *body in place with the client's preferred Accept-Encoding;
 * returns the Content-Encoding to send, NULL when it goes as it is (not
 * an inference answer, not asked for, or compressing failed: the plain body
 * is still a good answer).  Only a successful inference answer is
 * compressed, as Triton does: its clients (tritonclient.http.aio) read
 * every other body without decompressing it, whatever they accept.
 */
static const char *
http_compress(struct http_request *req, unsigned int status, char **body, size_t *len)
{
	const char *accept;
	enum http_coding coding;
	char *out, *cause = NULL;
	size_t out_len;

	if (status != MHD_HTTP_OK || (req->route != ROUTE_INFER && req->route != ROUTE_INFER_SHORT))
		return NULL;
	accept = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	coding = http_coding_accept(accept);
	if (coding == HTTP_CODING_IDENTITY || *body == NULL || *len == 0)
		return NULL;
	if (http_coding_encode(coding, *body, *len, &out, &out_len, &cause) != 0) {
		LOG_WARN("http: %s", cause);
		free(cause);
		return NULL;
	}
	free(*body);
	*body = out;
	*len = out_len;
	return http_coding_name(coding);
}

/* Queue a response that owns body (NULL means out of memory), with one optional header; counts errors. */
enum MHD_Result
http_reply(struct http_request *req, unsigned int status, char *body, size_t len,
    const char *type, const char *header, const char *value)
{
	static char oom[] = HTTP_OOM_BODY;
	const char *coding = http_compress(req, status, &body, &len);
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (body == NULL)
		r = MHD_create_response_from_buffer(sizeof oom - 1, oom, MHD_RESPMEM_PERSISTENT);
	else
		r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	if (body == NULL) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		type = HTTP_TYPE_JSON;
		header = NULL;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
	    (header != NULL && MHD_add_response_header(r, header, value) != MHD_YES) ||
	    (coding != NULL && body != NULL &&
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, coding) != MHD_YES)) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(req->conn, status, r);
	MHD_destroy_response(r);
	http_state_set(req, HTTP_STATE_ANSWERED);
	http_guard_request_whole(req->gc);
	if (status >= 400)
		METRICS_ADD(req->srv->ctx.metrics->http_errors, 1);
	return ret;
}

/* Answer {"error": message} with status, and an Allow header when allow is set. */
__attribute__((format(printf, 4, 5))) enum MHD_Result
http_error_allow(struct http_request *req, unsigned int status, const char *allow,
    const char *fmt, ...)
{
	va_list ap;
	char *msg, *body = NULL;
	size_t len = 0;
	int n;

	va_start(ap, fmt);
	n = xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0) {
		body = kserve_encode_error(msg, &len, NULL);	/* NULL: the fixed 500 body */
		free(msg);
	}
	return http_reply(req, status, body, len, HTTP_TYPE_JSON,
	    allow ? MHD_HTTP_HEADER_ALLOW : NULL, allow);
}

/* Answer 200 with a JSON body; a body that failed to encode (NULL, *cause) is a 500. */
enum MHD_Result
http_json(struct http_request *req, char *body, size_t len, char *cause)
{
	enum MHD_Result ret;

	if (body != NULL)
		return http_reply(req, MHD_HTTP_OK, body, len, HTTP_TYPE_JSON, NULL, NULL);
	ret = http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s",
	    cause != NULL ? cause : "out of memory");
	free(cause);
	return ret;
}

/*
 * Refuse a request whose body is still arriving, at once.  libmicrohttpd
 * (before 1.0) takes no response until the body has ended, so the answer is
 * written straight to the socket, where nothing else has been written for
 * this request, and the connection is then closed by returning MHD_NO:
 * nothing more is read.  A client still sending may see the reset before
 * the answer; it learns of the refusal either way.
 */
__attribute__((format(printf, 3, 4))) enum MHD_Result
http_refuse_now(struct http_request *req, unsigned int status, const char *fmt, ...)
{
	static char oom[] = HTTP_OOM_BODY;
	const union MHD_ConnectionInfo *info =
	    MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char msg[256], head[256], *body;
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t len = 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	http_state_set(req, HTTP_STATE_ANSWERED);
	http_guard_request_whole(req->gc);
	METRICS_ADD(req->srv->ctx.metrics->http_errors, 1);
	if (info == NULL)
		return MHD_NO;
	if ((body = kserve_encode_error(msg, &len, NULL)) == NULL) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;	/* with the fixed body */
		len = sizeof oom - 1;
	}
	n = snprintf(head, sizeof head, "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: "
	    HTTP_TYPE_JSON "\r\nContent-Length: %zu\r\n\r\n", status, MHD_get_reason_phrase_for(status), len);
	if (n > 0 && (size_t)n < sizeof head) {
		iov[0] = (struct iovec){ head, (size_t)n };
		iov[1] = (struct iovec){ body != NULL ? body : oom, len };
		/* The send buffer holds nothing of this request: one non-blocking send fits. */
		(void)sendmsg(info->connect_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	free(body);
	return MHD_NO;
}
