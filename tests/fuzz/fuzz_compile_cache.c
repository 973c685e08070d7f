/*
 * fuzz_compile_cache.c: libFuzzer target for the compile cache's file
 * reader.  Each input is a whole file: compile_cache_parse either refuses
 * it with a message and holds no record (a damaged file is never used in
 * part), or accepts it, and then its records take no more room than the
 * file they came from.  The seeds are files of the format written for
 * FUZZ_IDENTITY (tests/data/compile-cache-corpus).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile_cache.h"
#ifndef FUZZ_LIBFUZZER
#include "fuzz_corpus.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The identity the corpus files were written for. */
#define FUZZ_IDENTITY "fuzz-device sm_90 driver 1 cudnn 1 cublasLt 1"

/* Parse one input: refused with a message and empty, or accepted. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	compile_cache_t *c = compile_cache_new("/nonexistent/fuzz.cache", FUZZ_IDENTITY, (size_t)1 << 20);
	char *cause = NULL;

	if (c == NULL)
		return 0;
	if (compile_cache_parse(c, data, size, &cause) != 0) {
		if (cause == NULL || cause[0] == '\0' || compile_cache_count(c) != 0)
			abort();
	} else if (compile_cache_bytes(c) > size) {
		abort();	/* the records held cannot take more room than the file they came from */
	}
	free(cause);
	compile_cache_free(c);
	return 0;
}

#ifndef FUZZ_LIBFUZZER
/* Bytes that matter to the format: lengths, the magic's letters, checksum-ish values. */
static const uint8_t fuzz_bytes[] = { 0, 1, 2, 4, 8, 16, 0x10, 0x7f, 0x80, 0xff, 'I', 'N', 'F', 'C', 'A', 'H' };

int
main(int argc, char **argv)
{
	const struct fuzz_corpus fc = {
		"fuzz_compile_cache", "compile-cache-corpus", fuzz_bytes, sizeof fuzz_bytes, 200,
		LLVMFuzzerTestOneInput,
	};

	return fuzz_corpus_main(&fc, argc, argv);
}
#endif
