/* device_cpu.c: the CPU backend, always built; OpenBLAS for GEMM, plain loops for the rest. */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "device_impl.h"
#include "error.h"

/* Cache-line alignment for buffers so vector loads never straddle lines. */
#define DEVICE_CPU_ALIGN 64

/* Memory from the heap, aligned. */
static int
cpu_alloc(device_t *dev, size_t size, void **ptr, char **cause)
{
	size_t rounded = (size + DEVICE_CPU_ALIGN - 1) / DEVICE_CPU_ALIGN * DEVICE_CPU_ALIGN;

	if (rounded < size)
		return error_set(cause, "allocation of %zu bytes overflows", size);
	*ptr = aligned_alloc(DEVICE_CPU_ALIGN, rounded);
	if (*ptr == NULL)
		return error_set(cause, "out of memory allocating %zu bytes", size);
	return 0;
}

/* Free heap memory. */
static void
cpu_free(device_t *dev, void *ptr)
{
	free(ptr);
}

/* Host memory is already where the CPU computes: nothing to pin. */
static int
cpu_host_register(device_t *dev, void *ptr, size_t size, char **cause)
{
	return 0;
}

/* Nothing was pinned. */
static int
cpu_host_unregister(device_t *dev, void *ptr, char **cause)
{
	return 0;
}

/* Streams need no state: every call completes before it returns. */
static int
cpu_stream_create(device_stream_t *s, char **cause)
{
	return 0;
}

/* Nothing to release. */
static void
cpu_stream_destroy(device_stream_t *s)
{
}

/* All work is already done. */
static int
cpu_stream_sync(device_stream_t *s, char **cause)
{
	return 0;
}

/* Events only carry the time they were recorded. */
static int
cpu_event_create(device_event_t *e, char **cause)
{
	e->cpu_time_us = 0;
	return 0;
}

/* Nothing to release. */
static void
cpu_event_destroy(device_event_t *e)
{
}

/* Record the current monotonic time. */
static int
cpu_event_record(device_event_t *e, device_stream_t *s, char **cause)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return error_set(cause, "clock_gettime failed");
	e->cpu_time_us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
	return 0;
}

/* Work before the event has finished already. */
static int
cpu_stream_wait_event(device_stream_t *s, device_event_t *e, char **cause)
{
	return 0;
}

/* Always complete. */
static int
cpu_event_query(device_event_t *e, char **cause)
{
	return 1;
}

/* Always complete. */
static int
cpu_event_sync(device_event_t *e, char **cause)
{
	return 0;
}

/* Difference of the two timestamps. */
static int
cpu_event_elapsed_us(device_event_t *a, device_event_t *b, double *us,
    char **cause)
{
	*us = b->cpu_time_us - a->cpu_time_us;
	return 0;
}

/* A copy is a memcpy. */
static int
cpu_copy(device_stream_t *s, void *dst, const void *src, size_t n, char **cause)
{
	memcpy(dst, src, n);
	return 0;
}

/* One activation on one value. */
float
device_act_apply(enum device_act act, float x)
{
	switch (act) {
	case DEVICE_ACT_RELU:
		return x > 0.0f ? x : 0.0f;
	case DEVICE_ACT_GELU:
		return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
	case DEVICE_ACT_SIGMOID:
		return 1.0f / (1.0f + expf(-x));
	case DEVICE_ACT_TANH:
		return tanhf(x);
	case DEVICE_ACT_NONE:
		break;
	}
	return x;
}

/* y = act(x w^T + bias) with one SGEMM and one pass for bias and activation. */
static int
cpu_linear(device_stream_t *s, const float *x, const float *w, const float *bias,
    float *y, int rows, int in, int out, enum device_act act, char **cause)
{
	size_t r, c;

	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f,
	    x, in, w, in, 0.0f, y, out);
	if (bias == NULL && act == DEVICE_ACT_NONE)
		return 0;
	for (r = 0; r < (size_t)rows; r++) {
		float *row = y + r * (size_t)out;
		for (c = 0; c < (size_t)out; c++)
			row[c] = device_act_apply(act, row[c] + (bias ? bias[c] : 0.0f));
	}
	return 0;
}

/* y = act(y). */
static int
cpu_activation(device_stream_t *s, float *y, size_t n, enum device_act act,
    char **cause)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = device_act_apply(act, y[i]);
	return 0;
}

/* Row-wise softmax, max-subtracted so expf never overflows. */
static int
cpu_softmax(device_stream_t *s, float *y, int rows, int cols, char **cause)
{
	size_t r, c;

	for (r = 0; r < (size_t)rows; r++) {
		float *row = y + r * (size_t)cols, max = row[0];
		double sum = 0.0;

		for (c = 1; c < (size_t)cols; c++)
			max = row[c] > max ? row[c] : max;
		for (c = 0; c < (size_t)cols; c++) {
			row[c] = expf(row[c] - max);
			sum += row[c];
		}
		for (c = 0; c < (size_t)cols; c++)
			row[c] = (float)(row[c] / sum);
	}
	return 0;
}

/* Row-wise layer norm; sums in double so long rows keep fp32 accuracy. */
static int
cpu_layernorm(device_stream_t *s, float *y, const float *gamma,
    const float *beta, int rows, int cols, float eps, char **cause)
{
	size_t r, c;

	for (r = 0; r < (size_t)rows; r++) {
		float *row = y + r * (size_t)cols;
		double mean = 0.0, var = 0.0, inv;

		for (c = 0; c < (size_t)cols; c++)
			mean += row[c];
		mean /= cols;
		for (c = 0; c < (size_t)cols; c++)
			var += (row[c] - mean) * (row[c] - mean);
		var /= cols;
		inv = 1.0 / sqrt(var + eps);
		for (c = 0; c < (size_t)cols; c++) {
			double v = (row[c] - mean) * inv;
			row[c] = (float)(v * (gamma ? gamma[c] : 1.0f) + (beta ? beta[c] : 0.0f));
		}
	}
	return 0;
}

/* Nothing beyond the struct to release. */
static void
cpu_close(device_t *dev)
{
}

static const struct device_ops cpu_ops = {
	.name = "cpu",
	.close = cpu_close,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.host_alloc = cpu_alloc,
	.host_free = cpu_free,
	.host_register = cpu_host_register,
	.host_unregister = cpu_host_unregister,
	.stream_create = cpu_stream_create,
	.stream_destroy = cpu_stream_destroy,
	.stream_sync = cpu_stream_sync,
	.event_create = cpu_event_create,
	.event_destroy = cpu_event_destroy,
	.event_record = cpu_event_record,
	.stream_wait_event = cpu_stream_wait_event,
	.event_query = cpu_event_query,
	.event_sync = cpu_event_sync,
	.event_elapsed_us = cpu_event_elapsed_us,
	.copy_h2d = cpu_copy,
	.copy_d2h = cpu_copy,
	.linear = cpu_linear,
	.activation = cpu_activation,
	.softmax = cpu_softmax,
	.layernorm = cpu_layernorm,
};

/* Fill dev with the CPU backend. */
int
device_cpu_open(device_t *dev, char **cause)
{
	dev->ops = &cpu_ops;
	dev->ctx = NULL;
	dev->is_gpu = 0;
	snprintf(dev->name, sizeof dev->name, "cpu (OpenBLAS)");
	return 0;
}
