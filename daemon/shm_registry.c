/* shm_registry.c: named shared-memory regions (POSIX shm and CUDA IPC), each mapped once and freed by its last user. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "log.h"
#include "peer_auth.h"
#include "shm_registry.h"

struct shm_region {
	struct shm_region *next;	/* in the live list while registered */
	char *name;
	enum shm_kind kind;
	char *key;			/* system: the object's name */
	size_t offset, byte_size;	/* system: the registered bytes of the object */
	int device_id;			/* CUDA */
	void *map;			/* system: the mmap'ed pages; CUDA: the opened pointer */
	size_t map_len;
	unsigned char *base;		/* first registered byte */
	int pinned;			/* device_host_register succeeded */
	int refs;			/* the registry's own (while live) plus every acquire */
};

struct shm_registry {
	struct shm_registry_config cfg;
	struct peer_auth auth;
	pthread_mutex_t lock;
	struct shm_region *live;
	size_t nlive;
	int held;			/* references held by users, all regions */
};

/* Make the registry; resolves the allowed owners once. */
int
shm_registry_create(const struct shm_registry_config *cfg, shm_registry_t **out,
    char **cause)
{
	shm_registry_t *r;
	int rc;

	if ((r = xcalloc(1, sizeof *r)) == NULL)
		return error_set(cause, "shm registry: out of memory");
	r->cfg = *cfg;
	if (peer_auth_init(&r->auth, cfg->allow_users ? cfg->allow_users : "",
	    cfg->allow_groups ? cfg->allow_groups : "", cause) != 0) {
		free(r);
		return error_prefix(cause, "shm registry");
	}
	if ((rc = pthread_mutex_init(&r->lock, NULL)) != 0) {
		peer_auth_free(&r->auth);
		free(r);
		return error_set(cause, "shm registry: pthread_mutex_init: %s", strerror(rc));
	}
	*out = r;
	return 0;
}

/* Unmap a region nobody uses any more and free it. */
static void
shm_region_destroy(shm_registry_t *r, struct shm_region *reg)
{
	char *cause = NULL;

	if (reg->kind == SHM_KIND_SYSTEM) {
		if (reg->pinned && device_host_unregister(r->cfg.dev, reg->map, &cause) != 0) {
			LOG_WARN("shm region '%s': %s", reg->name, cause);
			free(cause);
		}
		if (reg->map != NULL && munmap(reg->map, reg->map_len) != 0)
			LOG_WARN("shm region '%s': munmap: %s", reg->name, strerror(errno));
	} else {
		device_ipc_close(r->cfg.dev, reg->map);
	}
	free(reg->name);
	free(reg->key);
	free(reg);
}

