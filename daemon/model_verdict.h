/* model_verdict.h: the load checks' verdicts (padding, precision) remembered for the same model bytes, settings, daemon and device, so a restart does not run them again. */
#ifndef INFERD_MODEL_VERDICT_H
#define INFERD_MODEL_VERDICT_H

#include "file_copy.h"
#include "model.h"

/*
 * Contract.  model_verdict_checks runs a loaded copy's checks at load: the
 * padding check (model_padding_check) and, when precision is set (the first
 * copy), the precision check (model_precision_check).  Their verdicts are
 * kept in the compile cache ("load checks", in memory only without a
 * compile_cache_dir), keyed by the digest of every byte the load read
 * (file_copy_digest: model file, external data, model.json and
 * config.pbtxt), the load's config override, the model's precision, batch
 * size and padding mode, the daemon binary (its inode, size and
 * modification time: a rebuilt daemon checks again) and the device's
 * identity (device.h).  A later load with the same key takes the verdicts
 * instead of running the checks (padding still resolves its buckets); a
 * device without an identity, or a digest of nothing, always checks.  The
 * padding check's verdict decides whether requests of different lengths
 * share batches, so it is remembered only for these exact bytes and this
 * exact daemon.  -1 only as model_padding_check fails (a declaration that
 * does not fit the model).
 */
int model_verdict_checks(model_t *m, const struct file_copy_digest *dg, int precision, char **cause);

#endif
