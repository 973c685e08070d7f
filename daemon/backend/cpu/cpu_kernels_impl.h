/* cpu_kernels_impl.h: what the CPU kernel files share: one node's view, helpers, per-op entry points. */
#ifndef INFERD_CPU_KERNELS_IMPL_H
#define INFERD_CPU_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_kernels.h"

/*
 * Contract.  Each op file exports, per op, a run function taking the node's
 * view (struct cpu_node_ctx) and, where it needs scratch memory, a workspace
 * function; cpu_node.c dispatches to them and checks dtypes and attributes
 * before (cpu_node_supported).  Run functions check the concrete shapes they
 * rely on and fail through cpu_fail; they never allocate.
 */

/* Elements below which a loop stays on one thread. */
#define CPU_PARALLEL_MIN 32768

/*
 * A hot row loop of the kernel library compiled three times, for AVX-512,
 * for AVX2 with FMA and for the baseline, the one this CPU runs chosen once
 * when the program loads (GCC's target_clones, an ifunc).  The build targets
 * the baseline x86-64 a distribution ships for, where GCC vectorises these
 * loops four floats wide at best, and a LayerNormalization's double sums not
 * at all: scalar, they were 6% of all-MiniLM-L6-v2 on one thread.
 */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define CPU_HOT_LOOP __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPU_HOT_LOOP
#endif

/* One node with its graph, concrete shapes, addresses and scratch memory. */
struct cpu_node_ctx {
	const graph_t *g;
	const struct graph_node *n;
	const struct graph_shape *shapes;
	void *const *ptrs;
	void *ws;
};

/* Whether input i is present (not omitted). */
static inline int
cpu_has_in(const struct cpu_node_ctx *c, int i)
{
	return i < c->n->ninputs && c->n->inputs[i] >= 0;
}

/* Shape of input i. */
static inline const struct graph_shape *
cpu_in_shape(const struct cpu_node_ctx *c, int i)
{
	return &c->shapes[c->n->inputs[i]];
}

/* Shape of output i. */
static inline const struct graph_shape *
cpu_out_shape(const struct cpu_node_ctx *c, int i)
{
	return &c->shapes[c->n->outputs[i]];
}

/* Memory of input i. */
static inline const void *
cpu_in(const struct cpu_node_ctx *c, int i)
{
	return c->ptrs[c->n->inputs[i]];
}

/* Memory of output i. */
static inline void *
cpu_out(const struct cpu_node_ctx *c, int i)
{
	return c->ptrs[c->n->outputs[i]];
}

/* Dtype of input i. */
static inline enum graph_dtype
cpu_in_dtype(const struct cpu_node_ctx *c, int i)
{
	return c->g->tensors[c->n->inputs[i]].dtype;
}

/* Dtype of output i. */
static inline enum graph_dtype
cpu_out_dtype(const struct cpu_node_ctx *c, int i)
{
	return c->g->tensors[c->n->outputs[i]].dtype;
}

/* Input i's first element as an integer (an INT64 or INT32 parameter computed at run time). */
static inline int64_t
cpu_in_scalar(const struct cpu_node_ctx *c, int i)
{
	return cpu_in_dtype(c, i) == GRAPH_DT_I64 ? *(const int64_t *)cpu_in(c, i) : *(const int32_t *)cpu_in(c, i);
}

