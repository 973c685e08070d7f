/* metrics_gpu.c: NVML's readings of the daemon's GPUs (utilisation, memory, power, temperature) as Prometheus gauges. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "error.h"
#include "log.h"
#include "metrics_gpu.h"
#include "text_buf.h"

/*
 * NVML's types, declared here rather than taken from nvml.h: the driver
 * ships the library but not the header, and the toolkit does not install it
 * everywhere.  They are NVML's stable ABI as nvml.h declares it:
 * nvmlReturn_t an enum (0: NVML_SUCCESS), nvmlDevice_t an opaque pointer,
 * nvmlUtilization_t and nvmlMemory_t laid out as below, and
 * NVML_TEMPERATURE_GPU the sensor 0.
 */
typedef int nvml_return_t;
typedef struct nvml_device *nvml_device_t;
struct nvml_utilization {
	unsigned int gpu;		/* percent of the last sample period a kernel ran */
	unsigned int memory;
};
struct nvml_memory {
	unsigned long long total, free, used;
};
#define NVML_SUCCESS 0
#define NVML_TEMPERATURE_GPU 0

/* The entry points used; power and temperature may be missing (their gauges are then left out). */
struct nvml_api {
	nvml_return_t (*init)(void);
	nvml_return_t (*shutdown)(void);
	const char *(*error_string)(nvml_return_t);
	nvml_return_t (*by_uuid)(const char *uuid, nvml_device_t *dev);
	nvml_return_t (*utilization)(nvml_device_t dev, struct nvml_utilization *u);
	nvml_return_t (*memory)(nvml_device_t dev, struct nvml_memory *m);
	nvml_return_t (*power)(nvml_device_t dev, unsigned int *milliwatts);
	nvml_return_t (*temperature)(nvml_device_t dev, int sensor, unsigned int *celsius);
};

/* What one sample reads; the bit of each in gpu_sample.have and .warned. */
enum gpu_reading {
	GPU_HANDLE,
	GPU_UTIL,
	GPU_MEMORY,
	GPU_POWER,
	GPU_TEMPERATURE,
};

/* One GPU's last sample. */
struct gpu_sample {
	char uuid[80];
	uint64_t at_us;			/* when sampled (clock_now_us); 0: never */
	unsigned have;			/* readings this sample holds */
	unsigned warned;		/* readings whose failure was logged already */
	double util_ratio;
	unsigned long long mem_used, mem_total;
	double watts, celsius;
};

struct metrics_gpu {
	void *lib;
	struct nvml_api api;
	pthread_mutex_t lock;		/* samples */
	struct gpu_sample samples[METRICS_GPU_MAX];
	size_t nsamples;
};

/* The address of symbol name in lib (NULL when missing); a void pointer for the caller to store as a function. */
static void *
gpu_sym(void *lib, const char *name)
{
	(void)dlerror();
	return dlsym(lib, name);
}

/* Resolve the entry points; -1 with *why naming the first required one missing. */
static int
gpu_resolve(struct metrics_gpu *g, const char *lib, char **why)
{
	static const char *const required[] = {
		"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlDeviceGetHandleByUUID",
		"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo",
	};
	void *p[6];
	size_t i;

	for (i = 0; i < 6; i++)
		if ((p[i] = gpu_sym(g->lib, required[i])) == NULL)
			return error_set(why, "%s has no %s (not NVML, or too old a driver)", lib, required[i]);
	/* POSIX guarantees a function's address round-trips through dlsym's void pointer. */
	memcpy(&g->api.init, &p[0], sizeof p[0]);
	memcpy(&g->api.shutdown, &p[1], sizeof p[1]);
	memcpy(&g->api.error_string, &p[2], sizeof p[2]);
	memcpy(&g->api.by_uuid, &p[3], sizeof p[3]);
	memcpy(&g->api.utilization, &p[4], sizeof p[4]);
	memcpy(&g->api.memory, &p[5], sizeof p[5]);
	if ((p[0] = gpu_sym(g->lib, "nvmlDeviceGetPowerUsage")) != NULL)
		memcpy(&g->api.power, &p[0], sizeof p[0]);
	if ((p[0] = gpu_sym(g->lib, "nvmlDeviceGetTemperature")) != NULL)
		memcpy(&g->api.temperature, &p[0], sizeof p[0]);
	return 0;
}

