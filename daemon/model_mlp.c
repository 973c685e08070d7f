/* model_mlp.c: the layer format: model.json's "layers" built into a graph checked against the safetensors weights. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "model.h"
#include "model_impl.h"
#include "safetensors.h"

/* Largest row width accepted for inputs, outputs and layers. */
#define MODEL_MAX_WIDTH (1 << 24)

/* The layer kinds of model.json. */
enum model_op {
	MODEL_OP_LINEAR,
	MODEL_OP_ACTIVATION,
	MODEL_OP_SOFTMAX,
	MODEL_OP_LAYERNORM,
	MODEL_OP_IDENTITY,
};

static const struct {
	const char *name;
	enum model_op op;
	enum graph_unary act;
} model_ops[] = {
	{ "linear", MODEL_OP_LINEAR, GRAPH_UNARY_NONE },
	{ "relu", MODEL_OP_ACTIVATION, GRAPH_UNARY_RELU },
	{ "gelu", MODEL_OP_ACTIVATION, GRAPH_UNARY_GELU },
	{ "sigmoid", MODEL_OP_ACTIVATION, GRAPH_UNARY_SIGMOID },
	{ "tanh", MODEL_OP_ACTIVATION, GRAPH_UNARY_TANH },
	{ "softmax", MODEL_OP_SOFTMAX, GRAPH_UNARY_NONE },
	{ "layernorm", MODEL_OP_LAYERNORM, GRAPH_UNARY_NONE },
	{ "identity", MODEL_OP_IDENTITY, GRAPH_UNARY_NONE },
};

/* The graph being built from the layer list: where each layer reads from. */
struct model_builder {
	model_t *m;
	st_file_t *st;
	int cur;			/* tensor the next layer reads */
	int width;			/* its values per row */
	int last_gemm;			/* node index of a GEMM that wrote cur, -1 otherwise */
};

/* Look up an op by name. */
static int
model_find_op(const char *name, enum model_op *op, enum graph_unary *act)
{
	size_t i;

	for (i = 0; i < sizeof model_ops / sizeof model_ops[0]; i++) {
		if (strcmp(model_ops[i].name, name) == 0) {
			*op = model_ops[i].op;
			*act = model_ops[i].act;
			return 0;
		}
	}
	return -1;
}

/* Append an FP32 tensor of shape [d0] or [d0, d1] (d1 < 0: rank 1); its index, or -1 when out of memory. */
static int
model_add_tensor(graph_t *g, const char *name, unsigned flags, int64_t d0,
    int64_t d1)
{
	struct graph_tensor *t = &g->tensors[g->ntensors];

	if ((t->name = xstrdup(name)) == NULL)
		return -1;
	t->dtype = GRAPH_DT_F32;
	t->flags = flags;
	t->ndims = d1 < 0 ? 1 : 2;
	t->dims[0] = d0;
	t->dims[1] = d1;
	return (int)g->ntensors++;
}

/* Append a node reading ins[0..nin) and writing a new [batch, width] tensor named after it; becomes b->cur. */
static int
model_add_node(struct model_builder *b, const char *name, enum graph_op op,
    const int *ins, int nin, int width, char **cause)
{
	graph_t *g = b->m->graph;
	struct graph_node *n = &g->nodes[g->nnodes];
	int out;

	g->nnodes++;	/* first, so graph_free releases whatever is allocated below */
	if ((out = model_add_tensor(g, name, 0, GRAPH_DIM_BATCH, width)) < 0 ||
	    (n->name = xstrdup(name)) == NULL || (n->inputs = xmalloc((size_t)nin * sizeof *n->inputs)) == NULL ||
	    (n->outputs = xmalloc(sizeof *n->outputs)) == NULL)
		return error_set(cause, "out of memory");
	n->op = op;
	n->ninputs = nin;
	n->noutputs = 1;
	memcpy(n->inputs, ins, (size_t)nin * sizeof *ins);
	n->outputs[0] = out;
	b->cur = out;
	b->width = width;
	b->last_gemm = op == GRAPH_OP_GEMM ? (int)g->nnodes - 1 : -1;
	return 0;
}

