/* http_encoding.c: Content-Encoding gzip / deflate through zlib, with inflation bounded by the body limit. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include "alloc.h"
#include "error.h"
#include "http_encoding.h"

/* zlib's window bits for each format: gzip, zlib (HTTP's "deflate"), raw deflate. */
#define CODING_BITS_GZIP (15 + 16)
#define CODING_BITS_ZLIB 15
#define CODING_BITS_RAW (-15)
/* First output buffer when inflating: a few times the input, within these bounds. */
#define CODING_FIRST_MIN 4096
#define CODING_FIRST_MAX (1024 * 1024)

/* The coding a Content-Encoding value names (surrounding blanks ignored, case-insensitive). */
enum http_coding_error
http_coding_parse(const char *value, enum http_coding *out, char **cause)
{
	static const struct {
		const char *name;
		enum http_coding coding;
	} names[] = {
		{ "identity", HTTP_CODING_IDENTITY }, { "gzip", HTTP_CODING_GZIP },
		{ "x-gzip", HTTP_CODING_GZIP }, { "deflate", HTTP_CODING_DEFLATE },
	};
	size_t i, n;

	value += strspn(value, " \t");
	n = strcspn(value, " \t");
	if (value[n + strspn(value + n, " \t")] == '\0') {
		for (i = 0; i < sizeof names / sizeof names[0]; i++) {
			if (strlen(names[i].name) == n && strncasecmp(value, names[i].name, n) == 0) {
				*out = names[i].coding;
				return HTTP_CODING_OK;
			}
		}
	}
	error_set(cause, "Content-Encoding '%s' is not supported (gzip, deflate or identity)", value);
	return HTTP_CODING_UNSUPPORTED;
}

/* Grow *buf to the next capacity, at most limit; -1 when memory is short. */
static int
coding_grow(char **buf, size_t *cap, size_t limit)
{
	size_t next = *cap > limit / 2 ? limit : *cap * 2;
	char *p = xrealloc(*buf, next);

	if (p == NULL)
		return -1;
	*buf = p;
	*cap = next;
	return 0;
}

/* Run inflate over in until the stream ends, into buf (grown up to limit bytes). */
static enum http_coding_error
coding_inflate_loop(z_stream *zs, char **buf, size_t *cap, size_t limit)
{
	int ret;

	for (;;) {
		if (zs->avail_out == 0) {
			if (*cap >= limit)
				return HTTP_CODING_TOO_LARGE;
			if (coding_grow(buf, cap, limit) != 0)
				return HTTP_CODING_NO_MEMORY;
			zs->next_out = (Bytef *)*buf + zs->total_out;
			zs->avail_out = (uInt)(*cap - zs->total_out);
		}
		ret = inflate(zs, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			return zs->avail_in == 0 ? HTTP_CODING_OK : HTTP_CODING_MALFORMED;
		if (ret == Z_MEM_ERROR)
			return HTTP_CODING_NO_MEMORY;
		if (ret != Z_OK && ret != Z_BUF_ERROR)
			return HTTP_CODING_MALFORMED;
		if (zs->avail_in == 0 && zs->avail_out != 0)
			return HTTP_CODING_MALFORMED;	/* truncated */
	}
}

/* Inflate in with window bits bits into a new buffer of at most max bytes. */
static enum http_coding_error
coding_inflate(int bits, const void *in, size_t len, size_t max, char **out, size_t *out_len)
{
	/* One byte past max tells a body of exactly max from a larger one. */
	size_t limit = max + 1, cap = len * 4;
	enum http_coding_error e;
	z_stream zs;
	char *buf;

	if (len > UINT_MAX || limit > UINT_MAX)
		return HTTP_CODING_TOO_LARGE;
	cap = cap < CODING_FIRST_MIN ? CODING_FIRST_MIN : cap > CODING_FIRST_MAX ? CODING_FIRST_MAX : cap;
	cap = cap > limit ? limit : cap;
	if ((buf = xmalloc(cap)) == NULL)
		return HTTP_CODING_NO_MEMORY;
	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, bits) != Z_OK) {
		free(buf);
		return HTTP_CODING_NO_MEMORY;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)buf;
	zs.avail_out = (uInt)cap;
	e = coding_inflate_loop(&zs, &buf, &cap, limit);
	if (e == HTTP_CODING_OK && zs.total_out > max)
		e = HTTP_CODING_TOO_LARGE;
	*out_len = zs.total_out;
	inflateEnd(&zs);
	if (e != HTTP_CODING_OK) {
		free(buf);
		return e;
	}
	*out = buf;
	return HTTP_CODING_OK;
}

