/* bench_http.c: a minimal HTTP/1.1 client, one keep-alive TCP connection, Content-Length framing. */
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
#include <unistd.h>

#include "bench.h"
#include "error.h"

/* Headers larger than this are refused; so are bodies above the max. */
#define BENCH_HTTP_MAX_HEADER (64 * 1024)
#define BENCH_HTTP_MAX_BODY ((size_t)1 << 30)

/* Parse "http://HOST:PORT[/]" (IPv6 as [ADDR]); -1 with *cause. */
int
bench_url_parse(const char *s, struct bench_url *u, char **cause)
{
	const char *p = s, *host, *colon, *end;
	size_t hlen;

	memset(u, 0, sizeof *u);
	if (strncmp(p, "http://", 7) != 0)
		return error_set(cause, "URL '%s' must start with http://", s);
	p += 7;
	if (*p == '[') {
		host = p + 1;
		if ((end = strchr(host, ']')) == NULL)
			return error_set(cause, "URL '%s': unclosed [", s);
		hlen = (size_t)(end - host);
		colon = end + 1;
		if (*colon != ':')
			colon = NULL;
	} else {
		host = p;
		colon = strchr(p, ':');
		hlen = colon ? (size_t)(colon - host) : strcspn(host, "/");
	}
	if (hlen == 0 || hlen >= sizeof u->host)
		return error_set(cause, "URL '%s': bad host", s);
	memcpy(u->host, host, hlen);
	if (colon == NULL)
		snprintf(u->port, sizeof u->port, "80");
	else {
		size_t plen = strcspn(colon + 1, "/");
		if (plen == 0 || plen >= sizeof u->port || strspn(colon + 1, "0123456789") != plen)
			return error_set(cause, "URL '%s': bad port", s);
		memcpy(u->port, colon + 1, plen);
		end = colon + 1 + plen;
		if (*end != '\0' && strcmp(end, "/") != 0)
			return error_set(cause, "URL '%s': give no path, only http://HOST:PORT", s);
	}
	snprintf(u->hostport, sizeof u->hostport, "%s%s%s:%s", strchr(u->host, ':') ? "[" : "",
	    u->host, strchr(u->host, ':') ? "]" : "", u->port);
	return 0;
}

/* Open the connection (TCP_NODELAY); -1 with *cause. */
int
bench_http_connect(struct bench_http *c, const struct bench_url *u, char **cause)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, rc, one = 1, err = 0;

	c->url = u;
	c->fd = -1;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(u->host, u->port, &hints, &res)) != 0)
		return error_set(cause, "%s: %s", u->hostport, gai_strerror(rc));
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd == -1) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
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
bench_http_close(struct bench_http *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = c->consumed = 0;
}

/* Make a request: method, path and an optional body, as one malloc'ed block. */
char *
bench_http_build(const struct bench_url *u, const char *method, const char *path,
    const char *body, size_t body_len, size_t *len)
{
	char head[1024];
	char *req;
	int n;

	if (body != NULL)
		n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\n"
		    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		    method, path, u->hostport, body_len);
	else
		n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n",
		    method, path, u->hostport);
	if (n < 0 || (size_t)n >= sizeof head)
		return NULL;
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
bench_http_send(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read more bytes into the buffer: 1 read, 0 at end of stream, -1 with *cause. */
static int
bench_http_fill(struct bench_http *c, size_t want, char **cause)
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
	if (n == -1)
		return error_set(cause, "recv from %s: %s", c->url->hostport, strerror(errno));
	c->len += (size_t)n;
	return n > 0;
}

/* The value of header name in the block [h, end), or NULL; *vlen its length. */
static const char *
bench_http_header(const char *h, const char *end, const char *name, size_t *vlen)
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

