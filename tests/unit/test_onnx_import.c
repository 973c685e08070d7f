/* test_onnx_import.c: whole exported models imported, folded, specialized and run on the CPU kernels vs onnxruntime. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "graph.h"
#include "graph_fold.h"
#include "graph_shape.h"
#include "onnx_decode.h"
#include "onnx_import.h"
#include "test_util.h"

/* Read a whole file; NULL when it cannot be read. */
static void *
read_file(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	void *buf = NULL;
	long n;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf != NULL)
		*len = (size_t)n;
	fclose(f);
	return buf;
}

/* A JSON array of ints as a shape. */
static void
json_shape(const json_t *a, struct graph_shape *s)
{
	size_t i;

	s->ndims = (int)json_array_size(a);
	for (i = 0; i < json_array_size(a) && i < GRAPH_MAX_DIMS; i++)
		s->dims[i] = json_integer_value(json_array_get(a, i));
}

/* Host buffers for every tensor of the specialized graph: constants in place, the rest malloc'ed. */
static void **
alloc_tensors(const struct graph_spec *sp)
{
	void **ptrs = calloc(sp->graph.ntensors, sizeof *ptrs);
	size_t i;

	for (i = 0; ptrs != NULL && i < sp->graph.ntensors; i++) {
		const struct graph_tensor *t = &sp->graph.tensors[i];
		size_t n = (size_t)graph_shape_elems(&sp->shapes[i]) * graph_dtype_size(t->dtype);

		ptrs[i] = (t->flags & GRAPH_TENSOR_CONST) ? (void *)(uintptr_t)t->data : calloc(1, n ? n : 1);
	}
	return ptrs;
}

/* Free the buffers alloc_tensors made. */
static void
free_tensors(const struct graph_spec *sp, void **ptrs)
{
	size_t i;

	for (i = 0; ptrs != NULL && i < sp->graph.ntensors; i++)
		if (!(sp->graph.tensors[i].flags & GRAPH_TENSOR_CONST))
			free(ptrs[i]);
	free(ptrs);
}

/* Run every runtime node in order with cpu_node_run (a simple sequential executor). */
static int
run_graph(const struct graph_spec *sp, void **ptrs)
{
	size_t i;

	for (i = 0; i < sp->graph.nnodes; i++) {
		const struct graph_node *n = &sp->graph.nodes[i];
		size_t ws = cpu_node_workspace(&sp->graph, n, sp->shapes);
		void *w = malloc(ws ? ws : 1);
		char *cause = NULL;
		int rc = w ? cpu_node_run(&sp->graph, n, sp->shapes, ptrs, w, &cause) : -1;

		free(w);
		if (rc < 0) {
			CHECK(0, "run node %zu: %s", i, cause ? cause : "out of memory");
			free(cause);
			return -1;
		}
	}
	return 0;
}

/* Compare y with the reference: |y - r| <= 1e-5 max|r| + 1e-4 |r|. */
static void
compare_output(const char *name, const float *y, const float *r, size_t n)
{
	double maxr = 0, worst = 0;
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		maxr = fmax(maxr, fabs(r[i]));
	for (i = 0; i < n; i++) {
		double d = fabs((double)y[i] - r[i]), tol = 1e-5 * maxr + 1e-4 * fabs(r[i]);

		worst = fmax(worst, d / (maxr > 0 ? maxr : 1));
		bad += !(d <= tol);
	}
	CHECK(bad == 0, "%s: %zu of %zu outputs off (worst |diff|/max|y| %.3g)", name, bad, n, worst);
	printf("  %s: max|y| %.3g, worst |diff|/max|y| %.3g\n", name, maxr, worst);
}

/* Every runtime node must be one the CPU kernels run, and no shape arithmetic may remain. */
static void
check_supported(const char *name, const struct graph_spec *sp)
{
	size_t i;

	for (i = 0; i < sp->graph.nnodes; i++) {
		char *why = NULL;
		const struct graph_node *n = &sp->graph.nodes[i];

		CHECK(n->op != GRAPH_OP_SHAPE && n->op != GRAPH_OP_CONSTANT_OF_SHAPE &&
		    n->op != GRAPH_OP_RANGE, "%s: shape op '%s' left", name, n->name);
		CHECK(cpu_node_supported(&sp->graph, n, &why), "%s: node '%s' unsupported: %s", name,
		    n->name, why ? why : "?");
		free(why);
	}
}

