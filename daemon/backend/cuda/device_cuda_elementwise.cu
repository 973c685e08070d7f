/* device_cuda_elementwise.cu: element-wise CUDA steps: unary, broadcast binary with a fused activation, PRelu, Where, Cast, bias/activation epilogues. */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "device_cuda_impl.h"
#include "device_elementwise.h"
#include "device_unary.h"
#include "error.h"

/* Parameters of a broadcast element-wise step (operands 0, 1, 2 of the map are inputs 0, 1, 2). */
struct ew_params {
	struct cuda_map map;
	const void *a, *b, *c;
	void *y;
	int64_t n;
	int fn, act;
	float alpha, beta, act_alpha, act_beta;
	enum graph_dtype in_dt, out_dt;
	int flat;			/* every input is read at i, i % cols or 0 (ew_access): no map walk */
	int at[2];
	int64_t cols[2], span[2];
	int vec;			/* ew_vec_ok: the binary takes ew_binary_vec_kernel */
};

/*
 * How operand k of a map over a contiguous output is read, when simply:
 * EW_AT_I (element i: same shape), EW_AT_ROW (element i % *cols: broadcast
 * over leading dims, e.g. a Linear layer's bias), EW_AT_ZERO (a scalar),
 * EW_AT_MID (element (i / *span) * *cols + i % *cols: broadcast over middle
 * dims, e.g. attention's [B, 1, 1, S] mask over [B, H, S, S] scores);
 * EW_AT_MAP otherwise.  The map walk costs a division per dim per element,
 * which made transformer residual, bias and mask adds run at a fifth of the
 * memory bandwidth.
 */
enum { EW_AT_MAP = 0, EW_AT_I, EW_AT_ROW, EW_AT_ZERO, EW_AT_MID };
static int
ew_access(const struct cuda_map *m, int k, int64_t *cols, int64_t *span)
{
	int64_t run = 1, rep = 1, lead = 1;
	int d, e, f;

	for (d = m->nd - 1; d >= 0; d--) {
		if (m->dims[d] == 1)
			continue;
		if (m->st[k][d] != run)
			break;
		run *= m->dims[d];
	}
	for (e = d; e >= 0; e--) {
		if (m->dims[e] == 1)
			continue;
		if (m->st[k][e] != 0)
			break;
		rep *= m->dims[e];
	}
	for (f = e; f >= 0; f--) {
		if (m->dims[f] == 1)
			continue;
		if (m->st[k][f] != run * lead)
			return EW_AT_MAP;
		lead *= m->dims[f];
	}
	*cols = run;
	*span = run * rep;
	if (lead > 1)
		return EW_AT_MID;
	return d < 0 ? EW_AT_I : run == 1 ? EW_AT_ZERO : EW_AT_ROW;
}

/* Element i's offset in an operand read as ew_access said (not EW_AT_MAP). */
static __device__ __forceinline__ int64_t
ew_flat_offset(int at, int64_t cols, int64_t span, int64_t i)
{
	return at == EW_AT_I ? i : at == EW_AT_ROW ? i % cols : at == EW_AT_MID ? i / span * cols + i % cols : 0;
}

/*
 * 16-byte vectors: 8 FP16/BF16 or 4 FP32 elements a thread.  One 2-byte element
 * a thread with 64-bit index math ran transformer bias and residual passes at
 * a fifth of the memory rate (7.8 us for BERT-base's 1024 x 768 bias add on an
 * H100); the vector paths take the common case (every operand read at i,
 * i % cols with cols a multiple of the vector, or 0) in 32-bit indices.
 */
template <typename T> struct ew_vec { enum { N = 16 / sizeof(T) }; };

/* An operand's vector for output elements i0 .. i0 + N - 1, read as ew_access said (not EW_AT_MAP). */
template <typename T>
static __device__ __forceinline__ void
ew_vec_load(const T *src, int at, uint32_t cols, uint32_t span, uint32_t i0, T *dst)
{
	if (at == EW_AT_ZERO) {
#pragma unroll
		for (int k = 0; k < ew_vec<T>::N; k++)
			dst[k] = src[0];
		return;
	}
	*(uint4 *)dst = *(const uint4 *)(src + (at == EW_AT_I ? i0 : at == EW_AT_ROW ? i0 % cols :
	    i0 / span * cols + i0 % cols));
}

