/*
 * inferd_wire.h: the wire layout shared by libinferd and the daemon — control
 * messages over the Unix socket and the rings in the client's shared memory.
 *
 * Private to libinferd and the daemon (and the tests that speak the wire by
 * hand): it is not installed, and applications use inferd.h.  The protocol is
 * versioned as a whole by INFERD_PROTOCOL_VERSION, which both hellos carry;
 * any incompatible change to a message or the region layout bumps it, and a
 * daemon refuses a client of another version.  libinferd and the daemon of
 * one release always speak the same version.
 *
 * Everything here is little-endian host layout between processes of one
 * machine.  The daemon trusts none of it: every message length is checked,
 * every descriptor is copied out of shared memory once and validated before
 * use, and ring indices read from shared memory are bounds-checked.
 */
#ifndef INFERD_WIRE_H
#define INFERD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "inferd_outcome.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change to this file. */
#define INFERD_PROTOCOL_VERSION 5
/* "INFD" as a little-endian u32: first field of both hellos. */
#define INFERD_WIRE_MAGIC 0x44464e49u

/*
 * Control channel: a stream of messages, each a header then exactly
 * `length` bytes of payload.  A peer that sends a message whose length does
 * not match its type, an unknown type, or a message out of turn is dropped.
 *
 * Conversation:
 *   daemon  -> SERVER_HELLO (or ERROR, then close: not allowed, too many clients)
 *   client  -> CLIENT_HELLO + SCM_RIGHTS { region memfd, submit eventfd, completion socket }
 *   daemon  -> READY (or ERROR, then close)
 *   then any number of MODEL_QUERY -> MODEL_INFO | ERROR (the connection stays up),
 *   of OUTPUT_DIMS -> OUTPUT_DIMS_REPLY | ERROR (NO_MODEL or SHAPE; the connection stays up)
 *   and of CANCEL (no reply: the request's completion says what became of it)
 * The client leaves by closing the socket; the daemon then releases the region.
 */
struct inferd_wire_msg {
	uint32_t type;			/* enum inferd_wire_type */
	uint32_t length;		/* payload bytes that follow */
};

enum inferd_wire_type {
	INFERD_WIRE_SERVER_HELLO = 1,
	INFERD_WIRE_CLIENT_HELLO = 2,
	INFERD_WIRE_READY = 3,
	INFERD_WIRE_ERROR = 4,
	INFERD_WIRE_MODEL_QUERY = 5,
	INFERD_WIRE_MODEL_INFO = 6,
	INFERD_WIRE_CANCEL = 7,		/* since protocol 3 */
	INFERD_WIRE_OUTPUT_DIMS = 8,	/* since protocol 5 */
	INFERD_WIRE_OUTPUT_DIMS_REPLY = 9,	/* since protocol 5 */
};

/*
 * Largest payload the daemon accepts from a client: an OUTPUT_DIMS naming
 * INFERD_WIRE_MAX_TENSORS inputs (a MODEL_QUERY is at most 143 bytes).
 */
#define INFERD_WIRE_MAX_CLIENT_PAYLOAD 1168
/* Largest payload a client accepts from the daemon (MODEL_INFO with labels). */
#define INFERD_WIRE_MAX_SERVER_PAYLOAD (1024 * 1024)
/* File descriptors passed with CLIENT_HELLO, in this order. */
#define INFERD_WIRE_HELLO_FDS 3

/* Sent by the daemon on accept. */
struct inferd_wire_server_hello {
	uint32_t magic;			/* INFERD_WIRE_MAGIC */
	uint32_t version;		/* INFERD_PROTOCOL_VERSION */
	uint64_t max_region_bytes;	/* the largest region the daemon maps */
	uint32_t max_entries;		/* the largest ring the daemon accepts */
	uint32_t nmodels;		/* models with ids 0 .. nmodels-1 */
};

