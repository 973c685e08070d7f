/*
 * onnx_engine_run.c: run the cases of an onnx_reference.py manifest through the engine
 * (model_load of the manifest's directory, model_exec_create, model_exec_run on the CPU
 * backend) and compare every output with onnxruntime's: |got - want| <= atol + rtol |want|,
 * atol = 1e-5 max|want|, rtol = 1e-4.
 *
 *     onnx_engine_run MANIFEST.json...      exit 0 all match, 1 otherwise
 *     onnx_engine_run --dump MANIFEST.json...
 *
 * --dump compares nothing: each case's outputs are written beside its inputs
 * as <case dir>/<output>.inferd.bin (raw elements, as the reference files),
 * for a script to compare with its own reference (client/bench/gpu_*.py).
 * The device is INFERD_TEST_DEVICE's (default cpu); either way no device memory
 * may be allocated after model_exec_create.
 */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

/* Bytes of one row of output o at shape s (0 when the model refuses s). */
static size_t
output_row_bytes(const model_t *m, int o, const struct model_shape *s)
{
	struct model_layout lay;

	return model_output_layout(m, s, &lay, NULL) == 0 ? lay.row_bytes[o] : 0;
}

#define ATOL_SCALE 1e-5
#define RTOL 1e-4

static int dump;		/* --dump: write the outputs instead of comparing them */

/* Read a whole file of exactly want bytes; NULL (and a failure) otherwise. */
static void *
read_bin(const char *dir, const char *name, size_t want)
{
	char path[4096];
	FILE *f;
	void *buf;
	long len;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "rb");
	CHECK(f != NULL, "cannot open %s", path);
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(want ? want : 1);
	CHECK(len == (long)want, "%s has %ld bytes, the engine expects %zu", path, len, want);
	if (buf == NULL || len != (long)want || fread(buf, 1, want, f) != want) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Write bytes to dir/sub/name.inferd.bin. */
static void
write_bin(const char *dir, const char *sub, const char *name, const void *buf, size_t bytes)
{
	char path[4096];
	FILE *f;

	if ((size_t)snprintf(path, sizeof path, "%s/%s/%s.inferd.bin", dir, sub ? sub : ".", name) >= sizeof path) {
		CHECK(0, "%s/%s: path too long", dir, name);
		return;
	}
	f = fopen(path, "wb");
	CHECK(f != NULL, "cannot create %s", path);
	if (f == NULL)
		return;
	CHECK(fwrite(buf, 1, bytes, f) == bytes, "writing %s", path);
	CHECK(fclose(f) == 0, "closing %s", path);
}

/* Element i of a tensor of dtype dt as a double. */
static double
elem(const void *p, enum graph_dtype dt, size_t i)
{
	switch (dt) {
	case GRAPH_DT_F32: return ((const float *)p)[i];
	case GRAPH_DT_I64: return (double)((const int64_t *)p)[i];
	case GRAPH_DT_I32: return ((const int32_t *)p)[i];
	default: return ((const uint8_t *)p)[i];
	}
}

/* Compare n elements; returns the worst |got - want| / (atol + rtol |want|). */
static double
compare(const void *got, const void *want, enum graph_dtype dt, size_t n)
{
	double maxw = 0, worst = 0, atol;
	size_t i;

	for (i = 0; i < n; i++)
		maxw = fmax(maxw, fabs(elem(want, dt, i)));
	atol = ATOL_SCALE * maxw;
	for (i = 0; i < n; i++) {
		double g = elem(got, dt, i), w = elem(want, dt, i), r;
		r = fabs(g - w) / (atol + RTOL * fabs(w) + 1e-30);
		if (!(r <= worst))	/* NaN counts as the worst */
			worst = isnan(r) ? INFINITY : r;
	}
	return worst;
}

/* Copy a case's inputs into the context and fill shape; -1 on a mismatch. */
static int
case_inputs(model_exec_t *x, json_t *c, const char *dir, struct model_shape *s, device_stream_t *st)
{
	const model_t *m = x->model;
	json_t *in;
	size_t k, d;
	char *cause = NULL;

	memset(s, 0, sizeof *s);
	json_array_foreach(json_object_get(c, "inputs"), k, in) {
		int i = model_input_index(m, json_string_value(json_object_get(in, "name")));
		json_t *shape = json_object_get(in, "shape");
		size_t bytes;
		void *buf;

		CHECK(i >= 0, "input %s unknown to the engine", json_string_value(json_object_get(in, "name")));
		if (i < 0)
			return -1;
		s->rows = (int)json_integer_value(json_array_get(shape, 0));
		for (d = 1; d < json_array_size(shape); d++)
			s->dims[i][d - 1] = json_integer_value(json_array_get(shape, d));
		bytes = (size_t)s->rows * model_input_row_bytes(m, i, s);
		if ((buf = read_bin(dir, json_string_value(json_object_get(in, "file")), bytes)) == NULL)
			return -1;
		CHECK(device_copy_h2d(st, model_exec_input(x, i), buf, bytes, &cause) == 0, "%s", cause);
		free(buf);
	}
	return 0;
}

