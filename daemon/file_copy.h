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
 * memory from xmalloc, so a load holds one copy of the file's bytes (the page
 * cache's is the kernel's, not the daemon's).  A file that ends early while
 * it is read (truncated or replaced meanwhile), grows, or is modified during
 * the read, and a failed read (EIO), are errors saying so; the caller
 * prefixes the file's name.
 */

/*
 * Read the regular file path (relative to the directory dirfd, or AT_FDCWD)
 * whole into new memory: *data (released with free(); NULL for an empty
 * file) and *size.  -1 with *cause on failure.
 */
int file_copy_read(int dirfd, const char *path, uint8_t **data, size_t *size, char **cause);
/* Read size bytes of fd from offset 0 into buf; -1 when the file ends before them or a read fails. */
int file_copy_range(int fd, uint8_t *buf, size_t size, char **cause);

#endif
