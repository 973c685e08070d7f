/* device_cuda_conv.cu: Conv and ConvTranspose through cuDNN's graph API where it has a strict-fp32 engine (TF32, FP16 or BF16 ones at those precisions; bias + residual + ReLU fused into cuDNN's graph where it can), else im2col/col2im around cuBLAS SGEMM; a one-kernel bias + residual + activation epilogue otherwise. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda_dnn.h"
#include "device_cuda_impl.h"
#include "error.h"

/* The most workspace one conv step takes for its column buffer; larger batches run in chunks of images. */
#define CONV_WS_CAP ((size_t)256 << 20)

/* A conv's geometry as 3 spatial dims (missing leading dims of size 1). */
struct conv_params {
	const float *x, *w, *b, *z;
	float *y, *col;
	int64_t n, c, m, g;		/* batch, input channels, output channels, groups */
	int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
	int64_t in_sz, out_sz, k_sz;
	int64_t chunk;			/* images per column buffer */
	int direct;			/* 1x1, stride 1, no pad: the input is its own column matrix */
	int transpose;
	struct cuda_dnn_conv *dnn;	/* the cuDNN plan, or NULL for im2col */
	int fused;			/* dnn computes the whole epilogue: no epilogue kernel */
	enum graph_dtype dt;		/* x, w, b, z, y storage; F16/CUDA_DT_BF16: cuDNN only (im2col is FP32) */
	int act;
	float act_alpha, act_beta;
};

/* col[img][c k][l] = x[img][c][o * s - pb + k * d] (0 outside) over nimg images. */
static __global__ void
conv_im2col_kernel(struct conv_params p, const float *x, int64_t nimg)
{
	int64_t ck = p.c * p.k_sz;

	CUDA_FOR(i, nimg * ck * p.out_sz) {
		int64_t l = i % p.out_sz, r = i / p.out_sz, kk = r % p.k_sz, c = r / p.k_sz % p.c, img = r / ck;
		int64_t o0 = l / (p.out[1] * p.out[2]), o1 = l / p.out[2] % p.out[1], o2 = l % p.out[2];
		int64_t k0 = kk / (p.k[1] * p.k[2]), k1 = kk / p.k[2] % p.k[1], k2 = kk % p.k[2];
		int64_t a = o0 * p.s[0] - p.pb[0] + k0 * p.d[0], b = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
		int64_t e = o2 * p.s[2] - p.pb[2] + k2 * p.d[2];
		float v = 0.0f;
		if (a >= 0 && a < p.in[0] && b >= 0 && b < p.in[1] && e >= 0 && e < p.in[2])
			v = x[(img * p.c + c) * p.in_sz + (a * p.in[1] + b) * p.in[2] + e];
		p.col[i] = v;
	}
}

/* ConvTranspose's gather: y[img][m][o] = sum over taps k with (o + pb - k d) = i s, 0 <= i < in, of col[img][m k][i]. */
static __global__ void
conv_col2im_kernel(struct conv_params p, float *y, int64_t nimg)
{
	CUDA_FOR(i, nimg * p.m * p.out_sz) {
		int64_t l = i % p.out_sz, mi = i / p.out_sz % p.m, img = i / (p.out_sz * p.m);
		int64_t o[3] = { l / (p.out[1] * p.out[2]), l / p.out[2] % p.out[1], l % p.out[2] };
		const float *col = p.col + (img * p.m + mi) * p.k_sz * p.in_sz;
		float acc = 0.0f;
		for (int64_t k0 = 0; k0 < p.k[0]; k0++) {
			int64_t a = o[0] + p.pb[0] - k0 * p.d[0];
			if (a < 0 || a % p.s[0] != 0 || a / p.s[0] >= p.in[0])
				continue;
			for (int64_t k1 = 0; k1 < p.k[1]; k1++) {
				int64_t b = o[1] + p.pb[1] - k1 * p.d[1];
				if (b < 0 || b % p.s[1] != 0 || b / p.s[1] >= p.in[1])
					continue;
				for (int64_t k2 = 0; k2 < p.k[2]; k2++) {
					int64_t e = o[2] + p.pb[2] - k2 * p.d[2];
					if (e < 0 || e % p.s[2] != 0 || e / p.s[2] >= p.in[2])
						continue;
					acc += col[((k0 * p.k[1] + k1) * p.k[2] + k2) * p.in_sz +
					    (a / p.s[0] * p.in[1] + b / p.s[1]) * p.in[2] + e / p.s[2]];
				}
			}
		}
		y[i] = acc;
	}
}

