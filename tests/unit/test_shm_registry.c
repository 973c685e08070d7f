/* test_shm_registry.c: Triton-style shared-memory regions: register, bounds, owner and mode checks, reference counts, threads. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_registry.h"
#include "test_util.h"

#define OBJ_BYTES 16384
#define THREADS 4
#define ROUNDS 5000

static device_t *dev;
static char key[64];

/* A registry allowing users (NULL: the default, own user and root). */
static shm_registry_t *
make_registry(const char *users)
{
	struct shm_registry_config c = { dev, users ? users : "", "", 1024 * 1024 };
	shm_registry_t *r = NULL;
	char *cause = NULL;

	if (shm_registry_create(&c, &r, &cause) != 0) {
		fprintf(stderr, "shm_registry_create: %s\n", cause);
		exit(1);
	}
	return r;
}

/* Make the test's shm object with mode, filled with byte i = i % 251. */
static void
make_object(mode_t mode)
{
	unsigned char *p;
	int fd, i;

	shm_unlink(key);
	fd = shm_open(key, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, OBJ_BYTES) != 0 || fchmod(fd, mode) != 0) {
		perror("shm object");
		exit(1);
	}
	p = mmap(NULL, OBJ_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (i = 0; i < OBJ_BYTES; i++)
		p[i] = (unsigned char)(i % 251);
	munmap(p, OBJ_BYTES);
	close(fd);
}

/* How many of this process's mappings are of the test object. */
static int
count_mappings(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, key + 1) != NULL)
			n++;
	fclose(f);
	return n;
}

/* Register and expect status want; returns the cause (freed here), for a substring check. */
static int
try_add(shm_registry_t *r, const char *name, const char *k, size_t off, size_t size,
    enum shm_error want, const char *needle)
{
	char *cause = NULL;
	enum shm_error e = shm_registry_add_system(r, name, k, off, size, &cause);
	int ok = e == want && (needle == NULL || (cause != NULL && strstr(cause, needle) != NULL));

	CHECK(ok, "register %s key %s [%zu, +%zu): got %d (%s), want %d with '%s'", name, k, off,
	    size, e, cause ? cause : "-", want, needle ? needle : "");
	free(cause);
	return ok;
}

/* Bounds: an unaligned offset maps the right bytes; spans outside the region are refused. */
static void
test_bounds(void)
{
	shm_registry_t *r = make_registry(NULL);
	struct shm_region *reg = NULL;
	unsigned char *p = NULL;
	char *cause = NULL;
	size_t i;

	make_object(0600);
	try_add(r, "a", key, 4096 + 7, 1000, SHM_OK, NULL);
	CHECK(shm_registry_acquire(r, "a", &reg, NULL) == SHM_OK, "acquire a");
	CHECK(shm_region_span(reg, 0, 1000, (void **)&p, NULL) == SHM_OK, "whole span");
	for (i = 0; p != NULL && i < 1000; i++)
		if (p[i] != (4096 + 7 + i) % 251)
			break;
	CHECK(p != NULL && i == 1000, "region byte %zu differs from the object's", i);
	CHECK(shm_region_span(reg, 1, 1000, (void **)&p, &cause) == SHM_E_INVALID &&
	    strstr(cause, "outside") != NULL, "span past the end refused");
	free(cause);
	CHECK(shm_region_span(reg, SIZE_MAX, 2, (void **)&p, NULL) == SHM_E_INVALID, "offset overflow");
	CHECK(shm_region_span(reg, 10, SIZE_MAX - 5, (void **)&p, NULL) == SHM_E_INVALID,
	    "size overflow");
	CHECK(shm_region_span(reg, 1000, 0, (void **)&p, NULL) == SHM_OK, "empty span at the end");
	CHECK(shm_region_kind(reg) == SHM_KIND_SYSTEM, "kind");
	shm_registry_release(r, reg);
	try_add(r, "a", key, 0, 10, SHM_E_EXISTS, "already registered");
	try_add(r, "b", key, OBJ_BYTES - 10, 11, SHM_E_INVALID, "exceeds");
	try_add(r, "b", key, SIZE_MAX, 1, SHM_E_INVALID, "exceeds");
	try_add(r, "b", key, 0, 0, SHM_E_INVALID, "byte_size");
	try_add(r, "b", key, 0, 2 * 1024 * 1024, SHM_E_INVALID, "max_region_bytes");
	try_add(r, "", key, 0, 10, SHM_E_INVALID, "name");
	try_add(r, "b", "/inferd-test-no-such-object", 0, 10, SHM_E_NOT_FOUND, "No such file");
	try_add(r, "b", "no-slash", 0, 10, SHM_E_INVALID, "POSIX");
	try_add(r, "b", "/a/b", 0, 10, SHM_E_INVALID, "POSIX");
	CHECK(shm_registry_acquire(r, "b", &reg, NULL) == SHM_E_NOT_FOUND, "nothing named b");
	shm_registry_free(r);
	CHECK(count_mappings() == 0, "mappings left after free");
}

