/* repository_load.c: loading, swapping and unloading model versions, and rescanning the repository. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "compile_cache.h"
#include "error.h"
#include "fault.h"
#include "kserve.h"
#include "log.h"
#include "file_copy.h"
#include "model_verdict.h"
#include "model_warmup.h"
#include "pinned_pool.h"
#include "repository_impl.h"
#include "repository_scan.h"

/* Refuse a load that would not fit in dev's free memory (where the device can tell). */
static int
repository_check_memory(device_t *dev, const char *what, uint64_t need, char **cause)
{
	size_t free_bytes = 0, total = 0;
	int rc = device_memory_info(dev, &free_bytes, &total, cause);

	if (rc != 0)
		return rc > 0 ? 0 : error_prefix(cause, "checking device memory of %s", device_name(dev));
	if (need > free_bytes)
		return error_set(cause, "not enough device memory on %s for %s: it needs %" PRIu64 " bytes, "
		    "%zu of %zu are free", device_name(dev), what, need, free_bytes, total);
	return 0;
}

/* Load version `version` of the model in dir, from the directory its files are in. */
int
repository_version_load(device_t *dev, const char *dir, int64_t version, const char *config_override,
    model_t **out, char **cause)
{
	char *files_dir;
	int rc;

	if (repository_version_dir(dir, version, &files_dir, cause) != 0)
		return -1;
	rc = model_load_version(dev, dir, files_dir, version, config_override, out, cause);
	free(files_dir);
	return rc;
}

/* Where a version's instances run: a device, how many instances there, and the model copy bound to it. */
struct placement {
	device_t *dev;
	int count;
	model_t *model;
};
struct placements {
	struct placement p[DEVICE_SET_MAX];
	int n;
};

/* Add count instances on dev (merged with the device's earlier ones). */
static int
placement_add(struct placements *pl, device_t *dev, int count, char **cause)
{
	int i;

	for (i = 0; i < pl->n && pl->p[i].dev != dev; i++)
		;
	if (i == pl->n) {
		if (pl->n == DEVICE_SET_MAX)
			return error_set(cause, "instance_group: more than %d devices", DEVICE_SET_MAX);
		pl->p[pl->n++] = (struct placement){ dev, 0, NULL };
	}
	pl->p[i].count += count;
	return 0;
}

/* The devices one group runs on: its own, or the default placement; returns how many. */
static int
group_devices(repository_t *r, const struct model_instance_group *g, int k, device_t **devs, char **cause)
{
	int d;

	if (g == NULL || g->ndevices == 0)
		return device_set_defaults(r->o.devices, devs, cause);
	for (d = 0; d < g->ndevices; d++)
		if (device_set_get(r->o.devices, &g->devices[d], &devs[d], cause) != 0)
			return error_prefix(cause, "instance_group %d", k);
	return g->ndevices;
}

/* Where m's instance_group puts its instances (one on the default placement without one). */
static int
repository_placements(repository_t *r, const model_t *m, struct placements *pl, char **cause)
{
	device_t *devs[DEVICE_SET_MAX > MODEL_MAX_GROUP_DEVICES ? DEVICE_SET_MAX : MODEL_MAX_GROUP_DEVICES];
	int k, d, n, total = 0, ngroups = m->instances.ngroups > 0 ? m->instances.ngroups : 1;

	pl->n = 0;
	for (k = 0; k < ngroups; k++) {
		const struct model_instance_group *g = m->instances.ngroups > 0 ? &m->instances.groups[k] : NULL;
		int count = g != NULL ? g->count : 1;

		if ((n = group_devices(r, g, k, devs, cause)) < 0)
			return -1;
		for (d = 0; d < n; d++) {
			if (placement_add(pl, devs[d], count, cause) != 0)
				return -1;
			total += count;
		}
	}
	if (total > MODEL_MAX_INSTANCES)
		return error_set(cause, "instance_group: %d instances in all (at most %d)", total, MODEL_MAX_INSTANCES);
	return 0;
}

