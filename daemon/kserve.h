/*
 * kserve.h: KServe v2 bodies (Triton's dialect), JSON and the binary tensor
 * data extension, decoded and encoded apart from any transport.
 */
#ifndef INFERD_KSERVE_H
#define INFERD_KSERVE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model.h"
#include "shm_registry.h"
#include "tensor_text.h"

/* The platform name in model metadata when the model gives none. */
#define KSERVE_PLATFORM "inferd_mlp"
/*
 * The binary tensor data extension: a body whose request (or response)
 * carries this header holds that many bytes of JSON inference header, then
 * the tensors' raw bytes (little-endian, row-major) in the order of the
 * tensors that announce them with parameters.binary_data_size.
 */
#define KSERVE_HEADER_LENGTH "Inference-Header-Content-Length"
/* Its name in the server metadata's extensions. */
#define KSERVE_EXT_BINARY "binary_tensor_data"
/* Triton's shared-memory extensions (http_shm.c). */
#define KSERVE_EXT_SYSTEM_SHM "system_shared_memory"
#define KSERVE_EXT_CUDA_SHM "cuda_shared_memory"
/* GET /v2/models[/{m}]/stats, POST /v2/repository/..., GET /v2/models/{m}/config. */
#define KSERVE_EXT_STATISTICS "statistics"
#define KSERVE_EXT_REPOSITORY "model_repository"
#define KSERVE_EXT_CONFIGURATION "model_configuration"
/* outputs[].parameters.classification (kserve_classify.h). */
#define KSERVE_EXT_CLASSIFICATION "classification"
/* The Content-Type of a response that carries binary tensor data. */
#define KSERVE_TYPE_BINARY "application/octet-stream"

/* The binary section of a request body: the bytes after its JSON header. */
struct kserve_binary {
	const unsigned char *data;
	size_t len;
};

/* Tensors in a staging buffer start at multiples of this. */
#define KSERVE_TENSOR_ALIGN 64

/*
 * What an inference request asked for, and where its tensors lie in the
 * caller's staging buffer: every input in the model's order from offset 0,
 * then room for every output, each at a multiple of KSERVE_TENSOR_ALIGN.
 */
struct kserve_infer {
	int rows;		/* the inputs' first (batch) dimension */
	uint64_t timeout_us;	/* parameters.timeout_us (or Triton's "timeout"); 0 when absent */
	const char *id;		/* "id", borrowed from the parsed tree; NULL when absent */
	struct model_shape shape;	/* rows and every input's non-batch dims */
	struct model_layout layout;	/* the outputs' dims and row bytes for shape (model_output_layout) */
	size_t input_offset[MODEL_MAX_IO], input_len[MODEL_MAX_IO];
	size_t output_offset[MODEL_MAX_IO], output_len[MODEL_MAX_IO];
	size_t input_bytes;	/* bytes written to the caller's buffer */
	size_t staged_bytes;	/* the buffer's bytes in use, outputs included */
	int nwanted;		/* outputs to return, as model output indices in the answer's order */
	int wanted[MODEL_MAX_IO];	/* every output in the model's order when "outputs" is absent */
	int binary[MODEL_MAX_IO];	/* per model output: goes back as binary data */
	int classify[MODEL_MAX_IO];	/* per model output: parameters.classification's k (Triton's
					 * extension: the top k as BYTES "value:index[:label]"), 0 none */
	int binary_output;	/* some wanted output goes back as binary data (outputs[].parameters.binary_data,
				 * else parameters.binary_data_output) */
	/*
	 * Tensors in Triton shared-memory regions (parameters.shared_memory_region,
	 * _offset, _byte_size): input_at[i] / output_at[o] point into the region
	 * instead of the buffer (NULL: in the buffer).  The regions stay referenced
	 * until kserve_infer_release.
	 */
	void *input_at[MODEL_MAX_IO];
	void *output_at[MODEL_MAX_IO];
	const char *output_region[MODEL_MAX_IO];	/* borrowed from the tree: decoding only */
	struct shm_region *output_shm[MODEL_MAX_IO];	/* the region each output went to, for the answer */
	void *output_pack[MODEL_MAX_IO];	/* a BYTES output's place in its region, written packed with
						 * the answer (its slots are staged in the buffer) */
	size_t output_region_offset[MODEL_MAX_IO], output_region_size[MODEL_MAX_IO];
	struct shm_region *regions[2 * MODEL_MAX_IO];
	int nregions;
};

/* Most inputs whose data text the fast path locates (more go through jansson). */
#define KSERVE_MAX_SPANS 64

/*
 * What a request's tensors are taken from besides its JSON tree: the
 * header's text and where inputs[j].data lies in it (kserve_parse_fast),
 * and the shared-memory regions it may name.  Every member may be NULL / 0.
 */
struct kserve_source {
	const char *text;
	const struct tensor_text_span *spans;
	size_t nspans;
	shm_registry_t *shm;
};

/*
 * Parse a request body.  On error NULL is returned and *cause says
 * "malformed JSON at line L, column C: ...".
 */
json_t *kserve_parse(const char *body, size_t len, char **cause);

/*
 * Parse a request body without a node per number: every inputs[j].data
 * array is located in the text (spans, KSERVE_MAX_SPANS of them), masked
 * as null in a copy that jansson parses, and decoded later straight from
 * the text by kserve_decode_request.  A body the locator refuses is parsed
 * whole by jansson (*nspans 0), so its errors read as kserve_parse's.
 */
json_t *kserve_parse_fast(const char *body, size_t len, struct tensor_text_span *spans,
    size_t *nspans, char **cause);

