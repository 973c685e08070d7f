/* repository_report.c: the registry as Triton's repository index and as Prometheus lines. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "error.h"
#include "repository_impl.h"
#include "repository_scan.h"
#include "text_buf.h"

/* A JSON string of s; bytes that are not UTF-8 become '?' (a reason may quote a file's bytes). */
static json_t *
repository_json_string(const char *s)
{
	json_t *v = json_string(s);
	char *t;
	size_t i;

	if (v != NULL || (t = xstrdup(s)) == NULL)
		return v;
	for (i = 0; t[i] != '\0'; i++)
		if ((unsigned char)t[i] >= 0x80)
			t[i] = '?';
	v = json_string(t);
	free(t);
	return v;
}

/* Append {"name","version","state"[,"reason"]} to a; version 0 and NULL state are left out. */
static int
repository_index_add(json_t *a, const char *name, int64_t version, const char *state, const char *reason)
{
	json_t *o = json_object();
	char v[24], *served = NULL;
	int rc;

	if (o == NULL || json_array_append_new(a, o) != 0)
		return -1;
	if (json_object_set_new(o, "name", repository_json_string(name)) != 0)
		return -1;
	snprintf(v, sizeof v, "%" PRId64, version);
	if (version != 0 && json_object_set_new(o, "version", json_string(v)) != 0)
		return -1;
	if (state != NULL && json_object_set_new(o, "state", json_string(state)) != 0)
		return -1;
	if (reason == NULL)
		return 0;
	/* A READY row's reason is a reload that failed: say what serves meanwhile. */
	if (state != NULL && strcmp(state, "READY") == 0 &&
	    xasprintf(&served, "reload failed; the version loaded before serves on: %s", reason) == -1)
		return -1;
	rc = json_object_set_new(o, "reason", repository_json_string(served != NULL ? served : reason));
	free(served);
	return rc != 0 ? -1 : 0;
}

/*
 * One model's rows (lock held): each published version once, READY; a failed
 * reload of it (of that version, or of the model as a whole) leaves it
 * serving, so its row stays READY and carries the failure as its reason.  A
 * failed version that serves nothing gets its own UNAVAILABLE row; a model
 * without versions one row with its state.
 */
static int
repository_index_model(json_t *a, const struct repository_model *m)
{
	const model_ref_t *ref;
	int rc = 0, told = 0, mine;

	for (ref = m->versions; ref != NULL && rc == 0; ref = ref->next) {
		mine = m->reason != NULL && (m->failed_version == 0 || m->failed_version == ref->version);
		told |= mine;
		rc = repository_index_add(a, m->name, ref->version, "READY", mine ? m->reason : NULL);
	}
	if (rc == 0 && m->reason != NULL && !told)
		rc = repository_index_add(a, m->name, m->failed_version, "UNAVAILABLE", m->reason);
	else if (rc == 0 && m->versions == NULL)
		rc = repository_index_add(a, m->name, 0, repository_state_name(m->state),
		    m->state == REPOSITORY_UNAVAILABLE ? "unloaded" : NULL);
	return rc;
}

/* Models on disk the registry never saw (explicit mode): a row with the name only, as Triton lists them. */
static int
repository_index_disk(repository_t *r, json_t *a)
{
	struct repository_entry *e = NULL;
	size_t n = 0, i;
	int rc = 0;

	if (repository_scan(r->dir, &e, &n, NULL) != 0)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < n && rc == 0; i++)
		if (repository_model_find(r, e[i].name) == NULL)
			rc = repository_index_add(a, e[i].name, 0, NULL, NULL);
	pthread_mutex_unlock(&r->lock);
	repository_scan_free(e, n);
	return rc;
}

/* Triton's repository index. */
char *
repository_index_json(repository_t *r, size_t *len, char **cause)
{
	json_t *a = json_array();
	char *s = NULL;
	size_t i;
	int rc = a == NULL ? -1 : 0;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmodels && rc == 0; i++)
		rc = repository_index_model(a, r->models[i]);
	pthread_mutex_unlock(&r->lock);
	if (rc == 0)
		rc = repository_index_disk(r, a);
	if (rc == 0)
		s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	if (s == NULL)
		return error_set(cause, "out of memory"), NULL;
	*len = strlen(s);
	return s;
}

/* Device seconds of all the version's instances. */
static double
repository_busy_seconds(const model_ref_t *ref)
{
	double s = 0;
	int i;

	for (i = 0; i < ref->nqueues; i++)
		s += batcher_queue_busy_seconds(ref->queues[i]);
	return s;
}

/* The state lines of one model: one per published version, or the model's own state (lock held). */
static void
repository_metrics_state(struct text_buf *t, const struct repository_model *m)
{
	const model_ref_t *ref;

	for (ref = m->versions; ref != NULL; ref = ref->next)
		text_buf_printf(t, "inferd_model_state{model=\"%s\",version=\"%" PRId64 "\",state=\"READY\"} 1\n",
		    m->name, ref->version);
	if (m->versions == NULL)
		text_buf_printf(t, "inferd_model_state{model=\"%s\",version=\"\",state=\"%s\"} 1\n",
		    m->name, repository_state_name(m->state));
}