/*
 * Bind a copy of the model to every placement's device: the one already
 * loaded (on the daemon's device) where it is placed, a fresh load of the
 * same files elsewhere.  When the daemon's device has no instance, the
 * loaded copy is freed and the first placement's becomes ref->model.
 */
static int
repository_bind_copies(repository_t *r, model_ref_t *ref, const char *dir, int64_t version, const char *what,
    uint64_t bytes, struct placements *pl, char **cause)
{
	model_t *m0 = ref->model;
	int i, used = 0;

	for (i = 0; i < pl->n; i++) {
		if (pl->p[i].dev == m0->dev) {
			pl->p[i].model = m0;
			used = 1;
			continue;
		}
		if (repository_check_memory(pl->p[i].dev, what, bytes, cause) != 0 ||
		    repository_version_load(pl->p[i].dev, dir, version, ref->config_override, &pl->p[i].model, cause) != 0)
			return error_prefix(cause, "the copy for %s", device_name(pl->p[i].dev));
		ref->copies[ref->ncopies++] = pl->p[i].model;
	}
	if (!used) {
		/* The first copy stands for the version (names, shapes, memory report). */
		ref->model = ref->copies[0];
		memmove(ref->copies, ref->copies + 1, (size_t)--ref->ncopies * sizeof ref->copies[0]);
		model_free(m0);
	}
	return 0;
}

/* Check each device's room for its contexts, warm every copy up, decide its padding (and the first's precision figure), or recall them for the bytes read (dg). */
static int
repository_prepare(repository_t *r, const char *what, struct placements *pl, const struct file_copy_digest *dg,
    char **cause)
{
	int i;

	for (i = 0; i < pl->n; i++)
		if (repository_check_memory(pl->p[i].dev, what, (uint64_t)pl->p[i].model->mem.arena_bytes *
		    (uint64_t)r->o.inflight * (uint64_t)pl->p[i].count, cause) != 0 ||
		    model_warmup(pl->p[i].model, cause) != 0 || model_verdict_checks(pl->p[i].model, dg, i == 0, cause) != 0)
			return -1;
	return 0;
}

/* One batcher queue per instance, on its placement's copy; -1 with the ones made detached again. */
static int
repository_attach(repository_t *r, model_ref_t *ref, const struct placements *pl, char **cause)
{
	int i, k;

	ref->nqueues = 0;
	for (i = 0; i < pl->n; i++)
		for (k = 0; k < pl->p[i].count; k++) {
			if (batcher_attach(r->o.batcher, pl->p[i].model, &ref->queues[ref->nqueues], cause) != 0)
				return error_prefix(cause, "instance %d (%s)", ref->nqueues, device_name(pl->p[i].dev));
			ref->queue_on_gpu[ref->nqueues++] = (unsigned char)device_is_gpu(pl->p[i].dev);
		}
	ref->queue = ref->queues[0];
	/* The version's memory report: the weights of every copy, plus every instance's contexts. */
	for (i = 0; i < ref->ncopies; i++)
		model_memory_add(&ref->model->memory, &ref->copies[i]->memory);
	for (i = 0; i < ref->nqueues; i++)
		batcher_queue_memory(ref->queues[i], &ref->model->memory);
	return 0;
}

#ifdef INFERD_FAULT_INJECTION
/* repository_stopping for a hook that takes a void pointer. */
static int
repository_stop_asked(void *arg)
{
	return repository_stopping(arg);
}
#endif

/* -1 (with *cause) once a stop is asked: the load goes no further. */
static int
repository_check_stop(repository_t *r, char **cause)
{
	return repository_stopping(r) ? error_set(cause, "abandoned: the daemon is stopping") : 0;
}

/*
 * The HTTP door stages a request's tensors in the pinned pool, so one row
 * of the model at its maximum dims must fit there (larger requests wait
 * for room or, over the whole pool, are refused per request).
 */
static int
repository_check_staging(const repository_t *r, const model_t *m, char **cause)
{
	size_t need = pinned_pool_model_bytes(m, 1, KSERVE_TENSOR_ALIGN);

	if (r->o.staging_bytes == 0 || (need != 0 && need <= r->o.staging_bytes))
		return 0;
	return error_set(cause, "one row at its maximum dims needs %zu bytes of HTTP staging memory, more "
	    "than pinned_pool_bytes (%zu): raise pinned_pool_bytes or lower max_dims", need, r->o.staging_bytes);
}

