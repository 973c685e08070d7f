/* test_model_version.c: model_load_version: versioned and flat layouts, config overrides, broken versions. */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "onnx_build.h"
#include "repository.h"
#include "test_util.h"

static device_t *dev;


/* Run a shell command built from fmt or fail the test run. */
static void __attribute__((format(printf, 1, 2)))
shell(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (n == -1 || system(cmd) != 0) {
		fprintf(stderr, "setup failed: %s\n", cmd);
		exit(1);
	}
	free(cmd);
}

/* Expect a refused load whose message has every one of want. */
static void
expect_refused(const char *what, const char *dir, int64_t version, const char *override, const char *const *want)
{
	char *cause = NULL;
	model_t *m = NULL;

	CHECK(repository_version_load(dev, dir, version, override, &m, &cause) != 0, "%s: accepted", what);
	if (cause != NULL)
		printf("refused as expected (%s): %s\n", what, cause);
	for (; cause != NULL && *want != NULL; want++)
		CHECK(strstr(cause, *want) != NULL, "%s: message lacks '%s': %s", what, *want, cause);
	CHECK(m == NULL, "%s: a model was returned", what);
	free(cause);
}

/* One row of ones through m: the logits, for comparing two loads of the same weights. */
static void
run_row(model_t *m, float *y)
{
	float x[784];
	device_stream_t *s = NULL;
	model_exec_t *ex = NULL;
	char *cause = NULL;
	size_t i;

	for (i = 0; i < 784; i++)
		x[i] = (float)(i % 7) / 7.0f;
	CHECK(model_exec_create(m, &ex, &cause) == 0 && device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, &cause) == 0 &&
	    device_copy_h2d(s, model_exec_input(ex, 0), x, sizeof x, &cause) == 0 &&
	    model_exec_run_rows(ex, 1, s, &cause) == 0 &&
	    device_copy_d2h(s, y, model_exec_output(ex, 0), 10 * sizeof *y, &cause) == 0 &&
	    device_stream_sync(s, &cause) == 0, "%s", cause);
	device_stream_destroy(s);
	model_exec_free(ex);
	free(cause);
}

/* The fashion-mlp as versions 2 (good) and 3 (truncated weights) beside the flat original. */
static void
test_mlp_versions(const char *root, const char *src)
{
	char *dir, *flat, *cause = NULL;
	model_t *m = NULL, *f = NULL;
	float y[10], yf[10];

	shell("mkdir -p '%s/fm/2' '%s/fm/3' && cp '%s/model.json' '%s/fm/' && cp '%s/model.safetensors' '%s/fm/2/'",
	    root, root, src, root, src, root);
	shell("head -c 500000 '%s/model.safetensors' > '%s/fm/3/model.safetensors' && cp -r '%s' '%s/flat'",
	    src, root, src, root);
	if (asprintf(&dir, "%s/fm", root) == -1 || asprintf(&flat, "%s/flat", root) == -1)
		exit(1);
	CHECK(repository_version_load(dev, dir, 2, NULL, &m, &cause) == 0, "%s", cause);
	CHECK(repository_version_load(dev, flat, 1, NULL, &f, &cause) == 0, "%s", cause);
	if (m != NULL && f != NULL) {
		CHECK(m->version == 2 && f->version == 1 && strcmp(m->name, "fashion-mlp") == 0 &&
		    m->max_batch_size == 256 && m->batching.max_queue_delay_us == 200 && m->nlabels == 10,
		    "version 2 description");
		CHECK(strstr(m->version_dir, "/fm/2") != NULL && strcmp(f->version_dir, f->dir) == 0, "version dirs");
		run_row(m, y);
		run_row(f, yf);
		CHECK(memcmp(y, yf, sizeof y) == 0, "version 2 and the flat copy of the same weights differ");
	}
	model_free(m);
	model_free(f);
	m = NULL;
	CHECK(repository_version_load(dev, dir, 2, "{\"max_batch_size\": 8, \"dynamic_batching\": {\"max_queue_delay_us\": 5}}",
	    &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(m->max_batch_size == 8 && m->batching.max_queue_delay_us == 5 && m->batching.npreferred == 0 &&
		    m->batching.max_queue_size == 1024 && m->nlabels == 10, "override: keys replaced at the top level");
	model_free(m);
	expect_refused("truncated weights", dir, 3, NULL, (const char *const[]){ "fm/3/model.safetensors", NULL });
	expect_refused("missing version", dir, 4, NULL, (const char *const[]){ "fm/4: no version directory", NULL });
	expect_refused("version 1 of a versioned model", dir, 1, NULL, (const char *const[]){ "fm/1", NULL });
	expect_refused("version 0", dir, 0, NULL, (const char *const[]){ "positive", NULL });
	expect_refused("version 2 of a flat model", flat, 2, NULL, (const char *const[]){ "version 1 only", NULL });
	expect_refused("bad override", dir, 2, "{\"max_batch_size\": ", (const char *const[]){ "config override: line 1", NULL });
	expect_refused("override not an object", dir, 2, "[1]", (const char *const[]){ "config override: not a JSON object", NULL });
	expect_refused("override out of range", dir, 2, "{\"max_batch_size\": 0}",
	    (const char *const[]){ "fm/model.json with the config override", "max_batch_size", NULL });
	free(cause);
	free(dir);
	free(flat);
}

/* An ONNX model as version 7: the name from the model directory, model.json from there, overridden. */
static void
test_onnx_version(const char *root)
{
	static const int64_t dims[] = { -1, 4 };
	char *dir, *vdir, *cause = NULL;
	size_t len;
	uint8_t *buf = onnx_build_unary("Relu", "act", 1, 2, dims, &len);
	model_t *m = NULL;

	if (asprintf(&dir, "%s/relu", root) == -1 || asprintf(&vdir, "%s/relu/7", root) == -1 ||
	    mkdir(dir, 0700) != 0 || mkdir(vdir, 0700) != 0)
		exit(1);
	test_write_file(vdir, "model.onnx", (const char *)buf, len);
	test_write_file(dir, "model.json", "{\"max_batch_size\": 4, \"version_policy\": {\"all\": {}}}", 52);
	CHECK(repository_version_load(dev, dir, 7, NULL, &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(strcmp(m->name, "relu") == 0 && m->version == 7 && m->max_batch_size == 4 &&
		    strcmp(m->platform, "onnx") == 0, "ONNX version 7 description");
	model_free(m);
	m = NULL;
	CHECK(repository_version_load(dev, dir, 7, "{\"max_batch_size\": 2}", &m, &cause) == 0, "%s", cause);
	if (m != NULL)
		CHECK(m->max_batch_size == 2, "ONNX override: max_batch_size %d", m->max_batch_size);
	model_free(m);
	expect_refused("ONNX unknown key in the override", dir, 7, "{\"max_batch\": 2}",
	    (const char *const[]){ "relu/model.json with the config override", "unknown key \"max_batch\"", NULL });
	test_write_file(vdir, "model.onnx", (const char *)buf, len / 2);
	expect_refused("ONNX truncated", dir, 7, NULL, (const char *const[]){ "relu/7/model.onnx", NULL });
	free(buf);
	free(cause);
	free(dir);
	free(vdir);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char *src, *root = test_mkdtemp();

	dev = test_open_device();
	if (asprintf(&src, "%s/conf/models/fashion-mlp", top ? top : ".") == -1)
		return 1;
	test_mlp_versions(root, src);
	test_onnx_version(root);
	test_rmtree(root);
	free(root);
	free(src);
	return test_finish("test_model_version");
}