/* Load and initialise NVML. */
int
metrics_gpu_open(const char *lib, metrics_gpu_t **out, char **why)
{
	struct metrics_gpu *g;
	nvml_return_t r;
	int rc;

	*out = NULL;
	if (lib == NULL || *lib == '\0')
		return error_set(why, "nvml_library is empty");
	if ((g = xcalloc(1, sizeof *g)) == NULL)
		return error_set(why, "out of memory");
	if ((g->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		error_set(why, "cannot load %s: %s (no NVIDIA driver here?)", lib, dlerror());
		free(g);
		return -1;
	}
	if (gpu_resolve(g, lib, why) != 0)
		goto fail;
	if ((r = g->api.init()) != NVML_SUCCESS) {
		const char *msg = g->api.error_string(r);
		error_set(why, "nvmlInit_v2: %s (error %d)", msg != NULL ? msg : "unknown error", r);
		goto fail;
	}
	if ((rc = pthread_mutex_init(&g->lock, NULL)) != 0) {
		(void)g->api.shutdown();
		error_set(why, "pthread_mutex_init: %s", strerror(rc));
		goto fail;
	}
	*out = g;
	return 0;
fail:
	(void)dlclose(g->lib);
	free(g);
	return -1;
}

/* Log a reading's failure the first time it happens for a GPU (a scrape every few seconds must not flood the log). */
static void
gpu_warn(struct metrics_gpu *g, struct gpu_sample *s, enum gpu_reading what, const char *call, nvml_return_t r)
{
	const char *msg;

	if (s->warned & (1u << what))
		return;
	s->warned |= 1u << what;
	msg = g->api.error_string(r);
	LOG_WARN("gpu metrics: %s for %s: %s (error %d); %s left out", call, s->uuid,
	    msg != NULL ? msg : "unknown error", r, what == GPU_HANDLE ? "its gauges are" : "that gauge is");
}

/* Read every gauge of one GPU into s (a reading NVML refuses is left out of have). */
static void
gpu_sample(struct metrics_gpu *g, struct gpu_sample *s)
{
	struct nvml_utilization u;
	struct nvml_memory m;
	nvml_device_t dev = NULL;
	unsigned int v;
	nvml_return_t r;

	s->have = 0;
	s->at_us = clock_now_us();
	if ((r = g->api.by_uuid(s->uuid, &dev)) != NVML_SUCCESS) {
		gpu_warn(g, s, GPU_HANDLE, "nvmlDeviceGetHandleByUUID", r);
		return;
	}
	if ((r = g->api.utilization(dev, &u)) == NVML_SUCCESS) {
		s->util_ratio = u.gpu / 100.0;
		s->have |= 1u << GPU_UTIL;
	} else
		gpu_warn(g, s, GPU_UTIL, "nvmlDeviceGetUtilizationRates", r);
	if ((r = g->api.memory(dev, &m)) == NVML_SUCCESS) {
		s->mem_used = m.used;
		s->mem_total = m.total;
		s->have |= 1u << GPU_MEMORY;
	} else
		gpu_warn(g, s, GPU_MEMORY, "nvmlDeviceGetMemoryInfo", r);
	if (g->api.power != NULL && (r = g->api.power(dev, &v)) == NVML_SUCCESS) {
		s->watts = v / 1000.0;
		s->have |= 1u << GPU_POWER;
	} else if (g->api.power != NULL)
		gpu_warn(g, s, GPU_POWER, "nvmlDeviceGetPowerUsage", r);
	if (g->api.temperature != NULL && (r = g->api.temperature(dev, NVML_TEMPERATURE_GPU, &v)) == NVML_SUCCESS) {
		s->celsius = v;
		s->have |= 1u << GPU_TEMPERATURE;
	} else if (g->api.temperature != NULL)
		gpu_warn(g, s, GPU_TEMPERATURE, "nvmlDeviceGetTemperature", r);
}

/* The sample slot of uuid, made when new; NULL when every slot is taken (called locked). */
static struct gpu_sample *
gpu_slot(struct metrics_gpu *g, const char *uuid)
{
	struct gpu_sample *s;
	size_t i;

	for (i = 0; i < g->nsamples; i++)
		if (strcmp(g->samples[i].uuid, uuid) == 0)
			return &g->samples[i];
	if (g->nsamples == METRICS_GPU_MAX)
		return NULL;
	s = &g->samples[g->nsamples++];
	memset(s, 0, sizeof *s);
	snprintf(s->uuid, sizeof s->uuid, "%s", uuid);
	return s;
}

/* One gauge family over the GPUs whose sample holds it. */
static void
gpu_render_family(struct text_buf *b, const struct metrics_gpu_id *ids, const struct gpu_sample *const *s,
    size_t n, enum gpu_reading what, const char *name, const char *help)
{
	size_t i, shown = 0;
	double v;

	for (i = 0; i < n; i++) {
		if (s[i] == NULL || !(s[i]->have & (1u << what)))
			continue;
		if (shown++ == 0)
			text_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
		v = what == GPU_UTIL ? s[i]->util_ratio : what == GPU_POWER ? s[i]->watts : s[i]->celsius;
		text_buf_printf(b, "%s{gpu=\"%d\",uuid=\"%s\"} %g\n", name, ids[i].ordinal, ids[i].uuid, v);
	}
}

/* The two memory families (integers: printed exactly, not through %g). */
static void
gpu_render_memory(struct text_buf *b, const struct metrics_gpu_id *ids, const struct gpu_sample *const *s, size_t n)
{
	static const char *const names[2] = { "inferd_gpu_memory_used_bytes", "inferd_gpu_memory_total_bytes" };
	static const char *const helps[2] = {
		"Device memory in use on the GPU, by every process (NVML).",
		"Device memory of the GPU (NVML).",
	};
	size_t i, shown;
	int k;

	for (k = 0; k < 2; k++) {
		shown = 0;
		for (i = 0; i < n; i++) {
			if (s[i] == NULL || !(s[i]->have & (1u << GPU_MEMORY)))
				continue;
			if (shown++ == 0)
				text_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", names[k], helps[k], names[k]);
			text_buf_printf(b, "%s{gpu=\"%d\",uuid=\"%s\"} %llu\n", names[k], ids[i].ordinal, ids[i].uuid,
			    k == 0 ? s[i]->mem_used : s[i]->mem_total);
		}
	}
}

/* Render the samples of ids (called locked). */
static char *
gpu_render(struct gpu_sample *const *s, const struct metrics_gpu_id *ids, size_t n)
{
	const struct gpu_sample *cs[METRICS_GPU_MAX];
	struct text_buf b;
	size_t i;

	for (i = 0; i < n; i++)
		cs[i] = s[i];
	if (text_buf_init(&b, 1024) != 0)
		return NULL;
	gpu_render_family(&b, ids, cs, n, GPU_UTIL, "inferd_gpu_utilization_ratio",
	    "Fraction of NVML's last sample period in which a kernel ran on the GPU (any process).");
	gpu_render_memory(&b, ids, cs, n);
	gpu_render_family(&b, ids, cs, n, GPU_POWER, "inferd_gpu_power_watts", "Power the GPU draws (NVML).");
	gpu_render_family(&b, ids, cs, n, GPU_TEMPERATURE, "inferd_gpu_temperature_celsius",
	    "Temperature of the GPU die (NVML).");
	return text_buf_finish(&b);
}

/* The gauges of the listed GPUs, sampled again when their sample is older than METRICS_GPU_CACHE_MS. */
char *
metrics_gpu_text(metrics_gpu_t *g, const struct metrics_gpu_id *ids, size_t n)
{
	struct gpu_sample *s[METRICS_GPU_MAX];
	uint64_t now = clock_now_us();
	char *text;
	size_t i;

	if (n > METRICS_GPU_MAX)
		n = METRICS_GPU_MAX;
	if (pthread_mutex_lock(&g->lock) != 0)
		return xstrdup("");
	for (i = 0; i < n; i++) {
		s[i] = gpu_slot(g, ids[i].uuid);
		if (s[i] != NULL && (s[i]->at_us == 0 || now - s[i]->at_us >= (uint64_t)METRICS_GPU_CACHE_MS * 1000))
			gpu_sample(g, s[i]);
	}
	text = gpu_render(s, ids, n);
	(void)pthread_mutex_unlock(&g->lock);
	return text;
}

/* Shut NVML down and unload it. */
void
metrics_gpu_close(metrics_gpu_t *g)
{
	nvml_return_t r;

	if (g == NULL)
		return;
	if ((r = g->api.shutdown()) != NVML_SUCCESS)
		LOG_WARN("gpu metrics: nvmlShutdown: error %d", r);
	pthread_mutex_destroy(&g->lock);
	if (dlclose(g->lib) != 0)
		LOG_WARN("gpu metrics: dlclose: %s", dlerror());
	free(g);
}