/* Load, check, queue and warm up one version beside whatever serves; *out has one reference (the registry's). */
static int
repository_build(repository_t *r, const char *name, const char *dir, int64_t version,
    const char *config_override, model_ref_t **out, char **cause)
{
	uint64_t t0 = clock_now_us(), t1 = t0, t2 = t0;
	model_ref_t *ref = xcalloc(1, sizeof *ref);
	struct repository_files files;
	struct file_copy_digest dg;
	struct placements pl;
	char what[256];
	int i;

	repository_scan_files(dir, version, &files);
	snprintf(what, sizeof what, "model '%s' version %" PRId64, name, version);
	if (ref == NULL)
		return error_set(cause, "out of memory");
	if (config_override != NULL && (ref->config_override = xstrdup(config_override)) == NULL)
		goto oom;
	FAULT_MARK("start of model %s", name);
	FAULT_HOLD_LOAD(name, repository_stop_asked, r);
	file_copy_digest_begin();
	if (repository_check_memory(r->o.dev, what, files.bytes, cause) != 0 ||
	    repository_version_load(r->o.dev, dir, version, config_override, &ref->model, cause) != 0) {
		file_copy_digest_end(&dg);
		FAULT_MARK("end of model %s", name);
		goto fail;
	}
	file_copy_digest_end(&dg);
	FAULT_MARK("end of model %s", name);
	t1 = clock_now_us();
	if (strcmp(ref->model->name, name) != 0) {
		error_set(cause, "%s/model.json names the model '%s': it must be its directory's name",
		    dir, ref->model->name);
		goto fail;
	}
	if (repository_check_staging(r, ref->model, cause) != 0 ||
	    repository_placements(r, ref->model, &pl, cause) != 0 ||
	    repository_bind_copies(r, ref, dir, version, what, files.bytes, &pl, cause) != 0 ||
	    repository_check_stop(r, cause) != 0 || repository_prepare(r, what, &pl, &dg, cause) != 0)
		goto fail;
	t2 = clock_now_us();
	if (repository_check_stop(r, cause) != 0 || repository_attach(r, ref, &pl, cause) != 0)
		goto fail;
	/* Where a load's time goes (the file and its graph, the checks at load, the serving contexts). */
	LOG_DEBUG("%s: read and bound in %.3f s, checked (warm-up, padding, precision) in %.3f s, serving contexts "
	    "compiled and captured in %.3f s", what, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
	    (double)(clock_now_us() - t2) / 1e6);
	ref->version = version;
	ref->signature = files.signature;
	ref->refs = 1;
	ref->load_seconds = (double)(clock_now_us() - t0) / 1e6;
	*out = ref;
	return 0;
oom:
	error_set(cause, "out of memory");
fail:
	error_prefix(cause, "%s not loaded", what);
	for (i = 0; i < ref->nqueues; i++)
		batcher_detach(r->o.batcher, ref->queues[i]);
	for (i = 0; i < ref->ncopies; i++)
		model_free(ref->copies[i]);
	model_free(ref->model);
	free(ref->config_override);
	free(ref);
	return -1;
}

/* " on cuda:0 x1, cpu x1": the devices of ref's instances, in queue order. */
static void
repository_where(const model_ref_t *ref, char *buf, size_t len)
{
	size_t n = 0;
	const char *name, *prev = NULL;
	int i, count = 0;

	buf[0] = '\0';
	for (i = 0; i <= ref->nqueues; i++) {
		name = i < ref->nqueues ? device_name(batcher_queue_device(ref->queues[i])) : NULL;
		if (prev != NULL && name != prev && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%.*s x%d", n == 0 ? " on " : ", ",
			    (int)strcspn(prev, " "), prev, count);
		count = name == prev ? count + 1 : 1;
		prev = name;
	}
}

