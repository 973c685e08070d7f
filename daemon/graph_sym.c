/* graph_sym.c: hash-consed integer expressions in a normal form, and their evaluation programs (graph_sym.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph_sym.h"

/* Operands a flattened sum or product may have. */
#define SYM_MAX_TERMS 64

/* A term of a sum: coef * mono (mono never a constant or a sum). */
struct sym_term {
	int64_t coef;
	int32_t mono;
};

/* Saturating helpers for bounds: INT64_MIN / INT64_MAX mean "unknown". */
static int64_t
sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (a == INT64_MIN || b == INT64_MIN)
		return INT64_MIN;
	if (a == INT64_MAX || b == INT64_MAX || __builtin_add_overflow(a, b, &r))
		return INT64_MAX;
	return r;
}

/* a * b for a, b >= 0, saturating at INT64_MAX. */
static int64_t
sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

void
sym_pool_init(struct sym_pool *p)
{
	memset(p, 0, sizeof *p);
}

void
sym_pool_free(struct sym_pool *p)
{
	free(p->nodes);
	free(p->args);
	free(p->table);
	memset(p, 0, sizeof *p);
}

/* Hash of a node's identity (op, k, f, operands). */
static uint64_t
node_hash(uint8_t op, int64_t k, double f, const int32_t *args, size_t n)
{
	uint64_t h = 1469598103934665603ULL, fb;
	size_t i;

	memcpy(&fb, &f, sizeof fb);
	h = (h ^ op) * 1099511628211ULL;
	h = (h ^ (uint64_t)k) * 1099511628211ULL;
	h = (h ^ fb) * 1099511628211ULL;
	for (i = 0; i < n; i++)
		h = (h ^ (uint32_t)args[i]) * 1099511628211ULL;
	return h ^ (h >> 29);
}

/* Whether node id is (op, k, f, args). */
static int
node_is(const struct sym_pool *p, int32_t id, uint8_t op, int64_t k, double f, const int32_t *args, size_t n)
{
	const struct sym_node *x = &p->nodes[id];

	return x->op == op && x->k == k && memcmp(&x->f, &f, sizeof f) == 0 && x->nargs == n &&
	    (n == 0 || memcmp(&p->args[x->first], args, n * sizeof *args) == 0);
}

/* Double the hash table and insert every node again. */
static int
table_grow(struct sym_pool *p)
{
	size_t cap = p->table_cap ? p->table_cap * 2 : 256, i, j;
	int32_t *t = xmalloc(cap * sizeof *t);

	if (t == NULL)
		return -1;
	for (i = 0; i < cap; i++)
		t[i] = -1;
	for (i = 0; i < p->n; i++) {
		const struct sym_node *x = &p->nodes[i];
		j = node_hash(x->op, x->k, x->f, &p->args[x->first], x->nargs) & (cap - 1);
		while (t[j] >= 0)
			j = (j + 1) & (cap - 1);
		t[j] = (int32_t)i;
	}
	free(p->table);
	p->table = t;
	p->table_cap = cap;
	return 0;
}

/* Append a node (room made first); its id. */
static int
node_append(struct sym_pool *p, uint8_t op, int64_t k, double f, const int32_t *args, size_t n,
    int64_t lo, int64_t hi)
{
	struct sym_node *x;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct sym_node *nn = xrealloc(p->nodes, cap * sizeof *nn);
		if (nn == NULL)
			return -1;
		p->nodes = nn;
		p->cap = cap;
	}
	if (p->nargs + n > p->args_cap) {
		size_t cap = p->args_cap ? p->args_cap * 2 : 512;
		int32_t *na;
		while (cap < p->nargs + n)
			cap *= 2;
		if ((na = xrealloc(p->args, cap * sizeof *na)) == NULL)
			return -1;
		p->args = na;
		p->args_cap = cap;
	}
	x = &p->nodes[p->n];
	memset(x, 0, sizeof *x);
	x->op = op;
	x->k = k;
	x->f = f;
	x->nargs = (uint16_t)n;
	x->first = (uint32_t)p->nargs;
	x->lo = lo;
	x->hi = hi < lo ? lo : hi;
	if (n)
		memcpy(&p->args[p->nargs], args, n * sizeof *args);
	p->nargs += n;
	return (int)p->n++;
}

