/*
 * inferd_outcome.h: the one table of how an inference request can end.
 *
 * Every spelling of an outcome is generated from INFERD_OUTCOME_MAP, the way
 * libuv spells its errors with UV_ERRNO_MAP: the daemon's batcher status, its
 * metrics label, the HTTP status, the status code on the shared-memory wire,
 * and libinferd's INFERD_E* code and text.  Adding an outcome is one row here.
 *
 * Columns of X(NAME, CODE, ERROR, HTTP, LABEL, TEXT, CLIENT_TEXT):
 *   NAME         the suffix of every enum constant (BATCH_NAME, INFERD_WIRE_NAME, ...)
 *   CODE         the wire status and the batcher status value (0 .. COUNT-1, dense)
 *   ERROR        libinferd's constant INFERD_<ERROR>, valued INFERD_OUTCOME_ERROR(CODE)
 *   HTTP         the HTTP status, as Triton maps its errors: a full queue, an expired
 *                timeout and shutdown are 503 (retry elsewhere or later); bad input and
 *                a cancelled request are 400; a device failure is 500
 *   LABEL        the status label of inferd_requests_total in GET /metrics
 *   TEXT         the daemon's message when it has no more specific one
 *   CLIENT_TEXT  inferd_strerror's text
 * Public and installed: inferd.h builds enum inferd_error from it.  The values
 * of existing rows never change (they are ABI and wire protocol); new rows go
 * at the end.
 */
#ifndef INFERD_OUTCOME_H
#define INFERD_OUTCOME_H

#define INFERD_OUTCOME_MAP(X)							\
	X(OK, 0, OK, 200, "success", "ok", "success")				\
	X(BUSY, 1, EBUSY, 503, "busy", "busy: the model's queue is full",	\
	    "the model's queue is full")					\
	X(TIMEOUT, 2, ETIMEDOUT, 503, "timeout", "timed out waiting for inference", \
	    "request timed out")						\
	X(INVALID, 3, EREQUEST, 400, "invalid", "invalid request", "invalid request") \
	X(CANCELLED, 4, ECANCELLED, 400, "cancelled", "cancelled: the client went away", \
	    "request cancelled")						\
	X(SHUTDOWN, 5, ESHUTDOWN, 503, "shutdown", "the server is shutting down", \
	    "the daemon is shutting down")					\
	X(INTERNAL, 6, EINTERNAL, 500, "internal", "internal error",		\
	    "internal error in the daemon")

/* How many rows the table has (codes are 0 .. INFERD_OUTCOME_COUNT-1). */
#define INFERD_OUTCOME_ONE(name, code, err, http, label, text, ctext) + 1
#define INFERD_OUTCOME_COUNT (0 INFERD_OUTCOME_MAP(INFERD_OUTCOME_ONE))

/*
 * libinferd's code for an outcome: 0 for OK, else below the codes of the
 * library's own failures (INFERD_EINVAL .. INFERD_EAGAIN, -1 .. -11).
 */
#define INFERD_OUTCOME_ERROR(code) ((code) == 0 ? 0 : -(11 + (code)))

#endif
