/* cpu_broadcast.c: numpy broadcasting as spans over coalesced dims, shared by the elementwise kernels. */
#include "config.h"

#include "cpu_kernels_impl.h"

/* Right-aligned element strides of one input against the output, 0 where it broadcasts. */
static int
bcast_strides(const struct graph_shape *out, const struct graph_shape *in, int64_t *st, char **cause)
{
	int64_t stride = 1;
	int lead = out->ndims - in->ndims;
	char b1[160], b2[160];

	if (lead < 0)
		goto bad;
	for (int j = out->ndims - 1; j >= 0; j--) {
		int64_t d = j >= lead ? in->dims[j - lead] : 1;

		if (d != 1 && d != out->dims[j])
			goto bad;
		st[j] = d == 1 ? 0 : stride;
		stride *= d;
	}
	return 0;
bad:
	return cpu_fail(cause, "shape %s does not broadcast to %s", cpu_shape_str(in, b1, sizeof(b1)),
	    cpu_shape_str(out, b2, sizeof(b2)));
}

/* Whether dims j and j + 1 can merge for every input. */
static int
bcast_mergeable(const struct cpu_bcast *b, int j)
{
	for (int k = 0; k < b->nin; k++)
		if (b->st[k][j] != b->st[k][j + 1] * b->dims[j + 1])
			return 0;
	return 1;
}

/* Set up the iteration: strides per input, size-1 dims dropped, contiguous dims merged. */
int
cpu_bcast_init(struct cpu_bcast *b, const struct graph_shape *out,
    const struct graph_shape *const *in, int nin, char **cause)
{
	int64_t st[CPU_BCAST_MAX_IN][GRAPH_MAX_DIMS];
	int nd = 0;

	b->nin = nin;
	for (int k = 0; k < nin; k++)
		if (bcast_strides(out, in[k], st[k], cause) != 0)
			return -1;
	for (int j = 0; j < out->ndims; j++) {
		if (out->dims[j] == 1)
			continue;
		b->dims[nd] = out->dims[j];
		for (int k = 0; k < nin; k++)
			b->st[k][nd] = st[k][j];
		if (nd > 0 && bcast_mergeable(b, nd - 1)) {
			b->dims[nd - 1] *= b->dims[nd];
			for (int k = 0; k < nin; k++)
				b->st[k][nd - 1] = b->st[k][nd];
			continue;
		}
		nd++;
	}
	if (nd == 0) {
		b->dims[0] = cpu_elems(out) == 0 ? 0 : 1;
		for (int k = 0; k < nin; k++)
			b->st[k][0] = 0;
		nd = 1;
	}
	b->ndims = nd;
	return 0;
}

/* Input offsets of outer index o (all dims but the last). */
static void
bcast_offsets(const struct cpu_bcast *b, int64_t o, int64_t *xoff)
{
	for (int k = 0; k < b->nin; k++)
		xoff[k] = 0;
	for (int j = b->ndims - 2; j >= 0; j--) {
		int64_t i = o % b->dims[j];

		o /= b->dims[j];
		for (int k = 0; k < b->nin; k++)
			xoff[k] += i * b->st[k][j];
	}
}

/* One outer row, split into chunks over threads when it is long and rows are few. */
static void
bcast_row(const struct cpu_bcast *b, int64_t o, int64_t inner, int split, cpu_span_fn fn, void *arg)
{
	int64_t xoff[CPU_BCAST_MAX_IN], step[CPU_BCAST_MAX_IN];
	int64_t chunk = 16384, nchunks = (inner + chunk - 1) / chunk;

	bcast_offsets(b, o, xoff);
	for (int k = 0; k < b->nin; k++)
		step[k] = b->st[k][b->ndims - 1];
	if (!split) {
		fn(arg, o * inner, xoff, step, inner);
		return;
	}
	#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static)
	for (int64_t ch = 0; ch < nchunks; ch++) {
		int64_t lo = ch * chunk, n = inner - lo < chunk ? inner - lo : chunk, x[CPU_BCAST_MAX_IN];

		for (int k = 0; k < b->nin; k++)
			x[k] = xoff[k] + lo * step[k];
		fn(arg, o * inner + lo, x, step, n);
	}
}

/* Every span, on several threads where the work is large. */
void
cpu_bcast_run(const struct cpu_bcast *b, cpu_span_fn fn, void *arg)
{
	int64_t inner = b->dims[b->ndims - 1], outer = 1;

	for (int j = 0; j < b->ndims - 1; j++)
		outer *= b->dims[j];
	if (inner == 0 || outer == 0)
		return;
	if (!cpu_parallel(inner * outer)) {
		for (int64_t o = 0; o < outer; o++)
			bcast_row(b, o, inner, 0, fn, arg);
	} else if (outer >= 4 * cpu_kernels_threads()) {
		#pragma omp parallel for num_threads(cpu_kernels_threads()) schedule(static)
		for (int64_t o = 0; o < outer; o++)
			bcast_row(b, o, inner, 0, fn, arg);
	} else {
		for (int64_t o = 0; o < outer; o++)
			bcast_row(b, o, inner, 1, fn, arg);
	}
}
