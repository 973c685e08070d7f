/* test_model_warmup.c: model.json "warmup": parsing, each data form, sample file checks, non-finite outputs. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "model_warmup.h"
#include "onnx_build.h"
#include "test_util.h"

static device_t *dev;

/* Load dir (flat, version 1) with override; NULL and a failed check when it is refused. */
static model_t *
load(const char *dir, const char *override)
{
	char *cause = NULL;
	model_t *m = NULL;

	CHECK(model_load_version(dev, dir, dir, 1, override, &m, &cause) == 0, "%s: %s", override, cause);
	free(cause);
	return m;
}

/* Loading dir with override must be refused with a message holding want. */
static void
expect_load_refused(const char *dir, const char *override, const char *want)
{
	char *cause = NULL;
	model_t *m = NULL;

	CHECK(model_load_version(dev, dir, dir, 1, override, &m, &cause) != 0, "%s: accepted", override);
	if (cause != NULL)
		printf("refused as expected: %s\n", cause);
	CHECK(cause != NULL && strstr(cause, want) != NULL, "%s: message lacks '%s': %s", override, want, cause);
	model_free(m);
	free(cause);
}

/* Warm up the model loaded with override; expect success (want NULL) or a failure whose message holds want. */
static void
expect_warmup(const char *dir, const char *override, const char *const *want)
{
	model_t *m = load(dir, override);
	char *cause = NULL;
	int rc;

	if (m == NULL)
		return;
	rc = model_warmup(m, &cause);
	if (want == NULL)
		CHECK(rc == 0, "%s: %s", override, cause);
	else {
		CHECK(rc != 0, "%s: warm-up passed", override);
		if (cause != NULL)
			printf("warm-up failed as expected: %s\n", cause);
		for (; cause != NULL && *want != NULL; want++)
			CHECK(strstr(cause, *want) != NULL, "%s: message lacks '%s': %s", override, *want, cause);
	}
	free(cause);
	model_free(m);
}

/* The fashion-mlp (784 FP32 in, max batch 256): every data form; bad entries refused at load. */
static void
test_mlp(const char *dir)
{
	float row[784];
	model_t *m;
	size_t i;

	for (i = 0; i < 784; i++)
		row[i] = (float)(i % 13) / 13.0f;
	test_write_file(dir, "sample.bin", (const char *)row, sizeof row);
	test_write_file(dir, "short.bin", (const char *)row, 100);
	m = load(dir, "{\"warmup\": [{\"batch_sizes\": [1, 8], \"data\": \"zeros\"}, {\"data\": \"random\"},"
	    " {\"batch_sizes\": [256], \"data\": \"sample.bin\"}]}");
	if (m != NULL) {
		CHECK(m->warmup.count == 3 && m->warmup.entries[0].nsizes == 2 && m->warmup.entries[0].batch_sizes[1] == 8 &&
		    m->warmup.entries[0].data == MODEL_WARMUP_ZEROS && m->warmup.entries[1].nsizes == 1 &&
		    m->warmup.entries[1].batch_sizes[0] == 1 && m->warmup.entries[1].data == MODEL_WARMUP_RANDOM &&
		    m->warmup.entries[2].data == MODEL_WARMUP_FILE && strcmp(m->warmup.entries[2].file, "sample.bin") == 0,
		    "warmup parsed wrong");
		model_free(m);
	}
	m = load(dir, NULL);
	if (m != NULL) {
		char *cause = NULL;
		CHECK(m->warmup.count == 0 && model_warmup(m, &cause) == 0, "no warm-up: %s", cause);
		free(cause);
		model_free(m);
	}
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [1, 8], \"data\": \"zeros\"}]}", NULL);
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [3, 256], \"data\": \"random\"}]}", NULL);
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [2, 5], \"data\": \"sample.bin\"}]}", NULL);
	expect_warmup(dir, "{\"warmup\": [{\"data\": \"zeros\"}, {\"batch_sizes\": [4], \"data\": \"short.bin\"}]}",
	    (const char *const[]){ "model 'fashion-mlp' version 1", "warmup[1] (batch size 4, file short.bin)",
	    "short.bin: 100 bytes", "3136 bytes", NULL });
	expect_warmup(dir, "{\"warmup\": [{\"data\": \"absent.bin\"}]}",
	    (const char *const[]){ "warmup[0] (batch size 1, file absent.bin)", "absent.bin: No such file", NULL });
	expect_load_refused(dir, "{\"warmup\": [{\"batch_sizes\": [0]}]}", "warmup[0]: batch_sizes[0] must be an integer in [1, 256]");
	expect_load_refused(dir, "{\"max_batch_size\": 4, \"dynamic_batching\": {}, \"warmup\": [{\"batch_sizes\": [1, 8]}]}", "batch_sizes[1]");
	expect_load_refused(dir, "{\"warmup\": [{\"batch_sizes\": []}]}", "\"batch_sizes\" must be an array");
	expect_load_refused(dir, "{\"warmup\": [{\"data\": \"../model.json\"}]}", "inside the model directory");
	expect_load_refused(dir, "{\"warmup\": [{\"data\": 5}]}", "warmup[0]: \"data\" must be");
	expect_load_refused(dir, "{\"warmup\": [{\"rows\": 5}]}", "warmup[0]: unknown key \"rows\"");
	expect_load_refused(dir, "{\"warmup\": {\"data\": \"zeros\"}}", "\"warmup\" must be an array");
	expect_load_refused(dir, "{\"warmup\": [1]}", "warmup[0] must be an object");
	expect_load_refused(dir, "{\"warmup\": [{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]}", "at most 16 entries");
}