/* Whether two shapes have the same rank and dims. */
static int
same_shape(const struct graph_shape *a, const struct graph_shape *b)
{
	int i;

	if (a->ndims != b->ndims)
		return 0;
	for (i = 0; i < a->ndims; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

/* Inferred output shapes of the specialized graph vs onnxruntime's (or the node test's). */
static void
check_output_shapes(const char *name, const struct graph_spec *sp, const struct graph_shape *in,
    const json_t *outs)
{
	struct graph_shape *s = calloc(sp->graph.ntensors, sizeof *s), want;
	char a[128], b[128], *cause = NULL;
	int k;

	CHECK(s != NULL && graph_infer_shapes(&sp->graph, in, s, &cause) == 0, "%s: infer: %s", name,
	    cause ? cause : "?");
	CHECK((size_t)sp->graph.noutputs == json_array_size(outs), "%s: %d outputs", name,
	    sp->graph.noutputs);
	for (k = 0; s != NULL && cause == NULL && k < sp->graph.noutputs &&
	    (size_t)k < json_array_size(outs); k++) {
		int o = sp->graph.outputs[k];

		json_shape(json_object_get(json_array_get(outs, (size_t)k), "shape"), &want);
		CHECK(same_shape(&s[o], &want) && same_shape(&sp->shapes[o], &want),
		    "%s: output %d shape %s, reference %s", name, k, graph_shape_str(&s[o], a, sizeof a),
		    graph_shape_str(&want, b, sizeof b));
	}
	free(cause);
	free(s);
}

/* Compare output k with its reference file: FP32 within tolerance, other dtypes exactly. */
static void
check_one_output(const char *dir, const char *name, const struct graph_spec *sp, void **ptrs,
    int k, const json_t *ref)
{
	int o = sp->graph.outputs[k];
	enum graph_dtype dt = sp->graph.tensors[o].dtype;
	size_t n = 0, want = (size_t)graph_shape_elems(&sp->shapes[o]) * graph_dtype_size(dt);
	void *r = read_file(dir, json_string_value(json_object_get(ref, "file")), &n);
	const char *rdt = json_string_value(json_object_get(ref, "dtype"));
	char label[512];

	snprintf(label, sizeof label, "%s output %d", name, k);
	CHECK(r != NULL && n == want && (rdt == NULL || strcmp(rdt, graph_dtype_name(dt)) == 0),
	    "%s: reference file, size or dtype (%s vs %s)", label, rdt ? rdt : "FP32",
	    graph_dtype_name(dt));
	if (r != NULL && n == want && dt == GRAPH_DT_F32)
		compare_output(label, ptrs[o], r, n / 4);
	else if (r != NULL && n == want)
		CHECK(memcmp(ptrs[o], r, n) == 0, "%s: values differ", label);
	free(r);
}

/* Feed the input files, run, and compare every output with its reference file. */
static void
check_numeric(const char *dir, const char *name, const struct graph_spec *sp, const json_t *c)
{
	const json_t *ins = json_object_get(c, "inputs"), *outs = json_object_get(c, "outputs");
	void **ptrs = alloc_tensors(sp);
	int k, ok = ptrs != NULL;

	for (k = 0; ok && k < sp->graph.ninputs; k++) {
		int ti = sp->graph.inputs[k];
		size_t xn = 0, want = (size_t)graph_shape_elems(&sp->shapes[ti]) *
		    graph_dtype_size(sp->graph.tensors[ti].dtype);
		void *x = read_file(dir, json_string_value(json_object_get(json_array_get(ins, (size_t)k),
		    "file")), &xn);

		ok = x != NULL && xn == want;
		CHECK(ok, "%s: input file %d (%zu bytes, %zu expected)", name, k, xn, want);
		if (ok)
			memcpy(ptrs[ti], x, xn);
		free(x);
	}
	if (ok && run_graph(sp, ptrs) == 0)
		for (k = 0; k < sp->graph.noutputs && (size_t)k < json_array_size(outs); k++)
			check_one_output(dir, name, sp, ptrs, k, json_array_get(outs, (size_t)k));
	free_tensors(sp, ptrs);
}

/* The declared dims of the model input: batch first, the transformer's sequence a variable. */
static void
check_declared(const char *name, const graph_t *g)
{
	const struct graph_tensor *t = &g->tensors[g->inputs[0]];

	CHECK(g->ninputs == 1 && t->ndims >= 2 && t->dims[0] == GRAPH_DIM_BATCH, "%s: batch dim", name);
	const struct graph_tensor *o = &g->tensors[g->outputs[0]];

	CHECK(g->noutputs == 1 && o->ndims >= 2 && o->dims[0] == GRAPH_DIM_BATCH &&
	    o->dims[o->ndims - 1] == 10, "%s: output dims", name);
	if (strncmp(name, "transformer", 11) == 0)
		CHECK(t->dims[1] == GRAPH_DIM_VAR(0) && g->nvars == 1 && t->dtype == GRAPH_DT_I64 &&
		    o->dims[1] == GRAPH_DIM_VAR(0), "%s: sequence dim not a variable", name);
	else
		CHECK(g->nvars == 0 && t->dtype == GRAPH_DT_F32, "%s: no variable dims expected", name);
}

/*
 * A second specialization at batch 1 (sequence 2) must keep the same runtime
 * nodes on the same tensor indices, so one memory plan serves every shape.
 */
static void
check_same_structure(const char *name, const graph_t *g, const struct graph_spec *sp,
    const struct graph_shape *in)
{
	struct graph_shape small = *in;
	struct graph_spec *s2 = NULL;
	char *cause = NULL;
	size_t i;
	int k, same;

	small.dims[0] = 1;
	if (strncmp(name, "transformer", 11) == 0)
		small.dims[1] = 2;
	CHECK(graph_specialize(g, &cpu_fold_kernels, &small, &s2, &cause) == 0, "%s: batch 1: %s", name, cause);
	same = s2 != NULL && s2->graph.nnodes == sp->graph.nnodes;
	for (i = 0; same && i < sp->graph.nnodes; i++) {
		const struct graph_node *a = &sp->graph.nodes[i], *b = &s2->graph.nodes[i];

		same = sp->node_src[i] == s2->node_src[i] && a->ninputs == b->ninputs &&
		    a->noutputs == b->noutputs;
		for (k = 0; same && k < a->ninputs; k++)
			same = a->inputs[k] == b->inputs[k];
		for (k = 0; same && k < a->noutputs; k++)
			same = a->outputs[k] == b->outputs[k];
	}
	CHECK(same, "%s: the batch-1 specialization has other runtime nodes", name);
	graph_spec_free(s2);
	free(cause);
}

static size_t node_ran, node_excluded;

/* Node tests: a refusal (op, attribute, opset or dtype outside the set) excludes the test, with its reason. */
static int
node_test_excluded(const char *name, int node_test, const char *why)
{
	if (!node_test)
		return 0;
	printf("%s: excluded: %s\n", name, why);
	node_excluded++;
	return 1;
}

/* Whether every runtime node is supported by the CPU kernels (else the reason, malloc'ed). */
static char *
unsupported_reason(const struct graph_spec *sp)
{
	size_t i;

	for (i = 0; i < sp->graph.nnodes; i++) {
		char *why = NULL;

		if (!cpu_node_supported(&sp->graph, &sp->graph.nodes[i], &why))
			return why ? why : strdup("unsupported node");
		free(why);
	}
	return NULL;
}

/* Input shapes of a case (at most 8 inputs). */
static int
case_inputs(const json_t *c, struct graph_shape *in)
{
	const json_t *ins = json_object_get(c, "inputs");
	size_t i;

	for (i = 0; i < json_array_size(ins) && i < 8; i++)
		json_shape(json_object_get(json_array_get(ins, i), "shape"), &in[i]);
	return json_array_size(ins) <= 8 ? (int)i : -1;
}

/* Whole-model checks and the node-count report. */
static void
model_checks(const char *dir, const char *name, const graph_t *g, const struct graph_spec *sp,
    const json_t *c, const struct graph_shape *in, size_t imported, size_t removed)
{
	size_t onnx_nodes = (size_t)json_integer_value(json_object_get(c, "onnx_nodes"));

	printf("%s: %zu ONNX nodes, %zu graph nodes, %zu removed at load, %zu folded for the "
	    "shape, %zu run (%.0f%% of the ONNX nodes gone)\n", name, onnx_nodes, imported,
	    removed, sp->nfolded, sp->graph.nnodes,
	    100.0 * (double)(onnx_nodes - sp->graph.nnodes) / (double)onnx_nodes);
	check_declared(name, g);
	check_same_structure(name, g, sp, in);
	check_supported(name, sp);
	check_output_shapes(name, sp, in, json_object_get(c, "outputs"));
	check_numeric(dir, name, sp, c);
}

/* Import, fold, specialize at the test shape, then check support, shapes and numbers. */
static void
run_case(const char *dir, const json_t *c)
{
	const char *name = json_string_value(json_object_get(c, "name"));
	const char *model = json_string_value(json_object_get(c, "model"));
	int node_test = json_is_true(json_object_get(c, "node_test"));
	struct graph_shape in[8];
	onnx_model_t *m = NULL;
	graph_t *g = NULL;
	struct graph_spec *sp = NULL;
	char path[4096], *cause = NULL, *why = NULL;
	size_t imported = 0, removed = 0;

	snprintf(path, sizeof path, "%s%s%s", model[0] == '/' ? "" : dir, model[0] == '/' ? "" : "/",
	    model);
	CHECK(case_inputs(c, in) >= 0, "%s: too many inputs", name);
	if (json_object_get(c, "excluded") != NULL) {
		node_test_excluded(name, 1, json_string_value(json_object_get(c, "excluded")));
	} else if (onnx_model_load(path, &m, &cause) < 0) {
		CHECK(0, "%s: %s", name, cause);
	} else if (onnx_import(m, &g, &cause) < 0 || (imported = g->nnodes,
	    graph_fold_constants(g, &cpu_fold_kernels, &removed, &cause)) < 0 ||
	    graph_specialize(g, &cpu_fold_kernels, in, &sp, &cause) < 0) {
		if (!node_test_excluded(name, node_test, cause ? cause : "?"))
			CHECK(0, "%s: %s", name, cause ? cause : "?");
	} else if (node_test && (why = unsupported_reason(sp)) != NULL) {
		node_test_excluded(name, node_test, why);
	} else if (node_test) {
		node_ran++;
		check_output_shapes(name, sp, in, json_object_get(c, "outputs"));
		check_numeric(dir, name, sp, c);
	} else {
		model_checks(dir, name, g, sp, c, in, imported, removed);
	}
	free(why);
	free(cause);
	graph_spec_free(sp);
	graph_free(g);
	onnx_model_free(m);
}

/* A model outside the supported set is refused with the expected message. */
static void
run_refused(const char *dir, const json_t *c)
{
	const char *model = json_string_value(json_object_get(c, "model"));
	const json_t *expect = json_object_get(c, "expect");
	onnx_model_t *m = NULL;
	graph_t *g = NULL;
	char path[4096], *cause = NULL;
	size_t i;

	snprintf(path, sizeof path, "%s/%s", dir, model);
	CHECK(onnx_model_load(path, &m, &cause) == 0, "%s: load: %s", model, cause ? cause : "?");
	if (m != NULL) {
		CHECK(onnx_import(m, &g, &cause) < 0 && g == NULL, "%s: imported", model);
		for (i = 0; i < json_array_size(expect); i++)
			CHECK(cause != NULL && strstr(cause, json_string_value(json_array_get(expect, i))),
			    "%s: message '%s' lacks '%s'", model, cause ? cause : "",
			    json_string_value(json_array_get(expect, i)));
		printf("%s: refused: %s\n", model, cause ? cause : "");
	}
	free(cause);
	graph_free(g);
	onnx_model_free(m);
}

int
main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *man;
	char path[4096];
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: test_onnx_import CASES_DIR (made by make_onnx_import_cases.py)\n");
		return TEST_SKIP;
	}
	snprintf(path, sizeof path, "%s/manifest.json", argv[1]);
	if ((man = json_load_file(path, 0, &jerr)) == NULL) {
		fprintf(stderr, "%s: %s\n", path, jerr.text);
		return 1;
	}
	for (i = 0; i < json_array_size(json_object_get(man, "cases")); i++)
		run_case(argv[1], json_array_get(json_object_get(man, "cases"), i));
	for (i = 0; i < json_array_size(json_object_get(man, "refused")); i++)
		run_refused(argv[1], json_array_get(json_object_get(man, "refused"), i));
	if (node_ran + node_excluded > 0) {
		printf("node tests: %zu ran, %zu excluded, %d check(s) failed\n", node_ran,
		    node_excluded, test_failures);
		/* The op set covers far more than this; fewer means imports regressed into refusals. */
		CHECK(node_ran >= 200, "only %zu node tests ran", node_ran);
	}
	else
		CHECK(json_array_size(json_object_get(man, "cases")) >= 10, "too few cases");
	json_decref(man);
	return test_finish("test_onnx_import");
}
