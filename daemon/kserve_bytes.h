/*
 * kserve_bytes.h: BYTES tensors between the wire and their slots (graph.h's
 * STRING elements): JSON strings, and the form the binary extension and
 * shared memory carry, each element a 4-byte little-endian length then its
 * bytes, one after another.
 */
#ifndef INFERD_KSERVE_BYTES_H
#define INFERD_KSERVE_BYTES_H

#include <stddef.h>

#include "model.h"

/*
 * Unpack the n elements of src (len bytes, every one of them used) into n
 * slots at dst.  A length running past the end, an element longer than
 * GRAPH_STRING_MAX, fewer or more than n elements: -1 with *cause naming
 * "what 'name'".  src is read once, in order (a client may write to it).
 */
int kserve_bytes_unpack(const unsigned char *src, size_t len, size_t n, void *dst, const char *what,
    const char *name, char **cause);
/* Bytes the packed form of n slots takes. */
size_t kserve_bytes_packed_size(const void *slots, size_t n);
/* Write the packed form of n slots (kserve_bytes_packed_size bytes) to dst. */
void kserve_bytes_pack(const void *slots, size_t n, unsigned char *dst);
/* Most bytes of JSON text kserve_bytes_json writes for these n slots. */
size_t kserve_bytes_json_bound(const void *slots, size_t n);
/*
 * The n slots as a JSON array of strings at out (cap bytes, at least the
 * bound), *len bytes; -1 with *cause when an element is not UTF-8 (JSON
 * cannot carry it: the binary extension can).
 */
int kserve_bytes_json(const void *slots, size_t n, char *out, size_t cap, size_t *len, char **cause);

struct kserve_infer;
/*
 * Write each BYTES output of ki asked for in a shared-memory region
 * (ki->output_pack) into it, packed from its slots in buf; -1 with *cause
 * naming the output when the packed form is larger than the region's size.
 */
int kserve_bytes_pack_regions(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf,
    char **cause);

#endif
