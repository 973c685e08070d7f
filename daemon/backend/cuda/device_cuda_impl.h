/* device_cuda_impl.h: what the CUDA backend's files share: plan steps, per-op compilers, error helpers, broadcast index maps (nvcc only). */
#ifndef INFERD_DEVICE_CUDA_IMPL_H
#define INFERD_DEVICE_CUDA_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "compile_cache.h"
#include "device_cuda_store.h"
#include "graph.h"

/*
 * Captures against device-wide calls.  A CUDA graph capture (thread-local
 * mode) is broken when another thread meanwhile frees, allocates, registers
 * or destroys (calls that may synchronise the device), as when a retired
 * version is freed, or a client's region unregistered, beside a loading
 * version.  A capture holds cuda_quiet_lock shared from its begin to its end;
 * every such call goes through CUDA_QUIET, which holds it exclusively.  None
 * of them is on the serving path (buffers are preallocated), and a capture
 * never makes one, so nothing waits for long and nothing deadlocks.
 */
extern pthread_rwlock_t cuda_quiet_lock;

/* Release the exclusive hold CUDA_QUIET took, passing the call's result on. */
static inline cudaError_t
cuda_quiet_done(cudaError_t err)
{
	(void)pthread_rwlock_unlock(&cuda_quiet_lock);
	return err;
}

#define CUDA_QUIET(call) cuda_quiet_done(((void)pthread_rwlock_wrlock(&cuda_quiet_lock), (call)))
/* The same for a statement (library handles: cuBLAS, cuDNN). */
#define CUDA_QUIETLY(stmt) do { \
	(void)pthread_rwlock_wrlock(&cuda_quiet_lock); \
	stmt; \
	(void)pthread_rwlock_unlock(&cuda_quiet_lock); \
} while (0)

/*
 * Contract.  device_cuda.cu compiles a graph by calling, per node, the
 * compiler of its op (cuda_compile_*, one file per concern: gemm, conv,
 * elementwise, reduce, tensor, spatial).  A compiler resolves everything for
 * the concrete shapes and addresses into a step: a run function, host
 * parameters (p, malloc'ed) and device workspace (ws, cudaMalloc'ed here and
 * only here), both freed with the plan.  A step whose node has nothing to do
 * (empty tensors) keeps run == NULL and is skipped.  A run function only
 * queues work on ex->stream (kernels, cuBLAS, async device-to-device copies):
 * it never allocates, synchronises or reads device memory on the host, so a
 * plan's run can be captured into a CUDA graph.  Everything is fp32 strict
 * (cuBLAS without TF32) unless the graph asks for tf32, fp16 or bf16
 * (device_cuda_precision.cu): then the steps read their tensors' stored dtype
 * through cuda_in_dtype/cuda_out_dtype, and a step's node may be NULL for the
 * casts the plan inserts.  Every CUDA/cuBLAS call is checked; failures name the call.
 */

/* Element-wise grids: threads per block, and a cap on blocks (grid-stride loops do the rest). */
#define CUDA_THREADS 256
#define CUDA_MAX_BLOCKS 4096

/* What a run function may use: the compute stream, its cuBLAS handle and cuDNN handle (NULL without cuDNN). */
/* Each compute stream's cuBLAS (and cuBLASLt) workspace, fixed so that captured work never allocates. */
#define CUDA_BLAS_WORKSPACE (32 * 1024 * 1024)

struct cuda_exec {
	cudaStream_t stream;
	cublasHandle_t blas;
	void *dnn;
	cublasLtHandle_t lt;		/* cuBLASLt (GEMMs with bias epilogues), sharing blas's workspace */
	void *blas_ws;
	size_t blas_ws_bytes;
};

struct cuda_step;
typedef int (*cuda_run_fn)(const struct cuda_step *st, const struct cuda_exec *ex, char **cause);

