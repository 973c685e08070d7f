/* test_cpu_kernels_ort.c: run the one-node cases cpu_kernels_ref.py recorded from onnxruntime through cpu_node_run and compare. */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_node_fixture.h"
#include "test_util.h"

#define TOL 1e-5

static const char *dir;

/* Integer attribute (def when absent). */
static int64_t
attr_int(json_t *a, const char *key, int64_t def)
{
	json_t *v = json_object_get(a, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

/* Float attribute (def when absent). */
static float
attr_float(json_t *a, const char *key, float def)
{
	json_t *v = json_object_get(a, key);

	return json_is_number(v) ? (float)json_number_value(v) : def;
}

/* Integer array attribute into out (at most max); returns its length. */
static int
attr_ints(json_t *a, const char *key, int64_t *out, int max)
{
	json_t *v = json_object_get(a, key), *e;
	size_t i;

	json_array_foreach(v, i, e) {
		if ((int)i >= max)
			break;
		out[i] = json_integer_value(e);
	}
	return json_is_array(v) ? (int)json_array_size(v) : 0;
}

/* Window attributes (Conv, ConvTranspose, pools). */
static void
set_window(struct graph_window_attr *w, json_t *a)
{
	w->nspatial = (int)attr_int(a, "nspatial", 0);
	attr_ints(a, "kernel", w->kernel, 3);
	attr_ints(a, "stride", w->stride, 3);
	attr_ints(a, "dilation", w->dilation, 3);
	attr_ints(a, "pad_begin", w->pad_begin, 3);
	attr_ints(a, "pad_end", w->pad_end, 3);
	attr_ints(a, "output_padding", w->output_padding, 3);
	w->group = attr_int(a, "group", 1);
}

/* Op name in the case file to graph op; -1 when unknown. */
static int
op_parse(const char *op, enum graph_op *out)
{
	static const char *const names[] = { "GEMM", "MATMUL", "CONV", "CONV_TRANSPOSE", "POOL", "SOFTMAX",
	    "LAYERNORM", "GATHER", "SLICE", "RESIZE", "PAD", "REDUCE", "CAST", "UNARY", "BINARY", "PRELU",
	    "WHERE", "TRANSPOSE", "EXPAND", "CONCAT", "BATCHNORM", "GATHER_ELEMENTS" };
	static const enum graph_op ops[] = { GRAPH_OP_GEMM, GRAPH_OP_MATMUL, GRAPH_OP_CONV,
	    GRAPH_OP_CONV_TRANSPOSE, GRAPH_OP_POOL, GRAPH_OP_SOFTMAX, GRAPH_OP_LAYERNORM, GRAPH_OP_GATHER,
	    GRAPH_OP_SLICE, GRAPH_OP_RESIZE, GRAPH_OP_PAD, GRAPH_OP_REDUCE, GRAPH_OP_CAST, GRAPH_OP_UNARY,
	    GRAPH_OP_BINARY, GRAPH_OP_PRELU, GRAPH_OP_WHERE, GRAPH_OP_TRANSPOSE, GRAPH_OP_EXPAND, GRAPH_OP_CONCAT,
	    GRAPH_OP_BATCHNORM, GRAPH_OP_GATHER_ELEMENTS };

	for (size_t k = 0; op != NULL && k < sizeof(names) / sizeof(names[0]); k++)
		if (strcmp(names[k], op) == 0) {
			*out = ops[k];
			return 0;
		}
	return -1;
}

/* Resize attributes: mode, coordinate and nearest modes, scales or sizes. */
static void
set_resize(struct graph_resize_attr *r, json_t *a)
{
	json_t *s = json_object_get(a, "scales"), *e;
	size_t i;

	r->mode = (enum graph_resize_mode)attr_int(a, "mode", 0);
	r->coord = (int)attr_int(a, "coord", 0);
	r->nearest = (int)attr_int(a, "nearest", 0);
	r->nsizes = attr_ints(a, "sizes", r->sizes, GRAPH_MAX_DIMS);
	json_array_foreach(s, i, e)
		if (i < GRAPH_MAX_DIMS)
			r->scales[i] = (float)json_number_value(e);
	r->nscales = json_is_array(s) ? (int)json_array_size(s) : 0;
}

/* Attributes of the window, pool, resize and data-movement ops. */
static void
set_shape_attrs(struct graph_node *n, json_t *a)
{
	switch (n->op) {
	case GRAPH_OP_CONV: case GRAPH_OP_CONV_TRANSPOSE:
		set_window(&n->attr.conv, a);
		break;
	case GRAPH_OP_POOL:
		set_window(&n->attr.pool.w, a);
		n->attr.pool.kind = (enum graph_pool_kind)attr_int(a, "kind", 0);
		n->attr.pool.global = (int)attr_int(a, "global", 0);
		n->attr.pool.ceil_mode = (int)attr_int(a, "ceil_mode", 0);
		n->attr.pool.count_include_pad = (int)attr_int(a, "count_include_pad", 0);
		break;
	case GRAPH_OP_RESIZE:
		set_resize(&n->attr.resize, a);
		break;
	case GRAPH_OP_GATHER: case GRAPH_OP_GATHER_ELEMENTS:
		n->attr.gather.axis = attr_int(a, "axis", 0);
		break;
	case GRAPH_OP_SLICE:
		n->attr.slice.naxes = attr_ints(a, "starts", n->attr.slice.starts, GRAPH_MAX_DIMS);
		attr_ints(a, "ends", n->attr.slice.ends, GRAPH_MAX_DIMS);
		attr_ints(a, "axes", n->attr.slice.axes, GRAPH_MAX_DIMS);
		attr_ints(a, "steps", n->attr.slice.steps, GRAPH_MAX_DIMS);
		break;
	case GRAPH_OP_PAD:
		n->attr.pad.mode = (enum graph_pad_mode)attr_int(a, "mode", 0);
		n->attr.pad.npads = attr_ints(a, "pads", n->attr.pad.pads, 2 * GRAPH_MAX_DIMS);
		n->attr.pad.value = attr_float(a, "value", 0);
		break;
	case GRAPH_OP_TRANSPOSE:
		n->attr.transpose.nperm = attr_ints(a, "perm", n->attr.transpose.perm, GRAPH_MAX_DIMS);
		break;
	case GRAPH_OP_CONCAT:
		n->attr.concat.axis = attr_int(a, "axis", 0);
		break;
	default:
		break;
	}
}

/* Attributes of the arithmetic ops. */
static void
set_math_attrs(struct graph_node *n, json_t *a)
{
	switch (n->op) {
	case GRAPH_OP_GEMM:
		n->attr.gemm = (struct graph_gemm_attr){ (int)attr_int(a, "trans_a", 0),
		    (int)attr_int(a, "trans_b", 0), attr_float(a, "alpha", 1), attr_float(a, "beta", 1) };
		break;
	case GRAPH_OP_SOFTMAX:
		n->attr.softmax.axis = attr_int(a, "axis", -1);
		n->attr.softmax.log = (int)attr_int(a, "log", 0);
		break;
	case GRAPH_OP_LAYERNORM: case GRAPH_OP_BATCHNORM:
		n->attr.norm.axis = attr_int(a, "axis", -1);
		n->attr.norm.eps = attr_float(a, "eps", 1e-5f);
		break;
	case GRAPH_OP_REDUCE:
		n->attr.reduce.kind = (enum graph_reduce_kind)attr_int(a, "kind", 0);
		n->attr.reduce.naxes = attr_ints(a, "axes", n->attr.reduce.axes, GRAPH_MAX_DIMS);
		n->attr.reduce.keepdims = (int)attr_int(a, "keepdims", 1);
		break;
	case GRAPH_OP_CAST:
		n->attr.cast.to = (enum graph_dtype)attr_int(a, "to", 0);
		break;
	case GRAPH_OP_UNARY:
		n->attr.unary.fn = (enum graph_unary)attr_int(a, "fn", 0);
		n->attr.unary.alpha = attr_float(a, "alpha", 0);
		n->attr.unary.beta = attr_float(a, "beta", 0);
		break;
	case GRAPH_OP_BINARY:
		n->attr.binary.fn = (enum graph_binary)attr_int(a, "fn", 0);
		break;
	default:
		break;
	}
}

/* The node's op and attributes from the case description; -1 for an unknown op name. */
static int
set_node(struct graph_node *n, const char *op, json_t *a)
{
	if (op_parse(op, &n->op) != 0)
		return -1;
	set_shape_attrs(n, a);
	set_math_attrs(n, a);
	return 0;
}

/* A KServe dtype name as a graph dtype; -1 when unknown. */
static int
dtype_parse(const char *s, enum graph_dtype *dt)
{
	static const char *const names[GRAPH_DT_COUNT] = { "FP32", "FP16", "INT64", "INT32", "INT8", "UINT8", "BOOL" };

	for (int i = 0; i < GRAPH_DT_COUNT; i++)
		if (s != NULL && strcmp(s, names[i]) == 0) {
			*dt = (enum graph_dtype)i;
			return 0;
		}
	return -1;
}

/* Read a tensor description's dtype and shape. */
static int
tensor_desc(json_t *t, enum graph_dtype *dt, int *nd, int64_t *dims)
{
	if (dtype_parse(json_string_value(json_object_get(t, "dtype")), dt) != 0)
		return -1;
	*nd = attr_ints(t, "shape", dims, GRAPH_MAX_DIMS);
	return *nd <= GRAPH_MAX_DIMS ? 0 : -1;
}

/* Read a tensor's bytes (exactly size) from its file. */
static int
load_bytes(json_t *t, void *dst, size_t size)
{
	char path[4096];
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "%s/%s", dir, json_string_value(json_object_get(t, "file")));
	if ((f = fopen(path, "rb")) == NULL)
		return -1;
	got = fread(dst, 1, size, f);
	fclose(f);
	return got == size ? 0 : -1;
}

/* Elements of a shape. */
static int64_t
shape_elems(const struct graph_shape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->ndims; i++)
		n *= s->dims[i];
	return n;
}

