/*
 * test_kserve_source.c: a request's tensors from their other sources: data
 * decoded straight from the request text (kserve_parse_fast) must give the
 * bytes and the refusals jansson's tree gives; tensors in Triton
 * shared-memory regions are bounds-checked, point into the region and hold
 * it until released; answers print every value back exactly.  The model is
 * described by hand: inputs x FP32 [4], ids INT64 [-1 (max 8)], m BOOL [2],
 * h FP16 [2]; outputs y FP32 [4], n INT64 [1], b BOOL [2].
 */
#include "config.h"

#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kserve.h"
#include "test_util.h"

static model_t model;
static unsigned char tree_buf[8192], fast_buf[8192];
static device_t *dev;
static shm_registry_t *shm;
static char key[64];

/* Describe one tensor of one dim. */
static void
fixture_io(struct model_io *io, const char *name, enum graph_dtype dt, int64_t dim, int64_t max)
{
	snprintf(io->name, sizeof io->name, "%s", name);
	io->dtype = dt;
	io->ndims = 1;
	io->dims[0] = dim;
	io->max_dims[0] = max;
	memset(io->var, -1, sizeof io->var);
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

/* Decode text through the fast path (spans and shm); ki holds region references until released. */
static int
decode_fast(const char *text, struct kserve_infer *ki, size_t *nspans, char **cause)
{
	struct tensor_text_span spans[KSERVE_MAX_SPANS];
	struct kserve_source src = { text, spans, 0, shm };
	json_t *root;
	int rc;

	memset(fast_buf, 0xee, sizeof fast_buf);
	if ((root = kserve_parse_fast(text, strlen(text), spans, &src.nspans, cause)) == NULL)
		return -1;
	*nspans = src.nspans;
	rc = kserve_decode_request(root, &src, NULL, &model, fast_buf, sizeof fast_buf, ki, cause);
	json_decref(root);
	ki->id = NULL;
	return rc;
}

/* Decode text through jansson's tree alone. */
static int
decode_tree(const char *text, struct kserve_infer *ki, char **cause)
{
	json_t *root;
	int rc;

	memset(tree_buf, 0xee, sizeof tree_buf);
	if ((root = kserve_parse(text, strlen(text), cause)) == NULL)
		return -1;
	rc = kserve_decode_infer(root, NULL, &model, tree_buf, sizeof tree_buf, ki, cause);
	json_decref(root);
	ki->id = NULL;
	return rc;
}

/* Both paths agree on text: the same status, message and staged bytes; want_spans inputs located. */
static void
same_both_ways(const char *what, const char *text, size_t want_spans)
{
	struct kserve_infer a, b;
	char *ca = NULL, *cb = NULL;
	size_t n = 0;
	int ra = decode_tree(text, &a, &ca), rb = decode_fast(text, &b, &n, &cb);

	CHECK(ra == rb, "%s: tree %d (%s), fast %d (%s)", what, ra, ca ? ca : "", rb, cb ? cb : "");
	CHECK(n == want_spans, "%s: %zu spans located, want %zu", what, n, want_spans);
	if (ra == 0 && rb == 0) {
		size_t i = 0;

		while (i < a.staged_bytes && tree_buf[i] == fast_buf[i])
			i++;
		CHECK(a.staged_bytes == b.staged_bytes && i == a.staged_bytes,
		    "%s: staged byte %zu differs: %02x / %02x", what, i, tree_buf[i], fast_buf[i]);
	}
	else if (ra != 0 && rb != 0)
		CHECK(strstr(cb, "malformed JSON") != NULL || strcmp(ca, cb) == 0,
		    "%s: messages differ: '%s' / '%s'", what, ca, cb);
	kserve_infer_release(&b, shm);
	free(ca);
	free(cb);
}

#define X "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":%s}"
#define IDS "{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":[9007199254740993,-1,0,1,2,-9223372036854775808]}"
#define M "{\"name\":\"m\",\"datatype\":\"BOOL\",\"shape\":[2,2],\"data\":[true,false,false,true]}"
#define H "{\"name\":\"h\",\"datatype\":\"FP16\",\"shape\":[2,2],\"data\":%s}"

/* One request with x's and h's data replaced. */
static void
request(char *out, size_t cap, const char *x, const char *h)
{
	char fx[1200], fh[256];

	snprintf(fx, sizeof fx, X, x);
	snprintf(fh, sizeof fh, H, h);
	snprintf(out, cap, "{\"id\":\"r\",\"inputs\":[%s," IDS "," M ",%s]}", fh, fx);
}

/* The text path gives the tree's bytes for good data and its answer for bad data. */
static void
test_text_path(void)
{
	static const struct { const char *what, *x, *h; } cases[] = {
		{ "flat", "[1,2,3,4,5,6,7,8.5]", "[1.5,-2,65504,0.1]" },
		{ "nested", "[[1,2,3,4],[5,6,7,8.5]]", "[[1.5,-2],[65504,0.1]]" },
		{ "extremes", "[3.4028235e38,-0.0,1e-45,1.17549435e-38,0.1,0.2,0.3,16777217]", "[6e-8,-0.0,1,2]" },
		{ "too few", "[1,2,3,4,5,6,7]", "[1,2,3,4]" },
		{ "too many", "[1,2,3,4,5,6,7,8,9]", "[1,2,3,4]" },
		{ "string", "[1,2,3,4,5,6,7,\"8\"]", "[1,2,3,4]" },
		{ "out of range", "[1,2,3,4,5,6,7,1e39]", "[1,2,3,4]" },
		{ "too deep", "[[[1,2,3,4]],[[5,6,7,8]]]", "[1,2,3,4]" },
		{ "ragged", "[[1,2,3],[4,5,6,7,8]]", "[1,2,3,4]" },
		{ "NaN", "[1,2,3,4,5,6,7,NaN]", "[1,2,3,4]" },
		{ "null", "null", "[1,2,3,4]" },
		{ "FP16 overflow", "[1,2,3,4,5,6,7,8]", "[1,2,3,65520]" },
	};
	char text[8192];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		request(text, sizeof text, cases[i].x, cases[i].h);
		same_both_ways(cases[i].what, text, 4);
	}
	same_both_ways("broken JSON", "{\"inputs\":[{\"name\":\"x\",\"data\":[1,2]", 0);
	same_both_ways("data twice", "{\"inputs\":[{\"name\":\"x\",\"data\":[1],\"data\":[2]}]}", 0);
}

