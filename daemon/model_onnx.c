/* model_onnx.c: an ONNX file into the model's graph: decode (zero-copy), import, fold constants, fuse. */
#include "config.h"

#include "error.h"
#include "graph_fold.h"
#include "graph_fuse.h"
#include "model.h"
#include "model_impl.h"
#include "onnx_decode.h"
#include "onnx_import.h"

/* Decode path into m->onnx and build m->graph from it; errors name the file. */
int
model_onnx_load(model_t *m, const char *path, char **cause)
{
	size_t removed;

	if (onnx_model_load(path, &m->onnx, cause) != 0)
		return -1;	/* the decoder's message names the file */
	if (onnx_import(m->onnx, &m->graph, cause) != 0 ||
	    graph_fold_constants(m->graph, &removed, cause) != 0 ||
	    graph_fuse(m->graph, cause) < 0)
		return error_prefix(cause, "%s", path);
	return 0;
}
