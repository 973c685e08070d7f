/* door.h: what a door (the HTTP server, the shared-memory server) serves from. */
#ifndef INFERD_DOOR_H
#define INFERD_DOOR_H

#include "batcher.h"
#include "daemon_config.h"
#include "device.h"
#include "device_set.h"
#include "metrics.h"
#include "metrics_gpu.h"
#include "repository.h"

/* The daemon's settings, device, models, batcher and counters; all outlive the door. */
struct door_context {
	const struct daemon_config *config;
	device_t *dev;
	repository_t *repo;
	batcher_t *batcher;
	struct metrics *metrics;
	device_set_t *devices;		/* every device models run on (NULL: only dev) */
	metrics_gpu_t *gpu;		/* NVML for the GPU gauges of /metrics (NULL: none) */
};

#endif
