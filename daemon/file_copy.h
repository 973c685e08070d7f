/* file_copy.h: a model file's bytes copied whole into private memory, checked against changes while read. */
#ifndef INFERD_FILE_COPY_H
#define INFERD_FILE_COPY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Contract.  A served model computes from these copies, never from the file:
 * whatever is done to the file afterwards (overwritten in place, truncated,
 * deleted, renamed) changes nothing the daemon reads, and cannot fault it as
 * a truncated mapping would (SIGBUS).  The copy is read with pread into
 * anonymous pages of its own (so that parts of it can be given back), so a
 * load holds one copy of the file's bytes (the page cache's is the kernel's,
 * not the daemon's).  A file that ends early while it is read (truncated or
 * replaced meanwhile), grows, or is modified during the read, and a failed
 * read (EIO), are errors saying so; the caller prefixes the file's name.
 */

/* A byte range of a copy that must stay readable. */
struct file_range {
	const uint8_t *p;
	size_t n;
};

/*
 * Read the regular file path (relative to the directory dirfd, or AT_FDCWD)
 * whole into new memory: *data (released with file_copy_free; NULL for an
 * empty file) and *size.  -1 with *cause on failure.
 */
int file_copy_read(int dirfd, const char *path, uint8_t **data, size_t *size, char **cause);
/* Release a copy (data NULL is ignored). */
void file_copy_free(uint8_t *data, size_t size);
/*
 * Give back to the system every whole page of the copy (data, size) that no
 * range of keep (n of them, sorted by address; ranges elsewhere are ignored)
 * touches: what the loader no longer needs once the model is built.  Those
 * pages read as zeros afterwards.  Returns the bytes given back.
 */
size_t file_copy_release(uint8_t *data, size_t size, const struct file_range *keep, size_t n);
/*
 * The content digest of every file the calling thread copies between
 * file_copy_digest_begin and file_copy_digest_end: xxHash's XXH3 128-bit
 * hash over their bytes in the order read, and the byte and file counts.  A
 * load reads its model this way, so what is remembered of a load
 * (model_verdict.h) is keyed by the bytes, not by names or file times.
 * (XXH3 hashes at memory speed: zlib's CRC-32 and Adler-32, used before, took
 * a third of the time BERT-base's 440 MB took to load from the page cache.)
 */
struct file_copy_digest {
	uint64_t hash[2];		/* XXH3-128: low, high */
	uint32_t files, unused;		/* unused: zero, so the record has no padding */
	uint64_t bytes;
};
void file_copy_digest_begin(void);
void file_copy_digest_end(struct file_copy_digest *d);
/* Read size bytes of fd from offset 0 into buf; -1 when the file ends before them or a read fails. */
int file_copy_range(int fd, uint8_t *buf, size_t size, char **cause);

#endif
