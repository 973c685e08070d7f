/* device_cuda_dnn.cu: cuDNN convolutions for the CUDA backend: plans shared within a compile, pooled across compiles, fused-epilogue refusals remembered, bound and run; "unavailable" without cuDNN. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "device_cuda_dnn.h"
#include "device_cuda_impl.h"
#include "error.h"
#include "log.h"

#ifdef HAVE_CUDNN

#include <cuda_runtime.h>
#include <cudnn.h>
#include <pthread.h>

#include "device_cuda_dnn_kcache.h"
#include "device_cuda_dnn_plan.h"

/*
 * The plans one device plan's compile has used, each held once by the
 * scope, so that identical convolutions of the same compile share one plan.
 * A compiled device plan runs on one stream from one thread at a time, so
 * its convolutions execute a shared plan one after another, never at once:
 * cuDNN's execution plans are not safe to execute from several threads at
 * once, which is why plans are never shared between compiles.
 */
struct cuda_dnn_scope {
	struct dnn_plan **plans;
	size_t n, cap;
};

/* One convolution's plan (its own while it lives) and the addresses bound to it. */
struct cuda_dnn_conv {
	struct dnn_plan *pl;
	cudnnBackendDescriptor_t pack;
};

/*
 * The plan pool.  Building a plan (heuristics, then finalizing engines
 * until one fits) is the slow part of compiling a convolution, and cuDNN
 * keeps host and device memory from every plan it builds and destroys
 * (measured on an H100: about 50 KB of RSS a plan, and 2 MiB of device
 * memory per load of the Fashion CNN, whose load holds 1,024 plans), so a
 * daemon that reloads models would grow without bound.  A freed plan
 * therefore waits here, idle, and the next convolution with the same key
 * takes it instead of building: reloading a model, and compiling after
 * measuring, build nothing.  A plan serves one compile at a time (see
 * struct cuda_dnn_scope; two instances of a model on one device each get
 * their own), so it never runs on two streams at once.  At most INFERD_CUDA_DNN_PLAN_POOL idle
 * plans (default DNN_POOL_DEFAULT; 0: none) are kept; a plan freed into a
 * full pool is destroyed.
 */
#define DNN_POOL_DEFAULT 4096

static pthread_mutex_t dnn_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dnn_plan *dnn_pool;	/* idle plans, most recently freed first */
static size_t dnn_pool_count;
static long dnn_pool_cap = -1;		/* read from the environment at first use */

/* The canonical key of d on device ordinal (dims past the rank and windows past nspatial are zero). */
static void
dnn_key_of(int ordinal, const struct cuda_dnn_conv_desc *d, struct dnn_key *k)
{
	memset(k, 0, sizeof *k);
	k->ordinal = ordinal;
	k->transpose = d->transpose != 0;
	k->nspatial = d->nspatial;
	k->tf32 = d->tf32 != 0;
	k->dt = (int)d->dt;
	k->has_bias = d->has_bias != 0;
	k->has_z = d->has_z != 0;
	k->relu = d->relu != 0;
	k->align = d->align;
	k->epi_align = d->has_bias || d->has_z ? d->epi_align : 0;
	for (int i = 0; i < d->nspatial + 2 && i < 5; i++) {
		k->x[i] = d->x[i];
		k->w[i] = d->w[i];
		k->y[i] = d->y[i];
	}
	for (int i = 0; i < d->nspatial && i < 3; i++) {
		k->stride[i] = d->stride[i];
		k->dilation[i] = d->dilation[i];
		k->pad_begin[i] = d->pad_begin[i];
		k->pad_end[i] = d->pad_end[i];
	}
}

/* Destroy a plan and everything it was built from. */
static void
dnn_plan_destroy(struct dnn_plan *pl)
{
	cudnnBackendDescriptor_t all[] = { pl->plan, pl->cfg, pl->devprop };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i] != NULL)
			(void)cudnnBackendDestroyDescriptor(all[i]);
	free(pl);
}

