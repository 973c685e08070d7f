/* device_cuda_dnn_plan.cu: building one cuDNN convolution plan: the operation graph (fused epilogue or plain), heuristics, the first strict engine that fits, and the compile cache's record of the choice. */
#include "config.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda_dnn_kcache.h"
#include "device_cuda_dnn_plan.h"
#include "device_cuda_impl.h"
#include "error.h"

#ifdef HAVE_CUDNN

#include <cuda_runtime.h>

/* Engines tried from the heuristics' list, and the largest workspace one may ask for. */
#define DNN_MAX_CFGS 32

/* The most pointwise operations a fused epilogue chains (bias add, residual add, ReLU). */
#define DNN_MAX_PW 3


/* "what: cuDNN's message" in *cause. */
int
cuda_dnn_fail(char **cause, cudnnStatus_t st, const char *what)
{
	return error_set(cause, "%s: %s", what, cudnnGetErrorString(st));
}

/* A finalized tensor descriptor of nd dims (dense row-major strides) of type dt at align bytes; virt: never in memory. */
static cudnnStatus_t
dnn_tensor_as(cudnnBackendDescriptor_t *t, int nd, const int64_t *dims, int64_t id, cudnnDataType_t dt, int64_t align,
    bool virt)
{
	int64_t st[5], acc = 1;
	cudnnStatus_t s;

	for (int d = nd - 1; d >= 0; d--) {
		st[d] = acc;
		acc *= dims[d];
	}
	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t)) != CUDNN_STATUS_SUCCESS)
		return s;
	if ((s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt)) ||
	    (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims)) ||
	    (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, st)) ||
	    (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id)) ||
	    (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align)) ||
	    (virt && (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt))))
		return s;
	return cudnnBackendFinalize(*t);
}

/* cuDNN's name of a convolution's storage dtype (FP32, FP16, bfloat16). */
static cudnnDataType_t
dnn_data_type(enum graph_dtype dt)
{
	return dt == GRAPH_DT_F16 ? CUDNN_DATA_HALF : dt == CUDA_DT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* A finalized in-memory tensor of nd dims, stored as d->dt at d's alignment (FP32: 4). */
static cudnnStatus_t
dnn_tensor(cudnnBackendDescriptor_t *t, int nd, const int64_t *dims, int64_t id, const struct cuda_dnn_conv_desc *d)
{
	return dnn_tensor_as(t, nd, dims, id, dnn_data_type(d->dt), cuda_dt_reduced(d->dt) ? d->align : 4, false);
}

/* The convolution descriptor: fp32 compute, cross-correlation, the window of n spatial dims. */
static cudnnStatus_t
dnn_conv_desc(cudnnBackendDescriptor_t *c, int n, const int64_t *stride, const int64_t *dil, const int64_t *pre,
    const int64_t *post)
{
	cudnnDataType_t dt = CUDNN_DATA_FLOAT;
	cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
	int64_t nn = n;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, c)) != CUDNN_STATUS_SUCCESS)
		return s;
	if ((s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt)) ||
	    (s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)) ||
	    (s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nn)) ||
	    (s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, n, dil)) ||
	    (s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, n, stride)) ||
	    (s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, n, pre)) ||
	    (s = cudnnBackendSetAttribute(*c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, n, post)))
		return s;
	return cudnnBackendFinalize(*c);
}

/* Descriptors a build creates, destroyed together. */
struct dnn_parts {
	cudnnBackendDescriptor_t x, w, y, conv, op, graph, heur, devprop;
	cudnnBackendDescriptor_t b, z;			/* a fused epilogue's bias and residual */
	cudnnBackendDescriptor_t v[DNN_MAX_PW];		/* its virtual FP32 intermediates (v[0]: the conv's output) */
	cudnnBackendDescriptor_t pw[DNN_MAX_PW], pwop[DNN_MAX_PW];	/* its pointwise descriptors and operations */
	cudnnBackendDescriptor_t cfg[DNN_MAX_CFGS];
	struct dnn_kcache *kc;		/* not NULL: a shape-generic build with this kernel cache (its lock held) */
};