/* 1 when n elements of esize bytes can take the vector paths with these operands (at/cols as ew_access said). */
static int
ew_vec_ok(int64_t n, size_t esize, const void *const *ptrs, int nptrs, const int *at, const int64_t *cols, int nat)
{
	int64_t v = (int64_t)(16 / esize);

	if (n <= 0 || n % v != 0 || n > (int64_t)UINT32_MAX)
		return 0;
	for (int k = 0; k < nptrs; k++)
		if (ptrs[k] != NULL && ((uintptr_t)ptrs[k] & 15) != 0)
			return 0;
	for (int k = 0; k < nat; k++)
		if (at[k] == EW_AT_MAP || ((at[k] == EW_AT_ROW || at[k] == EW_AT_MID) && cols[k] % v != 0))
			return 0;	/* (cols and a middle broadcast's span are at most n, which fits in 32 bits) */
	return 1;
}

/* ew_binary_f_kernel over 16-byte vectors (ew_vec_ok held at compile). */
template <typename T>
static __global__ void
ew_binary_vec_kernel(struct ew_params p)
{
	const int V = ew_vec<T>::N;
	const uint32_t nv = (uint32_t)(p.n / V);

	for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < nv; j += gridDim.x * blockDim.x) {
		alignas(16) T av[V], bv[V], yv[V];
		ew_vec_load((const T *)p.a, p.at[0], (uint32_t)p.cols[0], (uint32_t)p.span[0], j * V, av);
		ew_vec_load((const T *)p.b, p.at[1], (uint32_t)p.cols[1], (uint32_t)p.span[1], j * V, bv);
#pragma unroll
		for (int k = 0; k < V; k++) {
			float x = cuda_ld(av[k]), s = cuda_ld(bv[k]);
			float v = p.fn < 0 ? (x < 0.0f ? s * x : x) : device_binary_f32(p.fn, x, s);
			yv[k] = cuda_st<T>(device_unary_apply(p.act, v, p.act_alpha, p.act_beta));
		}
		*(uint4 *)((T *)p.y + (size_t)j * V) = *(const uint4 *)yv;
	}
}

/* y = act(a op b) in float over elements of storage T, a and b broadcast (fn < 0: PRelu, b the slope). */
template <typename T>
static __global__ void
ew_binary_f_kernel(struct ew_params p)
{
	const T *a = (const T *)p.a, *b = (const T *)p.b;
	T *y = (T *)p.y;

	CUDA_FOR(i, p.n) {
		int64_t off[2];
		if (p.flat) {
			off[0] = ew_flat_offset(p.at[0], p.cols[0], p.span[0], i);
			off[1] = ew_flat_offset(p.at[1], p.cols[1], p.span[1], i);
		} else {
			cuda_map_offsets(p.map, i, 2, off);
		}
		float x = cuda_ld(a[off[0]]), s = cuda_ld(b[off[1]]);
		float v = p.fn < 0 ? (x < 0.0f ? s * x : x) : device_binary_f32(p.fn, x, s);
		y[i] = cuda_st<T>(device_unary_apply(p.act, v, p.act_alpha, p.act_beta));
	}
}

/* y = a op b on integers of type T. */
template <typename T>
static __global__ void
ew_binary_int_kernel(struct ew_params p)
{
	const T *a = (const T *)p.a, *b = (const T *)p.b;

	CUDA_FOR(i, p.n) {
		int64_t off[2];
		cuda_map_offsets(p.map, i, 2, off);
		((T *)p.y)[i] = (T)device_binary_i64(p.fn, (int64_t)a[off[0]], (int64_t)b[off[1]]);
	}
}

/* The type a comparison of T elements is made in (FP16 and BF16 in float, the rest as they are). */
template <typename T> struct ew_cmp_type { typedef T type; };
template <> struct ew_cmp_type<__half> { typedef float type; };
template <> struct ew_cmp_type<__nv_bfloat16> { typedef float type; };

/* Comparison fn (Equal, Greater, Less, GreaterOrEqual, LessOrEqual) or And/Or of a and b; NaN compares false. */
template <typename V>
static __device__ __forceinline__ uint8_t
ew_compare(int fn, V a, V b)
{
	switch (fn) {
	case GRAPH_BINARY_EQUAL: return a == b;
	case GRAPH_BINARY_GREATER: return a > b;
	case GRAPH_BINARY_LESS: return a < b;
	case GRAPH_BINARY_GREATER_OR_EQUAL: return a >= b;
	case GRAPH_BINARY_AND: return a != V(0) && b != V(0);
	case GRAPH_BINARY_OR: return a != V(0) || b != V(0);
	case GRAPH_BINARY_XOR: return (a != V(0)) != (b != V(0));
	default: return a <= b;
	}
}

