/* batcher_impl.h: what the batcher's files share: its structures and the calls between them. */
#ifndef INFERD_BATCHER_IMPL_H
#define INFERD_BATCHER_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "batcher.h"

/*
 * One client's queue on one model queue; linked into the queue's round-robin
 * ring while non-empty.  Made on the client's first request to that queue
 * and owned by the queue (freed when the client closes or the queue goes).
 */
struct client_fifo {
	batch_client_t *client;
	struct batch_request *head, *tail;
	int active;
	struct client_fifo *next_active;
	struct client_fifo *next_fifo;		/* the queue's list of fifos */
};

/*
 * A client's state on one device: the copy stream its requests' DMA copies
 * take there, and its mapped region's address as that device sees it.  The
 * first is the batcher's own device, made with the client; one for another
 * device (a model instance there) is made on the client's first request to
 * it, and all live until the client is closed.
 */
struct client_device {
	device_t *dev;
	device_stream_t *stream;
	char *map_dev;			/* NULL when the region is not mapped */
};

struct batch_client {
	batcher_t *batcher;
	char label[64];
	pthread_mutex_t lock;
	pthread_cond_t idle;
	uint64_t outstanding;		/* queued + in flight, all models */
	int closing;
	int unordered;			/* batcher_client_set_unordered: any queued request may be taken */
	char *map_base;			/* batcher_client_map: the region */
	size_t map_bytes;
	struct client_device devs[BATCH_MAX_DEVICES];
	int ndevs;			/* published with release order; entries never change once published */
};

/* One preallocated batch context: buffers, events and the requests it carries. */
struct batch_slot {
	model_exec_t *exec;
	device_event_t **ev_in, **ev_out;	/* one per request position */
	device_event_t *ev_begin, *ev_compute0, *ev_compute1;
	device_copy_table_t *gather, *scatter;	/* mapped tensors: one kernel each way */
	size_t ngather, nscatter;		/* entries of this batch */
	unsigned char *dma_out;			/* per request: 1 when an output went by DMA (ev_out) */
	struct batch_request **reqs;
	int nreqs, rows;
	struct model_shape shape;		/* the dims every request of the batch shares (padded: the bucket's) */
	int padded;				/* some request's dims are shorter than shape's */
	struct model_layout layout;		/* padded: the outputs' dims and row bytes at shape */
	uint64_t seq;
	uint64_t launch_us;			/* host time spent queueing the batch's work */
	uint64_t first_wait_us;			/* how long its first request waited in the queue */
	enum batch_status status;		/* BATCH_OK or why the launch failed */
	char error[256];
	struct batch_slot *next;		/* free list or in-flight FIFO */
};

/* Everything for one model: its queue, its threads and its batch contexts. */
struct model_queue {
	batcher_t *batcher;
	const model_t *model;
	device_t *dev;				/* the model's device: its contexts, streams and events live there */
	struct model_queue *next_queue;		/* the batcher's list (batcher->lock) */
	int pins;				/* batcher_client_close working on it (batcher->lock) */
	int unloading;				/* batcher_detach: refuse with "being unloaded" */
	struct client_fifo *fifos;		/* every client's fifo here (q->lock) */
	uint64_t busy_us;			/* device time of its batches (atomic) */
	struct metrics_model *mm;
	pthread_mutex_t lock;
	pthread_cond_t work;			/* requests arrived, a slot freed, or stopping */
	pthread_cond_t landed;			/* a batch was launched (for the completion thread) */
	pthread_cond_t returned;		/* a batch context came back to the free list (the builder waits on it) */
	struct client_fifo *ring_head, *ring_tail;
	size_t nactive;				/* fifos in the ring */
	size_t queued, queued_rows;
	uint64_t next_deadline;			/* no queued request expires before this */
	struct batch_slot *slots, *free_slots, *inflight_head, *inflight_tail;
	int nslots;
	int nbuilt;				/* slots[0..nbuilt) are built and serve (q->lock); the builder adds the rest */
	int claimed;				/* built contexts the builder holds off the free list (q->lock) */
	int capture_first;			/* slots[0] serves without graphs until the builder captures them */
	int builder_waiting;			/* the builder waits on `returned` (q->lock): only then is it broadcast */
	int graph_rows;				/* rows up to which a context captures graphs */
	pthread_t builder;			/* builds slots[nbuilt..nslots) after the load (batcher_background_contexts) */
	int builder_started;
	device_stream_t *compute;
	void *pad_src[MODEL_MAX_IO];		/* a model that pads: each padded input's pad values for a whole batch (pinned) */
	uint64_t seq;
	int stopping, sched_done;
	int launching;				/* a batch is being formed or launched (by sched_main or a submitter) */
	int completing;				/* a submitter completes the batch it launched (completion thread waits) */
	int draining;				/* the completion thread completes a batch it took off the FIFO */
	pthread_t sched, completion;
	int threads_started;
};

