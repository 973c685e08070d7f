/* device.h: the device layer, one interface over the CPU and CUDA backends. */
#ifndef INFERD_DEVICE_H
#define INFERD_DEVICE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/*
 * Handles are opaque.  Every function that can fail returns -1 and stores a
 * message in *cause (see error.h); CUDA failures name the call and CUDA's
 * message.  Memory returned by device_alloc is only touched through copies
 * and compute calls; host memory (device_host_alloc or registered) is plain
 * memory the caller reads and writes.
 *
 * Work queued on one stream runs in order; streams order against each other
 * only through events.  On the CPU backend every call runs to completion
 * before it returns, so the same ordering holds trivially.
 *
 * Threads: one device may be used from many threads; one stream and one
 * plan from one thread at a time.
 *
 * Compute goes through graphs (graph.h): device_supports_node says whether
 * the backend has kernels for a node; device_plan_compile maps a whole graph,
 * for one set of concrete shapes and tensor addresses, to the backend's
 * kernels (allocating any workspace then, never later); device_plan_run queues
 * that work on a compute stream, and can be captured into a device graph.
 */
typedef struct device device_t;
typedef struct device_stream device_stream_t;
typedef struct device_event device_event_t;
typedef struct device_graph device_graph_t;
typedef struct device_plan device_plan_t;

/* Streams that run compute need BLAS state; copy-only streams do not. */
enum device_stream_kind {
	DEVICE_STREAM_COPY = 0,
	DEVICE_STREAM_COMPUTE,
};

/* Open "auto", "cpu" or "cuda:N"; "auto" takes GPU 0 when one is present. */
int device_open(const char *spec, device_t **out, char **cause);
/* Release the device; all its streams, events and memory must be gone. */
void device_close(device_t *dev);
/* Human-readable name, e.g. "cpu (OpenBLAS)" or "cuda:0 (NVIDIA H100 80GB HBM3)". */
const char *device_name(const device_t *dev);
/*
 * Everything besides the model that a result computed on the device could
 * depend on (for a GPU: its model and compute capability, the driver's,
 * cuDNN's and cuBLASLt's versions; for the CPU: its vector extensions and
 * the kernel libraries' versions): results remembered across loads are
 * keyed by it.
 */
const char *device_identity(const device_t *dev);
/* 1 on a GPU backend, 0 on the CPU one. */
int device_is_gpu(const device_t *dev);
/*
 * The host threads dev's kernels run on (every library in play: OpenMP,
 * OpenBLAS, oneDNN), n < 1 meaning one; nothing on a GPU backend.  Call it
 * before plans run, not while one runs.
 */
void device_set_threads(device_t *dev, int n);
/* Number of CUDA devices usable now; 0 when no driver or GPU (never fails). */
int device_cuda_count(void);
/* Device and pinned allocations made so far (the daemon checks it stays flat). */
uint64_t device_allocation_count(const device_t *dev);

/* What a device is, and its counters, for reports, metrics and placement. */
struct device_info {
	const char *name;		/* device_name */
	int gpu;			/* device_is_gpu */
	int ordinal;			/* the CUDA ordinal; -1 on the CPU */
	const char *uuid;		/* a GPU's UUID as NVML spells it ("GPU-..."); "" on the CPU */
	uint64_t allocations;		/* device_allocation_count */
	/*
	 * cuDNN convolution plans waiting idle in the process-wide pool for a
	 * later compile of the same convolution (see ARCHITECTURE.md); -1 on
	 * the CPU and in builds without cuDNN.
	 */
	long conv_plans_idle;
};
void device_info(const device_t *dev, struct device_info *out);

/* Memory. */
int device_alloc(device_t *dev, size_t size, void **ptr, char **cause);
void device_free(device_t *dev, void *ptr);
/*
 * Free and total device memory now: 0 with the figures, 1 when the backend
 * cannot tell (CPU: host memory is not checked), -1 with *cause on error.
 */
int device_memory_info(device_t *dev, size_t *free_bytes, size_t *total_bytes, char **cause);
int device_host_alloc(device_t *dev, size_t size, void **ptr, char **cause);
void device_host_free(device_t *dev, void *ptr);
/*
 * Pin existing host memory (a client's shm mapping) so copies DMA from it,
 * and map it for the device (device_host_mapped).
 */
