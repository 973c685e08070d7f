/* device_cuda_rnn.cu: RNN, GRU and LSTM (ONNX semantics, layout 0): cuBLAS projections and an element-wise gate kernel per step. */
#include "config.h"

#include <limits.h>
#include <math.h>

#include "device_cuda_impl.h"
#include "error.h"

/*
 * The CPU backend (cpu_rnn.c) defines the semantics; this is the same
 * computation on the plan's stream: per direction one SGEMM projects every
 * step's input (X W^T), then per step one SGEMM takes the recurrence (H R^T;
 * GRU without linear_before_reset a second one for (r . H) R_h^T) and one
 * kernel applies the gates to the rows still running.  sequence_lens is read
 * by the kernels on the device (a row whose length is outside [0, seq] runs
 * as length 0: zero outputs, as the CUDA backend never reads back to fail
 * the request), so the whole run is queued without host synchronisation and
 * can be captured into a CUDA graph.
 */

/* What the kernels of one direction read (passed by value). */
struct rnn_dir {
	int cell, dir, ndir, reverse, nact;
	int act[3];
	float alpha[3], beta[3], clip;
	int lbr, input_forget;
	int64_t t, b, h, gh;
	const float *wb, *rb, *p;	/* biases (NULL: none), peepholes (NULL: none) */
	const int32_t *lens;		/* NULL: every row is t long */
	float *xw, *hw, *tmp, *hw2, *hs, *cs;	/* scratch: projections, recurrence, GRU's reset product, states */
	float *y;			/* Y [t, ndir, b, h] or NULL */
};

/* The node's tensors and scratch. */
struct rnn_params {
	struct rnn_dir d[2];
	const float *x, *w, *r, *h0, *c0;
	float *yh, *yc;
	int64_t in, ybytes;
};

/* One of ONNX's recurrent activations k of the direction, unclipped. */
static __device__ float
rnn_act_raw(const struct rnn_dir &d, int k, float x)
{
	float al = d.alpha[k], be = d.beta[k];

	switch (d.act[k]) {
	case GRAPH_RNN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
	case GRAPH_RNN_ACT_TANH: return tanhf(x);
	case GRAPH_RNN_ACT_RELU: return x > 0 ? x : 0;
	case GRAPH_RNN_ACT_AFFINE: return al * x + be;
	case GRAPH_RNN_ACT_LEAKY_RELU: return x >= 0 ? x : al * x;
	case GRAPH_RNN_ACT_THRESHOLDED_RELU: return x > al ? x : 0;
	case GRAPH_RNN_ACT_SCALED_TANH: return al * tanhf(be * x);
	case GRAPH_RNN_ACT_HARD_SIGMOID: { float v = al * x + be; return v < 0 ? 0 : v > 1 ? 1 : v; }
	case GRAPH_RNN_ACT_ELU: return x >= 0 ? x : al * (expf(x) - 1.0f);
	case GRAPH_RNN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
	default: return log1pf(expf(x));
	}
}

/* A gate's activation: the pre-activation clipped first when clip is set. */
static __device__ __forceinline__ float
rnn_act(const struct rnn_dir &d, int k, float x)
{
	if (d.clip > 0)
		x = x < -d.clip ? -d.clip : x > d.clip ? d.clip : x;
	return rnn_act_raw(d, k, x);
}

/* Row bi's length (a length outside [0, t] counts as 0). */
static __device__ __forceinline__ int64_t
rnn_len(const struct rnn_dir &d, int64_t bi)
{
	int64_t len = d.lens != NULL ? d.lens[bi] : d.t;

	return len < 0 || len > d.t ? 0 : len;
}

/* The time index of step s in row bi (reversed within its own length), -1 past the row's end. */
static __device__ __forceinline__ int64_t
rnn_time(const struct rnn_dir &d, int64_t bi, int64_t s)
{
	int64_t len = rnn_len(d, bi);

	return s >= len ? -1 : d.reverse ? len - 1 - s : s;
}

