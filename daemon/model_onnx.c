/* model_onnx.c: an ONNX file into the model's graph: decode (one private copy), import, fold constants, fuse. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_fold.h"
#include "graph_fuse.h"
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

/* Decode path into m->onnx and build m->graph from it; errors name the file. */
int
model_onnx_load(model_t *m, const char *path, char **cause)
{
	size_t removed;

	if (onnx_model_load(path, &m->onnx, cause) != 0)
		return -1;	/* the decoder's message names the file */
	if (onnx_import(m->onnx, &m->graph, cause) != 0 ||
	    model_onnx_align_constants(m->graph, cause) != 0 ||
	    graph_fold_constants(m->graph, &removed, cause) != 0 ||
	    graph_fuse(m->graph, cause) < 0)
		return error_prefix(cause, "%s", path);
	return 0;
}
