/*
 * bench_mix_data.c: what inferd-bench-mix sends and keeps — each request's
 * inputs from its seed and length, answers kept for --check and their
 * comparison, refusals by kind, and the workers' shared bookkeeping.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mix.h"
#include "error.h"

/* The next value of a xorshift64 generator (never seeded with 0). */
static uint64_t
mix_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A fresh request: its seed and a length uniform in [lo, hi], from the worker's generator. */
struct mix_req
mix_req_draw(uint64_t *rng, int lo, int hi)
{
	struct mix_req q;

	q.len = lo + (int)(mix_next(rng) % (uint64_t)(hi - lo + 1));
	q.seed = mix_next(rng) | 1;
	return q;
}

/* Store v as an integer of elem_bytes bytes (host order, as the binary extension and shm carry it). */
static void
mix_store_int(void *buf, size_t i, size_t elem_bytes, int64_t v)
{
	int32_t v32 = (int32_t)v;

	if (elem_bytes == 8)
		memcpy((char *)buf + i * 8, &v, 8);
	else if (elem_bytes == 4)
		memcpy((char *)buf + i * 4, &v32, 4);
	else
		memset((char *)buf + i * elem_bytes, 0, elem_bytes);
}

/*
 * Fill input t's buf (elems elements) for request q by t's name and datatype:
 * input_ids random tokens below vocab, attention_mask ones, other integer
 * inputs zeros, FP32 random in [0, 1), anything else zeros.
 */
void
mix_input_fill(const struct mix_tensor *t, const struct mix_req *q, int index, int64_t vocab,
    void *buf, size_t elems)
{
	uint64_t s = q->seed ^ ((uint64_t)(index + 1) * 0x9e3779b97f4a7c15u);
	int is_int = strcmp(t->datatype, "INT64") == 0 || strcmp(t->datatype, "INT32") == 0;
	size_t i;
	float f;

	if (s == 0)
		s = 1;
	if (is_int && strstr(t->name, "input_ids") != NULL) {
		for (i = 0; i < elems; i++)
			mix_store_int(buf, i, t->elem_bytes, (int64_t)(mix_next(&s) % (uint64_t)vocab));
	} else if (is_int && strstr(t->name, "attention_mask") != NULL) {
		for (i = 0; i < elems; i++)
			mix_store_int(buf, i, t->elem_bytes, 1);
	} else if (strcmp(t->datatype, "FP32") == 0) {
		for (i = 0; i < elems; i++) {
			f = (float)(mix_next(&s) >> 40) / (float)(1u << 24);
			memcpy((char *)buf + i * 4, &f, 4);
		}
	} else
		memset(buf, 0, elems * t->elem_bytes);
}

/* An IEEE half's value. */
static double
mix_half(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);

	return (h & 0x8000) ? -v : v;
}

/* Element i of a floating-point buffer as a double. */
static double
mix_float_at(const struct mix_tensor *t, const unsigned char *p, size_t i)
{
	uint16_t h;
	uint32_t b;
	float f;

	if (t->elem_bytes == 4) {
		memcpy(&f, p + i * 4, 4);
		return f;
	}
	memcpy(&h, p + i * 2, 2);
	if (strcmp(t->datatype, "FP16") == 0)
		return mix_half(h);
	b = (uint32_t)h << 16;	/* BF16: the top half of an FP32 */
	memcpy(&f, &b, 4);
	return f;
}

/*
 * Compare output t's answer under load (a, an bytes) with its answer alone
 * (b, bn): the largest difference relative to b's largest magnitude in
 * *diff; -1 with *cause when sizes differ or a datatype is compared exactly and differs.
 */
int
mix_output_compare(const struct mix_tensor *t, const unsigned char *a, size_t an,
    const unsigned char *b, size_t bn, double *diff, char **cause)
{
	double scale = 0, worst = 0, x, y;
	size_t i, n = an / t->elem_bytes;

	*diff = 0;
	if (an != bn)
		return error_set(cause, "output %s: %zu bytes under load, %zu alone", t->name, an, bn);
	if (strcmp(t->datatype, "FP32") != 0 && strcmp(t->datatype, "FP16") != 0 &&
	    strcmp(t->datatype, "BF16") != 0) {
		if (memcmp(a, b, an) != 0)
			return error_set(cause, "output %s (%s) differs from the answer alone", t->name,
			    t->datatype);
		return 0;
	}
	for (i = 0; i < n; i++) {
		y = fabs(mix_float_at(t, b, i));
		if (y > scale)
			scale = y;
	}
	for (i = 0; i < n; i++) {
		x = mix_float_at(t, a, i);
		y = mix_float_at(t, b, i);
		if (isnan(x) != isnan(y))
			return error_set(cause, "output %s element %zu: %g under load, %g alone", t->name,
			    i, x, y);
		if (!isnan(x) && fabs(x - y) > worst)
			worst = fabs(x - y);
	}
	*diff = scale > 0 ? worst / scale : worst;
	return 0;
}

