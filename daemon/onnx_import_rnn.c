/* onnx_import_rnn.c: ONNX's recurrent ops (RNN, GRU, LSTM) into one graph RNN node with its cell and activations. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "onnx_import_impl.h"

/* An activation's ONNX name, how many of activation_alpha/beta it takes, and its defaults (as onnxruntime). */
struct rnn_act_info {
	const char *name;
	int nalpha, nbeta;
	float alpha, beta;
};

static const struct rnn_act_info rnn_acts[GRAPH_RNN_ACT_COUNT] = {
	[GRAPH_RNN_ACT_SIGMOID] = { "Sigmoid", 0, 0, 0, 0 },
	[GRAPH_RNN_ACT_TANH] = { "Tanh", 0, 0, 0, 0 },
	[GRAPH_RNN_ACT_RELU] = { "Relu", 0, 0, 0, 0 },
	[GRAPH_RNN_ACT_AFFINE] = { "Affine", 1, 1, 1.0f, 0 },
	[GRAPH_RNN_ACT_LEAKY_RELU] = { "LeakyRelu", 1, 0, 0.01f, 0 },
	[GRAPH_RNN_ACT_THRESHOLDED_RELU] = { "ThresholdedRelu", 1, 0, 1.0f, 0 },
	[GRAPH_RNN_ACT_SCALED_TANH] = { "ScaledTanh", 1, 1, 1.0f, 1.0f },
	[GRAPH_RNN_ACT_HARD_SIGMOID] = { "HardSigmoid", 1, 1, 0.2f, 0.5f },
	[GRAPH_RNN_ACT_ELU] = { "Elu", 1, 0, 1.0f, 0 },
	[GRAPH_RNN_ACT_SOFTSIGN] = { "Softsign", 0, 0, 0, 0 },
	[GRAPH_RNN_ACT_SOFTPLUS] = { "Softplus", 0, 0, 0, 0 },
};

/* Refuse the node: "node 'N' (Op, opset V): what". */
static int
rnn_refuse(struct imp *im, const struct onnx_node *on, char **cause, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return error_set(cause, "node '%s' (%s, opset %lld): %s",
	    on->name[0] != '\0' || on->noutputs == 0 ? on->name : on->outputs[0], on->op_type,
	    (long long)onnx_model_opset(im->m, on->domain), what);
}

/* Integer attribute or def. */
static int64_t
rnn_int(const struct onnx_node *on, const char *name, int64_t def)
{
	const struct onnx_attr *a = onnx_node_attr(on, name);

	return a ? a->i : def;
}

/* The activations: the attribute's (per direction), else the cell's defaults; alpha/beta consumed in order. */
static int
rnn_activations(struct imp *im, const struct onnx_node *on, struct graph_rnn_attr *r, int per_dir, char **cause)
{
	static const enum graph_rnn_act defaults[3] = { GRAPH_RNN_ACT_SIGMOID, GRAPH_RNN_ACT_TANH, GRAPH_RNN_ACT_TANH };
	const struct onnx_attr *names = onnx_node_attr(on, "activations");
	const struct onnx_attr *al = onnx_node_attr(on, "activation_alpha"), *be = onnx_node_attr(on, "activation_beta");
	size_t ia = 0, ib = 0, want = (size_t)(per_dir * r->ndir);
	int k, j;

	if (names != NULL && names->nstrings != want)
		return rnn_refuse(im, on, cause, "%zu activations, expected %zu", names->nstrings, want);
	for (k = 0; k < (int)want; k++) {
		const struct rnn_act_info *info;

		if (names == NULL) {
			r->act[k] = r->cell == GRAPH_RNN_PLAIN ? GRAPH_RNN_ACT_TANH : defaults[k % per_dir];
		} else {
			for (j = 0; j < GRAPH_RNN_ACT_COUNT && strcasecmp(names->strings[k], rnn_acts[j].name) != 0; j++)
				;
			if (j == GRAPH_RNN_ACT_COUNT)
				return rnn_refuse(im, on, cause, "activation %s not supported", names->strings[k]);
			r->act[k] = (enum graph_rnn_act)j;
		}
		info = &rnn_acts[r->act[k]];
		r->alpha[k] = info->nalpha && al != NULL && ia < al->nfloats ? al->floats[ia++] : info->alpha;
		r->beta[k] = info->nbeta && be != NULL && ib < be->nfloats ? be->floats[ib++] : info->beta;
	}
	return 0;
}

