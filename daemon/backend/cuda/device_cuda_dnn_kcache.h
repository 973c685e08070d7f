/* device_cuda_dnn_kcache.h: runtime-compiled convolution kernels built shape-generic and compiled once per geometry, every batch size binding the same kernel (cuDNN's kernel cache; internal to the CUDA backend's cuDNN files). */
#ifndef INFERD_DEVICE_CUDA_DNN_KCACHE_H
#define INFERD_DEVICE_CUDA_DNN_KCACHE_H

#include "config.h"

#ifdef HAVE_CUDNN

#include <cudnn.h>

#include "device_cuda_dnn_plan.h"

/*
 * Contract.  For grouped (depthwise among them) convolutions cuDNN's
 * heuristics rank runtime-compiled engines first, and finalizing such a plan
 * compiles its kernel (NVRTC, 150-200 ms on an H200) for that one shape: a
 * load that plans every batch size compiled the same layer a dozen times
 * and more.  Built from an operation graph marked dynamic-shape, the kernel
 * is shape-generic, and a plan finalized with a kernel cache binds a kernel
 * the cache already holds instead of compiling.  Measured on an H200 (cuDNN
 * 9.14, MobileNetV2 at fp16, 12 batch sizes in two contexts): the load took
 * 22 s against 42 s with a kernel per shape, and ran as fast (batch 8: 627
 * against 635 us), but cuDNN still compiled again for some batch sizes (64
 * and 48 after 1) and bound the others in 13-140 ms, so precompiled engines
 * (3.5 s, but 799 us at batch 8) stay the default.
 *
 * cuda_dnn_kcache_get answers the entry for a convolution's key with its
 * batch dims cleared (fused: the graph with the epilogue; a different
 * topology), created empty on first use; NULL when out of memory.  Entries
 * live until cuda_dnn_kcache_drain(ordinal) (device close, after its plans
 * are gone).  Whoever plans with an entry holds its lock for the whole plan
 * (cuda_dnn_kcache_lock/unlock): concurrent loads of one geometry compile it
 * once, the second binding the first's kernel.  Under the lock,
 * cuda_dnn_kcache_attach gives plan the entry's cache (made from graph on
 * first use) before the caller finalizes it, and the entry remembers the
 * engine choice that compiled (cuda_dnn_kcache_choice / _chose), so later
 * batch sizes ask for the same engine and reuse its kernel.
 *
 * cuda_dnn_kcache_wanted says whether d is planned this way: a grouped
 * forward convolution, cuDNN at least DNN_KCACHE_MIN_CUDNN at run time, and
 * INFERD_CUDA_CONV_RTC=generic (unset or "0": precompiled engines first; "1":
 * the heuristics' order, a kernel compiled per shape).
 */
struct dnn_kcache;

/* The oldest cuDNN (cudnnGetVersion) whose kernel cache takes an operation graph. */
#define DNN_KCACHE_MIN_CUDNN 90500

int cuda_dnn_kcache_wanted(const struct cuda_dnn_conv_desc *d);
/* Whether grouped convolutions take precompiled engines first (INFERD_CUDA_CONV_RTC=0, or no shape-generic build). */
int cuda_dnn_kcache_precompiled_first(const struct cuda_dnn_conv_desc *d);
struct dnn_kcache *cuda_dnn_kcache_get(const struct dnn_key *k, int fused);
int cuda_dnn_kcache_lock(struct dnn_kcache *e);
void cuda_dnn_kcache_unlock(struct dnn_kcache *e);
/* Give plan the entry's kernel cache (made for graph on first use); cuDNN's status. */
cudnnStatus_t cuda_dnn_kcache_attach(struct dnn_kcache *e, cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t plan);
/* The engine choice a plan of this entry compiled with (NULL before one did); record one. */
const struct dnn_choice *cuda_dnn_kcache_choice(const struct dnn_kcache *e);
void cuda_dnn_kcache_chose(struct dnn_kcache *e, const struct dnn_choice *ch);
/* Destroy device ordinal's entries (its plans are gone). */
void cuda_dnn_kcache_drain(int ordinal);

#endif

#endif