int device_host_register(device_t *dev, void *ptr, size_t size, char **cause);
int device_host_unregister(device_t *dev, void *ptr, char **cause);
/* Bytes of a CUDA IPC memory handle (cudaIpcMemHandle_t). */
#define DEVICE_IPC_HANDLE_BYTES 64
/*
 * Open another process's device allocation from its CUDA IPC handle on GPU
 * device_id (which must be the device this one runs on); *ptr is its device
 * address.  Refused when the allocation is smaller than size, and on the CPU
 * backend ("CUDA shared memory needs a GPU backend").
 */
int device_ipc_open(device_t *dev, const unsigned char handle[DEVICE_IPC_HANDLE_BYTES],
    int device_id, size_t size, void **ptr, char **cause);
/* Close what device_ipc_open opened. */
void device_ipc_close(device_t *dev, void *ptr);

/* Streams and events. */
int device_stream_create(device_t *dev, enum device_stream_kind kind,
    device_stream_t **out, char **cause);
/* Wait for the stream's work, then destroy it. */
void device_stream_destroy(device_stream_t *s);
int device_stream_sync(device_stream_t *s, char **cause);
int device_event_create(device_t *dev, device_event_t **out, char **cause);
void device_event_destroy(device_event_t *e);
int device_event_record(device_event_t *e, device_stream_t *s, char **cause);
/* Make later work on s wait until e has completed. */
int device_stream_wait_event(device_stream_t *s, device_event_t *e, char **cause);
/* 1 when e has completed, 0 while pending, -1 on error. */
int device_event_query(device_event_t *e, char **cause);
int device_event_sync(device_event_t *e, char **cause);
/* Microseconds between two completed events. */
int device_event_elapsed_us(device_event_t *start, device_event_t *end,
    double *us, char **cause);

/*
 * Graphs: the work queued on a compute stream between capture_begin and
 * capture_end is recorded instead of run, and graph_launch replays it as one
 * launch (CUDA graphs), which removes the per-kernel launch cost that
 * dominates small batches.  Only on backends where device_has_graphs is 1.
 */
int device_has_graphs(const device_t *dev);
int device_graph_capture_begin(device_stream_t *s, char **cause);
int device_graph_capture_end(device_stream_t *s, device_graph_t **out, char **cause);
int device_graph_launch(device_graph_t *g, device_stream_t *s, char **cause);
void device_graph_destroy(device_graph_t *g);

/* Asynchronous copies between host and device memory on a stream. */
int device_copy_h2d(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause);
int device_copy_d2h(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause);

/*
 * Batched copies: one device operation (on CUDA one kernel) moves every
 * entry of a table, instead of one copy and one event per tensor; meant for
 * small tensors, where a DMA copy's fixed cost dominates.  dst and src are
 * addresses the device can reach: device memory, or registered host memory
 * through device_host_mapped.  A table holds at most capacity entries in
 * host memory the device reads (pinned on CUDA): fill device_copy_entries(t)
 * and queue them with device_copy_batch; the entries must not be rewritten
 * until the work queued with them has completed.  On the CPU backend each
 * entry is a memcpy, done before device_copy_batch returns.
 */
struct device_copy_entry {
	void *dst;
	const void *src;
	size_t bytes;
};
typedef struct device_copy_table device_copy_table_t;
int device_copy_table_create(device_t *dev, size_t capacity, device_copy_table_t **out,
    char **cause);
/* Free a table (NULL is ignored); no work queued with it may be pending. */
void device_copy_table_destroy(device_copy_table_t *t);
/* The table's entries, capacity of them, written by the caller. */
struct device_copy_entry *device_copy_entries(device_copy_table_t *t);
/* Queue the copy of the table's first n entries on s (n <= capacity; 0 queues nothing). */
int device_copy_batch(device_stream_t *s, device_copy_table_t *t, size_t n, char **cause);
/*
 * The address at which the device reads and writes host memory registered
 * with device_host_register (host itself on the CPU backend); host must lie
 * in a registered range.
 */
int device_host_mapped(device_t *dev, void *host, void **dev_ptr, char **cause);
/* 1 when host and device share memory (the CPU backend; integrated GPUs), else 0. */
int device_is_integrated(const device_t *dev);

/*
 * 1 when the backend can run node n of g (its op, attributes and dtypes);
 * else 0, and *why (malloc'ed; why may be NULL) names what it lacks.
 */
int device_supports_node(const device_t *dev, const graph_t *g,
    const struct graph_node *n, char **why);
/*
 * How a plan is compiled, beside the graph and its shapes: the precision the
 * backend computes the graph's FP32 tensors in (enum graph_precision; the
 * graph's inputs and outputs keep their dtypes; a backend without the faster
 * modes, the CPU one, computes in FP32).  NULL options: FP32.
 */
