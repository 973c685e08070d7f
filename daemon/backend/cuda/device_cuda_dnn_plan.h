/* device_cuda_dnn_plan.h: the cuDNN convolution plan, its key, and how device_cuda_dnn_plan.cu builds one (internal to the CUDA backend's cuDNN files). */
#ifndef INFERD_DEVICE_CUDA_DNN_PLAN_H
#define INFERD_DEVICE_CUDA_DNN_PLAN_H

#include "config.h"

#ifdef HAVE_CUDNN

#include <cudnn.h>

#include "compile_cache.h"
#include "device_cuda_dnn.h"

/* Unique ids of the tensors: those in the variant pack, then the fused graph's virtual ones (DNN_ID_V + i). */
enum { DNN_ID_X = 'x', DNN_ID_W = 'w', DNN_ID_Y = 'y', DNN_ID_B = 'b', DNN_ID_Z = 'z', DNN_ID_V = 1000 };

/* What makes two convolutions' plans interchangeable: every field of the desc but the workspace cap, canonical. */
struct dnn_key {
	int ordinal, transpose, nspatial, tf32, dt, has_bias, has_z, relu;
	int64_t x[5], w[5], y[5], stride[3], dilation[3], pad_begin[3], pad_end[3], align, epi_align;
};

/*
 * What the compile cache keeps of a plan: the engine (cuDNN's global index)
 * and its knob choices, whether the fused graph took it, and whether it was
 * built shape-generic (device_cuda_dnn_kcache.h).  Rebuilt from these on the
 * same graph, cuDNN, GPU model and driver, the engine config is the one the
 * search picked, so the search's heuristics and the finalizing of the
 * configs it refused are skipped.
 */
#define DNN_MAX_KNOBS CUDNN_KNOB_TYPE_COUNTS
struct dnn_choice {
	int32_t fused;
	int32_t nknobs;
	int32_t dynamic;
	int32_t unused;			/* zero: keeps the record free of padding */
	int64_t engine;
	int64_t knob_type[DNN_MAX_KNOBS];
	int64_t knob_value[DNN_MAX_KNOBS];
};

/*
 * A finalized plan with the engine config and device properties it was
 * made from (what cuDNN's own frontend keeps a plan with); the heuristics,
 * the other configs, the operation graph and its tensors are destroyed once
 * the plan is finalized: kept, they cost about 1.4 MB of host memory a plan
 * (measured on an H100), against about 45 KB without them.  Unused plans
 * wait in a process-wide pool (see dnn_pool_take) for the next convolution
 * of the same key.
 */
struct dnn_plan {
	struct dnn_key key;
	size_t cap;			/* the workspace cap it was picked under */
	cudnnBackendDescriptor_t plan, cfg, devprop;
	int64_t ws;
	int fused;			/* the plan adds the bias (has_bias) and residual (has_z), then ReLU (relu) */
	int generic;			/* built shape-generic: its kernel is the geometry's one (kernel cache) */
	int has_bias, has_z;		/* fused: the variant pack binds these too */
	int refs;			/* convolutions and scopes holding it (0 in the pool); under dnn_pool_lock */
	struct dnn_plan *next;		/* in the pool */
};

/* "what: cuDNN's message" in *cause; -1. */
int cuda_dnn_fail(char **cause, cudnnStatus_t st, const char *what);
/* Whether d takes the fused graph at all (a forward convolution with an epilogue). */
int cuda_dnn_plan_fusable(const struct cuda_dnn_conv_desc *d);
/* Search d's graph (key k; fused: with the epilogue) into pl: 1 when an engine took it, else 0. */
int cuda_dnn_plan_search(int ordinal, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k, struct dnn_plan *pl,
    int fused);
/* Build pl (key k) with ch's engine only, checked as a search checks: 1 when cuDNN took it. */
int cuda_dnn_plan_try(int ordinal, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k, const struct dnn_choice *ch,
    struct dnn_plan *pl);
/* The engine choice pl was built with: 0, or -1 when cuDNN does not tell it. */
int cuda_dnn_plan_choice(const struct dnn_plan *pl, struct dnn_choice *ch);
/* Build pl from the compile cache's choice for (k, cap): 1 taken, -1 the search found none before, 0 a miss. */
int cuda_dnn_plan_cached(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k,
    size_t cap, struct dnn_plan *pl);
/* Record the search's pick for (k, cap) in the compile cache (pl NULL: it found none). */
void cuda_dnn_plan_store(compile_cache_t *cache, const struct dnn_key *k, size_t cap, const struct dnn_plan *pl);

#endif

#endif
