/* graph_einsum.c: Einsum equations: parsing ONNX's text, expanding the ellipsis for concrete ranks, label sizes. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "error.h"
#include "graph_einsum.h"

/* The id of a label letter, or -1. */
static int
label_id(char ch)
{
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a';
	if (ch >= 'A' && ch <= 'Z')
		return 26 + (ch - 'A');
	return -1;
}

/* The letter of an id (for ordering an implicit output as ONNX does: by character). */
static char
label_char(int id)
{
	return (char)(id < 26 ? 'a' + id : 'A' + (id - 26));
}

/* Parse one term (letters and at most one "...") from s[0 .. len) into labels; -1 when malformed. */
static int
parse_term(const char *s, size_t len, signed char *labels, int *n)
{
	int ell = 0;
	size_t i;

	*n = 0;
	for (i = 0; i < len; i++) {
		if (*n > GRAPH_MAX_DIMS)
			return -1;
		if (s[i] == '.') {
			if (ell || i + 3 > len || strncmp(s + i, "...", 3) != 0)
				return -1;
			ell = 1;
			i += 2;
			labels[(*n)++] = GRAPH_EINSUM_ELLIPSIS;
			continue;
		}
		if (label_id(s[i]) < 0)
			return -1;
		labels[(*n)++] = (signed char)label_id(s[i]);
	}
	return *n - ell > GRAPH_MAX_DIMS ? -1 : 0;
}

/* Whether labels[0 .. n) holds id. */
static int
has_label(const signed char *labels, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (labels[i] == id)
			return 1;
	return 0;
}

/* The implicit output: the ellipsis if any operand has one, then the letters used once, by character. */
static void
implicit_output(struct graph_einsum_attr *a)
{
	int count[GRAPH_EINSUM_LETTERS] = { 0 }, ell = 0, n = 0;

	for (int k = 0; k < a->ninputs; k++)
		for (int i = 0; i < a->nlabels[k]; i++) {
			if (a->labels[k][i] == GRAPH_EINSUM_ELLIPSIS)
				ell = 1;
			else
				count[a->labels[k][i]]++;
		}
	if (ell)
		a->labels[2][n++] = GRAPH_EINSUM_ELLIPSIS;
	for (char ch = 'A'; ch <= 'z'; ch++)
		if (label_id(ch) >= 0 && count[label_id(ch)] == 1 && n <= GRAPH_MAX_DIMS)
			a->labels[2][n++] = (signed char)label_id(ch);
	a->nlabels[2] = n;
}

/* Check an explicit output: no label twice, each from an operand, the ellipsis where the operands have one. */
static int
check_output(const struct graph_einsum_attr *a, const char *eq, char **cause)
{
	int in_ell = 0;

	for (int k = 0; k < a->ninputs; k++)
		in_ell |= has_label(a->labels[k], a->nlabels[k], GRAPH_EINSUM_ELLIPSIS);
	for (int i = 0; i < a->nlabels[2]; i++) {
		int id = a->labels[2][i], found = 0;

		for (int k = 0; k < a->ninputs; k++)
			found |= has_label(a->labels[k], a->nlabels[k], id);
		if (!found || has_label(a->labels[2], i, id))
			return error_set(cause, "Einsum equation '%s': output label '%s' %s", eq,
			    id == GRAPH_EINSUM_ELLIPSIS ? "..." : (char[2]){ label_char(id), 0 },
			    found ? "appears twice" : "is in no operand");
	}
	if (in_ell && !has_label(a->labels[2], a->nlabels[2], GRAPH_EINSUM_ELLIPSIS))
		return error_set(cause, "Einsum equation '%s': an ellipsis summed away (not in the output) is not "
		    "supported", eq);
	return 0;
}

