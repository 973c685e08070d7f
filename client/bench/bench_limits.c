/*
 * bench_limits.c: what the device itself can do, measured in the bench's
 * own process through the device layer — the copy bandwidths (DMA, and the
 * batched-copy kernel reading a mapped region), the smallest round trips
 * (DMA copies, or the batch kernels) that inferd's results are divided by,
 * and the cross-process futex round trip a wake-up costs (bench_futex.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "device.h"
#include "error.h"

/* Copies timed per figure: at least this many, more for small sizes. */
#define LIMITS_COPY_RUNS_MIN 20
#define LIMITS_COPY_RUNS_MAX 1000
#define LIMITS_COPY_WARMUP 3
/* Round trips timed for the floor, after some untimed ones. */
#define LIMITS_FLOOR_RUNS 2000
#define LIMITS_FLOOR_WARMUP 100
#define LIMITS_FLOOR_BYTES 4096

/* Everything the measurements use. */
struct limits_ctx {
	device_t *dev;
	device_stream_t *s;
	device_plan_t *relu;		/* the floor's tiny op: ReLU over the buffer, in place */
	device_event_t *e0, *e1;
	device_copy_table_t *table, *table_out;	/* one entry each: the batched-copy kernel's copies in and out */
	void *dbuf, *pinned, *pageable, *mapped, *mapped_dev;
	size_t n, mapped_n;
	int registered;
};

enum limits_dir { LIMITS_H2D, LIMITS_D2H };

/* Sort helper for the median. */
static int
limits_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One copy of ctx->n bytes, timed with events; *us its duration. */
static int
limits_copy_once(struct limits_ctx *c, enum limits_dir dir, void *host, double *us,
    char **cause)
{
	if (device_event_record(c->e0, c->s, cause) != 0)
		return -1;
	if (dir == LIMITS_H2D ? device_copy_h2d(c->s, c->dbuf, host, c->n, cause) :
	    device_copy_d2h(c->s, host, c->dbuf, c->n, cause))
		return -1;
	if (device_event_record(c->e1, c->s, cause) != 0 ||
	    device_event_sync(c->e1, cause) != 0)
		return -1;
	return device_event_elapsed_us(c->e0, c->e1, us, cause);
}

/* One batched-copy kernel moving n bytes from the mapped memfd into device memory, timed; *us its duration. */
static int
limits_mapped_once(struct limits_ctx *c, double *us, char **cause)
{
	struct device_copy_entry *e = device_copy_entries(c->table);

	e->dst = c->dbuf;
	e->src = c->mapped_dev;
	e->bytes = c->n;
	if (device_event_record(c->e0, c->s, cause) != 0 || device_copy_batch(c->s, c->table, 1, cause) != 0 ||
	    device_event_record(c->e1, c->s, cause) != 0 || device_event_sync(c->e1, cause) != 0)
		return -1;
	return device_event_elapsed_us(c->e0, c->e1, us, cause);
}

/* The median bandwidth in GB/s (10^9 bytes) of copies from or to host (host NULL: the mapped kernel). */
static int
limits_copy(struct limits_ctx *c, enum limits_dir dir, void *host, int *runs,
    double *gbps, char **cause)
{
	double *t, us;
	int i, n;

	n = (int)(((size_t)256 << 20) / c->n);
	n = n < LIMITS_COPY_RUNS_MIN ? LIMITS_COPY_RUNS_MIN :
	    n > LIMITS_COPY_RUNS_MAX ? LIMITS_COPY_RUNS_MAX : n;
	if ((t = calloc((size_t)n, sizeof *t)) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < LIMITS_COPY_WARMUP + n; i++) {
		if ((host != NULL ? limits_copy_once(c, dir, host, &us, cause) :
		    limits_mapped_once(c, &us, cause)) != 0) {
			free(t);
			return -1;
		}
		if (i >= LIMITS_COPY_WARMUP)
			t[i - LIMITS_COPY_WARMUP] = us;
	}
	qsort(t, (size_t)n, sizeof *t, limits_cmp);
	us = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	free(t);
	*runs = n;
	*gbps = us > 0 ? (double)c->n / (us * 1e3) : 0;
	return 0;
}

/*
 * The floor: 4 KiB in, a tiny op on 1024 floats, 4 KiB out, then wait for
 * the stream — the least any small request can cost on this device.
 */
