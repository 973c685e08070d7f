/*
 * error.h: recoverable errors as malloc'ed messages (tmux's char **cause),
 * one unit shared by the daemon and the client tools (inferctl, the
 * benchmarks, their HTTP client): it lives in common/, which every target
 * has on its include path, so the tools use it without seeing daemon/.
 */
#ifndef INFERD_ERROR_H
#define INFERD_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Functions that can fail return -1 (or NULL) and, when their cause argument
 * is non-NULL, store a malloc'ed message there that the caller prints and
 * frees.  A cause already set is replaced.
 */

/* Store a formatted message in *cause; always returns -1. */
int error_set(char **cause, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefix the message in *cause with formatted context ("ctx: old"); returns -1. */
int error_prefix(char **cause, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif
