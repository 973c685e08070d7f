/* model_config.h: reading model.json and Triton's config.pbtxt (with a load's override merged over them), and typed getters for their members. */
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

/* Triton's model configuration file in a model folder (model_config_triton.c). */
#define MODEL_TRITON_CONFIG "config.pbtxt"
/* dir/config.pbtxt read into model.json's keys (model_pbtxt.h); *out NULL when absent. */
int model_config_triton_read(const char *dir, json_t **out, char **cause);
/* triton's keys into json; a key both set differently is refused, naming it. */
int model_config_triton_merge(json_t *json, json_t *triton, const char *dir, char **cause);
/* A config override in Triton's ModelConfig JSON turned into model.json's keys (*ov replaced); mixed: refused. */
int model_config_triton_override(const char *text, json_t **ov, char **cause);
/* "model.json", "config.pbtxt" or both, as dir has them (for messages). */
const char *model_config_triton_files(const char *dir);

#endif