/* Projected input column k of row bi at time t, with the biases (GRU's h-gate R bias stays out with lbr). */
static __device__ __forceinline__ float
rnn_xb(const struct rnn_dir &d, int64_t t, int64_t bi, int64_t k)
{
	float x = d.xw[(t * d.b + bi) * d.gh + k];

	if (d.wb == NULL)
		return x;
	return x + (d.wb[k] + (d.cell == GRAPH_RNN_GRU && d.lbr && k >= 2 * d.h ? 0.0f : d.rb[k]));
}

/* One LSTM unit (gates i, o, f, c in ONNX order; peepholes i, o, f). */
static __device__ void
rnn_lstm_unit(const struct rnn_dir &d, int64_t t, int64_t bi, int64_t j)
{
	const float *g = d.hw + bi * d.gh;
	float *hs = d.hs + bi * d.h, *cs = d.cs + bi * d.h;
	int64_t h = d.h;
	float pi = d.p ? d.p[j] : 0, po = d.p ? d.p[h + j] : 0, pf = d.p ? d.p[2 * h + j] : 0;
	float ig = rnn_act(d, 0, rnn_xb(d, t, bi, j) + g[j] + pi * cs[j]);
	float fg = d.input_forget ? 1.0f - ig : rnn_act(d, 0, rnn_xb(d, t, bi, 2 * h + j) + g[2 * h + j] + pf * cs[j]);
	float cg = rnn_act(d, 1, rnn_xb(d, t, bi, 3 * h + j) + g[3 * h + j]);
	float c = fg * cs[j] + ig * cg;
	float og = rnn_act(d, 0, rnn_xb(d, t, bi, h + j) + g[h + j] + po * c);

	cs[j] = c;
	hs[j] = og * rnn_act_raw(d, 2, c);
}

/* One GRU unit (gates z, r, h); without linear_before_reset hw2 holds (r . H) R_h^T. */
static __device__ void
rnn_gru_unit(const struct rnn_dir &d, int64_t t, int64_t bi, int64_t j)
{
	const float *g = d.hw + bi * d.gh;
	float *hs = d.hs + bi * d.h;
	int64_t h = d.h;
	float z = rnn_act(d, 0, rnn_xb(d, t, bi, j) + g[j]), r = rnn_act(d, 0, rnn_xb(d, t, bi, h + j) + g[h + j]), n;

	if (d.lbr)
		n = rnn_act(d, 1, rnn_xb(d, t, bi, 2 * h + j) + r * (g[2 * h + j] + (d.rb ? d.rb[2 * h + j] : 0.0f)));
	else
		n = rnn_act(d, 1, rnn_xb(d, t, bi, 2 * h + j) + d.hw2[bi * h + j]);
	hs[j] = (1.0f - z) * n + z * hs[j];
}

/* Step s: the cells of the rows still running, and their Y. */
static __global__ void
rnn_gate_kernel(struct rnn_dir d, int64_t s)
{
	CUDA_FOR(i, d.b * d.h) {
		int64_t bi = i / d.h, j = i % d.h, t = rnn_time(d, bi, s);
		if (t < 0)
			continue;
		if (d.cell == GRAPH_RNN_LSTM)
			rnn_lstm_unit(d, t, bi, j);
		else if (d.cell == GRAPH_RNN_GRU)
			rnn_gru_unit(d, t, bi, j);
		else
			d.hs[i] = rnn_act(d, 0, rnn_xb(d, t, bi, j) + d.hw[bi * d.gh + j]);
		if (d.y != NULL)
			d.y[((t * d.ndir + d.dir) * d.b + bi) * d.h + j] = d.hs[i];
	}
}

