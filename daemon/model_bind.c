/* model_bind.c: finishing a loaded graph: its inputs and outputs described, their shape functions derived, constants bound to the device. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cpu_kernels.h"
#include "error.h"
#include "graph_fold.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"

/* Copy size bytes of host data to device memory dst, synchronously (a copy stream of its own). */
int
model_copy_sync(device_t *dev, void *dst, const void *data, size_t size, char **cause)
{
	device_stream_t *s;
	int rc;

	if (device_stream_create(dev, DEVICE_STREAM_COPY, &s, cause) != 0)
		return -1;
	rc = device_copy_h2d(s, dst, data, size, cause);
	if (rc == 0)
		rc = device_stream_sync(s, cause);
	device_stream_destroy(s);
	return rc;
}

/* Copy data to new device memory, synchronously. */
int
model_upload(device_t *dev, const void *data, size_t size, void **out, char **cause)
{
	*out = NULL;
	if (device_alloc(dev, size, out, cause) != 0)
		return -1;
	return model_copy_sync(dev, *out, data, size, cause);
}

/* Refuse the model when the device cannot run one of the nodes left at run time (g: a specialization), naming it. */
static int
model_check_nodes(const model_t *m, const graph_t *g, char **cause)
{
	char *why = NULL;
	size_t i;

	for (i = 0; i < g->nnodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		if (!device_supports_node(m->dev, g, n, &why)) {
			error_set(cause, "node '%s' (%s): the %s device cannot run it: %s", n->name ? n->name : "?",
			    graph_op_name(n->op), device_name(m->dev), why ? why : "unsupported");
			free(why);
			return -1;
		}
	}
	return 0;
}

/*
 * Bind every constant: its own bytes on the CPU, a device copy on a GPU.
 * The host bytes are the loader's private copy of the files, never the files
 * themselves, and they stay on a GPU too: specializing for a shape (each
 * context's plans, each new shape of a model with variable dims) folds
 * constants on the host.
 */
static int
model_bind_consts(model_t *m, char **cause)
{
	const graph_t *g = m->graph;
	size_t i;

	if ((m->consts = xcalloc(g->ntensors, sizeof *m->consts)) == NULL)
		return error_set(cause, "out of memory");
	m->consts_owned = device_is_gpu(m->dev);
	for (i = 0; i < g->ntensors; i++) {
		const struct graph_tensor *t = &g->tensors[i];
		if (!(t->flags & GRAPH_TENSOR_CONST) || t->nbytes == 0)
			continue;
		if (!m->consts_owned)
			m->consts[i] = (void *)t->data;
		else if (model_upload(m->dev, t->data, t->nbytes, &m->consts[i], cause) != 0)
			return error_prefix(cause, "constant '%s'", t->name);
		m->memory.weights += t->nbytes;
	}
	return 0;
}

/* Name, dtype and dims (batch stripped) of graph input k; variable dims bounded from cfg (from_cfg[v] set when so). */
static int
model_describe_input(model_t *m, json_t *cfg, int k, unsigned char *from_cfg, char **cause)
{
	const struct graph_tensor *t = &m->graph->tensors[m->graph->inputs[k]];
	struct model_io *io = &m->inputs[k];
	int skip = m->max_batch_size > 0, d;
	int64_t v, bound;

	io->tensor = m->graph->inputs[k];
	io->dtype = t->dtype;
	io->ndims = t->ndims - skip;
	if (t->ndims < 0 || io->ndims > MODEL_MAX_DIMS)
		return error_set(cause, "input '%s' has no declared shape or too many dims", t->name);
	if (skip && t->dims[0] != GRAPH_DIM_BATCH)
		return error_set(cause, "input '%s' has no batch dimension while another input has one", t->name);
	for (d = 0; d < io->ndims; d++) {
		v = t->dims[d + skip];
		if (v == GRAPH_DIM_BATCH)
			return error_set(cause, "input '%s': the batch dimension must be the first", t->name);
		if (model_config_max_dim(cfg, t->name, d, GRAPH_DIM_IS_VAR(v) ? -1 : v, &bound, cause) != 0)
			return -1;
		io->dims[d] = GRAPH_DIM_IS_VAR(v) ? -1 : v;
		io->var[d] = GRAPH_DIM_IS_VAR(v) ? (int8_t)GRAPH_DIM_VAR_INDEX(v) : -1;
		io->max_dims[d] = io->dims[d];
		if (io->var[d] >= 0) {
			int vi = io->var[d];
			if (bound != 0)
				from_cfg[vi] = 1;
			else
				bound = MODEL_DEFAULT_MAX_DIM;
			if (m->var_max[vi] == 0 || bound < m->var_max[vi])
				m->var_max[vi] = bound;
		}
	}
	return 0;
}

