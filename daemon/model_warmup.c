/* model_warmup.c: runs of a model at load: its warm-up requests, and the check of a reduced precision against FP32. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"
#include "model_warmup.h"

/* Largest sample file read (one row of every input). */
#define WARMUP_MAX_FILE ((size_t)1 << 30)

/* What one warm-up run needs: the context, its stream and host buffers for the largest batch of the entry. */
struct warmup_run {
	model_t *m;
	model_exec_t *x;
	device_stream_t *s;
	void *in[MODEL_MAX_IO];		/* host copies of the inputs, rows packed */
	void *out;			/* host copy of one output at a time */
	uint64_t rng;
};

/* Next xorshift64 value. */
static uint64_t
warmup_next(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Fill n elements of dtype dt at p: floating uniform in [0, 1), others 0 or 1 (STRING: the text "0" or "1"). */
static void
warmup_fill_random(void *p, size_t n, enum graph_dtype dt, uint64_t *state)
{
	size_t i, size = graph_dtype_size(dt);

	for (i = 0; i < n; i++) {
		uint64_t r = warmup_next(state);
		if (dt == GRAPH_DT_F32)
			((float *)p)[i] = (float)(r >> 40) / (float)(1 << 24);
		else if (dt == GRAPH_DT_F16)
			((uint16_t *)p)[i] = (uint16_t)(r % 0x3c00);	/* every half in [0, 1): bit patterns below 1.0 */
		else if (dt == GRAPH_DT_STRING)
			graph_string_put((char *)p + i * size, r & 1 ? "1" : "0", 1);
		else {
			memset((char *)p + i * size, 0, size);
			((unsigned char *)p)[i * size] = (unsigned char)(r & 1);	/* little-endian 0 or 1 */
		}
	}
}

/* Read dir/name, which must hold exactly want bytes, into a new buffer. */
static int
warmup_read_file(const char *dir, const char *name, size_t want, void **out, char **cause)
{
	struct stat st;
	char *path;
	FILE *f = NULL;
	int rc = -1;

	*out = NULL;
	if (asprintf(&path, "%s/%s", dir, name) == -1)
		return error_set(cause, "out of memory");
	if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &st) != 0)
		error_set(cause, "%s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode) || (size_t)st.st_size != want)
		error_set(cause, "%s: %lld bytes, but one row of every input at its maximum dims is %zu bytes", path,
		    (long long)st.st_size, want);
	else if ((*out = malloc(want > 0 ? want : 1)) == NULL)
		error_set(cause, "out of memory");
	else if (fread(*out, 1, want, f) != want)
		error_set(cause, "%s: short read", path);
	else
		rc = 0;
	if (f != NULL)
		fclose(f);
	if (rc != 0) {
		free(*out);
		*out = NULL;
	}
	free(path);
	return rc;
}

/* Fill every input of rows rows (shape sh) with the entry's data into r->in. */
static int
warmup_fill(struct warmup_run *r, const struct model_warmup_entry *w, const struct model_shape *sh, char **cause)
{
	size_t row[MODEL_MAX_IO], total = 0, off = 0;
	void *sample = NULL;
	int i, k;

	for (i = 0; i < r->m->ninputs; i++)
		total += row[i] = model_input_row_bytes(r->m, i, sh);
	if (w->data == MODEL_WARMUP_FILE && r->m->strings)
		return error_set(cause, "warmup from a file does not take BYTES inputs (use zero_data or random_data)");
	if (w->data == MODEL_WARMUP_FILE && warmup_read_file(r->m->dir, w->file, total, &sample, cause) != 0)
		return -1;
	for (i = 0; i < r->m->ninputs; i++) {
		enum graph_dtype dt = r->m->inputs[i].dtype;
		for (k = 0; k < sh->rows; k++) {
			char *dst = (char *)r->in[i] + (size_t)k * row[i];
			if (w->data == MODEL_WARMUP_ZEROS && dt == GRAPH_DT_STRING)
				for (size_t e = 0; e < row[i] / GRAPH_STRING_SLOT; e++)
					graph_string_put(dst + e * GRAPH_STRING_SLOT, "0", 1);	/* zero as text: Casts parse it */
			else if (w->data == MODEL_WARMUP_ZEROS)
				memset(dst, 0, row[i]);
			else if (w->data == MODEL_WARMUP_RANDOM)
				warmup_fill_random(dst, row[i] / graph_dtype_size(dt), dt, &r->rng);
			else
				memcpy(dst, (char *)sample + off, row[i]);
		}
		off += row[i];
	}
	free(sample);
	return 0;
}

