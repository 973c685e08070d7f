/* ipc.h: the shared-memory IPC server, control over a Unix socket, data in each client's region. */
#ifndef INFERD_IPC_H
#define INFERD_IPC_H

#include "door.h"

typedef struct ipc_server ipc_server_t;

/* Create, bind and listen on config->shm_socket, and start its thread. */
int ipc_start(const struct door_context *ctx, ipc_server_t **out, char **cause);
/* Refuse new connections and submissions; requests already accepted finish. */
void ipc_begin_shutdown(ipc_server_t *s);
/* Disconnect every client (releasing regions in the safe order), join, free. */
void ipc_stop(ipc_server_t *s);

#endif