/*
 * Sent by the client, with three descriptors (SCM_RIGHTS):
 *  0: the region, a memfd of at least region_bytes sealed with at least
 *     F_SEAL_SHRINK (so it cannot shrink under the daemon's mapping);
 *  1: an eventfd the client writes after publishing submissions, while
 *     the daemon asks for it (INFERD_WIRE_SQ_NEED_WAKEUP);
 *  2: one end of a socketpair the daemon writes a byte to (MSG_DONTWAIT)
 *     after publishing completions, only while the client asks for it
 *     (INFERD_WIRE_WAKE_SOCKET: an event loop polling that descriptor).
 *     A socket rather than an eventfd: a send can be made non-blocking per
 *     call, whereas an eventfd shares its O_NONBLOCK flag with the client,
 *     who could clear it and saturate the counter to stall the daemon's
 *     completion thread.
 */
struct inferd_wire_client_hello {
	uint32_t magic;
	uint32_t version;
	uint64_t region_bytes;
	uint32_t sq_entries;		/* power of two, 1 .. max_entries */
	uint32_t cq_entries;		/* power of two, sq_entries .. max_entries */
};

/* The daemon mapped the region and serves it. */
struct inferd_wire_ready {
	uint64_t data_offset;		/* start of the data area (equals the layout's) */
	uint32_t nmodels;
	uint32_t reserved;
};

/* Why the daemon refused something; followed by a NUL-terminated message. */
enum inferd_wire_error {
	INFERD_WIRE_ERR_PROTOCOL = 1,	/* bad magic, version, length or sequence */
	INFERD_WIRE_ERR_DENIED = 2,	/* user not in allow_users / allow_groups */
	INFERD_WIRE_ERR_TOO_MANY = 3,	/* max_clients reached */
	INFERD_WIRE_ERR_REGION = 4,	/* region unsealed, too small, too large, unmappable */
	INFERD_WIRE_ERR_NO_MODEL = 5,	/* MODEL_QUERY names no loaded model */
	INFERD_WIRE_ERR_SHUTDOWN = 6,	/* the daemon is stopping */
	INFERD_WIRE_ERR_INTERNAL = 7,
	INFERD_WIRE_ERR_SHAPE = 8,	/* OUTPUT_DIMS: the model cannot take these rows or input dims (since protocol 5) */
};

struct inferd_wire_error_msg {
	int32_t code;			/* enum inferd_wire_error */
	uint32_t reserved;
	/* char message[]: NUL-terminated, the rest of the payload */
};

/*
 * Ask for a model by name (name_length > 0) or else by id.  After the name
 * an int64 version may follow (8 more bytes, native order): that version
 * gets an id of its own; without it (or 0) the id means the newest loaded
 * version, and stays the name's id across reloads.
 */
struct inferd_wire_model_query {
	uint32_t id;
	uint32_t name_length;		/* bytes of name that follow, no NUL; < 128 */
};

/*
 * Cancel the accepted request whose submission carried user_data, if the
 * batcher still holds it queued: it completes at once with
 * INFERD_WIRE_CANCELLED.  A request already in a batch (or finished, or
 * unknown) is left alone and completes as usual.  The daemon first takes
 * whatever submissions the completion ring has room for, so a request
 * published before the CANCEL is found.  user_data should be unique among
 * the client's requests in flight (libinferd adds a generation).
 */
struct inferd_wire_cancel {
	uint64_t user_data;
};

#define INFERD_WIRE_MAX_DIMS 8
#define INFERD_WIRE_NAME_MAX 128

/* One tensor's non-batch dims in OUTPUT_DIMS and its reply. */
struct inferd_wire_dims {
	uint32_t ndims;			/* 0 .. INFERD_WIRE_MAX_DIMS */
	uint32_t reserved;		/* 0 */
	int64_t dims[INFERD_WIRE_MAX_DIMS];	/* the first ndims; the rest 0 */
};

