/* graph.c: element types, shape arithmetic and freeing for graph.h's model graph. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* Per dtype: element size and KServe name, in enum order. */
static const struct {
	size_t size;
	const char *name;
} graph_dtypes[GRAPH_DT_COUNT] = {
	[GRAPH_DT_F32] = { 4, "FP32" },
	[GRAPH_DT_F16] = { 2, "FP16" },
	[GRAPH_DT_I64] = { 8, "INT64" },
	[GRAPH_DT_I32] = { 4, "INT32" },
	[GRAPH_DT_I8] = { 1, "INT8" },
	[GRAPH_DT_U8] = { 1, "UINT8" },
	[GRAPH_DT_BOOL] = { 1, "BOOL" },
	[GRAPH_DT_STRING] = { GRAPH_STRING_SLOT, "BYTES" },
};

/* Op names, in enum order. */
static const char *const graph_op_names[GRAPH_OP_COUNT] = {
	[GRAPH_OP_GEMM] = "Gemm",
	[GRAPH_OP_MATMUL] = "MatMul",
	[GRAPH_OP_CONV] = "Conv",
	[GRAPH_OP_CONV_TRANSPOSE] = "ConvTranspose",
	[GRAPH_OP_UNARY] = "Unary",
	[GRAPH_OP_BINARY] = "Binary",
	[GRAPH_OP_PRELU] = "PRelu",
	[GRAPH_OP_SOFTMAX] = "Softmax",
	[GRAPH_OP_LAYERNORM] = "LayerNormalization",
	[GRAPH_OP_BATCHNORM] = "BatchNormalization",
	[GRAPH_OP_POOL] = "Pool",
	[GRAPH_OP_REDUCE] = "Reduce",
	[GRAPH_OP_TRANSPOSE] = "Transpose",
	[GRAPH_OP_RESHAPE] = "Reshape",
	[GRAPH_OP_CONCAT] = "Concat",
	[GRAPH_OP_SPLIT] = "Split",
	[GRAPH_OP_SLICE] = "Slice",
	[GRAPH_OP_GATHER] = "Gather",
	[GRAPH_OP_EXPAND] = "Expand",
	[GRAPH_OP_PAD] = "Pad",
	[GRAPH_OP_RESIZE] = "Resize",
	[GRAPH_OP_CAST] = "Cast",
	[GRAPH_OP_WHERE] = "Where",
	[GRAPH_OP_COPY] = "Copy",
	[GRAPH_OP_GATHER_ELEMENTS] = "GatherElements",
	[GRAPH_OP_ATTENTION] = "Attention",
	[GRAPH_OP_SHAPE] = "Shape",
	[GRAPH_OP_CONSTANT_OF_SHAPE] = "ConstantOfShape",
	[GRAPH_OP_RANGE] = "Range",
	[GRAPH_OP_PREDICATE] = "IsNaN/IsInf/Not",
	[GRAPH_OP_TRILU] = "Trilu",
	[GRAPH_OP_CUMSUM] = "CumSum",
	[GRAPH_OP_GATHER_ND] = "GatherND",
	[GRAPH_OP_SCATTER_ND] = "ScatterND",
	[GRAPH_OP_TOPK] = "TopK",
	[GRAPH_OP_RNN] = "RNN/GRU/LSTM",
	[GRAPH_OP_SCATTER_ELEMENTS] = "ScatterElements",
	[GRAPH_OP_ONEHOT] = "OneHot",
	[GRAPH_OP_INSTANCENORM] = "InstanceNormalization",
	[GRAPH_OP_GROUPNORM] = "GroupNormalization",
	[GRAPH_OP_EINSUM] = "Einsum",
	[GRAPH_OP_ARGMAX] = "ArgMax/ArgMin",
	[GRAPH_OP_TILE] = "Tile",
};

/* Bytes of one element; 0 for an unknown dtype. */
size_t
graph_dtype_size(enum graph_dtype dt)
{
	if ((unsigned)dt >= GRAPH_DT_COUNT)
		return 0;
	return graph_dtypes[dt].size;
}

/* KServe name; "?" for an unknown dtype. */
const char *
graph_dtype_name(enum graph_dtype dt)
{
	if ((unsigned)dt >= GRAPH_DT_COUNT)
		return "?";
	return graph_dtypes[dt].name;
}