/* Free the registry and every region. */
void
shm_registry_free(shm_registry_t *r)
{
	struct shm_region *reg, *next;

	if (r == NULL)
		return;
	if (r->held != 0)
		LOG_WARN("shm registry freed with %d references held", r->held);
	for (reg = r->live; reg != NULL; reg = next) {
		next = reg->next;
		shm_region_destroy(r, reg);
	}
	peer_auth_free(&r->auth);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* The live region called name; under the lock. */
static struct shm_region *
shm_find(shm_registry_t *r, const char *name)
{
	struct shm_region *reg;

	for (reg = r->live; reg != NULL; reg = reg->next)
		if (strcmp(reg->name, name) == 0)
			return reg;
	return NULL;
}

/* Check a region's name and size before anything is opened. */
static enum shm_error
shm_check_request(shm_registry_t *r, const char *name, size_t byte_size, char **cause)
{
	size_t n = strlen(name);

	if (n == 0 || n > SHM_REGION_NAME_MAX) {
		error_set(cause, "region name must be 1 to %d bytes", SHM_REGION_NAME_MAX);
		return SHM_E_INVALID;
	}
	if (byte_size == 0) {
		error_set(cause, "region '%s': byte_size must be at least 1", name);
		return SHM_E_INVALID;
	}
	if (byte_size > r->cfg.max_region_bytes) {
		error_set(cause, "region '%s': byte_size %zu exceeds max_region_bytes (%zu)", name,
		    byte_size, r->cfg.max_region_bytes);
		return SHM_E_INVALID;
	}
	return SHM_OK;
}

/* Add a mapped region under the lock, unless its name is taken or the table is full; frees it when refused. */
static enum shm_error
shm_insert(shm_registry_t *r, struct shm_region *reg, char **cause)
{
	enum shm_error e = SHM_OK;

	pthread_mutex_lock(&r->lock);
	if (shm_find(r, reg->name) != NULL) {
		error_set(cause, "shared memory region '%s' is already registered", reg->name);
		e = SHM_E_EXISTS;
	} else if (r->nlive >= SHM_REGISTRY_MAX_REGIONS) {
		error_set(cause, "too many shared memory regions (at most %d)",
		    SHM_REGISTRY_MAX_REGIONS);
		e = SHM_E_INVALID;
	} else {
		reg->refs = 1;
		reg->next = r->live;
		r->live = reg;
		r->nlive++;
	}
	pthread_mutex_unlock(&r->lock);
	if (e != SHM_OK)
		shm_region_destroy(r, reg);
	return e;
}

/* A POSIX shm key is "/" then 1..NAME_MAX-1 bytes without another "/". */
static enum shm_error
shm_check_key(const char *key, char **cause)
{
	size_t n = strlen(key);

	if (n < 2 || n >= NAME_MAX || key[0] != '/' || strchr(key + 1, '/') != NULL) {
		error_set(cause, "key '%s' is not a POSIX shared memory name (\"/name\", no other "
		    "'/', at most %d bytes)", key, NAME_MAX - 1);
		return SHM_E_INVALID;
	}
	return SHM_OK;
}

/* Check the opened object: a regular file, an allowed owner, not writable by others, long enough. */
static enum shm_error
shm_check_object(shm_registry_t *r, int fd, const char *key, size_t offset,
    size_t byte_size, char **cause)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		error_set(cause, "fstat '%s': %s", key, strerror(errno));
		return SHM_E_FAILED;
	}
	if (!S_ISREG(st.st_mode)) {
		error_set(cause, "'%s' is not a shared memory object", key);
		return SHM_E_INVALID;
	}
	if (!peer_auth_allows(&r->auth, -1, st.st_uid, st.st_gid)) {
		error_set(cause, "'%s' is owned by uid %u, which allow_users / allow_groups do not "
		    "allow", key, (unsigned)st.st_uid);
		return SHM_E_DENIED;
	}
	if (st.st_mode & S_IWOTH) {
		error_set(cause, "'%s' is writable by others (mode %03o); refused", key,
		    (unsigned)(st.st_mode & 0777));
		return SHM_E_DENIED;
	}
	if (offset > (size_t)st.st_size || byte_size > (size_t)st.st_size - offset) {
		error_set(cause, "offset %zu + byte_size %zu exceeds the %lld bytes of '%s'", offset,
		    byte_size, (long long)st.st_size, key);
		return SHM_E_INVALID;
	}
	return SHM_OK;
}

/* Map [offset, offset + byte_size) of fd (from the page below offset) and pin it. */
static enum shm_error
shm_map_system(shm_registry_t *r, struct shm_region *reg, int fd, char **cause)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t start = reg->offset - reg->offset % page;

	reg->map_len = reg->byte_size + (reg->offset - start);
	reg->map = mmap(NULL, reg->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
	if (reg->map == MAP_FAILED) {
		reg->map = NULL;
		error_set(cause, "mmap '%s' (%zu bytes): %s", reg->key, reg->map_len, strerror(errno));
		return SHM_E_FAILED;
	}
	reg->base = (unsigned char *)reg->map + (reg->offset - start);
	if (device_host_register(r->cfg.dev, reg->map, reg->map_len, cause) != 0) {
		error_prefix(cause, "region '%s'", reg->name);
		return SHM_E_FAILED;
	}
	reg->pinned = 1;
	return SHM_OK;
}

