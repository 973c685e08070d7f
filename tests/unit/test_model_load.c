/* test_model_load.c: model.json and safetensors validation, whole-model accuracy, the repository. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "onnx_build.h"
#include "batcher.h"
#include "repository.h"
#include "test_util.h"

#define IN 6
#define HID 5
#define OUT 3
#define ROWS 4

static device_t *dev;
static uint64_t rng = 12345;
static float w1[HID * IN], b1[HID], g1[HID], be1[HID], w2[OUT * HID], b2[OUT];

/* model.json of the test model: linear, layernorm, gelu, linear, softmax. */
static const char *good_json =
    "{\"name\":\"tiny\",\"max_batch_size\":8,"
    "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"dims\":[6]}],"
    "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\",\"dims\":[3]}],"
    "\"layers\":[{\"name\":\"fc1\",\"op\":\"linear\",\"weight\":\"w1\",\"bias\":\"b1\"},"
    "{\"name\":\"ln\",\"op\":\"layernorm\",\"gamma\":\"g1\",\"beta\":\"be1\"},"
    "{\"name\":\"act\",\"op\":\"gelu\"},"
    "{\"name\":\"fc2\",\"op\":\"linear\",\"weight\":\"w2\",\"bias\":\"b2\"},"
    "{\"name\":\"id\",\"op\":\"identity\"},"
    "{\"name\":\"sm\",\"op\":\"softmax\"}]}";

/* Write the good weights (optionally with one tensor replaced) into dir. */
static void
write_weights(const char *dir, const struct test_tensor *replace)
{
	struct test_tensor t[] = {
		{ "w1", "F32", 2, { HID, IN }, w1, sizeof w1 },
		{ "b1", "F32", 1, { HID }, b1, sizeof b1 },
		{ "g1", "F32", 1, { HID }, g1, sizeof g1 },
		{ "be1", "F32", 1, { HID }, be1, sizeof be1 },
		{ "w2", "F32", 2, { OUT, HID }, w2, sizeof w2 },
		{ "b2", "F32", 1, { OUT }, b2, sizeof b2 },
	};
	size_t i;

	for (i = 0; replace != NULL && i < sizeof t / sizeof t[0]; i++)
		if (strcmp(t[i].name, replace->name) == 0)
			t[i] = *replace;
	test_write_safetensors(dir, "model.safetensors", t, sizeof t / sizeof t[0]);
}

/* The test model in double precision. */
static void
reference(const float *x, double *y)
{
	double h[HID], mean = 0, var = 0, z[OUT], max, sum = 0;
	int i, k;

	for (i = 0; i < HID; i++) {
		h[i] = b1[i];
		for (k = 0; k < IN; k++)
			h[i] += (double)w1[i * IN + k] * x[k];
		mean += h[i] / HID;
	}
	for (i = 0; i < HID; i++)
		var += (h[i] - mean) * (h[i] - mean) / HID;
	for (i = 0; i < HID; i++) {
		h[i] = (h[i] - mean) / sqrt(var + (double)1e-5f) * g1[i] + be1[i];
		h[i] = 0.5 * h[i] * (1 + erf(h[i] / sqrt(2.0)));
	}
	for (i = 0; i < OUT; i++) {
		z[i] = b2[i];
		for (k = 0; k < HID; k++)
			z[i] += (double)w2[i * HID + k] * h[k];
	}
	max = fmax(z[0], fmax(z[1], z[2]));
	for (i = 0; i < OUT; i++)
		sum += exp(z[i] - max);
	for (i = 0; i < OUT; i++)
		y[i] = exp(z[i] - max) / sum;
}

