/* cpu_node.c: the CPU kernel library's entry points: which nodes it runs, their scratch sizes, dispatch. */
#include "config.h"

#include <stdlib.h>

#include "cpu_kernels_impl.h"
#include "error.h"

/* Dtypes an op accepts, as bit masks over graph_dtype. */
#define DT(x) (1u << GRAPH_DT_##x)
#define DT_F32 DT(F32)
#define DT_INT (DT(I64) | DT(I32))
#define DT_ANY (((1u << GRAPH_DT_COUNT) - 1) & ~DT(STRING))
/* The ops that carry strings: they move whole elements (Cast converts them), so a slot moves like a number. */
#define DT_MOVE (DT_ANY | DT(STRING))

struct cpu_op {
	const char *name;
	int (*run)(const struct cpu_node_ctx *c, char **cause);
	size_t (*workspace)(const struct cpu_node_ctx *c);
	int min_in, max_in, min_out, max_out;
	unsigned dtypes;	/* dtypes of the data inputs and outputs */
};

/* Per op: entry points, input/output counts, dtypes (checked further in node_check). */
static const struct cpu_op cpu_ops[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = { "Gemm", cpu_gemm_run, NULL, 2, 3, 1, 1, DT_F32 },
	[GRAPH_OP_MATMUL] = { "MatMul", cpu_matmul_run, NULL, 2, 3, 1, 1, DT_F32 },
	[GRAPH_OP_CONV] = { "Conv", cpu_conv_run, cpu_conv_workspace, 2, 4, 1, 1, DT_F32 },
	[GRAPH_OP_CONV_TRANSPOSE] = { "ConvTranspose", cpu_conv_transpose_run,
	    cpu_conv_transpose_workspace, 2, 3, 1, 1, DT_F32 },
	[GRAPH_OP_UNARY] = { "Unary", cpu_unary_run, NULL, 1, 1, 1, 1, DT_F32 },
	[GRAPH_OP_BINARY] = { "Binary", cpu_binary_run, NULL, 2, 2, 1, 1, DT_F32 | DT_INT },
	[GRAPH_OP_PRELU] = { "PRelu", cpu_prelu_run, NULL, 2, 2, 1, 1, DT_F32 },
	[GRAPH_OP_SOFTMAX] = { "Softmax", cpu_softmax_run, NULL, 1, 1, 1, 1, DT_F32 },
	[GRAPH_OP_LAYERNORM] = { "LayerNormalization", cpu_layernorm_run, NULL, 1, 4, 1, 1, DT_F32 },
	[GRAPH_OP_BATCHNORM] = { "BatchNormalization", cpu_batchnorm_run, NULL, 5, 5, 1, 1, DT_F32 },
	[GRAPH_OP_POOL] = { "Pool", cpu_pool_run, NULL, 1, 1, 1, 1, DT_F32 },
	[GRAPH_OP_REDUCE] = { "Reduce", cpu_reduce_run, NULL, 1, 1, 1, 1, DT_F32 },
	[GRAPH_OP_TRANSPOSE] = { "Transpose", cpu_transpose_run, NULL, 1, 1, 1, 1, DT_ANY },
	[GRAPH_OP_RESHAPE] = { "Reshape", cpu_copy_run, NULL, 1, 2, 1, 1, DT_MOVE },
	[GRAPH_OP_CONCAT] = { "Concat", cpu_concat_run, NULL, 1, 1 << 20, 1, 1, DT_MOVE },
	[GRAPH_OP_SPLIT] = { "Split", cpu_split_run, NULL, 1, 2, 1, 1 << 20, DT_ANY },
	[GRAPH_OP_SLICE] = { "Slice", cpu_slice_run, NULL, 1, 5, 1, 1, DT_ANY },
	[GRAPH_OP_GATHER] = { "Gather", cpu_gather_run, NULL, 2, 2, 1, 1, DT_MOVE },
	[GRAPH_OP_EXPAND] = { "Expand", cpu_expand_run, NULL, 1, 2, 1, 1, DT_ANY },
	[GRAPH_OP_PAD] = { "Pad", cpu_pad_run, NULL, 1, 4, 1, 1, DT_ANY },
	[GRAPH_OP_RESIZE] = { "Resize", cpu_resize_run, cpu_resize_workspace, 1, 4, 1, 1, DT_F32 },
	[GRAPH_OP_CAST] = { "Cast", cpu_cast_run, NULL, 1, 1, 1, 1, DT_MOVE },
	[GRAPH_OP_WHERE] = { "Where", cpu_where_run, NULL, 3, 3, 1, 1, DT_ANY },
	[GRAPH_OP_COPY] = { "Copy", cpu_copy_run, NULL, 1, 1, 1, 1, DT_MOVE },
	[GRAPH_OP_GATHER_ELEMENTS] = { "GatherElements", cpu_gather_elements_run, NULL, 2, 2, 1, 1, DT_ANY },
	[GRAPH_OP_ATTENTION] = { "Attention", cpu_attention_run, cpu_attention_workspace, 3, 4, 1, 1, DT_F32 },
	[GRAPH_OP_PREDICATE] = { "IsNaN/IsInf/Not", cpu_predicate_run, NULL, 1, 1, 1, 1, DT(BOOL) },
	[GRAPH_OP_TRILU] = { "Trilu", cpu_trilu_run, NULL, 1, 2, 1, 1, DT_ANY },
	[GRAPH_OP_CUMSUM] = { "CumSum", cpu_cumsum_run, NULL, 1, 2, 1, 1, DT_F32 | DT_INT },
	[GRAPH_OP_GATHER_ND] = { "GatherND", cpu_gather_nd_run, NULL, 2, 2, 1, 1, DT_ANY },
	[GRAPH_OP_SCATTER_ND] = { "ScatterND", cpu_scatter_nd_run, NULL, 3, 3, 1, 1, DT_ANY },
	[GRAPH_OP_RNN] = { "RNN/GRU/LSTM", cpu_rnn_run, cpu_rnn_workspace, 3, 8, 1, 3, DT_F32 },
	[GRAPH_OP_TOPK] = { "TopK", cpu_topk_run, cpu_topk_workspace, 1, 1, 2, 2, DT_F32 },
	[GRAPH_OP_SCATTER_ELEMENTS] = { "ScatterElements", cpu_scatter_elements_run, NULL, 3, 3, 1, 1, DT_ANY },
	[GRAPH_OP_ONEHOT] = { "OneHot", cpu_onehot_run, NULL, 3, 3, 1, 1, DT_ANY },
	[GRAPH_OP_INSTANCENORM] = { "InstanceNormalization", cpu_groupnorm_run, NULL, 3, 3, 1, 1, DT_F32 },
	[GRAPH_OP_GROUPNORM] = { "GroupNormalization", cpu_groupnorm_run, NULL, 3, 3, 1, 1, DT_F32 },
	[GRAPH_OP_EINSUM] = { "Einsum", cpu_einsum_run, cpu_einsum_workspace, 1, 2, 1, 1, DT_F32 },
	[GRAPH_OP_ARGMAX] = { "ArgMax/ArgMin", cpu_argmax_run, NULL, 1, 1, 1, 1, DT(I64) },
	[GRAPH_OP_TILE] = { "Tile", cpu_tile_run, NULL, 1, 2, 1, 1, DT_MOVE },
};

