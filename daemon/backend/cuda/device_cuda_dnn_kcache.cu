/* device_cuda_dnn_kcache.cu: the process-wide table of cuDNN kernel caches, one per convolution geometry without its batch, so a runtime-compiled kernel is compiled once and bound by every batch size's plan. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "device_cuda_dnn_kcache.h"

#ifdef HAVE_CUDNN

#include <pthread.h>

/* One geometry's kernel cache and the engine choice its first plan compiled. */
struct dnn_kcache {
	struct dnn_key key;		/* batch dims 0 */
	int fused;
	pthread_mutex_t lock;		/* held across a whole plan (see the contract) */
	cudnnBackendDescriptor_t kc;	/* NULL until the first plan attaches */
	int has_choice;
	struct dnn_choice choice;
	struct dnn_kcache *next;
};

static pthread_mutex_t kcache_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dnn_kcache *kcache_table;

/* INFERD_CUDA_CONV_RTC: NULL or "0" (precompiled first, the default), "generic" (shape-generic) or "1" (a kernel per shape). */
static const char *
kcache_mode(void)
{
	return getenv("INFERD_CUDA_CONV_RTC");
}

/* Whether d is a grouped forward convolution (cuDNN's heuristics rank runtime-compiled engines first for these). */
static int
kcache_grouped(const struct cuda_dnn_conv_desc *d)
{
	return !d->transpose && d->w[1] != d->x[1];
}

/* Whether d is planned shape-generic with a kernel cache (see the contract). */
int
cuda_dnn_kcache_wanted(const struct cuda_dnn_conv_desc *d)
{
	const char *m = kcache_mode();

	return kcache_grouped(d) && m != NULL && strcmp(m, "generic") == 0 && cudnnGetVersion() >= DNN_KCACHE_MIN_CUDNN;
}

/*
 * Whether a grouped convolution takes precompiled engines first: by default,
 * and when the shape-generic build is unavailable or refused (a per-shape
 * runtime compilation at every batch size is what made a MobileNetV2 load
 * take 46 s at fp16).  "1" keeps the heuristics' order.
 */
int
cuda_dnn_kcache_precompiled_first(const struct cuda_dnn_conv_desc *d)
{
	const char *m = kcache_mode();

	return kcache_grouped(d) && !(m != NULL && strcmp(m, "1") == 0);
}

/* The entry for k (batch dims cleared) and fused, created on first use; NULL when out of memory. */
struct dnn_kcache *
cuda_dnn_kcache_get(const struct dnn_key *k, int fused)
{
	struct dnn_key g = *k;
	struct dnn_kcache *e;

	g.x[0] = 0;
	g.y[0] = 0;
	if (pthread_mutex_lock(&kcache_table_lock) != 0)
		return NULL;
	for (e = kcache_table; e != NULL; e = e->next)
		if (e->fused == fused && memcmp(&e->key, &g, sizeof g) == 0)
			break;
	if (e == NULL && (e = (struct dnn_kcache *)calloc(1, sizeof *e)) != NULL) {
		if (pthread_mutex_init(&e->lock, NULL) != 0) {
			free(e);
			e = NULL;
		} else {
			e->key = g;
			e->fused = fused;
			e->next = kcache_table;
			kcache_table = e;
		}
	}
	(void)pthread_mutex_unlock(&kcache_table_lock);
	return e;
}

/* Hold e for one plan: 0, or -1 when the lock fails (the caller plans without the kernel cache). */
int
cuda_dnn_kcache_lock(struct dnn_kcache *e)
{
	return pthread_mutex_lock(&e->lock) == 0 ? 0 : -1;
}

void
cuda_dnn_kcache_unlock(struct dnn_kcache *e)
{
	(void)pthread_mutex_unlock(&e->lock);
}

/* Make e's kernel cache for graph (the first dynamic-shape graph of this geometry); cuDNN's status. */
static cudnnStatus_t
kcache_make(struct dnn_kcache *e, cudnnBackendDescriptor_t graph)
{
	cudnnBackendDescriptor_t kc = NULL;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR, &kc)) != CUDNN_STATUS_SUCCESS)
		return s;
	if ((s = cudnnBackendSetAttribute(kc, CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
	    &graph)) || (s = cudnnBackendFinalize(kc))) {
		(void)cudnnBackendDestroyDescriptor(kc);
		return s;
	}
	e->kc = kc;
	return CUDNN_STATUS_SUCCESS;
}

/* Give plan (not yet finalized) e's kernel cache, made for graph on first use; the caller holds e's lock. */
cudnnStatus_t
cuda_dnn_kcache_attach(struct dnn_kcache *e, cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t plan)
{
	cudnnStatus_t s;

	if (e->kc == NULL && (s = kcache_make(e, graph)) != CUDNN_STATUS_SUCCESS)
		return s;
	return cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
	    &e->kc);
}

/* The engine choice e's first compiled plan used, or NULL; the caller holds e's lock. */
const struct dnn_choice *
cuda_dnn_kcache_choice(const struct dnn_kcache *e)
{
	return e->has_choice ? &e->choice : NULL;
}

/* Remember ch as the engine whose kernel e holds; the caller holds e's lock. */
void
cuda_dnn_kcache_chose(struct dnn_kcache *e, const struct dnn_choice *ch)
{
	e->choice = *ch;
	e->has_choice = 1;
}

/* Destroy device ordinal's entries: their plans were destroyed before (device close drains the plan pool first). */
void
cuda_dnn_kcache_drain(int ordinal)
{
	struct dnn_kcache **pp, *gone = NULL;

	if (pthread_mutex_lock(&kcache_table_lock) != 0)
		return;
	for (pp = &kcache_table; *pp != NULL;) {
		struct dnn_kcache *e = *pp;

		if (e->key.ordinal != ordinal) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = gone;
		gone = e;
	}
	(void)pthread_mutex_unlock(&kcache_table_lock);
	while (gone != NULL) {
		struct dnn_kcache *e = gone;

		gone = e->next;
		if (e->kc != NULL)
			(void)cudnnBackendDestroyDescriptor(e->kc);
		(void)pthread_mutex_destroy(&e->lock);
		free(e);
	}
}

#endif