/* Whether m's published version v is there with the same files and override (lock held). */
static int
repository_unchanged(struct repository_model *m, int64_t v, uint64_t sig, const char *override)
{
	model_ref_t *ref;

	for (ref = m->versions; ref != NULL; ref = ref->next)
		if (ref->version == v)
			return ref->signature == sig && (override == NULL ||
			    (ref->config_override != NULL && strcmp(ref->config_override, override) == 0));
	return 0;
}

/* Save the compile cache's new choices, and log how many choices the load took from it and how many it searched. */
static void
repository_compile_cache_report(const char *name, int64_t v)
{
	unsigned long hits, misses;

	compile_cache_thread_counts(&hits, &misses);
	if (!compile_cache_enabled())
		return;
	compile_cache_flush_all();
	LOG_INFO("model '%s' version %" PRId64 ": compile cache: %lu hits, %lu misses (engine and algorithm "
	    "choices and load-check verdicts taken from the cache, and searched or checked)", name, v, hits, misses);
}

/*
 * Load version v of m unless it is loaded unchanged; publish it, retiring the
 * one it replaces.  With settle (a rescan's), a version whose files are still
 * changing is left for a later rescan: 1.
 */
static int
repository_load_version(repository_t *r, struct repository_model *m, const struct repository_entry *e,
    int64_t v, const char *override, int settle, char **cause)
{
	struct repository_files files;
	model_ref_t *ref = NULL, *old;
	char where[256];
	unsigned long hits, misses;
	int same, rc;

	repository_scan_files(e->dir, v, &files);
	pthread_mutex_lock(&r->lock);
	same = repository_unchanged(m, v, files.signature, override);
	pthread_mutex_unlock(&r->lock);
	if (same)
		return 0;
	if (settle && !repository_settling_ready(&r->settling, m->name, e->dir, v, &files, r->o.settle_secs))
		return 1;
	pthread_mutex_lock(&r->lock);
	if (m->versions == NULL)
		m->state = REPOSITORY_LOADING;
	pthread_mutex_unlock(&r->lock);
	LOG_INFO("model '%s' version %" PRId64 ": loading from %s", m->name, v, e->dir);
	compile_cache_thread_counts(&hits, &misses);	/* from zero: the load compiles on this thread */
	rc = repository_build(r, m->name, e->dir, v, override, &ref, cause);
	repository_compile_cache_report(m->name, v);
	repository_trim();	/* what the load freed (parsing, library set-up) goes back to the system */
	if (rc != 0) {
		if (repository_stopping(r))
			LOG_WARN("%s", *cause);
		else
			LOG_ERROR("%s", *cause);
		pthread_mutex_lock(&r->lock);
		repository_model_fail(m, v, *cause);
		if (m->state == REPOSITORY_LOADING)
			m->state = REPOSITORY_UNAVAILABLE;
		repository_model_settle(m);
		pthread_mutex_unlock(&r->lock);
		return -1;
	}
	repository_where(ref, where, sizeof where);
	pthread_mutex_lock(&r->lock);
	old = repository_publish(m, ref);
	pthread_mutex_unlock(&r->lock);
	LOG_INFO("model '%s' %s (version %" PRId64 ") from %s in %.3f s (%d inputs, %d outputs, max batch %d, "
	    "arena %zu bytes, %d instance%s%s; device memory %" PRIu64 " bytes: weights %" PRIu64 ", activations %"
	    PRIu64 ", workspace %" PRIu64 ", graphs %" PRIu64 ")", m->name, old != NULL ? "reloaded" : "loaded", v,
	    ref->model->version_dir, ref->load_seconds, ref->model->ninputs, ref->model->noutputs,
	    ref->model->max_batch_size, ref->model->mem.arena_bytes, ref->nqueues, ref->nqueues == 1 ? "" : "s",
	    where, model_memory_total(&ref->model->memory), ref->model->memory.weights, ref->model->memory.activations,
	    ref->model->memory.workspace, ref->model->memory.graphs);
	repository_release(old);
	return 0;
}

/* Whether v is among e's versions. */
static int
repository_wanted(const struct repository_entry *e, int64_t v)
{
	size_t i;

	for (i = 0; i < e->nversions; i++)
		if (e->versions[i] == v)
			return 1;
	return 0;
}

