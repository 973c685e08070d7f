/*
 * model_pbtxt.h: Triton's config.pbtxt (ModelConfig in protobuf text format)
 * read with libprotobuf's TextFormat against model_pbtxt.proto, and turned
 * into model.json's vocabulary so that one set of checks loads both.
 *
 * What maps (Triton field -> model.json key): name, platform
 * "onnxruntime_onnx"/"onnx" or backend "onnxruntime"/"onnx" -> platform
 * "onnx", max_batch_size (always written: 0 refuses a graph with a batch
 * dimension), input -> inputs (name, data_type as datatype, dims, format),
 * output -> outputs (name, datatype, dims, label_filename), dynamic_batching
 * (preferred_batch_size -> preferred_batch_sizes, max_queue_delay_microseconds
 * -> max_queue_delay_us, default_queue_policy's max_queue_size and
 * default_timeout_microseconds where not 0), instance_group (count; kind
 * KIND_CPU -> devices ["cpu"], KIND_GPU with gpus -> ["cuda:N", ...], KIND_GPU
 * without gpus and KIND_AUTO -> the daemon's devices), version_policy (the
 * same shape), default_model_filename (only "model.onnx").  Every other field
 * is refused by the parser, and every value inferd cannot honour here
 * (another platform, KIND_MODEL, another model file), naming it.
 */
#ifndef INFERD_MODEL_PBTXT_H
#define INFERD_MODEL_PBTXT_H

#include <stddef.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parse len bytes of config.pbtxt text (file: the name for messages) into
 * *out, a new JSON object in model.json's keys.  -1 with *cause
 * ("FILE:LINE:COLUMN: ...", the field named) when it does not parse or asks
 * for what inferd cannot do.
 */
int model_pbtxt_parse(const char *text, size_t len, const char *file, json_t **out, char **cause);

/*
 * The same for Triton's ModelConfig as JSON (protobuf's JSON mapping, as
 * Triton reads a load request's config override): what names the text in
 * messages.
 */
int model_pbtxt_parse_json(const char *text, size_t len, const char *what, json_t **out, char **cause);

#ifdef __cplusplus
}
#endif

#endif
