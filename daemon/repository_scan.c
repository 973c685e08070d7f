/* repository_scan.c: a repository's models, versions and version_policy on disk; whether a version's files settled. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "log.h"
#include "model_config.h"
#include "repository_scan.h"

/* Largest num_versions accepted by a "latest" policy. */
#define SCAN_MAX_LATEST (1 << 20)

/* Parse a version directory name: a positive decimal integer, no sign, no leading zero, at most INT64_MAX. */
int
repository_parse_version(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (s == NULL || *s < '1' || *s > '9')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

/* Order int64 versions ascending. */
static int
scan_cmp_versions(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Whether path is a directory (following links). */
static int
scan_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Append v to *versions (n entries). */
static int
scan_push_version(int64_t **versions, size_t *n, int64_t v, char **cause)
{
	int64_t *nv = xrealloc(*versions, (*n + 1) * sizeof *nv);

	if (nv == NULL)
		return error_set(cause, "out of memory");
	nv[(*n)++] = v;
	*versions = nv;
	return 0;
}

/* Check one non-hidden entry of a model directory: a version directory is pushed, a misnamed one refused. */
static int
scan_version_entry(const char *model_dir, const char *name, int64_t **versions, size_t *n, char **cause)
{
	char *path;
	int64_t v;
	int dir;

	if (xasprintf(&path, "%s/%s", model_dir, name) == -1)
		return error_set(cause, "out of memory");
	dir = scan_is_dir(path);
	free(path);
	if (!dir)
		return 0;
	if (repository_parse_version(name, &v) != 0)
		return error_set(cause, "%s/%s: a subdirectory of a model must be a version, a positive integer without "
		    "sign or leading zero up to %lld (start other directories' names with '.')", model_dir, name,
		    (long long)INT64_MAX);
	return scan_push_version(versions, n, v, cause);
}

/* The version directories of model_dir, ascending (none: the flat layout); -1 naming a misnamed one. */
int
repository_scan_versions(const char *model_dir, int64_t **versions, size_t *count, char **cause)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*versions = NULL;
	*count = 0;
	if ((d = opendir(model_dir)) == NULL)
		return error_set(cause, "%s: %s", model_dir, strerror(errno));
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			rc = scan_version_entry(model_dir, de->d_name, versions, count, cause);
	if (rc == 0 && errno != 0)
		rc = error_set(cause, "%s: %s", model_dir, strerror(errno));
	closedir(d);
	if (rc != 0) {
		free(*versions);
		*versions = NULL;
		*count = 0;
		return -1;
	}
	if (*count > 1)
		qsort(*versions, *count, sizeof **versions, scan_cmp_versions);
	return 0;
}

/* The directory holding version `version`'s files: model_dir/<version>/, or model_dir in the flat layout (version 1). */
int
repository_version_dir(const char *model_dir, int64_t version, char **files_dir, char **cause)
{
	int64_t *versions = NULL;
	size_t n = 0;
	struct stat st;
	char *vdir;
	int rc = 0;

	*files_dir = NULL;
	if (version < 1)
		return error_set(cause, "%s: version %lld: versions are positive integers", model_dir, (long long)version);
	if (xasprintf(&vdir, "%s/%lld", model_dir, (long long)version) == -1)
		return error_set(cause, "out of memory");
	if (stat(vdir, &st) == 0 && S_ISDIR(st.st_mode)) {
		*files_dir = vdir;
		return 0;
	}
	if (repository_scan_versions(model_dir, &versions, &n, cause) != 0)
		rc = -1;
	else if (n == 0 && version == 1)
		rc = (*files_dir = xstrdup(model_dir)) == NULL ? error_set(cause, "out of memory") : 0;
	else
		rc = error_set(cause, "%s: no version directory (%s)", vdir,
		    n == 0 ? "the flat layout has version 1 only" : "not among the model's versions");
	free(versions);
	free(vdir);
	return rc;
}

/* Keep the newest n of the available versions (all of them when fewer). */
static int
scan_policy_latest(json_t *p, int64_t *avail, size_t *navail, char **cause)
{
	long long n;

	if (!json_is_object(p) || json_object_size(p) != 1 ||
	    model_json_int(p, "num_versions", 1, SCAN_MAX_LATEST, -1, &n, cause) != 0)
		return error_set(cause, "\"latest\" must be {\"num_versions\": N} with N in [1, %d]", SCAN_MAX_LATEST);
	if ((size_t)n < *navail) {
		memmove(avail, avail + (*navail - (size_t)n), (size_t)n * sizeof *avail);
		*navail = (size_t)n;
	}
	return 0;
}

/* Replace the available versions by the listed ones, each of which must have its directory. */
static int
scan_policy_specific(json_t *p, int64_t *avail, size_t *navail, char **cause)
{
	json_t *arr = json_object_get(p, "versions"), *v;
	int64_t *keep;
	size_t i, k = 0;

	if (!json_is_object(p) || json_object_size(p) != 1 || !json_is_array(arr) || json_array_size(arr) == 0)
		return error_set(cause, "\"specific\" must be {\"versions\": [v, ...]} with at least one version");
	if ((keep = xcalloc(json_array_size(arr), sizeof *keep)) == NULL)
		return error_set(cause, "out of memory");
	json_array_foreach(arr, i, v) {
		int64_t x = json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
		if (x < 1) {
			free(keep);
			return error_set(cause, "\"specific\" versions[%zu] must be a positive integer", i);
		}
		if (bsearch(&x, avail, *navail, sizeof *avail, scan_cmp_versions) == NULL) {
			free(keep);
			return error_set(cause, "\"specific\" version %lld has no version directory", (long long)x);
		}
		if (k == 0 || bsearch(&x, keep, k, sizeof *keep, scan_cmp_versions) == NULL) {
			keep[k++] = x;
			qsort(keep, k, sizeof *keep, scan_cmp_versions);
		}
	}
	memcpy(avail, keep, k * sizeof *keep);
	*navail = k;
	free(keep);
	return 0;
}

/* Narrow the available versions (ascending) by policy (NULL: latest 1). */
static int
scan_apply_policy(json_t *policy, int64_t *avail, size_t *navail, char **cause)
{
	const char *kind;
	json_t *p;
	int rc;

	if (policy == NULL) {
		if (*navail > 1) {
			avail[0] = avail[*navail - 1];
			*navail = 1;
		}
		return 0;
	}
	if (!json_is_object(policy) || json_object_size(policy) != 1)
		return error_set(cause, "\"version_policy\" must be an object with one key: \"latest\", \"all\" or \"specific\"");
	kind = json_object_iter_key(json_object_iter(policy));
	p = json_object_iter_value(json_object_iter(policy));
	if (strcmp(kind, "latest") == 0)
		rc = scan_policy_latest(p, avail, navail, cause);
	else if (strcmp(kind, "specific") == 0)
		rc = scan_policy_specific(p, avail, navail, cause);
	else if (strcmp(kind, "all") == 0)
		rc = json_is_object(p) && json_object_size(p) == 0 ? 0 : error_set(cause, "\"all\" must be {}");
	else
		rc = error_set(cause, "unknown policy \"%s\" (\"latest\", \"all\" or \"specific\")", kind);
	return rc == 0 ? 0 : error_prefix(cause, "\"version_policy\"");
}

/* The versions of e->dir under its policy, or an error message for the entry. */
static int
scan_entry_versions(struct repository_entry *e, const char *config_override, char **cause)
{
	json_t *cfg = NULL;
	int rc;

	if (repository_scan_versions(e->dir, &e->versions, &e->nversions, cause) != 0)
		return -1;
	if (e->nversions == 0 && scan_push_version(&e->versions, &e->nversions, 1, cause) != 0)
		return -1;
	if (model_config_read(e->dir, config_override, 0, &cfg, cause) != 0)
		return -1;
	rc = scan_apply_policy(cfg == NULL ? NULL : json_object_get(cfg, "version_policy"), e->versions,
	    &e->nversions, cause);
	if (rc != 0)
		error_prefix(cause, "%s/%s%s", e->dir, model_config_triton_files(e->dir),
		    config_override != NULL ? " with the config override" : "");
	json_decref(cfg);
	return rc;
}

/* Fill e for repo_dir/name (which exists); contents that are wrong go to e->error. */
static int
scan_entry(const char *repo_dir, const char *name, const char *config_override, struct repository_entry *e,
    char **cause)
{
	char *why = NULL;

	memset(e, 0, sizeof *e);
	if ((e->name = xstrdup(name)) == NULL || xasprintf(&e->dir, "%s/%s", repo_dir, name) == -1) {
		e->dir = NULL;
		repository_entry_free(e);
		return error_set(cause, "out of memory");
	}
	if (scan_entry_versions(e, config_override, &why) != 0) {
		free(e->versions);
		e->versions = NULL;
		e->nversions = 0;
		e->error = why != NULL ? why : xstrdup("unknown error");
		if (e->error == NULL) {
			repository_entry_free(e);
			return error_set(cause, "out of memory");
		}
	}
	return 0;
}

/* repository_scan_model with config_override deciding the version_policy. */
int
repository_scan_model_config(const char *repo_dir, const char *name, const char *config_override,
    struct repository_entry *out, char **cause)
{
	char *path;
	int dir;

	memset(out, 0, sizeof *out);
	if (name == NULL || *name == '\0' || *name == '.' || strchr(name, '/') != NULL)
		return error_set(cause, "'%s' is not a model directory name", name ? name : "");
	if (xasprintf(&path, "%s/%s", repo_dir, name) == -1)
		return error_set(cause, "out of memory");
	dir = scan_is_dir(path);
	free(path);
	if (!dir)
		return error_set(cause, "no model directory '%s' in the repository %s", name, repo_dir);
	return scan_entry(repo_dir, name, config_override, out, cause);
}

/* Scan one model directory (a load request of a single model). */
int
repository_scan_model(const char *repo_dir, const char *name, struct repository_entry *out, char **cause)
{
	return repository_scan_model_config(repo_dir, name, NULL, out, cause);
}

/* Order entries by name. */
static int
scan_cmp_entries(const void *a, const void *b)
{
	return strcmp(((const struct repository_entry *)a)->name, ((const struct repository_entry *)b)->name);
}

/* Add an entry for repo_dir/name when it is a directory. */
static int
scan_add(const char *repo_dir, const char *name, struct repository_entry **v, size_t *n, char **cause)
{
	struct repository_entry *nv;
	char *path;
	int dir;

	if (xasprintf(&path, "%s/%s", repo_dir, name) == -1)
		return error_set(cause, "out of memory");
	dir = scan_is_dir(path);
	free(path);
	if (!dir)
		return 0;
	if ((nv = xrealloc(*v, (*n + 1) * sizeof *nv)) == NULL)
		return error_set(cause, "out of memory");
	*v = nv;
	if (scan_entry(repo_dir, name, NULL, &nv[*n], cause) != 0)
		return -1;
	(*n)++;
	return 0;
}

/* Scan repo_dir; entries sorted by name. */
int
repository_scan(const char *repo_dir, struct repository_entry **out, size_t *count, char **cause)
{
	struct repository_entry *v = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int rc = 0;

	*out = NULL;
	*count = 0;
	if ((d = opendir(repo_dir)) == NULL)
		return error_set(cause, "model repository %s: %s", repo_dir, strerror(errno));
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			rc = scan_add(repo_dir, de->d_name, &v, &n, cause);
	if (rc == 0 && errno != 0)
		rc = error_set(cause, "model repository %s: %s", repo_dir, strerror(errno));
	closedir(d);
	if (rc != 0) {
		repository_scan_free(v, n);
		return -1;
	}
	if (n > 1)
		qsort(v, n, sizeof *v, scan_cmp_entries);
	*out = v;
	*count = n;
	return 0;
}

/* Free e's members. */
void
repository_entry_free(struct repository_entry *e)
{
	if (e == NULL)
		return;
	free(e->name);
	free(e->dir);
	free(e->versions);
	free(e->error);
	memset(e, 0, sizeof *e);
}

/* Free every entry and the array. */
void
repository_scan_free(struct repository_entry *e, size_t count)
{
	size_t i;

	for (i = 0; e != NULL && i < count; i++)
		repository_entry_free(&e[i]);
	free(e);
}

/* The latest of a stat's modification and status-change times, in ns since the epoch. */
static int64_t
scan_stat_newest(const struct stat *st)
{
	int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	int64_t c = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;

	return m > c ? m : c;
}

/* Mix one file's name, size and mtime into the signature (FNV-1a); add its size and times to f. */
static void
scan_sign_file(const char *dir, const char *name, struct repository_files *f)
{
	char path[4096];
	struct stat st;
	uint64_t v[3];
	const unsigned char *p;
	size_t i;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path || stat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return;
	v[0] = (uint64_t)st.st_size;
	v[1] = (uint64_t)st.st_mtim.tv_sec;
	v[2] = (uint64_t)st.st_mtim.tv_nsec;
	f->bytes += (uint64_t)st.st_size;
	if (scan_stat_newest(&st) > f->newest_ns)
		f->newest_ns = scan_stat_newest(&st);
	for (p = (const unsigned char *)name; *p != '\0'; p++)
		f->signature = (f->signature ^ *p) * 1099511628211ull;
	for (p = (const unsigned char *)v, i = 0; i < sizeof v; i++)
		f->signature = (f->signature ^ p[i]) * 1099511628211ull;
}

/* Describe version's files: model.json and config.pbtxt, then the version directory's regular files in readdir order. */
void
repository_scan_files(const char *model_dir, int64_t version, struct repository_files *out)
{
	char vdir[4096];
	struct dirent *de;
	struct stat st;
	DIR *d;

	out->signature = 14695981039346656037ull;
	out->bytes = 0;
	out->newest_ns = 0;
	scan_sign_file(model_dir, "model.json", out);
	scan_sign_file(model_dir, "config.pbtxt", out);
	snprintf(vdir, sizeof vdir, "%s/%lld", model_dir, (long long)version);
	if (stat(vdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(vdir, sizeof vdir, "%s", model_dir);
		if (stat(vdir, &st) != 0)
			return;
	}
	/* Files added, removed or renamed change the directory's times. */
	if (scan_stat_newest(&st) > out->newest_ns)
		out->newest_ns = scan_stat_newest(&st);
	if ((d = opendir(vdir)) == NULL)
		return;
	/* readdir's order is stable for an unchanged directory; a change of order is a change. */
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && strcmp(de->d_name, "model.json") != 0 &&
		    strcmp(de->d_name, "config.pbtxt") != 0)
			scan_sign_file(vdir, de->d_name, out);
	closedir(d);
}

/* The waiting entry for model_dir's version, or NULL. */
static struct repository_settling_version *
settling_find(struct repository_settling *s, const char *model_dir, int64_t version)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].version == version && strcmp(s->v[i].model_dir, model_dir) == 0)
			return &s->v[i];
	return NULL;
}