/*
 * Ask for the dims of every output of model_id for a request of rows rows
 * whose inputs have the dims that follow: ninputs struct inferd_wire_dims,
 * by the model's input index, exactly filling the rest of the payload.
 * The daemon checks them as a list-form submission's (rows 1 ..
 * max_batch_size, or 1 without a batch dimension; every input's ndims and
 * dims as the model takes them) and evaluates the model's output-shape
 * functions; the reply's dims are exactly those a submission of that shape
 * must give its outputs.  A count above INFERD_WIRE_MAX_TENSORS or
 * INFERD_WIRE_MAX_DIMS, a reserved field or a dim past ndims not 0, or a
 * length that does not match gets the client dropped (ERR_PROTOCOL); an id
 * naming no loaded model is ERR_NO_MODEL; rows, inputs or dims the model
 * does not take (or a node of its graph cannot: a Reshape that does not
 * divide) are ERR_SHAPE, whose message names the input and dim or the node.
 */
struct inferd_wire_output_dims_query {
	uint32_t model_id;
	uint32_t rows;
	uint32_t ninputs;		/* 1 .. INFERD_WIRE_MAX_TENSORS: the model's inputs */
	uint32_t reserved;		/* 0 */
};

/* The reply: noutputs struct inferd_wire_dims follow, by output index (every output of the model). */
struct inferd_wire_output_dims_reply {
	uint32_t model_id;
	uint32_t noutputs;		/* 1 .. INFERD_WIRE_MAX_TENSORS */
};

/*
 * A model's metadata.  Followed by ninputs + noutputs struct
 * inferd_wire_tensor_info (inputs first), then nlabels NUL-terminated class
 * names, exactly filling the rest of the payload (labels are left out when
 * they would not fit in INFERD_WIRE_MAX_SERVER_PAYLOAD).  The input_* and
 * output_* fields describe input 0 and output 0 (datatype their datatype).
 */
struct inferd_wire_model_info {
	uint32_t id;			/* what submissions carry */
	uint32_t max_batch_size;
	uint32_t datatype;		/* enum inferd_wire_datatype of input 0 */
	uint32_t nlabels;
	char name[INFERD_WIRE_NAME_MAX];
	char input_name[INFERD_WIRE_NAME_MAX];
	char output_name[INFERD_WIRE_NAME_MAX];
	uint32_t input_ndims, output_ndims;
	int64_t input_dims[INFERD_WIRE_MAX_DIMS];	/* without the batch dimension */
	int64_t output_dims[INFERD_WIRE_MAX_DIMS];
	uint64_t input_row_bytes, output_row_bytes;	/* 0 when a dim is variable */
	uint32_t ninputs, noutputs;	/* 1 .. INFERD_WIRE_MAX_TENSORS each */
};

/* Tensors per side of a model and of a submission. */
#define INFERD_WIRE_MAX_TENSORS 16

/* One input or output of a model. */
struct inferd_wire_tensor_info {
	char name[INFERD_WIRE_NAME_MAX];	/* NUL-terminated */
	uint32_t datatype;		/* enum inferd_wire_datatype */
	uint32_t ndims;			/* without the batch dimension */
	int64_t dims[INFERD_WIRE_MAX_DIMS];	/* -1: variable */
	int64_t max_dims[INFERD_WIRE_MAX_DIMS];	/* the largest each dim may be */
	/*
	 * Outputs: where each variable dim comes from, input * 256 + its dim
	 * (the output's dim equals that input dim), or -2 when it follows from
	 * the inputs some other way; -1 for fixed dims and for inputs.
	 */
	int32_t follows[INFERD_WIRE_MAX_DIMS];
};

/* Element types: the KServe names FP32, FP16, INT64, INT32, INT8, UINT8, BOOL (one byte, 0 or 1). */
enum inferd_wire_datatype {
	INFERD_WIRE_FP32 = 1,
	INFERD_WIRE_FP16 = 2,
	INFERD_WIRE_INT64 = 3,
	INFERD_WIRE_INT32 = 4,
	INFERD_WIRE_INT8 = 5,
	INFERD_WIRE_UINT8 = 6,
	INFERD_WIRE_BOOL = 7,
};

