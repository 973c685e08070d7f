/* cpu_tensor.c: data movement for any dtype: reshape/copy, transpose, concat, split, slice, gather, gather-elements, expand. */
#include "config.h"

#include <string.h>

#include "cpu_kernels_impl.h"
#include "device_index.h"

/* A strided source read into a dense destination: nd dims, source strides in elements. */
struct strided {
	int nd;
	int64_t dims[GRAPH_MAX_DIMS], st[GRAPH_MAX_DIMS];
	size_t es;
};

/* Drop size-1 dims and merge dims that are contiguous in the source. */
static void
strided_coalesce(struct strided *s)
{
	int nd = 0;

	for (int i = 0; i < s->nd; i++) {
		if (s->dims[i] == 1)
			continue;
		if (nd > 0 && s->st[nd - 1] == s->st[i] * s->dims[i]) {
			s->dims[nd - 1] *= s->dims[i];
			s->st[nd - 1] = s->st[i];
			continue;
		}
		s->dims[nd] = s->dims[i];
		s->st[nd] = s->st[i];
		nd++;
	}
	if (nd == 0) {
		s->dims[0] = 1;
		s->st[0] = 1;
		nd = 1;
	}
	s->nd = nd;
}

/* Copy one destination row (the last dim) whose source starts at src. */
static void
strided_row(const struct strided *s, const char *src, char *dst)
{
	int64_t n = s->dims[s->nd - 1], st = s->st[s->nd - 1];

	if (st == 1) {
		memcpy(dst, src, (size_t)n * s->es);
		return;
	}
	switch (s->es) {
	case 4:
		for (int64_t i = 0; i < n; i++)
			memcpy(dst + i * 4, src + i * st * 4, 4);
		break;
	case 8:
		for (int64_t i = 0; i < n; i++)
			memcpy(dst + i * 8, src + i * st * 8, 8);
		break;
	default:
		for (int64_t i = 0; i < n; i++)
			memcpy(dst + (size_t)i * s->es, src + (size_t)(i * st) * s->es, s->es);
	}
}

/*
 * Destination rows [r0, r1) of s: the first row's source offset from its
 * index, the next ones by stepping the index like an odometer.  Dividing for
 * every row cost more than copying it: a transformer's head transposes move
 * rows of 32 floats (128 bytes), three divisions and three remainders each.
 */
static void
strided_rows(const struct strided *s, const char *src, char *dst, int64_t r0, int64_t r1)
{
	int64_t idx[GRAPH_MAX_DIMS], off = 0, rem = r0, n = s->dims[s->nd - 1];

	for (int i = s->nd - 2; i >= 0; i--) {
		idx[i] = rem % s->dims[i];
		off += idx[i] * s->st[i];
		rem /= s->dims[i];
	}
	for (int64_t r = r0; r < r1; r++) {
		strided_row(s, src + (size_t)off * s->es, dst + (size_t)(r * n) * s->es);
		for (int i = s->nd - 2; i >= 0; i--) {
			off += s->st[i];
			if (++idx[i] < s->dims[i])
				break;
			off -= s->st[i] * s->dims[i];
			idx[i] = 0;
		}
	}
}

/* dst (dense) = src read through s, rows over threads (one span each) when large. */
static void
strided_copy(struct strided *s, const char *src, char *dst)
{
	int64_t rows = 1, n;
	int nt;

	strided_coalesce(s);
	n = s->dims[s->nd - 1];
	for (int i = 0; i < s->nd - 1; i++)
		rows *= s->dims[i];
	if (rows * n == 0)
		return;
	nt = cpu_parallel(rows * n) ? cpu_kernels_threads() : 1;
	if (nt > rows)
		nt = (int)rows;
	#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
	for (int t = 0; t < nt; t++)
		strided_rows(s, src, dst, rows * t / nt, rows * (t + 1) / nt);
}

/* Dense element strides of a shape. */
static void
dense_strides(const struct graph_shape *s, int64_t *st)
{
	int64_t acc = 1;

	for (int i = s->ndims - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= s->dims[i];
	}
}

/* RESHAPE and COPY: the same bytes under another shape (nothing when in place). */
int
cpu_copy_run(const struct cpu_node_ctx *c, char **cause)
{
	int64_t n = cpu_elems(cpu_in_shape(c, 0));

	if (cpu_elems(cpu_out_shape(c, 0)) != n)
		return cpu_fail(cause, "output has %lld elements, input %lld",
		    (long long)cpu_elems(cpu_out_shape(c, 0)), (long long)n);
	if (cpu_out(c, 0) != cpu_in(c, 0))
		memcpy(cpu_out(c, 0), cpu_in(c, 0), (size_t)n * cpu_dtype_size(cpu_in_dtype(c, 0)));
	return 0;
}