/* Forward conv GEMMs for images [i0, i0 + nimg) whose columns are at cols (row stride out_sz). */
static int
conv_fwd_gemm(const struct conv_params *p, const struct cuda_exec *ex, const float *cols, int64_t i0, int64_t nimg,
    char **cause)
{
	const float one = 1.0f, zero = 0.0f;
	int64_t mg = p->m / p->g, ckg = p->c / p->g * p->k_sz, L = p->out_sz;
	cublasStatus_t bs;

	if (p->g == 1) {
		bs = cublasSgemmStridedBatched(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)L, (int)mg, (int)ckg, &one,
		    cols, (int)L, ckg * L, p->w, (int)ckg, 0, &zero, p->y + i0 * p->m * L, (int)L, p->m * L, (int)nimg);
		return bs == CUBLAS_STATUS_SUCCESS ? 0 : cuda_blas_fail(cause, bs, "cublasSgemmStridedBatched(conv)");
	}
	for (int64_t j = 0; j < nimg; j++) {
		bs = cublasSgemmStridedBatched(ex->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)L, (int)mg, (int)ckg, &one,
		    cols + j * p->c * p->k_sz * L, (int)L, ckg * L, p->w, (int)ckg, mg * ckg, &zero,
		    p->y + (i0 + j) * p->m * L, (int)L, mg * L, (int)p->g);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSgemmStridedBatched(grouped conv)");
	}
	return 0;
}

/* Transposed conv GEMMs: col[img][g][mg k][in] = W_g^T x_g for images [i0, i0 + nimg). */
static int
conv_tr_gemm(const struct conv_params *p, const struct cuda_exec *ex, int64_t i0, int64_t nimg, char **cause)
{
	const float one = 1.0f, zero = 0.0f;
	int64_t cg = p->c / p->g, mgk = p->m / p->g * p->k_sz, L = p->in_sz;
	const float *x = p->x + i0 * p->c * L;
	cublasStatus_t bs;

	if (p->g == 1) {
		bs = cublasSgemmStridedBatched(ex->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)L, (int)mgk, (int)cg, &one,
		    x, (int)L, p->c * L, p->w, (int)mgk, 0, &zero, p->col, (int)L, mgk * L, (int)nimg);
		return bs == CUBLAS_STATUS_SUCCESS ? 0 : cuda_blas_fail(cause, bs, "cublasSgemmStridedBatched(conv transpose)");
	}
	for (int64_t j = 0; j < nimg; j++) {
		bs = cublasSgemmStridedBatched(ex->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)L, (int)mgk, (int)cg, &one,
		    x + j * p->c * L, (int)L, cg * L, p->w, (int)mgk, cg * mgk, &zero, p->col + j * p->m * p->k_sz * L,
		    (int)L, mgk * L, (int)p->g);
		if (bs != CUBLAS_STATUS_SUCCESS)
			return cuda_blas_fail(cause, bs, "cublasSgemmStridedBatched(grouped conv transpose)");
	}
	return 0;
}

/* Queue the bias + residual + activation epilogue when there is one. */
static int
conv_epilogue(const struct conv_params *p, const struct cuda_exec *ex, char **cause)
{
	cudaError_t err;

	if (p->b == NULL && p->z == NULL && p->act == GRAPH_UNARY_NONE)
		return 0;
	err = cuda_launch_channel_epilogue(ex->stream, p->y, p->b, p->z, p->dt, p->n, p->m, p->out_sz, p->act,
	    p->act_alpha, p->act_beta);
	if (err != cudaSuccess)
		return cuda_fail(cause, err, "ew_channel_kernel<<<>>>");
	return 0;
}

/* Queue the cuDNN convolution, then the epilogue. */
static int
conv_dnn_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct conv_params *p = (const struct conv_params *)st->p;

	if (ex->dnn == NULL)
		return error_set(cause, "the stream has no cuDNN handle");
	if (cuda_dnn_conv_run(p->dnn, ex->dnn, cause) != 0)
		return -1;
	return p->fused ? 0 : conv_epilogue(p, ex, cause);
}

