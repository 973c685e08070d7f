/* device_cuda_reduce.cu: row-wise and reducing CUDA steps: softmax/log-softmax on any axis and layer norm (FP32, FP16 or BF16 storage, FP32 math), batch norm, group and instance norm, the Reduce ops. */
#include "config.h"

#include <math.h>


#include "device_cuda_impl.h"
#include "error.h"

/* Threads of the one-block-per-row kernels (a multiple of 32: the reductions rely on full warps). */
#define RED_THREADS 256

/* Parameters of a reduce-family step. */
struct red_params {
	const float *x, *s, *b, *mean, *var;
	const float *z;			/* LAYERNORM: the fused residual added to x (NULL: none) */
	float *y;
	int64_t outer, len, inner;	/* SOFTMAX, LAYERNORM: [outer, len, inner]; BATCHNORM: [outer, len=C, inner] */
	int64_t sst, bst;		/* LAYERNORM: scale/bias step along the row (0 or 1) */
	int vec;			/* LAYERNORM: rows in 16-byte vectors, a warp each (red_layernorm_warp) */
	float eps;
	int as_log, kind;
	enum graph_dtype dt;		/* SOFTMAX, LAYERNORM: x, y, scale and bias stored as F32, F16 or CUDA_DT_BF16 (math in FP32) */
	struct cuda_map keep, red;	/* REDUCE: kept dims and reduced dims, input strides as operand 0 */
	int64_t groups;			/* GROUPNORM: groups per image ([outer = N groups, len = group, inner = spatial]) */
	int per_channel;		/* GROUPNORM: scale and bias per channel, else per group */
	int64_t nout, nred;
};

/* Sum over the block of v (every thread gets it); sh holds RED_THREADS / 32 doubles. */
static __device__ double
red_block_sum(double v, double *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = 0.0;
	for (int w = 0; w < (int)(blockDim.x >> 5); w++)
		v += sh[w];
	return v;
}

/* Max over the block (NaN wins). */
static __device__ float
red_block_max(float v, float *sh)
{
	for (int o = 16; o > 0; o >>= 1) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = u > v || isnan(u) ? u : v;
	}
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = sh[0];
	for (int w = 1; w < (int)(blockDim.x >> 5); w++)
		v = sh[w] > v || isnan(sh[w]) ? sh[w] : v;
	return v;
}

/* Softmax of rows (inner == 1): one block per row; T (float, __half, __nv_bfloat16) is the storage, the math FP32. */
template <typename T>
static __global__ void
red_softmax_rows(struct red_params p)
{
	__shared__ double shd[RED_THREADS / 32];
	__shared__ float shf[RED_THREADS / 32];

	for (int64_t r = blockIdx.x; r < p.outer; r += gridDim.x) {
		const T *x = (const T *)(const void *)p.x + r * p.len;
		T *y = (T *)(void *)p.y + r * p.len;
		float mx = -INFINITY;
		double sum = 0.0;
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			mx = cuda_ld(x[i]) > mx || isnan(cuda_ld(x[i])) ? cuda_ld(x[i]) : mx;
		mx = red_block_max(mx, shf);
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			sum += expf(cuda_ld(x[i]) - mx);
		sum = red_block_sum(sum, shd);
		float ls = (float)log(sum), inv = (float)(1.0 / sum);
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			y[i] = cuda_st<T>(p.as_log ? cuda_ld(x[i]) - mx - ls : expf(cuda_ld(x[i]) - mx) * inv);
	}
}

/* Rows of at most this many elements take the warp-per-row kernels: up to 32 per lane in registers. */
#define RED_WARP_ROW_MAX 1024

/* Max over the warp (NaN wins), every lane gets it. */
static __device__ __forceinline__ float
red_warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = u > v || isnan(u) ? u : v;
	}
	return v;
}

/*
 * Softmax of short rows (inner == 1, len <= RED_WARP_ROW_MAX): one warp per
 * row, the row in registers (NK per lane, the smallest power of two that
 * holds it: a fixed 32 left attention's 128-key rows at a fifth of the
 * memory rate in register traffic and predicated loads), no block barriers.
 * Attention's rows (a few hundred keys, hundreds of thousands of rows) spent
 * most of a block-per-row launch idle.  The same math as red_softmax_rows:
 * FP32 values, a double sum, NaN propagates.
 */
