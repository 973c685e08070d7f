/*
 * libinferd_impl.h: libinferd's private types and helpers, shared by its files.
 *
 * Dependencies point one way, each file calling only files below it:
 *   libinferd.c (connect, close, model lookups), inferd_async.c (callbacks)
 *   inferd_requests.c (submit, wait, run, infer), inferd_output_dims.c
 *   inferd_reconnect.c (a new daemon, the same region)
 *   inferd_wait_engine.c (reaping completions, sleeping on the ring)
 *   inferd_ring.c (the rings and request records), inferd_tensors.c
 *   inferd_models.c (metadata), inferd_conn.c (the control socket)
 *   inferd_alloc.c (the region's allocator), inferd_error.c (codes, texts)
 * tests/helpers/check_layering.py checks it.  Helpers shared between files
 * are named inferd__* and are hidden (the library exports only
 * INFERD_EXPORT symbols).
 */
#ifndef LIBINFERD_IMPL_H
#define LIBINFERD_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "inferd.h"
#include "inferd_wire.h"

/* A free extent of the data area. */
struct inferd_extent {
	uint64_t offset, bytes;
};

/* How a request's completion is delivered. */
enum inferd__kind {
	INFERD__STASH,			/* inferd_submit: kept for inferd_wait */
	INFERD__SYNC,			/* inferd_infer / inferd_run: its waiter reads the record */
	INFERD__CALLBACK,		/* inferd_submit_cb: run on the completion thread */
	INFERD__HANDLE,			/* inferd_submit_handle: stored in the handle */
	INFERD__DISCARD,		/* its handle was freed first: dropped */
};

/*
 * What the client remembers of a request on the wire, indexed by the low
 * 32 bits of its wire user_data; the high 32 bits are gen, so a CANCEL or a
 * completion can never be taken for a later request in the same record.
 */
struct inferd_record {
	uint64_t user_data;
	const char *id;			/* the request's, echoed in its completion */
	uint32_t gen;
	int used;			/* on the wire, or completed and not yet delivered */
	enum inferd__kind kind;
	int done, status;		/* set when the request completes */
	uint32_t detail;		/* the daemon's reason for an invalid request */
	inferd_callback_fn cb;
	void *cb_user;
	struct inferd_handle *handle;
	int next_free;
};

/* A request submitted with inferd_submit_handle; its fields are under the connection's lock. */
struct inferd_handle {
	inferd_conn_t *conn;
	int record;			/* -1 once completed */
	uint64_t wire;			/* its wire user_data */
	int done;
	struct inferd_completion completion;
};

/* Answers of OUTPUT_DIMS a connection keeps: its last few shapes, whatever their models. */
#define INFERD__DIMS_CACHE 16

/* One OUTPUT_DIMS answer: model m's output dims for rows and its inputs' dims. */
struct inferd__dims_entry {
	const struct inferd_model *model;	/* NULL: empty */
	int rows;
	uint32_t epoch;			/* the connection's dims_epoch when asked */
	uint64_t used;			/* LRU time */
	int64_t in[INFERD_WIRE_MAX_TENSORS][8];	/* by input index, zero past each ndims */
	int64_t out[INFERD_WIRE_MAX_TENSORS][8];	/* by output index */
};

/*
 * Threads: lock guards the rings, records, stash, callback queue and the
 * flags below it; alloc_lock the allocator (taken inside lock, never the
 * other way round); control_lock the control socket, the model cache and
 * the output-dims cache.
 * At most one thread at a time waits on the completion ring (polling):
 * it spins for spin_us, then sleeps in FUTEX_WAIT on the region's cq_wake
 * word (see inferd_wire.h); the others sleep on cond and are woken whenever
 * completions were reaped.
 */
struct inferd_conn {
	pthread_mutex_t lock, alloc_lock, control_lock;
	pthread_cond_t cond;		/* completions reaped, polling given up, stopping */
	int polling;			/* a thread waits on the completion ring (spins, then sleeps on its futex) */
	int spin_us;			/* the options': spin this long before sleeping */
	int fd_mode;			/* inferd_fd was called: ask the daemon for a byte on the doorbell socket */
	int stopping;			/* inferd_close: the completion thread must end */
	int thread_started;
	pthread_t thread;		/* the completion thread, started by the first inferd_submit_cb */
	int *cbq;			/* records whose callback is due, a FIFO of cq_entries */
	unsigned cbq_head, ncbq;
	uint32_t gen;

	int reconnect, reconnect_max_ms;	/* the options' */
	char *socket_path;		/* to reconnect to; NULL without reconnect */
	int region_fd;			/* the region's memfd, kept to hand over again; -1 without reconnect */
	struct inferd_model **retired;	/* models gone after a reconnect, freed at close */
	size_t nretired;