/* TRANSPOSE: out dim i is input dim perm[i]. */
int
cpu_transpose_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0), *ys = cpu_out_shape(c, 0);
	int nperm = c->n->attr.transpose.nperm, seen[GRAPH_MAX_DIMS] = { 0 };
	struct strided s = { .nd = xs->ndims, .es = cpu_dtype_size(cpu_in_dtype(c, 0)) };
	int64_t ist[GRAPH_MAX_DIMS];

	if (ys->ndims != xs->ndims || (nperm != 0 && nperm != xs->ndims))
		return cpu_fail(cause, "perm of %d axes for rank %d (output rank %d)", nperm, xs->ndims,
		    ys->ndims);
	dense_strides(xs, ist);
	for (int i = 0; i < xs->ndims; i++) {
		/* No perm: reverse the axes, as ONNX does. */
		int64_t p = nperm ? c->n->attr.transpose.perm[i] : xs->ndims - 1 - i;

		if (p < 0 || p >= xs->ndims || seen[p]++ || ys->dims[i] != xs->dims[p])
			return cpu_fail(cause, "perm is not a permutation matching the output shape");
		s.dims[i] = xs->dims[p];
		s.st[i] = ist[p];
	}
	strided_copy(&s, cpu_in(c, 0), cpu_out(c, 0));
	return 0;
}

/* Check that shape a equals b except at axis; -1 otherwise. */
static int
same_but_axis(const struct graph_shape *a, const struct graph_shape *b, int axis)
{
	if (a->ndims != b->ndims)
		return -1;
	for (int i = 0; i < a->ndims; i++)
		if (i != axis && a->dims[i] != b->dims[i])
			return -1;
	return 0;
}

/* Outer count and inner bytes around axis of shape s. */
static void
around_axis(const struct graph_shape *s, int axis, size_t es, int64_t *outer, size_t *inner)
{
	*outer = 1;
	*inner = es;
	for (int i = 0; i < axis; i++)
		*outer *= s->dims[i];
	for (int i = axis + 1; i < s->ndims; i++)
		*inner *= (size_t)s->dims[i];
}

/*
 * Bytes [lo, hi) of the whole tensor w of a concat or split, copied to or
 * from its parts: row o of part k (prow_k bytes) sits at o * wrow + off_k in
 * the whole, off_k the parts before it.  Each thread takes one such span, so
 * a concat of a few large parts (densenet's, eight rows of channels) spreads
 * over the threads as well as one of many rows does.
 */
static void
concat_span(const struct cpu_node_ctx *c, int split, int axis, char *w, size_t inner, size_t wrow, size_t lo,
    size_t hi)
{
	int nparts = split ? c->n->noutputs : c->n->ninputs;
	size_t o = lo / wrow;

	for (; lo < hi; o++) {
		size_t off = 0, row = o * wrow;

		for (int k = 0; k < nparts && lo < hi; k++) {
			size_t prow = inner * (size_t)(split ? cpu_out_shape(c, k) : cpu_in_shape(c, k))->dims[axis];
			size_t a = row + off, b = a + prow;

			off += prow;
			if (b <= lo)
				continue;
			char *p = (split ? cpu_out(c, k) : (char *)cpu_in(c, k)) + o * prow + (lo - a);
			size_t n = (b < hi ? b : hi) - lo;

			if (split)
				memcpy(p, w + lo, n);
			else
				memcpy(w + lo, p, n);
			lo += n;
		}
	}
}

/* Concat or split: copy between one whole tensor and its parts along axis. */
static int
concat_or_split(const struct cpu_node_ctx *c, int split, char **cause)
{
	const struct graph_shape *whole = split ? cpu_in_shape(c, 0) : cpu_out_shape(c, 0);
	int nparts = split ? c->n->noutputs : c->n->ninputs;
	int axis = cpu_axis(split ? c->n->attr.split.axis : c->n->attr.concat.axis, whole->ndims);
	size_t es = cpu_dtype_size(split ? cpu_in_dtype(c, 0) : cpu_out_dtype(c, 0)), inner, wrow, total_bytes;
	int64_t outer, total = 0;
	char *w = split ? (char *)cpu_in(c, 0) : cpu_out(c, 0);
	int nt;

	if (axis < 0)
		return cpu_fail(cause, "axis outside rank %d", whole->ndims);
	around_axis(whole, axis, es, &outer, &inner);
	wrow = inner * (size_t)whole->dims[axis];
	for (int k = 0; k < nparts; k++) {
		const struct graph_shape *ps = split ? cpu_out_shape(c, k) : cpu_in_shape(c, k);

		if (same_but_axis(ps, whole, axis) != 0)
			return cpu_fail(cause, "part %d does not match the whole tensor off the axis", k);
		total += ps->dims[axis];
	}
	if (total != whole->dims[axis])
		return cpu_fail(cause, "parts add up to %lld along the axis, not %lld", (long long)total,
		    (long long)whole->dims[axis]);
	total_bytes = (size_t)outer * wrow;
	if (total_bytes == 0)
		return 0;
	nt = cpu_parallel((int64_t)(total_bytes / es)) ? cpu_kernels_threads() : 1;
	#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
	for (int t = 0; t < nt; t++) {
		/* Span boundaries on the whole tensor's 64-byte lines: a Concat's threads never write one line. */
		size_t lo = t == 0 ? 0 : (total_bytes / (size_t)nt * (size_t)t) & ~(size_t)63;
		size_t hi = t == nt - 1 ? total_bytes : (total_bytes / (size_t)nt * (size_t)(t + 1)) & ~(size_t)63;

		concat_span(c, split, axis, w, inner, wrow, lo, hi);
	}
	return 0;
}

