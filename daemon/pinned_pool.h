/* pinned_pool.h: preallocated pinned host slots that stage HTTP requests, so none allocates per request. */
#ifndef INFERD_PINNED_POOL_H
#define INFERD_PINNED_POOL_H

#include <stddef.h>

#include "device.h"
#include "model.h"

/* Slot sizes are multiples of this. */
#define PINNED_POOL_ALIGN 4096
/* A model's output starts at a multiple of this inside a slot. */
#define PINNED_POOL_OUTPUT_ALIGN 256

typedef struct pinned_pool pinned_pool_t;

/*
 * Bytes one slot needs to stage any request of the n models: every input and every
 * output of a model at max_batch_size rows and its maximum dims, each
 * rounded up to PINNED_POOL_OUTPUT_ALIGN, the largest over its models,
 * rounded up to PINNED_POOL_ALIGN; at least one page.  (The KServe codec
 * lays a request out more tightly, so any request fits.)
 */
size_t pinned_pool_slot_bytes_for(const model_t *const *models, size_t n);
/* Where model m's outputs start inside a slot: its largest inputs, each rounded up. */
size_t pinned_pool_output_offset(const model_t *m);

/*
 * Allocate pool_bytes / slot_bytes slots (at least one) of pinned host
 * memory in one device_host_alloc.  -1 with *cause on failure.
 */
int pinned_pool_create(device_t *dev, size_t pool_bytes, size_t slot_bytes,
    pinned_pool_t **out, char **cause);
/* Free the slots; every slot must have been put back (NULL is ignored). */
void pinned_pool_free(pinned_pool_t *p);
/* Take a free slot in O(1) under a mutex; NULL when every slot is in use. */
void *pinned_pool_get(pinned_pool_t *p);
/* Give a slot back in O(1). */
void pinned_pool_put(pinned_pool_t *p, void *slot);
/* The size of each slot. */
size_t pinned_pool_slot_size(const pinned_pool_t *p);
/* The number of slots. */
size_t pinned_pool_slots(const pinned_pool_t *p);
/* The number of slots free now. */
size_t pinned_pool_free_slots(pinned_pool_t *p);

#endif