/*
 * The region.  Its geometry is fixed by CLIENT_HELLO (region_bytes,
 * sq_entries, cq_entries) through inferd_wire_layout(); the daemon never
 * reads geometry back from shared memory.
 *
 *   [0, 512)                   struct inferd_wire_header (ring indices)
 *   [sq_offset, +sq*64)        submission entries
 *   [cq_offset, +cq*16)        completion entries
 *   [data_offset, region_bytes) the data area: tensors, 4096-aligned start
 *
 * Indices are free-running u32 counters (slot = index & (entries - 1)).
 * Submission ring: the client writes entries and then stores sq_tail with
 * release order; the daemon loads sq_tail with acquire order, copies each
 * entry out, and stores sq_head with release order once the slot may be
 * reused.  Completion ring: the daemon writes entries and stores cq_tail
 * (release); the client loads cq_tail (acquire), reads entries, stores
 * cq_head (release).
 *
 * Doorbells, as io_uring has them, so that a busy connection makes no
 * system call per request:
 *  - Submissions.  After activity the daemon polls the rings for a short
 *    time (shm_poll_us); before it sleeps it sets INFERD_WIRE_SQ_NEED_WAKEUP
 *    in sq_flags, issues a full fence and looks at every sq_tail once more.
 *    The client stores sq_tail, issues a full fence, then loads sq_flags and
 *    writes 1 to the submit eventfd only when NEED_WAKEUP is set.  One of
 *    the two always sees the other's store: no wake-up is lost.
 *  - Completions.  A client thread about to sleep sets INFERD_WIRE_WAKE_FUTEX
 *    in cq_wake (atomic or), issues a full fence, looks at cq_tail once more,
 *    then waits with FUTEX_WAIT (shared, not private) on cq_wake for the
 *    value it set.  The daemon stores cq_tail, issues a full fence, and when
 *    cq_wake is not 0 exchanges it for 0 and acts on the bits it held:
 *    WAKE_FUTEX: FUTEX_WAKE on cq_wake; WAKE_SOCKET: one byte on the
 *    completion socket.  So a client that stays awake (spinning on cq_tail)
 *    costs no system call, and completions landing together while it sleeps
 *    wake it once.  The daemon also wakes cq_wake when it lets the client go.
 *  The daemon trusts neither word: a client that sets or clears them at
 *  will only delays or wakes itself.
 *
 * Flow control: the daemon takes a submission only while its completion is
 * sure to fit (requests in flight + unread completions < cq_entries); a
 * submission left in the ring is taken at the next doorbell, so a client
 * that frees completion slots with submissions pending rings the doorbell
 * (when NEED_WAKEUP is set, as after publishing).
 * A tail more than the ring size ahead of its head gets the client
 * disconnected.
 */
struct inferd_wire_header {
	uint32_t magic;			/* written by the client, informational */
	uint32_t version;
	uint32_t sq_entries, cq_entries;
	uint8_t pad0[48];
	uint32_t sq_head;		/* daemon writes */
	uint8_t pad1[60];
	uint32_t sq_tail;		/* client writes */
	uint8_t pad2[60];
	uint32_t cq_head;		/* client writes */
	uint8_t pad3[60];
	uint32_t cq_tail;		/* daemon writes */
	uint8_t pad4[60];
	uint32_t sq_flags;		/* daemon writes: INFERD_WIRE_SQ_* (since protocol 4) */
	uint8_t pad5[60];
	uint32_t cq_wake;		/* both: INFERD_WIRE_WAKE_*, the futex word (since protocol 4) */
	uint8_t pad6[124];
};

/* sq_flags: the daemon sleeps; write the submit eventfd after publishing. */
#define INFERD_WIRE_SQ_NEED_WAKEUP 1u
/* cq_wake: a thread sleeps in FUTEX_WAIT on cq_wake. */
#define INFERD_WIRE_WAKE_FUTEX 1u
/* cq_wake: send a byte on the completion socket (an event loop polls it). */
#define INFERD_WIRE_WAKE_SOCKET 2u

