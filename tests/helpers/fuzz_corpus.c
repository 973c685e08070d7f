/* fuzz_corpus.c: the seed-corpus driver the fuzz targets share in `make check` (see fuzz_corpus.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_corpus.h"

/* Read a whole file; NULL on error. */
static uint8_t *
fuzz_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Run one input on a copy of exactly its size. */
static void
fuzz_run_exact(const struct fuzz_corpus *fc, const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);

	if (copy == NULL)
		return;
	memcpy(copy, data, len);
	fc->one(copy, len);
	free(copy);
}

/* Run one input, every prefix of it, and its mutations; the number of runs. */
static size_t
fuzz_run_variants(const struct fuzz_corpus *fc, const uint8_t *data, size_t len, uint64_t *rng)
{
	uint8_t *copy = malloc(len + 1);
	size_t i, runs = 0, at;

	if (copy == NULL)
		return 0;
	for (i = 0; i <= len; i++, runs++)
		fuzz_run_exact(fc, data, i);
	for (i = 0; len > 0 && i < (size_t)fc->mutations; i++, runs++) {
		memcpy(copy, data, len);
		*rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
		at = (size_t)(*rng % len);
		copy[at] = fc->bytes[(*rng >> 32) % fc->nbytes];
		fuzz_run_exact(fc, copy, len);
	}
	free(copy);
	return runs;
}

/* Run every file of the corpus directory. */
int
fuzz_corpus_main(const struct fuzz_corpus *fc, int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char dir[4096], path[8192];
	struct dirent *e;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	size_t files = 0, runs = 0, len;
	uint8_t *data;
	DIR *d;

	if (argc > 1)
		snprintf(dir, sizeof dir, "%s", argv[1]);
	else
		snprintf(dir, sizeof dir, "%s/tests/data/%s", top ? top : ".", fc->corpus);
	if ((d = opendir(dir)) == NULL) {
		perror(dir);
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((data = fuzz_read_file(path, &len)) == NULL) {
			perror(path);
			closedir(d);
			return 1;
		}
		runs += fuzz_run_variants(fc, data, len, &rng);
		files++;
		free(data);
	}
	closedir(d);
	printf("%s: %zu inputs from %zu corpus files\n", fc->name, runs, files);
	return files > 0 ? 0 : 1;
}
