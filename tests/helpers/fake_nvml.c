/*
 * fake_nvml.c: a stand-in for libnvidia-ml.so.1, built by the tests as a
 * shared library that metrics_gpu.c loads through nvml_library: it exports
 * the NVML calls the GPU gauges make, answering for the GPUs the test
 * declares with fake_nvml_set_gpu (by UUID) and failing as told, so the
 * test can check that the gauges carry exactly what the library returned.
 */
#include <stdio.h>
#include <string.h>

/* NVML's return codes used here (nvml.h's values). */
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_DRIVER_NOT_LOADED 9

struct fake_utilization {
	unsigned int gpu, memory;
};
struct fake_memory {
	unsigned long long total, free, used;
};

/* One declared GPU. */
struct fake_gpu {
	char uuid[80];
	unsigned int util_percent;
	unsigned long long mem_used, mem_total;
	unsigned int milliwatts, celsius;
	int memory_fails;		/* nvmlDeviceGetMemoryInfo answers NOT_SUPPORTED */
};

#define FAKE_GPUS 4
static struct fake_gpu fake_gpus[FAKE_GPUS];
static int fake_ngpus;
static int fake_init_result;		/* what nvmlInit_v2 answers */
static int fake_initialised, fake_shutdowns;

/* Test control: declare (or redeclare) a GPU's readings. */
void
fake_nvml_set_gpu(const char *uuid, unsigned int util_percent, unsigned long long used, unsigned long long total,
    unsigned int milliwatts, unsigned int celsius, int memory_fails)
{
	struct fake_gpu *g = NULL;
	int i;

	for (i = 0; i < fake_ngpus; i++)
		if (strcmp(fake_gpus[i].uuid, uuid) == 0)
			g = &fake_gpus[i];
	if (g == NULL && fake_ngpus < FAKE_GPUS)
		g = &fake_gpus[fake_ngpus++];
	if (g == NULL)
		return;
	snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
	g->util_percent = util_percent;
	g->mem_used = used;
	g->mem_total = total;
	g->milliwatts = milliwatts;
	g->celsius = celsius;
	g->memory_fails = memory_fails;
}

/* Test control: what nvmlInit_v2 answers next. */
void
fake_nvml_set_init_result(int r)
{
	fake_init_result = r;
}

/* Test control: how many times nvmlShutdown ran. */
int
fake_nvml_shutdowns(void)
{
	return fake_shutdowns;
}

/* nvmlInit_v2: what fake_nvml_set_init_result said (success by default). */
int
nvmlInit_v2(void)
{
	if (fake_init_result != NVML_SUCCESS)
		return fake_init_result;
	fake_initialised = 1;
	return NVML_SUCCESS;
}

/* nvmlShutdown: counted; refused when not initialised. */
int
nvmlShutdown(void)
{
	if (!fake_initialised)
		return NVML_ERROR_UNINITIALIZED;
	fake_initialised = 0;
	fake_shutdowns++;
	return NVML_SUCCESS;
}

/* nvmlErrorString: NVML's texts for the codes used here. */
const char *
nvmlErrorString(int r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	default: return "Unknown Error";
	}
}

/* The declared GPU a handle points at, or NULL. */
static struct fake_gpu *
fake_gpu_of(void *dev)
{
	struct fake_gpu *g = dev;

	return fake_initialised && g >= fake_gpus && g < fake_gpus + fake_ngpus ? g : NULL;
}

/* nvmlDeviceGetHandleByUUID: a declared GPU, or NOT_FOUND. */
int
nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
	int i;

	if (!fake_initialised)
		return NVML_ERROR_UNINITIALIZED;
	for (i = 0; i < fake_ngpus; i++)
		if (strcmp(fake_gpus[i].uuid, uuid) == 0) {
			*dev = &fake_gpus[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

/* nvmlDeviceGetHandleByIndex_v2: the declared GPUs in declaration order. */
int
nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **dev)
{
	if (!fake_initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (index >= (unsigned int)fake_ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	*dev = &fake_gpus[index];
	return NVML_SUCCESS;
}

/* nvmlDeviceGetUtilizationRates: the declared percentage. */
int
nvmlDeviceGetUtilizationRates(void *dev, struct fake_utilization *u)
{
	struct fake_gpu *g = fake_gpu_of(dev);

	if (g == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	u->gpu = g->util_percent;
	u->memory = 0;
	return NVML_SUCCESS;
}

/* nvmlDeviceGetMemoryInfo: the declared bytes, or NOT_SUPPORTED when told to fail. */
int
nvmlDeviceGetMemoryInfo(void *dev, struct fake_memory *m)
{
	struct fake_gpu *g = fake_gpu_of(dev);

	if (g == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (g->memory_fails)
		return NVML_ERROR_NOT_SUPPORTED;
	m->used = g->mem_used;
	m->total = g->mem_total;
	m->free = g->mem_total - g->mem_used;
	return NVML_SUCCESS;
}

/* nvmlDeviceGetPowerUsage: the declared milliwatts. */
int
nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
	struct fake_gpu *g = fake_gpu_of(dev);

	if (g == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mw = g->milliwatts;
	return NVML_SUCCESS;
}

/* nvmlDeviceGetTemperature: the declared degrees, for the GPU sensor (0) only. */
int
nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c)
{
	struct fake_gpu *g = fake_gpu_of(dev);

	if (g == NULL || sensor != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*c = g->celsius;
	return NVML_SUCCESS;
}
