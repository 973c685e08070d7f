/* inferctl.h: what inferctl's shm and HTTP halves share. */
#ifndef INFERCTL_H
#define INFERCTL_H

#include <stddef.h>
#include <stdint.h>

#include "inferd.h"

/* A model as inferctl needs it, whichever way it was fetched. */
struct ctl_model {
	char name[128];
	char input_name[128], output_name[128];
	int max_batch_size;
	int in_ndims, out_ndims;
	int64_t in_dims[8], out_dims[8];
	size_t in_elems, out_elems;	/* floats per row */
	size_t nlabels;
	char **labels;			/* owned, may be NULL */
};

/* Where the HTTP server is. */
struct ctl_http {
	char host[256];
	char port[16];
};

/* One --input NAME=FILE. */
struct ctl_input {
	const char *name;
	const char *path;
};

/* inferctl_tensors.c: run named .npy inputs over shm and print every output; print every tensor. */
int ctl_shm_infer_named(inferd_conn_t *c, const struct inferd_model *m, const struct ctl_input *args, int n);
void ctl_print_model_tensors(const struct inferd_model *m);

/* Print each output row and its argmax (with the class name when known). */
void ctl_print_output(const struct ctl_model *m, int rows, const float *out);
/* Free the labels. */
void ctl_model_free(struct ctl_model *m);

/* The HTTP half; each prints its own error and returns -1 on failure. */
int ctl_http_health(const struct ctl_http *h);
int ctl_http_models(const struct ctl_http *h);
int ctl_http_model(const struct ctl_http *h, const char *name, struct ctl_model *m);
/* `model NAME`: every input and output from the model's configuration, as shm prints them. */
int ctl_http_print_model(const struct ctl_http *h, const char *name);
int ctl_http_infer(const struct ctl_http *h, const struct ctl_model *m, int rows,
    const float *in, float *out);
/* The repository API (HTTP only): load (config: NULL or a JSON object text; verb: "loaded" or "reloaded"), unload, index. */
int ctl_http_load(const struct ctl_http *h, const char *name, const char *config, const char *verb);
int ctl_http_unload(const struct ctl_http *h, const char *name);
int ctl_http_index(const struct ctl_http *h);

#endif
