/* test_ops.c: every device op against a double-precision reference, on fresh random data. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "test_util.h"

#define TOLERANCE 1e-5

static device_t *dev;
static device_stream_t *stream;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* Double-precision activation, the reference for device_act_apply. */
static double
ref_act(enum device_act act, double x)
{
	switch (act) {
	case DEVICE_ACT_RELU:
		return x > 0 ? x : 0;
	case DEVICE_ACT_GELU:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case DEVICE_ACT_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case DEVICE_ACT_TANH:
		return tanh(x);
	case DEVICE_ACT_NONE:
		break;
	}
	return x;
}

/* Copy host floats into a fresh device buffer. */
static float *
to_device(const float *h, size_t n)
{
	char *cause = NULL;
	void *d;

	if (device_alloc(dev, n * sizeof(float), &d, &cause) != 0 ||
	    device_copy_h2d(stream, d, h, n * sizeof(float), &cause) != 0) {
		fprintf(stderr, "FAIL: to_device: %s\n", cause);
		exit(1);
	}
	return d;
}

/* Copy a device buffer back into host floats poisoned with NaN first. */
static float *
from_device(const float *d, size_t n)
{
	float *h = malloc(n * sizeof(float));
	char *cause = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = NAN;
	if (device_copy_d2h(stream, h, d, n * sizeof(float), &cause) != 0 ||
	    device_stream_sync(stream, &cause) != 0) {
		fprintf(stderr, "FAIL: from_device: %s\n", cause);
		exit(1);
	}
	return h;
}

/* A device buffer filled with NaN, so an op that writes nothing is caught. */
static float *
poisoned_device(size_t n)
{
	float *h = malloc(n * sizeof(float)), *d;
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = NAN;
	d = to_device(h, n);
	free(h);
	return d;
}

/* Random host floats. */
static float *
random_host(size_t n, float lo, float hi)
{
	float *h = malloc(n * sizeof(float));

	test_fill_random(h, n, &rng, lo, hi);
	return h;
}

/* linear against sum_k x[r,k] w[o,k] + b[o], then act. */
static void
test_linear(int rows, int in, int out, int with_bias, enum device_act act)
{
	/* Weights scaled as a trained layer's are (1/sqrt(in)), so activations see O(1) inputs. */
	float scale = 1.0f / sqrtf((float)in);
	float *x = random_host((size_t)rows * in, -1, 1), *w = random_host((size_t)out * in, -scale, scale);
	float *b = random_host((size_t)out, -1, 1), *y;
	float *dx = to_device(x, (size_t)rows * in), *dw = to_device(w, (size_t)out * in);
	float *db = to_device(b, (size_t)out), *dy = poisoned_device((size_t)rows * out);
	double *ref = malloc((size_t)rows * out * sizeof(double));
	char *cause = NULL;
	int r, o, k;

	CHECK(device_linear(stream, dx, dw, with_bias ? db : NULL, dy, rows, in, out, act, &cause) == 0, "%s", cause);
	y = from_device(dy, (size_t)rows * out);
	for (r = 0; r < rows; r++) {
		for (o = 0; o < out; o++) {
			double acc = with_bias ? b[o] : 0.0;
			for (k = 0; k < in; k++)
				acc += (double)x[(size_t)r * in + k] * w[(size_t)o * in + k];
			ref[(size_t)r * out + o] = ref_act(act, acc);
		}
	}
	double err = test_rel_error(y, ref, (size_t)rows * out);
	CHECK(err <= TOLERANCE, "linear %dx%d->%d bias=%d act=%d: relative error %g", rows, in, out, with_bias, act, err);
	device_free(dev, dx);
	device_free(dev, dw);
	device_free(dev, db);
	device_free(dev, dy);
	free(x);
	free(w);
	free(b);
	free(y);
	free(ref);
	free(cause);
}

/* Element-wise activation in place. */
static void
test_activation(size_t n, enum device_act act)
{
	float *x = random_host(n, -6, 6), *y, *dx = to_device(x, n);
	double *ref = malloc(n * sizeof(double));
	char *cause = NULL;
	size_t i;

	CHECK(device_activation(stream, dx, n, act, &cause) == 0, "%s", cause);
	y = from_device(dx, n);
	for (i = 0; i < n; i++)
		ref[i] = ref_act(act, x[i]);
	double err = test_rel_error(y, ref, n);
	CHECK(err <= TOLERANCE, "activation %d over %zu: relative error %g", act, n, err);
	device_free(dev, dx);
	free(x);
	free(y);
	free(ref);
	free(cause);
}

/* Row-wise softmax; also checks each row sums to 1. */
static void
test_softmax(int rows, int cols, float scale)
{
	size_t n = (size_t)rows * cols;
	float *x = random_host(n, -scale, scale), *y, *dx = to_device(x, n);
	double *ref = malloc(n * sizeof(double));
	char *cause = NULL;
	int r, c;

	CHECK(device_softmax(stream, dx, rows, cols, &cause) == 0, "%s", cause);
	y = from_device(dx, n);
	for (r = 0; r < rows; r++) {
		double max = x[(size_t)r * cols], sum = 0;
		for (c = 0; c < cols; c++)
			max = fmax(max, x[(size_t)r * cols + c]);
		for (c = 0; c < cols; c++)
			sum += exp(x[(size_t)r * cols + c] - max);
		for (c = 0; c < cols; c++)
			ref[(size_t)r * cols + c] = exp(x[(size_t)r * cols + c] - max) / sum;
	}
	double err = test_rel_error(y, ref, n);
	CHECK(err <= TOLERANCE, "softmax %dx%d scale %g: relative error %g", rows, cols, scale, err);
	device_free(dev, dx);
	free(x);
	free(y);
	free(ref);
	free(cause);
}

