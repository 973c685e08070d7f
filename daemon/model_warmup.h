/* model_warmup.h: running a model's warm-up requests before it is reported ready. */
#ifndef INFERD_MODEL_WARMUP_H
#define INFERD_MODEL_WARMUP_H

#include "model.h"

/*
 * Contract.  model.json's "warmup" (m->warmup; docs/MODELS.md) lists batch
 * sizes and the data to run them with: zeros, random (floating inputs uniform
 * in [0, 1), integer and bool inputs 0 or 1) or a sample file in the model
 * directory holding one row of every input at its maximum dims, raw
 * little-endian in input order, repeated in every row.  model_warmup makes a
 * batch context of its own on m->dev, runs every listed batch size through it
 * with every input at its maximum dims, reads the outputs back, and frees the
 * context.  Floating outputs must be finite: a NaN or infinity from zeros is
 * logged as a warning (a model may divide by its input's norm), from random
 * or sample data it is a failure.  It allocates and frees device memory (the
 * context's arena) and so must run while the model is being loaded, not while
 * other work counts allocations.  One call at a time per model.
 */

/* Run the model's warm-up; 0 when there is none.  Errors name the model, version, entry, batch size and cause. */
int model_warmup(model_t *m, char **cause);

/*
 * The precision check.  For a model whose precision is tf32, fp16 or bf16,
 * model_precision_check loads the same version again on the CPU backend
 * (which computes strict FP32 whatever the precision), runs one row at the
 * largest dims through both (the first sample file "warmup" lists, else the
 * seeded data of warm-up's "random") and sets m->precision_error to the
 * largest relative error of a floating output: max |y - y32| / max |y32|,
 * or max |y| when the FP32 output is all zeros.  It is logged (a warning
 * above MODEL_PRECISION_WARN, MODEL_PRECISION_WARN_BF16 at bf16 (8 times:
 * bfloat16 keeps 8 significant bits to FP16's 11), naming the output, so
 * outputs that underflow to zeros at fp16 are never silent) and shown in the
 * model's statistics.
 * A reference that cannot be made (the CPU backend cannot run a node) is
 * logged and leaves precision_error at -1; it never fails the load.  At
 * fp32 nothing runs.  Allocates like warm-up: call it while loading.  The
 * measured output's name goes to output (len bytes; "" when nothing was
 * measured).  model_precision_recall takes an earlier check's figure for the
 * same files instead (model_verdict.h): err < 0 means none was measured.
 */
#define MODEL_PRECISION_WARN 1e-2
#define MODEL_PRECISION_WARN_BF16 8e-2
void model_precision_check(model_t *m, char *output, size_t len);
void model_precision_recall(model_t *m, double err, const char *output);

#endif