/* Inflate a request body; deflate is tried as zlib, then as raw deflate. */
enum http_coding_error
http_coding_decode(enum http_coding coding, const void *in, size_t len, size_t max,
    char **out, size_t *out_len, char **cause)
{
	enum http_coding_error e;

	if (coding == HTTP_CODING_GZIP) {
		e = coding_inflate(CODING_BITS_GZIP, in, len, max, out, out_len);
	} else if (coding == HTTP_CODING_DEFLATE) {
		e = coding_inflate(CODING_BITS_ZLIB, in, len, max, out, out_len);
		if (e == HTTP_CODING_MALFORMED)
			e = coding_inflate(CODING_BITS_RAW, in, len, max, out, out_len);
	} else {
		error_set(cause, "no content coding to decode");
		return HTTP_CODING_UNSUPPORTED;
	}
	if (e == HTTP_CODING_MALFORMED)
		error_set(cause, "request body is not valid %s data", http_coding_name(coding));
	else if (e == HTTP_CODING_TOO_LARGE)
		error_set(cause, "%s request body inflates past max_body_bytes (%zu)",
		    http_coding_name(coding), max);
	else if (e == HTTP_CODING_NO_MEMORY)
		error_set(cause, "out of memory inflating the request body");
	return e;
}

/* The q value of one Accept-Encoding item's parameters (1 when absent). */
static double
coding_q(const char *params, size_t n)
{
	const char *q;

	for (q = params; q + 2 <= params + n; q++)
		if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=')
			return strtod(q + 2, NULL);
	return 1.0;
}

/* Prefer gzip, then deflate, by the client's q values; "*" stands for an unnamed one. */
enum http_coding
http_coding_accept(const char *accept)
{
	double gz = -1, df = -1, star = -1, q;
	const char *p = accept;
	size_t item, name;

	while (p != NULL && *p != '\0') {
		p += strspn(p, " \t,");
		item = strcspn(p, ",");
		name = strcspn(p, ";, \t");
		q = coding_q(p + name, item - name);
		if ((name == 4 && strncasecmp(p, "gzip", 4) == 0) ||
		    (name == 6 && strncasecmp(p, "x-gzip", 6) == 0))
			gz = q;
		else if (name == 7 && strncasecmp(p, "deflate", 7) == 0)
			df = q;
		else if (name == 1 && *p == '*')
			star = q;
		p += item;
	}
	gz = gz < 0 ? star : gz;
	df = df < 0 ? star : df;
	if (gz > 0 && gz >= df)
		return HTTP_CODING_GZIP;
	if (df > 0)
		return HTTP_CODING_DEFLATE;
	return HTTP_CODING_IDENTITY;
}

/* The coding's token. */
const char *
http_coding_name(enum http_coding coding)
{
	return coding == HTTP_CODING_GZIP ? "gzip" : coding == HTTP_CODING_DEFLATE ? "deflate" : NULL;
}

/* Compress a response body in one pass (fast level: the link, not the ratio, is what matters here). */
int
http_coding_encode(enum http_coding coding, const void *in, size_t len, char **out,
    size_t *out_len, char **cause)
{
	int bits = coding == HTTP_CODING_GZIP ? CODING_BITS_GZIP : CODING_BITS_ZLIB;
	z_stream zs;
	size_t cap;
	char *buf;

	if (coding == HTTP_CODING_IDENTITY || len > UINT_MAX / 2)
		return error_set(cause, "cannot compress a body of %zu bytes as %s", len,
		    coding == HTTP_CODING_IDENTITY ? "identity" : http_coding_name(coding));
	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return error_set(cause, "deflateInit2 failed");
	cap = deflateBound(&zs, (uLong)len);
	if ((buf = xmalloc(cap)) == NULL) {
		deflateEnd(&zs);
		return error_set(cause, "out of memory compressing the response");
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)buf;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return error_set(cause, "deflate did not finish the response");
	}
	*out_len = zs.total_out;
	deflateEnd(&zs);
	*out = buf;
	return 0;
}
