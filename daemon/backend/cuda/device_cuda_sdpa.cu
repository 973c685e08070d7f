/* device_cuda_sdpa.cu: fused attention as one cuDNN graph-API plan (cuDNN's flash-attention fusion), or "unavailable" without cuDNN. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "device_cuda_sdpa.h"
#include "error.h"
#include "log.h"

#ifdef HAVE_CUDNN

#include <cuda_runtime.h>
#include <cudnn.h>

/* Every descriptor a plan is built from (kept until the plan goes), and the engine configs heuristics may return. */
#define SDPA_MAX_DESC 128
#define SDPA_MAX_CFGS 16

/* Unique ids: the variant pack's tensors, then the virtual ones. */
enum { SDPA_ID_Q = 1, SDPA_ID_K, SDPA_ID_V, SDPA_ID_O, SDPA_ID_SCALE, SDPA_ID_BIAS, SDPA_ID_VIRT = 100 };

/* Workspace a plan built in the background may take: its size must be known before the engine is (cuDNN's fused
 * attention engines take none or a few hundred bytes). */
#define SDPA_BACKGROUND_WS ((size_t)1 << 20)
/* Most threads building engines at once (each engine is a runtime compilation of a few hundred ms of CPU). */
#define SDPA_MAX_WORKERS 16

/* Where a core's engine stands. */
enum sdpa_state {
	SDPA_READY = 0,			/* built: runs */
	SDPA_PENDING,			/* on the workers' queue */
	SDPA_BUILDING,			/* being built (by a worker, or by a thread that needed it first) */
	SDPA_FAILED,			/* no engine for it: the plan holding it must be compiled again */
	SDPA_ESTIMATE,			/* a measuring compile's: never built, never run */
};

/* A built plan and what it was built from, shared by the identical attentions of one compile. */
struct sdpa_core {
	cudnnBackendDescriptor_t d[SDPA_MAX_DESC];	/* every descriptor, destroyed last first */
	int nd;
	cudnnBackendDescriptor_t graph, devprop, plan;
	int64_t next_id;
	int64_t ws;
	size_t ws_cap;			/* the engine's workspace is at most this */
	int deferred;			/* not built by its creator: a step reserves ws_cap for it */
	int refs;			/* under sdpa_lock (workers hold one while a build is queued) */
	enum sdpa_state state;		/* under sdpa_lock */
	struct sdpa_core *queued;	/* the next core on the workers' queue */
	int ordinal;
	struct cuda_sdpa_desc key;
};

/* One attention: a shared plan and this node's addresses. */
struct cuda_sdpa {
	struct sdpa_core *core;
	cudnnBackendDescriptor_t pack;
	int has_mask;
	int ready;			/* its core was seen built (set by settle; run checks it) */
	float scale;				/* the variant pack points here: passed by value */
};

/*
 * Engines built in the background: a queue of cores and the detached worker
 * threads draining it (started as work arrives, gone when it is done).
 * Each build is independent cuDNN work on descriptors of its own, made from
 * device properties rather than a handle, which cuDNN allows from any thread.
 */
static pthread_mutex_t sdpa_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sdpa_changed = PTHREAD_COND_INITIALIZER;
static struct sdpa_core *sdpa_head, *sdpa_tail;
static int sdpa_workers;
static int sdpa_building;		/* builds under way, by workers or by threads that needed them */

/* The plans one compile has built (each held by its steps; the scope only finds them). */
struct cuda_sdpa_scope {
	struct sdpa_core **cores;
	size_t n, cap;
};

/* A new descriptor of type t, remembered for destruction. */
static cudnnStatus_t
sdpa_new(struct sdpa_core *s, cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t *out)
{
	cudnnStatus_t st;

	if (s->nd >= SDPA_MAX_DESC)
		return CUDNN_STATUS_INTERNAL_ERROR;
	if ((st = cudnnBackendCreateDescriptor(t, out)) == CUDNN_STATUS_SUCCESS)
		s->d[s->nd++] = *out;
	return st;
}