/* The pool's limit: INFERD_CUDA_DNN_PLAN_POOL when it is a count, else the default (called locked). */
static size_t
dnn_pool_limit(void)
{
	if (dnn_pool_cap < 0) {
		const char *e = getenv("INFERD_CUDA_DNN_PLAN_POOL");
		char *end;
		long v = e != NULL ? strtol(e, &end, 10) : -1;

		dnn_pool_cap = e != NULL && *e != '\0' && *end == '\0' && v >= 0 ? v : DNN_POOL_DEFAULT;
	}
	return (size_t)dnn_pool_cap;
}

/*
 * Whether pl is what a fresh build for key k under workspace cap `cap` would
 * pick.  Heuristics rank engines the same way for the same key, and a build
 * takes the first strict engine whose workspace fits: a plan picked under a
 * cap at least as large, whose workspace fits this cap, is that engine
 * (every engine ranked before it was refused under the larger cap already).
 */
static int
dnn_plan_fits(const struct dnn_plan *pl, const struct dnn_key *k, size_t cap)
{
	return memcmp(&pl->key, k, sizeof *k) == 0 && pl->cap >= cap && (size_t)pl->ws <= cap;
}

/* An idle plan that fits key k under cap, taken out of the pool; NULL when none. */
static struct dnn_plan *
dnn_pool_take(const struct dnn_key *k, size_t cap)
{
	struct dnn_plan **pp, *pl = NULL;

	if (pthread_mutex_lock(&dnn_pool_lock) != 0)
		return NULL;
	for (pp = &dnn_pool; *pp != NULL; pp = &(*pp)->next)
		if (dnn_plan_fits(*pp, k, cap)) {
			pl = *pp;
			*pp = pl->next;
			pl->next = NULL;
			dnn_pool_count--;
			break;
		}
	(void)pthread_mutex_unlock(&dnn_pool_lock);
	return pl;
}

/* Take one more reference to pl. */
static void
dnn_plan_hold(struct dnn_plan *pl)
{
	(void)pthread_mutex_lock(&dnn_pool_lock);
	pl->refs++;
	(void)pthread_mutex_unlock(&dnn_pool_lock);
}

/* Drop a reference; the last one puts the plan in the pool, or destroys it when the pool is full. */
static void
dnn_plan_release(struct dnn_plan *pl)
{
	int keep = 1;

	if (pthread_mutex_lock(&dnn_pool_lock) != 0)
		return;		/* cannot happen with a default mutex; leaking beats a race */
	if (--pl->refs == 0) {
		keep = dnn_pool_count < dnn_pool_limit();
		if (keep) {
			pl->next = dnn_pool;
			dnn_pool = pl;
			dnn_pool_count++;
		}
	}
	(void)pthread_mutex_unlock(&dnn_pool_lock);
	if (!keep)
		dnn_plan_destroy(pl);
}

/* An empty scope; NULL when out of memory (the compile then shares nothing). */
struct cuda_dnn_scope *
cuda_dnn_scope_new(void)
{
	return (struct cuda_dnn_scope *)calloc(1, sizeof(struct cuda_dnn_scope));
}

/* Drop the scope's references (its plans stay with the convolutions that use them). */
void
cuda_dnn_scope_free(struct cuda_dnn_scope *sc)
{
	if (sc == NULL)
		return;
	for (size_t i = 0; i < sc->n; i++)
		dnn_plan_release(sc->plans[i]);
	free(sc->plans);
	free(sc);
}

/* A plan of the scope that fits key k under cap, held; NULL when none. */
static struct dnn_plan *
dnn_scope_find(struct cuda_dnn_scope *sc, const struct dnn_key *k, size_t cap)
{
	for (size_t i = 0; sc != NULL && i < sc->n; i++) {
		struct dnn_plan *pl = sc->plans[i];

		if (dnn_plan_fits(pl, k, cap)) {
			dnn_plan_hold(pl);
			return pl;
		}
	}
	return NULL;
}

/* Let the rest of the compile share pl (the scope holds it); without memory it just is not shared. */
static void
dnn_scope_add(struct cuda_dnn_scope *sc, struct dnn_plan *pl)
{
	if (sc == NULL)
		return;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 16;
		struct dnn_plan **p = (struct dnn_plan **)realloc(sc->plans, cap * sizeof *p);

		if (p == NULL)
			return;
		sc->plans = p;
		sc->cap = cap;
	}
	dnn_plan_hold(pl);
	sc->plans[sc->n++] = pl;
}

