/* onnx_import_ops.c: map each ONNX op of the supported set to a graph node with typed attributes. */
#include <float.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "graph_fold.h"
#include "onnx_import.h"
#include "onnx_import_impl.h"

typedef int (*imp_fn)(struct imp *, const struct onnx_node *, struct graph_node *, char **);

/* One supported op: allowed attributes as "name:type" (f float, i int, s string, I ints, F floats, S strings, t tensor). */
struct imp_op {
	const char *op_type;
	imp_fn fn;
	const char *attrs;
	int min_in, max_in;
	int nonode;			/* fn binds names itself (Constant, Identity, Dropout) */
};

/* Type letter of an ONNX attribute type. */
static char
attr_letter(int type)
{
	switch (type) {
	case ONNX_ATTR_FLOAT: return 'f';
	case ONNX_ATTR_INT: return 'i';
	case ONNX_ATTR_STRING: return 's';
	case ONNX_ATTR_TENSOR: return 't';
	case ONNX_ATTR_FLOATS: return 'F';
	case ONNX_ATTR_INTS: return 'I';
	case ONNX_ATTR_STRINGS: return 'S';
	default: return '?';
	}
}

/* Refuse attributes the op does not allow, or of the wrong type. */
static int
check_attrs(struct imp *im, const struct onnx_node *on, const char *allowed, char **cause)
{
	size_t i, len;
	const char *p;

	for (i = 0; i < on->nattrs; i++) {
		const struct onnx_attr *a = &on->attrs[i];

		len = strlen(a->name);
		for (p = allowed; (p = strstr(p, a->name)) != NULL; p += len)
			if ((p == allowed || p[-1] == ' ') && p[len] == ':')
				break;
		if (p == NULL)
			return imp_refuse(im, on, cause, "attribute %s not supported", a->name);
		if (p[len + 1] != attr_letter(a->type))
			return imp_refuse(im, on, cause, "attribute %s has the wrong type", a->name);
	}
	return 0;
}


/* Refuse a node whose optional output k is used (named). */
static int
no_extra_output(struct imp *im, const struct onnx_node *on, size_t k, const char *what,
    char **cause)
{
	if (on->noutputs > k && on->outputs[k][0] != '\0')
		return imp_refuse(im, on, cause, "output %s not supported", what);
	return 0;
}

/* Spatial rank: kernel_shape, else the weight's declared rank, else strides/pads. */
static int
window_rank(struct imp *im, const struct onnx_node *on, const struct graph_node *gn)
{
	const struct onnx_attr *a;

	if ((a = onnx_node_attr(on, "kernel_shape")) != NULL)
		return (int)a->nints;
	if (gn->ninputs > 1 && gn->inputs[1] >= 0 && im->g->tensors[gn->inputs[1]].ndims >= 3)
		return im->g->tensors[gn->inputs[1]].ndims - 2;
	if ((a = onnx_node_attr(on, "strides")) != NULL)
		return (int)a->nints;
	if ((a = onnx_node_attr(on, "pads")) != NULL)
		return (int)a->nints / 2;
	return -1;
}

/* Check an attribute has n values (or is absent); copy into out, else fill def. */
static int
window_ints(struct imp *im, const struct onnx_node *on, const char *name, int n, int64_t *out,
    int64_t def, char **cause)
{
	int64_t v[6];
	int cnt, i;

	if (imp_attr_ints(im, on, name, v, 6, &cnt, cause) < 0)
		return -1;
	if (cnt != 0 && cnt != n)
		return imp_refuse(im, on, cause, "attribute %s has %d values, expected %d", name, cnt, n);
	for (i = 0; i < n; i++)
		out[i] = cnt ? v[i] : def;
	return 0;
}

/* Window attributes shared by Conv, ConvTranspose and the pools. */
static int
window_attrs(struct imp *im, const struct onnx_node *on, const struct graph_node *gn,
    struct graph_window_attr *w, char **cause)
{
	const char *ap = imp_attr_str(on, "auto_pad", "NOTSET");
	int64_t pads[6];
	int n = window_rank(im, on, gn), i;

	if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
		return imp_refuse(im, on, cause, "attribute auto_pad=%s not supported", ap);
	if (n < 1 || n > 3)
		return imp_refuse(im, on, cause, "spatial rank %d not supported (1 to 3)", n);
	w->nspatial = n;
	if (window_ints(im, on, "kernel_shape", n, w->kernel, 0, cause) < 0 ||
	    window_ints(im, on, "strides", n, w->stride, 1, cause) < 0 ||
	    window_ints(im, on, "dilations", n, w->dilation, 1, cause) < 0 ||
	    window_ints(im, on, "pads", 2 * n, pads, 0, cause) < 0 ||
	    window_ints(im, on, "output_padding", n, w->output_padding, 0, cause) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (strcmp(ap, "VALID") == 0)
			pads[i] = pads[i + n] = 0;
		w->pad_begin[i] = pads[i];
		w->pad_end[i] = pads[i + n];
	}
	return 0;
}

/* Conv and ConvTranspose. */
static int
op_conv(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	gn->op = on->op_type[4] == '\0' ? GRAPH_OP_CONV : GRAPH_OP_CONV_TRANSPOSE;
	if (onnx_node_attr(on, "output_shape") != NULL)
		return imp_refuse(im, on, cause, "attribute output_shape not supported");
	if (window_attrs(im, on, gn, &gn->attr.conv, cause) < 0)
		return -1;
	gn->attr.conv.group = imp_attr_int(on, "group", 1);
	if (gn->attr.conv.group < 1)
		return imp_refuse(im, on, cause, "attribute group=%lld not supported",
		    (long long)gn->attr.conv.group);
	return 0;
}

/* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool. */
static int
op_pool(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	struct graph_pool_attr *p = &gn->attr.pool;

	gn->op = GRAPH_OP_POOL;
	p->kind = strstr(on->op_type, "Max") != NULL ? GRAPH_POOL_MAX : GRAPH_POOL_AVG;
	p->global = strncmp(on->op_type, "Global", 6) == 0;
	if (p->global)
		return 0;
	if (onnx_node_attr(on, "kernel_shape") == NULL)
		return imp_refuse(im, on, cause, "attribute kernel_shape missing");
	if (imp_attr_int(on, "storage_order", 0) != 0)
		return imp_refuse(im, on, cause, "attribute storage_order=%lld not supported",
		    (long long)imp_attr_int(on, "storage_order", 0));
	if (no_extra_output(im, on, 1, "Indices", cause) < 0 ||
	    window_attrs(im, on, gn, &p->w, cause) < 0)
		return -1;
	p->ceil_mode = imp_attr_int(on, "ceil_mode", 0) != 0;
	p->count_include_pad = imp_attr_int(on, "count_include_pad", 0) != 0;
	return 0;
}

/* BatchNormalization (inference). */
static int
op_batchnorm(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	if (imp_attr_int(on, "training_mode", 0) != 0)
		return imp_refuse(im, on, cause, "attribute training_mode=1 not supported");
	if (no_extra_output(im, on, 1, "running_mean", cause) < 0 ||
	    no_extra_output(im, on, 2, "running_var", cause) < 0)
		return -1;
	gn->op = GRAPH_OP_BATCHNORM;
	gn->attr.norm.axis = 1;
	gn->attr.norm.eps = imp_attr_float(on, "epsilon", 1e-5f);
	return 0;
}

/* Gemm. */
static int
op_gemm(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)cause;
	gn->op = GRAPH_OP_GEMM;
	gn->attr.gemm.trans_a = imp_attr_int(on, "transA", 0) != 0;
	gn->attr.gemm.trans_b = imp_attr_int(on, "transB", 0) != 0;
	gn->attr.gemm.alpha = imp_attr_float(on, "alpha", 1.0f);
	gn->attr.gemm.beta = imp_attr_float(on, "beta", 1.0f);
	return 0;
}

/* MatMul. */
static int
op_matmul(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)on; (void)cause;
	gn->op = GRAPH_OP_MATMUL;
	return 0;
}

/* Binary element-wise ops (the comparisons' and logical ops' output is BOOL). */
static int
op_binary(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	static const struct { const char *name; enum graph_binary fn; } map[] = {
		{ "Add", GRAPH_BINARY_ADD }, { "Sub", GRAPH_BINARY_SUB }, { "Mul", GRAPH_BINARY_MUL },
		{ "Div", GRAPH_BINARY_DIV }, { "Pow", GRAPH_BINARY_POW }, { "Equal", GRAPH_BINARY_EQUAL },
		{ "Max", GRAPH_BINARY_MAX }, { "Min", GRAPH_BINARY_MIN },
		{ "Greater", GRAPH_BINARY_GREATER }, { "Less", GRAPH_BINARY_LESS },
		{ "GreaterOrEqual", GRAPH_BINARY_GREATER_OR_EQUAL },
		{ "LessOrEqual", GRAPH_BINARY_LESS_OR_EQUAL },
		{ "And", GRAPH_BINARY_AND }, { "Or", GRAPH_BINARY_OR }, { "Xor", GRAPH_BINARY_XOR },
	};
	size_t i;

	(void)cause;
	gn->op = GRAPH_OP_BINARY;
	for (i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(on->op_type, map[i].name) == 0)
			gn->attr.binary.fn = map[i].fn;
	/* Mod: Python's remainder, or with fmod=1 C's fmod (which ONNX requires for floats). */
	if (strcmp(on->op_type, "Mod") == 0)
		gn->attr.binary.fn = imp_attr_int(on, "fmod", 0) != 0 ? GRAPH_BINARY_FMOD : GRAPH_BINARY_MOD;
	if (graph_binary_out_bool(gn->attr.binary.fn))
		im->g->tensors[gn->outputs[0]].dtype = GRAPH_DT_BOOL;
	return 0;
}

/* Clip's bounds: constant min/max inputs (absent: unbounded). */
static int
clip_bounds(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	float lo = -FLT_MAX, hi = FLT_MAX;
	int k;

	for (k = 1; k < gn->ninputs; k++) {
		if (gn->inputs[k] < 0)
			continue;
		if (!imp_const_float(im, gn, k, k == 1 ? &lo : &hi))
			return imp_refuse(im, on, cause, "input %s must be a FLOAT constant",
			    k == 1 ? "min" : "max");
	}
	gn->attr.unary.alpha = lo;
	gn->attr.unary.beta = hi;
	imp_trim_inputs(gn, 1);
	return 0;
}

/* Unary element-wise ops and activations. */
static int
op_unary(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	static const struct { const char *name; enum graph_unary fn; } map[] = {
		{ "Relu", GRAPH_UNARY_RELU }, { "Sigmoid", GRAPH_UNARY_SIGMOID },
		{ "Tanh", GRAPH_UNARY_TANH }, { "Exp", GRAPH_UNARY_EXP }, { "Log", GRAPH_UNARY_LOG },
		{ "Sqrt", GRAPH_UNARY_SQRT }, { "Neg", GRAPH_UNARY_NEG },
		{ "Reciprocal", GRAPH_UNARY_RECIPROCAL }, { "Erf", GRAPH_UNARY_ERF },
		{ "Abs", GRAPH_UNARY_ABS }, { "HardSwish", GRAPH_UNARY_HARD_SWISH },
		{ "LeakyRelu", GRAPH_UNARY_LEAKY_RELU }, { "HardSigmoid", GRAPH_UNARY_HARD_SIGMOID },
		{ "Gelu", GRAPH_UNARY_GELU }, { "Clip", GRAPH_UNARY_CLIP },
		{ "Ceil", GRAPH_UNARY_CEIL }, { "Floor", GRAPH_UNARY_FLOOR }, { "Round", GRAPH_UNARY_ROUND },
	};
	const char *approx = imp_attr_str(on, "approximate", "none");
	size_t i;

	gn->op = GRAPH_OP_UNARY;
	for (i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(on->op_type, map[i].name) == 0)
			gn->attr.unary.fn = map[i].fn;
	switch (gn->attr.unary.fn) {
	case GRAPH_UNARY_LEAKY_RELU:
		gn->attr.unary.alpha = imp_attr_float(on, "alpha", 0.01f);
		break;
	case GRAPH_UNARY_HARD_SIGMOID:
		gn->attr.unary.alpha = imp_attr_float(on, "alpha", 0.2f);
		gn->attr.unary.beta = imp_attr_float(on, "beta", 0.5f);
		break;
	case GRAPH_UNARY_GELU:
		if (strcmp(approx, "tanh") == 0)
			gn->attr.unary.fn = GRAPH_UNARY_GELU_TANH;
		else if (strcmp(approx, "none") != 0)
			return imp_refuse(im, on, cause, "attribute approximate=%s not supported", approx);
		break;
	case GRAPH_UNARY_CLIP:
		return clip_bounds(im, on, gn, cause);
	default:
		break;
	}
	return 0;
}

