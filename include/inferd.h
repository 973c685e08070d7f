/*
 * inferd.h: libinferd, the C client of the inferd daemon over shared memory.
 *
 * A connection owns a shared-memory region that the client creates and
 * hands to the daemon.  Tensors are allocated inside that region, so the
 * daemon reads inputs and writes outputs in place: no copy through a
 * socket, and on a GPU the device copies straight from and to it.
 *
 *     inferd_conn_t *conn;
 *     const struct inferd_model *m;
 *     struct inferd_tensor in, out;
 *
 *     if (inferd_connect(NULL, NULL, &conn) != 0)
 *             errx(1, "%s", inferd_last_error());
 *     inferd_model_get(conn, "fashion-mlp", &m);
 *     inferd_tensor_alloc(conn, m->input_row_bytes, &in);
 *     inferd_tensor_alloc(conn, m->output_row_bytes, &out);
 *     ... fill in.data with one row of floats ...
 *     inferd_infer(conn, m, 1, &in, &out, 0);
 *     ... read out.data ...
 *     inferd_close(conn);
 *
 * Conventions (libuv's): every function that can fail returns 0 or a
 * negative INFERD_E* code; inferd_strerror() names a code and
 * inferd_last_error() gives the detailed message of the failure (for
 * example the daemon's reason for a refusal).  That message belongs to the
 * calling thread and lives until its next call of a libinferd function that
 * returns a code: each such call clears it on entry, so after a success it
 * is "" and a message is never left over from an earlier failure.  Read it
 * (or copy it) before the next call.
 *
 * Threads: a connection may be shared by any number of threads: every
 * function may be called on it from several threads at once (except
 * inferd_close, which no other call may overlap).  Submission takes a short
 * lock; waiting does not hold it, so threads' requests are in flight
 * together and batch in the daemon.  Each request's completion goes to
 * exactly one place, chosen by how it was submitted:
 *  - inferd_infer / inferd_run: returned to the thread that called it;
 *  - inferd_submit: kept for inferd_wait, whichever thread calls it;
 *  - inferd_submit_cb: passed to its callback, on the connection's
 *    completion thread (started by the first inferd_submit_cb);
 *  - inferd_submit_handle: kept in its handle for inferd_handle_wait.
 * So inferd_wait never returns a completion of a callback or handle
 * request, and inferd_outstanding counts only inferd_submit's.  Completions
 * are read off the ring by whichever thread is waiting (one at a time
 * sleeps in poll(), the others on a condition variable), or by the
 * completion thread once it runs.  inferd_strerror() and
 * inferd_last_error() may be called from any thread.
 *
 * Processes: the region and descriptors are close-on-exec and not meant to
 * be shared with a forked child; connect again in the child.
 *
 * Headers: this file and inferd_outcome.h (the table of request outcomes
 * the INFERD_E* codes come from) are the installed, public interface.  The
 * wire protocol between libinferd and the daemon (inferd_wire.h) is private
 * to the two and not installed: speak to the daemon through this library.
 */
#ifndef INFERD_H
#define INFERD_H

#include <stddef.h>
#include <stdint.h>

#include "inferd_outcome.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define INFERD_EXPORT __attribute__((visibility("default")))
#else
#define INFERD_EXPORT
#endif

/* Library version, also in inferd_version(). */
#define INFERD_VERSION_MAJOR 0
#define INFERD_VERSION_MINOR 2

/* The socket the daemon listens on by default. */
#define INFERD_DEFAULT_SOCKET "/run/inferd/inferd.sock"

/*
 * Error codes: all negative.  The library's own failures are listed here;
 * the ways a request can end (INFERD_EBUSY .. INFERD_EINTERNAL, and
 * INFERD_OK) come from inferd_outcome.h's table.  Values never change.
 * The outcomes take -12 downwards, so local codes added after -11 take -101
 * downwards.
 */
