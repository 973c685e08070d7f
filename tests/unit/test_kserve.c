/* test_kserve.c: the KServe v2 codec, JSON and binary tensors: valid bodies, every refusal, exact float round trips. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kserve.h"
#include "kserve_fixture.h"
#include "test_util.h"

static model_t model;
static float buf[FIXTURE_BUF_FLOATS];

/* The hand-described model of tests/helpers/kserve_fixture.h. */
static void
make_model(void)
{
	kserve_fixture_model(&model);
}

/* Parse text and decode it with the binary section bin (NULL: no extension header); 0 or -1 with *cause. */
static int
decode_bin(const char *text, const struct kserve_binary *bin, struct kserve_infer *ki,
    char **cause)
{
	json_t *root;
	int rc;

	free(*cause);
	*cause = NULL;
	memset(buf, 0xff, sizeof buf);
	if ((root = kserve_parse(text, strlen(text), cause)) == NULL)
		return -1;
	rc = kserve_decode_infer(root, bin, &model, buf, sizeof buf, ki, cause);
	/* The id is borrowed from the tree: copy what the tests look at before freeing it. */
	if (rc == 0 && ki->id != NULL)
		ki->id = strcmp(ki->id, "req-7") == 0 ? "req-7" : "other";
	json_decref(root);
	return rc;
}

/* Parse and decode a JSON body; returns 0 or -1 and leaves the message in *cause. */
static int
decode(const char *text, struct kserve_infer *ki, char **cause)
{
	return decode_bin(text, NULL, ki, cause);
}

/* Bodies that decode, flat and nested, with the values they carry. */
static void
test_valid(void)
{
	struct kserve_infer ki;
	char *cause = NULL;
	int i;

	CHECK(decode("{\"inputs\":[{\"name\":\"input\",\"shape\":[2,2,3],\"datatype\":\"FP32\","
	    "\"data\":[0,1,2,3,4,5,6,7,8,9,10,11.5]}]}", &ki, &cause) == 0, "flat: %s", cause);
	CHECK(ki.rows == 2 && ki.input_bytes == 12 * sizeof(float) && ki.id == NULL &&
	    ki.timeout_us == 0, "flat: rows %d bytes %zu", ki.rows, ki.input_bytes);
	for (i = 0; i < 11; i++)
		CHECK(buf[i] == (float)i, "flat: element %d is %g", i, buf[i]);
	CHECK(buf[11] == 11.5f, "flat: last element %g", buf[11]);
	CHECK(isnan(buf[12]), "wrote past its rows: %g", buf[12]);

	CHECK(decode("{\"id\":\"req-7\",\"parameters\":{\"timeout_us\":2500},"
	    "\"inputs\":[{\"name\":\"input\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
	    "\"data\":[[[-1,-2.25,3e-3],[4,5,6]]]}],\"outputs\":[{\"name\":\"out\","
	    "\"parameters\":{\"binary_data\":false}}]}", &ki, &cause) == 0, "nested: %s", cause);
	CHECK(ki.rows == 1 && ki.timeout_us == 2500 && ki.id != NULL && strcmp(ki.id, "req-7") == 0,
	    "nested: rows %d timeout %llu", ki.rows, (unsigned long long)ki.timeout_us);
	CHECK(buf[0] == -1.0f && buf[1] == -2.25f && buf[2] == 3e-3f && buf[5] == 6.0f,
	    "nested values %g %g %g %g", buf[0], buf[1], buf[2], buf[5]);

	/* Triton's name for the timeout, rows split per row, FLT_MAX as we print it. */
	CHECK(decode("{\"parameters\":{\"timeout\":7},\"inputs\":[{\"name\":\"input\",\"shape\":[2,2,3],"
	    "\"datatype\":\"FP32\",\"data\":[[1,2,3,4,5,6],[3.40282347e+38,-3.40282347e+38,"
	    "1e-45,9223372036854775807,0,0]]}]}", &ki, &cause) == 0, "rows: %s", cause);
	CHECK(ki.timeout_us == 7, "timeout %llu", (unsigned long long)ki.timeout_us);
	CHECK(buf[6] == FLT_MAX && buf[7] == -FLT_MAX && buf[8] > 0 && buf[9] == 9223372036854775807.0f,
	    "extremes %g %g %g %g", buf[6], buf[7], buf[8], buf[9]);

	/*
	 * 2^60 + 2^36 + 1 is just above the midpoint between the floats 2^60 and
	 * 2^60 + 2^37: it rounds up; through a double it would become the midpoint
	 * and round to even (down).
	 */
	CHECK(decode("{\"inputs\":[{\"name\":\"input\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
	    "\"data\":[1152921573326323713,-1152921573326323713,0,0,0,0]}]}", &ki, &cause) == 0,
	    "integer rounding: %s", cause);
	CHECK(buf[0] == 0x1p60f + 0x1p37f && buf[1] == -(0x1p60f + 0x1p37f),
	    "integer rounded twice: %a %a", buf[0], buf[1]);

	CHECK(decode("{\"inputs\":[{\"name\":\"input\",\"shape\":[4,2,3],\"datatype\":\"FP32\","
	    "\"data\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]}]}", &ki, &cause) == 0,
	    "max batch: %s", cause);
	CHECK(ki.rows == 4 && buf[23] == 1.0f, "max batch rows %d", ki.rows);
	free(cause);
}

