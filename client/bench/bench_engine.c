/*
 * bench_engine.c: inferd-bench-engine --engine=DIR, the backend alone: one model run
 * in this process on --device, batch after batch, no IPC, no HTTP, no
 * batcher.  This is the figure to put beside PyTorch's raw model time
 * (client/bench/torch_peer.py): same model, same batch size, same machine.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "bench.h"
#include "bench_profile.h"
#include "cpu_kernels.h"
#include "error.h"
#include "model.h"

/* Batch sizes captured as graphs: the daemon's default cuda_graph_max_batch. */
#define ENGINE_GRAPH_ROWS 256

/* Fill h with n elements of dtype dt: floats in [0, 1), integers 0 and 1 (valid token ids and indices). */
static void
engine_fill_host(void *h, enum graph_dtype dt, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (dt) {
		case GRAPH_DT_F32: ((float *)h)[i] = (float)(i % 255) / 255.0f; break;
		case GRAPH_DT_I64: ((int64_t *)h)[i] = (int64_t)(i % 2); break;
		case GRAPH_DT_I32: ((int32_t *)h)[i] = (int32_t)(i % 2); break;
		case GRAPH_DT_F16: ((uint16_t *)h)[i] = 0x3800; break;	/* 0.5 */
		default: ((uint8_t *)h)[i] = (uint8_t)(i % 2); break;
		}
	}
}

/* The batch's inputs in host memory, made once: the same values every run (they do not change the time). */
struct engine_inputs {
	int n;
	void *host[MODEL_MAX_IO];
	size_t bytes[MODEL_MAX_IO];
};

/* Make the host copy of every input at the maximum dims for rows rows. */
static int
engine_inputs_make(const model_t *m, int rows, struct engine_inputs *in, char **cause)
{
	struct model_shape sh;
	int i;

	model_shape_max(m, rows, &sh);
	for (i = 0; i < m->ninputs; i++) {
		in->bytes[i] = (size_t)rows * model_input_row_bytes(m, i, &sh);
		if ((in->host[i] = malloc(in->bytes[i] ? in->bytes[i] : 1)) == NULL)
			return error_set(cause, "out of memory");
		in->n = i + 1;
		engine_fill_host(in->host[i], m->inputs[i].dtype, in->bytes[i] / graph_dtype_size(m->inputs[i].dtype));
	}
	return 0;
}

/* Free the host copies. */
static void
engine_inputs_free(struct engine_inputs *in)
{
	int i;

	for (i = 0; i < in->n; i++)
		free(in->host[i]);
	in->n = 0;
}

/*
 * Copy the inputs in before each batch, untimed, as the daemon does: the
 * arena reuses an input's bytes once its last reader has run, so a second run
 * over the same arena would read whatever a later node left there.
 */
static int
engine_copy_in(model_exec_t *x, const struct engine_inputs *in, device_stream_t *s, char **cause)
{
	int i;

	for (i = 0; i < in->n; i++)
		if (device_copy_h2d(s, model_exec_input(x, i), in->host[i], in->bytes[i], cause) != 0)
			return -1;
	return device_stream_sync(s, cause);
}

/* Run batches for seconds, timing each run + sync into h when given. */
static int
engine_loop(model_exec_t *x, const struct engine_inputs *in, device_stream_t *s, int rows, double seconds,
    struct bench_hist *h, uint64_t *batches, char **cause)
{
	uint64_t start = bench_now_ns(), t0;

	*batches = 0;
	while ((double)(bench_now_ns() - start) < seconds * 1e9) {
		if (engine_copy_in(x, in, s, cause) != 0)
			return -1;
		t0 = bench_now_ns();
		if (model_exec_run_rows(x, rows, s, cause) != 0 || device_stream_sync(s, cause) != 0)
			return -1;
		if (h != NULL)
			bench_hist_add(h, bench_now_ns() - t0);
		(*batches)++;
	}
	return 0;
}

/*
 * Profile the plan of set->rows rows set->profile_reps times into prof, the
 * inputs copied in before each as for a timed run.
 */
static int
engine_profile(model_exec_t *x, const struct engine_inputs *in, device_stream_t *s,
    const struct bench_settings *set, struct bench_profile *prof, char **cause)
{
	struct device_step_time *t;
	size_t n;
	int r, rows;

	for (r = 0; r < set->profile_reps; r++) {
		if (engine_copy_in(x, in, s, cause) != 0 || model_exec_profile(x, set->rows, s, &t, &n, &rows, cause) != 0)
			return -1;
		if (r == 0)
			bench_profile_init(prof, set->profile_reps, rows);
		if (bench_profile_add(prof, t, n, cause) != 0)
			return -1;
	}
	bench_profile_finish(prof);
	return 0;
}

