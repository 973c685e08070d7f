/* device_cuda_spatial.cu: window and sampling CUDA steps: max/average pools (ceil_mode, count_include_pad, dilations, global) and Resize (nearest, N-linear, ONNX coordinate modes). */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "cpu_kernels.h"

#include "device_cuda_impl.h"
#include "device_resize.h"
#include "error.h"

/* A window over 1 to 3 spatial dims, always described as 3 (missing leading dims of size 1). */
struct pool_params {
	const float *x;
	float *y;
	int64_t planes;			/* N C */
	int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
	int64_t in_sz, out_sz;
	int kind, include_pad;
	enum graph_dtype dt;		/* x's and y's storage: F32, F16 or CUDA_DT_BF16 (the sums stay in double) */
};

/* Kernel taps [lo, hi) of one dim that land in [0, limit) for a window starting at start. */
static __device__ __forceinline__ void
pool_taps(int64_t start, int64_t d, int64_t k, int64_t limit, int64_t *lo, int64_t *hi)
{
	*lo = start >= 0 ? 0 : (-start + d - 1) / d;
	*hi = limit - start <= 0 ? 0 : (limit - start + d - 1) / d;
	if (*hi > k)
		*hi = k;
	if (*lo > *hi)
		*lo = *hi;
}

/*
 * One output per thread: max ignores padding; average divides by the taps
 * inside the input, or (count_include_pad) inside input plus pads, never the
 * part of a ceil_mode window past the end pad.
 */
template <typename T>
static __global__ void
pool_kernel(struct pool_params p)
{
	CUDA_FOR(i, p.planes * p.out_sz) {
		int64_t r = i % p.out_sz, o[3], lo[3], hi[3], start[3], padded = 1, plo, phi;
		const T *x = (const T *)(const void *)p.x + (i / p.out_sz) * p.in_sz;
		double sum = 0.0;
		float best = -INFINITY;
		o[2] = r % p.out[2];
		o[1] = r / p.out[2] % p.out[1];
		o[0] = r / (p.out[2] * p.out[1]);
		for (int a = 0; a < 3; a++) {
			start[a] = o[a] * p.s[a] - p.pb[a];
			pool_taps(start[a], p.d[a], p.k[a], p.in[a], &lo[a], &hi[a]);
			pool_taps(start[a], p.d[a], p.k[a], p.in[a] + p.pe[a], &plo, &phi);
			padded *= phi;
		}
		for (int64_t a = lo[0]; a < hi[0]; a++)
			for (int64_t b = lo[1]; b < hi[1]; b++) {
				const T *row = x + ((start[0] + a * p.d[0]) * p.in[1] + start[1] + b * p.d[1]) * p.in[2] +
				    start[2];
				for (int64_t c = lo[2]; c < hi[2]; c++) {
					float v = cuda_ld(row[c * p.d[2]]);
					sum += v;
					best = v > best || isnan(v) ? v : best;
				}
			}
		int64_t valid = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
		int64_t cnt = p.include_pad ? padded : valid;
		((T *)(void *)p.y)[i] = cuda_st<T>(p.kind == GRAPH_POOL_MAX ? best : cnt > 0 ? (float)(sum / (double)cnt) :
		    0.0f);
	}
}

/* Queue the pool. */
static int
pool_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct pool_params *p = (const struct pool_params *)st->p;

	CUDA_STORE_DISPATCH(p->dt, T, pool_kernel<T><<<cuda_grid(p->planes * p->out_sz), CUDA_THREADS, 0,
	    ex->stream>>>(*p));
	return cuda_launched("pool_kernel", cause);
}

