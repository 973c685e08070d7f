/* test_graph_shape.c: shape inference of every op on hand-built graphs, and shape folding by graph_specialize. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "graph.h"
#include "graph_fold.h"
#include "graph_shape.h"
#include "test_util.h"

#define SH(n, ...) ((struct graph_shape){ (n), { __VA_ARGS__ } })

/* A small graph built by hand: tensors, nodes and their index arrays in fixed storage. */
struct tg {
	graph_t g;
	struct graph_tensor t[24];
	struct graph_node n[12];
	int idx[12][2][8];
	int gin[4], gout[4];
};

/* Start an empty graph. */
static void
tg_init(struct tg *b)
{
	memset(b, 0, sizeof *b);
	b->g.tensors = b->t;
	b->g.nodes = b->n;
	b->g.inputs = b->gin;
	b->g.outputs = b->gout;
}

/* Add a tensor: an INPUT (ndims -1: any shape), or a CONST with dims and data; returns its index. */
static int
tg_tensor(struct tg *b, const char *name, unsigned flags, enum graph_dtype dt, int ndims,
    const int64_t *dims, const void *data, size_t nbytes)
{
	int k = (int)b->g.ntensors++;
	struct graph_tensor *t = &b->t[k];

	t->name = (char *)name;
	t->flags = flags;
	t->dtype = dt;
	t->ndims = ndims;
	if (ndims > 0)
		memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndims);
	t->data = data;
	t->nbytes = nbytes;
	if (flags & GRAPH_TENSOR_INPUT)
		b->gin[b->g.ninputs++] = k;
	return k;
}

/* An INPUT of any shape. */
static int
tg_input(struct tg *b, const char *name)
{
	return tg_tensor(b, name, GRAPH_TENSOR_INPUT, GRAPH_DT_F32, -1, NULL, NULL, 0);
}

/* A 1-D INT64 constant. */
static int
tg_ints(struct tg *b, const char *name, const int64_t *v, int n)
{
	int64_t d = n;

	return tg_tensor(b, name, GRAPH_TENSOR_CONST, GRAPH_DT_I64, 1, &d, v, 8 * (size_t)n);
}

/* Add a node reading nin tensors and writing nout fresh tensors (named name.k); returns it. */
static struct graph_node *
tg_node(struct tg *b, enum graph_op op, const char *name, int nin, const int *in, int nout)
{
	int k = (int)b->g.nnodes++, i;
	struct graph_node *n = &b->n[k];

	n->name = (char *)name;
	n->op = op;
	n->ninputs = nin;
	n->noutputs = nout;
	n->inputs = b->idx[k][0];
	n->outputs = b->idx[k][1];
	memcpy(n->inputs, in, sizeof(int) * (size_t)nin);
	for (i = 0; i < nout; i++)
		n->outputs[i] = tg_tensor(b, name, 0, GRAPH_DT_F32, -1, NULL, NULL, 0);
	return n;
}

/* Infer with the given input shapes; the shape of output k of the last node into *out. */
static int
tg_infer(struct tg *b, const struct graph_shape *ins, int k, struct graph_shape *out, char **cause)
{
	struct graph_shape s[24];

	memset(s, 0, sizeof s);
	if (graph_infer_shapes(&b->g, ins, s, cause) < 0)
		return -1;
	*out = s[b->n[b->g.nnodes - 1].outputs[k]];
	return 0;
}

/* Check inferred output k equals want. */
static void
expect_shape(struct tg *b, const struct graph_shape *ins, int k, struct graph_shape want,
    const char *what)
{
	struct graph_shape got;
	char *cause = NULL, x[128], y[128];
	int i, same;

	if (tg_infer(b, ins, k, &got, &cause) < 0) {
		CHECK(0, "%s: %s", what, cause);
		free(cause);
		return;
	}
	same = got.ndims == want.ndims;
	for (i = 0; same && i < want.ndims; i++)
		same = got.dims[i] == want.dims[i];
	CHECK(same, "%s: got %s, want %s", what, graph_shape_str(&got, x, sizeof x),
	    graph_shape_str(&want, y, sizeof y));
}

/* Check inference fails with a message holding the node's name and part. */
static void
expect_error(struct tg *b, const struct graph_shape *ins, const char *part, const char *what)
{
	struct graph_shape got;
	char *cause = NULL;

	CHECK(tg_infer(b, ins, 0, &got, &cause) < 0 && cause && strstr(cause, part), "%s: %s", what,
	    cause ? cause : "accepted");
	free(cause);
}