/* Queue the conv chunk by chunk, then the epilogue over the whole output. */
static int
conv_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct conv_params *p = (const struct conv_params *)st->p;

	for (int64_t i0 = 0; i0 < p->n; i0 += p->chunk) {
		int64_t nimg = p->n - i0 < p->chunk ? p->n - i0 : p->chunk;
		if (p->transpose) {
			if (conv_tr_gemm(p, ex, i0, nimg, cause) != 0)
				return -1;
			conv_col2im_kernel<<<cuda_grid(nimg * p->m * p->out_sz), CUDA_THREADS, 0, ex->stream>>>(*p,
			    p->y + i0 * p->m * p->out_sz, nimg);
			if (cuda_launched("conv_col2im_kernel", cause) != 0)
				return -1;
			continue;
		}
		if (!p->direct) {
			conv_im2col_kernel<<<cuda_grid(nimg * p->c * p->k_sz * p->out_sz), CUDA_THREADS, 0, ex->stream>>>(
			    *p, p->x + i0 * p->c * p->in_sz, nimg);
			if (cuda_launched("conv_im2col_kernel", cause) != 0)
				return -1;
		}
		if (conv_fwd_gemm(p, ex, p->direct ? p->x + i0 * p->c * p->in_sz : p->col, i0, nimg, cause) != 0)
			return -1;
	}
	return conv_epilogue(p, ex, cause);
}

/* Geometry from the attributes and shapes; W is [M, C/g, k...] (conv) or [C, M/g, k...] (transpose). */
static int
conv_geom(const struct cuda_compile *cc, const struct graph_node *n, struct conv_params *p, char **cause)
{
	const struct graph_window_attr *a = &n->attr.conv;
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ws = cuda_in_shape(cc, n, 1);
	const struct graph_shape *ys = cuda_out_shape(cc, n, 0);
	int ns = xs->ndims - 2, off = 3 - ns;

	if (ns < 1 || ns > 3 || ws->ndims != xs->ndims || ys->ndims != xs->ndims || a->nspatial != ns)
		return error_set(cause, "X, W and Y must be [N, C, 1 to 3 spatial dims] matching the window");
	p->g = a->group < 1 ? 1 : a->group;
	p->n = xs->dims[0];
	p->c = xs->dims[1];
	p->m = ys->dims[1];
	if (p->c % p->g != 0 || p->m % p->g != 0 || ys->dims[0] != p->n)
		return error_set(cause, "channels %lld -> %lld do not divide into %lld groups", (long long)p->c,
		    (long long)p->m, (long long)p->g);
	if (p->transpose ? ws->dims[0] != p->c || ws->dims[1] * p->g != p->m : ws->dims[0] != p->m || ws->dims[1] * p->g != p->c)
		return error_set(cause, "W's channel dims do not match X, Y and group");
	p->in_sz = p->out_sz = p->k_sz = 1;
	for (int i = 0; i < 3; i++) {
		int s = i - off;
		p->in[i] = s < 0 ? 1 : xs->dims[2 + s];
		p->out[i] = s < 0 ? 1 : ys->dims[2 + s];
		p->k[i] = s < 0 ? 1 : ws->dims[2 + s];
		p->s[i] = s < 0 ? 1 : a->stride[s];
		p->d[i] = s < 0 ? 1 : a->dilation[s];
		p->pb[i] = s < 0 ? 0 : a->pad_begin[s];
		if (p->s[i] < 1 || p->d[i] < 1 || p->pb[i] < 0)
			return error_set(cause, "stride and dilation must be >= 1, pads >= 0");
		p->in_sz *= p->in[i];
		p->out_sz *= p->out[i];
		p->k_sz *= p->k[i];
	}
	return 0;
}

/* Sizes cuBLAS's int arguments and the column buffer can hold; the chunk of images per buffer. */
static int
conv_sizes(struct conv_params *p, char **cause)
{
	int64_t rows = p->transpose ? p->m * p->k_sz : p->c * p->k_sz, L = p->transpose ? p->in_sz : p->out_sz;
	size_t per_image = (size_t)rows * (size_t)L * sizeof(float);

	if (rows > INT_MAX || L > INT_MAX || p->m > INT_MAX || p->c > INT_MAX || p->n > INT_MAX)
		return error_set(cause, "sizes beyond cuBLAS's int limit");
	p->direct = !p->transpose && p->k_sz == 1 && p->in_sz == p->out_sz;
	for (int i = 0; i < 3; i++)
		p->direct &= p->s[i] == 1 && p->pb[i] == 0 && p->in[i] == p->out[i];
	if (p->direct) {
		p->chunk = p->n;
		return 0;
	}
	if (per_image > CONV_WS_CAP)
		return error_set(cause, "one image's column buffer would take %zu bytes (limit %zu)", per_image,
		    CONV_WS_CAP);
	p->chunk = (int64_t)(CONV_WS_CAP / (per_image ? per_image : 1));
	if (p->chunk > p->n)
		p->chunk = p->n;
	if (p->chunk < 1)
		p->chunk = 1;
	return 0;
}

