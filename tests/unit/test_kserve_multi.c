/*
 * test_kserve_multi.c: the KServe codec with several named inputs and
 * outputs of other datatypes: inputs in any order, JSON and binary mixed,
 * variable dims within their maximum, outputs selected, and every refusal
 * naming its tensor.  The model is described by hand (the codec needs no
 * weights): inputs x FP32 [4], ids INT64 [-1 (max 8)], m BOOL [2], h FP16 [2];
 * outputs y FP32 [4], n INT64 [1], b BOOL [2].
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kserve.h"
#include "kserve_tensor.h"
#include "test_util.h"

static model_t model;
static unsigned char buf[8192];

/* Describe one tensor. */
static void
fixture_io(struct model_io *io, const char *name, enum graph_dtype dt, int64_t dim, int64_t max)
{
	snprintf(io->name, sizeof io->name, "%s", name);
	io->dtype = dt;
	io->ndims = 1;
	io->dims[0] = dim;
	io->max_dims[0] = max;
	memset(io->var, -1, sizeof io->var);	/* the outputs' dims are fixed */
}

/* The hand-described model. */
static void
make_model(void)
{
	memset(&model, 0, sizeof model);
	snprintf(model.name, sizeof model.name, "multi");
	model.max_batch_size = 4;
	model.ninputs = 4;
	model.noutputs = 3;
	fixture_io(&model.inputs[0], "x", GRAPH_DT_F32, 4, 4);
	fixture_io(&model.inputs[1], "ids", GRAPH_DT_I64, -1, 8);
	fixture_io(&model.inputs[2], "m", GRAPH_DT_BOOL, 2, 2);
	fixture_io(&model.inputs[3], "h", GRAPH_DT_F16, 2, 2);
	fixture_io(&model.outputs[0], "y", GRAPH_DT_F32, 4, 4);
	fixture_io(&model.outputs[1], "n", GRAPH_DT_I64, 1, 1);
	fixture_io(&model.outputs[2], "b", GRAPH_DT_BOOL, 2, 2);
}

/* Parse text and decode it with the binary section bin (NULL: none). */
static int
decode(const char *text, const struct kserve_binary *bin, struct kserve_infer *ki, char **cause)
{
	json_t *root;
	int rc;

	free(*cause);
	*cause = NULL;
	memset(buf, 0xee, sizeof buf);
	if ((root = kserve_parse(text, strlen(text), cause)) == NULL)
		return -1;
	rc = kserve_decode_infer(root, bin, &model, buf, sizeof buf, ki, cause);
	json_decref(root);
	if (rc == 0)
		ki->id = NULL;
	return rc;
}

#define X "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[[1,2,3,4],[5,6,7,8.5]]}"
#define IDS "{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":[9007199254740993,-1,0,1,2,-9223372036854775808]}"
#define M "{\"name\":\"m\",\"datatype\":\"BOOL\",\"shape\":[2,2],\"data\":[true,false,false,true]}"
#define H "{\"name\":\"h\",\"datatype\":\"FP16\",\"shape\":[2,2],\"data\":[1.5,-2,65504,0.1]}"

