/* onnx_import_attr.c: what every op's mapping reads: its attributes, constant inputs, and the refusal naming the node. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "onnx_import_impl.h"

/* Node name for messages: its name, else its first output. */
const char *
imp_node_label(const struct onnx_node *on)
{
	if (on->name[0] != '\0' || on->noutputs == 0)
		return on->name;
	return on->outputs[0];
}

/* Refuse the model at node on: "node 'N' (Op, opset V): what". */
int
imp_refuse(struct imp *im, const struct onnx_node *on, char **cause, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return error_set(cause, "node '%s' (%s, opset %lld): %s", imp_node_label(on), on->op_type,
	    (long long)onnx_model_opset(im->m, on->domain), what);
}

/* Integer attribute or def. */
int64_t
imp_attr_int(const struct onnx_node *on, const char *name, int64_t def)
{
	const struct onnx_attr *a = onnx_node_attr(on, name);

	return a ? a->i : def;
}

/* Float attribute or def. */
float
imp_attr_float(const struct onnx_node *on, const char *name, float def)
{
	const struct onnx_attr *a = onnx_node_attr(on, name);

	return a ? a->f : def;
}

/* String attribute or def. */
const char *
imp_attr_str(const struct onnx_node *on, const char *name, const char *def)
{
	const struct onnx_attr *a = onnx_node_attr(on, name);

	return a && a->s ? a->s : def;
}

/* Ints attribute into out (at most max); *n = 0 when absent. */
int
imp_attr_ints(struct imp *im, const struct onnx_node *on, const char *name, int64_t *out, int max,
    int *n, char **cause)
{
	const struct onnx_attr *a = onnx_node_attr(on, name);
	size_t i;

	*n = 0;
	if (a == NULL)
		return 0;
	if (a->nints > (size_t)max)
		return imp_refuse(im, on, cause, "attribute %s has %zu values, at most %d", name,
		    a->nints, max);
	for (i = 0; i < a->nints; i++)
		out[i] = a->ints[i];
	*n = (int)a->nints;
	return 0;
}

/* Read a CONST integer input k of gn (I64/I32); 0 when it is not a constant. */
int
imp_const_ints(struct imp *im, const struct graph_node *gn, int k, int64_t *out, int max, int *n)
{
	const struct graph_tensor *t;
	size_t esz, i, cnt;

	if (k >= gn->ninputs || gn->inputs[k] < 0)
		return 0;
	t = &im->g->tensors[gn->inputs[k]];
	if (!(t->flags & GRAPH_TENSOR_CONST) || (t->dtype != GRAPH_DT_I64 && t->dtype != GRAPH_DT_I32))
		return 0;
	esz = t->dtype == GRAPH_DT_I64 ? 8 : 4;
	cnt = t->nbytes / esz;
	if (cnt > (size_t)max)
		return 0;
	for (i = 0; i < cnt; i++) {
		int32_t v32;

		if (esz == 8)
			memcpy(&out[i], (const char *)t->data + 8 * i, 8);
		else {
			memcpy(&v32, (const char *)t->data + 4 * i, 4);
			out[i] = v32;
		}
	}
	*n = (int)cnt;
	return 1;
}

/* Read a CONST float scalar input k; 0 when absent or not a constant. */
int
imp_const_float(struct imp *im, const struct graph_node *gn, int k, float *out)
{
	const struct graph_tensor *t;

	if (k >= gn->ninputs || gn->inputs[k] < 0)
		return 0;
	t = &im->g->tensors[gn->inputs[k]];
	if (!(t->flags & GRAPH_TENSOR_CONST) || t->dtype != GRAPH_DT_F32 || t->nbytes != 4)
		return 0;
	memcpy(out, t->data, 4);
	return 1;
}

/* Keep only the first n inputs of gn. */
void
imp_trim_inputs(struct graph_node *gn, int n)
{
	if (gn->ninputs > n)
		gn->ninputs = n;
}