/*
 * test_repository.c: the live registry: a reference held across a swap
 * keeps the old version whole, ids stay stable across reloads and unloads,
 * pinned versions, lookups that miss, a failing load keeps what served, and
 * the index lists a version whose reload failed once, READY, with the failure,
 * and a stop asked while loads run abandons the loads after it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batcher.h"
#include "log.h"
#include "repository.h"
#include "test_util.h"

#define IN 4
#define OUT 3

static device_t *dev;
static float weights[OUT * IN], bias[OUT];

/* Write version v of model name (layer format: model.json in root/name, weights in root/name/v). */
static void
write_model(const char *root, const char *name, int v, float scale)
{
	char dir[512], vdir[512], json[512];
	float w[OUT * IN];
	struct test_tensor t[] = {
		{ "w", "F32", 2, { OUT, IN }, w, sizeof w },
		{ "b", "F32", 1, { OUT }, bias, sizeof bias },
	};
	int i;

	for (i = 0; i < OUT * IN; i++)
		w[i] = weights[i] * scale;
	snprintf(json, sizeof json, "{\"name\":\"%s\",\"max_batch_size\":4,"
	    "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"dims\":[4]}],"
	    "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\",\"dims\":[3]}],"
	    "\"layers\":[{\"name\":\"fc\",\"op\":\"linear\",\"weight\":\"w\",\"bias\":\"b\"}]}", name);
	snprintf(dir, sizeof dir, "%s/%s", root, name);
	snprintf(vdir, sizeof vdir, "%s/%s/%d", root, name, v);
	if ((mkdir(dir, 0700) != 0 && access(dir, F_OK) != 0) || (mkdir(vdir, 0700) != 0 && access(vdir, F_OK) != 0))
		abort();
	test_write_file(dir, "model.json", json, strlen(json));
	test_write_safetensors(vdir, "model.safetensors", t, 2);
}

/* Write version v of model "m". */
static void
write_version(const char *root, int v, float scale)
{
	write_model(root, "m", v, scale);
}

/* The version a lookup of (name, version) finds, or a negative miss code. */
static long long
found(repository_t *r, const char *name, int64_t version)
{
	model_ref_t *ref;
	long long v;
	int rc = repository_acquire(r, name, version, &ref, NULL);

	if (rc != REPOSITORY_FOUND)
		return rc;
	v = ref->version;
	repository_release(ref);
	return v;
}

/* The version id names now, or a negative miss code; *why gets the miss's message. */
static long long
found_id(repository_t *r, uint32_t id, char **why)
{
	model_ref_t *ref;
	long long v;
	int rc = repository_acquire_id(r, id, &ref, why);

	if (rc != REPOSITORY_FOUND)
		return rc;
	v = ref->version;
	repository_release(ref);
	return v;
}

