/* clock.c: the daemon's monotonic clock and condition variables on it. */
#include "config.h"

#include <time.h>

#include "clock.h"

/* Monotonic microseconds. */
uint64_t
clock_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Init a condition variable on the monotonic clock. */
int
clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int rc;

	if ((rc = pthread_condattr_init(&attr)) != 0)
		return rc;
	if ((rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)) == 0)
		rc = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return rc;
}

/* Wait on cond until the monotonic time deadline_us. */
void
clock_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_us)
{
	struct timespec ts = { (time_t)(deadline_us / 1000000u), (long)(deadline_us % 1000000u) * 1000 };

	pthread_cond_timedwait(cond, lock, &ts);
}
