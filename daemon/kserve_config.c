/* kserve_config.c: Triton's model configuration and statistics as JSON bodies. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "device.h"
#include "device_spec.h"
#include "error.h"
#include "graph.h"
#include "kserve.h"
#include "kserve_config.h"

/* A tensor's entry: name, "TYPE_" + datatype, dims without the batch (-1 variable); labels when given. */
static json_t *
kserve_config_tensor(const struct model_io *io, char *const *labels, size_t nlabels)
{
	json_t *t, *dims = json_array(), *names = NULL;
	char type[32];
	size_t i;

	for (i = 0; dims != NULL && i < (size_t)io->ndims; i++)
		if (json_array_append_new(dims, json_integer(io->dims[i])) != 0)
			dims = (json_decref(dims), NULL);
	/* Triton's DataType calls BYTES TYPE_STRING. */
	snprintf(type, sizeof type, "TYPE_%s", io->dtype == GRAPH_DT_STRING ? "STRING" : graph_dtype_name(io->dtype));
	t = json_pack("{s:s, s:s, s:o}", "name", io->name, "data_type", type, "dims", dims);
	if (t == NULL || nlabels == 0)
		return t;
	names = json_array();
	for (i = 0; names != NULL && i < nlabels; i++)
		if (json_array_append_new(names, json_string(labels[i])) != 0)
			names = (json_decref(names), NULL);
	if (names == NULL || json_object_set_new(t, "labels", names) != 0)
		t = (json_decref(t), NULL);
	return t;
}

/* dynamic_batching as Triton names its fields. */
static json_t *
kserve_config_batching(const struct model_batching *b)
{
	json_t *preferred = json_array();
	int i;

	for (i = 0; preferred != NULL && i < b->npreferred; i++)
		if (json_array_append_new(preferred, json_integer(b->preferred[i])) != 0)
			preferred = (json_decref(preferred), NULL);
	return json_pack("{s:o, s:I, s:{s:I, s:I}}", "preferred_batch_size", preferred,
	    "max_queue_delay_microseconds", (json_int_t)b->max_queue_delay_us,
	    "default_queue_policy", "max_queue_size", (json_int_t)b->max_queue_size,
	    "default_timeout_microseconds", (json_int_t)b->default_timeout_us);
}

/* Every input (outputs 0) or output (1; the labels go on the first) of m as an array of entries. */
static json_t *
kserve_config_tensors(const model_t *m, int outputs)
{
	const struct model_io *io = outputs ? m->outputs : m->inputs;
	int i, n = outputs ? m->noutputs : m->ninputs;
	json_t *a = json_array(), *t;

	for (i = 0; a != NULL && i < n; i++) {
		t = kserve_config_tensor(&io[i], outputs && i == 0 ? m->labels : NULL,
		    outputs && i == 0 ? m->nlabels : 0);
		/* Triton reports every input's format; image clients read it to lay out pixels. */
		if (t != NULL && !outputs && json_object_set_new(t, "format",
		    json_string(io[i].format[0] != '\0' ? io[i].format : "FORMAT_NONE")) != 0)
			t = (json_decref(t), NULL);
		if (t == NULL || json_array_append_new(a, t) != 0)
			a = (json_decref(a), NULL);
	}
	return a;
}

/* Append Triton's entry for count instances on the group's devices of one kind (cuda 1: GPUs) to a; none: 0. */
static int
kserve_config_group_kind(json_t *a, const struct model_instance_group *g, int cuda)
{
	json_t *gpus = json_array();
	int i, n = 0;

	for (i = 0; gpus != NULL && i < g->ndevices; i++) {
		if ((g->devices[i].kind == DEVICE_SPEC_CUDA) != cuda)
			continue;
		n++;
		if (cuda && json_array_append_new(gpus, json_integer(g->devices[i].ordinal)) != 0)
			gpus = (json_decref(gpus), NULL);
	}
	if (gpus == NULL)
		return -1;
	if (n == 0) {
		json_decref(gpus);
		return 0;
	}
	if (!cuda) {
		json_decref(gpus);
		return json_array_append_new(a, json_pack("{s:i, s:s}", "count", g->count, "kind", "KIND_CPU"));
	}
	return json_array_append_new(a, json_pack("{s:i, s:s, s:o}", "count", g->count, "kind", "KIND_GPU",
	    "gpus", gpus));
}

