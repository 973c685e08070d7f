/* model_memory.h: the device memory one loaded model version holds, by kind. */
#ifndef INFERD_MODEL_MEMORY_H
#define INFERD_MODEL_MEMORY_H

#include <stdint.h>

#include "device.h"

/*
 * Contract.  A report is counted where the memory is allocated, not
 * estimated: the model's constants when they are bound (model.c), each
 * batch context's arena, workspace, pool and plans when it is created
 * (model_exec.c), its CUDA graphs as the device's free memory before minus
 * after capturing them, and each batcher queue's compute stream.  On the CPU
 * backend "device memory" is the host memory the kernels compute from:
 * the constants in place, the arenas; graphs are always 0 there.  A report
 * is taken at load; what a shape seen later compiles (variable dims) is not
 * in it.
 */
struct model_memory {
	uint64_t weights;	/* constants as held for the device: after folding, plus FP16 copies at fp16 */
	uint64_t activations;	/* the arenas of the batch contexts that serve */
	uint64_t workspace;	/* shared plan workspaces, folded-constant pools, plans' own scratch, BLAS workspaces */
	uint64_t graphs;	/* what capturing and instantiating CUDA graphs took */
};

enum model_memory_kind {
	MODEL_MEMORY_WEIGHTS,
	MODEL_MEMORY_ACTIVATIONS,
	MODEL_MEMORY_WORKSPACE,
	MODEL_MEMORY_GRAPHS,
	MODEL_MEMORY_KINDS
};

/* "weights", "activations", "workspace" or "graphs" (the JSON keys and the metric's kind label). */
const char *model_memory_kind_name(enum model_memory_kind k);
/* The bytes of kind k in mm. */
uint64_t model_memory_get(const struct model_memory *mm, enum model_memory_kind k);
/* The sum of every kind. */
uint64_t model_memory_total(const struct model_memory *mm);
/* Add every kind of mm to sum. */
void model_memory_add(struct model_memory *sum, const struct model_memory *mm);
/* Triton's memory_usage type of dev, "GPU" or "CPU", and its id (the CUDA ordinal; 0 on the CPU). */
const char *model_memory_device(const device_t *dev, int *id);

#endif
