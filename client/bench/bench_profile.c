/* bench_profile.c: per-step plan profiles for inferd-bench-engine --profile: medians, op groups, slowest nodes, report. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_profile.h"
#include "error.h"

/* One op's total over the plan, for one way of running it (device_step_time.how). */
struct profile_group {
	const char *op;
	const char *how;
	double us;
	int count;
};

/* Empty p for reps profiles. */
void
bench_profile_init(struct bench_profile *p, int reps, int rows)
{
	memset(p, 0, sizeof *p);
	p->reps = reps;
	p->rows = rows;
}

/* 1 when t lists the same steps (node, op, how) as p's first profile. */
static int
profile_same_steps(const struct bench_profile *p, const struct device_step_time *t, size_t n)
{
	if (n != p->n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].node, p->steps[i].node) != 0 || strcmp(t[i].op, p->steps[i].op) != 0 ||
		    strcmp(t[i].how, p->steps[i].how) != 0)
			return 0;
	return 1;
}

/* Keep t's times as the next profile's; the first also gives the steps. */
int
bench_profile_add(struct bench_profile *p, struct device_step_time *t, size_t n, char **cause)
{
	if (p->taken >= p->reps) {
		free(t);
		return error_set(cause, "profile: more than the %d profiles asked for", p->reps);
	}
	if (p->taken == 0) {
		if ((p->samples = calloc((size_t)p->reps * (n ? n : 1), sizeof *p->samples)) == NULL) {
			free(t);
			return error_set(cause, "out of memory");
		}
		p->steps = t;
		p->n = n;
	} else if (!profile_same_steps(p, t, n)) {
		free(t);
		return error_set(cause, "profile %d lists other steps than the first (%zu steps, first had %zu)",
		    p->taken + 1, n, p->n);
	}
	for (size_t i = 0; i < n; i++)
		p->samples[(size_t)p->taken * n + i] = t[i].us;
	if (t != p->steps)
		free(t);
	p->taken++;
	return 0;
}

/* qsort order of doubles, ascending. */
static int
profile_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Each step's median over the profiles taken (the mean of the middle two for an even count). */
void
bench_profile_finish(struct bench_profile *p)
{
	double *col = malloc((p->taken ? (size_t)p->taken : 1) * sizeof *col);
	int k;

	if (col == NULL || p->taken == 0) {
		free(col);
		return;
	}
	for (size_t i = 0; i < p->n; i++) {
		for (k = 0; k < p->taken; k++)
			col[k] = p->samples[(size_t)k * p->n + i];
		qsort(col, (size_t)p->taken, sizeof *col, profile_cmp_double);
		p->steps[i].us = p->taken % 2 ? col[p->taken / 2] : (col[p->taken / 2 - 1] + col[p->taken / 2]) / 2;
	}
	free(col);
}

/* Sum of the steps' times. */
static double
profile_sum(const struct bench_profile *p)
{
	double sum = 0;

	for (size_t i = 0; i < p->n; i++)
		sum += p->steps[i].us;
	return sum;
}

/* qsort order of groups, largest total first. */
static int
profile_cmp_group(const void *a, const void *b)
{
	double x = ((const struct profile_group *)a)->us, y = ((const struct profile_group *)b)->us;

	return (x < y) - (x > y);
}

/* The steps grouped by op and how they ran, largest total first, into *out (malloc'ed, *ng of them); -1 when out of memory. */
static int
profile_groups(const struct bench_profile *p, struct profile_group **out, size_t *ng)
{
	struct profile_group *g = calloc(p->n ? p->n : 1, sizeof *g);
	size_t i, j, n = 0;

	if (g == NULL)
		return -1;
	for (i = 0; i < p->n; i++) {
		const struct device_step_time *t = &p->steps[i];
		for (j = 0; j < n && (strcmp(g[j].op, t->op) != 0 || strcmp(g[j].how, t->how) != 0); j++)
			;
		if (j == n) {
			g[n].op = t->op;
			g[n++].how = t->how;
		}
		g[j].us += p->steps[i].us;
		g[j].count++;
	}
	qsort(g, n, sizeof *g, profile_cmp_group);
	*out = g;
	*ng = n;
	return 0;
}

/* qsort order of step pointers, slowest first. */
static int
profile_cmp_step(const void *a, const void *b)
{
	double x = (*(const struct device_step_time *const *)a)->us, y = (*(const struct device_step_time *const *)b)->us;

	return (x < y) - (x > y);
}

