/* device.c: backend selection and the checked wrappers every caller goes through. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "device_spec.h"
#include "error.h"

/* Number of CUDA devices usable now; 0 when none or not built. */
int
device_cuda_count(void)
{
#ifdef HAVE_CUDA
	return device_cuda_count_impl();
#else
	return 0;
#endif
}

/* Open the backend that spec names. */
static int
device_open_backend(device_t *dev, const char *spec, char **cause)
{
	int ordinal;

	if (strcmp(spec, "cpu") == 0)
		return device_cpu_open(dev, cause);
	if (strcmp(spec, "auto") == 0) {
		if (device_cuda_count() > 0)
			spec = "cuda:0";
		else
			return device_cpu_open(dev, cause);
	}
	ordinal = device_spec_cuda(spec);
	if (ordinal < 0)
		return error_set(cause, "unknown device \"%s\" (expected auto, cpu or cuda:N)", spec);
#ifdef HAVE_CUDA
	return device_cuda_open(dev, ordinal, cause);
#else
	return error_set(cause, "device \"%s\": this build has no CUDA backend (configure --with-cuda)", spec);
#endif
}

/* Open "auto", "cpu" or "cuda:N". */
int
device_open(const char *spec, device_t **out, char **cause)
{
	device_t *dev;

	dev = calloc(1, sizeof *dev);
	if (dev == NULL)
		return error_set(cause, "out of memory");
	if (device_open_backend(dev, spec, cause) != 0) {
		free(dev);
		return -1;
	}
	*out = dev;
	return 0;
}

/* Release the device. */
void
device_close(device_t *dev)
{
	if (dev == NULL)
		return;
	dev->ops->close(dev);
	free(dev);
}

/* Human-readable name. */
const char *
device_name(const device_t *dev)
{
	return dev->name;
}

/* 1 on a GPU backend. */
int
device_is_gpu(const device_t *dev)
{
	return dev->is_gpu;
}

/* Allocations made so far. */
uint64_t
device_allocation_count(const device_t *dev)
{
	return __atomic_load_n(&dev->allocations, __ATOMIC_RELAXED);
}

/* Count one allocation. */
static void
device_count_allocation(device_t *dev)
{
	__atomic_add_fetch(&dev->allocations, 1, __ATOMIC_RELAXED);
}

/* Allocate device memory. */
int
device_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	if (size == 0)
		return error_set(cause, "device_alloc: zero bytes");
	if (dev->ops->alloc(dev, size, ptr, cause) != 0)
		return -1;
	device_count_allocation(dev);
	return 0;
}

/* Free device memory (NULL is ignored). */
void
device_free(device_t *dev, void *ptr)
{
	if (ptr != NULL)
		dev->ops->free(dev, ptr);
}

/* Allocate pinned host memory. */
int
device_host_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	if (size == 0)
		return error_set(cause, "device_host_alloc: zero bytes");
	if (dev->ops->host_alloc(dev, size, ptr, cause) != 0)
		return -1;
	device_count_allocation(dev);
	return 0;
}

/* Free pinned host memory (NULL is ignored). */
void
device_host_free(device_t *dev, void *ptr)
{
	if (ptr != NULL)
		dev->ops->host_free(dev, ptr);
}

/* Pin existing host memory. */
int
device_host_register(device_t *dev, void *ptr, size_t size, char **cause)
{
	if (ptr == NULL || size == 0)
		return error_set(cause, "device_host_register: empty range");
	return dev->ops->host_register(dev, ptr, size, cause);
}

/* Unpin host memory pinned by device_host_register. */
int
device_host_unregister(device_t *dev, void *ptr, char **cause)
{
	return dev->ops->host_unregister(dev, ptr, cause);
}