/* Broadcasting binary ops and Where. */
static void
test_broadcast(void)
{
	struct tg b;
	struct graph_shape in[3] = { SH(3, 2, 1, 4), SH(2, 3, 1), SH(0) };
	struct graph_node *n0;
	int x, y, z;

	tg_init(&b);
	x = tg_input(&b, "a");
	y = tg_input(&b, "b");
	tg_node(&b, GRAPH_OP_BINARY, "add0", 2, (int[]){ x, y }, 1);
	expect_shape(&b, in, 0, SH(3, 2, 3, 4), "broadcast [2,1,4]+[3,1]");
	in[1] = SH(2, 2, 3);
	expect_error(&b, in, "'add0'", "broadcast [2,1,4]+[2,3]");
	tg_init(&b);
	x = tg_input(&b, "c");
	y = tg_input(&b, "x");
	z = tg_input(&b, "y");
	tg_node(&b, GRAPH_OP_WHERE, "where0", 3, (int[]){ x, y, z }, 1);
	in[0] = SH(2, 3, 1); in[1] = SH(1, 4); in[2] = SH(0);
	expect_shape(&b, in, 0, SH(2, 3, 4), "where [3,1],[4],[]");
	tg_init(&b);
	x = tg_input(&b, "x");
	n0 = tg_node(&b, GRAPH_OP_UNARY, "early", 1, &x, 1);
	n0->inputs[0] = tg_node(&b, GRAPH_OP_UNARY, "late", 1, &x, 1)->outputs[0];
	expect_error(&b, in, "'early'", "node reading a later node's output");
}

/* Conv (groups, strides, pads, dilations) and ConvTranspose (output_padding, group). */
static void
test_conv(void)
{
	struct tg b;
	struct graph_shape in[2] = { SH(4, 1, 3, 10, 12), SH(4, 6, 1, 3, 3) };
	struct graph_node *n;
	int x, w;

	tg_init(&b);
	x = tg_input(&b, "x");
	w = tg_input(&b, "w");
	n = tg_node(&b, GRAPH_OP_CONV, "conv0", 2, (int[]){ x, w }, 1);
	n->attr.conv = (struct graph_window_attr){ .nspatial = 2, .stride = { 2, 2 },
	    .dilation = { 2, 2 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }, .group = 3 };
	/* floor((10 + 2 - 2*2 - 1) / 2) + 1 = 4; floor((12 + 2 - 4 - 1) / 2) + 1 = 5 */
	expect_shape(&b, in, 0, SH(4, 1, 6, 4, 5), "grouped dilated conv");
	in[1] = SH(4, 6, 2, 3, 3);
	expect_error(&b, in, "'conv0'", "conv channels vs group");
	tg_init(&b);
	x = tg_input(&b, "x");
	w = tg_input(&b, "w");
	n = tg_node(&b, GRAPH_OP_CONV_TRANSPOSE, "deconv0", 2, (int[]){ x, w }, 1);
	n->attr.conv = (struct graph_window_attr){ .nspatial = 2, .stride = { 2, 2 },
	    .dilation = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 },
	    .output_padding = { 1, 0 }, .group = 2 };
	in[0] = SH(4, 1, 4, 5, 5); in[1] = SH(4, 4, 2, 3, 3);
	/* 2 (5 - 1) + op + (3 - 1) + 1 - 2 = 9 + op; channels 2 * group */
	expect_shape(&b, in, 0, SH(4, 1, 4, 10, 9), "conv transpose");
}

/* Max/average pooling with floor and ceil_mode, and global pooling. */
static void
test_pool(void)
{
	struct tg b;
	struct graph_shape in[1] = { SH(4, 1, 1, 6, 5) };
	struct graph_node *n;
	int x;

	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_POOL, "pool0", 1, &x, 1);
	n->attr.pool.w = (struct graph_window_attr){ .nspatial = 2, .kernel = { 3, 2 }, .stride = { 2, 2 },
	    .dilation = { 1, 1 }, .pad_begin = { 0, 1 }, .pad_end = { 0, 1 } };
	/* floor: (6-3)/2+1 = 2, (5+2-2)/2+1 = 3 */
	expect_shape(&b, in, 0, SH(4, 1, 1, 2, 3), "pool floor");
	n->attr.pool.ceil_mode = 1;
	/* ceil: ceil(3/2)+1 = 3; ceil(5/2)+1 = 4 but window 3 would start at 6 >= 5 + 1: 3 (as PyTorch) */
	expect_shape(&b, in, 0, SH(4, 1, 1, 3, 3), "pool ceil_mode");
	n->attr.pool.global = 1;
	expect_shape(&b, in, 0, SH(4, 1, 1, 1, 1), "global pool");
}

/* MatMul broadcasting and 1-D operands, Gemm transposes. */
static void
test_matmul_gemm(void)
{
	struct tg b;
	struct graph_shape in[2] = { SH(4, 2, 1, 3, 4), SH(3, 5, 4, 6) };
	struct graph_node *n;
	int x, y;

	tg_init(&b);
	x = tg_input(&b, "a");
	y = tg_input(&b, "b");
	tg_node(&b, GRAPH_OP_MATMUL, "mm0", 2, (int[]){ x, y }, 1);
	expect_shape(&b, in, 0, SH(4, 2, 5, 3, 6), "batched broadcast matmul");
	in[0] = SH(1, 4); in[1] = SH(3, 3, 4, 5);
	expect_shape(&b, in, 0, SH(2, 3, 5), "1-D x 3-D matmul");
	in[0] = SH(3, 2, 3, 4); in[1] = SH(1, 4);
	expect_shape(&b, in, 0, SH(2, 2, 3), "3-D x 1-D matmul");
	in[1] = SH(2, 5, 6);
	expect_error(&b, in, "'mm0'", "matmul inner dims");
	tg_init(&b);
	x = tg_input(&b, "a");
	y = tg_input(&b, "b");
	n = tg_node(&b, GRAPH_OP_GEMM, "gemm0", 2, (int[]){ x, y }, 1);
	n->attr.gemm = (struct graph_gemm_attr){ 1, 1, 1.0f, 1.0f };
	in[0] = SH(2, 4, 3); in[1] = SH(2, 5, 4);
	expect_shape(&b, in, 0, SH(2, 3, 5), "gemm transA transB");
}

