/* repository.c: the live registry's tables, references, lookups and the reaper that frees unloaded versions. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "log.h"
#include "repository_impl.h"

/* Triton's name of a state. */
const char *
repository_state_name(enum repository_state s)
{
	static const char *const names[] = { "LOADING", "READY", "UNLOADING", "UNAVAILABLE" };

	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "UNAVAILABLE";
}

/* The control mode's name. */
const char *
repository_control_name(enum repository_control c)
{
	return c == REPOSITORY_CONTROL_EXPLICIT ? "explicit" : c == REPOSITORY_CONTROL_POLL ? "poll" : "none";
}

/* Free one version: drain and detach its queue, free the model. */
static void
repository_version_free(repository_t *r, model_ref_t *ref)
{
	int i;

	for (i = 0; i < ref->nqueues; i++)
		batcher_detach(r->o.batcher, ref->queues[i]);
	for (i = 0; i < ref->ncopies; i++)
		model_free(ref->copies[i]);
	if (!ref->borrowed)
		model_free(ref->model);
	free(ref->config_override);
	free(ref);
}

/*
 * Give the C library's free memory back to the system.  Loading a model
 * allocates from whichever thread loads it (an HTTP connection's, SIGHUP's,
 * the poller's), and glibc keeps what such a thread's arena freed: on a GPU
 * the CUDA libraries' load-time work left hundreds of MiB of free but
 * resident memory per load, so an unload seemed to leak.
 */
void
repository_trim(void)
{
#ifdef __GLIBC__
	(void)malloc_trim(0);
#endif
}

/* The reaper thread: free versions whose last reference went (never on a batcher thread). */
static void *
repository_reaper_main(void *arg)
{
	repository_t *r = arg;
	struct repository_model *m;
	model_ref_t *ref;
	int64_t version;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		if (r->dead == NULL) {
			if (r->stopping)
				break;
			pthread_cond_wait(&r->reap, &r->lock);
			continue;
		}
		ref = r->dead;
		r->dead = ref->next;
		m = ref->owner;
		version = ref->version;
		pthread_mutex_unlock(&r->lock);
		repository_version_free(r, ref);
		repository_trim();
		/* Logged once freed: whoever waits for this line finds the memory given back. */
		LOG_INFO("model '%s' version %lld unloaded", m->name, (long long)version);
		pthread_mutex_lock(&r->lock);
		m->retiring--;
		repository_model_settle(m);
		pthread_cond_broadcast(&r->reaped);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Make the registry and start its reaper. */
int
repository_create(const struct repository_options *o, repository_t **out, char **cause)
{
	repository_t *r = xcalloc(1, sizeof *r);
	int rc;

	if (r == NULL || (r->dir = xstrdup(o->dir)) == NULL) {
		free(r);
		return error_set(cause, "out of memory");
	}
	r->o = *o;
	r->o.dir = r->dir;
	/* Without the daemon's set (tests, tools), one of the registry's own around its device. */
	if (r->o.devices == NULL && r->o.dev != NULL) {
		if (device_set_create(r->o.dev, 0, 1, &r->own_devices, cause) != 0) {
			free(r->dir);
			free(r);
			return -1;
		}
		r->o.devices = r->own_devices;
	}
	if ((rc = pthread_mutex_init(&r->lock, NULL)) != 0 || (rc = pthread_mutex_init(&r->load_lock, NULL)) != 0 ||
	    (rc = pthread_cond_init(&r->reap, NULL)) != 0 || (rc = pthread_cond_init(&r->reaped, NULL)) != 0 ||
	    (rc = pthread_create(&r->reaper, NULL, repository_reaper_main, r)) != 0) {
		device_set_free(r->own_devices);
		free(r->dir);
		free(r);
		return error_set(cause, "repository: pthread: %s", strerror(rc));
	}
	r->reaper_started = 1;
	*out = r;
	return 0;
}

/* The model called name, or NULL (lock held). */
struct repository_model *
repository_model_find(repository_t *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nmodels; i++)
		if (strcmp(r->models[i]->name, name) == 0)
			return r->models[i];
	return NULL;
}