/* Parse the status line and the framing headers of a complete header block. */
static int
bench_http_parse_head(const char *buf, size_t hlen, int *status, size_t *body_len,
    int *close_after, char **cause)
{
	const char *end = buf + hlen, *line2, *v;
	char num[32];
	size_t vlen;

	if (hlen < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return error_set(cause, "bad HTTP status line");
	*status = atoi(buf + 9);
	if ((line2 = memmem(buf, hlen, "\r\n", 2)) == NULL)
		return error_set(cause, "bad HTTP status line");
	line2 += 2;
	if (bench_http_header(line2, end, "Transfer-Encoding", &vlen) != NULL)
		return error_set(cause, "chunked responses are not supported");
	if ((v = bench_http_header(line2, end, "Content-Length", &vlen)) == NULL ||
	    vlen == 0 || vlen >= sizeof num)
		return error_set(cause, "response without a Content-Length");
	memcpy(num, v, vlen);
	num[vlen] = '\0';
	*body_len = strtoull(num, NULL, 10);
	if (*body_len > BENCH_HTTP_MAX_BODY)
		return error_set(cause, "response body of %zu bytes is too large", *body_len);
	v = bench_http_header(line2, end, "Connection", &vlen);
	*close_after = v != NULL && vlen == 5 && strncasecmp(v, "close", 5) == 0;
	return 0;
}

/*
 * Read one response into the buffer.  Returns 1 with the response framed,
 * 0 when the server closed before sending any byte of it, -1 with *cause.
 */
static int
bench_http_read(struct bench_http *c, int *status, const char **body,
    size_t *body_len, char **cause)
{
	const char *eoh = NULL;
	size_t hlen = 0;
	int r, close_after = 0;

	for (;;) {
		if (c->len >= 4 && (eoh = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL)
			break;
		if (c->len > BENCH_HTTP_MAX_HEADER)
			return error_set(cause, "response header over %d bytes", BENCH_HTTP_MAX_HEADER);
		if ((r = bench_http_fill(c, 0, cause)) < 0)
			return -1;
		if (r == 0) {
			if (c->len == 0)
				return 0;
			return error_set(cause, "%s closed the connection mid-response", c->url->hostport);
		}
	}
	hlen = (size_t)(eoh - c->buf) + 4;
	if (bench_http_parse_head(c->buf, hlen, status, body_len, &close_after, cause) != 0)
		return -1;
	while (c->len < hlen + *body_len) {
		if ((r = bench_http_fill(c, hlen + *body_len - c->len, cause)) < 0)
			return -1;
		if (r == 0)
			return error_set(cause, "%s closed the connection mid-body", c->url->hostport);
	}
	*body = c->buf + hlen;
	c->consumed = hlen + *body_len;
	if (close_after) {
		close(c->fd);
		c->fd = -1;
	}
	return 1;
}

/* Send req and read one response; reconnect once if the idle connection was closed. */
int
bench_http_roundtrip(struct bench_http *c, const char *req, size_t len,
    int *status, const char **body, size_t *body_len, char **cause)
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
			if (bench_http_connect(c, c->url, cause) != 0)
				return -1;
		}
		if (bench_http_send(c->fd, req, len) != 0) {
			if (fresh || (errno != EPIPE && errno != ECONNRESET))
				return error_set(cause, "send to %s: %s", c->url->hostport, strerror(errno));
			r = 0;
		} else if ((r = bench_http_read(c, status, body, body_len, cause)) != 0)
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

/* One GET on a fresh connection; the body is malloc'ed and NUL-terminated. */
int
bench_http_get(const struct bench_url *u, const char *path, int *status,
    char **body, size_t *body_len, char **cause)
{
	struct bench_http c = { .fd = -1 };
	const char *b;
	char *req;
	size_t len;
	int r = -1;

	if ((req = bench_http_build(u, "GET", path, NULL, 0, &len)) == NULL)
		return error_set(cause, "out of memory");
	if (bench_http_connect(&c, u, cause) == 0 &&
	    bench_http_roundtrip(&c, req, len, status, &b, body_len, cause) == 0) {
		if ((*body = malloc(*body_len + 1)) == NULL)
			error_set(cause, "out of memory");
		else {
			memcpy(*body, b, *body_len);
			(*body)[*body_len] = '\0';
			r = 0;
		}
	}
	bench_http_close(&c);
	free(req);
	return r;
}