/* Destroy every descriptor a build created and clear the parts for another build. */
static void
dnn_parts_free(struct dnn_parts *p)
{
	cudnnBackendDescriptor_t all[] = { p->x, p->w, p->y, p->conv, p->op, p->graph, p->heur, p->devprop, p->b, p->z };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i] != NULL)
			(void)cudnnBackendDestroyDescriptor(all[i]);
	for (int i = 0; i < DNN_MAX_PW; i++) {
		cudnnBackendDescriptor_t pi[] = { p->v[i], p->pw[i], p->pwop[i] };
		for (size_t j = 0; j < sizeof pi / sizeof pi[0]; j++)
			if (pi[j] != NULL)
				(void)cudnnBackendDestroyDescriptor(pi[j]);
	}
	for (int i = 0; i < DNN_MAX_CFGS; i++)
		if (p->cfg[i] != NULL)
			(void)cudnnBackendDestroyDescriptor(p->cfg[i]);
	memset(p, 0, sizeof *p);
}

/* Shapes with a 1-D window lifted to 2-D (cuDNN takes 4-D and 5-D tensors). */
static int
dnn_lift(const struct cuda_dnn_conv_desc *d, int64_t *x, int64_t *w, int64_t *y, int64_t *st, int64_t *dil,
    int64_t *pre, int64_t *post)
{
	int lift = d->nspatial == 1, n = lift ? 2 : d->nspatial;

	for (int i = 0; i < 2; i++) {
		x[i] = d->x[i];
		w[i] = d->w[i];
		y[i] = d->y[i];
	}
	for (int i = 0; i < n; i++) {
		int s = i - lift;
		x[2 + i] = s < 0 ? 1 : d->x[2 + s];
		w[2 + i] = s < 0 ? 1 : d->w[2 + s];
		y[2 + i] = s < 0 ? 1 : d->y[2 + s];
		st[i] = s < 0 ? 1 : d->stride[s];
		dil[i] = s < 0 ? 1 : d->dilation[s];
		pre[i] = s < 0 ? 0 : d->pad_begin[s];
		post[i] = s < 0 ? 0 : d->pad_end[s];
	}
	return n;
}

/* The forward convolution x (*) w into the tensor y (the real y, or the fused graph's virtual output). */
static cudnnStatus_t
dnn_op_fwd(struct dnn_parts *p, cudnnBackendDescriptor_t y)
{
	float alpha = 1.0f, beta = 0.0f;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &p->op)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->x)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->w)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->conv)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta)))
		return s;
	return cudnnBackendFinalize(p->op);
}

/* ConvTranspose(x) = the data gradient of a convolution whose output has x's shape. */
static cudnnStatus_t
dnn_op_bwd(struct dnn_parts *p)
{
	float alpha = 1.0f, beta = 0.0f;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, &p->op)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->x)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->w)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->y)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->conv)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)) ||
	    (s = cudnnBackendSetAttribute(p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta)))
		return s;
	return cudnnBackendFinalize(p->op);
}

/* The finalized operation graph of ops[0 .. nops), marked dynamic-shape for a shape-generic build. */
static cudnnStatus_t
dnn_graph_of(struct dnn_parts *p, cudnnBackendDescriptor_t *ops, int64_t nops)
{
	bool dynamic = true;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &p->graph)) ||
	    (s = cudnnBackendSetAttribute(p->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops)) ||
	    (p->kc != NULL && (s = cudnnBackendSetAttribute(p->graph, CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED,
	    CUDNN_TYPE_BOOLEAN, 1, &dynamic))))
		return s;
	return cudnnBackendFinalize(p->graph);
}