/* POOL: geometry from the attributes (global: the whole plane), sizes from the shapes. */
int
cuda_compile_pool(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_pool_attr *a = &n->attr.pool;
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct pool_params *p = (struct pool_params *)cuda_step_params(st, sizeof *p, cause);
	int ns = xs->ndims - 2, off;

	if (p == NULL)
		return -1;
	if (ns < 1 || ns > 3 || ys->ndims != xs->ndims || ys->dims[0] != xs->dims[0] || ys->dims[1] != xs->dims[1])
		return error_set(cause, "input and output must be [N, C, 1 to 3 spatial dims] alike");
	if (!a->global && a->w.nspatial != ns)
		return error_set(cause, "window has %d spatial dims, the input %d", a->w.nspatial, ns);
	off = 3 - ns;
	p->in_sz = p->out_sz = 1;
	for (int i = 0; i < 3; i++) {
		int s = i - off;
		p->in[i] = s < 0 ? 1 : xs->dims[2 + s];
		p->out[i] = s < 0 ? 1 : ys->dims[2 + s];
		p->k[i] = s < 0 ? 1 : a->global ? p->in[i] : a->w.kernel[s];
		p->s[i] = s < 0 || a->global ? 1 : a->w.stride[s];
		p->d[i] = s < 0 || a->global ? 1 : a->w.dilation[s];
		p->pb[i] = s < 0 || a->global ? 0 : a->w.pad_begin[s];
		p->pe[i] = s < 0 || a->global ? 0 : a->w.pad_end[s];
		if (p->k[i] < 1 || p->s[i] < 1 || p->d[i] < 1)
			return error_set(cause, "kernel, stride and dilation must be >= 1");
		p->in_sz *= p->in[i];
		p->out_sz *= p->out[i];
	}
	p->planes = xs->dims[0] * xs->dims[1];
	p->x = (const float *)cuda_in(cc, n, 0);
	p->y = (float *)cuda_out(cc, n, 0);
	p->dt = cuda_in_dtype(cc, n, 0);
	if (cuda_out_dtype(cc, n, 0) != p->dt)
		return error_set(cause, "input and output storage differ");
	p->kind = a->kind;
	p->include_pad = a->count_include_pad;
	if (p->planes * p->out_sz > 0)
		st->run = pool_run;
	return 0;
}

/* Resize: taps per axis in the workspace (computed on the host at compile, as the CPU kernels compute them). */
struct resize_params {
	const float *x;
	float *y;
	int nd;
	int64_t out[GRAPH_MAX_DIMS], ist[GRAPH_MAX_DIMS], tap0[GRAPH_MAX_DIMS];
	int64_t n;
	const struct resize_tap *taps;
};

/* Output element o: a weighted sum over the 2^k corners of the interpolated axes. */
static __global__ void
resize_kernel(struct resize_params p)
{
	CUDA_FOR(o, p.n)
		p.y[o] = device_resize_one(p.nd, p.out, p.ist, p.tap0, p.taps, p.x, o);
}

/* Queue the resize. */
static int
resize_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct resize_params *p = (const struct resize_params *)st->p;

	resize_kernel<<<cuda_grid(p->n), CUDA_THREADS, 0, ex->stream>>>(*p);
	return cuda_launched("resize_kernel", cause);
}

/* RESIZE: taps of every axis computed here and uploaded once. */
int
cuda_compile_resize(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_resize_attr *a = &n->attr.resize;
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct resize_params *p = (struct resize_params *)cuda_step_params(st, sizeof *p, cause);
	struct resize_tap *taps;
	int64_t ntaps = 0;
	int rc;

	if (p == NULL)
		return -1;
	if (xs->ndims != ys->ndims)
		return error_set(cause, "output rank %d differs from input rank %d", ys->ndims, xs->ndims);
	if (a->coord == CPU_RESIZE_TF_CROP_AND_RESIZE)
		return error_set(cause, "coordinate mode tf_crop_and_resize is not supported");
	for (int i = 0; i < xs->ndims; i++) {
		if (xs->dims[i] == 0 && ys->dims[i] > 0)
			return error_set(cause, "cannot resize an empty dim %d", i);
		p->tap0[i] = ntaps;
		ntaps += ys->dims[i];
	}
	cuda_strides(xs, p->ist);
	p->nd = xs->ndims;
	memcpy(p->out, ys->dims, sizeof p->out);
	p->n = graph_shape_elems(ys);
	p->x = (const float *)cuda_in(cc, n, 0);
	p->y = (float *)cuda_out(cc, n, 0);
	if (p->n == 0)
		return 0;
	if ((taps = (struct resize_tap *)calloc((size_t)ntaps, sizeof *taps)) == NULL)
		return error_set(cause, "out of memory");
	for (int i = 0; i < xs->ndims; i++)
		device_resize_axis_taps(a, i, xs->dims[i], ys->dims[i], taps + p->tap0[i]);
	rc = cuda_step_ws(st, (size_t)ntaps * sizeof *taps, cause) == 0 &&
	    cuda_upload(st->ws, taps, (size_t)ntaps * sizeof *taps, cause) == 0 ? 0 : -1;
	free(taps);
	p->taps = (const struct resize_tap *)st->ws;
	if (rc == 0)
		st->run = resize_run;
	return rc;
}
