/* model_padding.h: batching requests of different lengths: model.json "padding", detection, the check at load. */
#ifndef INFERD_MODEL_PADDING_H
#define INFERD_MODEL_PADDING_H

#include "model.h"

/*
 * Contract.  model.json "padding" (docs/MODELS.md) is false (never pad), or
 * {"dim": {"input": name, "index": k}, "values": {input: pad value, ...},
 * "buckets": [lengths]}: the variable dim k (the batch dim is 0) of that
 * input is the padded one, every input carrying it needs a pad value, and a
 * batch runs at the smallest bucket that holds its longest request (powers
 * of two up to the dim's maximum by default; the maximum ends every list).
 * Without "padding" it is detected: an integer input named attention_mask
 * with one variable dim, every input carrying that dim integer, pad value 0.
 * model_padding_check then runs one row of length about half the maximum
 * alone and padded to the maximum beside another row on a context of its
 * own, and turns padding on (m->padding.on) only when every output of the
 * padded row, sliced to the row's own dims, equals the row alone within
 * 1e-4 relative of the output's scale at fp32 (1e-2 at tf32 or fp16, 8e-2 at bf16);
 * otherwise it logs why and the model keeps exact-length batching.  Only a
 * declaration that does not fit the model fails (-1, naming the key).
 * Allocates like warm-up: call it while loading.  known 0 or 1 is the
 * verdict of an earlier check of the same files (model_verdict.h): padding
 * is resolved as always, but nothing runs and padding is on when known is
 * 1; known -1 checks.
 */
int model_padding_check(model_t *m, int known, char **cause);
/*
 * A row of dims own inside a row of dims big (own[d] <= big[d], packed
 * row-major, elements es bytes): the number of contiguous runs, each
 * *run_bytes long and packed in the own row, and where run i starts in the
 * big row.
 */
size_t model_padding_runs(const int64_t *own, const int64_t *big, int ndims, size_t es, size_t *run_bytes);
size_t model_padding_run_offset(const int64_t *own, const int64_t *big, int ndims, size_t es, size_t i);
/* Fill n elements of dtype dt at p with v. */
void model_padding_fill_value(void *p, size_t n, enum graph_dtype dt, double v);

#endif
