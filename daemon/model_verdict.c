/* model_verdict.c: the load checks' verdicts kept in the compile cache, keyed by the bytes loaded, the settings, the daemon binary and the device. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "compile_cache.h"
#include "device.h"
#include "model_padding.h"
#include "model_verdict.h"
#include "model_warmup.h"

/* The compile cache the verdicts live in (one for every device: the key names the device). */
#define VERDICT_CACHE "load checks"

/* What a verdict depends on; zeroed before it is filled (its bytes are the key). */
struct verdict_key {
	char tag[8];
	struct file_copy_digest files;
	uint32_t override_crc;
	int32_t precision, max_batch_size, padding_mode, with_precision, unused;
	uint64_t exe_ino, exe_size, exe_mtime_ns;
	char identity[256];
};

/* The remembered verdicts. */
struct verdict {
	int32_t padding_on;
	int32_t has_precision;		/* the precision check measured (else nothing could be compared) */
	double precision_error;
	char precision_output[MODEL_NAME_MAX];
};

/* Fill k for m read as dg; 0, or -1 when nothing can key it (no identity, nothing read, no binary to name). */
static int
verdict_key_of(const model_t *m, const struct file_copy_digest *dg, int precision, struct verdict_key *k)
{
	const char *override = m->config_override != NULL ? m->config_override : "";
	struct stat st;

	memset(k, 0, sizeof *k);
	if (m->dev == NULL || *device_identity(m->dev) == '\0' || dg->files == 0 || stat("/proc/self/exe", &st) != 0)
		return -1;
	memcpy(k->tag, "verdict2", 8);
	k->files = *dg;
	k->override_crc = (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), (const unsigned char *)override, strlen(override));
	k->precision = m->precision;
	k->max_batch_size = m->max_batch_size;
	k->padding_mode = (int32_t)m->padding.mode;
	k->with_precision = precision != 0;
	k->exe_ino = (uint64_t)st.st_ino;
	k->exe_size = (uint64_t)st.st_size;
	k->exe_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	snprintf(k->identity, sizeof k->identity, "%s", device_identity(m->dev));
	return 0;
}

/* The verdicts remembered for k: 1 with *v, 0 when none (or a record of another size). */
static int
verdict_lookup(compile_cache_t *c, const struct verdict_key *k, struct verdict *v)
{
	void *val = NULL;
	size_t len = 0;
	int hit;

	if (c == NULL || !compile_cache_lookup(c, k, sizeof *k, &val, &len))
		return 0;
	hit = len == sizeof *v;
	if (hit) {
		memcpy(v, val, sizeof *v);
		v->precision_output[sizeof v->precision_output - 1] = '\0';
		hit = v->padding_on == 0 || v->padding_on == 1;
	}
	free(val);
	if (!hit)
		compile_cache_reject(c, k, sizeof *k, "a load-check record of another layout");
	return hit;
}

/* Run m's checks, or take an earlier load's verdicts for the same key (see the contract). */
int
model_verdict_checks(model_t *m, const struct file_copy_digest *dg, int precision, char **cause)
{
	compile_cache_t *c = NULL;
	struct verdict_key k;
	struct verdict v;

	if (verdict_key_of(m, dg, precision, &k) == 0)
		c = compile_cache_get(VERDICT_CACHE);
	memset(&v, 0, sizeof v);
	if (verdict_lookup(c, &k, &v)) {
		if (model_padding_check(m, v.padding_on, cause) != 0)
			return -1;
		if (precision)
			model_precision_recall(m, v.has_precision ? v.precision_error : -1, v.precision_output);
		return 0;
	}
	if (model_padding_check(m, -1, cause) != 0)
		return -1;
	v.padding_on = m->padding.on != 0;
	if (precision) {
		model_precision_check(m, v.precision_output, sizeof v.precision_output);
		v.has_precision = m->precision_error >= 0;
		v.precision_error = m->precision_error;
	}
	if (c != NULL)
		compile_cache_store(c, &k, sizeof k, &v, sizeof v);
	return 0;
}