/* Unpublish m's versions that keep is not NULL and does not select (all when keep is NULL). */
static void
repository_retire(repository_t *r, struct repository_model *m, const struct repository_entry *keep)
{
	model_ref_t *ref, *next, *drop = NULL;

	pthread_mutex_lock(&r->lock);
	for (ref = m->versions; ref != NULL; ref = next) {
		next = ref->next;
		if (keep != NULL && repository_wanted(keep, ref->version))
			continue;
		repository_unpublish(ref);
		ref->next = drop;
		drop = ref;
	}
	pthread_mutex_unlock(&r->lock);
	for (ref = drop; ref != NULL; ref = next) {
		next = ref->next;
		LOG_INFO("model '%s' version %lld: unloading once its requests finish", m->name,
		    (long long)ref->version);
		repository_release(ref);
	}
}

/*
 * Bring m in line with its scanned entry e; -1 (first failure in *cause) when
 * a version failed.  settle: a rescan's (see repository_load_version).
 */
static int
repository_sync(repository_t *r, struct repository_model *m, const struct repository_entry *e,
    const char *override, int settle, char **cause)
{
	size_t i;
	int rc = 0, waiting = 0, got;

	if (e->error != NULL) {
		LOG_ERROR("model '%s' not loaded: %s", m->name, e->error);
		pthread_mutex_lock(&r->lock);
		repository_model_fail(m, 0, e->error);
		pthread_mutex_unlock(&r->lock);
		return error_set(cause, "model '%s' not loaded: %s", m->name, e->error);
	}
	for (i = e->nversions; i-- > 0;) {	/* newest first: it serves soonest */
		char *err = NULL;

		if (repository_stopping(r)) {
			LOG_WARN("model '%s': the daemon is stopping: %zu more version%s not loaded", m->name, i + 1,
			    i == 0 ? "" : "s");
			if (cause != NULL && *cause == NULL)
				error_set(cause, "model '%s': abandoned: the daemon is stopping", m->name);
			rc = -1;
			break;
		}
		if ((got = repository_load_version(r, m, e, e->versions[i], override, settle, &err)) > 0)
			waiting = 1;
		else if (got != 0) {
			rc = -1;
			if (cause != NULL && *cause == NULL) {
				*cause = err;
				err = NULL;
			}
		}
		free(err);
	}
	/* A failed version keeps what served: nothing is unloaded for it. */
	if (rc != 0)
		return -1;
	/* So does a version whose files are still changing, until a later rescan loads it. */
	if (waiting)
		return 0;
	pthread_mutex_lock(&r->lock);
	repository_model_fail(m, 0, NULL);
	pthread_mutex_unlock(&r->lock);
	repository_retire(r, m, e);
	return 0;
}

/* Scan and sync one model by directory name (load_lock held). */
static int
repository_load_locked(repository_t *r, const char *name, const char *override, int request, char **cause)
{
	struct repository_entry e = { 0 };
	struct repository_model *m;
	int rc;

	if (repository_scan_model_config(r->dir, name, override, &e, cause) != 0)
		return -1;
	pthread_mutex_lock(&r->lock);
	if ((m = repository_model_add(r, name)) != NULL && request)
		m->requested = 1;
	pthread_mutex_unlock(&r->lock);
	if (m == NULL) {
		repository_entry_free(&e);
		return error_set(cause, "out of memory");
	}
	rc = repository_sync(r, m, &e, override, 0, cause);
	repository_entry_free(&e);
	return rc;
}

/* Load or reload one model. */
int
repository_load_model(repository_t *r, const char *name, const char *config_override, char **cause)
{
	int rc;

	pthread_mutex_lock(&r->load_lock);
	rc = repository_load_locked(r, name, config_override, 1, cause);
	pthread_mutex_unlock(&r->load_lock);
	return rc;
}

