/* repository.h: the model repository, every model directory loaded at start-up. */
#ifndef INFERD_REPOSITORY_H
#define INFERD_REPOSITORY_H

#include <stddef.h>

#include "device.h"
#include "model.h"

/* A model directory that failed to load, and why (shown in logs and /v2/models). */
struct repository_failure {
	char *name;		/* the directory name */
	char *error;
};

typedef struct repository {
	char *dir;
	size_t count;
	model_t **models;	/* in directory-name order */
	size_t nfailures;
	struct repository_failure *failures;
} repository_t;

/*
 * Load every subdirectory of dir as a model (model.onnx, or model.json in the
 * layer format; see model_load).  A model that fails
 * is logged and recorded in failures; the others still load.  Returns -1
 * only when dir itself cannot be read.
 */
int repository_load(device_t *dev, const char *dir, repository_t **out,
    char **cause);
/* The model called name, or NULL. */
model_t *repository_find(const repository_t *r, const char *name);
/* The failure recorded for name, or NULL. */
const struct repository_failure *repository_find_failure(const repository_t *r,
    const char *name);
/* Free every model (NULL is ignored). */
void repository_free(repository_t *r);

#endif