/* A finalized 4-D tensor (id 0: the next virtual id, FP32 unless dt says otherwise). */
static cudnnStatus_t
sdpa_tensor(struct sdpa_core *s, cudnnBackendDescriptor_t *t, int64_t id, cudnnDataType_t dt, const int64_t *dims,
    const int64_t *strides, int64_t align, bool byval)
{
	bool virt = id == 0;
	int64_t dense[4] = { dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1 };
	cudnnStatus_t st;

	if (virt)
		id = s->next_id++;
	if (strides == NULL)
		strides = dense;
	if ((st = sdpa_new(s, CUDNN_BACKEND_TENSOR_DESCRIPTOR, t)) ||
	    (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt)) ||
	    (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims)) ||
	    (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides)) ||
	    (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id)) ||
	    (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align)) ||
	    (virt && (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt))) ||
	    (byval && (st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byval))))
		return st;
	return cudnnBackendFinalize(*t);
}

/* Operation c = a @ b, FP32 math. */
static cudnnStatus_t
sdpa_matmul(struct sdpa_core *s, cudnnBackendDescriptor_t *op, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
    cudnnBackendDescriptor_t c)
{
	cudnnBackendDescriptor_t mm;
	cudnnDataType_t ct = CUDNN_DATA_FLOAT;
	cudnnStatus_t st;

	if ((st = sdpa_new(s, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &mm)) ||
	    (st = cudnnBackendSetAttribute(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct)) ||
	    (st = cudnnBackendFinalize(mm)) || (st = sdpa_new(s, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, op)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm)))
		return st;
	return cudnnBackendFinalize(*op);
}

/* Operation y = mode(x, b) (b NULL: unary), FP32 math. */
static cudnnStatus_t
sdpa_pointwise(struct sdpa_core *s, cudnnBackendDescriptor_t *op, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
    cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t pw;
	cudnnDataType_t ct = CUDNN_DATA_FLOAT;
	cudnnStatus_t st;

	if ((st = sdpa_new(s, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw)) ||
	    (st = cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)) ||
	    (st = cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &ct)) ||
	    (st = cudnnBackendFinalize(pw)) || (st = sdpa_new(s, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x)) ||
	    (b != NULL && (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b))) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y)))
		return st;
	return cudnnBackendFinalize(*op);
}

/* Operation y = reduce(x) over the last dim, FP32 math. */
static cudnnStatus_t
sdpa_reduce(struct sdpa_core *s, cudnnBackendDescriptor_t *op, cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
    cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t rd;
	cudnnDataType_t ct = CUDNN_DATA_FLOAT;
	cudnnStatus_t st;

	if ((st = sdpa_new(s, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &rd)) ||
	    (st = cudnnBackendSetAttribute(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode)) ||
	    (st = cudnnBackendSetAttribute(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct)) ||
	    (st = cudnnBackendFinalize(rd)) || (st = sdpa_new(s, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, op)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x)) ||
	    (st = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y)))
		return st;
	return cudnnBackendFinalize(*op);
}

