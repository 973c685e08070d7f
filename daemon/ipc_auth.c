/* ipc_auth.c: who may connect to the shm socket (allow_users, allow_groups), resolved once at start. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "ipc_impl.h"

/* Parse a whole-string decimal id; -1 if it is not one. */
static int
ipc_auth_number(const char *s, unsigned long *out)
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
ipc_auth_user(const char *name, uid_t *out, char **cause)
{
	struct passwd pw, *res;
	unsigned long n;
	char buf[4096];
	int r;

	if (ipc_auth_number(name, &n) == 0) {
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
ipc_auth_group(const char *name, gid_t *out, char **cause)
{
	struct group gr, *res;
	unsigned long n;
	char buf[16384];
	int r;

	if (ipc_auth_number(name, &n) == 0) {
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
ipc_auth_list(const char *list, int groups, unsigned int **out, size_t *n,
    char **cause)
{
	char *copy, *item, *save, *end;
	unsigned int *ids = NULL, *grown;

	*n = 0;
	if ((copy = strdup(list)) == NULL)
		return error_set(cause, "out of memory");
	for (item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ' || *item == '\t')
			item++;
		end = item + strlen(item);
		while (end > item && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*item == '\0')
			continue;
		if ((grown = realloc(ids, (*n + 1) * sizeof *ids)) == NULL) {
			error_set(cause, "out of memory");
			goto fail;
		}
		ids = grown;
		if ((groups ? ipc_auth_group(item, (gid_t *)&ids[*n], cause) :
		    ipc_auth_user(item, (uid_t *)&ids[*n], cause)) != 0)
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

/* Resolve both lists; when both are empty allow the daemon's own user and root. */
int
ipc_auth_init(struct ipc_auth *a, const char *users, const char *groups, char **cause)
{
	_Static_assert(sizeof(uid_t) == sizeof(unsigned int) && sizeof(gid_t) == sizeof(unsigned int),
	    "uid_t and gid_t are 32-bit");

	memset(a, 0, sizeof *a);
	if (ipc_auth_list(users, 0, (unsigned int **)&a->uids, &a->nuids, cause) != 0)
		return -1;
	if (ipc_auth_list(groups, 1, (unsigned int **)&a->gids, &a->ngids, cause) != 0) {
		ipc_auth_free(a);
		return -1;
	}
	if (a->nuids == 0 && a->ngids == 0) {
		if ((a->uids = calloc(2, sizeof *a->uids)) == NULL)
			return error_set(cause, "out of memory");
		a->uids[0] = geteuid();
		a->uids[1] = 0;
		a->nuids = 2;
	}
	return 0;
}

/* Free the resolved lists. */
void
ipc_auth_free(struct ipc_auth *a)
{
	free(a->uids);
	free(a->gids);
	memset(a, 0, sizeof *a);
}

/* 1 when the peer's user or primary group is allowed. */
int
ipc_auth_allows(const struct ipc_auth *a, uid_t uid, gid_t gid)
{
	size_t i;

	for (i = 0; i < a->nuids; i++)
		if (a->uids[i] == uid)
			return 1;
	for (i = 0; i < a->ngids; i++)
		if (a->gids[i] == gid)
			return 1;
	return 0;
}