/* Random FP32 rows decode to the bits strtof gives. */
static void
test_random_values(void)
{
	char text[8192], x[1024];
	uint64_t st = 42;
	float v[8], want, got;
	struct kserve_infer ki;
	size_t n, used, i;
	char *cause = NULL, *p;
	int round;

	for (round = 0; round < 200; round++) {
		test_fill_random(v, 8, &st, -1e6f, 1e6f);
		used = (size_t)snprintf(x, sizeof x, "[");
		for (i = 0; i < 8; i++)
			used += (size_t)snprintf(x + used, sizeof x - used, "%s%.*g", i ? "," : "",
			    (int)(round % 12) + 1, (double)v[i] / (round % 3 ? 1 : 1e30));
		snprintf(x + used, sizeof x - used, "]");
		request(text, sizeof text, x, "[1,2,3,4]");
		CHECK(decode_fast(text, &ki, &n, &cause) == 0, "random row: %s", cause);
		for (i = 0, p = x + 1; i < 8; i++, p++) {
			want = strtof(p, &p);
			memcpy(&got, fast_buf + i * 4, 4);
			CHECK(memcmp(&want, &got, 4) == 0, "element %zu: %a, strtof %a", i, got, want);
		}
		same_both_ways("random", text, 4);
	}
	free(cause);
}