/* The in-memory tensors' type (and the probabilities', the second matmul's input). */
static cudnnDataType_t
sdpa_io_type(const struct cuda_sdpa_desc *d)
{
	return d->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

/* The graph's in-memory tensors: Q, K^T (a view of K), V, O, the scale by value and the mask. */
static cudnnStatus_t
sdpa_io(struct sdpa_core *s, const struct cuda_sdpa_desc *d, cudnnBackendDescriptor_t *io)
{
	int64_t qd[4] = { d->b, d->h, d->sq, d->d }, kd[4] = { d->b, d->h, d->d, d->sk };
	int64_t vd[4] = { d->b, d->h, d->sk, d->dv }, od[4] = { d->b, d->h, d->sq, d->dv }, one[4] = { 1, 1, 1, 1 };
	/* K^T over K's memory: dense when K is stored transposed, else D is the innermost dim. */
	int64_t ks[4] = { d->h * d->sk * d->d, d->sk * d->d, d->kt ? d->sk : 1, d->kt ? 1 : d->d };
	/* Seq-major: a head's rows are H rows of the projection apart, the heads one depth apart. */
	int64_t h = d->h, qs[4] = { d->sq * h * d->d, d->d, h * d->d, 1 }, kss[4] = { d->sk * h * d->d, d->d, 1, h * d->d };
	int64_t vs[4] = { d->sk * h * d->dv, d->dv, h * d->dv, 1 }, os[4] = { d->sq * h * d->dv, d->dv, h * d->dv, 1 };
	cudnnDataType_t dt = sdpa_io_type(d);
	int sm = d->seq_major;
	cudnnStatus_t st;

	if ((st = sdpa_tensor(s, &io[0], SDPA_ID_Q, dt, qd, sm ? qs : NULL, d->align, false)) ||
	    (st = sdpa_tensor(s, &io[1], SDPA_ID_K, dt, kd, sm ? kss : ks, d->align, false)) ||
	    (st = sdpa_tensor(s, &io[2], SDPA_ID_V, dt, vd, sm ? vs : NULL, d->align, false)) ||
	    (st = sdpa_tensor(s, &io[3], SDPA_ID_O, dt, od, sm ? os : NULL, d->align, false)) ||
	    (st = sdpa_tensor(s, &io[4], SDPA_ID_SCALE, CUDNN_DATA_FLOAT, one, one, 4, true)))
		return st;
	if (d->has_mask)
		return sdpa_tensor(s, &io[5], SDPA_ID_BIAS, dt, d->mask_dims, NULL, d->align, false);
	return CUDNN_STATUS_SUCCESS;
}

/* The operation graph: S = Q K^T * scale (+ mask), P = exp(S - max) / sum (and the stats), O = P V. */
static cudnnStatus_t
sdpa_graph(struct sdpa_core *s, const struct cuda_sdpa_desc *d)
{
	int64_t sd[4] = { d->b, d->h, d->sq, d->sk }, rd[4] = { d->b, d->h, d->sq, 1 };
	cudnnBackendDescriptor_t io[6], t[10], ops[11];
	cudnnStatus_t st;
	int nops = 0, x = 1;

	if ((st = sdpa_io(s, d, io)) || (st = sdpa_tensor(s, &t[0], 0, CUDNN_DATA_FLOAT, sd, NULL, 16, false)) ||
	    (st = sdpa_matmul(s, &ops[nops++], io[0], io[1], t[0])) ||
	    (st = sdpa_tensor(s, &t[1], 0, CUDNN_DATA_FLOAT, sd, NULL, 16, false)) ||
	    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_MUL, t[0], io[4], t[1])))
		return st;
	if (d->has_mask) {
		if ((st = sdpa_tensor(s, &t[2], 0, CUDNN_DATA_FLOAT, sd, NULL, 16, false)) ||
		    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_ADD, t[1], io[5], t[2])))
			return st;
		x = 2;
	}
	if ((st = sdpa_tensor(s, &t[3], 0, CUDNN_DATA_FLOAT, rd, NULL, 16, false)) ||
	    (st = sdpa_reduce(s, &ops[nops++], CUDNN_REDUCE_TENSOR_MAX, t[x], t[3])) ||
	    (st = sdpa_tensor(s, &t[4], 0, CUDNN_DATA_FLOAT, sd, NULL, 16, false)) ||
	    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_SUB, t[x], t[3], t[4])) ||
	    (st = sdpa_tensor(s, &t[5], 0, CUDNN_DATA_FLOAT, sd, NULL, 16, false)) ||
	    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_EXP, t[4], NULL, t[5])) ||
	    (st = sdpa_tensor(s, &t[6], 0, CUDNN_DATA_FLOAT, rd, NULL, 16, false)) ||
	    (st = sdpa_reduce(s, &ops[nops++], CUDNN_REDUCE_TENSOR_ADD, t[5], t[6])) ||
	    /* The softmax stats, max + log(sum), unused: cuDNN's MHA pattern matcher recognises the graph only with
	     * them (cudnn-frontend always emits them); without them heuristics offer no engine. */
	    (st = sdpa_tensor(s, &t[8], 0, CUDNN_DATA_FLOAT, rd, NULL, 16, false)) ||
	    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_LOG, t[6], NULL, t[8])) ||
	    (st = sdpa_tensor(s, &t[9], 0, CUDNN_DATA_FLOAT, rd, NULL, 16, false)) ||
	    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_ADD, t[3], t[8], t[9])) ||
	    (st = sdpa_tensor(s, &t[7], 0, sdpa_io_type(d), sd, NULL, 16, false)) ||
	    (st = sdpa_pointwise(s, &ops[nops++], CUDNN_POINTWISE_DIV, t[5], t[6], t[7])) ||
	    (st = sdpa_matmul(s, &ops[nops++], t[7], io[2], io[3])) ||
	    (st = sdpa_new(s, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &s->graph)) ||
	    (st = cudnnBackendSetAttribute(s->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops)))
		return st;
	return cudnnBackendFinalize(s->graph);
}

