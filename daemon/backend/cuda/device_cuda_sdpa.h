/* device_cuda_sdpa.h: fused attention, softmax(scale Q K^T + mask) V on FP16 or BF16 tensors, as one cuDNN graph-API plan (nvcc only). */
#ifndef INFERD_DEVICE_CUDA_SDPA_H
#define INFERD_DEVICE_CUDA_SDPA_H

#include <stddef.h>
#include <stdint.h>

/*
 * Contract.  cuda_sdpa_build describes one attention over concrete shapes
 * (Q [B, H, Sq, D], K [B, H, Sk, D], V [B, H, Sk, Dv],
 * O [B, H, Sq, Dv], all dense FP16 (BF16 with bf16), or with seq_major each
 * stored [B, S, H, D] (the heads' rows interleaved, as a projection writes
 * them); an optional additive mask of the same type whose
 * dims are B/1, H/1, Sq/1, Sk with dense strides) as the operation graph
 * cudnn-frontend lowers its SDPA forward node to for inference: matmul,
 * scale, bias add, row max, sub, exp, row sum, the (unused) stats
 * log(sum) + max, div, matmul, every
 * intermediate virtual FP32 (the probabilities FP16, the second matmul's
 * input type), and asks heuristics mode A for an engine that finalizes with
 * a workspace within ws_cap.  It returns 1 with *ws_bytes, 0 when this cuDNN
 * cannot (absent, older than CUDA_SDPA_MIN_CUDNN at run time, kt set (cuDNN
 * 9.14 crashes listing engines for a K^T with Sk contiguous), or no engine
 * for the shape: the caller runs the attention another way), -1 on a
 * failure that is not that.  cuda_sdpa_bind fixes the device addresses once;
 * cuda_sdpa_run queues the plan on the handle's stream, never allocates, and
 * can be captured into a CUDA graph.  Without HAVE_CUDNN, build answers 0.
 */
struct cuda_sdpa;

struct cuda_sdpa_desc {
	int64_t b, h, sq, sk, d, dv;
	int kt;				/* K is stored [B, H, D, Sk]: always refused (see the contract) */
	int seq_major;			/* Q, K, V, O stored [B, S, H, D] */
	int bf16;			/* BF16 tensors (else FP16) */
	int has_mask;
	int64_t mask_dims[4];		/* each 1 or the scores' dim ([B, H, Sq, Sk]); the last is Sk */
	float scale;
	int64_t align;			/* byte alignment every address keeps (2 to 16) */
};

/* The oldest cuDNN (cudnnGetVersion) the fused graph is planned with; older ones answer 0. */
#define CUDA_SDPA_MIN_CUDNN 90800

/*
 * Whether graphs fuse attention for this backend: cuDNN linked and at least
 * CUDA_SDPA_MIN_CUDNN at run time, and INFERD_CUDA_ATTENTION is not "off"
 * (which keeps the unfused graph, for comparing the two).
 */
int cuda_sdpa_available(void);
/*
 * Scope.  Attentions built with the same scope (one device plan's compile,
 * whose steps run one after another on one stream) share one cuDNN plan when
 * their shapes match (a BERT bucket's twelve layers build one), each with its
 * own variant pack; a plan is never shared across compiles, since cuDNN's
 * plans must not run on two streams at once.  The scope may be freed once
 * the compile ends (NULL: nothing shared).
 */
struct cuda_sdpa_scope;
struct cuda_sdpa_scope *cuda_sdpa_scope_new(void);
void cuda_sdpa_scope_free(struct cuda_sdpa_scope *sc);
/*
 * How a plan's engine is built.  Building one is a runtime compilation
 * (hundreds of ms of CPU per shape), so a load compiling a plan per
 * (rows, length) bucket queues them to worker threads that build them side
 * by side (CUDA_SDPA_QUEUE; *ws_bytes is then the cap the engine will fit),
 * and waits with cuda_sdpa_settle before the plan's first run (a build still
 * queued then is done by the settling thread at once, so the first request
 * of a shape never waits behind the other shapes' builds): 1 there means
 * cuDNN had no engine, and the plan must be compiled again (with
 * CUDA_SDPA_NOW, which falls back to the unfused attention at compile).
 * cuda_sdpa_run settles by itself and fails on such a plan.  A measuring
 * compile (its plan never runs) takes CUDA_SDPA_ESTIMATE: no engine is
 * built, *ws_bytes is the cap a queued build would take.  cuda_sdpa_quiesce
 * (device close) drops queued builds and waits for the running ones.
 */
enum cuda_sdpa_how { CUDA_SDPA_NOW = 0, CUDA_SDPA_QUEUE, CUDA_SDPA_ESTIMATE };
int cuda_sdpa_build(int ordinal, const struct cuda_sdpa_desc *d, struct cuda_sdpa_scope *scope, size_t ws_cap,
    enum cuda_sdpa_how how, struct cuda_sdpa **out, size_t *ws_bytes, char **cause);
int cuda_sdpa_settle(struct cuda_sdpa *s);
void cuda_sdpa_quiesce(void);
int cuda_sdpa_bind(struct cuda_sdpa *s, const void *q, const void *k, const void *v, const void *mask, void *o,
    void *ws, char **cause);
int cuda_sdpa_run(const struct cuda_sdpa *s, void *handle, char **cause);
void cuda_sdpa_free(struct cuda_sdpa *s);

#endif
