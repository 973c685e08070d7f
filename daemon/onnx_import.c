/* onnx_import.c: the model-level part of the ONNX importer (inputs, outputs, order, dispatch). */
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

/* Graph dim code for a symbolic name: the batch name, or one variable per name. */
static int
imp_dim_code(struct imp *im, const char *param, int first, int64_t *code, char **cause)
{
	int k;

	if (param != NULL && im->batch_name != NULL && strcmp(param, im->batch_name) == 0) {
		*code = GRAPH_DIM_BATCH;
		return 0;
	}
	if (first && im->batch_name == NULL && param != NULL) {
		im->batch_name = param;
		*code = GRAPH_DIM_BATCH;
		return 0;
	}
	if (first) {
		*code = GRAPH_DIM_BATCH;
		return 0;
	}
	/* An unnamed unknown dim (param NULL) is a variable of its own. */
	for (k = 0; param != NULL && k < im->g->nvars; k++)
		if (im->var_names[k] != NULL && strcmp(im->var_names[k], param) == 0)
			break;
	if (param == NULL || k == im->g->nvars) {
		k = im->g->nvars;
		if (k == IMP_MAX_VARS)
			return error_set(cause, "more than %d variable dimensions", IMP_MAX_VARS);
		im->var_names[im->g->nvars++] = param;
	}
	*code = GRAPH_DIM_VAR(k);
	return 0;
}

/* Declared dims of an input value_info into tensor t. */
static int
imp_input_dims(struct imp *im, const struct onnx_value_info *vi, struct graph_tensor *t,
    char **cause)
{
	int i;

	if (vi->ndims < 0) {
		t->ndims = -1;
		return 0;
	}
	if (vi->ndims > GRAPH_MAX_DIMS)
		return error_set(cause, "input '%s': rank %d, at most %d", vi->name, vi->ndims,
		    GRAPH_MAX_DIMS);
	t->ndims = vi->ndims;
	for (i = 0; i < vi->ndims; i++) {
		const struct onnx_dim *d = &vi->dims[i];

		if (d->param == NULL && d->known && d->value >= 0)
			t->dims[i] = d->value;
		else if (imp_dim_code(im, d->param, i == 0, &t->dims[i], cause) < 0)
			return -1;
	}
	return 0;
}

/* Initializers become constants; non-initializer graph inputs become INPUT tensors. */
static int
imp_inputs(struct imp *im, char **cause)
{
	const struct onnx_graph *og = &im->m->graph;
	size_t i;
	int k;

	for (i = 0; i < og->ninitializers; i++)
		if (imp_const_add(im, og->initializers[i].name, &og->initializers[i], cause) < 0)
			return error_prefix(cause, "initializer %zu", i);
	if ((im->g->inputs = xcalloc(og->ninputs ? og->ninputs : 1, sizeof(int))) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < og->ninputs; i++) {
		const struct onnx_value_info *vi = &og->inputs[i];
		enum graph_dtype dt;

		if (name_map_get(&im->names, vi->name) >= 0)
			continue;	/* an initializer listed as an input (older exporters) */
		if (onnx_import_dtype(vi->elem, &dt) < 0)
			return error_set(cause, "input '%s': dtype %s not supported", vi->name,
			    onnx_elem_name(vi->elem));
		if ((k = imp_tensor_add(im, vi->name, dt, cause)) < 0)
			return -1;
		im->g->tensors[k].flags = GRAPH_TENSOR_INPUT;
		if (imp_input_dims(im, vi, &im->g->tensors[k], cause) < 0)
			return -1;
		im->g->inputs[im->g->ninputs++] = k;
	}
	if (im->g->ninputs == 0)
		return error_set(cause, "the graph has no inputs");
	return 0;
}

/* Whether every input of node on is available in set. */
static int
imp_node_ready(const struct onnx_node *on, const struct name_map *set)
{
	size_t k;

	for (k = 0; k < on->ninputs; k++)
		if (on->inputs[k][0] != '\0' && name_map_get(set, on->inputs[k]) < 0)
			return 0;
	return 1;
}

/* Topological order of the ONNX nodes into im->order (exporters already sort; this checks and repairs). */
static int
imp_toposort(struct imp *im, char **cause)
{
	const struct onnx_graph *og = &im->m->graph;
	struct name_map avail = { 0 };
	unsigned char *done = xcalloc(og->nnodes + 1, 1);
	size_t i, k, n = 0, before;
	int rc = -1;

	im->order = xcalloc(og->nnodes + 1, sizeof *im->order);
	if (done == NULL || im->order == NULL) {
		error_set(cause, "out of memory");
		goto out;
	}
	for (i = 0; i < im->g->ntensors; i++)
		if (name_map_put(&avail, im->g->tensors[i].name, 1) < 0)
			goto oom;
	do {
		before = n;
		for (i = 0; i < og->nnodes; i++) {
			if (done[i] || !imp_node_ready(&og->nodes[i], &avail))
				continue;
			done[i] = 1;
			im->order[n++] = i;
			for (k = 0; k < og->nodes[i].noutputs; k++)
				if (og->nodes[i].outputs[k][0] != '\0' &&
				    name_map_put(&avail, og->nodes[i].outputs[k], 1) < 0)
					goto oom;
		}
	} while (n > before && n < og->nnodes);
	for (i = 0; i < og->nnodes && n < og->nnodes; i++)
		if (!done[i]) {
			error_set(cause, "node '%s' (%s): an input is produced by no node (or a cycle)",
			    og->nodes[i].name, og->nodes[i].op_type);
			goto out;
		}
	rc = 0;
	goto out;
oom:
	error_set(cause, "out of memory");
out:
	free(avail.slots);
	free(done);
	return rc;
}

