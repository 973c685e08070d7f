/*
 * fuzz_safetensors.c: libFuzzer target for the .safetensors reader.  The
 * input is the whole file (through a memfd, since st_open maps a path):
 * st_open either refuses it with a message or accepts it, and then every
 * tensor it lists must lie inside the file with a consistent shape.
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Check one accepted tensor: its bytes are readable and match its shape. */
static void
fuzz_tensor(const st_file_t *f, const struct st_tensor *t)
{
	const volatile unsigned char *p = st_data(f, t);
	uint64_t elems = 1;
	int i;

	if (t->end < t->begin || t->ndim < 0 || t->ndim > ST_MAX_DIMS || t->name == NULL)
		abort();
	for (i = 0; i < t->ndim; i++)
		if (t->shape[i] < 0 || __builtin_mul_overflow(elems, (uint64_t)t->shape[i], &elems))
			abort();
	if (__builtin_mul_overflow(elems, (uint64_t)t->elem_size, &elems) || elems != t->end - t->begin)
		abort();
	if (t->end > t->begin)
		(void)(p[0] + p[t->end - t->begin - 1]);	/* ASan checks they are inside */
	if (st_find(f, t->name) == NULL)
		abort();
}

/* Open one input as a file: refused with a message, or accepted and consistent. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], *cause = NULL;
	st_file_t *f = NULL;
	size_t i;
	int fd;

	if ((fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC)) == -1)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (st_open(path, &f, &cause) == 0) {
		for (i = 0; i < st_count(f); i++)
			fuzz_tensor(f, st_at(f, i));
		st_close(f);
	} else if (cause == NULL || cause[0] == '\0')
		abort();
	free(cause);
	close(fd);
	return 0;
}