/* The id of (op, k, f, args) with bounds [lo, hi], made when new. */
static int
intern(struct sym_pool *p, uint8_t op, int64_t k, double f, const int32_t *args, size_t n, int64_t lo, int64_t hi)
{
	size_t j;
	int id;

	if (p->oom)
		return SYM_NONE;
	if ((p->n + 1) * 2 > p->table_cap && table_grow(p) != 0)
		goto oom;
	j = node_hash(op, k, f, args, n) & (p->table_cap - 1);
	for (; p->table[j] >= 0; j = (j + 1) & (p->table_cap - 1))
		if (node_is(p, p->table[j], op, k, f, args, n))
			return p->table[j];
	if ((id = node_append(p, op, k, f, args, n, lo, hi)) < 0)
		goto oom;
	p->table[j] = id;
	return id;
oom:
	p->oom = 1;
	return SYM_NONE;
}

int
sym_const(struct sym_pool *p, int64_t v)
{
	return intern(p, SYM_CONST, v, 0, NULL, 0, v, v);
}

int
sym_var(struct sym_pool *p, int index)
{
	int64_t hi = index >= 0 && index < SYM_MAX_VARS && p->var_hi[index] > 0 ? p->var_hi[index] : SYM_DIM_MAX;

	return intern(p, SYM_VAR, index, 0, NULL, 0, 1, hi);
}

/* Whether e is a constant. */
int
sym_is_const(const struct sym_pool *p, int e, int64_t *v)
{
	if (e < 0 || p->nodes[e].op != SYM_CONST)
		return 0;
	if (v != NULL)
		*v = p->nodes[e].k;
	return 1;
}

void
sym_bounds(const struct sym_pool *p, int e, int64_t *lo, int64_t *hi)
{
	*lo = e < 0 ? INT64_MIN : p->nodes[e].lo;
	*hi = e < 0 ? INT64_MAX : p->nodes[e].hi;
}

/* Variables e reads (a walk of its operands; expressions are small). */
uint64_t
sym_vars(const struct sym_pool *p, int e)
{
	const struct sym_node *x;
	uint64_t m = 0;
	unsigned i;

	if (e < 0)
		return 0;
	x = &p->nodes[e];
	if (x->op == SYM_VAR)
		return x->k < 64 ? (uint64_t)1 << x->k : 0;
	for (i = 0; i < x->nargs; i++)
		m |= sym_vars(p, p->args[x->first + i]);
	return m;
}

/* ---- products ---- */

/* Split e into coef * factors (sorted, none a constant or a product); -1 when too many. */
static int
prod_split(const struct sym_pool *p, int e, int64_t *coef, int32_t *f, int *nf)
{
	const struct sym_node *x = &p->nodes[e];

	if (x->op == SYM_CONST) {
		*coef = x->k;
		*nf = 0;
	} else if (x->op == SYM_MUL) {
		if (x->nargs > SYM_MAX_TERMS)
			return -1;
		*coef = x->k;
		*nf = x->nargs;
		memcpy(f, &p->args[x->first], x->nargs * sizeof *f);
	} else {
		*coef = 1;
		*nf = 1;
		f[0] = e;
	}
	return 0;
}

static int sum_make(struct sym_pool *p, int64_t k, struct sym_term *t, int nt);

