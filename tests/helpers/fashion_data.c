/* Fashion-MNIST IDX loader for tests: decompresses with `gzip -dc` via popen
 * so the test suite needs no zlib. */
#include "fashion_data.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define FASHION_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define FASHION_MAX_ITEMS 1000000u
#define FASHION_MAX_DIM 4096u

/* Read exactly n bytes from f; returns 0 on success, -1 on short read. */
static int
read_exact(FILE *f, void *buf, size_t n)
{
	return fread(buf, 1, n, f) == n ? 0 : -1;
}

/* Decode a big-endian u32 from 4 bytes. */
static uint32_t
be32(const unsigned char *b)
{
	return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | (uint32_t)b[3];
}

/* Quote path for /bin/sh inside single quotes; returns 0 or -1 if too long. */
static int
shell_quote(const char *path, char *out, size_t outlen)
{
	size_t o = 0;
	if (outlen < 3)
		return -1;
	out[o++] = '\'';
	for (const char *p = path; *p; p++) {
		if (*p == '\'') {
			if (o + 4 >= outlen)
				return -1;
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else {
			if (o + 1 >= outlen)
				return -1;
			out[o++] = *p;
		}
	}
	if (o + 2 > outlen)
		return -1;
	out[o++] = '\'';
	out[o] = '\0';
	return 0;
}

/* Parse the IDX header and body from an open stream into malloc'ed storage. */
static int
parse_idx(FILE *f, const char *gz_path, unsigned char **data, size_t *count, size_t *item_size, char *err, size_t errlen)
{
	unsigned char hdr[16];
	if (read_exact(f, hdr, 8) != 0) {
		snprintf(err, errlen, "%s: truncated IDX header", gz_path);
		return -1;
	}
	uint32_t magic = be32(hdr);
	uint32_t n = be32(hdr + 4);
	size_t isz = 1;
	if (magic == FASHION_IDX_MAGIC_IMAGES) {
		if (read_exact(f, hdr + 8, 8) != 0) {
			snprintf(err, errlen, "%s: truncated IDX image header", gz_path);
			return -1;
		}
		uint32_t rows = be32(hdr + 8);
		uint32_t cols = be32(hdr + 12);
		if (rows == 0 || cols == 0 || rows > FASHION_MAX_DIM ||
			cols > FASHION_MAX_DIM) {
			snprintf(err, errlen, "%s: bad image dimensions %ux%u", gz_path, (unsigned)rows, (unsigned)cols);
			return -1;
		}
		isz = (size_t)rows * cols;
	} else if (magic != FASHION_IDX_MAGIC_LABELS) {
		snprintf(err, errlen, "%s: bad IDX magic 0x%08x", gz_path, (unsigned)magic);
		return -1;
	}
	if (n == 0 || n > FASHION_MAX_ITEMS) {
		snprintf(err, errlen, "%s: bad item count %u", gz_path, (unsigned)n);
		return -1;
	}
	size_t total = (size_t)n * isz;
	unsigned char *buf = malloc(total);
	if (buf == NULL) {
		snprintf(err, errlen, "%s: out of memory (%zu bytes)", gz_path, total);
		return -1;
	}
	if (read_exact(f, buf, total) != 0) {
		snprintf(err, errlen, "%s: truncated IDX body (want %zu bytes)", gz_path, total);
		free(buf);
		return -1;
	}
	if (fgetc(f) != EOF) {
		snprintf(err, errlen, "%s: trailing data after %zu bytes", gz_path, total);
		free(buf);
		return -1;
	}
	*data = buf;
	*count = n;
	*item_size = isz;
	return 0;
}

/* Load a gzipped IDX file (images or labels); *data is malloc'ed, caller frees. */
int
fashion_load_idx(const char *gz_path, unsigned char **data, size_t *count, size_t *item_size, char *err, size_t errlen)
{
	char quoted[4096];
	char cmd[4200];
	FILE *probe = fopen(gz_path, "rb");
	if (probe == NULL) {
		snprintf(err, errlen, "%s: %s", gz_path, strerror(errno));
		return -1;
	}
	if (fclose(probe) != 0) {
		snprintf(err, errlen, "%s: close: %s", gz_path, strerror(errno));
		return -1;
	}
	if (shell_quote(gz_path, quoted, sizeof quoted) != 0) {
		snprintf(err, errlen, "path too long: %s", gz_path);
		return -1;
	}
	int len = snprintf(cmd, sizeof cmd, "gzip -dc -- %s", quoted);
	if (len < 0 || (size_t)len >= sizeof cmd) {
		snprintf(err, errlen, "command too long for %s", gz_path);
		return -1;
	}
	FILE *f = popen(cmd, "r");
	if (f == NULL) {
		snprintf(err, errlen, "popen(gzip -dc %s): %s", gz_path, strerror(errno));
		return -1;
	}
	unsigned char *buf = NULL;
	size_t n = 0, isz = 0;
	int rc = parse_idx(f, gz_path, &buf, &n, &isz, err, errlen);
	int st = pclose(f);
	int gzip_ok = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (rc != 0) {
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0) {
			snprintf(err, errlen, "%s: gzip -dc exited with status %d", gz_path, WEXITSTATUS(st));
		}
		return -1;
	}
	if (!gzip_ok) {
		snprintf(err, errlen, "%s: gzip -dc failed (wait status %d)", gz_path, st);
		free(buf);
		return -1;
	}
	*data = buf;
	*count = n;
	*item_size = isz;
	return 0;
}

/* Directory holding the dataset: $INFERD_FASHION_DIR or the Debian default. */
const char *
fashion_data_dir(void)
{
	const char *d = getenv("INFERD_FASHION_DIR");
	return (d != NULL && d[0] != '\0') ? d : FASHION_DEFAULT_DIR;
}