#define INFERD_LOCAL_ERROR_MAP(X)						\
	X(EINVAL, -1, "invalid argument")	/* a bad argument */		\
	X(ENOMEM, -2, "out of memory")		/* in this process */		\
	X(ESYS, -3, "system call failed")	/* see inferd_last_error */	\
	X(ECONNECT, -4, "cannot connect to the daemon")				\
	X(EPROTO, -5, "protocol error")		/* unexpected protocol or version */ \
	X(EDENIED, -6, "not allowed to connect")	/* this user */		\
	X(EREFUSED, -7, "connection refused by the daemon") /* too many clients, or the region */ \
	X(ECLOSED, -8, "connection closed by the daemon")			\
	X(ENOMODEL, -9, "no such model")					\
	X(ENOSPACE, -10, "no space left in the shared region")			\
	X(EAGAIN, -11, "try again")	/* rings full, or no reply in time */ \
	X(ENOPENDING, -101, "no request outstanding")	/* inferd_wait with nothing to wait for */ \
	X(ESHAPE, -102, "the model cannot take these input dims") /* the daemon's reason in inferd_last_error */

#define INFERD__LOCAL_ENUM(name, value, text) INFERD_##name = (value),
#define INFERD__OUTCOME_ENUM(name, code, err, http, label, text, ctext) \
	INFERD_##err = INFERD_OUTCOME_ERROR(code),
enum inferd_error {
	INFERD_LOCAL_ERROR_MAP(INFERD__LOCAL_ENUM)
	INFERD_OUTCOME_MAP(INFERD__OUTCOME_ENUM)
};
#undef INFERD__LOCAL_ENUM
#undef INFERD__OUTCOME_ENUM

/* A connection to the daemon: opaque. */
typedef struct inferd_conn inferd_conn_t;

/*
 * Growing the interface without breaking the ABI:
 * - The structs a caller fills in (inferd_options, inferd_request) begin
 *   with size, which the caller sets to the sizeof it was compiled with:
 *   start from INFERD_OPTIONS_INIT / INFERD_REQUEST_INIT, or write
 *   .size = sizeof x in a designated initializer.  New fields are only
 *   ever added at the end; the library reads the fields size covers and
 *   takes the defaults for the rest, and refuses (INFERD_EINVAL) a size
 *   smaller than this release's or a larger one whose extra bytes are not
 *   zero.
 * - The structs the library fills in for the caller in arrays or on the
 *   caller's stack (inferd_tensor, inferd_completion) carry reserved space,
 *   always zero, that later fields will use.
 * - inferd_model is owned by the library and only read through a pointer,
 *   so fields are added at its end.
 * - enum inferd_error's values never change; new codes get new values.
 */

/* Connection settings; NULL, or zeros past size, mean the defaults. */
struct inferd_options {
	size_t size;			/* sizeof(struct inferd_options) */
	size_t region_bytes;		/* shared memory for rings and tensors (default 64 MiB) */
	unsigned sq_entries;		/* submission ring, power of two (default 256) */
	unsigned cq_entries;		/* completion ring, power of two >= sq (default 2 x sq) */
	int timeout_ms;			/* for control replies (default 10000) */
	/*
	 * Added after the first release.  reconnect != 0: when the daemon has
	 * gone away (restarted), the next submission or model lookup connects
	 * to the same socket again, trying for up to reconnect_max_ms (default
	 * 10000), and hands the same region over, so tensors and model
	 * pointers the application holds stay valid (a model the new daemon
	 * no longer serves is refused with INFERD_EINVAL).  Requests in flight
	 * at the disconnect complete with INFERD_ECLOSED either way.  Without
	 * it every later call returns INFERD_ECLOSED.
	 */
	int reconnect;
	int reconnect_max_ms;
	/*
	 * Added after reconnect (it fills what was padding, so the size is
	 * unchanged).  Microseconds a waiting thread spins on the completion
	 * ring, yielding the core as it goes, before it sleeps on the region's
	 * futex word: 0 the default (50), negative never, at most 10000.
	 * Spinning spares both sides a wake-up when the answer comes in time.
	 */
	int spin_us;
};
#define INFERD_OPTIONS_INIT { .size = sizeof(struct inferd_options) }

