/* model.c: loading a model version (either format) from the directory the repository names, and freeing it. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "cpu_kernels.h"
#include "error.h"
#include "graph_fold.h"
#include "log.h"
#include "model.h"
#include "model_impl.h"
#include "onnx_decode.h"
#include "safetensors.h"

/* The directory's last component, as the model's name. */
static int
model_dir_name(model_t *m, const char *dir, char **cause)
{
	const char *end = dir + strlen(dir), *start;

	while (end > dir && end[-1] == '/')
		end--;
	for (start = end; start > dir && start[-1] != '/'; start--)
		;
	if (end == start || (size_t)(end - start) >= sizeof m->name)
		return error_set(cause, "%s: the directory name is empty or too long for a model name", dir);
	memcpy(m->name, start, (size_t)(end - start));
	m->name[end - start] = '\0';
	return 0;
}

/* Prefix an error with the configuration file's path (and the override when there is one). */
static int
model_json_prefix(const model_t *m, const char *override, char **cause)
{
	return error_prefix(cause, "%s/%s%s", m->dir, model_config_triton_files(m->dir),
	    override != NULL ? " with the config override" : "");
}

/* Load version_dir/model.onnx with the optional model.json. */
static int
model_load_onnx(model_t *m, const char *path, const char *override, char **cause)
{
	json_t *cfg = NULL;
	int rc;

	m->platform = "onnx";
	if (model_dir_name(m, m->dir, cause) != 0 || model_config_read(m->dir, override, 0, &cfg, cause) != 0)
		return -1;
	rc = model_onnx_load(m, path, cause);
	if (rc == 0 && (rc = model_config_onnx(m, cfg, model_graph_has_batch(m->graph), cause)) != 0)
		model_json_prefix(m, override, cause);
	else if (rc == 0 && (rc = model_finish(m, cfg, cause)) != 0)
		error_prefix(cause, "%s", path);
	else if (rc == 0 && (rc = model_config_check_io(m, cfg, cause)) != 0)
		model_json_prefix(m, override, cause);
	if (rc == 0 && model_fixed_batch(m) > 0)
		LOG_INFO("model '%s' has a fixed batch of %lld (its ONNX inputs declare no batch axis): requests of any "
		    "other batch are refused; to serve other batch sizes re-export it with a dynamic batch axis "
		    "(torch.onnx.export(..., dynamic_axes={\"%s\": {0: \"batch\"}}))", m->name,
		    (long long)model_fixed_batch(m), m->inputs[0].name);
	json_decref(cfg);
	return rc;
}

/* Load the layer format from dir/model.json, the weights from version_dir. */
static int
model_load_mlp(model_t *m, const char *override, char **cause)
{
	json_t *root;
	int rc;

	if (model_config_read(m->dir, override, 1, &root, cause) != 0)
		return -1;
	if ((rc = model_mlp_load(m, root, cause)) != 0)
		model_json_prefix(m, override, cause);
	json_decref(root);
	return rc;
}

/* Whether dir has no model.json (with no model.onnx either, there is no model there at all). */
static int
model_json_missing(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(path, sizeof path, "%s/model.json", dir) >= sizeof path)
		return 0;
	return stat(path, &st) != 0 && errno == ENOENT;
}

/* Load the model whose model.json is in dir and whose files are in files_dir. */
static int
model_load_at(device_t *dev, const char *dir, const char *files_dir, int64_t version, const char *override,
    model_t **out, char **cause)
{
	struct stat st;
	model_t *m;
	char *onnx = NULL;
	int rc;

	m = xcalloc(1, sizeof *m);
	if (m == NULL || (m->dir = xstrdup(dir)) == NULL || (m->version_dir = xstrdup(files_dir)) == NULL ||
	    asprintf(&onnx, "%s/model.onnx", files_dir) == -1) {
		model_free(m);
		return error_set(cause, "out of memory");
	}
	m->dev = dev;
	m->version = version;
	m->platform = "inferd_mlp";
	m->precision_error = -1;
	m->batch_invariant = 1;
	if (override != NULL && (m->config_override = xstrdup(override)) == NULL) {
		model_free(m);
		return error_set(cause, "out of memory");
	}
	if (stat(onnx, &st) == 0)
		rc = model_load_onnx(m, onnx, override, cause);
	else if (model_json_missing(dir))
		rc = error_set(cause, "%s holds neither model.onnx nor model.json: a model directory needs "
		    "model.onnx (an ONNX graph; model.json optional) or model.json with *.safetensors "
		    "(docs/MODELS.md)", files_dir);
	else
		rc = model_load_mlp(m, override, cause);
	free(onnx);
	if (rc != 0) {
		model_free(m);
		return -1;
	}
	*out = m;
	return 0;
}

/* Load dir's model onto dev: model.onnx when present, else the layer format. */
int
model_load(device_t *dev, const char *dir, model_t **out, char **cause)
{
	return model_load_at(dev, dir, dir, 1, NULL, out, cause);
}

/* Load version `version` of model_dir from files_dir (its version directory, or model_dir itself). */
int
model_load_version(device_t *dev, const char *model_dir, const char *files_dir, int64_t version,
    const char *config_override, model_t **out, char **cause)
{
	if (version < 1)
		return error_set(cause, "%s: version %lld: versions are positive integers", model_dir, (long long)version);
	return model_load_at(dev, model_dir, files_dir, version, config_override, out, cause);
}

/* Free the model. */
void
model_free(model_t *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; m->consts_owned && m->graph != NULL && m->consts != NULL && i < m->graph->ntensors; i++)
		device_free(m->dev, m->consts[i]);
	free(m->consts);
	graph_plan_free(&m->mem);
	model_shapefn_free(m->shapefn);
	graph_free(m->graph);
	if (m->onnx != NULL)
		onnx_model_free(m->onnx);
	if (m->weights != NULL)
		st_close(m->weights);
	for (i = 0; i < m->nlabels; i++)
		free(m->labels[i]);
	free(m->labels);
	free(m->dir);
	free(m->version_dir);
	free(m->config_override);
	free(m);
}
