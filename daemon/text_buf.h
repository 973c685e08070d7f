/* text_buf.h: a growing text buffer for replies rendered piece by piece (Prometheus lines); failure sticks. */
#ifndef INFERD_TEXT_BUF_H
#define INFERD_TEXT_BUF_H

#include <stddef.h>

/*
 * Append with text_buf_printf; once memory runs out (or a format fails)
 * failed sticks and later appends do nothing, so a renderer checks once, at
 * text_buf_finish, instead of after every line.
 */
struct text_buf {
	char *s;
	size_t len, cap;
	int failed;
};

/* Start with room for cap bytes; -1 when out of memory. */
int text_buf_init(struct text_buf *b, size_t cap);
/* Append formatted text. */
void text_buf_printf(struct text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (malloc'ed, NUL-terminated; the caller frees it), or NULL when an append failed. */
char *text_buf_finish(struct text_buf *b);

#endif
