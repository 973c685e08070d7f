/* repository_scan.h: what a model repository holds on disk: model directories, their versions, their policies. */
#ifndef INFERD_REPOSITORY_SCAN_H
#define INFERD_REPOSITORY_SCAN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Contract.  The repository lays models out as Triton does:
 * <repo>/<model>/model.json and <repo>/<model>/<version>/<files>, a version
 * directory being named by a positive decimal integer without leading zeros.
 * A model directory without any version directory is the flat layout
 * (model files beside model.json) and counts as version 1.  Entries whose
 * name starts with '.' are ignored at both levels; plain files at the top of
 * the repository are not models and are skipped.  Any other subdirectory of
 * a model directory must be a version: a name such as "v2", "-1", "01" or one
 * past INT64_MAX makes the whole model directory an error (a misnamed version
 * must never be skipped silently).
 *
 * model.json's "version_policy" (optional) is Triton's:
 * {"latest": {"num_versions": N}} (the default, N = 1), {"all": {}} or
 * {"specific": {"versions": [v, ...]}}; a specific version without its
 * directory is an error.  The scan reads model.json only for that key (the
 * rest is model_load_version's business) and never loads a model.
 *
 * A model directory that cannot be scanned gets an entry with error set and
 * no versions, so the caller can report it; repository_scan itself fails
 * only when the repository directory cannot be read.  Nothing here is
 * thread-unsafe: every call works on its own memory.
 */

/* One model directory of the repository. */
struct repository_entry {
	char *name;		/* the directory's name (model.json's "name" may name the layer-format model otherwise) */
	char *dir;		/* <repo>/<name> */
	size_t nversions;
	int64_t *versions;	/* the versions to load under version_policy, ascending; flat layout: {1} */
	char *error;		/* non-NULL: this directory cannot be scanned; nversions is 0 */
};

/* Scan repo_dir; entries sorted by name.  -1 only when repo_dir itself cannot be read (or memory runs out). */
int repository_scan(const char *repo_dir, struct repository_entry **out, size_t *count, char **cause);
/*
 * Scan the one model directory repo_dir/name (a load request).  -1 when name
 * is not a plain directory name (empty, '.'-hidden, or with a '/') or
 * repo_dir/name is not a directory; otherwise 0, with out->error set when the
 * directory's contents are wrong.
 */
int repository_scan_model(const char *repo_dir, const char *name, struct repository_entry *out, char **cause);
/*
 * repository_scan_model with config_override (NULL, or a JSON object text
 * whose top-level keys replace model.json's, as model_load_version applies
 * it) deciding the version_policy.  A malformed override is an entry error.
 */
int repository_scan_model_config(const char *repo_dir, const char *name, const char *config_override,
    struct repository_entry *out, char **cause);
/* The version directories of model_dir, ascending (none: the flat layout); -1 naming a misnamed one. */
int repository_scan_versions(const char *model_dir, int64_t **versions, size_t *count, char **cause);
/*
 * The directory holding version `version`'s model files (malloc'ed into
 * *files_dir): model_dir/<version>/ when it exists, else model_dir itself
 * for version 1 of a flat layout; -1 naming what is missing otherwise.
 */
int repository_version_dir(const char *model_dir, int64_t version, char **files_dir, char **cause);
/* Parse a version directory name: a positive decimal integer, no sign, no leading zero, at most INT64_MAX. */
int repository_parse_version(const char *s, int64_t *out);
/* What a version's files look like now: what a rescan compares with the loaded version's. */
struct repository_files {
	uint64_t signature;	/* names, sizes and modification times (FNV-1a) */
	uint64_t bytes;		/* their total size */
	int64_t newest_ns;	/* latest modification or status change, theirs or the directory's (ns since the epoch) */
};
/*
 * Describe version's files: model.json of model_dir and every regular file of
 * its version directory (model_dir itself in the flat layout); files that
 * cannot be read are left out.
 */
void repository_scan_files(const char *model_dir, int64_t version, struct repository_files *out);

/*
 * Versions a rescan found changed (or new) whose files have not yet stopped
 * changing: a rescan loads them only once their files have been left alone
 * for the settle interval, so a copy in progress is never loaded.  Files are
 * settled when none of their times (modification, status change; their
 * directory's too) lies within the interval, or when the same signature was
 * first seen at least the interval ago (a network file system's clock may
 * disagree with ours).  A rescan brackets its checks with begin and end;
 * versions it did not look at are forgotten.  Callers serialize (the
 * registry's load lock).
 */
struct repository_settling_version {
	char *model_dir;
	int64_t version;
	uint64_t signature;	/* as last seen */
	uint64_t since_us;	/* when that signature was first seen (monotonic) */
	uint64_t round;		/* the last rescan that looked at it */
};
struct repository_settling {
	struct repository_settling_version *v;
	size_t n;
	uint64_t round;		/* the rescan under way */
	uint64_t due_us;	/* the earliest time a version waiting in this round may be ready (0: none waits) */
};
/*
 * Whether version's files f have settled at monotonic time now_us and
 * wall-clock time now_ns (ns since the epoch): 1 settled (and forgotten), 0
 * still changing, 2 still changing and seen so for the first time.  Memory
 * running out counts as settled (the load then goes ahead, as without a
 * settle interval).
 */
int repository_settling_check(struct repository_settling *s, const char *model_dir, int64_t version,
    const struct repository_files *f, uint64_t settle_us, uint64_t now_us, int64_t now_ns);
/* repository_settling_check now, logging (info) once that model name's version waits; 1 when it may load. */
int repository_settling_ready(struct repository_settling *s, const char *name, const char *model_dir,
    int64_t version, const struct repository_files *f, int settle_secs);
/* Start a rescan's round of checks. */
void repository_settling_begin(struct repository_settling *s);
/* End the round: forget the versions it did not look at; returns due_us (0: none waits). */
uint64_t repository_settling_end(struct repository_settling *s);
/* Free everything s holds (it may be used again afterwards). */
void repository_settling_free(struct repository_settling *s);

/* Free e's members, not e (NULL is ignored). */
void repository_entry_free(struct repository_entry *e);
/* Free every entry and the array. */
void repository_scan_free(struct repository_entry *e, size_t count);

#endif
