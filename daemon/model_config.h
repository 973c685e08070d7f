/* model_config.h: reading model.json (with a load's override merged over it), and typed getters for its members. */
#ifndef INFERD_MODEL_CONFIG_H
#define INFERD_MODEL_CONFIG_H

#include <jansson.h>
#include <stddef.h>

/* Integer member key in [lo, hi], def when absent (def < 0: required). */
int model_json_int(json_t *obj, const char *key, long long lo, long long hi, long long def,
    long long *out, char **cause);
/* String member key copied into buf; required unless def is non-NULL. */
int model_json_str(json_t *obj, const char *key, const char *def, char *buf, size_t len, char **cause);
/*
 * dir/model.json with override (NULL, or a JSON object text) merged over it
 * at the top level; *out NULL when the file is absent, not required and there
 * is no override.  Errors name the file (line, column) or the override.
 */
int model_config_read(const char *dir, const char *override, int required, json_t **out, char **cause);

#endif
