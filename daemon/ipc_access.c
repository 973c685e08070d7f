/* ipc_access.c: the shm socket's mode and group, derived from the allow lists unless set explicitly. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "ipc_impl.h"
#include "log.h"

/*
 * The socket's file permissions are the first gate (connect(2) needs write
 * permission), the allow lists checked on every connection the second.
 * The derived mode lets in exactly whom the lists may allow: 0600 for the
 * default (the daemon's user; root passes anyway), 0660 with the group
 * when the lists name one group and no user, 0666 otherwise, since one
 * file group cannot express several groups or foreign users.
 */

/* Resolve a group name or gid. */
static int
ipc_access_gid(const char *name, gid_t *out, char **cause)
{
	struct group gr, *res;
	char buf[16384], *end;
	unsigned long n;
	int r;

	if (*name >= '0' && *name <= '9') {
		errno = 0;
		n = strtoul(name, &end, 10);
		if (errno != 0 || *end != '\0' || n >= (unsigned long)(gid_t)-1)
			return error_set(cause, "'%s' is not a group id", name);
		*out = (gid_t)n;
		return 0;
	}
	if ((r = getgrnam_r(name, &gr, buf, sizeof buf, &res)) != 0)
		return error_set(cause, "looking up group '%s': %s", name, strerror(r));
	if (res == NULL)
		return error_set(cause, "no group '%s'", name);
	*out = gr.gr_gid;
	return 0;
}

/* The mode and group (-1: leave it) the socket should have. */
static int
ipc_access_decide(const struct daemon_config *cfg, const struct peer_auth *a,
    mode_t *mode, gid_t *gid, char **cause)
{
	int users = *cfg->allow_users != '\0', groups = *cfg->allow_groups != '\0';

	*gid = (gid_t)-1;
	if (*cfg->shm_socket_group != '\0') {
		if (ipc_access_gid(cfg->shm_socket_group, gid, cause) != 0)
			return error_prefix(cause, "shm_socket_group");
	} else if (!users && a->ngids == 1)
		*gid = a->gids[0];
	if (*cfg->shm_socket_mode != '\0')
		*mode = (mode_t)strtoul(cfg->shm_socket_mode, NULL, 8);	/* validated by the config */
	else if (!users && !groups)
		*mode = 0600;
	else if (!users && a->ngids == 1)
		*mode = 0660;
	else
		*mode = 0666;
	return 0;
}

/* Give the bound socket at path its mode and group; -1 with *cause. */
int
ipc_access_apply(const char *path, const struct daemon_config *cfg,
    const struct peer_auth *a, char **cause)
{
	mode_t mode = 0600;
	gid_t gid;

	if (ipc_access_decide(cfg, a, &mode, &gid, cause) != 0)
		return -1;
	if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) != 0)
		return error_set(cause, "giving the socket group %u: %s%s", (unsigned)gid,
		    strerror(errno), errno == EPERM ? " (the daemon must be a member of it)" : "");
	if (chmod(path, mode) != 0)
		return error_set(cause, "chmod %04o: %s", (unsigned)mode, strerror(errno));
	LOG_INFO("ipc: socket mode %04o%s", (unsigned)mode,
	    gid != (gid_t)-1 ? ", group set from the config" : "");
	return 0;
}
