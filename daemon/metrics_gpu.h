/* metrics_gpu.h: per-GPU utilisation, memory, power and temperature for /metrics, read through NVML loaded at run time. */
#ifndef INFERD_METRICS_GPU_H
#define INFERD_METRICS_GPU_H

#include <stddef.h>

/*
 * Contract.  metrics_gpu_open loads the NVML library `lib` with dlopen (the
 * daemon never links libnvidia-ml, so it starts where no driver is
 * installed) and initialises it; it fails, saying why in *why, when the
 * library or one of the calls the gauges need is missing, or nvmlInit_v2
 * fails.  metrics_gpu_text renders, in Prometheus text format, the gauges of
 * the GPUs listed (the ones the daemon uses, named by CUDA ordinal and
 * UUID, so that the CUDA and NVML numberings cannot be confused): each GPU
 * is sampled at most once per METRICS_GPU_CACHE_MS, on the scraping
 * thread, and the samples are shared by concurrent scrapes.  A reading NVML
 * refuses for a GPU leaves that gauge of that GPU out (logged once per GPU
 * and reading), never a made-up value.  Thread-safe; metrics_gpu_close
 * after the last scrape (the HTTP server stopped).
 */
typedef struct metrics_gpu metrics_gpu_t;

/* Samples younger than this are served again instead of asking NVML. */
#define METRICS_GPU_CACHE_MS 1000

/* The most GPUs sampled (the device set's limit). */
#define METRICS_GPU_MAX 16

/* One GPU to report: its CUDA ordinal (the gpu label) and NVML UUID ("GPU-..."). */
struct metrics_gpu_id {
	int ordinal;
	char uuid[80];
};

/* Load and initialise NVML from lib; -1 with *why when it cannot be used. */
int metrics_gpu_open(const char *lib, metrics_gpu_t **out, char **why);
/* The gauges of ids[0..n) (malloc'ed; "" when none could be read), NULL when out of memory. */
char *metrics_gpu_text(metrics_gpu_t *g, const struct metrics_gpu_id *ids, size_t n);
/* Shut NVML down and unload it (NULL is ignored). */
void metrics_gpu_close(metrics_gpu_t *g);

#endif
