/*
 * test_device_set.c: the daemon's device set — the daemon's own device
 * answers for its spec, another device opens once and is shared, a GPU
 * beside a CPU daemon and an absent GPU are refused with the reason, the
 * default placement is the daemon's device with one GPU or none.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_set.h"
#include "log.h"
#include "test_util.h"

/* The daemon's own device is found for its spec; "auto" is refused for an instance. */
static void
test_primary(device_t *dev, device_set_t *s)
{
	struct device_spec cpu = { DEVICE_SPEC_CPU, 0 }, cuda0 = { DEVICE_SPEC_CUDA, 0 }, any = { DEVICE_SPEC_AUTO, 0 };
	device_t *got = NULL, *again = NULL;
	char *cause = NULL;

	CHECK(device_set_primary(s) == dev, "primary");
	CHECK(device_set_get(s, device_is_gpu(dev) ? &cuda0 : &cpu, &got, &cause) == 0 && got == dev,
	    "the daemon's device not found for its spec: %s", cause ? cause : "another device");
	CHECK(device_set_matches(dev, device_is_gpu(dev) ? &cuda0 : &cpu), "matches its own spec");
	CHECK(!device_set_matches(dev, device_is_gpu(dev) ? &cpu : &cuda0), "matches the other kind");
	CHECK(device_set_get(s, &any, &got, &cause) != 0 && cause != NULL && strstr(cause, "cpu or cuda:N") != NULL,
	    "auto as an instance's device: %s", cause ? cause : "accepted");
	free(cause);
	cause = NULL;
	/* The CPU beside a GPU daemon: opened once, then the same device. */
	if (device_is_gpu(dev)) {
		CHECK(device_set_get(s, &cpu, &got, &cause) == 0 && !device_is_gpu(got), "cpu beside the GPU: %s", cause);
		CHECK(device_set_get(s, &cpu, &again, &cause) == 0 && again == got, "the cpu opened twice");
		free(cause);
	}
}

/* Devices this daemon may not or cannot open. */
static void
test_refused(device_t *dev, device_set_t *s)
{
	struct device_spec far = { DEVICE_SPEC_CUDA, 63 };
	device_t *got = NULL;
	char *cause = NULL;

	CHECK(device_set_get(s, &far, &got, &cause) != 0 && cause != NULL, "cuda:63 opened");
	if (cause != NULL)
		CHECK(strstr(cause, device_is_gpu(dev) ? "opening cuda:63" : "GPU instances need") != NULL,
		    "the reason: %s", cause);
	free(cause);
}

/* The default placement with at most one GPU: the daemon's device alone. */
static void
test_defaults(device_t *dev, device_set_t *s)
{
	device_t *out[DEVICE_SET_MAX];
	char *cause = NULL;
	int n = device_set_defaults(s, out, &cause);

	if (device_cuda_count() > 1) {
		CHECK(n == device_cuda_count(), "spread over %d GPUs gave %d", device_cuda_count(), n);
	} else {
		CHECK(n == 1 && out[0] == dev, "defaults: %d devices (%s)", n, cause ? cause : "not the daemon's");
	}
	free(cause);
}

int
main(void)
{
	device_t *dev = test_open_device();
	device_set_t *s = NULL;
	char *cause = NULL;

	log_set_level("error");
	CHECK(device_set_create(dev, 1, 2, &s, &cause) == 0, "%s", cause);
	if (s != NULL) {
		test_primary(dev, s);
		test_refused(dev, s);
		test_defaults(dev, s);
		device_set_free(s);
	}
	device_close(dev);
	return test_finish("test_device_set");
}