/* Element size. */
static size_t
dt_size(enum graph_dtype dt)
{
	return dt == GRAPH_DT_F32 || dt == GRAPH_DT_I32 ? 4 : dt == GRAPH_DT_I64 ? 8 : dt == GRAPH_DT_F16 ? 2 : 1;
}

/* Compare output k of f with the recorded one: F32 normwise, everything else bytewise. */
static void
compare_output(struct fix *f, int k, json_t *t, const char *name)
{
	int idx = f->out[k];
	int64_t n = shape_elems(&f->s[idx]);
	size_t bytes = (size_t)n * dt_size(f->t[idx].dtype);
	void *want = malloc(bytes ? bytes : 1);

	if (load_bytes(t, want, bytes) != 0) {
		CHECK(0, "%s: cannot read the expected output", name);
	} else if (f->t[idx].dtype == GRAPH_DT_F32) {
		double *ref = malloc((size_t)(n ? n : 1) * sizeof(double)), e;

		for (int64_t i = 0; i < n; i++)
			ref[i] = ((float *)want)[i];
		e = test_rel_error(f->p[idx], ref, (size_t)n);
		CHECK(e <= TOL, "%s: relative error %.3g against onnxruntime", name, e);
		free(ref);
	} else {
		CHECK(memcmp(f->p[idx], want, bytes) == 0, "%s: output differs from onnxruntime", name);
	}
	free(want);
}