/* A new id for (model index, version) (lock held); -1 when full or out of memory. */
static int
repository_new_id(repository_t *r, size_t model, int64_t version, uint32_t *id)
{
	struct repository_pin *p;

	if (r->nids >= REPOSITORY_MAX_IDS || (p = xrealloc(r->ids, (r->nids + 1) * sizeof *p)) == NULL)
		return -1;
	r->ids = p;
	p[r->nids] = (struct repository_pin){ (uint32_t)model, version };
	*id = (uint32_t)r->nids++;
	return 0;
}

/* The model called name, made when new (lock held). */
struct repository_model *
repository_model_add(repository_t *r, const char *name)
{
	struct repository_model *m = repository_model_find(r, name), **v;

	if (m != NULL)
		return m;
	v = xrealloc(r->models, (r->nmodels + 1) * sizeof *v);
	if (v == NULL)
		return NULL;
	r->models = v;
	if ((m = xcalloc(1, sizeof *m)) == NULL || (m->name = xstrdup(name)) == NULL ||
	    repository_new_id(r, r->nmodels, 0, &m->id) != 0) {
		if (m != NULL)
			free(m->name);
		free(m);
		return NULL;
	}
	m->registry = r;
	m->state = REPOSITORY_UNAVAILABLE;
	r->models[r->nmodels++] = m;
	return m;
}

/* Record why m failed (lock held). */
void
repository_model_fail(struct repository_model *m, int64_t v, const char *reason)
{
	free(m->reason);
	m->reason = reason != NULL ? xstrdup(reason) : NULL;
	m->failed_version = v;
}

/* Set m's state from its versions (lock held). */
void
repository_model_settle(struct repository_model *m)
{
	if (m->versions != NULL)
		m->state = REPOSITORY_READY;
	else if (m->retiring > 0)
		m->state = REPOSITORY_UNLOADING;
	else if (m->state != REPOSITORY_LOADING)
		m->state = REPOSITORY_UNAVAILABLE;
}

/* Publish ref, newest first; returns the version it replaces (lock held). */
model_ref_t *
repository_publish(struct repository_model *m, model_ref_t *ref)
{
	model_ref_t **pp, *old = NULL;

	ref->owner = m;
	for (pp = &m->versions; *pp != NULL && (*pp)->version > ref->version; pp = &(*pp)->next)
		;
	if (*pp != NULL && (*pp)->version == ref->version) {
		old = *pp;
		*pp = old->next;
		old->next = NULL;
		m->retiring++;
	}
	ref->next = *pp;
	*pp = ref;
	repository_model_settle(m);
	return old;
}

/* Unpublish ref (lock held). */
void
repository_unpublish(model_ref_t *ref)
{
	struct repository_model *m = ref->owner;
	model_ref_t **pp;

	for (pp = &m->versions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == ref) {
			*pp = ref->next;
			ref->next = NULL;
			m->retiring++;
			break;
		}
	repository_model_settle(m);
}

/* The least busy instance's queue among all (gpu_only 0) or those on a GPU. */
static batcher_queue_t *
repository_least_busy(const model_ref_t *ref, int gpu_only)
{
	batcher_queue_t *best = NULL;
	size_t load, least = SIZE_MAX;
	int i;

	if (ref->nqueues < 2)
		return ref->queue;
	for (i = 0; i < ref->nqueues && least > 0; i++)
		if ((!gpu_only || ref->queue_on_gpu[i]) && (load = batcher_queue_load(ref->queues[i])) < least) {
			least = load;
			best = ref->queues[i];
		}
	return best != NULL ? best : ref->queue;
}

/* The least busy instance's queue. */
batcher_queue_t *
repository_queue(const model_ref_t *ref)
{
	return repository_least_busy(ref, 0);
}

/* The least busy queue of an instance on a GPU. */
batcher_queue_t *
repository_queue_gpu(const model_ref_t *ref)
{
	return repository_least_busy(ref, 1);
}