/* The operation (forward, or backward data for a transpose) and its one-op graph. */
static cudnnStatus_t
dnn_graph(const struct cuda_dnn_conv_desc *d, struct dnn_parts *p)
{
	int64_t x[5], w[5], y[5], st[3], dil[3], pre[3], post[3];
	int n = dnn_lift(d, x, w, y, st, dil, pre, post);
	cudnnStatus_t s;

	if ((s = dnn_tensor(&p->x, n + 2, x, DNN_ID_X, d)) || (s = dnn_tensor(&p->w, n + 2, w, DNN_ID_W, d)) ||
	    (s = dnn_tensor(&p->y, n + 2, y, DNN_ID_Y, d)) || (s = dnn_conv_desc(&p->conv, n, st, dil, pre, post)) ||
	    (s = d->transpose ? dnn_op_bwd(p) : dnn_op_fwd(p, p->y)))
		return s;
	return dnn_graph_of(p, &p->op, 1);
}

/* Pointwise operation i: out = mode(in, b) (b NULL for a unary mode), computed in FP32. */
static cudnnStatus_t
dnn_pointwise(struct dnn_parts *p, int i, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t in,
    cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t out)
{
	cudnnDataType_t prec = CUDNN_DATA_FLOAT;
	/* ReLU is max(v, 0): clipped below at 0, above at FP32's largest value (FP32 math cannot hold the default). */
	double lo = 0.0, hi = FLT_MAX;
	int relu = mode == CUDNN_POINTWISE_RELU_FWD;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &p->pw[i])) ||
	    (s = cudnnBackendSetAttribute(p->pw[i], CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)) ||
	    (s = cudnnBackendSetAttribute(p->pw[i], CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec)) ||
	    (relu && (s = cudnnBackendSetAttribute(p->pw[i], CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &lo))) ||
	    (relu && (s = cudnnBackendSetAttribute(p->pw[i], CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1, &hi))) ||
	    (s = cudnnBackendFinalize(p->pw[i])))
		return s;
	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &p->pwop[i])) ||
	    (s = cudnnBackendSetAttribute(p->pwop[i], CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->pw[i])) ||
	    (s = cudnnBackendSetAttribute(p->pwop[i], CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &in)) ||
	    (b != NULL && (s = cudnnBackendSetAttribute(p->pwop[i], CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b))) ||
	    (s = cudnnBackendSetAttribute(p->pwop[i], CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out)))
		return s;
	return cudnnBackendFinalize(p->pwop[i]);
}

/*
 * The fused graph's tensors: x, w, y, bias [1, M, 1...] and residual like y
 * at the alignment their addresses really keep (d->align, d->epi_align), and
 * k virtual FP32 intermediates like y (no memory: any alignment holds).
 */
static cudnnStatus_t
dnn_fused_tensors(const struct cuda_dnn_conv_desc *d, struct dnn_parts *p, int nd, const int64_t *x, const int64_t *w,
    const int64_t *y, int k)
{
	cudnnDataType_t dt = dnn_data_type(d->dt);
	int64_t bdims[5];
	cudnnStatus_t s;

	for (int i = 0; i < nd; i++)
		bdims[i] = i == 1 ? y[1] : 1;
	if ((s = dnn_tensor_as(&p->x, nd, x, DNN_ID_X, dt, d->align, false)) ||
	    (s = dnn_tensor_as(&p->w, nd, w, DNN_ID_W, dt, d->align, false)) ||
	    (s = dnn_tensor_as(&p->y, nd, y, DNN_ID_Y, dt, d->align, false)))
		return s;
	if (d->has_bias && (s = dnn_tensor_as(&p->b, nd, bdims, DNN_ID_B, dt, d->epi_align, false)))
		return s;
	if (d->has_z && (s = dnn_tensor_as(&p->z, nd, y, DNN_ID_Z, dt, d->epi_align, false)))
		return s;
	for (int i = 0; i < k; i++)
		if ((s = dnn_tensor_as(&p->v[i], nd, y, DNN_ID_V + i, CUDNN_DATA_FLOAT, 16, true)))
			return s;
	return CUDNN_STATUS_SUCCESS;
}