	int control_fd;
	int submit_fd;			/* eventfd: we write after publishing, while the daemon sleeps */
	int doorbell_fd;		/* our end of the socketpair the daemon writes to (inferd_fd) */
	int timeout_ms;
	int closed;			/* the daemon went away */

	uint8_t *base;
	uint64_t region_bytes;
	uint32_t sq_entries, cq_entries;
	struct inferd_wire_layout layout;
	struct inferd_wire_header *hdr;
	struct inferd_wire_sqe *sq;
	struct inferd_wire_cqe *cq;
	uint32_t sq_tail, cq_head;	/* our copies */
	unsigned inflight;		/* on the wire, not yet reaped */
	unsigned nstash_wire;		/* of those, inferd_submit's (bound for the stash) */

	struct inferd_record *records;	/* cq_entries */
	int free_record;
	struct inferd_completion *stash; /* reaped by inferd_infer for inferd_wait; cq_entries */
	unsigned stash_head, nstash;

	unsigned nmodels;		/* ids known: the hello's count, raised by later lookups */
	unsigned models_cap;		/* room in models: ids the daemon gives later (a model loaded since) fit */
	struct inferd_model **models;	/* by id, fetched on demand */

	struct inferd__dims_entry *dims_cache;	/* INFERD__DIMS_CACHE entries, on first use */
	uint64_t dims_clock;		/* the cache's LRU time */
	/*
	 * Bumped (atomically, under lock) when the daemon refused a request's
	 * dims (a model reloaded with other shapes makes cached answers stale)
	 * and on a reconnect: entries of an older epoch are asked again.
	 */
	uint32_t dims_epoch;

	struct inferd_extent *extents;	/* free list, sorted by offset */
	size_t nextents, extents_cap;
	struct inferd_tensor lists;	/* list-form tensor lists, one per submission entry; on first use */
};

/* A list-form request as the wire carries it: inputs, then outputs. */
struct inferd__list {
	uint32_t ninputs, noutputs;
	struct inferd_wire_tensor t[2 * INFERD_WIRE_MAX_TENSORS];
};

/* inferd_error.c: record a failure's message for inferd_last_error(); returns code. */
int inferd__fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* inferd_error.c: empty inferd_last_error()'s message (on entry to each public function returning a code). */
void inferd__clear_error(void);
/* inferd_error.c: the daemon is gone: mark c closed, return INFERD_ECLOSED. */
int inferd__closed(inferd_conn_t *c);
/* inferd_error.c: the library code of a wire status. */
int inferd__status_code(int32_t status);

/* The sizes of the caller-filled structs in this release (freeze each when a field is added). */
#define INFERD__OPTIONS_SIZE_0_1 offsetof(struct inferd_options, reconnect)
#define INFERD__OPTIONS_SIZE_0_3 sizeof(struct inferd_options)
#define INFERD__REQUEST_SIZE_0_1 offsetof(struct inferd_request, ninputs)
#define INFERD__REQUEST_SIZE_0_2 offsetof(struct inferd_request, id)
#define INFERD__REQUEST_SIZE_0_3 sizeof(struct inferd_request)

/* A size field above this holds no struct size (every struct of inferd.h is far smaller). */
#define INFERD_STRUCT_SIZE_MAX 4096u

/*
 * Copy a caller's struct of caller_size bytes into *dst (known bytes, zeroed
 * first): INFERD_EINVAL when caller_size is below min, above
 * INFERD_STRUCT_SIZE_MAX (a positional initialiser put another value in
 * size) or covers unknown non-zero bytes (a newer caller asking for
 * something this library lacks).
 */
int inferd__struct_copy(void *dst, size_t known, size_t min, const void *src,
    size_t caller_size, const char *what);

/* Monotonic milliseconds, the one clock of the library. */
static inline int64_t
inferd__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* inferd_alloc.c: the free list of the data area. */
int inferd__alloc_init(inferd_conn_t *c);

/* inferd_tensors.c: a model tensor from MODEL_INFO (-1 when malformed); the list form. */
int inferd__tensor_info(const struct inferd_wire_tensor_info *w, struct inferd_tensor_info *t);
int inferd__list_build(const inferd_conn_t *c, const struct inferd_request *r, struct inferd__list *l);
int inferd__list_place(inferd_conn_t *c, uint32_t slot, const struct inferd__list *l, uint64_t *offset);
/* inferd_tensors.c: every input's dims of a list naming each input of m once, by input index (zero-padded). */
int inferd__inputs_dims(const struct inferd_model *m, const struct inferd_io *ios, int n, int64_t (*in)[8]);
/*
 * inferd_output_dims.c: a list-form request with an output given without
 * dims that only the daemon can compute: r->outputs pointed at outs
 * (INFERD_WIRE_MAX_TENSORS of them), a copy with the dims filled.
 */