/* One node, compiled. */
struct cuda_step {
	const struct graph_node *n;
	cuda_run_fn run;		/* NULL: nothing to do */
	void *p;			/* host parameters (malloc'ed) */
	void *ws;			/* device workspace (cudaMalloc'ed at compile, or a piece of the plan's shared one) */
	size_t ws_bytes;
	int ws_shared;			/* ws is a piece of the shared workspace: not the step's to free */
	void (*fini)(struct cuda_step *st);	/* releases what p holds beyond itself (NULL: nothing) */
	int (*settle)(struct cuda_step *st);	/* waits for work built in the background: 1 when it failed (NULL: none) */
};

/*
 * Where steps take scratch (memory used only while the step runs: cuDNN
 * workspaces, column buffers, FP32 islands).  Steps run one after another on
 * one stream, so in a shared workspace every step's scratch starts at the
 * compile's ws_off (0, or past an enclosing step's own scratch).
 */
enum cuda_ws_mode { CUDA_WS_OWN = 0, CUDA_WS_SHARED, CUDA_WS_PROBE };
/* A probe's pieces are addresses past this, never dereferenced (cuDNN is not even given them). */
#define CUDA_WS_PROBE_BASE ((uintptr_t)1 << 40)
struct cuda_ws {
	enum cuda_ws_mode mode;
	char *base;			/* CUDA_WS_SHARED: the workspace */
	size_t bytes;			/* CUDA_WS_SHARED: its size, the limit on offset + piece */
	size_t need;			/* the most any step took: offset + bytes */
};

/*
 * What a compiler sees: the graph, every tensor's concrete shape, device
 * address and stored dtype (dtypes: the graph's own at fp32/tf32; at fp16 the
 * FP32 tensors are stored as F16, at bf16 as CUDA_DT_BF16, see
 * device_cuda_precision.cu and device_cuda_store.h), the GPU's
 * ordinal and the plan's precision (enum graph_precision).
 */
struct cuda_compile {
	const graph_t *g;
	const struct graph_shape *shapes;
	void *const *addrs;
	const enum graph_dtype *dtypes;
	void *const *graph_addrs;	/* the caller's addresses (FP32 weights stay there at fp16/bf16) */
	int ordinal;
	int precision;
	struct cuda_ws *ws;		/* the plan's scratch rule (NULL: each step its own) */
	size_t ws_off;			/* where this step's scratch starts in a shared workspace */
	struct cuda_dnn_scope *dnn;	/* cuDNN plans identical convolutions of this compile share (NULL: none) */
	compile_cache_t *cache;		/* the device's persistent engine and algorithm choices (NULL: off) */
	struct cuda_sdpa_scope *sdpa;	/* cuDNN plans identical attentions of this compile share (NULL: none) */
	int background;			/* slow engines may be built by worker threads (device_plan_settle) */
	int batch_invariant;		/* device_plan_options.batch_invariant: FP16/BF16 GEMMs never split K */
};

typedef int (*cuda_compile_fn)(const struct cuda_compile *cc, const struct graph_node *n,
    struct cuda_step *st, char **cause);
/* What a compiler returns (instead of 0 or -1) when it has no kernel for the node's FP16/BF16 storage: the plan runs it in FP32. */
#define CUDA_COMPILE_FALLBACK 1

/*
 * An index map over an output of nd dims: st[k][d] is operand k's element
 * stride along output dim d (0 where it broadcasts).  Passed to kernels by value.
 */
#define CUDA_MAP_OPS 3
struct cuda_map {
	int nd;
	int64_t dims[GRAPH_MAX_DIMS];
	int64_t st[CUDA_MAP_OPS][GRAPH_MAX_DIMS];
};

/* Offsets of output element i in each of nops operands. */
static __device__ __forceinline__ void
cuda_map_offsets(const struct cuda_map &m, int64_t i, int nops, int64_t *off)
{
	for (int k = 0; k < nops; k++)
		off[k] = 0;
	for (int d = m.nd - 1; d >= 0; d--) {
		int64_t c = i % m.dims[d];
		i /= m.dims[d];
		for (int k = 0; k < nops; k++)
			off[k] += c * m.st[k][d];
	}
}

