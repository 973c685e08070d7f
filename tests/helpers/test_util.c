/* test_util.c: shared helpers for the C tests. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

int test_failures;

/* The device spec under test. */
const char *
test_device_spec(void)
{
#ifdef TEST_DEVICE
	return TEST_DEVICE;
#else
	const char *env = getenv("INFERD_TEST_DEVICE");
	return env != NULL ? env : "cpu";
#endif
}

/* Open the device under test, skipping when a GPU is wanted and absent. */
device_t *
test_open_device(void)
{
	const char *spec = test_device_spec();
	device_t *dev;
	char *cause = NULL;

	if (strncmp(spec, "cuda", 4) == 0 && device_cuda_count() == 0) {
		printf("SKIP: %s: no CUDA device present\n", spec);
		exit(TEST_SKIP);
	}
	if (device_open(spec, &dev, &cause) != 0) {
		fprintf(stderr, "FAIL: device_open(%s): %s\n", spec, cause);
		free(cause);
		exit(1);
	}
	printf("device: %s\n", device_name(dev));
	return dev;
}

/* Uniform random floats from xorshift64*. */
void
test_fill_random(float *x, size_t n, uint64_t *state, float lo, float hi)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*state ^= *state >> 12;
		*state ^= *state << 25;
		*state ^= *state >> 27;
		uint64_t r = *state * 2685821657736338717ULL;
		x[i] = lo + (hi - lo) * (float)((r >> 40) / (double)(1ULL << 24));
	}
}

/* Normwise relative error. */
double
test_rel_error(const float *y, const double *ref, size_t n)
{
	double maxdiff = 0.0, maxref = 0.0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d = fabs((double)y[i] - ref[i]);
		if (isnan(y[i]))
			return INFINITY;
		maxdiff = d > maxdiff ? d : maxdiff;
		maxref = fabs(ref[i]) > maxref ? fabs(ref[i]) : maxref;
	}
	return maxref > 0.0 ? maxdiff / maxref : maxdiff;
}

/* Make a temporary directory. */
char *
test_mkdtemp(void)
{
	const char *base = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/inferd-test-XXXXXX", base ? base : "/tmp") == -1 || mkdtemp(path) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	return path;
}

/* Remove a directory tree. */
void
test_rmtree(const char *path)
{
	char *cmd;

	if (asprintf(&cmd, "rm -rf '%s'", path) == -1)
		return;
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", path);
	free(cmd);
}

/* Write bytes to dir/name. */
void
test_write_file(const char *dir, const char *name, const char *text, size_t len)
{
	char *path;
	FILE *f;

	if (asprintf(&path, "%s/%s", dir, name) == -1 || (f = fopen(path, "wb")) == NULL) {
		perror("test_write_file");
		exit(1);
	}
	if (fwrite(text, 1, len, f) != len || fclose(f) != 0) {
		perror("test_write_file");
		exit(1);
	}
	free(path);
}

/* Write a safetensors file. */
void
test_write_safetensors(const char *dir, const char *name,
    const struct test_tensor *t, size_t n)
{
	char header[8192];
	size_t hlen = 0, off = 0, i, total;
	unsigned char *buf;
	int k;

	hlen += (size_t)snprintf(header + hlen, sizeof header - hlen, "{");
	for (i = 0; i < n; i++) {
		hlen += (size_t)snprintf(header + hlen, sizeof header - hlen, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
		    i ? "," : "", t[i].name, t[i].dtype ? t[i].dtype : "F32");
		for (k = 0; k < t[i].ndim; k++)
			hlen += (size_t)snprintf(header + hlen, sizeof header - hlen, "%s%lld", k ? "," : "", (long long)t[i].shape[k]);
		hlen += (size_t)snprintf(header + hlen, sizeof header - hlen, "],\"data_offsets\":[%zu,%zu]}", off, off + t[i].bytes);
		off += t[i].bytes;
	}
	hlen += (size_t)snprintf(header + hlen, sizeof header - hlen, "}");
	while (hlen % 8 != 0)
		header[hlen++] = ' ';
	total = 8 + hlen + off;
	buf = malloc(total);
	for (k = 0; k < 8; k++)
		buf[k] = (unsigned char)((uint64_t)hlen >> (8 * k));
	memcpy(buf + 8, header, hlen);
	for (i = 0, off = 8 + hlen; i < n; i++) {
		memcpy(buf + off, t[i].data, t[i].bytes);
		off += t[i].bytes;
	}
	test_write_file(dir, name, (const char *)buf, total);
	free(buf);
}

/* Print the summary and return the exit status. */
int
test_finish(const char *name)
{
	if (test_failures == 0) {
		printf("PASS: %s\n", name);
		return 0;
	}
	printf("FAIL: %s: %d check(s) failed\n", name, test_failures);
	return 1;
}
