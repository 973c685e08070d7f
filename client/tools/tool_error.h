/*
 * tool_error.h: recoverable errors as malloc'ed messages, for the client tools
 * (inferctl, inferd-bench and the shared HTTP client).
 *
 * The same convention as the daemon's char **cause, kept separate so that the
 * tools build from include/ and client/ alone: functions that can fail return
 * -1 (or NULL) and, when their cause argument is non-NULL, store a malloc'ed
 * message there that the caller prints and frees.  A cause already set is
 * replaced.
 */
#ifndef INFERD_TOOL_ERROR_H
#define INFERD_TOOL_ERROR_H

/* Store a formatted message in *cause; always returns -1. */
int tool_error_set(char **cause, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefix the message in *cause with formatted context ("ctx: old"); returns -1. */
int tool_error_prefix(char **cause, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
