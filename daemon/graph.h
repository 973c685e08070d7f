/* graph.h: a model as a graph of tensor operations, the one form every backend compiles. */
#ifndef INFERD_GRAPH_H
#define INFERD_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A graph is what a model loader produces (the MLP format's layer list, or an
 * ONNX file after constant folding and fusion) and what a device backend
 * compiles.  It holds tensors and nodes in topological order; a node reads and
 * writes tensors by index.  Constants carry host bytes (a view into a model
 * file's private copy, or memory the graph owns); every other tensor gets its
 * shape from graph_infer_shapes once the shapes of the graph's inputs are
 * known, and its memory from the planner, never from the backend.
 *
 * A backend sees a graph only through device_supports_node and
 * device_plan_compile (device.h): it maps each node to its own kernels, for
 * one set of concrete shapes and one set of tensor addresses.
 */

#define GRAPH_MAX_DIMS 8

/* Element types; the KServe names are in graph_dtype_name. */
enum graph_dtype {
	GRAPH_DT_F32 = 0,
	GRAPH_DT_F16,
	GRAPH_DT_I64,
	GRAPH_DT_I32,
	GRAPH_DT_I8,
	GRAPH_DT_U8,
	GRAPH_DT_BOOL,		/* one byte, 0 or 1 */
	GRAPH_DT_STRING,	/* KServe BYTES: a GRAPH_STRING_SLOT-byte slot, host memory only */
	GRAPH_DT_COUNT
};

/*
 * A STRING element is a fixed slot: its length (uint32_t, host order), its
 * bytes, zeros to the slot's end.  Fixed slots let strings go through
 * staging, batching and every data-moving kernel as any fixed-size element
 * does (no per-batch string heap whose lifetime would have to follow each
 * request's answer); the price is a longest element, GRAPH_STRING_MAX bytes,
 * which the codec enforces with a 400.
 */
#define GRAPH_STRING_SLOT 256
#define GRAPH_STRING_MAX (GRAPH_STRING_SLOT - 4)

/* Element-wise unary functions; also the activation fused into GEMM/CONV/MATMUL. */
enum graph_unary {
	GRAPH_UNARY_NONE = 0,	/* identity */
	GRAPH_UNARY_RELU,
	GRAPH_UNARY_GELU,	/* exact: 0.5 x (1 + erf(x / sqrt 2)) */
	GRAPH_UNARY_GELU_TANH,	/* tanh approximation (ONNX Gelu approximate="tanh") */
	GRAPH_UNARY_SIGMOID,
	GRAPH_UNARY_TANH,
	GRAPH_UNARY_LEAKY_RELU,	/* alpha */
	GRAPH_UNARY_CLIP,	/* alpha = min, beta = max */
	GRAPH_UNARY_HARD_SIGMOID,	/* max(0, min(1, alpha x + beta)) */
	GRAPH_UNARY_HARD_SWISH,
	GRAPH_UNARY_EXP,
	GRAPH_UNARY_LOG,
	GRAPH_UNARY_SQRT,
	GRAPH_UNARY_NEG,
	GRAPH_UNARY_RECIPROCAL,
	GRAPH_UNARY_ERF,
	GRAPH_UNARY_ABS,
	GRAPH_UNARY_CEIL,
	GRAPH_UNARY_FLOOR,
	GRAPH_UNARY_ROUND,	/* halves to even, as ONNX Round */
	GRAPH_UNARY_COUNT
};

/* Element-wise binary functions with numpy broadcasting. */
enum graph_binary {
	GRAPH_BINARY_ADD = 0,
	GRAPH_BINARY_SUB,
	GRAPH_BINARY_MUL,
	GRAPH_BINARY_DIV,
	GRAPH_BINARY_POW,
	GRAPH_BINARY_EQUAL,	/* output BOOL */
	GRAPH_BINARY_MAX,
	GRAPH_BINARY_MIN,
	GRAPH_BINARY_GREATER,		/* output BOOL */
	GRAPH_BINARY_LESS,		/* output BOOL */
	GRAPH_BINARY_GREATER_OR_EQUAL,	/* output BOOL */
	GRAPH_BINARY_LESS_OR_EQUAL,	/* output BOOL */
	GRAPH_BINARY_AND,		/* logical, BOOL inputs and output */
	GRAPH_BINARY_OR,		/* logical, BOOL inputs and output */
	GRAPH_BINARY_MOD,		/* ONNX Mod, fmod=0: the remainder takes the divisor's sign */
	GRAPH_BINARY_FMOD,		/* ONNX Mod, fmod=1: C's fmod, the dividend's sign */
	GRAPH_BINARY_XOR,		/* logical, BOOL inputs and output */
	GRAPH_BINARY_COUNT
};

/* Whether fn is a comparison (its output is BOOL; its inputs may be of any one dtype). */
static inline int
graph_binary_is_compare(enum graph_binary fn)
{
	return fn == GRAPH_BINARY_EQUAL || fn == GRAPH_BINARY_GREATER || fn == GRAPH_BINARY_LESS ||
	    fn == GRAPH_BINARY_GREATER_OR_EQUAL || fn == GRAPH_BINARY_LESS_OR_EQUAL;
}

/* Whether fn is a logical op (And, Or, Xor: BOOL inputs, BOOL output). */
static inline int
graph_binary_is_logical(enum graph_binary fn)
{
	return fn == GRAPH_BINARY_AND || fn == GRAPH_BINARY_OR || fn == GRAPH_BINARY_XOR;
}

/* Whether fn writes BOOL (a comparison or a logical op). */
static inline int
graph_binary_out_bool(enum graph_binary fn)
{
	return graph_binary_is_compare(fn) || graph_binary_is_logical(fn);
}

/* Operations.  Inputs and outputs are listed per op as in ONNX unless noted. */
enum graph_op {
	GRAPH_OP_GEMM = 0,	/* y = act(alpha op(A) op(B) + beta C): inputs A, B[, C]; gemm attrs */
	GRAPH_OP_MATMUL,	/* numpy matmul, batched and broadcast: inputs A, B[, bias]; act fused */
	GRAPH_OP_CONV,		/* inputs X, W[, B[, residual Z]]; y = act(conv + B + Z); conv attrs */
	GRAPH_OP_CONV_TRANSPOSE,	/* inputs X, W[, B]; conv attrs (output_padding) */
	GRAPH_OP_UNARY,		/* unary attrs */
	GRAPH_OP_BINARY,	/* inputs A, B; binary attrs; act fused onto the result */
	GRAPH_OP_PRELU,		/* inputs X, slope (broadcast) */
	GRAPH_OP_SOFTMAX,	/* axis attr; log = 1 for LogSoftmax */
	GRAPH_OP_LAYERNORM,	/* inputs X[, scale[, bias[, residual]]]; axis, eps; normalises X (+ residual, a fused Add of X's shape) */
	GRAPH_OP_BATCHNORM,	/* inputs X, scale, bias, mean, var; eps (left only when not folded) */
	GRAPH_OP_POOL,		/* max/average, incl. global; pool attrs */
	GRAPH_OP_REDUCE,	/* mean/sum/max/min/prod/L1/L2/sum-square/log-sum-exp over axes; reduce attrs */
	GRAPH_OP_TRANSPOSE,	/* perm */
	GRAPH_OP_RESHAPE,	/* output shape from the inferred shape; a view where the backend can */
	GRAPH_OP_CONCAT,	/* axis; any number of inputs */
	GRAPH_OP_SPLIT,		/* axis, sizes; any number of outputs */
	GRAPH_OP_SLICE,		/* starts, ends, axes, steps (all constant after folding) */
	GRAPH_OP_GATHER,	/* inputs data, indices (I64/I32); axis */
	GRAPH_OP_EXPAND,	/* broadcast to the inferred output shape */
	GRAPH_OP_PAD,		/* pads, mode constant/reflect/edge, value */
	GRAPH_OP_RESIZE,	/* nearest/linear with scales or sizes; resize attrs */
	GRAPH_OP_CAST,		/* to: a graph_dtype */
	GRAPH_OP_WHERE,		/* inputs cond (BOOL), X, Y, broadcast */
	GRAPH_OP_COPY,		/* identity that must produce a distinct tensor (e.g. input == output) */
	GRAPH_OP_GATHER_ELEMENTS,	/* inputs data, indices (I64/I32) of data's rank; axis; output
				 * shaped as indices: y[p] = data[p with p[axis] = indices[p]] */
	GRAPH_OP_ATTENTION,	/* inputs Q [..., Sq, D], K [..., Sk, D] (or [..., D, Sk]: k_transposed),
				 * V [..., Sk, Dv][, mask broadcast to [..., Sq, Sk], added]; output
				 * softmax(scale Q K^T + mask) V [..., Sq, Dv]; made by graph_fuse.
				 * seq_major: Q, K, V and the output hold their last leading dim (the
				 * heads, H) after the sequence: Q [..., Sq, H, D], K [..., Sk, H, D],
				 * V [..., Sk, H, Dv], output [..., Sq, H, Dv], as a projection writes
				 * them before the head transposes (k_transposed is then 0); the mask
				 * still broadcasts to the scores [..., H, Sq, Sk] */
	/* Shape arithmetic: graph_specialize (graph_fold.h) folds these away for concrete input shapes. */
	GRAPH_OP_SHAPE,		/* input X; output I64 [end - start]: X's dims; shape attr */
	GRAPH_OP_CONSTANT_OF_SHAPE,	/* input shape (I64); output of that shape filled with fill.value */
	GRAPH_OP_RANGE,		/* inputs start, limit, delta (scalars) */
	GRAPH_OP_PREDICATE,	/* IsNaN, IsInf (FP32 in) and Not (BOOL in): BOOL out; predicate attrs */
	GRAPH_OP_TRILU,		/* inputs X (last two dims the matrices)[, k when not constant]; trilu attrs */
	GRAPH_OP_CUMSUM,	/* inputs X[, axis when not constant]; cumsum attrs */
	GRAPH_OP_GATHER_ND,	/* inputs data, indices (I64); batch_dims */
	GRAPH_OP_SCATTER_ND,	/* inputs data, indices (I64), updates; reduction */
	GRAPH_OP_TOPK,		/* input X; outputs values, indices (I64); topk attrs (k constant at import) */
	GRAPH_OP_RNN,		/* RNN, GRU, LSTM as ONNX (layout 0): X, W, R[, B, sequence_lens (I32), initial_h,
				 * initial_c, P]; outputs Y[, Y_h[, Y_c]] (any may be -1); rnn attrs */
	GRAPH_OP_SCATTER_ELEMENTS,	/* inputs data, indices (I64/I32, data's rank), updates (indices' shape);
				 * scatter attrs: y = data, then y[p with p[axis] = indices[p]] (op)= updates[p] */
	GRAPH_OP_ONEHOT,	/* inputs indices (any numeric), depth (scalar), values [off, on]; output of
				 * values' dtype, indices' shape with depth inserted at onehot.axis */
	GRAPH_OP_INSTANCENORM,	/* inputs X [N, C, ...], scale [C], bias [C]; groupnorm attrs (groups = C) */
	GRAPH_OP_GROUPNORM,	/* inputs X [N, C, ...], scale, bias ([groups], or [C] with per_channel); groupnorm attrs */
	GRAPH_OP_EINSUM,	/* one or two inputs; einsum attrs (the parsed equation) */
	GRAPH_OP_ARGMAX,	/* ArgMax, ArgMin: input X (FP32, INT64, INT32); output I64; argmax attrs */
	GRAPH_OP_TILE,		/* inputs X[, repeats (I64) when not constant]; tile attrs (constant repeats) */
	GRAPH_OP_COUNT
};

/* Tensor roles (a graph output may also feed later nodes). */
enum graph_tensor_flag {
	GRAPH_TENSOR_INPUT = 1u << 0,	/* filled by the request */
	GRAPH_TENSOR_OUTPUT = 1u << 1,	/* returned to the request */
	GRAPH_TENSOR_CONST = 1u << 2,	/* bytes known at load: weights, folded values */
};

/*
 * A dimension in a declared shape (inputs, outputs, constants): dims[i] >= 0
 * is fixed; GRAPH_DIM_BATCH is the batch dimension; GRAPH_DIM_VAR(k) is the
 * k-th variable dimension of the model (e.g. sequence length), whose largest
 * value the model's configuration bounds.
 */
#define GRAPH_DIM_BATCH (-1)
#define GRAPH_DIM_VAR(k) (-2 - (int64_t)(k))
#define GRAPH_DIM_IS_VAR(d) ((d) <= -2)
#define GRAPH_DIM_VAR_INDEX(d) ((int)(-2 - (d)))

struct graph_tensor {
	char *name;
	enum graph_dtype dtype;
	unsigned flags;
	int ndims;			/* declared rank; -1 when known only after inference */
	int64_t dims[GRAPH_MAX_DIMS];	/* declared shape (see GRAPH_DIM_*) */
	const void *data;		/* CONST: host bytes, row-major, dtype-sized elements */
	size_t nbytes;			/* CONST: byte length of data */
	int owns_data;			/* CONST: data was malloc'ed by the graph */
};

/* GEMM: y = act(alpha op(A) op(B) + beta C); the MLP's linear layer is trans_b = 1. */
struct graph_gemm_attr {
	int trans_a, trans_b;
	float alpha, beta;
};

/* CONV / CONV_TRANSPOSE / POOL share the window description (spatial rank 1 to 3). */
struct graph_window_attr {
	int nspatial;
	int64_t kernel[3], stride[3], dilation[3];
	int64_t pad_begin[3], pad_end[3];
	int64_t output_padding[3];	/* CONV_TRANSPOSE */
	int64_t group;			/* CONV */
};

enum graph_pool_kind { GRAPH_POOL_MAX = 0, GRAPH_POOL_AVG };

struct graph_pool_attr {
	enum graph_pool_kind kind;
	int global;			/* GlobalAveragePool / GlobalMaxPool: window = all spatial dims */
	int ceil_mode;
	int count_include_pad;
	struct graph_window_attr w;
};

enum graph_reduce_kind {
	GRAPH_REDUCE_MEAN = 0, GRAPH_REDUCE_SUM, GRAPH_REDUCE_MAX, GRAPH_REDUCE_MIN, GRAPH_REDUCE_PROD,
	GRAPH_REDUCE_L1, GRAPH_REDUCE_L2, GRAPH_REDUCE_SUMSQUARE, GRAPH_REDUCE_LOGSUMEXP, GRAPH_REDUCE_COUNT
};

struct graph_reduce_attr {
	enum graph_reduce_kind kind;
	int naxes;			/* 0: all axes (unless noop_with_empty_axes) */
	int64_t axes[GRAPH_MAX_DIMS];
	int keepdims;
};

/* How RESHAPE's output shape is found (Flatten, Squeeze and Unsqueeze are reshapes too). */
enum graph_reshape_kind {
	GRAPH_RESHAPE_SHAPE = 0,	/* inputs data, shape (I64, 0 copies a dim unless allowzero, -1 infers) */
	GRAPH_RESHAPE_FLATTEN,		/* 2-D: dims before axis, dims from axis */
	GRAPH_RESHAPE_SQUEEZE,		/* remove axes (all size-1 dims when naxes is 0) */
	GRAPH_RESHAPE_UNSQUEEZE,	/* insert size-1 dims at axes (of the output) */
};

/* PREDICATE's function. */
enum graph_predicate { GRAPH_PRED_ISNAN = 0, GRAPH_PRED_ISINF, GRAPH_PRED_NOT };

/* SCATTER_ND's and SCATTER_ELEMENTS' reduction of an update into the data it lands on. */
enum graph_scatter_reduce {
	GRAPH_SCATTER_NONE = 0, GRAPH_SCATTER_ADD, GRAPH_SCATTER_MUL, GRAPH_SCATTER_MAX, GRAPH_SCATTER_MIN
};

/* RNN: the cell, and the activation functions ONNX allows (f, g, h per direction). */
enum graph_rnn_cell { GRAPH_RNN_PLAIN = 0, GRAPH_RNN_GRU, GRAPH_RNN_LSTM };
enum graph_rnn_act {
	GRAPH_RNN_ACT_SIGMOID = 0, GRAPH_RNN_ACT_TANH, GRAPH_RNN_ACT_RELU, GRAPH_RNN_ACT_AFFINE,
	GRAPH_RNN_ACT_LEAKY_RELU, GRAPH_RNN_ACT_THRESHOLDED_RELU, GRAPH_RNN_ACT_SCALED_TANH,
	GRAPH_RNN_ACT_HARD_SIGMOID, GRAPH_RNN_ACT_ELU, GRAPH_RNN_ACT_SOFTSIGN, GRAPH_RNN_ACT_SOFTPLUS,
	GRAPH_RNN_ACT_COUNT
};

/*
 * EINSUM's equation: per operand and for the output, its labels in order as
 * ids (a-z 0-25, A-Z 26-51, GRAPH_EINSUM_ELLIPSIS where "..." stands); an
 * implicit output ("ij,jk") is made explicit at parse.  graph_einsum_expand
 * (graph_einsum.h) gives the dims' labels once the operands' ranks are known.
 */
#define GRAPH_EINSUM_LETTERS 52
#define GRAPH_EINSUM_ELLIPSIS 127
struct graph_einsum_attr {
	int ninputs;			/* 1 or 2 */
	int nlabels[3];			/* operands, then the output */
	signed char labels[3][GRAPH_MAX_DIMS + 1];
};

/* INSTANCENORM and GROUPNORM: y = (x - mean) / sqrt(var + eps) * scale + bias over each group of channels. */
struct graph_groupnorm_attr {
	int64_t groups;			/* 0: one group per channel (INSTANCENORM) */
	float eps;
	int per_channel;		/* scale and bias are [C] (opset 21, InstanceNormalization), else [groups] */
};

struct graph_rnn_attr {
	enum graph_rnn_cell cell;
	int ndir;			/* 1 or 2 (bidirectional) */
	int reverse;			/* with ndir 1: the one direction runs backwards */
	int64_t hidden;
	enum graph_rnn_act act[6];	/* per direction: f[, g[, h]] (1, 2 or 3 by cell) */
	float alpha[6], beta[6];
	float clip;			/* 0: none; else pre-activations clamped to [-clip, clip] */
	int linear_before_reset;	/* GRU */
	int input_forget;		/* LSTM: f = 1 - i */
};

enum graph_pad_mode { GRAPH_PAD_CONSTANT = 0, GRAPH_PAD_REFLECT, GRAPH_PAD_EDGE };
enum graph_resize_mode { GRAPH_RESIZE_NEAREST = 0, GRAPH_RESIZE_LINEAR };

struct graph_resize_attr {
	enum graph_resize_mode mode;
	int coord;			/* coordinate_transformation_mode, importer's enum */
	int nearest;			/* nearest_mode, importer's enum */
	int nscales;
	float scales[GRAPH_MAX_DIMS];	/* per axis, when sizes are not given */
	int nsizes;
	int64_t sizes[GRAPH_MAX_DIMS];
};

struct graph_node {
	char *name;			/* the source node's name, for messages */
	enum graph_op op;
	int ninputs, noutputs;
	int *inputs;			/* tensor indices; -1 for an omitted optional input */
	int *outputs;
	enum graph_unary act;		/* fused activation (GEMM, MATMUL, CONV, BINARY) */
	float act_alpha, act_beta;	/* its parameters (LEAKY_RELU, CLIP, HARD_SIGMOID) */
	int no_fold;			/* runs even on constants: folding would grow them (graph_fold_mark_growth) */
	union {
		struct graph_gemm_attr gemm;
		struct graph_window_attr conv;
		struct graph_pool_attr pool;
		struct graph_reduce_attr reduce;
		struct graph_resize_attr resize;
		struct { enum graph_unary fn; float alpha, beta; } unary;
		struct { enum graph_binary fn; } binary;
		struct { int64_t axis; int log; } softmax;
		struct { float scale; int k_transposed, seq_major; } attention;
		struct { int64_t axis; float eps; } norm;	/* LAYERNORM, BATCHNORM */
		struct { int nperm; int64_t perm[GRAPH_MAX_DIMS]; } transpose;
		struct { int64_t axis; } concat;
		struct { int64_t axis; int nsplit; int64_t *split; } split;	/* split owned by the node */
		struct { int naxes; int64_t starts[GRAPH_MAX_DIMS], ends[GRAPH_MAX_DIMS],
		    axes[GRAPH_MAX_DIMS], steps[GRAPH_MAX_DIMS]; } slice;
		struct { int64_t axis; } gather;	/* GATHER, GATHER_ELEMENTS */
		struct { enum graph_pad_mode mode; int npads; int64_t pads[2 * GRAPH_MAX_DIMS];
		    float value; } pad;
		struct { enum graph_dtype to; } cast;
		struct { enum graph_reshape_kind kind; int allowzero; int64_t axis; int naxes;
		    int64_t axes[GRAPH_MAX_DIMS]; } reshape;
		struct { int64_t start, end; } shape;	/* SHAPE: ONNX start/end, end = INT64_MAX: all */
		struct { double value; } fill;		/* CONSTANT_OF_SHAPE, in the output's dtype */
		struct { enum graph_predicate fn; int detect_pos, detect_neg; } pred;	/* PREDICATE */
		struct { int upper; int64_t k; } trilu;	/* TRILU: keep j - i >= k (upper) or <= k */
		struct { int64_t axis; int exclusive, reverse; } cumsum;
		struct { int64_t batch_dims; enum graph_scatter_reduce reduce; } nd;	/* GATHER_ND, SCATTER_ND */
		struct graph_rnn_attr rnn;
		struct { int64_t axis, k; int largest; } topk;	/* TOPK: always sorted, ties by lower index */
		struct { int64_t axis; enum graph_scatter_reduce reduce; } scatter;	/* SCATTER_ELEMENTS */
		struct { int64_t axis; } onehot;	/* ONEHOT: where depth goes in the output (negative from the end) */
		struct graph_groupnorm_attr groupnorm;	/* INSTANCENORM, GROUPNORM */
		struct graph_einsum_attr einsum;
		/* ARGMAX: the index of the largest (smallest: min) along axis; ties (and NaN) as onnxruntime */
		struct { int64_t axis; int keepdims, min, last; } argmax;
		struct { int nreps; int64_t reps[GRAPH_MAX_DIMS]; } tile;	/* TILE: nreps -1: input 1 holds them */
	} attr;
};

/*
 * How a backend computes a graph's FP32 tensors (a compile option,
 * device_plan_options, never a property of the graph).  The graph's inputs and
 * outputs keep their declared dtypes whatever the precision; only the
 * backend's internal arithmetic and storage change.  A backend without the
 * faster modes (the CPU one) computes in FP32.
 */
enum graph_precision {
	GRAPH_PRECISION_FP32 = 0,	/* strict FP32 (the default) */
	GRAPH_PRECISION_TF32,		/* FP32 storage, GEMM/convolution on TF32 tensor cores */
	GRAPH_PRECISION_FP16,		/* FP16 weights and activations, FP32 accumulation, softmax/norms in FP32 */
	GRAPH_PRECISION_BF16,		/* as FP16 with bfloat16 storage (FP32's range, 8-bit mantissa); needs CC >= 8.0 */
	GRAPH_PRECISION_COUNT
};

typedef struct graph {
	size_t ntensors, nnodes;
	struct graph_tensor *tensors;
	struct graph_node *nodes;	/* topological order */
	int ninputs, noutputs;
	int *inputs, *outputs;		/* tensor indices, in the model's declared order */
	int nvars;			/* variable dimensions (GRAPH_DIM_VAR(0 .. nvars - 1)) */
} graph_t;

/* A concrete shape. */
struct graph_shape {
	int ndims;
	int64_t dims[GRAPH_MAX_DIMS];
};

/* Bytes of one element of dt. */
size_t graph_dtype_size(enum graph_dtype dt);
/* KServe name ("FP32", "INT64", "BOOL", ...). */
const char *graph_dtype_name(enum graph_dtype dt);
/* Parse a KServe name; -1 when unknown. */
int graph_dtype_parse(const char *name, enum graph_dtype *out);
/* The bytes of the STRING element in slot, *len of them (never more than GRAPH_STRING_MAX). */
const char *graph_string_get(const void *slot, size_t *len);
/* Write len bytes of s (len <= GRAPH_STRING_MAX, checked by the caller) as the STRING element in slot. */
void graph_string_put(void *slot, const void *s, size_t len);
/* Whether any tensor of g is a STRING tensor. */
int graph_has_strings(const graph_t *g);
/* Name of a precision ("fp32", "tf32", "fp16", "bf16"); "?" when out of range. */
const char *graph_precision_name(int precision);
/* Parse a precision name (as in model.json); -1 when unknown. */
int graph_precision_parse(const char *name, int *out);
/* The op's ONNX-style name ("Gemm", "Conv", ...), for messages; "?" when out of range. */
const char *graph_op_name(enum graph_op op);
/* Element count of a concrete shape (1 for rank 0). */
int64_t graph_shape_elems(const struct graph_shape *s);
/*
 * An ATTENTION node's Q, K and V shapes (in[0..2]) in its dense form, [..., H, S, D] (a seq-major node's
 * sequence and heads swapped) into out[0..2], and the heads' count (1 when not seq-major) into *heads; -1 when
 * the ranks do not fit the node (one rank, at least 2; at least 3 and K not transposed when seq-major).
 */
int graph_attention_shapes(const struct graph_node *n, const struct graph_shape *const in[3], struct graph_shape out[3],
    int64_t *heads);

/* Free a graph's names, nodes, index arrays and owned constant data (NULL is ignored),
 * then the graph_t itself, which must come from malloc/calloc. */
void graph_free(graph_t *g);

/*
 * Shapes of every tensor (shapes[i] for tensor i, ntensors entries) given the
 * concrete shapes of the graph's inputs (in g->inputs order); constants keep
 * their declared shape.  Refused, with the node's name, when an input shape
 * does not fit its declaration or a node's inputs do not fit the op.  Ops whose
 * output shape depends on tensor values (Reshape's target, Slice bounds, ...)
 * read those values from constants: loaders fold such inputs first.
 */
int graph_infer_shapes(const graph_t *g, const struct graph_shape *input_shapes,
    struct graph_shape *shapes, char **cause);

#ifdef __cplusplus
}
#endif

#endif