/* The device's properties (the plan is built from them, not from a handle). */
static cudnnStatus_t
sdpa_devprop(struct sdpa_core *s, int ordinal)
{
	int32_t id = ordinal;
	cudnnStatus_t st;

	if ((st = sdpa_new(s, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &s->devprop)) ||
	    (st = cudnnBackendSetAttribute(s->devprop, CUDNN_ATTR_DEVICEPROP_DEVICE_ID, CUDNN_TYPE_INT32, 1, &id)))
		return st;
	return cudnnBackendFinalize(s->devprop);
}

/* Heuristics mode A, then the first engine config whose plan finalizes within ws_cap: 1 with s->plan, else 0. */
static int
sdpa_pick(struct sdpa_core *s, size_t ws_cap, int64_t *ws)
{
	cudnnBackendDescriptor_t heur, cfg[SDPA_MAX_CFGS], plan;
	cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
	int64_t count = 0, got = 0;

	if (sdpa_new(s, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) ||
	    cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &s->graph) ||
	    cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) ||
	    cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &s->devprop) ||
	    cudnnBackendFinalize(heur))
		return 0;
	/* How many configs first (nothing requested), then that many. */
	if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL) ||
	    count <= 0)
		return 0;
	if (count > SDPA_MAX_CFGS)
		count = SDPA_MAX_CFGS;
	for (int64_t i = 0; i < count; i++)
		if (sdpa_new(s, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]))
			return 0;
	if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
	    cfg))
		return 0;
	for (int64_t i = 0; i < count && i < SDPA_MAX_CFGS; i++) {
		if (sdpa_new(s, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan))
			return 0;
		if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		    &cfg[i]) == CUDNN_STATUS_SUCCESS &&
		    cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		    &s->devprop) == CUDNN_STATUS_SUCCESS && cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
		    cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
		    ws) == CUDNN_STATUS_SUCCESS && *ws >= 0 && (size_t)*ws <= ws_cap) {
			s->plan = plan;
			return 1;
		}
	}
	return 0;
}

/* Whether attention is fused for this backend (cuDNN new enough, not turned off). */
int
cuda_sdpa_available(void)
{
	const char *force = getenv("INFERD_CUDA_ATTENTION");

	return cudnnGetVersion() >= CUDA_SDPA_MIN_CUDNN && (force == NULL || strcmp(force, "off") != 0);
}

/* Destroy a core's descriptors once nothing holds it. */
static void
sdpa_core_release(struct sdpa_core *c)
{
	int last;

	if (c == NULL)
		return;
	(void)pthread_mutex_lock(&sdpa_lock);
	last = --c->refs == 0;
	(void)pthread_mutex_unlock(&sdpa_lock);
	if (!last)
		return;
	for (int i = c->nd - 1; i >= 0; i--)
		(void)cudnnBackendDestroyDescriptor(c->d[i]);
	free(c);
}