/* Destroy the idle plans of device ordinal (its context is going away). */
void
cuda_dnn_pool_drain(int ordinal)
{
	struct dnn_plan **pp, *gone = NULL;

	if (pthread_mutex_lock(&dnn_pool_lock) != 0)
		return;
	for (pp = &dnn_pool; *pp != NULL;) {
		struct dnn_plan *pl = *pp;

		if (pl->key.ordinal != ordinal) {
			pp = &pl->next;
			continue;
		}
		*pp = pl->next;
		dnn_pool_count--;
		pl->next = gone;
		gone = pl;
	}
	(void)pthread_mutex_unlock(&dnn_pool_lock);
	while (gone != NULL) {
		struct dnn_plan *next = gone->next;

		dnn_plan_destroy(gone);
		gone = next;
	}
	cuda_dnn_kcache_drain(ordinal);
}

/* How many idle plans the pool holds (for /metrics and the tests). */
size_t
cuda_dnn_pool_size(void)
{
	size_t n = 0;

	if (pthread_mutex_lock(&dnn_pool_lock) == 0) {
		n = dnn_pool_count;
		(void)pthread_mutex_unlock(&dnn_pool_lock);
	}
	return n;
}

/*
 * Geometries whose fused graph no engine took.  A refusal costs a search of
 * its own (on an H200 with cuDNN 9.14, ResNet-50's bias-only projection
 * convolutions: 50-80 ms each, against 4 ms for a fused plan that is taken),
 * and engines support a fusion for a geometry or not whatever its batch, so
 * once refused at one batch size the other sizes plan unfused at once.
 * Were one size to have taken it, that size runs its epilogue as a kernel of
 * its own: the same answer, a little slower.
 */
#define DNN_REFUSED_MAX 256
static struct dnn_key dnn_refused[DNN_REFUSED_MAX];
static size_t dnn_nrefused;

/* k without its batch (every other field as it is). */
static struct dnn_key
dnn_key_unbatched(const struct dnn_key *k)
{
	struct dnn_key u = *k;

	u.x[0] = 0;
	u.y[0] = 0;
	return u;
}

/* 1 when k's geometry had its fused graph refused before. */
static int
dnn_fused_refused(const struct dnn_key *k)
{
	struct dnn_key u = dnn_key_unbatched(k);
	int found = 0;

	(void)pthread_mutex_lock(&dnn_pool_lock);
	for (size_t i = 0; i < dnn_nrefused && !found; i++)
		found = memcmp(&dnn_refused[i], &u, sizeof u) == 0;
	(void)pthread_mutex_unlock(&dnn_pool_lock);
	return found;
}

/* Remember that k's fused graph was refused (the first DNN_REFUSED_MAX geometries; the rest search again). */
static void
dnn_fused_refuse(const struct dnn_key *k)
{
	struct dnn_key u = dnn_key_unbatched(k);

	(void)pthread_mutex_lock(&dnn_pool_lock);
	if (dnn_nrefused < DNN_REFUSED_MAX)
		dnn_refused[dnn_nrefused++] = u;
	(void)pthread_mutex_unlock(&dnn_pool_lock);
}

/*
 * Engines searched per geometry, tried first by nearby batch sizes.  A search
 * (heuristics, then finalizing configs until a strict one fits) costs 3-4 ms
 * a plan on an H200 with cuDNN 9.14, finalizing one named engine 1-2 ms, and
 * a load plans every convolution at up to 12 batch sizes (MobileNetV2: 720
 * plans, 2.7 s).  A size within a factor of DNN_SIBLING_RATIO of a size that
 * was searched first tries that search's engine (checked as a search checks
 * its pick); sizes further apart, where the heuristics' pick differs most
 * (small against large implicit-GEMM M), search, and only searched picks are
 * offered, so a choice never drifts along a chain of sizes.
 * INFERD_CUDA_CONV_SIBLINGS=0 searches every size.
 */
