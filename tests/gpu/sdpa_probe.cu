/*
 * sdpa_probe.cu: does the runtime's cuDNN build and run fused attention, softmax(scale Q K^T + mask) V, as a
 * graph-API operation graph (FP16 storage, FP32 math), and how fast?  A standalone program for the GPU machine.
 *
 * Build (no autotools needed; the daemon's configure also builds it as tests/gpu/sdpa_probe in CUDA builds):
 *   nvcc -O2 -arch=sm_90 -o sdpa_probe tests/gpu/sdpa_probe.cu -lcudnn
 * Run:  ./sdpa_probe            (every case below; exit status 0 when every case that cuDNN planned was accurate)
 *       ./sdpa_probe -v         (also every engine config the heuristics offered and why each was refused)
 * Environment: PROBE_KT=1 runs only the K [B,H,D,Sk] cases (they crash cuDNN 9.14; skipped otherwise),
 * PROBE_MASK=n only mask form n, PROBE_HANDLE=1 plans with the handle instead of a device-properties descriptor,
 * PROBE_FALLBACK=1 also tries the fallback engine list, PROBE_TRACE=1 names each cuDNN step as it starts.
 *
 * For each shape (B 1, 8 and 64, H 12, S 128, 77, 129, 256, D 64 and 128, K stored [B,H,D,Sk] as the daemon's
 * fused graphs give it or [B,H,Sk,D]) and each mask form (none; an additive padding mask [B, 1, 1, Sk] given
 * with dims of 1, which is what the daemon builds; the same memory as full dims [B, H, Sq, Sk] with strides 0;
 * the mask materialised as [B, 1, Sq, Sk]; and as [B, H, Sq, Sk]) it
 * builds the graph the way cudnn-frontend's SDPA forward node lowers it for inference (matmul, scale, bias add,
 * max, sub, exp, sum, log, add (the stats), div, matmul), asks heuristics mode A (then the fallback list) for engines, finalizes the first
 * plan that builds, runs it, checks it against an FP64 host reference computed from the same FP16 inputs, replays it
 * inside a CUDA graph capture (as the daemon runs it), and prints max abs error and microseconds per call.  Every
 * cuDNN status is printed with the step that returned it.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int verbose;

/* Print a failed step and return its status. */
#define CK(step, call) do { if (getenv("PROBE_TRACE")) fprintf(stderr, "  > %s\n", step); cudnnStatus_t s_ = (call); if (s_ != CUDNN_STATUS_SUCCESS) { \
	printf("    FAIL %-40s %s (%d)\n", step, cudnnGetErrorString(s_), (int)s_); return s_; } } while (0)
#define CU(step, call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
	printf("    CUDA FAIL %-35s %s\n", step, cudaGetErrorString(e_)); exit(2); } } while (0)

enum { ID_Q = 1, ID_K, ID_V, ID_O, ID_BIAS, ID_SCALE, ID_VIRT = 100 };
enum mask_form { MASK_NONE, MASK_B11S, MASK_STRIDE0, MASK_B1SS, MASK_BHSS, MASK_FORMS };
static const char *mask_name[MASK_FORMS] = { "none", "[B,1,1,Sk] (dims of 1)", "[B,H,Sq,Sk] strides [Sk,0,0,1]",
	"[B,1,Sq,Sk]", "[B,H,Sq,Sk]" };

struct shape { int64_t b, h, sq, sk, d; int kt; };	/* kt: K stored [B, H, D, Sk] (the daemon's fused graphs) */

/* Masked cases need well over 64 descriptors (every tensor, op, config and plan is kept). */
#define MAX_DESC 1024
struct graph_parts { cudnnBackendDescriptor_t d[MAX_DESC]; int n; };

/* Remember a descriptor for destruction. */
static cudnnBackendDescriptor_t *
keep(struct graph_parts *p)
{
	return &p->d[p->n++];
}