/* GRU without linear_before_reset, step s: tmp = r . H for the rows running, 0 for the others. */
static __global__ void
rnn_gru_reset_kernel(struct rnn_dir d, int64_t s)
{
	CUDA_FOR(i, d.b * d.h) {
		int64_t bi = i / d.h, j = i % d.h, t = rnn_time(d, bi, s);
		d.tmp[i] = t < 0 ? 0.0f : rnn_act(d, 0, rnn_xb(d, t, bi, d.h + j) + d.hw[bi * d.gh + d.h + j]) * d.hs[i];
	}
}

/* The direction's final states into Y_h / Y_c (NULL: not wanted); a row of length 0 ends in zeros. */
static __global__ void
rnn_final_kernel(struct rnn_dir d, float *yh, float *yc)
{
	CUDA_FOR(i, d.b * d.h) {
		int empty = rnn_len(d, i / d.h) == 0;
		if (yh != NULL)
			yh[d.dir * d.b * d.h + i] = empty ? 0.0f : d.hs[i];
		if (yc != NULL)
			yc[d.dir * d.b * d.h + i] = empty ? 0.0f : d.cs[i];
	}
}

/* Row-major C[m, n] = A[m, k] B[n, k]^T (leading dims lda, ldb, ldc) on the step's cuBLAS handle. */
static int
rnn_gemm(const struct cuda_exec *ex, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
    int64_t ldb, float *c, int64_t ldc, const char *what, char **cause)
{
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t bs = cublasSgemm(ex->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)ldb,
	    a, (int)lda, &zero, c, (int)ldc);

	return bs == CUBLAS_STATUS_SUCCESS ? 0 : cuda_blas_fail(cause, bs, what);
}

/* Queue a direction's initial states: copies of initial_h / initial_c, else zeros. */
static int
rnn_run_init(const struct rnn_params *p, const struct rnn_dir *d, const struct cuda_exec *ex, char **cause)
{
	size_t bytes = (size_t)(d->b * d->h) * sizeof(float);
	const float *src[2] = { p->h0, p->c0 };
	float *dst[2] = { d->hs, d->cs };
	cudaError_t err;

	for (int k = 0; k < 2; k++) {
		if (src[k] != NULL)
			err = cudaMemcpyAsync(dst[k], src[k] + d->dir * d->b * d->h, bytes, cudaMemcpyDeviceToDevice,
			    ex->stream);
		else
			err = cudaMemsetAsync(dst[k], 0, bytes, ex->stream);
		if (err != cudaSuccess)
			return cuda_fail(cause, err, "queueing the initial %s state (%zu bytes)", k ? "cell" : "hidden",
			    bytes);
	}
	return 0;
}

/* Queue one direction: initial states, the input projection, per step recurrence and gates, final states. */
static int
rnn_run_dir(const struct rnn_params *p, const struct rnn_dir *d, const struct cuda_exec *ex, char **cause)
{
	const float *w = p->w + d->dir * d->gh * p->in, *r = p->r + d->dir * d->gh * d->h;
	int64_t rgh = d->cell == GRAPH_RNN_GRU && !d->lbr ? 2 * d->h : d->gh;
	unsigned int grid = cuda_grid(d->b * d->h);

	if (rnn_run_init(p, d, ex, cause) != 0)
		return -1;
	if (d->t > 0 && rnn_gemm(ex, d->t * d->b, d->gh, p->in, p->x, p->in, w, p->in, d->xw, d->gh, "cublasSgemm(RNN input)",
	    cause) != 0)
		return -1;
	for (int64_t s = 0; s < d->t; s++) {
		if (rnn_gemm(ex, d->b, rgh, d->h, d->hs, d->h, r, d->h, d->hw, d->gh, "cublasSgemm(RNN recurrence)",
		    cause) != 0)
			return -1;
		if (rgh != d->gh) {
			rnn_gru_reset_kernel<<<grid, CUDA_THREADS, 0, ex->stream>>>(*d, s);
			if (cuda_launched("rnn_gru_reset_kernel", cause) != 0 ||
			    rnn_gemm(ex, d->b, d->h, d->h, d->tmp, d->h, r + 2 * d->h * d->h, d->h, d->hw2, d->h,
			    "cublasSgemm(GRU reset)", cause) != 0)
				return -1;
		}
		rnn_gate_kernel<<<grid, CUDA_THREADS, 0, ex->stream>>>(*d, s);
		if (cuda_launched("rnn_gate_kernel", cause) != 0)
			return -1;
	}
	if (p->yh == NULL && p->yc == NULL)
		return 0;
	rnn_final_kernel<<<grid, CUDA_THREADS, 0, ex->stream>>>(*d, p->yh, p->yc);
	return cuda_launched("rnn_final_kernel", cause);
}

