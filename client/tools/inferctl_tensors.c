/*
 * inferctl_tensors.c: infer with named inputs over shared memory (--input
 * NAME=FILE, any datatype, .npy files whose shape is [rows, dims...]) and
 * print every output with its datatype and shape; print every tensor of a
 * model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferctl.h"

/* One .npy array. */
struct ctl_array {
	const char *datatype;		/* KServe name */
	size_t elem;
	int ndims;
	int64_t shape[9];
	void *data;
	size_t bytes;
};

/* numpy's dtype strings for the datatypes a model takes. */
static const struct {
	const char *descr, *datatype;
	size_t elem;
} ctl_dtypes[] = {
	{ "<f4", "FP32", 4 }, { "<f2", "FP16", 2 }, { "<i8", "INT64", 8 }, { "<i4", "INT32", 4 },
	{ "|i1", "INT8", 1 }, { "|u1", "UINT8", 1 }, { "|b1", "BOOL", 1 },
};

/* The dtype named by the header's 'descr', or -1. */
static int
ctl_npy_dtype(const char *hdr)
{
	const char *p = strstr(hdr, "'descr':");
	size_t i;

	for (i = 0; p != NULL && i < sizeof ctl_dtypes / sizeof ctl_dtypes[0]; i++)
		if (strncmp(p + 8 + strspn(p + 8, " ") + 1, ctl_dtypes[i].descr, 3) == 0)
			return (int)i;
	return -1;
}

/* The header's 'shape' tuple into a; -1 when malformed. */
static int
ctl_npy_shape(const char *hdr, struct ctl_array *a)
{
	const char *p = strstr(hdr, "'shape':");
	char *end;
	long long v;

	if (p == NULL || (p = strchr(p, '(')) == NULL)
		return -1;
	for (p++, a->ndims = 0; *p != ')'; ) {
		p += strspn(p, " ,");
		if (*p == ')')
			break;
		v = strtoll(p, &end, 10);
		if (end == p || v < 0 || a->ndims == 9)
			return -1;
		a->shape[a->ndims++] = v;
		p = end;
	}
	return 0;
}

/* Load path as a C-order .npy array of one of the model datatypes; -1 (reported) otherwise. */
static int
ctl_npy_load(const char *path, struct ctl_array *a)
{
	unsigned char head[10];
	char hdr[4096];
	size_t hlen, n = 1;
	FILE *f = fopen(path, "rb");
	int t, d;

	memset(a, 0, sizeof *a);
	if (f == NULL || fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0 || head[6] != 1 ||
	    (hlen = (size_t)head[8] | (size_t)head[9] << 8) >= sizeof hdr || fread(hdr, 1, hlen, f) != hlen)
		goto bad;
	hdr[hlen] = '\0';
	if ((t = ctl_npy_dtype(hdr)) < 0 || strstr(hdr, "'fortran_order': False") == NULL ||
	    ctl_npy_shape(hdr, a) != 0 || a->ndims < 1)
		goto bad;
	a->datatype = ctl_dtypes[t].datatype;
	a->elem = ctl_dtypes[t].elem;
	for (d = 0; d < a->ndims; d++)
		n *= (size_t)a->shape[d];
	a->bytes = n * a->elem;
	if ((a->data = malloc(a->bytes ? a->bytes : 1)) == NULL || fread(a->data, 1, a->bytes, f) != a->bytes ||
	    fgetc(f) != EOF)
		goto bad;
	fclose(f);
	return 0;
bad:
	if (f != NULL)
		fclose(f);
	free(a->data);
	a->data = NULL;
	fprintf(stderr, "inferctl: %s: not a C-order .npy file of FP32, FP16, INT64, INT32, INT8, UINT8 or BOOL "
	    "with a batch dimension\n", path);
	return -1;
}

/* Print one tensor line of a model: "input: NAME DTYPE [-1, dims]". */
static void
ctl_print_tensor(const char *side, const struct inferd_tensor_info *t, int batch)
{
	int d;

	printf("%s: %s %s [", side, t->name, t->datatype);
	if (batch)
		printf("-1%s", t->ndims > 0 ? ", " : "");
	for (d = 0; d < t->ndims; d++)
		printf("%s%lld", d ? ", " : "", (long long)t->dims[d]);
	printf("]\n");
}

