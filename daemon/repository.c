/* repository.c: scanning the model repository directory. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "fault.h"
#include "log.h"
#include "repository.h"

/* Order directory entries by name so loading and listing are stable. */
static int
repository_cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Record that name failed to load with message error. */
static int
repository_add_failure(repository_t *r, const char *name, const char *error)
{
	struct repository_failure *f;

	f = xrealloc(r->failures, (r->nfailures + 1) * sizeof *f);
	if (f == NULL)
		return -1;
	r->failures = f;
	f[r->nfailures].name = xstrdup(name);
	f[r->nfailures].error = xstrdup(error ? error : "unknown error");
	r->nfailures++;
	return 0;
}

/* Add a loaded model unless its name is taken. */
static int
repository_add_model(repository_t *r, model_t *m, char **cause)
{
	model_t **models;

	if (repository_find(r, m->name) != NULL)
		return error_set(cause, "model name '%s' is already used by another directory", m->name);
	models = xrealloc(r->models, (r->count + 1) * sizeof *models);
	if (models == NULL)
		return error_set(cause, "out of memory");
	r->models = models;
	r->models[r->count++] = m;
	return 0;
}

/* Try to load one model directory; failures are recorded, not returned. */
static void
repository_load_one(repository_t *r, device_t *dev, const char *name)
{
	char *path, *cause = NULL;
	struct stat st;
	model_t *m;

	if (asprintf(&path, "%s/%s", r->dir, name) == -1)
		return;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		free(path);
		return;
	}
	FAULT_MARK("start of model %s", name);
	if (model_load(dev, path, &m, &cause) == 0 && repository_add_model(r, m, &cause) != 0)
		model_free(m);
	FAULT_MARK("end of model %s", name);
	if (cause != NULL) {
		LOG_ERROR("model '%s' not loaded: %s", name, cause);
		repository_add_failure(r, name, cause);
	} else {
		LOG_INFO("model '%s' loaded from %s (%s, %zu nodes, %d inputs, %d outputs, max batch %d, arena %zu bytes)",
		    m->name, path, m->platform, m->graph->nnodes, m->ninputs, m->noutputs, m->max_batch_size,
		    m->mem.arena_bytes);
	}
	free(cause);
	free(path);
}

/* Read the names of dir's entries, sorted, skipping dot files. */
static int
repository_list(const char *dir, char ***names, size_t *count, char **cause)
{
	struct dirent *de;
	DIR *d;
	char **v = NULL, **nv;
	size_t n = 0;

	d = opendir(dir);
	if (d == NULL)
		return error_set(cause, "model repository %s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		nv = xrealloc(v, (n + 1) * sizeof *v);
		if (nv == NULL || (nv[n] = xstrdup(de->d_name)) == NULL) {
			free(nv ? nv : v);
			closedir(d);
			return error_set(cause, "out of memory");
		}
		v = nv;
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof *v, repository_cmp_names);
	*names = v;
	*count = n;
	return 0;
}

/* Load every model directory under dir. */
int
repository_load(device_t *dev, const char *dir, repository_t **out, char **cause)
{
	repository_t *r;
	char **names = NULL;
	size_t n = 0, i;

	if (repository_list(dir, &names, &n, cause) != 0)
		return -1;
	r = xcalloc(1, sizeof *r);
	if (r == NULL || (r->dir = xstrdup(dir)) == NULL) {
		free(r);
		r = NULL;
	}
	for (i = 0; i < n; i++) {
		if (r != NULL)
			repository_load_one(r, dev, names[i]);
		free(names[i]);
	}
	free(names);
	if (r == NULL)
		return error_set(cause, "out of memory");
	*out = r;
	return 0;
}

/* Find a model by name. */
model_t *
repository_find(const repository_t *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->count; i++)
		if (strcmp(r->models[i]->name, name) == 0)
			return r->models[i];
	return NULL;
}

/* Find a failure by directory name. */
const struct repository_failure *
repository_find_failure(const repository_t *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nfailures; i++)
		if (strcmp(r->failures[i].name, name) == 0)
			return &r->failures[i];
	return NULL;
}

/* Free everything. */
void
repository_free(repository_t *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->count; i++)
		model_free(r->models[i]);
	for (i = 0; i < r->nfailures; i++) {
		free(r->failures[i].name);
		free(r->failures[i].error);
	}
	free(r->failures);
	free(r->models);
	free(r->dir);
	free(r);
}