/* Load the good model, run ROWS random rows into a NaN-poisoned output, compare. */
static void
test_good_model(const char *dir)
{
	float x[ROWS * IN], y[ROWS * OUT];
	double ref[ROWS * OUT];
	device_stream_t *s;
	model_exec_t *ex;
	char *cause = NULL;
	model_t *m;
	int r;

	if (model_load(dev, dir, &m, &cause) != 0) {
		CHECK(0, "good model refused: %s", cause);
		free(cause);
		return;
	}
	CHECK(strcmp(m->name, "tiny") == 0 && m->max_batch_size == 8 && m->input.row_elems == IN &&
	    m->output.row_elems == OUT && m->batching.max_queue_size > 0, "model description wrong");
	CHECK(model_exec_create(m, &ex, &cause) == 0, "%s", cause);
	CHECK(device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, &cause) == 0, "%s", cause);
	test_fill_random(x, ROWS * IN, &rng, -2, 2);
	for (r = 0; r < ROWS * OUT; r++)
		y[r] = NAN;
	CHECK(device_copy_h2d(s, model_exec_input(ex, 0), x, sizeof x, &cause) == 0, "%s", cause);
	CHECK(device_copy_h2d(s, model_exec_output(ex, 0), y, sizeof y, &cause) == 0, "%s", cause);
	CHECK(model_exec_run_rows(ex, ROWS, s, &cause) == 0, "%s", cause);
	CHECK(device_copy_d2h(s, y, model_exec_output(ex, 0), sizeof y, &cause) == 0, "%s", cause);
	CHECK(device_stream_sync(s, &cause) == 0, "%s", cause);
	for (r = 0; r < ROWS; r++)
		reference(x + r * IN, ref + r * OUT);
	double err = test_rel_error(y, ref, ROWS * OUT);
	CHECK(err <= 1e-5, "whole model: relative error %g", err);
	if (device_has_graphs(dev)) {
		/* A replayed graph computes what the layer-by-layer run did (it may run a padded batch size). */
		float yg[ROWS * OUT];
		CHECK(model_exec_capture(ex, s, 8, &cause) == 0 && ex->ngraphs == 8, "capture: %s", cause);
		CHECK(model_exec_run_rows(ex, ROWS, s, &cause) == 0, "%s", cause);
		CHECK(device_copy_d2h(s, yg, model_exec_output(ex, 0), sizeof yg, &cause) == 0, "%s", cause);
		CHECK(device_stream_sync(s, &cause) == 0, "%s", cause);
		err = test_rel_error(yg, ref, ROWS * OUT);
		CHECK(err <= 1e-5, "graph replay: relative error %g", err);
		printf("graph replay of %d rows (run as %d): relative error %g\n", ROWS, ex->graph_rows[ROWS - 1], err);
	}
	CHECK(model_exec_run_rows(ex, 9, s, &cause) != 0 && strstr(cause, "9 rows") != NULL, "oversized batch accepted");
	device_stream_destroy(s);
	model_exec_free(ex);
	model_free(m);
	free(cause);
}

/* A model directory variant that must be refused with every word of want in the message. */
static void
expect_refused(const char *what, const char *json, const struct test_tensor *replace,
    const char *raw_weights, size_t raw_len, const char *const *want)
{
	char *dir = test_mkdtemp(), *cause = NULL;
	model_t *m;

	test_write_file(dir, "model.json", json, strlen(json));
	if (raw_weights != NULL)
		test_write_file(dir, "model.safetensors", raw_weights, raw_len);
	else
		write_weights(dir, replace);
	if (model_load(dev, dir, &m, &cause) == 0) {
		CHECK(0, "%s: accepted", what);
		model_free(m);
	} else {
		for (; *want != NULL; want++)
			CHECK(strstr(cause, *want) != NULL, "%s: message lacks '%s': %s", what, *want, cause);
		printf("refused as expected (%s): %s\n", what, cause);
	}
	free(cause);
	test_rmtree(dir);
	free(dir);
}

/* Replace the first occurrence of from with to in the good JSON. */
static char *
json_with(const char *from, const char *to)
{
	const char *p = strstr(good_json, from);
	char *s;

	if (p == NULL || asprintf(&s, "%.*s%s%s", (int)(p - good_json), good_json, to, p + strlen(from)) == -1)
		abort();
	return s;
}

/* A raw safetensors file: 8-byte length (as given, or the header's), header text, data bytes. */
#define HLEN_AUTO UINT64_MAX
static char *
raw_file(uint64_t hlen, const char *header, size_t data_len, size_t *len)
{
	size_t h = strlen(header);
	char *buf = calloc(1, 8 + h + data_len);
	int i;

	if (hlen == HLEN_AUTO)
		hlen = h;
	for (i = 0; i < 8; i++)
		buf[i] = (char)(hlen >> (8 * i));
	memcpy(buf + 8, header, h);
	*len = 8 + h + data_len;
	return buf;
}

