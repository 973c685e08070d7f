/* test_copy_batch.c: device_copy_batch (gather into device memory from a mapped host region, scatter back) against memcpy. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "test_util.h"

#define REGION_BYTES ((size_t)4 << 20)
#define DEVBUF_BYTES ((size_t)4 << 20)
/* More entries than a CUDA grid's second dimension holds (65535), so the kernel's stride over entries runs. */
#define MANY 70000
#define MANY_BYTES 16

static device_t *dev;

/* A setup step that must hold for the rest to mean anything: count the failure and stop the test. */
#define REQUIRE(cond, ...) do {						\
	if (!(cond)) {		/* evaluated once: cond allocates */	\
		CHECK(!#cond, __VA_ARGS__);				\
		exit(test_finish("test_copy_batch"));			\
	}								\
} while (0)

/* One copy of the test: offsets into the source and destination, and a length. */
struct span {
	size_t src, dst, bytes;
};

/* Every alignment class and size class: bytes, words, 16-byte vectors, one block, many blocks. */
static const struct span spans[] = {
	{ 0, 0, 16 }, { 3, 100, 1 }, { 16, 4096, 4096 }, { 4, 8200, 12 }, { 5, 9001, 4099 },
	{ 64, 20000, 100000 }, { 1024, 200000, 1048576 }, { 7, 1300000, 3 }, { 4096, 1300016, 3136 },
};
#define NSPANS (sizeof spans / sizeof spans[0])

/* Pseudo-random bytes (xorshift64*). */
static void
fill_bytes(unsigned char *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed ^= seed >> 12;
		seed ^= seed << 25;
		seed ^= seed >> 27;
		p[i] = (unsigned char)((seed * 2685821657736338717ULL) >> 56);
	}
}

/* Fill t with the first nspans spans (dst in dbase, src in sbase), then many small entries; returns the count. */
static size_t
fill_table(device_copy_table_t *t, char *dbase, const char *sbase, size_t many_dst, size_t many_src, size_t nspans,
    size_t many)
{
	struct device_copy_entry *e = device_copy_entries(t);
	size_t i, n = 0;

	for (i = 0; i < nspans; i++)
		e[n++] = (struct device_copy_entry){ dbase + spans[i].dst, sbase + spans[i].src, spans[i].bytes };
	for (i = 0; i < many; i++)
		e[n++] = (struct device_copy_entry){ dbase + many_dst + i * MANY_BYTES,
		    sbase + many_src + (MANY - 1 - i) * MANY_BYTES, MANY_BYTES };
	return n;
}

/* The same copies done with memcpy on host buffers: the reference. */
static void
reference(unsigned char *dst, const unsigned char *src, size_t many_dst, size_t many_src, size_t nspans, size_t many)
{
	size_t i;

	for (i = 0; i < nspans; i++)
		memcpy(dst + spans[i].dst, src + spans[i].src, spans[i].bytes);
	for (i = 0; i < many; i++)
		memcpy(dst + many_dst + i * MANY_BYTES, src + many_src + (MANY - 1 - i) * MANY_BYTES, MANY_BYTES);
}

/* Index of the first differing byte, or -1. */
static long
first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

/*
 * Gather from a registered host region (through its device address) into
 * device memory, read it back, compare with memcpy's; then scatter from the
 * device buffer into a second region and compare again.  Bytes no entry
 * covers must keep their old values.  nspans spans and many small entries:
 * each CUDA kernel in turn (up to 8 and up to 128 entries travel in the
 * launch; MANY more are read from mapped memory and outnumber a grid's
 * second dimension).
 */
