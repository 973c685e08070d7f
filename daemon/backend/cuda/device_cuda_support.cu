/* device_cuda_support.cu: which graph nodes the CUDA backend runs (op, arity, dtypes) and which compiler each op uses. */
#include "config.h"

#include "device_cuda_impl.h"
#include "device_cuda_sdpa.h"
#include "device_impl.h"
#include "error.h"

/* Per op: its compiler, input and output counts, and whether every tensor must be FP32. */
struct cuda_op {
	cuda_compile_fn compile;
	int min_in, max_in, min_out, max_out;
	int fp32;
};

static const struct cuda_op cuda_ops_table[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = { cuda_compile_gemm, 2, 3, 1, 1, 1 },
	[GRAPH_OP_MATMUL] = { cuda_compile_matmul, 2, 3, 1, 1, 1 },
	[GRAPH_OP_CONV] = { cuda_compile_conv, 2, 4, 1, 1, 1 },
	[GRAPH_OP_CONV_TRANSPOSE] = { cuda_compile_conv_transpose, 2, 3, 1, 1, 1 },
	[GRAPH_OP_UNARY] = { cuda_compile_unary, 1, 1, 1, 1, 1 },
	[GRAPH_OP_BINARY] = { cuda_compile_binary, 2, 2, 1, 1, 0 },
	[GRAPH_OP_PRELU] = { cuda_compile_binary, 2, 2, 1, 1, 1 },
	[GRAPH_OP_SOFTMAX] = { cuda_compile_softmax, 1, 1, 1, 1, 1 },
	[GRAPH_OP_LAYERNORM] = { cuda_compile_layernorm, 1, 4, 1, 1, 1 },
	[GRAPH_OP_BATCHNORM] = { cuda_compile_batchnorm, 5, 5, 1, 1, 1 },
	[GRAPH_OP_POOL] = { cuda_compile_pool, 1, 1, 1, 1, 1 },
	[GRAPH_OP_REDUCE] = { cuda_compile_reduce, 1, 1, 1, 1, 1 },
	[GRAPH_OP_TRANSPOSE] = { cuda_compile_transpose, 1, 1, 1, 1, 0 },
	[GRAPH_OP_RESHAPE] = { cuda_compile_copy, 1, 2, 1, 1, 0 },
	[GRAPH_OP_CONCAT] = { cuda_compile_concat, 1, 1 << 20, 1, 1, 0 },
	[GRAPH_OP_SPLIT] = { cuda_compile_split, 1, 2, 1, 1 << 20, 0 },
	[GRAPH_OP_SLICE] = { cuda_compile_slice, 1, 5, 1, 1, 0 },
	[GRAPH_OP_GATHER] = { cuda_compile_gather, 2, 2, 1, 1, 0 },
	[GRAPH_OP_EXPAND] = { cuda_compile_expand, 1, 2, 1, 1, 0 },
	[GRAPH_OP_PAD] = { cuda_compile_pad, 1, 4, 1, 1, 0 },
	[GRAPH_OP_RESIZE] = { cuda_compile_resize, 1, 4, 1, 1, 0 },
	[GRAPH_OP_CAST] = { cuda_compile_cast, 1, 1, 1, 1, 0 },
	[GRAPH_OP_WHERE] = { cuda_compile_where, 3, 3, 1, 1, 0 },
	[GRAPH_OP_COPY] = { cuda_compile_copy, 1, 1, 1, 1, 0 },
	[GRAPH_OP_GATHER_ELEMENTS] = { cuda_compile_gather_elements, 2, 2, 1, 1, 0 },
	[GRAPH_OP_ATTENTION] = { cuda_compile_attention, 3, 4, 1, 1, 1 },
	/* No compiler (C++ takes array designators only in order, none skipped). */
	[GRAPH_OP_SHAPE] = { NULL, 0, 0, 0, 0, 0 },
	[GRAPH_OP_CONSTANT_OF_SHAPE] = { NULL, 0, 0, 0, 0, 0 },
	[GRAPH_OP_RANGE] = { NULL, 0, 0, 0, 0, 0 },
	[GRAPH_OP_PREDICATE] = { cuda_compile_predicate, 1, 1, 1, 1, 0 },
	[GRAPH_OP_TRILU] = { cuda_compile_trilu, 1, 2, 1, 1, 0 },
	[GRAPH_OP_CUMSUM] = { cuda_compile_cumsum, 1, 2, 1, 1, 0 },
	[GRAPH_OP_GATHER_ND] = { cuda_compile_gather_nd, 2, 2, 1, 1, 0 },
	[GRAPH_OP_SCATTER_ND] = { cuda_compile_scatter_nd, 3, 3, 1, 1, 0 },
	[GRAPH_OP_TOPK] = { cuda_compile_topk, 1, 1, 2, 2, 0 },
	[GRAPH_OP_RNN] = { cuda_compile_rnn, 3, 8, 1, 3, 0 },
	[GRAPH_OP_SCATTER_ELEMENTS] = { NULL, 0, 0, 0, 0, 0 },
	[GRAPH_OP_ONEHOT] = { NULL, 0, 0, 0, 0, 0 },
	[GRAPH_OP_INSTANCENORM] = { cuda_compile_groupnorm, 3, 3, 1, 1, 0 },
	[GRAPH_OP_GROUPNORM] = { cuda_compile_groupnorm, 3, 3, 1, 1, 0 },
	[GRAPH_OP_EINSUM] = { NULL, 0, 0, 0, 0, 0 },
	[GRAPH_OP_ARGMAX] = { cuda_compile_argmax, 1, 1, 1, 1, 0 },
	[GRAPH_OP_TILE] = { cuda_compile_tile, 1, 2, 1, 1, 0 },
};