/* Index of the first element of n at p (dtype dt) that is not finite, or -1. */
static long long
warmup_first_nonfinite(const void *p, size_t n, enum graph_dtype dt)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (dt == GRAPH_DT_F32) {
			float v = ((const float *)p)[i];
			if (v != v || v - v != 0.0f)
				return (long long)i;
		} else if (dt == GRAPH_DT_F16 && (((const uint16_t *)p)[i] & 0x7c00) == 0x7c00)
			return (long long)i;
	}
	return -1;
}

/* Read every output of the run back and check the floating ones are finite. */
static int
warmup_check_outputs(struct warmup_run *r, const struct model_warmup_entry *w, const struct model_shape *sh,
    char **cause)
{
	long long bad;
	size_t bytes;
	int o;

	for (o = 0; o < r->m->noutputs; o++) {
		const struct model_io *io = &r->m->outputs[o];
		bytes = model_output_max_row_bytes(r->m, o) * (size_t)sh->rows;	/* warm-up runs at the largest dims */
		if (device_copy_d2h(r->s, r->out, model_exec_output(r->x, o), bytes, cause) != 0 ||
		    device_stream_sync(r->s, cause) != 0)
			return error_prefix(cause, "reading output '%s'", io->name);
		if ((bad = warmup_first_nonfinite(r->out, bytes / graph_dtype_size(io->dtype), io->dtype)) < 0)
			continue;
		if (w->data != MODEL_WARMUP_ZEROS)
			return error_set(cause, "output '%s' element %lld is not finite", io->name, bad);
		LOG_WARN("model '%s' version %lld: warm-up with zeros at batch size %d: output '%s' element %lld is not "
		    "finite (allowed for zeros)", r->m->name, (long long)r->m->version, sh->rows, io->name, bad);
	}
	return 0;
}

/* Run rows rows of entry w: fill, copy in, run, read back, check. */
static int
warmup_run_one(struct warmup_run *r, const struct model_warmup_entry *w, int rows, char **cause)
{
	struct model_shape sh;
	int i;

	model_shape_max(r->m, rows, &sh);
	if (warmup_fill(r, w, &sh, cause) != 0)
		return -1;
	for (i = 0; i < r->m->ninputs; i++)
		if (device_copy_h2d(r->s, model_exec_input(r->x, i), r->in[i],
		    model_input_row_bytes(r->m, i, &sh) * (size_t)rows, cause) != 0)
			return error_prefix(cause, "input '%s'", r->m->inputs[i].name);
	if (model_exec_run(r->x, &sh, r->s, cause) != 0 || device_stream_sync(r->s, cause) != 0)
		return -1;
	return warmup_check_outputs(r, w, &sh, cause);
}

/* Host buffers for the largest batch any entry runs. */
static int
warmup_buffers(struct warmup_run *r, char **cause)
{
	struct model_shape sh;
	size_t most = 0, bytes;
	int i;

	model_shape_max(r->m, model_max_rows(r->m), &sh);
	for (i = 0; i < r->m->ninputs; i++)
		if ((r->in[i] = malloc(model_input_row_bytes(r->m, i, &sh) * (size_t)sh.rows + 1)) == NULL)
			return error_set(cause, "out of memory");
	for (i = 0; i < r->m->noutputs; i++)
		if ((bytes = model_output_max_row_bytes(r->m, i) * (size_t)sh.rows) > most)
			most = bytes;
	if ((r->out = malloc(most + 1)) == NULL)
		return error_set(cause, "out of memory");
	return 0;
}

/* Every entry, every batch size. */
static int
warmup_entries(struct warmup_run *r, char **cause)
{
	static const char *const names[] = { "zeros", "random", "file" };
	int k, j;

	for (k = 0; k < r->m->warmup.count; k++) {
		const struct model_warmup_entry *w = &r->m->warmup.entries[k];
		for (j = 0; j < w->nsizes; j++)
			if (warmup_run_one(r, w, w->batch_sizes[j], cause) != 0)
				return error_prefix(cause, "warmup[%d] (batch size %d, %s%s%s)", k, w->batch_sizes[j],
				    names[w->data], w->data == MODEL_WARMUP_FILE ? " " : "",
				    w->data == MODEL_WARMUP_FILE ? w->file : "");
	}
	return 0;
}

