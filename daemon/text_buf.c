/* text_buf.c: a growing text buffer for replies rendered piece by piece; failure sticks. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "text_buf.h"

/* Start with room for cap bytes. */
int
text_buf_init(struct text_buf *b, size_t cap)
{
	b->len = 0;
	b->cap = cap > 0 ? cap : 1;
	b->failed = 0;
	if ((b->s = xmalloc(b->cap)) == NULL)
		return -1;
	b->s[0] = '\0';
	return 0;
}

/* Append formatted text, growing the buffer as needed. */
void
text_buf_printf(struct text_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	while (!b->failed) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		if (n < 0 || (p = xrealloc(b->s, b->cap * 2 + (size_t)n)) == NULL) {
			b->failed = 1;
			return;
		}
		b->s = p;
		b->cap = b->cap * 2 + (size_t)n;
	}
}

/* The text, or NULL (the buffer freed) when an append failed. */
char *
text_buf_finish(struct text_buf *b)
{
	char *s = b->s;

	b->s = NULL;
	if (b->failed) {
		free(s);
		return NULL;
	}
	return s;
}