#define DNN_SIBLING_MAX 512
#define DNN_SIBLING_RATIO 2
struct dnn_sibling {
	struct dnn_key geom;		/* without its batch */
	size_t cap;
	int64_t batch;
	struct dnn_choice ch;
};
static struct dnn_sibling dnn_siblings[DNN_SIBLING_MAX];
static size_t dnn_nsiblings;

/* Whether nearby batch sizes reuse a search's engine (INFERD_CUDA_CONV_SIBLINGS, default on). */
static int
dnn_siblings_on(void)
{
	const char *v = getenv("INFERD_CUDA_CONV_SIBLINGS");

	return v == NULL || strcmp(v, "0") != 0;
}

/* The searched engine for k's geometry and cap at the batch size nearest k's within the ratio: 1 with *ch. */
static int
dnn_sibling_find(const struct dnn_key *k, size_t cap, struct dnn_choice *ch)
{
	struct dnn_key u = dnn_key_unbatched(k);
	int64_t n = k->x[0], best = 0;

	(void)pthread_mutex_lock(&dnn_pool_lock);
	for (size_t i = 0; i < dnn_nsiblings; i++) {
		const struct dnn_sibling *s = &dnn_siblings[i];
		int64_t b = s->batch, lo = b < n ? b : n, hi = b < n ? n : b;

		if (s->cap != cap || hi > lo * DNN_SIBLING_RATIO || memcmp(&s->geom, &u, sizeof u) != 0)
			continue;
		if (best == 0 || hi - lo < (best > n ? best - n : n - best)) {
			best = b;
			*ch = s->ch;
		}
	}
	(void)pthread_mutex_unlock(&dnn_pool_lock);
	return best != 0;
}

/* Remember the engine a search picked for pl (the first DNN_SIBLING_MAX searches; the rest are not offered). */
static void
dnn_sibling_note(const struct dnn_key *k, size_t cap, const struct dnn_plan *pl)
{
	struct dnn_sibling s;

	memset(&s, 0, sizeof s);
	if (cuda_dnn_plan_choice(pl, &s.ch) != 0)
		return;
	s.geom = dnn_key_unbatched(k);
	s.cap = cap;
	s.batch = k->x[0];
	(void)pthread_mutex_lock(&dnn_pool_lock);
	if (dnn_nsiblings < DNN_SIBLING_MAX)
		dnn_siblings[dnn_nsiblings++] = s;
	(void)pthread_mutex_unlock(&dnn_pool_lock);
}

/* A debug line for each plan built (how a load's time splits among its convolutions). */
static void
dnn_log_build(const struct cuda_dnn_conv_desc *d, const struct dnn_plan *pl, const char *how, uint64_t t0)
{
	LOG_DEBUG("cuDNN convolution plan for x [%lld, %lld, %lld, %lld] w [%lld, %lld, %lld, %lld] %s: %s%s in %.1f ms "
	    "(workspace %lld bytes)", (long long)d->x[0], (long long)d->x[1], (long long)d->x[2], (long long)d->x[3],
	    (long long)d->w[0], (long long)d->w[1], (long long)d->w[2], (long long)d->w[3], how,
	    pl == NULL ? "no engine" : pl->fused ? "fused epilogue" : "plain",
	    pl != NULL && pl->generic ? ", shape-generic kernel" : "", (double)(clock_now_us() - t0) / 1e3,
	    pl == NULL ? 0LL : (long long)pl->ws);
}