/* PRelu. */
static int
op_prelu(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)on; (void)cause;
	gn->op = GRAPH_OP_PRELU;
	return 0;
}

/* Softmax and LogSoftmax (opset 13 semantics: one axis). */
static int
op_softmax(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)cause;
	gn->op = GRAPH_OP_SOFTMAX;
	gn->attr.softmax.axis = imp_attr_int(on, "axis", -1);
	gn->attr.softmax.log = on->op_type[0] == 'L';
	return 0;
}

/* LayerNormalization (opset 17). */
static int
op_layernorm(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	if (imp_attr_int(on, "stash_type", 1) != 1)
		return imp_refuse(im, on, cause, "attribute stash_type=%lld not supported",
		    (long long)imp_attr_int(on, "stash_type", 1));
	if (no_extra_output(im, on, 1, "Mean", cause) < 0 ||
	    no_extra_output(im, on, 2, "InvStdDev", cause) < 0)
		return -1;
	gn->op = GRAPH_OP_LAYERNORM;
	gn->attr.norm.axis = imp_attr_int(on, "axis", -1);
	gn->attr.norm.eps = imp_attr_float(on, "epsilon", 1e-5f);
	return 0;
}

/* The reduce ops by ONNX name, in enum graph_reduce_kind order. */
static const char *const reduce_names[GRAPH_REDUCE_COUNT] = {
	"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
	"ReduceSumSquare", "ReduceLogSumExp",
};

/* ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSumExp: axes from the attribute (older opsets) or a constant input. */
static int
op_reduce(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	struct graph_reduce_attr *r = &gn->attr.reduce;
	int n = 0, k = 0;

	while (k < GRAPH_REDUCE_COUNT - 1 && strcmp(on->op_type, reduce_names[k]) != 0)
		k++;
	gn->op = GRAPH_OP_REDUCE;
	r->kind = (enum graph_reduce_kind)k;
	r->keepdims = imp_attr_int(on, "keepdims", 1) != 0;
	if (imp_attr_ints(im, on, "axes", r->axes, GRAPH_MAX_DIMS, &n, cause) < 0)
		return -1;
	if (gn->ninputs > 1 && gn->inputs[1] >= 0 &&
	    !imp_const_ints(im, gn, 1, r->axes, GRAPH_MAX_DIMS, &n))
		return imp_refuse(im, on, cause, "input axes must be an INT64 constant");
	r->naxes = n;
	imp_trim_inputs(gn, 1);
	if (n == 0 && imp_attr_int(on, "noop_with_empty_axes", 0) != 0) {
		/* Runtimes disagree on whether an empty-axes no-op still squares/abs/exps; only the plain ones are sure. */
		if (k > GRAPH_REDUCE_PROD)
			return imp_refuse(im, on, cause, "noop_with_empty_axes=1 with no axes is supported only for "
			    "ReduceMean/Sum/Max/Min/Prod; give the axes");
		gn->op = GRAPH_OP_COPY;
	}
	return 0;
}

/* Reshape, Flatten, Squeeze, Unsqueeze. */
static int
op_reshape(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	struct graph_node *n = gn;
	int cnt = 0;

	gn->op = GRAPH_OP_RESHAPE;
	if (strcmp(on->op_type, "Reshape") == 0) {
		n->attr.reshape.kind = GRAPH_RESHAPE_SHAPE;
		n->attr.reshape.allowzero = imp_attr_int(on, "allowzero", 0) != 0;
		return 0;
	}
	if (strcmp(on->op_type, "Flatten") == 0) {
		n->attr.reshape.kind = GRAPH_RESHAPE_FLATTEN;
		n->attr.reshape.axis = imp_attr_int(on, "axis", 1);
		return 0;
	}
	n->attr.reshape.kind = on->op_type[0] == 'S' ? GRAPH_RESHAPE_SQUEEZE : GRAPH_RESHAPE_UNSQUEEZE;
	if (gn->ninputs > 1 && gn->inputs[1] >= 0 &&
	    !imp_const_ints(im, gn, 1, n->attr.reshape.axes, GRAPH_MAX_DIMS, &cnt))
		return imp_refuse(im, on, cause, "input axes must be an INT64 constant");
	if (cnt == 0 && n->attr.reshape.kind == GRAPH_RESHAPE_UNSQUEEZE)
		return imp_refuse(im, on, cause, "input axes missing");
	n->attr.reshape.naxes = cnt;
	imp_trim_inputs(gn, 1);
	return 0;
}

/* Transpose. */
static int
op_transpose(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int n;

	gn->op = GRAPH_OP_TRANSPOSE;
	if (imp_attr_ints(im, on, "perm", gn->attr.transpose.perm, GRAPH_MAX_DIMS, &n, cause) < 0)
		return -1;
	gn->attr.transpose.nperm = n;
	return 0;
}

/* Concat. */
static int
op_concat(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	if (onnx_node_attr(on, "axis") == NULL)
		return imp_refuse(im, on, cause, "attribute axis missing");
	gn->op = GRAPH_OP_CONCAT;
	gn->attr.concat.axis = imp_attr_int(on, "axis", 0);
	return 0;
}

/* Split: sizes from the split input (resolved when constant) or equal parts. */
static int
op_split(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int64_t no = imp_attr_int(on, "num_outputs", (int64_t)on->noutputs);

	if (no != (int64_t)on->noutputs)
		return imp_refuse(im, on, cause, "attribute num_outputs=%lld differs from the %zu outputs",
		    (long long)no, on->noutputs);
	gn->op = GRAPH_OP_SPLIT;
	gn->attr.split.axis = imp_attr_int(on, "axis", 0);
	return 0;
}

