/* http_encoding.h: gzip and deflate bodies (Content-Encoding, Accept-Encoding) through zlib, bounded. */
#ifndef INFERD_HTTP_ENCODING_H
#define INFERD_HTTP_ENCODING_H

#include <stddef.h>

/*
 * Contract.  A request body sent with Content-Encoding gzip or deflate is
 * inflated into a new buffer that never grows past max bytes: a body that
 * would is refused as too large (a small compressed body cannot make the
 * daemon allocate more than max_body_bytes).  "deflate" is the zlib format
 * of RFC 9110; a raw deflate stream, which some clients send instead, is
 * accepted too.  One coding only ("identity" means none); anything else is
 * unsupported.  A response is compressed with the coding the client prefers
 * among gzip and deflate in its Accept-Encoding (q=0 excludes one).
 */

/* A content coding. */
enum http_coding {
	HTTP_CODING_IDENTITY = 0,
	HTTP_CODING_GZIP,
	HTTP_CODING_DEFLATE,
};

/* Why a request body could not be decoded. */
enum http_coding_error {
	HTTP_CODING_OK = 0,
	HTTP_CODING_UNSUPPORTED = -1,	/* an unknown coding: 415 */
	HTTP_CODING_MALFORMED = -2,	/* not a valid stream of its coding: 400 */
	HTTP_CODING_TOO_LARGE = -3,	/* inflates past max: 413 */
	HTTP_CODING_NO_MEMORY = -4,	/* 500 */
};

/* The coding a Content-Encoding value names; UNSUPPORTED (with *cause) for others. */
enum http_coding_error http_coding_parse(const char *value, enum http_coding *out,
    char **cause);
/*
 * Inflate len bytes of in, compressed with coding, into a new malloc'ed
 * buffer *out of *out_len bytes (at most max).  IDENTITY is refused here
 * (the caller has nothing to do).
 */
enum http_coding_error http_coding_decode(enum http_coding coding, const void *in,
    size_t len, size_t max, char **out, size_t *out_len, char **cause);
/* The coding to answer with, from an Accept-Encoding value (NULL: IDENTITY). */
enum http_coding http_coding_accept(const char *accept);
/* The Content-Encoding token of coding ("gzip", "deflate"), NULL for IDENTITY. */
const char *http_coding_name(enum http_coding coding);
/* Compress len bytes of in into a new malloc'ed *out of *out_len bytes; -1 with *cause. */
int http_coding_encode(enum http_coding coding, const void *in, size_t len, char **out,
    size_t *out_len, char **cause);

#endif
