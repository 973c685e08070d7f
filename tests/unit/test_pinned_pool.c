/* test_pinned_pool.c: the HTTP staging memory: sizing, first-fit with coalescing, waiting, deadlines, threads, one allocation. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pinned_pool.h"
#include "test_util.h"

#define PAGE PINNED_POOL_ALIGN
#define THREADS 4
#define ROUNDS 2000

static device_t *dev;
static pinned_pool_t *shared;
static int clashes;

/* A waiter the test can block on until the pool answers it. */
struct waiter {
	struct pinned_wait w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int answered;
	void *mem;
};

/* The pool's answer: keep it and wake the test. */
static void
waiter_done(struct pinned_wait *w, void *mem)
{
	struct waiter *x = (struct waiter *)w;

	pthread_mutex_lock(&x->lock);
	x->mem = mem;
	x->answered = 1;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/* Ready x to ask for bytes, answered by deadline_us. */
static void
waiter_init(struct waiter *x, size_t bytes, uint64_t deadline_us)
{
	memset(x, 0, sizeof *x);
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	x->w.bytes = bytes;
	x->w.deadline_us = deadline_us;
	x->w.done = waiter_done;
}

/* Wait for the pool's answer to x. */
static void *
waiter_answer(struct waiter *x)
{
	pthread_mutex_lock(&x->lock);
	while (!x->answered)
		pthread_cond_wait(&x->cond, &x->lock);
	pthread_mutex_unlock(&x->lock);
	return x->mem;
}

/* Take bytes from p, waiting for the pool's answer when queued; the memory or NULL. */
static void *
waiter_take(pinned_pool_t *p, struct waiter *x)
{
	void *mem = NULL;
	enum pinned_take t = pinned_pool_take(p, &x->w, &mem);

	if (t == PINNED_TAKEN)
		return mem;
	if (t == PINNED_REFUSED)
		return NULL;
	return waiter_answer(x);
}

/* Free x's lock and condition. */
static void
waiter_fini(struct waiter *x)
{
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
}

/* Take bytes now; NULL when they are not free (the wait's deadline has already passed). */
static void *
take_now(pinned_pool_t *p, size_t bytes)
{
	struct waiter x;
	void *mem;

	waiter_init(&x, bytes, 0);
	mem = waiter_take(p, &x);
	waiter_fini(&x);
	return mem;
}

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

/* A request's bytes: every tensor at its maximum, each rounded up to the alignment. */
static void
test_sizing(void)
{
	model_t a, b;

	make_model(&a, "fashion", 784, 10, 256);
	make_model(&b, "odd", 3, 5, 7);
	CHECK(pinned_pool_model_bytes(&a, 1, 64) == 3136 + 64, "fashion, one row: %zu",
	    pinned_pool_model_bytes(&a, 1, 64));
	CHECK(pinned_pool_model_bytes(&a, 256, 64) == 784 * 4 * 256 + 10 * 4 * 256, "fashion, 256 rows: %zu",
	    pinned_pool_model_bytes(&a, 256, 64));
	CHECK(pinned_pool_model_bytes(&b, 7, 256) == 512, "odd, 7 rows: %zu", pinned_pool_model_bytes(&b, 7, 256));
}

/* First fit in address order; a put merges with both neighbours; larger than the pool is refused. */
static void
test_first_fit(void)
{
	pinned_pool_t *p;
	char *cause = NULL, *q[4], *m;
	uint64_t before = device_allocation_count(dev);
	struct waiter x;
	int i;

	CHECK(pinned_pool_create(dev, 16 * PAGE - 100, &p, &cause) == 0, "create: %s", cause);
	CHECK(device_allocation_count(dev) == before + 1, "one allocation at create");
	CHECK(pinned_pool_bytes(p) == 16 * PAGE, "rounded up to pages: %zu", pinned_pool_bytes(p));
	for (i = 0; i < 4; i++) {
		q[i] = take_now(p, 4 * PAGE - 1);	/* rounded up to 4 pages */
		CHECK(q[i] != NULL, "quarter %d", i);
		memset(q[i], i, 4 * PAGE);
	}
	CHECK(q[1] == q[0] + 4 * PAGE && q[3] == q[0] + 12 * PAGE, "quarters in address order");
	CHECK(pinned_pool_free_bytes(p) == 0 && take_now(p, 1) == NULL, "full");
	pinned_pool_put(p, q[1], 4 * PAGE - 1);
	CHECK((m = take_now(p, 2 * PAGE)) == q[1], "first fit takes the hole");
	pinned_pool_put(p, q[0], 4 * PAGE);
	pinned_pool_put(p, q[2], 4 * PAGE);
	/* Free now: q0's 4 pages, q1's last 2, q2's 4 = [0,4) and [6,12) pages. */
	CHECK(take_now(p, 7 * PAGE) == NULL, "7 pages do not fit in 4 + 6");
	pinned_pool_put(p, m, 2 * PAGE);
	CHECK((m = take_now(p, 12 * PAGE)) == q[0], "the three merged into 12 pages from the start");
	pinned_pool_put(p, m, 12 * PAGE);
	pinned_pool_put(p, q[3], 4 * PAGE);
	CHECK(pinned_pool_free_bytes(p) == 16 * PAGE, "all back");
	waiter_init(&x, 16 * PAGE + 1, clock_now_us() + 1000000);
	CHECK(pinned_pool_take(p, &x.w, (void **)&m) == PINNED_REFUSED, "larger than the pool");
	waiter_fini(&x);
	CHECK(device_allocation_count(dev) == before + 1, "no allocation per take");
	pinned_pool_free(p);
}

/* A queued request is served when memory comes back, in arrival order, or let go at its deadline or a cancel. */
static void
test_waiting(void)
{
	pinned_pool_t *p;
	char *cause = NULL, *all;
	struct waiter big, small, late;
	void *mem = NULL;

	CHECK(pinned_pool_create(dev, 8 * PAGE, &p, &cause) == 0, "create: %s", cause);
	all = take_now(p, 8 * PAGE);
	CHECK(all != NULL, "all of it");
	waiter_init(&big, 8 * PAGE, clock_now_us() + 60000000);
	waiter_init(&small, PAGE, clock_now_us() + 60000000);
	CHECK(pinned_pool_take(p, &big.w, &mem) == PINNED_WAITING, "big waits");
	CHECK(pinned_pool_take(p, &small.w, &mem) == PINNED_WAITING, "small waits behind big, though it would fit");
	pinned_pool_put(p, all, 8 * PAGE);
	CHECK(waiter_answer(&big) == all, "big served first, with all of it");
	CHECK(!small.answered, "small still waits behind big");
	pinned_pool_put(p, big.mem, 8 * PAGE);
	CHECK(waiter_answer(&small) == all, "small served once big gave it back");
	all = take_now(p, 7 * PAGE);
	CHECK(all != NULL, "the rest");
	waiter_init(&late, 2 * PAGE, clock_now_us() + 20000);
	CHECK(waiter_take(p, &late) == NULL && late.answered, "a deadline that passes is answered with NULL");
	waiter_fini(&late);
	waiter_init(&late, 2 * PAGE, clock_now_us() + 60000000);
	CHECK(pinned_pool_take(p, &late.w, &mem) == PINNED_WAITING, "waits");
	pinned_pool_cancel_waits(p);
	CHECK(waiter_answer(&late) == NULL, "cancelled");
	pinned_pool_put(p, small.mem, PAGE);
	pinned_pool_put(p, all, 7 * PAGE);
	CHECK(take_now(p, PAGE) == NULL, "a wait after cancel is refused");
	waiter_fini(&big);
	waiter_fini(&small);
	waiter_fini(&late);
	pinned_pool_free(p);
}

/* Take 1-3 pages, waiting when needed, write and check them, give them back; a piece shared by two is a clash. */
static void *
hammer(void *arg)
{
	uintptr_t me = (uintptr_t)arg, *mem;
	struct waiter x;
	size_t bytes, k;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		bytes = (size_t)(1 + (i + me) % 3) * PAGE;
		waiter_init(&x, bytes, clock_now_us() + 60000000);
		if ((mem = waiter_take(shared, &x)) == NULL) {
			__atomic_add_fetch(&clashes, 1000000, __ATOMIC_RELAXED);	/* never refused with a minute to wait */
			waiter_fini(&x);
			continue;
		}
		for (k = 0; k < bytes / sizeof *mem; k += 512)
			mem[k] = me;
		for (k = 0; k < bytes / sizeof *mem; k += 512)
			if (mem[k] != me)
				__atomic_add_fetch(&clashes, 1, __ATOMIC_RELAXED);
		pinned_pool_put(shared, mem, bytes);
		waiter_fini(&x);
	}
	return NULL;
}

/* Threads asking together for more than the pool holds are all served, never one piece to two. */
static void
test_threads(void)
{
	pthread_t t[THREADS];
	char *cause = NULL;
	uintptr_t i;

	CHECK(pinned_pool_create(dev, 5 * PAGE, &shared, &cause) == 0, "create: %s", cause);
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, hammer, (void *)(i + 1)) == 0, "thread");
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(clashes == 0, "%d clashes or refusals", clashes);
	CHECK(pinned_pool_free_bytes(shared) == 5 * PAGE, "all back");
	pinned_pool_free(shared);
	free(cause);
}

int
main(void)
{
	dev = test_open_device();
	test_sizing();
	test_first_fit();
	test_waiting();
	test_threads();
	device_close(dev);
	return test_finish("test_pinned_pool");
}
