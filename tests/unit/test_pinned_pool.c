/* test_pinned_pool.c: the HTTP staging slots: sizing, exhaustion, no allocation per get, thread safety. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pinned_pool.h"
#include "test_util.h"

#define THREADS 4
#define ROUNDS 20000

static device_t *dev;
static pinned_pool_t *shared;
static int clashes;

/* A model described by hand with the given row widths and batch. */
static void
make_model(model_t *m, const char *name, size_t in, size_t out, int batch)
{
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	m->max_batch_size = batch;
	m->ninputs = m->noutputs = 1;
	m->inputs[0].dtype = m->outputs[0].dtype = GRAPH_DT_F32;
	m->inputs[0].ndims = m->outputs[0].ndims = 1;
	m->inputs[0].dims[0] = m->inputs[0].max_dims[0] = (int64_t)in;
	m->outputs[0].dims[0] = m->outputs[0].max_dims[0] = (int64_t)out;
	memset(m->outputs[0].var, -1, sizeof m->outputs[0].var);
}

/* Slot size: the largest model's input (aligned) plus output, rounded to pages. */
static void
test_sizing(void)
{
	model_t a, b;
	const model_t *models[2] = { &a, &b };

	make_model(&a, "fashion", 784, 10, 256);
	make_model(&b, "odd", 3, 5, 7);
	CHECK(pinned_pool_output_offset(&a) == 784 * 4 * 256, "fashion offset %zu",
	    pinned_pool_output_offset(&a));
	CHECK(pinned_pool_output_offset(&b) == 256, "odd offset %zu", pinned_pool_output_offset(&b));
	CHECK(pinned_pool_slot_bytes_for(models, 2) == ((784 * 4 * 256 + 10 * 4 * 256 + 4095) & ~(size_t)4095),
	    "slot bytes %zu", pinned_pool_slot_bytes_for(models, 2));
	CHECK(pinned_pool_slot_bytes_for(NULL, 0) == PINNED_POOL_ALIGN, "empty repository %zu",
	    pinned_pool_slot_bytes_for(NULL, 0));
}

/* Take every slot, see the next get fail, give back, take again; one allocation in all. */
static void
test_exhaustion(void)
{
	pinned_pool_t *p;
	void *s[3];
	char *cause = NULL;
	uint64_t before = device_allocation_count(dev);
	int i, j, round;

	CHECK(pinned_pool_create(dev, 3 * 8192 + 100, 8192, &p, &cause) == 0, "create: %s", cause);
	CHECK(device_allocation_count(dev) == before + 1, "allocations at create");
	CHECK(pinned_pool_slots(p) == 3 && pinned_pool_slot_size(p) == 8192, "3 slots of 8192");
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 3; i++) {
			s[i] = pinned_pool_get(p);
			CHECK(s[i] != NULL, "slot %d", i);
			memset(s[i], i, 8192);
			for (j = 0; j < i; j++)
				CHECK(s[i] != s[j], "slot %d handed out twice", i);
		}
		CHECK(pinned_pool_get(p) == NULL, "a fourth slot");
		CHECK(pinned_pool_free_slots(p) == 0, "free slots when exhausted");
		for (i = 0; i < 3; i++)
			pinned_pool_put(p, s[i]);
		CHECK(pinned_pool_free_slots(p) == 3, "free slots after put");
	}
	CHECK(device_allocation_count(dev) == before + 1, "allocations after gets and puts");
	pinned_pool_free(p);

	/* A pool smaller than one slot still has one. */
	CHECK(pinned_pool_create(dev, 100, 4096, &p, &cause) == 0 && pinned_pool_slots(p) == 1,
	    "one slot at least: %s", cause);
	pinned_pool_free(p);
	CHECK(pinned_pool_create(dev, 100, 0, &p, &cause) == -1 && strstr(cause, "zero-byte"),
	    "zero-byte slots: %s", cause);
	free(cause);
}

/* Hammer get/put from threads; a slot written by two owners at once is a clash. */
static void *
hammer(void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	uintptr_t *slot;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		if ((slot = pinned_pool_get(shared)) == NULL)
			continue;
		slot[0] = me;
		slot[1] = (uintptr_t)i;
		if (slot[0] != me || slot[1] != (uintptr_t)i)
			__atomic_add_fetch(&clashes, 1, __ATOMIC_RELAXED);
		pinned_pool_put(shared, slot);
	}
	return NULL;
}

/* Concurrent gets and puts never hand one slot to two threads. */
static void
test_threads(void)
{
	pthread_t t[THREADS];
	char *cause = NULL;
	uintptr_t i;

	CHECK(pinned_pool_create(dev, 2 * 4096, 4096, &shared, &cause) == 0, "create: %s", cause);
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, hammer, (void *)(i + 1)) == 0, "thread");
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(clashes == 0, "%d clashes", clashes);
	CHECK(pinned_pool_free_slots(shared) == 2, "all slots back");
	pinned_pool_free(shared);
	free(cause);
}

int
main(void)
{
	dev = test_open_device();
	test_sizing();
	test_exhaustion();
	test_threads();
	device_close(dev);
	return test_finish("test_pinned_pool");
}