/* One body that must be refused with a message containing want. */
struct refusal {
	const char *body;
	const char *want;
};

static const struct refusal refusals[] = {
	{ "", "malformed JSON at line 1, column 0" },
	{ "{", "malformed JSON at line 1, column 1" },
	{ "{\"inputs\":[{\"name\":\"input\",\"data\":[NaN]}]}", "malformed JSON at line 1" },
	{ "{\"inputs\":\n[1,]}", "malformed JSON at line 2" },
	{ "{\"inputs\":[],\"inputs\":[]}", "duplicate object key" },
	{ "{\"a\":1e999}", "malformed JSON" },
	{ "{\"a\":123456789012345678901234567890}", "malformed JSON" },
	{ "[1,2]", "request body must be a JSON object" },
	{ "\"text\"", "malformed JSON" },
	{ "{}", "missing field 'inputs'" },
	{ "{\"inputs\":{}}", "field 'inputs' must be an array" },
	{ "{\"inputs\":[]}", "takes 1 input, the request has 0" },
	{ "{\"inputs\":[{},{}]}", "takes 1 input, the request has 2" },
	{ "{\"inputs\":[7]}", "inputs[0] must be an object" },
	{ "{\"inputs\":[{\"shape\":[1,2,3]}]}", "missing field 'name'" },
	{ "{\"inputs\":[{\"name\":5}]}", "field 'name' must be a string" },
	{ "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\"}]}", "unknown input 'x'" },
	{ "{\"inputs\":[{\"name\":\"input\"}]}", "missing field 'datatype'" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"INT32\"}]}", "datatype 'INT32'" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":[]}]}", "field 'datatype' must be a string" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\"}]}", "missing field 'shape'" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":6}]}", "field 'shape' must be an array" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[6]}]}", "shape has 1 dimensions, the model expects 3" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,3,2]}]}", "shape[1] is 3, the model expects 2" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[0,2,3]}]}", "batch size 0 is out of range (1 to 4)" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[5,2,3]}]}", "batch size 5 is out of range" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[-1,2,3]}]}", "batch size -1 is out of range" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[\"1\",2,3]}]}", "shape[0] must be an integer" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2.0,3]}]}", "shape[1] must be an integer" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3]}]}", "missing field 'data'" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":{}}]}", "field 'data' must be an array" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,2,3,4,5]}]}", "data has 5 elements, its shape needs 6" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,2,3,4,5,6,7]}]}", "more than the 6 elements" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,2,\"3\",4,5,6]}]}", "data element 2 is not a number" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[true,2,3,4,5,6]}]}", "data element 0 is not a number" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,null,3,4,5,6]}]}", "data element 1 is not a number" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,{},3,4,5,6]}]}", "data element 1 is not a number" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,2,3,4e38,5,6]}]}", "data element 3 is out of the FP32 range" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[1,2,3,4,-1e300,6]}]}", "data element 4 is out of the FP32 range" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"data\":[[[[1]]],2,3,4,5,6]}]}", "nested deeper than its shape (3)" },
	{ "{\"id\":5,\"inputs\":[]}", "field 'id' must be a string" },
	{ "{\"parameters\":[],\"inputs\":[]}", "field 'parameters' must be an object" },
	{ "{\"parameters\":{\"timeout_us\":-1},\"inputs\":[]}", "parameter 'timeout_us' must be a non-negative integer" },
	{ "{\"parameters\":{\"timeout\":\"5\"},\"inputs\":[]}", "parameter 'timeout' must be a non-negative integer" },
	{ "{\"outputs\":{},\"inputs\":[]}", "field 'outputs' must be an array" },
	{ "{\"outputs\":[1],\"inputs\":[]}", "outputs[0] must be an object" },
	{ "{\"outputs\":[{}],\"inputs\":[]}", "missing field 'name'" },
	{ "{\"outputs\":[{\"name\":\"logits\"}],\"inputs\":[]}", "unknown output 'logits' (model 'tiny' has output 'out')" },
	{ "{\"outputs\":[{\"name\":\"out\",\"parameters\":{\"binary_data\":1}}],\"inputs\":[]}", "parameter 'binary_data' must be true or false" },
	{ "{\"parameters\":{\"binary_data_output\":\"yes\"},\"inputs\":[]}", "parameter 'binary_data_output' must be true or false" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"parameters\":{\"binary_data_size\":24}}]}", "binary_data_size without the binary tensor extension's Inference-Header-Content-Length" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"parameters\":{\"binary_data_size\":-24}}]}", "'binary_data_size' must be a non-negative integer" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"parameters\":{\"binary_data_size\":\"24\"}}]}", "'binary_data_size' must be a non-negative integer" },
	{ "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2,3],\"parameters\":7}]}", "field 'parameters' must be an object" },
};

