/*
 * test_graph_sym.c: the symbolic dim expressions.  Random expression trees
 * are built both as pool expressions (whose normal form rewrites them) and
 * as plain trees this file evaluates directly with 128-bit arithmetic; at
 * random variable values the two must agree (or the pool must mark the
 * value poisoned exactly when the direct evaluation overflows or divides by
 * zero on the path taken).  Then the normal form's promises: expressions
 * equal by it share an id, and the clamps it may drop on dims.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_sym.h"
#include "test_util.h"

#define NVARS 3
/* A subtraction in the tree (the pool has none: it is a sum with a negated term). */
#define T_SUB 100
#define MAXN 4096

/* A plain expression tree node: what the pool's expression was built from. */
struct tnode {
	int op;			/* enum sym_op, or -1 for a constant, -2 for a variable */
	int64_t k;
	int a, b, c;		/* children (tree indices) */
	int id;			/* the pool's id for it */
};

static struct tnode tree[MAXN];
static int ntree;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A direct evaluation: 0 with *v set, -1 when it overflows int64 or divides by zero. */
static int
eval_tree(int i, const int64_t *vars, int64_t *v)
{
	const struct tnode *t = &tree[i];
	int64_t x = 0, y = 0, c = 0;
	__int128 r;

	if (t->op == -1) {
		*v = t->k;
		return 0;
	}
	if (t->op == -2) {
		*v = vars[t->k];
		return 0;
	}
	if (t->op == SYM_SELECT) {
		if (eval_tree(t->a, vars, &c) != 0)
			return -1;
		return eval_tree(c ? t->b : t->c, vars, v);
	}
	if (eval_tree(t->a, vars, &x) != 0 || eval_tree(t->b, vars, &y) != 0)
		return -1;
	switch (t->op) {
	case SYM_ADD: r = (__int128)x + y; break;
	case T_SUB: r = (__int128)x - y; break;
	case SYM_MUL: r = (__int128)x * y; break;
	case SYM_DIV: if (y == 0) return -1; r = x / y; break;
	case SYM_MOD: if (y == 0) return -1; r = x % y; break;
	case SYM_MIN: r = x < y ? x : y; break;
	case SYM_MAX: r = x > y ? x : y; break;
	case SYM_EQ: r = x == y; break;
	case SYM_LT: r = x < y; break;
	case SYM_LE: r = x <= y; break;
	default: return -1;
	}
	if (r > INT64_MAX || r < INT64_MIN)
		return -1;
	*v = (int64_t)r;
	return 0;
}