/* A core for d, nothing built yet (one reference), or NULL when out of memory or d must never be built. */
static struct sdpa_core *
sdpa_core_new(int ordinal, const struct cuda_sdpa_desc *d, size_t ws_cap)
{
	struct sdpa_core *c;
	int64_t sk_stride = d->kt ? 1 : d->seq_major ? d->h * d->d : d->d;

	/* Never a K^T whose Sk dim has stride 1 (K stored [B, H, D, Sk]): cuDNN 9.14 segfaults inside
	 * cudnnBackendGetAttribute(ENGINEHEUR_RESULTS) on such a graph.  The caller gives K with D contiguous. */
	if (sk_stride == 1 && d->d > 1)
		return NULL;
	if ((c = (struct sdpa_core *)calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->next_id = SDPA_ID_VIRT;
	c->refs = 1;
	c->ordinal = ordinal;
	c->key = *d;
	c->ws_cap = ws_cap;
	return c;
}

/* Build c's plan (any status below means this cuDNN cannot take the graph): 1 when built, 0 when not. */
static int
sdpa_core_plan(struct sdpa_core *c)
{
	return sdpa_devprop(c, c->ordinal) == CUDNN_STATUS_SUCCESS && sdpa_graph(c, &c->key) == CUDNN_STATUS_SUCCESS &&
	    sdpa_pick(c, c->ws_cap, &c->ws);
}

/* Build d's plan now: the core (one reference), or NULL when this cuDNN has no engine for it. */
static struct sdpa_core *
sdpa_core_build(int ordinal, const struct cuda_sdpa_desc *d, size_t ws_cap)
{
	struct sdpa_core *c = sdpa_core_new(ordinal, d, ws_cap);

	if (c != NULL && !sdpa_core_plan(c)) {
		sdpa_core_release(c);
		return NULL;
	}
	return c;
}

/* Build c, which this thread took off the queue (sdpa_lock not held); log how long it took beside how many others. */
static int
sdpa_core_plan_timed(struct sdpa_core *c, const char *who)
{
	uint64_t t0 = clock_now_us();
	int ok, beside;

	(void)pthread_mutex_lock(&sdpa_lock);
	beside = sdpa_building++;
	(void)pthread_mutex_unlock(&sdpa_lock);
	/* The runtime binds a thread to device 0 until told otherwise. */
	ok = cudaSetDevice(c->ordinal) == cudaSuccess && sdpa_core_plan(c);
	(void)pthread_mutex_lock(&sdpa_lock);
	sdpa_building--;
	(void)pthread_mutex_unlock(&sdpa_lock);
	LOG_DEBUG("cuda:%d: cuDNN attention engine for [%lld, %lld, %lld, %lld, %lld] %s in %.0f ms by %s, %d other "
	    "builds under way", c->ordinal, (long long)c->key.b, (long long)c->key.h, (long long)c->key.sq,
	    (long long)c->key.sk, (long long)c->key.d, ok ? "built" : "not built (no engine)",
	    (double)(clock_now_us() - t0) / 1e3, who, beside);
	return ok;
}

/* A worker: build queued cores until the queue is empty, then end. */
static void *
sdpa_worker(void *arg)
{
	struct sdpa_core *c;

	(void)arg;
	(void)pthread_mutex_lock(&sdpa_lock);
	while ((c = sdpa_head) != NULL) {
		int ok;

		sdpa_head = c->queued;
		if (sdpa_head == NULL)
			sdpa_tail = NULL;
		c->state = SDPA_BUILDING;
		(void)pthread_mutex_unlock(&sdpa_lock);
		ok = sdpa_core_plan_timed(c, "a worker");
		(void)pthread_mutex_lock(&sdpa_lock);
		c->state = ok ? SDPA_READY : SDPA_FAILED;
		(void)pthread_cond_broadcast(&sdpa_changed);
		(void)pthread_mutex_unlock(&sdpa_lock);
		sdpa_core_release(c);	/* the queue's reference */
		(void)pthread_mutex_lock(&sdpa_lock);
	}
	sdpa_workers--;
	(void)pthread_cond_broadcast(&sdpa_changed);
	(void)pthread_mutex_unlock(&sdpa_lock);
	return NULL;
}

/* How many workers may build at once: the machine's processors, at most SDPA_MAX_WORKERS. */
static int
sdpa_max_workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > SDPA_MAX_WORKERS ? SDPA_MAX_WORKERS : (int)n;
}

/*
 * Queue c's build (it takes a reference) and start a worker if fewer than
 * the most are running; 0, or -1 (c not queued) when no worker runs and none
 * can be started.
 */
static int
sdpa_queue(struct sdpa_core *c)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc = 0;

	(void)pthread_mutex_lock(&sdpa_lock);
	c->state = SDPA_PENDING;
	c->refs++;
	c->queued = NULL;
	if (sdpa_tail != NULL)
		sdpa_tail->queued = c;
	else
		sdpa_head = c;
	sdpa_tail = c;
	if (sdpa_workers < sdpa_max_workers()) {
		if (pthread_attr_init(&attr) == 0) {
			if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
			    pthread_create(&t, &attr, sdpa_worker, NULL) == 0)
				sdpa_workers++;
			(void)pthread_attr_destroy(&attr);
		}
		if (sdpa_workers == 0) {
			/* No worker drains the queue, so c is all it holds: take it back, the caller builds it itself. */
			sdpa_head = sdpa_tail = NULL;
			c->refs--;
			rc = -1;
		}
	}
	(void)pthread_mutex_unlock(&sdpa_lock);
	return rc;
}