/* The fused graph: conv into v[0], then + bias, + z, ReLU as a chain of pointwise ops, the last one writing y. */
static cudnnStatus_t
dnn_graph_fused(const struct cuda_dnn_conv_desc *d, struct dnn_parts *p)
{
	int64_t x[5], w[5], y[5], st[3], dil[3], pre[3], post[3];
	int n = dnn_lift(d, x, w, y, st, dil, pre, post), k = !!d->has_bias + !!d->has_z + !!d->relu, i = 0;
	cudnnBackendDescriptor_t ops[1 + DNN_MAX_PW];
	cudnnStatus_t s;

	if ((s = dnn_fused_tensors(d, p, n + 2, x, w, y, k)) || (s = dnn_conv_desc(&p->conv, n, st, dil, pre, post)) ||
	    (s = dnn_op_fwd(p, p->v[0])))
		return s;
	/* Op i reads v[i] and writes v[i + 1], the last one y. */
	if (d->has_bias && (s = dnn_pointwise(p, i, CUDNN_POINTWISE_ADD, p->v[i], p->b, i + 1 < k ? p->v[i + 1] : p->y)))
		return s;
	i += !!d->has_bias;
	if (d->has_z && (s = dnn_pointwise(p, i, CUDNN_POINTWISE_ADD, p->v[i], p->z, i + 1 < k ? p->v[i + 1] : p->y)))
		return s;
	i += !!d->has_z;
	if (d->relu && (s = dnn_pointwise(p, i, CUDNN_POINTWISE_RELU_FWD, p->v[i], NULL, p->y)))
		return s;
	ops[0] = p->op;
	for (i = 0; i < k; i++)
		ops[1 + i] = p->pwop[i];
	return dnn_graph_of(p, ops, 1 + k);
}

/* The device's properties (plans are built from them, not from a handle). */
static cudnnStatus_t
dnn_devprop(int ordinal, struct dnn_parts *p)
{
	int32_t id = ordinal;
	cudnnStatus_t s;

	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &p->devprop)) ||
	    (s = cudnnBackendSetAttribute(p->devprop, CUDNN_ATTR_DEVICEPROP_DEVICE_ID, CUDNN_TYPE_INT32, 1, &id)))
		return s;
	return cudnnBackendFinalize(p->devprop);
}

/* Heuristics' engine configs, best first (mode A, then the fallback list); *count of them. */
static cudnnStatus_t
dnn_heuristics(struct dnn_parts *p, cudnnBackendHeurMode_t mode, int64_t *count)
{
	cudnnStatus_t s;

	if (p->heur != NULL) {
		(void)cudnnBackendDestroyDescriptor(p->heur);
		p->heur = NULL;
	}
	for (int i = 0; i < DNN_MAX_CFGS; i++)
		if (p->cfg[i] == NULL && (s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &p->cfg[i])))
			return s;
	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &p->heur)) ||
	    (s = cudnnBackendSetAttribute(p->heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->graph)) ||
	    (s = cudnnBackendSetAttribute(p->heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)) ||
	    (s = cudnnBackendSetAttribute(p->heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->devprop)) ||
	    (s = cudnnBackendFinalize(p->heur)))
		return s;
	return cudnnBackendGetAttribute(p->heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
	    DNN_MAX_CFGS, count, p->cfg);
}

/* The notes (attr, of type t, at most cap) of the config's engine into notes: how many, or -1 when cuDNN does not tell. */
static int64_t
dnn_cfg_notes(cudnnBackendDescriptor_t cfg, cudnnBackendAttributeName_t attr, cudnnBackendAttributeType_t t,
    int64_t cap, void *notes)
{
	cudnnBackendDescriptor_t eng = NULL;
	int64_t n = -1, got = 0;

	if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
		return -1;
	if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
	    &eng) != CUDNN_STATUS_SUCCESS || got != 1 ||
	    cudnnBackendGetAttribute(eng, attr, t, cap, &n, notes) != CUDNN_STATUS_SUCCESS)
		n = -1;
	(void)cudnnBackendDestroyDescriptor(eng);
	return n < cap ? n : cap;
}