/* Print a model's metadata with every tensor. */
void
ctl_print_model_tensors(const struct inferd_model *m)
{
	size_t i;
	int k;

	printf("name: %s\n", m->name);
	if (m->max_batch_size > 0)
		printf("max_batch_size: %d\n", m->max_batch_size);
	for (k = 0; k < m->ninputs; k++)
		ctl_print_tensor("input", &m->inputs[k], m->max_batch_size > 0);
	for (k = 0; k < m->noutputs; k++)
		ctl_print_tensor("output", &m->outputs[k], m->max_batch_size > 0);
	if (m->nlabels > 0) {
		printf("labels:");
		for (i = 0; i < m->nlabels; i++)
			printf(" %zu=\"%s\"", i, m->labels[i]);
		printf("\n");
	}
}

/* Print one element of datatype dt. */
static void
ctl_print_elem(const char *dt, const unsigned char *p)
{
	float f;
	int64_t i64;
	int32_t i32;

	if (strcmp(dt, "FP32") == 0) {
		memcpy(&f, p, 4);
		printf(" %.9g", f);
	} else if (strcmp(dt, "INT64") == 0) {
		memcpy(&i64, p, 8);
		printf(" %lld", (long long)i64);
	} else if (strcmp(dt, "INT32") == 0) {
		memcpy(&i32, p, 4);
		printf(" %d", i32);
	} else if (strcmp(dt, "INT8") == 0)
		printf(" %d", (int)(int8_t)*p);
	else if (strcmp(dt, "FP16") == 0)
		printf(" 0x%04x", (unsigned)(p[0] | p[1] << 8));
	else
		printf(" %u", (unsigned)*p);
}

/* Print an output: "output NAME DTYPE [rows, dims]", then its rows. */
static void
ctl_print_io(const struct inferd_tensor_info *t, const struct inferd_io *io, int rows)
{
	const unsigned char *p = io->tensor->data;
	size_t per = 1, k;
	int d, r;

	printf("output %s %s [%d", t->name, t->datatype, rows);
	for (d = 0; d < io->ndims; d++) {
		printf(", %lld", (long long)io->dims[d]);
		per *= (size_t)io->dims[d];
	}
	printf("]\n");
	for (r = 0; r < rows; r++) {
		printf("row %d:", r);
		for (k = 0; k < per; k++, p += t->elem_bytes)
			ctl_print_elem(t->datatype, p);
		printf("\n");
	}
}

/* Output o's dims when the daemon did not give them: fixed, or the input dims (in) they follow. */
static int
ctl_output_local_dims(const struct inferd_model *m, int o, const struct inferd_io *in, struct inferd_io *io)
{
	int d, k, fi;

	io->ndims = m->outputs[o].ndims;
	for (d = 0; d < io->ndims; d++) {
		io->dims[d] = m->outputs[o].dims[d];
		fi = m->outputs[o].follows_input[d];
		for (k = 0; io->dims[d] < 0 && fi >= 0 && k < m->ninputs; k++)
			if (in[k].name != NULL && strcmp(in[k].name, m->inputs[fi].name) == 0)
				io->dims[d] = in[k].dims[m->outputs[o].follows_dim[d]];
		if (io->dims[d] < 0) {
			fprintf(stderr, "inferctl: output '%s' dim %d follows input '%s', which is not given\n",
			    io->name, d + 1, fi >= 0 ? m->inputs[fi].name : "?");
			return -1;
		}
	}
	return 0;
}

/*
 * Fill output o's io for rows rows: its dims (the daemon's, from
 * ctl_output_dims, else fixed or the input dims they follow) and a tensor.
 */
