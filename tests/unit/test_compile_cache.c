/*
 * test_compile_cache.c: the compile cache's file (compile_cache.c).  What is
 * stored is read back by a fresh cache from the file; a file with any byte
 * flipped, or cut anywhere, is refused whole (no record of it is served);
 * a file of another identity (device or library versions) is a miss; the
 * size bound evicts the least recently used records first; a rejected
 * record is gone and its lookup counts as a miss; the registry gives one
 * cache per identity and writes it back on flush.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compile_cache.h"
#include "test_util.h"

#define IDENTITY "NVIDIA H200 sm_90 driver 13000 cudnn 91900 cublasLt 130100"

/* Read a whole file. */
static unsigned char *
read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		if (f != NULL)
			fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* 1 when c maps key to exactly want. */
static int
maps_to(compile_cache_t *c, const char *key, const char *want)
{
	void *val = NULL;
	size_t len = 0;
	int ok;

	if (!compile_cache_lookup(c, key, strlen(key), &val, &len))
		return 0;
	ok = len == strlen(want) && memcmp(val, want, len) == 0;
	free(val);
	return ok;
}

/* Fill a cache with n records "key-i" -> "value-i" and save it to path. */
static void
write_cache(const char *path, const char *identity, int n)
{
	compile_cache_t *c = compile_cache_new(path, identity, 1 << 20);
	char key[32], val[32], *cause = NULL;

	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		snprintf(val, sizeof val, "value-%d", i);
		compile_cache_store(c, key, strlen(key), val, strlen(val));
	}
	CHECK(compile_cache_save(c, &cause) == 0, "save: %s", cause ? cause : "?");
	free(cause);
	compile_cache_free(c);
}

/* What is saved reads back, every record; a missing file is an empty cache. */
static void
test_round_trip(const char *dir)
{
	char path[512], *cause = NULL;
	compile_cache_t *c;

	snprintf(path, sizeof path, "%s/none.cache", dir);
	c = compile_cache_new(path, IDENTITY, 1 << 20);
	CHECK(compile_cache_load(c, &cause) == 0 && compile_cache_count(c) == 0, "missing file: %s", cause ? cause : "");
	compile_cache_free(c);
	snprintf(path, sizeof path, "%s/a.cache", dir);
	write_cache(path, IDENTITY, 20);
	c = compile_cache_new(path, IDENTITY, 1 << 20);
	CHECK(compile_cache_load(c, &cause) == 0, "load: %s", cause ? cause : "?");
	CHECK(compile_cache_count(c) == 20, "%zu records read back", compile_cache_count(c));
	CHECK(maps_to(c, "key-0", "value-0") && maps_to(c, "key-19", "value-19"), "values differ");
	CHECK(!maps_to(c, "key-20", "value-20"), "a key never stored was found");
	compile_cache_free(c);
}

/* Every flipped byte and every truncation of a good file is refused whole. */
static void
test_damage(const char *dir)
{
	char path[512], *cause;
	unsigned char *good;
	size_t len = 0, refused = 0, tries = 0;
	compile_cache_t *c;

	snprintf(path, sizeof path, "%s/d.cache", dir);
	write_cache(path, IDENTITY, 3);
	good = read_all(path, &len);
	CHECK(good != NULL && len > 0, "no file");
	if (good == NULL)
		return;
	c = compile_cache_new(path, IDENTITY, 1 << 20);
	for (size_t i = 0; i < len; i++) {
		good[i] ^= 0x41;
		cause = NULL;
		tries++;
		if (compile_cache_parse(c, good, len, &cause) != 0 && compile_cache_count(c) == 0 && cause != NULL)
			refused++;
		free(cause);
		good[i] ^= 0x41;
	}
	CHECK(refused == tries, "%zu of %zu one-byte corruptions refused", refused, tries);
	refused = tries = 0;
	for (size_t cut = 0; cut < len; cut++) {
		cause = NULL;
		tries++;
		if (compile_cache_parse(c, good, cut, &cause) != 0 && compile_cache_count(c) == 0)
			refused++;
		free(cause);
	}
	CHECK(refused == tries, "%zu of %zu truncations refused", refused, tries);
	cause = NULL;
	CHECK(compile_cache_parse(c, good, len, &cause) == 0 && compile_cache_count(c) == 3, "the good file: %s",
	    cause ? cause : "?");
	free(cause);
	compile_cache_free(c);
	free(good);
}

/* A file written for other library versions is not used: every lookup misses. */
static void
test_identity(const char *dir)
{
	char path[512], *cause = NULL;
	compile_cache_t *c;
	unsigned long hits, misses;

	snprintf(path, sizeof path, "%s/v.cache", dir);
	write_cache(path, IDENTITY, 5);
	c = compile_cache_new(path, "NVIDIA H200 sm_90 driver 13000 cudnn 92000 cublasLt 130100", 1 << 20);
	CHECK(compile_cache_load(c, &cause) == -1 && cause != NULL && strstr(cause, "cudnn 91900") != NULL,
	    "another version's file: %s", cause ? cause : "(accepted)");
	free(cause);
	compile_cache_thread_counts(&hits, &misses);
	CHECK(compile_cache_count(c) == 0 && !maps_to(c, "key-1", "value-1"), "another version's record served");
	compile_cache_thread_counts(&hits, &misses);
	CHECK(hits == 0 && misses == 1, "%lu hits, %lu misses counted", hits, misses);
	compile_cache_free(c);
}

