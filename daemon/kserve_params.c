/* kserve_params.c: refuse request parameters inferd does not implement, naming them. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kserve_params.h"

/*
 * The parameters implemented at each level, as a message lists them: every one kserve.c reads,
 * Triton's shared-memory triple included (a tensor in a region registered over HTTP).
 */
static const char *const request_known[] = { "timeout_us", "timeout", "binary_data_output", NULL };
static const char *const input_known[] = { "binary_data_size", "shared_memory_region", "shared_memory_offset",
	"shared_memory_byte_size", NULL };
static const char *const output_known[] = { "binary_data", "classification", "shared_memory_region",
	"shared_memory_offset", "shared_memory_byte_size", NULL };

/* Why a well-known Triton parameter is refused, beyond "not implemented". */
static const char *
kserve_param_note(const char *name)
{
	if (strcmp(name, "sequence_id") == 0 || strncmp(name, "sequence_", 9) == 0)
		return " (inferd has no sequence batching)";
	if (strcmp(name, "priority") == 0)
		return " (inferd has one priority level)";
	return "";
}

/* Whether name is in the NULL-terminated list known. */
static int
kserve_param_known(const char *name, const char *const *known)
{
	for (; *known != NULL; known++)
		if (strcmp(name, *known) == 0)
			return 1;
	return 0;
}

/* Append "'name'" (with its note) to the list of refused parameters in *bad; -1 without memory. */
static int
kserve_param_add(char **bad, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s'%s'%s", *bad ? *bad : "", *bad ? ", " : "", name,
	    kserve_param_note(name)) == -1)
		return -1;
	free(*bad);
	*bad = s;
	return 0;
}

/* Check one "parameters" object of obj (where names it); -1 with *cause when any is refused. */
static int
kserve_check_object(const json_t *obj, const char *where, const char *const *known, char **cause)
{
	const json_t *params = json_is_object(obj) ? json_object_get(obj, "parameters") : NULL, *v;
	const char *name, *const *k;
	char *bad = NULL, list[128] = "";
	int n = 0;

	if (!json_is_object(params))
		return 0;
	json_object_foreach((json_t *)params, name, v) {
		if (kserve_param_known(name, known))
			continue;
		if (kserve_param_add(&bad, name) != 0) {
			free(bad);
			return error_set(cause, "out of memory");
		}
		n++;
	}
	if (bad == NULL)
		return 0;
	for (k = known; *k != NULL; k++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
		    k == known ? "" : ", ", *k);
	error_set(cause, "%sparameter%s %s %s not implemented by inferd (it implements: %s)",
	    where, n == 1 ? "" : "s", bad, n == 1 ? "is" : "are", list);
	free(bad);
	return -1;
}

/* Check the parameters of each element of root's array member key. */
static int
kserve_check_array(const json_t *root, const char *key, const char *const *known, char **cause)
{
	const json_t *a = json_object_get(root, key), *o;
	char where[64];
	size_t i;

	if (!json_is_array(a))
		return 0;
	json_array_foreach(a, i, o) {
		snprintf(where, sizeof where, "%s[%zu]: ", key, i);
		if (kserve_check_object(o, where, known, cause) != 0)
			return -1;
	}
	return 0;
}

/* Check the request's, the inputs' and the outputs' parameters. */
int
kserve_check_parameters(const json_t *root, char **cause)
{
	if (kserve_check_object(root, "", request_known, cause) != 0 ||
	    kserve_check_array(root, "inputs", input_known, cause) != 0 ||
	    kserve_check_array(root, "outputs", output_known, cause) != 0)
		return -1;
	return 0;
}