/* The table entry of n, or NULL for an op outside the set. */
static const struct cpu_op *
node_op(const struct graph_node *n)
{
	if ((int)n->op < 0 || n->op >= GRAPH_OP_COUNT || cpu_ops[n->op].run == NULL)
		return NULL;
	return &cpu_ops[n->op];
}

/* Dtype of tensor index t, or GRAPH_DT_COUNT when the index is bad. */
static enum graph_dtype
tensor_dtype(const graph_t *g, int t)
{
	if (t < 0 || (size_t)t >= g->ntensors)
		return GRAPH_DT_COUNT;
	return g->tensors[t].dtype;
}

/* A dtype's name for messages. */
static const char *
dt_name(enum graph_dtype dt)
{
	static const char *const names[GRAPH_DT_COUNT] = { "FP32", "FP16", "INT64", "INT32", "INT8",
	    "UINT8", "BOOL", "BYTES" };

	return (int)dt >= 0 && dt < GRAPH_DT_COUNT ? names[dt] : "an unknown dtype";
}

/* Number of leading inputs that carry the op's data (the rest are folded parameters). */
static int
node_ndata(const struct graph_node *n)
{
	switch (n->op) {
	case GRAPH_OP_GEMM: case GRAPH_OP_MATMUL: case GRAPH_OP_CONV_TRANSPOSE: case GRAPH_OP_LAYERNORM:
		return 3;
	case GRAPH_OP_CONV: case GRAPH_OP_ATTENTION: return 4;
	case GRAPH_OP_BINARY: case GRAPH_OP_PRELU: return 2;
	case GRAPH_OP_BATCHNORM: return 5;
	case GRAPH_OP_CONCAT: case GRAPH_OP_EINSUM: return n->ninputs;
	case GRAPH_OP_INSTANCENORM: case GRAPH_OP_GROUPNORM: return 3;
	case GRAPH_OP_ONEHOT: case GRAPH_OP_ARGMAX: return 0;
	case GRAPH_OP_CAST: case GRAPH_OP_WHERE: case GRAPH_OP_PREDICATE: return 0;
	default: return 1;
	}
}

