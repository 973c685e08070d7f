/* ipc_impl.h: the IPC server's private types, shared by ipc.c, ipc_client.c, ipc_conn.c, ipc_ring.c and ipc_access.c. */
#ifndef INFERD_IPC_IMPL_H
#define INFERD_IPC_IMPL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "graph.h"
#include "inferd_wire.h"
#include "ipc.h"
#include "log.h"
#include "peer_auth.h"

/* A connection that has not finished its hello by then is dropped. */
#define IPC_HANDSHAKE_US (10 * 1000000ULL)
/* ipc_stop waits at most this long for requests in flight to finish. */
#define IPC_DRAIN_US (30 * 1000000ULL)

/* What an epoll event refers to. */
enum ipc_tag_kind {
	IPC_TAG_LISTEN,
	IPC_TAG_WAKE,
	IPC_TAG_CONTROL,
	IPC_TAG_SUBMIT,
};

struct ipc_client;

struct ipc_tag {
	enum ipc_tag_kind kind;
	struct ipc_client *client;
};

/* The wire's datatype for a graph dtype: the two tables list the same types in the same order. */
static inline uint32_t
ipc_wire_datatype(enum graph_dtype dt)
{
	_Static_assert(GRAPH_DT_F32 == 0 && GRAPH_DT_F16 == 1 && GRAPH_DT_I64 == 2 && GRAPH_DT_I32 == 3 &&
	    GRAPH_DT_I8 == 4 && GRAPH_DT_U8 == 5 && GRAPH_DT_BOOL == 6 && INFERD_WIRE_FP32 == 1 &&
	    INFERD_WIRE_FP16 == 2 && INFERD_WIRE_INT64 == 3 && INFERD_WIRE_INT32 == 4 &&
	    INFERD_WIRE_INT8 == 5 && INFERD_WIRE_UINT8 == 6 && INFERD_WIRE_BOOL == 7, "dtype tables");
	return (uint32_t)dt + 1;
}

/* A list-form submission copied out of shared memory: the entry and its tensors. */
struct ipc_submission {
	struct inferd_wire_sqe e;
	struct inferd_wire_tensor t[2 * INFERD_WIRE_MAX_TENSORS];
	uint32_t detail;		/* a check that failed while copying out, else NONE */
};

/* One accepted submission; req comes first so done can find the slot. */
struct ipc_slot {
	struct batch_request req;
	struct ipc_client *client;
	const model_t *model;		/* set when the batcher accepted it (for CANCEL) */
	model_ref_t *ref;		/* the version it holds until its done ran */
	uint64_t user_data;
	int next_free;
};

/* One connection; everything but the fields under lock belongs to the epoll thread. */
struct ipc_client {
	ipc_server_t *server;
	struct ipc_client *next;
	struct ipc_tag control_tag, submit_tag;
	int control_fd;
	int region_fd, submit_fd, doorbell_fd;	/* -1 until the hello */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint64_t accepted_us;
	int ready;			/* hello done, region mapped */
	int dead;			/* to be released after this event batch */
	char label[32];

	/* Control input: one message at a time, and the fds that came with it. */
	uint8_t in[sizeof(struct inferd_wire_msg) + INFERD_WIRE_MAX_CLIENT_PAYLOAD];
	size_t inlen;
	int fds[INFERD_WIRE_HELLO_FDS];
	int nfds;

	/* The region, geometry from the hello only. */
	uint8_t *base;
	uint64_t region_bytes;
	uint32_t sq_entries, cq_entries;
	struct inferd_wire_layout layout;
	struct inferd_wire_header *hdr;
	struct inferd_wire_sqe *sq;
	struct inferd_wire_cqe *cq;
	int registered;
	batch_client_t *bc;
	uint32_t sq_head;		/* the daemon's own copy */

	pthread_mutex_t lock;		/* guards the fields below */
	pthread_cond_t idle;		/* inflight reached 0 */
	uint32_t cq_tail;
	uint32_t inflight;		/* slots taken: accepted, not yet completed */
	struct ipc_slot *slots;		/* cq_entries of them */
	int free_slot;
};

struct ipc_server {
	struct door_context ctx;
	struct peer_auth auth;
	char *path;
	int listen_fd, epoll_fd, wake_fd;
	int spare_fd;			/* given up to accept when out of descriptors */
	int bound;			/* the socket file is ours to remove */
	ino_t bound_ino;
	struct ipc_tag listen_tag, wake_tag;
	pthread_t thread;
	int shutting_down;		/* atomic: refuse new work */
	int stopping;			/* atomic: the thread should exit */
	struct ipc_client *clients;
	size_t nclients;
	int armed;			/* NEED_WAKEUP is set in every ready client's ring */
	uint64_t activity_us;		/* atomic: last submission taken or completion posted */
};

/* ipc_access.c */
int ipc_access_apply(const char *path, const struct daemon_config *cfg,
    const struct peer_auth *a, char **cause);

/* ipc_conn.c */
int ipc_conn_send_error(int fd, enum inferd_wire_error code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ipc_conn_greet(ipc_server_t *s, struct ipc_client *c);
int ipc_conn_readable(ipc_server_t *s, struct ipc_client *c);

/* ipc_ring.c */
int ipc_ring_init(struct ipc_client *c, char **cause);
void ipc_ring_free(struct ipc_client *c);
int ipc_ring_drain(ipc_server_t *s, struct ipc_client *c, char **cause);
/* Take what c's ring holds and its completion ring has room for: how many, or -1 with *cause. */
int ipc_ring_take(ipc_server_t *s, struct ipc_client *c, char **cause);
/* Wake c if its cq_wake word says it sleeps (after completions were published, or when letting it go). */
void ipc_ring_wake(struct ipc_client *c);
void ipc_ring_wait_idle(struct ipc_client *c, uint64_t deadline_us);
/* Cancel c's queued request that carried user_data (CANCEL); 1 when it was cancelled. */
int ipc_ring_cancel(ipc_server_t *s, struct ipc_client *c, uint64_t user_data);
long ipc_ring_finish(ipc_server_t *s, struct ipc_client *c, uint64_t deadline_us, char **cause);

/* ipc_client.c: a client's life-cycle. */
/* Allocate a client for an accepted socket fd with its peer's credentials; NULL on failure. */
struct ipc_client *ipc_client_new(ipc_server_t *s, int fd, const struct ucred *cred);
/* Release a client: unwatch, let the batcher finish its requests, unmap, close. */
void ipc_client_free(ipc_server_t *s, struct ipc_client *c);
/* Mark c to be dropped after this event batch, saying why once (at level). */
void ipc_kill(struct ipc_client *c, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Close *fd if open and set it to -1. */
void ipc_close(int *fd);

#endif
