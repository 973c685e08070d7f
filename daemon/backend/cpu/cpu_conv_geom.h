/* cpu_conv_geom.h: the window geometry Conv, ConvTranspose and pools share, always as 3 spatial dims. */
#ifndef INFERD_CPU_CONV_GEOM_H
#define INFERD_CPU_CONV_GEOM_H

#include "cpu_kernels_impl.h"

/*
 * Contract.  A window op over 1 to 3 spatial dims is described as 3-D with
 * the missing leading spatial dims of size 1 (kernel 1, stride 1, no pad), so
 * one set of loops serves all ranks and the innermost dim stays innermost.
 * cpu_window_init checks the input and output shapes against the attributes.
 */
struct cpu_window {
	int64_t n, c, m;		/* batch, input channels, output channels */
	int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
	int64_t in_sz, out_sz, k_sz;	/* products over the 3 dims */
};

/*
 * Fill w from attribute a, the input shape xs ([N, C, spatial...]) and the
 * output shape ys ([N, M, spatial...]), with kernel dims ks (NULL: from a).
 * transpose: output size is ConvTranspose's.  -1 when the shapes disagree.
 */
int cpu_window_init(struct cpu_window *w, const struct graph_window_attr *a, const struct graph_shape *xs,
    const struct graph_shape *ys, const int64_t *ks, int transpose, char **cause);

/*
 * The geometry of Conv node c (transpose 0: weight [M, C/group, k...]) or
 * ConvTranspose node c (1: weight [C, M/group, k...]) and its input and
 * output channels per group (*cg, *mg), with the weight, the bias ([M]) and a
 * fused residual (the output's shape) checked.  -1 with *cause otherwise.
 */
int cpu_conv_node_geom(const struct cpu_node_ctx *c, int transpose, struct cpu_window *w, int64_t *cg,
    int64_t *mg, char **cause);

/* The geometry of Pool node c (a global pool as a window over every spatial dim), checked; -1 with *cause. */
int cpu_pool_node_geom(const struct cpu_node_ctx *c, struct cpu_window *w, char **cause);

#endif
