/* model_padding.c: batching across lengths: model.json "padding", its detection, and its check at load. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"
#include "model_padding.h"

/*
 * Largest relative difference of a padded run's rows from the unpadded run at
 * fp32, at tf32 or fp16, and at bf16 (fp16's times 8: bfloat16 keeps 8
 * significant bits to FP16's 11, so each stored value rounds 8 times as far).
 */
#define PADDING_TOL_FP32 1e-4
#define PADDING_TOL_REDUCED 1e-2
#define PADDING_TOL_BF16 8e-2
/*
 * The check pads to at most this length: its two runs cost what the model
 * costs at that length (on the CPU, BERT-base at 2 x 512 took 1.75 s of a
 * 3.3 s load, and at 2 x 128 still about 0.8 s of 1.8), and a mask that leaks
 * padding into a row does so at any length.
 */
#define PADDING_CHECK_MAX_LEN 64

/* The dim of input k carrying variable v, or -1; -2 when it carries it more than once. */
static int
padding_dim_of(const model_t *m, int k, int v)
{
	int d, found = -1;

	for (d = 0; d < m->inputs[k].ndims; d++)
		if (m->inputs[k].var[d] == v)
			found = found == -1 ? d : -2;
	return found;
}

/* The declared padded variable and every input's pad value; -1 naming the key when they do not fit the model. */
static int
padding_resolve_declared(model_t *m, char **cause)
{
	struct model_padding *p = &m->padding;
	int k = model_input_index(m, p->dim_input), d = p->dim - (m->max_batch_size > 0), i, j;

	if (k < 0)
		return error_set(cause, "\"padding\".\"dim\": no input '%s'", p->dim_input);
	if (d < 0 || d >= m->inputs[k].ndims || m->inputs[k].var[d] < 0)
		return error_set(cause, "\"padding\".\"dim\": dim %d of input '%s' is not a variable dim", p->dim,
		    p->dim_input);
	p->var = m->inputs[k].var[d];
	for (j = 0; j < p->nvalues; j++)
		if (model_input_index(m, p->value_names[j]) < 0)
			return error_set(cause, "\"padding\".\"values\": no input '%s'", p->value_names[j]);
	for (i = 0; i < m->ninputs; i++) {
		if (padding_dim_of(m, i, p->var) == -1)
			continue;
		for (j = 0; j < p->nvalues && strcmp(p->value_names[j], m->inputs[i].name) != 0; j++)
			;
		if (j == p->nvalues)
			return error_set(cause, "\"padding\".\"values\" lacks input '%s', which has the padded dim",
			    m->inputs[i].name);
		p->values[i] = p->value_of[j];
	}
	return 0;
}

/* Detection: an integer input named attention_mask with one variable dim, every input carrying it integer; 1 when found. */
static int
padding_detect(model_t *m)
{
	struct model_padding *p = &m->padding;
	int k = model_input_index(m, "attention_mask"), d, i, v = -1;

	if (k < 0 || (m->inputs[k].dtype != GRAPH_DT_I64 && m->inputs[k].dtype != GRAPH_DT_I32))
		return 0;
	for (d = 0; d < m->inputs[k].ndims; d++)
		if (m->inputs[k].var[d] >= 0) {
			if (v >= 0)
				return 0;
			v = m->inputs[k].var[d];
		}
	if (v < 0)
		return 0;
	for (i = 0; i < m->ninputs; i++)
		if (padding_dim_of(m, i, v) != -1 &&
		    (m->inputs[i].dtype != GRAPH_DT_I64 && m->inputs[i].dtype != GRAPH_DT_I32))
			return 0;
	p->var = v;
	memset(p->values, 0, sizeof p->values);
	return 1;
}

/* The buckets: configured ones up to the maximum (which ends the list), else powers of two up to it. */
static int
padding_buckets(model_t *m, char **cause)
{
	struct model_padding *p = &m->padding;
	int64_t max = m->var_max[p->var], b;

	if (p->nbuckets == 0)
		for (b = 1; b < max && p->nbuckets < MODEL_MAX_BUCKETS - 1; b *= 2)
			p->buckets[p->nbuckets++] = b;
	while (p->nbuckets > 0 && p->buckets[p->nbuckets - 1] >= max)
		p->nbuckets--;
	p->buckets[p->nbuckets++] = max;
	return max >= 1 ? 0 : error_set(cause, "\"padding\": the padded dim has no maximum");
}

