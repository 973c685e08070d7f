/*
 * bench_run.c: what the load workers (bench_load_shm.c, bench_load_http.c)
 * share with the main thread: the --requests tickets, the measuring phase,
 * and reporting failures and refusals.  inferd-bench.c drives the run; the
 * workers call only these.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "bench.h"

/*
 * Before each request: 0 to go on, with *ticket set when it is one of the
 * --requests counted; -1 when the worker should stop.
 */
int
bench_begin(struct bench_run *r, int *ticket)
{
	int phase = __atomic_load_n(&r->phase, __ATOMIC_ACQUIRE);
	uint64_t left;

	*ticket = 0;
	if (phase == BENCH_PHASE_STOP)
		return -1;
	if (phase == BENCH_PHASE_MEASURE && r->set->requests != 0) {
		left = __atomic_load_n(&r->tickets, __ATOMIC_RELAXED);
		do {
			if (left == 0)
				return -1;
		} while (!__atomic_compare_exchange_n(&r->tickets, &left, left - 1, 0,
		    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		*ticket = 1;
	}
	return 0;
}

/* After it: a ticketed request counts (--requests), else one completed while measuring. */
int
bench_counts(struct bench_run *r, int ticket)
{
	if (r->set->requests != 0)
		return ticket;
	return __atomic_load_n(&r->phase, __ATOMIC_ACQUIRE) == BENCH_PHASE_MEASURE;
}

/* Stop on an error: keep cause as the worker's reason. */
void
bench_worker_fail(struct bench_worker *w, char *cause)
{
	w->fatal = cause;
	__atomic_add_fetch(&w->run->failed, 1, __ATOMIC_RELEASE);
}

/* Tell the main thread this worker is connected (or has failed). */
void
bench_worker_ready(struct bench_worker *w)
{
	struct bench_run *r = w->run;

	pthread_mutex_lock(&r->lock);
	r->ready++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Note a refused request: keep the first one's status and message. */
void
bench_worker_refused(struct bench_worker *w, const char *what, const char *msg, size_t len)
{
	if (w->first_error[0] != '\0')
		return;
	snprintf(w->first_error, sizeof w->first_error, "%s: %.*s", what,
	    (int)(len > 200 ? 200 : len), msg);
}
