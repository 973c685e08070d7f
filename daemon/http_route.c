/* http_route.c: the HTTP front end's routing table and dispatch, and the answers that are not inference (health, metadata, config, stats, metrics, repository control, shared memory). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "alloc.h"
#include "device_set.h"
#include "http_internal.h"
#include "http_shm.h"
#include "kserve.h"
#include "kserve_config.h"
#include "metrics.h"
#include "metrics_gpu.h"
#include "repository.h"

/* A URL's version: a positive decimal integer without leading zeros. */
static int
http_parse_version(const char *v, size_t n, int64_t *out)
{
	int64_t x = 0;
	size_t i;

	if (n == 0 || n > 18 || v[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Copy the model name that starts rest (up to the next '/') into req->model; its length (0: none). */
static size_t
http_route_name(struct http_request *req, const char *rest)
{
	size_t n = strcspn(rest, "/");

	if (n >= sizeof req->model)
		req->flags |= HTTP_F_NAME_TOO_LONG;
	else if (n > 0)
		memcpy(req->model, rest, n);
	return n;
}

/* Parse the rest of /v2/repository/models/{m}/load|unload. */
static const char *
http_route_repository(struct http_request *req, const char *rest)
{
	size_t n = http_route_name(req, rest);

	if (n == 0)
		return NULL;
	if (strcmp(rest + n, "/load") == 0)
		return req->route = ROUTE_REPO_LOAD, HTTP_ALLOW_POST;
	if (strcmp(rest + n, "/unload") == 0)
		return req->route = ROUTE_REPO_UNLOAD, HTTP_ALLOW_POST;
	return NULL;
}

/* Parse the rest of /v2/models/{m}...; NULL when the path names nothing. */
static const char *
http_route_model(struct http_request *req, const char *rest)
{
	size_t n = http_route_name(req, rest);
	const char *tail = rest + n, *v;

	if (n == 0)
		return NULL;
	if (strncmp(tail, "/versions/", 10) == 0) {
		v = tail + 10;
		n = strcspn(v, "/");
		if (n == 0)
			return NULL;
		if (http_parse_version(v, n, &req->version) != 0)
			req->flags |= HTTP_F_BAD_VERSION;
		tail = v + n;
	}
	if (*tail == '\0')
		return req->route = ROUTE_MODEL, HTTP_ALLOW_GET;
	if (strcmp(tail, "/ready") == 0)
		return req->route = ROUTE_MODEL_READY, HTTP_ALLOW_GET;
	if (strcmp(tail, "/config") == 0)
		return req->route = ROUTE_MODEL_CONFIG, HTTP_ALLOW_GET;
	if (strcmp(tail, "/stats") == 0)
		return req->route = ROUTE_MODEL_STATS, HTTP_ALLOW_GET;
	if (strcmp(tail, "/infer") == 0)
		return req->route = ROUTE_INFER, HTTP_ALLOW_POST;
	return NULL;
}

/* Route url; returns the methods its path takes, NULL for an unknown path. */
const char *
http_route(struct http_request *req, const char *url)
{
	static const struct {
		const char *path;
		enum http_route route;
		const char *allow;
	} fixed[] = {
		{ "/v2/health/live", ROUTE_LIVE, HTTP_ALLOW_GET },
		{ "/v2/health/ready", ROUTE_READY, HTTP_ALLOW_GET },
		{ "/v2", ROUTE_SERVER, HTTP_ALLOW_GET },
		{ "/v2/", ROUTE_SERVER, HTTP_ALLOW_GET },
		{ "/v2/models", ROUTE_INDEX, HTTP_ALLOW_GET },
		{ "/v2/models/stats", ROUTE_ALL_STATS, HTTP_ALLOW_GET },
		{ "/v2/repository/index", ROUTE_INDEX, HTTP_ALLOW_POST },
		{ "/infer", ROUTE_INFER_SHORT, HTTP_ALLOW_POST },
		{ "/metrics", ROUTE_METRICS, HTTP_ALLOW_GET },
	};
	size_t i;

	for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		if (strcmp(url, fixed[i].path) == 0) {
			req->route = fixed[i].route;
			return fixed[i].allow;
		}
	}
	if (strncmp(url, "/v2/models/", 11) == 0)
		return http_route_model(req, url + 11);
	if (strncmp(url, "/v2/repository/models/", 22) == 0)
		return http_route_repository(req, url + 22);
	if (http_shm_path(url))
		return req->route = ROUTE_SHM, HTTP_ALLOW_SHM;
	return NULL;
}

/* Whether method is one of allow's. */
int
http_method_allowed(const char *allow, const char *method)
{
	if (strcmp(allow, HTTP_ALLOW_POST) == 0)
		return strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (strcmp(allow, HTTP_ALLOW_SHM) == 0 && strcmp(method, MHD_HTTP_METHOD_POST) == 0)
		return 1;
	return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* GET /v2/models/{m}, .../ready, .../config and .../stats; a model that failed to load is 503 for metadata, 400 for ready (Triton's "not ready"). */
static enum MHD_Result
http_model_get(struct http_request *req)
{
	enum MHD_Result ret = MHD_NO;
	const model_t *m;
	size_t len = 0;
	char *body, *cause = NULL;

	if (req->route == ROUTE_MODEL_READY) {
		if (http_url_model(req, MHD_HTTP_BAD_REQUEST, &ret) == NULL)
			return ret;
		body = kserve_encode_flag("ready", 1, &len, &cause);
		return http_json(req, body, len, cause);
	}
	if ((m = http_url_model(req, MHD_HTTP_SERVICE_UNAVAILABLE, &ret)) == NULL)
		return ret;
	if (req->route == ROUTE_MODEL_CONFIG)
		body = kserve_encode_model_config(m, &len, &cause);
	else if (req->route == ROUTE_MODEL_STATS)
		body = kserve_encode_model_stats(m, metrics_find(req->srv->ctx.metrics, m->name),
		    &len, &cause);
	else
		body = kserve_encode_model_metadata(m, &len, &cause);
	return http_json(req, body, len, cause);
}

/* The GPU gauges of the GPUs models run on (malloc'ed; "" without NVML), NULL when out of memory. */
static char *
http_metrics_gpu(const struct door_context *ctx)
{
	struct metrics_gpu_id ids[METRICS_GPU_MAX];
	device_t *devs[DEVICE_SET_MAX];
	struct device_info info;
	size_t n = 0;
	int i, ndevs;

	if (ctx->gpu == NULL || ctx->devices == NULL)
		return xstrdup("");
	ndevs = device_set_list(ctx->devices, devs, DEVICE_SET_MAX);
	for (i = 0; i < ndevs && n < METRICS_GPU_MAX; i++) {
		device_info(devs[i], &info);
		if (!info.gpu)
			continue;
		ids[n].ordinal = info.ordinal;
		snprintf(ids[n].uuid, sizeof ids[n].uuid, "%s", info.uuid);
		n++;
	}
	return metrics_gpu_text(ctx->gpu, ids, n);
}

/* GET /metrics in Prometheus text format. */
static enum MHD_Result
http_metrics(struct http_request *req)
{
	const struct door_context *ctx = &req->srv->ctx;
	struct device_info info;
	char *text, *more, *gpu, *all = NULL;

	device_info(ctx->dev, &info);
	text = metrics_render(ctx->metrics, info.allocations, info.conv_plans_idle);
	more = text != NULL ? repository_metrics_text(ctx->repo) : NULL;
	gpu = more != NULL ? http_metrics_gpu(ctx) : NULL;

	/* Part of the metrics would be a wrong answer: without all of them, a 500. */
	if (gpu != NULL)
		(void)xasprintf(&all, "%s%s%s", text, more, gpu);
	free(text);
	free(more);
	free(gpu);
	text = all;

	return http_reply(req, text ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR, text,
	    text ? strlen(text) : 0, text ? HTTP_TYPE_METRICS : HTTP_TYPE_JSON, NULL, NULL);
}

/* /v2/systemsharedmemory and /v2/cudasharedmemory: http_shm.c answers. */
static enum MHD_Result
http_shm(struct http_request *req)
{
	http_server_t *srv = req->srv;
	struct http_shm_reply r;

	http_shm_handle(srv->shm, srv->shm_enabled, req->post, req->url, req->body, req->len, &r);
	http_drop_body(req);
	return http_reply(req, r.status, r.body, r.len, HTTP_TYPE_JSON,
	    r.allow != NULL ? MHD_HTTP_HEADER_ALLOW : NULL, r.allow);
}

/* The mode refuses explicit load/unload: answered (403 in none mode, 400 in poll mode, as Triton), 1. */
static int
http_control_refused(struct http_request *req, enum MHD_Result *ret)
{
	enum repository_control mode = repository_control_mode(req->srv->ctx.repo);

	if (mode == REPOSITORY_CONTROL_EXPLICIT)
		return 0;
	*ret = http_error(req, mode == REPOSITORY_CONTROL_NONE ? MHD_HTTP_FORBIDDEN : MHD_HTTP_BAD_REQUEST,
	    "explicit model load / unload is not allowed: model_control_mode is %s "
	    "(set model_control_mode = explicit)", repository_control_name(mode));
	return 1;
}

/* POST /v2/repository/models/{m}/load (optional {"parameters":{"config":"<json>"}}) and .../unload. */
static enum MHD_Result
http_repository_control(struct http_request *req)
{
	repository_t *repo = req->srv->ctx.repo;
	enum MHD_Result ret;
	char *config = NULL, *cause = NULL;
	int rc;

	if (http_control_refused(req, &ret))
		return ret;
	if (req->flags & HTTP_F_NAME_TOO_LONG)
		return http_error(req, MHD_HTTP_BAD_REQUEST, "model name longer than %d bytes", MODEL_NAME_MAX - 1);
	if (req->route == ROUTE_REPO_LOAD &&
	    kserve_decode_load_request(req->body, req->len, &config, &cause) != 0) {
		http_drop_body(req);
		ret = http_error(req, MHD_HTTP_BAD_REQUEST, "%s", cause);
		free(cause);
		return ret;
	}
	http_drop_body(req);
	if (req->route == ROUTE_REPO_LOAD)
		rc = repository_load_model(repo, req->model, config, &cause);
	else
		rc = repository_unload_model(repo, req->model, &cause);
	free(config);
	if (rc != 0) {
		ret = http_error(req, MHD_HTTP_BAD_REQUEST, "failed to %s '%s': %s",
		    req->route == ROUTE_REPO_LOAD ? "load" : "unload", req->model, cause ? cause : "out of memory");
		free(cause);
		return ret;
	}
	return http_json(req, xstrdup("{}"), 2, NULL);
}

/* The whole request is in: answer it, or start its inference. */
enum MHD_Result
http_dispatch(struct http_request *req)
{
	http_server_t *srv = req->srv;
	size_t len = 0;
	char *body, *cause = NULL;

	http_guard_request_whole(req->gc);
	if (http_decode_body(req) != 0)
		return MHD_YES;		/* answered */
	switch (req->route) {
	case ROUTE_LIVE:
		body = kserve_encode_flag("live", 1, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_READY:
		if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE))
			return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server is shutting down");
		if (!repository_server_ready(srv->ctx.repo, srv->ctx.config->strict_readiness))
			return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "server not ready: %s",
			    !repository_server_ready(srv->ctx.repo, 0) ? "the start-up loads are still running" :
			    "a model failed to load at start-up (strict_readiness = yes)");
		body = kserve_encode_flag("ready", 1, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_SERVER:
		body = kserve_encode_server_metadata(&(struct kserve_server_info){ srv->shm_enabled,
		    srv->shm_enabled && device_is_gpu(srv->ctx.dev) }, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_INDEX:
		body = repository_index_json(srv->ctx.repo, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_REPO_LOAD:
	case ROUTE_REPO_UNLOAD:
		return http_repository_control(req);
	case ROUTE_MODEL:
	case ROUTE_MODEL_READY:
	case ROUTE_MODEL_CONFIG:
	case ROUTE_MODEL_STATS:
		return http_model_get(req);
	case ROUTE_ALL_STATS:
		body = kserve_encode_all_stats(srv->ctx.repo, srv->ctx.metrics, &len, &cause);
		return http_json(req, body, len, cause);
	case ROUTE_METRICS:
		return http_metrics(req);
	case ROUTE_SHM:
		return http_shm(req);
	case ROUTE_INFER:
	case ROUTE_INFER_SHORT:
		return http_infer(req);
	}
	return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "unrouted request");
}
