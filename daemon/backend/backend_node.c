/* backend_node.c: node checks and shape formulas both backends share (arity and dtypes, GEMM strides, row splits). */
#include "config.h"

#include <limits.h>
#include <stdint.h>

#include "backend_node.h"
#include "error.h"

/* 1 when n fits the arity and every tensor it touches is FP32. */
int
device_node_fp32(const graph_t *g, const struct graph_node *n, int min_in,
    int max_in, int nout, char **why)
{
	int i;

	if (n->ninputs < min_in || n->ninputs > max_in || n->noutputs != nout) {
		error_set(why, "%d inputs and %d outputs (expected %d to %d and %d)",
		    n->ninputs, n->noutputs, min_in, max_in, nout);
		return 0;
	}
	for (i = 0; i < n->ninputs + n->noutputs; i++) {
		int t = i < n->ninputs ? n->inputs[i] : n->outputs[i - n->ninputs];

		if (t < 0 && i < min_in) {
			error_set(why, "required input %d is missing", i);
			return 0;
		}
		if (t >= (int)g->ntensors) {
			error_set(why, "tensor index %d out of range", t);
			return 0;
		}
		if (t >= 0 && g->tensors[t].dtype != GRAPH_DT_F32) {
			error_set(why, "tensor '%s' is %s (only FP32)", g->tensors[t].name,
			    graph_dtype_name(g->tensors[t].dtype));
			return 0;
		}
	}
	return 1;
}

/* Element strides of GEMM's C (shape c, broadcast to [M,N]) along rows and columns. */
void
device_gemm_c_strides(const struct graph_shape *c, int64_t *row_stride,
    int64_t *col_stride)
{
	int64_t last = c->ndims >= 1 ? c->dims[c->ndims - 1] : 1;
	int64_t first = c->ndims == 2 ? c->dims[0] : 1;

	*col_stride = last == 1 ? 0 : 1;
	*row_stride = first == 1 ? 0 : last;
}

/* Split shape s at axis: rows = product of the dims before it, cols = product of the rest. */
void
device_rows_cols(const struct graph_shape *s, int axis, int64_t *rows,
    int64_t *cols)
{
	int i;

	*rows = 1;
	*cols = 1;
	for (i = 0; i < s->ndims; i++) {
		if (i < axis)
			*rows *= s->dims[i];
		else
			*cols *= s->dims[i];
	}
}

/* Refuse sizes past int (the BLAS and kernel-launch limit). */
static int
device_check_int(int64_t v, const char *what, char **cause)
{
	if (v < 0 || v > INT_MAX)
		return error_set(cause, "%s %lld is beyond the kernels' limit of %d", what, (long long)v, INT_MAX);
	return 0;
}

/* GEMM, SOFTMAX, LAYERNORM within what both backends' kernels handle (any softmax axis, scale/bias of 1 or a row). */
int
device_node_check_shapes(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, char **cause)
{
	const struct graph_shape *x = &shapes[n->inputs[0]];
	int64_t rows, cols, e;
	int axis, i;

	if (n->op == GRAPH_OP_GEMM)
		return device_check_int(x->dims[0], "A dimension", cause) != 0 ||
		    device_check_int(x->dims[1], "A dimension", cause) != 0 ||
		    device_check_int(shapes[n->outputs[0]].dims[1], "output width", cause) != 0 ? -1 : 0;
	if (n->op != GRAPH_OP_LAYERNORM)
		return 0;
	axis = (int)(n->attr.norm.axis < 0 ? n->attr.norm.axis + x->ndims : n->attr.norm.axis);
	device_rows_cols(x, axis, &rows, &cols);
	if (n->ninputs > 3 && n->inputs[3] >= 0 && graph_shape_elems(&shapes[n->inputs[3]]) != rows * cols)
		return error_set(cause, "the residual has %lld elements, not X's %lld",
		    (long long)graph_shape_elems(&shapes[n->inputs[3]]), (long long)(rows * cols));
	for (i = 1; i < n->ninputs && i < 3; i++)
		if (n->inputs[i] >= 0 && (e = graph_shape_elems(&shapes[n->inputs[i]])) != cols && e != 1)
			return error_set(cause, "%s has %lld elements, not 1 or the %lld of a normalised row",
			    i == 1 ? "scale" : "bias", (long long)e, (long long)cols);
	return 0;
}

/* 1 for the element-wise functions device_unary.h implements. */
int
device_unary_known(enum graph_unary fn)
{
	return (unsigned)fn < GRAPH_UNARY_COUNT;
}