/* Describe a safetensors shape as "5,7" into buf. */
static void
model_shape_text(const struct st_tensor *t, char *buf, size_t len)
{
	int i;

	buf[0] = '\0';
	for (i = 0; i < t->ndim; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld", i ? "," : "", (long long)t->shape[i]);
}

/* Find tensor key's name in obj, check it is F32 of shape [d0] or [d0,d1], add it as a constant (*idx, -1 when optional and absent). */
static int
model_const_tensor(struct model_builder *b, json_t *obj, const char *key,
    int required, int64_t d0, int64_t d1, int *idx, char **cause)
{
	json_t *v = json_object_get(obj, key);
	const struct st_tensor *t;
	struct graph_tensor *gt;
	const char *name;
	int ndim = d1 > 0 ? 2 : 1;
	char have[96];

	*idx = -1;
	if (v == NULL && !required)
		return 0;
	if (!json_is_string(v))
		return error_set(cause, "\"%s\" must name a tensor", key);
	name = json_string_value(v);
	t = st_find(b->st, name);
	if (t == NULL)
		return error_set(cause, "missing tensor '%s' in the weights file", name);
	if (strcmp(t->dtype, "F32") != 0)
		return error_set(cause, "tensor '%s': dtype %s not supported (only F32)", name, t->dtype);
	if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1)) {
		model_shape_text(t, have, sizeof have);
		if (ndim == 2)
			return error_set(cause, "tensor '%s' has shape [%s], expected [%lld,%lld]", name, have, (long long)d0, (long long)d1);
		return error_set(cause, "tensor '%s' has shape [%s], expected [%lld]", name, have, (long long)d0);
	}
	if ((*idx = model_add_tensor(b->m->graph, name, GRAPH_TENSOR_CONST, d0, ndim == 2 ? d1 : -1)) < 0)
		return error_set(cause, "out of memory");
	gt = &b->m->graph->tensors[*idx];
	gt->data = st_data(b->st, t);
	gt->nbytes = t->end - t->begin;
	return 0;
}

/* linear: GEMM with B = weight [out,in] transposed and C = bias [out]. */
static int
model_layer_linear(struct model_builder *b, json_t *obj, const char *name,
    char **cause)
{
	const struct st_tensor *t;
	long long out;
	int ins[3] = { b->cur, -1, -1 };
	struct graph_node *n;

	if (!json_is_string(json_object_get(obj, "weight")))
		return error_set(cause, "linear needs \"weight\"");
	t = st_find(b->st, json_string_value(json_object_get(obj, "weight")));
	out = (t != NULL && t->ndim == 2) ? t->shape[0] : 0;
	if (out < 1 || out > MODEL_MAX_WIDTH)
		out = 1;	/* the shape check below names the real problem */
	if (model_const_tensor(b, obj, "weight", 1, out, b->width, &ins[1], cause) != 0 ||
	    model_const_tensor(b, obj, "bias", 0, out, 0, &ins[2], cause) != 0 ||
	    model_add_node(b, name, GRAPH_OP_GEMM, ins, ins[2] < 0 ? 2 : 3, (int)out, cause) != 0)
		return -1;
	n = &b->m->graph->nodes[b->last_gemm];
	n->attr.gemm = (struct graph_gemm_attr){ .trans_a = 0, .trans_b = 1, .alpha = 1.0f, .beta = 1.0f };
	return 0;
}

/* layernorm over each row, with optional gamma and beta. */
static int
model_layer_layernorm(struct model_builder *b, json_t *obj, const char *name,
    char **cause)
{
	json_t *eps = json_object_get(obj, "eps");
	float e = eps == NULL ? 1e-5f : (float)json_number_value(eps);
	int ins[3] = { b->cur, -1, -1 };
	graph_t *g = b->m->graph;

	if ((eps != NULL && !json_is_number(eps)) || !(e > 0.0f))
		return error_set(cause, "\"eps\" must be a positive number");
	if (model_const_tensor(b, obj, "gamma", 0, b->width, 0, &ins[1], cause) != 0 ||
	    model_const_tensor(b, obj, "beta", 0, b->width, 0, &ins[2], cause) != 0 ||
	    model_add_node(b, name, GRAPH_OP_LAYERNORM, ins, 3, b->width, cause) != 0)
		return -1;
	g->nodes[g->nnodes - 1].attr.norm.axis = -1;
	g->nodes[g->nnodes - 1].attr.norm.eps = e;
	return 0;
}

/* An activation: fused into the GEMM that wrote cur when there is one (one kernel instead of two). */
static int
model_layer_activation(struct model_builder *b, const char *name,
    enum graph_unary act, char **cause)
{
	graph_t *g = b->m->graph;
	int in = b->cur;

