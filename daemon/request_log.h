/* request_log.h: the optional structured request log, one JSON line per finished request. */
#ifndef INFERD_REQUEST_LOG_H
#define INFERD_REQUEST_LOG_H

#include <stdint.h>

typedef struct request_log request_log_t;

/* What one line says about a finished request. */
struct request_log_entry {
	const char *model;
	int64_t version;
	const char *status;		/* "ok" or the failure's reason */
	int rows;
	uint64_t queue_us;		/* submission to its batch's start (the whole wait when it never ran) */
	uint64_t total_us;		/* submission to completion */
};

/* Open path for appending (made 0640 when new); -1 with *cause naming it. */
int request_log_open(const char *path, request_log_t **out, char **cause);
/* Append e as one line, safe from any thread; a failing write is logged once, never fatal. */
void request_log_write(request_log_t *l, const struct request_log_entry *e);
/* Close (NULL is ignored). */
void request_log_close(request_log_t *l);

#endif
