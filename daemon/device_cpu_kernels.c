/* device_cpu_kernels.c: the CPU kernels (OpenBLAS GEMM, loops for the rest) behind one node dispatch. */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "device_cpu_kernels.h"
#include "device_impl.h"
#include "device_unary.h"
#include "error.h"

/* Tensor i of node n's inputs (NULL when omitted) and outputs. */
#define CPU_IN(n, ptrs, i) ((i) < (n)->ninputs && (n)->inputs[i] >= 0 ? (const float *)(ptrs)[(n)->inputs[i]] : NULL)
#define CPU_OUT(n, ptrs, i) ((float *)(ptrs)[(n)->outputs[i]])

/* Whether node n has a CPU kernel. */
int
cpu_node_supported(const graph_t *g, const struct graph_node *n, char **why)
{
	switch (n->op) {
	case GRAPH_OP_GEMM:
		if (!device_unary_known(n->act))
			return error_set(why, "unknown fused activation %d", (int)n->act), 0;
		return device_node_fp32(g, n, 2, 3, 1, why);
	case GRAPH_OP_UNARY:
		if (!device_unary_known(n->attr.unary.fn))
			return error_set(why, "unknown unary function %d", (int)n->attr.unary.fn), 0;
		return device_node_fp32(g, n, 1, 1, 1, why);
	case GRAPH_OP_SOFTMAX:
	case GRAPH_OP_COPY:
		return device_node_fp32(g, n, 1, 1, 1, why);
	case GRAPH_OP_LAYERNORM:
		return device_node_fp32(g, n, 1, 3, 1, why);
	default:
		error_set(why, "op %s not implemented by the CPU backend", graph_op_name(n->op));
		return 0;
	}
}

/* Check node n's shapes at compile; these kernels need no workspace. */
int
cpu_node_prepare(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, size_t *workspace, char **cause)
{
	*workspace = 0;
	return device_node_check_shapes(g, n, shapes, cause);
}

/* y = act(alpha op(A) op(B) + beta C) with one SGEMM and one pass for C and the activation. */
static int
cpu_gemm(const struct graph_node *n, const struct graph_shape *shapes,
    void *const *ptrs)
{
	const struct graph_gemm_attr *at = &n->attr.gemm;
	const struct graph_shape *a = &shapes[n->inputs[0]], *b = &shapes[n->inputs[1]];
	const float *c = CPU_IN(n, ptrs, 2);
	float *y = CPU_OUT(n, ptrs, 0);
	int m = (int)shapes[n->outputs[0]].dims[0], cols = (int)shapes[n->outputs[0]].dims[1];
	int k = (int)a->dims[at->trans_a ? 0 : 1];
	int64_t rs = 0, cs = 0, r, j;

	if (m == 0 || cols == 0)
		return 0;
	if (k == 0)
		memset(y, 0, (size_t)m * (size_t)cols * sizeof *y);
	else
		cblas_sgemm(CblasRowMajor, at->trans_a ? CblasTrans : CblasNoTrans,
		    at->trans_b ? CblasTrans : CblasNoTrans, m, cols, k, at->alpha,
		    CPU_IN(n, ptrs, 0), (int)a->dims[1], CPU_IN(n, ptrs, 1), (int)b->dims[1],
		    0.0f, y, cols);
	if (c != NULL)
		device_gemm_c_strides(&shapes[n->inputs[2]], &rs, &cs);
	if (c == NULL && n->act == GRAPH_UNARY_NONE)
		return 0;
	for (r = 0; r < m; r++) {
		float *row = y + r * cols;
		for (j = 0; j < cols; j++) {
			float v = row[j] + (c != NULL ? at->beta * c[r * rs + j * cs] : 0.0f);
			row[j] = device_unary_apply(n->act, v, n->act_alpha, n->act_beta);
		}
	}
	return 0;
}

/* y = fn(x), element-wise (y may be x). */
static int
cpu_unary(const struct graph_node *n, const struct graph_shape *shapes,
    void *const *ptrs)
{
	const float *x = CPU_IN(n, ptrs, 0);
	float *y = CPU_OUT(n, ptrs, 0);
	int64_t i, len = graph_shape_elems(&shapes[n->inputs[0]]);

	for (i = 0; i < len; i++)
		y[i] = device_unary_apply(n->attr.unary.fn, x[i], n->attr.unary.alpha, n->attr.unary.beta);
	return 0;
}

