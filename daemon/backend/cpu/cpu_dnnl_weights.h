/* cpu_dnnl_weights.h: constant weights reordered once into a oneDNN primitive's layout, shared by every plan of a device. */
#ifndef INFERD_CPU_DNNL_WEIGHTS_H
#define INFERD_CPU_DNNL_WEIGHTS_H

#include <dnnl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Weights in a primitive's layout, shared by every plan wanting that layout of those bytes. */
struct dnnl_weights {
	struct dnnl_weights *next;
	const void *src;		/* the tensor's bytes */
	uint64_t hash;			/* of those bytes: an address reused by other weights never matches */
	dnnl_memory_desc_t md;		/* the layout */
	void *buf;
	dnnl_memory_t mem;
	int refs;
};

/* The weights of one engine: the caller inits and destroys lock, head starts NULL. */
struct cpu_dnnl_wcache {
	pthread_mutex_t lock;		/* guards head */
	struct dnnl_weights *head;
};

/*
 * Find or make (reordering on stream s) the weights of bytes src (n of
 * them, layout user) in layout md; a reference in *out; -1 with *cause.
 */
int cpu_dnnl_weights_get(struct cpu_dnnl_wcache *c, dnnl_engine_t eng, dnnl_stream_t s, const dnnl_memory_desc_t *user,
    const void *src, size_t n, const dnnl_memory_desc_t *md, struct dnnl_weights **out, char **cause);
/* Drop one reference to w, freeing it with the last. */
void cpu_dnnl_weights_unref(struct cpu_dnnl_wcache *c, struct dnnl_weights *w);

#endif
