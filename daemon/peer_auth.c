/*
 * peer_auth.c: who may use the daemon's shared memory (allow_users, allow_groups):
 * the shm socket's peers, and the owners of regions registered over HTTP;
 * resolved once at start.  Root and the daemon's own user are always
 * allowed: both can read the daemon's memory anyway.  A group matches the
 * peer's primary group or any supplementary one (SO_PEERGROUPS, else the
 * peer user's group list from the group database).
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "peer_auth.h"

/* Parse a whole-string decimal id; -1 if it is not one. */
static int
peer_auth_number(const char *s, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || *out >= (unsigned long)UINT_MAX)
		return -1;
	return 0;
}

/* Resolve a user name or uid. */
static int
peer_auth_user(const char *name, uid_t *out, char **cause)
{
	struct passwd pw, *res;
	unsigned long n;
	char buf[4096];
	int r;

	if (peer_auth_number(name, &n) == 0) {
		*out = (uid_t)n;
		return 0;
	}
	r = getpwnam_r(name, &pw, buf, sizeof buf, &res);
	if (r != 0)
		return error_set(cause, "allow_users: looking up '%s': %s", name, strerror(r));
	if (res == NULL)
		return error_set(cause, "allow_users: no user '%s'", name);
	*out = pw.pw_uid;
	return 0;
}

/* Resolve a group name or gid. */
static int
peer_auth_group(const char *name, gid_t *out, char **cause)
{
	struct group gr, *res;
	unsigned long n;
	char buf[16384];
	int r;

	if (peer_auth_number(name, &n) == 0) {
		*out = (gid_t)n;
		return 0;
	}
	r = getgrnam_r(name, &gr, buf, sizeof buf, &res);
	if (r != 0)
		return error_set(cause, "allow_groups: looking up '%s': %s", name, strerror(r));
	if (res == NULL)
		return error_set(cause, "allow_groups: no group '%s'", name);
	*out = gr.gr_gid;
	return 0;
}

/* Split a comma list (spaces around items ignored) and resolve each item. */
static int
peer_auth_list(const char *list, int groups, unsigned int **out, size_t *n,
    char **cause)
{
	char *copy, *item, *save, *end;
	unsigned int *ids = NULL, *grown;

	*n = 0;
	if ((copy = xstrdup(list)) == NULL)
		return error_set(cause, "out of memory");
	for (item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ' || *item == '\t')
			item++;
		end = item + strlen(item);
		while (end > item && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*item == '\0')
			continue;
		if ((grown = xrealloc(ids, (*n + 1) * sizeof *ids)) == NULL) {
			error_set(cause, "out of memory");
			goto fail;
		}
		ids = grown;
		if ((groups ? peer_auth_group(item, (gid_t *)&ids[*n], cause) :
		    peer_auth_user(item, (uid_t *)&ids[*n], cause)) != 0)
			goto fail;
		(*n)++;
	}
	free(copy);
	*out = ids;
	return 0;
fail:
	free(copy);
	free(ids);
	*n = 0;
	return -1;
}

/* Resolve both lists; root and the daemon's own user are added to the users. */
int
peer_auth_init(struct peer_auth *a, const char *users, const char *groups, char **cause)
{
	uid_t *grown;

	_Static_assert(sizeof(uid_t) == sizeof(unsigned int) && sizeof(gid_t) == sizeof(unsigned int),
	    "uid_t and gid_t are 32-bit");

	memset(a, 0, sizeof *a);
	if (peer_auth_list(users, 0, (unsigned int **)&a->uids, &a->nuids, cause) != 0)
		return -1;
	if (peer_auth_list(groups, 1, (unsigned int **)&a->gids, &a->ngids, cause) != 0) {
		peer_auth_free(a);
		return -1;
	}
	if ((grown = xrealloc(a->uids, (a->nuids + 2) * sizeof *a->uids)) == NULL) {
		peer_auth_free(a);
		return error_set(cause, "out of memory");
	}
	a->uids = grown;
	a->uids[a->nuids++] = geteuid();
	a->uids[a->nuids++] = 0;
	return 0;
}

/* Free the resolved lists. */
void
peer_auth_free(struct peer_auth *a)
{
	free(a->uids);
	free(a->gids);
	memset(a, 0, sizeof *a);
}

/* 1 when gid is one of the allowed groups. */
static int
peer_auth_group_allowed(const struct peer_auth *a, gid_t gid)
{
	size_t i;

	for (i = 0; i < a->ngids; i++)
		if (a->gids[i] == gid)
			return 1;
	return 0;
}

/* 1 when one of n groups is allowed. */
static int
peer_auth_any_allowed(const struct peer_auth *a, const gid_t *groups, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (peer_auth_group_allowed(a, groups[i]))
			return 1;
	return 0;
}

/*
 * The peer's supplementary groups as the kernel saw them at connect
 * (SO_PEERGROUPS, Linux 4.13); 1 when one is allowed, 0 when none, -1
 * when the kernel cannot tell.
 */
static int
peer_auth_peer_groups(const struct peer_auth *a, int fd)
{
#ifdef SO_PEERGROUPS
	gid_t small[64], *groups = small;
	socklen_t len = sizeof small;
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) {
		if (errno != ERANGE || len == 0 || (groups = xmalloc(len)) == NULL)
			return -1;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) {
			free(groups);
			return -1;
		}
	}
	r = peer_auth_any_allowed(a, groups, len / sizeof *groups);
	if (groups != small)
		free(groups);
	return r;
#else
	(void)a;
	(void)fd;
	return -1;
#endif
}

/* The group database's list for the peer's user; 1 when one is allowed. */
static int
peer_auth_user_groups(const struct peer_auth *a, uid_t uid, gid_t gid)
{
	struct passwd pw, *res;
	gid_t small[64], *groups = small;
	int n = 64, r = 0;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || res == NULL)
		return 0;
	if (getgrouplist(pw.pw_name, gid, groups, &n) == -1) {
		if (n <= 0 || (groups = xcalloc((size_t)n, sizeof *groups)) == NULL)
			return 0;
		if (getgrouplist(pw.pw_name, gid, groups, &n) == -1)
			n = 0;
	}
	r = peer_auth_any_allowed(a, groups, (size_t)n);
	if (groups != small)
		free(groups);
	return r;
}

/* 1 when the peer on fd (credentials cred) is allowed: its user, primary or supplementary group. */
int
peer_auth_allows(const struct peer_auth *a, int fd, uid_t uid, gid_t gid)
{
	size_t i;
	int r;

	for (i = 0; i < a->nuids; i++)
		if (a->uids[i] == uid)
			return 1;
	if (a->ngids == 0)
		return 0;
	if (peer_auth_group_allowed(a, gid))
		return 1;
	if ((r = peer_auth_peer_groups(a, fd)) >= 0)
		return r;
	return peer_auth_user_groups(a, uid, gid);
}