/* Owner and mode: writable by others, or an owner not allowed, is refused. */
static void
test_permissions(void)
{
	shm_registry_t *r = make_registry(NULL), *strict;
	char other[16];

	make_object(0602);
	try_add(r, "w", key, 0, 100, SHM_E_DENIED, "writable by others");
	make_object(0640);
	try_add(r, "g", key, 0, 100, SHM_OK, NULL);
	/*
	 * An owner outside allow_users is refused; root and the daemon's own
	 * user are always allowed (they can read its memory anyway), so the
	 * object is given a third owner, which needs root.
	 */
	snprintf(other, sizeof other, "%u", (unsigned)getuid() + 4242);
	strict = make_registry(other);
	try_add(strict, "self", key, 0, 100, SHM_OK, NULL);
	if (geteuid() == 0) {
		char path[64];

		snprintf(path, sizeof path, "/dev/shm%s", key);
		if (chown(path, getuid() + 4343, (gid_t)-1) != 0) {
			perror("chown");
			exit(1);
		}
		try_add(strict, "o", key, 0, 100, SHM_E_DENIED, "owned by uid");
	}
	shm_registry_free(strict);
	shm_registry_free(r);
}

/* A region in use survives unregistration until its last reference goes; the name is free at once. */
static void
test_refcounts(void)
{
	shm_registry_t *r = make_registry(NULL);
	struct shm_region *old = NULL, *again = NULL, *none = NULL;
	unsigned char *p = NULL;
	json_t *st = NULL;

	make_object(0600);
	try_add(r, "x", key, 0, 8192, SHM_OK, NULL);
	CHECK(count_mappings() == 1, "one mapping, not %d", count_mappings());
	CHECK(shm_registry_acquire(r, "x", &old, NULL) == SHM_OK, "acquire");
	CHECK(shm_registry_acquire(r, "x", &again, NULL) == SHM_OK, "acquire twice");
	CHECK(shm_registry_remove(r, SHM_KIND_SYSTEM, "x", NULL) == SHM_OK, "unregister");
	CHECK(shm_registry_acquire(r, "x", &none, NULL) == SHM_E_NOT_FOUND,
	    "an unregistered region is not found");
	CHECK(count_mappings() == 1, "mapping kept while in use");
	CHECK(shm_region_span(old, 8000, 100, (void **)&p, NULL) == SHM_OK && p[0] == 8000 % 251,
	    "an in-use region still reads");
	try_add(r, "x", key, 0, 100, SHM_OK, NULL);	/* the name is free again */
	CHECK(count_mappings() == 2, "old and new mapping");
	shm_registry_release(r, old);
	CHECK(count_mappings() == 2, "one reference still held");
	shm_registry_release(r, again);
	CHECK(count_mappings() == 1, "the last reference unmapped the old region");
	CHECK(shm_registry_status(r, SHM_KIND_SYSTEM, "x", &st, NULL) == SHM_OK &&
	    json_array_size(st) == 1 &&
	    json_integer_value(json_object_get(json_array_get(st, 0), "byte_size")) == 100 &&
	    strcmp(json_string_value(json_object_get(json_array_get(st, 0), "key")), key) == 0,
	    "status of the new x");
	json_decref(st);
	try_add(r, "y", key, 4096, 100, SHM_OK, NULL);
	CHECK(shm_registry_remove(r, SHM_KIND_CUDA, NULL, NULL) == SHM_OK, "remove all CUDA");
	CHECK(count_mappings() == 2, "removing CUDA regions left system ones");
	CHECK(shm_registry_remove(r, SHM_KIND_SYSTEM, "nope", NULL) == SHM_OK, "unknown name is fine");
	CHECK(shm_registry_remove(r, SHM_KIND_SYSTEM, NULL, NULL) == SHM_OK, "remove all");
	CHECK(count_mappings() == 0, "all unmapped");
	st = NULL;
	CHECK(shm_registry_status(r, SHM_KIND_SYSTEM, NULL, &st, NULL) == SHM_OK &&
	    json_array_size(st) == 0, "status empty");
	json_decref(st);
	CHECK(shm_registry_status(r, SHM_KIND_SYSTEM, "x", &st, NULL) == SHM_E_NOT_FOUND, "x gone");
	shm_registry_free(r);
}

