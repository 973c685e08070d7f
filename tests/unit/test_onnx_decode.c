/*
 * test_onnx_decode.c: the ONNX decoder against the models tests/helpers/make_onnx_cases.py wrote and what the onnx
 * package (Google's protobuf) reads from them; every truncation of a small model; peak RSS of a ~200 MB model
 * (one copy of the file, never two).
 *
 * Usage: test_onnx_decode CASEDIR (the generator's output directory, holding cases.json).
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onnx_decode.h"
#include "test_util.h"

static const char *case_dir;

/* Read a whole file into malloc'ed memory of exactly its size (so ASan sees overreads); NULL on error. */
static uint8_t *
read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc(n > 0 ? (size_t)n : 1)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Compare a tensor with its expectation: name, type, dims and every byte (hex in JSON). */
static void
check_tensor(const char *where, const struct onnx_tensor *t, json_t *e)
{
	const char *hex = json_string_value(json_object_get(e, "hex"));
	json_t *dims = json_object_get(e, "dims");
	size_t i, n = hex ? strlen(hex) / 2 : 0, esize = onnx_elem_size(t->elem);
	const uint8_t *p = t->data;
	unsigned byte;

	CHECK(strcmp(t->name, json_string_value(json_object_get(e, "name"))) == 0, "%s: name %s", where, t->name);
	CHECK(t->elem == json_integer_value(json_object_get(e, "elem")), "%s: elem %d", where, t->elem);
	CHECK(t->ndims == (int)json_array_size(dims), "%s: ndims %d", where, t->ndims);
	for (i = 0; i < json_array_size(dims) && i < 8; i++)
		CHECK(t->dims[i] == json_integer_value(json_array_get(dims, i)), "%s: dims[%zu]", where, i);
	CHECK(t->data != NULL, "%s: data is NULL", where);
	CHECK(t->nbytes == n, "%s: nbytes %zu, expected %zu", where, t->nbytes, n);
	if (t->data == NULL || t->nbytes != n)
		return;
	for (i = 0; i < n; i++) {
		sscanf(hex + 2 * i, "%2x", &byte);
		if (p[i] != byte) {
			CHECK(p[i] == byte, "%s: byte %zu is %02x, expected %02x", where, i, p[i], byte);
			break;
		}
	}
	/* The header's alignment rule: only views of ONNX_COPY_ALIGN_MAX bytes or more may be misaligned. */
	CHECK(esize > 0 && (t->nbytes >= ONNX_COPY_ALIGN_MAX || (uintptr_t)t->data % esize == 0),
	    "%s: %zu bytes at a misaligned address", where, t->nbytes);
}

/* Compare an attribute with its expectation: type and the value of that type. */
static void
check_attr(const char *where, const struct onnx_attr *a, json_t *e)
{
	json_t *v;
	size_t i;

	CHECK(strcmp(a->name, json_string_value(json_object_get(e, "name"))) == 0, "%s: name %s", where, a->name);
	CHECK(a->type == json_integer_value(json_object_get(e, "type")), "%s: type %d", where, a->type);
	if ((v = json_object_get(e, "f")) != NULL)
		CHECK(a->f == (float)json_real_value(v), "%s: f %g", where, a->f);
	if ((v = json_object_get(e, "i")) != NULL)
		CHECK(a->i == json_integer_value(v), "%s: i %lld", where, (long long)a->i);
	if ((v = json_object_get(e, "s")) != NULL)
		CHECK(strcmp(a->s, json_string_value(v)) == 0, "%s: s %s", where, a->s);
	if ((v = json_object_get(e, "t")) != NULL)
		check_tensor(where, &a->t, v);
	if ((v = json_object_get(e, "floats")) != NULL) {
		CHECK(a->nfloats == json_array_size(v), "%s: nfloats %zu", where, a->nfloats);
		for (i = 0; i < a->nfloats && i < json_array_size(v); i++)
			CHECK(a->floats[i] == (float)json_number_value(json_array_get(v, i)), "%s: floats[%zu]", where, i);
	}
	if ((v = json_object_get(e, "ints")) != NULL) {
		CHECK(a->nints == json_array_size(v), "%s: nints %zu", where, a->nints);
		for (i = 0; i < a->nints && i < json_array_size(v); i++)
			CHECK(a->ints[i] == json_integer_value(json_array_get(v, i)), "%s: ints[%zu]", where, i);
	}
	if ((v = json_object_get(e, "strings")) != NULL) {
		CHECK(a->nstrings == json_array_size(v), "%s: nstrings %zu", where, a->nstrings);
		for (i = 0; i < a->nstrings && i < json_array_size(v); i++)
			CHECK(strcmp(a->strings[i], json_string_value(json_array_get(v, i))) == 0,
			    "%s: strings[%zu]", where, i);
	}
}

