/*
 * http_client.c: a minimal HTTP/1.1 client over one keep-alive TCP
 * connection with Content-Length framing (why no library: http_client.h).
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "error.h"
#include "http_client.h"

/* Headers larger than this are refused; so are bodies above the max. */
#define HTTPC_MAX_HEADER (64 * 1024)
#define HTTPC_MAX_BODY ((size_t)1 << 30)

/* Fill u from a host and a numeric port. */
int
httpc_url_set(struct httpc_url *u, const char *host, const char *port, char **cause)
{
	size_t hlen = strlen(host), plen = strlen(port);

	memset(u, 0, sizeof *u);
	if (hlen == 0 || hlen >= sizeof u->host)
		return error_set(cause, "bad host '%s'", host);
	if (plen == 0 || plen >= sizeof u->port || strspn(port, "0123456789") != plen)
		return error_set(cause, "bad port '%s'", port);
	memcpy(u->host, host, hlen);
	memcpy(u->port, port, plen);
	snprintf(u->hostport, sizeof u->hostport, "%s%s%s:%s", strchr(host, ':') ? "[" : "",
	    host, strchr(host, ':') ? "]" : "", port);
	return 0;
}

/* Parse "http://HOST:PORT[/]" (IPv6 as [ADDR]); -1 with *cause. */
int
httpc_url_parse(const char *s, struct httpc_url *u, char **cause)
{
	const char *p = s, *host, *colon, *end;
	char h[sizeof u->host], port[sizeof u->port] = "80";
	size_t hlen, plen;

	if (strncmp(p, "http://", 7) != 0)
		return error_set(cause, "URL '%s' must start with http://", s);
	p += 7;
	if (*p == '[') {
		host = p + 1;
		if ((end = strchr(host, ']')) == NULL)
			return error_set(cause, "URL '%s': unclosed [", s);
		hlen = (size_t)(end - host);
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		host = p;
		colon = strchr(p, ':');
		hlen = colon ? (size_t)(colon - host) : strcspn(host, "/");
	}
	if (hlen == 0 || hlen >= sizeof h)
		return error_set(cause, "URL '%s': bad host", s);
	memcpy(h, host, hlen);
	h[hlen] = '\0';
	if (colon != NULL) {
		plen = strcspn(colon + 1, "/");
		if (plen == 0 || plen >= sizeof port || strspn(colon + 1, "0123456789") != plen)
			return error_set(cause, "URL '%s': bad port", s);
		memcpy(port, colon + 1, plen);
		port[plen] = '\0';
		end = colon + 1 + plen;
		if (*end != '\0' && strcmp(end, "/") != 0)
			return error_set(cause, "URL '%s': give no path, only http://HOST:PORT", s);
	}
	return httpc_url_set(u, h, port, cause);
}

/* Set a send or receive timeout on fd. */
static int
httpc_timeout(int fd, int opt, int seconds)
{
	struct timeval tv = { seconds, 0 };

	return setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* A connected socket to one of ai's addresses, or -1 with errno set. */
static int
httpc_dial(const struct addrinfo *ai, int timeout_s)
{
	int fd, err;

	if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol)) == -1)
		return -1;
	/* The send timeout bounds connect() too. */
	if ((timeout_s == 0 || (httpc_timeout(fd, SO_RCVTIMEO, timeout_s) == 0 &&
	    httpc_timeout(fd, SO_SNDTIMEO, timeout_s) == 0)) &&
	    connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* Open c to u (TCP_NODELAY, timeout_s on every send and receive); -1 with *cause. */
int
httpc_connect(struct httpc_conn *c, const struct httpc_url *u, int timeout_s, char **cause)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, rc, one = 1, err = 0;

	c->url = u;
	c->fd = -1;
	c->timeout_s = timeout_s;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(u->host, u->port, &hints, &res)) != 0)
		return error_set(cause, "%s: %s", u->hostport, gai_strerror(rc));
	for (ai = res; ai != NULL && fd == -1; ai = ai->ai_next)
		if ((fd = httpc_dial(ai, timeout_s)) == -1)
			err = errno;
	freeaddrinfo(res);
	if (fd == -1)
		return error_set(cause, "connect to %s: %s", u->hostport, strerror(err));
	/* Requests go out in one write: Nagle would only delay them. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
		error_set(cause, "TCP_NODELAY: %s", strerror(errno));
		close(fd);
		return -1;
	}
	c->fd = fd;
	return 0;
}

/* Close the connection and free its buffer. */
void
httpc_close(struct httpc_conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = c->consumed = 0;
}

