/* device_cuda_tensor.cu: data-movement CUDA steps for any dtype: copy/reshape, transpose, expand, slice, concat, split, gather, gather-elements, pad, tile. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <cuda_fp16.h>

#include "device_cuda_impl.h"
#include "device_index.h"
#include "error.h"

/* Most pieces one step copies (Concat's inputs, Split's outputs). */
#define TENSOR_MAX_PIECES 64

/* One strided copy: dst[sum c st[1]] = src[sum c st[0]] over the map's dims. */
struct tensor_piece {
	struct cuda_map map;
	const char *src;
	char *dst;
	int64_t n;
	int wide;			/* copies move wide-byte units (tensor_piece_widen), 0: the step's elements */
};

/* Pad geometry: begin pads and input dims per output dim, mode, the fill element's bytes. */
struct tensor_pad {
	int64_t pb[GRAPH_MAX_DIMS], in[GRAPH_MAX_DIMS];
	int mode;
	unsigned char fill[8];
};

/* GatherElements geometry: the indices' (and output's) dims, data's element strides, the axis. */
struct tensor_gather_el {
	int nd, axis;
	int64_t idims[GRAPH_MAX_DIMS], dst[GRAPH_MAX_DIMS];
	int64_t dim, n;			/* data's size along the axis; elements of indices */
};

/* Tile: the input's dims (the piece's map holds the output's dims and the input's strides). */
struct tensor_tile {
	int64_t in[GRAPH_MAX_DIMS];
};

/* Parameters of a data-movement step. */
struct tensor_params {
	size_t es;			/* element size */
	int npieces;
	struct tensor_piece piece[TENSOR_MAX_PIECES];
	/* GATHER */
	int64_t outer, dim, nidx, inner;
	const void *idx;
	int idx64;
	struct tensor_pad pad;
	struct tensor_gather_el ge;	/* GATHER_ELEMENTS */
	struct tensor_tile tile;	/* TILE */
};

/* Strided copy of elements of type T. */
template <typename T>
static __global__ void
tensor_copy_kernel(struct tensor_piece p)
{
	const T *src = (const T *)p.src;
	T *dst = (T *)p.dst;

	CUDA_FOR(i, p.n) {
		int64_t off[2];
		cuda_map_offsets(p.map, i, 2, off);
		dst[off[1]] = src[off[0]];
	}
}

/*
 * tensor_copy_kernel in 32-bit index math, for copies whose every index and
 * offset fits (the host checks with tensor_piece_fits32): a 64-bit division
 * per dim per element held the transposes of attention's heads to a third of
 * the memory rate.
 */
template <typename T>
static __global__ void
tensor_copy32_kernel(struct tensor_piece p)
{
	const T *src = (const T *)p.src;
	T *dst = (T *)p.dst;
	const uint32_t n = (uint32_t)p.n;

	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		uint32_t r = i, so = 0, dof = 0;
		for (int d = p.map.nd - 1; d >= 0; d--) {
			uint32_t dim = (uint32_t)p.map.dims[d], c = r % dim;
			r /= dim;
			so += c * (uint32_t)p.map.st[0][d];
			dof += c * (uint32_t)p.map.st[1][d];
		}
		dst[dof] = src[so];
	}
}

/* 1 when the piece's element count and every offset it reaches fit in 31 bits (strides >= 0). */
static int
tensor_piece_fits32(const struct tensor_piece *c)
{
	const int64_t lim = (int64_t)1 << 31;

	if (c->n >= lim)
		return 0;
	for (int k = 0; k < 2; k++) {
		int64_t far = 0;
		for (int d = 0; d < c->map.nd; d++) {
			if (c->map.st[k][d] < 0 || c->map.dims[d] >= lim || c->map.st[k][d] >= lim)
				return 0;
			far += (c->map.dims[d] - 1) * c->map.st[k][d];
		}
		if (far >= lim)
			return 0;
	}
	return 1;
}

/*
 * Gather of T elements: out[o, j, i] = data[o, idx[j], i].  An index outside
 * [-dim, dim) writes zeros and sets *err (the step's workspace word) to 1, so
 * the kernel never reads out of bounds; the host cannot see the flag within a
 * run (runs never read back), see the contract in device_cuda_impl.h.
 */