/* A finalized 4-D tensor descriptor. */
static cudnnStatus_t
tensor(struct graph_parts *p, cudnnBackendDescriptor_t *t, int64_t id, cudnnDataType_t dt, const int64_t *dims,
    const int64_t *strides, bool virt, bool byval)
{
	int64_t align = 16;

	CK("create tensor", cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
	*keep(p) = *t;
	CK("tensor data type", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
	CK("tensor dims", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
	CK("tensor strides", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
	CK("tensor id", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id));
	CK("tensor alignment", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
	if (virt)
		CK("tensor virtual", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt));
	if (byval)
		CK("tensor by value", cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byval));
	CK("finalize tensor", cudnnBackendFinalize(*t));
	return CUDNN_STATUS_SUCCESS;
}

/* A virtual FP32 (or dt) tensor, dense, of dims. */
static cudnnStatus_t
virt(struct graph_parts *p, cudnnBackendDescriptor_t *t, int64_t *next_id, const int64_t *dims, cudnnDataType_t dt)
{
	int64_t st[4] = { dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1 };

	return tensor(p, t, (*next_id)++, dt, dims, st, true, false);
}

/* Operation c = a @ b in FP32 math. */
static cudnnStatus_t
matmul(struct graph_parts *p, cudnnBackendDescriptor_t *op, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
    cudnnBackendDescriptor_t c)
{
	cudnnBackendDescriptor_t *mm = keep(p);
	cudnnDataType_t ct = CUDNN_DATA_FLOAT;

	CK("create matmul", cudnnBackendCreateDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR, mm));
	CK("matmul comp type", cudnnBackendSetAttribute(*mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct));
	CK("finalize matmul", cudnnBackendFinalize(*mm));
	CK("create matmul op", cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, op));
	*keep(p) = *op;
	CK("matmul op A", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
	CK("matmul op B", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
	CK("matmul op C", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
	CK("matmul op desc", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, mm));
	CK("finalize matmul op", cudnnBackendFinalize(*op));
	return CUDNN_STATUS_SUCCESS;
}

/* Operation y = mode(x, b) (b NULL: unary) in FP32 math. */
static cudnnStatus_t
pointwise(struct graph_parts *p, cudnnBackendDescriptor_t *op, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
    cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t *pw = keep(p);
	cudnnDataType_t ct = CUDNN_DATA_FLOAT;

	CK("create pointwise", cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw));
	CK("pointwise mode", cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
	CK("pointwise prec", cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &ct));
	CK("finalize pointwise", cudnnBackendFinalize(*pw));
	CK("create pointwise op", cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
	*keep(p) = *op;
	CK("pointwise op desc", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw));
	CK("pointwise op x", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
	if (b != NULL)
		CK("pointwise op b", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
	CK("pointwise op y", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
	CK("finalize pointwise op", cudnnBackendFinalize(*op));
	return CUDNN_STATUS_SUCCESS;
}

/* Operation y = reduce(x) over the last dim (y's last dim is 1). */
static cudnnStatus_t
reduction(struct graph_parts *p, cudnnBackendDescriptor_t *op, cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
    cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t *rd = keep(p);
	cudnnDataType_t ct = CUDNN_DATA_FLOAT;

	CK("create reduction", cudnnBackendCreateDescriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, rd));
	CK("reduction mode", cudnnBackendSetAttribute(*rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode));
	CK("reduction comp type", cudnnBackendSetAttribute(*rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct));
	CK("finalize reduction", cudnnBackendFinalize(*rd));
	CK("create reduction op", cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, op));
	*keep(p) = *op;
	CK("reduction op desc", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, rd));
	CK("reduction op x", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
	CK("reduction op y", cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
	CK("finalize reduction op", cudnnBackendFinalize(*op));
	return CUDNN_STATUS_SUCCESS;
}

/* The bias tensor's dims and strides for a mask form (the memory holds [B, Sk] for the first two forms). */
static void
bias_layout(const struct shape *s, enum mask_form m, int64_t *dims, int64_t *st)
{
	int64_t h = m == MASK_BHSS ? s->h : 1, sq = m == MASK_B11S ? 1 : s->sq;

	dims[0] = s->b; dims[1] = h; dims[2] = sq; dims[3] = s->sk;
	st[3] = 1;
	st[2] = s->sk;
	st[1] = sq * s->sk;
	st[0] = h * sq * s->sk;
	if (m == MASK_STRIDE0) {	/* the broadcast written as strides of 0 over full dims */
		dims[1] = s->h;
		dims[2] = s->sq;
		st[0] = s->sk;
		st[1] = 0;
		st[2] = 0;
	}
}

/* The operation graph: Q [B,H,Sq,D], K^T read from K [B,H,Sk,D], V [B,H,Sk,D], O [B,H,Sq,D], all FP16. */
static cudnnStatus_t
build_graph(struct graph_parts *p, const struct shape *s, enum mask_form m, cudnnBackendDescriptor_t devprop,
    cudnnHandle_t handle, cudnnBackendDescriptor_t *graph)
{
	int64_t qd[4] = { s->b, s->h, s->sq, s->d }, qs[4] = { s->h * s->sq * s->d, s->sq * s->d, s->d, 1 };
	int64_t kd[4] = { s->b, s->h, s->d, s->sk };
	int64_t ks[4] = { s->h * s->sk * s->d, s->sk * s->d, s->kt ? s->sk : 1, s->kt ? 1 : s->d };
	int64_t vd[4] = { s->b, s->h, s->sk, s->d }, vs[4] = { s->h * s->sk * s->d, s->sk * s->d, s->d, 1 };
	int64_t sd[4] = { s->b, s->h, s->sq, s->sk }, rd[4] = { s->b, s->h, s->sq, 1 }, one[4] = { 1, 1, 1, 1 };
	int64_t bd[4], bs[4], vid = ID_VIRT;
	cudnnBackendDescriptor_t q, k, v, o, sc, bias = NULL, t[8], ops[16];
	int nops = 0, i = 0;

	CK("Q tensor", tensor(p, &q, ID_Q, CUDNN_DATA_HALF, qd, qs, false, false));
	CK("K^T tensor", tensor(p, &k, ID_K, CUDNN_DATA_HALF, kd, ks, false, false));
	CK("V tensor", tensor(p, &v, ID_V, CUDNN_DATA_HALF, vd, vs, false, false));
	CK("O tensor", tensor(p, &o, ID_O, CUDNN_DATA_HALF, qd, qs, false, false));
	CK("scale tensor (by value)", tensor(p, &sc, ID_SCALE, CUDNN_DATA_FLOAT, one, one, false, true));
	if (m != MASK_NONE) {
		bias_layout(s, m, bd, bs);
		CK("bias tensor", tensor(p, &bias, ID_BIAS, CUDNN_DATA_HALF, bd, bs, false, false));
	}
	CK("S = Q K^T (virtual)", virt(p, &t[0], &vid, sd, CUDNN_DATA_FLOAT));
	CK("op Q K^T", matmul(p, &ops[nops++], q, k, t[0]));
	CK("S * scale (virtual)", virt(p, &t[1], &vid, sd, CUDNN_DATA_FLOAT));
	CK("op scale", pointwise(p, &ops[nops++], CUDNN_POINTWISE_MUL, t[0], sc, t[1]));
	i = 1;
	if (bias != NULL) {
		CK("S + bias (virtual)", virt(p, &t[2], &vid, sd, CUDNN_DATA_FLOAT));
		CK("op bias add", pointwise(p, &ops[nops++], CUDNN_POINTWISE_ADD, t[1], bias, t[2]));
		i = 2;
	}
	CK("row max (virtual)", virt(p, &t[3], &vid, rd, CUDNN_DATA_FLOAT));
	CK("op row max", reduction(p, &ops[nops++], CUDNN_REDUCE_TENSOR_MAX, t[i], t[3]));
	CK("S - max (virtual)", virt(p, &t[4], &vid, sd, CUDNN_DATA_FLOAT));
	CK("op sub max", pointwise(p, &ops[nops++], CUDNN_POINTWISE_SUB, t[i], t[3], t[4]));
	CK("exp (virtual)", virt(p, &t[5], &vid, sd, CUDNN_DATA_FLOAT));
	CK("op exp", pointwise(p, &ops[nops++], CUDNN_POINTWISE_EXP, t[4], NULL, t[5]));
	CK("row sum (virtual)", virt(p, &t[6], &vid, rd, CUDNN_DATA_FLOAT));
	CK("op row sum", reduction(p, &ops[nops++], CUDNN_REDUCE_TENSOR_ADD, t[5], t[6]));
	/* The softmax stats (max + log sum), unused: cuDNN's MHA pattern matcher recognises the graph only with them,
	 * as cudnn-frontend's composite softmax always emits them; without them heuristics offer 0 engines. */
	{
		cudnnBackendDescriptor_t lg, stats;
		CK("log sum (virtual)", virt(p, &lg, &vid, rd, CUDNN_DATA_FLOAT));
		CK("op log", pointwise(p, &ops[nops++], CUDNN_POINTWISE_LOG, t[6], NULL, lg));
		CK("stats (virtual)", virt(p, &stats, &vid, rd, CUDNN_DATA_FLOAT));
		CK("op stats", pointwise(p, &ops[nops++], CUDNN_POINTWISE_ADD, t[3], lg, stats));
	}
	/* The probabilities in Q's type: the frontend notes the second matmul takes its A in the I/O type. */
	CK("P = exp / sum (virtual FP16)", virt(p, &t[7], &vid, sd, CUDNN_DATA_HALF));
	CK("op div", pointwise(p, &ops[nops++], CUDNN_POINTWISE_DIV, t[5], t[6], t[7]));
	CK("op P V", matmul(p, &ops[nops++], t[7], v, o));
	CK("create op graph", cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, graph));
	*keep(p) = *graph;
	CK("op graph ops", cudnnBackendSetAttribute(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops));
	if (devprop == NULL)
		CK("op graph handle", cudnnBackendSetAttribute(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
	CK("finalize op graph", cudnnBackendFinalize(*graph));
	return CUDNN_STATUS_SUCCESS;
}

/* Heuristics (mode), then the first config whose plan finalizes: the plan and its workspace; NULL plan when none. */
static cudnnStatus_t
pick_plan(struct graph_parts *p, cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t devprop, cudnnHandle_t handle,
    cudnnBackendHeurMode_t mode, cudnnBackendDescriptor_t *plan, int64_t *ws)
{
	cudnnBackendDescriptor_t heur, cfg[32];
	int64_t count = 0, got = 0;

	*plan = NULL;
	CK("create heuristics", cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
	*keep(p) = heur;
	CK("heuristics graph", cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
	CK("heuristics mode", cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
	if (devprop != NULL)
		CK("heuristics devprop", cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &devprop));
	CK("finalize heuristics", cudnnBackendFinalize(heur));
	for (int i = 0; i < 32; i++) {
		CK("create engine config", cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]));
		*keep(p) = cfg[i];
	}
	/* The count first (nothing requested), then that many configs. */
	CK("heuristics count", cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
	if (count > 32)
		count = 32;
	CK("heuristics results", cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, cfg));
	printf("    heuristics %s: %lld engine configs\n", mode == CUDNN_HEUR_MODE_A ? "A" : "FALLBACK", (long long)count);
	for (int64_t i = 0; i < count && i < 32; i++) {
		cudnnBackendDescriptor_t pl;
		cudnnStatus_t s;

		CK("create plan", cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &pl));
		*keep(p) = pl;
		CK("plan engine config", cudnnBackendSetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]));
		if (devprop != NULL)
			CK("plan devprop", cudnnBackendSetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &devprop));
		else
			CK("plan handle", cudnnBackendSetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
		s = cudnnBackendFinalize(pl);
		if (s != CUDNN_STATUS_SUCCESS) {
			if (verbose)
				printf("    config %lld: finalize plan: %s\n", (long long)i, cudnnGetErrorString(s));
			continue;
		}
		CK("plan workspace size", cudnnBackendGetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, ws));
		printf("    config %lld planned, workspace %lld bytes\n", (long long)i, (long long)*ws);
		*plan = pl;
		return CUDNN_STATUS_SUCCESS;
	}
	return CUDNN_STATUS_SUCCESS;
}

