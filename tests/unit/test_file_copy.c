/* test_file_copy.c: model files read into private memory: exact bytes, untouched by later changes, clear errors. */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "file_copy.h"
#include "safetensors.h"
#include "test_util.h"

/* A copy holds the file's bytes and keeps them when the file is truncated, overwritten and deleted. */
static void
check_copy_survives(const char *dir)
{
	static const char text[] = "weights: 0123456789abcdef";
	uint8_t *data = NULL;
	size_t size = 0;
	char *path, *cause = NULL;

	test_write_file(dir, "w.bin", text, sizeof text);
	if (asprintf(&path, "%s/w.bin", dir) == -1)
		exit(1);
	CHECK(file_copy_read(AT_FDCWD, path, &data, &size, &cause) == 0, "%s", cause);
	CHECK(size == sizeof text && data != NULL && memcmp(data, text, sizeof text) == 0, "bytes differ");
	CHECK(truncate(path, 3) == 0, "truncate");
	test_write_file(dir, "w.bin", "XXXXXXXXXX", 10);
	CHECK(unlink(path) == 0, "unlink");
	CHECK(data != NULL && memcmp(data, text, sizeof text) == 0, "the copy changed with the file");
	file_copy_free(data, size);
	free(path);
	free(cause);
}

/* Empty files, directories, missing files; relative to a directory descriptor. */
static void
check_open_errors(const char *dir)
{
	uint8_t *data = (uint8_t *)"x";
	size_t size = 1;
	char *cause = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	CHECK(dfd >= 0, "open %s", dir);
	test_write_file(dir, "empty", "", 0);
	CHECK(file_copy_read(dfd, "empty", &data, &size, &cause) == 0 && data == NULL && size == 0, "empty file");
	CHECK(file_copy_read(dfd, ".", &data, &size, &cause) != 0 && strstr(cause, "not a regular file") != NULL,
	    "a directory: %s", cause);
	CHECK(file_copy_read(dfd, "absent", &data, &size, &cause) != 0 &&
	    strstr(cause, "cannot open: No such file") != NULL, "missing file: %s", cause);
	close(dfd);
	free(cause);
}

/* A file shorter than it was at open (truncated while read) and a failing read are errors saying so. */
static void
check_short_and_failed_reads(const char *dir)
{
	uint8_t buf[32];
	char *path, *cause = NULL;
	int fd;

	test_write_file(dir, "short.bin", "0123456789", 10);
	if (asprintf(&path, "%s/short.bin", dir) == -1)
		exit(1);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && file_copy_range(fd, buf, 10, &cause) == 0 && memcmp(buf, "0123456789", 10) == 0,
	    "whole file: %s", cause);
	CHECK(fd >= 0 && file_copy_range(fd, buf, 20, &cause) != 0 &&
	    strstr(cause, "ended at byte 10 of the 20") != NULL && strstr(cause, "truncated") != NULL,
	    "short file: %s", cause);
	if (fd >= 0)
		close(fd);
	fd = open(dir, O_RDONLY | O_DIRECTORY);	/* pread fails (EISDIR) as a disk's EIO would */
	CHECK(fd >= 0 && file_copy_range(fd, buf, 4, &cause) != 0 && strstr(cause, "reading byte 0 of 4: ") != NULL,
	    "failed read: %s", cause);
	if (fd >= 0)
		close(fd);
	free(path);
	free(cause);
}

/* A safetensors file truncated after it was opened serves on from the copy; a truncated one refuses to open. */
static void
check_safetensors(const char *dir)
{
	static const float w[4] = { 1.5f, -2.0f, 3.25f, 0.0f };
	const struct test_tensor t = { "w", "F32", 1, { 4 }, w, sizeof w };
	const struct st_tensor *x;
	st_file_t *f = NULL, *g = NULL;
	char *path, *cause = NULL;

	test_write_safetensors(dir, "m.safetensors", &t, 1);
	if (asprintf(&path, "%s/m.safetensors", dir) == -1)
		exit(1);
	CHECK(st_open(path, &f, &cause) == 0, "%s", cause);
	CHECK(truncate(path, 20) == 0, "truncate");
	x = f != NULL ? st_find(f, "w") : NULL;
	CHECK(x != NULL && memcmp(st_data(f, x), w, sizeof w) == 0, "weights changed with the file");
	CHECK(st_open(path, &g, &cause) != 0 && strstr(cause, path) != NULL, "truncated file opened: %s", cause);
	st_close(f);
	st_close(g);
	free(path);
	free(cause);
}