/* Queue the node: Y zeroed (steps past a row's length stay 0), then each direction. */
static int
rnn_run(const struct cuda_step *st, const struct cuda_exec *ex, char **cause)
{
	const struct rnn_params *p = (const struct rnn_params *)st->p;
	cudaError_t err;

	if (p->d[0].y != NULL && (err = cudaMemsetAsync(p->d[0].y, 0, (size_t)p->ybytes, ex->stream)) != cudaSuccess)
		return cuda_fail(cause, err, "cudaMemsetAsync(Y, %lld bytes)", (long long)p->ybytes);
	for (int k = 0; k < p->d[0].ndir; k++)
		if (rnn_run_dir(p, &p->d[k], ex, cause) != 0)
			return -1;
	return 0;
}

/* Direction k's attributes and pointers into scratch ws (floats laid out as rnn_scratch_floats counts). */
static void
rnn_dir_init(const struct cuda_compile *cc, const struct graph_node *n, struct rnn_dir *d, int k, float *ws)
{
	const struct graph_rnn_attr *a = &n->attr.rnn;
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);

	d->cell = (int)a->cell;
	d->dir = k;
	d->ndir = a->ndir;
	d->reverse = a->ndir == 2 ? k == 1 : a->reverse;
	d->nact = a->cell == GRAPH_RNN_LSTM ? 3 : a->cell == GRAPH_RNN_GRU ? 2 : 1;
	for (int i = 0; i < d->nact; i++) {
		d->act[i] = (int)a->act[k * d->nact + i];
		d->alpha[i] = a->alpha[k * d->nact + i];
		d->beta[i] = a->beta[k * d->nact + i];
	}
	d->clip = a->clip;
	d->lbr = a->linear_before_reset;
	d->input_forget = a->input_forget;
	d->t = xs->dims[0];
	d->b = xs->dims[1];
	d->h = a->hidden;
	d->gh = (a->cell == GRAPH_RNN_LSTM ? 4 : a->cell == GRAPH_RNN_GRU ? 3 : 1) * d->h;	/* GRU: 3 gates, 2 activations */
	d->wb = cuda_in(cc, n, 3) != NULL ? (const float *)cuda_in(cc, n, 3) + k * 2 * d->gh : NULL;
	d->rb = d->wb != NULL ? d->wb + d->gh : NULL;
	d->lens = (const int32_t *)cuda_in(cc, n, 4);
	d->p = a->cell == GRAPH_RNN_LSTM && cuda_in(cc, n, 7) != NULL ? (const float *)cuda_in(cc, n, 7) + k * 3 * d->h :
	    NULL;
	d->xw = ws;
	d->hw = d->xw + d->t * d->b * d->gh;
	d->tmp = d->hw + d->b * d->gh;
	d->hw2 = d->tmp + d->b * d->h;
	d->hs = d->hw2 + d->b * d->h;
	d->cs = d->hs + d->b * d->h;
	d->y = n->outputs[0] >= 0 ? (float *)cuda_out(cc, n, 0) : NULL;
}

/* Output i's address, or NULL when the node has no such output. */
static float *
rnn_out(const struct cuda_compile *cc, const struct graph_node *n, int i)
{
	return i < n->noutputs && n->outputs[i] >= 0 ? (float *)cuda_out(cc, n, i) : NULL;
}