/* Grid-stride loop over [0, n). */
#define CUDA_FOR(i, n) \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n); \
	    i += (int64_t)gridDim.x * blockDim.x)

/* Errors: "what: CUDA's (cuBLAS's) message" in *cause, -1. */
int cuda_fail(char **cause, cudaError_t err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int cuda_blas_fail(char **cause, cublasStatus_t st, const char *what);
/* -1 naming kernel when its launch failed (cudaGetLastError), else 0. */
int cuda_launched(const char *kernel, char **cause);
/* Blocks for a grid-stride loop over n elements (at least 1). */
unsigned int cuda_grid(int64_t n);
/* Device memory of bytes the step keeps for itself (tables it reads on every run; freed with the plan). */
int cuda_step_ws(struct cuda_step *st, size_t bytes, char **cause);
/* The most scratch a step may take: cap, or less when a shared workspace has less past cc's offset. */
size_t cuda_scratch_limit(const struct cuda_compile *cc, size_t cap);
/* Scratch of bytes for st (its own, or a piece of the shared workspace at cc's offset; refused when it does not fit). */
int cuda_step_scratch(const struct cuda_compile *cc, struct cuda_step *st, size_t bytes, char **cause);
/* Free st's workspace when it is its own. */
void cuda_step_ws_free(struct cuda_step *st);
/* Host parameters of bytes for a step, zeroed (freed with the plan). */
void *cuda_step_params(struct cuda_step *st, size_t bytes, char **cause);
/* Release what a step's compile set up (fini, parameters, its own workspace) and zero the step. */
void cuda_step_clear(struct cuda_step *st);
/* Copy host bytes into device memory at compile time, landed when it returns (never from a run). */
int cuda_upload(void *dst, const void *src, size_t bytes, char **cause);
/* Zero device memory at compile time, done when it returns (never from a run). */
int cuda_zero(void *dst, size_t bytes, char **cause);

/* Numpy broadcast of in (rank <= out's) to out: strides of operand k of m (m->nd, dims set from out). */
void cuda_map_bcast(struct cuda_map *m, int k, const struct graph_shape *out, const struct graph_shape *in);
/* Row-major element strides of s into st. */
void cuda_strides(const struct graph_shape *s, int64_t *st);
/* Normalise axis against rank (negative counts from the end); -1 when out of range. */
int cuda_axis(int64_t axis, int rank);

/* Node accessors: input i's shape/address (NULL when omitted), output i's. */
const struct graph_shape *cuda_in_shape(const struct cuda_compile *cc, const struct graph_node *n, int i);
void *cuda_in(const struct cuda_compile *cc, const struct graph_node *n, int i);
const struct graph_shape *cuda_out_shape(const struct cuda_compile *cc, const struct graph_node *n, int i);
void *cuda_out(const struct cuda_compile *cc, const struct graph_node *n, int i);
enum graph_dtype cuda_in_dtype(const struct cuda_compile *cc, const struct graph_node *n, int i);
enum graph_dtype cuda_out_dtype(const struct cuda_compile *cc, const struct graph_node *n, int i);

/* Whether the backend runs node n (op, arity, dtypes), else 0 with *why (device_cuda_support.cu). */
int cuda_node_supported(const graph_t *g, const struct graph_node *n, char **why);
/* The compiler of op; NULL when the backend has none. */
cuda_compile_fn cuda_op_compiler(enum graph_op op);

/*
 * Precision (device_cuda_precision.cu).  A plan's mixed-precision state: the
 * stored dtype and address of every tensor, the device buffers it owns (FP16
 * or BF16 homes of graph inputs/outputs) and the weight copies it shares.
 */
struct prec_shared;
struct cuda_prec {
	enum graph_dtype *dtypes;
	void **addrs;
	void **owned;
	size_t nowned;
	struct prec_shared **weights;	/* FP16/BF16 weight copies this plan holds (shared between plans, counted) */
	size_t nweights;
	size_t owned_bytes;		/* device bytes of owned[] (memory reports) */
	size_t new_weight_bytes;	/* device bytes of the FP16/BF16 weight copies this plan created */
};
/* Fill cc's dtypes/addrs for g at its precision, allocating FP16/BF16 buffers at fp16/bf16; pre-steps cast inputs. */
int cuda_prec_prepare(struct cuda_prec *pr, struct cuda_compile *cc, void *const *addrs,
    struct cuda_step *steps, size_t *nsteps, char **cause);
/* Append the steps casting the graph's FP16/BF16-stored outputs to their FP32 homes. */
int cuda_prec_finish(const struct cuda_prec *pr, const struct cuda_compile *cc, void *const *addrs,
    struct cuda_step *steps, size_t *nsteps, char **cause);
/* Free what prepare allocated. */
void cuda_prec_free(struct cuda_prec *pr);
/* Compile n at fp16/bf16: natively when its compiler takes the stored dtype, else in FP32 between casts (the step's fini frees). */
int cuda_prec_compile_node(const struct cuda_compile *cc, const struct graph_node *n, cuda_compile_fn fn,
    struct cuda_step *st, char **cause);
/* 1 when st runs its node in FP32 between casts (an FP16/BF16 plan's FP32 island; profiles say so). */
int cuda_prec_step_island(const struct cuda_step *st);
/* Queue an element-wise cast of n elements between F32 and F16 or CUDA_DT_BF16 (either way). */
cudaError_t cuda_launch_cast_f(cudaStream_t stream, const void *x, enum graph_dtype xdt, void *y,
    enum graph_dtype ydt, int64_t n);

/*
 * Batched copies (device_cuda_copy.cu): queue one kernel copying n entries,
 * none longer than max_bytes: host_entries (the host's view of the table;
 * a small table is passed in the launch) and entries (the same table's
 * device-readable address, its mapped pinned memory, read by the kernel
 * when the table is too large for the launch's parameters).
 */
struct device_copy_entry;
cudaError_t cuda_launch_copy_batch(cudaStream_t stream, const struct device_copy_entry *host_entries,
    const struct device_copy_entry *entries, size_t n, size_t max_bytes);

/* Per-op compilers (device_cuda_<concern>.cu). */
int cuda_compile_gemm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_matmul(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_conv(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
/* 1 when st is a Conv whose cuDNN plan also runs its bias + residual + ReLU epilogue. */
int cuda_conv_step_fused(const struct cuda_step *st);
int cuda_compile_conv_transpose(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_unary(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_binary(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_where(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_cast(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_softmax(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_attention(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_layernorm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_batchnorm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_reduce(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_groupnorm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_copy(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_transpose(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_expand(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_slice(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_concat(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_split(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_gather(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_gather_elements(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_pad(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_tile(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_resize(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_pool(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
/* device_cuda_index.cu */
int cuda_compile_predicate(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_trilu(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_cumsum(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
int cuda_compile_gather_nd(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_scatter_nd(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_topk(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);
/* device_cuda_argmax.cu */
int cuda_compile_argmax(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause);
int cuda_compile_rnn(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause);

/*
 * Shared epilogue (device_cuda_elementwise.cu): y = act(y + b) with b
 * broadcast by map operand 0 (b may be NULL: act alone), over the map's elements;
 * dt: y's and b's stored dtype, F32, F16 or CUDA_DT_BF16 (the arithmetic is FP32).
 */
cudaError_t cuda_launch_bias_act(cudaStream_t stream, void *y, const void *b, enum graph_dtype dt,
    const struct cuda_map *m, int act, float act_alpha, float act_beta);
/* y[i] = act(y[i] + b[(i / inner) % c] + z[i]) for a [n, c, inner] output; b and z may be NULL; all stored as dt. */
cudaError_t cuda_launch_channel_epilogue(cudaStream_t stream, void *y, const void *b, const void *z,
    enum graph_dtype dt, int64_t n, int64_t c, int64_t inner, int act, float act_alpha, float act_beta);

#endif