/* Build a new plan for d (fused when an engine takes the epilogue), from the compile cache's choice when it has one; NULL when cuDNN cannot. */
static struct dnn_plan *
dnn_plan_build(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k,
    size_t cap)
{
	struct dnn_plan *pl = (struct dnn_plan *)calloc(1, sizeof *pl);
	uint64_t t0 = clock_now_us();
	struct dnn_choice ch;
	int rc = 0, fusable;

	if (pl == NULL)
		return NULL;
	pl->key = *k;
	pl->cap = cap;
	if (cache != NULL && (rc = cuda_dnn_plan_cached(ordinal, cache, d, k, cap, pl)) != 0) {
		dnn_log_build(d, rc > 0 ? pl : NULL, "from the compile cache", t0);
		if (rc > 0)
			return pl;
		free(pl);
		return NULL;
	}
	if (dnn_siblings_on() && dnn_sibling_find(k, cap, &ch) && cuda_dnn_plan_try(ordinal, d, k, &ch, pl)) {
		dnn_log_build(d, pl, "with a nearby batch size's engine", t0);
		if (cache != NULL)
			cuda_dnn_plan_store(cache, k, cap, pl);
		return pl;
	}
	memset(pl, 0, sizeof *pl);
	pl->key = *k;
	pl->cap = cap;
	fusable = cuda_dnn_plan_fusable(d) && !dnn_fused_refused(k);
	if (fusable && cuda_dnn_plan_search(ordinal, d, k, pl, 1)) {
		pl->fused = 1;
		pl->has_bias = d->has_bias != 0;
		pl->has_z = d->has_z != 0;
	} else {
		if (fusable)
			dnn_fused_refuse(k);
		if (!cuda_dnn_plan_search(ordinal, d, k, pl, 0)) {
			dnn_log_build(d, NULL, "searched", t0);
			free(pl);
			if (cache != NULL)
				cuda_dnn_plan_store(cache, k, cap, NULL);
			return NULL;
		}
	}
	dnn_log_build(d, pl, "searched", t0);
	dnn_sibling_note(k, cap, pl);
	if (cache != NULL)
		cuda_dnn_plan_store(cache, k, cap, pl);
	return pl;
}

/* Build a strict-fp32 plan for the convolution, with its epilogue fused when an engine takes it; 0 when cuDNN cannot. */
int
cuda_dnn_conv_build(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d,
    struct cuda_dnn_scope *scope, struct cuda_dnn_conv **out, size_t *ws_bytes, char **cause)
{
	size_t cap = d->ws_cap < CUDA_DNN_WS_CAP ? d->ws_cap : CUDA_DNN_WS_CAP;
	struct cuda_dnn_conv *c;
	struct dnn_key k;

	*out = NULL;
	if ((c = (struct cuda_dnn_conv *)calloc(1, sizeof *c)) == NULL)
		return error_set(cause, "out of memory");
	dnn_key_of(ordinal, d, &k);
	if ((c->pl = dnn_scope_find(scope, &k, cap)) == NULL) {
		if ((c->pl = dnn_pool_take(&k, cap)) == NULL && (c->pl = dnn_plan_build(ordinal, cache, d, &k, cap)) == NULL) {
			free(c);
			return 0;
		}
		c->pl->refs = 1;	/* not in the pool any more, nobody else's yet: no lock needed */
		dnn_scope_add(scope, c->pl);
	}
	*ws_bytes = (size_t)c->pl->ws;
	*out = c;
	return 1;
}

/* 1 when the plan runs the bias, residual and ReLU epilogue itself. */
int
cuda_dnn_conv_fused(const struct cuda_dnn_conv *c)
{
	return c != NULL && c->pl->fused;
}

/* Fix the tensors' and workspace's addresses in a variant pack (bias and z when the fused graph reads them). */
int
cuda_dnn_conv_bind(struct cuda_dnn_conv *c, const void *x, const void *w, const void *b, const void *z, void *y,
    void *ws, char **cause)
{
	void *ptrs[5] = { (void *)x, (void *)w, y };
	int64_t ids[5] = { DNN_ID_X, DNN_ID_W, DNN_ID_Y }, n = 3;
	cudnnStatus_t s;

	if ((c->pl->has_bias && b == NULL) || (c->pl->has_z && z == NULL))
		return error_set(cause, "the fused cuDNN convolution needs its %s address", b == NULL ? "bias" : "residual");
	if (c->pl->has_bias) {
		ptrs[n] = (void *)b;
		ids[n++] = DNN_ID_B;
	}
	if (c->pl->has_z) {
		ptrs[n] = (void *)z;
		ids[n++] = DNN_ID_Z;
	}
	if (c->pack != NULL) {
		(void)cudnnBackendDestroyDescriptor(c->pack);
		c->pack = NULL;
	}
	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &c->pack)) ||
	    (s = cudnnBackendSetAttribute(c->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs)) ||
	    (s = cudnnBackendSetAttribute(c->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, ids)) ||
	    (s = cudnnBackendSetAttribute(c->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws)) ||
	    (s = cudnnBackendFinalize(c->pack)))
		return cuda_dnn_fail(cause, s, "cuDNN variant pack");
	return 0;
}