/* Compare a list of names (node inputs or outputs). */
static void
check_names(const char *where, const char *const *names, size_t n, json_t *e)
{
	size_t i;

	CHECK(n == json_array_size(e), "%s: %zu names, expected %zu", where, n, json_array_size(e));
	for (i = 0; i < n && i < json_array_size(e); i++)
		CHECK(strcmp(names[i], json_string_value(json_array_get(e, i))) == 0, "%s[%zu]: %s", where, i, names[i]);
}

/* Compare a node: names, op type, domain, inputs, outputs, attributes. */
static void
check_node(const char *where, const struct onnx_node *n, json_t *e)
{
	json_t *attrs = json_object_get(e, "attrs");
	char sub[320];
	size_t i;

	CHECK(strcmp(n->name, json_string_value(json_object_get(e, "name"))) == 0, "%s: name %s", where, n->name);
	CHECK(strcmp(n->op_type, json_string_value(json_object_get(e, "op_type"))) == 0, "%s: op %s", where,
	    n->op_type);
	CHECK(strcmp(n->domain, json_string_value(json_object_get(e, "domain"))) == 0, "%s: domain %s", where,
	    n->domain);
	check_names(where, n->inputs, n->ninputs, json_object_get(e, "inputs"));
	check_names(where, n->outputs, n->noutputs, json_object_get(e, "outputs"));
	CHECK(n->nattrs == json_array_size(attrs), "%s: nattrs %zu", where, n->nattrs);
	for (i = 0; i < n->nattrs && i < json_array_size(attrs); i++) {
		snprintf(sub, sizeof sub, "%s.attribute[%zu]", where, i);
		check_attr(sub, &n->attrs[i], json_array_get(attrs, i));
		CHECK(onnx_node_attr(n, n->attrs[i].name) != NULL, "%s: onnx_node_attr", sub);
	}
	CHECK(onnx_node_attr(n, "no such attribute") == NULL, "%s: onnx_node_attr of a missing name", where);
}

/* Compare a list of value infos: names, element types, dims fixed, symbolic or unknown. */
static void
check_value_infos(const char *where, const struct onnx_value_info *v, size_t n, json_t *e)
{
	json_t *dims, *d, *x;
	size_t i, k;

	CHECK(n == json_array_size(e), "%s: %zu, expected %zu", where, n, json_array_size(e));
	for (i = 0; i < n && i < json_array_size(e); i++) {
		x = json_array_get(e, i);
		dims = json_object_get(x, "dims");
		CHECK(strcmp(v[i].name, json_string_value(json_object_get(x, "name"))) == 0, "%s[%zu]: name", where, i);
		CHECK(v[i].elem == json_integer_value(json_object_get(x, "elem")), "%s[%zu]: elem", where, i);
		CHECK(v[i].ndims == json_integer_value(json_object_get(x, "ndims")), "%s[%zu]: ndims %d", where, i,
		    v[i].ndims);
		for (k = 0; k < json_array_size(dims) && (int)k < v[i].ndims; k++) {
			d = json_array_get(dims, k);
			if (json_object_get(d, "value") != NULL)
				CHECK(v[i].dims[k].known && v[i].dims[k].param == NULL && v[i].dims[k].value ==
				    json_integer_value(json_object_get(d, "value")), "%s[%zu].dim[%zu]", where, i, k);
			else if (json_object_get(d, "param") != NULL)
				CHECK(!v[i].dims[k].known && v[i].dims[k].param != NULL && strcmp(v[i].dims[k].param,
				    json_string_value(json_object_get(d, "param"))) == 0, "%s[%zu].dim[%zu]", where, i, k);
			else
				CHECK(!v[i].dims[k].known && v[i].dims[k].param == NULL, "%s[%zu].dim[%zu]", where, i, k);
		}
	}
}