/* A comparison of T elements (float, __half, __nv_bfloat16, int64_t, int32_t) or And/Or of BOOL (uint8_t), broadcast, into BOOL. */
template <typename T>
static __global__ void
ew_compare_kernel(struct ew_params p)
{
	typedef typename ew_cmp_type<T>::type V;
	const T *a = (const T *)p.a, *b = (const T *)p.b;

	CUDA_FOR(i, p.n) {
		int64_t off[2];
		cuda_map_offsets(p.map, i, 2, off);
		((uint8_t *)p.y)[i] = ew_compare<V>(p.fn, (V)a[off[0]], (V)b[off[1]]);
	}
}

/* Where(cond, x, y) over elements of type T. */
template <typename T>
static __global__ void
ew_where_kernel(struct ew_params p)
{
	const uint8_t *c = (const uint8_t *)p.a;
	const T *x = (const T *)p.b, *z = (const T *)p.c;

	CUDA_FOR(i, p.n) {
		int64_t off[3];
		cuda_map_offsets(p.map, i, 3, off);
		((T *)p.y)[i] = c[off[0]] ? x[off[1]] : z[off[2]];
	}
}

/* y = fn(x) in float over elements of storage T. */
template <typename T>
static __global__ void
ew_unary_kernel(struct ew_params p)
{
	const T *x = (const T *)p.a;
	T *y = (T *)p.y;

	CUDA_FOR(i, p.n)
		y[i] = cuda_st<T>(device_unary_apply(p.fn, cuda_ld(x[i]), p.alpha, p.beta));
}

/* Element i of float dtype dt (F32, F16, CUDA_DT_BF16) as a float. */
static __device__ __forceinline__ float
ew_load_f(enum graph_dtype dt, const void *p, int64_t i)
{
	if (dt == GRAPH_DT_F16)
		return cuda_ld(((const __half *)p)[i]);
	if (dt == CUDA_DT_BF16)
		return cuda_ld(((const __nv_bfloat16 *)p)[i]);
	return ((const float *)p)[i];
}

/* Store v into element i of float dtype dt (F32, F16, CUDA_DT_BF16), rounded to nearest even. */
static __device__ __forceinline__ void
ew_store_f(enum graph_dtype dt, void *p, int64_t i, float v)
{
	if (dt == GRAPH_DT_F16)
		((__half *)p)[i] = cuda_st<__half>(v);
	else if (dt == CUDA_DT_BF16)
		((__nv_bfloat16 *)p)[i] = cuda_st<__nv_bfloat16>(v);
	else
		((float *)p)[i] = v;
}

/* Element i of an integer dtype dt as int64. */
static __device__ __forceinline__ int64_t
ew_load_i(enum graph_dtype dt, const void *p, int64_t i)
{
	switch (dt) {
	case GRAPH_DT_I64: return ((const int64_t *)p)[i];
	case GRAPH_DT_I32: return ((const int32_t *)p)[i];
	case GRAPH_DT_I8: return ((const int8_t *)p)[i];
	default: return ((const uint8_t *)p)[i];
	}
}

/* Store int64 v into element i of integer dtype dt (wrapping, BOOL as v != 0). */
static __device__ __forceinline__ void
ew_store_i(enum graph_dtype dt, void *p, int64_t i, int64_t v)
{
	switch (dt) {
	case GRAPH_DT_I64: ((int64_t *)p)[i] = v; break;
	case GRAPH_DT_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
	case GRAPH_DT_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
	case GRAPH_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
	}
}

/* Cast: floats go through float, integers through int64, F16 and BF16 rounded to nearest even. */
static __global__ void
ew_cast_kernel(struct ew_params p)
{
	int fin = cuda_dt_float(p.in_dt), fout = cuda_dt_float(p.out_dt);

	CUDA_FOR(i, p.n) {
		if (fin) {
			float v = ew_load_f(p.in_dt, p.a, i);
			if (fout)
				ew_store_f(p.out_dt, p.y, i, v);
			else if (p.out_dt == GRAPH_DT_BOOL)
				((uint8_t *)p.y)[i] = v != 0.0f;
			else
				ew_store_i(p.out_dt, p.y, i, device_float_to_int(v));
		} else {
			int64_t v = ew_load_i(p.in_dt, p.a, i);
			if (fout)
				ew_store_f(p.out_dt, p.y, i, (float)v);
			else
				ew_store_i(p.out_dt, p.y, i, v);
		}
	}
}

