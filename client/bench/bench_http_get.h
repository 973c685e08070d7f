/* bench_http_get.h: GETs shared by inferd-bench and inferd-bench-mix (metadata JSON, /metrics counters). */
#ifndef INFERD_BENCH_HTTP_GET_H
#define INFERD_BENCH_HTTP_GET_H

#include <stdint.h>

#include <jansson.h>

#include "http_client.h"

/* GET path; on 200 the body parsed as JSON in *root (json_decref it); -1 with *cause. */
int bench_http_get_json(const struct httpc_url *u, const char *path, json_t **root, char **cause);

/* GET /metrics; on 200 the exposition text in *text (free it); -1 with *cause. */
int bench_http_get_metrics(const struct httpc_url *u, char **text, char **cause);

/* The value of "NAME{model="M"} VALUE" in exposition text; -1 when absent. */
int bench_metric_value(const char *text, const char *name, const char *model, uint64_t *v);

#endif
