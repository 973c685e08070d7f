/*
 * fuzz_ipc_ring.c: libFuzzer target for the shared-memory rings as a
 * hostile client controls them.  The input's first two bytes pick the
 * ring sizes (as a hello would), the rest is the region's contents: the
 * header with its ring indices, the submission descriptors and anything
 * after.  The daemon's own ipc_ring_drain takes the submissions, as with
 * the server shutting down, so each one is validated (offsets, lengths,
 * rows, model, alignment) and completed at once without inference: every
 * descriptor is either refused with INVALID or completed with SHUTDOWN,
 * the completion ring never overflows, and a corrupt index is an error,
 * never a crash.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc_impl.h"
#include "kserve_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The region every input is copied into: room for the largest rings and a data area. */
#define FUZZ_REGION (64u << 10)

static model_t model;
static repository_t *repo;

/* A registry (no device, no batcher) serving the fixture model, which it never frees. */
static void
fuzz_registry(void)
{
	struct repository_options o = { .dir = "/nonexistent", .inflight = 2 };
	char *cause = NULL;

	if (repository_create(&o, &repo, &cause) != 0 || repository_adopt(repo, &model, NULL, 0, &cause) != 0)
		abort();
}

/* Drain c's ring a few times (a client may add more between doorbells); check what came back. */
static void
fuzz_drain(ipc_server_t *s, struct ipc_client *c)
{
	char *cause = NULL;
	uint32_t before;
	int i;

	for (i = 0; i < 3; i++) {
		before = c->cq_tail;
		if (ipc_ring_drain(s, c, &cause) != 0) {
			if (cause == NULL || cause[0] == '\0')
				abort();
			free(cause);
			return;
		}
		/* Everything taken completed at once, and the ring never holds more than it can. */
		if (c->inflight != 0 || c->cq_tail - before > c->cq_entries)
			abort();
		/* The client reads what came back. */
		__atomic_store_n(&c->hdr->cq_head, c->cq_tail, __ATOMIC_RELEASE);
	}
}

/* Run one region image through the daemon's ring code. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ipc_server_t s;
	struct ipc_client c;
	char *cause = NULL;
	uint8_t *region;

	if (size < 2 || model.max_batch_size == 0) {
		if (model.max_batch_size == 0) {
			kserve_fixture_model(&model);
			fuzz_registry();
		}
		if (size < 2)
			return 0;
	}
	memset(&c, 0, sizeof c);
	c.sq_entries = 1u << (data[0] % 8);
	c.cq_entries = c.sq_entries << (data[1] % 3);
	c.region_bytes = FUZZ_REGION;
	if (inferd_wire_layout(c.region_bytes, c.sq_entries, c.cq_entries, &c.layout) != 0)
		return 0;
	if ((region = aligned_alloc(4096, FUZZ_REGION)) == NULL)
		return 0;
	memset(region, 0, FUZZ_REGION);
	memcpy(region, data + 2, size - 2 < FUZZ_REGION ? size - 2 : FUZZ_REGION);
	c.base = region;
	c.hdr = (struct inferd_wire_header *)region;
	c.sq = (struct inferd_wire_sqe *)(region + c.layout.sq_offset);
	c.cq = (struct inferd_wire_cqe *)(region + c.layout.cq_offset);
	c.doorbell_fd = c.control_fd = c.submit_fd = c.region_fd = -1;
	snprintf(c.label, sizeof c.label, "fuzz");
	c.server = &s;
	s.ctx.repo = repo;
	s.shutting_down = 1;	/* completes every valid submission at once, with SHUTDOWN */
	if (pthread_mutex_init(&c.lock, NULL) != 0 || pthread_cond_init(&c.idle, NULL) != 0 ||
	    ipc_ring_init(&c, &cause) != 0)
		abort();
	/* ipc_ring_init reset the daemon's indices; the client's come from the input. */
	fuzz_drain(&s, &c);
	ipc_ring_free(&c);
	pthread_cond_destroy(&c.idle);
	pthread_mutex_destroy(&c.lock);
	free(region);
	return 0;
}