/* Compare a case's outputs with onnxruntime's. */
static void
case_outputs(model_exec_t *x, json_t *c, const char *dir, const struct model_shape *s,
    device_stream_t *st, const char *label)
{
	const model_t *m = x->model;
	json_t *out;
	size_t k;
	char *cause = NULL;

	json_array_foreach(json_object_get(c, "outputs"), k, out) {
		int o = model_output_index(m, json_string_value(json_object_get(out, "name")));
		size_t bytes, n;
		void *want = NULL, *got;
		double worst;

		CHECK(o >= 0, "output %s unknown to the engine", json_string_value(json_object_get(out, "name")));
		if (o < 0)
			continue;
		bytes = (size_t)s->rows * output_row_bytes(m, o, s);
		n = bytes / graph_dtype_size(m->outputs[o].dtype);
		CHECK(json_integer_value(json_array_get(json_object_get(out, "shape"), 0)) == s->rows, "rows");
		if (!dump && (want = read_bin(dir, json_string_value(json_object_get(out, "ort_file")), bytes)) == NULL)
			continue;
		got = malloc(bytes ? bytes : 1);
		CHECK(device_copy_d2h(st, got, model_exec_output(x, o), bytes, &cause) == 0 &&
		    device_stream_sync(st, &cause) == 0, "%s", cause);
		if (dump) {
			write_bin(dir, json_string_value(json_object_get(c, "dir")), m->outputs[o].name, got, bytes);
			free(got);
			continue;
		}
		worst = compare(got, want, m->outputs[o].dtype, n);
		printf("%s output %s: %zu values, worst error %.3f of the tolerance\n", label, m->outputs[o].name, n, worst);
		CHECK(worst <= 1.0, "%s output %s differs from onnxruntime (%.3g x tolerance)", label, m->outputs[o].name, worst);
		free(want);
		free(got);
	}
}

/* Load the manifest's model through the engine and run every case. */
static void
run_manifest(device_t *dev, const char *path)
{
	json_error_t jerr;
	json_t *man = json_load_file(path, 0, &jerr), *c;
	char dir[4096], *cause = NULL, label[256];
	device_stream_t *st = NULL;
	model_exec_t *x = NULL;
	model_t *m = NULL;
	struct model_shape s;
	uint64_t allocs;
	size_t k;
	int pass;

	CHECK(man != NULL, "%s: %s", path, jerr.text);
	if (man == NULL)
		return;
	snprintf(dir, sizeof dir, "%s", path);
	*strrchr(dir, '/') = '\0';
	CHECK(model_load(dev, dir, &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(model_exec_create(m, &x, &cause) == 0, "%s", cause);
	if (x != NULL)
		CHECK(device_stream_create(dev, DEVICE_STREAM_COMPUTE, &st, &cause) == 0, "%s", cause);
	/* As the daemon does (cuda_graph_max_batch 256): on CUDA the outputs then come from graph replays. */
	if (st != NULL)
		CHECK(model_exec_capture(x, st, 256, &cause) == 0, "%s", cause);
	allocs = device_allocation_count(dev);
	/* Every case, then again in reverse order: a small plan cache then recompiles evicted shapes. */
	for (pass = 0; pass < 2 && st != NULL; pass++) {
		size_t ncases = json_array_size(json_object_get(man, "cases"));
		for (k = 0; k < ncases; k++) {
			c = json_array_get(json_object_get(man, "cases"), pass ? ncases - 1 - k : k);
			snprintf(label, sizeof label, "%s opset %lld %s%s", m->name,
			    (long long)json_integer_value(json_object_get(man, "opset")),
			    json_string_value(json_object_get(c, "dir")), pass ? " (again)" : "");
			if (case_inputs(x, c, dir, &s, st) != 0)
				continue;
			CHECK(model_exec_run(x, &s, st, &cause) == 0 && device_stream_sync(st, &cause) == 0, "%s: %s", label, cause);
			case_outputs(x, c, dir, &s, st, label);
		}
	}
	CHECK(device_allocation_count(dev) == allocs, "%s: device allocations after start-up: %llu", path,
	    (unsigned long long)(device_allocation_count(dev) - allocs));
	device_stream_destroy(st);
	model_exec_free(x);
	model_free(m);
	json_decref(man);
}

int
main(int argc, char **argv)
{
	device_t *dev = test_open_device();
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dump") == 0)
			dump = 1;
		else
			run_manifest(dev, argv[i]);
	}
	device_close(dev);
	return test_finish("onnx_engine_run");
}