/* A zeroed region called name of kind; NULL when memory is short. */
static struct shm_region *
shm_region_new(const char *name, enum shm_kind kind, size_t byte_size)
{
	struct shm_region *reg = xcalloc(1, sizeof *reg);

	if (reg == NULL || (reg->name = xstrdup(name)) == NULL) {
		free(reg);
		return NULL;
	}
	reg->kind = kind;
	reg->byte_size = byte_size;
	return reg;
}

/* Open, check, map and pin a POSIX shm object, then register it. */
enum shm_error
shm_registry_add_system(shm_registry_t *r, const char *name, const char *key,
    size_t offset, size_t byte_size, char **cause)
{
	struct shm_region *reg;
	enum shm_error e;
	int fd;

	if ((e = shm_check_request(r, name, byte_size, cause)) != SHM_OK ||
	    (e = shm_check_key(key, cause)) != SHM_OK)
		return e;
	if ((fd = shm_open(key, O_RDWR, 0)) < 0) {
		error_set(cause, "region '%s': cannot open shared memory '%s': %s", name, key,
		    strerror(errno));
		return errno == ENOENT ? SHM_E_NOT_FOUND : errno == EACCES ? SHM_E_DENIED :
		    SHM_E_FAILED;
	}
	if ((e = shm_check_object(r, fd, key, offset, byte_size, cause)) != SHM_OK) {
		close(fd);
		return e;
	}
	if ((reg = shm_region_new(name, SHM_KIND_SYSTEM, byte_size)) == NULL ||
	    (reg->key = xstrdup(key)) == NULL) {
		close(fd);
		if (reg != NULL)
			shm_region_destroy(r, reg);
		error_set(cause, "out of memory");
		return SHM_E_FAILED;
	}
	reg->offset = offset;
	e = shm_map_system(r, reg, fd, cause);
	close(fd);	/* the mapping keeps the object */
	if (e != SHM_OK) {
		shm_region_destroy(r, reg);
		return e;
	}
	return shm_insert(r, reg, cause);
}

/* Open a CUDA IPC handle through the device layer, then register it. */
enum shm_error
shm_registry_add_cuda(shm_registry_t *r, const char *name, const unsigned char *handle,
    size_t handle_len, int device_id, size_t byte_size, char **cause)
{
	struct shm_region *reg;
	enum shm_error e;

	if ((e = shm_check_request(r, name, byte_size, cause)) != SHM_OK)
		return e;
	if (handle_len != DEVICE_IPC_HANDLE_BYTES) {
		error_set(cause, "region '%s': raw_handle is %zu bytes, a CUDA IPC handle is %d", name,
		    handle_len, DEVICE_IPC_HANDLE_BYTES);
		return SHM_E_INVALID;
	}
	if (device_id < 0) {
		error_set(cause, "region '%s': device_id %d is negative", name, device_id);
		return SHM_E_INVALID;
	}
	if ((reg = shm_region_new(name, SHM_KIND_CUDA, byte_size)) == NULL) {
		error_set(cause, "out of memory");
		return SHM_E_FAILED;
	}
	reg->device_id = device_id;
	if (device_ipc_open(r->cfg.dev, handle, device_id, byte_size, &reg->map, cause) != 0) {
		error_prefix(cause, "region '%s'", name);
		reg->map = NULL;
		shm_region_destroy(r, reg);
		return SHM_E_INVALID;
	}
	reg->base = reg->map;
	reg->map_len = byte_size;
	return shm_insert(r, reg, cause);
}

/* Drop the registry's own reference; returns the region when that was the last. */
static struct shm_region *
shm_unlink_locked(shm_registry_t *r, struct shm_region **link)
{
	struct shm_region *reg = *link;

	*link = reg->next;
	reg->next = NULL;
	r->nlive--;
	return --reg->refs == 0 ? reg : NULL;
}