/* One input or output of a model. */
struct inferd_tensor_info {
	char name[128];
	const char *datatype;		/* "FP32", "FP16", "INT64", "INT32", "INT8", "UINT8", "BOOL" (one byte, 0 or 1) */
	size_t elem_bytes;
	int ndims;			/* dims exclude the batch dimension */
	int64_t dims[8];		/* -1: variable, given per request */
	int64_t max_dims[8];		/* the largest each dim may be */
	/*
	 * Outputs: variable dim d equals dim follows_dim[d] of input
	 * follows_input[d]; -1 otherwise (fixed, or computed from the inputs
	 * some other way: inferd_output_dims gives it).
	 */
	int follows_input[8], follows_dim[8];
};

/*
 * A model's metadata, owned by the connection and valid until inferd_close;
 * grows at its end.  The input_* and output_* fields describe input 0 and
 * output 0 (row bytes 0 when a dim is variable); inputs and outputs list
 * every tensor.
 */
struct inferd_model {
	uint32_t id;
	char name[128];
	int max_batch_size;
	char input_name[128], output_name[128];
	const char *datatype;		/* input 0's */
	int input_ndims, output_ndims;	/* dims exclude the batch dimension */
	int64_t input_dims[8], output_dims[8];
	size_t input_row_bytes, output_row_bytes;
	size_t nlabels;			/* class names, 0 when the model has none */
	const char *const *labels;
	int ninputs, noutputs;		/* added after the first release */
	const struct inferd_tensor_info *inputs, *outputs;
	int64_t version;		/* 0: the newest loaded version; else the one it names (added with versions) */
};

/* A block of the region: data points into shared memory. */
struct inferd_tensor {
	void *data;
	uint64_t offset;		/* from the start of the region */
	size_t bytes;
	uint64_t reserved[2];		/* zero; room for later fields */
};

/*
 * One tensor of a request's list form, named as the model names it.  dims
 * are the non-batch dims; ndims 0 takes the model's when they are all
 * fixed.  An output's dims are those the inputs make: with ndims 0 the
 * library fills them (fixed dims, dims equal to an input dim, and dims the
 * model computes otherwise, such as a strided convolution's, asked of the
 * daemon as inferd_output_dims does).  The tensor holds at least rows
 * times the row bytes of those dims.
 */
struct inferd_io {
	const char *name;
	const struct inferd_tensor *tensor;
	int ndims;
	int64_t dims[8];
	uint64_t reserved[2];		/* zero; room for later fields */
};

/*
 * One asynchronous request, in one of two forms:
 *  - single tensor: input and output, for a model of one input with fixed
 *    dims and one output;
 *  - tensor list (input and output NULL): ninputs inputs naming
 *    every input of the model once, and noutputs (>= 1) outputs naming the
 *    outputs wanted, each once; the others are not computed into memory.
 */
struct inferd_request {
	size_t size;			/* sizeof(struct inferd_request) */
	const struct inferd_model *model;
	int rows;			/* 1 .. model->max_batch_size */
	const struct inferd_tensor *input;	/* at least rows x input_row_bytes */
	const struct inferd_tensor *output;	/* at least rows x output_row_bytes */
	uint64_t timeout_us;		/* 0: the model's default */
	uint64_t user_data;		/* returned in the completion */
	int ninputs, noutputs;		/* the list form (added after the first release) */
	const struct inferd_io *inputs, *outputs;
	/*
	 * A name for the request, echoed (the same pointer) in its completion's
	 * id; NULL for none.  The string must stay valid until then.
	 */
	const char *id;
};
#define INFERD_REQUEST_INIT { .size = sizeof(struct inferd_request) }

/* The outcome of an asynchronous request. */
struct inferd_completion {
	uint64_t user_data;
	int status;			/* 0, or a negative INFERD_E* code */
	uint32_t reserved0;		/* zero; room for later fields */
	const char *id;			/* the request's id (added after the first release) */
};

/*
 * Connect to the daemon at socket_path (NULL: INFERD_DEFAULT_SOCKET),
 * create the shared region and hand it over.  On success *out is a
 * connection; on failure *out is NULL and inferd_last_error() says why
 * (INFERD_EDENIED and INFERD_EREFUSED carry the daemon's own message).
 */
INFERD_EXPORT int inferd_connect(const char *socket_path,
    const struct inferd_options *opts, inferd_conn_t **out);