/* Resolve what "padding" declares, or detect it; 1 when some input is padded, 0 when none, -1 on a bad declaration. */
static int
padding_resolve(model_t *m, char **cause)
{
	struct model_padding *p = &m->padding;
	int i;

	if (p->mode == MODEL_PADDING_OFF || m->max_batch_size == 0 || m->nvars == 0)
		return 0;
	if (p->mode == MODEL_PADDING_DECLARED ? padding_resolve_declared(m, cause) != 0 : !padding_detect(m))
		return p->mode == MODEL_PADDING_DECLARED ? -1 : 0;
	for (i = 0; i < m->ninputs; i++)
		if (padding_dim_of(m, i, p->var) == -2)
			return p->mode == MODEL_PADDING_DECLARED ? error_set(cause, "\"padding\": input '%s' has the "
			    "padded dim more than once", m->inputs[i].name) : 0;
	return padding_buckets(m, cause) != 0 ? -1 : 1;
}

/* Runs of a row of dims own (packed) inside a row of dims big: their count, and the bytes of each. */
size_t
model_padding_runs(const int64_t *own, const int64_t *big, int ndims, size_t es, size_t *run_bytes)
{
	size_t n = 1, run = es;
	int d, j = -1;

	for (d = 0; d < ndims; d++)
		if (own[d] != big[d])
			j = d;
	for (d = 0; d < ndims; d++)
		if (d < j)
			n *= (size_t)own[d];
		else
			run *= (size_t)own[d];
	*run_bytes = run;
	return n;
}

/* Where run i (of model_padding_runs) starts inside the big row, in bytes. */
size_t
model_padding_run_offset(const int64_t *own, const int64_t *big, int ndims, size_t es, size_t i)
{
	size_t off = 0, stride = es;
	int d, j = -1;

	for (d = 0; d < ndims; d++)
		if (own[d] != big[d])
			j = d;
	for (d = ndims - 1; d >= 0; d--) {
		if (d < j) {
			off += (i % (size_t)own[d]) * stride;
			i /= (size_t)own[d];
		}
		stride *= (size_t)big[d];
	}
	return off;
}

/* Fill n elements of dtype dt at p with v. */
void
model_padding_fill_value(void *p, size_t n, enum graph_dtype dt, double v)
{
	size_t i;

	for (i = 0; i < n; i++)
		switch (dt) {
		case GRAPH_DT_F32: ((float *)p)[i] = (float)v; break;
		case GRAPH_DT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
		case GRAPH_DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
		case GRAPH_DT_F16: ((uint16_t *)p)[i] = v == 0 ? 0 : 0x3c00; break;	/* 0 or 1: what padding needs */
		default: ((unsigned char *)p)[i] = (unsigned char)(int)v; break;
		}
}

/* Copy one row between its packed form own_p (dims own) and big_p (dims big): into_big, or the slice back. */
static void
padding_box(char *big_p, char *own_p, const int64_t *own, const int64_t *big, int ndims, size_t es, int into_big)
{
	size_t run, n = model_padding_runs(own, big, ndims, es, &run), i, off;

	for (i = 0; i < n; i++) {
		off = model_padding_run_offset(own, big, ndims, es, i);
		if (into_big)
			memcpy(big_p + off, own_p + i * run, run);
		else
			memcpy(own_p + i * run, big_p + off, run);
	}
}

/* The check's two runs: one row at length len alone, and the same row padded to plen beside another row. */
struct padding_run {
	model_t *m;
	struct model_shape own, big;
	struct model_layout lown, lbig;
	void *in_own[MODEL_MAX_IO], *in_big[MODEL_MAX_IO], *out_own[MODEL_MAX_IO], *out_big[MODEL_MAX_IO];
	uint64_t rng;
};

/* Fill n elements of input k's dtype at p as valid data: masks 1, other integers 0 or 1, floats in [0, 1). */
static void
padding_fill_data(struct padding_run *r, int k, void *p, size_t n)
{
	const struct model_io *io = &r->m->inputs[k];
	size_t i;

	for (i = 0; i < n; i++) {
		r->rng ^= r->rng << 13;
		r->rng ^= r->rng >> 7;
		r->rng ^= r->rng << 17;
		if (strstr(io->name, "mask") != NULL)
			model_padding_fill_value((char *)p + i * graph_dtype_size(io->dtype), 1, io->dtype, 1);
		else if (io->dtype == GRAPH_DT_F32)
			((float *)p)[i] = (float)(r->rng >> 40) / (float)(1 << 24);
		else
			model_padding_fill_value((char *)p + i * graph_dtype_size(io->dtype), 1, io->dtype,
			    (double)(r->rng & 1));
	}
}