template <typename T, int NK>
static __global__ void
red_softmax_warps(struct red_params p)
{
	const int lane = threadIdx.x & 31, len = (int)p.len;
	const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);

	for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < p.outer; r += warps) {
		const T *x = (const T *)(const void *)p.x + r * len;
		T *y = (T *)(void *)p.y + r * len;
		float v[NK], mx = -INFINITY;
		double sum = 0.0;

#pragma unroll
		for (int k = 0; k < NK; k++) {
			int i = lane + 32 * k;
			v[k] = i < len ? cuda_ld(x[i]) : -INFINITY;
			mx = v[k] > mx || isnan(v[k]) ? v[k] : mx;
		}
		mx = red_warp_max(mx);
#pragma unroll
		for (int k = 0; k < NK; k++) {
			v[k] = expf(v[k] - mx);		/* 0 past the row's end */
			sum += v[k];
		}
		for (int o = 16; o > 0; o >>= 1)
			sum += __shfl_xor_sync(0xffffffffu, sum, o);
		if (p.as_log) {
			float ls = (float)log(sum);
#pragma unroll
			for (int k = 0; k < NK; k++)
				if (lane + 32 * k < len)
					y[lane + 32 * k] = cuda_st<T>(cuda_ld(x[lane + 32 * k]) - mx - ls);
		} else {
			float inv = (float)(1.0 / sum);
#pragma unroll
			for (int k = 0; k < NK; k++)
				if (lane + 32 * k < len)
					y[lane + 32 * k] = cuda_st<T>(v[k] * inv);
		}
	}
}

/* Softmax along a strided axis (inner > 1): one thread per (outer, inner) column; storage T, math FP32. */
template <typename T>
static __global__ void
red_softmax_cols(struct red_params p)
{
	CUDA_FOR(c, p.outer * p.inner) {
		const T *x = (const T *)(const void *)p.x + (c / p.inner) * p.len * p.inner + c % p.inner;
		T *y = (T *)(void *)p.y + (c / p.inner) * p.len * p.inner + c % p.inner;
		float mx = -INFINITY;
		double sum = 0.0;
		for (int64_t i = 0; i < p.len; i++) {
			float v = cuda_ld(x[i * p.inner]);
			mx = v > mx || isnan(v) ? v : mx;
		}
		for (int64_t i = 0; i < p.len; i++)
			sum += expf(cuda_ld(x[i * p.inner]) - mx);
		float ls = (float)log(sum), inv = (float)(1.0 / sum);
		for (int64_t i = 0; i < p.len; i++) {
			float v = cuda_ld(x[i * p.inner]);
			y[i * p.inner] = cuda_st<T>(p.as_log ? v - mx - ls : expf(v - mx) * inv);
		}
	}
}

/* Element i of a layer-norm row: x's, plus the fused residual's (in FP32) when there is one. */
template <typename T>
static __device__ __forceinline__ float
red_ln_in(const T *x, const T *z, int64_t i)
{
	return z != NULL ? cuda_ld(x[i]) + cuda_ld(z[i]) : cuda_ld(x[i]);
}

/* Layer norm of rows: mean, then the biased variance around it (two passes, double), then the scaled row; storage T. */
template <typename T>
static __global__ void
red_layernorm_rows(struct red_params p)
{
	__shared__ double sh[RED_THREADS / 32];
	const T *s = (const T *)(const void *)p.s, *b = (const T *)(const void *)p.b;

	for (int64_t r = blockIdx.x; r < p.outer; r += gridDim.x) {
		const T *x = (const T *)(const void *)p.x + r * p.len;
		const T *z = p.z != NULL ? (const T *)(const void *)p.z + r * p.len : NULL;
		T *y = (T *)(void *)p.y + r * p.len;
		double mean = 0.0, var = 0.0;
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			mean += red_ln_in(x, z, i);
		mean = red_block_sum(mean, sh) / (double)p.len;
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			var += ((double)red_ln_in(x, z, i) - mean) * ((double)red_ln_in(x, z, i) - mean);
		var = red_block_sum(var, sh) / (double)p.len;
		float inv = (float)(1.0 / sqrt(var + (double)p.eps)), m = (float)mean;
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x) {
			float v = (red_ln_in(x, z, i) - m) * inv;
			if (s != NULL)
				v *= cuda_ld(s[i * p.sst]);
			if (b != NULL)
				v += cuda_ld(b[i * p.bst]);
			y[i] = cuda_st<T>(v);
		}
	}
}

/* Threads of red_layernorm_regs: a block per row, NK elements a thread. */
#define RED_LN_THREADS 128

/*
 * Layer norm of rows of at most RED_LN_THREADS * 8 elements: one block per
 * row with the row in registers (NK a thread), the same two passes in double
 * as red_layernorm_rows.  That kernel re-read the row three times through a
 * 256-thread block; a warp per row left too few warps in flight for
 * BERT-base's 1,024 rows of 768 (13.9 us against 9.3).
 */