/* 1 when the config's engine computes in strict fp32 (no TF32 unless tf32, no down-conversion, FFT or Winograd). */
static int
dnn_cfg_strict(cudnnBackendDescriptor_t cfg, int tf32)
{
	cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
	int64_t n = dnn_cfg_notes(cfg, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
	    CUDNN_NUMERICAL_NOTE_TYPE_COUNT, notes);

	for (int64_t i = 0; i < n; i++)
		if (notes[i] != CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && notes[i] != CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP &&
		    !(tf32 && notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
			return 0;
	return n >= 0;
}

/* 1 when the config's engine compiles its kernel when finalized (NVRTC: a fraction of a second each time). */
static int
dnn_cfg_compiles(cudnnBackendDescriptor_t cfg)
{
	cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
	int64_t n = dnn_cfg_notes(cfg, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
	    CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, notes);

	for (int64_t i = 0; i < n; i++)
		if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)
			return 1;
	return 0;
}

/*
 * An execution plan from the first strict engine config that finalizes
 * within the workspace cap: its index, or -1.  precompiled: only engines
 * that need no runtime compilation.
 */
static int
dnn_pick_plan(struct dnn_parts *p, int64_t count, struct dnn_plan *c, int tf32, size_t ws_cap, int precompiled)
{
	int64_t got = 0, cap = (int64_t)(ws_cap < CUDA_DNN_WS_CAP ? ws_cap : CUDA_DNN_WS_CAP);

	for (int64_t i = 0; i < count && i < DNN_MAX_CFGS; i++) {
		if (!dnn_cfg_strict(p->cfg[i], tf32) || (precompiled && dnn_cfg_compiles(p->cfg[i])))
			continue;
		if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &c->plan) != CUDNN_STATUS_SUCCESS)
			return -1;
		if (cudnnBackendSetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
		    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->cfg[i]) == CUDNN_STATUS_SUCCESS &&
		    cudnnBackendSetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
		    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->devprop) == CUDNN_STATUS_SUCCESS &&
		    (p->kc == NULL || cuda_dnn_kcache_attach(p->kc, p->graph, c->plan) == CUDNN_STATUS_SUCCESS) &&
		    cudnnBackendFinalize(c->plan) == CUDNN_STATUS_SUCCESS &&
		    cudnnBackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
		    &c->ws) == CUDNN_STATUS_SUCCESS && c->ws >= 0 && c->ws <= cap)
			return (int)i;
		(void)cudnnBackendDestroyDescriptor(c->plan);
		c->plan = NULL;
	}
	return -1;
}

/* Hand the picked config (pick >= 0) and the device properties over to c, free the rest; 1 when one was picked. */
static int
dnn_keep(struct dnn_parts *p, struct dnn_plan *c, int pick)
{
	if (pick >= 0) {
		c->cfg = p->cfg[pick];
		c->devprop = p->devprop;
		p->cfg[pick] = NULL;
		p->devprop = NULL;
	}
	dnn_parts_free(p);
	return pick >= 0;
}

/* The compile cache's key of a convolution: a tag naming this layout, the pool's key without the ordinal, the cap. */
struct dnn_cache_key {
	char tag[8];
	struct dnn_key key;
	uint64_t cap;
};

/* The cache key of key k under workspace cap `cap` (zeroed first: its padding is part of the bytes compared). */
static void
dnn_cache_key_of(const struct dnn_key *k, size_t cap, struct dnn_cache_key *ck)
{
	memset(ck, 0, sizeof *ck);
	memcpy(ck->tag, "dnnconv2", 8);
	ck->key = *k;
	ck->key.ordinal = 0;
	ck->cap = cap;
}

/* Destroy n descriptors (NULL ones are skipped). */
static void
dnn_destroy_all(cudnnBackendDescriptor_t *d, int n)
{
	for (int i = 0; i < n; i++)
		if (d[i] != NULL)
			(void)cudnnBackendDestroyDescriptor(d[i]);
}

