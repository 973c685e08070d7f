/* device_set.h: the devices a daemon runs models on — its own, and those model instances name. */
#ifndef INFERD_DEVICE_SET_H
#define INFERD_DEVICE_SET_H

#include "device.h"
#include "device_spec.h"

/*
 * Contract.  A set starts with the daemon's device (from its `device`
 * setting; the set never closes that one) and opens another device the
 * first time a model's instance_group names it, keeping it open until
 * device_set_free: models loaded later on the same device share it.
 *
 * Which devices a set may open: on a GPU daemon any CUDA device present
 * and the CPU; on a CPU daemon only the CPU (a client region is pinned and
 * mapped through the daemon's own device, so GPU instances need a GPU
 * daemon).  A device that cannot be opened (no such GPU, no CUDA in the
 * build) is refused with the device layer's message.
 *
 * Default placement: an instance group without devices (or a model without
 * instance_group) runs on the daemon's device; with `device = auto` and
 * several GPUs present, on every GPU (device_set_defaults).
 *
 * Thread-safe: the repository's load threads may call device_set_get at
 * once.  device_set_free after every model, queue and client is gone.
 */
typedef struct device_set device_set_t;

/* The most devices a set holds. */
#define DEVICE_SET_MAX 16

/*
 * Make a set around primary (opened from the setting `spec`); spread: the
 * setting was "auto", so default placement covers every GPU; cpu_threads:
 * the CPU kernels' threads once a CPU device is opened beside a GPU one.
 */
int device_set_create(device_t *primary, int spread, int cpu_threads, device_set_t **out, char **cause);
/* The daemon's device. */
device_t *device_set_primary(const device_set_t *s);
/* The device spec names, opened on first use; -1 with *cause when it may not or cannot be opened. */
int device_set_get(device_set_t *s, const struct device_spec *spec, device_t **out, char **cause);
/*
 * The devices a group without devices runs on: the daemon's, or with spread
 * every GPU (opened now); returns how many (<= DEVICE_SET_MAX), -1 with *cause.
 */
int device_set_defaults(device_set_t *s, device_t **out, char **cause);
/* Whether dev is the device spec names (an open device's identity, e.g. cuda:1 or cpu). */
int device_set_matches(const device_t *dev, const struct device_spec *spec);
/* The devices open now, the daemon's first, at most max of them in out; how many. */
int device_set_list(device_set_t *s, device_t **out, int max);
/* Close every device the set opened (not the primary); NULL is ignored. */
void device_set_free(device_set_t *s);

#endif