/* Every refusal the issue lists, plus a few more. */
static void
test_refusals(void)
{
	static float w1_bad[HID * (IN + 1)];
	struct test_tensor bad_shape = { "w1", "F32", 2, { HID, IN + 1 }, w1_bad, sizeof w1_bad };
	struct test_tensor f16 = { "b2", "F16", 1, { OUT }, b2, OUT * 2 };
	char *j;
	size_t len;
	char *raw;

	j = json_with("\"weight\":\"w2\"", "\"weight\":\"nope\"");
	expect_refused("missing tensor", j, NULL, NULL, 0, (const char *const[]){ "model.json", "fc2", "missing tensor 'nope'", NULL });
	free(j);
	expect_refused("wrong shape", good_json, &bad_shape, NULL, 0, (const char *const[]){ "model.json", "fc1", "shape [5,7]", "expected [5,6]", NULL });
	j = json_with("\"op\":\"gelu\"", "\"op\":\"swish\"");
	expect_refused("unknown op", j, NULL, NULL, 0, (const char *const[]){ "model.json", "act", "unknown op 'swish'", NULL });
	free(j);
	expect_refused("tensor dtype", good_json, &f16, NULL, 0, (const char *const[]){ "fc2", "dtype F16 not supported", NULL });
	j = json_with("\"datatype\":\"FP32\"", "\"datatype\":\"INT8\"");
	expect_refused("io datatype", j, NULL, NULL, 0, (const char *const[]){ "model.json", "INT8 not supported", NULL });
	free(j);
	raw = raw_file(HLEN_AUTO, "{\"w1\":{\"dtype\":\"F32\",\"shape\":[5,6],\"data_offsets\":[0,120]}}    ", 60, &len);
	expect_refused("truncated safetensors", good_json, NULL, raw, len, (const char *const[]){ "model.safetensors", "'w1'", "outside", NULL });
	free(raw);
	raw = raw_file(HLEN_AUTO, "{\"w1\":{\"dtype\":\"F32\",\"shape\":[5,6],\"data_offsets\":[0,120]}}    ", 0, &len);
	expect_refused("truncated header", good_json, NULL, raw, len - 8, (const char *const[]){ "model.safetensors", "larger than the file", NULL });
	free(raw);
	raw = raw_file(HLEN_AUTO, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}   ", 16, &len);
	expect_refused("overlapping offsets", good_json, NULL, raw, len, (const char *const[]){ "model.safetensors", "overlap", NULL });
	free(raw);
	raw = raw_file(1u << 30, "{}", 0, &len);
	expect_refused("header length", good_json, NULL, raw, len, (const char *const[]){ "model.safetensors", "header length", "larger than the file", NULL });
	free(raw);
	raw = raw_file(HLEN_AUTO, "not json", 0, &len);
	expect_refused("non-JSON header", good_json, NULL, raw, len, (const char *const[]){ "model.safetensors", "not JSON", NULL });
	free(raw);
	raw = raw_file(0, "", 0, &len);
	expect_refused("short file", good_json, NULL, raw, 4, (const char *const[]){ "model.safetensors", "shorter than", NULL });
	free(raw);
	expect_refused("model.json syntax", "{\"name\": }", NULL, NULL, 0, (const char *const[]){ "model.json", "line 1", NULL });
	j = json_with("\"dims\":[3]", "\"dims\":[4]");
	expect_refused("output width", j, NULL, NULL, 0, (const char *const[]){ "model.json", "3 values per row", "has 4", NULL });
	free(j);
	j = json_with("\"max_batch_size\":8", "\"max_batch_size\":0");
	expect_refused("max_batch_size", j, NULL, NULL, 0, (const char *const[]){ "max_batch_size", NULL });
	free(j);
}