/* Slice: bounds resolved when constant, else by graph_specialize. */
static int
op_slice(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)on; (void)cause;
	gn->op = GRAPH_OP_SLICE;
	return 0;
}

/* Gather. */
static int
op_gather(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)cause;
	gn->op = GRAPH_OP_GATHER;
	gn->attr.gather.axis = imp_attr_int(on, "axis", 0);
	return 0;
}

/* GatherElements (indices of data's rank, negative ones counting from the end). */
static int
op_gather_elements(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)cause;
	gn->op = GRAPH_OP_GATHER_ELEMENTS;
	gn->attr.gather.axis = imp_attr_int(on, "axis", 0);
	return 0;
}

/* Expand. */
static int
op_expand(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)on; (void)cause;
	gn->op = GRAPH_OP_EXPAND;
	return 0;
}

/* Pad: mode here, pads/value/axes resolved from the inputs. */
static int
op_pad(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const char *mode = imp_attr_str(on, "mode", "constant");

	gn->op = GRAPH_OP_PAD;
	if (strcmp(mode, "constant") == 0)
		gn->attr.pad.mode = GRAPH_PAD_CONSTANT;
	else if (strcmp(mode, "reflect") == 0)
		gn->attr.pad.mode = GRAPH_PAD_REFLECT;
	else if (strcmp(mode, "edge") == 0)
		gn->attr.pad.mode = GRAPH_PAD_EDGE;
	else
		return imp_refuse(im, on, cause, "attribute mode=%s not supported", mode);
	if (gn->ninputs < 2 || gn->inputs[1] < 0)
		return imp_refuse(im, on, cause, "input pads missing");
	return 0;
}

/* Index of s in a NULL-terminated list, or -1. */
static int
str_index(const char *s, const char *const *list)
{
	int i;

	for (i = 0; list[i] != NULL; i++)
		if (strcmp(s, list[i]) == 0)
			return i;
	return -1;
}

/* Resize: nearest/linear, the coordinate and rounding modes inferd implements. */
static int
op_resize(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	static const char *const modes[] = { "nearest", "linear", NULL };
	/* ONNX's own order of the values, which the kernels' enum (cpu_kernels.h) follows. */
	static const char *const coords[] = { "half_pixel", "half_pixel_symmetric",
	    "pytorch_half_pixel", "align_corners", "asymmetric", NULL };
	static const char *const nearest[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
	    "ceil", NULL };
	const char *mode = imp_attr_str(on, "mode", "nearest");
	const char *coord = imp_attr_str(on, "coordinate_transformation_mode", "half_pixel");
	const char *nm = imp_attr_str(on, "nearest_mode", "round_prefer_floor");
	const char *kar = imp_attr_str(on, "keep_aspect_ratio_policy", "stretch");

	gn->op = GRAPH_OP_RESIZE;
	if (str_index(mode, modes) < 0)
		return imp_refuse(im, on, cause, "attribute mode=%s not supported", mode);
	if (str_index(coord, coords) < 0)
		return imp_refuse(im, on, cause, "attribute coordinate_transformation_mode=%s not supported",
		    coord);
	if (str_index(nm, nearest) < 0)
		return imp_refuse(im, on, cause, "attribute nearest_mode=%s not supported", nm);
	if (imp_attr_int(on, "antialias", 0) != 0 || imp_attr_int(on, "exclude_outside", 0) != 0)
		return imp_refuse(im, on, cause, "attribute %s=1 not supported",
		    imp_attr_int(on, "antialias", 0) ? "antialias" : "exclude_outside");
	if (onnx_node_attr(on, "axes") != NULL || strcmp(kar, "stretch") != 0)
		return imp_refuse(im, on, cause, "attribute %s not supported",
		    onnx_node_attr(on, "axes") ? "axes" : "keep_aspect_ratio_policy");
	gn->attr.resize.mode = (enum graph_resize_mode)str_index(mode, modes);
	gn->attr.resize.coord = str_index(coord, coords);
	gn->attr.resize.nearest = str_index(nm, nearest);
	return 0;
}

/* Shape (start/end from opset 15). */
static int
op_shape(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)cause;
	gn->op = GRAPH_OP_SHAPE;
	gn->attr.shape.start = imp_attr_int(on, "start", 0);
	gn->attr.shape.end = imp_attr_int(on, "end", INT64_MAX);
	im->g->tensors[gn->outputs[0]].dtype = GRAPH_DT_I64;
	return 0;
}

/* Cast to one of inferd's dtypes. */
static int
op_cast(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int64_t to = imp_attr_int(on, "to", 0);
	enum graph_dtype dt;

	if (onnx_import_dtype((int)to, &dt) < 0)
		return imp_refuse(im, on, cause, "attribute to=%s not supported", onnx_elem_name((int)to));
	gn->op = GRAPH_OP_CAST;
	gn->attr.cast.to = dt;
	im->g->tensors[gn->outputs[0]].dtype = dt;
	return 0;
}

/* ConstantOfShape: the fill value and dtype from the value tensor (default FLOAT 0). */
static int
op_constant_of_shape(struct imp *im, const struct onnx_node *on, struct graph_node *gn,
    char **cause)
{
	const struct onnx_attr *a = onnx_node_attr(on, "value");
	enum graph_dtype dt = GRAPH_DT_F32;
	double v = 0;

	gn->op = GRAPH_OP_CONSTANT_OF_SHAPE;
	if (a != NULL) {
		const struct onnx_tensor *t = &a->t;

		if (onnx_import_dtype(t->elem, &dt) < 0 || dt == GRAPH_DT_F16 || t->nbytes == 0)
			return imp_refuse(im, on, cause, "attribute value of dtype %s not supported",
			    onnx_elem_name(t->elem));
		switch (dt) {
		case GRAPH_DT_F32: { float f; memcpy(&f, t->data, 4); v = f; break; }
		case GRAPH_DT_I64: { int64_t i; memcpy(&i, t->data, 8); v = (double)i; break; }
		case GRAPH_DT_I32: { int32_t i; memcpy(&i, t->data, 4); v = i; break; }
		case GRAPH_DT_I8: v = *(const int8_t *)t->data; break;
		default: v = *(const uint8_t *)t->data; break;
		}
	}
	gn->attr.fill.value = v;
	im->g->tensors[gn->outputs[0]].dtype = dt;
	return 0;
}