static int
limits_floor(struct limits_ctx *c, struct bench_limits *l, char **cause)
{
	struct bench_hist *h;
	uint64_t t0;
	char *in = c->pinned, *out = (char *)c->pinned + LIMITS_FLOOR_BYTES;
	int i;

	if ((h = malloc(sizeof *h)) == NULL)
		return error_set(cause, "out of memory");
	bench_hist_init(h);
	for (i = 0; i < LIMITS_FLOOR_WARMUP + LIMITS_FLOOR_RUNS; i++) {
		t0 = bench_now_ns();
		if (device_copy_h2d(c->s, c->dbuf, in, LIMITS_FLOOR_BYTES, cause) != 0 ||
		    device_plan_run(c->relu, c->s, cause) != 0 ||
		    device_copy_d2h(c->s, out, c->dbuf, LIMITS_FLOOR_BYTES, cause) != 0 ||
		    device_stream_sync(c->s, cause) != 0) {
			free(h);
			return -1;
		}
		if (i >= LIMITS_FLOOR_WARMUP)
			bench_hist_add(h, bench_now_ns() - t0);
	}
	l->floor_p50_us = bench_hist_quantile(h, 0.50) / 1e3;
	l->floor_p99_us = bench_hist_quantile(h, 0.99) / 1e3;
	l->floor_runs = LIMITS_FLOOR_RUNS;
	free(h);
	return 0;
}

/*
 * The floor through the batch kernels, as copy_mode=mapped copies a small
 * request: 4 KiB gathered from the registered memfd by one kernel, the op,
 * 4 KiB scattered back by another, wait for the stream.
 */
static int
limits_mapped_floor(struct limits_ctx *c, struct bench_limits *l, char **cause)
{
	struct device_copy_entry *in = device_copy_entries(c->table), *out = device_copy_entries(c->table_out);
	struct bench_hist *h;
	uint64_t t0;
	int i;

	if ((h = malloc(sizeof *h)) == NULL)
		return error_set(cause, "out of memory");
	bench_hist_init(h);
	for (i = 0; i < LIMITS_FLOOR_WARMUP + LIMITS_FLOOR_RUNS; i++) {
		t0 = bench_now_ns();
		/* Filled each time, as the batcher fills its tables per batch (after the last use completed). */
		*in = (struct device_copy_entry){ c->dbuf, c->mapped_dev, LIMITS_FLOOR_BYTES };
		*out = (struct device_copy_entry){ (char *)c->mapped_dev + LIMITS_FLOOR_BYTES, c->dbuf, LIMITS_FLOOR_BYTES };
		if (device_copy_batch(c->s, c->table, 1, cause) != 0 || device_plan_run(c->relu, c->s, cause) != 0 ||
		    device_copy_batch(c->s, c->table_out, 1, cause) != 0 || device_stream_sync(c->s, cause) != 0) {
			free(h);
			return -1;
		}
		if (i >= LIMITS_FLOOR_WARMUP)
			bench_hist_add(h, bench_now_ns() - t0);
	}
	l->mapped_floor_p50_us = bench_hist_quantile(h, 0.50) / 1e3;
	l->mapped_floor_p99_us = bench_hist_quantile(h, 0.99) / 1e3;
	free(h);
	return 0;
}

