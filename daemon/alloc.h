/*
 * alloc.h: the daemon's heap allocations, which the fault-injection build can
 * make fail.
 *
 * Contract.  xmalloc, xcalloc, xrealloc, xstrdup and xstrndup behave exactly
 * as malloc, calloc, realloc, strdup and strndup: NULL (errno ENOMEM) when
 * memory is short, and xrealloc then leaves the old block as it was, so every
 * caller's NULL check stays what handles the failure.  Built with
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

/* Route jansson's allocations through xmalloc (fault-injection build only). */
void alloc_install_json(void);

#endif
