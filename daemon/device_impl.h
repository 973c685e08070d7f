/* device_impl.h: the backend function table behind device.h (ggml-backend-impl.h's shape). */
#ifndef INFERD_DEVICE_IMPL_H
#define INFERD_DEVICE_IMPL_H

#include "backend_node.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A backend fills one table; device.c wraps it.  Each function receives the
 * backend's own context (dev->ctx, s->handle, e->handle, p->handle), which
 * holds everything backend-specific (a cuBLAS handle, a timestamp, compiled
 * steps).  Wrappers have already checked that pointers are non-NULL and sizes
 * are in range; plan_compile is called only for graphs whose every node
 * supports_node accepted, with shapes graph_infer_shapes agrees with and an
 * address for every non-empty tensor.
 */
struct device_ops {
	const char *name;
	void (*close)(device_t *dev);
	int (*alloc)(device_t *dev, size_t size, void **ptr, char **cause);
	void (*free)(device_t *dev, void *ptr);
	/* Free and total device memory; NULL on backends that cannot tell (CPU). */
	int (*mem_info)(device_t *dev, size_t *free_bytes, size_t *total_bytes, char **cause);
	int (*host_alloc)(device_t *dev, size_t size, void **ptr, char **cause);
	void (*host_free)(device_t *dev, void *ptr);
	int (*host_register)(device_t *dev, void *ptr, size_t size, char **cause);
	int (*host_unregister)(device_t *dev, void *ptr, char **cause);
	/* CUDA IPC: NULL on backends without device memory to share. */
	int (*ipc_open)(device_t *dev, const unsigned char *handle, int device_id,
	    size_t size, void **ptr, char **cause);
	void (*ipc_close)(device_t *dev, void *ptr);
	int (*stream_create)(device_stream_t *s, char **cause);
	void (*stream_destroy)(device_stream_t *s);
	int (*stream_sync)(device_stream_t *s, char **cause);
	int (*event_create)(device_event_t *e, char **cause);
	void (*event_destroy)(device_event_t *e);
	int (*event_record)(device_event_t *e, device_stream_t *s, char **cause);
	int (*stream_wait_event)(device_stream_t *s, device_event_t *e, char **cause);
	int (*event_query)(device_event_t *e, char **cause);
	int (*event_sync)(device_event_t *e, char **cause);
	int (*event_elapsed_us)(device_event_t *a, device_event_t *b, double *us,
	    char **cause);
	int (*copy_h2d)(device_stream_t *s, void *dst, const void *src, size_t n,
	    char **cause);
	int (*copy_d2h)(device_stream_t *s, void *dst, const void *src, size_t n,
	    char **cause);
	/* Batched copies (device.h): the table's entries and device address; one operation over n entries. */
	int (*copy_table_create)(device_copy_table_t *t, char **cause);
	void (*copy_table_destroy)(device_copy_table_t *t);
	int (*copy_batch)(device_stream_t *s, device_copy_table_t *t, size_t n, char **cause);
	int (*host_mapped)(device_t *dev, void *host, void **dev_ptr, char **cause);
	/* Compute: see device.h; device.c has checked the graph, shapes and addresses. */
	int (*supports_node)(const device_t *dev, const graph_t *g,
	    const struct graph_node *n, char **why);
	int (*plan_compile)(device_plan_t *p, const struct graph_shape *shapes,
	    void *const *addrs, char **cause);
	int (*plan_run)(device_plan_t *p, device_stream_t *s, char **cause);
	/* device_plan_settle; NULL on backends that leave no work behind (CPU). */
	int (*plan_settle)(device_plan_t *p, char **cause);
	void (*plan_free)(device_plan_t *p);
	/* device_plan_profile: one entry per step, malloc'ed; NULL on a backend that cannot. */
	int (*plan_profile)(device_plan_t *p, device_stream_t *s, struct device_step_time **out, size_t *n,
	    char **cause);
	/* Graphs: NULL on backends without them (device_has_graphs says 0). */
	int (*graph_capture_begin)(device_stream_t *s, char **cause);
	int (*graph_capture_end)(device_stream_t *s, device_graph_t *g, char **cause);
	int (*graph_launch)(device_graph_t *g, device_stream_t *s, char **cause);
	void (*graph_destroy)(device_graph_t *g);
	/* Threads the backend computes on (the CPU's cpu_threads); NULL on backends that compute elsewhere. */
	void (*set_threads)(device_t *dev, int n);
};

struct device {
	const struct device_ops *ops;
	void *ctx;			/* the backend's state */
	char name[128];
	char identity[256];		/* what a remembered result depends on: the device model and library versions */
	char uuid[80];			/* a GPU's UUID as NVML spells it ("GPU-..."); "" on the CPU */
	int is_gpu;
	int ordinal;			/* the CUDA ordinal; -1 on the CPU */
	int integrated;			/* host and device share memory */
	uint64_t allocations;		/* atomically incremented by wrappers */
};

struct device_stream {
	device_t *dev;
	enum device_stream_kind kind;
	void *handle;			/* the backend's per-stream state */
	size_t bytes;			/* set by stream_create: device memory of its own (device_stream_bytes) */
};

struct device_graph {
	device_t *dev;
	void *handle;			/* e.g. cudaGraphExec_t */
};

struct device_event {
	device_t *dev;
	void *handle;			/* the backend's per-event state */
};

struct device_copy_table {
	device_t *dev;
	struct device_copy_entry *entries;	/* capacity entries the host writes */
	size_t capacity;
	void *handle;			/* the backend's view of entries (CUDA: their device address) */
};

/* Where a plan's steps take their scratch (device.h: device_plan_compile_shared). */
enum device_ws_mode {
	DEVICE_WS_OWN = 0,		/* each step allocates its own */
	DEVICE_WS_SHARED,		/* pieces of ws, ws_bytes long */
	DEVICE_WS_PROBE,		/* measuring: pieces of no memory; the plan never runs */
};

struct device_plan {
	device_t *dev;
	const graph_t *g;		/* the compiled graph; outlives the plan */
	int precision;			/* enum graph_precision (device_plan_options) */
	int background;			/* device_plan_options.background */
	int batch_invariant;		/* device_plan_options.batch_invariant */
	void *handle;			/* the backend's compiled steps */
	enum device_ws_mode ws_mode;	/* set before plan_compile */
	void *ws;			/* DEVICE_WS_SHARED: the workspace */
	size_t ws_bytes;
	size_t ws_need;			/* set by plan_compile: the most scratch one step takes from ws */
	size_t own_bytes;		/* set by plan_compile: device memory its steps allocated (device_plan_memory) */
	size_t weight_bytes;		/* set by plan_compile: FP16 weight copies it created */
};

/* Backend constructors: fill dev->ops, dev->ctx, dev->name. */
int device_cpu_open(device_t *dev, char **cause);
#ifdef HAVE_CUDA
int device_cuda_open(device_t *dev, int ordinal, char **cause);
int device_cuda_count_impl(void);
long device_cuda_plans_idle_impl(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
