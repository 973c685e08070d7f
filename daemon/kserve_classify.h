/*
 * kserve_classify.h: Triton's classification extension.  An output requested
 * with parameters {"classification": k} is answered, per batch row, with its
 * k largest values (all its non-batch elements as one class vector; k is
 * capped at their count), largest first, as BYTES strings "value:index", or
 * "value:index:label" where the model has class names for that output.
 */
#ifndef INFERD_KSERVE_CLASSIFY_H
#define INFERD_KSERVE_CLASSIFY_H

#include <stddef.h>

#include <jansson.h>

#include "model.h"

/* One classified output: rows * k strings, row-major. */
struct kserve_classes {
	int k;			/* per row */
	size_t n;		/* strings in s */
	char **s;
	size_t bytes;		/* the binary form's size: a 4-byte little-endian length before each string */
};

/*
 * Classify output o of m: rows rows of its values at data (len bytes, host
 * order) into out, each row's top want.  -1 with *cause (no memory).
 */
int kserve_classify(const model_t *m, int o, int want, int rows, const void *data, size_t len,
    struct kserve_classes *out, char **cause);
/* The strings as a JSON array (NULL: no memory). */
json_t *kserve_classes_json(const struct kserve_classes *c);
/* Write the binary form (c->bytes bytes) to dst. */
void kserve_classes_binary(const struct kserve_classes *c, unsigned char *dst);
struct kserve_infer;
/* Classify every output of ki that asked for it into cls[o] (zeroed by the caller); -1 with *cause. */
int kserve_classify_outputs(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf,
    struct kserve_classes *cls, char **cause);
/* A classified output's description: BYTES [rows, k], its strings as "data", or binary_data_size when binary. */
json_t *kserve_classified_tensor(const model_t *m, int o, const struct kserve_infer *ki,
    const struct kserve_classes *c);
/* Free what kserve_classify made (a zeroed c is fine). */
void kserve_classes_free(struct kserve_classes *c);

#endif