template <typename T>
static __global__ void
tensor_gather_kernel(const void *src, void *dst, const void *idx, int idx64, int64_t outer, int64_t dim,
    int64_t nidx, int64_t inner, int *err)
{
	const T *data = (const T *)src;
	T *out = (T *)dst;

	CUDA_FOR(i, outer * nidx * inner) {
		int64_t k = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);
		int64_t v = idx64 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
		if (v < 0)
			v += dim;
		if (v < 0 || v >= dim) {
			out[i] = T();
			*err = 1;
			continue;
		}
		out[i] = data[(o * dim + v) * inner + k];
	}
}

/*
 * GatherElements of T elements: out[p] = data[p with p[axis] = idx[p]].  As
 * Gather: an index outside [-dim, dim) writes a zero and sets *err, and the
 * kernel never reads out of bounds.
 */
template <typename T>
static __global__ void
tensor_gather_elements_kernel(const void *src, void *dst, const void *idx, int idx64, struct tensor_gather_el ge,
    int *err)
{
	const T *data = (const T *)src;
	T *out = (T *)dst;

	CUDA_FOR(i, ge.n) {
		int64_t v = idx64 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i], r = i, off = 0;
		if (v < 0)
			v += ge.dim;
		if (v < 0 || v >= ge.dim) {
			out[i] = T();
			*err = 1;
			continue;
		}
		for (int d = ge.nd - 1; d >= 0; d--) {
			int64_t c = r % ge.idims[d];
			r /= ge.idims[d];
			off += (d == ge.axis ? v : c) * ge.dst[d];
		}
		out[i] = data[off];
	}
}

/* Pad of T elements; the piece's map holds the output dims and the input strides. */
template <typename T>
static __global__ void
tensor_pad_kernel(struct tensor_piece c, struct tensor_pad p)
{
	const T *x = (const T *)c.src;
	T *y = (T *)c.dst;
	const struct cuda_map &m = c.map;
	T fill;

	memcpy(&fill, p.fill, sizeof fill);
	CUDA_FOR(i, c.n) {
		int64_t r = i, off = 0;
		int outside = 0;
		for (int d = m.nd - 1; d >= 0; d--) {
			int64_t s = device_pad_src(r % m.dims[d], p.in[d], p.pb[d], p.mode);
			r /= m.dims[d];
			outside |= s < 0;
			off += s * m.st[0][d];
		}
		y[i] = outside ? fill : x[off];
	}
}

/* Tile of T elements: output coordinate c reads input coordinate c mod the input's dim, per dim. */
template <typename T>
static __global__ void
tensor_tile_kernel(struct tensor_piece c, struct tensor_tile t)
{
	const T *x = (const T *)c.src;
	T *y = (T *)c.dst;
	const struct cuda_map &m = c.map;

	CUDA_FOR(i, c.n) {
		int64_t r = i, off = 0;
		for (int d = m.nd - 1; d >= 0; d--) {
			off += (r % m.dims[d]) % t.in[d] * m.st[0][d];
			r /= m.dims[d];
		}
		y[i] = x[off];
	}
}

/* Launch kernel K<T> for the element size es. */
#define TENSOR_LAUNCH(K, es, grid, stream, ...) do { \
	switch (es) { \
	case 8: K<uint64_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	case 4: K<uint32_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	case 2: K<uint16_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	default: K<uint8_t><<<grid, CUDA_THREADS, 0, stream>>>(__VA_ARGS__); break; \
	} } while (0)

