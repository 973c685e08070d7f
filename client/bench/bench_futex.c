/*
 * bench_futex.c: the cost of one cross-process futex round trip, the unit
 * in which the shared-memory path's wake-ups are priced: two processes
 * ping-pong on a word in a shared memfd mapping (as a client's region is),
 * each sleeping in FUTEX_WAIT (shared, not private) until the other's
 * FUTEX_WAKE.  No spinning: every half is a real sleep and wake-up.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"

/* Untimed round trips first (page faults, the scheduler settling). */
#define FUTEX_WARMUP 200

/* The shared page: the ball and a flag that ends the game. */
struct futex_court {
	uint32_t ball;			/* 1: the child's turn, 0: the parent's */
	uint32_t stop;
};

/* Sleep until *w is no longer v (a shared futex). */
static void
futex_wait_while(uint32_t *w, uint32_t v)
{
	while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == v)
		(void)syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
}

/* Set *w to v and wake its sleeper. */
static void
futex_set_wake(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELEASE);
	(void)syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The child: return every ball until told to stop. */
static void
futex_child(struct futex_court *c)
{
	for (;;) {
		futex_wait_while(&c->ball, 0);
		if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
			_exit(0);
		futex_set_wake(&c->ball, 0);
	}
}

/* A shared memfd mapping of one page; NULL with *cause. */
static struct futex_court *
futex_court_map(char **cause)
{
	void *p;
	int fd;

	if ((fd = memfd_create("inferd-bench-futex", MFD_CLOEXEC)) == -1) {
		error_set(cause, "memfd_create: %s", strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, 4096) != 0) {
		error_set(cause, "ftruncate: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		error_set(cause, "mmap: %s", strerror(errno));
		return NULL;
	}
	memset(p, 0, 4096);
	return p;
}

/* Serve runs timed round trips (after the warm-up) into h. */
static void
futex_rally(struct futex_court *c, int runs, struct bench_hist *h)
{
	uint64_t t0;
	int i;

	for (i = 0; i < FUTEX_WARMUP + runs; i++) {
		t0 = bench_now_ns();
		futex_set_wake(&c->ball, 1);
		futex_wait_while(&c->ball, 1);
		if (i >= FUTEX_WARMUP)
			bench_hist_add(h, bench_now_ns() - t0);
	}
}

/* Measure runs cross-process futex round trips: the median and p99 in *f; -1 with *cause. */
int
bench_futex_rtt(int runs, struct bench_futex *f, char **cause)
{
	struct futex_court *c;
	struct bench_hist *h;
	int status;
	pid_t pid;

	memset(f, 0, sizeof *f);
	if (runs < 1)
		return error_set(cause, "futex round trips: runs must be at least 1");
	if ((h = malloc(sizeof *h)) == NULL)
		return error_set(cause, "out of memory");
	if ((c = futex_court_map(cause)) == NULL) {
		free(h);
		return -1;
	}
	bench_hist_init(h);
	if ((pid = fork()) == -1) {
		munmap(c, 4096);
		free(h);
		return error_set(cause, "fork: %s", strerror(errno));
	}
	if (pid == 0)
		futex_child(c);
	futex_rally(c, runs, h);
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	futex_set_wake(&c->ball, 1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		munmap(c, 4096);
		free(h);
		return error_set(cause, "the futex partner process failed");
	}
	f->p50_us = bench_hist_quantile(h, 0.50) / 1e3;
	f->p99_us = bench_hist_quantile(h, 0.99) / 1e3;
	f->runs = runs;
	munmap(c, 4096);
	free(h);
	return 0;
}
