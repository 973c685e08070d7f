/* tensor_text.h: a KServe tensor's "data" array as JSON text, decoded into and encoded from typed memory. */
#ifndef INFERD_TENSOR_TEXT_H
#define INFERD_TENSOR_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contract.
 *
 * jansson builds a node per number; for a tensor's "data" that costs several
 * times the parse itself.  This module parses the numbers straight from the
 * request text into the caller's typed buffer (a pinned slot), and prints a
 * typed buffer as a JSON array, with no allocation per number.
 *
 * Numbers: FP32 is correctly rounded (fast_float; bit-identical to strtof on
 * every JSON number).  FP16 is the decimal correctly rounded to double, then
 * to half with ties to even (what numpy's float16(float(text)) gives); a value
 * that rounds past 65504 is refused.  Integers (INT8, INT32, INT64, UINT8) are
 * exact and range-checked per type; "1.0" and "1e3" are refused for them.
 * BOOL data are JSON true / false only, as Triton has them (0 and 1 are
 * refused); BOOL is stored as one byte, 0 or 1.  Decimal values too small for
 * the type become (signed) zero, as strtof does.  JSON has no NaN or Infinity:
 * their spellings are refused, and so is any value that is not a JSON number
 * (strings, null, objects, "+1", "01", ".5", "1.").
 *
 * Shape: data is either flat (one array of all the elements, row-major) or
 * nested exactly as the shape: ndims levels, every array at level d holding
 * shape[d] items.  Anything else is refused: a count that differs, inner
 * lengths that disagree with the shape even when the total matches, nesting
 * deeper than the shape, or a mix of numbers and arrays.
 *
 * Errors return -1 and a malloc'ed message in *cause (error.h) that names
 * the element by its flat row-major index ("element 17: 1e999 is out of range
 * for FP32") or the array by its path ("data[1] has 3 items, dimension 1 of
 * shape [2,4] is 4"); the caller adds the input's name.  No input text
 * crashes: scanning is iterative, every read is bounded by len.
 *
 * Use from kserve.c (jansson keeps the request's structure):
 *   1. tensor_text_find_data(body, len, spans, max, &n, &cause) locates each
 *      inputs[i].data value in the raw body (strings with brackets or escapes,
 *      escaped key names, and "data" keys elsewhere are handled).
 *   2. tensor_text_mask_data(...) copies the body with each such value
 *      replaced by null (a buffer of TENSOR_TEXT_MASK_BOUND(len, n) bytes);
 *      json_loadb parses that copy: a tree without a node per number.
 *   3. For inputs[i], once its name, datatype and shape are known from the
 *      tree (and "data" is null there, i.e. spans[i].present),
 *      tensor_text_decode(body + spans[i].off, spans[i].len, dtype, shape,
 *      ndims, slot, elems, NULL, &cause) fills the pinned slot.  Every span is
 *      decoded or the request refused: the decoder is what validates the span
 *      as JSON, the finder only skips it.
 *   4. For outputs, tensor_text_encode into a buffer of
 *      tensor_text_encode_bound(dtype, n) bytes, spliced into the answer.
 */

/* Where one input's "data" value lies in the body. */
struct tensor_text_span {
	size_t off;	/* byte offset of the value's first character */
	size_t len;	/* bytes of the value */
	int present;	/* 0: this input has no "data" key (off, len are 0) */
};

/*
 * Decode the JSON array at text (len bytes, leading whitespace allowed) into
 * out, out_elems elements of dt, given the tensor's shape (ndims dims, whose
 * product must be out_elems; ndims 0 is a scalar, data [x]).  With consumed
 * NULL only whitespace may follow the array; otherwise *consumed gets the
 * offset just past its ']' and the rest is the caller's.  On error out holds
 * partial data.
 */
int tensor_text_decode(const char *text, size_t len, enum graph_dtype dt,
    const int64_t *shape, int ndims, void *out, size_t out_elems,
    size_t *consumed, char **cause);

/* Bytes tensor_text_encode may need for n elements of dt, its NUL included (SIZE_MAX if n is absurd). */
size_t tensor_text_encode_bound(enum graph_dtype dt, size_t n);

/*
 * Print n elements of dt at data as a flat JSON array into buf (cap bytes, at
 * least tensor_text_encode_bound), NUL-terminated; *len gets its length.
 * Floats are printed shortest round-trip (std::to_chars), FP16 as the shortest
 * text of its float value; BOOL as true/false (any nonzero byte is true).
 * Refused: NaN or an infinity (JSON cannot carry them), a too small buffer.
 */
int tensor_text_encode(enum graph_dtype dt, const void *data, size_t n,
    char *buf, size_t cap, size_t *len, char **cause);

/*
 * Locate inputs[i].data in a KServe request body: spans[i] for each element
 * of the top-level "inputs" array (*nspans of them, at most max_spans).  A body
 * without an "inputs" array gives *nspans 0 (jansson then reports what is
 * wrong).  Refused: text that is not JSON where the scan walks it, "data"
 * twice in one input, more than max_spans inputs, nesting beyond 1024 levels.
 */
int tensor_text_find_data(const char *body, size_t len,
    struct tensor_text_span *spans, size_t max_spans, size_t *nspans,
    char **cause);

/* Bytes tensor_text_mask_data needs: the body, "null" per span, a NUL. */
#define TENSOR_TEXT_MASK_BOUND(len, nspans) ((len) + 4 * (nspans) + 1)

/*
 * Copy body into out (cap bytes, at least TENSOR_TEXT_MASK_BOUND) with each
 * present span's value replaced by null, NUL-terminated; *out_len gets its
 * length.  spans are those tensor_text_find_data returned for this body.
 */
int tensor_text_mask_data(const char *body, size_t len,
    const struct tensor_text_span *spans, size_t nspans,
    char *out, size_t cap, size_t *out_len, char **cause);

#ifdef __cplusplus
}
#endif

#endif