/* Whether any graph input has the batch dimension first. */
int
model_graph_has_batch(const graph_t *g)
{
	int k;

	for (k = 0; k < g->ninputs; k++) {
		const struct graph_tensor *t = &g->tensors[g->inputs[k]];
		if (t->ndims > 0 && t->dims[0] == GRAPH_DIM_BATCH)
			return 1;
	}
	return 0;
}

/* Every input's variable dims at their variable's maximum. */
static void
model_inputs_max(model_t *m)
{
	int k, d;

	for (k = 0; k < m->ninputs; k++)
		for (d = 0; d < m->inputs[k].ndims; d++)
			if (m->inputs[k].var[d] >= 0)
				m->inputs[k].max_dims[d] = m->var_max[m->inputs[k].var[d]];
}

/*
 * The output dims as functions of the input dims; a graph whose shapes they
 * cannot follow has each request's outputs found by specialising the graph
 * for its shape instead (exact, but slower), said once in the log.
 */
static int
model_output_functions(model_t *m, const unsigned char *from_cfg, char **cause)
{
	char *why = NULL;
	int fatal;

	if (model_shapefn_build(m, &fatal, &why) != 0) {
		if (fatal) {
			error_set(cause, "%s", why);
			free(why);
			return -1;
		}
		LOG_WARN("model '%s': %s; each request's output shapes are found by specialising the graph instead",
		    m->name, why ? why : "out of memory");
		free(why);
		return 0;
	}
	switch (model_shapefn_bound(m, from_cfg, cause)) {
	case -1:
		return -1;
	case 1:
		/* Derived again within the lowered maxima, where clamps such as min(T, 64) drop. */
		model_inputs_max(m);
		model_shapefn_free(m->shapefn);
		m->shapefn = NULL;
		return model_shapefn_build(m, &fatal, cause);
	default:
		return 0;
	}
}

/* Describe every input; variable dims take the smallest bound any input gives them, then the graph's own. */
static int
model_describe_inputs(model_t *m, json_t *cfg, char **cause)
{
	unsigned char from_cfg[MODEL_MAX_IO * MODEL_MAX_DIMS] = { 0 };
	int k;

	if (m->graph->ninputs < 1 || m->graph->ninputs > MODEL_MAX_IO || m->graph->noutputs < 1 ||
	    m->graph->noutputs > MODEL_MAX_IO)
		return error_set(cause, "%d inputs and %d outputs: 1 to %d of each are supported",
		    m->graph->ninputs, m->graph->noutputs, MODEL_MAX_IO);
	m->nvars = m->graph->nvars;
	if (m->nvars > MODEL_MAX_IO * MODEL_MAX_DIMS)
		return error_set(cause, "%d variable dims (at most %d)", m->nvars, MODEL_MAX_IO * MODEL_MAX_DIMS);
	m->ninputs = m->graph->ninputs;
	for (k = 0; k < m->ninputs; k++)
		if (model_describe_input(m, cfg, k, from_cfg, cause) != 0)
			return -1;
	model_inputs_max(m);
	return model_output_functions(m, from_cfg, cause);
}