/* The "model" member of a short-form body (POST /infer); NULL with *cause. */
const char *kserve_model_name(const json_t *root, char **cause);

/*
 * The JSON header's length from the value of a request's
 * Inference-Header-Content-Length, for a body of body_len bytes: digits
 * only, at least 1 and at most body_len.  -1 with *cause otherwise.
 */
int kserve_header_length(const char *value, size_t body_len, size_t *json_len,
    char **cause);

/*
 * Check an inference request against model m and write its input tensors
 * straight into buf (buf_bytes long), laid out as struct kserve_infer says.
 * Inputs come in any order, each named once, with the model's datatype
 * and a shape [rows, dims...] (dims checked with model_check_dims; every
 * input agrees on rows).  Flat "data" arrays and arrays nested exactly as
 * the shape are accepted (FP16 as numbers, BOOL as true/false, INT64
 * exactly); so is, when bin is non-NULL (the request had
 * Inference-Header-Content-Length), an input with
 * parameters.binary_data_size and no "data", whose bytes are taken from
 * bin in the request's input order.  Every byte of bin must be taken.
 * "outputs" selects outputs (each named once).  On error -1 is returned and
 * *cause names the field and the problem; buf may have been partly written.
 */
int kserve_decode_infer(const json_t *root, const struct kserve_binary *bin,
    const model_t *m, void *buf, size_t buf_bytes, struct kserve_infer *out,
    char **cause);

/*
 * kserve_decode_infer with the tensors' other sources (src may be NULL):
 * an input whose "data" is masked (null) is decoded from src->text at its
 * span; an input or output with parameters.shared_memory_region (and
 * shared_memory_byte_size, shared_memory_offset) lies in that region of
 * src->shm, checked against the region and the tensor's bytes.  Call
 * kserve_infer_release afterwards, also when it failed.
 */
int kserve_decode_request(const json_t *root, const struct kserve_source *src,
    const struct kserve_binary *bin, const model_t *m, void *buf, size_t buf_bytes,
    struct kserve_infer *out, char **cause);
/*
 * kserve_decode_request in two steps, for a caller that finds the buffer
 * once it knows the size: kserve_decode_layout checks the request's header
 * and lays its tensors out (out->staged_bytes is the buffer it needs);
 * kserve_decode_tensors then writes the inputs into buf.  Call
 * kserve_infer_release afterwards, also when either failed.
 */
int kserve_decode_layout(const json_t *root, const struct kserve_source *src, const model_t *m,
    struct kserve_infer *out, char **cause);
int kserve_decode_tensors(const json_t *root, const struct kserve_source *src,
    const struct kserve_binary *bin, const model_t *m, void *buf, struct kserve_infer *out,
    char **cause);
/* Drop the region references a decoded request holds (the regions go back to shm). */
void kserve_infer_release(struct kserve_infer *ki, shm_registry_t *shm);
/* 1 when a tensor of ki lies in a CUDA shared-memory region (device memory), else 0. */
int kserve_infer_device_memory(const struct kserve_infer *ki);

/*
 * Encode the answer to an inference request decoded into ki: its wanted
 * outputs, from buf at ki's offsets, each with its datatype and shape
 * [rows, dims...]; id is echoed when non-NULL.  As JSON, floats are printed
 * with 9 significant digits, so every float32 reads back exactly;
 * *header_len is *len.  An output marked binary carries
 * parameters.binary_data_size instead of "data", and its raw little-endian
 * bytes follow the JSON header, in the answer's output order; the header is
 * *header_len bytes long (the response's Inference-Header-Content-Length).
 * Returns a malloc'ed buffer of *len bytes, NUL-terminated when JSON, or
 * NULL with *cause (as JSON a NaN or infinity, which JSON cannot carry; no
 * memory).
 */
char *kserve_encode_infer(const model_t *m, const char *id, const struct kserve_infer *ki,
    const void *buf, size_t *len, size_t *header_len, char **cause);

/*
 * The other bodies.  Each returns a malloc'ed NUL-terminated buffer of *len
 * bytes, or NULL with *cause (only when memory runs out).
 */
/* What the server metadata lists beside the extensions every daemon has. */
struct kserve_server_info {
	int system_shm;		/* the shared-memory endpoints are on */
	int cuda_shm;		/* ... and a GPU backend runs, so CUDA regions work */
};
/*
 * Server metadata for GET /v2: the extensions that work on this daemon
 * (perf_analyzer reads statistics only when "statistics" is listed).
 */
char *kserve_encode_server_metadata(const struct kserve_server_info *info, size_t *len, char **cause);
/* Model metadata for GET /v2/models/{m}. */
char *kserve_encode_model_metadata(const model_t *m, size_t *len, char **cause);
/*
 * A repository load request's body (len 0: none): {"parameters": {"config":
 * "<model.json text>"}} as Triton's clients send a config override.  *config
 * gets a malloc'ed copy of that text, or NULL without one; any other
 * parameter (Triton's "file:..." contents) is refused naming it.
 */
int kserve_decode_load_request(const char *body, size_t len, char **config, char **cause);
/* {"error": msg} (any bytes of msg are escaped). */
char *kserve_encode_error(const char *msg, size_t *len, char **cause);
/* Any {"key": true|false} body, e.g. {"live": true}. */
char *kserve_encode_flag(const char *key, int value, size_t *len, char **cause);

/*
 * The compact JSON text of v (reals to 9 significant digits), malloc'ed, its
 * length in *len (when not NULL); v is freed.  v NULL (building it ran out of
 * memory) or no memory to write it: NULL with *cause.
 */
char *kserve_json_body(json_t *v, size_t *len, char **cause);

#endif