/* Reshape with 0 and -1, Flatten, Squeeze, Unsqueeze. */
static void
test_reshape(void)
{
	static const int64_t t1[] = { 0, -1 }, t2[] = { -1, 0, 2 }, t3[] = { 5, -1 };
	struct tg b;
	struct graph_shape in[1] = { SH(3, 2, 3, 4) };
	struct graph_node *n;
	int x, s;

	tg_init(&b);
	x = tg_input(&b, "x");
	s = tg_ints(&b, "s", t1, 2);
	n = tg_node(&b, GRAPH_OP_RESHAPE, "rs0", 2, (int[]){ x, s }, 1);
	expect_shape(&b, in, 0, SH(2, 2, 12), "reshape [0,-1]");
	b.t[s].data = t2; b.t[s].nbytes = 24; b.t[s].dims[0] = 3;
	expect_shape(&b, in, 0, SH(3, 4, 3, 2), "reshape [-1,0,2]");
	b.t[s].data = t3; b.t[s].nbytes = 16; b.t[s].dims[0] = 2;
	expect_error(&b, in, "'rs0'", "reshape 24 into 5 x ?");
	n->ninputs = 1;
	n->attr.reshape.kind = GRAPH_RESHAPE_FLATTEN;
	n->attr.reshape.axis = 2;
	expect_shape(&b, in, 0, SH(2, 6, 4), "flatten axis 2");
	n->attr.reshape.axis = 0;
	expect_shape(&b, in, 0, SH(2, 1, 24), "flatten axis 0");
	n->attr.reshape.axis = -1;
	expect_shape(&b, in, 0, SH(2, 6, 4), "flatten axis -1");
	n->attr.reshape.axis = 3;
	expect_shape(&b, in, 0, SH(2, 24, 1), "flatten axis 3 (the rank)");
	n->attr.reshape.kind = GRAPH_RESHAPE_SQUEEZE;
	in[0] = SH(4, 2, 1, 3, 1);
	n->attr.reshape.naxes = 1; n->attr.reshape.axes[0] = 1;
	expect_shape(&b, in, 0, SH(3, 2, 3, 1), "squeeze axis 1");
	n->attr.reshape.naxes = 0;
	expect_shape(&b, in, 0, SH(2, 2, 3), "squeeze all");
	n->attr.reshape.kind = GRAPH_RESHAPE_UNSQUEEZE;
	in[0] = SH(2, 2, 3);
	n->attr.reshape.naxes = 2; n->attr.reshape.axes[0] = 0; n->attr.reshape.axes[1] = -1;
	expect_shape(&b, in, 0, SH(4, 1, 2, 3, 1), "unsqueeze 0, -1");
}

/* Transpose, Concat, Split, Gather, Expand. */
static void
test_movement(void)
{
	static const int64_t shape[] = { 2, 1, 4 };
	struct tg b;
	struct graph_shape in[2] = { SH(3, 2, 3, 4), SH(2, 2, 5) };
	struct graph_node *n;
	int x, y;

	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_TRANSPOSE, "tr0", 1, &x, 1);
	n->attr.transpose.nperm = 3;
	n->attr.transpose.perm[0] = 2; n->attr.transpose.perm[1] = 0; n->attr.transpose.perm[2] = 1;
	expect_shape(&b, in, 0, SH(3, 4, 2, 3), "transpose [2,0,1]");
	n->attr.transpose.nperm = 0;
	expect_shape(&b, in, 0, SH(3, 4, 3, 2), "transpose reversed");
	tg_init(&b);
	x = tg_input(&b, "a");
	y = tg_input(&b, "b");
	n = tg_node(&b, GRAPH_OP_CONCAT, "cat0", 2, (int[]){ x, y }, 1);
	n->attr.concat.axis = -1;
	in[0] = SH(2, 2, 3);
	expect_shape(&b, in, 0, SH(2, 2, 8), "concat axis -1");
	in[1] = SH(2, 3, 5);
	expect_error(&b, in, "'cat0'", "concat off-axis mismatch");
	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_SPLIT, "split0", 1, &x, 3);
	n->attr.split.axis = 1;
	in[0] = SH(2, 4, 7);
	expect_shape(&b, in, 0, SH(2, 4, 3), "split 7 in 3: first");
	expect_shape(&b, in, 2, SH(2, 4, 1), "split 7 in 3: last");
	n->attr.split.nsplit = 3;
	n->attr.split.split = (int64_t[]){ 1, 4, 2 };
	expect_shape(&b, in, 1, SH(2, 4, 4), "split sizes");
	tg_init(&b);
	x = tg_input(&b, "data");
	y = tg_input(&b, "idx");
	n = tg_node(&b, GRAPH_OP_GATHER, "gather0", 2, (int[]){ x, y }, 1);
	n->attr.gather.axis = 1;
	in[0] = SH(3, 3, 4, 5); in[1] = SH(2, 2, 6);
	expect_shape(&b, in, 0, SH(4, 3, 2, 6, 5), "gather axis 1");
	tg_init(&b);
	x = tg_input(&b, "x");
	y = tg_ints(&b, "shape", shape, 3);
	tg_node(&b, GRAPH_OP_EXPAND, "expand0", 2, (int[]){ x, y }, 1);
	in[0] = SH(2, 3, 1);
	expect_shape(&b, in, 0, SH(3, 2, 3, 4), "expand [3,1] to [2,1,4]");
}