/* Range. */
static int
op_range(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)im; (void)on; (void)cause;
	gn->op = GRAPH_OP_RANGE;
	return 0;
}

/* Where: the output has X's dtype. */
static int
op_where(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	(void)on; (void)cause;
	gn->op = GRAPH_OP_WHERE;
	im->g->tensors[gn->outputs[0]].dtype = im->g->tensors[gn->inputs[1]].dtype;
	return 0;
}

/* IsNaN, IsInf (FP32 in) and Not (BOOL in): a BOOL predicate of each element. */
static int
op_predicate(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	enum graph_dtype dt = im->g->tensors[gn->inputs[0]].dtype;

	gn->op = GRAPH_OP_PREDICATE;
	if (strcmp(on->op_type, "Not") == 0) {
		gn->attr.pred.fn = GRAPH_PRED_NOT;
		if (dt != GRAPH_DT_BOOL)
			return imp_refuse(im, on, cause, "Not needs a BOOL input");
	} else {
		gn->attr.pred.fn = strcmp(on->op_type, "IsNaN") == 0 ? GRAPH_PRED_ISNAN : GRAPH_PRED_ISINF;
		gn->attr.pred.detect_pos = imp_attr_int(on, "detect_positive", 1) != 0;
		gn->attr.pred.detect_neg = imp_attr_int(on, "detect_negative", 1) != 0;
		if (dt != GRAPH_DT_F32)
			return imp_refuse(im, on, cause, "input of dtype %s (FLOAT only)", graph_dtype_name(dt));
	}
	im->g->tensors[gn->outputs[0]].dtype = GRAPH_DT_BOOL;
	return 0;
}

/* A parameter input computed at run time (Trilu's k, CumSum's axis): the kernel reads it; it must be an integer. */
static int
scalar_input(struct imp *im, const struct onnx_node *on, const struct graph_node *gn, int k, char **cause)
{
	enum graph_dtype dt = im->g->tensors[gn->inputs[k]].dtype;

	if (dt != GRAPH_DT_I64 && dt != GRAPH_DT_I32)
		return imp_refuse(im, on, cause, "input %d must be INT64 or INT32", k);
	return 0;
}

/* Trilu: upper or lower triangle; the diagonal offset k (default 0) folded when constant. */
static int
op_trilu(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int64_t k = 0;
	int n = 0;

	gn->op = GRAPH_OP_TRILU;
	gn->attr.trilu.upper = imp_attr_int(on, "upper", 1) != 0;
	if (gn->ninputs > 1 && gn->inputs[1] >= 0 && !imp_const_ints(im, gn, 1, &k, 1, &n))
		return scalar_input(im, on, gn, 1, cause);
	if (n > 1)
		return imp_refuse(im, on, cause, "input k must be a scalar");
	gn->attr.trilu.k = k;
	imp_trim_inputs(gn, 1);
	return 0;
}

/* CumSum: the axis input folded when constant; exclusive and reverse attributes. */
static int
op_cumsum(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int64_t axis = 0;
	int n = 0;

	gn->op = GRAPH_OP_CUMSUM;
	gn->attr.cumsum.exclusive = imp_attr_int(on, "exclusive", 0) != 0;
	gn->attr.cumsum.reverse = imp_attr_int(on, "reverse", 0) != 0;
	if (!imp_const_ints(im, gn, 1, &axis, 1, &n))
		return scalar_input(im, on, gn, 1, cause);
	if (n != 1)
		return imp_refuse(im, on, cause, "input axis must be a scalar");
	gn->attr.cumsum.axis = axis;
	imp_trim_inputs(gn, 1);
	return 0;
}

/* GatherND (batch_dims) and ScatterND (reduction none, add, mul, max or min). */
static int
op_nd(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const char *red = imp_attr_str(on, "reduction", "none");

	if (im->g->tensors[gn->inputs[1]].dtype != GRAPH_DT_I64)
		return imp_refuse(im, on, cause, "indices must be INT64");
	if (strcmp(on->op_type, "GatherND") == 0) {
		gn->op = GRAPH_OP_GATHER_ND;
		gn->attr.nd.batch_dims = imp_attr_int(on, "batch_dims", 0);
		return 0;
	}
	gn->op = GRAPH_OP_SCATTER_ND;
	if (strcmp(red, "none") == 0)
		gn->attr.nd.reduce = GRAPH_SCATTER_NONE;
	else if (strcmp(red, "add") == 0)
		gn->attr.nd.reduce = GRAPH_SCATTER_ADD;
	else if (strcmp(red, "mul") == 0)
		gn->attr.nd.reduce = GRAPH_SCATTER_MUL;
	else if (strcmp(red, "max") == 0)
		gn->attr.nd.reduce = GRAPH_SCATTER_MAX;
	else if (strcmp(red, "min") == 0)
		gn->attr.nd.reduce = GRAPH_SCATTER_MIN;
	else
		return imp_refuse(im, on, cause, "reduction '%s' not supported (none, add, mul, max, min)", red);
	return 0;
}

/* TopK with a constant k: values and INT64 indices, sorted (which sorted=0 allows too). */
static int
op_topk(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int64_t k = 0;
	int n = 0;

	gn->op = GRAPH_OP_TOPK;
	if (!imp_const_ints(im, gn, 1, &k, 1, &n) || n != 1 || k < 0)
		return imp_refuse(im, on, cause, "k must be a constant non-negative scalar (a k computed at run time "
		    "is not supported)");
	if (im->g->tensors[gn->inputs[0]].dtype != GRAPH_DT_F32 || gn->noutputs != 2)
		return imp_refuse(im, on, cause, "needs FLOAT input and both outputs");
	gn->attr.topk.k = k;
	gn->attr.topk.axis = imp_attr_int(on, "axis", -1);
	gn->attr.topk.largest = imp_attr_int(on, "largest", 1) != 0;
	imp_trim_inputs(gn, 1);
	if (gn->outputs[1] < 0)
		return imp_refuse(im, on, cause, "needs both outputs named");
	im->g->tensors[gn->outputs[1]].dtype = GRAPH_DT_I64;
	return 0;
}