/* Inputs in any order land in the model's layout, each value exact for its datatype. */
static void
test_decode(void)
{
	struct kserve_infer ki;
	char *cause = NULL;
	int64_t ids[6];
	uint16_t h[4];
	float x[8];

	CHECK(decode("{\"inputs\":[" H "," IDS "," M "," X "]}", NULL, &ki, &cause) == 0, "decode: %s", cause);
	CHECK(ki.rows == 2 && ki.shape.rows == 2 && ki.shape.dims[1][0] == 3, "rows %d, ids dim %lld", ki.rows,
	    (long long)ki.shape.dims[1][0]);
	CHECK(ki.input_offset[0] == 0 && ki.input_len[0] == 32 && ki.input_offset[1] == 64 &&
	    ki.input_len[1] == 48 && ki.input_len[2] == 4 && ki.input_len[3] == 8, "layout %zu %zu %zu %zu",
	    ki.input_offset[1], ki.input_len[1], ki.input_len[2], ki.input_len[3]);
	memcpy(x, buf, sizeof x);
	memcpy(ids, buf + ki.input_offset[1], sizeof ids);
	memcpy(h, buf + ki.input_offset[3], sizeof h);
	CHECK(x[0] == 1.0f && x[7] == 8.5f, "x %g %g", x[0], x[7]);
	CHECK(ids[0] == 9007199254740993LL && ids[1] == -1 && ids[5] == INT64_MIN, "INT64 not exact: %lld", (long long)ids[0]);
	CHECK(memcmp(buf + ki.input_offset[2], "\1\0\0\1", 4) == 0, "BOOL bytes");
	CHECK(h[0] == 0x3e00 && h[1] == 0xc000 && h[2] == 0x7bff && h[3] == 0x2e66, "FP16 %04x %04x %04x %04x",
	    h[0], h[1], h[2], h[3]);
	CHECK(ki.nwanted == 3 && ki.wanted[0] == 0 && ki.wanted[2] == 2 && ki.binary_output == 0, "outputs");
	CHECK(ki.output_len[0] == 32 && ki.output_len[1] == 16 && ki.output_len[2] == 4 &&
	    ki.output_offset[0] >= ki.input_offset[3] + 8 && ki.staged_bytes <= sizeof buf, "output layout");
	free(cause);
}

/* Binary sections follow the request's input order, mixed with JSON inputs. */
static void
test_binary(void)
{
	static const char hdr[] = "{\"outputs\":[{\"name\":\"b\",\"parameters\":{\"binary_data\":true}},{\"name\":\"y\"}],"
	    "\"inputs\":[{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[1,2],\"parameters\":{\"binary_data_size\":16}},"
	    "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]},"
	    "{\"name\":\"h\",\"datatype\":\"FP16\",\"shape\":[1,2],\"parameters\":{\"binary_data_size\":4}},"
	    "{\"name\":\"m\",\"datatype\":\"BOOL\",\"shape\":[1,2],\"data\":[[false,true]]}]}";
	unsigned char raw[20];
	int64_t ids[2] = { 42, -7 }, got[2];
	uint16_t h[2] = { 0x3c00, 0xbc00 };
	struct kserve_infer ki;
	char *cause = NULL;

	memcpy(raw, ids, 16);
	memcpy(raw + 16, h, 4);
	CHECK(decode(hdr, &(struct kserve_binary){ raw, sizeof raw }, &ki, &cause) == 0, "binary: %s", cause);
	memcpy(got, buf + ki.input_offset[1], sizeof got);
	CHECK(got[0] == 42 && got[1] == -7 && memcmp(buf + ki.input_offset[3], h, 4) == 0, "binary inputs");
	CHECK(ki.nwanted == 2 && ki.wanted[0] == 2 && ki.wanted[1] == 0 && ki.binary[2] && !ki.binary[0] &&
	    ki.binary_output, "selected outputs %d", ki.nwanted);
	free(cause);
}