/* A swap under a held reference, ids across reloads and unloads, pinned versions. */
static void
test_registry(void)
{
	struct repository_options o = { .dev = dev, .control = REPOSITORY_CONTROL_EXPLICIT, .inflight = 2 };
	char *root = test_mkdtemp(), *cause = NULL;
	repository_t *r = NULL;
	model_ref_t *held;
	model_t *old;
	uint32_t id, id1, again;
	batcher_t *b;

	write_version(root, 1, 1.0f);
	o.dir = root;
	CHECK(batcher_create(dev, NULL, 2, 0, &b, &cause) == 0, "%s", cause);
	o.batcher = b;
	CHECK(repository_create(&o, &r, &cause) == 0 && repository_load_startup(r, NULL, &cause) == 0, "%s", cause);
	CHECK(repository_name_count(r) == 0, "explicit mode loaded something at start");
	CHECK(repository_load_model(r, "m", NULL, &cause) == 0, "load: %s", cause);
	CHECK(repository_acquire(r, "m", 0, &held, &cause) == REPOSITORY_FOUND && held->version == 1, "%s", cause);
	CHECK(repository_id(r, "m", 0, &id, &cause) == 0, "%s", cause);
	old = held->model;
	/* New weights: the reload builds a new version beside the held one. */
	write_version(root, 1, 2.0f);
	CHECK(repository_load_model(r, "m", NULL, &cause) == 0, "reload: %s", cause);
	CHECK(found(r, "m", 0) == 1, "the reload did not publish version 1");
	CHECK(held->model == old && strcmp(held->model->name, "m") == 0 && held->queue != NULL,
	    "the held version changed under its reference");
	repository_release(held);
	/* Version 2 beside 1 (policy "all" by override): a pinned id for 1, the name's id for the newest. */
	write_version(root, 2, 3.0f);
	CHECK(repository_load_model(r, "m", "{\"version_policy\": {\"all\": {}}}", &cause) == 0, "%s", cause);
	CHECK(found(r, "m", 0) == 2 && found(r, "m", 1) == 1 && found(r, "m", 3) == REPOSITORY_NO_VERSION,
	    "version routing: newest %lld, 1: %lld, 3: %lld", found(r, "m", 0), found(r, "m", 1), found(r, "m", 3));
	CHECK(repository_id(r, "m", 1, &id1, &cause) == 0 && id1 != id, "%s", cause);
	CHECK(repository_id(r, "m", 1, &again, &cause) == 0 && again == id1, "a second id for version 1");
	CHECK(repository_id(r, "m", 7, &again, &cause) != 0 && strstr(cause, "version 7") != NULL, "pinned an unloaded version: %s", cause);
	free(cause);
	cause = NULL;
	CHECK(found_id(r, id, NULL) == 2 && found_id(r, id1, NULL) == 1, "ids: %lld %lld", found_id(r, id, NULL),
	    found_id(r, id1, NULL));
	/* A failing load keeps what served. */
	CHECK(repository_load_model(r, "nope", NULL, &cause) != 0 && strstr(cause, "nope") != NULL, "loaded a missing model");
	free(cause);
	cause = NULL;
	CHECK(repository_name_count(r) == 2, "a failed load of a missing model took an id");
	/* Unloaded: the ids stay and say so; a load brings them back. */
	CHECK(repository_unload_model(r, "m", &cause) == 0, "%s", cause);
	CHECK(found_id(r, id, &cause) == REPOSITORY_NOT_READY && strstr(cause, "model unloaded") != NULL,
	    "after the unload: %s", cause ? cause : "still found");
	free(cause);
	cause = NULL;
	CHECK(repository_load_model(r, "m", NULL, &cause) == 0 && found_id(r, id, NULL) == 2 &&
	    repository_id(r, "m", 0, &again, &cause) == 0 && again == id, "the name's id changed across the unload");
	CHECK(found_id(r, id1, NULL) == REPOSITORY_NO_VERSION, "version 1 (policy latest 1) still found");
	CHECK(found_id(r, 1000, &cause) == REPOSITORY_UNKNOWN, "an id never given answered");
	free(cause);
	repository_free(r);
	batcher_free(b);
	test_rmtree(root);
	free(root);
}

/* How often needle occurs in s. */
static int
count_of(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)) != NULL; s += strlen(needle))
		n++;
	return n;
}

/* A reload that fails (a bad config override, then a model-wide failure) leaves one READY row per served version. */
static void
test_failed_reload_index(void)
{
	struct repository_options o = { .dev = dev, .control = REPOSITORY_CONTROL_EXPLICIT, .inflight = 2 };
	char *root = test_mkdtemp(), *cause = NULL, *index;
	repository_t *r = NULL;
	batcher_t *b;
	size_t len;

	write_version(root, 1, 1.0f);
	o.dir = root;
	CHECK(batcher_create(dev, NULL, 2, 0, &b, &cause) == 0, "%s", cause);
	o.batcher = b;
	CHECK(repository_create(&o, &r, &cause) == 0 && repository_load_model(r, "m", NULL, &cause) == 0, "%s", cause);
	CHECK(repository_load_model(r, "m", "{\"max_batch_size\": \"x\"}", &cause) != 0 &&
	    strstr(cause, "max_batch_size") != NULL, "a bad override loaded: %s", cause ? cause : "no error");
	free(cause);
	cause = NULL;
	CHECK(found(r, "m", 0) == 1, "version 1 stopped serving after a failed reload");
	index = repository_index_json(r, &len, &cause);
	CHECK(index != NULL, "%s", cause);
	CHECK(index != NULL && count_of(index, "\"name\":\"m\"") == 1 &&
	    count_of(index, "\"name\":\"m\",\"version\":\"1\",\"state\":\"READY\",\"reason\":\"reload failed") == 1 &&
	    strstr(index, "max_batch_size") != NULL, "index after a failed reload: %s", index);
	free(index);
	/* The model as a whole fails (model.json unreadable): still one READY row, with that reason. */
	test_write_file(root, "m/model.json", "{", 1);
	CHECK(repository_load_model(r, "m", NULL, &cause) != 0, "a broken model.json loaded");
	free(cause);
	cause = NULL;
	index = repository_index_json(r, &len, &cause);
	CHECK(index != NULL && count_of(index, "\"name\":\"m\"") == 1 &&
	    count_of(index, "\"state\":\"READY\",\"reason\":\"reload failed") == 1 && strstr(index, "model.json") != NULL,
	    "index after a failed model-wide reload: %s", index ? index : cause);
	free(index);
	/* A good reload clears the failure. */
	write_version(root, 1, 2.0f);
	CHECK(repository_load_model(r, "m", NULL, &cause) == 0, "%s", cause);
	index = repository_index_json(r, &len, &cause);
	CHECK(index != NULL && strcmp(index, "[{\"name\":\"m\",\"version\":\"1\",\"state\":\"READY\"}]") == 0,
	    "index after a good reload: %s", index ? index : cause);
	free(index);
	repository_free(r);
	batcher_free(b);
	test_rmtree(root);
	free(root);
}

