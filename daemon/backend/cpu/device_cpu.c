/* device_cpu.c: the CPU backend, always built: memory, trivially ordered streams and events, plans. */
#include "config.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef HAVE_DNNL
#include <dnnl.h>
#endif

#include "alloc.h"
#include "cpu_kernels.h"
#ifdef HAVE_DNNL
#include "cpu_dnnl.h"
#endif
#include "device_cpu_kernels.h"
#include "device_impl.h"
#include "error.h"

/* Cache-line alignment for buffers so vector loads never straddle lines. */
#define DEVICE_CPU_ALIGN 64

/* Memory from the heap, aligned. */
static int
cpu_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	size_t rounded = (size + DEVICE_CPU_ALIGN - 1) / DEVICE_CPU_ALIGN * DEVICE_CPU_ALIGN;

	if (rounded < size)
		return error_set(cause, "allocation of %zu bytes overflows", size);
	*ptr = aligned_alloc(DEVICE_CPU_ALIGN, rounded);
	if (*ptr == NULL)
		return error_set(cause, "out of memory allocating %zu bytes", size);
	return 0;
}

/* Free heap memory. */
static void
cpu_free(device_t *dev, void *ptr)
{
	free(ptr);
}

/* Host memory is already where the CPU computes: nothing to pin. */
static int
cpu_host_register(device_t *dev, void *ptr, size_t size, char **cause)
{
	return 0;
}

/* Nothing was pinned. */
static int
cpu_host_unregister(device_t *dev, void *ptr, char **cause)
{
	return 0;
}

/* Streams need no state: every call completes before it returns. */
static int
cpu_stream_create(device_stream_t *s, char **cause)
{
	return 0;
}

/* Nothing to release. */
static void
cpu_stream_destroy(device_stream_t *s)
{
}

/* All work is already done. */
static int
cpu_stream_sync(device_stream_t *s, char **cause)
{
	return 0;
}

/* An event is the time it was recorded. */
struct cpu_event {
	double time_us;
};

/* The device's state: its thread count, oneDNN's engine and the weights it reordered for the device's plans. */
struct cpu_device {
	int threads;			/* cpu_threads: every library's loops run on this many */
#ifdef HAVE_DNNL
	struct cpu_dnnl *dnnl;
#endif
};

/* A plan: the graph's nodes run in order, through oneDNN where it took them, else through cpu_node_run. */
struct cpu_plan {
	struct graph_shape *shapes;	/* per tensor */
	void **ptrs;			/* per tensor */
	void *workspace;		/* the largest any node asked for */
	int shared;			/* workspace is the batch context's (device_plan_compile_shared) */
#ifdef HAVE_DNNL
	struct cpu_dnnl_plan *dnnl;	/* NULL while only measuring */
#endif
};

/* Events only carry the time they were recorded. */
static int
cpu_event_create(device_event_t *e, char **cause)
{
	e->handle = xcalloc(1, sizeof(struct cpu_event));
	if (e->handle == NULL)
		return error_set(cause, "out of memory");
	return 0;
}

/* Release the timestamp. */
static void
cpu_event_destroy(device_event_t *e)
{
	free(e->handle);
	e->handle = NULL;
}

/* Record the current monotonic time. */
static int
cpu_event_record(device_event_t *e, device_stream_t *s, char **cause)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return error_set(cause, "clock_gettime failed");
	((struct cpu_event *)e->handle)->time_us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
	return 0;
}

/* Work before the event has finished already. */
static int
cpu_stream_wait_event(device_stream_t *s, device_event_t *e, char **cause)
{
	return 0;
}

/* Always complete. */
static int
cpu_event_query(device_event_t *e, char **cause)
{
	return 1;
}

/* Always complete. */
static int
cpu_event_sync(device_event_t *e, char **cause)
{
	return 0;
}

/* Difference of the two timestamps. */
static int
cpu_event_elapsed_us(device_event_t *a, device_event_t *b, double *us,
    char **cause)
{
	*us = ((struct cpu_event *)b->handle)->time_us - ((struct cpu_event *)a->handle)->time_us;
	return 0;
}

/* A copy is a memcpy. */
static int
cpu_copy(device_stream_t *s, void *dst, const void *src, size_t n, char **cause)
{
	memcpy(dst, src, n);
	return 0;
}

/* Entries in plain heap memory: the CPU reads them where they are. */
static int
cpu_copy_table_create(device_copy_table_t *t, char **cause)
{
	t->entries = calloc(t->capacity, sizeof *t->entries);
	if (t->entries == NULL)
		return error_set(cause, "out of memory allocating %zu copy entries", t->capacity);
	return 0;
}

/* Free the entries. */
static void
cpu_copy_table_destroy(device_copy_table_t *t)
{
	free(t->entries);
	t->entries = NULL;
}

/* Every entry is a memcpy, done now. */
static int
cpu_copy_batch(device_stream_t *s, device_copy_table_t *t, size_t n, char **cause)
{
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(t->entries[i].dst, t->entries[i].src, t->entries[i].bytes);
	return 0;
}