/* Softmax (or log-softmax) of one row, max-subtracted so expf never overflows; y may be x. */
static void
cpu_softmax_row(const float *x, float *y, int64_t cols, int as_log)
{
	float max = x[0];
	double sum = 0.0;
	int64_t c;

	for (c = 1; c < cols; c++)
		max = x[c] > max ? x[c] : max;
	if (as_log) {
		for (c = 0; c < cols; c++)
			sum += expf(x[c] - max);
		for (c = 0; c < cols; c++)
			y[c] = (float)((double)(x[c] - max) - log(sum));
		return;
	}
	for (c = 0; c < cols; c++) {
		y[c] = expf(x[c] - max);
		sum += y[c];
	}
	for (c = 0; c < cols; c++)
		y[c] = (float)(y[c] / sum);
}

/* Softmax over the last axis. */
static int
cpu_softmax(const struct graph_node *n, const struct graph_shape *shapes,
    void *const *ptrs)
{
	const struct graph_shape *s = &shapes[n->inputs[0]];
	int64_t rows, cols, r;

	device_rows_cols(s, s->ndims - 1, &rows, &cols);
	for (r = 0; cols > 0 && r < rows; r++)
		cpu_softmax_row(CPU_IN(n, ptrs, 0) + r * cols, CPU_OUT(n, ptrs, 0) + r * cols,
		    cols, n->attr.softmax.log);
	return 0;
}

/* Layer norm of one row; sums in double so long rows keep fp32 accuracy; y may be x. */
static void
cpu_layernorm_row(const float *x, float *y, const float *gamma,
    const float *beta, int64_t cols, float eps)
{
	double mean = 0.0, var = 0.0, inv;
	int64_t c;

	for (c = 0; c < cols; c++)
		mean += x[c];
	mean /= cols;
	for (c = 0; c < cols; c++)
		var += (x[c] - mean) * (x[c] - mean);
	var /= cols;
	inv = 1.0 / sqrt(var + eps);
	for (c = 0; c < cols; c++) {
		double v = (x[c] - mean) * inv;
		y[c] = (float)(v * (gamma ? gamma[c] : 1.0f) + (beta ? beta[c] : 0.0f));
	}
}

/* Layer norm over the dims from axis on, with optional scale and bias. */
static int
cpu_layernorm(const struct graph_node *n, const struct graph_shape *shapes,
    void *const *ptrs)
{
	const struct graph_shape *s = &shapes[n->inputs[0]];
	int axis = (int)(n->attr.norm.axis < 0 ? n->attr.norm.axis + s->ndims : n->attr.norm.axis);
	int64_t rows, cols, r;

	device_rows_cols(s, axis, &rows, &cols);
	for (r = 0; cols > 0 && r < rows; r++)
		cpu_layernorm_row(CPU_IN(n, ptrs, 0) + r * cols, CPU_OUT(n, ptrs, 0) + r * cols,
		    CPU_IN(n, ptrs, 1), CPU_IN(n, ptrs, 2), cols, n->attr.norm.eps);
	return 0;
}

/* The one dispatch: run node n. */
int
cpu_node_run(const graph_t *g, const struct graph_node *n,
    const struct graph_shape *shapes, void *const *ptrs, void *workspace,
    char **cause)
{
	size_t bytes;

	switch (n->op) {
	case GRAPH_OP_GEMM:
		return cpu_gemm(n, shapes, ptrs);
	case GRAPH_OP_UNARY:
		return cpu_unary(n, shapes, ptrs);
	case GRAPH_OP_SOFTMAX:
		return cpu_softmax(n, shapes, ptrs);
	case GRAPH_OP_LAYERNORM:
		return cpu_layernorm(n, shapes, ptrs);
	case GRAPH_OP_COPY:
		bytes = (size_t)graph_shape_elems(&shapes[n->inputs[0]]) * sizeof(float);
		if (bytes > 0 && ptrs[n->outputs[0]] != ptrs[n->inputs[0]])
			memmove(ptrs[n->outputs[0]], ptrs[n->inputs[0]], bytes);
		return 0;
	default:
		return error_set(cause, "op %s not implemented by the CPU backend", graph_op_name(n->op));
	}
}
