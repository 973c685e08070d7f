/* device.c: backend selection and the checked wrappers every caller goes through. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "device_impl.h"
#include "device_spec.h"
#include "error.h"
#include "fault.h"

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

	dev->ordinal = -1;
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
	if (device_cuda_open(dev, ordinal, cause) != 0)
		return -1;
	dev->ordinal = ordinal;
	return 0;
#else
	return error_set(cause, "device \"%s\": this build has no CUDA backend (configure --with-cuda)", spec);
#endif
}

/* Open "auto", "cpu" or "cuda:N". */
int
device_open(const char *spec, device_t **out, char **cause)
{
	device_t *dev;

	dev = xcalloc(1, sizeof *dev);
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

/* What remembered results depend on besides the model (device.h). */
const char *
device_identity(const device_t *dev)
{
	return dev->identity;
}

/* 1 on a GPU backend. */
int
device_is_gpu(const device_t *dev)
{
	return dev->is_gpu;
}

/* The backend's host threads, where it computes on the host. */
void
device_set_threads(device_t *dev, int n)
{
	if (dev->ops->set_threads != NULL)
		dev->ops->set_threads(dev, n < 1 ? 1 : n);
}

/* Allocations made so far. */
uint64_t
device_allocation_count(const device_t *dev)
{
	return __atomic_load_n(&dev->allocations, __ATOMIC_RELAXED);
}

/* The device's description and counters. */
void
device_info(const device_t *dev, struct device_info *out)
{
	out->name = dev->name;
	out->gpu = dev->is_gpu;
	out->ordinal = dev->ordinal;
	out->uuid = dev->uuid;
	out->allocations = device_allocation_count(dev);
#ifdef HAVE_CUDA
	out->conv_plans_idle = dev->is_gpu ? device_cuda_plans_idle_impl() : -1;
#else
	out->conv_plans_idle = -1;
#endif
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
	if (FAULT(FAULT_DEVICE_ALLOC))
		return error_set(cause, "device_alloc of %zu bytes: out of memory (injected)", size);
	if (dev->ops->alloc(dev, size, ptr, cause) != 0)
		return -1;
	device_count_allocation(dev);
	return 0;
}

/* Free and total device memory, where the backend can tell. */
int
device_memory_info(device_t *dev, size_t *free_bytes, size_t *total_bytes, char **cause)
{
	if (dev->ops->mem_info == NULL)
		return 1;
	return dev->ops->mem_info(dev, free_bytes, total_bytes, cause);
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
	if (FAULT(FAULT_HOST_ALLOC))
		return error_set(cause, "device_host_alloc of %zu bytes: out of memory (injected)", size);
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

/* Open a CUDA IPC handle; the CPU backend has none. */
int
device_ipc_open(device_t *dev, const unsigned char handle[DEVICE_IPC_HANDLE_BYTES],
    int device_id, size_t size, void **ptr, char **cause)
{
	if (dev->ops->ipc_open == NULL)
		return error_set(cause, "CUDA shared memory needs a GPU backend (this daemon runs on %s)",
		    dev->name);
	if (size == 0)
		return error_set(cause, "device_ipc_open: empty range");
	return dev->ops->ipc_open(dev, handle, device_id, size, ptr, cause);
}

/* Close a mapping device_ipc_open made (NULL is ignored). */
void
device_ipc_close(device_t *dev, void *ptr)
{
	if (ptr != NULL && dev->ops->ipc_close != NULL)
		dev->ops->ipc_close(dev, ptr);
}

/* Create a stream of the given kind. */
int
device_stream_create(device_t *dev, enum device_stream_kind kind,
    device_stream_t **out, char **cause)
{
	device_stream_t *s;

	if (FAULT(FAULT_STREAM_CREATE))
		return error_set(cause, "creating a stream failed (injected)");
	s = xcalloc(1, sizeof *s);
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

	if (FAULT(FAULT_EVENT_CREATE))
		return error_set(cause, "creating an event failed (injected)");
	e = xcalloc(1, sizeof *e);
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
	if (FAULT(FAULT_COPY))
		return error_set(cause, "host to device copy of %zu bytes failed (injected)", n);
	return s->dev->ops->copy_h2d(s, dst, src, n, cause);
}

/* Device to host copy on s. */
int
device_copy_d2h(device_stream_t *s, void *dst, const void *src, size_t n,
    char **cause)
{
	if (n == 0)
		return 0;
	if (FAULT(FAULT_COPY))
		return error_set(cause, "device to host copy of %zu bytes failed (injected)", n);
	return s->dev->ops->copy_d2h(s, dst, src, n, cause);
}

/* A table of capacity batched-copy entries in memory the device reads. */
int
device_copy_table_create(device_t *dev, size_t capacity, device_copy_table_t **out,
    char **cause)
{
	device_copy_table_t *t;

	if (capacity == 0 || capacity > SIZE_MAX / sizeof(struct device_copy_entry))
		return error_set(cause, "device_copy_table_create: %zu entries", capacity);
	if (FAULT(FAULT_HOST_ALLOC))
		return error_set(cause, "copy table of %zu entries: out of memory (injected)", capacity);
	if ((t = calloc(1, sizeof *t)) == NULL)
		return error_set(cause, "out of memory");
	t->dev = dev;
	t->capacity = capacity;
	if (dev->ops->copy_table_create(t, cause) != 0) {
		free(t);
		return -1;
	}
	device_count_allocation(dev);
	*out = t;
	return 0;
}

/* Free a table (NULL is ignored). */
void
device_copy_table_destroy(device_copy_table_t *t)
{
	if (t == NULL)
		return;
	t->dev->ops->copy_table_destroy(t);
	free(t);
}

/* The entries the caller fills. */
struct device_copy_entry *
device_copy_entries(device_copy_table_t *t)
{
	return t->entries;
}

/* Queue one copy of the first n entries on s. */
int
device_copy_batch(device_stream_t *s, device_copy_table_t *t, size_t n, char **cause)
{
	if (n == 0)
		return 0;
	if (n > t->capacity)
		return error_set(cause, "device_copy_batch: %zu entries, the table holds %zu", n, t->capacity);
	if (FAULT(FAULT_COPY))
		return error_set(cause, "batched copy of %zu tensors failed (injected)", n);
	return s->dev->ops->copy_batch(s, t, n, cause);
}

/* The device's address of registered host memory. */
int
device_host_mapped(device_t *dev, void *host, void **dev_ptr, char **cause)
{
	if (host == NULL)
		return error_set(cause, "device_host_mapped: NULL address");
	return dev->ops->host_mapped(dev, host, dev_ptr, cause);
}

/* 1 when host and device share memory. */
int
device_is_integrated(const device_t *dev)
{
	return dev->integrated;
}

/* Whether the backend can run node n. */
int
device_supports_node(const device_t *dev, const graph_t *g,
    const struct graph_node *n, char **why)
{
	if ((unsigned)n->op >= GRAPH_OP_COUNT) {
		error_set(why, "unknown op %d", (int)n->op);
		return 0;
	}
	return dev->ops->supports_node(dev, g, n, why);
}

/* Every node runnable on dev; the first one that is not is named. */
static int
device_plan_check_nodes(device_t *dev, const graph_t *g, char **cause)
{
	char *why = NULL;
	size_t i;

	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		if (!device_supports_node(dev, g, n, &why)) {
			error_set(cause, "node '%s' (%s): the %s backend cannot run it: %s",
			    n->name ? n->name : "?", graph_op_name(n->op), dev->ops->name,
			    why ? why : "unsupported");
			free(why);
			return -1;
		}
	}
	return 0;
}

/* Shapes agree with graph_infer_shapes from the inputs' shapes; every used tensor has an address. */
static int
device_plan_check_shapes(const graph_t *g, const struct graph_shape *shapes,
    void *const *addrs, char **cause)
{
	struct graph_shape *in, *want;
	size_t i;
	int rc = 0;

	in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	want = xcalloc(g->ntensors + 1, sizeof *want);
	if (in == NULL || want == NULL) {
		free(in);
		free(want);
		return error_set(cause, "out of memory");
	}
	for (i = 0; i < (size_t)g->ninputs; i++) {
		if (g->inputs[i] < 0 || (size_t)g->inputs[i] >= g->ntensors) {
			free(in);
			free(want);
			return error_set(cause, "graph input %zu names no tensor", i);
		}
		in[i] = shapes[g->inputs[i]];
	}
	rc = graph_infer_shapes(g, in, want, cause);
	for (i = 0; rc == 0 && i < g->ntensors; i++) {
		if (shapes[i].ndims != want[i].ndims ||
		    memcmp(shapes[i].dims, want[i].dims, (size_t)want[i].ndims * sizeof want[i].dims[0]) != 0)
			rc = error_set(cause, "tensor '%s': the shape given is not the one the graph implies", g->tensors[i].name);
		else if (addrs[i] == NULL && graph_shape_elems(&want[i]) > 0)
			rc = error_set(cause, "tensor '%s' has no address", g->tensors[i].name);
	}
	free(in);
	free(want);
	return rc;
}

/* Compile g for shapes and addrs into a plan whose steps take scratch as mode says. */
static int
device_plan_compile_mode(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, enum device_ws_mode mode, void *ws, size_t ws_bytes,
    device_plan_t **out, char **cause)
{
	device_plan_t *p;

	if (g == NULL || shapes == NULL || addrs == NULL)
		return error_set(cause, "device_plan_compile: no graph, shapes or addresses");
	if (mode == DEVICE_WS_SHARED && ws == NULL && ws_bytes > 0)
		return error_set(cause, "device_plan_compile_shared: %zu bytes of workspace at no address", ws_bytes);
	if (opts != NULL && (opts->precision < 0 || opts->precision >= GRAPH_PRECISION_COUNT))
		return error_set(cause, "device_plan_compile: unknown precision %d", opts->precision);
	if (device_plan_check_nodes(dev, g, cause) != 0 ||
	    device_plan_check_shapes(g, shapes, addrs, cause) != 0)
		return -1;
	p = xcalloc(1, sizeof *p);
	if (p == NULL)
		return error_set(cause, "out of memory");
	p->dev = dev;
	p->g = g;
	p->precision = opts != NULL ? opts->precision : GRAPH_PRECISION_FP32;
	p->background = opts != NULL && opts->background;
	p->batch_invariant = opts != NULL && opts->batch_invariant;
	p->ws_mode = mode;
	p->ws = ws;
	p->ws_bytes = ws_bytes;
	if (dev->ops->plan_compile(p, shapes, addrs, cause) != 0) {
		free(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* Compile g for shapes and addrs into a plan (scratch of its own). */
int
device_plan_compile(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, device_plan_t **out,
    char **cause)
{
	return device_plan_compile_mode(dev, g, opts, shapes, addrs, DEVICE_WS_OWN, NULL, 0, out, cause);
}

/* Compile g with its scratch in [ws, ws + ws_bytes). */
int
device_plan_compile_shared(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, void *ws,
    size_t ws_bytes, device_plan_t **out, char **cause)
{
	return device_plan_compile_mode(dev, g, opts, shapes, addrs, DEVICE_WS_SHARED, ws, ws_bytes, out, cause);
}

/* Wait for the work a background compile left: 0 ready, 1 compile again without background, -1 error. */
int
device_plan_settle(device_plan_t *p, char **cause)
{
	if (p == NULL || p->dev->ops->plan_settle == NULL)
		return 0;
	return p->dev->ops->plan_settle(p, cause);
}

/* The shared workspace a plan for g at shapes would take (compiled to measure, then freed). */
int
device_plan_measure(device_t *dev, const graph_t *g, const struct device_plan_options *opts,
    const struct graph_shape *shapes, void *const *addrs, size_t *need,
    char **cause)
{
	device_plan_t *p;

	*need = 0;
	if (device_plan_compile_mode(dev, g, opts, shapes, addrs, DEVICE_WS_PROBE, NULL, 0, &p, cause) != 0)
		return -1;
	*need = p->ws_need;
	device_plan_free(p);
	return 0;
}

/* Whether p may run on s: a compute stream of its device, and a plan compiled to run. */
static int
plan_stream_check(const device_plan_t *p, const device_stream_t *s, char **cause)
{
	if (s->kind != DEVICE_STREAM_COMPUTE)
		return error_set(cause, "plan: stream was not created for compute");
	if (s->dev != p->dev)
		return error_set(cause, "plan: stream belongs to another device");
	if (p->ws_mode == DEVICE_WS_PROBE)
		return error_set(cause, "plan: compiled only to measure its workspace");
	return 0;
}

/* Queue the plan on compute stream s. */
int
device_plan_run(device_plan_t *p, device_stream_t *s, char **cause)
{
	if (plan_stream_check(p, s, cause) != 0)
		return -1;
	if (FAULT(FAULT_LAUNCH))
		return error_set(cause, "launching the plan's kernels failed (injected)");
	return p->dev->ops->plan_run(p, s, cause);
}

/* Run the plan once, timing each step (device.h: a diagnostic). */
int
device_plan_profile(device_plan_t *p, device_stream_t *s, struct device_step_time **out, size_t *n,
    char **cause)
{
	*out = NULL;
	*n = 0;
	if (plan_stream_check(p, s, cause) != 0)
		return -1;
	if (p->dev->ops->plan_profile == NULL)
		return error_set(cause, "the %s backend cannot profile a plan", p->dev->ops->name);
	return p->dev->ops->plan_profile(p, s, out, n, cause);
}

/* Free a plan (NULL is ignored). */
void
device_plan_free(device_plan_t *p)
{
	if (p == NULL)
		return;
	p->dev->ops->plan_free(p);
	free(p);
}

/* What the plan's compile allocated (set by the backend's plan_compile). */
void
device_plan_memory(const device_plan_t *p, size_t *own_bytes, size_t *weight_bytes)
{
	*own_bytes = p != NULL ? p->own_bytes : 0;
	*weight_bytes = p != NULL ? p->weight_bytes : 0;
}

/* The stream's own device memory (set by the backend's stream_create). */
size_t
device_stream_bytes(const device_stream_t *s)
{
	return s != NULL ? s->bytes : 0;
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
	g = xcalloc(1, sizeof *g);
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
	if (FAULT(FAULT_LAUNCH))
		return error_set(cause, "launching a graph failed (injected)");
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