/* Every malformed or mistyped body is refused, and the message names the problem. */
static void
test_refusals(void)
{
	struct kserve_infer ki;
	char *cause = NULL;
	size_t i;

	for (i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		CHECK(decode(refusals[i].body, &ki, &cause) == -1, "accepted: %s", refusals[i].body);
		CHECK(cause != NULL && strstr(cause, refusals[i].want) != NULL,
		    "body %s: message '%s' lacks '%s'", refusals[i].body, cause ? cause : "(none)",
		    refusals[i].want);
	}
	free(cause);
}

/* Hostile shapes: deep nesting (jansson's limit and ours), a buffer too small, huge bodies. */
static void
test_hostile(void)
{
	struct kserve_infer ki;
	static const char one_row[] = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\","
	    "\"shape\":[1,2,3],\"data\":[1,2,3,4,5,6]}]}";
	char *cause = NULL, *deep;
	json_t *root;
	size_t n = 100000, i;
	float small[3];

	deep = malloc(2 * n + 1);
	for (i = 0; i < n; i++) {
		deep[i] = '[';
		deep[n + i] = ']';
	}
	deep[2 * n] = '\0';
	CHECK(decode(deep, &ki, &cause) == -1 && strstr(cause, "malformed JSON") != NULL,
	    "deep nesting: %s", cause ? cause : "(accepted)");
	free(deep);

	root = kserve_parse(one_row, strlen(one_row), &cause);
	CHECK(root != NULL, "parse: %s", cause);
	CHECK(kserve_decode_infer(root, NULL, &model, small, sizeof small, &ki, &cause) == -1 &&
	    strstr(cause, "do not fit the 12-byte staging slot") != NULL, "small buffer: %s", cause);
	json_decref(root);

	/* A length that stops mid-body is truncated input, not a read past it. */
	CHECK(kserve_parse("{\"inputs\":[1,2,3]}", 9, &cause) == NULL &&
	    strstr(cause, "malformed JSON") != NULL, "truncated: %s", cause);
	free(cause);
}

