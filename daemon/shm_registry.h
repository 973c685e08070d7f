/* shm_registry.h: Triton's shared-memory regions (system and CUDA) registered by name, mapped once, reference-counted. */
#ifndef INFERD_SHM_REGISTRY_H
#define INFERD_SHM_REGISTRY_H

#include <stddef.h>

#include <jansson.h>

#include "device.h"

/*
 * Contract.
 *
 * A client names a region it made (a POSIX shm object by key, or a CUDA IPC
 * handle) and the daemon maps it once: system regions are mmap'ed and pinned
 * with device_host_register, so copies DMA straight from them; CUDA regions
 * are opened with device_ipc_open.  Requests then refer to a region by name
 * with an offset and a size, which shm_region_span checks against the region.
 *
 * Safety.  A system object must be a regular file owned by an allowed user
 * (allow_users / allow_groups as for the shm socket; empty: the daemon's own
 * user and root), not writable by others, and at least offset + byte_size
 * long.  Only regions registered through this registry are ever unmapped:
 * unregistering never touches another process's mapping or object.
 *
 * Life-cycle.  shm_registry_acquire takes a reference to a live region;
 * unregistering removes the name at once (it may be registered again, new
 * requests no longer find it) but the mapping stays until the last
 * reference is released.  shm_registry_free requires no references left.
 *
 * Threads: every function may be called from any thread.
 */

typedef struct shm_registry shm_registry_t;
struct shm_region;

/* What kind of memory a region is. */
enum shm_kind {
	SHM_KIND_SYSTEM = 0,	/* POSIX shared memory, host */
	SHM_KIND_CUDA,		/* a CUDA IPC allocation, device */
};

/* Why a call was refused (what a transport maps to its status codes). */
enum shm_error {
	SHM_OK = 0,
	SHM_E_INVALID = -1,	/* bad argument, size or offset: 400 */
	SHM_E_NOT_FOUND = -2,	/* no such region or key: 404 */
	SHM_E_EXISTS = -3,	/* the name is taken: 409 */
	SHM_E_DENIED = -4,	/* owner or mode not allowed: 403 */
	SHM_E_FAILED = -5,	/* a system or device call failed: 500 */
};

/* Most regions registered at once, and the longest name. */
#define SHM_REGISTRY_MAX_REGIONS 1024
#define SHM_REGION_NAME_MAX 255

/* Limits and who may own a system region's object. */
struct shm_registry_config {
	device_t *dev;
	const char *allow_users, *allow_groups;	/* comma lists, as the config keys */
	size_t max_region_bytes;		/* largest byte_size accepted */
};

int shm_registry_create(const struct shm_registry_config *cfg, shm_registry_t **out,
    char **cause);
/* Unmap everything (no references may be held); NULL is ignored. */
void shm_registry_free(shm_registry_t *r);

/* Register POSIX shm object key ("/name"), bytes [offset, offset + byte_size), as name. */
enum shm_error shm_registry_add_system(shm_registry_t *r, const char *name,
    const char *key, size_t offset, size_t byte_size, char **cause);
/* Register a CUDA IPC handle (DEVICE_IPC_HANDLE_BYTES) on GPU device_id as name. */
enum shm_error shm_registry_add_cuda(shm_registry_t *r, const char *name,
    const unsigned char *handle, size_t handle_len, int device_id, size_t byte_size,
    char **cause);
/* Unregister name of kind (an unknown name is not an error, as in Triton); all of kind when name is NULL. */
enum shm_error shm_registry_remove(shm_registry_t *r, enum shm_kind kind,
    const char *name, char **cause);
/*
 * The status of the regions of kind as a JSON array (Triton's form: name,
 * key, offset, byte_size for system; name, device_id, byte_size for CUDA),
 * or of name alone (NOT_FOUND when it is not registered).  *out is a new
 * reference.
 */
enum shm_error shm_registry_status(shm_registry_t *r, enum shm_kind kind,
    const char *name, json_t **out, char **cause);

/* Take a reference to the live region name (of either kind); NOT_FOUND when none. */
enum shm_error shm_registry_acquire(shm_registry_t *r, const char *name,
    struct shm_region **out, char **cause);
/* Drop a reference; the last one of an unregistered region unmaps it. */
void shm_registry_release(shm_registry_t *r, struct shm_region *reg);
/* The region's kind. */
enum shm_kind shm_region_kind(const struct shm_region *reg);
/* The name it was registered under (valid while referenced). */
const char *shm_region_name(const struct shm_region *reg);
/*
 * The address of bytes [offset, offset + len) of the region (device memory
 * for CUDA); INVALID, naming the region, when they are not all inside it.
 */
enum shm_error shm_region_span(const struct shm_region *reg, size_t offset, size_t len,
    void **ptr, char **cause);

#endif
