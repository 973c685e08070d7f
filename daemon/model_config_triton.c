/* model_config_triton.c: a model folder's config.pbtxt (Triton's ModelConfig) merged with its model.json. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "file_copy.h"
#include "model_config.h"
#include "model_impl.h"
#include "model_pbtxt.h"

/* dir/config.pbtxt in model.json's keys into *out; *out NULL when the folder has none. */
int
model_config_triton_read(const char *dir, json_t **out, char **cause)
{
	uint8_t *text = NULL;
	size_t len = 0;
	struct stat st;
	char *path;
	int rc;

	*out = NULL;
	if (xasprintf(&path, "%s/" MODEL_TRITON_CONFIG, dir) == -1)
		return error_set(cause, "out of memory");
	if (stat(path, &st) != 0) {
		rc = errno == ENOENT ? 0 : error_set(cause, "%s: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	rc = file_copy_read(AT_FDCWD, path, &text, &len, cause);
	if (rc == 0)
		rc = model_pbtxt_parse(len > 0 ? (const char *)text : "", len, path, out, cause);
	file_copy_free(text, len);
	free(path);
	return rc;
}

/*
 * Merge config.pbtxt's keys (triton) into model.json's (json): a key only one
 * of them sets is taken as it is; one both set must have the same value, else
 * the load is refused naming it (neither file silently wins).
 */
int
model_config_triton_merge(json_t *json, json_t *triton, const char *dir, char **cause)
{
	const char *key;
	json_t *v, *mine;

	json_object_foreach(triton, key, v) {
		mine = json_object_get(json, key);
		if (mine != NULL && !json_equal(mine, v))
			return error_set(cause, "%s: " MODEL_TRITON_CONFIG " and model.json set \"%s\" differently "
			    "(set it in one of them)", dir, key);
		if (mine == NULL && json_object_set(json, key, v) != 0)
			return error_set(cause, "out of memory");
	}
	return 0;
}

/* Which configuration files dir has, for messages: "model.json", "config.pbtxt" or both. */
const char *
model_config_triton_files(const char *dir)
{
	struct stat st;
	char path[4096];
	int json, pbtxt;

	snprintf(path, sizeof path, "%s/model.json", dir);
	json = stat(path, &st) == 0;
	snprintf(path, sizeof path, "%s/" MODEL_TRITON_CONFIG, dir);
	pbtxt = stat(path, &st) == 0;
	if (pbtxt && json)
		return "{model.json," MODEL_TRITON_CONFIG "}";
	return pbtxt ? MODEL_TRITON_CONFIG : "model.json";
}

/* Split text (len bytes) into lines: m->labels, one per line (a last empty line and CRs dropped). */
static int
model_config_label_lines(model_t *m, const char *text, size_t len, const char *file, char **cause)
{
	size_t i, start = 0, n = 0, k;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	n += len > 0 && text[len - 1] != '\n';
	if ((m->labels = xcalloc(n + 1, sizeof *m->labels)) == NULL)
		return error_set(cause, "out of memory");
	for (i = 0; i <= len && m->nlabels < n; i++) {
		if (i < len && text[i] != '\n')
			continue;
		k = i - start;
		if (k > 0 && text[start + k - 1] == '\r')
			k--;
		if (memchr(text + start, '\0', k) != NULL)
			return error_set(cause, "%s: line %zu holds a NUL byte", file, m->nlabels + 1);
		if ((m->labels[m->nlabels] = xmalloc(k + 1)) == NULL)
			return error_set(cause, "out of memory");
		memcpy(m->labels[m->nlabels], text + start, k);
		m->labels[m->nlabels++][k] = '\0';
		start = i + 1;
	}
	return 0;
}

/* Triton's label_filename: the class names of the model's first output, one per line, from m->dir/file. */
int
model_config_triton_labels(model_t *m, const char *file, char **cause)
{
	uint8_t *text = NULL;
	size_t len = 0;
	char *path;
	int rc;

	if (strchr(file, '/') != NULL || strcmp(file, "..") == 0 || strcmp(file, ".") == 0 || *file == '\0')
		return error_set(cause, "label_filename \"%s\" must name a file in the model's folder", file);
	if (m->nlabels > 0)
		return error_set(cause, "label_filename \"%s\" and \"labels\" both give class names (keep one)", file);
	if (xasprintf(&path, "%s/%s", m->dir, file) == -1)
		return error_set(cause, "out of memory");
	rc = file_copy_read(AT_FDCWD, path, &text, &len, cause);
	if (rc == 0)
		rc = model_config_label_lines(m, (const char *)text, len, path, cause);
	file_copy_free(text, len);
	free(path);
	return rc;
}

/* Keys, and dynamic_batching / instance_group members, that only one of the two vocabularies has. */
static const char *const triton_keys[] = { "input", "output", "backend", "default_model_filename", NULL };
static const char *const json_keys[] = { "inputs", "outputs", "labels", "max_dims", "rename", "plan_cache",
	"precision", "warmup", "description", "batch_invariant", NULL };
static const char *const triton_batching[] = { "preferred_batch_size", "max_queue_delay_microseconds",
	"default_queue_policy", NULL };
static const char *const json_batching[] = { "preferred_batch_sizes", "max_queue_delay_us", "max_queue_size",
	"default_timeout_us", "eager_dispatch", NULL };
static const char *const triton_group[] = { "kind", "gpus", NULL };
static const char *const json_group[] = { "devices", NULL };

/* The first key of obj (an object, else none) in the NULL-terminated list; NULL when none is. */
static const char *
model_config_first_of(const json_t *obj, const char *const *keys)
{
	for (; json_is_object(obj) && *keys != NULL; keys++)
		if (json_object_get(obj, *keys) != NULL)
			return *keys;
	return NULL;
}

/* The first key in ov that only Triton's ModelConfig (triton 1) or only model.json (0) has. */
static const char *
model_config_vocabulary(const json_t *ov, int triton)
{
	const json_t *g;
	const char *k;
	size_t i;

	if ((k = model_config_first_of(ov, triton ? triton_keys : json_keys)) != NULL ||
	    (k = model_config_first_of(json_object_get(ov, "dynamic_batching"),
	    triton ? triton_batching : json_batching)) != NULL)
		return k;
	json_array_foreach(json_object_get(ov, "instance_group"), i, g)
		if ((k = model_config_first_of(g, triton ? triton_group : json_group)) != NULL)
			return k;
	return NULL;
}

/*
 * A load request's config override (text, parsed as *ov) read as Triton's
 * ModelConfig JSON where it uses keys only Triton has, else as model.json's
 * keys; one that mixes the two is refused naming a key of each.  *ov is
 * replaced by its model.json form, with only the keys the override sets.
 */
int
model_config_triton_override(const char *text, json_t **ov, char **cause)
{
	const char *t = model_config_vocabulary(*ov, 1), *j = model_config_vocabulary(*ov, 0);
	json_t *conv = NULL;

	if (t == NULL)
		return 0;
	if (j != NULL)
		return error_set(cause, "config override: it mixes Triton's ModelConfig (\"%s\") and model.json's "
		    "keys (\"%s\"); write it in one of them", t, j);
	if (model_pbtxt_parse_json(text, strlen(text), "config override", &conv, cause) != 0)
		return -1;
	if (json_object_get(*ov, "max_batch_size") == NULL)
		json_object_del(conv, "max_batch_size");
	if (json_object_get(*ov, "platform") == NULL && json_object_get(*ov, "backend") == NULL)
		json_object_del(conv, "platform");
	json_decref(*ov);
	*ov = conv;
	return 0;
}