/* Release the cuDNN plan. */
static void
conv_fini(struct cuda_step *st)
{
	struct conv_params *p = (struct conv_params *)st->p;

	if (p != NULL) {
		cuda_dnn_conv_free(p->dnn);
		p->dnn = NULL;
	}
}

/* The largest power of two up to 16 dividing every address or'ed into u (FP16 cuDNN descriptors promise it). */
static int64_t
conv_align(uintptr_t u)
{
	u |= 16;
	return (int64_t)(u & (~u + 1));
}

/*
 * Ask cuDNN to fuse the epilogue when it is bias, residual and at most a ReLU
 * (INFERD_CUDA_CONV_FUSE=0: never, =1: at FP16/BF16 too).  FP16 storage keeps the
 * separate epilogue by default: on an H100 ResNet-50's batch of 8 took 1.25 ms
 * with cuDNN's fused FP16 engines against 1.14 ms with the vectorized
 * epilogue kernel, while FP32 gained 2.5-3.6 % from fusing.
 */
static void
conv_fuse_desc(const struct conv_params *p, const char *fuse, struct cuda_dnn_conv_desc *d)
{
	int never = fuse != NULL && strcmp(fuse, "0") == 0, reduced_too = fuse != NULL && strcmp(fuse, "1") == 0;

	/* Another activation keeps the whole epilogue in the kernel: it is never split with cuDNN. */
	if (p->transpose || never || (cuda_dt_reduced(p->dt) && !reduced_too) ||
	    (p->act != GRAPH_UNARY_NONE && p->act != GRAPH_UNARY_RELU))
		return;
	d->has_bias = p->b != NULL;
	d->has_z = p->z != NULL;
	d->relu = p->act == GRAPH_UNARY_RELU;
	d->epi_align = conv_align((uintptr_t)p->b | (uintptr_t)p->z);
}

/* The storage every operand and the output share into *dt; -1 with *cause when they differ. */
static int
conv_store(const struct cuda_compile *cc, const struct graph_node *n, enum graph_dtype *dt, char **cause)
{
	*dt = cuda_out_dtype(cc, n, 0);
	for (int i = 0; i < n->ninputs; i++)
		if (cuda_in(cc, n, i) != NULL && cuda_in_dtype(cc, n, i) != *dt)
			return error_set(cause, "operands mix %s and %s storage", cuda_dtype_name(cuda_in_dtype(cc, n, i)),
			    cuda_dtype_name(*dt));
	return 0;
}

/*
 * Try cuDNN for this shape: 1 when its plan, workspace and addresses are set
 * (p->fused when the plan also runs the epilogue), 0 when cuDNN cannot (or
 * INFERD_CUDA_CONV=im2col asks for the fallback), -1 on error.
 */
static int
conv_try_dnn(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, struct conv_params *p,
    char **cause)
{
	const struct graph_window_attr *a = &n->attr.conv;
	const char *force = getenv("INFERD_CUDA_CONV");
	struct cuda_dnn_conv_desc d;
	size_t ws = 0;
	int rc;

	if (force != NULL && strcmp(force, "im2col") == 0)
		return 0;
	memset(&d, 0, sizeof d);
	d.transpose = p->transpose;
	d.tf32 = cc->precision != GRAPH_PRECISION_FP32;
	d.dt = p->dt;
	d.align = conv_align((uintptr_t)p->x | (uintptr_t)p->w | (uintptr_t)p->y);
	conv_fuse_desc(p, getenv("INFERD_CUDA_CONV_FUSE"), &d);
	d.nspatial = a->nspatial;
	d.ws_cap = cuda_scratch_limit(cc, CUDA_DNN_WS_CAP);
	memcpy(d.x, cuda_in_shape(cc, n, 0)->dims, sizeof d.x);
	memcpy(d.w, cuda_in_shape(cc, n, 1)->dims, sizeof d.w);
	memcpy(d.y, cuda_out_shape(cc, n, 0)->dims, sizeof d.y);
	for (int i = 0; i < a->nspatial; i++) {
		d.stride[i] = a->stride[i];
		d.dilation[i] = a->dilation[i];
		d.pad_begin[i] = a->pad_begin[i];
		d.pad_end[i] = a->pad_end[i];
	}
	if ((rc = cuda_dnn_conv_build(cc->ordinal, cc->cache, &d, cc->dnn, &p->dnn, &ws, cause)) != 1)
		return rc;
	p->fused = cuda_dnn_conv_fused(p->dnn);
	st->fini = conv_fini;
	if (cuda_step_scratch(cc, st, ws, cause) != 0)
		return -1;
	/* A probe's workspace is no memory: it only measures, and never runs. */
	if ((cc->ws == NULL || cc->ws->mode != CUDA_WS_PROBE) &&
	    cuda_dnn_conv_bind(p->dnn, p->x, p->w, p->b, p->z, p->y, st->ws, cause) != 0)
		return -1;
	st->run = conv_dnn_run;
	return 1;
}

