/* batcher.h: dynamic batching across clients and the overlapped copy/compute pipeline. */
#ifndef INFERD_BATCHER_H
#define INFERD_BATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "metrics.h"
#include "model.h"

/*
 * Outcome of a request: one row of inferd_outcome.h each (BATCH_OK,
 * BATCH_BUSY: the queue is full, BATCH_TIMEOUT, BATCH_INVALID: rows out of
 * range, unknown model or client closing, BATCH_CANCELLED: its client went
 * away, BATCH_SHUTDOWN, BATCH_INTERNAL: a device call failed).  The values are
 * the table's codes, so a status is also its metrics reason and wire status.
 */
#define BATCH_STATUS_ENUM(name, code, err, http, label, text, ctext) BATCH_##name = (code),
enum batch_status {
	INFERD_OUTCOME_MAP(BATCH_STATUS_ENUM)
};
#undef BATCH_STATUS_ENUM

typedef struct batcher batcher_t;
/* Devices one client may use: the batcher's own and those of model instances elsewhere. */
#define BATCH_MAX_DEVICES 16
typedef struct batch_client batch_client_t;
typedef struct model_queue batcher_queue_t;
struct request_log;	/* request_log.h */
struct batch_request;

/*
 * Called exactly once per accepted request, from a batcher thread, when its
 * output has landed in req->output (status BATCH_OK) or it failed; error is
 * a message for the caller (NULL on success), valid during the call only.
 * It must not block for long and must not call batcher_client_close.
 */
typedef void (*batch_done_fn)(struct batch_request *req, enum batch_status status,
    const char *error);

/*
 * One request: rows rows of each of the model's inputs, and room for rows
 * rows of its outputs, in registered or pinned host memory the submitter
 * owns.  Two forms:
 *  - single tensor (input non-NULL): input and output, for a model of one
 *    input with fixed dims and one output;
 *  - tensor lists (input NULL): ninputs == the model's inputs, inputs[i]
 *    holding input_bytes[i] == rows x the row bytes of input i for the
 *    non-batch dims shape.dims[i]; noutputs == the model's outputs, outputs[o]
 *    NULL when that output is not wanted, else output_bytes[o] long.
 * batcher_submit checks every count, dim (model_check_dims) and length
 * (outputs against the layout: exactly this request's rows and dims), and
 * fills the tensor lists from the single-tensor form, so the batcher works on
 * lists only.  Requests in one batch agree on every input's dims, but for a
 * model that pads (model_padding.h): there the padded dim may differ within
 * a bucket, the batch runs at the bucket's length with each request's
 * inputs padded, and each request gets its own outputs, sliced to its
 * layout.
 */
struct batch_request {
	/* Filled by the submitter. */
	batch_client_t *client;
	int rows;			/* 1 .. model max_batch_size */
	const void *input;		/* single-tensor form; NULL for the lists */
	void *output;
	uint64_t timeout_us;		/* 0: the model's default; longer is clamped to it */
	batch_done_fn done;
	void *user;
	int ninputs, noutputs;
	const void *inputs[MODEL_MAX_IO];
	size_t input_bytes[MODEL_MAX_IO];
	void *outputs[MODEL_MAX_IO];
	size_t output_bytes[MODEL_MAX_IO];
	struct model_shape shape;	/* dims of every input; rows is set by batcher_submit */
	/*
	 * The outputs' dims and row bytes for shape (model_output_layout), when
	 * layout_set; otherwise batcher_submit computes it.  The answer's shapes
	 * and every copy of the outputs use it.
	 */
	struct model_layout layout;
	int layout_set;
	int device_memory;		/* some tensor is in device memory (CUDA IPC): only a GPU instance takes it */
	/* Private to the batcher. */
	struct batch_request *next;
	uint64_t submit_us, deadline_us, start_us;
	int slot;			/* index in its batch */
	int offset_rows;		/* first row of its slice in the batch */
};

/*
 * Create a batcher without queues: batcher_attach adds one per model
 * version at run time, each with inflight preallocated batch contexts (>= 2
 * so the copy-in of one batch overlaps the compute of the previous).  On
 * backends with graphs, every batch size up to graph_rows is captured once
 * per context at attach and replayed later (0: no graphs).  metrics may be
 * NULL; each queue counts under its model's name (metrics_model_add).
 */