/* Unload every version of name. */
int
repository_unload_model(repository_t *r, const char *name, char **cause)
{
	struct repository_model *m;

	pthread_mutex_lock(&r->load_lock);
	pthread_mutex_lock(&r->lock);
	if ((m = repository_model_find(r, name)) != NULL) {
		m->requested = 0;
		repository_model_fail(m, 0, NULL);
	}
	pthread_mutex_unlock(&r->lock);
	if (m != NULL)
		repository_retire(r, m, NULL);
	pthread_mutex_unlock(&r->load_lock);
	if (m == NULL)
		return error_set(cause, "unknown model '%s'", name);
	return 0;
}

/*
 * Start-up: a model about to be loaded is in the index as LOADING from the
 * start, not only once its turn comes (a request for it hears that it is
 * loading, not that there is no such model).
 */
static void
repository_mark_loading(repository_t *r, const char *name)
{
	struct repository_model *m;

	pthread_mutex_lock(&r->lock);
	if ((m = repository_model_add(r, name)) != NULL && m->versions == NULL && m->reason == NULL)
		m->state = REPOSITORY_LOADING;
	pthread_mutex_unlock(&r->lock);
}

/* After the start-up loads: a model marked LOADING that none of them published is UNAVAILABLE. */
static void
repository_unmark_loading(repository_t *r)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmodels; i++)
		if (r->models[i]->state == REPOSITORY_LOADING && r->models[i]->versions == NULL)
			r->models[i]->state = REPOSITORY_UNAVAILABLE;
	pthread_mutex_unlock(&r->lock);
}

/* Whether a rescan looks at m in this mode (lock held). */
static int
repository_rescans(repository_t *r, const struct repository_model *m)
{
	return r->o.control != REPOSITORY_CONTROL_EXPLICIT || m->requested;
}

/* Unload the models the scan no longer finds, or (explicit mode) no longer wants. */
static void
repository_drop_missing(repository_t *r, const struct repository_entry *e, size_t n)
{
	struct repository_model *m;
	size_t i, k;
	int loaded;

	for (i = 0;; i++) {
		pthread_mutex_lock(&r->lock);
		m = i < r->nmodels ? r->models[i] : NULL;
		loaded = m != NULL && m->versions != NULL;
		pthread_mutex_unlock(&r->lock);
		if (m == NULL)
			break;
		for (k = 0; k < n && strcmp(e[k].name, m->name) != 0; k++)
			;
		if (k == n && loaded) {
			LOG_INFO("model '%s': its directory is gone; unloading it", m->name);
			repository_retire(r, m, NULL);
		}
	}
}

/* Log what m serves after its load in a start-up load or a rescan failed; had: it served before. */
static void
repository_log_failed(repository_t *r, struct repository_model *m, int startup, int had)
{
	char list[256];
	const model_ref_t *ref;
	size_t n = 0;

	list[0] = '\0';
	pthread_mutex_lock(&r->lock);
	for (ref = m->versions; ref != NULL && n < sizeof list; ref = ref->next)
		n += (size_t)snprintf(list + n, sizeof list - n, "%s%lld", n > 0 ? ", " : "", (long long)ref->version);
	pthread_mutex_unlock(&r->lock);
	if (n == 0)
		LOG_WARN("model '%s': the %s failed; it serves nothing", m->name, startup ? "start-up load" : "rescan's load");
	else
		LOG_WARN("model '%s': the %s failed; it %s version%s %s", m->name, startup ? "start-up load" : "rescan's load",
		    had ? "keeps serving" : "serves", strchr(list, ',') != NULL ? "s" : "", list);
}

/* Log the loads a stop leaves out: models from e[i] on (of n). */
static void
repository_log_abandoned(const char *what, const struct repository_entry *e, size_t i, size_t n)
{
	if (i < n)
		LOG_WARN("the daemon is stopping: the %s abandons its remaining loads (%zu of %zu models, from '%s' on, "
		    "not loaded or checked)", what, n - i, n, e[i].name);
	else
		LOG_WARN("the daemon is stopping: the %s ends early", what);
}

/*
 * Rescan the repository (load_lock held; startup: the start-up load, whose
 * versions never wait for their files to settle); -1 only when it cannot be read.
 */