/* Host memory is the CPU's own: the address is the same. */
static int
cpu_host_mapped(device_t *dev, void *host, void **dev_ptr, char **cause)
{
	*dev_ptr = host;
	return 0;
}

/* Whether the CPU kernels can run node n. */
static int
cpu_supports_node(const device_t *dev, const graph_t *g,
    const struct graph_node *n, char **why)
{
	return cpu_node_supported(g, n, why);
}

/* Free a plan's copies and workspace. */
static void
cpu_plan_free(device_plan_t *p)
{
	struct cpu_plan *c = p->handle;

	if (c == NULL)
		return;
#ifdef HAVE_DNNL
	cpu_dnnl_plan_free(c->dnnl);
#endif
	free(c->shapes);
	free(c->ptrs);
	if (!c->shared)
		free(c->workspace);
	free(c);
	p->handle = NULL;
}

/* Let every node check its shapes and size the one workspace they share. */
static int
cpu_plan_prepare(const graph_t *g, const struct graph_shape *shapes,
    size_t *workspace, char **cause)
{
	size_t i, need;

	*workspace = 0;
	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		if (cpu_node_prepare(g, n, shapes, &need, cause) != 0)
			return error_prefix(cause, "node '%s' (%s)", n->name ? n->name : "?", graph_op_name(n->op));
		if (need > *workspace)
			*workspace = need;
	}
	return 0;
}

/* The plan's workspace of ws bytes: its own, the context's shared one (when it fits), or none when measuring. */
static int
cpu_plan_workspace(device_plan_t *p, struct cpu_plan *c, size_t ws, char **cause)
{
	p->ws_need = ws;
	switch (p->ws_mode) {
	case DEVICE_WS_PROBE:
		return 0;
	case DEVICE_WS_SHARED:
		if (ws > p->ws_bytes)
			return error_set(cause, "needs %zu bytes of workspace; the batch context's workspace has %zu", ws,
			    p->ws_bytes);
		c->workspace = p->ws;
		c->shared = 1;
		return 0;
	default:
		if (ws > 0 && cpu_alloc(p->dev, ws, &c->workspace, cause) != 0)
			return error_prefix(cause, "the plan's workspace");
		return 0;
	}
}

/* Copy the shapes and addresses, set up the workspace. */
static int
cpu_plan_compile(device_plan_t *p, const struct graph_shape *shapes,
    void *const *addrs, char **cause)
{
	const graph_t *g = p->g;
	struct cpu_plan *c;
	size_t ws;

	if (cpu_plan_prepare(g, shapes, &ws, cause) != 0)
		return -1;
	if ((c = xcalloc(1, sizeof *c)) == NULL)
		return error_set(cause, "out of memory");
	p->handle = c;
	c->shapes = xmalloc((g->ntensors + 1) * sizeof *c->shapes);
	c->ptrs = xmalloc((g->ntensors + 1) * sizeof *c->ptrs);
	if (c->shapes == NULL || c->ptrs == NULL) {
		cpu_plan_free(p);
		return error_set(cause, "out of memory compiling a plan");
	}
	if (cpu_plan_workspace(p, c, ws, cause) != 0) {
		cpu_plan_free(p);
		return -1;
	}
	memcpy(c->shapes, shapes, g->ntensors * sizeof *c->shapes);
	memcpy(c->ptrs, addrs, g->ntensors * sizeof *c->ptrs);
#ifdef HAVE_DNNL
	if (p->ws_mode != DEVICE_WS_PROBE &&
	    cpu_dnnl_plan_create(((struct cpu_device *)p->dev->ctx)->dnnl, g, c->shapes, c->ptrs, &c->dnnl, cause) != 0) {
		cpu_plan_free(p);
		return -1;
	}
#endif
	return 0;
}

/* Run node i of plan c: through oneDNN when it took the node, else through the kernel library. */
static int
cpu_plan_node(const struct cpu_plan *c, const graph_t *g, size_t i, char **cause)
{
#ifdef HAVE_DNNL
	int rc = cpu_dnnl_plan_run_node(c->dnnl, i, cause);

	if (rc != 0)
		return rc < 0 ? -1 : 0;
#endif
	return cpu_node_run(g, &g->nodes[i], c->shapes, c->ptrs, c->workspace, cause);
}

/* Run every node in order; each completes before the next starts. */
static int
cpu_plan_run(device_plan_t *p, device_stream_t *s, char **cause)
{
	const struct cpu_plan *c = p->handle;
	const struct cpu_device *d = p->dev->ctx;
	const graph_t *g = p->g;
	size_t i;

#ifdef _OPENMP
	/* OpenMP's thread count is per calling thread: oneDNN (omp_get_max_threads) gets the device's here. */
	omp_set_num_threads(d->threads);
#else
	(void)d;
#endif
	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		if (cpu_plan_node(c, g, i, cause) != 0)
			return error_prefix(cause, "node '%s' (%s)", n->name ? n->name : "?", graph_op_name(n->op));
	}
	return 0;
}

/* Microseconds on the monotonic clock into *us. */
static int
cpu_now_us(double *us, char **cause)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return error_set(cause, "clock_gettime failed");
	*us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
	return 0;
}