/* Print the result as text or one JSON object (with "profile" when prof has one). */
static int
engine_report(const struct bench_settings *set, const device_t *dev, const model_t *m,
    const struct bench_hist *h, uint64_t batches, const struct bench_profile *prof, char **cause)
{
	double rows_per_s = (double)batches * set->rows / set->duration_s;
	char *pj = NULL;

	if (set->json) {
		if (prof->taken > 0 && (pj = bench_profile_json(prof)) == NULL)
			return error_set(cause, "out of memory writing the profile");
		printf("{\"mode\":\"engine\",\"label\":\"%s\",\"device\":\"%s\",\"model\":\"%s\",\"rows\":%d,"
		    "\"duration_s\":%g,\"batches\":%llu,\"rows_per_s\":%.1f,"
		    "\"batch_us\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"mean\":%.2f},\"layout_ns\":%.1f%s%s}\n",
		    set->label ? set->label : "", device_name(dev), m->name, set->rows, set->duration_s,
		    (unsigned long long)batches, rows_per_s, bench_hist_quantile(h, 0.5) / 1e3,
		    bench_hist_quantile(h, 0.9) / 1e3, bench_hist_quantile(h, 0.99) / 1e3,
		    h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0.0, prof->layout_ns, pj ? ",\"profile\":" : "",
		    pj ? pj : "");
		free(pj);
		return 0;
	}
	printf("engine: %s on %s (%d threads), %d rows a batch\n", m->name, device_name(dev),
	    device_is_gpu(dev) ? 0 : cpu_kernels_threads(), set->rows);
	printf("  %llu batches in %.1f s: %.0f rows/s, batch p50 %.1f us, p99 %.1f us\n",
	    (unsigned long long)batches, set->duration_s, rows_per_s,
	    bench_hist_quantile(h, 0.5) / 1e3, bench_hist_quantile(h, 0.99) / 1e3);
	printf("  a request's output layout (model_output_layout): %.0f ns\n", prof->layout_ns);
	if (prof->taken > 0)
		bench_profile_print(stdout, prof);
	return 0;
}

/*
 * Nanoseconds one request's output layout takes (model_output_layout at the
 * largest shape, what each door computes once per request), the mean of
 * 0.2 s of calls.
 */
static double
engine_layout_ns(const model_t *m, int rows)
{
	struct model_shape sh;
	struct model_layout lay;
	uint64_t t0 = bench_now_ns(), t = t0, n = 0;

	model_shape_max(m, rows, &sh);
	while (t - t0 < 200000000ull) {
		if (model_output_layout(m, &sh, &lay, NULL) != 0)
			return -1;
		if (++n % 256 == 0)
			t = bench_now_ns();
	}
	return (double)(t - t0) / (double)n;
}

/* Load, capture graphs where the backend has them, warm up, measure. */
static int
engine_measure(const struct bench_settings *set, device_t *dev, char **cause)
{
	struct bench_hist *h = malloc(sizeof *h);
	device_stream_t *s = NULL;
	model_exec_t *x = NULL;
	model_t *m = NULL;
	struct engine_inputs in = { 0 };
	struct bench_profile prof = { 0 };
	uint64_t batches;
	int rc = -1;

	if (h == NULL)
		return error_set(cause, "out of memory");
	bench_hist_init(h);
	if (model_load(dev, set->engine_dir, &m, cause) != 0 || model_exec_create(m, &x, cause) != 0 ||
	    device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, cause) != 0)
		goto out;
	if (set->rows > (m->max_batch_size > 0 ? m->max_batch_size : 1)) {
		error_set(cause, "--rows=%d but model %s takes at most %d", set->rows, m->name,
		    m->max_batch_size > 0 ? m->max_batch_size : 1);
		goto out;
	}
	/* Capture as the daemon does by default (every size up to 256), so sizes that run faster padded are. */
	if (model_exec_capture(x, s, ENGINE_GRAPH_ROWS, cause) != 0 || engine_inputs_make(m, set->rows, &in, cause) != 0 ||
	    engine_loop(x, &in, s, set->rows, set->warmup_s, NULL, &batches, cause) != 0 ||
	    engine_loop(x, &in, s, set->rows, set->duration_s, h, &batches, cause) != 0)
		goto out;
	if (set->profile_reps > 0 && engine_profile(x, &in, s, set, &prof, cause) != 0)
		goto out;
	/* The whole run's time as measured normally (graph launch + sync), beside the steps' sum. */
	prof.whole_us = bench_hist_quantile(h, 0.5) / 1e3;
	prof.layout_ns = engine_layout_ns(m, set->rows);
	rc = engine_report(set, dev, m, h, batches, &prof, cause);
out:
	bench_profile_free(&prof);
	engine_inputs_free(&in);
	device_stream_destroy(s);
	model_exec_free(x);
	model_free(m);
	free(h);
	return rc;
}

/* The CPU backend's threads as the daemon's cpu_threads sets them: $INFERD_CPU_THREADS, else every online core. */
static void
engine_cpu_threads(device_t *dev)
{
	const char *env = getenv("INFERD_CPU_THREADS");
	long n = env != NULL ? strtol(env, NULL, 10) : 0;

	if (n < 1)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	device_set_threads(dev, n > 0 && n <= 1024 ? (int)n : 1);
}

/* --engine: returns the exit status. */
int
bench_engine(const struct bench_settings *set)
{
	device_t *dev;
	char *cause = NULL;
	int rc;

	if (device_open(set->engine_device, &dev, &cause) != 0) {
		fprintf(stderr, "inferd-bench-engine: %s\n", cause);
		free(cause);
		return 1;
	}
	if (!device_is_gpu(dev))
		engine_cpu_threads(dev);
	rc = engine_measure(set, dev, &cause);
	if (rc != 0) {
		fprintf(stderr, "inferd-bench-engine: --engine: %s\n", cause);
		free(cause);
	}
	device_close(dev);
	return rc == 0 ? 0 : 1;
}
