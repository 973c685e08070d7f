/* file_copy.c: a model file's bytes copied whole into private memory, checked against changes while read. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "alloc.h"
#include "error.h"
#include "file_copy.h"

/* Largest single pread: Linux moves at most 0x7ffff000 bytes a call anyway. */
#define FILE_COPY_CHUNK ((size_t)1 << 30)

/* The calling thread's digest (file_copy.h); on between begin and end. */
static __thread struct {
	XXH3_state_t *state;		/* NULL: off */
	struct file_copy_digest d;
} file_copy_dg;

/* Start the calling thread's digest afresh (off when its state cannot be allocated: nothing is keyed by it then). */
void
file_copy_digest_begin(void)
{
	XXH3_freeState(file_copy_dg.state);
	memset(&file_copy_dg, 0, sizeof file_copy_dg);
	file_copy_dg.state = XXH3_createState();
	if (file_copy_dg.state != NULL && XXH3_128bits_reset(file_copy_dg.state) != XXH_OK) {
		XXH3_freeState(file_copy_dg.state);
		file_copy_dg.state = NULL;
	}
}

/*
 * The digest since file_copy_digest_begin; the thread's digest is off again.
 * A digest that could not be kept reports no bytes, which keys nothing.
 */
void
file_copy_digest_end(struct file_copy_digest *d)
{
	XXH128_hash_t h;

	if (file_copy_dg.state != NULL) {
		h = XXH3_128bits_digest(file_copy_dg.state);
		file_copy_dg.d.hash[0] = h.low64;
		file_copy_dg.d.hash[1] = h.high64;
	} else
		memset(&file_copy_dg.d, 0, sizeof file_copy_dg.d);
	*d = file_copy_dg.d;
	XXH3_freeState(file_copy_dg.state);
	file_copy_dg.state = NULL;
}

/* Fold a copied file's n bytes into the thread's digest when it is on. */
static void
file_copy_digest_add(const uint8_t *p, size_t n)
{
	if (file_copy_dg.state == NULL)
		return;
	if (n > 0)
		(void)XXH3_128bits_update(file_copy_dg.state, p, n);
	file_copy_dg.d.bytes += n;
	file_copy_dg.d.files++;
}

/* Read size bytes of fd from offset 0 into buf: a file that ends early or a failed read is an error. */
int
file_copy_range(int fd, uint8_t *buf, size_t size, char **cause)
{
	size_t done = 0, want;
	ssize_t n;

	while (done < size) {
		want = size - done < FILE_COPY_CHUNK ? size - done : FILE_COPY_CHUNK;
		n = pread(fd, buf + done, want, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return error_set(cause, "reading byte %zu of %zu: %s", done, size, strerror(errno));
		if (n == 0)
			return error_set(cause, "the file ended at byte %zu of the %zu it had when opened (truncated "
			    "or rewritten while it was read)", done, size);
		done += (size_t)n;
	}
	return 0;
}

/* New private anonymous memory of size bytes (> 0), or NULL; the fault-injection site malloc counts it. */
static uint8_t *
file_copy_alloc(size_t size)
{
	void *p;

	if (alloc_fault())
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Release a copy. */
void
file_copy_free(uint8_t *data, size_t size)
{
	if (data != NULL && size > 0)
		(void)munmap(data, size);	/* cannot fail for a mapping of ours */
}

/* Give back the whole pages of [lo, hi) to the system; returns the bytes given back. */
static size_t
file_copy_drop(uintptr_t lo, uintptr_t hi, uintptr_t page)
{
	lo = (lo + page - 1) / page * page;
	hi = hi / page * page;
	if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
		return 0;	/* a failure only keeps the memory */
	return hi - lo;
}

/* Give back the whole pages of the copy that no range of keep touches. */
size_t
file_copy_release(uint8_t *data, size_t size, const struct file_range *keep, size_t n)
{
	uintptr_t at = (uintptr_t)data, end = at + size, page, p, q;
	long ps = sysconf(_SC_PAGESIZE);
	size_t i, given = 0;

	if (data == NULL || ps <= 0)
		return 0;
	page = (uintptr_t)ps;
	for (i = 0; i < n; i++) {
		p = (uintptr_t)keep[i].p;
		q = p + keep[i].n;
		if (keep[i].n == 0 || q <= at || p >= end)
			continue;
		if (p > at)
			given += file_copy_drop(at, p, page);
		if (q > at)
			at = q;
	}
	if (at < end)
		given += file_copy_drop(at, end, page);
	return given;
}

/* Whether two stats of one file describe the same contents (size and modification time). */
static int
file_copy_same(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Read the whole of the open regular file fd (st: its stat at open) into new memory. */
static int
file_copy_fd(int fd, const struct stat *st, uint8_t **data, size_t *size, char **cause)
{
	struct stat after;
	uint8_t *buf = NULL;
	size_t n;

	if ((uint64_t)st->st_size > SIZE_MAX)
		return error_set(cause, "%lld bytes do not fit in memory", (long long)st->st_size);
	n = (size_t)st->st_size;
	if (n > 0 && (buf = file_copy_alloc(n)) == NULL)
		return error_set(cause, "out of memory copying its %zu bytes", n);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);	/* a hint: its failure changes nothing */
	if (file_copy_range(fd, buf, n, cause) != 0) {
		file_copy_free(buf, n);
		return -1;
	}
	if (fstat(fd, &after) != 0) {
		file_copy_free(buf, n);
		return error_set(cause, "fstat: %s", strerror(errno));
	}
	if (!file_copy_same(st, &after)) {
		file_copy_free(buf, n);
		return error_set(cause, "the file changed while it was read (%lld bytes when opened, %lld after): "
		    "load it again once it is complete", (long long)st->st_size, (long long)after.st_size);
	}
	file_copy_digest_add(buf, n);
	*data = buf;
	*size = n;
	return 0;
}

/* Read the regular file path (relative to dirfd) whole into new memory. */
int
file_copy_read(int dirfd, const char *path, uint8_t **data, size_t *size, char **cause)
{
	struct stat st;
	int fd, rc;

	*data = NULL;
	*size = 0;
	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set(cause, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) != 0)
		rc = error_set(cause, "fstat: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = error_set(cause, "not a regular file");
	else
		rc = file_copy_fd(fd, &st, data, size, cause);
	close(fd);
	return rc;
}