/* Run every node in order like cpu_plan_run, timing each one on the clock. */
static int
cpu_plan_profile(device_plan_t *p, device_stream_t *s, struct device_step_time **out, size_t *n,
    char **cause)
{
	const struct cpu_plan *c = p->handle;
	const graph_t *g = p->g;
	struct device_step_time *t = xcalloc(g->nnodes ? g->nnodes : 1, sizeof *t);
	double t0 = 0, t1 = 0;
	size_t i;

	if (t == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *nd = &g->nodes[i];
		t[i].node = nd->name ? nd->name : "?";
		t[i].op = graph_op_name(nd->op);
		t[i].how = "cpu";
		if (cpu_now_us(&t0, cause) != 0 ||
		    cpu_plan_node(c, g, i, cause) != 0 || cpu_now_us(&t1, cause) != 0) {
			free(t);
			return error_prefix(cause, "node '%s' (%s)", nd->name ? nd->name : "?", graph_op_name(nd->op));
		}
		t[i].us = t1 - t0;
	}
	*out = t;
	*n = g->nnodes;
	return 0;
}

/*
 * Threads for the device's plans: the kernel library's OpenMP loops and its
 * sgemm pieces (cpu_kernels_set_threads), and oneDNN's primitives (the plan
 * sets OpenMP's count on the thread that runs it).
 */
static void
cpu_set_threads(device_t *dev, int n)
{
	((struct cpu_device *)dev->ctx)->threads = n;
	cpu_kernels_set_threads(n);
}

/* Release the device's state. */
static void
cpu_close(device_t *dev)
{
	struct cpu_device *d = dev->ctx;

	if (d == NULL)
		return;
#ifdef HAVE_DNNL
	cpu_dnnl_close(d->dnnl);
#endif
	free(d);
	dev->ctx = NULL;
}

static const struct device_ops cpu_ops = {
	.name = "cpu",
	.close = cpu_close,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.host_alloc = cpu_alloc,
	.host_free = cpu_free,
	.host_register = cpu_host_register,
	.host_unregister = cpu_host_unregister,
	.stream_create = cpu_stream_create,
	.stream_destroy = cpu_stream_destroy,
	.stream_sync = cpu_stream_sync,
	.event_create = cpu_event_create,
	.event_destroy = cpu_event_destroy,
	.event_record = cpu_event_record,
	.stream_wait_event = cpu_stream_wait_event,
	.event_query = cpu_event_query,
	.event_sync = cpu_event_sync,
	.event_elapsed_us = cpu_event_elapsed_us,
	.copy_h2d = cpu_copy,
	.copy_d2h = cpu_copy,
	.copy_table_create = cpu_copy_table_create,
	.copy_table_destroy = cpu_copy_table_destroy,
	.copy_batch = cpu_copy_batch,
	.host_mapped = cpu_host_mapped,
	.supports_node = cpu_supports_node,
	.plan_compile = cpu_plan_compile,
	.plan_run = cpu_plan_run,
	.plan_free = cpu_plan_free,
	.plan_profile = cpu_plan_profile,
	.set_threads = cpu_set_threads,
};

/*
 * The device's identity (device.h): the vector extensions the kernels pick
 * from, OpenBLAS's kernel family and oneDNN's version, each of which can
 * change a result's last bits.
 */
static void
cpu_identity(device_t *dev)
{
	const char *core = "";
	int n;

#ifdef HAVE_OPENBLAS_GET_CORENAME
	if (openblas_get_corename() != NULL)
		core = openblas_get_corename();
#endif
	__builtin_cpu_init();
	n = snprintf(dev->identity, sizeof dev->identity, "cpu%s%s%s OpenBLAS %s", __builtin_cpu_supports("avx2") ?
	    " avx2" : "", __builtin_cpu_supports("fma") ? " fma" : "", __builtin_cpu_supports("avx512f") ?
	    " avx512f" : "", core);
#ifdef HAVE_DNNL
	if (n > 0 && (size_t)n < sizeof dev->identity) {
		const dnnl_version_t *v = dnnl_version();

		snprintf(dev->identity + n, sizeof dev->identity - (size_t)n, " oneDNN %d.%d.%d", v->major, v->minor,
		    v->patch);
	}
#else
	(void)n;
#endif
}

/* Fill dev with the CPU backend. */
int
device_cpu_open(device_t *dev, char **cause)
{
	struct cpu_device *d = xcalloc(1, sizeof *d);

	if (d == NULL)
		return error_set(cause, "out of memory");
	d->threads = cpu_kernels_threads();
#ifdef HAVE_DNNL
	if (cpu_dnnl_open(&d->dnnl, cause) != 0) {
		free(d);
		return error_prefix(cause, "the CPU device");
	}
#endif
	dev->ops = &cpu_ops;
	dev->ctx = d;
	dev->is_gpu = 0;
	dev->integrated = 1;
#ifdef HAVE_DNNL
	snprintf(dev->name, sizeof dev->name, "cpu (OpenBLAS, oneDNN)");
#else
	snprintf(dev->name, sizeof dev->name, "cpu (OpenBLAS)");
#endif
	cpu_identity(dev);
	return 0;
}
