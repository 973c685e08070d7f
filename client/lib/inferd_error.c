/* inferd_error.c: libinferd's error codes, their texts and the last failure's message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "libinferd_impl.h"

/* The detailed message of the last failure on this thread. */
static _Thread_local char inferd_error_text[512];

/* Record a failure's message for inferd_last_error(); returns code. */
int
inferd__fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(inferd_error_text, sizeof inferd_error_text, fmt, ap);
	va_end(ap);
	return code;
}

/* Forget the last failure's message: every public function that returns a code starts here. */
void
inferd__clear_error(void)
{
	inferd_error_text[0] = '\0';
}

/* The daemon is gone: remember it and say so. */
int
inferd__closed(inferd_conn_t *c)
{
	c->closed = 1;
	return inferd__fail(INFERD_ECLOSED, "the daemon closed the connection");
}

/* Copy a caller's struct after checking its size (see libinferd_impl.h). */
int
inferd__struct_copy(void *dst, size_t known, size_t min, const void *src,
    size_t caller_size, const char *what)
{
	const unsigned char *extra = (const unsigned char *)src + known;
	size_t i;

	if (caller_size < min)
		return inferd__fail(INFERD_EINVAL, "%s: size %zu is below %zu (start from %s_INIT)",
		    what, caller_size, min, what);
	/* No struct of inferd.h comes near this: size holds something else (a pointer, a count). */
	if (caller_size > INFERD_STRUCT_SIZE_MAX)
		return inferd__fail(INFERD_EINVAL, "%s: size is %zu, not a struct size: its first field is size, "
		    "so code that fills it positionally (written for an inferd.h before size came first) puts "
		    "another value there; start from %s_INIT and set the fields by name", what, caller_size, what);
	for (i = known; i < caller_size; i++)
		if (extra[i - known] != 0)
			return inferd__fail(INFERD_EINVAL, "%s: a field past byte %zu is set, which "
			    "this libinferd does not know (built against a newer inferd.h, or the struct "
			    "was filled positionally: start from %s_INIT and set the fields by name)", what, known,
			    what);
	memset(dst, 0, known);
	memcpy(dst, src, caller_size < known ? caller_size : known);
	return 0;
}

/* The library code of a wire status (an outcome code of inferd_outcome.h). */
int
inferd__status_code(int32_t status)
{
	if (status < 0 || status >= INFERD_OUTCOME_COUNT)
		return INFERD_EINTERNAL;
	return INFERD_OUTCOME_ERROR(status);
}

#define INFERD_LOCAL_TEXT(name, value, text) case INFERD_##name: return text;
#define INFERD_OUTCOME_TEXT(name, code, err, http, label, text, ctext) case INFERD_##err: return ctext;

/* The text of an error code. */
const char *
inferd_strerror(int code)
{
	switch (code) {
	INFERD_LOCAL_ERROR_MAP(INFERD_LOCAL_TEXT)
	INFERD_OUTCOME_MAP(INFERD_OUTCOME_TEXT)
	default:
		return "unknown error";
	}
}

/* The detailed message of the last failure on this thread. */
const char *
inferd_last_error(void)
{
	return inferd_error_text;
}