/* The variant pack binding the addresses (built once, as the daemon does). */
static cudnnStatus_t
make_pack(struct graph_parts *p, cudnnBackendDescriptor_t *vp, void **ptrs, int64_t *ids, int n, void *ws)
{
	CK("create variant pack", cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, vp));
	*keep(p) = *vp;
	CK("variant pack ids", cudnnBackendSetAttribute(*vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, ids));
	CK("variant pack pointers", cudnnBackendSetAttribute(*vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs));
	CK("variant pack workspace", cudnnBackendSetAttribute(*vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
	CK("finalize variant pack", cudnnBackendFinalize(*vp));
	return CUDNN_STATUS_SUCCESS;
}

/* Queue one execution of plan on the handle's stream. */
static cudnnStatus_t
execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t vp)
{
	CK("execute", cudnnBackendExecute(handle, plan, vp));
	return CUDNN_STATUS_SUCCESS;
}

/* FP64 reference from the FP16 inputs: o[b,h,i,:] = softmax_j(scale q.k_j + mask[b,j]) v. */
static void
reference(const struct shape *s, enum mask_form m, const __half *q, const __half *k, const __half *v,
    const float *pad, double *o)
{
	double *w = (double *)malloc((size_t)s->sk * sizeof *w), scale = 1.0 / sqrt((double)s->d);

	for (int64_t bh = 0; bh < s->b * s->h; bh++) {
		int64_t b = bh / s->h;

		for (int64_t i = 0; i < s->sq; i++) {
			const __half *qi = q + (bh * s->sq + i) * s->d;
			double mx = -1e300, sum = 0;

			for (int64_t j = 0; j < s->sk; j++) {
				const __half *kb = k + bh * s->sk * s->d;
				double acc = 0;

				for (int64_t c = 0; c < s->d; c++)
					acc += (double)__half2float(qi[c]) *
					    (double)__half2float(s->kt ? kb[c * s->sk + j] : kb[j * s->d + c]);
				w[j] = acc * scale + (m == MASK_NONE ? 0.0 : pad[b * s->sk + j]);
				mx = w[j] > mx ? w[j] : mx;
			}
			for (int64_t j = 0; j < s->sk; j++)
				sum += (w[j] = exp(w[j] - mx));
			for (int64_t c = 0; c < s->d; c++) {
				double acc = 0;

				for (int64_t j = 0; j < s->sk; j++)
					acc += w[j] * (double)__half2float(v[(bh * s->sk + j) * s->d + c]);
				o[(bh * s->sq + i) * s->d + c] = acc / sum;
			}
		}
	}
	free(w);
}