/* A new waiting entry (signature and since_us for the caller to set), or NULL when memory is short. */
static struct repository_settling_version *
settling_add(struct repository_settling *s, const char *model_dir, int64_t version)
{
	struct repository_settling_version *nv;
	char *dir = strdup(model_dir);

	if (dir == NULL || (nv = realloc(s->v, (s->n + 1) * sizeof *nv)) == NULL) {
		free(dir);
		return NULL;
	}
	s->v = nv;
	memset(&nv[s->n], 0, sizeof nv[s->n]);
	nv[s->n].model_dir = dir;
	nv[s->n].version = version;
	return &nv[s->n++];
}

/* Forget entry i. */
static void
settling_drop(struct repository_settling *s, size_t i)
{
	free(s->v[i].model_dir);
	s->v[i] = s->v[--s->n];
}

/* Whether version's files f have settled (see repository_scan.h). */
int
repository_settling_check(struct repository_settling *s, const char *model_dir, int64_t version,
    const struct repository_files *f, uint64_t settle_us, uint64_t now_us, int64_t now_ns)
{
	struct repository_settling_version *e;
	int64_t quiet_us = (now_ns - f->newest_ns) / 1000;
	uint64_t due;
	int first = 0;

	if (settle_us == 0)
		return 1;
	if ((e = settling_find(s, model_dir, version)) == NULL) {
		if ((e = settling_add(s, model_dir, version)) == NULL)
			return 1;
		first = 1;
	}
	if (first || e->signature != f->signature) {
		e->signature = f->signature;
		e->since_us = now_us;
	}
	e->round = s->round;
	if ((quiet_us >= 0 && (uint64_t)quiet_us >= settle_us) || now_us - e->since_us >= settle_us) {
		settling_drop(s, (size_t)(e - s->v));
		return 1;
	}
	/* Ready at whichever rule comes true first, if nothing changes meanwhile. */
	due = e->since_us + settle_us;
	if (quiet_us >= 0 && now_us + (settle_us - (uint64_t)quiet_us) < due)
		due = now_us + (settle_us - (uint64_t)quiet_us);
	if (s->due_us == 0 || due < s->due_us)
		s->due_us = due;
	return first ? 2 : 0;
}