/* Slice with negative, clamped and reversed bounds. */
static void
test_slice(void)
{
	struct tg b;
	struct graph_shape in[1] = { SH(2, 10, 8) };
	struct graph_node *n;
	int x;

	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_SLICE, "slice0", 1, &x, 1);
	n->attr.slice.naxes = 2;
	n->attr.slice.starts[0] = -3; n->attr.slice.ends[0] = INT64_MAX;
	n->attr.slice.axes[0] = 0; n->attr.slice.steps[0] = 1;
	n->attr.slice.starts[1] = 7; n->attr.slice.ends[1] = -100;
	n->attr.slice.axes[1] = -1; n->attr.slice.steps[1] = -2;
	/* rows 7, 8, 9; columns 7, 5, 3, 1 */
	expect_shape(&b, in, 0, SH(2, 3, 4), "slice negative and reversed");
	n->attr.slice.starts[0] = 20;
	expect_shape(&b, in, 0, SH(2, 0, 4), "slice past the end is empty");
}

/* Pad, Resize, Cast, reductions, Shape and Range. */
static void
test_misc(void)
{
	static const int64_t r0 = 2, r1 = 11, r2 = 3;
	struct tg b;
	struct graph_shape in[1] = { SH(4, 1, 3, 4, 4) };
	struct graph_node *n;
	int x, y, z;

	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_PAD, "pad0", 1, &x, 1);
	n->attr.pad.npads = 8;
	memcpy(n->attr.pad.pads, (int64_t[]){ 0, 0, 1, 2, 0, 0, 3, -1 }, 8 * sizeof(int64_t));
	expect_shape(&b, in, 0, SH(4, 1, 3, 8, 5), "pad with a negative pad");
	n->op = GRAPH_OP_RESIZE;
	n->attr.resize = (struct graph_resize_attr){ .nscales = 4, .scales = { 1, 1, 2, 1.5f } };
	in[0] = SH(4, 1, 3, 5, 4);
	expect_shape(&b, in, 0, SH(4, 1, 3, 10, 6), "resize scales");
	n->attr.resize = (struct graph_resize_attr){ .nsizes = 4, .sizes = { 1, 3, 7, 9 } };
	expect_shape(&b, in, 0, SH(4, 1, 3, 7, 9), "resize sizes");
	n->op = GRAPH_OP_CAST;
	expect_shape(&b, in, 0, SH(4, 1, 3, 5, 4), "cast");
	n->op = GRAPH_OP_REDUCE;
	n->attr.reduce = (struct graph_reduce_attr){ .naxes = 1, .axes = { 1 }, .keepdims = 1 };
	expect_shape(&b, in, 0, SH(4, 1, 1, 5, 4), "reduce keepdims");
	n->attr.reduce = (struct graph_reduce_attr){ .naxes = 2, .axes = { 0, -1 } };
	expect_shape(&b, in, 0, SH(2, 3, 5), "reduce axes 0,-1");
	n->attr.reduce = (struct graph_reduce_attr){ .naxes = 0 };
	expect_shape(&b, in, 0, SH(0), "reduce all");
	n->op = GRAPH_OP_SHAPE;
	n->attr.shape.start = 1; n->attr.shape.end = -1;
	expect_shape(&b, in, 0, SH(1, 2), "shape start 1 end -1");
	tg_init(&b);
	x = tg_ints(&b, "start", &r0, 1);
	y = tg_ints(&b, "limit", &r1, 1);
	z = tg_ints(&b, "delta", &r2, 1);
	b.t[x].ndims = b.t[y].ndims = b.t[z].ndims = 0;
	tg_input(&b, "unused");
	tg_node(&b, GRAPH_OP_RANGE, "range0", 3, (int[]){ x, y, z }, 1);
	expect_shape(&b, in, 0, SH(1, 3), "range 2..11 step 3");
}