/* Queue every piece's strided copy (a contiguous piece is one device-to-device copy). */
static int
tensor_run_copy(const struct tensor_params *p, const struct cuda_exec *ex, char **cause)
{
	for (int k = 0; k < p->npieces; k++) {
		const struct tensor_piece *c = &p->piece[k];
		if (c->n == 0)
			continue;
		size_t unit = c->wide ? (size_t)c->wide : p->es;
		if (c->map.nd == 0 || (c->map.nd == 1 && c->map.st[0][0] == 1 && c->map.st[1][0] == 1)) {
			cudaError_t err = cudaMemcpyAsync(c->dst, c->src, (size_t)c->n * unit, cudaMemcpyDeviceToDevice,
			    ex->stream);
			if (err != cudaSuccess)
				return cuda_fail(cause, err, "cudaMemcpyAsync(d2d, %zu bytes)", (size_t)c->n * unit);
			continue;
		}
		int fits32 = tensor_piece_fits32(c);
		if (fits32 && unit == 16)
			tensor_copy32_kernel<uint4><<<cuda_grid(c->n), CUDA_THREADS, 0, ex->stream>>>(*c);
		else if (fits32)
			TENSOR_LAUNCH(tensor_copy32_kernel, unit, cuda_grid(c->n), ex->stream, *c);
		else if (c->wide == 16)
			tensor_copy_kernel<uint4><<<cuda_grid(c->n), CUDA_THREADS, 0, ex->stream>>>(*c);
		else
			TENSOR_LAUNCH(tensor_copy_kernel, unit, cuda_grid(c->n), ex->stream, *c);
		if (cuda_launched("tensor_copy_kernel", cause) != 0)
			return -1;
	}
	return 0;
}

/* Queue a step. */
static int
tensor_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct tensor_params *p = (const struct tensor_params *)st->p;
	const struct tensor_piece *c = &p->piece[0];

	switch (st->n->op) {
	case GRAPH_OP_GATHER:
		TENSOR_LAUNCH(tensor_gather_kernel, p->es, cuda_grid(p->outer * p->nidx * p->inner), ex->stream,
		    c->src, c->dst, p->idx, p->idx64,
		    p->outer, p->dim, p->nidx, p->inner, (int *)st->ws);
		return cuda_launched("tensor_gather_kernel", cause);
	case GRAPH_OP_GATHER_ELEMENTS:
		TENSOR_LAUNCH(tensor_gather_elements_kernel, p->es, cuda_grid(p->ge.n), ex->stream,
		    c->src, c->dst, p->idx, p->idx64, p->ge, (int *)st->ws);
		return cuda_launched("tensor_gather_elements_kernel", cause);
	case GRAPH_OP_PAD:
		TENSOR_LAUNCH(tensor_pad_kernel, p->es, cuda_grid(c->n), ex->stream, *c, p->pad);
		return cuda_launched("tensor_pad_kernel", cause);
	case GRAPH_OP_TILE:
		TENSOR_LAUNCH(tensor_tile_kernel, p->es, cuda_grid(c->n), ex->stream, *c, p->tile);
		return cuda_launched("tensor_tile_kernel", cause);
	default:
		return tensor_run_copy(p, ex, cause);
	}
}

/* Params for a step of n's input dtype. */
static struct tensor_params *
tensor_params_init(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct tensor_params *p = (struct tensor_params *)cuda_step_params(st, sizeof *p, cause);

	if (p != NULL)
		p->es = cuda_dtype_size(cuda_in_dtype(cc, n, 0));
	return p;
}

/*
 * Add a piece: copy a view of src (dims, element strides sst, from element
 * soff) onto dst (strides dst_st, from element doff); dims of size 1 are dropped
 * and contiguous runs merged so a plain copy becomes one memcpy.
 */
static int
tensor_piece_add(struct tensor_params *p, int nd, const int64_t *dims, const void *src, int64_t soff,
    const int64_t *sst, void *dst, int64_t doff, const int64_t *dst_st, char **cause)
{
	struct tensor_piece *c;
	int k = 0;

	if (p->npieces == TENSOR_MAX_PIECES)
		return error_set(cause, "more than %d pieces", TENSOR_MAX_PIECES);
	c = &p->piece[p->npieces++];
	c->src = (const char *)src + soff * (int64_t)p->es;
	c->dst = (char *)dst + doff * (int64_t)p->es;
	c->n = 1;
	for (int d = 0; d < nd; d++) {
		c->n *= dims[d];
		if (dims[d] == 1)
			continue;
		if (k > 0 && c->map.st[0][k - 1] == sst[d] * dims[d] && c->map.st[1][k - 1] == dst_st[d] * dims[d]) {
			c->map.dims[k - 1] *= dims[d];
			c->map.st[0][k - 1] = sst[d];
			c->map.st[1][k - 1] = dst_st[d];
			continue;
		}
		c->map.dims[k] = dims[d];
		c->map.st[0][k] = sst[d];
		c->map.st[1][k++] = dst_st[d];
	}
	c->map.nd = k;
	if (k == 0) {
		c->map.nd = 1;
		c->map.dims[0] = 1;
		c->map.st[0][0] = c->map.st[1][0] = 1;
	}
	return 0;
}

