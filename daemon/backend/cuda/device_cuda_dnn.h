/* device_cuda_dnn.h: convolutions (with their bias + residual + ReLU epilogue where cuDNN fuses it) through cuDNN's graph (backend) API, behind a small interface the conv steps call (nvcc only). */
#ifndef INFERD_DEVICE_CUDA_DNN_H
#define INFERD_DEVICE_CUDA_DNN_H

#include <stddef.h>
#include <stdint.h>

#include "compile_cache.h"
#include "graph.h"

/*
 * Contract.  cuda_dnn_conv_build describes one convolution (or, transpose,
 * the transposed convolution as cuDNN's backward-data) for concrete NCHW-style
 * shapes and asks cuDNN's heuristics for an engine, keeping only engines
 * whose numerical notes promise strict fp32 (no tensor-core TF32, no
 * down-conversion, no FFT or Winograd; d->tf32 also admits TF32 tensor-core
 * engines); the plan is built from the device's
 * properties, not a handle, so any handle of the device runs it; only engines
 * whose workspace fits d->ws_cap are taken.  It returns
 * 1 with *ws_bytes (the workspace the caller allocates once), 0 when cuDNN is
 * absent or has no accurate engine for the shape (the caller uses im2col),
 * -1 on a failure that is not that.
 *
 * Epilogue.  A forward convolution (not transpose) with has_bias, has_z or
 * relu set is first planned as one fused graph: y = relu?(conv(x, w) + bias
 * + z), bias a [M] vector broadcast over [1, M, 1...], z shaped like y, the
 * conv's output and every intermediate a virtual FP32 tensor and the adds
 * and ReLU in FP32, under the same engine filter and workspace cap.  When no
 * engine takes it the plain convolution is planned instead; then
 * cuda_dnn_conv_fused answers 0 and the caller runs the whole epilogue
 * itself (never a part of it).  Fused, it answers 1 and the plan writes the
 * finished y.
 *
 * cuda_dnn_conv_bind fixes the device addresses once (at plan compile): x,
 * w, y, and bias and z, which a fused plan that reads them needs (NULL
 * otherwise; they are ignored by a plan that does not read them);
 * cuda_dnn_conv_run queues the convolution on the handle's stream and never
 * allocates, so it can be captured.  Without HAVE_CUDNN every build answers 0.
 *
 * Pool.  cuda_dnn_conv_free does not destroy the plan: it waits, idle, in a
 * process-wide pool, and a later build of the same convolution (same shapes,
 * flags, alignments and device, and a workspace cap it fits under) takes it
 * instead of asking cuDNN again.  cuda_dnn_pool_drain destroys a device's
 * idle plans.
 *
 * Compile cache.  With a cache (not NULL), a plan that is neither in the
 * scope nor in the pool is first looked up there, keyed by everything in
 * the pool's key but the ordinal, plus the workspace cap: a hit names the
 * engine (global index and knob choices) and whether the fused graph took
 * it, and only that engine is finalized.  An engine cuDNN refuses to
 * finalize, or that is not strict or not within the cap, is rejected from
 * the cache and the normal search runs; every search's pick is stored.
 *
 * Scope.  Convolutions built with the same scope (one device plan's compile,
 * whose steps run one after another on one stream) share one plan when
 * their keys match; a plan is never shared across scopes, since cuDNN's
 * plans must not be executed from several threads at once.  Each
 * convolution still binds its own variant pack.  The scope may be freed
 * once the compile ends (NULL: nothing shared).
 */
struct cuda_dnn_conv;

struct cuda_dnn_conv_desc {
	int transpose;
	int nspatial;			/* 1 to 3 */
	int64_t x[5], w[5], y[5];	/* [N, C, spatial...], the filter, [N, M, spatial...] */
	int64_t stride[3], dilation[3], pad_begin[3], pad_end[3];
	int tf32;			/* also accept engines on TF32 tensor cores (precision tf32/fp16/bf16) */
	enum graph_dtype dt;		/* x, w, y storage: F32, F16 or CUDA_DT_BF16 (compute stays FP32; F16/BF16 take tensor cores) */
	int64_t align;			/* byte alignment x, w and y keep (2 to 16; FP32: only the fused graph uses it) */
	int has_bias;			/* fuse + bias[m] (a [M] vector) */
	int has_z;			/* fuse + z (the residual, y's shape and dtype) */
	int relu;			/* fuse ReLU after the adds */
	int64_t epi_align;		/* with has_bias or has_z: byte alignment bias and z keep (2 to 16) */
	size_t ws_cap;			/* the most workspace the engine may take (at most CUDA_DNN_WS_CAP) */
};

/* The largest workspace any engine may ask for. */
#define CUDA_DNN_WS_CAP ((size_t)256 << 20)

struct cuda_dnn_scope;
/* A compile's scope (NULL without cuDNN or memory: nothing is shared), and its end. */
struct cuda_dnn_scope *cuda_dnn_scope_new(void);
void cuda_dnn_scope_free(struct cuda_dnn_scope *sc);
int cuda_dnn_conv_build(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d,
    struct cuda_dnn_scope *scope, struct cuda_dnn_conv **out, size_t *ws_bytes, char **cause);
/* 1 when c's plan computes the epilogue the desc asked for, 0 when the caller must run it. */
int cuda_dnn_conv_fused(const struct cuda_dnn_conv *c);
int cuda_dnn_conv_bind(struct cuda_dnn_conv *c, const void *x, const void *w, const void *b, const void *z, void *y,
    void *ws, char **cause);
int cuda_dnn_conv_run(const struct cuda_dnn_conv *c, void *handle, char **cause);
void cuda_dnn_conv_free(struct cuda_dnn_conv *c);
/* Destroy the idle pooled plans of device ordinal; how many idle plans the pool holds. */
void cuda_dnn_pool_drain(int ordinal);
size_t cuda_dnn_pool_size(void);
/* cuDNN's version (cudnnGetVersion), 0 without cuDNN: part of the compile cache's identity. */
size_t cuda_dnn_version(void);
/* A cuDNN handle bound to stream (NULL *out without cuDNN); -1 on failure. */
int cuda_dnn_handle_create(void *stream, void **out, char **cause);
void cuda_dnn_handle_destroy(void *handle);

#endif
