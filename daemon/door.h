/* door.h: what a door (the HTTP server, the shared-memory server) serves from. */
#ifndef INFERD_DOOR_H
#define INFERD_DOOR_H

#include "batcher.h"
#include "daemon_config.h"
#include "device.h"
#include "metrics.h"
#include "repository.h"

/* The daemon's settings, device, models, batcher and counters; all outlive the door. */
struct door_context {
	const struct daemon_config *config;
	device_t *dev;
	repository_t *repo;
	batcher_t *batcher;
	struct metrics *metrics;
};

#endif
