/* device_impl.h: the backend function table behind device.h (ggml-backend-impl.h's shape). */
#ifndef INFERD_DEVICE_IMPL_H
#define INFERD_DEVICE_IMPL_H

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A backend fills one table; device.c wraps it.  Each function receives the
 * backend's own context (dev->ctx, s->handle, e->handle).  Wrappers have
 * already checked that pointers are non-NULL and sizes are in range.
 */
struct device_ops {
	const char *name;
	void (*close)(device_t *dev);
	int (*alloc)(device_t *dev, size_t size, void **ptr, char **cause);
	void (*free)(device_t *dev, void *ptr);
	int (*host_alloc)(device_t *dev, size_t size, void **ptr, char **cause);
	void (*host_free)(device_t *dev, void *ptr);
	int (*host_register)(device_t *dev, void *ptr, size_t size, char **cause);
	int (*host_unregister)(device_t *dev, void *ptr, char **cause);
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
	int (*linear)(device_stream_t *s, const float *x, const float *w,
	    const float *bias, float *y, int rows, int in, int out,
	    enum device_act act, char **cause);
	int (*activation)(device_stream_t *s, float *y, size_t n,
	    enum device_act act, char **cause);
	int (*softmax)(device_stream_t *s, float *y, int rows, int cols,
	    char **cause);
	int (*layernorm)(device_stream_t *s, float *y, const float *gamma,
	    const float *beta, int rows, int cols, float eps, char **cause);
	/* Graphs: NULL on backends without them (device_has_graphs says 0). */
	int (*graph_capture_begin)(device_stream_t *s, char **cause);
	int (*graph_capture_end)(device_stream_t *s, device_graph_t *g, char **cause);
	int (*graph_launch)(device_graph_t *g, device_stream_t *s, char **cause);
	void (*graph_destroy)(device_graph_t *g);
};

struct device {
	const struct device_ops *ops;
	void *ctx;			/* the backend's state */
	char name[128];
	int is_gpu;
	uint64_t allocations;		/* atomically incremented by wrappers */
};

struct device_stream {
	device_t *dev;
	enum device_stream_kind kind;
	void *handle;			/* e.g. cudaStream_t */
	void *blas;			/* e.g. cublasHandle_t, compute streams only */
	void *blas_workspace;		/* fixed cuBLAS workspace, so graph capture never allocates */
};

struct device_graph {
	device_t *dev;
	void *handle;			/* e.g. cudaGraphExec_t */
};

struct device_event {
	device_t *dev;
	void *handle;			/* e.g. cudaEvent_t; CPU: a timestamp */
	double cpu_time_us;		/* CPU backend: when it was recorded */
};

/* Backend constructors: fill dev->ops, dev->ctx, dev->name. */
int device_cpu_open(device_t *dev, char **cause);
#ifdef HAVE_CUDA
int device_cuda_open(device_t *dev, int ordinal, char **cause);
int device_cuda_count_impl(void);
#endif

/* Shared by both backends: a C version of each op, used by the CPU backend
 * and as the reference the tests compare against. */
float device_act_apply(enum device_act act, float x);

#ifdef __cplusplus
}
#endif

#endif