/* A registry over root with a batcher of its own, after its start-up load (NULL when that failed: *cause says why). */
static repository_t *
registry_open(const char *root, batcher_t **b, char **cause)
{
	struct repository_options o = { .dev = dev, .dir = root, .control = REPOSITORY_CONTROL_NONE, .inflight = 2 };
	repository_t *r = NULL;

	if (batcher_create(dev, NULL, 2, 0, b, cause) != 0)
		return NULL;
	o.batcher = *b;
	if (repository_create(&o, &r, cause) != 0 || repository_load_startup(r, NULL, cause) != 0) {
		repository_free(r);
		batcher_free(*b);
		return NULL;
	}
	return r;
}

/* Free a registry and its batcher. */
static void
registry_close(repository_t *r, batcher_t *b)
{
	repository_free(r);
	batcher_free(b);
}

/* Whether name is loaded and serving. */
static int
registry_has(repository_t *r, const char *name)
{
	model_ref_t *ref;

	if (repository_acquire(r, name, 0, &ref, NULL) != REPOSITORY_FOUND)
		return 0;
	repository_release(ref);
	return 1;
}

/* Whether name is known but not loaded, with a reason containing what. */
static int
registry_failed(repository_t *r, const char *name, const char *what)
{
	model_ref_t *ref;
	char *cause = NULL;
	int ok = repository_acquire(r, name, 0, &ref, &cause) == REPOSITORY_NOT_READY &&
	    strstr(cause, what) != NULL;

	if (!ok)
		fprintf(stderr, "model %s: %s\n", name, cause ? cause : "loaded");
	free(cause);
	return ok;
}

/* A repository with good and broken models: the good ones load, the broken are recorded. */
static void
test_repository(const char *good_dir)
{
	char *root = test_mkdtemp(), *cmd, *cause = NULL;
	repository_t *r;
	batcher_t *b;

	if (asprintf(&cmd, "mkdir -p '%s/bad' && cp -r '%s' '%s/tiny' && cp -r '%s' '%s/other' && "
	    "cp '%s/model.safetensors' '%s/bad/' && "
	    "printf '{\"name\":\"bad\",\"max_batch_size\":1,\"layers\":[]}' > '%s/bad/model.json'",
	    root, good_dir, root, good_dir, root, good_dir, root, root) == -1 || system(cmd) != 0) {
		CHECK(0, "setting up the repository failed");
		return;
	}
	free(cmd);
	r = registry_open(root, &b, &cause);
	CHECK(r != NULL, "%s", cause);
	if (r != NULL) {
		CHECK(registry_has(r, "tiny"), "good model missing");
		CHECK(registry_failed(r, "bad", "bad/model.json"), "failure not recorded");
		CHECK(registry_failed(r, "other", "other/model.json names the model 'tiny'"),
		    "a model.json naming another model accepted");
		registry_close(r, b);
	}
	CHECK(registry_open("/nonexistent/inferd", &b, &cause) == NULL && strstr(cause, "/nonexistent/inferd") != NULL,
	    "missing repository accepted");
	test_rmtree(root);
	free(root);
	free(cause);
}

/* Write a one-node ONNX model (and model.json when json is not NULL) into a new directory root/name. */
static char *
write_onnx_dir(const char *root, const char *name, const char *op, const char *node, int nin,
    int ndims, const int64_t *dims, size_t truncate, const char *json)
{
	char *dir;
	size_t len;
	uint8_t *buf = onnx_build_unary(op, node, nin, ndims, dims, &len);

	if (asprintf(&dir, "%s/%s", root, name) == -1 || mkdir(dir, 0700) != 0) {
		CHECK(0, "cannot make %s/%s", root, name);
		exit(1);
	}
	test_write_file(dir, "model.onnx", (const char *)buf, truncate ? truncate : len);
	if (json != NULL)
		test_write_file(dir, "model.json", json, strlen(json));
	free(buf);
	return dir;
}

/* Load dir and expect a refusal whose message has every one of want. */
static void
expect_onnx_refused(const char *what, const char *dir, const char *const *want)
{
	char *cause = NULL;
	model_t *m = NULL;

	CHECK(model_load(dev, dir, &m, &cause) != 0, "%s: accepted", what);
	if (cause != NULL)
		printf("refused as expected (%s): %s\n", what, cause);
	for (; cause != NULL && *want != NULL; want++)
		CHECK(strstr(cause, *want) != NULL, "%s: message lacks '%s': %s", what, *want, cause);
	model_free(m);
	free(cause);
}