int batcher_create(device_t *dev, struct metrics *metrics, int inflight, int graph_rows,
    batcher_t **out, char **cause);
/*
 * Build a queue for m (batch contexts, captured graphs, a scheduling and a
 * completion thread) and start accepting requests for it.  A failure (a
 * device allocation, stream or event) frees what was built and returns -1
 * with *cause; other queues are untouched.  m must outlive the queue.
 */
int batcher_attach(batcher_t *b, const model_t *m, batcher_queue_t **out, char **cause);
/*
 * Detach q: new submissions are refused ("model ... is being unloaded"),
 * queued and in-flight requests finish as usual, the threads are joined,
 * the contexts freed.  Must not be called from a done callback (it joins
 * the thread that runs them).
 */
void batcher_detach(batcher_t *b, batcher_queue_t *q);
/* How busy q is now: requests queued plus batches in flight (for choosing among instances). */
size_t batcher_queue_load(batcher_queue_t *q);
/* Requests queued on q and batches in flight there now (for the gauges of /metrics). */
void batcher_queue_depth(batcher_queue_t *q, size_t *queued, size_t *inflight);
/* Append a line per finished request to l (NULL: none); set before any queue is attached. */
void batcher_set_request_log(batcher_t *b, struct request_log *l);
/* The device q's instance runs on (its model's). */
device_t *batcher_queue_device(const batcher_queue_t *q);
/* Seconds the device spent on q's batches so far (compute, from device events; 0 for NULL). */
double batcher_queue_busy_seconds(const batcher_queue_t *q);
/*
 * Add the device memory q holds to *sum: every batch context's (its
 * model_exec_t.memory) and its compute stream's own (workspace), a context
 * still being built in the background counted as the first one's size.
 */
void batcher_queue_memory(batcher_queue_t *q, struct model_memory *sum);
/* Stop, drain, join and free every queue still attached, then b (NULL is ignored). */
void batcher_free(batcher_t *b);
/* Stop accepting new requests (they get BATCH_SHUTDOWN) and new queues; queued ones still run. */
void batcher_shutdown(batcher_t *b);

/*
 * A client: one source of requests with its own copy stream; batches take
 * requests round-robin over clients, and each client's requests on one
 * model complete in the order it submitted them (unless it is unordered,
 * below).  Its fifo on a queue is
 * made on its first request there, so queues may come and go.
 */
int batcher_client_create(batcher_t *b, const char *label, batch_client_t **out,
    char **cause);
/*
 * Requests of c are independent of one another (HTTP's, each answered on
 * its own connection): a batch may take any of its queued requests that fits,
 * looking a bounded depth past the oldest, rather than only the oldest, and
 * they may complete in any order.  Served oldest first.  Call before c
 * submits.
 */
void batcher_client_set_unordered(batch_client_t *c);
/*
 * Drop the client's queued requests (their done runs with BATCH_CANCELLED),
 * wait for its requests in flight to finish (their done runs as usual), then
 * free its stream.  After it returns no callback for this client runs again.
 */
void batcher_client_close(batcher_t *b, batch_client_t *c);

/*
 * Cancel req (a request of model m, or of any model when m is NULL,
 * accepted by batcher_submit) if it is
 * still queued: it leaves the queue and its done runs with BATCH_CANCELLED
 * before this returns 1.  A request already in a batch, or finished,
 * is left alone (0): it completes as usual.  req is only compared and never
 * dereferenced beyond its client, so a finished one (whose memory stays
 * valid) is harmless.
 */
int batcher_cancel(batcher_t *b, const model_t *m, struct batch_request *req);

/*
 * Queue req on q.  Returns BATCH_OK when accepted (req->done will be
 * called once); otherwise the status (BUSY, INVALID, SHUTDOWN) with *cause
 * set, and done is never called.  The caller keeps q attached until done
 * ran (the repository's references do that).
 */
enum batch_status batcher_submit_queue(batcher_t *b, batcher_queue_t *q,
    struct batch_request *req, char **cause);
/* The same for the queue attached for model m (INVALID when there is none). */
enum batch_status batcher_submit(batcher_t *b, const model_t *m,
    struct batch_request *req, char **cause);