/*
 * A submission, in one of two forms.  Offsets are from the start of the
 * region, and every tensor must lie inside the data area and be 4-byte
 * aligned.
 *  - single (flags 0): one FP32 input and one output, each exactly rows
 *    times the model's row bytes, for a model of one input with fixed dims
 *    and one output;
 *  - list (flags INFERD_WIRE_SQE_LIST, datatype 0): ninputs + noutputs
 *    struct inferd_wire_tensor at list_offset (8-byte aligned, inside the
 *    data area), inputs first: every input of the model once, and the
 *    outputs wanted (at least one), each at most once.  The daemon copies
 *    the list out of shared memory when it takes the submission, so the
 *    list may be reused as soon as sq_head has passed the entry.
 */
#define INFERD_WIRE_SQE_LIST 1u

struct inferd_wire_sqe {
	uint64_t user_data;		/* echoed in the completion */
	uint32_t model_id;
	uint32_t datatype;		/* single: INFERD_WIRE_FP32; list: 0 */
	uint32_t rows;			/* 1 .. max_batch_size */
	uint32_t flags;			/* 0 or INFERD_WIRE_SQE_LIST */
	union {
		struct {		/* single form */
			uint64_t input_offset, input_bytes;
			uint64_t output_offset, output_bytes;
		};
		struct {		/* list form */
			uint64_t list_offset;
			uint32_t ninputs, noutputs;
			uint64_t list_reserved[2];	/* 0 */
		};
	};
	uint64_t timeout_us;		/* 0: the model's default */
};

/*
 * One tensor of a list-form submission.  ndims and dims are the non-batch
 * dims: an input's are checked against the model's (fixed dims equal,
 * variable ones in 1 .. their maximum); an output's must be the dims the
 * inputs make.  bytes is exactly rows times the row bytes of those dims.
 */
struct inferd_wire_tensor {
	uint32_t index;			/* the model's input (or output) index */
	uint32_t datatype;		/* the model's, enum inferd_wire_datatype */
	uint32_t ndims;			/* the model's */
	uint32_t reserved;		/* 0 */
	int64_t dims[INFERD_WIRE_MAX_DIMS];
	uint64_t offset, bytes;
};

/* What became of a submission: the CODE column of inferd_outcome.h. */
#define INFERD_WIRE_STATUS_ENUM(name, code, err, http, label, text, ctext) INFERD_WIRE_##name = (code),
enum inferd_wire_status {
	INFERD_OUTCOME_MAP(INFERD_WIRE_STATUS_ENUM)
};
#undef INFERD_WIRE_STATUS_ENUM

/* For INFERD_WIRE_INVALID: which check failed. */
enum inferd_wire_detail {
	INFERD_WIRE_DETAIL_NONE = 0,
	INFERD_WIRE_DETAIL_MODEL = 1,	/* unknown model id */
	INFERD_WIRE_DETAIL_DATATYPE = 2,
	INFERD_WIRE_DETAIL_ROWS = 3,	/* rows outside 1 .. max_batch_size */
	INFERD_WIRE_DETAIL_LENGTH = 4,	/* a length is not rows x row bytes */
	INFERD_WIRE_DETAIL_RANGE = 5,	/* a tensor outside the data area, or overflowing */
	INFERD_WIRE_DETAIL_ALIGN = 6,	/* an offset not 4-byte aligned */
	INFERD_WIRE_DETAIL_FLAGS = 7,	/* unknown flags */
	INFERD_WIRE_DETAIL_TENSORS = 8,	/* list form: a count, index or reserved field wrong, a tensor twice */
	INFERD_WIRE_DETAIL_DIMS = 9,	/* list form: an input's dims outside what the model takes */
	INFERD_WIRE_DETAIL_UNLOADED = 10,	/* the model id's model was unloaded (or is not loaded) */
};

struct inferd_wire_cqe {
	uint64_t user_data;
	int32_t status;			/* enum inferd_wire_status */
	uint32_t detail;		/* enum inferd_wire_detail */
};

/* The largest ring either side accepts. */
#define INFERD_WIRE_MAX_ENTRIES 4096u
/* Tensors are 4-byte aligned; the data area starts page aligned. */
#define INFERD_WIRE_TENSOR_ALIGN 4u
#define INFERD_WIRE_DATA_ALIGN 4096u