template <typename T, int NK>
static __global__ void
red_layernorm_regs(struct red_params p)
{
	__shared__ double sh[RED_LN_THREADS / 32];
	const T *s = (const T *)(const void *)p.s, *b = (const T *)(const void *)p.b;
	const int len = (int)p.len;

	for (int64_t r = blockIdx.x; r < p.outer; r += gridDim.x) {
		const T *x = (const T *)(const void *)p.x + r * len;
		const T *z = p.z != NULL ? (const T *)(const void *)p.z + r * len : NULL;
		T *y = (T *)(void *)p.y + r * len;
		float v[NK];
		double mean = 0.0, var = 0.0;

#pragma unroll
		for (int k = 0; k < NK; k++) {
			int i = threadIdx.x + RED_LN_THREADS * k;
			v[k] = i < len ? red_ln_in(x, z, i) : 0.0f;
			mean += v[k];
		}
		mean = red_block_sum(mean, sh) / (double)len;
#pragma unroll
		for (int k = 0; k < NK; k++)
			if (threadIdx.x + RED_LN_THREADS * k < len)
				var += ((double)v[k] - mean) * ((double)v[k] - mean);
		var = red_block_sum(var, sh) / (double)len;
		float inv = (float)(1.0 / sqrt(var + (double)p.eps)), m = (float)mean;
#pragma unroll
		for (int k = 0; k < NK; k++) {
			int i = threadIdx.x + RED_LN_THREADS * k;
			if (i >= len)
				continue;
			float u = (v[k] - m) * inv;
			if (s != NULL)
				u *= cuda_ld(s[i * p.sst]);
			if (b != NULL)
				u += cuda_ld(b[i * p.bst]);
			y[i] = cuda_st<T>(u);
		}
	}
}

/* Launch red_layernorm_regs<T, NK> over p's rows (len <= RED_LN_THREADS * 8). */
#define RED_LN_LAUNCH(T, p, stream) do {								\
	int64_t nk_ = ((p)->len + RED_LN_THREADS - 1) / RED_LN_THREADS;					\
	unsigned int grid_ = red_rows_grid((p)->outer);							\
	if (nk_ <= 1) red_layernorm_regs<T, 1><<<grid_, RED_LN_THREADS, 0, stream>>>(*(p));		\
	else if (nk_ <= 2) red_layernorm_regs<T, 2><<<grid_, RED_LN_THREADS, 0, stream>>>(*(p));	\
	else if (nk_ <= 4) red_layernorm_regs<T, 4><<<grid_, RED_LN_THREADS, 0, stream>>>(*(p));	\
	else red_layernorm_regs<T, 8><<<grid_, RED_LN_THREADS, 0, stream>>>(*(p));			\
} while (0)

/* The sums of a layer-norm row: double for FP32 storage (as exact as the other kernels), FP32 for FP16/BF16. */
template <typename T> struct red_ln_acc { typedef float type; };
template <> struct red_ln_acc<float> { typedef double type; };

