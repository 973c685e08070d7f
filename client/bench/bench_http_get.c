/* bench_http_get.c: the GETs both HTTP load generators make — a model's metadata as JSON and one counter of /metrics. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http_get.h"
#include "error.h"

/* GET path; on 200 the body in *root parsed as JSON (json_decref it); -1 with *cause. */
int
bench_http_get_json(const struct httpc_url *u, const char *path, json_t **root, char **cause)
{
	json_error_t jerr;
	char *body;
	size_t len;
	int status;

	*root = NULL;
	if (httpc_fetch(u, "GET", path, NULL, NULL, 0, 30, &status, &body, &len, cause) != 0)
		return error_prefix(cause, "GET %s", path);
	if (status != 200) {
		error_set(cause, "GET %s: status %d: %.200s", path, status, body);
		free(body);
		return -1;
	}
	*root = json_loadb(body, len, 0, &jerr);
	free(body);
	if (*root == NULL)
		return error_set(cause, "GET %s: bad JSON: %s", path, jerr.text);
	return 0;
}

/* GET /metrics; on 200 the exposition text in *text (free it); -1 with *cause. */
int
bench_http_get_metrics(const struct httpc_url *u, char **text, char **cause)
{
	size_t len;
	int status;

	if (httpc_fetch(u, "GET", "/metrics", NULL, NULL, 0, 30, &status, text, &len, cause) != 0)
		return error_prefix(cause, "GET /metrics");
	if (status != 200) {
		free(*text);
		*text = NULL;
		return error_set(cause, "GET /metrics: status %d", status);
	}
	return 0;
}

/* Find "NAME{model="M"} VALUE" at the start of a line of the exposition text; -1 when absent. */
int
bench_metric_value(const char *text, const char *name, const char *model, uint64_t *v)
{
	char key[512];
	const char *p;
	size_t klen;

	if (snprintf(key, sizeof key, "%s{model=\"%s\"} ", name, model) >= (int)sizeof key)
		return -1;
	klen = strlen(key);
	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, klen) == 0) {
			*v = strtoull(p + klen, NULL, 10);
			return 0;
		}
	return -1;
}
