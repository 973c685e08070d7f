/* test_util.h: shared helpers for the C tests (checks, random data, references, temp model dirs). */
#ifndef INFERD_TEST_UTIL_H
#define INFERD_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* automake's exit status for a skipped test. */
#define TEST_SKIP 77

extern int test_failures;

/* Count a failure and say where, without stopping the test. */
#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		test_failures++;					\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

/* The device spec under test: TEST_DEVICE when compiled in, else "cpu". */
const char *test_device_spec(void);
/* Open the device under test; exits 77 (skip) when it is CUDA and no GPU is present. */
device_t *test_open_device(void);
/* Uniform random floats in [lo, hi) from a xorshift state. */
void test_fill_random(float *x, size_t n, uint64_t *state, float lo, float hi);
/* Normwise relative error max|y - ref| / max|ref| (absolute when ref is all zero). */
double test_rel_error(const float *y, const double *ref, size_t n);
/* Make a fresh temporary directory; returns a malloc'ed path. */
char *test_mkdtemp(void);
/* Remove a directory tree made by the test. */
void test_rmtree(const char *path);
/* Write text to dir/name. */
void test_write_file(const char *dir, const char *name, const char *text, size_t len);

/* One tensor for test_write_safetensors. */
struct test_tensor {
	const char *name;
	const char *dtype;	/* "F32" unless a test wants another */
	int ndim;
	int64_t shape[4];
	const void *data;
	size_t bytes;
};
/* Write a well-formed safetensors file with the given tensors to dir/name. */
void test_write_safetensors(const char *dir, const char *name,
    const struct test_tensor *t, size_t n);
/* Finish: print a summary line and return the exit status. */
int test_finish(const char *name);

#endif
