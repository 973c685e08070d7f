/* bench_hist.c: latencies in a log-linear histogram, HdrHistogram's shape at 64 buckets per octave. */
#include "config.h"

#include <string.h>
#include <time.h>

#include "bench.h"

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC cannot fail with a valid pointer). */
uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Empty the histogram. */
void
bench_hist_init(struct bench_hist *h)
{
	memset(h, 0, sizeof *h);
	h->min_ns = UINT64_MAX;
}

/*
 * Values below 2*SUB have a bucket each; above, each power of two is cut
 * into SUB buckets, so a bucket is at most 1/SUB of its value wide.
 */
static unsigned
bench_hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < 2 * BENCH_HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - 6;	/* BENCH_HIST_SUB is 2^6: v >> shift is in [64, 128) */
	return shift * BENCH_HIST_SUB + (unsigned)(v >> shift);
}

/* The middle of bucket i's range. */
static double
bench_hist_value(unsigned i)
{
	unsigned shift;
	uint64_t low;

	if (i < 2 * BENCH_HIST_SUB)
		return i;
	shift = i / BENCH_HIST_SUB - 1;
	low = (uint64_t)(i % BENCH_HIST_SUB + BENCH_HIST_SUB) << shift;
	return (double)low + (double)((uint64_t)1 << shift) / 2.0;
}

/* Count one latency. */
void
bench_hist_add(struct bench_hist *h, uint64_t ns)
{
	h->b[bench_hist_index(ns)]++;
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	if (ns < h->min_ns)
		h->min_ns = ns;
}

/* Add every count of src to dst. */
void
bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src)
{
	unsigned i;

	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	if (src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
}

/* The q-quantile: the bucket holding the ceil(q*count)-th value, clamped to the extremes seen. */
double
bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t rank, cum = 0;
	double v;
	unsigned i;

	if (h->count == 0)
		return 0;
	rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		cum += h->b[i];
		if (cum >= rank)
			break;
	}
	v = bench_hist_value(i < BENCH_HIST_BUCKETS ? i : BENCH_HIST_BUCKETS - 1);
	if (v > (double)h->max_ns)
		v = (double)h->max_ns;
	if (v < (double)h->min_ns)
		v = (double)h->min_ns;
	return v;
}