/* Append a COPY node from tensor src to a new tensor named name; returns the new tensor. */
static int
imp_copy_add(struct imp *im, int src, const char *name, char **cause)
{
	struct graph_node *n;
	int k;

	if ((k = imp_tensor_add(im, name, im->g->tensors[src].dtype, cause)) < 0)
		return -1;
	if ((n = imp_node_new(im, name, 1, 1, cause)) == NULL)
		return -1;
	n->op = GRAPH_OP_COPY;
	n->inputs[0] = src;
	n->outputs[0] = k;
	return k;
}

/* Declared dims of an output, in the inputs' dim names; ndims -1 when a name is new. */
static void
imp_output_dims(struct imp *im, const struct onnx_value_info *vi, struct graph_tensor *t)
{
	int i, k;

	t->ndims = vi->ndims > GRAPH_MAX_DIMS ? -1 : vi->ndims;
	for (i = 0; i < t->ndims; i++) {
		const struct onnx_dim *d = &vi->dims[i];

		if (d->param == NULL && d->known && d->value >= 0) {
			t->dims[i] = d->value;
			continue;
		}
		if (d->param != NULL && im->batch_name != NULL && strcmp(d->param, im->batch_name) == 0) {
			t->dims[i] = GRAPH_DIM_BATCH;
			continue;
		}
		for (k = 0; d->param != NULL && k < im->g->nvars; k++)
			if (im->var_names[k] != NULL && strcmp(d->param, im->var_names[k]) == 0)
				break;
		if (d->param == NULL || k == im->g->nvars) {
			t->ndims = -1;
			return;
		}
		t->dims[i] = GRAPH_DIM_VAR(k);
	}
}

/* Mark graph outputs; an alias of an input, constant or earlier output gets its own COPY. */
static int
imp_outputs(struct imp *im, char **cause)
{
	const struct onnx_graph *og = &im->m->graph;
	size_t i;
	int k;

	if (og->noutputs == 0)
		return error_set(cause, "the graph has no outputs");
	if ((im->g->outputs = xcalloc(og->noutputs, sizeof(int))) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i < og->noutputs; i++) {
		const struct onnx_value_info *vi = &og->outputs[i];
		struct graph_tensor *t;

		if ((k = name_map_get(&im->names, vi->name)) < 0)
			return error_set(cause, "output '%s' is produced by no node", vi->name);
		t = &im->g->tensors[k];
		if (strcmp(t->name, vi->name) != 0 || (t->flags & (GRAPH_TENSOR_INPUT |
		    GRAPH_TENSOR_CONST | GRAPH_TENSOR_OUTPUT)))
			if ((k = imp_copy_add(im, k, vi->name, cause)) < 0)
				return -1;
		t = &im->g->tensors[k];
		t->flags |= GRAPH_TENSOR_OUTPUT;
		imp_output_dims(im, vi, t);
		im->g->outputs[im->g->noutputs++] = k;
	}
	return 0;
}

/* Free the importer's scratch state. */
static void
imp_cleanup(struct imp *im)
{
	free(im->names.slots);
	free(im->order);
}

/* Import m into a new graph. */
int
onnx_import(const onnx_model_t *m, graph_t **out, char **cause)
{
	struct imp im;
	size_t i;

	memset(&im, 0, sizeof im);
	im.m = m;
	im.opset = onnx_model_opset(m, "");
	if (im.opset < 13 || im.opset > 22) {
		return error_set(cause, "ai.onnx opset %lld not supported (13 to 22 are)",
		    (long long)im.opset);
	}
	if ((im.g = xcalloc(1, sizeof *im.g)) == NULL)
		return error_set(cause, "out of memory");
	if (imp_inputs(&im, cause) < 0 || imp_toposort(&im, cause) < 0)
		goto fail;
	for (i = 0; i < m->graph.nnodes; i++)
		if (imp_node(&im, &m->graph.nodes[im.order[i]], cause) < 0)
			goto fail;
	if (imp_outputs(&im, cause) < 0)
		goto fail;
	imp_cleanup(&im);
	*out = im.g;
	return 0;
fail:
	imp_cleanup(&im);
	graph_free(im.g);
	return -1;
}
