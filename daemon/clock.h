/*
 * clock.h: the daemon's one monotonic clock, and condition variables that
 * wait on it.
 *
 * Every deadline and duration inside the daemon (request timeouts, handshake
 * expiry, drain bounds, latency counters) is in microseconds of
 * CLOCK_MONOTONIC, so wall-clock steps never expire or extend a request.
 * Condition variables made by clock_cond_init wait against the same clock.
 */
#ifndef INFERD_CLOCK_H
#define INFERD_CLOCK_H

#include <pthread.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic microseconds since an arbitrary start (CLOCK_MONOTONIC cannot fail here). */
uint64_t clock_now_us(void);

/* Initialize cond to time its waits on the monotonic clock; 0 or an errno value. */
int clock_cond_init(pthread_cond_t *cond);

/* Wait on cond (made by clock_cond_init) until woken or the monotonic time deadline_us. */
void clock_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_us);

#ifdef __cplusplus
}
#endif

#endif
