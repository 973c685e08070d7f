/*
 * fuzz_corpus.h: the plain driver every fuzz target runs in `make check` (without libFuzzer): each file of
 * its seed corpus, every prefix of it, and a fixed number of one-byte mutations drawn from bytes that
 * matter to the format, each on a copy of exactly its size so ASan sees any overread.
 */
#ifndef INFERD_FUZZ_CORPUS_H
#define INFERD_FUZZ_CORPUS_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_corpus {
	const char *name;		/* for the summary line, e.g. "fuzz_onnx" */
	const char *corpus;		/* directory under $top_srcdir/tests/data, e.g. "onnx-corpus" */
	const uint8_t *bytes;		/* mutation bytes */
	size_t nbytes;
	int mutations;			/* mutations per corpus file */
	int (*one)(const uint8_t *data, size_t size);	/* the target (LLVMFuzzerTestOneInput) */
};

/* Run the corpus in argv[1] (or the default directory); 0 when at least one file ran, else 1. */
int fuzz_corpus_main(const struct fuzz_corpus *fc, int argc, char **argv);

#endif
