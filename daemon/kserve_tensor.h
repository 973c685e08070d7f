/*
 * kserve_tensor.h: one tensor element between JSON and its bytes, for every
 * KServe datatype the models take (FP32, FP16, INT64, INT32, INT8, UINT8,
 * BOOL, and BYTES as a JSON string into a STRING slot), and little-endian
 * byte order for the binary extension.
 *
 * Contract: kserve_tensor_put never writes outside the element's
 * graph_dtype_size bytes; it refuses what the datatype cannot hold exactly
 * (a real for an integer type, an integer out of range, a non-boolean for
 * BOOL, a float beyond the type's finite range) instead of rounding it in.
 */
#ifndef INFERD_KSERVE_TENSOR_H
#define INFERD_KSERVE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "graph.h"

/* Why an element was refused. */
enum kserve_put_status {
	KSERVE_PUT_OK = 0,
	KSERVE_PUT_KIND = -1,		/* not a number / integer / boolean as dt needs */
	KSERVE_PUT_RANGE = -2,		/* outside dt's range (BYTES: longer than GRAPH_STRING_MAX) */
};

/* Store JSON scalar v as one element of dt at dst. */
enum kserve_put_status kserve_tensor_put(enum graph_dtype dt, const json_t *v, void *dst);
/* What dt's elements must be, for messages: "a number", "an integer", "true or false". */
const char *kserve_tensor_kind(enum graph_dtype dt);
/*
 * The element of dt at src as a new JSON value; NULL when it is a NaN or
 * an infinity (*nonfinite set to 1 or 2) or memory ran out (*nonfinite 0).
 */
json_t *kserve_tensor_get(enum graph_dtype dt, const void *src, int *nonfinite);
/* Copy n elements of esize bytes between little-endian and host order (its own inverse). */
void kserve_tensor_copy_le(void *dst, const void *src, size_t n, size_t esize);
/* IEEE half <-> float, round to nearest even. */
uint16_t kserve_half_from_float(float f);
float kserve_half_to_float(uint16_t h);

#endif
