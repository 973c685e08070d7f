/*
 * repository.h: the live model registry.
 *
 * Contract:
 *  - Per model name (a directory of the model repository, or one named by a
 *    load request) the registry keeps its loaded versions, each a model_t
 *    with its batcher queue, a state (LOADING, READY, UNLOADING,
 *    UNAVAILABLE) and the last failure with the file it names.
 *  - Lookups return a referenced handle (model_ref_t): the model and its
 *    queue stay valid until repository_release, which the request calls
 *    once its completion ran.  No lookup ever sees a freed model.
 *  - A (re)load builds the new version fully (model_load_version, batcher
 *    queue with its batch contexts and graphs, model_warmup) beside the
 *    old one, then publishes it; the old one is unpublished and freed (its
 *    queue drained, its threads joined) by the registry's reaper thread
 *    when its last reference goes.  A failing load leaves what served
 *    serving and records why.
 *  - One lock guards the tables; loads and unloads are serialised by a
 *    second lock and never hold the first while loading.
 *  - Model ids (for the shared-memory protocol) are dense, 0 .. n-1, and
 *    stable for the registry's life: a name gets one when first seen (its
 *    newest loaded version), a (name, version) pair one when first asked
 *    for.  An id whose model is unloaded stays valid and answers "model
 *    unloaded".
 */
#ifndef INFERD_REPOSITORY_H
#define INFERD_REPOSITORY_H

#include <stddef.h>
#include <stdint.h>

#include "batcher.h"
#include "device.h"
#include "device_set.h"
#include "metrics.h"
#include "model.h"

typedef struct repository repository_t;

/* Triton's model states. */
enum repository_state {
	REPOSITORY_LOADING,
	REPOSITORY_READY,
	REPOSITORY_UNLOADING,
	REPOSITORY_UNAVAILABLE,
};

/* model_control_mode: which models load at start and what rescans do. */
enum repository_control {
	REPOSITORY_CONTROL_NONE,	/* all at start; SIGHUP rescans; no load/unload API */
	REPOSITORY_CONTROL_EXPLICIT,	/* only load_model at start; load/unload API; SIGHUP rescans loaded ones */
	REPOSITORY_CONTROL_POLL,	/* all at start; rescans every poll interval and on SIGHUP */
};

/* The most ids (names and pinned versions together). */
#define REPOSITORY_MAX_IDS 65536u

/* A loaded model version held by a reference (read-only for the holder). */
typedef struct model_ref {
	model_t *model;
	batcher_queue_t *queue;		/* the first instance's queue (see repository_queue) */
	int64_t version;
	/* Private to repository.c. */
	unsigned refs;			/* atomic; the registry holds one while published */
	batcher_queue_t *queues[MODEL_MAX_INSTANCES];	/* one per instance of its instance_group */
	unsigned char queue_on_gpu[MODEL_MAX_INSTANCES];	/* queues[i]'s instance runs on a GPU */
	int nqueues;
	model_t *copies[DEVICE_SET_MAX];	/* the model bound to each other device with instances */
	int ncopies;
	double load_seconds;
	int borrowed;			/* repository_adopt without ownership: never freed here */
	uint64_t signature;		/* of its files when loaded */
	char *config_override;
	struct repository_model *owner;
	struct model_ref *next;		/* owner's versions (newest first), or the reaper's list */
} model_ref_t;

/* Where a lookup failed (the HTTP status follows from it). */
enum repository_miss {
	REPOSITORY_FOUND = 0,
	REPOSITORY_UNKNOWN = -1,	/* no model of that name (or id): 404 */
	REPOSITORY_NOT_READY = -2,	/* known, but not loaded: the reason says why */
	REPOSITORY_NO_VERSION = -3,	/* loaded, but not that version: 404 */
};

struct repository_options {
	device_t *dev;			/* the daemon's device: every version is loaded there first */
	device_set_t *devices;		/* where instances may run (NULL: a set of dev alone, made here) */
	batcher_t *batcher;
	struct metrics *metrics;	/* may be NULL */
	const char *dir;
	enum repository_control control;
	int inflight;			/* batch contexts per version (device memory check) */
	int settle_secs;		/* a rescan loads files left alone this long (0: at once) */
	size_t staging_bytes;		/* pinned_pool_bytes: a model whose one row does not fit is refused (0: no check) */
	/* Called as the start-up load begins model i of n (may be NULL): start-up progress. */
	void (*progress)(void *arg, size_t i, size_t n, const char *name);
	void *progress_arg;
};

/*
 * Make the registry and start its reaper thread; nothing is loaded yet
 * (repository_load_startup does that).  -1 with *cause on failure.
 */
int repository_create(const struct repository_options *o, repository_t **out, char **cause);
/*
 * Load version `version` of the model in model_dir onto dev (no repository
 * needed): its files from the version directory, or from model_dir in the
 * flat layout (repository_version_dir), then model_load_version.
 */
int repository_version_load(device_t *dev, const char *model_dir, int64_t version, const char *config_override,
    model_t **out, char **cause);
/*
 * The start-up load: every model directory (none and poll modes), or the
 * names in load_models (explicit mode; NULL-terminated).  Failures are
 * recorded per model, never returned; -1 only when the repository
 * directory cannot be read.
 */