/*
 * Copy a piece in units of up to 16 bytes when its innermost dim is
 * contiguous on both sides and every stride, the run and both addresses
 * allow: a transpose that keeps the last dim (attention's [B, S, H, D] to
 * [B, H, S, D]) then moves D elements in a few 16-byte loads with one index
 * computation each, instead of one 2-byte element per index computation
 * (the profile had ViT-B/16's transposes at under a sixth of the memory
 * bandwidth).  The map is rewritten in units; the bytes moved are the same.
 */
static void
tensor_piece_widen(const struct tensor_params *p, struct tensor_piece *c)
{
	int last = c->map.nd - 1;

	if (last < 0 || c->map.st[0][last] != 1 || c->map.st[1][last] != 1)
		return;
	for (int w = 16; w > (int)p->es; w /= 2) {
		int64_t f = w / (int64_t)p->es;
		int ok = (c->map.dims[last] % f) == 0 && ((uintptr_t)c->src % w) == 0 && ((uintptr_t)c->dst % w) == 0;

		for (int d = 0; d < last && ok; d++)
			ok = c->map.st[0][d] % f == 0 && c->map.st[1][d] % f == 0;
		if (!ok)
			continue;
		for (int d = 0; d < last; d++) {
			c->map.st[0][d] /= f;
			c->map.st[1][d] /= f;
		}
		c->map.dims[last] /= f;
		c->n /= f;
		c->wide = w;
		return;
	}
}

/* A step with pieces runs when any piece has elements. */
static void
tensor_arm(struct cuda_step *st, const struct tensor_params *p)
{
	for (int k = 0; k < p->npieces; k++)
		if (p->piece[k].n > 0)
			st->run = tensor_run;
}

/* COPY / RESHAPE: the same elements in a new shape (nothing when in place). */
int
cuda_compile_copy(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	int64_t elems = graph_shape_elems(cuda_out_shape(cc, n, 0)), one = 1;

	if (p == NULL)
		return -1;
	if (graph_shape_elems(cuda_in_shape(cc, n, 0)) != elems)
		return error_set(cause, "input and output sizes differ");
	if (cuda_in(cc, n, 0) == cuda_out(cc, n, 0))
		return 0;
	if (tensor_piece_add(p, 1, &elems, cuda_in(cc, n, 0), 0, &one, cuda_out(cc, n, 0), 0, &one, cause) != 0)
		return -1;
	tensor_arm(st, p);
	return 0;
}

/* TRANSPOSE: out dim d is in dim perm[d]. */
int
cuda_compile_transpose(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	int64_t xst[GRAPH_MAX_DIMS], yst[GRAPH_MAX_DIMS], sst[GRAPH_MAX_DIMS];
	int used = 0;

	if (p == NULL)
		return -1;
	if (ys->ndims != xs->ndims)
		return error_set(cause, "output rank differs from input rank");
	cuda_strides(xs, xst);
	cuda_strides(ys, yst);
	for (int d = 0; d < ys->ndims; d++) {
		int64_t a = n->attr.transpose.nperm > 0 ? n->attr.transpose.perm[d] : ys->ndims - 1 - d;
		if (a < 0 || a >= xs->ndims || (used >> a & 1) || xs->dims[a] != ys->dims[d])
			return error_set(cause, "perm does not fit the shapes");
		used |= 1 << a;
		sst[d] = xst[a];
	}
	if (tensor_piece_add(p, ys->ndims, ys->dims, cuda_in(cc, n, 0), 0, sst, cuda_out(cc, n, 0), 0, yst,
	    cause) != 0)
		return -1;
	tensor_piece_widen(p, &p->piece[0]);
	tensor_arm(st, p);
	return 0;
}

/* EXPAND: broadcast to the output's shape. */
int
cuda_compile_expand(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	struct cuda_map m;
	int64_t yst[GRAPH_MAX_DIMS];

	if (p == NULL)
		return -1;
	if (xs->ndims > ys->ndims)
		return error_set(cause, "input rank above the output's");
	for (int d = 0; d < xs->ndims; d++)
		if (xs->dims[d] != 1 && xs->dims[d] != ys->dims[ys->ndims - xs->ndims + d])
			return error_set(cause, "input does not broadcast to the output");
	cuda_map_bcast(&m, 0, ys, xs);
	cuda_strides(ys, yst);
	if (tensor_piece_add(p, ys->ndims, ys->dims, cuda_in(cc, n, 0), 0, m.st[0], cuda_out(cc, n, 0), 0, yst,
	    cause) != 0)
		return -1;
	tensor_arm(st, p);
	return 0;
}