/* Compare a whole model with its expectation. */
static void
check_model(const char *file, const onnx_model_t *m, json_t *e)
{
	json_t *g = json_object_get(e, "graph"), *opsets = json_object_get(e, "opsets"), *x;
	char where[256];
	size_t i;

	CHECK(m->ir_version == json_integer_value(json_object_get(e, "ir_version")), "%s: ir_version", file);
	CHECK(strcmp(m->producer_name, json_string_value(json_object_get(e, "producer"))) == 0, "%s: producer", file);
	CHECK(m->nopsets == json_array_size(opsets), "%s: nopsets %zu", file, m->nopsets);
	for (i = 0; i < m->nopsets && i < json_array_size(opsets); i++) {
		x = json_array_get(opsets, i);
		CHECK(strcmp(m->opsets[i].domain, json_string_value(json_array_get(x, 0))) == 0 &&
		    m->opsets[i].version == json_integer_value(json_array_get(x, 1)), "%s: opset %zu", file, i);
	}
	CHECK(strcmp(m->graph.name, json_string_value(json_object_get(g, "name"))) == 0, "%s: graph name", file);
	x = json_object_get(g, "nodes");
	CHECK(m->graph.nnodes == json_array_size(x), "%s: nnodes %zu", file, m->graph.nnodes);
	for (i = 0; i < m->graph.nnodes && i < json_array_size(x); i++) {
		snprintf(where, sizeof where, "%s: node[%zu]", file, i);
		check_node(where, &m->graph.nodes[i], json_array_get(x, i));
	}
	x = json_object_get(g, "initializers");
	CHECK(m->graph.ninitializers == json_array_size(x), "%s: ninitializers %zu", file, m->graph.ninitializers);
	for (i = 0; i < m->graph.ninitializers && i < json_array_size(x); i++) {
		snprintf(where, sizeof where, "%s: initializer[%zu]", file, i);
		check_tensor(where, &m->graph.initializers[i], json_array_get(x, i));
	}
	snprintf(where, sizeof where, "%s: inputs", file);
	check_value_infos(where, m->graph.inputs, m->graph.ninputs, json_object_get(g, "inputs"));
	snprintf(where, sizeof where, "%s: outputs", file);
	check_value_infos(where, m->graph.outputs, m->graph.noutputs, json_object_get(g, "outputs"));
	snprintf(where, sizeof where, "%s: value_infos", file);
	check_value_infos(where, m->graph.value_infos, m->graph.nvalue_infos, json_object_get(g, "value_infos"));
}

/* Load one case: a good model must match its expectation, a bad one must fail naming the file and the problem. */
static void
run_case(json_t *c)
{
	const char *file = json_string_value(json_object_get(c, "file"));
	const char *error = json_string_value(json_object_get(c, "error"));
	char path[4096], *cause = NULL;
	onnx_model_t *m = NULL;
	int rc;

	snprintf(path, sizeof path, "%s/%s", case_dir, file);
	rc = onnx_model_load(path, &m, &cause);
	if (error != NULL) {
		CHECK(rc == -1 && m == NULL && cause != NULL, "%s: loaded, expected '%s'", file, error);
		if (cause != NULL)
			CHECK(strstr(cause, error) != NULL && strstr(cause, path) != NULL,
			    "%s: message '%s' lacks '%s' or the path", file, cause, error);
	} else {
		CHECK(rc == 0 && m != NULL, "%s: %s", file, cause);
		if (m != NULL)
			check_model(file, m, json_object_get(c, "expect"));
	}
	free(cause);
	onnx_model_free(m);
}

/* Decode from memory: 0 when accepted; a refusal must come with a message. */
static int
decode_bytes(const uint8_t *buf, size_t len, const char *what)
{
	onnx_model_t *m = NULL;
	char *cause = NULL;
	int rc = onnx_model_decode(buf, len, &m, &cause);

	CHECK((rc == 0) == (m != NULL) && (rc == 0 || (cause != NULL && cause[0] != '\0')),
	    "%s: rc %d without a message", what, rc);
	free(cause);
	onnx_model_free(m);
	return rc;
}

/* Every strict prefix of name: must fail when must_fail (a model whose last field completes it), never crash. */
static void
check_prefixes(const char *name, int must_fail)
{
	char path[4096], what[4200];
	size_t len = 0, i;
	uint8_t *buf, *copy;

	snprintf(path, sizeof path, "%s/%s", case_dir, name);
	if ((buf = read_whole(path, &len)) == NULL) {
		CHECK(buf != NULL, "%s: %s", path, strerror(errno));
		return;
	}
	snprintf(what, sizeof what, "%s (%zu bytes)", name, len);
	CHECK(decode_bytes(buf, len, what) == 0, "%s: the whole file is refused", what);
	for (i = 0; i < len; i++) {
		/* A copy of exactly i bytes: reading past the prefix is an ASan error. */
		if ((copy = malloc(i > 0 ? i : 1)) == NULL)
			break;
		memcpy(copy, buf, i);
		snprintf(what, sizeof what, "%s prefix %zu", name, i);
		if (decode_bytes(copy, i, what) == 0)
			CHECK(!must_fail, "%s: accepted", what);
		free(copy);
	}
	free(buf);
}