/* Create a stream of the given kind. */
int
device_stream_create(device_t *dev, enum device_stream_kind kind,
    device_stream_t **out, char **cause)
{
	device_stream_t *s;

	s = calloc(1, sizeof *s);
	if (s == NULL)
		return error_set(cause, "out of memory");
	s->dev = dev;
	s->kind = kind;
	if (dev->ops->stream_create(s, cause) != 0) {
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

/* Wait for the stream's work, then destroy it (NULL is ignored). */
void
device_stream_destroy(device_stream_t *s)
{
	if (s == NULL)
		return;
	s->dev->ops->stream_destroy(s);
	free(s);
}

/* Wait for all work queued on s. */
int
device_stream_sync(device_stream_t *s, char **cause)
{
	return s->dev->ops->stream_sync(s, cause);
}

/* Create an event. */
int
device_event_create(device_t *dev, device_event_t **out, char **cause)
{
	device_event_t *e;

	e = calloc(1, sizeof *e);
	if (e == NULL)
		return error_set(cause, "out of memory");
	e->dev = dev;
	if (dev->ops->event_create(e, cause) != 0) {
		free(e);
		return -1;
	}
	*out = e;
	return 0;
}

/* Destroy an event (NULL is ignored). */
void
device_event_destroy(device_event_t *e)
{
	if (e == NULL)
		return;
	e->dev->ops->event_destroy(e);
	free(e);
}

/* Record e at the current end of s. */
int
device_event_record(device_event_t *e, device_stream_t *s, char **cause)
{
	return e->dev->ops->event_record(e, s, cause);
}

/* Make later work on s wait for e. */
int
device_stream_wait_event(device_stream_t *s, device_event_t *e, char **cause)
{
	return s->dev->ops->stream_wait_event(s, e, cause);
}

/* 1 when complete, 0 while pending, -1 on error. */
int
device_event_query(device_event_t *e, char **cause)
{
	return e->dev->ops->event_query(e, cause);
}

/* Wait for e. */
int
device_event_sync(device_event_t *e, char **cause)
{
	return e->dev->ops->event_sync(e, cause);
}

/* Microseconds between two completed events. */
int
device_event_elapsed_us(device_event_t *start, device_event_t *end, double *us,
    char **cause)
{
	return start->dev->ops->event_elapsed_us(start, end, us, cause);
}

/* Host to device copy on s. */
int
device_copy_h2d(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	if (n == 0)
		return 0;
	return s->dev->ops->copy_h2d(s, dst, src, n, cause);
}

/* Device to host copy on s. */
int
device_copy_d2h(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	if (n == 0)
		return 0;
	return s->dev->ops->copy_d2h(s, dst, src, n, cause);
}

/* Refuse compute on a stream made for copies only. */
static int
device_check_compute(device_stream_t *s, const char *op, char **cause)
{
	if (s->kind != DEVICE_STREAM_COMPUTE)
		return error_set(cause, "%s: stream was not created for compute", op);
	return 0;
}

/* y = act(x w^T + bias). */
int
device_linear(device_stream_t *s, const float *x, const float *w,
    const float *bias, float *y, int rows, int in, int out, enum device_act act,
    char **cause)
{
	if (device_check_compute(s, "linear", cause) != 0)
		return -1;
	if (rows <= 0 || in <= 0 || out <= 0)
		return error_set(cause, "linear: bad shape %dx%d -> %d", rows, in, out);
	return s->dev->ops->linear(s, x, w, bias, y, rows, in, out, act, cause);
}

/* y = act(y), element-wise. */
int
device_activation(device_stream_t *s, float *y, size_t n, enum device_act act,
    char **cause)
{
	if (device_check_compute(s, "activation", cause) != 0)
		return -1;
	if (n == 0 || act == DEVICE_ACT_NONE)
		return 0;
	return s->dev->ops->activation(s, y, n, act, cause);
}

/* Row-wise softmax in place. */
int
device_softmax(device_stream_t *s, float *y, int rows, int cols, char **cause)
{
	if (device_check_compute(s, "softmax", cause) != 0)
		return -1;
	if (rows <= 0 || cols <= 0)
		return error_set(cause, "softmax: bad shape %dx%d", rows, cols);
	return s->dev->ops->softmax(s, y, rows, cols, cause);
}

/* Row-wise layer norm in place. */
int
device_layernorm(device_stream_t *s, float *y, const float *gamma,
    const float *beta, int rows, int cols, float eps, char **cause)
{
	if (device_check_compute(s, "layernorm", cause) != 0)
		return -1;
	if (rows <= 0 || cols <= 0)
		return error_set(cause, "layernorm: bad shape %dx%d", rows, cols);
	return s->dev->ops->layernorm(s, y, gamma, beta, rows, cols, eps, cause);
}

/* 1 when the backend can capture and replay graphs. */
int
device_has_graphs(const device_t *dev)
{
	return dev->ops->graph_launch != NULL;
}

/* Start recording s's work into a graph. */
int
device_graph_capture_begin(device_stream_t *s, char **cause)
{
	if (!device_has_graphs(s->dev))
		return error_set(cause, "the %s backend has no graphs", s->dev->ops->name);
	return s->dev->ops->graph_capture_begin(s, cause);
}

/* Stop recording and make the graph ready to launch. */
int
device_graph_capture_end(device_stream_t *s, device_graph_t **out, char **cause)
{
	device_graph_t *g;

	if (!device_has_graphs(s->dev))
		return error_set(cause, "the %s backend has no graphs", s->dev->ops->name);
	g = calloc(1, sizeof *g);
	if (g == NULL)
		return error_set(cause, "out of memory");
	g->dev = s->dev;
	if (s->dev->ops->graph_capture_end(s, g, cause) != 0) {
		free(g);
		return -1;
	}
	*out = g;
	return 0;
}

/* Replay g on s. */
int
device_graph_launch(device_graph_t *g, device_stream_t *s, char **cause)
{
	return g->dev->ops->graph_launch(g, s, cause);
}

/* Destroy a graph (NULL is ignored). */
void
device_graph_destroy(device_graph_t *g)
{
	if (g == NULL)
		return;
	g->dev->ops->graph_destroy(g);
	free(g);
}