/* Constant: a CONST tensor viewing the attribute's bytes. */
static int
op_constant(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const struct onnx_attr *a;
	struct onnx_tensor t;

	(void)gn;
	memset(&t, 0, sizeof t);
	if ((a = onnx_node_attr(on, "value")) != NULL) {
		t = a->t;
	} else if ((a = onnx_node_attr(on, "value_float")) != NULL) {
		t.elem = ONNX_FLOAT; t.data = &a->f; t.nbytes = 4;
	} else if ((a = onnx_node_attr(on, "value_int")) != NULL) {
		t.elem = ONNX_INT64; t.data = &a->i; t.nbytes = 8;
	} else if ((a = onnx_node_attr(on, "value_floats")) != NULL) {
		t.elem = ONNX_FLOAT; t.ndims = 1; t.dims[0] = (int64_t)a->nfloats;
		t.data = a->floats; t.nbytes = 4 * a->nfloats;
	} else if ((a = onnx_node_attr(on, "value_ints")) != NULL) {
		t.elem = ONNX_INT64; t.ndims = 1; t.dims[0] = (int64_t)a->nints;
		t.data = a->ints; t.nbytes = 8 * a->nints;
	} else
		return imp_refuse(im, on, cause, "no supported value attribute");
	if (on->noutputs != 1 || imp_const_add(im, on->outputs[0], &t, cause) < 0)
		return on->noutputs != 1 ? imp_refuse(im, on, cause, "needs one output") :
		    error_prefix(cause, "node '%s' (Constant)", imp_node_label(on));
	return 0;
}

/* Whether Dropout's ratio is a constant 0 (torchvision's attention exports training_mode true with it: the identity). */
static int
dropout_ratio_zero(struct imp *im, const struct onnx_node *on)
{
	int t = on->ninputs > 1 && on->inputs[1][0] != '\0' ? name_map_get(&im->names, on->inputs[1]) : -1;
	float r;

	if (t < 0 || !(im->g->tensors[t].flags & GRAPH_TENSOR_CONST) || im->g->tensors[t].dtype != GRAPH_DT_F32 ||
	    im->g->tensors[t].nbytes != 4)
		return 0;
	memcpy(&r, im->g->tensors[t].data, 4);
	return r == 0.0f;
}

/* Dropout's mask at inference: all true, of the input's shape (Shape, then ConstantOfShape of BOOL 1). */
static int
dropout_mask(struct imp *im, const struct onnx_node *on, int src, char **cause)
{
	struct graph_node *n;
	char *name = NULL;
	int shp, mask;

	if (xasprintf(&name, "%s/shape", on->outputs[1]) < 0)
		return error_set(cause, "out of memory");
	shp = imp_tensor_add(im, name, GRAPH_DT_I64, cause);
	free(name);
	if (shp < 0 || (n = imp_node_new(im, on->outputs[1], 1, 1, cause)) == NULL)
		return -1;
	n->op = GRAPH_OP_SHAPE;
	n->attr.shape.start = 0;
	n->attr.shape.end = INT64_MAX;
	n->inputs[0] = src;
	n->outputs[0] = shp;
	if ((mask = imp_tensor_add(im, on->outputs[1], GRAPH_DT_BOOL, cause)) < 0 ||
	    (n = imp_node_new(im, on->outputs[1], 1, 1, cause)) == NULL)
		return -1;
	n->op = GRAPH_OP_CONSTANT_OF_SHAPE;
	n->attr.fill.value = 1;
	n->inputs[0] = shp;
	n->outputs[0] = mask;
	return 0;
}

/* Identity and Dropout (inference): the output is another name for the input. */
static int
op_alias(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	int src = name_map_get(&im->names, on->inputs[0]);

	(void)gn;
	if (strcmp(on->op_type, "Dropout") == 0) {
		if (src >= 0 && on->noutputs > 1 && on->outputs[1][0] != '\0' &&
		    dropout_mask(im, on, src, cause) < 0)
			return -1;
		if (on->ninputs > 2 && on->inputs[2][0] != '\0') {
			int t = name_map_get(&im->names, on->inputs[2]);

			if (t < 0 || im->g->tensors[t].dtype != GRAPH_DT_BOOL ||
			    !(im->g->tensors[t].flags & GRAPH_TENSOR_CONST) ||
			    (*(const uint8_t *)im->g->tensors[t].data != 0 && !dropout_ratio_zero(im, on)))
				return imp_refuse(im, on, cause, "input training_mode must be a false constant "
				    "(or the ratio a constant 0)");
		}
	}
	if (src < 0 || on->noutputs < 1 || on->outputs[0][0] == '\0')
		return imp_refuse(im, on, cause, "needs an input and an output");
	if (name_map_put(&im->names, on->outputs[0], src) < 0)
		return error_set(cause, "out of memory");
	return 0;
}