/* Run the model's warm-up requests in a context of their own. */
int
model_warmup(model_t *m, char **cause)
{
	struct warmup_run r = { .m = m, .rng = 0x9e3779b97f4a7c15ULL };
	int rc, i;

	if (m->warmup.count == 0)
		return 0;
	rc = warmup_buffers(&r, cause);
	if (rc == 0)
		rc = model_exec_create_lazy(m, &r.x, cause);
	if (rc == 0)
		rc = device_stream_create(m->dev, DEVICE_STREAM_COMPUTE, &r.s, cause);
	if (rc == 0)
		rc = warmup_entries(&r, cause);
	if (r.s != NULL)
		device_stream_destroy(r.s);
	model_exec_free(r.x);
	for (i = 0; i < MODEL_MAX_IO; i++)
		free(r.in[i]);
	free(r.out);
	if (rc != 0)
		return error_prefix(cause, "model '%s' version %lld: warm-up", m->name, (long long)m->version);
	LOG_INFO("model '%s' version %lld: warm-up done (%d entries)", m->name, (long long)m->version, m->warmup.count);
	return 0;
}

/* One row of every input at the largest dims into r->in: the first sample file "warmup" lists, else seeded random. */
static int
precision_inputs(struct warmup_run *r, struct model_shape *sh, char **cause)
{
	const struct model_warmup_entry random_data = { .data = MODEL_WARMUP_RANDOM }, *w = &random_data;
	int k;

	for (k = 0; k < r->m->warmup.count; k++)
		if (r->m->warmup.entries[k].data == MODEL_WARMUP_FILE) {
			w = &r->m->warmup.entries[k];
			break;
		}
	model_shape_max(r->m, 1, sh);
	return warmup_fill(r, w, sh, cause);
}

/* Run m on one row (inputs in, shape sh) in a context of its own; out[o] gets each output, malloc'ed. */
static int
precision_run(model_t *m, void *const *in, const struct model_shape *sh, void **out, char **cause)
{
	model_exec_t *x = NULL;
	device_stream_t *s = NULL;
	int i, rc;

	rc = model_exec_create_lazy(m, &x, cause);
	if (rc == 0)
		rc = device_stream_create(m->dev, DEVICE_STREAM_COMPUTE, &s, cause);
	for (i = 0; rc == 0 && i < m->ninputs; i++)
		rc = device_copy_h2d(s, model_exec_input(x, i), in[i], model_input_row_bytes(m, i, sh), cause);
	if (rc == 0)
		rc = model_exec_run(x, sh, s, cause);
	for (i = 0; rc == 0 && i < m->noutputs; i++) {
		size_t bytes = model_output_max_row_bytes(m, i);	/* one row at the largest dims */
		if ((out[i] = xmalloc(bytes + 1)) == NULL)
			rc = error_set(cause, "out of memory");
		else
			rc = device_copy_d2h(s, out[i], model_exec_output(x, i), bytes, cause);
	}
	if (rc == 0)
		rc = device_stream_sync(s, cause);
	if (s != NULL)
		device_stream_destroy(s);
	model_exec_free(x);
	return rc;
}

/* Largest relative error of FP32 output y against y32 (n floats): max |y - y32| / max |y32|, or max |y|. */
static double
precision_error(const float *y, const float *y32, size_t n)
{
	double diff = 0, scale = 0, mag = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d = fabs((double)y[i] - (double)y32[i]);
		if (!(d <= diff))	/* NaN counts as the largest error */
			diff = d == d ? d : INFINITY;
		scale = fmax(scale, fabs((double)y32[i]));
		mag = fmax(mag, fabs((double)y[i]));
	}
	return scale > 0 ? diff / scale : mag;
}

/* Compare m with ref (the same model at FP32 on the CPU) on one row; the worst output's error and name. */
static int
precision_compare(model_t *m, model_t *ref, double *worst, const char **name, char **cause)
{
	struct warmup_run r = { .m = m, .rng = 0x9e3779b97f4a7c15ULL };
	void *y[MODEL_MAX_IO] = { 0 }, *y32[MODEL_MAX_IO] = { 0 };
	struct model_shape sh, checked;
	int o, rc;

	*worst = 0;
	*name = NULL;
	rc = warmup_buffers(&r, cause);
	if (rc == 0)
		rc = precision_inputs(&r, &sh, cause);
	if (rc == 0 && model_shape_normalise(ref, &sh, &checked, cause) != 0)
		rc = error_prefix(cause, "the FP32 reference takes other dims");
	if (rc == 0)
		rc = precision_run(m, r.in, &sh, y, cause);
	if (rc == 0)
		rc = precision_run(ref, r.in, &sh, y32, cause);
	for (o = 0; rc == 0 && o < m->noutputs; o++) {
		double e;
		if (m->outputs[o].dtype != GRAPH_DT_F32)
			continue;
		e = precision_error(y[o], y32[o], model_output_max_row_bytes(m, o) / sizeof(float));
		if (*name == NULL || !(e <= *worst)) {
			*worst = e;
			*name = m->outputs[o].name;
		}
	}
	for (o = 0; o < MODEL_MAX_IO; o++) {
		free(y[o]);
		free(y32[o]);
		free(r.in[o]);
	}
	free(r.out);
	return rc;
}