/* The slowest steps, at most BENCH_PROFILE_TOP, into *out (malloc'ed, *nt of them); -1 when out of memory. */
static int
profile_top(const struct bench_profile *p, const struct device_step_time ***out, size_t *nt)
{
	const struct device_step_time **t = calloc(p->n ? p->n : 1, sizeof *t);

	if (t == NULL)
		return -1;
	for (size_t i = 0; i < p->n; i++)
		t[i] = &p->steps[i];
	qsort(t, p->n, sizeof *t, profile_cmp_step);
	*out = t;
	*nt = p->n < BENCH_PROFILE_TOP ? p->n : BENCH_PROFILE_TOP;
	return 0;
}

/* Share of sum, as a percentage (0 when sum is 0). */
static double
profile_pct(double us, double sum)
{
	return sum > 0 ? 100.0 * us / sum : 0.0;
}

/* Print the report: ops by total, the slowest nodes, the sum beside the whole run. */
void
bench_profile_print(FILE *f, const struct bench_profile *p)
{
	struct profile_group *g = NULL;
	const struct device_step_time **top = NULL;
	double sum = profile_sum(p);
	size_t ng = 0, nt = 0, i;

	if (profile_groups(p, &g, &ng) != 0 || profile_top(p, &top, &nt) != 0) {
		fprintf(f, "  profile: out of memory\n");
		free(g);
		return;
	}
	fprintf(f, "  profile of the %d-row plan: %zu steps, medians of %d runs\n", p->rows, p->n, p->taken);
	fprintf(f, "    %-20s %-12s %12s %6s %7s\n", "op", "ran as", "total us", "count", "share");
	for (i = 0; i < ng; i++)
		fprintf(f, "    %-20s %-12s %12.1f %6d %6.1f%%\n", g[i].op, g[i].how, g[i].us, g[i].count,
		    profile_pct(g[i].us, sum));
	fprintf(f, "    slowest %zu nodes:\n", nt);
	for (i = 0; i < nt; i++)
		fprintf(f, "    %10.1f us %6.1f%%  %s (%s, %s)\n", top[i]->us, profile_pct(top[i]->us, sum), top[i]->node,
		    top[i]->op, top[i]->how);
	fprintf(f, "    sum of steps %.1f us; whole run %.1f us (steps are %.1f%% of it)\n", sum, p->whole_us,
	    profile_pct(sum, p->whole_us));
	free(g);
	free(top);
}

/* Append one op group to arr; -1 when out of memory. */
static int
profile_json_group(json_t *arr, const struct profile_group *g, double sum)
{
	return json_array_append_new(arr, json_pack("{s:s, s:s, s:f, s:i, s:f}", "op", g->op, "how", g->how, "us",
	    g->us, "count", g->count, "share", profile_pct(g->us, sum) / 100.0));
}

/* The op groups and the slowest nodes into o; -1 when out of memory. */
static int
profile_json_tables(json_t *o, const struct bench_profile *p, double sum)
{
	struct profile_group *g = NULL;
	const struct device_step_time **top = NULL;
	json_t *ops = json_array(), *nodes = json_array();
	size_t ng = 0, nt = 0, i;
	int bad = ops == NULL || nodes == NULL || profile_groups(p, &g, &ng) != 0 || profile_top(p, &top, &nt) != 0;

	for (i = 0; !bad && i < ng; i++)
		bad = profile_json_group(ops, &g[i], sum) != 0;
	for (i = 0; !bad && i < nt; i++)
		bad = json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:f, s:f}", "node", top[i]->node, "op",
		    top[i]->op, "how", top[i]->how, "us", top[i]->us, "share", profile_pct(top[i]->us, sum) / 100.0)) != 0;
	free(g);
	free(top);
	if (bad || json_object_set_new(o, "ops", ops) != 0) {
		json_decref(ops);
		json_decref(nodes);
		return -1;
	}
	return json_object_set_new(o, "top_nodes", nodes);
}

/* The report as compact JSON text. */
char *
bench_profile_json(const struct bench_profile *p)
{
	double sum = profile_sum(p);
	json_t *o = json_pack("{s:i, s:I, s:i, s:f, s:f}", "rows", p->rows, "steps", (json_int_t)p->n, "reps",
	    p->taken, "sum_us", sum, "whole_us", p->whole_us);
	char *text = NULL;

	if (o != NULL && profile_json_tables(o, p, sum) == 0)
		text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(o);
	return text;
}

/* Free the steps and samples. */
void
bench_profile_free(struct bench_profile *p)
{
	free(p->steps);
	free(p->samples);
	memset(p, 0, sizeof *p);
}