static const struct imp_op imp_ops[] = {
	{ "Conv", op_conv, "auto_pad:s dilations:I group:i kernel_shape:I pads:I strides:I", 2, 3, 0 },
	{ "ConvTranspose", op_conv, "auto_pad:s dilations:I group:i kernel_shape:I pads:I strides:I "
	    "output_padding:I output_shape:I", 2, 3, 0 },
	{ "BatchNormalization", op_batchnorm, "epsilon:f momentum:f training_mode:i", 5, 5, 0 },
	{ "Gemm", op_gemm, "alpha:f beta:f transA:i transB:i", 2, 3, 0 },
	{ "MatMul", op_matmul, "", 2, 2, 0 },
	{ "Add", op_binary, "", 2, 2, 0 }, { "Sub", op_binary, "", 2, 2, 0 },
	{ "Mul", op_binary, "", 2, 2, 0 }, { "Div", op_binary, "", 2, 2, 0 },
	{ "Pow", op_binary, "", 2, 2, 0 }, { "Equal", op_binary, "", 2, 2, 0 },
	{ "Max", op_binary, "", 2, 2, 0 }, { "Min", op_binary, "", 2, 2, 0 },
	{ "Greater", op_binary, "", 2, 2, 0 }, { "Less", op_binary, "", 2, 2, 0 },
	{ "GreaterOrEqual", op_binary, "", 2, 2, 0 }, { "LessOrEqual", op_binary, "", 2, 2, 0 },
	{ "And", op_binary, "", 2, 2, 0 }, { "Or", op_binary, "", 2, 2, 0 },
	{ "Mod", op_binary, "fmod:i", 2, 2, 0 },
	{ "Relu", op_unary, "", 1, 1, 0 }, { "Sigmoid", op_unary, "", 1, 1, 0 },
	{ "Tanh", op_unary, "", 1, 1, 0 }, { "Exp", op_unary, "", 1, 1, 0 },
	{ "Log", op_unary, "", 1, 1, 0 }, { "Sqrt", op_unary, "", 1, 1, 0 },
	{ "Neg", op_unary, "", 1, 1, 0 }, { "Reciprocal", op_unary, "", 1, 1, 0 },
	{ "Erf", op_unary, "", 1, 1, 0 }, { "Abs", op_unary, "", 1, 1, 0 },
	{ "Ceil", op_unary, "", 1, 1, 0 }, { "Floor", op_unary, "", 1, 1, 0 }, { "Round", op_unary, "", 1, 1, 0 },
	{ "HardSwish", op_unary, "", 1, 1, 0 }, { "LeakyRelu", op_unary, "alpha:f", 1, 1, 0 },
	{ "HardSigmoid", op_unary, "alpha:f beta:f", 1, 1, 0 },
	{ "Gelu", op_unary, "approximate:s", 1, 1, 0 }, { "Clip", op_unary, "", 1, 3, 0 },
	{ "PRelu", op_prelu, "", 2, 2, 0 },
	{ "Softmax", op_softmax, "axis:i", 1, 1, 0 }, { "LogSoftmax", op_softmax, "axis:i", 1, 1, 0 },
	{ "MaxPool", op_pool, "auto_pad:s ceil_mode:i dilations:I kernel_shape:I pads:I "
	    "storage_order:i strides:I", 1, 1, 0 },
	{ "AveragePool", op_pool, "auto_pad:s ceil_mode:i count_include_pad:i dilations:I "
	    "kernel_shape:I pads:I strides:I", 1, 1, 0 },
	{ "GlobalAveragePool", op_pool, "", 1, 1, 0 }, { "GlobalMaxPool", op_pool, "", 1, 1, 0 },
	{ "ReduceMean", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceSum", op_reduce, "keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceMax", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceMin", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceProd", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceL1", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceL2", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceSumSquare", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "ReduceLogSumExp", op_reduce, "axes:I keepdims:i noop_with_empty_axes:i", 1, 2, 0 },
	{ "LayerNormalization", op_layernorm, "axis:i epsilon:f stash_type:i", 1, 3, 0 },
	{ "Reshape", op_reshape, "allowzero:i", 2, 2, 0 }, { "Flatten", op_reshape, "axis:i", 1, 1, 0 },
	{ "Squeeze", op_reshape, "", 1, 2, 0 }, { "Unsqueeze", op_reshape, "", 2, 2, 0 },
	{ "Transpose", op_transpose, "perm:I", 1, 1, 0 },
	{ "Concat", op_concat, "axis:i", 1, 1 << 20, 0 },
	{ "Split", op_split, "axis:i num_outputs:i", 1, 2, 0 },
	{ "Slice", op_slice, "", 3, 5, 0 },
	{ "Gather", op_gather, "axis:i", 2, 2, 0 },
	{ "GatherElements", op_gather_elements, "axis:i", 2, 2, 0 },
	{ "Expand", op_expand, "", 2, 2, 0 },
	{ "Pad", op_pad, "mode:s", 2, 4, 0 },
	{ "Resize", op_resize, "mode:s coordinate_transformation_mode:s nearest_mode:s "
	    "cubic_coeff_a:f exclude_outside:i extrapolation_value:f antialias:i axes:I "
	    "keep_aspect_ratio_policy:s", 1, 4, 0 },
	{ "Shape", op_shape, "start:i end:i", 1, 1, 0 },
	{ "Cast", op_cast, "to:i saturate:i", 1, 1, 0 },
	{ "ConstantOfShape", op_constant_of_shape, "value:t", 1, 1, 0 },
	{ "Range", op_range, "", 3, 3, 0 },
	{ "Where", op_where, "", 3, 3, 0 },
	{ "Constant", op_constant, "value:t value_float:f value_int:i value_floats:F value_ints:I",
	    0, 0, 1 },
	{ "Identity", op_alias, "", 1, 1, 1 },
	{ "Dropout", op_alias, "seed:i", 1, 3, 1 },
	{ "Xor", op_binary, "", 2, 2, 0 },
	{ "IsNaN", op_predicate, "", 1, 1, 0 }, { "Not", op_predicate, "", 1, 1, 0 },
	{ "IsInf", op_predicate, "detect_negative:i detect_positive:i", 1, 1, 0 },
	{ "Trilu", op_trilu, "upper:i", 1, 2, 0 },
	{ "CumSum", op_cumsum, "exclusive:i reverse:i", 2, 2, 0 },
	{ "GatherND", op_nd, "batch_dims:i", 2, 2, 0 },
	{ "ScatterND", op_nd, "reduction:s", 3, 3, 0 },
	{ "TopK", op_topk, "axis:i largest:i sorted:i", 2, 2, 0 },
	{ "ScatterElements", imp_op_scatter_elements, "axis:i reduction:s", 3, 3, 0 },
	{ "OneHot", imp_op_onehot, "axis:i", 3, 3, 0 },
	{ "InstanceNormalization", imp_op_norm, "epsilon:f", 3, 3, 0 },
	{ "GroupNormalization", imp_op_norm, "epsilon:f num_groups:i stash_type:i", 3, 3, 0 },
	{ "Einsum", imp_op_einsum, "equation:s", 1, 1 << 20, 0 },
	{ "ArgMax", imp_op_argmax, "axis:i keepdims:i select_last_index:i", 1, 1, 0 },
	{ "ArgMin", imp_op_argmax, "axis:i keepdims:i select_last_index:i", 1, 1, 0 },
	{ "Tile", imp_op_tile, "", 2, 2, 0 },
	{ "RNN", imp_op_rnn, "activation_alpha:F activation_beta:F activations:S clip:f direction:s "
	    "hidden_size:i layout:i", 3, 6, 0 },
	{ "GRU", imp_op_rnn, "activation_alpha:F activation_beta:F activations:S clip:f direction:s "
	    "hidden_size:i layout:i linear_before_reset:i", 3, 6, 0 },
	{ "LSTM", imp_op_rnn, "activation_alpha:F activation_beta:F activations:S clip:f direction:s "
	    "hidden_size:i input_forget:i layout:i", 3, 8, 0 },
};