static int
repository_rescan_locked(repository_t *r, int startup, char **cause)
{
	struct repository_entry *e = NULL;
	struct repository_model *m;
	size_t n = 0, i;
	int want, had, stop = 0;

	if (repository_scan(r->dir, &e, &n, cause) != 0)
		return -1;
	for (i = 0; startup && r->o.control != REPOSITORY_CONTROL_EXPLICIT && i < n; i++)
		repository_mark_loading(r, e[i].name);
	for (i = 0; i < n && !(stop = repository_stopping(r)); i++) {
		pthread_mutex_lock(&r->lock);
		m = repository_model_find(r, e[i].name);
		want = m != NULL ? repository_rescans(r, m) : r->o.control != REPOSITORY_CONTROL_EXPLICIT;
		if (want && m == NULL)
			m = repository_model_add(r, e[i].name);
		had = m != NULL && m->versions != NULL;
		pthread_mutex_unlock(&r->lock);
		if (startup && want && r->o.progress != NULL)
			r->o.progress(r->o.progress_arg, i + 1, n, e[i].name);
		if (want && m != NULL && repository_sync(r, m, &e[i], NULL, !startup, NULL) != 0 && !repository_stopping(r))
			repository_log_failed(r, m, startup, had);
	}
	if (stop)
		repository_log_abandoned(startup ? "start-up load" : "rescan", e, i, n);
	else
		repository_drop_missing(r, e, n);
	if (startup)
		repository_unmark_loading(r);
	repository_scan_free(e, n);
	return 0;
}

/* Rescan the repository; versions whose files are still changing wait (repository_settle_due_ms). */
void
repository_rescan(repository_t *r)
{
	char *cause = NULL;
	uint64_t due;

	pthread_mutex_lock(&r->load_lock);
	repository_settling_begin(&r->settling);
	if (repository_rescan_locked(r, 0, &cause) != 0) {
		LOG_ERROR("rescan: %s", cause);
		free(cause);
	}
	due = repository_settling_end(&r->settling);
	pthread_mutex_lock(&r->lock);
	r->settle_due_us = due;
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&r->load_lock);
}

/* Milliseconds until the rescan a version waiting for its files to settle wants; -1 when none waits. */
int64_t
repository_settle_due_ms(repository_t *r)
{
	uint64_t due, now = clock_now_us();

	pthread_mutex_lock(&r->lock);
	due = r->settle_due_us;
	pthread_mutex_unlock(&r->lock);
	if (due == 0)
		return -1;
	return due > now ? (int64_t)((due - now + 999) / 1000) : 0;
}

/* Load one load_model name at start-up, recording a failure even when its directory is missing. */
static void
repository_load_named(repository_t *r, const char *name)
{
	struct repository_model *m;
	char *why = NULL;

	pthread_mutex_lock(&r->load_lock);
	if (repository_load_locked(r, name, NULL, 1, &why) != 0) {
		if (repository_stopping(r))
			LOG_WARN("load_model %s: %s", name, why);
		else
			LOG_ERROR("load_model %s: %s", name, why);
		pthread_mutex_lock(&r->lock);
		if ((m = repository_model_add(r, name)) != NULL && m->reason == NULL)
			repository_model_fail(m, 0, why);
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&r->load_lock);
	free(why);
}

/* The start-up load. */
int
repository_load_startup(repository_t *r, char *const *load_models, char **cause)
{
	size_t i, n = 0;
	int rc = 0;

	if (r->o.control != REPOSITORY_CONTROL_EXPLICIT) {
		pthread_mutex_lock(&r->load_lock);
		rc = repository_rescan_locked(r, 1, cause);
		pthread_mutex_unlock(&r->load_lock);
		return rc;
	}
	while (load_models != NULL && load_models[n] != NULL)
		repository_mark_loading(r, load_models[n++]);
	for (i = 0; i < n; i++) {
		if (repository_stopping(r)) {
			LOG_WARN("the daemon is stopping: the start-up load abandons its remaining loads (load_model "
			    "names from '%s' on)", load_models[i]);
			break;
		}
		if (r->o.progress != NULL)
			r->o.progress(r->o.progress_arg, i + 1, n, load_models[i]);
		repository_load_named(r, load_models[i]);
	}
	repository_unmark_loading(r);
	return 0;
}