/* SLICE: starts, ends, axes, steps (negative steps walk backwards). */
int
cuda_compile_slice(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	int64_t xst[GRAPH_MAX_DIMS], yst[GRAPH_MAX_DIMS], sst[GRAPH_MAX_DIMS], dims[GRAPH_MAX_DIMS], base = 0;

	if (p == NULL)
		return -1;
	if (ys->ndims != xs->ndims)
		return error_set(cause, "output rank differs from input rank");
	cuda_strides(xs, xst);
	cuda_strides(ys, yst);
	memcpy(sst, xst, sizeof sst);
	memcpy(dims, xs->dims, sizeof dims);
	for (int k = 0; k < n->attr.slice.naxes; k++) {
		int ax = cuda_axis(n->attr.slice.axes[k], xs->ndims);
		int64_t step = n->attr.slice.steps[k], start, count;
		if (ax < 0 || step == 0)
			return error_set(cause, "slice axis %lld or step %lld invalid", (long long)n->attr.slice.axes[k],
			    (long long)step);
		start = device_slice_start(n->attr.slice.starts[k], n->attr.slice.ends[k], step, xs->dims[ax], &count);
		dims[ax] = count;
		sst[ax] = xst[ax] * step;
		if (count > 0)
			base += start * xst[ax];
	}
	for (int d = 0; d < xs->ndims; d++)
		if (dims[d] != ys->dims[d])
			return error_set(cause, "output dim %d is %lld, the slice gives %lld", d, (long long)ys->dims[d],
			    (long long)dims[d]);
	if (graph_shape_elems(ys) > 0 && tensor_piece_add(p, ys->ndims, ys->dims, cuda_in(cc, n, 0), base, sst,
	    cuda_out(cc, n, 0), 0, yst, cause) != 0)
		return -1;
	tensor_arm(st, p);
	return 0;
}

/* CONCAT (split = 0) or SPLIT (split = 1): one piece per input (output) at its offset along axis. */
static int
tensor_concat_split(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, int split,
    char **cause)
{
	const struct graph_shape *whole = split ? cuda_in_shape(cc, n, 0) : cuda_out_shape(cc, n, 0);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	int axis = cuda_axis(split ? n->attr.split.axis : n->attr.concat.axis, whole->ndims);
	int64_t wst[GRAPH_MAX_DIMS], pst[GRAPH_MAX_DIMS], at = 0;
	int count = split ? n->noutputs : n->ninputs;

	if (p == NULL)
		return -1;
	if (axis < 0)
		return error_set(cause, "axis outside rank %d", whole->ndims);
	cuda_strides(whole, wst);
	for (int k = 0; k < count; k++) {
		const struct graph_shape *ps = split ? cuda_out_shape(cc, n, k) : cuda_in_shape(cc, n, k);
		if (ps == NULL || ps->ndims != whole->ndims)
			return error_set(cause, "piece %d has a different rank", k);
		for (int d = 0; d < whole->ndims; d++)
			if (d != axis && ps->dims[d] != whole->dims[d])
				return error_set(cause, "piece %d differs off the axis", k);
		cuda_strides(ps, pst);
		if (graph_shape_elems(ps) > 0 && (split ?
		    tensor_piece_add(p, ps->ndims, ps->dims, cuda_in(cc, n, 0), at * wst[axis], wst, cuda_out(cc, n, k), 0,
		    pst, cause) :
		    tensor_piece_add(p, ps->ndims, ps->dims, cuda_in(cc, n, k), 0, pst, cuda_out(cc, n, 0),
		    at * wst[axis], wst, cause)) != 0)
			return -1;
		at += ps->dims[axis];
	}
	if (at != whole->dims[axis])
		return error_set(cause, "pieces cover %lld of the axis' %lld", (long long)at, (long long)whole->dims[axis]);
	tensor_arm(st, p);
	return 0;
}