/* Hidden size: the attribute, else R's declared last dim. */
static int64_t
rnn_hidden(struct imp *im, const struct onnx_node *on, const struct graph_node *gn)
{
	const struct graph_tensor *rt = &im->g->tensors[gn->inputs[2]];
	int64_t h = rnn_int(on, "hidden_size", -1);

	if (h < 0 && rt->ndims == 3 && rt->dims[2] > 0)
		h = rt->dims[2];
	return h;
}

/* An omitted output before a named one (Y when only Y_h is used) gets a tensor no node reads. */
static int
rnn_bind_unused(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	const char *named = on->outputs[gn->noutputs - 1];
	char *name = NULL;

	for (int k = 0; k < gn->noutputs; k++) {
		if (gn->outputs[k] >= 0)
			continue;
		if (xasprintf(&name, "%s/unused_output_%d", named, k) < 0)
			return error_set(cause, "out of memory");
		gn->outputs[k] = imp_tensor_add(im, name, GRAPH_DT_F32, cause);
		free(name);
		if (gn->outputs[k] < 0)
			return -1;
	}
	return 0;
}

/* RNN, GRU, LSTM: direction, hidden size, activations, clip and the cells' options; layout 0 only. */
int
imp_op_rnn(struct imp *im, const struct onnx_node *on, struct graph_node *gn, char **cause)
{
	struct graph_rnn_attr *r = &gn->attr.rnn;
	const struct onnx_attr *dir = onnx_node_attr(on, "direction"), *clip = onnx_node_attr(on, "clip");
	const char *d = dir != NULL && dir->s != NULL ? dir->s : "forward";
	int per_dir;

	gn->op = GRAPH_OP_RNN;
	r->cell = strcmp(on->op_type, "LSTM") == 0 ? GRAPH_RNN_LSTM : strcmp(on->op_type, "GRU") == 0 ?
	    GRAPH_RNN_GRU : GRAPH_RNN_PLAIN;
	per_dir = r->cell == GRAPH_RNN_LSTM ? 3 : r->cell == GRAPH_RNN_GRU ? 2 : 1;
	if (strcmp(d, "forward") != 0 && strcmp(d, "reverse") != 0 && strcmp(d, "bidirectional") != 0)
		return rnn_refuse(im, on, cause, "direction '%s'", d);
	r->ndir = strcmp(d, "bidirectional") == 0 ? 2 : 1;
	r->reverse = strcmp(d, "reverse") == 0;
	if (rnn_int(on, "layout", 0) != 0)
		return rnn_refuse(im, on, cause, "layout 1 (batch first) not supported; export with layout 0");
	if ((r->hidden = rnn_hidden(im, on, gn)) < 1)
		return rnn_refuse(im, on, cause, "hidden_size missing and R's shape unknown");
	r->clip = clip != NULL ? clip->f : 0;
	if (clip != NULL && !(clip->f > 0))
		return rnn_refuse(im, on, cause, "clip must be positive");
	r->linear_before_reset = rnn_int(on, "linear_before_reset", 0) != 0;
	r->input_forget = rnn_int(on, "input_forget", 0) != 0;
	if (im->g->tensors[gn->inputs[0]].dtype != GRAPH_DT_F32)
		return rnn_refuse(im, on, cause, "X must be FLOAT");
	if (gn->ninputs > 4 && gn->inputs[4] >= 0 && im->g->tensors[gn->inputs[4]].dtype != GRAPH_DT_I32)
		return rnn_refuse(im, on, cause, "sequence_lens must be INT32");
	if (gn->noutputs > (r->cell == GRAPH_RNN_LSTM ? 3 : 2))
		return rnn_refuse(im, on, cause, "%d outputs", gn->noutputs);
	if (rnn_bind_unused(im, on, gn, cause) < 0)
		return -1;
	return rnn_activations(im, on, r, per_dir, cause);
}