/* The stop check of test_stop_loads: a stop is asked once any version serves. */
static int
stop_once_served(void *arg)
{
	repository_t *r = arg;
	size_t loaded, failed;

	repository_counts(r, &loaded, &failed);
	return loaded > 0;
}

/* A stop asked while loads run: the versions and models after it are not loaded; what served serves on. */
static void
test_stop_loads(void)
{
	struct repository_options o = { .dev = dev, .control = REPOSITORY_CONTROL_EXPLICIT, .inflight = 2 };
	char *root = test_mkdtemp(), *cause = NULL;
	repository_t *r = NULL;
	batcher_t *b;
	size_t loaded, failed;
	int v;

	for (v = 1; v <= 3; v++)
		write_version(root, v, (float)v);
	write_model(root, "a", 1, 1.0f);
	write_model(root, "b", 1, 1.0f);
	write_model(root, "c", 1, 1.0f);
	o.dir = root;
	CHECK(batcher_create(dev, NULL, 2, 0, &b, &cause) == 0, "%s", cause);
	o.batcher = b;
	/* Explicit mode: one model of three versions, newest first; the stop comes once version 3 serves. */
	CHECK(repository_create(&o, &r, &cause) == 0, "%s", cause);
	repository_set_stop_check(r, stop_once_served, r);
	CHECK(repository_load_model(r, "m", "{\"version_policy\": {\"all\": {}}}", &cause) != 0 &&
	    strstr(cause, "the daemon is stopping") != NULL, "the load went on after the stop: %s", cause ? cause : "no error");
	free(cause);
	cause = NULL;
	CHECK(found(r, "m", 3) == 3 && found(r, "m", 2) == REPOSITORY_NO_VERSION && found(r, "m", 1) == REPOSITORY_NO_VERSION,
	    "versions after the stop: 3 %lld, 2 %lld, 1 %lld", found(r, "m", 3), found(r, "m", 2), found(r, "m", 1));
	/* From repository_stop_loads on, every load is abandoned and what serves serves on. */
	repository_set_stop_check(r, NULL, NULL);
	repository_stop_loads(r);
	CHECK(repository_stopping(r), "repository_stop_loads did not stop loads");
	write_version(root, 3, 5.0f);
	CHECK(repository_load_model(r, "m", NULL, &cause) != 0 && strstr(cause, "stopping") != NULL, "a load after the stop: %s",
	    cause ? cause : "loaded");
	free(cause);
	cause = NULL;
	CHECK(found(r, "m", 0) == 3, "version 3 stopped serving after an abandoned reload");
	repository_free(r);
	/* None mode's start-up load of four models: the stop comes once the first ('a') serves. */
	o.control = REPOSITORY_CONTROL_NONE;
	CHECK(repository_create(&o, &r, &cause) == 0, "%s", cause);
	repository_set_stop_check(r, stop_once_served, r);
	CHECK(repository_load_startup(r, NULL, &cause) == 0, "%s", cause);
	repository_counts(r, &loaded, &failed);
	/* The models the start-up meant to load were listed (LOADING) from its start: known, never loaded. */
	CHECK(loaded == 1 && found(r, "a", 0) == 1 && found(r, "b", 0) == REPOSITORY_NOT_READY &&
	    found(r, "m", 0) == REPOSITORY_NOT_READY, "after a stop in the start-up load: %zu loaded (a %lld, b %lld, m %lld)",
	    loaded, found(r, "a", 0), found(r, "b", 0), found(r, "m", 0));
	repository_free(r);
	batcher_free(b);
	test_rmtree(root);
	free(root);
}

int
main(void)
{
	uint64_t rng = 7;

	dev = test_open_device();
	log_set_level("error");
	test_fill_random(weights, OUT * IN, &rng, -0.5f, 0.5f);
	test_fill_random(bias, OUT, &rng, -0.5f, 0.5f);
	test_registry();
	test_failed_reload_index();
	test_stop_loads();
	device_close(dev);
	return test_finish("test_repository");
}