/* Whether a fused activation is allowed on this op. */
static int
node_takes_act(const struct graph_node *n)
{
	switch (n->op) {
	case GRAPH_OP_GEMM: case GRAPH_OP_MATMUL: case GRAPH_OP_CONV: case GRAPH_OP_CONV_TRANSPOSE:
	case GRAPH_OP_UNARY: case GRAPH_OP_BINARY:
		return 1;
	default:
		return 0;
	}
}

/* Window attributes: ranks and sizes in range. */
static int
window_check(const struct graph_window_attr *w, int need_kernel, char **why)
{
	if (w->nspatial < 1 || w->nspatial > 3)
		return cpu_fail(why, "%d spatial dims (1 to 3 are supported)", w->nspatial);
	for (int i = 0; i < w->nspatial; i++)
		if ((need_kernel && w->kernel[i] < 1) || w->stride[i] < 1 || w->dilation[i] < 1 ||
		    w->pad_begin[i] < 0 || w->pad_end[i] < 0 || w->output_padding[i] < 0)
			return cpu_fail(why, "kernel, stride, dilation, pad or output_padding out of range "
			    "in spatial dim %d", i);
	if (w->group < 0)
		return cpu_fail(why, "group %lld", (long long)w->group);
	return 0;
}

/* Dtype rules of ScatterElements (indices INT64/INT32, updates of the data's dtype) and OneHot (numeric indices). */
static int
node_check_dtypes_more(const graph_t *g, const struct graph_node *n, enum graph_dtype out, char **why)
{
	enum graph_dtype in0 = tensor_dtype(g, n->inputs[0]), in1 = tensor_dtype(g, n->inputs[1]);

	if (n->op == GRAPH_OP_ONEHOT)
		return in0 != GRAPH_DT_BOOL && tensor_dtype(g, n->inputs[2]) == out ? 0 :
		    cpu_fail(why, "OneHot needs numeric indices and values of the output's dtype");
	if (in1 != GRAPH_DT_I64 && in1 != GRAPH_DT_I32)
		return cpu_fail(why, "ScatterElements indices must be INT64 or INT32");
	if (tensor_dtype(g, n->inputs[2]) != out)
		return cpu_fail(why, "ScatterElements updates must have the data's dtype");
	return n->attr.scatter.reduce == GRAPH_SCATTER_NONE || out == GRAPH_DT_F32 || out == GRAPH_DT_I64 ||
	    out == GRAPH_DT_I32 ? 0 : cpu_fail(why, "ScatterElements add/mul/max/min on %s", dt_name(out));
}