/* Each instance's busy seconds, labelled with its index and device (lock held). */
static void
repository_metrics_instances(struct text_buf *t, repository_t *r)
{
	const model_ref_t *ref;
	const char *name;
	size_t i;
	int k;

	text_buf_printf(t, "# HELP inferd_model_instance_busy_seconds Seconds the device spent on one instance's "
	    "batches.\n# TYPE inferd_model_instance_busy_seconds counter\n");
	for (i = 0; i < r->nmodels; i++)
		for (ref = r->models[i]->versions; ref != NULL; ref = ref->next)
			for (k = 0; k < ref->nqueues; k++) {
				name = device_name(batcher_queue_device(ref->queues[k]));
				/* "cuda:0 (NVIDIA H100 ...)" is labelled cuda:0. */
				text_buf_printf(t, "inferd_model_instance_busy_seconds{model=\"%s\",version=\"%" PRId64
				    "\",instance=\"%d\",device=\"%.*s\"} %.6f\n", r->models[i]->name, ref->version, k,
				    (int)strcspn(name, " "), name, batcher_queue_busy_seconds(ref->queues[k]));
			}
}

/* The queue depth and in-flight batch gauges of every loaded version, its instances summed (lock held). */
static void
repository_metrics_depth(struct text_buf *t, repository_t *r)
{
	size_t i, queued, inflight, sum_q, sum_f;
	const model_ref_t *ref;
	int k, pass;

	for (pass = 0; pass < 2; pass++) {
		text_buf_printf(t, pass == 0 ? "# HELP inferd_queue_depth Requests waiting in the model's queue "
		    "for a batch.\n# TYPE inferd_queue_depth gauge\n" : "# HELP inferd_inflight_batches Batches of "
		    "the model being run (copy in, compute, copy out).\n# TYPE inferd_inflight_batches gauge\n");
		for (i = 0; i < r->nmodels; i++)
			for (ref = r->models[i]->versions; ref != NULL; ref = ref->next) {
				sum_q = sum_f = 0;
				for (k = 0; k < ref->nqueues; k++) {
					batcher_queue_depth(ref->queues[k], &queued, &inflight);
					sum_q += queued;
					sum_f += inflight;
				}
				text_buf_printf(t, "%s{model=\"%s\",version=\"%" PRId64 "\"} %zu\n", pass == 0 ?
				    "inferd_queue_depth" : "inferd_inflight_batches", r->models[i]->name, ref->version,
				    pass == 0 ? sum_q : sum_f);
			}
	}
}

/* The memory lines of every loaded version: one per kind (lock held). */
static void
repository_metrics_memory(struct text_buf *t, repository_t *r)
{
	const model_ref_t *ref;
	size_t i;
	int k;

	text_buf_printf(t, "# HELP inferd_model_memory_bytes Device memory the loaded version holds, by kind "
	    "(counted at load).\n# TYPE inferd_model_memory_bytes gauge\n");
	for (i = 0; i < r->nmodels; i++)
		for (ref = r->models[i]->versions; ref != NULL; ref = ref->next)
			for (k = 0; k < MODEL_MEMORY_KINDS; k++)
				text_buf_printf(t, "inferd_model_memory_bytes{model=\"%s\",version=\"%" PRId64
				    "\",kind=\"%s\"} %" PRIu64 "\n", r->models[i]->name, ref->version,
				    model_memory_kind_name(k), model_memory_get(&ref->model->memory, k));
}

/* Prometheus lines per model and version. */
char *
repository_metrics_text(repository_t *r)
{
	struct text_buf t;
	const model_ref_t *ref;
	size_t i;

	if (text_buf_init(&t, 4096) != 0)
		return NULL;
	pthread_mutex_lock(&r->lock);
	text_buf_printf(&t, "# HELP inferd_model_state Load state of each model version (1 in its state; READY per loaded version).\n"
	    "# TYPE inferd_model_state gauge\n");
	for (i = 0; i < r->nmodels; i++)
		repository_metrics_state(&t, r->models[i]);
	text_buf_printf(&t, "# HELP inferd_model_load_seconds Seconds the loaded version took to load (files, device, graphs, warm-up).\n"
	    "# TYPE inferd_model_load_seconds gauge\n");
	for (i = 0; i < r->nmodels; i++)
		for (ref = r->models[i]->versions; ref != NULL; ref = ref->next)
			text_buf_printf(&t, "inferd_model_load_seconds{model=\"%s\",version=\"%" PRId64 "\"} %.6f\n",
			    r->models[i]->name, ref->version, ref->load_seconds);
	text_buf_printf(&t, "# HELP inferd_model_busy_seconds Seconds the device spent on the loaded version's batches.\n"
	    "# TYPE inferd_model_busy_seconds counter\n");
	for (i = 0; i < r->nmodels; i++)
		for (ref = r->models[i]->versions; ref != NULL; ref = ref->next)
			text_buf_printf(&t, "inferd_model_busy_seconds{model=\"%s\",version=\"%" PRId64 "\"} %.6f\n",
			    r->models[i]->name, ref->version, repository_busy_seconds(ref));
	repository_metrics_instances(&t, r);
	repository_metrics_depth(&t, r);
	repository_metrics_memory(&t, r);
	pthread_mutex_unlock(&r->lock);
	return text_buf_finish(&t);
}
