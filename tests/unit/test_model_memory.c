/* test_model_memory.c: the memory report of a model and its batch contexts, against sizes the test chose. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_memory.h"
#include "test_util.h"

/* The test's MLP: IN -> HID (relu) -> OUT, at most ROWS rows a batch. */
enum { IN = 20, HID = 33, OUT = 7, ROWS = 5 };

/* Write the MLP's model.json and weights (random values; only their sizes matter here) into dir. */
static void
write_mlp(const char *dir)
{
	static float w1[HID * IN], b1[HID], w2[OUT * HID], b2[OUT];
	uint64_t st = 7;
	struct test_tensor t[] = {
		{ "w1", "F32", 2, { HID, IN }, w1, sizeof w1 }, { "b1", "F32", 1, { HID }, b1, sizeof b1 },
		{ "w2", "F32", 2, { OUT, HID }, w2, sizeof w2 }, { "b2", "F32", 1, { OUT }, b2, sizeof b2 },
	};
	char json[1024];
	int n;

	test_fill_random(w1, HID * IN, &st, -1, 1);
	test_fill_random(w2, OUT * HID, &st, -1, 1);
	test_write_safetensors(dir, "w.safetensors", t, sizeof t / sizeof t[0]);
	n = snprintf(json, sizeof json, "{\"name\": \"mem\", \"platform\": \"inferd_mlp\", \"max_batch_size\": %d, "
	    "\"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", \"dims\": [%d]}], "
	    "\"outputs\": [{\"name\": \"y\", \"datatype\": \"FP32\", \"dims\": [%d]}], \"weights\": \"w.safetensors\", "
	    "\"layers\": [{\"name\": \"fc1\", \"op\": \"linear\", \"weight\": \"w1\", \"bias\": \"b1\"}, "
	    "{\"name\": \"r\", \"op\": \"relu\"}, {\"name\": \"fc2\", \"op\": \"linear\", \"weight\": \"w2\", "
	    "\"bias\": \"b2\"}]}", ROWS, IN, OUT);
	test_write_file(dir, "model.json", json, (size_t)n);
}

/* The helpers: kind names, per-kind reads, sums, the device's memory_usage type. */
static void
test_helpers(device_t *dev)
{
	struct model_memory a = { 1, 20, 300, 4000 }, sum = { 0, 0, 0, 0 };
	const char *want[] = { "weights", "activations", "workspace", "graphs" };
	int k, id = -1;

	for (k = 0; k < MODEL_MEMORY_KINDS; k++)
		CHECK(strcmp(model_memory_kind_name(k), want[k]) == 0, "kind %d is '%s'", k, model_memory_kind_name(k));
	CHECK(model_memory_get(&a, MODEL_MEMORY_GRAPHS) == 4000 && model_memory_get(&a, MODEL_MEMORY_WEIGHTS) == 1,
	    "get");
	model_memory_add(&sum, &a);
	model_memory_add(&sum, &a);
	CHECK(model_memory_total(&sum) == 8642, "total %llu", (unsigned long long)model_memory_total(&sum));
	CHECK(strcmp(model_memory_device(dev, &id), device_is_gpu(dev) ? "GPU" : "CPU") == 0 && id >= 0,
	    "type of %s", device_name(dev));
	CHECK(device_is_gpu(dev) || id == 0, "CPU id %d", id);
}

/* Load the MLP, check its weights, then a context's arena, workspace and (on a GPU) graphs. */
static void
test_contexts(device_t *dev, const char *dir)
{
	/* The constants: both layers' weights and biases, FP32, sized from the dims above. */
	const uint64_t weights = (uint64_t)(HID * IN + HID + OUT * HID + OUT) * 4;
	device_stream_t *s = NULL;
	model_exec_t *x = NULL, *y = NULL;
	model_t *m = NULL;
	char *cause = NULL;

	CHECK(model_load(dev, dir, &m, &cause) == 0, "%s", cause);
	if (m == NULL)
		return;
	CHECK(m->memory.weights == weights, "weights %llu, expected %llu", (unsigned long long)m->memory.weights,
	    (unsigned long long)weights);
	CHECK(m->memory.activations == 0 && m->memory.workspace == 0 && m->memory.graphs == 0,
	    "a model without contexts holds only weights");
	CHECK(model_exec_create(m, &x, &cause) == 0 && model_exec_create(m, &y, &cause) == 0, "%s", cause);
	if (x != NULL && y != NULL) {
		CHECK(m->arena_bytes >= (size_t)ROWS * (IN + OUT) * 4, "arena %zu", m->arena_bytes);
		CHECK(x->memory.activations == m->arena_bytes, "activations %llu, arena %zu",
		    (unsigned long long)x->memory.activations, m->arena_bytes);
		CHECK(x->memory.workspace >= x->ws_bytes, "workspace %llu < shared %zu",
		    (unsigned long long)x->memory.workspace, x->ws_bytes);
		CHECK(memcmp(&x->memory, &y->memory, sizeof x->memory) == 0, "two contexts of one model differ");
		CHECK(device_stream_create(dev, DEVICE_STREAM_COMPUTE, &s, &cause) == 0, "%s", cause);
		CHECK(s == NULL || model_exec_capture(x, s, ROWS, &cause) == 0, "%s", cause);
		if (!device_has_graphs(dev))
			CHECK(x->memory.graphs == 0 && device_stream_bytes(s) == 0, "graphs or stream bytes on the CPU");
		printf("%s: weights %llu, activations %llu, workspace %llu, graphs %llu (stream %zu)\n", device_name(dev),
		    (unsigned long long)m->memory.weights, (unsigned long long)x->memory.activations,
		    (unsigned long long)x->memory.workspace, (unsigned long long)x->memory.graphs,
		    device_stream_bytes(s));
	}
	free(cause);
	model_exec_free(x);
	model_exec_free(y);
	device_stream_destroy(s);
	model_free(m);
}

int
main(void)
{
	device_t *dev = test_open_device();
	char *dir = test_mkdtemp();

	write_mlp(dir);
	test_helpers(dev);
	test_contexts(dev, dir);
	test_rmtree(dir);
	free(dir);
	device_close(dev);
	return test_finish("test_model_memory");
}
