/* onnx_import.h: turn a decoded ONNX model into a graph (graph.h), refusing what inferd cannot run. */
#ifndef INFERD_ONNX_IMPORT_H
#define INFERD_ONNX_IMPORT_H

#include "graph.h"
#include "onnx_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract:
 * - Every ONNX node of the supported set (ai.onnx opsets 13 to 22, whose later versions only add dtypes inferd refuses; Gelu also
 *   from com.microsoft) becomes one graph node with typed attributes, in
 *   topological order.  Initializers and Constant nodes become CONST tensors
 *   whose data points into the decoded model (no copy): the graph must be
 *   freed before the model.  Identity and Dropout alias their input (a COPY
 *   node only where the alias is a graph output).  Graph inputs that are
 *   initializers are skipped.
 * - Declared input shapes become graph dims: an input's first dim, when
 *   symbolic or unknown, is GRAPH_DIM_BATCH, and so is any dim with the
 *   batch's name; other symbolic names are GRAPH_DIM_VAR(k), one k per name;
 *   an unnamed unknown dim is a variable of its own.  Output dims use the
 *   same names; an output with a symbolic name no input has gets ndims -1
 *   (known after inference).
 * - Value inputs that decide attributes (Slice bounds, Pad pads, Resize
 *   scales/sizes, Split sizes) are resolved into the attributes when constant;
 *   otherwise the node keeps its ONNX inputs and graph_specialize resolves
 *   them.  Squeeze/Unsqueeze/Reduce axes and Clip bounds must be constants.
 * - An op, attribute (or attribute value) or dtype outside the set refuses the
 *   model: "node 'NAME' (OP, opset N): attribute auto_pad=SAME_LOWER not
 *   supported".  Shape arithmetic stays as SHAPE/CONSTANT_OF_SHAPE/RANGE and
 *   ordinary nodes for graph_fold_constants and graph_specialize (graph_fold.h).
 */

/*
 * Resize's coordinate_transformation_mode and nearest_mode become their index
 * in the ONNX specification's list of values (half_pixel, half_pixel_symmetric,
 * pytorch_half_pixel, align_corners, asymmetric; round_prefer_floor,
 * round_prefer_ceil, floor, ceil), the order the kernels' enums follow.
 */

/* Import m into a new graph (*out, freed with graph_free before m); -1 with a cause naming node, op, opset and attribute. */
int onnx_import(const onnx_model_t *m, graph_t **out, char **cause);

/* Map an ONNX element type to a graph dtype; -1 when inferd has no such dtype. */
int onnx_import_dtype(int elem, enum graph_dtype *out);

#ifdef __cplusplus
}
#endif

#endif