/* CONCAT along axis. */
int
cpu_concat_run(const struct cpu_node_ctx *c, char **cause)
{
	return concat_or_split(c, 0, cause);
}

/* SPLIT along axis into the outputs' sizes. */
int
cpu_split_run(const struct cpu_node_ctx *c, char **cause)
{
	return concat_or_split(c, 1, cause);
}

/* SLICE: starts, ends, axes, steps per sliced axis. */
int
cpu_slice_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0), *ys = cpu_out_shape(c, 0);
	struct strided s = { .nd = xs->ndims, .es = cpu_dtype_size(cpu_in_dtype(c, 0)) };
	int64_t ist[GRAPH_MAX_DIMS], base = 0;

	if (ys->ndims != xs->ndims)
		return cpu_fail(cause, "output rank %d differs from input rank %d", ys->ndims, xs->ndims);
	dense_strides(xs, ist);
	for (int i = 0; i < xs->ndims; i++) {
		s.dims[i] = xs->dims[i];
		s.st[i] = ist[i];
	}
	for (int k = 0; k < c->n->attr.slice.naxes; k++) {
		int ax = cpu_axis(c->n->attr.slice.axes[k], xs->ndims);
		int64_t step = c->n->attr.slice.steps[k], start, count;

		if (ax < 0 || step == 0)
			return cpu_fail(cause, "slice axis %lld or step %lld invalid",
			    (long long)c->n->attr.slice.axes[k], (long long)step);
		start = device_slice_start(c->n->attr.slice.starts[k], c->n->attr.slice.ends[k], step,
		    xs->dims[ax], &count);
		s.dims[ax] = count;
		s.st[ax] = ist[ax] * step;
		if (count > 0)
			base += start * ist[ax];
	}
	for (int i = 0; i < xs->ndims; i++)
		if (s.dims[i] != ys->dims[i])
			return cpu_fail(cause, "output dim %d is %lld, the slice gives %lld", i,
			    (long long)ys->dims[i], (long long)s.dims[i]);
	if (cpu_elems(ys) > 0)
		strided_copy(&s, (const char *)cpu_in(c, 0) + (size_t)base * s.es, cpu_out(c, 0));
	return 0;
}

/* Index j of an I64 or I32 indices tensor. */
static inline int64_t
gather_index(const void *p, int is64, int64_t j)
{
	return is64 ? ((const int64_t *)p)[j] : ((const int32_t *)p)[j];
}

/* GATHER: out = data[..., indices, ...] along axis; negative indices count from the end. */
int
cpu_gather_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *ds = cpu_in_shape(c, 0), *is = cpu_in_shape(c, 1);
	int axis = cpu_axis(c->n->attr.gather.axis, ds->ndims), is64 = cpu_in_dtype(c, 1) == GRAPH_DT_I64;
	size_t es = cpu_dtype_size(cpu_in_dtype(c, 0)), inner;
	int64_t outer, nidx = cpu_elems(is), dim;
	const char *src = cpu_in(c, 0);
	char *dst = cpu_out(c, 0);

	if (axis < 0)
		return cpu_fail(cause, "axis %lld outside rank %d", (long long)c->n->attr.gather.axis, ds->ndims);
	around_axis(ds, axis, es, &outer, &inner);
	dim = ds->dims[axis];
	if (cpu_elems(cpu_out_shape(c, 0)) * (int64_t)es != outer * nidx * (int64_t)inner)
		return cpu_fail(cause, "output size does not match data and indices");
	for (int64_t j = 0; j < nidx; j++) {
		int64_t v = gather_index(cpu_in(c, 1), is64, j);

		if (v < -dim || v >= dim)
			return cpu_fail(cause, "index %lld at position %lld is out of range for dim %lld",
			    (long long)v, (long long)j, (long long)dim);
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(outer * nidx * (int64_t)inner / 4))
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < nidx; j++) {
			int64_t v = gather_index(cpu_in(c, 1), is64, j);

			if (v < 0)
				v += dim;
			memcpy(dst + (size_t)(o * nidx + j) * inner, src + (size_t)(o * dim + v) * inner, inner);
		}
	return 0;
}

