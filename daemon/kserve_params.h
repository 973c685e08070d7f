/*
 * kserve_params.h: the "parameters" a KServe v2 inference request may carry, checked
 * against what inferd implements, so that a client relying on one inferd would ignore
 * (Triton's priority, sequence_id, classification, shared-memory regions...) gets a 400
 * naming it instead of an answer that silently differs from the one it asked for.
 */
#ifndef INFERD_KSERVE_PARAMS_H
#define INFERD_KSERVE_PARAMS_H

#include <jansson.h>

/*
 * Check the parameters of request root (a JSON object): the request's own, each
 * input's and each output's.  Mistyped containers are left to the decoder.  -1 with
 * *cause naming every parameter that is not implemented, where it stands and what is.
 */
int kserve_check_parameters(const json_t *root, char **cause);

#endif