/* A core of the scope built for the same shapes within ws_cap (a new reference), or NULL. */
static struct sdpa_core *
sdpa_scope_find(struct cuda_sdpa_scope *sc, int ordinal, const struct cuda_sdpa_desc *d, size_t ws_cap)
{
	for (size_t i = 0; sc != NULL && i < sc->n; i++) {
		struct sdpa_core *c = sc->cores[i];

		/* The scale travels by value in each node's variant pack: it is no part of the plan. */
		if (c->ordinal == ordinal && (size_t)c->ws <= ws_cap && c->key.b == d->b && c->key.h == d->h &&
		    c->key.sq == d->sq && c->key.sk == d->sk && c->key.d == d->d && c->key.dv == d->dv &&
		    c->key.kt == d->kt && c->key.seq_major == d->seq_major && c->key.bf16 == d->bf16 &&
		    c->key.has_mask == d->has_mask && c->key.align == d->align &&
		    memcmp(c->key.mask_dims, d->mask_dims, sizeof d->mask_dims) == 0) {
			(void)pthread_mutex_lock(&sdpa_lock);
			c->refs++;
			(void)pthread_mutex_unlock(&sdpa_lock);
			return c;
		}
	}
	return NULL;
}

/* Remember c in the scope (nothing when out of memory: the next identical attention builds its own). */
static void
sdpa_scope_add(struct cuda_sdpa_scope *sc, struct sdpa_core *c)
{
	if (sc == NULL)
		return;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 8;
		struct sdpa_core **p = (struct sdpa_core **)realloc(sc->cores, cap * sizeof *p);

		if (p == NULL)
			return;
		sc->cores = p;
		sc->cap = cap;
	}
	sc->cores[sc->n++] = c;
	(void)pthread_mutex_lock(&sdpa_lock);
	c->refs++;
	(void)pthread_mutex_unlock(&sdpa_lock);
}

/* A compile's scope (NULL when out of memory: nothing is shared). */
struct cuda_sdpa_scope *
cuda_sdpa_scope_new(void)
{
	return (struct cuda_sdpa_scope *)calloc(1, sizeof(struct cuda_sdpa_scope));
}

/* End a compile's scope: its plans stay with the steps that hold them. */
void
cuda_sdpa_scope_free(struct cuda_sdpa_scope *sc)
{
	if (sc == NULL)
		return;
	for (size_t i = 0; i < sc->n; i++)
		sdpa_core_release(sc->cores[i]);
	free(sc->cores);
	free(sc);
}

/*
 * A core for d as how says, or NULL when this cuDNN has no engine for it:
 * built now, queued for a worker (built now when no worker can start), or
 * left unbuilt for a measuring compile.
 */
static struct sdpa_core *
sdpa_core_for(int ordinal, const struct cuda_sdpa_desc *d, size_t ws_cap, enum cuda_sdpa_how how)
{
	struct sdpa_core *c;

	if (how == CUDA_SDPA_NOW)
		return sdpa_core_build(ordinal, d, ws_cap);
	if ((c = sdpa_core_new(ordinal, d, ws_cap < SDPA_BACKGROUND_WS ? ws_cap : SDPA_BACKGROUND_WS)) == NULL)
		return NULL;
	c->deferred = 1;
	if (how == CUDA_SDPA_ESTIMATE) {
		c->state = SDPA_ESTIMATE;
		c->ws = (int64_t)c->ws_cap;
	} else if (sdpa_queue(c) != 0 && !sdpa_core_plan(c)) {
		sdpa_core_release(c);
		return NULL;
	}
	return c;
}

