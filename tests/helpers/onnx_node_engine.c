/*
 * onnx_node_engine.c: the ONNX package's node tests (listed by make_onnx_node_cases.py) served
 * through the engine: model_load of each test's directory (its model.onnx, no model.json),
 * model_exec_create, inputs copied to model_exec_input, model_exec_run on the device INFERD_TEST_DEVICE
 * names (default cpu; cuda:0 runs the same cases on the GPU, where a case refused for an op only the CPU
 * backend has is counted apart, see cuda_missing_ops), outputs
 * read at model_exec_output and compared with the test's expected data (FP32: |y - r| <= 1e-5
 * max|r| + 1e-4 |r|; other dtypes: equal bytes).  A model the engine refuses at load is excluded
 * with the engine's message; every such line starts "NAME: excluded:", unless the case is marked
 * must_load (then the refusal fails); a case with expect_refusal must be refused with a message containing
 * that text.  The manifest's min_ran (default 200) is how many must run.
 *
 *     onnx_node_engine CASES_DIR      exit 0 all ran cases pass, 1 otherwise
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

static size_t ran, passed, excluded, refused, cpu_only;

/*
 * Ops the CUDA backend has no kernels for (they run on the CPU backend only).
 * On a GPU a must_load case refused for one of these, by the CUDA backend's
 * own "op NAME has no CUDA kernel" message, is counted apart instead of failing;
 * every other refusal still fails.
 */
static const char *const cuda_missing_ops[] = { "ScatterElements", "OneHot", "Einsum" };

/* 1 when dev is a GPU and cause is its backend refusing one of cuda_missing_ops by name. */
static int
refused_cpu_only(device_t *dev, const char *cause)
{
	char want[128];

	if (!device_is_gpu(dev) || cause == NULL)
		return 0;
	for (size_t i = 0; i < sizeof cuda_missing_ops / sizeof cuda_missing_ops[0]; i++) {
		snprintf(want, sizeof want, "op %s has no CUDA kernel", cuda_missing_ops[i]);
		if (strstr(cause, want) != NULL)
			return 1;
	}
	return 0;
}

/* A whole file (NULL when unreadable). */
static void *
read_all(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	void *buf = NULL;
	long n;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* FP32 within tolerance (NaN and infinities exactly), anything else byte for byte; 0 when they match. */
static int
outputs_differ(enum graph_dtype dt, const void *y, const void *r, size_t bytes, double *worst)
{
	const float *a = y, *b = r;
	size_t i, n = bytes / 4;
	double maxr = 0;
	int bad = 0;

	*worst = 0;
	if (dt != GRAPH_DT_F32)
		return memcmp(y, r, bytes) != 0;
	for (i = 0; i < n; i++)
		if (isfinite(b[i]))
			maxr = fmax(maxr, fabs(b[i]));
	for (i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);

		/* A NaN or infinite reference must be met exactly (an infinity of the same sign). */
		if (!isfinite(b[i])) {
			bad += !(isnan(b[i]) ? isnan(a[i]) : a[i] == b[i]);
			continue;
		}
		*worst = fmax(*worst, d / (maxr > 0 ? maxr : 1));
		bad += !(d <= 1e-5 * maxr + 1e-4 * fabs(b[i]));
	}
	return bad != 0;
}

/* The case's inputs into the context; fills shape.  -1 (a failure counted) on a mismatch. */
static int
feed(model_exec_t *x, const char *dir, const char *name, const json_t *ins, struct model_shape *s,
    device_stream_t *st)
{
	const model_t *m = x->model;
	int skip = m->max_batch_size > 0, i, d;
	char *cause = NULL;

	memset(s, 0, sizeof *s);
	s->rows = 1;
	CHECK((int)json_array_size(ins) == m->ninputs, "%s: %zu input files, the model has %d inputs", name,
	    json_array_size(ins), m->ninputs);
	for (i = 0; i < m->ninputs && (size_t)i < json_array_size(ins); i++) {
		const json_t *in = json_array_get(ins, (size_t)i), *shape = json_object_get(in, "shape");
		size_t len = 0, want;
		void *buf;

		if (skip)
			s->rows = (int)json_integer_value(json_array_get(shape, 0));
		for (d = skip; (size_t)d < json_array_size(shape) && d - skip < MODEL_MAX_DIMS; d++)
			s->dims[i][d - skip] = json_integer_value(json_array_get(shape, (size_t)d));
		want = (size_t)s->rows * model_input_row_bytes(m, i, s);
		buf = read_all(dir, json_string_value(json_object_get(in, "file")), &len);
		CHECK(buf != NULL && len == want, "%s: input %d has %zu bytes, the engine expects %zu", name, i, len, want);
		if (buf == NULL || len != want) {
			free(buf);
			return -1;
		}
		CHECK(device_copy_h2d(st, model_exec_input(x, i), buf, len, &cause) == 0, "%s: %s", name, cause);
		free(buf);
	}
	return (int)json_array_size(ins) == m->ninputs ? 0 : -1;
}

