/* inferd_models.c: model metadata — MODEL_INFO checked and built into the public model, fetched and cached. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libinferd_impl.h"

/* Check that the labels after the fixed part are nlabels NUL-terminated strings filling it. */
static int
inferd__labels_ok(const uint8_t *p, size_t len, uint32_t nlabels)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] == '\0')
			n++;
	return n == nlabels && (len == 0 || p[len - 1] == '\0');
}

/* Check MODEL_INFO's fixed part; the bytes of its tensor table in *tables. */
static int
inferd__model_info_ok(const struct inferd_wire_model_info *w, uint32_t len, size_t *tables)
{
	if (w->ninputs < 1 || w->ninputs > INFERD_WIRE_MAX_TENSORS || w->noutputs < 1 ||
	    w->noutputs > INFERD_WIRE_MAX_TENSORS || w->input_ndims > 8 || w->output_ndims > 8 ||
	    memchr(w->name, '\0', sizeof w->name) == NULL ||
	    memchr(w->input_name, '\0', sizeof w->input_name) == NULL ||
	    memchr(w->output_name, '\0', sizeof w->output_name) == NULL)
		return -1;
	*tables = (size_t)(w->ninputs + w->noutputs) * sizeof(struct inferd_wire_tensor_info);
	return len - sizeof *w >= *tables ? 0 : -1;
}

/* Fill the model's tensor tables from the wire's, right after the fixed part. */
static int
inferd__model_tensors(struct inferd_model *m, struct inferd_tensor_info *t, const uint8_t *p,
    uint32_t n)
{
	struct inferd_wire_tensor_info w;
	uint32_t i;

	for (i = 0; i < n; i++) {
		memcpy(&w, p + i * sizeof w, sizeof w);
		if (inferd__tensor_info(&w, &t[i]) != 0)
			return -1;
	}
	m->inputs = t;
	m->outputs = t + m->ninputs;
	return 0;
}

/* Build the public model (its tensors, its labels) from MODEL_INFO. */
int
inferd__model_build(const uint8_t *p, uint32_t len, struct inferd_model **out)
{
	struct inferd_wire_model_info w;
	struct inferd_tensor_info *tensors;
	struct inferd_model *m;
	const char **labels;
	size_t rest, tables, i;
	char *text;

	if (len < sizeof w)
		return inferd__fail(INFERD_EPROTO, "MODEL_INFO of %u bytes", len);
	memcpy(&w, p, sizeof w);
	if (inferd__model_info_ok(&w, len, &tables) != 0)
		return inferd__fail(INFERD_EPROTO, "malformed MODEL_INFO");
	rest = len - sizeof w - tables;
	if (!inferd__labels_ok(p + sizeof w + tables, rest, w.nlabels))
		return inferd__fail(INFERD_EPROTO, "malformed MODEL_INFO labels");
	if ((m = calloc(1, sizeof *m + (w.ninputs + w.noutputs) * sizeof *tensors +
	    w.nlabels * sizeof(char *) + rest)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	m->id = w.id;
	memcpy(m->name, w.name, sizeof m->name);
	memcpy(m->input_name, w.input_name, sizeof m->input_name);
	memcpy(m->output_name, w.output_name, sizeof m->output_name);
	m->max_batch_size = (int)w.max_batch_size;
	m->input_ndims = (int)w.input_ndims;
	m->output_ndims = (int)w.output_ndims;
	memcpy(m->input_dims, w.input_dims, sizeof m->input_dims);
	memcpy(m->output_dims, w.output_dims, sizeof m->output_dims);
	m->input_row_bytes = w.input_row_bytes;
	m->output_row_bytes = w.output_row_bytes;
	m->ninputs = (int)w.ninputs;
	m->noutputs = (int)w.noutputs;
	tensors = (struct inferd_tensor_info *)(m + 1);
	if (inferd__model_tensors(m, tensors, p + sizeof w, w.ninputs + w.noutputs) != 0) {
		free(m);
		return inferd__fail(INFERD_EPROTO, "malformed MODEL_INFO tensor");
	}
	m->datatype = m->inputs[0].datatype;
	labels = (const char **)(tensors + w.ninputs + w.noutputs);
	text = (char *)(labels + w.nlabels);
	memcpy(text, p + sizeof w + tables, rest);
	for (i = 0; i < w.nlabels; i++) {
		labels[i] = text;
		text += strlen(text) + 1;
	}
	m->nlabels = w.nlabels;
	m->labels = labels;
	*out = m;
	return 0;
}

/* Room for the model cache. */
unsigned
inferd__models_cap(unsigned nmodels)
{
	return nmodels > INFERD__MODELS_MIN ? nmodels : INFERD__MODELS_MIN;
}

/* Ask the daemon for a model by name (and version, 0: the newest) or id and cache it. */
int
inferd__model_query(inferd_conn_t *c, const char *name, int64_t version, unsigned id,
    const struct inferd_model **out)
{
	struct inferd_model *model = NULL;
	int r;

	if (c->closed)
		return inferd__closed(c);
	if ((r = inferd__model_fetch(c, name, version, id, &model)) != 0)
		return r == INFERD_ECLOSED ? inferd__closed(c) : r;
	id = model->id;
	if (id >= c->models_cap) {
		free(model);
		return inferd__fail(INFERD_EPROTO, "model id %u out of range", id);
	}
	if (id >= c->nmodels)
		c->nmodels = id + 1;	/* a model the daemon loaded after the hello */
	if (c->models[id] == NULL)
		c->models[id] = model;
	else
		free(model);
	*out = c->models[id];
	return 0;
}

/*
 * Ask the daemon for a model by name (or else id): a new struct in *out.
 * A version other than 0 follows the name on the wire (that version's own id).
 */
int
inferd__model_fetch(inferd_conn_t *c, const char *name, int64_t version, unsigned id,
    struct inferd_model **out)
{
	struct {
		struct inferd_wire_model_query q;
		char name[INFERD_WIRE_NAME_MAX + sizeof(int64_t)];
	} m;
	size_t n = name ? strlen(name) : 0, extra = name != NULL && version != 0 ? sizeof version : 0;
	uint8_t *p;
	uint32_t len;
	int r;

	if (n >= INFERD_WIRE_NAME_MAX)
		return inferd__fail(INFERD_ENOMODEL, "model name '%s' is too long", name);
	m.q.id = id;
	m.q.name_length = (uint32_t)n;
	memcpy(m.name, name ? name : "", n);
	memcpy(m.name + n, &version, extra);
	if ((r = inferd__send(c->control_fd, INFERD_WIRE_MODEL_QUERY, &m, sizeof m.q + n + extra, NULL, 0)) != 0 ||
	    (r = inferd__recv(c->control_fd, INFERD_WIRE_MODEL_INFO, &p, &len, c->timeout_ms)) != 0)
		return r;
	r = inferd__model_build(p, len, out);
	free(p);
	if (r == 0)
		(*out)->version = extra ? version : 0;
	return r;
}
