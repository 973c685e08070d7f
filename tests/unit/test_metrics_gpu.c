/*
 * test_metrics_gpu.c: the GPU gauges of /metrics (metrics_gpu.c).  Without
 * NVML (no library, a library that is not NVML, nvmlInit_v2 failing) the
 * open fails with a reason and nothing crashes; with the stand-in library
 * the tests build (FAKE_NVML, tests/helpers/fake_nvml.c) every gauge
 * carries exactly what the library returned, a reading the library refuses
 * is left out for that GPU only, a GPU it does not know has no gauges, and
 * close shuts NVML down.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_gpu.h"
#include "test_util.h"

#define UUID_A "GPU-11111111-2222-3333-4444-555555555555"
#define UUID_B "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
#define UUID_GONE "GPU-00000000-0000-0000-0000-000000000000"

typedef void (*set_gpu_fn)(const char *, unsigned int, unsigned long long, unsigned long long, unsigned int,
    unsigned int, int);
typedef void (*set_init_fn)(int);
typedef int (*shutdowns_fn)(void);

/* 1 when text has the exact line want. */
static int
has_line(const char *text, const char *want)
{
	size_t n = strlen(want);
	const char *p = text;

	while ((p = strstr(p, want)) != NULL) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

/* Opening what is not a usable NVML fails with a reason and leaves nothing open. */
static void
test_absent(void)
{
	metrics_gpu_t *g = (metrics_gpu_t *)1;
	char *why = NULL;

	CHECK(metrics_gpu_open("/nonexistent/libnvidia-ml.so.1", &g, &why) == -1 && g == NULL, "missing library opened");
	CHECK(why != NULL && strstr(why, "/nonexistent/libnvidia-ml.so.1") != NULL, "reason: %s", why ? why : "(none)");
	free(why);
	why = NULL;
	CHECK(metrics_gpu_open("libm.so.6", &g, &why) == -1 && g == NULL, "libm taken for NVML");
	CHECK(why != NULL && strstr(why, "nvmlInit_v2") != NULL, "reason: %s", why ? why : "(none)");
	free(why);
	why = NULL;
	CHECK(metrics_gpu_open("", &g, &why) == -1 && g == NULL, "empty name opened");
	free(why);
	metrics_gpu_close(NULL);
}

/* The fake's failing nvmlInit_v2 is reported with NVML's own message. */
static void
test_init_fails(void *lib)
{
	set_init_fn set_init = (set_init_fn)dlsym(lib, "fake_nvml_set_init_result");
	metrics_gpu_t *g = NULL;
	char *why = NULL;

	set_init(9);
	CHECK(metrics_gpu_open(FAKE_NVML, &g, &why) == -1 && g == NULL, "init failure not reported");
	CHECK(why != NULL && strstr(why, "Driver Not Loaded") != NULL, "reason: %s", why ? why : "(none)");
	free(why);
	set_init(0);
}

/* Every gauge carries what the library returned; refused readings and unknown GPUs are left out. */
static void
test_values(void *lib)
{
	set_gpu_fn set_gpu = (set_gpu_fn)dlsym(lib, "fake_nvml_set_gpu");
	shutdowns_fn shutdowns = (shutdowns_fn)dlsym(lib, "fake_nvml_shutdowns");
	struct metrics_gpu_id ids[3] = { { 0, UUID_A }, { 3, UUID_B }, { 5, UUID_GONE } };
	metrics_gpu_t *g = NULL;
	char *why = NULL, *text;
	int before;

	set_gpu(UUID_A, 37, 123456789012ULL, 150754820096ULL, 215500, 61, 0);
	set_gpu(UUID_B, 100, 5, 10, 0, 30, 1);
	CHECK(metrics_gpu_open(FAKE_NVML, &g, &why) == 0 && g != NULL, "open: %s", why ? why : "?");
	free(why);
	if (g == NULL)
		return;
	text = metrics_gpu_text(g, ids, 3);
	CHECK(text != NULL, "no text");
	if (text != NULL) {
		CHECK(has_line(text, "# TYPE inferd_gpu_utilization_ratio gauge"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_utilization_ratio{gpu=\"0\",uuid=\"" UUID_A "\"} 0.37"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_utilization_ratio{gpu=\"3\",uuid=\"" UUID_B "\"} 1"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_memory_used_bytes{gpu=\"0\",uuid=\"" UUID_A "\"} 123456789012"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_memory_total_bytes{gpu=\"0\",uuid=\"" UUID_A "\"} 150754820096"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_power_watts{gpu=\"0\",uuid=\"" UUID_A "\"} 215.5"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_power_watts{gpu=\"3\",uuid=\"" UUID_B "\"} 0"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_temperature_celsius{gpu=\"0\",uuid=\"" UUID_A "\"} 61"), "%s", text);
		CHECK(has_line(text, "inferd_gpu_temperature_celsius{gpu=\"3\",uuid=\"" UUID_B "\"} 30"), "%s", text);
		/* B's memory reading is refused: no memory gauge for B, and nothing at all for the unknown GPU. */
		CHECK(strstr(text, "inferd_gpu_memory_used_bytes{gpu=\"3\"") == NULL, "%s", text);
		CHECK(strstr(text, "inferd_gpu_memory_total_bytes{gpu=\"3\"") == NULL, "%s", text);
		CHECK(strstr(text, UUID_GONE) == NULL, "%s", text);
		free(text);
	}
	/* No GPU listed: no gauges, not even their HELP lines. */
	text = metrics_gpu_text(g, ids, 0);
	CHECK(text != NULL && *text == '\0', "gauges without GPUs: %s", text ? text : "(null)");
	free(text);
	before = shutdowns();
	metrics_gpu_close(g);
	CHECK(shutdowns() == before + 1, "nvmlShutdown not called once at close");
}

int
main(void)
{
	void *lib;

	test_absent();
	/* The test's own handle on the fake, to drive it: dlopen gives metrics_gpu.c the same instance. */
	if ((lib = dlopen(FAKE_NVML, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "FAIL: cannot load %s: %s\n", FAKE_NVML, dlerror());
		return 1;
	}
	test_init_fails(lib);
	test_values(lib);
	dlclose(lib);
	return test_finish("test_metrics_gpu");
}
