/* kserve.h: KServe v2 JSON bodies (Triton's dialect), decoded and encoded apart from any transport. */
#ifndef INFERD_KSERVE_H
#define INFERD_KSERVE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model.h"
#include "repository.h"

/* The model version every model reports: the repository holds one per model. */
#define KSERVE_MODEL_VERSION "1"
/* The platform name in model metadata. */
#define KSERVE_PLATFORM "inferd_mlp"

/* What an inference request asked for besides its tensor data. */
struct kserve_infer {
	int rows;		/* the input's first (batch) dimension */
	uint64_t timeout_us;	/* parameters.timeout_us (or Triton's "timeout"); 0 when absent */
	const char *id;		/* "id", borrowed from the parsed tree; NULL when absent */
	size_t input_bytes;	/* bytes written to the caller's buffer */
};

/*
 * Parse a request body.  On error NULL is returned and *cause says
 * "malformed JSON at line L, column C: ...".
 */
json_t *kserve_parse(const char *body, size_t len, char **cause);

/* The "model" member of a short-form body (POST /infer); NULL with *cause. */
const char *kserve_model_name(const json_t *root, char **cause);

/*
 * Check an inference request against model m and write its input tensor,
 * as float32 rows, straight into buf (buf_bytes long).  Flat and nested
 * "data" arrays are accepted.  On error -1 is returned and *cause names
 * the field and the problem; buf may have been partly written.
 */
int kserve_decode_infer(const json_t *root, const model_t *m, void *buf,
    size_t buf_bytes, struct kserve_infer *out, char **cause);

/*
 * Encode the answer to an inference request: rows rows of m's output in
 * output; id is echoed when non-NULL.  Floats are printed with 9
 * significant digits, so every float32 reads back exactly.  Returns a
 * malloc'ed string of *len bytes, or NULL with *cause (a NaN or infinity,
 * which JSON cannot carry, or no memory).
 */
char *kserve_encode_infer(const model_t *m, const char *id, int rows,
    const float *output, size_t *len, char **cause);

/* Server metadata for GET /v2: malloc'ed, NULL when out of memory. */
char *kserve_encode_server_metadata(size_t *len);
/* Model metadata for GET /v2/models/{m}: malloc'ed, NULL when out of memory. */
char *kserve_encode_model_metadata(const model_t *m, size_t *len);
/* The repository index (loaded and failed models): malloc'ed, NULL when out of memory. */
char *kserve_encode_repository_index(const repository_t *r, size_t *len);
/* {"error": msg} (any bytes of msg are escaped): malloc'ed, NULL when out of memory. */
char *kserve_encode_error(const char *msg, size_t *len);
/* Any {"key": true|false} body, e.g. {"live": true}: malloc'ed, NULL when out of memory. */
char *kserve_encode_flag(const char *key, int value, size_t *len);

#endif