/*
 * Close the connection and release the region (NULL is ignored).  Requests
 * still in flight are abandoned; the daemon cancels them.
 */
INFERD_EXPORT void inferd_close(inferd_conn_t *conn);

/* Number of models the daemon serves; their ids are 0 .. count-1. */
INFERD_EXPORT unsigned inferd_model_count(inferd_conn_t *conn);
/*
 * Look a model up by name (INFERD_ENOMODEL if none, or while it is still
 * loading: inferd_last_error says which); cached after the first call.
 */
INFERD_EXPORT int inferd_model_get(inferd_conn_t *conn, const char *name,
    const struct inferd_model **out);
/*
 * Look one version of a model up by name (version 0: the newest loaded,
 * as inferd_model_get); that version has an id of its own, so requests on
 * it go to it even after a newer one is loaded, and fail with
 * INFERD_EREQUEST "(model unloaded)" once it is unloaded.
 */
INFERD_EXPORT int inferd_model_get_version(inferd_conn_t *conn, const char *name, int64_t version,
    const struct inferd_model **out);
/* Look a model up by id, 0 .. inferd_model_count()-1 (models loaded later have higher ids). */
INFERD_EXPORT int inferd_model_get_id(inferd_conn_t *conn, unsigned id,
    const struct inferd_model **out);

/*
 * Allocate bytes inside the region (64-byte aligned); fills *t.
 * INFERD_ENOSPACE when no free block is large enough.
 */
INFERD_EXPORT int inferd_tensor_alloc(inferd_conn_t *conn, size_t bytes,
    struct inferd_tensor *t);
/* Return a tensor's block; t is cleared.  Not while a request uses it. */
INFERD_EXPORT void inferd_tensor_free(inferd_conn_t *conn, struct inferd_tensor *t);

/*
 * The dims of outputs of model m for a request of rows rows whose inputs
 * are inputs[0 .. ninputs): every input of the model once, by name, with
 * its dims as a request gives them (ndims 0: the model's fixed dims);
 * their tensors are not read and may be NULL.  Each of the noutputs
 * outputs, named by name, gets its ndims and dims filled: exactly those a
 * request of that shape must give.  The daemon evaluates the model's
 * output-shape functions (one round trip; the connection keeps the
 * answers for its last few shapes).  INFERD_ESHAPE when the model cannot
 * take those rows or dims, with the daemon's reason in inferd_last_error()
 * (the input and dim with its bound, or the graph node that cannot take
 * them, such as a Reshape that does not divide).  inferd_run,
 * inferd_submit and the other submissions ask by themselves for an output
 * given with ndims 0 whose dims only the daemon can compute.
 */
INFERD_EXPORT int inferd_output_dims(inferd_conn_t *conn, const struct inferd_model *m, int rows,
    const struct inferd_io *inputs, int ninputs, struct inferd_io *outputs, int noutputs);

/*
 * Run rows rows through model m and wait: output receives rows x
 * output_row_bytes.  Completions of asynchronous requests that arrive
 * meanwhile are kept for inferd_wait().
 */
INFERD_EXPORT int inferd_infer(inferd_conn_t *conn, const struct inferd_model *m,
    int rows, const struct inferd_tensor *input, const struct inferd_tensor *output,
    uint64_t timeout_us);

/*
 * Run one request of either form and wait (its user_data is ignored).
 * Like inferd_infer, completions of asynchronous requests that arrive
 * meanwhile are kept for inferd_wait().
 */
INFERD_EXPORT int inferd_run(inferd_conn_t *conn, const struct inferd_request *req);
/*
 * Queue a request without waiting.  INFERD_EAGAIN when the rings are full
 * (at most cq_entries requests may be outstanding): reap with inferd_wait().
 * The tensors must not be freed or reused before the request completes.
 */
INFERD_EXPORT int inferd_submit(inferd_conn_t *conn, const struct inferd_request *req);
/*
 * Reap up to max completions of inferd_submit's requests (never those of
 * callbacks, handles or synchronous calls), waiting up to timeout_ms (-1:
 * forever, 0: poll) for the first.  Returns how many were stored in out (0 when none
 * came in time), or a negative code (INFERD_ECLOSED if the daemon went away).
 * With no request outstanding (inferd_outstanding() is 0) nothing can come:
 * a wait (timeout_ms -1 or > 0) returns INFERD_ENOPENDING at once instead of
 * blocking; a poll (timeout_ms 0) returns 0 as always.
 */