struct device_plan_options {
	int precision;
	int background;			/* slow per-shape work may finish on worker threads: see device_plan_settle */
	/*
	 * Each row's answer independent of the other rows in its batch: FP16/BF16
	 * GEMMs never split K, so a request batched with others sums in the order
	 * it does alone (a backend without split-K reductions ignores it).
	 */
	int batch_invariant;
};

/*
 * Compile g for concrete shapes (shapes[i] for tensor i, as
 * graph_infer_shapes gives them; checked again here) and addresses (addrs[i]:
 * device memory of tensor i, constants already uploaded; an in-place op may
 * give its output its input's address) into a plan for a compute stream.
 * Refused, naming the node, when the backend cannot run a node or its shapes.
 * g must outlive the plan; shapes and addrs are copied.
 */
int device_plan_compile(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, device_plan_t **out,
    char **cause);
/*
 * Plans that never run at the same time (one batch context's: they run one
 * after another on its compute stream) can share one scratch workspace: the
 * cuDNN workspaces, column buffers and FP32 islands their steps need only
 * while the step runs.  device_plan_measure compiles g as
 * device_plan_compile_shared would with an unlimited workspace (engines and
 * chunks chosen within the backend's own caps), frees it, and reports in
 * *need the workspace bytes that plan takes (0 on the CPU backend, whose
 * scratch is host memory of its own).  device_plan_compile_shared compiles
 * like device_plan_compile, but every step's scratch is a piece of
 * [ws, ws + ws_bytes) (ws may be NULL when ws_bytes is 0): engines are chosen
 * among those whose workspace fits, and a step that cannot fit is refused,
 * naming the sizes.  The workspace must outlive the plan and any device graph
 * captured from it; device_plan_compile gives each step scratch of its own.
 */
int device_plan_measure(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, size_t *need,
    char **cause);
int device_plan_compile_shared(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, void *ws,
    size_t ws_bytes, device_plan_t **out, char **cause);
/*
 * A plan compiled with options.background may leave work to the backend's
 * worker threads (the CUDA backend's fused-attention engines, each a runtime
 * compilation), so that a load compiling many shapes builds them side by
 * side.  device_plan_settle waits for it: 0 when the plan can run, 1 when
 * that work found nothing the plan can use (compile it again without
 * background, which takes another way at compile), -1 on error.  A plan
 * compiled without background settles at once; run settles by itself.
 */
int device_plan_settle(device_plan_t *p, char **cause);
/* Queue the plan's work on compute stream s (capturable into a device graph); never allocates. */
int device_plan_run(device_plan_t *p, device_stream_t *s, char **cause);
/* Free a plan and its workspaces (NULL is ignored). */
void device_plan_free(device_plan_t *p);
/*
 * Profiling, a diagnostic off the serving path: run the plan's steps once on
 * compute stream s, not captured (refused while s is capturing), timing each
 * step, and wait for them.  *out (malloc'ed, *n entries; free() it) has one
 * entry per step in run order: its node's name and op, or for a cast an fp16
 * or bf16 plan inserts node "(precision cast)" and op "Cast (precision)", and its
 * microseconds (CUDA: events recorded around the step on s, so a step's time
 * includes the gaps between its kernels; CPU: the clock around the step).
 * how says what ran it: "cpu" on the CPU backend; on CUDA the plan's
 * precision ("fp32", "tf32", "fp16", "bf16"), "fp32 island" for a node an
 * fp16 or bf16 plan runs in FP32 between casts (the casts are in its time),
 * or the precision and " fused" ("fp16 fused", "bf16 fused") for a Conv whose bias, residual and
 * ReLU cuDNN computes in the convolution's own graph.  The names
 * point into the plan's graph and static strings: valid while the graph
 * lives.  Events and the array are allocated here, never by a run.
 */
struct device_step_time {
	const char *node;
	const char *op;
	const char *how;
	double us;
};
int device_plan_profile(device_plan_t *p, device_stream_t *s, struct device_step_time **out, size_t *n,
    char **cause);
/*
 * Device memory the plan allocated at compile beyond what it was given
 * (memory reports): *own_bytes its steps' own scratch and buffers (FP16
 * activations at fp16), *weight_bytes the FP16 weight copies it created
 * (copies another plan already made are shared, not counted again); 0 and 0
 * on the CPU backend.
 */
void device_plan_memory(const device_plan_t *p, size_t *own_bytes, size_t *weight_bytes);
/* Device memory a stream holds of its own (a compute stream's BLAS workspace); 0 on the CPU backend. */
size_t device_stream_bytes(const device_stream_t *s);

#ifdef __cplusplus
}
#endif

#endif