/* The engine and knob choices of cfg (built fused, dynamic: shape-generic) into ch; 0, or -1 when cuDNN does not tell them. */
static int
dnn_choice_of(cudnnBackendDescriptor_t cfg, int fused, int dynamic, struct dnn_choice *ch)
{
	cudnnBackendDescriptor_t eng = NULL, knobs[DNN_MAX_KNOBS];
	int64_t got = 0, n = 0;
	int rc = -1;

	memset(ch, 0, sizeof *ch);
	memset(knobs, 0, sizeof knobs);
	ch->fused = fused;
	ch->dynamic = dynamic;
	if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
		return -1;
	for (int i = 0; i < DNN_MAX_KNOBS; i++)
		if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]) != CUDNN_STATUS_SUCCESS)
			goto out;
	if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &eng) ||
	    got != 1 || cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got,
	    &ch->engine) || cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
	    CUDNN_TYPE_BACKEND_DESCRIPTOR, DNN_MAX_KNOBS, &n, knobs) || n < 0 || n > DNN_MAX_KNOBS)
		goto out;
	for (int64_t i = 0; i < n; i++) {
		cudnnBackendKnobType_t t;

		if (cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &got, &t) ||
		    cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &got,
		    &ch->knob_value[i]))
			goto out;
		ch->knob_type[i] = (int64_t)t;
	}
	ch->nknobs = (int32_t)n;
	rc = 0;
out:
	dnn_destroy_all(&eng, 1);
	dnn_destroy_all(knobs, DNN_MAX_KNOBS);
	return rc;
}

/* The engine config ch names for p's graph, in p->cfg[0]; cuDNN's status. */
static cudnnStatus_t
dnn_cfg_from_choice(struct dnn_parts *p, const struct dnn_choice *ch)
{
	cudnnBackendDescriptor_t eng = NULL, knobs[DNN_MAX_KNOBS];
	cudnnStatus_t s;

	memset(knobs, 0, sizeof knobs);
	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng)) ||
	    (s = cudnnBackendSetAttribute(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->graph)) ||
	    (s = cudnnBackendSetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &ch->engine)))
		goto out;
	/* As the heuristics were, the engine is told the device's properties; a cuDNN without the attribute takes the current device. */
	(void)cudnnBackendSetAttribute(eng, CUDNN_ATTR_ENGINE_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->devprop);
	if ((s = cudnnBackendFinalize(eng)))
		goto out;
	for (int i = 0; i < ch->nknobs; i++) {
		cudnnBackendKnobType_t t = (cudnnBackendKnobType_t)ch->knob_type[i];

		if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i])) ||
		    (s = cudnnBackendSetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &t)) ||
		    (s = cudnnBackendSetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
		    &ch->knob_value[i])) || (s = cudnnBackendFinalize(knobs[i])))
			goto out;
	}
	if ((s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &p->cfg[0])) ||
	    (s = cudnnBackendSetAttribute(p->cfg[0], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng)) ||
	    (ch->nknobs > 0 && (s = cudnnBackendSetAttribute(p->cfg[0], CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
	    CUDNN_TYPE_BACKEND_DESCRIPTOR, ch->nknobs, knobs))))
		goto out;
	s = cudnnBackendFinalize(p->cfg[0]);
out:
	dnn_destroy_all(&eng, 1);
	dnn_destroy_all(knobs, DNN_MAX_KNOBS);
	return s;
}

/* Plan d's graph (fused as ch says; shape-generic with kernel cache e when not NULL) with ch's engine only, checked as the search checks: 1 when cuDNN took it. */
static int
dnn_try_choice(int ordinal, const struct cuda_dnn_conv_desc *d, struct dnn_plan *c, const struct dnn_choice *ch,
    struct dnn_kcache *e)
{
	struct dnn_parts p;
	int pick = -1;

	memset(&p, 0, sizeof p);
	p.kc = e;
	if (dnn_devprop(ordinal, &p) == CUDNN_STATUS_SUCCESS &&
	    (ch->fused ? dnn_graph_fused(d, &p) : dnn_graph(d, &p)) == CUDNN_STATUS_SUCCESS &&
	    dnn_cfg_from_choice(&p, ch) == CUDNN_STATUS_SUCCESS)
		pick = dnn_pick_plan(&p, 1, c, d->tf32, d->ws_cap, 0);
	return dnn_keep(&p, c, pick);
}