/* A memfd of n bytes mapped shared, as a client's region is; NULL with *cause. */
static void *
limits_memfd_map(size_t n, char **cause)
{
	void *p;
	int fd;

	if ((fd = memfd_create("inferd-bench-limits", MFD_CLOEXEC)) == -1) {
		error_set(cause, "memfd_create: %s", strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, (off_t)n) != 0) {
		error_set(cause, "ftruncate memfd to %zu bytes: %s", n, strerror(errno));
		close(fd);
		return NULL;
	}
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		error_set(cause, "mmap memfd of %zu bytes: %s", n, strerror(errno));
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The floor's op as a one-node graph: ReLU of [LIMITS_FLOOR_BYTES / 4] floats, in place. */
static int
limits_relu_plan(struct limits_ctx *c, char **cause)
{
	static int node_in = 0, node_out = 1, graph_in = 0, graph_out = 1;
	static struct graph_tensor t[2] = {
		{ .name = "x", .dtype = GRAPH_DT_F32, .flags = GRAPH_TENSOR_INPUT, .ndims = 1,
		  .dims = { LIMITS_FLOOR_BYTES / sizeof(float) } },
		{ .name = "y", .dtype = GRAPH_DT_F32, .flags = GRAPH_TENSOR_OUTPUT, .ndims = 1,
		  .dims = { LIMITS_FLOOR_BYTES / sizeof(float) } },
	};
	static struct graph_node n = { .name = "relu", .op = GRAPH_OP_UNARY, .ninputs = 1,
		.noutputs = 1, .inputs = &node_in, .outputs = &node_out,
		.attr.unary.fn = GRAPH_UNARY_RELU };
	static const graph_t g = { .ntensors = 2, .nnodes = 1, .tensors = t, .nodes = &n,
		.ninputs = 1, .noutputs = 1, .inputs = &graph_in, .outputs = &graph_out };
	struct graph_shape shapes[2] = {
		{ .ndims = 1, .dims = { LIMITS_FLOOR_BYTES / sizeof(float) } },
		{ .ndims = 1, .dims = { LIMITS_FLOOR_BYTES / sizeof(float) } },
	};
	void *addrs[2] = { c->dbuf, c->dbuf };

	return device_plan_compile(c->dev, &g, NULL, shapes, addrs, &c->relu, cause);
}

/* Allocate the device buffer, the pinned, pageable and mapped host buffers. */
static int
limits_setup(struct limits_ctx *c, const char *spec, size_t n, char **cause)
{
	size_t big = n > 2 * LIMITS_FLOOR_BYTES ? n : 2 * LIMITS_FLOOR_BYTES;

	c->n = n;
	if (device_open(spec, &c->dev, cause) != 0)
		return error_prefix(cause, "device %s", spec);
	if (device_stream_create(c->dev, DEVICE_STREAM_COMPUTE, &c->s, cause) != 0 ||
	    device_event_create(c->dev, &c->e0, cause) != 0 ||
	    device_event_create(c->dev, &c->e1, cause) != 0 ||
	    device_alloc(c->dev, big, &c->dbuf, cause) != 0 ||
	    device_host_alloc(c->dev, big, &c->pinned, cause) != 0 ||
	    limits_relu_plan(c, cause) != 0)
		return -1;
	if ((c->pageable = malloc(n)) == NULL)
		return error_set(cause, "out of memory (%zu bytes)", n);
	c->mapped_n = big;
	if ((c->mapped = limits_memfd_map(big, cause)) == NULL)
		return -1;
	/* Touch every page first: first-touch faults are not what is measured. */
	memset(c->pinned, 1, big);
	memset(c->pageable, 1, n);
	memset(c->mapped, 1, big);
	if (device_host_register(c->dev, c->mapped, big, cause) != 0)
		return -1;
	c->registered = 1;
	return device_host_mapped(c->dev, c->mapped, &c->mapped_dev, cause) != 0 ||
	    device_copy_table_create(c->dev, 1, &c->table, cause) != 0 ||
	    device_copy_table_create(c->dev, 1, &c->table_out, cause) != 0 ? -1 : 0;
}

/* Free whatever limits_setup made. */
static void
limits_teardown(struct limits_ctx *c)
{
	char *ignored = NULL;

	if (c->registered && device_host_unregister(c->dev, c->mapped, &ignored) != 0)
		free(ignored);
	device_copy_table_destroy(c->table);
	device_copy_table_destroy(c->table_out);
	if (c->mapped != NULL)
		munmap(c->mapped, c->mapped_n);
	free(c->pageable);
	if (c->pinned != NULL)
		device_host_free(c->dev, c->pinned);
	device_plan_free(c->relu);
	if (c->dbuf != NULL)
		device_free(c->dev, c->dbuf);
	if (c->e1 != NULL)
		device_event_destroy(c->e1);
	if (c->e0 != NULL)
		device_event_destroy(c->e0);
	if (c->s != NULL)
		device_stream_destroy(c->s);
	if (c->dev != NULL)
		device_close(c->dev);
}

/* Measure the limits on device spec with copies of copy_bytes; -1 with *cause. */
int
bench_limits_measure(const char *spec, size_t copy_bytes, struct bench_limits *l,
    char **cause)
{
	struct limits_ctx c = { 0 };
	int r = -1, runs;

	memset(l, 0, sizeof *l);
	l->copy_bytes = copy_bytes;
	if (limits_setup(&c, spec, copy_bytes, cause) != 0)
		goto out;
	snprintf(l->device, sizeof l->device, "%s", device_name(c.dev));
	if (limits_copy(&c, LIMITS_H2D, c.pinned, &l->copy_runs, &l->pinned_h2d_gbps, cause) != 0 ||
	    limits_copy(&c, LIMITS_D2H, c.pinned, &runs, &l->pinned_d2h_gbps, cause) != 0 ||
	    limits_copy(&c, LIMITS_H2D, c.pageable, &runs, &l->pageable_h2d_gbps, cause) != 0 ||
	    limits_copy(&c, LIMITS_H2D, c.mapped, &runs, &l->registered_h2d_gbps, cause) != 0 ||
	    limits_copy(&c, LIMITS_H2D, NULL, &runs, &l->mapped_h2d_gbps, cause) != 0 ||
	    limits_floor(&c, l, cause) != 0 || limits_mapped_floor(&c, l, cause) != 0)
		goto out;
	{
		struct bench_futex f;

		if (bench_futex_rtt(BENCH_FUTEX_RUNS, &f, cause) != 0)
			goto out;
		l->futex_p50_us = f.p50_us;
		l->futex_p99_us = f.p99_us;
		l->futex_runs = f.runs;
	}
	r = 0;
out:
	limits_teardown(&c);
	return r;
}