INFERD_EXPORT int inferd_wait(inferd_conn_t *conn, struct inferd_completion *out,
    unsigned max, int timeout_ms);
/* Requests of inferd_submit not yet reaped by inferd_wait. */
INFERD_EXPORT unsigned inferd_outstanding(inferd_conn_t *conn);

/* Called once per request of inferd_submit_cb with its completion (valid during the call). */
typedef void (*inferd_callback_fn)(const struct inferd_completion *completion, void *user);

/*
 * Queue a request whose completion is passed to cb(completion, user) on the
 * connection's completion thread (one thread, so callbacks of one
 * connection never run at once; started by the first call).  A callback
 * may submit more requests, cancel, and read or free tensors, but must not
 * block for long nor call inferd_close.  INFERD_EAGAIN when the rings are
 * full.  Callbacks of requests still in flight at inferd_close never run;
 * when the daemon goes away they run with INFERD_ECLOSED.
 */
INFERD_EXPORT int inferd_submit_cb(inferd_conn_t *conn, const struct inferd_request *req,
    inferd_callback_fn cb, void *user);

/* A request submitted with inferd_submit_handle: opaque. */
typedef struct inferd_handle inferd_handle_t;

/*
 * Queue a request and get a handle to wait for it alone.  Every handle is
 * freed with inferd_handle_free, whether or not it was waited for.
 */
INFERD_EXPORT int inferd_submit_handle(inferd_conn_t *conn, const struct inferd_request *req,
    inferd_handle_t **out);
/*
 * Wait up to timeout_ms (-1: forever, 0: poll) for the handle's request:
 * 0 and *completion filled once it completed (its status says how; calling
 * again returns the same), INFERD_EAGAIN if it did not complete in time,
 * INFERD_ECLOSED if the daemon went away before (completion status
 * INFERD_ECLOSED too).
 */
INFERD_EXPORT int inferd_handle_wait(inferd_handle_t *h, int timeout_ms,
    struct inferd_completion *completion);
/*
 * Free a handle.  If its request has not completed it goes on, its
 * completion is dropped, and its tensors stay in use until it completes,
 * which nothing then tells you: wait first unless you are closing.
 */
INFERD_EXPORT void inferd_handle_free(inferd_handle_t *h);

/*
 * Cancellation.  A request the daemon still holds queued (not yet in a
 * batch) is dropped at once and completes with INFERD_ECANCELLED; one
 * already in a batch completes as usual (0 or its error).  Either way its
 * completion arrives through the usual path, and its tensors belong to the
 * daemon until then: do not free or reuse them before the completion.
 * Returns how many requests were asked to cancel (0 when none was in
 * flight), or a negative code.
 */
INFERD_EXPORT int inferd_cancel(inferd_conn_t *conn, uint64_t user_data);	/* every request with that user_data */
INFERD_EXPORT int inferd_handle_cancel(inferd_handle_t *h);
/*
 * A descriptor that polls readable when completions may be ready, for an
 * event loop; then call inferd_wait(conn, ..., 0).  Only for a connection
 * without callbacks (the completion thread drains it) and no other thread
 * waiting; a reconnect replaces it.  The first call asks the daemon to
 * signal it (otherwise completions wake no descriptor): make it before
 * submitting the requests it should report.
 */
INFERD_EXPORT int inferd_fd(inferd_conn_t *conn);

/* The text of an error code (static). */
INFERD_EXPORT const char *inferd_strerror(int code);
/*
 * The detailed message of this thread's failure since its last call of a
 * function that returns a code ("" after a success; see Conventions above).
 * The pointer stays valid for the thread's life; the text changes with calls.
 */
INFERD_EXPORT const char *inferd_last_error(void);
/* The library's version as "MAJOR.MINOR" (INFERD_VERSION_MAJOR, _MINOR it was built with). */
INFERD_EXPORT const char *inferd_version(void);

#ifdef __cplusplus
}
#endif

#endif