/* Sum over the warp (every lane gets it). */
template <typename A>
static __device__ __forceinline__ A
red_warp_sum(A v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* Rows of red_layernorm_warp per block: one a warp. */
#define RED_LN_WARPS 4

/*
 * Layer norm of rows held in registers by one warp each, read and written in
 * 16-byte vectors (W = 16 / sizeof(T) elements; lane l takes vectors l, l +
 * 32, ...: NC of them), the residual added as it is read: each element is
 * read once and written once, and the two reductions are warp shuffles with
 * no block barrier.  The block-per-row kernels above ran BERT-base's layer
 * norms at a tenth of the memory bandwidth (74 us for 8,192 rows of 768 at
 * FP16 on an H200): their two block reductions, each behind two barriers, and
 * 2-byte loads left them waiting on latency.  Needs len a multiple of W,
 * every pointer 16-byte aligned and scale/bias full rows (or none).
 */
template <typename T, int NC>
static __global__ void
red_layernorm_warp(struct red_params p)
{
	typedef typename red_ln_acc<T>::type A;
	const int W = 16 / (int)sizeof(T), lane = threadIdx.x & 31;
	const int len = (int)p.len;
	const T *s = (const T *)(const void *)p.s, *b = (const T *)(const void *)p.b;

	for (int64_t r = (int64_t)blockIdx.x * RED_LN_WARPS + (threadIdx.x >> 5); r < p.outer;
	    r += (int64_t)gridDim.x * RED_LN_WARPS) {
		const T *x = (const T *)(const void *)p.x + r * len;
		const T *z = p.z != NULL ? (const T *)(const void *)p.z + r * len : NULL;
		T *y = (T *)(void *)p.y + r * len;
		float v[NC][16 / sizeof(T)];
		A sum = 0, sq = 0;

#pragma unroll
		for (int c = 0; c < NC; c++) {
			int i = (c * 32 + lane) * W;
#pragma unroll
			for (int k = 0; k < W; k++)
				v[c][k] = 0.0f;
			if (i >= len)
				continue;
			uint4 raw = *(const uint4 *)(const void *)(x + i);
			const T *e = (const T *)(const void *)&raw;
#pragma unroll
			for (int k = 0; k < W; k++)
				v[c][k] = cuda_ld(e[k]);
			if (z != NULL) {
				uint4 rz = *(const uint4 *)(const void *)(z + i);
				const T *ez = (const T *)(const void *)&rz;
#pragma unroll
				for (int k = 0; k < W; k++)
					v[c][k] += cuda_ld(ez[k]);
			}
#pragma unroll
			for (int k = 0; k < W; k++)
				sum += (A)v[c][k];
		}
		A mean = red_warp_sum(sum) / (A)len;
#pragma unroll
		for (int c = 0; c < NC; c++)
			if ((c * 32 + lane) * W < len)
#pragma unroll
				for (int k = 0; k < W; k++)
					sq += ((A)v[c][k] - mean) * ((A)v[c][k] - mean);
		A var = red_warp_sum(sq) / (A)len;
		float inv = (float)((A)1 / sqrt(var + (A)p.eps)), m = (float)mean;
#pragma unroll
		for (int c = 0; c < NC; c++) {
			int i = (c * 32 + lane) * W;
			if (i >= len)
				continue;
			uint4 out, rs, rb;
			T *o = (T *)(void *)&out;
			const T *es = (const T *)(const void *)&rs, *eb = (const T *)(const void *)&rb;
			if (s != NULL)
				rs = *(const uint4 *)(const void *)(s + i);
			if (b != NULL)
				rb = *(const uint4 *)(const void *)(b + i);
#pragma unroll
			for (int k = 0; k < W; k++) {
				float u = (v[c][k] - m) * inv;
				if (s != NULL)
					u *= cuda_ld(es[k]);
				if (b != NULL)
					u += cuda_ld(eb[k]);
				o[k] = cuda_st<T>(u);
			}
			*(uint4 *)(void *)(y + i) = out;
		}
	}
}

/* The most 16-byte vectors a lane of red_layernorm_warp holds. */
#define RED_LN_WARP_NC 8

/* Launch red_layernorm_warp<T, NC> over p's rows, NC the smallest power of two covering the row. */
#define RED_LN_WARP_LAUNCH(T, p, stream) do {									int64_t vecs_ = (p)->len / (16 / (int64_t)sizeof(T)), nc_ = (vecs_ + 31) / 32;				int64_t blocks_ = ((p)->outer + RED_LN_WARPS - 1) / RED_LN_WARPS;					unsigned int grid_ = (unsigned int)(blocks_ < 1 ? 1 : blocks_ > 65535 * 16 ? 65535 * 16 : blocks_);		if (nc_ <= 1) red_layernorm_warp<T, 1><<<grid_, RED_LN_WARPS * 32, 0, stream>>>(*(p));			else if (nc_ <= 2) red_layernorm_warp<T, 2><<<grid_, RED_LN_WARPS * 32, 0, stream>>>(*(p));		else if (nc_ <= 4) red_layernorm_warp<T, 4><<<grid_, RED_LN_WARPS * 32, 0, stream>>>(*(p));		else red_layernorm_warp<T, 8><<<grid_, RED_LN_WARPS * 32, 0, stream>>>(*(p));			} while (0)

/*
 * Launch KERNEL<T, NK> over p's rows, one warp each, NK the smallest power of
 * two with 32 * NK >= len (len <= RED_WARP_ROW_MAX).
 */
#define RED_WARPS_LAUNCH(KERNEL, T, p, stream) do {							\
	int64_t blocks_ = ((p)->outer + RED_THREADS / 32 - 1) / (RED_THREADS / 32);			\
	unsigned int grid_ = (unsigned int)(blocks_ < 1 ? 1 : blocks_ > 65535 * 16 ? 65535 * 16 : blocks_);	\
	int64_t nk_ = ((p)->len + 31) / 32;								\
	if (nk_ <= 1) KERNEL<T, 1><<<grid_, RED_THREADS, 0, stream>>>(*(p));				\
	else if (nk_ <= 2) KERNEL<T, 2><<<grid_, RED_THREADS, 0, stream>>>(*(p));			\
	else if (nk_ <= 4) KERNEL<T, 4><<<grid_, RED_THREADS, 0, stream>>>(*(p));			\
	else if (nk_ <= 8) KERNEL<T, 8><<<grid_, RED_THREADS, 0, stream>>>(*(p));			\
	else if (nk_ <= 16) KERNEL<T, 16><<<grid_, RED_THREADS, 0, stream>>>(*(p));			\
	else KERNEL<T, 32><<<grid_, RED_THREADS, 0, stream>>>(*(p));					\
} while (0)