/* Plan d (or take the scope's plan for the same shapes): 1 with *out and *ws_bytes, 0 when cuDNN cannot. */
int
cuda_sdpa_build(int ordinal, const struct cuda_sdpa_desc *d, struct cuda_sdpa_scope *scope, size_t ws_cap,
    enum cuda_sdpa_how how, struct cuda_sdpa **out, size_t *ws_bytes, char **cause)
{
	struct cuda_sdpa *s;
	struct sdpa_core *c;

	*out = NULL;
	if (cudnnGetVersion() < CUDA_SDPA_MIN_CUDNN)
		return 0;
	if ((s = (struct cuda_sdpa *)calloc(1, sizeof *s)) == NULL)
		return error_set(cause, "out of memory for a cuDNN attention plan");
	if ((c = sdpa_scope_find(scope, ordinal, d, ws_cap)) == NULL) {
		if ((c = sdpa_core_for(ordinal, d, ws_cap, how)) == NULL) {
			free(s);
			return 0;
		}
		sdpa_scope_add(scope, c);
	}
	s->core = c;
	s->has_mask = d->has_mask;
	s->scale = d->scale;
	/* A queued build's workspace is its cap: the engine it finds will fit in it. */
	*ws_bytes = c->deferred ? c->ws_cap : (size_t)c->ws;
	*out = s;
	return 1;
}

/* Take c off the workers' queue (it is on it; sdpa_lock held). */
static void
sdpa_unqueue(struct sdpa_core *c)
{
	struct sdpa_core *prev = NULL, *q;

	for (q = sdpa_head; q != NULL && q != c; q = q->queued)
		prev = q;
	if (q == NULL)
		return;
	if (prev != NULL)
		prev->queued = c->queued;
	else
		sdpa_head = c->queued;
	if (sdpa_tail == c)
		sdpa_tail = prev;
}

/*
 * Wait for s's engine: 0 when built (or a measuring compile's, never run), 1
 * when cuDNN had none for it.  A build still queued is taken off the queue
 * and done here: whoever needs it first does not wait behind the others.
 */
int
cuda_sdpa_settle(struct cuda_sdpa *s)
{
	struct sdpa_core *c = s->core;
	enum sdpa_state st;

	(void)pthread_mutex_lock(&sdpa_lock);
	if (c->state == SDPA_PENDING) {
		int ok;

		sdpa_unqueue(c);
		c->state = SDPA_BUILDING;
		(void)pthread_mutex_unlock(&sdpa_lock);
		ok = sdpa_core_plan_timed(c, "the thread needing it first");
		(void)pthread_mutex_lock(&sdpa_lock);
		c->state = ok ? SDPA_READY : SDPA_FAILED;
		c->refs--;		/* the queue's reference; never the last: s holds one */
		(void)pthread_cond_broadcast(&sdpa_changed);
	}
	while (c->state == SDPA_BUILDING)
		(void)pthread_cond_wait(&sdpa_changed, &sdpa_lock);
	st = c->state;
	(void)pthread_mutex_unlock(&sdpa_lock);
	s->ready = st == SDPA_READY;
	return st == SDPA_FAILED;
}

/* Drop every queued build (their plans compile again if ever settled) and wait for the running ones. */
void
cuda_sdpa_quiesce(void)
{
	struct sdpa_core *c, *next;

	(void)pthread_mutex_lock(&sdpa_lock);
	c = sdpa_head;
	sdpa_head = sdpa_tail = NULL;
	for (next = c; next != NULL; next = next->queued)
		next->state = SDPA_FAILED;
	(void)pthread_cond_broadcast(&sdpa_changed);
	while (sdpa_workers > 0)
		(void)pthread_cond_wait(&sdpa_changed, &sdpa_lock);
	(void)pthread_mutex_unlock(&sdpa_lock);
	for (; c != NULL; c = next) {
		next = c->queued;
		sdpa_core_release(c);	/* the queue's reference */
	}
}