	if (b->last_gemm >= 0 && g->nodes[b->last_gemm].act == GRAPH_UNARY_NONE) {
		g->nodes[b->last_gemm].act = act;
		b->last_gemm = -1;
		return 0;
	}
	if (model_add_node(b, name, GRAPH_OP_UNARY, &in, 1, b->width, cause) != 0)
		return -1;
	g->nodes[g->nnodes - 1].attr.unary.fn = act;
	return 0;
}

/* Parse one layer and append its nodes, checked against the running width. */
static int
model_parse_layer(struct model_builder *b, json_t *obj, size_t idx, char **cause)
{
	char name[MODEL_NAME_MAX];
	enum graph_unary act;
	enum model_op op;
	const char *opname;
	int in = b->cur, rc = 0;

	if (!json_is_object(obj))
		return error_set(cause, "layer %zu: not an object", idx);
	snprintf(name, sizeof name, "%zu", idx);
	if (json_is_string(json_object_get(obj, "name")))
		snprintf(name, sizeof name, "%s", json_string_value(json_object_get(obj, "name")));
	opname = json_string_value(json_object_get(obj, "op"));
	if (opname == NULL)
		return error_set(cause, "layer %zu '%s': missing \"op\"", idx, name);
	if (model_find_op(opname, &op, &act) != 0)
		return error_set(cause, "layer %zu '%s': unknown op '%s'", idx, name, opname);
	switch (op) {
	case MODEL_OP_LINEAR:
		rc = model_layer_linear(b, obj, name, cause);
		break;
	case MODEL_OP_LAYERNORM:
		rc = model_layer_layernorm(b, obj, name, cause);
		break;
	case MODEL_OP_ACTIVATION:
		rc = model_layer_activation(b, name, act, cause);
		break;
	case MODEL_OP_SOFTMAX:
		rc = model_add_node(b, name, GRAPH_OP_SOFTMAX, &in, 1, b->width, cause);
		if (rc == 0)
			b->m->graph->nodes[b->m->graph->nnodes - 1].attr.softmax.axis = -1;
		break;
	case MODEL_OP_IDENTITY:
		break;	/* the next layer reads the same tensor */
	}
	if (rc != 0)
		return error_prefix(cause, "layer %zu '%s'", idx, name);
	return 0;
}

/* Name the last tensor the output; a COPY makes it distinct when no layer wrote one. */
static int
model_graph_finish(struct model_builder *b, char **cause)
{
	graph_t *g = b->m->graph;
	int in = b->cur;

	if ((size_t)b->width != b->m->output.row_elems)
		return error_set(cause, "layers produce %d values per row but output '%s' has %zu",
		    b->width, b->m->output.name, b->m->output.row_elems);
	if (b->cur == g->inputs[0] &&
	    model_add_node(b, b->m->output.name, GRAPH_OP_COPY, &in, 1, b->width, cause) != 0)
		return -1;
	free(g->tensors[b->cur].name);
	if ((g->tensors[b->cur].name = xstrdup(b->m->output.name)) == NULL ||
	    (g->outputs = xmalloc(sizeof *g->outputs)) == NULL)
		return error_set(cause, "out of memory");
	g->tensors[b->cur].flags |= GRAPH_TENSOR_OUTPUT;
	g->outputs[0] = b->cur;
	g->noutputs = 1;
	return 0;
}

/* An empty graph with room for nlayers layers and the graph input. */
static int
model_graph_new(model_t *m, size_t nlayers, char **cause)
{
	graph_t *g = xcalloc(1, sizeof *g);

	m->graph = g;
	if (g == NULL || (g->tensors = xcalloc(3 * nlayers + 2, sizeof *g->tensors)) == NULL ||
	    (g->nodes = xcalloc(nlayers + 1, sizeof *g->nodes)) == NULL ||
	    (g->inputs = xmalloc(sizeof *g->inputs)) == NULL ||
	    model_add_tensor(g, m->input.name, GRAPH_TENSOR_INPUT, GRAPH_DIM_BATCH, (int64_t)m->input.row_elems) != 0)
		return error_set(cause, "out of memory");
	g->inputs[0] = 0;
	g->ninputs = 1;
	return 0;
}

