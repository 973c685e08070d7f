/*
 * fuzz_model_pbtxt.c: libFuzzer target for config.pbtxt.  Each input is
 * parsed by the reader (libprotobuf's text format, then the mapping to
 * model.json's keys): it is refused with a message naming the file, or
 * gives an object whose platform is "onnx" and whose max_batch_size is an
 * integer, which merges into an empty model.json unchanged.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_corpus.h"
#include "model_impl.h"
#include "model_pbtxt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse one input: refused naming the file, or a model.json object that merges cleanly. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *out = NULL, *empty;
	char *cause = NULL;

	if (model_pbtxt_parse((const char *)data, size, "fuzz/config.pbtxt", &out, &cause) != 0) {
		if (cause == NULL || strncmp(cause, "fuzz/config.pbtxt", 17) != 0 || out != NULL) {
			fprintf(stderr, "fuzz_model_pbtxt: refused without naming the file: %s\n", cause ? cause : "(none)");
			abort();
		}
		free(cause);
		return 0;
	}
	if (!json_is_object(out) || !json_is_integer(json_object_get(out, "max_batch_size")) ||
	    strcmp(json_string_value(json_object_get(out, "platform")), "onnx") != 0)
		abort();
	if ((empty = json_object()) == NULL)
		abort();
	if (model_config_triton_merge(empty, out, "fuzz", &cause) != 0 || !json_equal(empty, out)) {
		fprintf(stderr, "fuzz_model_pbtxt: merge into an empty model.json: %s\n", cause ? cause : "changed it");
		abort();
	}
	json_decref(empty);
	json_decref(out);
	return 0;
}

#ifndef FUZZ_LIBFUZZER
/* Bytes that matter to the text format, for the plain driver's mutations. */
static const uint8_t fuzz_bytes[] = "[]{}<>\":,#-0179e_ \n\\'xTKF";

int
main(int argc, char **argv)
{
	static const struct fuzz_corpus fc = {
		.name = "fuzz_model_pbtxt", .corpus = "model_pbtxt-corpus", .bytes = fuzz_bytes,
		.nbytes = sizeof fuzz_bytes - 1, .mutations = 256, .one = LLVMFuzzerTestOneInput,
	};

	return fuzz_corpus_main(&fc, argc, argv);
}
#endif
