/* cpu_dnnl_weights.c: constant weights reordered once into a oneDNN primitive's layout, shared by every plan of a device. */
#include "config.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "cpu_dnnl_weights.h"
#include "error.h"

/* Alignment of buffers oneDNN reads with vector loads. */
#define DNNL_BUF_ALIGN 64

/* 0, or -1 with *cause naming the oneDNN call and its status. */
static int
dnnl_check(dnnl_status_t st, const char *what, char **cause)
{
	if (st == dnnl_success)
		return 0;
	return error_set(cause, "oneDNN %s: %s", what, dnnl_status2str(st));
}

/* A fast 64-bit hash of n bytes (n a multiple of 4). */
static uint64_t
dnnl_hash(const void *p, size_t n)
{
	const uint32_t *u = p;
	uint64_t h = 0xcbf29ce484222325ull ^ n;

	for (size_t i = 0; i < n / 4; i++)
		h = (h ^ u[i]) * 0x100000001b3ull;
	return h;
}

/* Reorder the weights at src (layout user) into w's buffer (layout w->md). */
static int
dnnl_weights_reorder(dnnl_engine_t eng, dnnl_stream_t s, const dnnl_memory_desc_t *user, const void *src,
    struct dnnl_weights *w, char **cause)
{
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_primitive_t r = NULL;
	dnnl_memory_t from = NULL;
	dnnl_exec_arg_t args[2];
	int rc = -1;

	if (dnnl_check(dnnl_memory_create(&from, user, eng, (void *)src), "memory_create", cause) != 0 ||
	    dnnl_check(dnnl_reorder_primitive_desc_create(&rpd, user, eng, &w->md, eng, NULL),
	    "reorder of the weights", cause) != 0 ||
	    dnnl_check(dnnl_primitive_create(&r, rpd), "primitive_create (reorder)", cause) != 0)
		goto out;
	args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, from };
	args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, w->mem };
	if (dnnl_check(dnnl_primitive_execute(r, s, 2, args), "reorder", cause) == 0 &&
	    dnnl_check(dnnl_stream_wait(s), "stream_wait", cause) == 0)
		rc = 0;
out:
	if (r != NULL)
		dnnl_primitive_destroy(r);
	if (rpd != NULL)
		dnnl_primitive_desc_destroy(rpd);
	if (from != NULL)
		dnnl_memory_destroy(from);
	return rc;
}

/* Drop one reference to w (lock held), freeing it with the last. */
static void
dnnl_weights_unref_locked(struct cpu_dnnl_wcache *c, struct dnnl_weights *w)
{
	struct dnnl_weights **pp;

	if (--w->refs > 0)
		return;
	for (pp = &c->head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	dnnl_memory_destroy(w->mem);
	free(w->buf);
	free(w);
}

/* Find or make the weights of bytes src (n of them, layout user) in layout md; a reference in *out. */
int
cpu_dnnl_weights_get(struct cpu_dnnl_wcache *c, dnnl_engine_t eng, dnnl_stream_t s, const dnnl_memory_desc_t *user,
    const void *src, size_t n, const dnnl_memory_desc_t *md, struct dnnl_weights **out, char **cause)
{
	uint64_t h = dnnl_hash(src, n);
	size_t size = dnnl_memory_desc_get_size(md);
	struct dnnl_weights *w;
	int rc = -1;

	pthread_mutex_lock(&c->lock);
	for (w = c->head; w != NULL; w = w->next)
		if (w->src == src && w->hash == h && dnnl_memory_desc_equal(&w->md, md))
			break;
	if (w != NULL) {
		w->refs++;
		*out = w;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if ((w = xcalloc(1, sizeof *w)) == NULL ||
	    (w->buf = aligned_alloc(DNNL_BUF_ALIGN, (size + DNNL_BUF_ALIGN - 1) / DNNL_BUF_ALIGN * DNNL_BUF_ALIGN)) == NULL) {
		free(w);
		pthread_mutex_unlock(&c->lock);
		return error_set(cause, "out of memory for %zu bytes of reordered weights", size);
	}
	w->src = src;
	w->hash = h;
	w->md = *md;
	w->refs = 1;
	w->next = c->head;
	c->head = w;
	if (dnnl_check(dnnl_memory_create(&w->mem, md, eng, w->buf), "memory_create", cause) == 0 &&
	    dnnl_weights_reorder(eng, s, user, src, w, cause) == 0) {
		*out = w;
		rc = 0;
	} else {
		dnnl_weights_unref_locked(c, w);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Drop one reference to w. */
void
cpu_dnnl_weights_unref(struct cpu_dnnl_wcache *c, struct dnnl_weights *w)
{
	pthread_mutex_lock(&c->lock);
	dnnl_weights_unref_locked(c, w);
	pthread_mutex_unlock(&c->lock);
}
