/*
 * fuzz_model_json.c: libFuzzer target for model.json.  Each input is
 * written as the model.json of a private model directory whose weights are
 * the shipped fashion-mlp's, and loaded on the CPU device: model_load
 * either refuses it with a message or returns a model whose sizes agree.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "model.h"

#ifndef FUZZ_SRCDIR
#error "FUZZ_SRCDIR: the source tree, for the fashion-mlp weights"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static device_t *dev;
static char dir[PATH_MAX], json[PATH_MAX + 16];

/* Once: the CPU device and a directory with the weights linked in. */
static void
fuzz_init(void)
{
	char weights[PATH_MAX + 32], *cause = NULL;

	snprintf(dir, sizeof dir, "%s/inferd-fuzz-model.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL || device_open("cpu", &dev, &cause) != 0) {
		fprintf(stderr, "fuzz_model_json: set-up: %s\n", cause ? cause : "mkdtemp failed");
		exit(2);
	}
	snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
	if (symlink(FUZZ_SRCDIR "/conf/models/fashion-mlp/model.safetensors", weights) != 0) {
		perror("fuzz_model_json: symlink");
		exit(2);
	}
	snprintf(json, sizeof json, "%s/model.json", dir);
}

/* Load one model.json: refused with a message, or accepted and consistent. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_shape shape;
	struct model_layout layout;
	model_t *m = NULL;
	char *cause = NULL;
	FILE *f;

	if (dev == NULL)
		fuzz_init();
	if ((f = fopen(json, "wb")) == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	if (model_load(dev, dir, &m, &cause) == 0) {
		if (m == NULL || m->max_batch_size < 1 || m->ninputs < 1 || m->noutputs < 1)
			abort();
		model_shape_max(m, 1, &shape);
		/* A loaded model's largest request has a layout, and it is not empty. */
		if (model_input_row_bytes(m, 0, &shape) == 0 || model_output_layout(m, &shape, &layout, NULL) != 0 ||
		    layout.row_bytes[0] == 0)
			abort();
		model_free(m);
	} else if (m != NULL || cause == NULL || cause[0] == '\0')
		abort();
	free(cause);
	return 0;
}
