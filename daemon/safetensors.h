/* safetensors.h: reading and validating a .safetensors weight file. */
#ifndef INFERD_SAFETENSORS_H
#define INFERD_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

/* One tensor of the file: its data lies at data + begin .. data + end. */
struct st_tensor {
	char *name;
	char dtype[8];		/* "F32", "F16", "BF16", ... as the file says */
	size_t elem_size;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	uint64_t begin, end;	/* offsets into the data section */
};

typedef struct st_file st_file_t;

/*
 * Read path into private memory (file_copy.h: nothing done to the file later
 * changes what was read) and validate it: the header length fits the file,
 * the header is a JSON object, every tensor has a known dtype, a shape whose
 * element count matches its byte range, and a byte range inside the data
 * section that overlaps no other tensor.  On error returns -1 with *cause naming the file
 * and the problem.
 */
int st_open(const char *path, st_file_t **out, char **cause);
/* Free the copy and the table (NULL is ignored). */
void st_close(st_file_t *f);
/* The tensor called name, or NULL. */
const struct st_tensor *st_find(const st_file_t *f, const char *name);
/* Pointer to the tensor's bytes inside the private copy (valid until st_close). */
const void *st_data(const st_file_t *f, const struct st_tensor *t);
/* Number of tensors and the i-th one, in file order. */
size_t st_count(const st_file_t *f);
const struct st_tensor *st_at(const st_file_t *f, size_t i);

#endif
