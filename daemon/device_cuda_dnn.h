/* device_cuda_dnn.h: convolutions through cuDNN's graph (backend) API, behind a small interface the conv steps call (nvcc only). */
#ifndef INFERD_DEVICE_CUDA_DNN_H
#define INFERD_DEVICE_CUDA_DNN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Contract.  cuda_dnn_conv_build describes one convolution (or, transpose,
 * the transposed convolution as cuDNN's backward-data) for concrete NCHW-style
 * shapes and asks cuDNN's heuristics for an engine, keeping only engines
 * whose numerical notes promise strict fp32 (no tensor-core TF32, no
 * down-conversion, no FFT or Winograd; d->tf32 also admits TF32 tensor-core
 * engines); the plan is built from the device's
 * properties, not a handle, so any handle of the device runs it; only engines
 * whose workspace fits d->ws_cap are taken.  It returns
 * 1 with *ws_bytes (the workspace the caller allocates once), 0 when cuDNN is
 * absent or has no accurate engine for the shape (the caller uses im2col),
 * -1 on a failure that is not that.  cuda_dnn_conv_bind fixes the device
 * addresses once (at plan compile); cuda_dnn_conv_run queues the convolution
 * on the handle's stream and never allocates, so it can be captured.
 * Without HAVE_CUDNN every build answers 0.
 */
struct cuda_dnn_conv;

struct cuda_dnn_conv_desc {
	int transpose;
	int nspatial;			/* 1 to 3 */
	int64_t x[5], w[5], y[5];	/* [N, C, spatial...], the filter, [N, M, spatial...] */
	int64_t stride[3], dilation[3], pad_begin[3], pad_end[3];
	int tf32;			/* also accept engines on TF32 tensor cores (precision tf32/fp16) */
	int f16;			/* x, w, y are FP16 (the compute type stays FP32; tensor-core engines admitted) */
	int64_t align;			/* f16: byte alignment every bound address keeps (2 to 16) */
	size_t ws_cap;			/* the most workspace the engine may take (at most CUDA_DNN_WS_CAP) */
};

/* The largest workspace any engine may ask for. */
#define CUDA_DNN_WS_CAP ((size_t)256 << 20)

int cuda_dnn_conv_build(int ordinal, const struct cuda_dnn_conv_desc *d, struct cuda_dnn_conv **out,
    size_t *ws_bytes, char **cause);
int cuda_dnn_conv_bind(struct cuda_dnn_conv *c, const float *x, const float *w, float *y, void *ws,
    char **cause);
int cuda_dnn_conv_run(const struct cuda_dnn_conv *c, void *handle, char **cause);
void cuda_dnn_conv_free(struct cuda_dnn_conv *c);
/* A cuDNN handle bound to stream (NULL *out without cuDNN); -1 on failure. */
int cuda_dnn_handle_create(void *stream, void **out, char **cause);
void cuda_dnn_handle_destroy(void *handle);

#endif