/* Parse "layers" into the model's graph, checking each against the weights and the running width. */
static int
model_mlp_layers(model_t *m, json_t *root, const char *weights_path, char **cause)
{
	json_t *layers = json_object_get(root, "layers"), *obj;
	struct model_builder b = { .m = m, .cur = 0, .width = (int)m->input.row_elems, .last_gemm = -1 };
	size_t i;

	if (!json_is_array(layers) || json_array_size(layers) == 0)
		return error_set(cause, "\"layers\" must be a non-empty array");
	if (st_open(weights_path, &m->weights, cause) != 0)
		return -1;
	b.st = m->weights;
	m->nlayers = json_array_size(layers);
	if (model_graph_new(m, json_array_size(layers), cause) != 0)
		return -1;
	json_array_foreach(layers, i, obj) {
		if (model_parse_layer(&b, obj, i, cause) != 0)
			return -1;
	}
	return model_graph_finish(&b, cause);
}

/* Parse the one entry of "inputs" or "outputs". */
static int
model_parse_io(json_t *root, const char *key, struct model_io *io, char **cause)
{
	json_t *arr = json_object_get(root, key), *obj, *dims, *d;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) != 1)
		return error_set(cause, "\"%s\" must be an array of exactly one tensor", key);
	obj = json_array_get(arr, 0);
	if (!json_is_object(obj))
		return error_set(cause, "\"%s\"[0] must be an object", key);
	if (model_json_str(obj, "name", NULL, io->name, sizeof io->name, cause) != 0 ||
	    model_json_str(obj, "datatype", NULL, io->datatype, sizeof io->datatype, cause) != 0)
		return error_prefix(cause, "%s[0]", key);
	io->dtype = GRAPH_DT_F32;
	if (strcmp(io->datatype, "FP32") != 0)
		return error_set(cause, "%s[0] '%s': datatype %s not supported (only FP32)", key, io->name, io->datatype);
	dims = json_object_get(obj, "dims");
	if (!json_is_array(dims) || json_array_size(dims) == 0 || json_array_size(dims) > MODEL_MAX_DIMS)
		return error_set(cause, "%s[0] '%s': \"dims\" must be an array of 1 to %d integers", key, io->name, MODEL_MAX_DIMS);
	io->ndims = (int)json_array_size(dims);
	io->row_elems = 1;
	json_array_foreach(dims, i, d) {
		if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > MODEL_MAX_WIDTH ||
		    io->row_elems * (size_t)json_integer_value(d) > MODEL_MAX_WIDTH)
			return error_set(cause, "%s[0] '%s': dims must be positive and their product at most %d", key, io->name, MODEL_MAX_WIDTH);
		io->dims[i] = json_integer_value(d);
		io->row_elems *= (size_t)io->dims[i];
	}
	return 0;
}

/* Keep the dims model.json declares (the graph sees each row flat). */
static void
model_mlp_io_dims(struct model_io *dst, const struct model_io *src)
{
	dst->ndims = src->ndims;
	memcpy(dst->dims, src->dims, sizeof dst->dims);
	memcpy(dst->max_dims, src->dims, sizeof dst->max_dims);
	memset(dst->var, -1, sizeof dst->var);
}

/* Parse the layer format's description in root into m's graph, then finish it; errors are prefixed by the caller. */
int
model_mlp_load(model_t *m, json_t *root, char **cause)
{
	struct model_io in, out;
	char weights[256], *path;
	long long n;
	int rc;

	m->platform = "inferd_mlp";
	if (model_json_str(root, "name", NULL, m->name, sizeof m->name, cause) != 0 ||
	    model_json_int(root, "max_batch_size", 1, MODEL_MAX_BATCH, -1, &n, cause) != 0)
		return -1;
	m->max_batch_size = (int)n;
	if (model_parse_io(root, "inputs", &m->input, cause) != 0 ||
	    model_parse_io(root, "outputs", &m->output, cause) != 0 ||
	    model_config_serving(m, root, cause) != 0 ||
	    model_json_str(root, "weights", "model.safetensors", weights, sizeof weights, cause) != 0)
		return -1;
	if (strchr(weights, '/') != NULL)
		return error_set(cause, "\"weights\" must be a file name inside the model directory");
	if (asprintf(&path, "%s/%s", m->version_dir, weights) == -1)
		return error_set(cause, "out of memory");
	rc = model_mlp_layers(m, root, path, cause);
	free(path);
	in = m->input;
	out = m->output;
	if (rc != 0 || model_finish(m, NULL, cause) != 0)
		return -1;
	model_mlp_io_dims(&m->inputs[0], &in);
	model_mlp_io_dims(&m->outputs[0], &out);
	m->input = m->inputs[0];
	m->output = m->outputs[0];
	return 0;
}