/* Row-wise layer norm, with and without gamma and beta. */
static void
test_layernorm(int rows, int cols, int affine)
{
	size_t n = (size_t)rows * cols;
	float *x = random_host(n, -3, 5), *g = random_host((size_t)cols, 0.5f, 2), *b = random_host((size_t)cols, -1, 1);
	float *dx = to_device(x, n), *dg = to_device(g, (size_t)cols), *db = to_device(b, (size_t)cols), *y;
	double *ref = malloc(n * sizeof(double));
	char *cause = NULL;
	int r, c;

	CHECK(device_layernorm(stream, dx, affine ? dg : NULL, affine ? db : NULL, rows, cols, 1e-5f, &cause) == 0, "%s", cause);
	y = from_device(dx, n);
	for (r = 0; r < rows; r++) {
		double mean = 0, var = 0;
		for (c = 0; c < cols; c++)
			mean += x[(size_t)r * cols + c];
		mean /= cols;
		for (c = 0; c < cols; c++)
			var += pow(x[(size_t)r * cols + c] - mean, 2);
		var /= cols;
		for (c = 0; c < cols; c++) {
			double v = (x[(size_t)r * cols + c] - mean) / sqrt(var + (double)1e-5f);
			ref[(size_t)r * cols + c] = affine ? v * g[c] + b[c] : v;
		}
	}
	double err = test_rel_error(y, ref, n);
	CHECK(err <= TOLERANCE, "layernorm %dx%d affine=%d: relative error %g", rows, cols, affine, err);
	device_free(dev, dx);
	device_free(dev, dg);
	device_free(dev, db);
	free(x);
	free(g);
	free(b);
	free(y);
	free(ref);
	free(cause);
}

/* Events order work across streams and report elapsed time. */
static void
test_events(void)
{
	device_event_t *a, *b;
	char *cause = NULL;
	double us = -1;

	CHECK(device_event_create(dev, &a, &cause) == 0 && device_event_create(dev, &b, &cause) == 0, "%s", cause);
	CHECK(device_event_record(a, stream, &cause) == 0, "%s", cause);
	CHECK(device_event_record(b, stream, &cause) == 0, "%s", cause);
	CHECK(device_event_sync(b, &cause) == 0, "%s", cause);
	CHECK(device_event_query(b, &cause) == 1, "event not complete after sync");
	CHECK(device_event_elapsed_us(a, b, &us, &cause) == 0 && us >= 0, "elapsed %g: %s", us, cause);
	device_event_destroy(a);
	device_event_destroy(b);
	free(cause);
}

/* Bad calls are refused with a message instead of crashing. */
static void
test_refusals(void)
{
	device_stream_t *copy;
	device_t *bad;
	char *cause = NULL;
	void *p;

	CHECK(device_open("tpu:0", &bad, &cause) != 0 && cause != NULL && strstr(cause, "tpu:0") != NULL,
	    "unknown device accepted: %s", cause ? cause : "(no message)");
	CHECK(device_alloc(dev, 0, &p, &cause) != 0, "zero-byte allocation accepted");
	CHECK(device_stream_create(dev, DEVICE_STREAM_COPY, &copy, &cause) == 0, "%s", cause);
	CHECK(device_softmax(copy, (float *)&p, 1, 1, &cause) != 0 && strstr(cause, "compute") != NULL,
	    "compute on a copy stream accepted");
	CHECK(device_linear(stream, NULL, NULL, NULL, NULL, 0, 1, 1, DEVICE_ACT_NONE, &cause) != 0,
	    "zero-row linear accepted");
	device_stream_destroy(copy);
	free(cause);
}

int
main(void)
{
	static const enum device_act acts[] = { DEVICE_ACT_NONE, DEVICE_ACT_RELU, DEVICE_ACT_GELU, DEVICE_ACT_SIGMOID, DEVICE_ACT_TANH };
	char *cause = NULL;
	size_t a;

	dev = test_open_device();
	if (device_stream_create(dev, DEVICE_STREAM_COMPUTE, &stream, &cause) != 0) {
		fprintf(stderr, "FAIL: stream: %s\n", cause);
		return 1;
	}
	for (a = 0; a < sizeof acts / sizeof acts[0]; a++) {
		test_linear(1, 1, 1, 1, acts[a]);
		test_linear(7, 33, 5, 0, acts[a]);
		test_linear(64, 784, 256, 1, acts[a]);
		test_linear(3, 257, 1025, 1, acts[a]);
		if (acts[a] != DEVICE_ACT_NONE) {
			test_activation(1, acts[a]);
			test_activation(100003, acts[a]);
		}
	}
	test_softmax(1, 1, 1);
	test_softmax(5, 10, 10);
	test_softmax(3, 1000, 50);
	test_softmax(2, 70000, 5);
	test_layernorm(1, 1, 1);
	test_layernorm(4, 7, 0);
	test_layernorm(9, 768, 1);
	test_layernorm(2, 5000, 1);
	test_events();
	test_refusals();
	device_stream_destroy(stream);
	device_close(dev);
	free(cause);
	return test_finish("test_ops");
}