/* Declared batch and variable dims must agree across inputs. */
static void
test_declared(void)
{
	static const int64_t d0[] = { GRAPH_DIM_BATCH, GRAPH_DIM_VAR(0) }, d1[] = { GRAPH_DIM_BATCH, 4 };
	struct tg b;
	struct graph_shape in[2] = { SH(2, 3, 7), SH(2, 3, 4) };
	int x, y;

	tg_init(&b);
	b.g.nvars = 1;
	x = tg_tensor(&b, "ids", GRAPH_TENSOR_INPUT, GRAPH_DT_F32, 2, d0, NULL, 0);
	y = tg_tensor(&b, "mask", GRAPH_TENSOR_INPUT, GRAPH_DT_F32, 2, d1, NULL, 0);
	tg_node(&b, GRAPH_OP_CONCAT, "cat0", 2, (int[]){ x, y }, 1)->attr.concat.axis = 1;
	expect_shape(&b, in, 0, SH(2, 3, 11), "batch and variable dims");
	in[1] = SH(2, 2, 4);
	expect_error(&b, in, "'mask'", "batch differs between inputs");
	in[1] = SH(2, 3, 5);
	expect_error(&b, in, "'mask'", "fixed dim differs");
}

/*
 * Shape arithmetic as exporters write it: Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape.  graph_specialize must fold it for any batch and keep
 * the same runtime node at the same tensor indices.
 */
static void
test_specialize(void)
{
	static const int64_t zero = 0, minus1[] = { -1 }, dims[] = { GRAPH_DIM_BATCH, 3, 4 };
	struct tg b;
	struct graph_spec *s1 = NULL, *s2 = NULL;
	struct graph_node *n;
	char *cause = NULL;
	int x, sh, i0, g0, u0, m1, c0;

	tg_init(&b);
	x = tg_tensor(&b, "x", GRAPH_TENSOR_INPUT, GRAPH_DT_F32, 3, dims, NULL, 0);
	sh = tg_node(&b, GRAPH_OP_SHAPE, "shape", 1, &x, 1)->outputs[0];
	b.n[0].attr.shape.end = INT64_MAX;
	b.t[sh].dtype = GRAPH_DT_I64;
	i0 = tg_tensor(&b, "i0", GRAPH_TENSOR_CONST, GRAPH_DT_I64, 0, NULL, &zero, 8);
	g0 = tg_node(&b, GRAPH_OP_GATHER, "gather", 2, (int[]){ sh, i0 }, 1)->outputs[0];
	b.t[g0].dtype = GRAPH_DT_I64;
	n = tg_node(&b, GRAPH_OP_RESHAPE, "unsq", 1, &g0, 1);
	n->attr.reshape.kind = GRAPH_RESHAPE_UNSQUEEZE;
	n->attr.reshape.naxes = 1;
	u0 = n->outputs[0];
	b.t[u0].dtype = GRAPH_DT_I64;
	m1 = tg_ints(&b, "m1", minus1, 1);
	n = tg_node(&b, GRAPH_OP_CONCAT, "concat", 2, (int[]){ u0, m1 }, 1);
	c0 = n->outputs[0];
	b.t[c0].dtype = GRAPH_DT_I64;
	n = tg_node(&b, GRAPH_OP_RESHAPE, "reshape", 2, (int[]){ x, c0 }, 1);
	b.gout[b.g.noutputs++] = n->outputs[0];
	CHECK(graph_specialize(&b.g, &cpu_fold_kernels, &SH(3, 5, 3, 4), &s1, &cause) == 0, "specialize 5: %s", cause);
	CHECK(graph_specialize(&b.g, &cpu_fold_kernels, &SH(3, 2, 3, 4), &s2, &cause) == 0, "specialize 2: %s", cause);
	if (s1 != NULL && s2 != NULL) {
		CHECK(s1->graph.nnodes == 1 && s2->graph.nnodes == 1 && s1->nfolded == 4,
		    "runtime nodes %zu/%zu, folded %zu", s1->graph.nnodes, s2->graph.nnodes, s1->nfolded);
		CHECK(s1->graph.nodes[0].outputs[0] == s2->graph.nodes[0].outputs[0] &&
		    s1->graph.nodes[0].inputs[1] == c0, "tensor indices moved");
		CHECK(s1->shapes[b.gout[0]].ndims == 2 && s1->shapes[b.gout[0]].dims[0] == 5 &&
		    s1->shapes[b.gout[0]].dims[1] == 12, "reshape at batch 5");
		CHECK(s2->shapes[b.gout[0]].dims[0] == 2 && s2->shapes[b.gout[0]].dims[1] == 12,
		    "reshape at batch 2");
		CHECK(b.t[c0].flags == 0 && (s1->graph.tensors[c0].flags & GRAPH_TENSOR_CONST),
		    "the source graph changed or the spec lacks the folded constant");
	}
	graph_spec_free(s1);
	graph_spec_free(s2);
	free(cause);
}