/* Fill n floats of input i at shape s, copy them in, keep them in host[i]. */
static void
fill_input(model_exec_t *ex, device_stream_t *s, int i, float *host, size_t n)
{
	char *cause = NULL;

	test_fill_random(host, n, &rng, -2, 2);
	CHECK(device_copy_h2d(s, model_exec_input(ex, i), host, n * sizeof *host, &cause) == 0, "%s", cause);
}

/* Run x0 + x1 at rows x seq and compare with the sum in double precision. */
static void
run_add(model_exec_t *ex, device_stream_t *s, int rows, int seq)
{
	struct model_shape sh = { .rows = rows, .dims = { { seq }, { seq } } };
	float a[4 * 6], b[4 * 6], y[4 * 6];
	size_t n = (size_t)rows * seq, i;
	char *cause = NULL;
	struct model_layout lay;

	CHECK(model_input_row_bytes(ex->model, 0, &sh) == (size_t)seq * 4, "input row bytes");
	CHECK(model_output_layout(ex->model, &sh, &lay, &cause) == 0, "output layout: %s", cause);
	CHECK(lay.row_bytes[0] == (size_t)seq * 4, "output row bytes");
	CHECK(lay.dims[0][0] == seq, "output dims");
	fill_input(ex, s, 0, a, n);
	fill_input(ex, s, 1, b, n);
	CHECK(model_exec_run(ex, &sh, s, &cause) == 0, "%d x %d: %s", rows, seq, cause);
	CHECK(device_copy_d2h(s, y, model_exec_output(ex, 0), n * sizeof *y, &cause) == 0 &&
	    device_stream_sync(s, &cause) == 0, "%s", cause);
	for (i = 0; i < n; i++)
		CHECK(y[i] == (float)((double)a[i] + (double)b[i]), "%d x %d: y[%zu] = %g, want %g", rows, seq, i, y[i], a[i] + b[i]);
}

/* Two inputs sharing the variable dim S: metadata, dims checks, runs at three shapes through a 1-plan cache. */
static void
test_onnx_variable(const char *root)
{
	static const int64_t dims[] = { -1, -2 };
	char *dir = write_onnx_dir(root, "add", "Add", "sum", 2, 2, dims, 0,
	    "{\"platform\": \"onnx\", \"max_batch_size\": 4, \"max_dims\": {\"x0\": [6]}, \"plan_cache\": 1,"
	    " \"rename\": {\"y\": \"total\"}}");
	struct model_shape bad = { .rows = 2, .dims = { { 3 }, { 4 } } };
	device_stream_t *s = NULL;
	model_exec_t *ex = NULL;
	model_t *m = NULL;
	char *cause = NULL;
	uint64_t allocs;
	int64_t seq = 7;

	CHECK(model_load(dev, dir, &m, &cause) == 0, "%s", cause);
	if (m == NULL)
		return;
	CHECK(strcmp(m->name, "add") == 0 && strcmp(m->platform, "onnx") == 0 && m->max_batch_size == 4 &&
	    m->ninputs == 2 && m->noutputs == 1, "ONNX model description wrong");
	CHECK(m->inputs[1].ndims == 1 && m->inputs[1].dims[0] == -1 && m->inputs[1].max_dims[0] == 6 &&
	    m->inputs[0].dtype == GRAPH_DT_F32, "input x1: variable dim bounded by x0's max_dims");
	CHECK(strcmp(m->outputs[0].name, "total") == 0 && model_output_index(m, "total") == 0 &&
	    model_input_index(m, "x1") == 1 && model_input_index(m, "y") == -1, "names");
	CHECK(m->outputs[0].ndims == 1 && m->outputs[0].dims[0] == -1 && m->outputs[0].max_dims[0] == 6, "output dims");
	CHECK(model_check_dims(m, 0, 1, &seq, &cause) != 0 && strstr(cause, "input 'x0' dim 1 is 7, the model's maximum is 6"),
	    "dim past its maximum: %s", cause);
	free(cause);
	cause = NULL;
	CHECK(model_exec_create(m, &ex, &cause) == 0 && device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, &cause) == 0,
	    "%s", cause);
	/* On CUDA each shape is then captured on its first run; the 1-entry cache destroys each graph it evicts. */
	if (ex != NULL && s != NULL)
		CHECK(model_exec_capture(ex, s, 4, &cause) == 0, "capture: %s", cause);
	allocs = device_allocation_count(dev);
	if (ex != NULL && s != NULL) {
		run_add(ex, s, 3, 5);
		run_add(ex, s, 4, 6);
		run_add(ex, s, 1, 1);
		run_add(ex, s, 3, 5);	/* evicted by the 1-plan cache: compiled again */
		CHECK(model_exec_run(ex, &bad, s, &cause) != 0 && strstr(cause, "another input"), "unequal S accepted");
		CHECK(device_allocation_count(dev) == allocs, "device memory allocated after start-up");
	}
	device_stream_destroy(s);
	model_exec_free(ex);
	model_free(m);
	free(cause);
	free(dir);
}

