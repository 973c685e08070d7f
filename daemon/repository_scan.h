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
/* Parse a version directory name: a positive decimal integer, no sign, no leading zero, at most INT64_MAX. */
int repository_parse_version(const char *s, int64_t *out);
/* Free e's members, not e (NULL is ignored). */
void repository_entry_free(struct repository_entry *e);
/* Free every entry and the array. */
void repository_scan_free(struct repository_entry *e, size_t count);

#endif