/* Batch norm in inference form: y = x a + b per channel, a and b folded in double as the CPU kernels do. */
static __global__ void
red_batchnorm(struct red_params p)
{
	CUDA_FOR(i, p.outer * p.len * p.inner) {
		int64_t k = (i / p.inner) % p.len;
		float a = (float)((double)p.s[k] / sqrt((double)p.var[k] + (double)p.eps));
		float b = p.b[k] - p.mean[k] * a;
		p.y[i] = p.x[i] * a + b;
	}
}

/* Product over the block (every thread gets it); sh holds RED_THREADS / 32 doubles. */
static __device__ double
red_block_prod(double v, double *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v *= __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = 1.0;
	for (int w = 0; w < (int)(blockDim.x >> 5); w++)
		v *= sh[w];
	return v;
}

/* The block's max (sign 1) or min (sign -1) of the elements reduced into the output at base, NaN winning. */
static __device__ float
red_extreme(const struct red_params &p, int64_t base, float sign, float *shf)
{
	float best = -INFINITY;

	for (int64_t k = threadIdx.x; k < p.nred; k += blockDim.x) {
		int64_t off;
		cuda_map_offsets(p.red, k, 1, &off);
		float v = sign * p.x[base + off];
		best = v > best || isnan(v) ? v : best;
	}
	return sign * red_block_max(best, shf);
}

/* log(sum(exp(x))) of the elements at base, shifted by their max so that exp cannot overflow. */
static __device__ float
red_logsumexp(const struct red_params &p, int64_t base, float *shf, double *shd)
{
	float mx = red_extreme(p, base, 1.0f, shf);
	double sum = 0.0;

	if (isinf(mx) || isnan(mx))
		return mx;
	for (int64_t k = threadIdx.x; k < p.nred; k += blockDim.x) {
		int64_t off;
		cuda_map_offsets(p.red, k, 1, &off);
		sum += exp((double)p.x[base + off] - mx);
	}
	return (float)(mx + log(red_block_sum(sum, shd)));
}

/* Mean, sum, product, L1, L2 or sum of squares of the elements at base (every thread gets it). */
static __device__ float
red_accumulate(const struct red_params &p, int64_t base, double *shd)
{
	double acc = p.kind == GRAPH_REDUCE_PROD ? 1.0 : 0.0;

	for (int64_t k = threadIdx.x; k < p.nred; k += blockDim.x) {
		int64_t off;
		cuda_map_offsets(p.red, k, 1, &off);
		double v = p.x[base + off];
		if (p.kind == GRAPH_REDUCE_PROD)
			acc *= v;
		else
			acc += p.kind == GRAPH_REDUCE_L1 ? fabs(v) :
			    p.kind == GRAPH_REDUCE_L2 || p.kind == GRAPH_REDUCE_SUMSQUARE ? v * v : v;
	}
	if (p.kind == GRAPH_REDUCE_PROD)
		return (float)red_block_prod(acc, shd);
	acc = red_block_sum(acc, shd);
	if (p.kind == GRAPH_REDUCE_MEAN)
		return (float)(acc / (double)p.nred);
	return (float)(p.kind == GRAPH_REDUCE_L2 ? sqrt(acc) : acc);
}

/* Reduce: one block per output element, the reduced elements strided through the block. */
static __global__ void
red_reduce(struct red_params p)
{
	__shared__ double shd[RED_THREADS / 32];
	__shared__ float shf[RED_THREADS / 32];

	for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
		int64_t base;
		float r;
		cuda_map_offsets(p.keep, o, 1, &base);
		if (p.kind == GRAPH_REDUCE_MAX || p.kind == GRAPH_REDUCE_MIN)
			r = red_extreme(p, base, p.kind == GRAPH_REDUCE_MAX ? 1.0f : -1.0f, shf);
		else if (p.kind == GRAPH_REDUCE_LOGSUMEXP)
			r = red_logsumexp(p, base, shf, shd);
		else
			r = red_accumulate(p, base, shd);
		if (threadIdx.x == 0)
			p.y[o] = r;
	}
}

