/* model_config_json.c: typed getters for model.json's members (integers in a range, bounded strings). */
#include "config.h"

#include <jansson.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "model_impl.h"

/* Get an integer member in [lo, hi], or def when absent (def < 0: required). */
int
model_json_int(json_t *obj, const char *key, long long lo, long long hi,
    long long def, long long *out, char **cause)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL) {
		if (def < 0)
			return error_set(cause, "missing \"%s\"", key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return error_set(cause, "\"%s\" must be an integer in [%lld, %lld]", key, lo, hi);
	*out = json_integer_value(v);
	return 0;
}

/* Copy a string member into buf; required unless def is non-NULL. */
int
model_json_str(json_t *obj, const char *key, const char *def, char *buf,
    size_t len, char **cause)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	if (v == NULL && def != NULL)
		s = def;
	else if (!json_is_string(v))
		return error_set(cause, "\"%s\" must be a string", key);
	else
		s = json_string_value(v);
	if (strlen(s) == 0 || strlen(s) >= len)
		return error_set(cause, "\"%s\" must be 1 to %zu characters", key, len - 1);
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}