/* Build one case's node, load its inputs, run it, compare; returns 1 when it ran. */
static int
run_case(json_t *c)
{
	const char *name = json_string_value(json_object_get(c, "name"));
	json_t *ins = json_object_get(c, "inputs"), *outs = json_object_get(c, "outputs"), *t;
	struct fix f;
	char *cause = NULL;
	size_t i;

	name = name != NULL ? name : "?";
	fix_init(&f, GRAPH_OP_COPY);
	f.n.name = (char *)name;
	if (set_node(&f.n, json_string_value(json_object_get(c, "op")), json_object_get(c, "attrs")) != 0) {
		CHECK(0, "%s: unknown op in the case file", name);
		return 0;
	}
	f.n.act = (enum graph_unary)attr_int(c, "act", 0);
	json_array_foreach(ins, i, t) {
		enum graph_dtype dt;
		int nd;
		int64_t dims[GRAPH_MAX_DIMS];
		void *p;

		if (json_is_null(t)) {
			fix_omit(&f);
			continue;
		}
		if (tensor_desc(t, &dt, &nd, dims) != 0 ||
		    (p = fix_input(&f, dt, nd, dims), load_bytes(t, p, (size_t)shape_elems(&f.s[f.in[i]]) * dt_size(dt))) != 0) {
			CHECK(0, "%s: bad input %zu in the case file", name, i);
			fix_free(&f);
			return 0;
		}
	}
	json_array_foreach(outs, i, t) {
		enum graph_dtype dt;
		int nd;
		int64_t dims[GRAPH_MAX_DIMS];

		if (tensor_desc(t, &dt, &nd, dims) != 0) {
			CHECK(0, "%s: bad output %zu in the case file", name, i);
			fix_free(&f);
			return 0;
		}
		fix_output(&f, dt, nd, dims);
	}
	if (fix_run(&f, &cause) != 0) {
		CHECK(0, "%s: %s", name, cause);
		free(cause);
	} else {
		json_array_foreach(outs, i, t)
			compare_output(&f, (int)i, t, name);
	}
	fix_free(&f);
	return 1;
}

/* Usage: test_cpu_kernels_ort DIR (the directory cpu_kernels_ref.py wrote). */
int
main(int argc, char **argv)
{
	char path[4096];
	json_error_t err;
	json_t *root, *cases, *c;
	size_t i;
	int ran = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 1;
	}
	dir = argv[1];
	snprintf(path, sizeof(path), "%s/cases.json", dir);
	if ((root = json_load_file(path, 0, &err)) == NULL) {
		fprintf(stderr, "FAIL: %s: %s\n", path, err.text);
		return 1;
	}
	cases = json_object_get(root, "cases");
	cpu_kernels_set_threads(2);
	json_array_foreach(cases, i, c)
		ran += run_case(c);
	printf("%d of %zu onnxruntime cases ran\n", ran, json_array_size(cases));
	CHECK(ran > 0 && (size_t)ran == json_array_size(cases), "not every case ran");
	json_decref(root);
	return test_finish("test_cpu_kernels_ort");
}