/* Shapes, layouts and inputs of both runs; row 0 of the padded run is the unpadded row and its pad values. */
static int
padding_prepare(struct padding_run *r, int64_t len, int64_t plen, char **cause)
{
	model_t *m = r->m;
	size_t own_row, big_row, es;
	int k, d;

	model_shape_max(m, 1, &r->own);
	model_shape_max(m, 2, &r->big);
	for (k = 0; k < m->ninputs; k++)
		if ((d = padding_dim_of(m, k, m->padding.var)) >= 0) {
			r->own.dims[k][d] = len;
			r->big.dims[k][d] = plen;
		}
	if (model_output_layout(m, &r->own, &r->lown, cause) != 0 || model_output_layout(m, &r->big, &r->lbig, cause) != 0)
		return -1;
	for (k = 0; k < m->ninputs; k++) {
		es = graph_dtype_size(m->inputs[k].dtype);
		own_row = model_input_row_bytes(m, k, &r->own);
		big_row = model_input_row_bytes(m, k, &r->big);
		if ((r->in_own[k] = xmalloc(own_row)) == NULL || (r->in_big[k] = xmalloc(2 * big_row)) == NULL)
			return error_set(cause, "out of memory");
		padding_fill_data(r, k, r->in_own[k], own_row / es);
		model_padding_fill_value(r->in_big[k], big_row / es, m->inputs[k].dtype, m->padding.values[k]);
		padding_box(r->in_big[k], r->in_own[k], r->own.dims[k], r->big.dims[k], m->inputs[k].ndims, es, 1);
		padding_fill_data(r, k, (char *)r->in_big[k] + big_row, big_row / es);
	}
	for (k = 0; k < m->noutputs; k++)
		if ((r->out_own[k] = xmalloc(r->lown.row_bytes[k] + 1)) == NULL ||
		    (r->out_big[k] = xmalloc(2 * r->lbig.row_bytes[k] + 1)) == NULL)
			return error_set(cause, "out of memory");
	return 0;
}

/* Run shape s with inputs in on context x and stream st, reading every output into out (layout l). */
static int
padding_exec(model_exec_t *x, device_stream_t *st, const struct model_shape *s, const struct model_layout *l,
    void **in, void **out, char **cause)
{
	const model_t *m = x->model;
	int i;

	for (i = 0; i < m->ninputs; i++)
		if (device_copy_h2d(st, model_exec_input(x, i), in[i], model_input_row_bytes(m, i, s) * (size_t)s->rows,
		    cause) != 0)
			return -1;
	if (model_exec_run(x, s, st, cause) != 0)
		return -1;
	for (i = 0; i < m->noutputs; i++)
		if (device_copy_d2h(st, out[i], model_exec_output(x, i), l->row_bytes[i] * (size_t)s->rows, cause) != 0)
			return -1;
	return device_stream_sync(st, cause);
}

/* Both runs on one context of their own. */
static int
padding_runs(struct padding_run *r, char **cause)
{
	model_exec_t *x = NULL;
	device_stream_t *st = NULL;
	int rc;

	rc = model_exec_create_lazy(r->m, &x, cause);
	if (rc == 0)
		rc = device_stream_create(r->m->dev, DEVICE_STREAM_COMPUTE, &st, cause);
	if (rc == 0)
		rc = padding_exec(x, st, &r->own, &r->lown, r->in_own, r->out_own, cause);
	if (rc == 0)
		rc = padding_exec(x, st, &r->big, &r->lbig, r->in_big, r->out_big, cause);
	if (st != NULL)
		device_stream_destroy(st);
	model_exec_free(x);
	return rc;
}

/* Largest difference of output o's row 0 of the padded run (sliced) from the unpadded run, relative to its scale. */
static double
padding_output_error(struct padding_run *r, int o)
{
	const struct model_io *io = &r->m->outputs[o];
	size_t es = graph_dtype_size(io->dtype), n = r->lown.row_bytes[o] / es, i;
	char *slice = xmalloc(r->lown.row_bytes[o] + 1);
	double diff = 0, scale = 0;

	if (slice == NULL)
		return INFINITY;
	padding_box(r->out_big[o], slice, r->lown.dims[o], r->lbig.dims[o], io->ndims, es, 0);
	if (io->dtype != GRAPH_DT_F32) {
		diff = memcmp(slice, r->out_own[o], r->lown.row_bytes[o]) != 0 ? INFINITY : 0;
		free(slice);
		return diff;
	}
	for (i = 0; i < n; i++) {
		double a = ((float *)slice)[i], b = ((float *)r->out_own[o])[i], d = fabs(a - b);
		diff = d <= diff ? diff : (d == d ? d : INFINITY);
		scale = fmax(scale, fabs(b));
	}
	free(slice);
	return scale > 0 ? diff / scale : diff;
}