/* Fix the addresses the plan reads and writes (once, at plan compile). */
int
cuda_sdpa_bind(struct cuda_sdpa *s, const void *q, const void *k, const void *v, const void *mask, void *o,
    void *ws, char **cause)
{
	int64_t ids[6] = { SDPA_ID_Q, SDPA_ID_K, SDPA_ID_V, SDPA_ID_O, SDPA_ID_SCALE, SDPA_ID_BIAS };
	void *ptrs[6] = { (void *)q, (void *)k, (void *)v, o, &s->scale, (void *)mask };
	int64_t n = s->has_mask ? 6 : 5;
	cudnnStatus_t st;

	if (s->pack != NULL)
		return error_set(cause, "cuDNN attention plan bound twice");
	if ((st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &s->pack)) ||
	    (st = cudnnBackendSetAttribute(s->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, ids)) ||
	    (st = cudnnBackendSetAttribute(s->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs)) ||
	    (st = cudnnBackendSetAttribute(s->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws)) ||
	    (st = cudnnBackendFinalize(s->pack)))
		return error_set(cause, "cuDNN attention variant pack: %s", cudnnGetErrorString(st));
	return 0;
}

/* Queue the attention on the handle's stream. */
int
cuda_sdpa_run(const struct cuda_sdpa *s, void *handle, char **cause)
{
	cudnnStatus_t st;

	if (s->pack == NULL)
		return error_set(cause, "cuDNN attention plan run before its addresses were bound");
	if (!s->ready && (cuda_sdpa_settle((struct cuda_sdpa *)s) != 0 || !s->ready))
		return error_set(cause, "cuDNN found no attention engine for this plan in the background: compile it again");
	if ((st = cudnnBackendExecute((cudnnHandle_t)handle, s->core->plan, s->pack)) != CUDNN_STATUS_SUCCESS)
		return error_set(cause, "cudnnBackendExecute (attention): %s", cudnnGetErrorString(st));
	return 0;
}

/* Drop this attention's variant pack and its hold on the plan. */
void
cuda_sdpa_free(struct cuda_sdpa *s)
{
	if (s == NULL)
		return;
	if (s->pack != NULL)
		(void)cudnnBackendDestroyDescriptor(s->pack);
	sdpa_core_release(s->core);
	free(s);
}

#else

/* Without cuDNN attention stays unfused. */
int
cuda_sdpa_available(void)
{
	return 0;
}

/* Without cuDNN nothing is shared. */
struct cuda_sdpa_scope *
cuda_sdpa_scope_new(void)
{
	return NULL;
}

/* Nothing to free without cuDNN. */
void
cuda_sdpa_scope_free(struct cuda_sdpa_scope *sc)
{
	(void)sc;
}

/* Without cuDNN no plan is ever built: the caller runs the attention another way. */
int
cuda_sdpa_build(int ordinal, const struct cuda_sdpa_desc *d, struct cuda_sdpa_scope *scope, size_t ws_cap,
    enum cuda_sdpa_how how, struct cuda_sdpa **out, size_t *ws_bytes, char **cause)
{
	(void)ordinal; (void)d; (void)scope; (void)ws_cap; (void)how; (void)ws_bytes; (void)cause;
	*out = NULL;
	return 0;
}

/* Never reached without a plan. */
int
cuda_sdpa_settle(struct cuda_sdpa *s)
{
	(void)s;
	return 0;
}

/* No builds without cuDNN. */
void
cuda_sdpa_quiesce(void)
{
}

/* Never reached without a plan. */
int
cuda_sdpa_bind(struct cuda_sdpa *s, const void *q, const void *k, const void *v, const void *mask, void *o,
    void *ws, char **cause)
{
	(void)s; (void)q; (void)k; (void)v; (void)mask; (void)o; (void)ws;
	return error_set(cause, "cuDNN attention without cuDNN");
}

/* Never reached without a plan. */
int
cuda_sdpa_run(const struct cuda_sdpa *s, void *handle, char **cause)
{
	(void)s; (void)handle;
	return error_set(cause, "cuDNN attention without cuDNN");
}

/* Nothing to free without cuDNN. */
void
cuda_sdpa_free(struct cuda_sdpa *s)
{
	(void)s;
}

#endif