/* Dtype rules special to Binary, Cast, Where, the predicates and the gathers and scatters. */
static int
node_check_dtypes_special(const graph_t *g, const struct graph_node *n, enum graph_dtype out, char **why)
{
	enum graph_dtype in0 = tensor_dtype(g, n->inputs[0]);

	switch (n->op) {
	case GRAPH_OP_BINARY:
		if (graph_binary_is_logical(n->attr.binary.fn))
			return out == GRAPH_DT_BOOL && in0 == GRAPH_DT_BOOL &&
			    tensor_dtype(g, n->inputs[1]) == GRAPH_DT_BOOL ? 0 :
			    cpu_fail(why, "And/Or need BOOL inputs and a BOOL output");
		if (graph_binary_is_compare(n->attr.binary.fn))
			return out == GRAPH_DT_BOOL && in0 == tensor_dtype(g, n->inputs[1]) ? 0 :
			    cpu_fail(why, "a comparison needs two inputs of one dtype and a BOOL output");
		if (n->attr.binary.fn == GRAPH_BINARY_POW && in0 != GRAPH_DT_F32)
			return cpu_fail(why, "Pow on %s (FP32 only)", dt_name(in0));
		if (n->act != GRAPH_UNARY_NONE && in0 != GRAPH_DT_F32)
			return cpu_fail(why, "fused activation on %s", dt_name(in0));
		return 0;
	case GRAPH_OP_CAST:
		return n->attr.cast.to == out ? 0 : cpu_fail(why, "Cast's 'to' is not the output's dtype");
	case GRAPH_OP_WHERE:
		if (in0 != GRAPH_DT_BOOL || tensor_dtype(g, n->inputs[1]) != out ||
		    tensor_dtype(g, n->inputs[2]) != out)
			return cpu_fail(why, "Where needs a BOOL condition and X, Y of the output's dtype");
		return 0;
	case GRAPH_OP_PREDICATE:
		if (n->attr.pred.fn == GRAPH_PRED_NOT)
			return in0 == GRAPH_DT_BOOL ? 0 : cpu_fail(why, "Not needs a BOOL input");
		return in0 == GRAPH_DT_F32 ? 0 : cpu_fail(why, "IsNaN/IsInf need an FP32 input");
	case GRAPH_OP_ARGMAX:
		return in0 == GRAPH_DT_F32 || in0 == GRAPH_DT_I64 || in0 == GRAPH_DT_I32 ? 0 :
		    cpu_fail(why, "ArgMax/ArgMin on %s (FP32, INT64 or INT32)", dt_name(in0));
	case GRAPH_OP_TILE:
		return n->ninputs < 2 || tensor_dtype(g, n->inputs[1]) == GRAPH_DT_I64 ? 0 :
		    cpu_fail(why, "Tile's repeats must be INT64");
	case GRAPH_OP_TRILU: case GRAPH_OP_CUMSUM:
		return n->ninputs < 2 || tensor_dtype(g, n->inputs[1]) == GRAPH_DT_I64 ||
		    tensor_dtype(g, n->inputs[1]) == GRAPH_DT_I32 ? 0 :
		    cpu_fail(why, "Trilu's k or CumSum's axis must be INT64 or INT32");
	case GRAPH_OP_RNN:
		for (int i = 1; i < n->ninputs; i++)
			if (n->inputs[i] >= 0 && tensor_dtype(g, n->inputs[i]) != (i == 4 ? GRAPH_DT_I32 : GRAPH_DT_F32))
				return cpu_fail(why, "input %d must be %s", i, i == 4 ? "INT32" : "FP32");
		return n->attr.rnn.ndir >= 1 && n->attr.rnn.ndir <= 2 && n->attr.rnn.hidden >= 1 &&
		    (int)n->attr.rnn.cell >= 0 && n->attr.rnn.cell <= GRAPH_RNN_LSTM ? 0 :
		    cpu_fail(why, "cell, directions or hidden size out of range");
	case GRAPH_OP_SCATTER_ELEMENTS: case GRAPH_OP_ONEHOT:
		return node_check_dtypes_more(g, n, out, why);
	case GRAPH_OP_GATHER_ND: case GRAPH_OP_SCATTER_ND:
		if (tensor_dtype(g, n->inputs[1]) != GRAPH_DT_I64)
			return cpu_fail(why, "GatherND/ScatterND indices must be INT64");
		if (n->op == GRAPH_OP_GATHER_ND)
			return 0;
		if (tensor_dtype(g, n->inputs[2]) != out)
			return cpu_fail(why, "ScatterND updates must have the data's dtype");
		return n->attr.nd.reduce == GRAPH_SCATTER_NONE || out == GRAPH_DT_F32 || out == GRAPH_DT_I64 ||
		    out == GRAPH_DT_I32 ? 0 : cpu_fail(why, "ScatterND add/mul/max/min on %s", dt_name(out));
	case GRAPH_OP_GATHER: case GRAPH_OP_GATHER_ELEMENTS: {
		enum graph_dtype it = tensor_dtype(g, n->inputs[1]);

		return it == GRAPH_DT_I64 || it == GRAPH_DT_I32 ? 0 :
		    cpu_fail(why, "%s indices must be INT64 or INT32",
		    n->op == GRAPH_OP_GATHER ? "Gather" : "GatherElements");
	}
	default:
		return 0;
	}
}