/* CONCAT along axis. */
int
cuda_compile_concat(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	return tensor_concat_split(cc, n, st, 0, cause);
}

/* SPLIT along axis, sizes from the outputs' shapes. */
int
cuda_compile_split(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	return tensor_concat_split(cc, n, st, 1, cause);
}

/* GATHER along axis with I64/I32 indices; an error word in the workspace records out-of-range indices. */
int
cuda_compile_gather(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *ds = cuda_in_shape(cc, n, 0), *is = cuda_in_shape(cc, n, 1);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	int axis = cuda_axis(n->attr.gather.axis, ds->ndims);

	if (p == NULL)
		return -1;
	if (axis < 0)
		return error_set(cause, "axis %lld outside rank %d", (long long)n->attr.gather.axis, ds->ndims);
	p->outer = p->inner = 1;
	for (int d = 0; d < ds->ndims; d++)
		*(d < axis ? &p->outer : &p->inner) *= d == axis ? 1 : ds->dims[d];
	p->dim = ds->dims[axis];
	p->nidx = graph_shape_elems(is);
	p->idx = cuda_in(cc, n, 1);
	p->idx64 = cuda_in_dtype(cc, n, 1) == GRAPH_DT_I64;
	if (graph_shape_elems(cuda_out_shape(cc, n, 0)) != p->outer * p->nidx * p->inner)
		return error_set(cause, "output size does not match data and indices");
	p->npieces = 1;
	p->piece[0].src = (const char *)cuda_in(cc, n, 0);
	p->piece[0].dst = (char *)cuda_out(cc, n, 0);
	if (p->outer * p->nidx * p->inner == 0)
		return 0;
	if (cuda_step_ws(st, sizeof(int), cause) != 0)
		return -1;
	if (cuda_zero(st->ws, sizeof(int), cause) != 0)
		return error_prefix(cause, "the gather error word");
	st->run = tensor_run;
	return 0;
}

/* GatherElements' geometry from the shapes: ranks and dims as shape inference requires. */
static int
tensor_gather_el_init(const struct cuda_compile *cc, const struct graph_node *n, struct tensor_gather_el *ge,
    char **cause)
{
	const struct graph_shape *ds = cuda_in_shape(cc, n, 0), *is = cuda_in_shape(cc, n, 1);
	const struct graph_shape *ys = cuda_out_shape(cc, n, 0);

	ge->nd = ds->ndims;
	ge->axis = cuda_axis(n->attr.gather.axis, ds->ndims);
	if (ge->axis < 0)
		return error_set(cause, "axis %lld outside rank %d", (long long)n->attr.gather.axis, ds->ndims);
	if (is->ndims != ds->ndims || ys->ndims != ds->ndims)
		return error_set(cause, "indices (rank %d) and output (rank %d) must have the data's rank %d",
		    is->ndims, ys->ndims, ds->ndims);
	for (int d = ge->nd - 1; d >= 0; d--) {
		if (ys->dims[d] != is->dims[d] || (d != ge->axis && is->dims[d] > ds->dims[d]))
			return error_set(cause, "dim %d: indices %lld, output %lld, data %lld do not fit", d,
			    (long long)is->dims[d], (long long)ys->dims[d], (long long)ds->dims[d]);
		ge->idims[d] = is->dims[d];
		ge->dst[d] = d == ge->nd - 1 ? 1 : ge->dst[d + 1] * ds->dims[d + 1];
	}
	ge->dim = ds->dims[ge->axis];
	ge->n = graph_shape_elems(is);
	return 0;
}

/* GATHER_ELEMENTS along axis with I64/I32 indices; an error word in the workspace records out-of-range indices. */
int
cuda_compile_gather_elements(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st,
    char **cause)
{
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);

	if (p == NULL || tensor_gather_el_init(cc, n, &p->ge, cause) != 0)
		return -1;
	p->idx = cuda_in(cc, n, 1);
	p->idx64 = cuda_in_dtype(cc, n, 1) == GRAPH_DT_I64;
	p->npieces = 1;
	p->piece[0].src = (const char *)cuda_in(cc, n, 0);
	p->piece[0].dst = (char *)cuda_out(cc, n, 0);
	if (p->ge.n == 0)
		return 0;
	if (cuda_step_ws(st, sizeof(int), cause) != 0)
		return -1;
	if (cuda_zero(st->ws, sizeof(int), cause) != 0)
		return error_prefix(cause, "the gather-elements error word");
	st->run = tensor_run;
	return 0;
}

