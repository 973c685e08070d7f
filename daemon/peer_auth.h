/* peer_auth.h: who may use the daemon's shared memory: the shm socket's peers and the HTTP door's registered regions' owners. */
#ifndef INFERD_PEER_AUTH_H
#define INFERD_PEER_AUTH_H

#include <stddef.h>
#include <sys/types.h>

/* Who may connect: uids (root and the daemon's own user included) and gids resolved at start. */
struct peer_auth {
	uid_t *uids;
	size_t nuids;
	gid_t *gids;
	size_t ngids;
};

/* Resolve allow_users and allow_groups (comma-separated names or ids; NULL or "" for none). */
int peer_auth_init(struct peer_auth *a, const char *users, const char *groups, char **cause);
void peer_auth_free(struct peer_auth *a);
/* 1 when uid/gid may connect; fd is the peer's socket for SO_PEERGROUPS, or -1 (a file's owner: the group database). */
int peer_auth_allows(const struct peer_auth *a, int fd, uid_t uid, gid_t gid);

#endif