/* x0 / x1: zeros make NaN (a warning), random is finite, a sample with x1 = 0 makes infinity (a failure). */
static void
test_div(const char *root)
{
	static const int64_t dims[] = { -1, 4 };
	float ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, zeros_x1[8] = { 1, 2, 3, 4, 0, 0, 0, 0 };
	char *dir;
	size_t len;
	uint8_t *buf = onnx_build_unary("Div", "div0", 2, 2, dims, &len);

	if (asprintf(&dir, "%s/div", root) == -1 || mkdir(dir, 0700) != 0)
		exit(1);
	test_write_file(dir, "model.onnx", (const char *)buf, len);
	test_write_file(dir, "model.json", "{\"max_batch_size\": 4}", 21);
	test_write_file(dir, "ones.bin", (const char *)ones, sizeof ones);
	test_write_file(dir, "inf.bin", (const char *)zeros_x1, sizeof zeros_x1);
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [1, 4], \"data\": \"zeros\"}]}", NULL);
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [4], \"data\": \"random\"}]}", NULL);
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [3], \"data\": \"ones.bin\"}]}", NULL);
	expect_warmup(dir, "{\"warmup\": [{\"batch_sizes\": [2], \"data\": \"inf.bin\"}]}",
	    (const char *const[]){ "model 'div' version 1", "warmup[0] (batch size 2, file inf.bin)", "is not finite", NULL });
	expect_load_refused(dir, "{\"warmup\": [{\"batch_sizes\": [5]}]}", "[1, 4]");
	free(buf);
	free(dir);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char *cmd, *root = test_mkdtemp(), *mlp;

	dev = test_open_device();
	if (asprintf(&mlp, "%s/fm", root) == -1 ||
	    asprintf(&cmd, "cp -r '%s/conf/models/fashion-mlp' '%s'", top ? top : ".", mlp) == -1 || system(cmd) != 0) {
		fprintf(stderr, "cannot copy the fashion-mlp model\n");
		return 1;
	}
	free(cmd);
	test_mlp(mlp);
	test_div(root);
	test_rmtree(root);
	free(root);
	free(mlp);
	return test_finish("test_model_warmup");
}