/* The pad value as one element of dtype dt (saturated like the CPU kernels). */
static void
tensor_pad_value(enum graph_dtype dt, float v, unsigned char *buf)
{
	int64_t i = isnan(v) ? 0 : v >= 9.2e18f ? INT64_MAX : v <= -9.2e18f ? INT64_MIN : (int64_t)v;

	if (dt == CUDA_DT_BF16) {
		__nv_bfloat16 h = __float2bfloat16_rn(v);
		memcpy(buf, &h, 2);
		return;
	}
	switch (dt) {
	case GRAPH_DT_F32: memcpy(buf, &v, 4); break;
	case GRAPH_DT_F16: { __half h = __float2half_rn(v); memcpy(buf, &h, 2); break; }
	case GRAPH_DT_I64: memcpy(buf, &i, 8); break;
	case GRAPH_DT_I32: { int32_t k = (int32_t)i; memcpy(buf, &k, 4); break; }
	case GRAPH_DT_BOOL: buf[0] = v != 0.0f; break;
	default: buf[0] = (unsigned char)i; break;
	}
}

/* PAD: constant/reflect/edge; negative pads crop. */
int
cuda_compile_pad(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	struct tensor_piece *c;
	int nd = xs->ndims;

	if (p == NULL)
		return -1;
	if (ys->ndims != nd || (n->attr.pad.npads != 0 && n->attr.pad.npads != 2 * nd))
		return error_set(cause, "pads do not fit rank %d", nd);
	c = &p->piece[0];
	p->npieces = 1;
	c->map.nd = nd;
	cuda_strides(xs, c->map.st[0]);
	for (int d = 0; d < nd; d++) {
		p->pad.pb[d] = n->attr.pad.npads ? n->attr.pad.pads[d] : 0;
		p->pad.in[d] = xs->dims[d];
		c->map.dims[d] = ys->dims[d];
		if (n->attr.pad.npads && xs->dims[d] + p->pad.pb[d] + n->attr.pad.pads[nd + d] != ys->dims[d])
			return error_set(cause, "output dim %d does not match the pads", d);
		if (xs->dims[d] == 0 && ys->dims[d] > 0 && n->attr.pad.mode != GRAPH_PAD_CONSTANT)
			return error_set(cause, "cannot reflect- or edge-pad an empty dim %d", d);
	}
	p->pad.mode = n->attr.pad.mode;
	tensor_pad_value(cuda_in_dtype(cc, n, 0), n->attr.pad.value, p->pad.fill);
	c->src = (const char *)cuda_in(cc, n, 0);
	c->dst = (char *)cuda_out(cc, n, 0);
	c->n = graph_shape_elems(ys);
	if (c->n > 0)
		st->run = tensor_run;
	return 0;
}

/*
 * TILE: each output dim a multiple of the input's (the repeats follow from
 * the shapes, so a repeats input needs no reading); one piece over the
 * output's dims with the input's strides.
 */
int
cuda_compile_tile(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0), *ys = cuda_out_shape(cc, n, 0);
	struct tensor_params *p = tensor_params_init(cc, n, st, cause);
	struct tensor_piece *c;

	if (p == NULL)
		return -1;
	if (ys->ndims != xs->ndims)
		return error_set(cause, "output rank differs from input rank");
	for (int d = 0; d < xs->ndims; d++)
		if (xs->dims[d] == 0 ? ys->dims[d] != 0 : ys->dims[d] % xs->dims[d] != 0)
			return error_set(cause, "output dim %d is not a multiple of the input's", d);
	c = &p->piece[p->npieces++];
	c->src = (const char *)cuda_in(cc, n, 0);
	c->dst = (char *)cuda_out(cc, n, 0);
	c->n = graph_shape_elems(ys);
	c->map.nd = ys->ndims;
	cuda_strides(xs, c->map.st[0]);
	for (int d = 0; d < ys->ndims; d++) {
		c->map.dims[d] = ys->dims[d];
		p->tile.in[d] = xs->dims[d];
	}
	tensor_arm(st, p);
	return 0;
}