/* Group/instance norm: one block per (n, group), statistics in double over the group as the CPU kernel takes them. */
static __global__ void
red_groupnorm(struct red_params p)
{
	__shared__ double shd[RED_THREADS / 32];

	for (int64_t ng = blockIdx.x; ng < p.outer; ng += gridDim.x) {
		const float *x = p.x + ng * p.len;
		float *y = p.y + ng * p.len;
		int64_t g = ng % p.groups, cpg = p.len / p.inner;
		double mean = 0.0, var = 0.0;

		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			mean += x[i];
		mean = red_block_sum(mean, shd) / (double)p.len;
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x)
			var += (x[i] - mean) * (x[i] - mean);
		float inv = (float)(1.0 / sqrt(red_block_sum(var, shd) / (double)p.len + p.eps)), mu = (float)mean;
		for (int64_t i = threadIdx.x; i < p.len; i += blockDim.x) {
			int64_t c = p.per_channel ? g * cpg + i / p.inner : g;
			/* x - mean first: folding the mean into the bias cancels badly when the variance is tiny. */
			y[i] = (x[i] - mu) * (inv * p.s[c]) + p.b[c];
		}
	}
}

/* Blocks for the one-block-per-row kernels. */
static unsigned int
red_rows_grid(int64_t rows)
{
	return (unsigned int)(rows < 1 ? 1 : rows > 65535 ? 65535 : rows);
}

/* Queue a step's kernel. */
static int
red_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct red_params *p = (const struct red_params *)st->p;

	switch (st->n->op) {
	case GRAPH_OP_SOFTMAX:
		if (p->inner == 1 && p->len <= RED_WARP_ROW_MAX) {
			CUDA_STORE_DISPATCH(p->dt, T, RED_WARPS_LAUNCH(red_softmax_warps, T, p, ex->stream));
			return cuda_launched("red_softmax_warps", cause);
		}
		if (p->inner == 1) {
			CUDA_STORE_DISPATCH(p->dt, T, red_softmax_rows<T><<<red_rows_grid(p->outer), RED_THREADS, 0,
			    ex->stream>>>(*p));
			return cuda_launched("red_softmax_rows", cause);
		}
		CUDA_STORE_DISPATCH(p->dt, T, red_softmax_cols<T><<<cuda_grid(p->outer * p->inner), CUDA_THREADS, 0,
		    ex->stream>>>(*p));
		return cuda_launched("red_softmax_cols", cause);
	case GRAPH_OP_LAYERNORM:
		if (p->vec) {
			CUDA_STORE_DISPATCH(p->dt, T, RED_LN_WARP_LAUNCH(T, p, ex->stream));
			return cuda_launched("red_layernorm_warp", cause);
		}
		if (p->len <= RED_LN_THREADS * 8) {
			CUDA_STORE_DISPATCH(p->dt, T, RED_LN_LAUNCH(T, p, ex->stream));
			return cuda_launched("red_layernorm_regs", cause);
		}
		CUDA_STORE_DISPATCH(p->dt, T, red_layernorm_rows<T><<<red_rows_grid(p->outer), RED_THREADS, 0,
		    ex->stream>>>(*p));
		return cuda_launched("red_layernorm_rows", cause);
	case GRAPH_OP_INSTANCENORM:
	case GRAPH_OP_GROUPNORM:
		red_groupnorm<<<red_rows_grid(p->outer), RED_THREADS, 0, ex->stream>>>(*p);
		return cuda_launched("red_groupnorm", cause);
	case GRAPH_OP_BATCHNORM:
		red_batchnorm<<<cuda_grid(p->outer * p->len * p->inner), CUDA_THREADS, 0, ex->stream>>>(*p);
		return cuda_launched("red_batchnorm", cause);
	default:
		red_reduce<<<red_rows_grid(p->nout), RED_THREADS, 0, ex->stream>>>(*p);
		return cuda_launched("red_reduce", cause);
	}
}

/* Split x at axis into [outer, len, inner] (inner_all: len covers every dim from axis on). */
static void
red_split(const struct graph_shape *x, int axis, int inner_all, struct red_params *p)
{
	p->outer = p->len = p->inner = 1;
	for (int d = 0; d < x->ndims; d++) {
		if (d < axis)
			p->outer *= x->dims[d];
		else if (d == axis || inner_all)
			p->len *= x->dims[d];
		else
			p->inner *= x->dims[d];
	}
}