/* Past the bound the least recently used records go first; the file stays within it. */
static void
test_bound(const char *dir)
{
	char path[512], key[32], val[64], *cause = NULL;
	compile_cache_t *c;
	size_t len = 0;
	unsigned char *file;
	const size_t bound = 2000;

	snprintf(path, sizeof path, "%s/b.cache", dir);
	c = compile_cache_new(path, IDENTITY, bound);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		snprintf(val, sizeof val, "value-%d-xxxxxxxxxxxxxxxxxxxx", i);
		compile_cache_store(c, key, strlen(key), val, strlen(val));
		/* key-0 is used after every store: the most recently used, never evicted. */
		if (i > 0)
			CHECK(maps_to(c, "key-0", "value-0-xxxxxxxxxxxxxxxxxxxx"), "key-0 evicted at %d", i);
	}
	CHECK(compile_cache_bytes(c) <= bound && compile_cache_count(c) < 100, "%zu bytes, %zu records",
	    compile_cache_bytes(c), compile_cache_count(c));
	CHECK(maps_to(c, "key-99", "value-99-xxxxxxxxxxxxxxxxxxxx"), "the newest record was evicted");
	CHECK(!maps_to(c, "key-1", "value-1-xxxxxxxxxxxxxxxxxxxx"), "an old record outlived newer ones");
	CHECK(compile_cache_save(c, &cause) == 0, "save: %s", cause ? cause : "?");
	free(cause);
	file = read_all(path, &len);
	CHECK(file != NULL && len <= bound && len == compile_cache_bytes(c), "file of %zu bytes, bound %zu", len, bound);
	free(file);
	/* A refused record is dropped and its lookup turns into a miss. */
	{
		unsigned long hits, misses;

		compile_cache_thread_counts(&hits, &misses);
		CHECK(maps_to(c, "key-99", "value-99-xxxxxxxxxxxxxxxxxxxx"), "key-99 gone");
		compile_cache_reject(c, "key-99", 6, "test");
		compile_cache_thread_counts(&hits, &misses);
		CHECK(hits == 0 && misses == 1, "after a reject: %lu hits, %lu misses", hits, misses);
		CHECK(!maps_to(c, "key-99", "value-99-xxxxxxxxxxxxxxxxxxxx"), "a rejected record is still served");
	}
	compile_cache_free(c);
}

/* Entries of dir other than . and .. (-1 when it cannot be read). */
static int
count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* The registry: one cache per identity in the directory, saved by flush, read again after shutdown. */
static void
test_registry(const char *dir)
{
	char sub[512];
	compile_cache_t *a, *b;
	void *val = NULL;
	size_t len;

	snprintf(sub, sizeof sub, "%s/registry", dir);
	compile_cache_configure(sub, 1 << 20);
	CHECK(compile_cache_enabled(), "not enabled");
	a = compile_cache_get(IDENTITY);
	b = compile_cache_get(IDENTITY);
	CHECK(a != NULL && a == b, "two caches for one identity");
	if (a == NULL)
		return;
	compile_cache_store(a, "conv", 4, "engine 7", 8);
	compile_cache_flush_all();
	compile_cache_shutdown();
	CHECK(!compile_cache_enabled(), "enabled after shutdown");
	compile_cache_configure(sub, 1 << 20);
	a = compile_cache_get(IDENTITY);
	CHECK(a != NULL && compile_cache_lookup(a, "conv", 4, &val, &len) && len == 8 && memcmp(val, "engine 7", 8) == 0,
	    "the flushed record was not read back");
	free(val);
	compile_cache_shutdown();
	compile_cache_configure("", 1 << 20);
	/* Without a directory a cache still memoizes choices, in memory only: nothing is written. */
	a = compile_cache_get(IDENTITY);
	CHECK(!compile_cache_enabled() && a != NULL && a == compile_cache_get(IDENTITY), "no cache in memory");
	if (a != NULL) {
		compile_cache_store(a, "conv", 4, "engine 9", 8);
		CHECK(compile_cache_lookup(a, "conv", 4, &val, &len) && len == 8 && memcmp(val, "engine 9", 8) == 0,
		    "the in-memory cache lost its record");
		free(val);
		CHECK(compile_cache_save(a, NULL) == 0, "saving a cache in memory failed");
	}
	compile_cache_flush_all();
	compile_cache_shutdown();
	CHECK(count_files(sub) == 1, "a cache in memory wrote a file");
}

int
main(void)
{
	char *dir = test_mkdtemp();

	test_round_trip(dir);
	test_damage(dir);
	test_identity(dir);
	test_bound(dir);
	test_registry(dir);
	test_rmtree(dir);
	free(dir);
	return test_finish("test_compile_cache");
}