/*
 * Search d's graph (fused: with the epilogue) into c, shape-generic with
 * kernel cache e when e is not NULL: heuristics mode A's first strict engine
 * that fits (for a grouped convolution built per shape, a precompiled one
 * first: see cuda_dnn_kcache_precompiled_first), then the fallback list's;
 * 1 when one took it.
 */
static int
dnn_search(int ordinal, const struct cuda_dnn_conv_desc *d, struct dnn_plan *c, int fused, struct dnn_kcache *e)
{
	struct dnn_parts p;
	int64_t count = 0;
	int pick = -1;

	memset(&p, 0, sizeof p);
	p.kc = e;
	/* Any failure below means this cuDNN cannot take the graph: the caller falls back. */
	if (dnn_devprop(ordinal, &p) == CUDNN_STATUS_SUCCESS &&
	    (fused ? dnn_graph_fused(d, &p) : dnn_graph(d, &p)) == CUDNN_STATUS_SUCCESS) {
		if (dnn_heuristics(&p, CUDNN_HEUR_MODE_A, &count) == CUDNN_STATUS_SUCCESS) {
			if (e == NULL && cuda_dnn_kcache_precompiled_first(d))
				pick = dnn_pick_plan(&p, count, c, d->tf32, d->ws_cap, 1);
			if (pick < 0)
				pick = dnn_pick_plan(&p, count, c, d->tf32, d->ws_cap, 0);
		}
		if (pick < 0 && dnn_heuristics(&p, CUDNN_HEUR_MODE_FALLBACK, &count) == CUDNN_STATUS_SUCCESS)
			pick = dnn_pick_plan(&p, count, c, d->tf32, d->ws_cap, 0);
	}
	return dnn_keep(&p, c, pick);
}

/*
 * Plan d shape-generic with its geometry's kernel cache: the engine a plan
 * of this geometry compiled before (binding that kernel: no compilation),
 * else a search (which compiles one); 1 when one took it.  ch not NULL: that
 * engine only (the compile cache's choice).  The entry's lock is held
 * throughout, so a geometry compiles once even when two loads plan it.
 */
static int
dnn_plan_generic(int ordinal, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k, struct dnn_plan *c,
    int fused, const struct dnn_choice *ch)
{
	struct dnn_kcache *e = cuda_dnn_kcache_get(k, fused);
	const struct dnn_choice *had;
	struct dnn_choice got;
	int ok = 0;

	if (e == NULL || cuda_dnn_kcache_lock(e) != 0)
		return 0;
	had = ch != NULL ? ch : cuda_dnn_kcache_choice(e);
	if (had != NULL)
		ok = dnn_try_choice(ordinal, d, c, had, e);
	if (!ok && ch == NULL)
		ok = dnn_search(ordinal, d, c, fused, e);
	if (ok && dnn_choice_of(c->cfg, fused, 1, &got) == 0)
		cuda_dnn_kcache_chose(e, &got);
	cuda_dnn_kcache_unlock(e);
	c->generic = ok;
	return ok;
}

/*
 * Plan one graph (key k; fused: with the epilogue) into c: 1 when an engine
 * took it (c keeps the plan, its engine config and the device properties),
 * else 0.  Every other descriptor of the build is destroyed either way.
 */
int
cuda_dnn_plan_search(int ordinal, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k, struct dnn_plan *c,
    int fused)
{
	if (cuda_dnn_kcache_wanted(d) && dnn_plan_generic(ordinal, d, k, c, fused, NULL))
		return 1;
	return dnn_search(ordinal, d, c, fused, NULL);
}

/* Whether d takes the fused graph at all (a forward convolution with an epilogue). */
int
cuda_dnn_plan_fusable(const struct cuda_dnn_conv_desc *d)
{
	return !d->transpose && (d->has_bias || d->has_z || d->relu);
}