static void
test_gather_scatter(size_t nspans, size_t many)
{
	unsigned char *in = aligned_alloc(4096, REGION_BYTES), *out = aligned_alloc(4096, REGION_BYTES);
	unsigned char *want = malloc(DEVBUF_BYTES), *want_out = malloc(REGION_BYTES), *back = NULL;
	size_t many_dst = 2400000, many_src = 2400000, n;
	void *min, *mout, *dbuf;
	device_copy_table_t *t;
	device_stream_t *s;
	char *cause = NULL;
	long d;

	REQUIRE(in != NULL && out != NULL && want != NULL && want_out != NULL, "out of memory");
	fill_bytes(in, REGION_BYTES, 99);
	fill_bytes(out, REGION_BYTES, 7);
	memset(want, 0x5a, DEVBUF_BYTES);
	REQUIRE(device_host_register(dev, in, REGION_BYTES, &cause) == 0 &&
	    device_host_register(dev, out, REGION_BYTES, &cause) == 0, "register: %s", cause);
	REQUIRE(device_host_mapped(dev, in, &min, &cause) == 0 && device_host_mapped(dev, out, &mout, &cause) == 0,
	    "mapped: %s", cause);
	REQUIRE(device_alloc(dev, DEVBUF_BYTES, &dbuf, &cause) == 0 &&
	    device_host_alloc(dev, DEVBUF_BYTES, (void **)&back, &cause) == 0, "alloc: %s", cause);
	REQUIRE(device_stream_create(dev, DEVICE_STREAM_COPY, &s, &cause) == 0, "stream: %s", cause);
	REQUIRE(device_copy_table_create(dev, NSPANS + MANY, &t, &cause) == 0, "table: %s", cause);
	/* The device buffer starts as 0x5a everywhere, so overruns show. */
	CHECK(device_copy_h2d(s, dbuf, want, DEVBUF_BYTES, &cause) == 0, "h2d: %s", cause);
	n = fill_table(t, dbuf, min, many_dst, many_src, nspans, many);
	CHECK(device_copy_batch(s, t, n, &cause) == 0, "gather: %s", cause);
	CHECK(device_copy_d2h(s, back, dbuf, DEVBUF_BYTES, &cause) == 0 && device_stream_sync(s, &cause) == 0,
	    "read back: %s", cause);
	reference(want, in, many_dst, many_src, nspans, many);
	d = first_diff(back, want, DEVBUF_BYTES);
	CHECK(d < 0, "gather: byte %ld is %u, memcpy's %u", d, d < 0 ? 0 : back[d], d < 0 ? 0 : want[d]);
	/* Scatter: the device buffer (now want) back into the second region. */
	memcpy(want_out, out, REGION_BYTES);
	n = fill_table(t, mout, dbuf, many_src, many_dst, nspans, many);
	CHECK(device_copy_batch(s, t, n, &cause) == 0 && device_stream_sync(s, &cause) == 0, "scatter: %s", cause);
	reference(want_out, want, many_src, many_dst, nspans, many);
	d = first_diff(out, want_out, REGION_BYTES);
	CHECK(d < 0, "scatter: byte %ld is %u, memcpy's %u", d, d < 0 ? 0 : out[d], d < 0 ? 0 : want_out[d]);
	printf("gather and scatter of %zu tensors (1 B to %s, every alignment) equal memcpy\n", n,
	    nspans > 6 ? "1 MiB" : "4 KiB");
	CHECK(device_copy_batch(s, t, NSPANS + MANY + 1, &cause) == -1 && cause != NULL && strstr(cause, "holds") != NULL,
	    "more entries than the table holds accepted: %s", cause ? cause : "no error");
	CHECK(device_copy_batch(s, t, 0, &cause) == 0, "an empty batch refused: %s", cause);
	device_copy_table_destroy(t);
	CHECK(device_copy_table_create(dev, 0, &t, &cause) == -1, "a table of no entries accepted");
	device_stream_destroy(s);
	device_free(dev, dbuf);
	device_host_free(dev, back);
	CHECK(device_host_unregister(dev, in, &cause) == 0 && device_host_unregister(dev, out, &cause) == 0,
	    "unregister: %s", cause);
	free(in);
	free(out);
	free(want);
	free(want_out);
	free(cause);
}

int
main(void)
{
	dev = test_open_device();
	test_gather_scatter(5, 0);
	test_gather_scatter(NSPANS, 100);
	test_gather_scatter(NSPANS, MANY);
	device_close(dev);
	return test_finish("test_copy_batch");
}
