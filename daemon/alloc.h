/*
 * alloc.h: the daemon's heap allocations, which the fault-injection build can
 * make fail.
 *
 * Contract.  xmalloc, xcalloc, xrealloc, xstrdup, xstrndup, xasprintf and
 * xvasprintf behave exactly as malloc, calloc, realloc, strdup, strndup,
 * asprintf and vasprintf: NULL (or -1; errno ENOMEM) when memory is short, and
 * xrealloc then leaves the old block as it was, so every caller's check stays
 * what handles the failure.  Built with
 * --enable-fault-injection (INFERD_FAULT_INJECTION) each call first counts at
 * the fault site malloc (fault.h) and the armed one fails without
 * allocating; otherwise they are the libc calls, inline.  What they return is
 * released with free().  alloc_install_json() makes jansson allocate through
 * xmalloc as well (in the fault-injection build; nothing otherwise); call it
 * before the first jansson value is made.
 */
#ifndef INFERD_ALLOC_H
#define INFERD_ALLOC_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

/* 1 (errno ENOMEM) when this allocation is the one INFERD_FAULT=malloc:N fails. */
static inline int
alloc_fault(void)
{
	if (!FAULT(FAULT_MALLOC))
		return 0;
	errno = ENOMEM;
	return 1;
}

/* malloc(n), or NULL when memory is short (or the fault is injected). */
static inline void *
xmalloc(size_t n)
{
	return alloc_fault() ? NULL : malloc(n);
}

/* calloc(n, size), or NULL. */
static inline void *
xcalloc(size_t n, size_t size)
{
	return alloc_fault() ? NULL : calloc(n, size);
}

/* realloc(p, n), or NULL with p untouched. */
static inline void *
xrealloc(void *p, size_t n)
{
	return alloc_fault() ? NULL : realloc(p, n);
}

/* strdup(s), or NULL. */
static inline char *
xstrdup(const char *s)
{
	return alloc_fault() ? NULL : strdup(s);
}

/* strndup(s, n), or NULL. */
static inline char *
xstrndup(const char *s, size_t n)
{
	return alloc_fault() ? NULL : strndup(s, n);
}

/* vasprintf(s, fmt, ap) (through xmalloc: some includers lack _GNU_SOURCE): its length, or -1 with *s NULL. */
static inline int
xvasprintf(char **s, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	*s = NULL;
	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	if (n < 0 || (*s = xmalloc((size_t)n + 1)) == NULL)
		return -1;
	return vsnprintf(*s, (size_t)n + 1, fmt, ap);
}

/* asprintf(s, fmt, ...): its length, or -1 with *s NULL. */
static inline int __attribute__((format(printf, 2, 3)))
xasprintf(char **s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = xvasprintf(s, fmt, ap);
	va_end(ap);
	return n;
}

/* Route jansson's allocations through xmalloc (fault-injection build only). */
void alloc_install_json(void);

#endif