/*
 * Triton's instance_group: a group on the daemon's device as its kind, a
 * group naming devices as one entry per kind (Triton's groups have one).
 */
static json_t *
kserve_config_instances(const model_t *m)
{
	const char *kind = m->dev != NULL && device_is_gpu(m->dev) ? "KIND_GPU" : "KIND_CPU";
	const struct model_instance_group *g;
	json_t *a = json_array();
	int i, rc = 0;

	if (a != NULL && m->instances.ngroups == 0)
		rc = json_array_append_new(a, json_pack("{s:i, s:s}", "count", 1, "kind", kind));
	for (i = 0; a != NULL && rc == 0 && i < m->instances.ngroups; i++) {
		g = &m->instances.groups[i];
		if (g->ndevices == 0)
			rc = json_array_append_new(a, json_pack("{s:i, s:s}", "count", g->count, "kind", kind));
		else if ((rc = kserve_config_group_kind(a, g, 0)) == 0)
			rc = kserve_config_group_kind(a, g, 1);
	}
	if (rc != 0)
		a = (json_decref(a), NULL);
	return a;
}

/* The model's configuration. */
char *
kserve_encode_model_config(const model_t *m, size_t *len, char **cause)
{
	return kserve_json_body(json_pack("{s:s, s:s, s:i, s:o, s:o, s:o, s:o}",
	    "name", m->name, "platform", m->platform != NULL ? m->platform : KSERVE_PLATFORM,
	    "max_batch_size", m->max_batch_size,
	    "input", kserve_config_tensors(m, 0), "output", kserve_config_tensors(m, 1),
	    "dynamic_batching", kserve_config_batching(&m->batching),
	    "instance_group", kserve_config_instances(m)), len, cause);
}

/* Read a counter that other threads add to. */
static json_int_t
kserve_config_load(const uint64_t *v)
{
	return (json_int_t)__atomic_load_n(v, __ATOMIC_RELAXED);
}

/* {"count": count, "ns": us * 1000}. */
static json_t *
kserve_config_duration(json_int_t count, json_int_t us)
{
	return json_pack("{s:I, s:I}", "count", count, "ns", us * 1000);
}

/* inference_stats from the counters. */
static json_t *
kserve_config_inference_stats(const struct metrics_model *mm)
{
	json_int_t ok = kserve_config_load(&mm->success), failed = 0;
	json_int_t batches = kserve_config_load(&mm->execution_count);
	size_t i;

	for (i = 0; i < METRICS_REASON_COUNT; i++)
		failed += kserve_config_load(&mm->failure[i]);
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "success", kserve_config_duration(ok, kserve_config_load(&mm->request_us)),
	    "fail", kserve_config_duration(failed, 0),
	    "queue", kserve_config_duration(ok, kserve_config_load(&mm->queue_us)),
	    "compute_input", kserve_config_duration(batches, 0),
	    "compute_infer", kserve_config_duration(batches, kserve_config_load(&mm->compute_us)),
	    "compute_output", kserve_config_duration(batches, 0),
	    "cache_hit", kserve_config_duration(0, 0),
	    "cache_miss", kserve_config_duration(0, 0));
}

/* Triton's memory_usage: the version's total on its device, [{"type", "id", "byte_size"}]. */
static json_t *
kserve_config_memory_usage(const model_t *m)
{
	int id;
	const char *type = model_memory_device(m->dev, &id);

	return json_pack("[{s:s, s:i, s:I}]", "type", type, "id", id, "byte_size",
	    (json_int_t)model_memory_total(&m->memory));
}

/* inferd's breakdown: {"weights", "activations", "workspace", "graphs", "total"} in bytes. */
static json_t *
kserve_config_memory(const model_t *m)
{
	json_t *o = json_object();
	int k;

	for (k = 0; o != NULL && k < MODEL_MEMORY_KINDS; k++)
		if (json_object_set_new(o, model_memory_kind_name(k),
		    json_integer((json_int_t)model_memory_get(&m->memory, k))) != 0)
			o = (json_decref(o), NULL);
	if (o != NULL && json_object_set_new(o, "total", json_integer((json_int_t)model_memory_total(&m->memory))) != 0)
		o = (json_decref(o), NULL);
	return o;
}

/*
 * inferd's precision figure: the mode, the relative error against FP32
 * measured at load (null when not measured), and whether answers are
 * batch-invariant (model.json's "batch_invariant", where requests can share a batch).
 */