/* Shapes as the CPU backend requires: X [t, b, in]; cuBLAS' int dimensions must hold every GEMM. */
static int
rnn_check(const struct cuda_compile *cc, const struct graph_node *n, char **cause)
{
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	const struct graph_rnn_attr *a = &n->attr.rnn;
	int64_t gh;

	if (xs->ndims != 3 || a->ndir < 1 || a->ndir > 2 || a->hidden < 1 || (int)a->cell < 0 ||
	    a->cell > GRAPH_RNN_LSTM)
		return error_set(cause, "X must be [seq, batch, input] with 1 or 2 directions");
	gh = (a->cell == GRAPH_RNN_LSTM ? 4 : a->cell == GRAPH_RNN_GRU ? 3 : 1) * a->hidden;
	if (xs->dims[0] * xs->dims[1] > INT_MAX || gh > INT_MAX || xs->dims[2] > INT_MAX)
		return error_set(cause, "sequence x batch %lld or gates x hidden %lld exceed cuBLAS' int dims",
		    (long long)(xs->dims[0] * xs->dims[1]), (long long)gh);
	if (graph_shape_elems(cuda_in_shape(cc, n, 1)) != a->ndir * gh * xs->dims[2] ||
	    graph_shape_elems(cuda_in_shape(cc, n, 2)) != a->ndir * gh * a->hidden)
		return error_set(cause, "W or R does not fit the directions, gates, input and hidden sizes");
	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i] >= 0 && (i == 4 ? cuda_in_dtype(cc, n, i) != GRAPH_DT_I32 :
		    cuda_in_dtype(cc, n, i) != GRAPH_DT_F32))
			return error_set(cause, "input %d must be %s", i, i == 4 ? "INT32" : "FP32");
	return 0;
}

/* RNN / GRU / LSTM: scratch for the projections, recurrence and states; nothing to do for an empty X. */
int
cuda_compile_rnn(const struct cuda_compile *cc, const struct graph_node *n, struct cuda_step *st, char **cause)
{
	struct rnn_params *p = (struct rnn_params *)cuda_step_params(st, sizeof *p, cause);
	const struct graph_shape *xs = cuda_in_shape(cc, n, 0);
	int64_t t, b, gh, floats;

	if (p == NULL || rnn_check(cc, n, cause) != 0)
		return -1;
	t = xs->dims[0];
	b = xs->dims[1];
	gh = (n->attr.rnn.cell == GRAPH_RNN_LSTM ? 4 : n->attr.rnn.cell == GRAPH_RNN_GRU ? 3 : 1) * n->attr.rnn.hidden;
	floats = t * b * gh + b * gh + 4 * b * n->attr.rnn.hidden;
	p->x = (const float *)cuda_in(cc, n, 0);
	p->w = (const float *)cuda_in(cc, n, 1);
	p->r = (const float *)cuda_in(cc, n, 2);
	p->h0 = (const float *)cuda_in(cc, n, 5);
	p->c0 = n->attr.rnn.cell == GRAPH_RNN_LSTM ? (const float *)cuda_in(cc, n, 6) : NULL;
	p->yh = rnn_out(cc, n, 1);
	/* Without LSTM's cell state a third output gets the zeros cs holds (as the CPU backend writes). */
	p->yc = rnn_out(cc, n, 2);
	p->in = xs->dims[2];
	p->ybytes = n->outputs[0] >= 0 ? graph_shape_elems(cuda_out_shape(cc, n, 0)) * (int64_t)sizeof(float) : 0;
	if (b == 0 || floats == 0)
		return 0;
	if (cuda_step_scratch(cc, st, (size_t)floats * sizeof(float), cause) != 0)
		return -1;
	for (int k = 0; k < n->attr.rnn.ndir; k++)
		rnn_dir_init(cc, n, &p->d[k], k, (float *)st->ws);
	st->run = rnn_run;
	return 0;
}
