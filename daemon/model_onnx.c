/* model_onnx.c: an ONNX file into the model's graph: decode (one private copy), import, fold constants, fuse. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "cpu_kernels.h"
#include "error.h"
#include "file_copy.h"
#include "graph_fold.h"
#include "graph_fuse.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"
#include "onnx_decode.h"
#include "onnx_import.h"

/*
 * Give every constant an address aligned for its element type.  The decoder keeps large raw_data
 * tensors as views into the file's copy wherever protobuf placed them, and folding, fusion and
 * the CPU kernels read constants as typed arrays; the few misaligned ones are copied once here.
 */
static int
model_onnx_align_constants(graph_t *g, char **cause)
{
	for (size_t i = 0; i < g->ntensors; i++) {
		struct graph_tensor *t = &g->tensors[i];
		size_t align = graph_dtype_size(t->dtype);
		void *copy;

		if (!(t->flags & GRAPH_TENSOR_CONST) || t->data == NULL || t->owns_data || align <= 1 ||
		    (uintptr_t)t->data % align == 0)
			continue;
		if ((copy = xmalloc(t->nbytes > 0 ? t->nbytes : 1)) == NULL)
			return error_set(cause, "out of memory aligning constant '%s' (%zu bytes)", t->name, t->nbytes);
		memcpy(copy, t->data, t->nbytes);
		t->data = copy;
		t->owns_data = 1;
	}
	return 0;
}

/* Order ranges by address. */
static int
model_onnx_cmp_range(const void *a, const void *b)
{
	const struct file_range *x = a, *y = b;

	return (x->p > y->p) - (x->p < y->p);
}

/* Add tensor i to keep when it is a constant viewing memory the graph does not own. */
static void
model_onnx_keep(const graph_t *g, int i, struct file_range *keep, size_t *n)
{
	const struct graph_tensor *t;

	if (i < 0)
		return;
	t = &g->tensors[i];
	if ((t->flags & GRAPH_TENSOR_CONST) && !t->owns_data && t->data != NULL && t->nbytes > 0)
		keep[(*n)++] = (struct file_range){ t->data, t->nbytes };
}

/*
 * Give back the parts of the file copies that no node or output of the built
 * graph reads any more: initializers that folding or fusion replaced
 * (BatchNorm folded into a Conv's weights, a Cast or Transpose folded into new
 * ones; fusion leaves the replaced tensors in the table, unread).  Every later
 * reader (specialization, the kernels) reads the constants the nodes take;
 * binding on a GPU uploads every constant, the unread ones as zeros.  Without
 * memory for the list nothing is given back.
 */
static void
model_onnx_release_unused(model_t *m)
{
	const graph_t *g = m->graph;
	struct file_range *keep;
	size_t i, n = 0, cap = (size_t)g->noutputs + 1, given;
	int k;

	for (i = 0; i < g->nnodes; i++)
		cap += (size_t)g->nodes[i].ninputs;
	if ((keep = xmalloc(cap * sizeof *keep)) == NULL)
		return;
	for (i = 0; i < g->nnodes; i++)
		for (k = 0; k < g->nodes[i].ninputs; k++)
			model_onnx_keep(g, g->nodes[i].inputs[k], keep, &n);
	for (k = 0; k < g->noutputs; k++)
		model_onnx_keep(g, g->outputs[k], keep, &n);
	qsort(keep, n, sizeof *keep, model_onnx_cmp_range);
	given = onnx_model_release_unused(m->onnx, keep, n);
	free(keep);
	if (given > 0)
		LOG_DEBUG("%s: %zu bytes of the file copies no constant views any more given back", m->version_dir, given);
}

/* Whether the model's device runs node n (the fusion target). */
static int
model_onnx_device_runs(void *arg, const graph_t *g, const struct graph_node *n)
{
	return device_supports_node((device_t *)arg, g, n, NULL);
}

/*
 * Every tensor's shape for concrete input shapes, with the shape arithmetic
 * exporters write folded (graph_infer_shapes alone cannot follow a Reshape
 * whose target is computed from Shape): the fusion passes' probes.
 */
static int
model_onnx_probe(const graph_t *g, const struct graph_shape *in, struct graph_shape *shapes, char **cause)
{
	struct graph_spec *sp;

	if (graph_specialize(g, &cpu_fold_kernels, in, &sp, cause) != 0)
		return -1;
	memcpy(shapes, sp->shapes, g->ntensors * sizeof *shapes);
	graph_spec_free(sp);
	return 0;
}