/* Dtypes: data inputs and every output share the op's dtype; special ops have their own rules. */
static int
node_check_dtypes(const graph_t *g, const struct graph_node *n, const struct cpu_op *op, char **why)
{
	enum graph_dtype out = tensor_dtype(g, n->outputs[0]);
	int ndata = node_ndata(n);

	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i] >= 0 && tensor_dtype(g, n->inputs[i]) == GRAPH_DT_COUNT)
			return cpu_fail(why, "input %d has no valid tensor or dtype", i);
	for (int i = 0; i < n->noutputs; i++)
		if ((tensor_dtype(g, n->outputs[i]) != out && !(n->op == GRAPH_OP_TOPK && i == 1 &&
		    tensor_dtype(g, n->outputs[i]) == GRAPH_DT_I64)) || out == GRAPH_DT_COUNT)
			return cpu_fail(why, "output %d has no valid tensor or another dtype", i);
	if (n->op == GRAPH_OP_BINARY && graph_binary_out_bool(n->attr.binary.fn))
		return node_check_dtypes_special(g, n, out, why);
	if (!(op->dtypes & (1u << out)))
		return cpu_fail(why, "dtype %s", dt_name(out));
	for (int i = 0; i < ndata && i < n->ninputs; i++)
		if (n->inputs[i] >= 0 && tensor_dtype(g, n->inputs[i]) != out)
			return cpu_fail(why, "input %d is %s, the output %s", i,
			    dt_name(tensor_dtype(g, n->inputs[i])), dt_name(out));
	if (n->inputs[0] < 0)
		return cpu_fail(why, "input 0 is omitted");
	return node_check_dtypes_special(g, n, out, why);
}

/* Attributes of window, pool, reduce, resize and the other attribute-bearing ops. */
static int
node_check_attrs(const struct graph_node *n, char **why)
{
	const struct graph_pool_attr *p = &n->attr.pool;
	const struct graph_resize_attr *r = &n->attr.resize;

	switch (n->op) {
	case GRAPH_OP_CONV: case GRAPH_OP_CONV_TRANSPOSE:
		return window_check(&n->attr.conv, 0, why);
	case GRAPH_OP_POOL:
		if (p->kind != GRAPH_POOL_MAX && p->kind != GRAPH_POOL_AVG)
			return cpu_fail(why, "pool kind %d", (int)p->kind);
		return p->global ? 0 : window_check(&p->w, 1, why);
	case GRAPH_OP_UNARY:
		return cpu_act_known(n->attr.unary.fn) ? 0 : cpu_fail(why, "unary function %d",
		    (int)n->attr.unary.fn);
	case GRAPH_OP_PREDICATE:
		return (int)n->attr.pred.fn >= 0 && n->attr.pred.fn <= GRAPH_PRED_NOT ? 0 :
		    cpu_fail(why, "predicate %d", (int)n->attr.pred.fn);
	case GRAPH_OP_SCATTER_ELEMENTS:
		return (int)n->attr.scatter.reduce >= 0 && n->attr.scatter.reduce <= GRAPH_SCATTER_MIN ? 0 :
		    cpu_fail(why, "reduction %d", (int)n->attr.scatter.reduce);
	case GRAPH_OP_EINSUM:
		return n->attr.einsum.ninputs == n->ninputs ? 0 : cpu_fail(why, "%d operands, the equation has %d",
		    n->ninputs, n->attr.einsum.ninputs);
	case GRAPH_OP_SCATTER_ND:
		return (int)n->attr.nd.reduce >= 0 && n->attr.nd.reduce <= GRAPH_SCATTER_MIN ? 0 :
		    cpu_fail(why, "reduction %d", (int)n->attr.nd.reduce);
	case GRAPH_OP_BINARY:
		return (int)n->attr.binary.fn >= 0 && n->attr.binary.fn < GRAPH_BINARY_COUNT ? 0 :
		    cpu_fail(why, "binary function %d", (int)n->attr.binary.fn);
	case GRAPH_OP_REDUCE:
		if ((int)n->attr.reduce.kind < 0 || n->attr.reduce.kind >= GRAPH_REDUCE_COUNT)
			return cpu_fail(why, "reduce kind %d", (int)n->attr.reduce.kind);
		return n->attr.reduce.naxes >= 0 && n->attr.reduce.naxes <= GRAPH_MAX_DIMS ? 0 :
		    cpu_fail(why, "%d reduce axes", n->attr.reduce.naxes);
	case GRAPH_OP_TRANSPOSE:
		return n->attr.transpose.nperm >= 0 && n->attr.transpose.nperm <= GRAPH_MAX_DIMS ? 0 :
		    cpu_fail(why, "perm of %d axes", n->attr.transpose.nperm);
	case GRAPH_OP_SLICE:
		return n->attr.slice.naxes >= 0 && n->attr.slice.naxes <= GRAPH_MAX_DIMS ? 0 :
		    cpu_fail(why, "%d slice axes", n->attr.slice.naxes);
	case GRAPH_OP_PAD:
		return (int)n->attr.pad.mode >= 0 && n->attr.pad.mode <= GRAPH_PAD_EDGE ? 0 :
		    cpu_fail(why, "pad mode %d", (int)n->attr.pad.mode);
	case GRAPH_OP_RESIZE:
		if ((r->mode != GRAPH_RESIZE_NEAREST && r->mode != GRAPH_RESIZE_LINEAR) ||
		    r->coord < CPU_RESIZE_HALF_PIXEL || r->coord >= CPU_RESIZE_TF_CROP_AND_RESIZE ||
		    r->nearest < CPU_RESIZE_ROUND_PREFER_FLOOR || r->nearest > CPU_RESIZE_CEIL)
			return cpu_fail(why, "resize mode %d, coordinate mode %d or nearest mode %d "
			    "(tf_crop_and_resize and cubic are not supported)", (int)r->mode, r->coord, r->nearest);
		return 0;
	default:
		return 0;
	}
}