/* Common start: params, x, y, and that the output has the input's element count. */
static struct red_params *
red_params_init(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, int same,
    char **cause)
{
	struct red_params *p = (struct red_params *)cuda_step_params(st, sizeof *p, cause);

	if (p == NULL)
		return NULL;
	if (same && graph_shape_elems(cuda_in_shape(cc, n, 0)) != graph_shape_elems(cuda_out_shape(cc, n, 0))) {
		error_set(cause, "input and output sizes differ");
		return NULL;
	}
	p->x = (const float *)cuda_in(cc, n, 0);
	p->y = (float *)cuda_out(cc, n, 0);
	p->dt = cuda_in_dtype(cc, n, 0);
	for (int i = 0; i <= n->ninputs; i++) {
		enum graph_dtype dt = i < n->ninputs ? cuda_in_dtype(cc, n, i) : cuda_out_dtype(cc, n, 0);
		if (i < n->ninputs && cuda_in(cc, n, i) == NULL)
			continue;
		if (dt != p->dt && (cuda_dt_reduced(dt) || cuda_dt_reduced(p->dt))) {
			error_set(cause, "%s %s storage differs from input 0's %s", i < n->ninputs ? "an input's" :
			    "the output's", cuda_dtype_name(dt), cuda_dtype_name(p->dt));
			return NULL;
		}
	}
	return p;
}

/* SOFTMAX / LOGSOFTMAX over one axis (opset 13 semantics). */
int
cuda_compile_softmax(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	struct red_params *p = red_params_init(cc, n, st, 1, cause);
	int axis = cuda_axis(n->attr.softmax.axis, xs->ndims);

	if (p == NULL)
		return -1;
	if (axis < 0)
		return error_set(cause, "axis %lld outside rank %d", (long long)n->attr.softmax.axis, xs->ndims);
	red_split(xs, axis, 0, p);
	p->as_log = n->attr.softmax.log;
	if (p->outer * p->len * p->inner > 0)
		st->run = red_run;
	return 0;
}

/* Step of a layer-norm scale/bias along the row: 1 when it has len elements, 0 for one. */
static int
red_param_step(const struct cuda_compile *cc, const struct graph_node *n, int i, int64_t len, int64_t *step,
    const float **ptr, char **cause)
{
	const struct graph_shape *s = cuda_in_shape(cc, n, i);

	*ptr = NULL;
	*step = 0;
	if (s == NULL)
		return 0;
	*ptr = (const float *)cuda_in(cc, n, i);
	if (graph_shape_elems(s) == len)
		*step = 1;
	else if (graph_shape_elems(s) != 1)
		return error_set(cause, "%s has %lld elements, not 1 or the %lld of a normalised row",
		    i == 1 ? "scale" : "bias", (long long)graph_shape_elems(s), (long long)len);
	return 0;
}

/* Whether p's layer norm can take red_layernorm_warp: whole 16-byte vectors, aligned, full scale/bias rows. */
static int
red_ln_vector_ok(const struct red_params *p)
{
	int64_t w = 16 / (p->dt == GRAPH_DT_F32 ? 4 : 2);
	const void *ptr[5] = { p->x, p->z, p->y, p->s, p->b };

	if (p->inner != 1 || p->len % w != 0 || p->len > 32 * w * RED_LN_WARP_NC ||
	    (p->s != NULL && p->sst != 1) || (p->b != NULL && p->bst != 1))
		return 0;
	for (int i = 0; i < 5; i++)
		if ((uintptr_t)ptr[i] % 16 != 0)
			return 0;
	return 1;
}

/* LAYERNORM over every dim from axis on. */
int
cuda_compile_layernorm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	struct red_params *p = red_params_init(cc, n, st, 1, cause);
	int axis = cuda_axis(n->attr.norm.axis, xs->ndims);

	if (p == NULL)
		return -1;
	if (axis < 0)
		return error_set(cause, "axis %lld outside rank %d", (long long)n->attr.norm.axis, xs->ndims);
	red_split(xs, axis, 1, p);
	p->eps = n->attr.norm.eps;
	if (red_param_step(cc, n, 1, p->len, &p->sst, &p->s, cause) != 0 ||
	    red_param_step(cc, n, 2, p->len, &p->bst, &p->b, cause) != 0)
		return -1;
	if (n->ninputs > 3 && n->inputs[3] >= 0) {
		if (graph_shape_elems(cuda_in_shape(cc, n, 3)) != p->outer * p->len ||
		    cuda_in_dtype(cc, n, 3) != cuda_in_dtype(cc, n, 0))
			return error_set(cause, "the residual differs from the input in size or dtype");
		p->z = (const float *)cuda_in(cc, n, 3);
	}
	p->vec = red_ln_vector_ok(p);
	if (p->outer * p->len > 0)
		st->run = red_run;
	return 0;
}