/*
 * Refuse output name, whose first dim (first) is not the batch (rows).  A Tile
 * repeating the batch dim into a dim of that size is named: its output holds
 * each request's rows once per repeat, interleaved with the other requests',
 * which no per-request slice expresses.
 */
static int
model_refuse_not_batch_first(const struct graph_spec *a, int rows, int64_t first, const char *name, char **cause)
{
	for (size_t i = 0; i < a->graph.nnodes; i++) {
		const struct graph_node *n = &a->graph.nodes[i];
		const struct graph_shape *x, *y;

		if (n->op != GRAPH_OP_TILE || n->inputs[0] < 0 || n->outputs[0] < 0)
			continue;
		x = &a->shapes[n->inputs[0]];
		y = &a->shapes[n->outputs[0]];
		if (x->ndims > 0 && y->ndims > 0 && x->dims[0] == rows && y->dims[0] != rows && y->dims[0] == first)
			return error_set(cause, "output '%s' does not have the batch dimension first: node '%s' (Tile) "
			    "repeats the batch dim, so each request's rows would interleave with the other requests' "
			    "(tile a later dim, or export the model with a fixed batch, no batch axis)", name, n->name);
	}
	return error_set(cause, "output '%s' does not have the batch dimension first", name);
}

/* Output o's dims: from its function when derived (fixed, one variable dim, or computed), else the largest shape's. */
static int
model_describe_output(model_t *m, int o, const struct graph_spec *a, const struct model_shape *sa, char **cause)
{
	struct model_io *io = &m->outputs[o];
	const char *name = a->graph.tensors[io->tensor].name;
	const struct graph_shape *ya = &a->shapes[io->tensor];
	int skip = m->max_batch_size > 0, d;

	io->dtype = a->graph.tensors[io->tensor].dtype;
	io->ndims = ya->ndims - skip;
	if (io->ndims < 0 || io->ndims > MODEL_MAX_DIMS)
		return error_set(cause, "output '%s' has rank %d", name, ya->ndims);
	if (skip && ya->dims[0] != sa->rows)
		return model_refuse_not_batch_first(a, sa->rows, ya->dims[0], name, cause);
	if (m->shapefn != NULL && m->shapefn->out_ndims[o] != io->ndims)
		return error_set(cause, "output '%s': its derived rank %d differs from inference's %d", name,
		    m->shapefn->out_ndims[o], io->ndims);
	for (d = 0; d < io->ndims; d++) {
		io->max_dims[d] = ya->dims[d + skip];
		io->var[d] = m->shapefn != NULL ? (int8_t)m->shapefn->out_var[o][d] : m->nvars > 0 ? -2 : -1;
		io->dims[d] = io->var[d] == -1 ? io->max_dims[d] : -1;
	}
	return 0;
}

/*
 * Outputs the specialization folds to constants (values that depend only on
 * the shapes) get a slot past the planned arena; each run copies the
 * plan's values there.
 */