/* The compiler of op (NULL when the backend has none). */
cuda_compile_fn
cuda_op_compiler(enum graph_op op)
{
	return (unsigned)op < GRAPH_OP_COUNT ? cuda_ops_table[op].compile : NULL;
}

/* Dtype of tensor t (GRAPH_DT_COUNT when t is out of range). */
static enum graph_dtype
cuda_tdt(const graph_t *g, int t)
{
	return t >= 0 && (size_t)t < g->ntensors ? g->tensors[t].dtype : GRAPH_DT_COUNT;
}

/* Arity and tensor indices: required inputs present, every index in range. */
static int
cuda_check_arity(const graph_t *g, const struct graph_node *n, const struct cuda_op *o, char **why)
{
	if (n->ninputs < o->min_in || n->ninputs > o->max_in || n->noutputs < o->min_out || n->noutputs > o->max_out) {
		error_set(why, "%d inputs and %d outputs (expected %d to %d and %d to %d)", n->ninputs, n->noutputs,
		    o->min_in, o->max_in, o->min_out, o->max_out);
		return 0;
	}
	for (int i = 0; i < n->ninputs; i++)
		if ((n->inputs[i] < 0 && i < o->min_in) || n->inputs[i] >= (int)g->ntensors) {
			error_set(why, "input %d is missing or out of range", i);
			return 0;
		}
	/* RNN's outputs are each optional (-1: not wanted). */
	for (int i = 0; i < n->noutputs; i++)
		if ((n->outputs[i] < 0 && n->op != GRAPH_OP_RNN) || n->outputs[i] >= (int)g->ntensors) {
			error_set(why, "output %d is out of range", i);
			return 0;
		}
	return 1;
}

/* Binary: FP32 (any function, fused act), or INT64/INT32 arithmetic; the comparisons write BOOL; And/Or on BOOL. */
static int
cuda_check_binary(const graph_t *g, const struct graph_node *n, char **why)
{
	enum graph_dtype a = cuda_tdt(g, n->inputs[0]), b = cuda_tdt(g, n->inputs[1]), y = cuda_tdt(g, n->outputs[0]);
	int eq = graph_binary_out_bool(n->attr.binary.fn);

	if ((unsigned)n->attr.binary.fn >= GRAPH_BINARY_COUNT)
		return error_set(why, "unknown binary function %d", (int)n->attr.binary.fn), 0;
	if (graph_binary_is_logical(n->attr.binary.fn))
		return a == GRAPH_DT_BOOL && b == GRAPH_DT_BOOL && y == GRAPH_DT_BOOL &&
		    n->act == GRAPH_UNARY_NONE ? 1 : (error_set(why, "And/Or need BOOL inputs and a BOOL output"), 0);
	if (a != b || (a != GRAPH_DT_F32 && a != GRAPH_DT_I64 && a != GRAPH_DT_I32))
		return error_set(why, "inputs must be both FP32, INT64 or INT32"), 0;
	if (eq ? y != GRAPH_DT_BOOL : y != a)
		return error_set(why, "output dtype %s does not fit", graph_dtype_name(y)), 0;
	if (a != GRAPH_DT_F32 && (n->act != GRAPH_UNARY_NONE || n->attr.binary.fn == GRAPH_BINARY_POW))
		return error_set(why, "fused activation or Pow on integers"), 0;
	return 1;
}

/* 1 when t is an INT64 or INT32 tensor (indices, k, axis). */
static int
cuda_is_int(const graph_t *g, int t)
{
	return cuda_tdt(g, t) == GRAPH_DT_I64 || cuda_tdt(g, t) == GRAPH_DT_I32;
}