/* Build c (key k) with ch's engine only, fused and shape-generic as ch says, checked as a search checks: 1 when cuDNN took it. */
int
cuda_dnn_plan_try(int ordinal, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k, const struct dnn_choice *ch,
    struct dnn_plan *c)
{
	/* A shape-generic choice is rebuilt the same way (binding the geometry's kernel once one plan compiled it). */
	if (ch->nknobs < 0 || ch->nknobs > DNN_MAX_KNOBS || (ch->fused && !cuda_dnn_plan_fusable(d)) ||
	    !(ch->dynamic ? cuda_dnn_kcache_wanted(d) && dnn_plan_generic(ordinal, d, k, c, ch->fused, ch) :
	    dnn_try_choice(ordinal, d, c, ch, NULL)))
		return 0;
	c->fused = ch->fused != 0;
	c->has_bias = c->fused && d->has_bias;
	c->has_z = c->fused && d->has_z;
	return 1;
}

/* The engine choice pl was built with into ch: 0, or -1 when cuDNN does not tell it. */
int
cuda_dnn_plan_choice(const struct dnn_plan *pl, struct dnn_choice *ch)
{
	return dnn_choice_of(pl->cfg, pl->fused, pl->generic, ch);
}

/*
 * Build c from the cache's choice for ck: 1 when cuDNN took it; -1 when the
 * search found no engine for ck (stored as engine -1: the caller uses im2col
 * without searching again); 0 on a miss, or when refused (then dropped).
 */
static int
dnn_plan_cached_key(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k,
    const struct dnn_cache_key *ck, struct dnn_plan *c)
{
	struct dnn_choice ch;
	void *val = NULL;
	size_t len = 0;
	char why[96];

	if (!compile_cache_lookup(cache, ck, sizeof *ck, &val, &len))
		return 0;
	memset(&ch, 0, sizeof ch);
	if (len == sizeof ch)
		memcpy(&ch, val, sizeof ch);
	free(val);
	if (len == sizeof ch && ch.engine == -1 && ch.nknobs == 0)
		return -1;
	if (len == sizeof ch && cuda_dnn_plan_try(ordinal, d, k, &ch, c))
		return 1;
	snprintf(why, sizeof why, "cuDNN engine %lld of a convolution", (long long)ch.engine);
	compile_cache_reject(cache, ck, sizeof *ck, why);
	return 0;
}

/* Store the search's pick for ck (c NULL: it found none; nothing when cuDNN does not tell the engine). */
static void
dnn_plan_store_key(compile_cache_t *cache, const struct dnn_cache_key *ck, const struct dnn_plan *c)
{
	struct dnn_choice ch;

	if (c == NULL) {
		memset(&ch, 0, sizeof ch);
		ch.engine = -1;
		compile_cache_store(cache, ck, sizeof *ck, &ch, sizeof ch);
	} else if (cuda_dnn_plan_choice(c, &ch) == 0)
		compile_cache_store(cache, ck, sizeof *ck, &ch, sizeof ch);
}

/* Build pl from the compile cache's choice for (k, cap): 1 taken, -1 the search found none before, 0 a miss. */
int
cuda_dnn_plan_cached(int ordinal, compile_cache_t *cache, const struct cuda_dnn_conv_desc *d, const struct dnn_key *k,
    size_t cap, struct dnn_plan *pl)
{
	struct dnn_cache_key ck;

	dnn_cache_key_of(k, cap, &ck);
	return dnn_plan_cached_key(ordinal, cache, d, k, &ck, pl);
}

/* Record the search's pick for (k, cap) in the compile cache (pl NULL: it found none). */
void
cuda_dnn_plan_store(compile_cache_t *cache, const struct dnn_key *k, size_t cap, const struct dnn_plan *pl)
{
	struct dnn_cache_key ck;

	dnn_cache_key_of(k, cap, &ck);
	dnn_plan_store_key(cache, &ck, pl);
}

#endif