/* Queue a step's kernel over its elements. */
static int
ew_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct ew_params *p = (const struct ew_params *)st->p;
	unsigned int g = cuda_grid(p->n);
	const char *name = "ew_binary_f_kernel";

	switch (st->n->op) {
	case GRAPH_OP_UNARY:
		name = "ew_unary_kernel";
		CUDA_STORE_DISPATCH(p->in_dt, T, ew_unary_kernel<T><<<g, CUDA_THREADS, 0, ex->stream>>>(*p));
		break;
	case GRAPH_OP_CAST:
		name = "ew_cast_kernel";
		ew_cast_kernel<<<g, CUDA_THREADS, 0, ex->stream>>>(*p);
		break;
	case GRAPH_OP_WHERE:
		name = "ew_where_kernel";
		switch (cuda_dtype_size(p->out_dt)) {
		case 8: ew_where_kernel<uint64_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p); break;
		case 4: ew_where_kernel<uint32_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p); break;
		case 2: ew_where_kernel<uint16_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p); break;
		default: ew_where_kernel<uint8_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p); break;
		}
		break;
	default:	/* BINARY, PRELU */
		if (st->n->op == GRAPH_OP_BINARY && graph_binary_out_bool((enum graph_binary)p->fn)) {
			name = "ew_compare_kernel";
			if (p->in_dt == GRAPH_DT_BOOL)
				ew_compare_kernel<uint8_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p);
			else if (cuda_dt_float(p->in_dt))
				CUDA_STORE_DISPATCH(p->in_dt, T, ew_compare_kernel<T><<<g, CUDA_THREADS, 0, ex->stream>>>(*p));
			else if (p->in_dt == GRAPH_DT_I64)
				ew_compare_kernel<int64_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p);
			else
				ew_compare_kernel<int32_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p);
		} else if (p->vec) {
			name = "ew_binary_vec_kernel";
			CUDA_STORE_DISPATCH(p->in_dt, T, ew_binary_vec_kernel<T><<<cuda_grid(p->n / ew_vec<T>::N),
			    CUDA_THREADS, 0, ex->stream>>>(*p));
		} else if (cuda_dt_float(p->in_dt)) {
			CUDA_STORE_DISPATCH(p->in_dt, T, ew_binary_f_kernel<T><<<g, CUDA_THREADS, 0, ex->stream>>>(*p));
		} else if (p->in_dt == GRAPH_DT_I64) {
			name = "ew_binary_int_kernel<int64_t>";
			ew_binary_int_kernel<int64_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p);
		} else {
			name = "ew_binary_int_kernel<int32_t>";
			ew_binary_int_kernel<int32_t><<<g, CUDA_THREADS, 0, ex->stream>>>(*p);
		}
	}
	return cuda_launched(name, cause);
}

/* Common part of every element-wise compile: output, element count, broadcast of nin inputs. */
static struct ew_params *
ew_params_init(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, int nin,
    char **cause)
{
	const struct graph_shape *ys = cuda_out_shape(cc, n, 0);
	struct ew_params *p = (struct ew_params *)cuda_step_params(st, sizeof *p, cause);

	if (p == NULL)
		return NULL;
	p->y = cuda_out(cc, n, 0);
	p->n = graph_shape_elems(ys);
	p->a = cuda_in(cc, n, 0);
	p->b = nin > 1 ? cuda_in(cc, n, 1) : NULL;
	p->c = nin > 2 ? cuda_in(cc, n, 2) : NULL;
	p->in_dt = cuda_in_dtype(cc, n, nin > 1 && n->op == GRAPH_OP_WHERE ? 1 : 0);
	p->out_dt = cuda_out_dtype(cc, n, 0);
	p->map.nd = ys->ndims;
	for (int k = 0; k < nin; k++) {
		const struct graph_shape *s = cuda_in_shape(cc, n, k);
		if (s->ndims > ys->ndims) {
			error_set(cause, "input %d has rank %d, above the output's %d", k, s->ndims, ys->ndims);
			return NULL;
		}
		for (int d = 0; d < s->ndims; d++)
			if (s->dims[d] != 1 && s->dims[d] != ys->dims[ys->ndims - s->ndims + d]) {
				error_set(cause, "input %d does not broadcast to the output", k);
				return NULL;
			}
		cuda_map_bcast(&p->map, k, ys, s);
	}
	if (p->n > 0)
		st->run = ew_run;
	return p;
}