static int
model_const_outputs(model_t *m, const struct graph_spec *a, char **cause)
{
	int o;

	m->arena_bytes = m->mem.arena_bytes;
	for (o = 0; o < m->noutputs; o++) {
		const struct graph_tensor *t = &a->graph.tensors[m->outputs[o].tensor];
		m->const_out[o] = SIZE_MAX;
		if (m->mem.offsets[m->outputs[o].tensor] != GRAPH_PLAN_NONE)
			continue;
		if (!(t->flags & GRAPH_TENSOR_CONST) || t->nbytes > ((size_t)1 << 30))
			return error_set(cause, "output '%s' has no memory in the plan", t->name);
		m->const_out[o] = m->arena_bytes;
		m->const_out_bytes[o] = (t->nbytes + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
		m->arena_bytes += m->const_out_bytes[o];
		m->nconst_out++;
	}
	return 0;
}

/* Whether the model's device runs node n (what folding may leave at run time). */
static int
model_device_runs(void *arg, const graph_t *g, const struct graph_node *n)
{
	return device_supports_node(((const model_t *)arg)->dev, g, n, NULL);
}

/* Specialize at the largest shape; describe the outputs and plan the arena. */
static int
model_describe_outputs(model_t *m, char **cause)
{
	struct graph_shape in[MODEL_MAX_IO];
	struct graph_spec *a = NULL;
	struct model_shape sa;
	size_t kept;
	int o, rows = model_max_rows(m), rc = -1;

	model_shape_max(m, rows, &sa);
	model_graph_input_shapes(m, &sa, in);
	kept = graph_fold_mark_growth(m->graph, &cpu_fold_kernels, in, model_device_runs, m);
	if (kept > 0)
		LOG_DEBUG("model '%s': %zu nodes run on constants at run time instead of folding into large "
		    "constants", m->name, kept);
	if (graph_specialize(m->graph, &cpu_fold_kernels, in, &a, cause) != 0) {
		error_prefix(cause, "at the largest shape (%d rows, variable dims at their maximum; model.json "
		    "\"max_batch_size\" and \"max_dims\" set them)", rows);
		goto out;
	}
	if (model_check_nodes(m, &a->graph, cause) != 0)
		goto out;
	m->noutputs = m->graph->noutputs;
	for (o = 0; o < m->noutputs; o++) {
		m->outputs[o].tensor = m->graph->outputs[o];
		if (model_describe_output(m, o, a, &sa, cause) != 0)
			goto out;
	}
	rc = graph_plan_memory(&a->graph, a->shapes, MODEL_ALIGN, &m->mem, cause);
	if (rc == 0)
		rc = model_const_outputs(m, a, cause);
out:
	graph_spec_free(a);
	return rc;
}

/* Set the public names (renamed by cfg) and the legacy fields of one tensor. */
static int
model_io_name(struct model_io *io, const graph_t *g, json_t *cfg, char **cause)
{
	const char *name = model_config_rename(cfg, g->tensors[io->tensor].name);
	int d;

	if (name == NULL || strlen(name) == 0 || strlen(name) >= sizeof io->name)
		return error_set(cause, "tensor name '%s' is empty or longer than %zu", name ? name : "", sizeof io->name - 1);
	memcpy(io->name, name, strlen(name) + 1);
	snprintf(io->datatype, sizeof io->datatype, "%s", graph_dtype_name(io->dtype));
	io->row_elems = 1;
	for (d = 0; d < io->ndims; d++)
		io->row_elems *= (size_t)io->max_dims[d];
	return 0;
}

/* Name every input and output; names must be distinct on each side. */
static int
model_io_names(model_t *m, json_t *cfg, char **cause)
{
	int i, j;

	for (i = 0; i < m->ninputs; i++)
		if (model_io_name(&m->inputs[i], m->graph, cfg, cause) != 0)
			return -1;
	for (i = 0; i < m->noutputs; i++)
		if (model_io_name(&m->outputs[i], m->graph, cfg, cause) != 0)
			return -1;
	for (i = 0; i < m->ninputs; i++)
		for (j = 0; j < i; j++)
			if (strcmp(m->inputs[i].name, m->inputs[j].name) == 0)
				return error_set(cause, "two inputs are named '%s'", m->inputs[i].name);
	for (i = 0; i < m->noutputs; i++)
		for (j = 0; j < i; j++)
			if (strcmp(m->outputs[i].name, m->outputs[j].name) == 0)
				return error_set(cause, "two outputs are named '%s'", m->outputs[i].name);
	m->input = m->inputs[0];
	m->output = m->outputs[0];
	return 0;
}

/* Check, describe, plan and bind the graph a loader built. */
int
model_finish(model_t *m, json_t *cfg, char **cause)
{
	if (m->plan_cache == 0)
		m->plan_cache = MODEL_DEFAULT_PLAN_CACHE;
	if (model_describe_inputs(m, cfg, cause) != 0 || model_describe_outputs(m, cause) != 0 ||
	    model_io_names(m, cfg, cause) != 0)
		return -1;
	return model_bind_consts(m, cause);
}