/* repository_settling_check with the clocks read now; logs the first time a version is seen waiting. */
int
repository_settling_ready(struct repository_settling *s, const char *name, const char *model_dir,
    int64_t version, const struct repository_files *f, int settle_secs)
{
	struct timespec now;
	int64_t now_ns;
	int rc;

	if (settle_secs <= 0)
		return 1;
	if (clock_gettime(CLOCK_REALTIME, &now) != 0)
		return 1;	/* cannot fail with a valid clock id; without a clock there is nothing to wait by */
	now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	rc = repository_settling_check(s, model_dir, version, f, (uint64_t)settle_secs * 1000000, clock_now_us(),
	    now_ns);
	if (rc == 2)
		LOG_INFO("model '%s' version %lld: its files are still changing (the last change %.1f s ago); the "
		    "rescans load it once they have been left alone for %d s (repository_settle_secs), and "
		    "what serves keeps serving", name, (long long)version, (double)(now_ns - f->newest_ns) / 1e9,
		    settle_secs);
	return rc == 1;
}

/* Start a rescan's round. */
void
repository_settling_begin(struct repository_settling *s)
{
	s->round++;
	s->due_us = 0;
}

/* End the round: forget the versions it did not look at. */
uint64_t
repository_settling_end(struct repository_settling *s)
{
	size_t i = 0;

	while (i < s->n) {
		if (s->v[i].round != s->round)
			settling_drop(s, i);
		else
			i++;
	}
	return s->due_us;
}

/* Free everything s holds. */
void
repository_settling_free(struct repository_settling *s)
{
	while (s->n > 0)
		settling_drop(s, s->n - 1);
	free(s->v);
	s->v = NULL;
	s->due_us = 0;
}
