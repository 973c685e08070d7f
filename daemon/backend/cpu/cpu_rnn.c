/* cpu_rnn.c: RNN, GRU and LSTM (ONNX semantics, layout 0): one sgemm for every step's input projection, one per step for the recurrence. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cpu_kernels_impl.h"

/* One direction's run: its weights, the node's shapes, and scratch. */
struct rnn_run {
	const struct graph_rnn_attr *a;
	int64_t t, b, in, h, gh;	/* steps, batch, input size, hidden, gates * hidden */
	int dir, reverse;
	const float *w, *r, *wb, *rb, *p;	/* this direction's W, R, W bias, R bias (NULL: none), peepholes */
	const int32_t *lens;		/* NULL: every sequence is t long */
	float *xw, *hw, *tmp, *hs, *cs;	/* [t*b, gh] projections, [b, gh] recurrence, [b, h] scratch, states */
	float *y;			/* Y [t, ndir, b, h] or NULL */
};

/* f(x) for one of ONNX's recurrent activations, unclipped (LSTM's h of the cell state). */
static float
rnn_act_raw(const struct rnn_run *rr, int k, float x)
{
	float al = rr->a->alpha[k], be = rr->a->beta[k];

	switch (rr->a->act[k]) {
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

/* f(x) of a gate: its pre-activation clipped to [-clip, clip] first when clip is set (as onnxruntime). */
static float
rnn_act(const struct rnn_run *rr, int k, float x)
{
	float c = rr->a->clip;

	if (c > 0)
		x = x < -c ? -c : x > c ? c : x;
	return rnn_act_raw(rr, k, x);
}

/* Steps of batch row bi, and the time index of step s in it (reversed within its own length). */
static int64_t
rnn_time(const struct rnn_run *rr, int64_t bi, int64_t s)
{
	int64_t len = rr->lens != NULL ? rr->lens[bi] : rr->t;

	if (s >= len)
		return -1;
	return rr->reverse ? len - 1 - s : s;
}

/* One LSTM cell for batch row bi at time t: gates i, o, f, c (ONNX order), peepholes i, o, f. */
static void
rnn_lstm_row(const struct rnn_run *rr, int64_t bi, int64_t t)
{
	const float *x = rr->xw + (t * rr->b + bi) * rr->gh, *g = rr->hw + bi * rr->gh;
	float *hs = rr->hs + bi * rr->h, *cs = rr->cs + bi * rr->h;
	int f = rr->dir * 3, h = rr->h;

	for (int64_t j = 0; j < h; j++) {
		float pi = rr->p ? rr->p[j] : 0, po = rr->p ? rr->p[h + j] : 0, pf = rr->p ? rr->p[2 * h + j] : 0;
		float ig = rnn_act(rr, f, x[j] + g[j] + pi * cs[j]);
		float fg = rr->a->input_forget ? 1.0f - ig : rnn_act(rr, f, x[2 * h + j] + g[2 * h + j] + pf * cs[j]);
		float cg = rnn_act(rr, f + 1, x[3 * h + j] + g[3 * h + j]);
		float c = fg * cs[j] + ig * cg;
		float og = rnn_act(rr, f, x[h + j] + g[h + j] + po * c);

		cs[j] = c;
		hs[j] = og * rnn_act_raw(rr, f + 2, c);
	}
}

/* One GRU cell for batch row bi at time t: gates z, r, h; tmp holds (r . H) R_h^T unless linear_before_reset. */
static void
rnn_gru_row(const struct rnn_run *rr, int64_t bi, int64_t t)
{
	const float *x = rr->xw + (t * rr->b + bi) * rr->gh, *g = rr->hw + bi * rr->gh;
	float *hs = rr->hs + bi * rr->h;
	int f = rr->dir * 2, h = rr->h;

	for (int64_t j = 0; j < h; j++) {
		float z = rnn_act(rr, f, x[j] + g[j]), r = rnn_act(rr, f, x[h + j] + g[h + j]), n;

		if (rr->a->linear_before_reset)
			n = rnn_act(rr, f + 1, x[2 * h + j] + r * (g[2 * h + j] + (rr->rb ? rr->rb[2 * h + j] : 0)));
		else
			n = rnn_act(rr, f + 1, x[2 * h + j] + rr->tmp[bi * h + j]);
		hs[j] = (1.0f - z) * n + z * hs[j];
	}
}

/* GRU without linear_before_reset: tmp = (r . H) R_h^T, r computed from this step's gates (rows idle stay 0). */
static void
rnn_gru_reset(const struct rnn_run *rr, int64_t s)
{
	int f = rr->dir * 2, h = rr->h;

	for (int64_t bi = 0; bi < rr->b; bi++) {
		int64_t t = rnn_time(rr, bi, s);
		const float *x = rr->xw + ((t < 0 ? 0 : t) * rr->b + bi) * rr->gh, *g = rr->hw + bi * rr->gh;

		for (int64_t j = 0; j < h; j++)
			rr->tmp[bi * h + j] = t < 0 ? 0 : rnn_act(rr, f, x[h + j] + g[h + j]) * rr->hs[bi * h + j];
	}
	/* tmp is read as the left operand and overwritten by the product: stage through hw's free tail. */
	cpu_sgemm(0, 1, rr->b, h, h, 1.0f, rr->tmp, h, rr->r + 2 * h * h, h, 0.0f, rr->hw + rr->b * rr->gh, h);
	memcpy(rr->tmp, rr->hw + rr->b * rr->gh, (size_t)(rr->b * h) * sizeof(float));
}

/* The input projection of every step: xw = X W^T + W bias + R bias (but GRU's h-gate R bias with linear_before_reset). */
static void
rnn_project(struct rnn_run *rr, const float *x)
{
	int64_t rows = rr->t * rr->b;

	cpu_sgemm(0, 1, rows, rr->gh, rr->in, 1.0f, x, rr->in, rr->w, rr->in, 0.0f, rr->xw, rr->gh);
	if (rr->wb == NULL)
		return;
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < rr->gh; j++) {
			int skip = rr->a->cell == GRAPH_RNN_GRU && rr->a->linear_before_reset && j >= 2 * rr->h;

			rr->xw[i * rr->gh + j] += rr->wb[j] + (skip ? 0 : rr->rb[j]);
		}
}

/* Run one direction over the sequence: per step one recurrent sgemm, then the cells of the rows still running. */
static void
rnn_direction(struct rnn_run *rr, const float *x)
{
	int64_t rgh = rr->a->cell == GRAPH_RNN_GRU && !rr->a->linear_before_reset ? 2 * rr->h : rr->gh;

	rnn_project(rr, x);
	for (int64_t s = 0; s < rr->t; s++) {
		cpu_sgemm(0, 1, rr->b, rgh, rr->h, 1.0f, rr->hs, rr->h, rr->r, rr->h, 0.0f, rr->hw, rr->gh);
		if (rgh != rr->gh)
			rnn_gru_reset(rr, s);
		for (int64_t bi = 0; bi < rr->b; bi++) {
			int64_t t = rnn_time(rr, bi, s);

			if (t < 0)
				continue;
			if (rr->a->cell == GRAPH_RNN_LSTM)
				rnn_lstm_row(rr, bi, t);
			else if (rr->a->cell == GRAPH_RNN_GRU)
				rnn_gru_row(rr, bi, t);
			else
				for (int64_t j = 0; j < rr->h; j++)
					rr->hs[bi * rr->h + j] = rnn_act(rr, rr->dir, rr->xw[(t * rr->b + bi) * rr->gh + j] +
					    rr->hw[bi * rr->gh + j]);
			if (rr->y != NULL)
				memcpy(rr->y + ((t * rr->a->ndir + rr->dir) * rr->b + bi) * rr->h, rr->hs + bi * rr->h,
				    (size_t)rr->h * sizeof(float));
		}
	}
}

/* Gates of the cell. */
static int64_t
rnn_gates(const struct graph_rnn_attr *a)
{
	return a->cell == GRAPH_RNN_LSTM ? 4 : a->cell == GRAPH_RNN_GRU ? 3 : 1;
}

/* Scratch: the projections of every step, the recurrence (+ GRU's staging row block), and the states. */
size_t
cpu_rnn_workspace(const struct cpu_node_ctx *c)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	int64_t h = c->n->attr.rnn.hidden, gh = rnn_gates(&c->n->attr.rnn) * h;

	if (x->ndims != 3)
		return 0;
	return (size_t)(x->dims[0] * x->dims[1] * gh + x->dims[1] * (gh + h) + 3 * x->dims[1] * h) * sizeof(float);
}

