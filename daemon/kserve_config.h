/*
 * kserve_config.h: Triton's model configuration and model statistics bodies
 * (GET /v2/models/{m}/config and GET /v2/models/{m}/stats), from the loaded
 * model and the daemon's metrics.
 *
 * The configuration is Triton's ModelConfig as JSON: name, platform,
 * max_batch_size, input and output with data_type "TYPE_FP32" and dims
 * (without the batch dimension), each input's format (FORMAT_NONE unless
 * configured), dynamic_batching, instance_group (Triton's count/kind/gpus);
 * each output also carries
 * "labels" (inferd's addition: the class names of model.json, when it has them).
 *
 * The statistics are Triton's ModelStatistics shape, {"model_stats": [one entry]},
 * filled from what inferd measures: success is requests answered and their
 * end-to-end time, fail the requests refused or failed (their time is not kept:
 * ns 0), queue the time from submission to the start of a request's batch
 * (count: requests answered), compute_infer the batches' device time (count:
 * batches, as execution_count).  compute_input and compute_output are not
 * measured apart (copies overlap compute in the pipeline): count as compute_infer,
 * ns 0.  batch_stats has one entry per batch size executed (up to
 * METRICS_BATCH_SIZES distinct sizes; batches of further sizes are counted in
 * inferd's "batch_stats_uncounted"), with compute_infer their device time.
 * last_inference is the wall-clock time of the last batch in ms since the epoch.
 */
#ifndef INFERD_KSERVE_CONFIG_H
#define INFERD_KSERVE_CONFIG_H

#include <stddef.h>

#include "metrics.h"
#include "model.h"
#include "repository.h"

/* The configuration of m; a malloc'ed NUL-terminated body of *len bytes, or NULL with *cause. */
char *kserve_encode_model_config(const model_t *m, size_t *len, char **cause);

/*
 * The statistics of m from its counters mm (NULL: none yet, all zero); a malloc'ed
 * NUL-terminated body of *len bytes, or NULL with *cause.  The counters are read
 * without a lock, each atomically: a body taken under load is not one instant's.
 */
char *kserve_encode_model_stats(const model_t *m, const struct metrics_model *mm,
    size_t *len, char **cause);

/* GET /v2/models/stats: {"model_stats": [...]} with an entry per served version. */
char *kserve_encode_all_stats(repository_t *repo, struct metrics *metrics, size_t *len, char **cause);

#endif