int repository_load_startup(repository_t *r, char *const *load_models, char **cause);
/*
 * Load or reload model name (versions under its version_policy); with
 * config_override (JSON object text, or NULL) its keys replace model.json's.
 * Unchanged versions are kept; changed ones are swapped; versions the policy
 * no longer selects are unloaded.  -1 with *cause (naming the file) when
 * no version could be loaded: what served before still serves.
 */
int repository_load_model(repository_t *r, const char *name, const char *config_override,
    char **cause);
/*
 * Publish an already loaded model m as version m->version of m->name, with
 * its queue q (may be NULL without a batcher: tests and fuzz targets).
 * owned: unloading frees m (else the caller keeps it).  -1 on OOM.
 */
int repository_adopt(repository_t *r, model_t *m, batcher_queue_t *q, int owned, char **cause);
/* Unload every version of name; in-flight requests finish first.  -1 when unknown. */
int repository_unload_model(repository_t *r, const char *name, char **cause);
/*
 * Rescan the repository: new models and versions load (none and poll
 * modes; explicit mode rescans only the models it loaded), changed ones
 * reload (each once its files have been left alone for settle_secs),
 * versions no longer selected and models whose directory is gone unload.
 * Logs what it did.
 */
void repository_rescan(repository_t *r);
/*
 * Milliseconds until the rescan that versions whose files were still changing
 * at the last rescan want (a rescan loads a version only once its files have
 * been left alone for settle_secs; until then what served keeps serving); -1
 * when none waits.
 */
int64_t repository_settle_due_ms(repository_t *r);

/*
 * Loads stop early at shutdown.  stopping (NULL: never) is asked between
 * models, between versions and between a version's long steps (before its
 * warm-up, before its queues and graphs are made) and answers 1 once a stop
 * is asked (the daemon: a stop signal waits while its main thread loads);
 * repository_stop_loads makes it so for good (the daemon once it took the
 * signal, for a load on another thread).  An abandoned load keeps what
 * served; it and the loads left out are logged.
 */
void repository_set_stop_check(repository_t *r, int (*stopping)(void *arg), void *arg);
void repository_stop_loads(repository_t *r);
/* Whether loads are abandoned now (asking stopping). */
int repository_stopping(repository_t *r);
/*
 * Mark the start-up as finished (the daemon, once its start-up loads are done
 * and its servers can take requests), remembering how many models failed.
 */
void repository_startup_finish(repository_t *r);
/*
 * Server readiness: 0 until repository_startup_finish; then 1, except that
 * with strict (strict_readiness) a start-up where a model failed to load
 * stays 0.
 */
int repository_server_ready(repository_t *r, int strict);

/*
 * Take a reference to version (0: the newest loaded) of name.  On a miss
 * returns REPOSITORY_UNKNOWN or REPOSITORY_NOT_READY with *cause saying why.
 */
int repository_acquire(repository_t *r, const char *name, int64_t version, model_ref_t **out,
    char **cause);
/* The same for a model id (see the contract); "model unloaded" when its model went away. */
int repository_acquire_id(repository_t *r, uint32_t id, model_ref_t **out, char **cause);
/* The id of (name, version): version 0 is the name's own id.  -1 when unknown. */
int repository_id(repository_t *r, const char *name, int64_t version, uint32_t *id, char **cause);
/*
 * The queue a request of ref goes to: with several instances
 * (instance_group), the least busy one, so formed batches run on free
 * instances side by side.  repository_queue_gpu picks among the instances on
 * a GPU only (a request whose tensors are in CUDA memory); with none there,
 * the first queue (which refuses such a request with the reason).
 */
batcher_queue_t *repository_queue(const model_ref_t *ref);
batcher_queue_t *repository_queue_gpu(const model_ref_t *ref);
/* Drop a reference (NULL is ignored); the last one of an unpublished version hands it to the reaper. */
void repository_release(model_ref_t *ref);
/* How many ids there are (0 .. count-1). */
size_t repository_name_count(repository_t *r);

/* Call fn for every published version (under the lock: fn must not call back into the registry). */
void repository_foreach(repository_t *r, void (*fn)(const model_ref_t *ref, void *arg), void *arg);
/*
 * Triton's repository index: [{"name","version","state","reason"}], malloc'ed
 * JSON.  A served version is one READY row; after a failed reload of it its
 * reason says so.  A version that failed and serves nothing is UNAVAILABLE.
 */
char *repository_index_json(repository_t *r, size_t *len, char **cause);
/* Prometheus lines per model and version: state, load seconds, busy seconds (malloc'ed, NULL on OOM). */
char *repository_metrics_text(repository_t *r);
/* Counts for the start-up summary. */
void repository_counts(repository_t *r, size_t *loaded, size_t *failed);
const char *repository_dir(const repository_t *r);
enum repository_control repository_control_mode(const repository_t *r);
/* The control mode's name. */
const char *repository_control_name(enum repository_control c);

/*
 * Unload everything and wait until every version is freed, stop the
 * reaper, free (NULL is ignored).  Call after the servers stopped and
 * before batcher_free.
 */
void repository_free(repository_t *r);

#endif