/* RNN/GRU/LSTM: FP32 tensors but sequence_lens (INT32), a known cell and activations, 1 or 2 directions. */
static int
cuda_check_rnn(const graph_t *g, const struct graph_node *n, char **why)
{
	const struct graph_rnn_attr *a = &n->attr.rnn;

	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i] >= 0 && cuda_tdt(g, n->inputs[i]) != (i == 4 ? GRAPH_DT_I32 : GRAPH_DT_F32))
			return error_set(why, "input %d must be %s", i, i == 4 ? "INT32" : "FP32"), 0;
	for (int i = 0; i < n->noutputs; i++)
		if (n->outputs[i] >= 0 && cuda_tdt(g, n->outputs[i]) != GRAPH_DT_F32)
			return error_set(why, "output %d must be FP32", i), 0;
	if (a->ndir < 1 || a->ndir > 2 || a->hidden < 1 || (int)a->cell < 0 || a->cell > GRAPH_RNN_LSTM)
		return error_set(why, "cell, directions or hidden size out of range"), 0;
	for (int i = 0; i < 6; i++)
		if ((int)a->act[i] < 0 || a->act[i] >= GRAPH_RNN_ACT_COUNT)
			return error_set(why, "unknown activation %d", (int)a->act[i]), 0;
	return 1;
}

/* IsNaN/IsInf/Not, Trilu, CumSum, GatherND, ScatterND, TopK: -1 when they pass on to the data-movement rule. */
static int
cuda_check_index(const graph_t *g, const struct graph_node *n, char **why)
{
	enum graph_dtype x = cuda_tdt(g, n->inputs[0]), y = cuda_tdt(g, n->outputs[0]);
	int red = (int)n->attr.nd.reduce;

	switch (n->op) {
	case GRAPH_OP_PREDICATE:
		if ((int)n->attr.pred.fn < 0 || n->attr.pred.fn > GRAPH_PRED_NOT || y != GRAPH_DT_BOOL ||
		    x != (n->attr.pred.fn == GRAPH_PRED_NOT ? GRAPH_DT_BOOL : GRAPH_DT_F32))
			return error_set(why, "IsNaN/IsInf need FP32 in, Not BOOL in; both BOOL out"), 0;
		return 1;
	case GRAPH_OP_TRILU: case GRAPH_OP_CUMSUM:
		if (n->ninputs > 1 && n->inputs[1] >= 0 && !cuda_is_int(g, n->inputs[1]))
			return error_set(why, "Trilu's k or CumSum's axis must be INT64 or INT32"), 0;
		if (n->op == GRAPH_OP_CUMSUM && y != GRAPH_DT_F32 && y != GRAPH_DT_I64 && y != GRAPH_DT_I32)
			return error_set(why, "CumSum on %s (FP32, INT64, INT32)", graph_dtype_name(y)), 0;
		return -1;
	case GRAPH_OP_GATHER_ND: case GRAPH_OP_SCATTER_ND:
		if (cuda_tdt(g, n->inputs[1]) != GRAPH_DT_I64)
			return error_set(why, "GatherND/ScatterND indices must be INT64"), 0;
		if (n->op == GRAPH_OP_GATHER_ND)
			return -1;
		if (cuda_tdt(g, n->inputs[2]) != y || red < 0 || red > GRAPH_SCATTER_MIN ||
		    (red != GRAPH_SCATTER_NONE && y != GRAPH_DT_F32 && y != GRAPH_DT_I64 && y != GRAPH_DT_I32))
			return error_set(why, "ScatterND updates of the data's dtype; add/mul/max/min on FP32, INT64, "
			    "INT32"), 0;
		return -1;
	default:
		if (x != GRAPH_DT_F32 || y != GRAPH_DT_F32 || cuda_tdt(g, n->outputs[1]) != GRAPH_DT_I64)
			return error_set(why, "TopK takes FP32 and writes FP32 values and INT64 indices"), 0;
		return n->attr.topk.k >= 0 ? 1 : (error_set(why, "TopK's k is not a constant"), 0);
	}
}