/* The mask memory for a form: 0 for the first len[b] keys of batch b, -10000 after. */
static __half *
mask_fill(const struct shape *s, enum mask_form m, const float *pad, size_t *n)
{
	int64_t h = m == MASK_BHSS ? s->h : 1, sq = m == MASK_B11S || m == MASK_STRIDE0 ? 1 : s->sq;
	__half *x;

	*n = (size_t)(s->b * h * sq * s->sk);
	x = (__half *)malloc(*n * sizeof *x);
	for (size_t e = 0; e < *n; e++)
		x[e] = __float2half(pad[(e / (size_t)(h * sq * s->sk)) * s->sk + e % (size_t)s->sk]);
	return x;
}

/* Max abs error of the device output against the reference. */
static double
max_err(const __half *dev_o, const double *ref, size_t n)
{
	double e = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)__half2float(dev_o[i]) - ref[i]);
		if (!(d <= e))
			e = d;	/* NaN counts as the largest error */
	}
	return e;
}

/* Time per call (microseconds) over iters executions, and the result of a CUDA-graph replay checked too. */
static double
time_calls(cudnnHandle_t h, cudaStream_t st, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t vp, int iters)
{
	cudaEvent_t a, b;
	float ms = 0;

	CU("event create", cudaEventCreate(&a));
	CU("event create", cudaEventCreate(&b));
	CU("event record", cudaEventRecord(a, st));
	for (int i = 0; i < iters; i++)
		if (execute(h, plan, vp) != CUDNN_STATUS_SUCCESS)
			return -1;
	CU("event record", cudaEventRecord(b, st));
	CU("event sync", cudaEventSynchronize(b));
	CU("event elapsed", cudaEventElapsedTime(&ms, a, b));
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return 1000.0 * ms / iters;
}