/* Bytes of one element (0 for an unknown dtype). */
size_t cpu_dtype_size(enum graph_dtype dt);
/* Element count of a shape (1 for rank 0). */
int64_t cpu_elems(const struct graph_shape *s);
/* Whether two shapes are equal. */
int cpu_shape_equal(const struct graph_shape *a, const struct graph_shape *b);
/* Format a shape as "[2,3,4]" into buf. */
const char *cpu_shape_str(const struct graph_shape *s, char *buf, size_t len);
/* Normalise a possibly negative axis for rank; -1 when outside [-rank, rank). */
int cpu_axis(int64_t axis, int rank);
/* Store a message in *cause; always -1. */
int cpu_fail(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether the loop over n elements should use several threads. */
int cpu_parallel(int64_t n);

/*
 * Row-major C = alpha op(A) op(B) + beta C through OpenBLAS, split over the
 * kernels' OpenMP threads by rows or columns when large (OpenBLAS itself runs
 * one thread: two thread pools spinning on two cores starve each other).
 */
void cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/*
 * y = exp, tanh, erf, erfc of x over n elements (y may be x), vectorised
 * through libmvec where the CPU and the build have it (cpu_vmath.c): within
 * 1e-6 relative of the double-precision function.
 */
void cpu_vexpf(float *y, const float *x, int64_t n);
void cpu_vtanhf(float *y, const float *x, int64_t n);
void cpu_verff(float *y, const float *x, int64_t n);
void cpu_verfcf(float *y, const float *x, int64_t n);

/* IEEE half <-> single, round to nearest even. */
float cpu_f16_to_f32(uint16_t h);
uint16_t cpu_f32_to_f16(float f);

/* Apply an activation in place (fn NONE does nothing). */
void cpu_act_inplace(float *y, int64_t n, enum graph_unary fn, float alpha, float beta);
/* Whether fn is a function cpu_act_inplace knows. */
int cpu_act_known(enum graph_unary fn);

/*
 * Broadcasting iteration over an output and up to three inputs (numpy rules).
 * Dims are coalesced, so same-shape operands become one span and a row
 * broadcast becomes one span per row.  The span function gets element
 * offsets of the output and of each input, each input's step (0 or 1) and
 * the span length; spans may run on several threads at once.
 */
#define CPU_BCAST_MAX_IN 3
struct cpu_bcast {
	int ndims, nin;
	int64_t dims[GRAPH_MAX_DIMS];
	int64_t st[CPU_BCAST_MAX_IN][GRAPH_MAX_DIMS];
};
typedef void (*cpu_span_fn)(void *arg, int64_t yoff, const int64_t *xoff, const int64_t *xstep, int64_t n);
/* Set up b for an output shape and nin input shapes; -1 when they do not broadcast. */
int cpu_bcast_init(struct cpu_bcast *b, const struct graph_shape *out,
    const struct graph_shape *const *in, int nin, char **cause);
/* Call fn over every span of b. */
void cpu_bcast_run(const struct cpu_bcast *b, cpu_span_fn fn, void *arg);

/* Combine n updates u into y by a scatter reduction (NONE copies); dt FP32, INT64 or INT32 unless NONE. */
void cpu_scatter_combine(enum graph_scatter_reduce red, enum graph_dtype dt, char *y, const char *u, int64_t n,
    size_t es);

/* Per-op entry points. */
int cpu_gemm_run(const struct cpu_node_ctx *c, char **cause);
int cpu_matmul_run(const struct cpu_node_ctx *c, char **cause);
int cpu_conv_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_conv_workspace(const struct cpu_node_ctx *c);
int cpu_conv_transpose_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_conv_transpose_workspace(const struct cpu_node_ctx *c);
int cpu_pool_run(const struct cpu_node_ctx *c, char **cause);
int cpu_unary_run(const struct cpu_node_ctx *c, char **cause);
int cpu_binary_run(const struct cpu_node_ctx *c, char **cause);
int cpu_prelu_run(const struct cpu_node_ctx *c, char **cause);
int cpu_where_run(const struct cpu_node_ctx *c, char **cause);
int cpu_cast_run(const struct cpu_node_ctx *c, char **cause);
int cpu_softmax_run(const struct cpu_node_ctx *c, char **cause);
int cpu_attention_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_attention_workspace(const struct cpu_node_ctx *c);
int cpu_layernorm_run(const struct cpu_node_ctx *c, char **cause);
int cpu_batchnorm_run(const struct cpu_node_ctx *c, char **cause);
int cpu_reduce_run(const struct cpu_node_ctx *c, char **cause);
int cpu_transpose_run(const struct cpu_node_ctx *c, char **cause);
int cpu_copy_run(const struct cpu_node_ctx *c, char **cause);
int cpu_concat_run(const struct cpu_node_ctx *c, char **cause);
int cpu_split_run(const struct cpu_node_ctx *c, char **cause);
int cpu_slice_run(const struct cpu_node_ctx *c, char **cause);
int cpu_gather_run(const struct cpu_node_ctx *c, char **cause);
int cpu_gather_elements_run(const struct cpu_node_ctx *c, char **cause);
int cpu_expand_run(const struct cpu_node_ctx *c, char **cause);
int cpu_pad_run(const struct cpu_node_ctx *c, char **cause);
int cpu_resize_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_resize_workspace(const struct cpu_node_ctx *c);
int cpu_predicate_run(const struct cpu_node_ctx *c, char **cause);
int cpu_trilu_run(const struct cpu_node_ctx *c, char **cause);
int cpu_cumsum_run(const struct cpu_node_ctx *c, char **cause);
int cpu_gather_nd_run(const struct cpu_node_ctx *c, char **cause);
int cpu_scatter_nd_run(const struct cpu_node_ctx *c, char **cause);
int cpu_rnn_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_rnn_workspace(const struct cpu_node_ctx *c);
int cpu_topk_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_topk_workspace(const struct cpu_node_ctx *c);
int cpu_scatter_elements_run(const struct cpu_node_ctx *c, char **cause);
int cpu_onehot_run(const struct cpu_node_ctx *c, char **cause);
int cpu_groupnorm_run(const struct cpu_node_ctx *c, char **cause);
int cpu_einsum_run(const struct cpu_node_ctx *c, char **cause);
size_t cpu_einsum_workspace(const struct cpu_node_ctx *c);
int cpu_argmax_run(const struct cpu_node_ctx *c, char **cause);
int cpu_tile_run(const struct cpu_node_ctx *c, char **cause);

#endif