/* UNARY: y = fn(x). */
int
cuda_compile_unary(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct ew_params *p = ew_params_init(cc, n, st, 1, cause);

	if (p == NULL)
		return -1;
	if (graph_shape_elems(cuda_in_shape(cc, n, 0)) != p->n)
		return error_set(cause, "input and output sizes differ");
	p->fn = n->attr.unary.fn;
	p->alpha = n->attr.unary.alpha;
	p->beta = n->attr.unary.beta;
	return 0;
}

/* BINARY and PRELU: y = act(a op b), broadcast; PRelu is fn -1. */
int
cuda_compile_binary(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct ew_params *p = ew_params_init(cc, n, st, 2, cause);

	if (p == NULL)
		return -1;
	p->at[0] = ew_access(&p->map, 0, &p->cols[0], &p->span[0]);
	p->at[1] = ew_access(&p->map, 1, &p->cols[1], &p->span[1]);
	p->flat = p->at[0] != EW_AT_MAP && p->at[1] != EW_AT_MAP;
	p->fn = n->op == GRAPH_OP_PRELU ? -1 : (int)n->attr.binary.fn;
	p->act = n->op == GRAPH_OP_PRELU ? GRAPH_UNARY_NONE : n->act;
	p->act_alpha = n->act_alpha;
	p->act_beta = n->act_beta;
	if (cuda_dt_float(p->in_dt) && p->out_dt == p->in_dt &&
	    !(n->op == GRAPH_OP_BINARY && graph_binary_out_bool((enum graph_binary)p->fn))) {
		const void *ptrs[3] = { p->a, p->b, p->y };
		p->vec = ew_vec_ok(p->n, cuda_dtype_size(p->in_dt), ptrs, 3, p->at, p->cols, 2);
	}
	return 0;
}

/* WHERE: y = cond ? x : z, broadcast. */
int
cuda_compile_where(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	return ew_params_init(cc, n, st, 3, cause) == NULL ? -1 : 0;
}

/* CAST between any two graph dtypes. */
int
cuda_compile_cast(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct ew_params *p = ew_params_init(cc, n, st, 1, cause);

	if (p == NULL)
		return -1;
	if (graph_shape_elems(cuda_in_shape(cc, n, 0)) != p->n)
		return error_set(cause, "input and output sizes differ");
	return 0;
}

/* y = act(y + b) over elements of storage T, b broadcast by map operand 0. */
template <typename T>
static __global__ void
ew_bias_act_kernel(T *y, const T *b, struct cuda_map m, int64_t n, int at, int64_t cols, int64_t span, int act,
    float aa, float ab)
{
	CUDA_FOR(i, n) {
		int64_t off[1] = { 0 };
		float v = cuda_ld(y[i]);
		if (b != NULL) {
			if (at != EW_AT_MAP)
				off[0] = ew_flat_offset(at, cols, span, i);
			else
				cuda_map_offsets(m, i, 1, off);
			v += cuda_ld(b[off[0]]);
		}
		y[i] = cuda_st<T>(device_unary_apply(act, v, aa, ab));
	}
}

/* ew_bias_act_kernel over 16-byte vectors (ew_vec_ok held). */
template <typename T>
static __global__ void
ew_bias_act_vec_kernel(T *y, const T *b, uint32_t n, int at, uint32_t cols, uint32_t span, int act, float aa,
    float ab)
{
	const int V = ew_vec<T>::N;

	for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n / V; j += gridDim.x * blockDim.x) {
		alignas(16) T yv[V], bv[V];
		*(uint4 *)yv = *(const uint4 *)(y + (size_t)j * V);
		if (b != NULL)
			ew_vec_load(b, at, cols, span, j * V, bv);
#pragma unroll
		for (int k = 0; k < V; k++)
			yv[k] = cuda_st<T>(device_unary_apply(act, cuda_ld(yv[k]) + (b != NULL ? cuda_ld(bv[k]) : 0.0f), aa,
			    ab));
		*(uint4 *)(y + (size_t)j * V) = *(const uint4 *)yv;
	}
}