/* Memory decoding refuses external data; opset lookup treats "" and "ai.onnx" alike. */
static void
check_memory_and_opsets(void)
{
	char path[4096], *cause = NULL;
	onnx_model_t *m = NULL;
	size_t len = 0;
	uint8_t *buf;

	snprintf(path, sizeof path, "%s/external.onnx", case_dir);
	if ((buf = read_whole(path, &len)) != NULL) {
		CHECK(onnx_model_decode(buf, len, &m, &cause) == -1 && cause != NULL &&
		    strstr(cause, "not loaded from a file") != NULL, "external data from memory: %s", cause);
		free(cause);
		cause = NULL;
		free(buf);
	}
	snprintf(path, sizeof path, "%s/basic.onnx", case_dir);
	if (onnx_model_load(path, &m, &cause) == 0) {
		CHECK(onnx_model_opset(m, "") == 17 && onnx_model_opset(m, "ai.onnx") == 17, "default opset");
		CHECK(onnx_model_opset(m, "test.domain") == 3, "test.domain opset");
		CHECK(onnx_model_opset(m, "com.microsoft") == 1 && onnx_model_opset(m, "nope") == 0, "other opsets");
		onnx_model_free(m);
	} else
		CHECK(0, "basic.onnx: %s", cause);
	free(cause);
	onnx_model_free(NULL);
}

/* The peak-RSS model: one FLOAT initializer of RSS_FLOATS elements in raw_data (~200 MB). */
#define RSS_FLOATS (50u * 1000 * 1000)