int inferd__outputs_resolve(inferd_conn_t *c, struct inferd_request *r, struct inferd_io *outs);
/* inferd_tensors.c: 1 when tensor t lies inside this connection's data area with at least need bytes. */
int inferd__tensor_ok(const inferd_conn_t *c, const struct inferd_tensor *t, uint64_t need);

/* inferd_alloc.c: inferd_tensor_alloc with alloc_lock held by the caller. */
int inferd__alloc_locked(inferd_conn_t *c, size_t bytes, struct inferd_tensor *t);

/* inferd_ring.c: the words for a wire detail code ("" for none). */
const char *inferd__detail_text(uint32_t detail);
/* inferd_ring.c: the rings and request records. */
int inferd__ring_init(inferd_conn_t *c);
void inferd__ring_free(inferd_conn_t *c);
/*
 * inferd_requests.c: check and copy a caller's request into *dst; outputs whose
 * dims the daemon computes are filled in outs (INFERD_WIRE_MAX_TENSORS),
 * which dst->outputs then points at: keep it until the request is pushed.
 */
int inferd__request_copy(inferd_conn_t *c, const struct inferd_request *r, struct inferd_request *dst,
    struct inferd_io *outs);
/* inferd_ring.c: publish a checked request (lock held); its record index or a negative code. */
int inferd__push(inferd_conn_t *c, const struct inferd_request *r, enum inferd__kind kind);
/* inferd_ring.c: return record idx to the free list (lock held). */
void inferd__record_release(inferd_conn_t *c, int idx);
/* inferd_ring.c: the wire user_data of record idx. */
uint64_t inferd__wire_id(const inferd_conn_t *c, int idx);

/*
 * inferd_wait_engine.c: with lock held, wait until ready(c, arg) is true
 * (1), deadline (monotonic ms, -1 none) passes (0), or the daemon is gone
 * (INFERD_ECLOSED, after every request on the wire was completed with
 * INFERD_ECLOSED).  Reaps completions on the way, waiting on the ring
 * (spin, then futex) when no other thread does.
 */
int inferd__await(inferd_conn_t *c, int (*ready)(inferd_conn_t *, void *), void *arg, int64_t deadline);
/* inferd_wait_engine.c: wake the thread asleep on the completion ring (inferd_close, reconnect). */
void inferd__wake_poller(inferd_conn_t *c);
/* inferd_ring.c: ring the submission doorbell if the daemon asks for it (after publishing). */
void inferd__ring_doorbell(inferd_conn_t *c);
/* inferd_wait_engine.c: make the lock and conds; release them. */
int inferd__sync_init(inferd_conn_t *c);
void inferd__sync_free(inferd_conn_t *c);
/* inferd_conn.c: send one control message (descriptors when fds is not NULL); receive one of type want. */
int inferd__send(int fd, uint32_t type, const void *payload, size_t len, const int *fds, int nfds);
int inferd__recv(int fd, uint32_t want, uint8_t **payload, uint32_t *len, int timeout_ms);
/* inferd_conn.c: the steps of connecting (libinferd.c), and of connecting again (inferd_reconnect.c). */
int inferd__dial(const char *path, int *out);
int inferd__server_hello(inferd_conn_t *c, struct inferd_wire_server_hello *h);
int inferd__geometry(inferd_conn_t *c, const struct inferd_options *o, const struct inferd_wire_server_hello *h);
int inferd__region(inferd_conn_t *c, int *memfd);
int inferd__attach(inferd_conn_t *c, int memfd);
/* inferd_models.c: ask the daemon for a model by name (and version, 0: the newest) or id; cache it (control_lock held). */
int inferd__model_query(inferd_conn_t *c, const char *name, int64_t version, unsigned id,
    const struct inferd_model **out);
/* inferd_models.c: fetch a model's metadata into *out. */
int inferd__model_fetch(inferd_conn_t *c, const char *name, int64_t version, unsigned id,
    struct inferd_model **out);
/* Room for the model cache: the daemon's count, at least INFERD__MODELS_MIN (models load later). */
#define INFERD__MODELS_MIN 4096u
unsigned inferd__models_cap(unsigned nmodels);
/*
 * inferd_reconnect.c: with the reconnect option, when the daemon has gone
 * away, connect again and hand the same region over (0); otherwise 0 and
 * nothing done.  Takes control_lock and lock itself.
 */
int inferd__reconnect_if_needed(inferd_conn_t *c);
void inferd__retired_free(inferd_conn_t *c);
/* inferd_wait_engine.c: the daemon is gone (lock held): complete everything with ECLOSED. */
void inferd__complete_all_closed(inferd_conn_t *c);
/* inferd_async.c: stop and join the completion thread (inferd_close). */
void inferd__async_stop(inferd_conn_t *c);

#endif