/* The short form names its model in the body. */
static void
test_model_name(void)
{
	char *cause = NULL;
	json_t *root;

	root = kserve_parse("{\"model\":\"tiny\",\"inputs\":[]}", 28, &cause);
	CHECK(root != NULL && kserve_model_name(root, &cause) != NULL &&
	    strcmp(kserve_model_name(root, &cause), "tiny") == 0, "model name");
	json_decref(root);
	root = kserve_parse("{\"inputs\":[]}", 13, &cause);
	CHECK(kserve_model_name(root, &cause) == NULL && strstr(cause, "missing field 'model'"),
	    "no model: %s", cause);
	json_decref(root);
	root = kserve_parse("{\"model\":1}", 11, &cause);
	CHECK(kserve_model_name(root, &cause) == NULL && strstr(cause, "'model' must be a string"),
	    "model not a string: %s", cause);
	json_decref(root);
	root = kserve_parse("[]", 2, &cause);
	CHECK(kserve_model_name(root, &cause) == NULL && strstr(cause, "JSON object"),
	    "model of an array: %s", cause);
	json_decref(root);
	free(cause);
}

/* Whether a equals b; b is freed. */
static int
equal_free(const json_t *a, json_t *b)
{
	int eq = b != NULL && json_equal(a, b);

	json_decref(b);
	return eq;
}

/* Encoded floats read back bit for bit, with shape, names and the echoed id. */
static void
test_encode_roundtrip(void)
{
	float out[ROWS_MAX * OUT_ELEMS];
	uint64_t rng = 99;
	uint32_t bits;
	json_t *root, *o, *data;
	char *s, *cause = NULL;
	size_t len, hlen, i, round;
	json_error_t jerr;

	for (round = 0; round < 200; round++) {
		for (i = 0; i < sizeof out / sizeof out[0]; i++) {
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			bits = (uint32_t)rng;
			memcpy(&out[i], &bits, sizeof bits);
			if (!isfinite(out[i]))
				out[i] = (float)(int32_t)bits;
		}
		out[0] = FLT_MAX, out[1] = -0.0f, out[2] = FLT_MIN / 3, out[3] = 0.1f;
		s = kserve_fixture_encode(&model, round % 2 ? "abc\"\n" : NULL, ROWS_MAX, 0, out, &len,
		    &hlen, &cause);
		CHECK(s != NULL && len == strlen(s) && hlen == len, "encode: %s", cause);
		if (s == NULL)
			continue;
		root = json_loads(s, 0, &jerr);
		CHECK(root != NULL, "re-parse: %s: %s", jerr.text, s);
		o = json_array_get(json_object_get(root, "outputs"), 0);
		data = json_object_get(o, "data");
		CHECK(json_array_size(data) == ROWS_MAX * OUT_ELEMS, "data length %zu", json_array_size(data));
		for (i = 0; i < json_array_size(data) && i < ROWS_MAX * OUT_ELEMS; i++) {
			float back = (float)json_number_value(json_array_get(data, i));

			CHECK(memcmp(&back, &out[i], sizeof back) == 0, "element %zu: %.9g read back as %.9g",
			    i, out[i], back);
		}
		CHECK(equal_free(json_object_get(o, "shape"), json_pack("[ii]", ROWS_MAX, OUT_ELEMS)),
		    "shape");
		CHECK(strcmp(json_string_value(json_object_get(o, "name")), "out") == 0 &&
		    strcmp(json_string_value(json_object_get(o, "datatype")), "FP32") == 0, "tensor names");
		CHECK(strcmp(json_string_value(json_object_get(root, "model_name")), "tiny") == 0 &&
		    strcmp(json_string_value(json_object_get(root, "model_version")), "1") == 0, "model");
		if (round % 2)
			CHECK(json_is_string(json_object_get(root, "id")) &&
			    strcmp(json_string_value(json_object_get(root, "id")), "abc\"\n") == 0, "id echo");
		else
			CHECK(json_object_get(root, "id") == NULL, "id without one asked");
		json_decref(root);
		free(s);
	}
	out[3] = NAN;
	CHECK(kserve_fixture_encode(&model, NULL, 2, 0, out, &len, &hlen, &cause) == NULL &&
	    strstr(cause, "element 3: FP32 NaN") != NULL, "NaN output: %s", cause);
	out[3] = -INFINITY;
	CHECK(kserve_fixture_encode(&model, NULL, 2, 0, out, &len, &hlen, &cause) == NULL &&
	    strstr(cause, "element 3: FP32 -Infinity") != NULL, "Inf output: %s", cause);
	free(cause);
}

