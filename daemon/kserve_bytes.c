/* kserve_bytes.c: BYTES tensors between JSON strings or the length-prefixed wire form and their slots. */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "graph.h"
#include "kserve.h"
#include "kserve_bytes.h"

/* Unpack n length-prefixed elements of src (len bytes, all used) into slots at dst. */
int
kserve_bytes_unpack(const unsigned char *src, size_t len, size_t n, void *dst, const char *what,
    const char *name, char **cause)
{
	size_t at = 0, k;
	uint32_t elen;

	for (k = 0; k < n; k++) {
		if (len - at < 4)
			return error_set(cause, "%s '%s': BYTES data ends before element %zu's 4-byte length "
			    "(%zu bytes for %zu elements)", what, name, k, len, n);
		elen = (uint32_t)src[at] | (uint32_t)src[at + 1] << 8 | (uint32_t)src[at + 2] << 16 |
		    (uint32_t)src[at + 3] << 24;
		at += 4;
		if (elen > len - at)
			return error_set(cause, "%s '%s': BYTES element %zu's length %" PRIu32 " runs past "
			    "the end of its %zu bytes", what, name, k, elen, len);
		if (elen > GRAPH_STRING_MAX)
			return error_set(cause, "%s '%s': BYTES element %zu is %" PRIu32 " bytes long, inferd "
			    "holds at most %d bytes per element", what, name, k, elen, GRAPH_STRING_MAX);
		graph_string_put((char *)dst + k * GRAPH_STRING_SLOT, src + at, elen);
		at += elen;
	}
	if (at != len)
		return error_set(cause, "%s '%s': BYTES data holds more than the %zu elements its shape "
		    "needs (%zu bytes left over)", what, name, n, len - at);
	return 0;
}

/* Bytes the packed form of n slots takes. */
size_t
kserve_bytes_packed_size(const void *slots, size_t n)
{
	size_t total = 0, len, k;

	for (k = 0; k < n; k++) {
		graph_string_get((const char *)slots + k * GRAPH_STRING_SLOT, &len);
		total += 4 + len;
	}
	return total;
}

/* Write the packed form of n slots to dst. */
void
kserve_bytes_pack(const void *slots, size_t n, unsigned char *dst)
{
	size_t len, k;
	const char *s;

	for (k = 0; k < n; k++) {
		s = graph_string_get((const char *)slots + k * GRAPH_STRING_SLOT, &len);
		dst[0] = (unsigned char)len;
		dst[1] = (unsigned char)(len >> 8);
		dst[2] = (unsigned char)(len >> 16);
		dst[3] = (unsigned char)(len >> 24);
		memcpy(dst + 4, s, len);
		dst += 4 + len;
	}
}

/* Most bytes of JSON text for n slots: quotes and a comma each, every byte escaped as \uXXXX at worst. */
size_t
kserve_bytes_json_bound(const void *slots, size_t n)
{
	size_t total = 2, len, k;

	for (k = 0; k < n; k++) {
		graph_string_get((const char *)slots + k * GRAPH_STRING_SLOT, &len);
		total += 3 + 6 * len;
	}
	return total;
}

/* The n slots as a JSON array of strings at out; jansson checks UTF-8 and escapes. */
int
kserve_bytes_json(const void *slots, size_t n, char *out, size_t cap, size_t *len, char **cause)
{
	json_t *a = json_array(), *e;
	size_t k, slen;
	const char *s;

	if (a == NULL)
		return error_set(cause, "out of memory");
	for (k = 0; k < n; k++) {
		s = graph_string_get((const char *)slots + k * GRAPH_STRING_SLOT, &slen);
		if ((e = json_stringn(s, slen)) == NULL) {
			json_decref(a);
			return error_set(cause, "BYTES element %zu is not UTF-8, which JSON cannot carry: ask "
			    "for this output as binary data", k);
		}
		if (json_array_append_new(a, e) != 0) {
			json_decref(a);
			return error_set(cause, "out of memory");
		}
	}
	*len = json_dumpb(a, out, cap, JSON_COMPACT);
	json_decref(a);
	if (*len == 0 || *len > cap)
		return error_set(cause, "BYTES text does not fit its %zu-byte buffer", cap);
	return 0;
}

/* Write each BYTES output asked for in shared memory into its region, packed; -1 when it does not fit. */
int
kserve_bytes_pack_regions(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf,
    char **cause)
{
	size_t n, need;
	int k, o;

	for (k = 0; k < ki->nwanted; k++) {
		o = ki->wanted[k];
		if (ki->output_pack[o] == NULL)
			continue;
		n = ki->output_len[o] / GRAPH_STRING_SLOT;
		need = kserve_bytes_packed_size(buf + ki->output_offset[o], n);
		if (need > ki->output_region_size[o])
			return error_set(cause, "output '%s': its BYTES data is %zu bytes, "
			    "shared_memory_byte_size is %zu", m->outputs[o].name, need,
			    ki->output_region_size[o]);
		kserve_bytes_pack(buf + ki->output_offset[o], n, ki->output_pack[o]);
	}
	return 0;
}