/* Queue y = act(y + b) over the map's elements stored as dt. */
cudaError_t
cuda_launch_bias_act(cudaStream_t stream, void *y, const void *b, enum graph_dtype dt, const struct cuda_map *m,
    int act, float act_alpha, float act_beta)
{
	int64_t n = 1, cols = 1, span = 1;
	int at = ew_access(m, 0, &cols, &span);

	for (int d = 0; d < m->nd; d++)
		n *= m->dims[d];
	if (n == 0)
		return cudaSuccess;
	const void *ptrs[2] = { y, b };
	if (ew_vec_ok(n, cuda_dtype_size(dt), ptrs, 2, &at, &cols, b != NULL)) {
		CUDA_STORE_DISPATCH(dt, T, ew_bias_act_vec_kernel<T><<<cuda_grid(n / ew_vec<T>::N), CUDA_THREADS, 0,
		    stream>>>((T *)y, (const T *)b, (uint32_t)n, at, (uint32_t)cols, (uint32_t)span, act, act_alpha,
		    act_beta));
		return cudaGetLastError();
	}
	CUDA_STORE_DISPATCH(dt, T, ew_bias_act_kernel<T><<<cuda_grid(n), CUDA_THREADS, 0, stream>>>((T *)y,
	    (const T *)b, *m, n, at, cols, span, act, act_alpha, act_beta));
	return cudaGetLastError();
}

/* y = act(y + b[channel] + z) over [n, c, inner], elements of storage T, math in float. */
template <typename T>
static __global__ void
ew_channel_kernel(T *y, const T *b, const T *z, int64_t total, int64_t c, int64_t inner, int act,
    float aa, float ab)
{
	CUDA_FOR(i, total) {
		float v = cuda_ld(y[i]);
		if (b != NULL)
			v += cuda_ld(b[(i / inner) % c]);
		if (z != NULL)
			v += cuda_ld(z[i]);
		y[i] = cuda_st<T>(device_unary_apply(act, v, aa, ab));
	}
}

/* ew_channel_kernel over 16-byte vectors: inner a multiple of the vector, so each vector is one channel's. */
template <typename T>
static __global__ void
ew_channel_vec_kernel(T *y, const T *b, const T *z, uint32_t total, uint32_t c, uint32_t inner, int act,
    float aa, float ab)
{
	const int V = ew_vec<T>::N;

	for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < total / V; j += gridDim.x * blockDim.x) {
		alignas(16) T yv[V], zv[V];
		float bias = b != NULL ? cuda_ld(b[(j * V / inner) % c]) : 0.0f;
		*(uint4 *)yv = *(const uint4 *)(y + (size_t)j * V);
		if (z != NULL)
			*(uint4 *)zv = *(const uint4 *)(z + (size_t)j * V);
#pragma unroll
		for (int k = 0; k < V; k++) {
			float v = cuda_ld(yv[k]) + bias;
			if (z != NULL)
				v += cuda_ld(zv[k]);
			yv[k] = cuda_st<T>(device_unary_apply(act, v, aa, ab));
		}
		*(uint4 *)(y + (size_t)j * V) = *(const uint4 *)yv;
	}
}

/* Queue the per-channel bias, residual and activation epilogue of a convolution (all stored as dt). */
cudaError_t
cuda_launch_channel_epilogue(cudaStream_t stream, void *y, const void *b, const void *z, enum graph_dtype dt,
    int64_t n, int64_t c, int64_t inner, int act, float act_alpha, float act_beta)
{
	int64_t total = n * c * inner;

	if (total == 0)
		return cudaSuccess;
	const void *ptrs[2] = { y, z };		/* b is read one value a vector */
	int at = EW_AT_I;
	int64_t one = 1, v = (int64_t)(16 / cuda_dtype_size(dt));
	if (inner % v == 0 && c <= (int64_t)UINT32_MAX && ew_vec_ok(total, cuda_dtype_size(dt), ptrs, 2, &at, &one, 1)) {
		CUDA_STORE_DISPATCH(dt, T, ew_channel_vec_kernel<T><<<cuda_grid(total / v), CUDA_THREADS, 0, stream>>>(
		    (T *)y, (const T *)b, (const T *)z, (uint32_t)total, (uint32_t)c, (uint32_t)inner, act, act_alpha,
		    act_beta));
		return cudaGetLastError();
	}
	CUDA_STORE_DISPATCH(dt, T, ew_channel_kernel<T><<<cuda_grid(total), CUDA_THREADS, 0, stream>>>((T *)y,
	    (const T *)b, (const T *)z, total, c, inner, act, act_alpha, act_beta));
	return cudaGetLastError();
}