struct batcher {
	device_t *dev;
	struct metrics *metrics;
	int inflight, graph_rows;		/* every queue's batch contexts */
	pthread_mutex_t lock;			/* the queue list, pins, shut */
	pthread_cond_t unpinned;
	struct model_queue *queues;		/* attached queues, newest first */
	device_event_t *ev_epoch;		/* reference point for debug timestamps */
	int shut;
	size_t mapped_max;			/* tensors up to this size go through the batch kernels */
	int busy_clients;			/* clients with a request queued or in flight (atomic) */
	int inline_dispatch;			/* a submitter launches a batch itself when it may */
	int inline_complete;			/* ... and completes it when it has ended by then */
	int background_contexts;		/* batcher_set_background_contexts: -1 auto (GPU), 0 no, 1 yes */
	int building;				/* queues whose builder still runs (lock) */
	int baseline_pending;			/* batcher_startup_finish waits for them (lock) */
	struct request_log *request_log;	/* NULL: off */
};

/* The most rows a batch of m holds: max_batch_size, or 1 for a model without a batch dimension. */
static inline int
model_rows_max(const model_t *m)
{
	return m->max_batch_size > 0 ? m->max_batch_size : 1;
}

/* batcher_queue.c: the fifos and batch formation; every call with q->lock held but take_client_requests. */
/* Append f to q's round-robin ring. */
void batcher_ring_push(struct model_queue *q, struct client_fifo *f);
/* Take the expired requests out of q as a list; sets q->next_deadline to the earliest left. */
struct batch_request *batcher_take_expired(struct model_queue *q, uint64_t now);
/* How many rows q's next batch may hold now, or 0 to wait (until *wake at the latest). */
int batcher_batch_limit(struct model_queue *q, uint64_t now, uint64_t *wake);
/* Take a free slot, fill it with up to limit rows and mark q launching (a slot free). */
struct batch_slot *batcher_take_batch(struct model_queue *q, int limit, uint64_t now);
/* After an enqueue: the batch the submitter launches itself, or NULL with the scheduler woken. */
struct batch_slot *batcher_inline_batch(struct model_queue *q);
/* The fifo of client c on q, or NULL; *prevp gets the link pointing at it. */
struct client_fifo *batcher_fifo_find(struct model_queue *q, const batch_client_t *c,
    struct client_fifo ***prevp);
/* The fifo of client c on q, made on its first request there (NULL: out of memory). */
struct client_fifo *batcher_fifo_get(struct model_queue *q, batch_client_t *c);
/* Unlink req from its client's fifo on q if it is there; 1 when it was. */
int batcher_unqueue(struct model_queue *q, struct batch_request *req);
/* Drop client c's queued requests and its fifo on q (takes q->lock); returns them as a list. */
struct batch_request *batcher_take_client_requests(struct model_queue *q, batch_client_t *c);