/* Parse s (freeing it) and return the tree; NULL counts a failure. */
static json_t *
reparse(char *s, const char *what)
{
	json_error_t jerr;
	json_t *v;

	CHECK(s != NULL, "%s: no text", what);
	if (s == NULL)
		return NULL;
	v = json_loads(s, 0, &jerr);
	CHECK(v != NULL, "%s: %s", what, jerr.text);
	free(s);
	return v;
}

/* Metadata, index, error and flag bodies. */
static void
test_metadata(void)
{
	json_t *v;
	size_t len;
	char *config = NULL, *cause = NULL;


	v = reparse(kserve_encode_model_metadata(&model, &len, NULL), "model metadata");
	CHECK(equal_free(v, json_pack("{s:s, s:[s], s:s, s:[{s:s, s:s, s:[iii]}], s:[{s:s, s:s, s:[ii]}]}",
	    "name", "tiny", "versions", "1", "platform", KSERVE_PLATFORM,
	    "inputs", "name", "input", "datatype", "FP32", "shape", -1, 2, 3,
	    "outputs", "name", "out", "datatype", "FP32", "shape", -1, 2)), "model metadata");
	json_decref(v);
	v = reparse(kserve_encode_server_metadata(&(struct kserve_server_info){ 1, 1 }, &len, NULL),
	    "server metadata");
	CHECK(strcmp(json_string_value(json_object_get(v, "name")), "inferd") == 0 &&
	    strcmp(json_string_value(json_object_get(v, "version")), PACKAGE_VERSION) == 0 &&
	    equal_free(json_object_get(v, "extensions"), json_pack("[s,s,s,s,s,s,s]", "binary_tensor_data",
	    "statistics", "model_repository", "model_configuration", "classification", "system_shared_memory",
	    "cuda_shared_memory")),
	    "server metadata: extensions");
	json_decref(v);
	v = reparse(kserve_encode_server_metadata(&(struct kserve_server_info){ 0, 0 }, &len, NULL),
	    "server metadata without shm");
	CHECK(equal_free(json_object_get(v, "extensions"), json_pack("[s,s,s,s,s]", "binary_tensor_data",
	    "statistics", "model_repository", "model_configuration", "classification")),
	    "server metadata: no shared-memory extension while the endpoints are off");
	json_decref(v);
	CHECK(kserve_decode_load_request("", 0, &config, &cause) == 0 && config == NULL, "empty load body");
	CHECK(kserve_decode_load_request("{\"parameters\":{\"config\":\"{\\\"max_batch_size\\\":4}\"}}", strlen("{\"parameters\":{\"config\":\"{\\\"max_batch_size\\\":4}\"}}"),
	    &config, &cause) == 0 && config != NULL && strcmp(config, "{\"max_batch_size\":4}") == 0,
	    "load config override: %s", cause ? cause : config);
	free(config);
	CHECK(kserve_decode_load_request("{\"parameters\":{\"file:1/model.onnx\":\"AAAA\"}}", 43, &config, &cause) != 0 &&
	    strstr(cause, "'file:1/model.onnx' is not supported") != NULL, "file parameter accepted");
	free(cause);
	cause = NULL;
	CHECK(kserve_decode_load_request("{\"parameters\":{\"config\":7}}", 27, &config, &cause) != 0 &&
	    strstr(cause, "must be a string") != NULL, "numeric config accepted");
	free(cause);
	cause = NULL;
	CHECK(kserve_decode_load_request("{\"param", 7, &config, &cause) != 0 && strstr(cause, "malformed JSON") != NULL,
	    "truncated load body accepted");
	free(cause);
	v = reparse(kserve_encode_error("bad \xc3\x28 byte", &len, NULL), "error");
	CHECK(strcmp(json_string_value(json_object_get(v, "error")), "bad ?( byte") == 0, "error text");
	json_decref(v);
	v = reparse(kserve_encode_flag("live", 1, &len, NULL), "flag");
	CHECK(json_is_true(json_object_get(v, "live")), "flag");
	json_decref(v);
}