/* Drop a reference; the last one queues the version for the reaper. */
void
repository_release(model_ref_t *ref)
{
	repository_t *r;

	if (ref == NULL || __atomic_sub_fetch(&ref->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	r = ref->owner->registry;
	pthread_mutex_lock(&r->lock);
	ref->next = r->dead;
	r->dead = ref;
	pthread_cond_signal(&r->reap);
	pthread_mutex_unlock(&r->lock);
}

/* Take a reference to m's version (0: newest), or say why not (lock held). */
static int
repository_take(struct repository_model *m, int64_t version, model_ref_t **out, char **cause)
{
	model_ref_t *ref;

	for (ref = m->versions; ref != NULL && version != 0 && ref->version != version; ref = ref->next)
		;
	if (ref == NULL) {
		if (version != 0 && m->versions != NULL) {
			error_set(cause, "Request for unknown model: '%s' version %lld is not found "
			    "(no such version loaded; the newest loaded is %lld)",
			    m->name, (long long)version, (long long)m->versions->version);
			return REPOSITORY_NO_VERSION;
		}
		if (m->reason != NULL)
			error_set(cause, "Request for unknown model: '%s' has no available versions "
			    "(not ready: it failed to load: %s)", m->name, m->reason);
		else
			error_set(cause, "Request for unknown model: '%s' has no available versions "
			    "(not ready: %s)", m->name,
			    m->state == REPOSITORY_LOADING ? "it is loading" : "model unloaded");
		return REPOSITORY_NOT_READY;
	}
	__atomic_add_fetch(&ref->refs, 1, __ATOMIC_ACQ_REL);
	*out = ref;
	return REPOSITORY_FOUND;
}

/* Take a reference by name. */
int
repository_acquire(repository_t *r, const char *name, int64_t version, model_ref_t **out,
    char **cause)
{
	struct repository_model *m;
	int rc;

	pthread_mutex_lock(&r->lock);
	if ((m = repository_model_find(r, name)) == NULL) {
		error_set(cause, "Request for unknown model: '%s' is not found", name);
		rc = REPOSITORY_UNKNOWN;
	} else {
		rc = repository_take(m, version, out, cause);
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* Take a reference by id. */
int
repository_acquire_id(repository_t *r, uint32_t id, model_ref_t **out, char **cause)
{
	struct repository_model *m = NULL;
	int64_t version = 0;
	int rc;

	pthread_mutex_lock(&r->lock);
	if (id < r->nids) {
		m = r->models[r->ids[id].model];
		version = r->ids[id].version;
	}
	if (m == NULL) {
		error_set(cause, "unknown model id %u", id);
		rc = REPOSITORY_UNKNOWN;
	} else {
		rc = repository_take(m, version, out, cause);
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* The id of (m, version), made when new (lock held). */
static int
repository_pin(repository_t *r, struct repository_model *m, int64_t version, uint32_t *id)
{
	size_t i;

	for (i = 0; i < r->nids; i++)
		if (r->models[r->ids[i].model] == m && r->ids[i].version == version) {
			*id = (uint32_t)i;
			return 0;
		}
	for (i = 0; r->models[i] != m; i++)
		;
	return repository_new_id(r, i, version, id);
}

/* The id of (name, version); a pinned version must be loaded to get one. */
int
repository_id(repository_t *r, const char *name, int64_t version, uint32_t *id, char **cause)
{
	struct repository_model *m;
	model_ref_t *ref;
	int rc = -1;

	pthread_mutex_lock(&r->lock);
	if ((m = repository_model_find(r, name)) == NULL) {
		error_set(cause, "Request for unknown model: '%s' is not found", name);
	} else if (version == 0) {
		*id = m->id;
		rc = 0;
	} else {
		for (ref = m->versions; ref != NULL && ref->version != version; ref = ref->next)
			;
		if (ref == NULL)
			error_set(cause, "Request for unknown model: '%s' version %lld is not found",
			    name, (long long)version);
		else if ((rc = repository_pin(r, m, version, id)) != 0)
			error_set(cause, "no more model ids (%u in use)", REPOSITORY_MAX_IDS);
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* How many ids there are. */
size_t
repository_name_count(repository_t *r)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = r->nids;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* Call fn for every published version, under the lock. */
void
repository_foreach(repository_t *r, void (*fn)(const model_ref_t *ref, void *arg), void *arg)
{
	model_ref_t *ref;
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmodels; i++)
		for (ref = r->models[i]->versions; ref != NULL; ref = ref->next)
			fn(ref, arg);
	pthread_mutex_unlock(&r->lock);
}

/* Counts for the start-up summary. */
void
repository_counts(repository_t *r, size_t *loaded, size_t *failed)
{
	size_t i;

	*loaded = *failed = 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmodels; i++) {
		if (r->models[i]->versions != NULL)
			(*loaded)++;
		if (r->models[i]->reason != NULL)
			(*failed)++;
	}
	pthread_mutex_unlock(&r->lock);
}

/* The repository directory. */
const char *
repository_dir(const repository_t *r)
{
	return r->dir;
}

/* Set the stop check (before any load). */
void
repository_set_stop_check(repository_t *r, int (*stopping)(void *arg), void *arg)
{
	r->stop_check = stopping;
	r->stop_arg = arg;
}

/* Abandon loads from now on. */
void
repository_stop_loads(repository_t *r)
{
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
}

/* Whether loads are abandoned: stopped, or the stop check says so now (then for good). */
int
repository_stopping(repository_t *r)
{
	if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		return 1;
	if (r->stop_check == NULL || !r->stop_check(r->stop_arg))
		return 0;
	repository_stop_loads(r);
	return 1;
}

/* Mark the start-up finished, counting its failures. */
void
repository_startup_finish(repository_t *r)
{
	size_t loaded;

	repository_counts(r, &loaded, &r->startup_failed);
	__atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
}

/* Whether the server is ready (see repository.h). */
int
repository_server_ready(repository_t *r, int strict)
{
	if (!__atomic_load_n(&r->started, __ATOMIC_ACQUIRE))
		return 0;
	return !strict || r->startup_failed == 0;
}

/* The model control mode it runs in. */
enum repository_control
repository_control_mode(const repository_t *r)
{
	return r->o.control;
}

/* Publish an already loaded model. */
int
repository_adopt(repository_t *r, model_t *m, batcher_queue_t *q, int owned, char **cause)
{
	struct repository_model *rm;
	model_ref_t *ref = xcalloc(1, sizeof *ref), *old = NULL;

	if (ref == NULL)
		return error_set(cause, "out of memory");
	ref->model = m;
	ref->queue = ref->queues[0] = q;
	ref->nqueues = q != NULL;
	ref->version = m->version > 0 ? m->version : 1;
	ref->refs = 1;
	ref->borrowed = !owned;
	pthread_mutex_lock(&r->lock);
	if ((rm = repository_model_add(r, m->name)) != NULL)
		old = repository_publish(rm, ref);
	pthread_mutex_unlock(&r->lock);
	if (rm == NULL) {
		free(ref);
		return error_set(cause, "out of memory");
	}
	repository_release(old);
	return 0;
}

/* Unpublish every version of every model and wait until the reaper freed them all. */
static void
repository_unload_all(repository_t *r)
{
	model_ref_t *ref, *drop;
	size_t i, busy;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmodels; i++) {
		while ((ref = r->models[i]->versions) != NULL) {
			drop = ref;
			repository_unpublish(ref);
			pthread_mutex_unlock(&r->lock);
			repository_release(drop);
			pthread_mutex_lock(&r->lock);
		}
	}
	for (;;) {
		for (i = 0, busy = 0; i < r->nmodels; i++)
			busy += r->models[i]->retiring;
		if (busy == 0)
			break;
		pthread_cond_wait(&r->reaped, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
}

/* Unload everything, stop the reaper, free. */
void
repository_free(repository_t *r)
{
	size_t i;

	if (r == NULL)
		return;
	repository_unload_all(r);
	pthread_mutex_lock(&r->lock);
	r->stopping = 1;
	pthread_cond_signal(&r->reap);
	pthread_mutex_unlock(&r->lock);
	if (r->reaper_started)
		pthread_join(r->reaper, NULL);
	for (i = 0; i < r->nmodels; i++) {
		free(r->models[i]->name);
		free(r->models[i]->reason);
		free(r->models[i]);
	}
	free(r->models);
	free(r->ids);
	repository_settling_free(&r->settling);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->load_lock);
	pthread_cond_destroy(&r->reap);
	pthread_cond_destroy(&r->reaped);
	device_set_free(r->own_devices);
	free(r->dir);
	free(r);
}