/* The answer carries the selected outputs in the request's order, each with its datatype and shape. */
static void
test_encode(void)
{
	struct kserve_infer ki;
	char *cause = NULL, *s;
	int64_t n[2] = { 9007199254740993LL, -3 };
	float y[8] = { 0.5f, 1, 2, 3, 4, 5, 6, 7 };
	size_t len, hlen;
	json_t *root, *outs;

	CHECK(decode("{\"outputs\":[{\"name\":\"n\"},{\"name\":\"b\",\"parameters\":{\"binary_data\":true}},{\"name\":\"y\"}],"
	    "\"inputs\":[" X "," IDS "," M "," H "]}", NULL, &ki, &cause) == 0, "decode: %s", cause);
	memcpy(buf + ki.output_offset[0], y, sizeof y);
	memcpy(buf + ki.output_offset[1], n, sizeof n);
	memcpy(buf + ki.output_offset[2], "\0\1\1\0", 4);
	s = kserve_encode_infer(&model, "q", &ki, buf, &len, &hlen, &cause);
	CHECK(s != NULL && len == hlen + 4 && memcmp(s + hlen, "\0\1\1\0", 4) == 0, "encode: %s", cause);
	root = s != NULL ? json_loadb(s, hlen, 0, NULL) : NULL;
	outs = json_object_get(root, "outputs");
	CHECK(json_array_size(outs) == 3, "outputs: %s", s);
	CHECK(strcmp(json_string_value(json_object_get(json_array_get(outs, 0), "name")), "n") == 0 &&
	    strcmp(json_string_value(json_object_get(json_array_get(outs, 0), "datatype")), "INT64") == 0 &&
	    json_integer_value(json_array_get(json_object_get(json_array_get(outs, 0), "data"), 0)) ==
	    9007199254740993LL, "INT64 output: %s", s);
	CHECK(json_integer_value(json_array_get(json_object_get(json_array_get(outs, 0), "shape"), 0)) == 2 &&
	    json_integer_value(json_array_get(json_object_get(json_array_get(outs, 0), "shape"), 1)) == 1, "shape");
	CHECK(json_integer_value(json_object_get(json_object_get(json_array_get(outs, 1), "parameters"),
	    "binary_data_size")) == 4 && strcmp(json_string_value(json_object_get(json_array_get(outs, 1),
	    "datatype")), "BOOL") == 0, "BOOL output: %s", s);
	CHECK(json_real_value(json_array_get(json_object_get(json_array_get(outs, 2), "data"), 0)) == 0.5, "FP32 output");
	json_decref(root);
	free(s);
	/* All JSON: BOOL as true/false. */
	ki.binary[2] = ki.binary_output = 0;
	s = kserve_encode_infer(&model, NULL, &ki, buf, &len, &hlen, &cause);
	CHECK(s != NULL && strstr(s, "[false,true,true,false]") != NULL, "BOOL as JSON: %s", s ? s : cause);
	free(s);
	free(cause);
}

/* Metadata lists every tensor with its datatype and -1 for the batch and variable dims. */
static void
test_metadata(void)
{
	char *cause = NULL, *s;
	size_t len;

	s = kserve_encode_model_metadata(&model, &len, &cause);
	CHECK(s != NULL && strstr(s, "{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[-1,-1]}") != NULL &&
	    strstr(s, "{\"name\":\"h\",\"datatype\":\"FP16\",\"shape\":[-1,2]}") != NULL &&
	    strstr(s, "{\"name\":\"b\",\"datatype\":\"BOOL\",\"shape\":[-1,2]}") != NULL, "metadata: %s", s);
	free(s);
	free(cause);
}