/* Little-endian bytes of n floats, as the binary tensor extension carries them. */
static void
to_le32(unsigned char *dst, const float *v, size_t n)
{
	uint32_t bits;
	size_t i;

	for (i = 0; i < n; i++, dst += 4) {
		memcpy(&bits, &v[i], sizeof bits);
		dst[0] = (unsigned char)bits, dst[1] = (unsigned char)(bits >> 8);
		dst[2] = (unsigned char)(bits >> 16), dst[3] = (unsigned char)(bits >> 24);
	}
}

/* A binary-extension JSON header for rows rows announcing size bytes; extra goes before "inputs". */
static const char *
bin_header(char *out, size_t len, const char *extra, int rows, long size)
{
	snprintf(out, len, "{%s\"inputs\":[{\"name\":\"input\",\"shape\":[%d,2,3],"
	    "\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":%ld}}]}", extra, rows,
	    size);
	return out;
}

/* Inference-Header-Content-Length: digits only, 1 to the body's length. */
static void
test_header_length(void)
{
	static const struct {
		const char *value;
		const char *want;		/* NULL: accepted */
	} cases[] = {
		{ "1", NULL }, { "100", NULL }, { "0100", NULL },
		{ "101", "101 exceeds the body's 100 bytes" },
		{ "0", "is 0" },
		{ "", "must be a byte count" }, { "-1", "must be a byte count" },
		{ "+5", "must be a byte count" }, { " 5", "must be a byte count" },
		{ "5 ", "must be a byte count" }, { "0x10", "must be a byte count" },
		{ "1e2", "must be a byte count" },
		{ "99999999999999999999", "exceeds the body's" },
		{ "999999999999999999999", "must be a byte count" },
	};
	char *cause = NULL;
	size_t i, n;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		n = 7;
		if (cases[i].want == NULL) {
			CHECK(kserve_header_length(cases[i].value, 100, &n, &cause) == 0 &&
			    n == strtoul(cases[i].value, NULL, 10), "'%s' refused: %s",
			    cases[i].value, cause);
			continue;
		}
		CHECK(kserve_header_length(cases[i].value, 100, &n, &cause) == -1 && n == 7 &&
		    strstr(cause, cases[i].want) != NULL, "'%s': %s, expected '%s'", cases[i].value,
		    cause ? cause : "(accepted)", cases[i].want);
	}
	free(cause);
}