/* Everything cpu_node_supported checks, failing with the reason. */
static int
node_check(const graph_t *g, const struct graph_node *n, char **why)
{
	const struct cpu_op *op = node_op(n);

	if (op == NULL)
		return cpu_fail(why, "op %d is not in the CPU kernel set", (int)n->op);
	if (n->ninputs < op->min_in || n->ninputs > op->max_in || n->noutputs < op->min_out ||
	    n->noutputs > op->max_out)
		return cpu_fail(why, "%s with %d inputs and %d outputs", op->name, n->ninputs, n->noutputs);
	for (int i = 0; i < op->min_in; i++)
		if (n->inputs[i] < 0)
			return cpu_fail(why, "%s: required input %d is omitted", op->name, i);
	if (!cpu_act_known(n->act) || (n->act != GRAPH_UNARY_NONE && !node_takes_act(n)))
		return cpu_fail(why, "%s: fused activation %d", op->name, (int)n->act);
	if (node_check_dtypes(g, n, op, why) != 0 || node_check_attrs(n, why) != 0)
		return error_prefix(why, "%s", op->name);
	return 0;
}

/* 1 when the kernels run n; else 0 with the reason. */
int
cpu_node_supported(const graph_t *g, const struct graph_node *n, char **why)
{
	return node_check(g, n, why) == 0;
}

/* Scratch bytes of n for these shapes. */
size_t
cpu_node_workspace(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes)
{
	const struct cpu_op *op = node_op(n);
	struct cpu_node_ctx c = { g, n, shapes, NULL, NULL };

	if (op == NULL || op->workspace == NULL || node_check(g, n, NULL) != 0)
		return 0;
	return op->workspace(&c);
}

/* Run n; failures name the node and its op. */
int
cpu_node_run(const graph_t *g, const struct graph_node *n, const struct graph_shape *shapes,
    void *const *ptrs, void *workspace, char **cause)
{
	const struct cpu_op *op = node_op(n);
	struct cpu_node_ctx c = { g, n, shapes, ptrs, workspace };
	const char *name = n->name != NULL ? n->name : "(unnamed)";

	if (node_check(g, n, cause) != 0)
		return error_prefix(cause, "node %s: not supported by the CPU kernels", name);
	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i] >= 0 && ptrs[n->inputs[i]] == NULL && cpu_elems(&shapes[n->inputs[i]]) > 0)
			return error_set(cause, "node %s (%s): input %d has no memory", name, op->name, i);
	for (int i = 0; i < n->noutputs; i++)
		if (ptrs[n->outputs[i]] == NULL && cpu_elems(&shapes[n->outputs[i]]) > 0)
			return error_set(cause, "node %s (%s): output %d has no memory", name, op->name, i);
	if (op->workspace != NULL && workspace == NULL && op->workspace(&c) > 0)
		return error_set(cause, "node %s (%s): no workspace given", name, op->name);
	if (op->run(&c, cause) != 0)
		return error_prefix(cause, "node %s (%s)", name, op->name);
	return 0;
}

const struct graph_fold_kernels cpu_fold_kernels = {
	cpu_node_supported,
	cpu_node_workspace,
	cpu_node_run,
};
