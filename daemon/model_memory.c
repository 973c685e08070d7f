/* model_memory.c: the per-kind figures of a model version's device memory. */
#include "config.h"

#include <stdio.h>

#include "model_memory.h"

/* The name of kind k. */
const char *
model_memory_kind_name(enum model_memory_kind k)
{
	static const char *const names[MODEL_MEMORY_KINDS] = { "weights", "activations", "workspace", "graphs" };

	return k >= 0 && k < MODEL_MEMORY_KINDS ? names[k] : "?";
}

/* The bytes of kind k. */
uint64_t
model_memory_get(const struct model_memory *mm, enum model_memory_kind k)
{
	switch (k) {
	case MODEL_MEMORY_WEIGHTS:
		return mm->weights;
	case MODEL_MEMORY_ACTIVATIONS:
		return mm->activations;
	case MODEL_MEMORY_WORKSPACE:
		return mm->workspace;
	case MODEL_MEMORY_GRAPHS:
		return mm->graphs;
	default:
		return 0;
	}
}

/* The sum of every kind. */
uint64_t
model_memory_total(const struct model_memory *mm)
{
	return mm->weights + mm->activations + mm->workspace + mm->graphs;
}

/* Add mm into sum. */
void
model_memory_add(struct model_memory *sum, const struct model_memory *mm)
{
	sum->weights += mm->weights;
	sum->activations += mm->activations;
	sum->workspace += mm->workspace;
	sum->graphs += mm->graphs;
}

/* "GPU" with its CUDA ordinal, or "CPU" with 0. */
const char *
model_memory_device(const device_t *dev, int *id)
{
	struct device_info info;

	device_info(dev, &info);
	*id = info.gpu ? info.ordinal : 0;
	return info.gpu ? "GPU" : "CPU";
}
