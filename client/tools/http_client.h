/* http_client.h: the clients' minimal HTTP/1.1 over TCP, shared by inferctl and inferd-bench. */
#ifndef INFERD_HTTP_CLIENT_H
#define INFERD_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Why no HTTP client library: libcurl is not among the project's
 * dependencies, and its per-request bookkeeping costs as much as a small
 * request to inferd does, so inferd-bench would measure it instead of the
 * server.  inferd frames every answer with Content-Length, so a request
 * line, a few headers and a Content-Length reader are all either tool
 * needs: a request is built once and sent with one write, a response read
 * with as few system calls as the bytes allow.  Chunked answers are
 * refused.  JSON is built and parsed with jansson, as everywhere else.
 */

/* Where the server is: host and port, and both for the Host header. */
struct httpc_url {
	char host[256];
	char port[16];
	char hostport[280];		/* "HOST:PORT", IPv6 as "[ADDR]:PORT" */
};

/* One keep-alive connection and the bytes received on it. */
struct httpc_conn {
	const struct httpc_url *url;
	int fd;
	int timeout_s;			/* send and receive timeout; 0 waits for ever */
	char *buf;			/* received bytes, the last response first */
	size_t len, cap;
	size_t consumed;		/* the last response's bytes, dropped on the next call */
	uint64_t reconnects;
};

/* A response: valid until the next call on its connection. */
struct httpc_response {
	int status;
	const char *head;		/* the header lines after the status line */
	size_t head_len;
	const char *body;
	size_t body_len;
};

/* Parse "http://HOST:PORT[/]" (IPv6 as [ADDR]); -1 with *cause. */
int httpc_url_parse(const char *s, struct httpc_url *u, char **cause);
/* Fill u from a host and a numeric port; -1 with *cause. */
int httpc_url_set(struct httpc_url *u, const char *host, const char *port, char **cause);

/* Open c to u (TCP_NODELAY, timeout_s on every send and receive); -1 with *cause. */
int httpc_connect(struct httpc_conn *c, const struct httpc_url *u, int timeout_s, char **cause);
/* Close the connection and free its buffer. */
void httpc_close(struct httpc_conn *c);

/*
 * Build a request: method, path, the extra header lines in extra
 * ("Name: value\r\n" each, or NULL) and, when body is non-NULL, a body of
 * type with its Content-Length.  Malloc'ed, *len bytes long, sent as is
 * by httpc_roundtrip; NULL when out of memory or the head is too long.
 */
char *httpc_build(const struct httpc_url *u, const char *method, const char *path,
    const char *extra, const char *type, const void *body, size_t body_len, size_t *len);

/*
 * Send req and read one response into r.  Reconnects once when the server
 * had closed an idle connection.  -1 with *cause on a transport or
 * framing error.
 */
int httpc_roundtrip(struct httpc_conn *c, const char *req, size_t len,
    struct httpc_response *r, char **cause);

/* The value of header name in r (case-insensitive), *vlen bytes long; NULL when absent. */
const char *httpc_header(const struct httpc_response *r, const char *name, size_t *vlen);

/*
 * One request on a fresh connection: *status, and the body malloc'ed and
 * NUL-terminated (*body_len bytes before the NUL).  -1 with *cause.
 */
int httpc_fetch(const struct httpc_url *u, const char *method, const char *path,
    const char *type, const void *body, size_t body_len, int timeout_s,
    int *status, char **out, size_t *out_len, char **cause);

#endif
