/* device_set.c: the daemon's device plus the devices model instances name, opened once each. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "device_set.h"
#include "error.h"
#include "log.h"

struct device_set {
	pthread_mutex_t lock;
	device_t *devs[DEVICE_SET_MAX];	/* devs[0]: the daemon's own */
	int ndevs;
	int spread;
	int cpu_threads;
};

/* Make the set. */
int
device_set_create(device_t *primary, int spread, int cpu_threads, device_set_t **out, char **cause)
{
	device_set_t *s = xcalloc(1, sizeof *s);
	int rc;

	if (s == NULL)
		return error_set(cause, "out of memory");
	if ((rc = pthread_mutex_init(&s->lock, NULL)) != 0) {
		free(s);
		return error_set(cause, "device set: pthread_mutex_init: %s", strerror(rc));
	}
	s->devs[0] = primary;
	s->ndevs = 1;
	s->spread = spread && device_is_gpu(primary) && device_cuda_count() > 1;
	s->cpu_threads = cpu_threads;
	*out = s;
	return 0;
}

/* The daemon's device. */
device_t *
device_set_primary(const device_set_t *s)
{
	return s->devs[0];
}

/* Whether dev is the device spec names. */
int
device_set_matches(const device_t *dev, const struct device_spec *spec)
{
	struct device_info info;

	device_info(dev, &info);
	if (spec->kind == DEVICE_SPEC_CPU)
		return !info.gpu;
	return spec->kind == DEVICE_SPEC_CUDA && info.gpu && info.ordinal == spec->ordinal;
}

/* Open spec's device and add it (lock held). */
static int
device_set_open(device_set_t *s, const struct device_spec *spec, device_t **out, char **cause)
{
	char name[32];

	if (spec->kind == DEVICE_SPEC_AUTO)
		return error_set(cause, "an instance's device must be cpu or cuda:N");
	if (spec->kind == DEVICE_SPEC_CUDA && !device_is_gpu(s->devs[0]))
		return error_set(cause, "cuda:%d: this daemon runs on %s; GPU instances need device = cuda:N or "
		    "auto", spec->ordinal, device_name(s->devs[0]));
	if (s->ndevs == DEVICE_SET_MAX)
		return error_set(cause, "more than %d devices", DEVICE_SET_MAX);
	if (spec->kind == DEVICE_SPEC_CPU)
		snprintf(name, sizeof name, "cpu");
	else
		snprintf(name, sizeof name, "cuda:%d", spec->ordinal);
	if (device_open(name, &s->devs[s->ndevs], cause) != 0)
		return error_prefix(cause, "opening %s for a model instance", name);
	*out = s->devs[s->ndevs++];
	/* The CPU kernels run with one thread unless the CPU is the daemon's device: give them the setting. */
	if (spec->kind == DEVICE_SPEC_CPU)
		device_set_threads(*out, s->cpu_threads);
	LOG_INFO("device for model instances: %s", device_name(*out));
	return 0;
}

/* Find or open spec's device. */
int
device_set_get(device_set_t *s, const struct device_spec *spec, device_t **out, char **cause)
{
	int i, rc = 0;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->ndevs; i++)
		if (device_set_matches(s->devs[i], spec))
			break;
	if (i < s->ndevs)
		*out = s->devs[i];
	else
		rc = device_set_open(s, spec, out, cause);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Where a group without devices runs. */
int
device_set_defaults(device_set_t *s, device_t **out, char **cause)
{
	struct device_spec spec = { DEVICE_SPEC_CUDA, 0 };
	int n, i;

	if (!s->spread) {
		out[0] = s->devs[0];
		return 1;
	}
	n = device_cuda_count();
	if (n > DEVICE_SET_MAX - 1)
		n = DEVICE_SET_MAX - 1;	/* room for the CPU */
	for (i = 0; i < n; i++) {
		spec.ordinal = i;
		if (device_set_get(s, &spec, &out[i], cause) != 0)
			return -1;
	}
	return n;
}

/* The devices open now. */
int
device_set_list(device_set_t *s, device_t **out, int max)
{
	int i, n;

	pthread_mutex_lock(&s->lock);
	n = s->ndevs < max ? s->ndevs : max;
	for (i = 0; i < n; i++)
		out[i] = s->devs[i];
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Close what the set opened. */
void
device_set_free(device_set_t *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 1; i < s->ndevs; i++)
		device_close(s->devs[i]);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