/* Binary input lands in the buffer bit for bit (NaN payloads too); the output flag follows the request. */
static void
test_binary_decode(void)
{
	float in[2 * IN_ELEMS] = { 1.5f, -0.0f, FLT_MAX, FLT_MIN / 4, 1e-45f, 3.25f,
	    -7.0f, 0.1f, 2.0f, 4.0f, 8.0f, 16.0f };
	unsigned char raw[sizeof in];
	struct kserve_binary bin = { raw, sizeof raw };
	struct kserve_infer ki;
	char hdr[512], *cause = NULL;
	uint32_t nan_bits = 0x7fc01234u;

	memcpy(&in[3], &nan_bits, sizeof nan_bits);
	to_le32(raw, in, 2 * IN_ELEMS);
	CHECK(decode_bin(bin_header(hdr, sizeof hdr, "", 2, 48), &bin, &ki, &cause) == 0,
	    "binary in: %s", cause);
	CHECK(ki.rows == 2 && ki.input_bytes == 48 && ki.binary_output == 0, "binary in: rows %d "
	    "bytes %zu binary_output %d", ki.rows, ki.input_bytes, ki.binary_output);
	CHECK(memcmp(buf, in, sizeof in) == 0, "binary in: the buffer is not the bytes sent");
	CHECK(isnan(buf[12]), "binary in: wrote past its rows");

	/* binary_data_output asks for every output; an output's own binary_data wins. */
	CHECK(decode_bin(bin_header(hdr, sizeof hdr, "\"parameters\":{\"binary_data_output\":true},",
	    1, 24), &(struct kserve_binary){ raw, 24 }, &ki, &cause) == 0 && ki.binary_output == 1,
	    "binary_data_output: %s", cause);
	CHECK(decode_bin(bin_header(hdr, sizeof hdr, "\"parameters\":{\"binary_data_output\":true},"
	    "\"outputs\":[{\"name\":\"out\",\"parameters\":{\"binary_data\":false}}],", 1, 24),
	    &(struct kserve_binary){ raw, 24 }, &ki, &cause) == 0 && ki.binary_output == 0,
	    "binary_data false over binary_data_output: %s", cause);
	CHECK(decode("{\"outputs\":[{\"name\":\"out\",\"parameters\":{\"binary_data\":true}}],"
	    "\"inputs\":[{\"name\":\"input\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
	    "\"data\":[1,2,3,4,5,6]}]}", &ki, &cause) == 0 && ki.binary_output == 1 && buf[5] == 6.0f,
	    "JSON in, binary out: %s", cause);
	/* The extension's header with JSON data and no binary section is plain JSON. */
	CHECK(decode_bin("{\"inputs\":[{\"name\":\"input\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
	    "\"data\":[1,2,3,4,5,6]}]}", &(struct kserve_binary){ raw, 0 }, &ki, &cause) == 0 &&
	    ki.rows == 1 && buf[0] == 1.0f, "JSON data with an empty binary section: %s", cause);
	free(cause);
}

/* Every length checked: announced size against the shape, missing bytes, leftover bytes. */
static void
test_binary_refusals(void)
{
	static const struct {
		int rows;
		long size;
		size_t have;
		const char *want;
	} cases[] = {
		{ 1, 20, 24, "binary_data_size is 20, its shape needs 24 bytes" },
		{ 1, 28, 28, "binary_data_size is 28, its shape needs 24 bytes" },
		{ 2, 24, 24, "binary_data_size is 24, its shape needs 48 bytes" },
		{ 2, 48, 47, "binary data is missing: 48 bytes announced, 47 left" },
		{ 1, 24, 0, "binary data is missing: 24 bytes announced, 0 left" },
		{ 1, 24, 25, "1 bytes of binary data are left over after the inputs took 24" },
		{ 1, 24, 48, "24 bytes of binary data are left over" },
		{ 5, 120, 120, "batch size 5 is out of range" },
	};
	unsigned char raw[256] = { 0 };
	struct kserve_infer ki;
	char hdr[512], *cause = NULL;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bin_header(hdr, sizeof hdr, "", cases[i].rows, cases[i].size);
		CHECK(decode_bin(hdr, &(struct kserve_binary){ raw, cases[i].have }, &ki, &cause) == -1 &&
		    strstr(cause, cases[i].want) != NULL, "case %zu: %s, expected '%s'", i,
		    cause ? cause : "(accepted)", cases[i].want);
	}
	CHECK(decode_bin("{\"inputs\":[{\"name\":\"input\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
	    "\"data\":[1,2,3,4,5,6],\"parameters\":{\"binary_data_size\":24}}]}",
	    &(struct kserve_binary){ raw, 24 }, &ki, &cause) == -1 &&
	    strstr(cause, "give 'data' or parameters.binary_data_size, not both") != NULL,
	    "data and binary_data_size: %s", cause);
	CHECK(decode_bin("{\"inputs\":[{\"name\":\"input\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
	    "\"data\":[1,2,3,4,5,6]}]}", &(struct kserve_binary){ raw, 4 }, &ki, &cause) == -1 &&
	    strstr(cause, "4 bytes of binary data are left over after the inputs took 0") != NULL,
	    "JSON data and binary bytes: %s", cause);
	CHECK(decode_bin(bin_header(hdr, sizeof hdr, "", 1, 24), &(struct kserve_binary){ raw, 24 },
	    &ki, &cause) == 0, "the good case of the same header: %s", cause);
	free(cause);
}