/* Releasing a copy's unneeded pages: the kept ranges stay intact, whole pages outside them read zeros. */
static void
check_release(const char *dir)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 5 * page, i, given;
	uint8_t *text = malloc(size), *data = NULL;
	struct file_range keep[2];
	char *cause = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	if (text == NULL)
		exit(1);
	for (i = 0; i < size; i++)
		text[i] = (uint8_t)(i % 251 + 1);
	test_write_file(dir, "pages.bin", (const char *)text, size);
	CHECK(dfd >= 0 && file_copy_read(dfd, "pages.bin", &data, &size, &cause) == 0, "%s", cause);
	if (data == NULL)
		exit(1);
	/* Keep a range inside page 2 and one straddling pages 3 and 4: pages 0 and 1 go back. */
	keep[0] = (struct file_range){ data + 2 * page + 100, 200 };
	keep[1] = (struct file_range){ data + 4 * page - 10, 20 };
	given = file_copy_release(data, size, keep, 2);
	CHECK(given == 2 * page, "gave back %zu bytes, want %zu", given, 2 * page);
	CHECK(memcmp(data + 2 * page + 100, text + 2 * page + 100, 200) == 0, "a kept range changed");
	CHECK(memcmp(data + 4 * page - 10, text + 4 * page - 10, 20) == 0, "a range across two pages changed");
	CHECK(data[0] == 0 && data[2 * page - 1] == 0, "a page given back still holds the file's bytes");
	CHECK(memcmp(data + 4 * page + 10, text + 4 * page + 10, page - 10) == 0, "the page after a kept range went");
	CHECK(file_copy_release(data, size, NULL, 0) == 5 * page, "keeping nothing did not give back every page");
	file_copy_free(data, size);
	close(dfd);
	free(text);
	free(cause);
}

/* Read a.bin then b.bin with the digest on; *d gets it. */
static void
digest_two(const char *dir, struct file_copy_digest *d)
{
	uint8_t *data = NULL;
	size_t size = 0;
	char *cause = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	CHECK(dfd >= 0, "open %s", dir);
	file_copy_digest_begin();
	CHECK(file_copy_read(dfd, "a.bin", &data, &size, &cause) == 0, "%s", cause);
	file_copy_free(data, size);
	CHECK(file_copy_read(dfd, "b.bin", &data, &size, &cause) == 0, "%s", cause);
	file_copy_free(data, size);
	file_copy_digest_end(d);
	close(dfd);
	free(cause);
}

/*
 * The load digest: XXH3-128 of the files' bytes in the order read (the
 * library's one-shot hash of the concatenation as the reference), the file
 * and byte counts; one changed byte changes it; reads outside begin/end are
 * not counted.
 */
static void
check_digest(const char *dir)
{
	enum { NA = 100003, NB = 777 };		/* odd sizes: no block boundary */
	uint8_t *all = malloc(NA + NB), *data = NULL;
	struct file_copy_digest d1, d2, d3;
	XXH128_hash_t want;
	size_t size = 0;
	char *cause = NULL;
	int i;

	CHECK(all != NULL, "malloc");
	if (all == NULL)
		return;
	for (i = 0; i < NA + NB; i++)
		all[i] = (uint8_t)(i * 2654435761u >> 13);
	test_write_file(dir, "a.bin", (const char *)all, NA);
	test_write_file(dir, "b.bin", (const char *)all + NA, NB);
	want = XXH3_128bits(all, NA + NB);
	digest_two(dir, &d1);
	CHECK(d1.hash[0] == want.low64 && d1.hash[1] == want.high64, "the digest is not XXH3-128 of the bytes read");
	CHECK(d1.files == 2 && d1.bytes == NA + NB && d1.unused == 0, "counts: %u files, %llu bytes", d1.files,
	    (unsigned long long)d1.bytes);
	/* Outside begin/end nothing is folded in. */
	CHECK(file_copy_read(AT_FDCWD, "/proc/self/exe", &data, &size, &cause) == 0, "%s", cause);
	file_copy_free(data, size);
	digest_two(dir, &d2);
	CHECK(memcmp(&d1, &d2, sizeof d1) == 0, "the same files gave another digest");
	all[NA + NB / 2] ^= 1;
	test_write_file(dir, "b.bin", (const char *)all + NA, NB);
	digest_two(dir, &d3);
	CHECK(d3.bytes == d1.bytes && (d3.hash[0] != d1.hash[0] || d3.hash[1] != d1.hash[1]),
	    "one changed byte left the digest as it was");
	free(all);
	free(cause);
}

int
main(void)
{
	char *dir = test_mkdtemp();

	check_copy_survives(dir);
	check_open_errors(dir);
	check_short_and_failed_reads(dir);
	check_safetensors(dir);
	check_release(dir);
	check_digest(dir);
	test_rmtree(dir);
	free(dir);
	return test_finish("test_file_copy");
}