/* GatherElements' checks: ranks, dims (as shape inference), and every index within [-dim, dim). */
static int
gather_elements_check(const struct cpu_node_ctx *c, int axis, char **cause)
{
	const struct graph_shape *ds = cpu_in_shape(c, 0), *is = cpu_in_shape(c, 1), *ys = cpu_out_shape(c, 0);
	int is64 = cpu_in_dtype(c, 1) == GRAPH_DT_I64;
	int64_t dim, n = cpu_elems(is);

	if (axis < 0)
		return cpu_fail(cause, "axis %lld outside rank %d", (long long)c->n->attr.gather.axis, ds->ndims);
	if (is->ndims != ds->ndims || ys->ndims != ds->ndims)
		return cpu_fail(cause, "indices (rank %d) and output (rank %d) must have the data's rank %d",
		    is->ndims, ys->ndims, ds->ndims);
	for (int d = 0; d < ds->ndims; d++)
		if (ys->dims[d] != is->dims[d] || (d != axis && is->dims[d] > ds->dims[d]))
			return cpu_fail(cause, "dim %d: indices %lld, output %lld, data %lld do not fit", d,
			    (long long)is->dims[d], (long long)ys->dims[d], (long long)ds->dims[d]);
	dim = ds->dims[axis];
	for (int64_t j = 0; j < n; j++) {
		int64_t v = gather_index(cpu_in(c, 1), is64, j);

		if (v < -dim || v >= dim)
			return cpu_fail(cause, "index %lld at position %lld is out of range for axis %d of size %lld",
			    (long long)v, (long long)j, axis, (long long)dim);
	}
	return 0;
}

/* GATHER_ELEMENTS: y[p] = data[p with p[axis] = indices[p]]; negative indices count from the end. */
int
cpu_gather_elements_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *ds = cpu_in_shape(c, 0), *is = cpu_in_shape(c, 1);
	int axis = cpu_axis(c->n->attr.gather.axis, ds->ndims), nd = ds->ndims;
	int is64 = cpu_in_dtype(c, 1) == GRAPH_DT_I64;
	size_t es = cpu_dtype_size(cpu_in_dtype(c, 0));
	int64_t dst[GRAPH_MAX_DIMS], inner, rows;
	const char *src = cpu_in(c, 0);
	char *y = cpu_out(c, 0);

	if (gather_elements_check(c, axis, cause) != 0)
		return -1;
	if (cpu_elems(is) == 0)
		return 0;
	dst[nd - 1] = 1;
	for (int d = nd - 2; d >= 0; d--)
		dst[d] = dst[d + 1] * ds->dims[d + 1];
	inner = is->dims[nd - 1];
	rows = cpu_elems(is) / inner;
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static) if (cpu_parallel(rows * inner / 4))
	for (int64_t r = 0; r < rows; r++) {
		int64_t rem = r, base = 0;

		/* The row's offset in data from every coordinate but the last and the axis. */
		for (int d = nd - 2; d >= 0; d--) {
			if (d != axis)
				base += (rem % is->dims[d]) * dst[d];
			rem /= is->dims[d];
		}
		for (int64_t k = 0; k < inner; k++) {
			int64_t v = gather_index(cpu_in(c, 1), is64, r * inner + k);
			int64_t off = base + (v < 0 ? v + ds->dims[axis] : v) * dst[axis] +
			    (axis == nd - 1 ? 0 : k);

			memcpy(y + (size_t)(r * inner + k) * es, src + (size_t)off * es, es);
		}
	}
	return 0;
}

struct expand_arg {
	size_t es;
	char *y;
	const char *x;
};

/* One expand span. */
static void
expand_span(void *arg, int64_t yo, const int64_t *xo, const int64_t *st, int64_t n)
{
	struct expand_arg *p = arg;

	if (st[0] == 1) {
		memcpy(p->y + (size_t)yo * p->es, p->x + (size_t)xo[0] * p->es, (size_t)n * p->es);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		memcpy(p->y + (size_t)(yo + i) * p->es, p->x + (size_t)xo[0] * p->es, p->es);
}

/* EXPAND: broadcast the input to the output's shape. */
int
cpu_expand_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_shape *xs = cpu_in_shape(c, 0);
	struct expand_arg p = { cpu_dtype_size(cpu_in_dtype(c, 0)), cpu_out(c, 0), cpu_in(c, 0) };
	struct cpu_bcast b;

	if (cpu_bcast_init(&b, cpu_out_shape(c, 0), &xs, 1, cause) != 0)
		return -1;
	cpu_bcast_run(&b, expand_span, &p);
	return 0;
}