/* A fixed ONNX model without model.json: name from the directory, default batch; refusals name node, op, file, key. */
static void
test_onnx_models(const char *root, const char *mlp_dir)
{
	static const int64_t dims[] = { -1, 4 };
	char *good = write_onnx_dir(root, "relu", "Relu", "act", 1, 2, dims, 0, NULL);
	char *nms = write_onnx_dir(root, "nms", "NonMaxSuppression", "nms0", 1, 2, dims, 0, NULL);
	char *cut = write_onnx_dir(root, "cut", "Relu", "act", 1, 2, dims, 40, NULL);
	char *key = write_onnx_dir(root, "key", "Relu", "act", 1, 2, dims, 0, "{\"max_batch\": 4}");
	char *io = write_onnx_dir(root, "io", "Relu", "act", 1, 2, dims, 0,
	    "{\"inputs\": [{\"name\": \"x0\", \"datatype\": \"INT64\", \"dims\": [4]}]}");
	char *prec = write_onnx_dir(root, "prec", "Relu", "act", 1, 2, dims, 0, "{\"precision\": \"fp16\"}");
	char *bf16 = write_onnx_dir(root, "bf16", "Relu", "act", 1, 2, dims, 0, "{\"precision\": \"bf16\"}");
	char *badprec = write_onnx_dir(root, "badprec", "Relu", "act", 1, 2, dims, 0, "{\"precision\": \"fp8\"}");
	char *variant = write_onnx_dir(root, "variant", "Relu", "act", 1, 2, dims, 0, "{\"batch_invariant\": false}");
	char *badinv = write_onnx_dir(root, "badinv", "Relu", "act", 1, 2, dims, 0, "{\"batch_invariant\": 1}");
	char *cause = NULL, *cmd;
	repository_t *r = NULL;
	batcher_t *b;
	model_t *m = NULL;

	CHECK(model_load(dev, prec, &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(m->precision == GRAPH_PRECISION_FP16 && m->batch_invariant,
		    "model.json precision fp16 not on the model, or batch_invariant not on by default");
	model_free(m);
	m = NULL;
	CHECK(model_load(dev, variant, &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(!m->batch_invariant, "model.json batch_invariant false not on the model");
	model_free(m);
	m = NULL;
	/* bf16 on the CPU backend follows fp16's rule: it loads, and computes FP32. */
	CHECK(model_load(dev, bf16, &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(m->precision == GRAPH_PRECISION_BF16 && strcmp(graph_precision_name(m->precision), "bf16") == 0,
		    "model.json precision bf16 not on the model");
	model_free(m);
	m = NULL;
	expect_onnx_refused("precision", badprec, (const char *const[]){ "badprec/model.json",
	    "\"precision\" must be \"fp32\", \"tf32\", \"fp16\" or \"bf16\"", NULL });
	expect_onnx_refused("batch_invariant", badinv, (const char *const[]){ "badinv/model.json",
	    "\"batch_invariant\" must be true or false", NULL });
	free(prec);
	free(bf16);
	free(badprec);
	free(variant);
	free(badinv);
	CHECK(model_load(dev, good, &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(strcmp(m->name, "relu") == 0 && m->max_batch_size == 64 && m->inputs[0].ndims == 1 &&
		    m->inputs[0].dims[0] == 4 && m->outputs[0].dims[0] == 4 && m->input.row_elems == 4, "relu description");
	model_free(m);
	expect_onnx_refused("unsupported op", nms, (const char *const[]){ "model.onnx", "nms0", "NonMaxSuppression", NULL });
	expect_onnx_refused("truncated file", cut, (const char *const[]){ "cut/model.onnx", NULL });
	expect_onnx_refused("declared input", io, (const char *const[]){ "io/model.json", "datatype INT64, the graph's is FP32", NULL });
	expect_onnx_refused("unknown key", key, (const char *const[]){ "key/model.json: unknown key \"max_batch\"", NULL });
	if (asprintf(&cmd, "cp -r '%s' '%s/tiny'", mlp_dir, root) == -1 || system(cmd) != 0)
		CHECK(0, "copying the layer model failed");
	free(cmd);
	r = registry_open(root, &b, &cause);
	CHECK(r != NULL, "%s", cause);
	if (r != NULL) {
		CHECK(registry_has(r, "relu") && registry_has(r, "tiny"), "good models missing");
		CHECK(registry_failed(r, "nms", "nms0") && registry_failed(r, "cut", "cut/model.onnx"),
		    "failures not recorded");
		registry_close(r, b);
	}
	free(cause);
	free(good);
	free(nms);
	free(cut);
	free(key);
	free(io);
}

/*
 * The batch sizes a GPU context of a model without variable dims compiles:
 * every size runs at one at least as large, compiled sizes at themselves,
 * never more than half as many rows again, 12 sizes for 64 rows; unbucketed
 * (the CPU backend, variable dims), every size at itself.
 */
static void
test_rows_run(void)
{
	model_t m;
	model_exec_t x;
	int r, b, sizes = 0;

	memset(&m, 0, sizeof m);
	memset(&x, 0, sizeof x);
	m.max_batch_size = 64;
	x.model = &m;
	x.bucketed = 1;
	x.nplans = 2;	/* a variable-dim context's plan cache: the sizes go up to max_batch_size all the same */
	for (r = 1; r <= 64; r++) {
		b = model_exec_rows_run(&x, r);
		CHECK(b >= r && b <= 64 && model_exec_rows_run(&x, b) == b && 2 * b <= 3 * r + 1,
		    "%d rows run at %d", r, b);
		sizes += b == r;
	}
	CHECK(sizes == 12, "%d sizes compiled for 64 rows, not 12", sizes);
	m.max_batch_size = 20;
	CHECK(model_exec_rows_run(&x, 17) == 20 && model_exec_rows_run(&x, 20) == 20, "the largest size is compiled");
	x.bucketed = 0;
	for (r = 1; r <= 20; r++)
		CHECK(model_exec_rows_run(&x, r) == r, "unbucketed: %d rows run at %d", r, model_exec_rows_run(&x, r));
}

int
main(void)
{
	char *dir, *onnx_root;

	dev = test_open_device();
	test_rows_run();
	test_fill_random(w1, HID * IN, &rng, -1, 1);
	test_fill_random(b1, HID, &rng, -1, 1);
	test_fill_random(g1, HID, &rng, 0.5f, 1.5f);
	test_fill_random(be1, HID, &rng, -0.5f, 0.5f);
	test_fill_random(w2, OUT * HID, &rng, -1, 1);
	test_fill_random(b2, OUT, &rng, -1, 1);
	dir = test_mkdtemp();
	test_write_file(dir, "model.json", good_json, strlen(good_json));
	write_weights(dir, NULL);
	test_good_model(dir);
	test_refusals();
	test_repository(dir);
	onnx_root = test_mkdtemp();
	test_onnx_variable(onnx_root);
	test_onnx_models(onnx_root, dir);
	test_rmtree(onnx_root);
	free(onnx_root);
	test_rmtree(dir);
	free(dir);
	device_close(dev);
	return test_finish("test_model_load");
}