/*
 * The configuration of the FP32 reference: the load's own override, with one
 * row per batch (the arena of a single row), default batching and no warm-up
 * of its own.
 */
static int
precision_override(const model_t *m, char **out, char **cause)
{
	json_t *o = m->config_override != NULL ? json_loads(m->config_override, 0, NULL) : json_object();

	*out = NULL;
	if (o == NULL || !json_is_object(o) ||
	    json_object_set_new(o, "max_batch_size", json_integer(m->max_batch_size > 0 ? 1 : 0)) != 0 ||
	    json_object_set_new(o, "warmup", json_array()) != 0 ||
	    json_object_set_new(o, "dynamic_batching", json_object()) != 0 || (*out = json_dumps(o, JSON_COMPACT)) == NULL) {
		json_decref(o);
		return error_set(cause, "out of memory");
	}
	json_decref(o);
	return 0;
}

/* Keep the precision check's figure err (output name) in m and log it (recalled: from an earlier load's check). */
static void
precision_report(model_t *m, double err, const char *name, int recalled)
{
	double warn = m->precision == GRAPH_PRECISION_BF16 ? MODEL_PRECISION_WARN_BF16 : MODEL_PRECISION_WARN;

	m->precision_error = err;
	LOG_AT(err > warn ? LOG_LEVEL_WARN : LOG_LEVEL_INFO,
	    "model '%s' version %lld: at %s its outputs differ from FP32 by %.3g relative (output '%s', one row "
	    "at the largest dims%s)%s%s", m->name, (long long)m->version, graph_precision_name(m->precision),
	    err, name, recalled ? ", as the check at an earlier load of the same files and settings measured" : "",
	    device_is_gpu(m->dev) ? "" : " (the CPU backend computes FP32 at every precision)",
	    err > warn ? ": check that the model is meant to run at this precision "
	    "(values beyond or below its range, e.g. underflowing to zeros)" : "");
}

/* Take an earlier load's precision check figure for the same files instead of measuring again (model_verdict.h). */
void
model_precision_recall(model_t *m, double err, const char *output)
{
	m->precision_error = -1;
	if (m->graph == NULL || m->precision == GRAPH_PRECISION_FP32)
		return;
	if (err >= 0)
		precision_report(m, err, output, 1);
	else
		LOG_WARN("model '%s' version %lld: no precision check (none could be made at an earlier load of the same "
		    "files and settings): its %s answers are not compared with FP32", m->name, (long long)m->version,
		    graph_precision_name(m->precision));
}

/* Measure m at its reduced precision against itself at FP32 on the CPU; log, and keep the figure in m (and its output's name in output). */
void
model_precision_check(model_t *m, char *output, size_t len)
{
	device_t *cpu = NULL;
	model_t *ref = NULL;
	const char *name = NULL;
	char *cause = NULL, *override = NULL;
	double err;

	m->precision_error = -1;
	if (len > 0)
		output[0] = '\0';
	if (m->graph == NULL || m->precision == GRAPH_PRECISION_FP32)
		return;
	if (precision_override(m, &override, &cause) != 0 || device_open("cpu", &cpu, &cause) != 0 ||
	    model_load_version(cpu, m->dir, m->version_dir, m->version, override, &ref, &cause) != 0 ||
	    precision_compare(m, ref, &err, &name, &cause) != 0) {
		LOG_WARN("model '%s' version %lld: no precision check (%s): its %s answers are not compared with FP32",
		    m->name, (long long)m->version, cause ? cause : "out of memory", graph_precision_name(m->precision));
	} else if (name != NULL) {
		precision_report(m, err, name, 0);
		snprintf(output, len, "%s", name);
	}
	free(cause);
	free(override);
	model_free(ref);
	if (cpu != NULL)
		device_close(cpu);
}