static const struct {
	const char *body, *want;
} refusals[] = {
	{ "{\"inputs\":[" X "," X "," M "," H "]}", "input 'x' is given twice" },
	{ "{\"inputs\":[" X "," M "," H "]}", "missing input 'ids' (model 'multi' takes 4 inputs, the request has 3)" },
	{ "{\"inputs\":[" X "," IDS "," M "," H "," X "]}", "takes 4 inputs, the request has 5" },
	{ "{\"inputs\":[{\"name\":\"z\"}]}", "unknown input 'z' (model 'multi' has inputs 'x', 'ids', 'm', 'h')" },
	{ "{\"inputs\":[{\"name\":\"ids\",\"datatype\":\"INT32\"}]}", "input 'ids': datatype 'INT32' does not match the model's 'INT64'" },
	{ "{\"inputs\":[" X "," M "," H ",{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[2,9]}]}", "input 'ids' dim 1 is 9, the model's maximum is 8" },
	{ "{\"inputs\":[" X "," M "," H ",{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[2,0]}]}", "input 'ids' dim 1 is 0" },
	{ "{\"inputs\":[" X "," M "," H ",{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[1,2],\"data\":[1,2]}]}", "batch size 1 disagrees with input 'x' (2)" },
	{ "{\"inputs\":[" X "," M "," H ",{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":[1,2,3,4,5,6.5]}]}", "data element 5 is not an integer" },
	{ "{\"inputs\":[" X "," IDS "," H ",{\"name\":\"m\",\"datatype\":\"BOOL\",\"shape\":[2,2],\"data\":[1,0,0,1]}]}", "data element 0 is not true or false" },
	{ "{\"inputs\":[" X "," IDS "," M ",{\"name\":\"h\",\"datatype\":\"FP16\",\"shape\":[2,2],\"data\":[1,2,3,70000]}]}", "data element 3 is out of the FP16 range" },
	{ "{\"inputs\":[" IDS "," M "," H ",{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[[1,2],[3,4],[5,6],[7,8]]}]}", "data nested at depth 1 has 4 elements, shape[0] is 2" },
	{ "{\"inputs\":[" IDS "," M "," H ",{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[[1,2,3],[4,5,6,7,8]]}]}", "data nested at depth 2 has 3 values, its shape needs 4 there" },
	{ "{\"inputs\":[" IDS "," M "," H ",{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[[1,2,3,4],5,6,7,8]}]}", "data nested at depth 1 has 5 elements" },
	{ "{\"outputs\":[{\"name\":\"y\"},{\"name\":\"y\"}],\"inputs\":[]}", "output 'y' is requested twice" },
	{ "{\"outputs\":[{\"name\":\"q\"}],\"inputs\":[]}", "unknown output 'q' (model 'multi' has outputs 'y', 'n', 'b')" },
	{ "{\"outputs\":[],\"inputs\":[]}", "names no output" },
	{ "", "empty request body" },
};

/* Every refusal names its tensor and the problem. */
static void
test_refusals(void)
{
	struct kserve_infer ki;
	char *cause = NULL;
	size_t i;

	for (i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		CHECK(decode(refusals[i].body, NULL, &ki, &cause) == -1, "accepted: %s", refusals[i].body);
		CHECK(cause != NULL && strstr(cause, refusals[i].want) != NULL, "body %s: message '%s' lacks '%s'",
		    refusals[i].body, cause ? cause : "(none)", refusals[i].want);
	}
	free(cause);
}

/* FP16 conversion against values computed by hand (IEEE 754 binary16), round to nearest even. */
static void
test_half(void)
{
	/* exact: the half holds f itself, so it converts back to f. */
	static const struct { float f; uint16_t h; int exact; } cases[] = {
		{ 0.0f, 0x0000, 1 }, { -0.0f, 0x8000, 1 }, { 1.0f, 0x3c00, 1 }, { 65504.0f, 0x7bff, 1 },
		{ 65519.0f, 0x7bff, 0 }, { 5.9604645e-8f, 0x0001, 1 }, { 6.1035156e-5f, 0x0400, 1 },
		{ 1.0009765625f, 0x3c01, 1 }, { 1.00048828125f, 0x3c00, 0 }, { 1.00146484375f, 0x3c02, 0 },
		{ 0.33325195f, 0x3555, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK(kserve_half_from_float(cases[i].f) == cases[i].h, "%g -> %04x, want %04x", cases[i].f,
		    kserve_half_from_float(cases[i].f), cases[i].h);
		if (cases[i].exact)
			CHECK(kserve_half_to_float(cases[i].h) == cases[i].f, "%04x -> %g", cases[i].h,
			    kserve_half_to_float(cases[i].h));
	}
}

int
main(void)
{
	make_model();
	test_decode();
	test_binary();
	test_encode();
	test_metadata();
	test_refusals();
	test_half();
	return test_finish("test_kserve_multi");
}