/* Unregister name, or every region of kind; regions in use go when released. */
enum shm_error
shm_registry_remove(shm_registry_t *r, enum shm_kind kind, const char *name, char **cause)
{
	struct shm_region **link, *dead = NULL, *reg;

	pthread_mutex_lock(&r->lock);
	link = &r->live;
	while (*link != NULL) {
		reg = *link;
		if (reg->kind != kind || (name != NULL && strcmp(reg->name, name) != 0)) {
			link = &reg->next;
			continue;
		}
		if ((reg = shm_unlink_locked(r, link)) != NULL) {
			reg->next = dead;
			dead = reg;
		}
	}
	pthread_mutex_unlock(&r->lock);
	while (dead != NULL) {
		reg = dead;
		dead = reg->next;
		shm_region_destroy(r, reg);
	}
	(void)cause;
	return SHM_OK;
}

/* One region's status object, Triton's fields. */
static json_t *
shm_region_json(const struct shm_region *reg)
{
	if (reg->kind == SHM_KIND_SYSTEM)
		return json_pack("{s:s, s:s, s:I, s:I}", "name", reg->name, "key", reg->key,
		    "offset", (json_int_t)reg->offset, "byte_size", (json_int_t)reg->byte_size);
	return json_pack("{s:s, s:i, s:I}", "name", reg->name, "device_id", reg->device_id,
	    "byte_size", (json_int_t)reg->byte_size);
}

/* The status array of kind's regions, or of name alone. */
enum shm_error
shm_registry_status(shm_registry_t *r, enum shm_kind kind, const char *name,
    json_t **out, char **cause)
{
	json_t *arr = json_array();
	struct shm_region *reg;
	int found = 0, oom = arr == NULL;

	pthread_mutex_lock(&r->lock);
	for (reg = r->live; reg != NULL && !oom; reg = reg->next) {
		if (reg->kind != kind || (name != NULL && strcmp(reg->name, name) != 0))
			continue;
		found = 1;
		oom = json_array_append_new(arr, shm_region_json(reg)) != 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (oom) {
		json_decref(arr);
		error_set(cause, "out of memory");
		return SHM_E_FAILED;
	}
	if (name != NULL && !found) {
		json_decref(arr);
		error_set(cause, "no %s shared memory region '%s' is registered",
		    kind == SHM_KIND_SYSTEM ? "system" : "CUDA", name);
		return SHM_E_NOT_FOUND;
	}
	*out = arr;
	return SHM_OK;
}

/* Take a reference to a live region. */
enum shm_error
shm_registry_acquire(shm_registry_t *r, const char *name, struct shm_region **out,
    char **cause)
{
	struct shm_region *reg;

	pthread_mutex_lock(&r->lock);
	if ((reg = shm_find(r, name)) != NULL) {
		reg->refs++;
		r->held++;
	}
	pthread_mutex_unlock(&r->lock);
	if (reg == NULL) {
		error_set(cause, "shared memory region '%s' is not registered", name);
		return SHM_E_NOT_FOUND;
	}
	*out = reg;
	return SHM_OK;
}

/* Drop a reference; an unregistered region goes with its last one. */
void
shm_registry_release(shm_registry_t *r, struct shm_region *reg)
{
	int last;

	if (reg == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	r->held--;
	last = --reg->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (last)
		shm_region_destroy(r, reg);
}

/* The region's kind. */
enum shm_kind
shm_region_kind(const struct shm_region *reg)
{
	return reg->kind;
}

/* The region's name. */
const char *
shm_region_name(const struct shm_region *reg)
{
	return reg->name;
}

/* Bounds-check [offset, offset + len) against the region. */
enum shm_error
shm_region_span(const struct shm_region *reg, size_t offset, size_t len, void **ptr,
    char **cause)
{
	if (offset > reg->byte_size || len > reg->byte_size - offset) {
		error_set(cause, "offset %zu + byte_size %zu is outside shared memory region '%s' "
		    "(%zu bytes)", offset, len, reg->name, reg->byte_size);
		return SHM_E_INVALID;
	}
	*ptr = reg->base + offset;
	return SHM_OK;
}