/* Capture one execution into a CUDA graph and replay it: 0 when both worked. */
static int
graph_replay(cudnnHandle_t h, cudaStream_t st, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t vp)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudnnStatus_t s;

	CU("begin capture", cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
	s = execute(h, plan, vp);
	CU("end capture", cudaStreamEndCapture(st, &g));
	if (s != CUDNN_STATUS_SUCCESS)
		return -1;
	CU("graph instantiate", cudaGraphInstantiate(&ge, g, 0));
	CU("graph launch", cudaGraphLaunch(ge, st));
	CU("graph sync", cudaStreamSynchronize(st));
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	return 0;
}

/* Random Q, K, V in [-1, 1] and a padding mask: batch b keeps its first len keys, len in [1, Sk] (batch 0 all). */
static void
fill_inputs(const struct shape *s, __half *q, size_t nq, __half *k, __half *v, size_t nk, float *pad)
{
	srand(7);
	for (size_t i = 0; i < nq; i++)
		q[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
	for (size_t i = 0; i < nk; i++) {
		k[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
		v[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
	}
	for (int64_t b = 0; b < s->b; b++) {
		int64_t len = b == 0 ? s->sk : 1 + rand() % s->sk;

		for (int64_t j = 0; j < s->sk; j++)
			pad[b * s->sk + j] = j < len ? 0.0f : -10000.0f;
	}
}

/* Build, plan, run, check and time one case: 0 accurate, 1 not planned, 2 wrong or failed. */
static int
run_case(cudnnHandle_t h, cudaStream_t st, int devprop_ok, const struct shape *s, enum mask_form m)
{
	struct graph_parts p;
	cudnnBackendDescriptor_t graph, plan = NULL, devprop = NULL, vp;
	size_t nq = (size_t)(s->b * s->h * s->sq * s->d), nk = (size_t)(s->b * s->h * s->sk * s->d), nm = 0;
	__half *hq = (__half *)malloc(nq * 2), *hk = (__half *)malloc(nk * 2), *hv = (__half *)malloc(nk * 2);
	__half *ho = (__half *)malloc(nq * 2), *hm = NULL;
	float *pad = (float *)malloc((size_t)(s->b * s->sk) * sizeof(float)), scale = 1.0f / sqrtf((float)s->d);
	double *ref = (double *)malloc(nq * sizeof(double)), err, err_graph, us;
	void *dq, *dk, *dv, *dout, *dm = NULL, *ws = NULL, *ptrs[6];
	int64_t ids[6] = { ID_Q, ID_K, ID_V, ID_O, ID_SCALE, ID_BIAS }, wsz = 0;
	int32_t dev = 0;
	int rc = 2, n = m == MASK_NONE ? 5 : 6;

	memset(&p, 0, sizeof p);
	printf("case B=%lld H=%lld Sq=%lld Sk=%lld D=%lld K %s mask %s\n", (long long)s->b, (long long)s->h,
	    (long long)s->sq, (long long)s->sk, (long long)s->d, s->kt ? "[B,H,D,Sk]" : "[B,H,Sk,D]", mask_name[m]);
	fill_inputs(s, hq, nq, hk, hv, nk, pad);
	if (m != MASK_NONE)
		hm = mask_fill(s, m, pad, &nm);
	if (devprop_ok) {
		devprop = *keep(&p);
		if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &devprop) != CUDNN_STATUS_SUCCESS ||
		    cudnnBackendSetAttribute(devprop, CUDNN_ATTR_DEVICEPROP_DEVICE_ID, CUDNN_TYPE_INT32, 1, &dev) != CUDNN_STATUS_SUCCESS ||
		    cudnnBackendFinalize(devprop) != CUDNN_STATUS_SUCCESS) {
			printf("    device properties descriptor refused: planning with the handle\n");
			devprop = NULL;
		}
		p.d[p.n - 1] = devprop;
	}
	if (build_graph(&p, s, m, devprop, h, &graph) != CUDNN_STATUS_SUCCESS)
		goto out;
	if (pick_plan(&p, graph, devprop, h, CUDNN_HEUR_MODE_A, &plan, &wsz) != CUDNN_STATUS_SUCCESS || plan == NULL) {
		printf("    no engine from heuristics A; trying the fallback list\n");
		if (getenv("PROBE_FALLBACK") == NULL ||
		    pick_plan(&p, graph, devprop, h, CUDNN_HEUR_MODE_FALLBACK, &plan, &wsz) != CUDNN_STATUS_SUCCESS ||
		    plan == NULL) {
			printf("    RESULT not planned (the daemon would fall back to the unfused path)\n");
			rc = 1;
			goto out;
		}
	}
	CU("malloc Q", cudaMalloc(&dq, nq * 2));
	CU("malloc K", cudaMalloc(&dk, nk * 2));
	CU("malloc V", cudaMalloc(&dv, nk * 2));
	CU("malloc O", cudaMalloc(&dout, nq * 2));
	if (hm != NULL)
		CU("malloc mask", cudaMalloc(&dm, nm * 2));
	if (wsz > 0)
		CU("malloc workspace", cudaMalloc(&ws, (size_t)wsz));
	CU("copy Q", cudaMemcpy(dq, hq, nq * 2, cudaMemcpyHostToDevice));
	CU("copy K", cudaMemcpy(dk, hk, nk * 2, cudaMemcpyHostToDevice));
	CU("copy V", cudaMemcpy(dv, hv, nk * 2, cudaMemcpyHostToDevice));
	if (hm != NULL)
		CU("copy mask", cudaMemcpy(dm, hm, nm * 2, cudaMemcpyHostToDevice));
	ptrs[0] = dq; ptrs[1] = dk; ptrs[2] = dv; ptrs[3] = dout; ptrs[4] = &scale; ptrs[5] = dm;
	CU("clear O", cudaMemset(dout, 0xff, nq * 2));
	if (make_pack(&p, &vp, ptrs, ids, n, ws) != CUDNN_STATUS_SUCCESS || execute(h, plan, vp) != CUDNN_STATUS_SUCCESS)
		goto out;
	CU("sync after execute", cudaStreamSynchronize(st));
	CU("copy O", cudaMemcpy(ho, dout, nq * 2, cudaMemcpyDeviceToHost));
	reference(s, m, hq, hk, hv, pad, ref);
	err = max_err(ho, ref, nq);
	CU("clear O", cudaMemset(dout, 0xff, nq * 2));
	if (graph_replay(h, st, plan, vp) != 0)
		goto out;
	CU("copy O", cudaMemcpy(ho, dout, nq * 2, cudaMemcpyDeviceToHost));
	err_graph = max_err(ho, ref, nq);
	time_calls(h, st, plan, vp, 5);
	us = time_calls(h, st, plan, vp, 50);
	rc = err < 2e-2 && err_graph < 2e-2 ? 0 : 2;
	printf("    RESULT %s max abs err %.3g (graph replay %.3g), %.1f us/call, workspace %lld\n",
	    rc == 0 ? "OK" : "WRONG", err, err_graph, us, (long long)wsz);
	cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout); cudaFree(dm); cudaFree(ws);
out:
	for (int i = p.n - 1; i >= 0; i--)
		if (p.d[i] != NULL)
			cudnnBackendDestroyDescriptor(p.d[i]);
	free(hq); free(hk); free(hv); free(ho); free(hm); free(pad); free(ref);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct shape shapes[] = {
		{ 1, 12, 128, 128, 64, 1 }, { 8, 12, 128, 128, 64, 1 }, { 1, 12, 77, 77, 64, 1 }, { 8, 12, 77, 77, 64, 1 },
		{ 1, 12, 256, 256, 64, 1 }, { 8, 12, 256, 256, 64, 1 }, { 2, 12, 129, 129, 128, 1 }, { 2, 4, 77, 77, 128, 1 },
		{ 8, 12, 128, 128, 64, 0 }, { 8, 12, 77, 77, 64, 0 }, { 64, 12, 128, 128, 64, 1 }, { 2, 12, 77, 129, 64, 1 },
	};
	cudnnHandle_t h;
	cudaStream_t st;
	struct cudaDeviceProp prop;
	int bad = 0, unplanned = 0, devprop_ok = 1, kt_only, mask_only;
	cudnnStatus_t s;

	verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	printf("cuDNN runtime %zu (compiled against %d), cudart %zu\n", cudnnGetVersion(), CUDNN_VERSION,
	    cudnnGetCudartVersion());
	CU("device properties", cudaGetDeviceProperties(&prop, 0));
	printf("device 0: %s, sm_%d%d\n", prop.name, prop.major, prop.minor);
	if (getenv("PROBE_HANDLE") != NULL || cudnnGetVersion() < 90800) {
		printf("cuDNN below 9.8: no device-properties descriptor; planning with the handle\n");
		devprop_ok = 0;
	}
	if ((s = cudnnCreate(&h)) != CUDNN_STATUS_SUCCESS) {
		printf("cudnnCreate: %s\n", cudnnGetErrorString(s));
		return 2;
	}
	CU("stream create", cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	if ((s = cudnnSetStream(h, st)) != CUDNN_STATUS_SUCCESS) {
		printf("cudnnSetStream: %s\n", cudnnGetErrorString(s));
		return 2;
	}
	/* K stored [B,H,D,Sk] (Sk contiguous) makes cuDNN 9.14 segfault while it lists the heuristics' engine configs,
	 * so those cases run only when asked for, alone: PROBE_KT=1. */
	kt_only = getenv("PROBE_KT") != NULL ? atoi(getenv("PROBE_KT")) : 0;
	mask_only = getenv("PROBE_MASK") != NULL ? atoi(getenv("PROBE_MASK")) : -1;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		for (int m = 0; m < MASK_FORMS; m++) {
			if (shapes[i].kt != kt_only || (mask_only >= 0 && m != mask_only))
				continue;
			int rc = run_case(h, st, devprop_ok, &shapes[i], (enum mask_form)m);

			bad += rc == 2;
			unplanned += rc == 1;
		}
	printf("summary: %d wrong or failed, %d not planned\n", bad, unplanned);
	cudnnDestroy(h);
	return bad ? 1 : 0;
}