/* batcher_clients.c: clients, and telling them a request finished (called without q->lock). */
/* Count a finished request (r may be NULL: a refused submission) in q's metrics. */
void batcher_count(struct model_queue *q, struct batch_request *r, enum batch_status st);
/* Tell r's submitter, count it, and release its client's hold. */
void batcher_finish_request(struct model_queue *q, struct batch_request *r,
    enum batch_status st, const char *error);
/* Finish every request of a detached list with one status. */
void batcher_finish_list(struct model_queue *q, struct batch_request *list,
    enum batch_status st, const char *error);
/* c's state on dev (its copy stream, its region's address there). */
const struct client_device *batcher_client_device(const batch_client_t *c, const device_t *dev);
/* Make c's state on dev if it has none yet. */
int batcher_client_on(batch_client_t *c, device_t *dev, char **cause);

/* batcher_pad.c: batches of requests of different lengths (model_padding.h); calls nothing else here. */
/* Whether a request of shape r may join a batch of shape batch: dims equal, or the padded one in its bucket. */
int batcher_pad_agrees(const model_t *m, const struct model_shape *batch, const struct model_shape *r);
/* Turn the first request's shape into its batch's: the padded dim at its bucket. */
void batcher_pad_shape(const model_t *m, struct model_shape *s);
/* Whether input k of request r has other dims than the batch's. */
int batcher_pad_input(const model_t *m, const struct batch_request *r, const struct model_shape *batch, int k);
/* Queue input k of r into the batch at dst on cs: pad values, then each row's own elements. */
int batcher_pad_copy_in(struct model_queue *q, device_stream_t *cs, const struct batch_request *r,
    const struct model_shape *batch, int k, char *dst, char **cause);
/* Add r's padded and run positions of the padded dim in the batch, over its rows. */
void batcher_pad_count(const model_t *m, const struct batch_request *r, const struct model_shape *batch,
    uint64_t *pad, uint64_t *run);
/* Whether output o of request r has other dims than the batch's layout. */
int batcher_pad_output(const model_t *m, const struct batch_request *r, const struct model_layout *batch, int o);
/* Queue output o of r from the batch (src: its first row) on cs, sliced to its own dims. */
int batcher_pad_copy_out(const model_t *m, device_stream_t *cs, const struct batch_request *r,
    const struct model_layout *batch, int o, const char *src, char **cause);
/* s->layout at s's padded shape, checked to hold every request's own outputs. */
int batcher_pad_layout(const model_t *m, struct batch_slot *s, char **cause);
/* q's pinned pad values (none for a model that does not pad); batcher_pad_free frees them. */
int batcher_pad_create(struct model_queue *q, char **cause);
void batcher_pad_free(struct model_queue *q);

/* batcher_contexts.c: a queue's batch contexts (q->slots) and their builder. */
/* Allocate inflight contexts, build the first (every one when not in the background); q->compute exists. */
int batcher_contexts_create(struct model_queue *q, int inflight, char **cause);
/* Start the thread that builds the rest, if any (after the queue's own threads). */
int batcher_contexts_start_builder(struct model_queue *q, char **cause);
/* Join the builder (q->stopping set: it stops after the context it is building). */
void batcher_contexts_join_builder(struct model_queue *q);
/* Free every context and the array (the builder joined). */
void batcher_contexts_free(struct model_queue *q);

/* batcher_launch.c: launch and completion, a queue's threads, creating and destroying a queue. */
/* Launch a formed batch outside the lock (q->launching set; cleared here); submitter: not sched_main. */
void batcher_dispatch(struct model_queue *q, struct batch_slot *s, int submitter);
/* Set up one model's queue: lock, conds, compute stream, batch contexts, threads. */
int batcher_queue_create(batcher_t *b, struct model_queue *q, const model_t *m,
    int inflight, int graph_rows, char **cause);
/* Stop q's threads after draining, then free its resources and q itself. */
void batcher_queue_destroy(struct model_queue *q);

#endif