/* A heap copy of a hand-built graph (graph_fold_constants and graph_free own heap memory). */
static graph_t *
tg_heap(const struct tg *b)
{
	graph_t *g = calloc(1, sizeof *g);
	size_t i;

	*g = b->g;
	g->tensors = calloc(b->g.ntensors, sizeof *g->tensors);
	g->nodes = calloc(b->g.nnodes, sizeof *g->nodes);
	g->inputs = malloc(sizeof(int) * 4);
	g->outputs = malloc(sizeof(int) * 4);
	memcpy(g->inputs, b->gin, sizeof(int) * 4);
	memcpy(g->outputs, b->gout, sizeof(int) * 4);
	for (i = 0; i < b->g.ntensors; i++) {
		g->tensors[i] = b->t[i];
		g->tensors[i].name = strdup(b->t[i].name);
	}
	for (i = 0; i < b->g.nnodes; i++) {
		g->nodes[i] = b->n[i];
		g->nodes[i].name = strdup(b->n[i].name);
		g->nodes[i].inputs = malloc(sizeof(int) * 8);
		g->nodes[i].outputs = malloc(sizeof(int) * 8);
		memcpy(g->nodes[i].inputs, b->n[i].inputs, sizeof(int) * 8);
		memcpy(g->nodes[i].outputs, b->n[i].outputs, sizeof(int) * 8);
	}
	return g;
}

/*
 * Load-time folding: a MatMul of two constants runs on the CPU kernels and
 * becomes a constant (checked against the product written out here), a node
 * whose output nobody reads is dropped, and unreferenced tensors go.
 */
static void
test_fold_at_load(void)
{
	static const float a[6] = { 1, 2, 3, 4, 5, 6 }, bm[6] = { 1, -1, 0, 2, 0.5f, 0.25f };
	/* [[1,2,3],[4,5,6]] x [[1,-1],[0,2],[0.5,0.25]] */
	static const float want[4] = { 2.5f, 3.75f, 7, 7.5f };
	static const int64_t da[2] = { 2, 3 }, db[2] = { 3, 2 };
	struct tg b;
	graph_t *g;
	char *cause = NULL;
	size_t removed = 0;
	int ta, tb, tx, c;

	tg_init(&b);
	tx = tg_input(&b, "x");
	ta = tg_tensor(&b, "a", GRAPH_TENSOR_CONST, GRAPH_DT_F32, 2, da, a, sizeof a);
	tb = tg_tensor(&b, "b", GRAPH_TENSOR_CONST, GRAPH_DT_F32, 2, db, bm, sizeof bm);
	c = tg_node(&b, GRAPH_OP_MATMUL, "mm", 2, (int[]){ ta, tb }, 1)->outputs[0];
	tg_node(&b, GRAPH_OP_UNARY, "dead", 1, &tx, 1)->attr.unary.fn = GRAPH_UNARY_RELU;
	b.gout[b.g.noutputs++] = tg_node(&b, GRAPH_OP_BINARY, "add", 2, (int[]){ c, tx }, 1)->outputs[0];
	b.t[b.gout[0]].flags = GRAPH_TENSOR_OUTPUT;
	g = tg_heap(&b);
	CHECK(graph_fold_constants(g, &cpu_fold_kernels, &removed, &cause) == 0, "fold: %s", cause);
	CHECK(removed == 2 && g->nnodes == 1 && strcmp(g->nodes[0].name, "add") == 0,
	    "removed %zu, %zu nodes left", removed, g->nnodes);
	CHECK(g->ntensors == 3, "%zu tensors left (x, folded product, output)", g->ntensors);
	if (g->nnodes == 1) {
		const struct graph_tensor *t = &g->tensors[g->nodes[0].inputs[0]];

		CHECK((t->flags & GRAPH_TENSOR_CONST) && t->owns_data && t->nbytes == sizeof want &&
		    t->ndims == 2 && t->dims[0] == 2 && t->dims[1] == 2 &&
		    memcmp(t->data, want, sizeof want) == 0, "folded product wrong");
		CHECK(g->tensors[g->outputs[0]].flags & GRAPH_TENSOR_OUTPUT, "output lost");
	}
	free(cause);
	graph_free(g);
}

/*
 * GatherElements and LessOrEqual on constants fold at load (GatherElements
 * through the CPU kernels, the comparison through the exact evaluator), with
 * values written out here; an index out of range refuses the fold.
 */