/* Make the region object: byte i holds i % 251, then floats 1..8 at 4096. */
static void
make_region(void)
{
	unsigned char *p;
	float f[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	int fd, i;

	shm_unlink(key);
	if ((fd = shm_open(key, O_CREAT | O_EXCL | O_RDWR, 0600)) < 0 || ftruncate(fd, 16384) != 0) {
		perror("shm");
		exit(1);
	}
	p = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (i = 0; i < 16384; i++)
		p[i] = (unsigned char)(i % 251);
	memcpy(p + 4096, f, sizeof f);
	munmap(p, 16384);
	close(fd);
	if (shm_registry_add_system(shm, "reg", key, 0, 16384, NULL) != SHM_OK) {
		fprintf(stderr, "register failed\n");
		exit(1);
	}
}

/* A request with x in the region (offset, size) and y written there (offset, size). */
static int
decode_shm(size_t xoff, size_t xsize, size_t yoff, size_t ysize, const char *region,
    struct kserve_infer *ki, char **cause)
{
	char text[8192];
	size_t n;

	snprintf(text, sizeof text, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],"
	    "\"parameters\":{\"shared_memory_region\":\"%s\",\"shared_memory_offset\":%zu,"
	    "\"shared_memory_byte_size\":%zu}}," IDS "," M ",{\"name\":\"h\",\"datatype\":\"FP16\","
	    "\"shape\":[2,2],\"data\":[1,2,3,4]}],\"outputs\":[{\"name\":\"n\"},{\"name\":\"y\","
	    "\"parameters\":{\"shared_memory_region\":\"reg\",\"shared_memory_offset\":%zu,"
	    "\"shared_memory_byte_size\":%zu}}]}", region, xoff, xsize, yoff, ysize);
	free(*cause);
	*cause = NULL;
	return decode_fast(text, ki, &n, cause);
}

/* Refused with a message containing needle; nothing stays referenced. */
static void
shm_refused(const char *what, size_t xoff, size_t xsize, size_t yoff, size_t ysize,
    const char *region, const char *needle)
{
	struct kserve_infer ki;
	char *cause = NULL;
	int rc = decode_shm(xoff, xsize, yoff, ysize, region, &ki, &cause);

	CHECK(rc == -1 && cause != NULL && strstr(cause, needle) != NULL, "%s: %d '%s' (want '%s')",
	    what, rc, cause ? cause : "", needle);
	kserve_infer_release(&ki, shm);
	free(cause);
}

/* Inputs and outputs in a region: pointed into, checked, referenced until released. */
static void
test_shm(void)
{
	struct kserve_infer ki;
	char *cause = NULL;
	const float *x;
	json_t *st;

	make_region();
	CHECK(decode_shm(4096, 32, 8000, 32, "reg", &ki, &cause) == 0, "shm decode: %s", cause);
	x = ki.input_at[0];
	CHECK(x != NULL && x[0] == 1.0f && x[7] == 8.0f, "x points at the region's floats");
	CHECK(ki.output_at[0] != NULL && ki.output_at[1] == NULL && ki.output_at[2] == NULL &&
	    ((unsigned char *)ki.output_at[0])[0] == 8000 % 251, "y points into the region at 8000");
	CHECK(ki.input_bytes == 48 + 4 + 8, "x is not staged: %zu staged bytes", ki.input_bytes);
	CHECK(ki.nregions == 2, "two references held: %d", ki.nregions);
	/* Unregistered while referenced: the name goes, the mapping stays until released. */
	CHECK(shm_registry_remove(shm, SHM_KIND_SYSTEM, "reg", NULL) == SHM_OK, "unregister");
	CHECK(x[7] == 8.0f, "still mapped while referenced");
	kserve_infer_release(&ki, shm);
	CHECK(ki.nregions == 0, "released");
	shm_refused("unknown region", 4096, 32, 8000, 32, "reg", "not registered");
	make_region();
	shm_refused("input size", 4096, 36, 8000, 32, "reg", "shared_memory_byte_size is 36");
	shm_refused("input past the end", 16380, 32, 8000, 32, "reg", "outside");
	shm_refused("output too small", 4096, 32, 8000, 16, "reg", "needs 32");
	shm_refused("output past the end", 4096, 32, 16370, 32, "reg", "outside");
	shm_refused("offset far out", (size_t)1 << 62, 32, 8000, 32, "reg", "outside");
	CHECK(shm_registry_status(shm, SHM_KIND_SYSTEM, "reg", &st, NULL) == SHM_OK, "still registered");
	json_decref(st);
	free(cause);
}