/* Read every output and compare it with the expected file; 0 when all match. */
static int
check_outputs(model_exec_t *x, const char *dir, const char *name, const json_t *outs,
    const struct model_shape *s, device_stream_t *st)
{
	const model_t *m = x->model;
	int o, fails = 0;
	char *cause = NULL;

	CHECK((int)json_array_size(outs) == m->noutputs, "%s: %zu expected outputs, the model has %d", name,
	    json_array_size(outs), m->noutputs);
	for (o = 0; o < m->noutputs && (size_t)o < json_array_size(outs); o++) {
		size_t len = 0, bytes = (size_t)s->rows * output_row_bytes(m, o, s);
		void *r = read_all(dir, json_string_value(json_object_get(json_array_get(outs, (size_t)o), "file")), &len);
		void *y = malloc(bytes + 1);
		double worst = 0;
		int bad = r == NULL || y == NULL || len != bytes;

		CHECK(!bad, "%s: output %d: %zu bytes expected, the engine gives %zu", name, o, len, bytes);
		if (!bad) {
			CHECK(device_copy_d2h(st, y, model_exec_output(x, o), bytes, &cause) == 0 &&
			    device_stream_sync(st, &cause) == 0, "%s: %s", name, cause);
			bad = outputs_differ(m->outputs[o].dtype, y, r, bytes, &worst);
			CHECK(!bad, "%s: output %d differs (worst |diff|/max|y| %.3g)", name, o, worst);
		}
		fails += bad;
		free(r);
		free(y);
	}
	free(cause);
	return fails || (int)json_array_size(outs) != m->noutputs;
}

/* One node test through the engine. */
static void
run_case(device_t *dev, const char *dir, const json_t *c)
{
	const char *name = json_string_value(json_object_get(c, "name"));
	const char *refusal = json_string_value(json_object_get(c, "expect_refusal"));
	char mdir[4096], *slash, *cause = NULL;
	device_stream_t *st = NULL;
	model_exec_t *x = NULL;
	model_t *m = NULL;
	struct model_shape s;
	int failures = test_failures;

	if (json_object_get(c, "excluded") != NULL) {
		printf("%s: excluded: %s\n", name, json_string_value(json_object_get(c, "excluded")));
		excluded++;
		return;
	}
	snprintf(mdir, sizeof mdir, "%s", json_string_value(json_object_get(c, "model")));
	if ((slash = strrchr(mdir, '/')) != NULL)
		*slash = '\0';
	if (refusal != NULL) {
		CHECK(model_load(dev, mdir, &m, &cause) != 0 && cause != NULL && strstr(cause, refusal) != NULL,
		    "%s: expected a refusal naming '%s', got: %s", name, refusal, cause ? cause : "a load");
		printf("%s: refused as expected: %s\n", name, cause ? cause : "");
		refused += test_failures == failures;
		free(cause);
		model_free(m);
		return;
	}
	if (model_load(dev, mdir, &m, &cause) != 0) {
		if (refused_cpu_only(dev, cause)) {
			printf("%s: CPU backend only: %s\n", name, cause);
			cpu_only++;
			free(cause);
			return;
		}
		CHECK(!json_is_true(json_object_get(c, "must_load")), "%s: refused: %s", name, cause);
		printf("%s: excluded: %s\n", name, cause);
		excluded++;
		free(cause);
		return;
	}
	ran++;
	CHECK(model_exec_create(m, &x, &cause) == 0 && device_stream_create(dev, DEVICE_STREAM_COMPUTE, &st, &cause) == 0,
	    "%s: %s", name, cause);
	if (st != NULL && feed(x, dir, name, json_object_get(c, "inputs"), &s, st) == 0) {
		CHECK(model_exec_run(x, &s, st, &cause) == 0, "%s: %s", name, cause);
		if (test_failures == failures)
			check_outputs(x, dir, name, json_object_get(c, "outputs"), &s, st);
	}
	passed += test_failures == failures;
	printf("%s: %s\n", name, test_failures == failures ? "pass" : "FAIL");
	free(cause);
	device_stream_destroy(st);
	model_exec_free(x);
	model_free(m);
}

int
main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *man;
	device_t *dev;
	char path[4096];
	json_int_t min_ran;
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: onnx_node_engine CASES_DIR (made by make_onnx_node_cases.py)\n");
		return 1;
	}
	snprintf(path, sizeof path, "%s/manifest.json", argv[1]);
	if ((man = json_load_file(path, 0, &jerr)) == NULL) {
		fprintf(stderr, "%s: %s\n", path, jerr.text);
		return 1;
	}
	dev = test_open_device();
	for (i = 0; i < json_array_size(json_object_get(man, "cases")); i++)
		run_case(dev, argv[1], json_array_get(json_object_get(man, "cases"), i));
	printf("node tests through the engine: %zu ran, %zu passed, %zu excluded, %zu refused as expected, "
	    "%zu on ops only the CPU backend has\n", ran, passed, excluded, refused, cpu_only);
	/* The op set covers far more than this; fewer means loads regressed into refusals. */
	min_ran = json_integer_value(json_object_get(man, "min_ran"));
	CHECK(ran + cpu_only >= (min_ran > 0 ? (size_t)min_ran : 200), "only %zu node tests ran", ran);
	json_decref(man);
	device_close(dev);
	return test_finish("onnx_node_engine");
}