static void
test_fold_gather_elements(void)
{
	static const float data[6] = { 1, 2, 3, 4, 5, 6 }, three = 3;
	static const int64_t idx[4] = { 2, -3, -1, 1 }, bad[4] = { 2, 3, 0, 0 };
	static const int64_t dd[2] = { 2, 3 }, di[2] = { 2, 2 }, d1 = 1;
	static const float want_ge[4] = { 3, 1, 6, 5 };
	static const uint8_t want_le[4] = { 1, 1, 0, 0 };

	for (int round = 0; round < 2; round++) {
		struct tg b;
		struct graph_node *n;
		graph_t *g;
		char *cause = NULL;
		size_t removed = 0;
		int td, ti, tc, tx, ge, le, rc;

		tg_init(&b);
		tx = tg_input(&b, "x");
		td = tg_tensor(&b, "data", GRAPH_TENSOR_CONST, GRAPH_DT_F32, 2, dd, data, sizeof data);
		ti = tg_tensor(&b, "idx", GRAPH_TENSOR_CONST, GRAPH_DT_I64, 2, di, round ? bad : idx, sizeof idx);
		tc = tg_tensor(&b, "three", GRAPH_TENSOR_CONST, GRAPH_DT_F32, 1, &d1, &three, sizeof three);
		n = tg_node(&b, GRAPH_OP_GATHER_ELEMENTS, "ge", 2, (int[]){ td, ti }, 1);
		n->attr.gather.axis = -1;
		ge = n->outputs[0];
		n = tg_node(&b, GRAPH_OP_BINARY, "le", 2, (int[]){ ge, tc }, 1);
		n->attr.binary.fn = GRAPH_BINARY_LESS_OR_EQUAL;
		le = n->outputs[0];
		b.t[le].dtype = GRAPH_DT_BOOL;
		b.gout[b.g.noutputs++] = tg_node(&b, GRAPH_OP_WHERE, "where", 3, (int[]){ le, ge, tx }, 1)->outputs[0];
		b.t[b.gout[0]].flags = GRAPH_TENSOR_OUTPUT;
		g = tg_heap(&b);
		rc = graph_fold_constants(g, &cpu_fold_kernels, &removed, &cause);
		if (round == 1) {
			CHECK(rc != 0 && cause != NULL && strstr(cause, "out of range") != NULL,
			    "fold with index 3 of 3: %s", cause ? cause : "accepted");
		} else {
			CHECK(rc == 0, "fold: %s", cause);
			CHECK(g->nnodes == 1 && g->nodes[0].op == GRAPH_OP_WHERE, "%zu nodes left", g->nnodes);
		}
		if (round == 0 && g->nnodes == 1) {
			const struct graph_tensor *c = &g->tensors[g->nodes[0].inputs[0]];
			const struct graph_tensor *v = &g->tensors[g->nodes[0].inputs[1]];

			CHECK((c->flags & GRAPH_TENSOR_CONST) && c->dtype == GRAPH_DT_BOOL && c->nbytes == 4 &&
			    memcmp(c->data, want_le, 4) == 0, "folded LessOrEqual wrong");
			CHECK((v->flags & GRAPH_TENSOR_CONST) && v->nbytes == sizeof want_ge &&
			    memcmp(v->data, want_ge, sizeof want_ge) == 0, "folded GatherElements wrong");
		}
		free(cause);
		graph_free(g);
	}
}

/* ArgMax/ArgMin (keepdims, negative axis) and Tile (repeats in the node, a constant or not one). */
static void
test_argmax_tile(void)
{
	static const int64_t reps[] = { 1, 3, 0 };
	struct tg b;
	struct graph_shape in[2] = { SH(3, 2, 3, 4) };
	struct graph_node *n;
	int x, r;

	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_ARGMAX, "am0", 1, &x, 1);
	n->attr.argmax.axis = -2;
	n->attr.argmax.keepdims = 1;
	expect_shape(&b, in, 0, SH(3, 2, 1, 4), "argmax axis -2 keepdims");
	n->attr.argmax.keepdims = 0;
	expect_shape(&b, in, 0, SH(2, 2, 4), "argmax axis -2");
	n->attr.argmax.axis = 3;
	expect_error(&b, in, "'am0': ArgMax/ArgMin axis out of range", "argmax axis 3 of rank 3");
	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_TILE, "tile0", 1, &x, 1);
	n->attr.tile.nreps = 3;
	n->attr.tile.reps[0] = 2; n->attr.tile.reps[1] = 1; n->attr.tile.reps[2] = 3;
	in[0] = SH(3, 2, 3, 4);
	expect_shape(&b, in, 0, SH(3, 4, 3, 12), "tile [2,1,3]");
	n->attr.tile.nreps = 2;
	expect_error(&b, in, "repeats differ in length", "tile repeats of the wrong length");
	tg_init(&b);
	x = tg_input(&b, "x");
	r = tg_ints(&b, "reps", reps, 3);
	n = tg_node(&b, GRAPH_OP_TILE, "tile1", 2, (int[]){ x, r }, 1);
	n->attr.tile.nreps = -1;
	expect_shape(&b, in, 0, SH(3, 2, 9, 0), "tile by a constant input [1,3,0]");
	tg_init(&b);
	x = tg_input(&b, "x");
	r = tg_input(&b, "reps");
	b.t[r].dtype = GRAPH_DT_I64;
	n = tg_node(&b, GRAPH_OP_TILE, "tile2", 2, (int[]){ x, r }, 1);
	n->attr.tile.nreps = -1;
	in[1] = SH(1, 3);
	expect_error(&b, in, "Tile's repeats 'reps' must be a constant", "tile by repeats from the request");
}

/* The device test_fold_growth pretends to have: runs every node, or none. */
static int
runs_all(void *arg, const graph_t *g, const struct graph_node *n)
{
	(void)g;
	(void)n;
	return *(const int *)arg;
}

/* Bytes of the constants s folded beyond its source graph's own. */
static size_t
spec_folded_bytes(const struct graph_spec *s)
{
	size_t i, b = 0;

	for (i = 0; i < s->graph.ntensors; i++)
		if ((s->graph.tensors[i].flags & GRAPH_TENSOR_CONST) && !(s->source->tensors[i].flags & GRAPH_TENSOR_CONST))
			b += s->graph.tensors[i].nbytes;
	return b;
}