/* Parse an equation over ninputs operands (spaces ignored; an implicit output made explicit). */
int
graph_einsum_parse(const char *eq, int ninputs, struct graph_einsum_attr *a, char **cause)
{
	char buf[256];
	const char *arrow, *p;
	size_t n = 0;
	int k = 0;

	memset(a, 0, sizeof *a);
	for (p = eq; *p != '\0' && n + 1 < sizeof buf; p++)
		if (*p != ' ')
			buf[n++] = *p;
	buf[n] = '\0';
	if (*p != '\0' || ninputs < 1 || ninputs > 2)
		return error_set(cause, "Einsum equation '%s' over %d operands: 1 or 2 operands of an equation "
		    "under 256 characters are supported", eq, ninputs);
	a->ninputs = ninputs;
	arrow = strstr(buf, "->");
	for (p = buf; k < 3; k++) {
		const char *end = k < ninputs - 1 ? strchr(p, ',') : arrow != NULL ? arrow : buf + n;

		if (end == NULL || (k == ninputs - 1 && memchr(p, ',', (size_t)(end - p)) != NULL) ||
		    parse_term(p, (size_t)(end - p), a->labels[k], &a->nlabels[k]) < 0)
			return error_set(cause, "Einsum equation '%s': malformed, or not one term per operand (%d)",
			    eq, ninputs);
		if (k == ninputs - 1)
			break;
		p = end + 1;
	}
	if (arrow == NULL) {
		implicit_output(a);
		return 0;
	}
	if (parse_term(arrow + 2, strlen(arrow + 2), a->labels[2], &a->nlabels[2]) < 0)
		return error_set(cause, "Einsum equation '%s': malformed output", eq);
	return check_output(a, eq, cause);
}

/* One term's dims' ids for a rank (its ellipsis width then rank - letters, aligned right within widest). */
static int
expand_term(const signed char *labels, int n, int rank, int widest, signed char *lab)
{
	int ell = has_label(labels, n, GRAPH_EINSUM_ELLIPSIS), w = ell ? rank - (n - 1) : 0, d = 0;

	if ((!ell && rank != n) || w < 0 || w > widest || rank > GRAPH_MAX_DIMS)
		return -1;
	for (int i = 0; i < n; i++) {
		if (labels[i] != GRAPH_EINSUM_ELLIPSIS) {
			lab[d++] = labels[i];
			continue;
		}
		for (int j = 0; j < w; j++)
			lab[d++] = (signed char)(GRAPH_EINSUM_LETTERS + widest - w + j);
	}
	return 0;
}

/* Every dim's label for the operands' ranks, the ellipses aligned right within the widest. */
int
graph_einsum_expand(const struct graph_einsum_attr *a, const int *ranks, struct graph_einsum_dims *d,
    char **cause)
{
	int widest = 0, k;

	memset(d, 0, sizeof *d);
	d->ninputs = a->ninputs;
	for (k = 0; k < a->ninputs; k++) {
		int ell = has_label(a->labels[k], a->nlabels[k], GRAPH_EINSUM_ELLIPSIS);

		if (ell && ranks[k] - (a->nlabels[k] - 1) > widest)
			widest = ranks[k] - (a->nlabels[k] - 1);
	}
	for (k = 0; k < a->ninputs; k++) {
		d->rank[k] = ranks[k];
		if (expand_term(a->labels[k], a->nlabels[k], ranks[k], widest, d->lab[k]) < 0)
			return error_set(cause, "Einsum operand %d of rank %d does not fit its term of the equation",
			    k, ranks[k]);
	}
	d->rank[2] = a->nlabels[2] - (has_label(a->labels[2], a->nlabels[2], GRAPH_EINSUM_ELLIPSIS) ? 1 - widest : 0);
	if (d->rank[2] > GRAPH_MAX_DIMS || expand_term(a->labels[2], a->nlabels[2], d->rank[2], widest, d->lab[2]) < 0)
		return error_set(cause, "Einsum output beyond the maximum rank");
	return 0;
}

/* Each label's size from the operands' shapes (ellipsis dims broadcast). */
int
graph_einsum_sizes(const struct graph_einsum_dims *d, const struct graph_shape *const *in, int64_t *size,
    char **cause)
{
	for (int id = 0; id < GRAPH_EINSUM_IDS; id++)
		size[id] = -1;
	for (int k = 0; k < d->ninputs; k++)
		for (int i = 0; i < d->rank[k]; i++) {
			int id = d->lab[k][i];
			int64_t v = in[k]->dims[i];

			if (size[id] < 0 || (id >= GRAPH_EINSUM_LETTERS && size[id] == 1))
				size[id] = v;
			else if (size[id] != v && !(id >= GRAPH_EINSUM_LETTERS && v == 1))
				return error_set(cause, "Einsum operand %d's dim %d is %lld where the same label is %lld",
				    k, i, (long long)v, (long long)size[id]);
		}
	return 0;
}