/* Append a zeroed node with -1-filled index arrays. */
struct graph_node *
imp_node_new(struct imp *im, const char *name, int ninputs, int noutputs, char **cause)
{
	graph_t *g = im->g;
	struct graph_node *n;
	int k;

	if (g->nnodes == im->ncap) {
		size_t cap = im->ncap ? 2 * im->ncap : 128;
		struct graph_node *nn = xrealloc(g->nodes, cap * sizeof *nn);

		if (nn == NULL)
			return error_set(cause, "out of memory"), NULL;
		g->nodes = nn;
		im->ncap = cap;
	}
	n = &g->nodes[g->nnodes];
	memset(n, 0, sizeof *n);
	g->nnodes++;
	n->name = xstrdup(name);
	n->inputs = xmalloc(sizeof(int) * (size_t)(ninputs ? ninputs : 1));
	n->outputs = xmalloc(sizeof(int) * (size_t)(noutputs ? noutputs : 1));
	if (n->name == NULL || n->inputs == NULL || n->outputs == NULL)
		return error_set(cause, "out of memory"), NULL;
	n->ninputs = ninputs;
	n->noutputs = noutputs;
	for (k = 0; k < ninputs; k++)
		n->inputs[k] = -1;
	for (k = 0; k < noutputs; k++)
		n->outputs[k] = -1;
	return n;
}

/* The table entry for on's op, or NULL (Gelu is also accepted from com.microsoft). */
static const struct imp_op *
imp_op_find(const struct onnx_node *on)
{
	size_t i;
	int std = on->domain[0] == '\0' || strcmp(on->domain, "ai.onnx") == 0;

	if (!std && !(strcmp(on->domain, "com.microsoft") == 0 && strcmp(on->op_type, "Gelu") == 0))
		return NULL;
	for (i = 0; i < sizeof imp_ops / sizeof imp_ops[0]; i++)
		if (strcmp(imp_ops[i].op_type, on->op_type) == 0)
			return &imp_ops[i];
	return NULL;
}

/* Resolve gn's inputs and create its outputs (dtype of the first input until the op says otherwise). */
static int
imp_node_bind(struct imp *im, const struct onnx_node *on, int gi, char **cause)
{
	struct graph_node *gn = &im->g->nodes[gi];
	enum graph_dtype dt = GRAPH_DT_F32;
	size_t k;
	int t;

	for (k = 0; k < on->ninputs; k++) {
		if (on->inputs[k][0] == '\0')
			continue;
		if ((t = name_map_get(&im->names, on->inputs[k])) < 0)
			return imp_refuse(im, on, cause, "input '%s' is produced by no supported node",
			    on->inputs[k]);
		gn->inputs[k] = t;
	}
	if (on->ninputs > 0 && gn->inputs[0] >= 0)
		dt = im->g->tensors[gn->inputs[0]].dtype;
	for (k = 0; k < on->noutputs; k++) {
		if (on->outputs[k][0] == '\0')
			continue;
		if ((t = imp_tensor_add(im, on->outputs[k], dt, cause)) < 0)
			return -1;
		im->g->nodes[gi].outputs[k] = t;
	}
	return 0;
}

/* Map one ONNX node into the graph. */
int
imp_node(struct imp *im, const struct onnx_node *on, char **cause)
{
	const struct imp_op *op = imp_op_find(on);
	struct graph_node *gn;
	int gi, rank, rc;

	if (op == NULL)
		return imp_refuse(im, on, cause, "op %s%s%s not supported", on->domain,
		    on->domain[0] ? "." : "", on->op_type);
	if (check_attrs(im, on, op->attrs, cause) < 0)
		return -1;
	if ((int)on->ninputs < op->min_in || (int)on->ninputs > op->max_in)
		return imp_refuse(im, on, cause, "%zu inputs, expected %d to %d", on->ninputs,
		    op->min_in, op->max_in);
	if (op->nonode)
		return op->fn(im, on, NULL, cause);
	/* The recurrent ops may omit Y and keep only the final states. */
	if (on->noutputs < 1 || (on->outputs[0][0] == '\0' && op->fn != imp_op_rnn))
		return imp_refuse(im, on, cause, "needs an output");
	if (imp_node_new(im, imp_node_label(on), (int)on->ninputs, (int)on->noutputs, cause) == NULL)
		return -1;
	gi = (int)im->g->nnodes - 1;
	if (imp_node_bind(im, on, gi, cause) < 0)
		return -1;
	gn = &im->g->nodes[gi];
	for (rc = 0; rc < op->min_in; rc++)
		if (gn->inputs[rc] < 0)
			return imp_refuse(im, on, cause, "input %d missing", rc);
	if (op->fn(im, on, gn, cause) < 0)
		return -1;
	rank = gn->inputs[0] >= 0 ? im->g->tensors[gn->inputs[0]].ndims : -1;
	if ((rc = graph_node_resolve(im->g, gn, rank, cause)) < 0)
		return error_prefix(cause, "node '%s' (%s, opset %lld)", imp_node_label(on), on->op_type,
		    (long long)onnx_model_opset(im->m, on->domain));
	return 0;
}