/* Append a protobuf varint to p; returns the new end. */
static uint8_t *
pb_put_varint(uint8_t *p, uint64_t v)
{
	do {
		*p++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	return p;
}

/* Append a length-delimited field's tag and length (the payload follows). */
static uint8_t *
pb_put_len(uint8_t *p, unsigned field, uint64_t len)
{
	return pb_put_varint(pb_put_varint(p, (uint64_t)field << 3 | 2), len);
}

/* Append a length-delimited field with its payload. */
static uint8_t *
pb_put_bytes(uint8_t *p, unsigned field, const void *data, size_t len)
{
	p = pb_put_len(p, field, len);
	memcpy(p, data, len);
	return p + len;
}

/* The weight value at index i of the big model (a pattern that checks every byte was read in place). */
static float
rss_value(size_t i)
{
	return (float)(i % 1000) * 0.25f;
}

/*
 * Write the big model by hand: Model{ir_version, graph{node, name, initializer{dims, type, name, raw}}, opset};
 * *raw_at gets the file offset of the weights.
 */
static int
rss_write_model(const char *path, size_t *raw_at)
{
	uint8_t node[64], head[64], tail[64], *q, *h = head, *t = tail;
	size_t raw = (size_t)RSS_FLOATS * 4, init_len, graph_len, i, k;
	static float chunk[1 << 16];
	FILE *f;

	q = pb_put_bytes(pb_put_bytes(pb_put_bytes(node, 1, "w", 1), 2, "y", 1), 4, "Identity", 8);
	init_len = 1 + (size_t)(pb_put_varint(tail, RSS_FLOATS) - tail) + 2 + 3 +
	    (size_t)(pb_put_len(tail, 9, raw) - tail) + raw;
	graph_len = (size_t)(pb_put_len(tail, 1, (size_t)(q - node)) - tail) + (size_t)(q - node) + 5 +
	    (size_t)(pb_put_len(tail, 5, init_len) - tail) + init_len;
	h = pb_put_varint(pb_put_varint(h, 1 << 3), 8);
	h = pb_put_len(h, 7, graph_len);
	h = pb_put_bytes(pb_put_bytes(h, 1, node, (size_t)(q - node)), 2, "big", 3);
	h = pb_put_len(h, 5, init_len);
	h = pb_put_varint(pb_put_varint(h, 1 << 3), RSS_FLOATS);
	h = pb_put_varint(pb_put_varint(h, 2 << 3), 1);
	h = pb_put_len(pb_put_bytes(h, 8, "w", 1), 9, raw);
	t = pb_put_len(t, 8, 2);
	t = pb_put_varint(pb_put_varint(t, 2 << 3), 17);
	*raw_at = (size_t)(h - head);
	if ((f = fopen(path, "wb")) == NULL || fwrite(head, 1, (size_t)(h - head), f) != (size_t)(h - head))
		return -1;
	for (i = 0; i < RSS_FLOATS; i += k) {
		for (k = 0; k < sizeof chunk / sizeof chunk[0] && i + k < RSS_FLOATS; k++)
			chunk[k] = rss_value(i + k);
		if (fwrite(chunk, 4, k, f) != k)
			break;
	}
	if (fwrite(tail, 1, (size_t)(t - tail), f) != (size_t)(t - tail) || fclose(f) != 0 || i != RSS_FLOATS)
		return -1;
	return 0;
}

/* Peak resident set size so far, in bytes. */
static long long
rss_peak(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return (long long)ru.ru_maxrss * 1024;
}

/*
 * In a fresh child: load, check the peak RSS, touch every weight byte (and check it), check again.  The
 * loader reads the file once into private memory and the weights are views into that copy: the load grows
 * by the file's size, and reading the weights adds nothing.
 */
static int
rss_child(const char *path, long long size)
{
	long long before = rss_peak(), loaded, touched;
	onnx_model_t *m = NULL;
	char *cause = NULL;
	const uint8_t *p;
	size_t i, bad = 0;
	float v;

	if (onnx_model_load(path, &m, &cause) != 0) {
		fprintf(stderr, "FAIL: %s: %s\n", path, cause);
		return 1;
	}
	loaded = rss_peak() - before;
	p = m->graph.initializers[0].data;
	/* The file put the weights at an odd offset: the loader moved them into alignment in its copy. */
	if ((uintptr_t)p % 4 != 0) {
		fprintf(stderr, "FAIL: the weights were left misaligned\n");
		return 1;
	}
	if (m->graph.initializers[0].nbytes != (size_t)RSS_FLOATS * 4)
		return 1;
	for (i = 0; i < RSS_FLOATS; i++) {
		memcpy(&v, p + 4 * i, sizeof v);	/* raw_data views may be misaligned */
		bad += v != rss_value(i);
	}
	touched = rss_peak() - before;
	printf("peak RSS growth for a %lld-byte model: %lld bytes after loading, %lld after reading every weight\n",
	    size, loaded, touched);
	onnx_model_free(m);
	fflush(stdout);
	/* A decoder that copied raw_data out of the file's copy would grow by twice the file's size. */
	if (bad != 0 || loaded > size * 12 / 10 || touched > size * 12 / 10 || touched < size * 9 / 10) {
		fprintf(stderr, "FAIL: RSS growth %lld / %lld bytes, %zu wrong weights\n", loaded, touched, bad);
		return 1;
	}
	return 0;
}

/* The peak-RSS check, in a child so that the parent's history does not count; returns failures. */
static int
rss_test(const char *dir)
{
	char path[4096];
	long long size = 0;
	size_t raw_at = 0;
	int status = 0;
	pid_t pid;
	FILE *f;

	snprintf(path, sizeof path, "%s/rss-big.onnx", dir);
	if (rss_write_model(path, &raw_at) != 0 || (f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "FAIL: writing %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (fseek(f, 0, SEEK_END) == 0)
		size = ftell(f);
	fclose(f);
	if (raw_at % 4 == 0) {
		fprintf(stderr, "FAIL: the test model's weights are aligned in the file (offset %zu)\n", raw_at);
		return 1;
	}
	fflush(stdout);
	if ((pid = fork()) == 0)
		_exit(rss_child(path, size));
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = 1;
	unlink(path);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "FAIL: peak RSS check (status %d)\n", status);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	json_error_t jerr;
	char path[4096];
	json_t *cases;
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CASEDIR\n", argv[0]);
		return 2;
	}
	case_dir = argv[1];
	snprintf(path, sizeof path, "%s/cases.json", case_dir);
	if ((cases = json_load_file(path, 0, &jerr)) == NULL || !json_is_array(cases)) {
		fprintf(stderr, "FAIL: %s: %s\n", path, jerr.text);
		return 1;
	}
	for (i = 0; i < json_array_size(cases); i++)
		run_case(json_array_get(cases, i));
	printf("%zu cases\n", json_array_size(cases));
	json_decref(cases);
	check_prefixes("small.onnx", 1);
	check_prefixes("basic.onnx", 0);
	check_prefixes("handmade.onnx", 0);
	check_memory_and_opsets();
	test_failures += rss_test(case_dir);
	return test_finish("test_onnx_decode");
}