/*
 * How tensors in a client's mapped region (batcher_client_map) reach the
 * device and come back.  DMA: a copy per tensor on the client's stream and
 * an event per request.  MAPPED: every such tensor of a batch by one gather
 * kernel before the compute and one scatter kernel after it, reading and
 * writing the region through its device mapping (one event per batch).
 * AUTO: mapped for tensors of at most mapped_max_bytes, DMA above; mapped
 * for every size where host and device share memory (the CPU backend,
 * integrated GPUs).  Other memory (HTTP's pinned slots, CUDA IPC) always
 * takes the DMA copy.
 */
enum batch_copy_mode {
	BATCH_COPY_AUTO = 0,
	BATCH_COPY_DMA,
	BATCH_COPY_MAPPED,
};
/* The default of mapped_max_bytes (the daemon's mapped_copy_max_bytes). */
#define BATCH_MAPPED_MAX_DEFAULT ((size_t)64 * 1024)
/* Parse "auto", "dma" or "mapped"; -1 for anything else. */
int batch_copy_mode_parse(const char *s, enum batch_copy_mode *out);
/* The mode's name. */
const char *batch_copy_mode_name(enum batch_copy_mode mode);
/*
 * Set the copy mode (batcher_create starts in AUTO with
 * BATCH_MAPPED_MAX_DEFAULT); call before any client is mapped.
 */
void batcher_set_copy_mode(batcher_t *b, enum batch_copy_mode mode, size_t mapped_max_bytes);
/*
 * c's requests point into [base, base + bytes), host memory registered with
 * the device (device_host_register): small tensors there are copied by the
 * batch kernels through its device address.  Call once, before c submits;
 * in DMA mode it does nothing.  A client never mapped is copied by DMA.
 */
int batcher_client_map(batcher_t *b, batch_client_t *c, void *base, size_t bytes, char **cause);

/*
 * Inline dispatch (batcher_create starts with it off): when a submission
 * finds its queue's scheduler with nothing to do and the dispatch rule says
 * go now (a free batch context, nobody launching, e.g. the device idle for
 * it), batcher_submit forms and launches the batch on the caller's thread
 * instead of waking the scheduling thread: one thread hand-off less for a
 * lone request.  The caller then spends the launch (host work; on the CPU
 * backend the whole compute) inside batcher_submit.  Call before any queue
 * is attached.
 */
void batcher_set_inline_dispatch(batcher_t *b, int on);

/*
 * Inline completion (on by default): a submitter that launched a batch
 * itself also completes it when the batch has already ended by the time the
 * launch returns (the CPU backend computes at launch) and nothing earlier is
 * still to be completed: the done callbacks then run inside batcher_submit,
 * on the caller's thread, before it returns, so a done callback must not
 * take a lock its submitter holds.  Other batches go to the completion
 * thread.  Call before any queue is attached.
 */
void batcher_set_inline_complete(batcher_t *b, int on);

/*
 * Background contexts (batcher_create starts at auto, -1): with 1, a queue
 * is attached, and its model serves, once its first batch context is built;
 * a thread of its own builds the others (inflight_batches) and adds each to
 * the queue when ready.  0 builds them all before batcher_attach returns;
 * -1 is 1 on a GPU (a context's plans and graph captures take a few hundred
 * milliseconds there) and 0 on the CPU.  Call before any queue is attached.
 */
void batcher_set_background_contexts(batcher_t *b, int mode);
/*
 * The start-up loads have finished: inferd_allocations_after_startup counts
 * device allocations from now, or, while background contexts of start-up
 * models are still being built, from when the last of them is.
 */
void batcher_startup_finish(batcher_t *b);

/*
 * Deferred dispatch, for a thread that takes many submissions in one go
 * (the IPC thread sweeping every client's ring): between
 * batcher_defer_begin and batcher_defer_end (they nest) a submission is
 * queued but not dispatched; batcher_defer_end then dispatches each queue
 * it touched as a submitter would (inline when the rule says go, else by
 * waking its scheduler), so requests taken together form one batch.  The
 * touched queues are pinned meanwhile (a detach waits).
 */
void batcher_defer_begin(void);
void batcher_defer_end(void);

/* Human-readable text of a status (the TEXT column of inferd_outcome.h). */
const char *batch_status_str(enum batch_status s);

#endif