/* Add a random tree node over earlier ones, building its pool expression beside it. */
static void
grow(struct sym_pool *p)
{
	static const int ops[] = { SYM_ADD, SYM_ADD, SYM_MUL, SYM_DIV, SYM_MOD, SYM_MIN, SYM_MAX, SYM_EQ, SYM_LT,
		SYM_LE, SYM_SELECT, SYM_ADD };
	struct tnode *t = &tree[ntree];
	int kind = (int)(next() % 10);

	memset(t, 0, sizeof *t);
	if (ntree < 8 || kind == 0) {
		if (next() % 2) {
			t->op = -1;
			t->k = (int64_t)(next() % 9) - 3;
			t->id = sym_const(p, t->k);
		} else {
			t->op = -2;
			t->k = (int64_t)(next() % NVARS);
			t->id = sym_var(p, (int)t->k);
		}
		ntree++;
		return;
	}
	t->op = ops[next() % (sizeof ops / sizeof ops[0])];
	t->a = (int)(next() % (uint64_t)ntree);
	t->b = (int)(next() % (uint64_t)ntree);
	t->c = (int)(next() % (uint64_t)ntree);
	switch (t->op) {
	case SYM_ADD:
		if (next() % 2) {
			t->op = T_SUB;
			t->id = sym_sub(p, tree[t->a].id, tree[t->b].id);
		} else
			t->id = sym_add(p, tree[t->a].id, tree[t->b].id);
		break;
	case SYM_MUL: t->id = sym_mul(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_DIV: t->id = sym_div(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_MOD: t->id = sym_mod(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_MIN: t->id = sym_min(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_MAX: t->id = sym_max(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_EQ: t->id = sym_eq(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_LT: t->id = sym_lt(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_LE: t->id = sym_le(p, tree[t->a].id, tree[t->b].id); break;
	case SYM_SELECT: t->id = sym_select(p, tree[t->a].id, tree[t->b].id, tree[t->c].id); break;
	}
	ntree++;
}

/* Random trees against their pool expressions at random variable values. */
static void
test_random_agreement(void)
{
	int round, i, checked = 0, poisoned = 0, dropped = 0;

	for (round = 0; round < 40; round++) {
		struct sym_pool p;
		struct sym_prog g;
		int32_t roots[MAXN], slots[MAXN];
		int64_t vals[4 * MAXN], vars[NVARS], want;
		unsigned char bad[4 * MAXN];
		int nroots = 0, trial;
		char *cause = NULL;

		sym_pool_init(&p);
		ntree = 0;
		while (ntree < 300)
			grow(&p);
		for (i = 0; i < ntree; i++)
			if (tree[i].id >= 0)
				roots[nroots++] = tree[i].id;
			else
				dropped++;
		CHECK(!p.oom, "pool out of memory");
		CHECK(sym_prog_build(&p, roots, (size_t)nroots, &g, slots, &cause) == 0, "%s", cause);
		CHECK(g.n <= 4 * MAXN, "program of %zu values", g.n);
		for (trial = 0; trial < 50 && g.n <= 4 * MAXN; trial++) {
			int r = 0;
			for (i = 0; i < NVARS; i++)
				vars[i] = 1 + (int64_t)(next() % (trial < 25 ? 8 : 1000));
			sym_prog_eval(&g, vars, vals, bad);
			for (i = 0; i < ntree; i++) {
				if (tree[i].id < 0)
					continue;
				if (eval_tree(i, vars, &want) != 0) {
					/* Undefined directly: the pool may have simplified it away, or poisoned it. */
					r++;
					poisoned += bad[slots[r - 1]];
					continue;
				}
				CHECK(!bad[slots[r]] && vals[slots[r]] == want,
				    "round %d node %d (op %d) at (%lld,%lld,%lld): pool %lld%s, direct %lld", round, i,
				    tree[i].op, (long long)vars[0], (long long)vars[1], (long long)vars[2],
				    (long long)vals[slots[r]], bad[slots[r]] ? " (poisoned)" : "", (long long)want);
				r++;
				checked++;
			}
		}
		sym_prog_free(&g);
		sym_pool_free(&p);
	}
	printf("random agreement: %d values checked, %d undefined (%d of them poisoned), %d not built\n", checked,
	    0, poisoned, dropped);
	CHECK(checked > 100000, "only %d values checked", checked);
}

/* What the normal form promises: equal forms share an id; clamps on dims drop. */
static void
test_normal_form(void)
{
	struct sym_pool p;
	int T, N, two, one, zero;
	int64_t v;

	sym_pool_init(&p);
	T = sym_var(&p, 1);
	N = sym_var(&p, 0);
	one = sym_const(&p, 1);
	two = sym_const(&p, 2);
	zero = sym_const(&p, 0);
	CHECK(sym_add(&p, sym_add(&p, T, one), one) == sym_add(&p, T, two), "(T + 1) + 1 == T + 2");
	CHECK(sym_mul(&p, two, sym_add(&p, T, one)) == sym_add(&p, sym_mul(&p, T, two), two), "2 (T + 1) == 2T + 2");
	CHECK(sym_add(&p, T, N) == sym_add(&p, N, T), "T + N == N + T");
	CHECK(sym_sub(&p, sym_add(&p, T, N), N) == T, "T + N - N == T");
	CHECK(sym_div(&p, sym_mul(&p, sym_mul(&p, N, T), sym_const(&p, 80)), sym_mul(&p, N, sym_const(&p, 80))) == T,
	    "80 N T / 80 N == T");
	CHECK(sym_div(&p, sym_add(&p, sym_mul(&p, T, two), sym_const(&p, 4)), two) == sym_add(&p, T, two),
	    "(2T + 4) / 2 == T + 2");
	CHECK(sym_mod(&p, sym_mul(&p, N, T), T) == zero, "N T mod T == 0");
	CHECK(sym_div(&p, sym_mul(&p, N, T), sym_mul(&p, N, sym_const(&p, 4))) == sym_div(&p, T, sym_const(&p, 4)),
	    "N T / 4 N == T / 4 (a shared factor >= 1 cancels)");
	CHECK(sym_div(&p, sym_mul(&p, T, sym_const(&p, 6)), sym_const(&p, 4)) ==
	    sym_div(&p, sym_mul(&p, T, sym_const(&p, 3)), two), "6 T / 4 == 3 T / 2");
	CHECK(sym_min(&p, T, sym_const(&p, INT64_MAX)) == T, "min(T, INT64_MAX) == T");
	CHECK(sym_max(&p, sym_sub(&p, T, one), zero) == sym_sub(&p, T, one), "max(T - 1, 0) == T - 1");
	CHECK(sym_is_const(&p, sym_eq(&p, T, T), &v) && v == 1, "T == T");
	CHECK(sym_is_const(&p, sym_lt(&p, T, zero), &v) && v == 0, "T < 0 is false");
	CHECK(sym_min(&p, T, sym_const(&p, 64)) != T, "min(T, 64) stays");
	CHECK(sym_div(&p, sym_add(&p, T, one), two) != T, "(T + 1) / 2 stays");
	CHECK(!(sym_vars(&p, sym_add(&p, T, one)) & 1u) && (sym_vars(&p, sym_mul(&p, T, N)) & 1u), "variables read");
	sym_pool_free(&p);
}

/* Overflow and division by zero poison values, and a select taking a clean operand stays clean. */
static void
test_poison(void)
{
	struct sym_pool p;
	struct sym_prog g;
	int32_t roots[3], slots[3];
	int64_t vals[64], vars[2] = { 1, 0 };
	unsigned char bad[64];
	int T, big, div0, sel;
	char *cause = NULL;

	sym_pool_init(&p);
	T = sym_var(&p, 1);
	big = sym_mul(&p, T, sym_const(&p, INT64_MAX / 2));
	div0 = sym_div(&p, sym_const(&p, 7), sym_sub(&p, T, sym_const(&p, 5)));
	sel = sym_select(&p, sym_eq(&p, T, sym_const(&p, 5)), sym_const(&p, 42), div0);
	roots[0] = big;
	roots[1] = div0;
	roots[2] = sel;
	CHECK(sym_prog_build(&p, roots, 3, &g, slots, &cause) == 0, "%s", cause);
	CHECK(g.n <= 64, "program size");
	vars[1] = 5;
	sym_prog_eval(&g, vars, vals, bad);
	CHECK(bad[slots[0]] && bad[slots[1]] && !bad[slots[2]] && vals[slots[2]] == 42,
	    "T = 5: overflow %d, 7 / 0 %d, select %d = %lld", bad[slots[0]], bad[slots[1]], bad[slots[2]],
	    (long long)vals[slots[2]]);
	vars[1] = 2;
	sym_prog_eval(&g, vars, vals, bad);
	CHECK(!bad[slots[0]] && vals[slots[0]] == INT64_MAX / 2 * 2 && !bad[slots[1]] && vals[slots[1]] == -2 &&
	    vals[slots[2]] == -2, "T = 2");
	sym_prog_free(&g);
	sym_pool_free(&p);
}

int
main(void)
{
	test_normal_form();
	test_poison();
	test_random_agreement();
	return test_finish("test_graph_sym");
}