/* Whether the file's first bytes (n of them) are text: an ONNX file starts with binary protobuf fields. */
static int
model_onnx_is_text(const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isprint(b[i]) && !isspace(b[i]))
			return 0;
	return n > 0;
}

/*
 * Say what is wrong with path as a whole after the decoder refused it (its
 * message, in *cause, names a byte offset only): empty, a text file (a Git
 * LFS pointer, an HTML error page), or cut short; and what to do.
 */
static void
model_onnx_explain(const char *path, char **cause)
{
	unsigned char head[65];
	char *why = NULL, *msg = NULL;
	struct stat st;
	size_t n = 0;
	FILE *f;

	if (stat(path, &st) != 0)
		return;
	if ((f = fopen(path, "rb")) != NULL) {
		n = fread(head, 1, sizeof head - 1, f);
		fclose(f);
	}
	head[n] = '\0';
	if (st.st_size == 0)
		xasprintf(&why, "it is empty; export the model again or copy the file again");
	else if (model_onnx_is_text(head, n))
		xasprintf(&why, "it is a text file starting '%.*s', not an ONNX model (a Git LFS pointer needs "
		    "'git lfs pull'); put the exported .onnx file there", (int)strcspn((char *)head, "\r\n"), head);
	else if (*cause != NULL && strstr(*cause, "past the end") != NULL)
		xasprintf(&why, "the file ends early (%lld bytes): it is truncated, such as by an interrupted "
		    "copy or download; copy it again", (long long)st.st_size);
	if (why != NULL && xasprintf(&msg, "%s is not a usable ONNX model: %s (the decoder said: %s)", path, why,
	    *cause != NULL ? *cause : "nothing") >= 0) {
		free(*cause);
		*cause = msg;
	}
	free(why);
}

/* Whether node n of g reads or writes a STRING tensor. */
static int
model_onnx_node_strings(const graph_t *g, const struct graph_node *n)
{
	for (int k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0 && g->tensors[n->inputs[k]].dtype == GRAPH_DT_STRING)
			return 1;
	for (int k = 0; k < n->noutputs; k++)
		if (n->outputs[k] >= 0 && g->tensors[n->outputs[k]].dtype == GRAPH_DT_STRING)
			return 1;
	return 0;
}

/*
 * A model with STRING tensors runs each request alone (m->strings) and only
 * on the CPU backend: the strings' slots are host memory, and the CUDA
 * backend never sees them.  On a GPU the model is refused, naming the
 * first node that carries strings (a version loads on the daemon's device
 * before its instance_group places copies, so a daemon on a GPU cannot
 * serve it even with KIND_CPU instances).
 */
static int
model_onnx_check_strings(model_t *m, char **cause)
{
	const graph_t *g = m->graph;
	size_t i;

	if (!graph_has_strings(g))
		return 0;
	m->strings = 1;
	if (!device_is_gpu(m->dev))
		return 0;
	for (i = 0; i < g->nnodes && !model_onnx_node_strings(g, &g->nodes[i]); i++)
		;
	if (i < g->nnodes)
		return error_set(cause, "node '%s' (%s) carries BYTES (string) tensors, which only the CPU "
		    "backend runs: serve this model from a daemon with device = cpu",
		    g->nodes[i].name ? g->nodes[i].name : "?", graph_op_name(g->nodes[i].op));
	return error_set(cause, "the model has BYTES (string) tensors, which only the CPU backend runs: "
	    "serve it from a daemon with device = cpu");
}

/* Decode path into m->onnx and build m->graph from it; errors name the file. */
int
model_onnx_load(model_t *m, const char *path, char **cause)
{
	struct graph_fuse_target target = { model_onnx_device_runs, m->dev, model_onnx_probe };
	size_t removed;

	if (onnx_model_load(path, &m->onnx, cause) != 0) {
		model_onnx_explain(path, cause);
		return -1;	/* the decoder's message names the file */
	}
	if (onnx_import(m->onnx, &m->graph, cause) != 0 || model_onnx_check_strings(m, cause) != 0 ||
	    model_onnx_align_constants(m->graph, cause) != 0 ||
	    graph_fold_constants(m->graph, &cpu_fold_kernels, &removed, cause) != 0 ||
	    graph_fuse_shapes(m->graph, model_onnx_probe, cause) < 0 || graph_fuse_for(m->graph, &target, cause) < 0)
		return error_prefix(cause, "%s", path);
	model_onnx_release_unused(m);
	return 0;
}