/*
 * BERT's token-type lookup: Gather(table [2, 64], Expand(zero [1, 1], Shape(x)))
 * would fold into a [rows, length, 64] constant, 4 MB at 64 x 256 from 512
 * bytes of table.  Marked at the largest shape, the Expand and the Gather stay
 * at run time in every specialization (the same runtime nodes at 2 x 3), the
 * Shape still folds, and no folded constant outgrows the floor; on a device
 * that runs neither, nothing is marked and the lookup folds as before.
 */
static void
test_fold_growth(void)
{
	static const float table[2][64] = { { 1, 2, 3 }, { 4, 5, 6 } };
	static const int64_t dt[2] = { 2, 64 }, dz[2] = { 1, 1 }, zero = 0;
	struct graph_spec *big = NULL, *small = NULL;
	struct graph_node *n;
	struct tg b;
	char *cause = NULL;
	int x, sh, idx, tab, z, emb, yes = 1, no = 0;
	size_t marked;

	tg_init(&b);
	x = tg_input(&b, "x");
	n = tg_node(&b, GRAPH_OP_SHAPE, "shape", 1, &x, 1);
	n->attr.shape.end = INT64_MAX;
	sh = n->outputs[0];
	b.t[sh].dtype = GRAPH_DT_I64;
	z = tg_tensor(&b, "zero", GRAPH_TENSOR_CONST, GRAPH_DT_I64, 2, dz, &zero, 8);
	idx = tg_node(&b, GRAPH_OP_EXPAND, "expand", 2, (int[]){ z, sh }, 1)->outputs[0];
	b.t[idx].dtype = GRAPH_DT_I64;
	tab = tg_tensor(&b, "table", GRAPH_TENSOR_CONST, GRAPH_DT_F32, 2, dt, table, sizeof table);
	emb = tg_node(&b, GRAPH_OP_GATHER, "gather", 2, (int[]){ tab, idx }, 1)->outputs[0];
	b.gout[b.g.noutputs++] = emb;
	b.t[emb].flags = GRAPH_TENSOR_OUTPUT;

	marked = graph_fold_mark_growth(&b.g, &cpu_fold_kernels, &SH(2, 64, 256), runs_all, &yes);
	CHECK(marked == 1 && !b.n[0].no_fold && b.n[1].no_fold && !b.n[2].no_fold,
	    "marked %zu: shape %d, expand %d, gather %d", marked, b.n[0].no_fold, b.n[1].no_fold, b.n[2].no_fold);
	CHECK(graph_specialize(&b.g, &cpu_fold_kernels, &SH(2, 64, 256), &big, &cause) == 0, "64 x 256: %s", cause);
	CHECK(graph_specialize(&b.g, &cpu_fold_kernels, &SH(2, 2, 3), &small, &cause) == 0, "2 x 3: %s", cause);
	if (big != NULL && small != NULL) {
		CHECK(big->graph.nnodes == 2 && small->graph.nnodes == 2 && big->graph.nodes[1].op == GRAPH_OP_GATHER &&
		    small->graph.nodes[1].outputs[0] == emb, "runtime nodes %zu at 64 x 256, %zu at 2 x 3",
		    big->graph.nnodes, small->graph.nnodes);
		CHECK(!(big->graph.tensors[emb].flags & GRAPH_TENSOR_CONST) && spec_folded_bytes(big) == 16,
		    "the lookup folded: %zu bytes of constants at 64 x 256", spec_folded_bytes(big));
		CHECK(big->shapes[emb].ndims == 3 && big->shapes[emb].dims[0] == 64 && big->shapes[emb].dims[2] == 64,
		    "gather shape");
	}
	graph_spec_free(big);
	graph_spec_free(small);
	big = NULL;

	marked = graph_fold_mark_growth(&b.g, &cpu_fold_kernels, &SH(2, 64, 256), runs_all, &no);
	CHECK(marked == 0 && !b.n[1].no_fold, "marked %zu on a device that runs nothing", marked);
	CHECK(graph_specialize(&b.g, &cpu_fold_kernels, &SH(2, 64, 256), &big, &cause) == 0, "unmarked: %s", cause);
	if (big != NULL) {
		const struct graph_tensor *t = &big->graph.tensors[emb];

		CHECK(big->graph.nnodes == 0 && (t->flags & GRAPH_TENSOR_CONST) && t->nbytes == 64 * 256 * 64 * 4 &&
		    ((const float *)t->data)[64 * 256 * 64 - 63] == 2, "unmarked, the lookup does not fold as before");
	}
	graph_spec_free(big);
	free(cause);
}

int
main(void)
{
	test_broadcast();
	test_conv();
	test_pool();
	test_matmul_gemm();
	test_reshape();
	test_movement();
	test_slice();
	test_misc();
	test_declared();
	test_specialize();
	test_fold_at_load();
	test_fold_gather_elements();
	test_argmax_tile();
	test_fold_growth();
	return test_finish("test_graph_shape");
}
