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

#endif