/* Ops with their own dtype rules (not all-FP32). */
static int
cuda_check_dtypes(const graph_t *g, const struct graph_node *n, char **why)
{
	enum graph_dtype x = cuda_tdt(g, n->inputs[0]), y = cuda_tdt(g, n->outputs[0]);

	switch (n->op) {
	case GRAPH_OP_BINARY:
		return cuda_check_binary(g, n, why);
	case GRAPH_OP_CAST:
		if (x >= GRAPH_DT_COUNT || y != n->attr.cast.to)
			return error_set(why, "Cast's 'to' is not the output's dtype"), 0;
		return 1;
	case GRAPH_OP_WHERE:
		if (x != GRAPH_DT_BOOL || cuda_tdt(g, n->inputs[1]) != y || cuda_tdt(g, n->inputs[2]) != y)
			return error_set(why, "Where needs a BOOL condition and X, Y of the output's dtype"), 0;
		return 1;
	case GRAPH_OP_RESIZE:
		if (x != GRAPH_DT_F32 || y != GRAPH_DT_F32)
			return error_set(why, "Resize on FP32 only"), 0;
		return 1;
	case GRAPH_OP_RNN:
		return cuda_check_rnn(g, n, why);
	case GRAPH_OP_ARGMAX:
		if ((x != GRAPH_DT_F32 && x != GRAPH_DT_I64 && x != GRAPH_DT_I32) || y != GRAPH_DT_I64)
			return error_set(why, "ArgMax/ArgMin takes FP32, INT64 or INT32 and writes INT64"), 0;
		return 1;
	case GRAPH_OP_TILE:
		if (n->ninputs > 1 && n->inputs[1] >= 0 && cuda_tdt(g, n->inputs[1]) != GRAPH_DT_I64)
			return error_set(why, "Tile's repeats must be INT64"), 0;
		break;
	case GRAPH_OP_PREDICATE: case GRAPH_OP_TRILU: case GRAPH_OP_CUMSUM: case GRAPH_OP_GATHER_ND:
	case GRAPH_OP_SCATTER_ND: case GRAPH_OP_TOPK: {
		int rc = cuda_check_index(g, n, why);

		if (rc >= 0)
			return rc;
		break;
	}
	case GRAPH_OP_GATHER: case GRAPH_OP_GATHER_ELEMENTS:
		if (cuda_tdt(g, n->inputs[1]) != GRAPH_DT_I64 && cuda_tdt(g, n->inputs[1]) != GRAPH_DT_I32)
			return error_set(why, "%s indices must be INT64 or INT32", graph_op_name(n->op)), 0;
		break;
	default:
		break;
	}
	/* Data movement: the data input and every output share one dtype. */
	for (int i = 0; i < (n->op == GRAPH_OP_CONCAT ? n->ninputs : 1); i++)
		if (cuda_tdt(g, n->inputs[i]) != y)
			return error_set(why, "input %d's dtype differs from the output's", i), 0;
	for (int i = 0; i < n->noutputs; i++)
		if (cuda_tdt(g, n->outputs[i]) != y)
			return error_set(why, "outputs differ in dtype"), 0;
	return 1;
}

/* A conv or pool window the kernels take: 1 to 3 spatial dims, positive kernel/stride/dilation, pads >= 0. */
static int
cuda_check_window(const struct graph_node *n, char **why)
{
	const struct graph_window_attr *w = n->op == GRAPH_OP_POOL ? &n->attr.pool.w : &n->attr.conv;

	if (n->op == GRAPH_OP_POOL && n->attr.pool.global)
		return 1;
	if (w->nspatial < 1 || w->nspatial > 3)
		return error_set(why, "%s: %d spatial dims (1 to 3 are supported)", graph_op_name(n->op), w->nspatial), 0;
	for (int i = 0; i < w->nspatial; i++)
		if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1 || w->pad_begin[i] < 0 ||
		    w->pad_end[i] < 0)
			return error_set(why, "%s: kernel, stride, dilation or pads out of range", graph_op_name(n->op)), 0;
	if (n->op != GRAPH_OP_POOL && w->group < 1)
		return error_set(why, "%s: group %lld", graph_op_name(n->op), (long long)w->group), 0;
	return 1;
}

/* 1 when the CUDA backend runs node n; else 0 and *why says what it lacks. */
int
cuda_node_supported(const graph_t *g, const struct graph_node *n, char **why)
{
	const struct cuda_op *o = (unsigned)n->op < GRAPH_OP_COUNT ? &cuda_ops_table[n->op] : NULL;

	if (o == NULL || o->compile == NULL) {
		error_set(why, "op %s has no CUDA kernel (serve this model from a daemon with device = cpu)",
		    graph_op_name(n->op));
		return 0;
	}
	if (!device_unary_known(n->act) ||
	    (n->op == GRAPH_OP_UNARY && !device_unary_known(n->attr.unary.fn))) {
		error_set(why, "unknown activation or unary function");
		return 0;
	}
	if (!cuda_check_arity(g, n, o, why))
		return 0;
	/* Fused attention pays only where cuDNN's flash attention can take it (FP16 plans); else the graph stays unfused. */
	if (n->op == GRAPH_OP_ATTENTION && !cuda_sdpa_available()) {
		error_set(why, "attention is fused only with cuDNN %d or later (INFERD_CUDA_ATTENTION not \"off\")",
		    CUDA_SDPA_MIN_CUDNN);
		return 0;
	}
	if ((n->op == GRAPH_OP_CONV || n->op == GRAPH_OP_CONV_TRANSPOSE || n->op == GRAPH_OP_POOL) &&
	    !cuda_check_window(n, why))
		return 0;
	if (o->fp32)
		return device_node_fp32(g, n, o->min_in, o->max_in, n->noutputs, why);
	return cuda_check_dtypes(g, n, why);
}
