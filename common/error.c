/* error.c: building error messages for callers (the daemon and the client tools; see error.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* Format into a fresh string; NULL only if memory is exhausted. */
static char *
error_vformat(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) == -1)
		return NULL;
	return s;
}

/* Store a formatted message in *cause; always returns -1. */
int
error_set(char **cause, const char *fmt, ...)
{
	va_list ap;

	if (cause == NULL)
		return -1;
	free(*cause);
	va_start(ap, fmt);
	*cause = error_vformat(fmt, ap);
	va_end(ap);
	if (*cause == NULL)
		*cause = strdup("out of memory");
	return -1;
}

/* Prefix the message in *cause with formatted context; returns -1. */
int
error_prefix(char **cause, const char *fmt, ...)
{
	va_list ap;
	char *ctx, *joined;

	if (cause == NULL)
		return -1;
	va_start(ap, fmt);
	ctx = error_vformat(fmt, ap);
	va_end(ap);
	if (ctx == NULL)
		return -1;
	if (asprintf(&joined, "%s: %s", ctx, *cause ? *cause : "unknown error") == -1) {
		free(ctx);
		return -1;
	}
	free(ctx);
	free(*cause);
	*cause = joined;
	return -1;
}