static json_t *
kserve_config_precision(const model_t *m)
{
	int p = m->precision;

	return json_pack("{s:s, s:o, s:b}", "mode", graph_precision_name(p),
	    "relative_error", m->precision_error >= 0 ? json_real(m->precision_error) : json_null(),
	    "batch_invariant", model_batch_invariant(m));
}

/* Order batch_stats entries by batch size. */
static int
kserve_config_size_order(const void *a, const void *b)
{
	const struct metrics_batch_size *x = a, *y = b;

	return (x->size > y->size) - (x->size < y->size);
}

/* Triton's batch_stats: one entry per batch size executed, ascending, with its compute_* counts. */
static json_t *
kserve_config_batch_stats(const struct metrics_model *mm)
{
	struct metrics_batch_size sizes[METRICS_BATCH_SIZES];
	json_t *a = json_array();
	json_int_t count;
	size_t i, n = 0;

	for (i = 0; i < METRICS_BATCH_SIZES; i++) {
		sizes[n].size = __atomic_load_n(&mm->batch_sizes[i].size, __ATOMIC_ACQUIRE);
		sizes[n].count = __atomic_load_n(&mm->batch_sizes[i].count, __ATOMIC_RELAXED);
		sizes[n].compute_us = __atomic_load_n(&mm->batch_sizes[i].compute_us, __ATOMIC_RELAXED);
		if (sizes[n].size != 0 && sizes[n].count != 0)
			n++;
	}
	qsort(sizes, n, sizeof sizes[0], kserve_config_size_order);
	for (i = 0; a != NULL && i < n; i++) {
		count = (json_int_t)sizes[i].count;
		if (json_array_append_new(a, json_pack("{s:I, s:o, s:o, s:o}",
		    "batch_size", (json_int_t)sizes[i].size,
		    "compute_input", kserve_config_duration(count, 0),
		    "compute_infer", kserve_config_duration(count, (json_int_t)sizes[i].compute_us),
		    "compute_output", kserve_config_duration(count, 0))) != 0)
			a = (json_decref(a), NULL);
	}
	return a;
}

/* One model_stats entry of m from its counters mm (NULL: none yet). */
static json_t *
kserve_config_model_stats(const model_t *m, const struct metrics_model *mm)
{
	static const struct metrics_model none;
	char version[24];

	if (mm == NULL)
		mm = &none;
	snprintf(version, sizeof version, "%lld", (long long)m->version);
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:{}, s:o, s:I, s:o, s:o, s:o}",
	    "name", m->name, "version", version,
	    "last_inference", kserve_config_load(&mm->last_inference_ms),
	    "inference_count", kserve_config_load(&mm->inference_count),
	    "execution_count", kserve_config_load(&mm->execution_count),
	    "inference_stats", kserve_config_inference_stats(mm),
	    "response_stats",
	    "batch_stats", kserve_config_batch_stats(mm),
	    "batch_stats_uncounted", kserve_config_load(&mm->batch_other),
	    "memory_usage", kserve_config_memory_usage(m), "memory", kserve_config_memory(m),
	    "precision", kserve_config_precision(m));
}

/* The model's statistics. */
char *
kserve_encode_model_stats(const model_t *m, const struct metrics_model *mm, size_t *len,
    char **cause)
{
	return kserve_json_body(json_pack("{s:[o]}", "model_stats", kserve_config_model_stats(m, mm)),
	    len, cause);
}

/* What kserve_config_add_stats collects into. */
struct kserve_config_all {
	struct metrics *metrics;
	json_t *list;		/* NULL once memory ran out */
};

/* repository_foreach: append ref's model's entry. */
static void
kserve_config_add_stats(const model_ref_t *ref, void *arg)
{
	struct kserve_config_all *all = arg;
	const model_t *m = ref->model;

	if (all->list != NULL && json_array_append_new(all->list,
	    kserve_config_model_stats(m, metrics_find(all->metrics, m->name))) != 0)
		all->list = (json_decref(all->list), NULL);
}

/* Every served version's statistics. */
char *
kserve_encode_all_stats(repository_t *repo, struct metrics *metrics, size_t *len, char **cause)
{
	struct kserve_config_all all = { .metrics = metrics, .list = json_array() };

	if (all.list != NULL)
		repository_foreach(repo, kserve_config_add_stats, &all);
	return kserve_json_body(all.list != NULL ? json_pack("{s:o}", "model_stats", all.list) : NULL,
	    len, cause);
}
