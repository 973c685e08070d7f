/* kserve_classify.c: Triton's classification extension: a requested output's top k per row as "value:index[:label]". */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "graph.h"
#include "kserve.h"
#include "kserve_classify.h"
#include "kserve_tensor.h"

/* Element i of a row of dtype dt as a double, for ranking. */
static double
kserve_class_value(enum graph_dtype dt, const unsigned char *row, size_t i)
{
	switch (dt) {
	case GRAPH_DT_F32: { float v; memcpy(&v, row + 4 * i, 4); return v; }
	case GRAPH_DT_F16: { uint16_t h; memcpy(&h, row + 2 * i, 2); return kserve_half_to_float(h); }
	case GRAPH_DT_I64: { int64_t v; memcpy(&v, row + 8 * i, 8); return (double)v; }
	case GRAPH_DT_I32: { int32_t v; memcpy(&v, row + 4 * i, 4); return v; }
	case GRAPH_DT_I8: return (int8_t)row[i];
	default: return row[i];	/* UINT8, BOOL */
	}
}

/* "value:index[:label]": floating values as Triton prints them (std::to_string, "%f"), integers whole. */
static char *
kserve_class_string(enum graph_dtype dt, const unsigned char *row, size_t i, const char *label)
{
	char *s = NULL;
	int rc;

	if (dt == GRAPH_DT_F32 || dt == GRAPH_DT_F16)
		rc = xasprintf(&s, "%f:%zu%s%s", kserve_class_value(dt, row, i), i, label ? ":" : "", label ? label : "");
	else if (dt == GRAPH_DT_I64) {
		int64_t v;
		memcpy(&v, row + 8 * i, 8);
		rc = xasprintf(&s, "%lld:%zu%s%s", (long long)v, i, label ? ":" : "", label ? label : "");
	} else
		rc = xasprintf(&s, "%lld:%zu%s%s", (long long)kserve_class_value(dt, row, i), i, label ? ":" : "",
		    label ? label : "");
	return rc == -1 ? NULL : s;
}

/*
 * One row's top k into out (k strings): repeated selection of the largest
 * not yet taken, lower index first among equals; k is small next to the
 * classes, and the taken marks are the only scratch.
 */
static int
kserve_classify_row(const model_t *m, int o, const unsigned char *row, size_t classes, int k,
    unsigned char *taken, char **out)
{
	enum graph_dtype dt = m->outputs[o].dtype;
	size_t i, best;
	double v, bv;
	int j;

	memset(taken, 0, classes);
	for (j = 0; j < k; j++) {
		best = classes;
		bv = 0;
		for (i = 0; i < classes; i++) {
			if (taken[i])
				continue;
			v = kserve_class_value(dt, row, i);
			if (best == classes || v > bv || (bv != bv && v == v)) {	/* a NaN ranks last */
				best = i;
				bv = v;
			}
		}
		taken[best] = 1;
		out[j] = kserve_class_string(dt, row, best,
		    o == 0 && best < m->nlabels ? m->labels[best] : NULL);
		if (out[j] == NULL)
			return -1;
	}
	return 0;
}

/* Classify output o: each row's top want. */
int
kserve_classify(const model_t *m, int o, int want, int rows, const void *data, size_t len,
    struct kserve_classes *out, char **cause)
{
	size_t esize = graph_dtype_size(m->outputs[o].dtype), classes, r, i;
	unsigned char *taken;

	memset(out, 0, sizeof *out);
	classes = rows > 0 ? len / esize / (size_t)rows : 0;
	out->k = classes < (size_t)want ? (int)classes : want;
	out->n = (size_t)rows * (size_t)out->k;
	if (out->n == 0)
		return 0;
	if ((out->s = xcalloc(out->n, sizeof *out->s)) == NULL || (taken = xmalloc(classes)) == NULL) {
		kserve_classes_free(out);
		return error_set(cause, "out of memory classifying output '%s'", m->outputs[o].name);
	}
	for (r = 0; r < (size_t)rows; r++)
		if (kserve_classify_row(m, o, (const unsigned char *)data + r * classes * esize, classes, out->k,
		    taken, out->s + r * (size_t)out->k) != 0) {
			free(taken);
			kserve_classes_free(out);
			return error_set(cause, "out of memory classifying output '%s'", m->outputs[o].name);
		}
	free(taken);
	for (i = 0; i < out->n; i++)
		out->bytes += 4 + strlen(out->s[i]);
	return 0;
}

/* The strings as a JSON array. */
json_t *
kserve_classes_json(const struct kserve_classes *c)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < c->n; i++)
		if (json_array_append_new(a, json_string(c->s[i])) != 0)
			a = (json_decref(a), NULL);
	return a;
}

/* BYTES in the binary tensor extension: each element a 4-byte little-endian length, then its bytes. */
void
kserve_classes_binary(const struct kserve_classes *c, unsigned char *dst)
{
	size_t i, n;

	for (i = 0; i < c->n; i++) {
		n = strlen(c->s[i]);
		dst[0] = (unsigned char)n;
		dst[1] = (unsigned char)(n >> 8);
		dst[2] = (unsigned char)(n >> 16);
		dst[3] = (unsigned char)(n >> 24);
		memcpy(dst + 4, c->s[i], n);
		dst += 4 + n;
	}
}

/* Free the strings. */
void
kserve_classes_free(struct kserve_classes *c)
{
	size_t i;

	for (i = 0; c->s != NULL && i < c->n; i++)
		free(c->s[i]);
	free(c->s);
	c->s = NULL;
	c->n = 0;
}

/* The classification extension's strings for every output that asked for it. */
int
kserve_classify_outputs(const model_t *m, const struct kserve_infer *ki, const unsigned char *buf,
    struct kserve_classes *cls, char **cause)
{
	int k, o;

	for (k = 0; k < ki->nwanted; k++) {
		o = ki->wanted[k];
		if (ki->classify[o] > 0 && kserve_classify(m, o, ki->classify[o], ki->rows,
		    buf + ki->output_offset[o], ki->output_len[o], &cls[o], cause) != 0)
			return -1;
	}
	return 0;
}

/* A classified output's description: BYTES [rows, k], its strings as "data" or their binary size. */
json_t *
kserve_classified_tensor(const model_t *m, int o, const struct kserve_infer *ki,
    const struct kserve_classes *c)
{
	json_t *t = json_pack("{s:s, s:s, s:[I,i]}", "name", m->outputs[o].name, "datatype", "BYTES",
	    "shape", (json_int_t)ki->rows, c->k);

	if (t != NULL && ki->binary[o] && json_object_set_new(t, "parameters", json_pack("{s:I}",
	    "binary_data_size", (json_int_t)c->bytes)) != 0)
		t = (json_decref(t), NULL);
	else if (t != NULL && !ki->binary[o] && json_object_set_new(t, "data", kserve_classes_json(c)) != 0)
		t = (json_decref(t), NULL);
	return t;
}