/* Build a request with its extra headers and optional body, as one malloc'ed block. */
char *
httpc_build(const struct httpc_url *u, const char *method, const char *path,
    const char *extra, const char *type, const void *body, size_t body_len, size_t *len)
{
	char head[2048];
	char *req;
	int n;

	if (body != NULL)
		n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\n%s"
		    "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
		    method, path, u->hostport, extra ? extra : "", type, body_len);
	else
		n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n",
		    method, path, u->hostport, extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof head)
		return NULL;
	if (body == NULL)
		body_len = 0;
	if ((req = malloc((size_t)n + body_len)) == NULL)
		return NULL;
	memcpy(req, head, (size_t)n);
	if (body_len > 0)
		memcpy(req + n, body, body_len);
	*len = (size_t)n + body_len;
	return req;
}

/* Send all of buf; -1 with errno set. */
static int
httpc_send(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EPIPE;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read more bytes into the buffer, room for want first: 1 read, 0 at end of stream, -1 with *cause. */
static int
httpc_fill(struct httpc_conn *c, size_t want, char **cause)
{
	ssize_t n;
	char *nb;
	size_t cap;

	if (c->cap - c->len < want || c->cap - c->len < 4096) {
		cap = c->cap ? c->cap : 65536;
		while (cap - c->len < want || cap - c->len < 4096)
			cap *= 2;
		if ((nb = realloc(c->buf, cap)) == NULL)
			return error_set(cause, "out of memory");
		c->buf = nb;
		c->cap = cap;
	}
	do
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return error_set(cause, "%s did not answer within %d s", c->url->hostport,
		    c->timeout_s);
	if (n == -1)
		return error_set(cause, "recv from %s: %s", c->url->hostport, strerror(errno));
	c->len += (size_t)n;
	return n > 0;
}

/* The value of header name in the lines [h, end), or NULL; *vlen its length. */
static const char *
httpc_find_header(const char *h, const char *end, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *line, *eol;

	for (line = h; line < end; line = eol + 2) {
		eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		if (eol == NULL)
			eol = end;
		if ((size_t)(eol - line) > nlen && line[nlen] == ':' &&
		    strncasecmp(line, name, nlen) == 0) {
			line += nlen + 1;
			while (line < eol && (*line == ' ' || *line == '\t'))
				line++;
			*vlen = (size_t)(eol - line);
			return line;
		}
		if (eol == end)
			break;
	}
	return NULL;
}

/* The value of header name in r, or NULL. */
const char *
httpc_header(const struct httpc_response *r, const char *name, size_t *vlen)
{
	return httpc_find_header(r->head, r->head + r->head_len, name, vlen);
}

/* Parse the status line and the framing headers of a complete header block. */
static int
httpc_parse_head(const char *buf, size_t hlen, struct httpc_response *r,
    int *close_after, char **cause)
{
	const char *end = buf + hlen, *line2, *v;
	char num[32];
	size_t vlen;

	if (hlen < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
	    (line2 = memmem(buf, hlen, "\r\n", 2)) == NULL)
		return error_set(cause, "bad HTTP status line");
	r->status = atoi(buf + 9);
	r->head = line2 + 2;
	r->head_len = (size_t)(end - r->head);
	if (httpc_header(r, "Transfer-Encoding", &vlen) != NULL)
		return error_set(cause, "chunked responses are not supported");
	if ((v = httpc_header(r, "Content-Length", &vlen)) == NULL || vlen == 0 ||
	    vlen >= sizeof num || strspn(v, "0123456789") < vlen)
		return error_set(cause, "response without a valid Content-Length");
	memcpy(num, v, vlen);
	num[vlen] = '\0';
	errno = 0;
	r->body_len = strtoull(num, NULL, 10);
	if (errno != 0 || r->body_len > HTTPC_MAX_BODY)
		return error_set(cause, "response body of %s bytes is too large", num);
	v = httpc_header(r, "Connection", &vlen);
	*close_after = v != NULL && vlen == 5 && strncasecmp(v, "close", 5) == 0;
	return 0;
}

/* Read until the buffer holds a whole header block: 1, 0 if closed before any byte, -1. */
static int
httpc_read_head(struct httpc_conn *c, size_t *hlen, char **cause)
{
	const char *eoh;
	int r;

	for (;;) {
		if (c->len >= 4 && (eoh = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
			*hlen = (size_t)(eoh - c->buf) + 4;
			return 1;
		}
		if (c->len > HTTPC_MAX_HEADER)
			return error_set(cause, "response header over %d bytes", HTTPC_MAX_HEADER);
		if ((r = httpc_fill(c, 0, cause)) < 0)
			return -1;
		if (r == 0 && c->len == 0)
			return 0;
		if (r == 0)
			return error_set(cause, "%s closed the connection mid-response",
			    c->url->hostport);
	}
}

/*
 * Read one response into the buffer.  Returns 1 with the response framed,
 * 0 when the server closed before sending any byte of it, -1 with *cause.
 */
static int
httpc_read(struct httpc_conn *c, struct httpc_response *resp, char **cause)
{
	size_t hlen = 0, head_at;
	int r, close_after = 0;

	if ((r = httpc_read_head(c, &hlen, cause)) <= 0)
		return r;
	if (httpc_parse_head(c->buf, hlen, resp, &close_after, cause) != 0)
		return -1;
	head_at = (size_t)(resp->head - c->buf);
	while (c->len < hlen + resp->body_len) {
		if ((r = httpc_fill(c, hlen + resp->body_len - c->len, cause)) < 0)
			return -1;
		if (r == 0)
			return error_set(cause, "%s closed the connection mid-body", c->url->hostport);
	}
	/* The buffer may have moved while the body came in. */
	resp->head = c->buf + head_at;
	resp->body = c->buf + hlen;
	c->consumed = hlen + resp->body_len;
	if (close_after) {
		close(c->fd);
		c->fd = -1;
	}
	return 1;
}

/* Send req and read one response; reconnect once if the idle connection was closed. */
int
httpc_roundtrip(struct httpc_conn *c, const char *req, size_t len,
    struct httpc_response *resp, char **cause)
{
	int attempt, r, fresh;

	if (c->consumed > 0) {
		memmove(c->buf, c->buf + c->consumed, c->len - c->consumed);
		c->len -= c->consumed;
		c->consumed = 0;
	}
	for (attempt = 0; attempt < 2; attempt++) {
		fresh = c->fd == -1;
		if (fresh) {
			c->len = 0;
			if (httpc_connect(c, c->url, c->timeout_s, cause) != 0)
				return -1;
		}
		if (httpc_send(c->fd, req, len) != 0) {
			if (fresh || (errno != EPIPE && errno != ECONNRESET))
				return error_set(cause, "send to %s: %s", c->url->hostport, strerror(errno));
			r = 0;
		} else if ((r = httpc_read(c, resp, cause)) != 0)
			return r > 0 ? 0 : -1;
		if (fresh)
			return error_set(cause, "%s closed a new connection without answering",
			    c->url->hostport);
		close(c->fd);
		c->fd = -1;
		c->reconnects++;
	}
	return error_set(cause, "%s keeps closing the connection", c->url->hostport);
}

/* One request on a fresh connection; the body is malloc'ed and NUL-terminated. */
int
httpc_fetch(const struct httpc_url *u, const char *method, const char *path,
    const char *type, const void *body, size_t body_len, int timeout_s,
    int *status, char **out, size_t *out_len, char **cause)
{
	struct httpc_conn c = { .fd = -1 };
	struct httpc_response resp;
	char *req;
	size_t len;
	int r = -1;

	if ((req = httpc_build(u, method, path, NULL, type, body, body_len, &len)) == NULL)
		return error_set(cause, "out of memory (or a path too long) building %s %s",
		    method, path);
	if (httpc_connect(&c, u, timeout_s, cause) == 0 &&
	    httpc_roundtrip(&c, req, len, &resp, cause) == 0) {
		if ((*out = malloc(resp.body_len + 1)) == NULL)
			error_set(cause, "out of memory");
		else {
			memcpy(*out, resp.body, resp.body_len);
			(*out)[resp.body_len] = '\0';
			*out_len = resp.body_len;
			*status = resp.status;
			r = 0;
		}
	}
	httpc_close(&c);
	free(req);
	return r;
}
