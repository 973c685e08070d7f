/*
 * repository_impl.h: the registry's tables, shared by repository.c (tables,
 * references, reaper, lookups), repository_load.c (load, swap, unload,
 * rescan) and repository_report.c (index and metrics).  Not for callers.
 */
#ifndef INFERD_REPOSITORY_IMPL_H
#define INFERD_REPOSITORY_IMPL_H

#include <pthread.h>

#include "repository.h"
#include "repository_scan.h"

/* One model name: its published versions and how its last load went. */
struct repository_model {
	repository_t *registry;
	char *name;
	uint32_t id;
	enum repository_state state;
	char *reason;			/* last failure (names the file), NULL when none */
	int64_t failed_version;		/* the version that failed, 0 for the model as a whole */
	model_ref_t *versions;		/* published, newest first */
	size_t retiring;		/* unpublished versions the reaper has not freed yet */
	int requested;			/* explicit mode: loaded on request, so rescans keep it */
};

/* What an id names: a model (by index) and a version (0: the newest loaded). */
struct repository_pin {
	uint32_t model;
	int64_t version;
};

struct repository {
	struct repository_options o;
	char *dir;
	device_set_t *own_devices;	/* made when the options gave none (freed with the registry) */
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t reap;		/* dead grew, or stopping */
	pthread_cond_t reaped;		/* a version was freed */
	struct repository_model **models;	/* by id */
	size_t nmodels;
	struct repository_pin *ids;	/* by id: a model and a version (0: its newest) */
	size_t nids;
	model_ref_t *dead;		/* versions whose last reference went */
	int stopping;
	pthread_t reaper;
	int reaper_started;
	pthread_mutex_t load_lock;	/* one load, unload or rescan at a time */
	struct repository_settling settling;	/* versions waiting for their files to settle (load_lock) */
	uint64_t settle_due_us;		/* when the last rescan's waiting versions want another (lock; 0: none) */
	int (*stop_check)(void *arg);	/* repository_set_stop_check's (NULL: none) */
	void *stop_arg;
	int stop;			/* atomic: loads are abandoned from now on */
	int started;			/* atomic: repository_startup_finish was called */
	size_t startup_failed;		/* models that had failed then (written before started) */
};

/* The model called name, or NULL (lock held). */
struct repository_model *repository_model_find(repository_t *r, const char *name);
/* The model called name, made UNAVAILABLE when new (lock held); NULL on OOM. */
struct repository_model *repository_model_add(repository_t *r, const char *name);
/* Record why m (version v, 0: as a whole) failed (lock held); NULL reason clears it. */
void repository_model_fail(struct repository_model *m, int64_t v, const char *reason);
/* Publish ref as m's version ref->version, unpublishing the one it replaces; returns that one (lock held). */
model_ref_t *repository_publish(struct repository_model *m, model_ref_t *ref);
/* Unpublish ref from its model (lock held); the caller then drops the registry's reference. */
void repository_unpublish(model_ref_t *ref);
/* Set m's state from its versions (lock held). */
void repository_model_settle(struct repository_model *m);
/* Triton's name of a state. */
const char *repository_state_name(enum repository_state s);

/* Return the C library's free memory to the system (after a load or an unload). */
void repository_trim(void);

#endif