/* Where the parts of a region lie. */
struct inferd_wire_layout {
	uint64_t sq_offset, cq_offset, data_offset;
};

/*
 * Compute the layout for a geometry; 0 when the geometry is valid (entry
 * counts powers of two with sq <= cq <= INFERD_WIRE_MAX_ENTRIES and a data
 * area of at least one aligned page), -1 otherwise.
 */
static inline int
inferd_wire_layout(uint64_t region_bytes, uint32_t sq_entries, uint32_t cq_entries,
    struct inferd_wire_layout *l)
{
	uint64_t end;

	if (sq_entries == 0 || cq_entries == 0 || (sq_entries & (sq_entries - 1)) != 0 ||
	    (cq_entries & (cq_entries - 1)) != 0 || sq_entries > cq_entries ||
	    cq_entries > INFERD_WIRE_MAX_ENTRIES)
		return -1;
	l->sq_offset = sizeof(struct inferd_wire_header);
	l->cq_offset = l->sq_offset + (uint64_t)sq_entries * sizeof(struct inferd_wire_sqe);
	end = l->cq_offset + (uint64_t)cq_entries * sizeof(struct inferd_wire_cqe);
	l->data_offset = (end + INFERD_WIRE_DATA_ALIGN - 1) / INFERD_WIRE_DATA_ALIGN *
	    INFERD_WIRE_DATA_ALIGN;
	if (region_bytes < l->data_offset + INFERD_WIRE_DATA_ALIGN)
		return -1;
	return 0;
}

/* The layout is part of the protocol: pin the sizes. */
#ifndef __cplusplus
_Static_assert(sizeof(struct inferd_wire_msg) == 8, "wire: msg header");
_Static_assert(sizeof(struct inferd_wire_server_hello) == 24, "wire: server hello");
_Static_assert(sizeof(struct inferd_wire_client_hello) == 24, "wire: client hello");
_Static_assert(sizeof(struct inferd_wire_ready) == 16, "wire: ready");
_Static_assert(sizeof(struct inferd_wire_cancel) == 8, "wire: cancel");
_Static_assert(sizeof(struct inferd_wire_dims) == 72, "wire: dims");
_Static_assert(sizeof(struct inferd_wire_output_dims_query) == 16, "wire: output dims query");
_Static_assert(sizeof(struct inferd_wire_output_dims_reply) == 8, "wire: output dims reply");
_Static_assert(INFERD_WIRE_MAX_CLIENT_PAYLOAD == sizeof(struct inferd_wire_output_dims_query) +
    INFERD_WIRE_MAX_TENSORS * sizeof(struct inferd_wire_dims), "wire: the largest client message");
_Static_assert(sizeof(struct inferd_wire_header) == 512, "wire: region header");
_Static_assert(offsetof(struct inferd_wire_header, sq_head) == 64, "wire: sq_head");
_Static_assert(offsetof(struct inferd_wire_header, sq_tail) == 128, "wire: sq_tail");
_Static_assert(offsetof(struct inferd_wire_header, cq_head) == 192, "wire: cq_head");
_Static_assert(offsetof(struct inferd_wire_header, cq_tail) == 256, "wire: cq_tail");
_Static_assert(offsetof(struct inferd_wire_header, sq_flags) == 320, "wire: sq_flags");
_Static_assert(offsetof(struct inferd_wire_header, cq_wake) == 384, "wire: cq_wake");
_Static_assert(sizeof(struct inferd_wire_sqe) == 64, "wire: submission entry");
_Static_assert(sizeof(struct inferd_wire_cqe) == 16, "wire: completion entry");
_Static_assert(sizeof(struct inferd_wire_model_info) == 560, "wire: model info");
_Static_assert(sizeof(struct inferd_wire_tensor_info) == 296, "wire: tensor info");
_Static_assert(sizeof(struct inferd_wire_tensor) == 96, "wire: submission tensor");
_Static_assert(offsetof(struct inferd_wire_sqe, list_offset) == 24, "wire: list offset");
#endif

#ifdef __cplusplus
}
#endif

#endif
