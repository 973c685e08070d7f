/* kserve_regions.c: a request's tensors in Triton shared-memory regions: their parameters, taking and releasing the regions. */
#include "config.h"

#include <string.h>

#include <jansson.h>

#include "error.h"
#include "graph.h"
#include "kserve.h"
#include "kserve_bytes.h"
#include "kserve_regions.h"

/* A non-negative integer parameter into *out (left alone when absent); -1 with *cause if mistyped. */
static int
kserve_size_param(const json_t *params, const char *key, const char *what, const char *name,
    size_t *out, char **cause)
{
	const json_t *v = json_object_get(params, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return error_set(cause, "%s '%s': parameter '%s' must be a non-negative integer (bytes)",
		    what, name, key);
	*out = (size_t)json_integer_value(v);
	return 0;
}

/* parameters.shared_memory_region, _offset (default 0) and _byte_size (required with a region). */
int
kserve_shm_params(const json_t *params, const char *what, const char *name,
    struct kserve_shm_ref *ref, char **cause)
{
	const json_t *v = params != NULL ? json_object_get(params, "shared_memory_region") : NULL;

	memset(ref, 0, sizeof *ref);
	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return error_set(cause, "%s '%s': parameter 'shared_memory_region' must be a string",
		    what, name);
	if (json_object_get(params, "shared_memory_byte_size") == NULL)
		return error_set(cause, "%s '%s': shared_memory_region without "
		    "shared_memory_byte_size", what, name);
	ref->region = json_string_value(v);
	if (kserve_size_param(params, "shared_memory_offset", what, name, &ref->offset, cause) != 0 ||
	    kserve_size_param(params, "shared_memory_byte_size", what, name, &ref->size, cause) != 0)
		return -1;
	return 0;
}

/*
 * Take bytes of region ref for tensor name into *at: the region is
 * referenced (released by kserve_infer_release), the byte size must be
 * bytes for an input (exact) and at least bytes for an output, and
 * [offset, offset + bytes) must lie inside the region.
 */
int
kserve_shm_take(const struct kserve_source *src, const struct kserve_shm_ref *ref,
    const char *what, const char *name, size_t bytes, int exact, struct kserve_infer *ki,
    void **at, char **cause)
{
	struct shm_region *reg;

	if (src == NULL || src->shm == NULL)
		return error_set(cause, "%s '%s': shared memory regions are not available here",
		    what, name);
	if (exact ? ref->size != bytes : ref->size < bytes)
		return error_set(cause, "%s '%s': shared_memory_byte_size is %zu, its shape %s %zu "
		    "bytes", what, name, ref->size, exact ? "has" : "needs", bytes);
	if (ki->nregions >= (int)(sizeof ki->regions / sizeof ki->regions[0]))
		return error_set(cause, "%s '%s': too many shared memory tensors", what, name);
	if (shm_registry_acquire(src->shm, ref->region, &reg, cause) != SHM_OK)
		return error_prefix(cause, "%s '%s'", what, name);
	ki->regions[ki->nregions++] = reg;
	if (shm_region_span(reg, ref->offset, bytes, at, cause) != SHM_OK)
		return error_prefix(cause, "%s '%s'", what, name);
	return 0;
}

/* A BYTES input in region ref, unpacked into the slots at dst (system shared memory only). */
int
kserve_shm_take_bytes(const struct kserve_source *src, const struct kserve_shm_ref *ref, const char *name,
    struct kserve_infer *ki, void *dst, size_t slot_bytes, char **cause)
{
	void *at;

	if (kserve_shm_take(src, ref, "input", name, ref->size, 1, ki, &at, cause) != 0)
		return -1;
	if (shm_region_kind(ki->regions[ki->nregions - 1]) == SHM_KIND_CUDA)
		return error_set(cause, "input '%s': BYTES tensors come from system shared memory, not CUDA "
		    "shared memory", name);
	return kserve_bytes_unpack(at, ref->size, slot_bytes / GRAPH_STRING_SLOT, dst, "input", name, cause);
}

/* Whether a tensor of the request lies in a CUDA shared-memory region (device memory). */
int
kserve_infer_device_memory(const struct kserve_infer *ki)
{
	for (int k = 0; k < ki->nregions; k++)
		if (shm_region_kind(ki->regions[k]) == SHM_KIND_CUDA)
			return 1;
	return 0;
}

/* Drop the regions a request referenced. */
void
kserve_infer_release(struct kserve_infer *ki, shm_registry_t *shm)
{
	int k;

	for (k = 0; k < ki->nregions; k++)
		shm_registry_release(shm, ki->regions[k]);
	ki->nregions = 0;
}