/* Free what padding_prepare made. */
static void
padding_run_free(struct padding_run *r)
{
	int k;

	for (k = 0; k < MODEL_MAX_IO; k++) {
		free(r->in_own[k]);
		free(r->in_big[k]);
		free(r->out_own[k]);
		free(r->out_big[k]);
	}
}

/* Run both and compare every output; *worst and *name get the largest error, *cause why it cannot be compared. */
static int
padding_compare(struct padding_run *r, int64_t len, int64_t plen, double *worst, const char **name, char **cause)
{
	model_t *m = r->m;
	double e;
	int o, d;

	if (padding_prepare(r, len, plen, cause) != 0 || padding_runs(r, cause) != 0)
		return -1;
	*worst = 0;
	for (o = 0; o < m->noutputs; o++) {
		for (d = 0; d < m->outputs[o].ndims; d++)
			if (r->lown.dims[o][d] > r->lbig.dims[o][d])
				return error_set(cause, "output '%s' dim %d is longer unpadded than padded", m->outputs[o].name,
				    d + 1);
		if (!((e = padding_output_error(r, o)) <= *worst)) {
			*worst = e;
			*name = m->outputs[o].name;
		}
	}
	return 0;
}

/* Take the verdict of an earlier load's check of the same files on the same kind of device (on: 1 or 0). */
static int
padding_recall(model_t *m, int on)
{
	m->padding.on = on;
	if (on)
		LOG_INFO("model '%s' version %lld: requests of different lengths share batches, padded to %d buckets up to "
		    "%lld (as the check at an earlier load of the same files and settings found)", m->name,
		    (long long)m->version, m->padding.nbuckets,
		    (long long)(m->padding.nbuckets > 0 ? m->padding.buckets[m->padding.nbuckets - 1] : 0));
	else
		LOG_WARN("model '%s' version %lld: no batching across lengths (the check at an earlier load of the same "
		    "files and settings found that padding changes answers): requests batch only with others of the "
		    "same length", m->name, (long long)m->version);
	return 0;
}

/* Decide m's padding at load: resolve or detect it, then check (or recall: known 0 or 1) that padding leaves a request's answer alone. */
int
model_padding_check(model_t *m, int known, char **cause)
{
	struct padding_run r = { .m = m, .rng = 0x9e3779b97f4a7c15ULL };
	double tol = m->precision == GRAPH_PRECISION_FP32 ? PADDING_TOL_FP32 :
	    m->precision == GRAPH_PRECISION_BF16 ? PADDING_TOL_BF16 : PADDING_TOL_REDUCED, worst = 0;
	const char *name = "";
	char *why = NULL;
	int64_t plen, len;
	int rc;

	m->padding.on = 0;
	/* Each request of a BYTES model runs alone, and a padded element (empty text) is no number a Cast reads. */
	if (m->strings && m->padding.mode == MODEL_PADDING_DECLARED)
		return error_set(cause, "model '%s': \"padding\" does not apply to a model with BYTES tensors (its "
		    "requests never share a batch)", m->name);
	if (m->strings)
		return 0;
	if ((rc = padding_resolve(m, cause)) <= 0)
		return rc == 0 ? 0 : error_prefix(cause, "model '%s'", m->name);
	plen = m->var_max[m->padding.var] < PADDING_CHECK_MAX_LEN ? m->var_max[m->padding.var] : PADDING_CHECK_MAX_LEN;
	len = plen / 2 + (plen > 2);
	if (plen < 2)
		return 0;
	if (known >= 0)
		return padding_recall(m, known);
	rc = padding_compare(&r, len, plen, &worst, &name, &why);
	padding_run_free(&r);
	if (rc != 0 || !(worst <= tol)) {
		if (rc == 0 && xasprintf(&why, "output '%s' of a row %lld long padded to %lld differs from the row alone by %.3g "
			    "relative, more than %g", name, (long long)len, (long long)plen, worst, tol) < 0)
			why = NULL;
		LOG_WARN("model '%s' version %lld: no batching across lengths (%s): requests batch only with others of "
		    "the same length", m->name, (long long)m->version, why ? why : "out of memory");
		free(why);
		return 0;
	}
	m->padding.on = 1;
	LOG_INFO("model '%s' version %lld: requests of different lengths share batches, padded to %d buckets up to %lld "
	    "(a row %lld long padded to %lld agreed with itself alone within %.3g)", m->name, (long long)m->version,
	    m->padding.nbuckets, (long long)(m->padding.nbuckets > 0 ? m->padding.buckets[m->padding.nbuckets - 1] : plen),
	    (long long)len, (long long)plen, worst);
	return 0;
}
