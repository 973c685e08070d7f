/*
 * test_fashion.c: the demo model through the engine.  Built twice: the
 * reference build compares logits with PyTorch's (tests/data/fashion_ref.json,
 * within 1e-4); the FASHION_ACCURACY build classifies the 10,000 test images
 * (accuracy >= 0.85) and skips when the dataset package is not installed.
 * FASHION_MODEL, FASHION_REF and FASHION_MIN_ACCURACY select another demo model
 * (the fashion-cnn builds: conf/models/fashion-cnn, ONNX, accuracy >= 0.91).
 */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fashion_data.h"
#include "model.h"
#include "test_util.h"

#ifndef FASHION_MODEL
#define FASHION_MODEL "fashion-mlp"
#define FASHION_REF "tests/data/fashion_ref.json"
#define FASHION_MIN_ACCURACY 0.85
#endif

static device_t *dev;
static device_stream_t *stream;

/* Path of a file under the source tree. */
static char *
srcpath(const char *rel)
{
	const char *top = getenv("top_srcdir");
	char *p;

	if (asprintf(&p, "%s/%s", top ? top : ".", rel) == -1)
		abort();
	return p;
}

/* Run rows rows through the model: host in, host out. */
static void
infer(model_exec_t *ex, const float *in, float *out, int rows)
{
	const model_t *m = ex->model;
	char *cause = NULL;
	size_t i, n = (size_t)rows * m->output.row_elems;

	for (i = 0; i < n; i++)
		out[i] = NAN;
	if (device_copy_h2d(stream, model_exec_input(ex, 0), in, (size_t)rows * m->input.row_elems * sizeof *in, &cause) != 0 ||
	    model_exec_run_rows(ex, rows, stream, &cause) != 0 ||
	    device_copy_d2h(stream, out, model_exec_output(ex, 0), n * sizeof *out, &cause) != 0 ||
	    device_stream_sync(stream, &cause) != 0) {
		fprintf(stderr, "FAIL: inference: %s\n", cause);
		exit(1);
	}
}

#ifndef FASHION_ACCURACY
/* Logits for the committed reference images agree with PyTorch's within 1e-4. */
static void
run_test(model_exec_t *ex)
{
	char *path = srcpath(FASHION_REF);
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr), *inputs, *logits;
	float in[784], out[10];
	size_t i, k, n;
	double worst = 0;

	if (root == NULL) {
		fprintf(stderr, "FAIL: %s: %s\n", path, jerr.text);
		exit(1);
	}
	inputs = json_object_get(root, "inputs");
	logits = json_object_get(root, "logits");
	n = json_array_size(inputs);
	CHECK(n >= 32 && json_array_size(logits) == n, "reference file has %zu inputs", n);
	for (i = 0; i < n; i++) {
		for (k = 0; k < 784; k++)
			in[k] = (float)json_number_value(json_array_get(json_array_get(inputs, i), k));
		infer(ex, in, out, 1);
		for (k = 0; k < 10; k++) {
			double want = json_number_value(json_array_get(json_array_get(logits, i), k));
			double d = fabs(out[k] - want);
			worst = d > worst ? d : worst;
		}
	}
	printf("max |logit - PyTorch logit| over %zu images: %g\n", n, worst);
	CHECK(worst <= 1e-4, "logits differ from PyTorch by %g", worst);
	json_decref(root);
	free(path);
}
#else
/* Classify the 10,000 test images in batches of 256; accuracy >= FASHION_MIN_ACCURACY. */
static void
run_test(model_exec_t *ex)
{
	char err[256], *ipath, *lpath;
	unsigned char *images, *labels;
	size_t count, size, lcount, lsize, i, r, k, correct = 0;
	float *in, *out;

	if (asprintf(&ipath, "%s/t10k-images-idx3-ubyte.gz", fashion_data_dir()) == -1 ||
	    asprintf(&lpath, "%s/t10k-labels-idx1-ubyte.gz", fashion_data_dir()) == -1)
		abort();
	if (fashion_load_idx(ipath, &images, &count, &size, err, sizeof err) != 0) {
		printf("SKIP: Fashion-MNIST test set not available (%s); install the Debian package dataset-fashion-mnist\n", err);
		exit(TEST_SKIP);
	}
	if (fashion_load_idx(lpath, &labels, &lcount, &lsize, err, sizeof err) != 0 || lcount != count || size != 784) {
		fprintf(stderr, "FAIL: labels: %s\n", err);
		exit(1);
	}
	in = malloc(256 * 784 * sizeof(float));
	out = malloc(256 * 10 * sizeof(float));
	for (i = 0; i < count; i += 256) {
		size_t rows = count - i < 256 ? count - i : 256;
		for (r = 0; r < rows * 784; r++)
			in[r] = images[i * 784 + r] / 255.0f;
		infer(ex, in, out, (int)rows);
		for (r = 0; r < rows; r++) {
			size_t best = 0;
			for (k = 1; k < 10; k++)
				best = out[r * 10 + k] > out[r * 10 + best] ? k : best;
			correct += best == labels[i + r];
		}
	}
	printf("%s: accuracy on %zu test images: %.4f\n", FASHION_MODEL, count, (double)correct / count);
	CHECK((double)correct / count >= FASHION_MIN_ACCURACY, "accuracy %.4f below %.2f", (double)correct / count,
	    FASHION_MIN_ACCURACY);
	free(in);
	free(out);
	free(images);
	free(labels);
	free(ipath);
	free(lpath);
}
#endif

int
main(void)
{
	char *dir = srcpath("conf/models/" FASHION_MODEL), *cause = NULL;
	model_exec_t *ex;
	model_t *m;

	dev = test_open_device();
	if (model_load(dev, dir, &m, &cause) != 0 || model_exec_create(m, &ex, &cause) != 0 ||
	    device_stream_create(dev, DEVICE_STREAM_COMPUTE, &stream, &cause) != 0 ||
	    model_exec_capture(ex, stream, m->max_batch_size, &cause) != 0) {
		fprintf(stderr, "FAIL: loading %s: %s\n", dir, cause);
		return 1;
	}
	run_test(ex);
	device_stream_destroy(stream);
	model_exec_free(ex);
	model_free(m);
	device_close(dev);
	free(dir);
#ifdef FASHION_ACCURACY
	return test_finish("test_fashion_accuracy");
#else
	return test_finish("test_fashion");
#endif
}
