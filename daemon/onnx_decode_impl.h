/* onnx_decode_impl.h: what the ONNX decoder's files share: the model's arena and file copies, the decoding context. */
#ifndef INFERD_ONNX_DECODE_IMPL_H
#define INFERD_ONNX_DECODE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx_decode.h"
#include "protobuf_wire.h"

/* An external data file's private copy (file_copy.h), shared by every tensor that names its location. */
struct onnx_ext_file {
	char *location;
	uint8_t *bytes;		/* NULL for an empty file */
	size_t size;
};

struct arena_chunk;

/* Everything a model owns; the public struct is its first member, so freeing the priv frees both. */
struct onnx_priv {
	onnx_model_t model;
	struct arena_chunk *chunks;
	size_t arena_total, arena_limit;
	uint8_t *bytes;		/* the .onnx file's private copy (onnx_model_load only) */
	size_t size;
	struct onnx_ext_file *ext;
	size_t n_ext, ext_cap;
};

/* One decode: the model being built, where external files are looked up, the message path for errors. */
struct onnx_dec {
	struct onnx_priv *priv;
	int dirfd;		/* the model's directory; -1 refuses external data */
	char **cause;
	size_t plen;
	char path[256];		/* e.g. "graph.node[12].attribute[3]" */
};

/* Set the arena's limit for a model file of len bytes (metadata grows at most 16x the file). */
void dec_arena_init(struct onnx_priv *pv, size_t len);
/* Free the arena's chunks. */
void dec_arena_free(struct onnx_priv *pv);
/* Zeroed arena memory aligned to 16 bytes; NULL (with the cause set) when out of memory or over the limit. */
void *dec_alloc(struct onnx_dec *d, size_t n);
/* Append ".name" or ".name[index]" (index >= 0) to the path; returns the length to restore with dec_pop. */
size_t dec_push(struct onnx_dec *d, const char *name, long long index);
/* Append "('name')" (nothing when name is empty); returns the length to restore with dec_pop. */
size_t dec_push_quoted(struct onnx_dec *d, const char *name);
/* Restore the path to what it was before dec_push returned plen. */
void dec_pop(struct onnx_dec *d, size_t plen);
/* Set the cause to "path: message"; returns -1. */
int dec_err(struct onnx_dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the path to a cause set by a lower layer (protobuf_wire); returns -1. */
int dec_fail(struct onnx_dec *d);
/* pb_next with the path on its errors. */
int dec_next(struct onnx_dec *d, struct pb_reader *r, struct pb_field *f);
/* Refuse field fname (f) unless it has wire type wire. */
int dec_expect(struct onnx_dec *d, const struct pb_field *f, int wire, const char *fname);
/* A string field as a NUL-terminated arena copy (NUL bytes inside are refused). */
int dec_string(struct onnx_dec *d, const struct pb_field *f, const char *fname, const char **out);
/* A varint field as an int64 (or int32 when is32) value. */
int dec_int(struct onnx_dec *d, const struct pb_field *f, const char *fname, int is32, int64_t *out);

/* Decode the TensorProto in f into t (onnx_decode_tensor.c). */
int dec_tensor(struct onnx_dec *d, const struct pb_reader *r, const struct pb_field *f,
    struct onnx_tensor *t);
/* Free the copies of the external data files (onnx_decode_tensor.c). */
void dec_ext_free(struct onnx_priv *priv);

#endif
