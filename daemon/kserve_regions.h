/* kserve_regions.h: a request's tensors in Triton shared-memory regions (private to kserve*.c). */
#ifndef INFERD_KSERVE_REGIONS_H
#define INFERD_KSERVE_REGIONS_H

#include <jansson.h>
#include <stddef.h>

#include "kserve.h"

/* A tensor's place in a Triton shared-memory region, from its parameters. */
struct kserve_shm_ref {
	const char *region;	/* NULL: not in shared memory */
	size_t offset, size;
};

/* parameters.shared_memory_region, _offset (default 0) and _byte_size (required with a region) into ref. */
int kserve_shm_params(const json_t *params, const char *what, const char *name, struct kserve_shm_ref *ref,
    char **cause);
/*
 * Take bytes of region ref for tensor name into *at: the region is
 * referenced (released by kserve_infer_release), the byte size must be
 * bytes for an input (exact) and at least bytes for an output, and
 * [offset, offset + bytes) must lie inside the region.
 */
int kserve_shm_take(const struct kserve_source *src, const struct kserve_shm_ref *ref, const char *what,
    const char *name, size_t bytes, int exact, struct kserve_infer *ki, void **at, char **cause);
/*
 * A BYTES input in region ref: its shared_memory_byte_size is the packed
 * data's, unpacked (kserve_bytes_unpack) into the slots at dst (slot_bytes
 * long, its shape's elements); system shared memory only.
 */
int kserve_shm_take_bytes(const struct kserve_source *src, const struct kserve_shm_ref *ref, const char *name,
    struct kserve_infer *ki, void *dst, size_t slot_bytes, char **cause);

#endif
