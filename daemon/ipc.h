/* ipc.h: the shared-memory IPC server, control over a Unix socket, data in each client's region. */
#ifndef INFERD_IPC_H
#define INFERD_IPC_H

#include "batcher.h"
#include "daemon_config.h"
#include "device.h"
#include "metrics.h"
#include "repository.h"

typedef struct ipc_server ipc_server_t;

/* Everything the IPC server serves from; all outlive the server. */
struct ipc_context {
	const struct daemon_config *config;
	device_t *dev;
	repository_t *repo;
	batcher_t *batcher;
	struct metrics *metrics;
};

/* Create, bind and listen on config->shm_socket, and start its thread. */
int ipc_start(const struct ipc_context *ctx, ipc_server_t **out, char **cause);
/* Refuse new connections and submissions; requests already accepted finish. */
void ipc_begin_shutdown(ipc_server_t *s);
/* Disconnect every client (releasing regions in the safe order), join, free. */
void ipc_stop(ipc_server_t *s);

#endif
