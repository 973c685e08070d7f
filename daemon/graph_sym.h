/* graph_sym.h: integer expressions over a graph's batch and variable dims, and programs that evaluate them. */
#ifndef INFERD_GRAPH_SYM_H
#define INFERD_GRAPH_SYM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract.  A pool holds integer expressions over variables (the batch is
 * variable 0, the graph's k-th variable dim is variable 1 + k), each named by
 * an id (>= 0).  Expressions are hash-consed and kept in a normal form
 * (constants folded, sums and products flattened with their terms sorted and
 * like terms combined, common factors cancelled in a division), so two
 * expressions equal by that form get the same id: equal ids are equal for
 * every variable value; different ids may still be equal.  Every
 * constructor takes SYM_NONE for an operand that is not known and then
 * returns SYM_NONE, as it does when memory runs out (pool.oom set), so
 * callers test once at the end.
 *
 * Division and remainder are C's (truncation towards zero), as ONNX's
 * integer Div; comparisons and the logical ops give 0 or 1.  Each node
 * carries bounds known from its operands (a variable lies in [1, var_hi[v]],
 * by default 2^40, the largest dim a shape may have), which the normal form
 * uses to drop clamps and decide comparisons, such as min(x, INT64_MAX) on a
 * dim, or min(T, 64) once T is known to be at most 64.
 *
 * A program (sym_prog) is the part of a pool that some roots reach, in
 * evaluation order, detached from the pool: sym_prog_eval computes every
 * root for concrete variable values in a few nanoseconds per node, with
 * overflow and division by zero marked rather than wrapped.
 */

#define SYM_NONE (-1)
/* The largest value a variable (a dim) takes. */
#define SYM_DIM_MAX ((int64_t)1 << 40)

enum sym_op {
	SYM_CONST = 0,		/* k */
	SYM_VAR,		/* variable k */
	SYM_ADD,		/* k + the sum of the operands (terms, sorted) */
	SYM_MUL,		/* k * the product of the operands (factors, sorted) */
	SYM_DIV,		/* a / b, truncated */
	SYM_MOD,		/* a % b, C's sign */
	SYM_MIN,
	SYM_MAX,
	SYM_EQ,			/* a == b */
	SYM_LT,			/* a < b */
	SYM_LE,			/* a <= b */
	SYM_AND,		/* a && b */
	SYM_OR,			/* a || b */
	SYM_SELECT,		/* a ? b : c */
	SYM_FLOOR_SCALE,	/* floor((double)a * f), as Resize sizes a dim by a scale */
	SYM_OP_COUNT
};

struct sym_node {
	uint8_t op;
	uint16_t nargs;
	uint32_t first;		/* operands: args[first .. first + nargs) */
	int64_t k;
	double f;
	int64_t lo, hi;		/* bounds: lo <= value <= hi for every variable value */
};

/* Variables a pool may bound below SYM_DIM_MAX (sym_pool.var_hi). */
#define SYM_MAX_VARS 129

struct sym_pool {
	int64_t var_hi[SYM_MAX_VARS];	/* variable v's largest value (0: SYM_DIM_MAX), set before any sym_var */
	struct sym_node *nodes;
	size_t n, cap;
	int32_t *args;
	size_t nargs, args_cap;
	int32_t *table;		/* hash table of node ids, -1 empty */
	size_t table_cap;
	int oom;
};

void sym_pool_init(struct sym_pool *p);
void sym_pool_free(struct sym_pool *p);

int sym_const(struct sym_pool *p, int64_t v);
int sym_var(struct sym_pool *p, int index);
int sym_add(struct sym_pool *p, int a, int b);
int sym_sub(struct sym_pool *p, int a, int b);
int sym_mul(struct sym_pool *p, int a, int b);
int sym_div(struct sym_pool *p, int a, int b);
int sym_mod(struct sym_pool *p, int a, int b);
int sym_min(struct sym_pool *p, int a, int b);
int sym_max(struct sym_pool *p, int a, int b);
int sym_eq(struct sym_pool *p, int a, int b);
int sym_lt(struct sym_pool *p, int a, int b);
int sym_le(struct sym_pool *p, int a, int b);
int sym_and(struct sym_pool *p, int a, int b);
int sym_or(struct sym_pool *p, int a, int b);
int sym_not(struct sym_pool *p, int a);
int sym_select(struct sym_pool *p, int c, int a, int b);
int sym_floor_scale(struct sym_pool *p, int a, double f);
/* ceil(a / b) for a >= 0 and b >= 1: (a + b - 1) / b. */
int sym_ceil_div(struct sym_pool *p, int a, int b);

/* Whether e is a constant (its value in *v when v is non-NULL). */
int sym_is_const(const struct sym_pool *p, int e, int64_t *v);
/* The bounds known of e (lo = INT64_MIN, hi = INT64_MAX when nothing is; both for SYM_NONE). */
void sym_bounds(const struct sym_pool *p, int e, int64_t *lo, int64_t *hi);
/* Bit v set for every variable v < 64 that e reads. */
uint64_t sym_vars(const struct sym_pool *p, int e);

/* An evaluation program: nodes in order, operands as indices of earlier nodes. */
struct sym_prog {
	size_t n;
	struct sym_node *code;
	int32_t *args;
	int nvars;		/* variables it reads are 0 .. nvars - 1 */
};

/*
 * Build the program computing roots[0 .. nroots) (ids of p, never
 * SYM_NONE); slots[i] receives root i's index in the values sym_prog_eval
 * fills.  -1 with a cause when memory runs out.
 */
int sym_prog_build(const struct sym_pool *p, const int32_t *roots, size_t nroots, struct sym_prog *out,
    int32_t *slots, char **cause);
void sym_prog_free(struct sym_prog *g);
/*
 * Evaluate g for variable values vars[0 .. g->nvars) into vals[0 .. g->n).
 * A value that overflows or divides by zero is poisoned (bad[i] = 1), and so
 * is every value computed from it, except a select whose taken operand is
 * clean.  Returns the number of poisoned values.
 */
int sym_prog_eval(const struct sym_prog *g, const int64_t *vars, int64_t *vals, unsigned char *bad);

#ifdef __cplusplus
}
#endif

#endif