/* CUDA regions: refused on the CPU backend with a clear message; a bad handle length refused everywhere. */
static void
test_cuda(void)
{
	shm_registry_t *r = make_registry(NULL);
	unsigned char handle[DEVICE_IPC_HANDLE_BYTES] = { 0 };
	char *cause = NULL;
	enum shm_error e;

	e = shm_registry_add_cuda(r, "c", handle, 10, 0, 100, &cause);
	CHECK(e == SHM_E_INVALID && strstr(cause, "64") != NULL, "short handle: %s", cause);
	free(cause);
	cause = NULL;
	e = shm_registry_add_cuda(r, "c", handle, sizeof handle, 0, 100, &cause);
	if (!device_is_gpu(dev))
		CHECK(e == SHM_E_INVALID && strstr(cause, "needs a GPU backend") != NULL,
		    "CPU backend: %s", cause);
	else
		CHECK(e != SHM_OK, "a zero handle opened");
	free(cause);
	shm_registry_free(r);
}

struct churn {
	shm_registry_t *r;
	int stop, reads;
};

/* Acquire, read, release the region "t" as fast as possible. */
static void *
churn_reader(void *arg)
{
	struct churn *c = arg;
	struct shm_region *reg;
	unsigned char *p;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		if (shm_registry_acquire(c->r, "t", &reg, NULL) != SHM_OK)
			continue;
		if (shm_region_span(reg, 4000, 1, (void **)&p, NULL) == SHM_OK && p[0] == 4000 % 251)
			__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
		shm_registry_release(c->r, reg);
	}
	return NULL;
}

/* Readers race register/unregister of the same name; nothing is read after unmapping (ASan would see it). */
static void
test_threads(void)
{
	struct churn c = { make_registry(NULL), 0, 0 };
	pthread_t t[THREADS];
	int i;

	make_object(0600);
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, churn_reader, &c);
	for (i = 0; i < ROUNDS; i++) {
		shm_registry_add_system(c.r, "t", key, 0, 8192, NULL);
		shm_registry_remove(c.r, SHM_KIND_SYSTEM, "t", NULL);
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(count_mappings() == 0, "mappings left after the race");
	shm_registry_free(c.r);
	fprintf(stderr, "threads: %d reads during %d register/unregister rounds\n", c.reads, ROUNDS);
}

int
main(void)
{
	snprintf(key, sizeof key, "/inferd-test-shm-%ld", (long)getpid());
	dev = test_open_device();
	test_bounds();
	test_permissions();
	test_refcounts();
	test_cuda();
	test_threads();
	shm_unlink(key);
	device_close(dev);
	return test_finish("test_shm_registry");
}