/* BATCHNORM (inference): per channel (dim 1). */
int
cuda_compile_batchnorm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	struct red_params *p = red_params_init(cc, n, st, 1, cause);

	if (p == NULL)
		return -1;
	if (xs->ndims < 2)
		return error_set(cause, "input must have rank >= 2");
	red_split(xs, 1, 0, p);
	for (int i = 1; i <= 4; i++)
		if (graph_shape_elems(cuda_in_shape(cc, n, i)) != p->len)
			return error_set(cause, "input %d has %lld elements, not %lld channels", i,
			    (long long)graph_shape_elems(cuda_in_shape(cc, n, i)), (long long)p->len);
	p->s = (const float *)cuda_in(cc, n, 1);
	p->b = (const float *)cuda_in(cc, n, 2);
	p->mean = (const float *)cuda_in(cc, n, 3);
	p->var = (const float *)cuda_in(cc, n, 4);
	p->eps = n->attr.norm.eps;
	if (p->outer * p->len * p->inner > 0)
		st->run = red_run;
	return 0;
}

/* REDUCE mean/sum/max over axes (none listed: all). */
int
cuda_compile_reduce(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_reduce_attr *a = &n->attr.reduce;
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	struct red_params *p = red_params_init(cc, n, st, 0, cause);
	int red[GRAPH_MAX_DIMS];
	int64_t xst[GRAPH_MAX_DIMS];

	if (p == NULL)
		return -1;
	if ((int)a->kind < 0 || a->kind >= GRAPH_REDUCE_COUNT)
		return error_set(cause, "reduce kind %d unknown", (int)a->kind);
	for (int d = 0; d < xs->ndims; d++)
		red[d] = a->naxes == 0;
	for (int k = 0; k < a->naxes; k++) {
		int ax = cuda_axis(a->axes[k], xs->ndims);
		if (ax < 0)
			return error_set(cause, "axis %lld outside rank %d", (long long)a->axes[k], xs->ndims);
		red[ax] = 1;
	}
	cuda_strides(xs, xst);
	p->nout = p->nred = 1;
	for (int d = 0; d < xs->ndims; d++) {
		struct cuda_map *m = red[d] ? &p->red : &p->keep;
		m->dims[m->nd] = xs->dims[d];
		m->st[0][m->nd++] = xst[d];
		*(red[d] ? &p->nred : &p->nout) *= xs->dims[d];
	}
	if (graph_shape_elems(cuda_out_shape(cc, n, 0)) != p->nout)
		return error_set(cause, "output has %lld elements, the reduction gives %lld",
		    (long long)graph_shape_elems(cuda_out_shape(cc, n, 0)), (long long)p->nout);
	p->kind = a->kind;
	if (p->nout > 0)
		st->run = red_run;
	return 0;
}

/* INSTANCENORM, GROUPNORM: X [N, C, ...] normalised per (n, group), scaled per channel or per group. */
int
cuda_compile_groupnorm(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	const struct graph_groupnorm_attr *a = &n->attr.groupnorm;
	struct red_params *p = red_params_init(cc, n, st, 1, cause);
	int64_t ch, want;

	if (p == NULL)
		return -1;
	if (xs->ndims < 2)
		return error_set(cause, "X must be [N, C, ...]");
	ch = xs->dims[1];
	p->groups = n->op == GRAPH_OP_INSTANCENORM ? ch : a->groups;
	p->per_channel = n->op == GRAPH_OP_INSTANCENORM || a->per_channel;
	want = p->per_channel ? ch : p->groups;
	if (p->groups < 1 || ch % p->groups != 0 || graph_shape_elems(cuda_in_shape(cc, n, 1)) != want ||
	    graph_shape_elems(cuda_in_shape(cc, n, 2)) != want)
		return error_set(cause, "%lld channels in %lld groups, or scale and bias not of %lld values",
		    (long long)ch, (long long)p->groups, (long long)want);
	p->inner = 1;
	for (int d = 2; d < xs->ndims; d++)
		p->inner *= xs->dims[d];
	p->outer = xs->dims[0] * p->groups;
	p->len = ch / p->groups * p->inner;
	p->s = (const float *)cuda_in(cc, n, 1);
	p->b = (const float *)cuda_in(cc, n, 2);
	p->eps = a->eps;
	if (p->outer * p->len > 0)
		st->run = red_run;
	return 0;
}