/* coef * the product of sorted factors f. */
static int
prod_make(struct sym_pool *p, int64_t coef, const int32_t *f, int nf)
{
	int64_t lo = coef, hi = coef;
	int i, nonneg = coef >= 0;

	if (coef == 0 || nf == 0)
		return sym_const(p, coef);
	if (coef == 1 && nf == 1)
		return f[0];
	if (nf == 1 && p->nodes[f[0]].op == SYM_ADD) {
		/* A constant times a sum is distributed, keeping sums flat. */
		const struct sym_node *s = &p->nodes[f[0]];
		struct sym_term t[SYM_MAX_TERMS];
		int64_t k;
		unsigned j;

		if (s->nargs > SYM_MAX_TERMS || __builtin_mul_overflow(s->k, coef, &k))
			return SYM_NONE;
		for (j = 0; j < s->nargs; j++) {
			t[j].coef = coef;
			t[j].mono = p->args[s->first + j];
		}
		return sum_make(p, k, t, s->nargs);
	}
	for (i = 0; i < nf && nonneg; i++)
		nonneg = p->nodes[f[i]].lo >= 0;
	if (!nonneg) {
		lo = INT64_MIN;
		hi = INT64_MAX;
	} else {
		for (i = 0; i < nf; i++) {
			lo = sat_mul(lo, p->nodes[f[i]].lo);
			hi = p->nodes[f[i]].hi == INT64_MAX ? INT64_MAX : sat_mul(hi, p->nodes[f[i]].hi);
		}
	}
	return intern(p, SYM_MUL, coef, 0, f, (size_t)nf, lo, hi);
}