/* Set up direction d of the node over the workspace. */
static void
rnn_setup(const struct cpu_node_ctx *c, struct rnn_run *rr, int d)
{
	const struct graph_shape *x = cpu_in_shape(c, 0);
	const struct graph_rnn_attr *a = &c->n->attr.rnn;

	memset(rr, 0, sizeof *rr);
	rr->a = a;
	rr->t = x->dims[0];
	rr->b = x->dims[1];
	rr->in = x->dims[2];
	rr->h = a->hidden;
	rr->gh = rnn_gates(a) * a->hidden;
	rr->dir = d;
	rr->reverse = a->ndir == 2 ? d == 1 : a->reverse;
	rr->w = (const float *)cpu_in(c, 1) + d * rr->gh * rr->in;
	rr->r = (const float *)cpu_in(c, 2) + d * rr->gh * rr->h;
	rr->wb = cpu_has_in(c, 3) ? (const float *)cpu_in(c, 3) + d * 2 * rr->gh : NULL;
	rr->rb = rr->wb != NULL ? rr->wb + rr->gh : NULL;
	rr->lens = cpu_has_in(c, 4) ? cpu_in(c, 4) : NULL;
	rr->p = a->cell == GRAPH_RNN_LSTM && cpu_has_in(c, 7) ? (const float *)cpu_in(c, 7) + d * 3 * rr->h : NULL;
	rr->xw = c->ws;
	rr->hw = rr->xw + rr->t * rr->b * rr->gh;
	rr->tmp = rr->hw + rr->b * (rr->gh + rr->h);
	rr->hs = rr->tmp + rr->b * rr->h;
	rr->cs = rr->hs + rr->b * rr->h;
	rr->y = c->n->outputs[0] >= 0 ? cpu_out(c, 0) : NULL;
}

