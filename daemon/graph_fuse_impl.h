/* graph_fuse_impl.h: the fusion passes' shared state and helpers (private to graph_fuse*.c). */
#ifndef INFERD_GRAPH_FUSE_IMPL_H
#define INFERD_GRAPH_FUSE_IMPL_H

#include <stddef.h>

#include "graph.h"

/*
 * One fusion run.  producer[t] is the live node writing tensor t (-1 for
 * inputs, constants and orphans); uses[t] counts live nodes' input slots
 * reading t.  probe[0..1] hold every tensor's shape under two probe input
 * shapes, or are NULL when shape inference failed.
 */
struct fuse_ctx {
	graph_t *g;
	char *dead;		/* per node */
	int *producer, *uses;	/* per tensor */
	struct graph_shape *probe[2];
	size_t cap;		/* allocated entries of the per-tensor arrays */
	int rewrites;
	/* Whether the backend runs node n (ops only some backends have form only where it does); NULL: all. */
	int (*supports)(void *arg, const graph_t *g, const struct graph_node *n);
	void *supports_arg;
};

#define FUSE_MAX_PATTERN 12

/* Whether tensor t is a constant FP32 tensor with host data. */
int fuse_is_const_f32(const struct fuse_ctx *c, int t);
/* Elements of constant t (its byte length over 4). */
size_t fuse_const_elems(const struct fuse_ctx *c, int t);
/*
 * Whether t is a one-element FP32 constant that broadcasting against x
 * cannot reshape (rank 0, or a rank not above x's in both probes); its value
 * goes to *v.
 */
int fuse_scalar(const struct fuse_ctx *c, int t, int x, double *v);
/* Whether |a - b| <= 1e-5 |b|. */
int fuse_close(double a, double b);
/* Whether t is read by exactly one live node and is not a graph output. */
int fuse_single_use(const struct fuse_ctx *c, int t);
/* The one live node reading t (fuse_single_use must hold), or -1. */
int fuse_consumer(const struct fuse_ctx *c, int t);
/* Live nodes reading t, at most max of them (distinct); their count, or max + 1 when more. */
int fuse_consumers(const struct fuse_ctx *c, int t, int *out, int max);
/* The live producer of t when it is a BINARY node of function fn, else -1. */
int fuse_producer_binary(const struct fuse_ctx *c, int t, enum graph_binary fn);
/* Whether node n is BINARY fn with no fused act. */
int fuse_is_binary(const struct fuse_ctx *c, int n, enum graph_binary fn);
/* For a binary node n with one input equal to t, the other input; else -1. */
int fuse_other_input(const struct fuse_ctx *c, int n, int t);
/* Whether the probes exist and tensors a and b have the same shape in both. */
int fuse_same_shape(const struct fuse_ctx *c, int a, int b);
/* Rank of t in probe p, or -1 when probes are missing. */
int fuse_probe_rank(const struct fuse_ctx *c, int p, int t);

/* Remove node n: its input uses drop, its outputs lose their producer. */
void fuse_kill(struct fuse_ctx *c, int n);
/*
 * Move node head into the slot of node tail (tail is removed first), and
 * make it write tail's first output: head's own output becomes an orphan.
 */
void fuse_replace(struct fuse_ctx *c, int head, int tail);
/* Turn node n into op with these inputs (act and attributes cleared); -1 on no memory. */
int fuse_rebuild(struct fuse_ctx *c, int n, enum graph_op op, const int *inputs, int nin, char **cause);
/* Set input slot i of node n to t (growing the input list with -1s); -1 on no memory. */
int fuse_set_input(struct fuse_ctx *c, int n, int i, int t, char **cause);
/* Append an owned FP32 constant of the given shape taking data; its index or -1. */
int fuse_add_const(struct fuse_ctx *c, const char *base, const char *suffix,
    int ndims, const int64_t *dims, float *data, char **cause);

/* The passes; each returns -1 with *cause only when memory runs out. */
int fuse_pass_noop(struct fuse_ctx *c, char **cause);
int fuse_pass_gelu(struct fuse_ctx *c, char **cause);
int fuse_pass_hardswish(struct fuse_ctx *c, char **cause);
int fuse_pass_layernorm(struct fuse_ctx *c, char **cause);
int fuse_pass_batchnorm(struct fuse_ctx *c, char **cause);
int fuse_pass_bias(struct fuse_ctx *c, char **cause);
int fuse_pass_residual(struct fuse_ctx *c, char **cause);
int fuse_pass_residual_norm(struct fuse_ctx *c, char **cause);
int fuse_pass_act(struct fuse_ctx *c, char **cause);
int fuse_pass_attention(struct fuse_ctx *c, char **cause);

#endif