/* A binary answer: a JSON header announcing the bytes, then the floats exactly as the JSON answer has them. */
static void
test_binary_encode(void)
{
	float out[ROWS_MAX * OUT_ELEMS] = { 0.1f, -2.5f, FLT_MAX, -FLT_MIN, 1e-45f, 7.0f, -0.0f, 3.0f };
	unsigned char want[sizeof out];
	size_t jlen, jhlen, blen, bhlen, i;
	char *js, *bs, *cause = NULL;
	json_t *jroot, *broot, *jo, *bo, *data;
	json_error_t jerr;
	float back[ROWS_MAX * OUT_ELEMS];

	js = kserve_fixture_encode(&model, "id-1", 3, 0, out, &jlen, &jhlen, &cause);
	bs = kserve_fixture_encode(&model, "id-1", 3, 1, out, &blen, &bhlen, &cause);
	CHECK(js != NULL && bs != NULL, "encode: %s", cause);
	if (js == NULL || bs == NULL)
		return;
	CHECK(blen == bhlen + 3 * OUT_ELEMS * sizeof(float), "binary length %zu, header %zu", blen, bhlen);
	jroot = json_loads(js, 0, &jerr);
	broot = json_loadb(bs, bhlen, 0, &jerr);
	CHECK(jroot != NULL && broot != NULL, "answers do not parse: %s", jerr.text);
	jo = json_array_get(json_object_get(jroot, "outputs"), 0);
	bo = json_array_get(json_object_get(broot, "outputs"), 0);
	CHECK(json_object_get(bo, "data") == NULL && json_integer_value(json_object_get(
	    json_object_get(bo, "parameters"), "binary_data_size")) == 3 * OUT_ELEMS * 4,
	    "binary output tensor: %s", bs);
	CHECK(json_equal(json_object_get(jo, "shape"), json_object_get(bo, "shape")) &&
	    json_equal(json_object_get(jo, "name"), json_object_get(bo, "name")) &&
	    json_equal(json_object_get(jroot, "id"), json_object_get(broot, "id")), "headers differ");
	/* Bit-identical: the JSON answer's floats and the binary answer's bytes. */
	data = json_object_get(jo, "data");
	for (i = 0; i < 3 * OUT_ELEMS; i++)
		back[i] = (float)json_number_value(json_array_get(data, i));
	to_le32(want, back, 3 * OUT_ELEMS);
	CHECK(memcmp(bs + bhlen, want, 3 * OUT_ELEMS * 4) == 0, "binary bytes differ from the JSON answer");
	json_decref(jroot);
	json_decref(broot);
	free(js);
	free(bs);
	/* Binary carries what JSON cannot. */
	out[1] = NAN;
	bs = kserve_fixture_encode(&model, NULL, 1, 1, out, &blen, &bhlen, &cause);
	CHECK(bs != NULL && blen == bhlen + 8, "NaN as binary: %s", cause);
	free(bs);
	free(cause);
}

int
main(void)
{
	make_model();
	test_valid();
	test_refusals();
	test_hostile();
	test_model_name();
	test_encode_roundtrip();
	test_metadata();
	test_header_length();
	test_binary_decode();
	test_binary_refusals();
	test_binary_encode();
	return test_finish("test_kserve");
}
