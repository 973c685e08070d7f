/* backend_node.h: node checks and shape formulas both backends share (arity and dtypes, GEMM strides, row splits). */
#ifndef INFERD_BACKEND_NODE_H
#define INFERD_BACKEND_NODE_H

#include <stdint.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Shared by the backends' supports_node: 1 when n has min_in..max_in inputs
 * (the first min_in present), exactly nout outputs, and every tensor it
 * touches is FP32; else 0 with *why (may be NULL) saying which is not.
 */
int device_node_fp32(const graph_t *g, const struct graph_node *n, int min_in,
    int max_in, int nout, char **why);
/* 1 when fn is an element-wise function the backends' unary kernels know. */
int device_unary_known(enum graph_unary fn);
/* Element strides of GEMM's C (shape c, broadcast to [M,N]) along rows and columns (0: broadcast). */
void device_gemm_c_strides(const struct graph_shape *c, int64_t *row_stride,
    int64_t *col_stride);
/*
 * Refuse shapes the CPU plan's GEMM and layernorm cannot take: GEMM sizes
 * past int, a layernorm scale or bias that is neither one value nor a whole row.
 */
int device_node_check_shapes(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, char **cause);
/* Split s at axis (normalised): rows = product of the dims before, cols = of the rest. */
void device_rows_cols(const struct graph_shape *s, int axis, int64_t *rows,
    int64_t *cols);

#ifdef __cplusplus
}
#endif

#endif