/* Insertion sort of n ids. */
static void
sort_ids(int32_t *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int32_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

int
sym_mul(struct sym_pool *p, int a, int b)
{
	int32_t f[2 * SYM_MAX_TERMS];
	int64_t ca, cb, c;
	int na, nb;

	if (a < 0 || b < 0)
		return SYM_NONE;
	if (prod_split(p, a, &ca, f, &na) != 0 || prod_split(p, b, &cb, f + na, &nb) != 0 ||
	    na + nb > SYM_MAX_TERMS || __builtin_mul_overflow(ca, cb, &c))
		return SYM_NONE;
	sort_ids(f, na + nb);
	return prod_make(p, c, f, na + nb);
}

/* ---- sums ---- */

/* coef * mono as one term node. */
static int
term_node(struct sym_pool *p, const struct sym_term *t)
{
	int32_t f[SYM_MAX_TERMS];
	int64_t c, k;
	int nf;

	if (prod_split(p, t->mono, &c, f, &nf) != 0 || __builtin_mul_overflow(c, t->coef, &k))
		return SYM_NONE;
	return prod_make(p, k, f, nf);
}

/* Sort terms by mono and combine like terms. */
static int
terms_normalise(struct sym_term *t, int n)
{
	int i, j, out = 0;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && t[j - 1].mono > t[j].mono; j--) {
			struct sym_term x = t[j];
			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	for (i = 0; i < n; i++) {
		if (out > 0 && t[out - 1].mono == t[i].mono) {
			if (__builtin_add_overflow(t[out - 1].coef, t[i].coef, &t[out - 1].coef))
				return -1;
		} else
			t[out++] = t[i];
		if (t[out - 1].coef == 0)
			out--;
	}
	return out;
}

/* k + the sum of the terms. */
static int
sum_make(struct sym_pool *p, int64_t k, struct sym_term *t, int nt)
{
	int32_t ids[SYM_MAX_TERMS];
	int64_t lo = k, hi = k, tlo, thi;
	int i, n = terms_normalise(t, nt);

	if (n < 0)
		return SYM_NONE;
	if (n == 0)
		return sym_const(p, k);
	for (i = 0; i < n; i++) {
		if ((ids[i] = term_node(p, &t[i])) < 0)
			return SYM_NONE;
		sym_bounds(p, ids[i], &tlo, &thi);
		lo = sat_add(lo, tlo);
		hi = thi == INT64_MIN ? INT64_MAX : sat_add(hi, thi);
	}
	if (n == 1 && k == 0)
		return ids[0];
	if (lo == INT64_MAX)
		lo = INT64_MIN;
	return intern(p, SYM_ADD, k, 0, ids, (size_t)n, lo, hi);
}

/* Split e into its constant and terms (scaled by sign). */
static int
sum_split(const struct sym_pool *p, int e, int64_t sign, int64_t *k, struct sym_term *t, int *nt)
{
	const struct sym_node *x = &p->nodes[e];
	int32_t f[SYM_MAX_TERMS];
	const int32_t *terms = &e;
	int64_t c;
	unsigned i, n = 1;
	int nf;

	if (x->op == SYM_CONST)
		return __builtin_mul_overflow(x->k, sign, &c) || __builtin_add_overflow(*k, c, k) ? -1 : 0;
	if (x->op == SYM_ADD) {
		if (__builtin_mul_overflow(x->k, sign, &c) || __builtin_add_overflow(*k, c, k))
			return -1;
		terms = &p->args[x->first];
		n = x->nargs;
	}
	for (i = 0; i < n; i++) {
		if (*nt == SYM_MAX_TERMS || prod_split(p, terms[i], &c, f, &nf) != 0 ||
		    __builtin_mul_overflow(c, sign, &t[*nt].coef))
			return -1;
		t[*nt].mono = prod_make((struct sym_pool *)p, 1, f, nf);
		if (t[(*nt)++].mono < 0)
			return -1;
	}
	return 0;
}

/* a + sign * b. */
static int
sum_of(struct sym_pool *p, int a, int b, int64_t sign)
{
	struct sym_term t[SYM_MAX_TERMS];
	int64_t k = 0;
	int nt = 0;

	if (a < 0 || b < 0)
		return SYM_NONE;
	if (sum_split(p, a, 1, &k, t, &nt) != 0 || sum_split(p, b, sign, &k, t, &nt) != 0)
		return SYM_NONE;
	return sum_make(p, k, t, nt);
}

int
sym_add(struct sym_pool *p, int a, int b)
{
	return sum_of(p, a, b, 1);
}

int
sym_sub(struct sym_pool *p, int a, int b)
{
	return sum_of(p, a, b, -1);
}

/* ---- division ---- */

/* a / c exactly when every coefficient of the sum a divides by c (c != 0): the id, else SYM_NONE. */
static int
sum_div_exact(struct sym_pool *p, int a, int64_t c)
{
	struct sym_term t[SYM_MAX_TERMS];
	int64_t k = 0;
	int nt = 0, i;

	if (c == 0 || c == -1 || sum_split(p, a, 1, &k, t, &nt) != 0 || k % c != 0)
		return SYM_NONE;
	for (i = 0; i < nt; i++) {
		if (t[i].coef % c != 0)
			return SYM_NONE;
		t[i].coef /= c;
	}
	return sum_make(p, k / c, t, nt);
}

/* Greatest common divisor of |a| and |b| (b != 0). */
static int64_t
gcd64(int64_t a, int64_t b)
{
	uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b, t;

	while (y != 0) {
		t = x % y;
		x = y;
		y = t;
	}
	return x > INT64_MAX ? 1 : (int64_t)x;
}

/*
 * a / b with the factors they share cancelled: a truncated quotient depends
 * only on the rational a / b, so dividing both by a common non-zero factor
 * (a shared factor that is at least 1, the coefficients' gcd) keeps it.
 * *ra and *rb get the reduced operands; 1 when anything was cancelled.
 */
static int
div_reduce(struct sym_pool *p, int a, int b, int *ra, int *rb)
{
	int32_t fa[SYM_MAX_TERMS], fb[SYM_MAX_TERMS], keep_a[SYM_MAX_TERMS], keep_b[SYM_MAX_TERMS];
	int64_t ca, cb, g;
	int na, nb, i = 0, j = 0, ka = 0, kb = 0, cut = 0;

	if (prod_split(p, a, &ca, fa, &na) != 0 || prod_split(p, b, &cb, fb, &nb) != 0 || cb == 0 || ca == INT64_MIN ||
	    cb == INT64_MIN)
		return 0;
	while (i < na || j < nb) {
		if (i < na && j < nb && fa[i] == fb[j] && p->nodes[fa[i]].lo >= 1) {
			i++, j++, cut = 1;
		} else if (j >= nb || (i < na && fa[i] < fb[j]))
			keep_a[ka++] = fa[i++];
		else
			keep_b[kb++] = fb[j++];
	}
	g = ca != 0 ? gcd64(ca, cb) : 1;
	if (g > 1)
		ca /= g, cb /= g, cut = 1;
	if (!cut)
		return 0;
	*ra = prod_make(p, ca, keep_a, ka);
	*rb = prod_make(p, cb, keep_b, kb);
	return *ra >= 0 && *rb >= 0;
}

/* a / b when b's factors are among a's and its coefficient divides a's (exact): the id, else SYM_NONE. */
static int
prod_div_exact(struct sym_pool *p, int a, int b)
{
	int32_t fa[SYM_MAX_TERMS], fb[SYM_MAX_TERMS], rest[SYM_MAX_TERMS];
	int64_t ca, cb;
	int na, nb, i, j = 0, nr = 0;

	if (prod_split(p, a, &ca, fa, &na) != 0 || prod_split(p, b, &cb, fb, &nb) != 0 || cb == 0 ||
	    (cb == -1 && ca == INT64_MIN) || ca % cb != 0)
		return SYM_NONE;
	for (i = 0; i < na; i++) {
		if (j < nb && fa[i] == fb[j])
			j++;
		else
			rest[nr++] = fa[i];
	}
	if (j < nb)
		return SYM_NONE;
	return prod_make(p, ca / cb, rest, nr);
}

/* Bounds of a / b or a % b when a >= 0 and b is a constant >= 1 (else unknown). */
static void
div_bounds(const struct sym_pool *p, int a, int b, int mod, int64_t *lo, int64_t *hi)
{
	int64_t c;

	*lo = INT64_MIN;
	*hi = INT64_MAX;
	if (!sym_is_const(p, b, &c) || c < 1 || p->nodes[a].lo < 0)
		return;
	*lo = mod ? 0 : p->nodes[a].lo / c;
	*hi = mod ? c - 1 : p->nodes[a].hi / c;
}

int
sym_div(struct sym_pool *p, int a, int b)
{
	int64_t x, y, lo, hi;
	int32_t args[2];
	int r, ra, rb;

	if (a < 0 || b < 0)
		return SYM_NONE;
	if (sym_is_const(p, a, &x) && sym_is_const(p, b, &y) && y != 0 && !(x == INT64_MIN && y == -1))
		return sym_const(p, x / y);
	if (sym_is_const(p, b, &y) && y == 1)
		return a;
	if ((r = prod_div_exact(p, a, b)) >= 0 ||
	    (sym_is_const(p, b, &y) && (r = sum_div_exact(p, a, y)) >= 0))
		return r;
	if (p->oom)
		return SYM_NONE;
	if (div_reduce(p, a, b, &ra, &rb))
		return sym_div(p, ra, rb);
	div_bounds(p, a, b, 0, &lo, &hi);
	args[0] = a;
	args[1] = b;
	return intern(p, SYM_DIV, 0, 0, args, 2, lo, hi);
}

int
sym_mod(struct sym_pool *p, int a, int b)
{
	int64_t x, y, lo, hi;
	int32_t args[2];

	if (a < 0 || b < 0)
		return SYM_NONE;
	if (sym_is_const(p, a, &x) && sym_is_const(p, b, &y) && y != 0)
		return sym_const(p, y == -1 ? 0 : x % y);
	if (sym_is_const(p, b, &y) && (y == 1 || y == -1))
		return sym_const(p, 0);
	if (prod_div_exact(p, a, b) >= 0 || (sym_is_const(p, b, &y) && sum_div_exact(p, a, y) >= 0))
		return sym_const(p, 0);
	if (p->oom)
		return SYM_NONE;
	div_bounds(p, a, b, 1, &lo, &hi);
	args[0] = a;
	args[1] = b;
	return intern(p, SYM_MOD, 0, 0, args, 2, lo, hi);
}

int
sym_ceil_div(struct sym_pool *p, int a, int b)
{
	return sym_div(p, sym_add(p, a, sym_sub(p, b, sym_const(p, 1))), b);
}

/* ---- min, max, comparisons, logic ---- */

/* A binary node of a commutative op with operands sorted. */
static int
binary_node(struct sym_pool *p, uint8_t op, int a, int b, int commutative, int64_t lo, int64_t hi)
{
	int32_t args[2] = { a, b };

	if (commutative && a > b) {
		args[0] = b;
		args[1] = a;
	}
	return intern(p, op, 0, 0, args, 2, lo, hi);
}

int
sym_min(struct sym_pool *p, int a, int b)
{
	const struct sym_node *x, *y;

	if (a < 0 || b < 0)
		return SYM_NONE;
	x = &p->nodes[a];
	y = &p->nodes[b];
	if (a == b || x->hi <= y->lo)
		return a;
	if (y->hi <= x->lo)
		return b;
	return binary_node(p, SYM_MIN, a, b, 1, x->lo < y->lo ? x->lo : y->lo, x->hi < y->hi ? x->hi : y->hi);
}

int
sym_max(struct sym_pool *p, int a, int b)
{
	const struct sym_node *x, *y;

	if (a < 0 || b < 0)
		return SYM_NONE;
	x = &p->nodes[a];
	y = &p->nodes[b];
	if (a == b || x->lo >= y->hi)
		return a;
	if (y->lo >= x->hi)
		return b;
	return binary_node(p, SYM_MAX, a, b, 1, x->lo > y->lo ? x->lo : y->lo, x->hi > y->hi ? x->hi : y->hi);
}

int
sym_eq(struct sym_pool *p, int a, int b)
{
	const struct sym_node *x, *y;

	if (a < 0 || b < 0)
		return SYM_NONE;
	x = &p->nodes[a];
	y = &p->nodes[b];
	if (a == b)
		return sym_const(p, 1);
	if (x->op == SYM_CONST && y->op == SYM_CONST)
		return sym_const(p, x->k == y->k);
	if (x->hi < y->lo || y->hi < x->lo)
		return sym_const(p, 0);
	return binary_node(p, SYM_EQ, a, b, 1, 0, 1);
}

int
sym_lt(struct sym_pool *p, int a, int b)
{
	const struct sym_node *x, *y;

	if (a < 0 || b < 0)
		return SYM_NONE;
	x = &p->nodes[a];
	y = &p->nodes[b];
	if (x->hi < y->lo)
		return sym_const(p, 1);
	if (a == b || x->lo >= y->hi)
		return sym_const(p, 0);
	return binary_node(p, SYM_LT, a, b, 0, 0, 1);
}

int
sym_le(struct sym_pool *p, int a, int b)
{
	const struct sym_node *x, *y;

	if (a < 0 || b < 0)
		return SYM_NONE;
	x = &p->nodes[a];
	y = &p->nodes[b];
	if (a == b || x->hi <= y->lo)
		return sym_const(p, 1);
	if (x->lo > y->hi)
		return sym_const(p, 0);
	return binary_node(p, SYM_LE, a, b, 0, 0, 1);
}

/* Whether e is the constant v. */
static int
is_k(const struct sym_pool *p, int e, int64_t v)
{
	int64_t x;

	return sym_is_const(p, e, &x) && x == v;
}

int
sym_not(struct sym_pool *p, int a)
{
	return sym_eq(p, a, sym_const(p, 0));
}

/* a as a truth value (0 or 1). */
static int
truth(struct sym_pool *p, int a)
{
	if (a < 0)
		return SYM_NONE;
	if (p->nodes[a].lo >= 0 && p->nodes[a].hi <= 1)
		return a;
	return sym_not(p, sym_not(p, a));
}

int
sym_and(struct sym_pool *p, int a, int b)
{
	if ((a = truth(p, a)) < 0 || (b = truth(p, b)) < 0)
		return SYM_NONE;
	if (is_k(p, a, 0) || is_k(p, b, 0))
		return sym_const(p, 0);
	if (is_k(p, a, 1) || a == b)
		return b;
	if (is_k(p, b, 1))
		return a;
	return binary_node(p, SYM_AND, a, b, 1, 0, 1);
}

int
sym_or(struct sym_pool *p, int a, int b)
{
	if ((a = truth(p, a)) < 0 || (b = truth(p, b)) < 0)
		return SYM_NONE;
	if (is_k(p, a, 1) || is_k(p, b, 1))
		return sym_const(p, 1);
	if (is_k(p, a, 0) || a == b)
		return b;
	if (is_k(p, b, 0))
		return a;
	return binary_node(p, SYM_OR, a, b, 1, 0, 1);
}

int
sym_select(struct sym_pool *p, int c, int a, int b)
{
	int64_t v;
	int32_t args[3] = { c, a, b };

	/* A decided condition takes its operand even when the other one could not be formed (an overflow). */
	if (sym_is_const(p, c, &v))
		return v ? a : b;
	if (c < 0 || a < 0 || b < 0)
		return SYM_NONE;
	if (a == b)
		return a;
	return intern(p, SYM_SELECT, 0, 0, args, 3, p->nodes[a].lo < p->nodes[b].lo ? p->nodes[a].lo : p->nodes[b].lo,
	    p->nodes[a].hi > p->nodes[b].hi ? p->nodes[a].hi : p->nodes[b].hi);
}

int
sym_floor_scale(struct sym_pool *p, int a, double f)
{
	int64_t x, lo = INT64_MIN, hi = INT64_MAX;
	int32_t args[1] = { a };

	if (a < 0 || !(f > 0) || !isfinite(f))
		return SYM_NONE;
	if (sym_is_const(p, a, &x))
		return sym_const(p, (int64_t)floor((double)x * f));
	if (f == 1.0)
		return a;
	if (p->nodes[a].lo >= 0 && p->nodes[a].hi < SYM_DIM_MAX * 2) {
		lo = (int64_t)floor((double)p->nodes[a].lo * f);
		hi = (int64_t)floor((double)p->nodes[a].hi * f);
	}
	return intern(p, SYM_FLOOR_SCALE, 0, f, args, 1, lo, hi);
}

/* ---- programs ---- */

/* Mark every node the roots reach. */
static void
mark_reach(const struct sym_pool *p, int e, unsigned char *seen)
{
	const struct sym_node *x = &p->nodes[e];
	unsigned i;

	if (seen[e])
		return;
	seen[e] = 1;
	for (i = 0; i < x->nargs; i++)
		mark_reach(p, p->args[x->first + i], seen);
}

int
sym_prog_build(const struct sym_pool *p, const int32_t *roots, size_t nroots, struct sym_prog *out,
    int32_t *slots, char **cause)
{
	unsigned char *seen = xcalloc(p->n + 1, 1);
	int32_t *map = xmalloc((p->n + 1) * sizeof *map);
	size_t i, n = 0, na = 0, j;

	memset(out, 0, sizeof *out);
	if (seen == NULL || map == NULL)
		goto oom;
	for (i = 0; i < nroots; i++)
		mark_reach(p, roots[i], seen);
	for (i = 0; i < p->n; i++)
		if (seen[i]) {
			map[i] = (int32_t)n++;
			na += p->nodes[i].nargs;
		}
	out->code = xcalloc(n + 1, sizeof *out->code);
	out->args = xcalloc(na + 1, sizeof *out->args);
	if (out->code == NULL || out->args == NULL)
		goto oom;
	/* Ids grow with creation and operands are made first, so id order is an evaluation order. */
	for (i = 0, na = 0; i < p->n; i++) {
		struct sym_node *x;

		if (!seen[i])
			continue;
		x = &out->code[out->n++];
		*x = p->nodes[i];
		x->first = (uint32_t)na;
		for (j = 0; j < x->nargs; j++)
			out->args[na++] = map[p->args[p->nodes[i].first + j]];
		if (x->op == SYM_VAR && x->k + 1 > out->nvars)
			out->nvars = (int)x->k + 1;
	}
	for (i = 0; i < nroots; i++)
		slots[i] = map[roots[i]];
	free(seen);
	free(map);
	return 0;
oom:
	free(seen);
	free(map);
	sym_prog_free(out);
	return error_set(cause, "out of memory");
}

void
sym_prog_free(struct sym_prog *g)
{
	free(g->code);
	free(g->args);
	memset(g, 0, sizeof *g);
}

/* Evaluate an n-ary sum or product node. */
static int
eval_nary(const struct sym_node *x, const int32_t *a, const int64_t *vals, int64_t *r)
{
	int64_t acc = x->k, t;
	unsigned i;

	for (i = 0; i < x->nargs; i++) {
		t = vals[a[i]];
		if (x->op == SYM_ADD ? __builtin_add_overflow(acc, t, &acc) : __builtin_mul_overflow(acc, t, &acc))
			return -1;
	}
	*r = acc;
	return 0;
}

/* Evaluate one node from its operands' values. */
static int
eval_node(const struct sym_node *x, const int32_t *a, const int64_t *vals, const int64_t *vars, int64_t *r)
{
	int64_t u = x->nargs > 0 ? vals[a[0]] : 0, v = x->nargs > 1 ? vals[a[1]] : 0;

	switch (x->op) {
	case SYM_CONST: *r = x->k; return 0;
	case SYM_VAR: *r = vars[x->k]; return 0;
	case SYM_ADD:
	case SYM_MUL: return eval_nary(x, a, vals, r);
	case SYM_DIV:
	case SYM_MOD:
		if (v == 0 || (u == INT64_MIN && v == -1))
			return -1;
		*r = x->op == SYM_DIV ? u / v : u % v;
		return 0;
	case SYM_MIN: *r = u < v ? u : v; return 0;
	case SYM_MAX: *r = u > v ? u : v; return 0;
	case SYM_EQ: *r = u == v; return 0;
	case SYM_LT: *r = u < v; return 0;
	case SYM_LE: *r = u <= v; return 0;
	case SYM_AND: *r = u && v; return 0;
	case SYM_OR: *r = u || v; return 0;
	case SYM_SELECT: *r = u ? v : vals[a[2]]; return 0;
	case SYM_FLOOR_SCALE: {
		double d = floor((double)u * x->f);
		if (!(d > -9.2e18 && d < 9.2e18))
			return -1;
		*r = (int64_t)d;
		return 0;
	}
	default: return -1;
	}
}

/* Whether node x's value is poisoned: a SELECT only by its condition and the operand it takes. */
static int
eval_poisoned(const struct sym_node *x, const int32_t *a, const int64_t *vals, const unsigned char *bad)
{
	unsigned i;

	if (x->op == SYM_SELECT)
		return bad[a[0]] || bad[vals[a[0]] ? a[1] : a[2]];
	for (i = 0; i < x->nargs; i++)
		if (bad[a[i]])
			return 1;
	return 0;
}

int
sym_prog_eval(const struct sym_prog *g, const int64_t *vars, int64_t *vals, unsigned char *bad)
{
	size_t i;
	int nbad = 0;

	for (i = 0; i < g->n; i++) {
		const int32_t *a = &g->args[g->code[i].first];

		bad[i] = eval_poisoned(&g->code[i], a, vals, bad) ||
		    eval_node(&g->code[i], a, vals, vars, &vals[i]) != 0;
		if (bad[i])
			vals[i] = 0;
		nbad += bad[i];
	}
	return nbad;
}