/* A sequence of length 0 ends in zero states, not its initial ones (as onnxruntime). */
static void
rnn_empty_rows(const struct rnn_run *rr)
{
	for (int64_t bi = 0; rr->lens != NULL && bi < rr->b; bi++)
		if (rr->lens[bi] == 0) {
			memset(rr->hs + bi * rr->h, 0, (size_t)rr->h * sizeof(float));
			memset(rr->cs + bi * rr->h, 0, (size_t)rr->h * sizeof(float));
		}
}

/* RNN: each direction from its initial states (zeros when absent); Y zero past each sequence's length. */
int
cpu_rnn_run(const struct cpu_node_ctx *c, char **cause)
{
	const struct graph_rnn_attr *a = &c->n->attr.rnn;
	struct rnn_run rr;
	size_t st;

	if (cpu_in_shape(c, 0)->ndims != 3 || a->ndir < 1 || a->ndir > 2 || a->hidden < 1)
		return cpu_fail(cause, "X must be [seq, batch, input] with 1 or 2 directions");
	for (int64_t i = 0; cpu_has_in(c, 4) && i < cpu_in_shape(c, 0)->dims[1]; i++)
		if (((const int32_t *)cpu_in(c, 4))[i] < 0 || ((const int32_t *)cpu_in(c, 4))[i] > cpu_in_shape(c, 0)->dims[0])
			return cpu_fail(cause, "sequence_lens[%lld] is outside [0, seq]", (long long)i);
	if (c->n->outputs[0] >= 0)
		memset(cpu_out(c, 0), 0, (size_t)cpu_elems(cpu_out_shape(c, 0)) * sizeof(float));
	for (int d = 0; d < a->ndir; d++) {
		rnn_setup(c, &rr, d);
		st = (size_t)(rr.b * rr.h) * sizeof(float);
		if (cpu_has_in(c, 5))
			memcpy(rr.hs, (const float *)cpu_in(c, 5) + d * rr.b * rr.h, st);
		else
			memset(rr.hs, 0, st);
		if (a->cell == GRAPH_RNN_LSTM && cpu_has_in(c, 6))
			memcpy(rr.cs, (const float *)cpu_in(c, 6) + d * rr.b * rr.h, st);
		else
			memset(rr.cs, 0, st);
		rnn_direction(&rr, cpu_in(c, 0));
		rnn_empty_rows(&rr);
		if (c->n->noutputs > 1 && c->n->outputs[1] >= 0)
			memcpy((float *)cpu_out(c, 1) + d * rr.b * rr.h, rr.hs, st);
		if (c->n->noutputs > 2 && c->n->outputs[2] >= 0)
			memcpy((float *)cpu_out(c, 2) + d * rr.b * rr.h, rr.cs, st);
	}
	return 0;
}