/* Queue the convolution on the handle's stream. */
int
cuda_dnn_conv_run(const struct cuda_dnn_conv *c, void *handle, char **cause)
{
	cudnnStatus_t s = cudnnBackendExecute((cudnnHandle_t)handle, c->pl->plan, c->pack);

	return s == CUDNN_STATUS_SUCCESS ? 0 : cuda_dnn_fail(cause, s, "cudnnBackendExecute(convolution)");
}

/* Destroy the variant pack; the plan goes back to the pool once no convolution or scope holds it. */
void
cuda_dnn_conv_free(struct cuda_dnn_conv *c)
{
	if (c == NULL)
		return;
	if (c->pack != NULL)
		(void)cudnnBackendDestroyDescriptor(c->pack);
	dnn_plan_release(c->pl);
	free(c);
}

/* cuDNN's version. */
size_t
cuda_dnn_version(void)
{
	return cudnnGetVersion();
}

/* A cuDNN handle that queues on stream. */
int
cuda_dnn_handle_create(void *stream, void **out, char **cause)
{
	cudnnHandle_t h;
	cudnnStatus_t s;

	*out = NULL;
	CUDA_QUIETLY(s = cudnnCreate(&h));
	if (s != CUDNN_STATUS_SUCCESS)
		return cuda_dnn_fail(cause, s, "cudnnCreate");
	if ((s = cudnnSetStream(h, (cudaStream_t)stream)) != CUDNN_STATUS_SUCCESS) {
		CUDA_QUIETLY((void)cudnnDestroy(h));
		return cuda_dnn_fail(cause, s, "cudnnSetStream");
	}
	*out = (void *)h;
	return 0;
}

/* Destroy a handle (NULL is ignored). */
void
cuda_dnn_handle_destroy(void *handle)
{
	if (handle != NULL)
		CUDA_QUIETLY((void)cudnnDestroy((cudnnHandle_t)handle));
}

#else /* !HAVE_CUDNN */

/* Without cuDNN no plan is ever built: convolutions use im2col. */
int
cuda_dnn_conv_build(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d,
    struct cuda_dnn_scope *scope, struct cuda_dnn_conv **out, size_t *ws_bytes, char **cause)
{
	*out = NULL;
	*ws_bytes = 0;
	return 0;
}

/* Without a plan nothing is fused. */
int
cuda_dnn_conv_fused(const struct cuda_dnn_conv *c)
{
	return 0;
}

/* Never called without a plan. */
int
cuda_dnn_conv_bind(struct cuda_dnn_conv *c, const void *x, const void *w, const void *b, const void *z, void *y,
    void *ws, char **cause)
{
	return error_set(cause, "built without cuDNN");
}

/* Never called without a plan. */
int
cuda_dnn_conv_run(const struct cuda_dnn_conv *c, void *handle, char **cause)
{
	return error_set(cause, "built without cuDNN");
}

/* Nothing to free. */
void
cuda_dnn_conv_free(struct cuda_dnn_conv *c)
{
}

/* No scope without cuDNN. */
struct cuda_dnn_scope *
cuda_dnn_scope_new(void)
{
	return NULL;
}

/* Nothing to free. */
void
cuda_dnn_scope_free(struct cuda_dnn_scope *sc)
{
}

/* No pool without cuDNN. */
void
cuda_dnn_pool_drain(int ordinal)
{
}

/* No pool without cuDNN. */
size_t
cuda_dnn_pool_size(void)
{
	return 0;
}

/* No cuDNN: version 0. */
size_t
cuda_dnn_version(void)
{
	return 0;
}

/* No handle without cuDNN. */
int
cuda_dnn_handle_create(void *stream, void **out, char **cause)
{
	*out = NULL;
	return 0;
}

/* Nothing to destroy. */
void
cuda_dnn_handle_destroy(void *handle)
{
}

#endif
