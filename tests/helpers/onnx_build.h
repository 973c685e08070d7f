/* onnx_build.h: write small ONNX files by hand (protobuf encoding) for tests that must not need Python. */
#ifndef INFERD_TEST_ONNX_BUILD_H
#define INFERD_TEST_ONNX_BUILD_H

#include <stddef.h>
#include <stdint.h>

/*
 * A model of one op: every input and the output are FP32 of the same shape
 * (dims < 0 are symbolic: -1 "N", -2 "S"), one node op_type named node_name
 * reading all the inputs (an op with attributes cannot be written).  Opset 17.
 * Returns a malloc'ed buffer of *len bytes (exits on out of memory).
 */
uint8_t *onnx_build_unary(const char *op_type, const char *node_name, int ninputs, int ndims,
    const int64_t *dims, size_t *len);

#endif