/* Compare sample s's outputs under load with bytes/nbytes (the same request alone) into res; -1 with *cause. */
int
mix_sample_compare(const struct mix_model *m, const struct mix_sample *s,
    const unsigned char *const *bytes, const size_t *nbytes, struct mix_result *res, char **cause)
{
	double diff;
	int k;

	for (k = 0; k < m->noutputs; k++) {
		if (mix_output_compare(&m->out[k], s->bytes[k], s->nbytes[k], bytes[k], nbytes[k],
		    &diff, cause) != 0) {
			res->check_mismatch++;
			return -1;
		}
		if (diff > res->worst_diff)
			res->worst_diff = diff;
	}
	res->checked++;
	return 0;
}

/* Keep a copy of an answer's outputs as worker w's next sample; 0 when not kept. */
int
mix_sample_keep(struct mix_worker *w, const struct mix_req *q, const unsigned char *const *bytes,
    const size_t *nbytes, int n)
{
	struct mix_sample *s;
	int i;

	if (w->nsamples >= w->max_samples)
		return 0;
	s = &w->samples[w->nsamples];
	memset(s, 0, sizeof *s);
	s->req = *q;
	for (i = 0; i < n; i++) {
		if ((s->bytes[i] = malloc(nbytes[i] ? nbytes[i] : 1)) == NULL) {
			while (i-- > 0)
				free(s->bytes[i]);
			return 0;
		}
		memcpy(s->bytes[i], bytes[i], nbytes[i]);
		s->nbytes[i] = nbytes[i];
	}
	w->nsamples++;
	return 1;
}

/* Add count refusals of kind code: its own entry, or "other" once the table is full. */
static void
mix_kinds_count(struct mix_kinds *k, int code, uint64_t count)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (k->code[i] == code) {
			k->count[i] += count;
			return;
		}
	if (k->n == MIX_MAX_KINDS) {
		k->other += count;
		return;
	}
	k->code[k->n] = code;
	k->count[k->n++] = count;
}

/* Count a refusal of kind code (HTTP status or libinferd code) with its message. */
void
mix_kinds_add(struct mix_kinds *k, int code, const char *msg, size_t len)
{
	if (k->first[0] == '\0')
		snprintf(k->first, sizeof k->first, "%d: %.*s", code, (int)(len > 200 ? 200 : len), msg);
	mix_kinds_count(k, code, 1);
}

/* Add src's counts to dst; dst keeps its first message, else takes src's. */
void
mix_kinds_merge(struct mix_kinds *dst, const struct mix_kinds *src)
{
	int i;

	for (i = 0; i < src->n; i++)
		mix_kinds_count(dst, src->code[i], src->count[i]);
	dst->other += src->other;
	if (dst->first[0] == '\0')
		memcpy(dst->first, src->first, sizeof dst->first);
}

/* Whether an answer just received counts in the measured window. */
int
mix_measuring(const struct mix_run *r)
{
	return __atomic_load_n(&r->phase, __ATOMIC_ACQUIRE) == BENCH_PHASE_MEASURE;
}

/* Stop on an error: keep cause as the worker's reason. */
void
mix_worker_fail(struct mix_worker *w, char *cause)
{
	w->fatal = cause;
	__atomic_add_fetch(&w->run->failed, 1, __ATOMIC_RELEASE);
}

/* Tell the main thread this worker is connected (or has failed). */
void
mix_worker_ready(struct mix_worker *w)
{
	struct mix_run *r = w->run;

	pthread_mutex_lock(&r->lock);
	r->ready++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Note one answered request of length len that took ns (counts only while measuring). */
void
mix_worker_answered(struct mix_worker *w, int len, uint64_t ns, int measured)
{
	w->seen[len] = 1;
	if (!measured)
		return;
	w->ok++;
	w->tokens += (uint64_t)len;
	bench_hist_add(&w->hist, ns);
}