/* Parse a KServe name; -1 when unknown. */
int
graph_dtype_parse(const char *name, enum graph_dtype *out)
{
	int i;

	for (i = 0; name != NULL && i < GRAPH_DT_COUNT; i++) {
		if (strcmp(graph_dtypes[i].name, name) == 0) {
			*out = (enum graph_dtype)i;
			return 0;
		}
	}
	return -1;
}

/* The bytes of the STRING element in slot, *len of them (never more than GRAPH_STRING_MAX). */
const char *
graph_string_get(const void *slot, size_t *len)
{
	uint32_t n;

	memcpy(&n, slot, sizeof n);
	*len = n <= GRAPH_STRING_MAX ? n : GRAPH_STRING_MAX;
	return (const char *)slot + sizeof n;
}

/* Write len bytes of s (len <= GRAPH_STRING_MAX, checked by the caller) as the STRING element in slot. */
void
graph_string_put(void *slot, const void *s, size_t len)
{
	uint32_t n = (uint32_t)len;

	memcpy(slot, &n, sizeof n);
	if (len > 0)
		memcpy((char *)slot + sizeof n, s, len);
	/* The rest is zeroed so that a slot never carries bytes of an earlier request. */
	memset((char *)slot + sizeof n + len, 0, GRAPH_STRING_SLOT - sizeof n - len);
}

/* Whether any tensor of g is a STRING tensor. */
int
graph_has_strings(const graph_t *g)
{
	for (size_t i = 0; i < g->ntensors; i++)
		if (g->tensors[i].dtype == GRAPH_DT_STRING)
			return 1;
	return 0;
}

static const char *const graph_precision_names[GRAPH_PRECISION_COUNT] = { "fp32", "tf32", "fp16", "bf16" };

/* Name of a precision ("fp32", "tf32", "fp16", "bf16"); "?" when out of range. */
const char *
graph_precision_name(int precision)
{
	if (precision < 0 || precision >= GRAPH_PRECISION_COUNT)
		return "?";
	return graph_precision_names[precision];
}

/* Parse "fp32", "tf32", "fp16" or "bf16"; -1 when unknown. */
int
graph_precision_parse(const char *name, int *out)
{
	for (int i = 0; name != NULL && i < GRAPH_PRECISION_COUNT; i++) {
		if (strcmp(graph_precision_names[i], name) == 0) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

/* The op's name for messages. */
const char *
graph_op_name(enum graph_op op)
{
	if ((unsigned)op >= GRAPH_OP_COUNT || graph_op_names[op] == NULL)
		return "?";
	return graph_op_names[op];
}

/* Element count (1 for rank 0). */
int64_t
graph_shape_elems(const struct graph_shape *s)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < s->ndims; i++)
		n *= s->dims[i];
	return n;
}

/* ATTENTION's Q, K, V shapes in the dense form (graph.h). */
int
graph_attention_shapes(const struct graph_node *n, const struct graph_shape *const in[3], struct graph_shape out[3],
    int64_t *heads)
{
	int sm = n->attr.attention.seq_major, r = in[0]->ndims, i;

	if (r < (sm ? 3 : 2) || in[1]->ndims != r || in[2]->ndims != r || (sm && n->attr.attention.k_transposed))
		return -1;
	*heads = sm ? in[0]->dims[r - 2] : 1;
	for (i = 0; i < 3; i++) {
		out[i] = *in[i];
		if (sm) {	/* [..., S, H, D] read as [..., H, S, D] */
			out[i].dims[r - 3] = in[i]->dims[r - 2];
			out[i].dims[r - 2] = in[i]->dims[r - 3];
		}
	}
	return 0;
}

/* Free one node's names, index arrays and owned attributes. */
static void
graph_node_free(struct graph_node *n)
{
	free(n->name);
	free(n->inputs);
	free(n->outputs);
	if (n->op == GRAPH_OP_SPLIT)
		free(n->attr.split.split);
}

/* Free the graph and everything it owns. */
void
graph_free(graph_t *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->ntensors; i++) {
		free(g->tensors[i].name);
		if (g->tensors[i].owns_data)
			free((void *)g->tensors[i].data);
	}
	for (i = 0; i < g->nnodes; i++)
		graph_node_free(&g->nodes[i]);
	free(g->tensors);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g);
}
