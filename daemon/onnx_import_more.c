/* onnx_import_more.c: ScatterElements, OneHot, InstanceNormalization, GroupNormalization, Einsum, ArgMax/ArgMin and Tile into graph nodes. */
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "graph_einsum.h"
#include "onnx_import_impl.h"

/* ScatterElements (opsets 11 to 18): axis; reduction none, add, mul, max or min. */
int
imp_op_scatter_elements(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	static const char *const names[] = { "none", "add", "mul", "max", "min" };
	const char *red = imp_attr_str(on, "reduction", "none");
	enum graph_dtype it = im->g->tensors[gn->inputs[1]].dtype;
	size_t i;

	if (it != GRAPH_DT_I64 && it != GRAPH_DT_I32)
		return imp_refuse(im, on, cause, "indices must be INT64 or INT32");
	gn->op = GRAPH_OP_SCATTER_ELEMENTS;
	gn->attr.scatter.axis = imp_attr_int(on, "axis", 0);
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(red, names[i]) == 0)
			break;
	if (i == sizeof names / sizeof names[0])
		return imp_refuse(im, on, cause, "reduction '%s' not supported (none, add, mul, max, min)", red);
	/* The enum lists the reductions in the same order. */
	gn->attr.scatter.reduce = (enum graph_scatter_reduce)i;
	return 0;
}

/*
 * OneHot: the output has values' dtype.  Its depth dim must follow from the
 * input shapes alone (every request's output shape is known before it runs),
 * so depth is a constant or computed from shapes; one read from the request's
 * data is refused here, naming it.
 */
int
imp_op_onehot(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const struct graph_tensor *depth = &im->g->tensors[gn->inputs[1]];

	if (depth->flags & GRAPH_TENSOR_INPUT)
		return imp_refuse(im, on, cause, "depth is the model input '%s', read from each request: an output "
		    "dim must follow from the input shapes alone (export depth as a constant)", depth->name);
	gn->op = GRAPH_OP_ONEHOT;
	gn->attr.onehot.axis = imp_attr_int(on, "axis", -1);
	im->g->tensors[gn->outputs[0]].dtype = im->g->tensors[gn->inputs[2]].dtype;
	return 0;
}

/*
 * InstanceNormalization, and GroupNormalization as onnxruntime runs it: opset
 * 18's scale and bias are per group, opset 21's per channel.
 */
int
imp_op_norm(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	struct graph_groupnorm_attr *a = &gn->attr.groupnorm;

	a->eps = imp_attr_float(on, "epsilon", 1e-5f);
	if (strcmp(on->op_type, "InstanceNormalization") == 0) {
		gn->op = GRAPH_OP_INSTANCENORM;
		a->per_channel = 1;
		return 0;
	}
	gn->op = GRAPH_OP_GROUPNORM;
	a->groups = imp_attr_int(on, "num_groups", 0);
	if (onnx_node_attr(on, "num_groups") == NULL || a->groups < 1)
		return imp_refuse(im, on, cause, "num_groups must be given and positive");
	a->per_channel = onnx_model_opset(im->m, on->domain) >= 21;
	return 0;
}

/* Einsum over one or two operands, its equation parsed once here. */
int
imp_op_einsum(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const char *eq = imp_attr_str(on, "equation", NULL);

	if (eq == NULL)
		return imp_refuse(im, on, cause, "attribute equation missing");
	gn->op = GRAPH_OP_EINSUM;
	if (graph_einsum_parse(eq, gn->ninputs, &gn->attr.einsum, cause) < 0)
		return error_prefix(cause, "node '%s' (Einsum, opset %lld)", imp_node_label(on),
		    (long long)onnx_model_opset(im->m, on->domain));
	return 0;
}

/* ArgMax and ArgMin: axis, keepdims, select_last_index; FP32, INT64 or INT32 in, INT64 out. */
int
imp_op_argmax(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	enum graph_dtype dt = im->g->tensors[gn->inputs[0]].dtype;

	if (dt != GRAPH_DT_F32 && dt != GRAPH_DT_I64 && dt != GRAPH_DT_I32)
		return imp_refuse(im, on, cause, "input of dtype %s (FLOAT, INT64 or INT32)", graph_dtype_name(dt));
	gn->op = GRAPH_OP_ARGMAX;
	gn->attr.argmax.axis = imp_attr_int(on, "axis", 0);
	gn->attr.argmax.keepdims = imp_attr_int(on, "keepdims", 1) != 0;
	gn->attr.argmax.last = imp_attr_int(on, "select_last_index", 0) != 0;
	gn->attr.argmax.min = strcmp(on->op_type, "ArgMin") == 0;
	im->g->tensors[gn->outputs[0]].dtype = GRAPH_DT_I64;
	return 0;
}

/*
 * Tile: constant repeats are kept in the node; repeats computed from the
 * input shapes stay an input, which the shape functions follow (every
 * request's output shape is known before it runs).  Repeats read from the
 * request's data are refused here, naming them.
 */
int
imp_op_tile(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const struct graph_tensor *r = &im->g->tensors[gn->inputs[1]];
	int k;

	if (r->dtype != GRAPH_DT_I64)
		return imp_refuse(im, on, cause, "repeats of dtype %s (INT64 only)", graph_dtype_name(r->dtype));
	if (r->flags & GRAPH_TENSOR_INPUT)
		return imp_refuse(im, on, cause, "repeats is the model input '%s', read from each request: an output "
		    "dim must follow from the input shapes alone (export repeats as a constant)", r->name);
	gn->op = GRAPH_OP_TILE;
	gn->attr.tile.nreps = -1;
	if (!(r->flags & GRAPH_TENSOR_CONST))
		return 0;
	if (r->ndims != 1)
		return imp_refuse(im, on, cause, "repeats of rank %d (must be 1-D)", r->ndims);
	if (!imp_const_ints(im, gn, 1, gn->attr.tile.reps, GRAPH_MAX_DIMS, &gn->attr.tile.nreps))
		return imp_refuse(im, on, cause, "repeats has more than %d values", GRAPH_MAX_DIMS);
	for (k = 0; k < gn->attr.tile.nreps; k++)
		if (gn->attr.tile.reps[k] < 0)
			return imp_refuse(im, on, cause, "repeats[%d] is %lld (must be 0 or more)", k,
			    (long long)gn->attr.tile.reps[k]);
	imp_trim_inputs(gn, 1);
	return 0;
}