static int
ctl_output(inferd_conn_t *c, const struct inferd_model *m, int o, const struct inferd_io *in,
    int rows, struct inferd_io *io, struct inferd_tensor *t)
{
	size_t bytes = m->outputs[o].elem_bytes * (size_t)rows;
	int d, r;

	io->name = m->outputs[o].name;
	if (io->ndims == 0 && ctl_output_local_dims(m, o, in, io) != 0)
		return -1;
	for (d = 0; d < io->ndims; d++)
		bytes *= (size_t)io->dims[d];
	if ((r = inferd_tensor_alloc(c, bytes, t)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return -1;
	}
	io->tensor = t;
	return 0;
}

/*
 * Ask the daemon for every output's dims when one of them follows no input
 * (computed from the inputs otherwise, as a strided convolution's
 * ceil(T/2)); a model that cannot take the inputs' dims is refused here
 * with the daemon's reason.
 */
static int
ctl_output_dims(inferd_conn_t *c, const struct inferd_model *m, const struct inferd_io *in, int n, int rows,
    struct inferd_io *out)
{
	int o, d, r, need = 0;

	for (o = 0; o < m->noutputs; o++) {
		out[o].name = m->outputs[o].name;
		for (d = 0; d < m->outputs[o].ndims; d++)
			need |= m->outputs[o].dims[d] < 0 && m->outputs[o].follows_input[d] < 0;
	}
	if (need && (r = inferd_output_dims(c, m, rows, in, n, out, m->noutputs)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return -1;
	}
	return 0;
}

/* Load input k's file into the region and describe it in io; rows gets its first dim. */
static int
ctl_input(inferd_conn_t *c, const struct inferd_model *m, const struct ctl_input *arg,
    struct inferd_io *io, struct inferd_tensor *t, int *rows)
{
	struct ctl_array a;
	int d, r;

	if (ctl_npy_load(arg->path, &a) != 0)
		return -1;
	io->name = arg->name;
	io->ndims = a.ndims - (m->max_batch_size > 0);
	for (d = 0; d < io->ndims; d++)
		io->dims[d] = a.shape[d + (m->max_batch_size > 0)];
	*rows = m->max_batch_size > 0 ? (int)a.shape[0] : 1;
	for (d = 0; d < m->ninputs; d++)
		if (strcmp(m->inputs[d].name, arg->name) == 0 && strcmp(m->inputs[d].datatype, a.datatype) != 0) {
			fprintf(stderr, "inferctl: %s: %s values, input '%s' takes %s\n", arg->path, a.datatype,
			    arg->name, m->inputs[d].datatype);
			free(a.data);
			return -1;
		}
	if ((r = inferd_tensor_alloc(c, a.bytes, t)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		free(a.data);
		return -1;
	}
	memcpy(t->data, a.data, a.bytes);
	free(a.data);
	io->tensor = t;
	return 0;
}

/* Run the named inputs through m over shared memory and print every output. */
int
ctl_shm_infer_named(inferd_conn_t *c, const struct inferd_model *m, const struct ctl_input *args, int n)
{
	struct inferd_tensor tin[16] = { 0 }, tout[16] = { 0 };
	struct inferd_io in[16] = { 0 }, out[16] = { 0 };
	struct inferd_request req = INFERD_REQUEST_INIT;
	int i, rows = 0, r, rc = -1;

	for (i = 0; i < n; i++) {
		if (ctl_input(c, m, &args[i], &in[i], &tin[i], &r) != 0)
			goto out;
		if (i > 0 && r != rows) {
			fprintf(stderr, "inferctl: %s has %d rows, %s has %d\n", args[i].path, r, args[0].path, rows);
			goto out;
		}
		rows = r;
	}
	if (ctl_output_dims(c, m, in, n, rows, out) != 0)
		goto out;
	for (i = 0; i < m->noutputs; i++)
		if (ctl_output(c, m, i, in, rows, &out[i], &tout[i]) != 0)
			goto out;
	req.model = m;
	req.rows = rows;
	req.ninputs = n;
	req.inputs = in;
	req.noutputs = m->noutputs;
	req.outputs = out;
	if ((r = inferd_run(c, &req)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		goto out;
	}
	for (i = 0; i < m->noutputs; i++)
		ctl_print_io(&m->outputs[i], &out[i], rows);
	rc = 0;
out:
	for (i = 0; i < 16; i++) {
		if (tin[i].data != NULL)
			inferd_tensor_free(c, &tin[i]);
		if (tout[i].data != NULL)
			inferd_tensor_free(c, &tout[i]);
	}
	return rc;
}
