/* model_config_instances.c: model.json's "instance_group": how many execution instances, on which devices. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_spec.h"
#include "error.h"
#include "model.h"
#include "model_impl.h"

/* Add the device named text (len bytes) to group k, refusing "auto", repeats and too many. */
static int
instances_add_device(struct model_instance_group *g, size_t k, const char *text, size_t len, char **cause)
{
	struct device_spec d;
	char name[64];
	int i;

	if (len == 0 || len >= sizeof name)
		return error_set(cause, "instance_group[%zu]: an empty or overlong device name in \"devices\"", k);
	memcpy(name, text, len);
	name[len] = '\0';
	if (device_spec_parse(name, &d, cause) != 0)
		return error_prefix(cause, "instance_group[%zu]: \"devices\"", k);
	if (d.kind == DEVICE_SPEC_AUTO)
		return error_set(cause, "instance_group[%zu]: \"auto\" is not a device here: leave \"devices\" out for the "
		    "daemon's device", k);
	for (i = 0; i < g->ndevices; i++)
		if (g->devices[i].kind == d.kind && g->devices[i].ordinal == d.ordinal)
			return error_set(cause, "instance_group[%zu]: device '%s' is listed twice", k, name);
	if (g->ndevices == MODEL_MAX_GROUP_DEVICES)
		return error_set(cause, "instance_group[%zu]: more than %d devices", k, MODEL_MAX_GROUP_DEVICES);
	g->devices[g->ndevices++] = d;
	return 0;
}

/* "devices": "cuda:0,cuda:1" or ["cuda:0", "cuda:1"] (absent: the daemon's device). */
static int
instances_devices(json_t *v, struct model_instance_group *g, size_t k, char **cause)
{
	const char *s, *comma;
	json_t *e;
	size_t i;

	if (v == NULL)
		return 0;
	if (json_is_string(v)) {
		for (s = json_string_value(v);; s = comma + 1) {
			comma = strchr(s, ',');
			if (instances_add_device(g, k, s, comma ? (size_t)(comma - s) : strlen(s), cause) != 0)
				return -1;
			if (comma == NULL)
				return 0;
		}
	}
	if (!json_is_array(v) || json_array_size(v) == 0)
		return error_set(cause, "instance_group[%zu]: \"devices\" must be a string such as \"cuda:0,cuda:1\" or "
		    "a non-empty array of device names", k);
	json_array_foreach(v, i, e) {
		if (!json_is_string(e))
			return error_set(cause, "instance_group[%zu]: devices[%zu] must be a string", k, i);
		if (instances_add_device(g, k, json_string_value(e), json_string_length(e), cause) != 0)
			return -1;
	}
	return 0;
}

/* One group {"count", "devices"}; Triton's "kind"/"gpus" are named in the refusal. */
static int
instances_group(json_t *obj, size_t k, struct model_instance_group *g, char **cause)
{
	const char *key;
	long long n;
	json_t *v;

	if (!json_is_object(obj))
		return error_set(cause, "instance_group[%zu] must be an object {\"count\", \"devices\"}", k);
	json_object_foreach(obj, key, v)
		if (strcmp(key, "count") != 0 && strcmp(key, "devices") != 0)
			return error_set(cause, "instance_group[%zu]: unknown key \"%s\" (\"count\" and \"devices\", e.g. "
			    "\"cuda:0,cuda:1\" or \"cpu\")", k, key);
	if (model_json_int(obj, "count", 1, MODEL_MAX_INSTANCES, 1, &n, cause) != 0)
		return error_prefix(cause, "instance_group[%zu]", k);
	g->count = (int)n;
	return instances_devices(json_object_get(obj, "devices"), g, k, cause);
}

/* "instance_group" into m->instances, the total bounded by MODEL_MAX_INSTANCES. */
int
model_config_instances(model_t *m, json_t *root, char **cause)
{
	json_t *arr = json_object_get(root, "instance_group"), *obj;
	size_t k;

	memset(&m->instances, 0, sizeof m->instances);
	if (arr == NULL)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > MODEL_MAX_INSTANCE_GROUPS)
		return error_set(cause, "\"instance_group\" must be an array of 1 to %d groups", MODEL_MAX_INSTANCE_GROUPS);
	json_array_foreach(arr, k, obj) {
		if (instances_group(obj, k, &m->instances.groups[k], cause) != 0)
			return -1;
		m->instances.ngroups++;
	}
	if (model_instance_count(m) > MODEL_MAX_INSTANCES)
		return error_set(cause, "\"instance_group\" asks for %d instances (count times devices, all groups), "
		    "at most %d", model_instance_count(m), MODEL_MAX_INSTANCES);
	return 0;
}

/* Instances in all: count times the devices of each group (a group without devices: count). */
int
model_instance_count(const model_t *m)
{
	int total = 0, k;

	if (m->instances.ngroups == 0)
		return 1;
	for (k = 0; k < m->instances.ngroups; k++) {
		const struct model_instance_group *g = &m->instances.groups[k];
		total += g->count * (g->ndevices > 0 ? g->ndevices : 1);
	}
	return total;
}