/* The answer: JSON values print back exactly; an output in shared memory is described, not printed. */
static void
test_encode(void)
{
	struct kserve_infer ki;
	char *cause = NULL, *s;
	size_t len, hlen, n, i;
	float y[8] = { FLT_MAX, -0.0f, 0x1p-149f, 0.1f, 1e-7f, -3.5f, 16777216.0f, FLT_MIN };
	int64_t nn[2] = { INT64_MIN, 7 };
	json_t *root, *outs, *data;
	char text[8192];

	request(text, sizeof text, "[1,2,3,4,5,6,7,8]", "[1,2,3,4]");
	CHECK(decode_fast(text, &ki, &n, &cause) == 0, "decode: %s", cause);
	memcpy(fast_buf + ki.output_offset[0], y, sizeof y);
	memcpy(fast_buf + ki.output_offset[1], nn, sizeof nn);
	memcpy(fast_buf + ki.output_offset[2], "\1\0\0\1", 4);
	s = kserve_encode_infer(&model, "q\"", &ki, fast_buf, &len, &hlen, &cause);
	CHECK(s != NULL && len == strlen(s), "encode: %s", cause);
	root = s ? json_loads(s, 0, NULL) : NULL;
	outs = json_object_get(root, "outputs");
	data = json_object_get(json_array_get(outs, 0), "data");
	for (i = 0; i < 8 && data != NULL; i++) {
		float back = (float)json_number_value(json_array_get(data, i));

		CHECK(memcmp(&back, &y[i], 4) == 0, "y[%zu] %a read back as %a", i, y[i], back);
	}
	data = json_object_get(json_array_get(outs, 1), "data");
	CHECK(json_integer_value(json_array_get(data, 0)) == INT64_MIN, "INT64 exact");
	CHECK(json_is_true(json_array_get(json_object_get(json_array_get(outs, 2), "data"), 0)), "BOOL");
	CHECK(strcmp(json_string_value(json_object_get(root, "id")), "q\"") == 0, "id echoed");
	json_decref(root);
	free(s);
	CHECK(decode_shm(4096, 32, 8000, 32, "reg", &ki, &cause) == 0, "shm decode: %s", cause);
	s = kserve_encode_infer(&model, NULL, &ki, fast_buf, &len, &hlen, &cause);
	root = s ? json_loads(s, 0, NULL) : NULL;
	outs = json_object_get(root, "outputs");
	/* As Triton: no data and no parameters (its C++ client takes parameters for binary data). */
	CHECK(json_array_size(outs) == 2 && json_object_get(json_array_get(outs, 1), "data") == NULL &&
	    json_object_get(json_array_get(outs, 1), "parameters") == NULL &&
	    json_array_size(json_object_get(json_array_get(outs, 1), "shape")) == 2,
	    "shm output described by name, datatype and shape: %s", s);
	json_decref(root);
	free(s);
	kserve_infer_release(&ki, shm);
	free(cause);
}

int
main(void)
{
	struct shm_registry_config c = { NULL, "", "", 1 << 20 };

	snprintf(key, sizeof key, "/inferd-test-kserve-%ld", (long)getpid());
	dev = test_open_device();
	c.dev = dev;
	if (shm_registry_create(&c, &shm, NULL) != 0)
		return 1;
	make_model();
	test_text_path();
	test_random_values();
	test_shm();
	test_encode();
	shm_registry_free(shm);
	shm_unlink(key);
	device_close(dev);
	return test_finish("test_kserve_source");
}
