/* test_model_instances.c: model.json "instance_group" parsed into model_t, and its refusals. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "repository.h"
#include "test_util.h"

static device_t *dev;


/* Load the fashion-mlp in dir with override; NULL (and a failed check) when refused. */
static model_t *
load(const char *dir, const char *override)
{
	char *cause = NULL;
	model_t *m = NULL;

	CHECK(repository_version_load(dev, dir, 1, override, &m, &cause) == 0, "%s: %s", override, cause);
	free(cause);
	return m;
}

/* The override must be refused with a message holding want. */
static void
expect_refused(const char *dir, const char *override, const char *want)
{
	char *cause = NULL;
	model_t *m = NULL;

	CHECK(repository_version_load(dev, dir, 1, override, &m, &cause) != 0, "%s: accepted", override);
	if (cause != NULL)
		printf("refused as expected: %s\n", cause);
	CHECK(cause != NULL && strstr(cause, want) != NULL, "%s: message lacks '%s': %s", override, want, cause);
	model_free(m);
	free(cause);
}

/* Group k of m has count and exactly the devices (kind, ordinal) listed. */
static void
expect_group(const model_t *m, int k, int count, int n, const struct device_spec *d)
{
	const struct model_instance_group *g = &m->instances.groups[k];
	int i;

	CHECK(g->count == count && g->ndevices == n, "group %d: count %d, %d devices; want %d, %d", k, g->count,
	    g->ndevices, count, n);
	for (i = 0; i < n && i < g->ndevices; i++)
		CHECK(g->devices[i].kind == d[i].kind && g->devices[i].ordinal == d[i].ordinal,
		    "group %d device %d: kind %d ordinal %d", k, i, (int)g->devices[i].kind, g->devices[i].ordinal);
}

/* Accepted forms: absent, a string list, an array, several groups, no devices. */
static void
test_accepted(const char *dir)
{
	model_t *m;

	if ((m = load(dir, NULL)) != NULL) {
		CHECK(m->instances.ngroups == 0 && model_instance_count(m) == 1, "no instance_group");
		model_free(m);
	}
	m = load(dir, "{\"instance_group\": [{\"count\": 2, \"devices\": \"cuda:0,cuda:1\"}, {\"devices\": [\"cpu\"]},"
	    " {\"count\": 3}, {\"devices\": \"cuda\"}]}");
	if (m != NULL) {
		CHECK(m->instances.ngroups == 4 && model_instance_count(m) == 2 * 2 + 1 + 3 + 1, "instance count %d",
		    model_instance_count(m));
		expect_group(m, 0, 2, 2, (const struct device_spec[]){ { DEVICE_SPEC_CUDA, 0 }, { DEVICE_SPEC_CUDA, 1 } });
		expect_group(m, 1, 1, 1, (const struct device_spec[]){ { DEVICE_SPEC_CPU, 0 } });
		expect_group(m, 2, 3, 0, NULL);
		expect_group(m, 3, 1, 1, (const struct device_spec[]){ { DEVICE_SPEC_CUDA, 0 } });
		model_free(m);
	}
}

/* Refusals name the group, the key and the device. */
static void
test_refused(const char *dir)
{
	expect_refused(dir, "{\"instance_group\": {\"count\": 2}}", "\"instance_group\" must be an array of 1 to 8");
	expect_refused(dir, "{\"instance_group\": []}", "\"instance_group\" must be an array");
	expect_refused(dir, "{\"instance_group\": [3]}", "instance_group[0] must be an object");
	expect_refused(dir, "{\"instance_group\": [{\"count\": 0}]}", "instance_group[0]: \"count\" must be an integer in [1, 64]");
	expect_refused(dir, "{\"instance_group\": [{\"count\": \"two\"}]}", "\"count\"");
	expect_refused(dir, "{\"instance_group\": [{}, {\"colour\": \"blue\"}]}", "instance_group[1]: unknown key");
	expect_refused(dir, "{\"instance_group\": [{\"devices\": \"cuda:0,gpu1\"}]}", "instance_group[0]: \"devices\"");
	expect_refused(dir, "{\"instance_group\": [{\"devices\": \"cuda:0,\"}]}", "empty or overlong device name");
	expect_refused(dir, "{\"instance_group\": [{\"devices\": \"cuda:1,cuda:1\"}]}", "device 'cuda:1' is listed twice");
	expect_refused(dir, "{\"instance_group\": [{\"devices\": \"auto\"}]}", "\"auto\" is not a device here");
	expect_refused(dir, "{\"instance_group\": [{\"devices\": []}]}", "non-empty array");
	expect_refused(dir, "{\"instance_group\": [{\"devices\": [0]}]}", "devices[0] must be a string");
	expect_refused(dir, "{\"instance_group\": [{\"count\": 64, \"devices\": \"cuda:0,cuda:1\"}]}", "128 instances");
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char *dir;

	dev = test_open_device();
	if (asprintf(&dir, "%s/conf/models/fashion-mlp", top ? top : ".") == -1)
		return 1;
	test_accepted(dir);
	test_refused(dir);
	free(dir);
	return test_finish("test_model_instances");
}