/* The column buffer: as many images at once as the scratch limit allows (at least one). */
static int
conv_col_scratch(const struct cuda_compile *cc, struct cuda_step *st, struct conv_params *p, char **cause)
{
	size_t per_image = (size_t)(p->transpose ? p->m * p->k_sz * p->in_sz : p->c * p->k_sz * p->out_sz) * sizeof(float);
	size_t lim = cuda_scratch_limit(cc, CONV_WS_CAP);

	if (per_image > lim)
		return error_set(cause, "one image's column buffer needs %zu bytes; the workspace has %zu", per_image, lim);
	p->chunk = (int64_t)(lim / (per_image ? per_image : 1));
	if (p->chunk > p->n)
		p->chunk = p->n;
	if (p->chunk < 1)
		p->chunk = 1;
	return cuda_step_scratch(cc, st, (size_t)p->chunk * per_image, cause);
}

/* Shared compile of Conv and ConvTranspose. */
static int
conv_compile(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, int transpose,
    char **cause)
{
	struct conv_params *p = (struct conv_params *)cuda_step_params(st, sizeof *p, cause);
	const struct graph_shape *bs = cuda_in_shape(cc, n, 2), *zs = transpose ? NULL : cuda_in_shape(cc, n, 3);

	if (p == NULL)
		return -1;
	p->transpose = transpose;
	if (conv_geom(cc, n, p, cause) != 0 || conv_sizes(p, cause) != 0 || conv_store(cc, n, &p->dt, cause) != 0)
		return -1;
	if (bs != NULL && graph_shape_elems(bs) != p->m)
		return error_set(cause, "bias has %lld elements, not %lld", (long long)graph_shape_elems(bs), (long long)p->m);
	if (zs != NULL && graph_shape_elems(zs) != graph_shape_elems(cuda_out_shape(cc, n, 0)))
		return error_set(cause, "residual input's size differs from the output's");
	p->x = (const float *)cuda_in(cc, n, 0);
	p->w = (const float *)cuda_in(cc, n, 1);
	p->b = (const float *)cuda_in(cc, n, 2);
	p->z = zs != NULL ? (const float *)cuda_in(cc, n, 3) : NULL;
	p->y = (float *)cuda_out(cc, n, 0);
	p->act = n->act;
	p->act_alpha = n->act_alpha;
	p->act_beta = n->act_beta;
	if (p->n * p->m * p->out_sz == 0)
		return 0;
	if (p->c * p->k_sz == 0 || p->in_sz == 0)
		return error_set(cause, "empty input channels or window with a non-empty output");
	switch (conv_try_dnn(cc, n, st, p, cause)) {
	case 1:
		return 0;
	case -1:
		return -1;
	default:
		break;
	}
	if (cuda_dt_reduced(p->dt))
		return CUDA_COMPILE_FALLBACK;	/* no FP16/BF16 engine: the plan runs this conv in FP32 */
	if (!p->direct && conv_col_scratch(cc, st, p, cause) != 0)
		return -1;
	p->col = (float *)st->ws;
	st->run = conv_run;
	return 0;
}

/* 1 when st is a conv step whose cuDNN plan runs its epilogue too (the profile says so). */
int
cuda_conv_step_fused(const struct cuda_step *st)
{
	return st->run == conv_dnn_run && ((const struct conv_params *)st->p)->fused;
}

/* CONV: y = act(conv(x, W) + B + Z). */
int
cuda_compile_conv(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	return conv_compile(cc, n, st, 0, cause);
}

/* CONV_TRANSPOSE: y = convT(x, W) + B (output size, output_padding included, from the output's shape). */
int
cuda_compile_conv_transpose(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	return conv_compile(cc, n, st, 1, cause);
}
