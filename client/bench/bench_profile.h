/* bench_profile.h: inferd-bench-engine --profile: per-step times of a model's plan, medians over repetitions, grouped by op. */
#ifndef INFERD_BENCH_PROFILE_H
#define INFERD_BENCH_PROFILE_H

#include <stddef.h>
#include <stdio.h>

#include "device.h"

/*
 * Contract.  The engine bench profiles the plan of one batch size reps times
 * (model_exec_profile); each profile is added here, and must list the same
 * steps (node and op) in the same order as the first.  bench_profile_finish
 * takes each step's median; the report groups the medians by op and how it
 * ran (total, count, share of the steps' sum, largest first: an fp16 plan's
 * FP32 islands apart from its FP16 steps), lists the slowest nodes,
 * and sets the steps' sum beside the whole run's time measured normally
 * (a captured graph's launch where there is one), so what launching adds shows.
 */
#define BENCH_PROFILE_TOP 15		/* nodes listed by time */

struct bench_profile {
	int rows;			/* the rows of the plan profiled (a graph may pad the batch) */
	int reps;			/* profiles wanted */
	int taken;			/* profiles added */
	size_t n;			/* steps */
	struct device_step_time *steps;	/* the first profile's steps; after finish, each step's median time */
	double *samples;		/* reps * n times, profile-major */
	double whole_us;		/* the whole run's median time, set by the caller */
	double layout_ns;		/* one request's output layout (model_output_layout), set by the caller */
};

/* Empty p for reps profiles of the plan of rows rows. */
void bench_profile_init(struct bench_profile *p, int reps, int rows);
/* Add one profile; p takes t (malloc'ed, n steps) and frees it; -1 when its steps differ from the first's. */
int bench_profile_add(struct bench_profile *p, struct device_step_time *t, size_t n, char **cause);
/* Each step's median time into p->steps. */
void bench_profile_finish(struct bench_profile *p);
/* Print the report as text. */
void bench_profile_print(FILE *f, const struct bench_profile *p);
/* The report as compact JSON text (malloc'ed), NULL when out of memory. */
char *bench_profile_json(const struct bench_profile *p);
/* Free what p holds (an empty p is fine). */
void bench_profile_free(struct bench_profile *p);

#endif
