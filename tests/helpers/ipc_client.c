/*
 * ipc_client.c: a libinferd client for the IPC tests.
 *
 *   ipc_client SOCKET seq IN.bin OUT.bin R1 [R2 ...]
 *       run the rows of IN.bin (float32) as sequential synchronous requests
 *       of R1, R2, ... rows and write every output to OUT.bin
 *   ipc_client SOCKET load IN.bin REF.bin NREQ DEPTH SEED
 *       NREQ one-row requests picked from IN.bin's rows, DEPTH in flight at
 *       once; each output must match the row's reference in REF.bin
 *   ipc_client SOCKET errors
 *       library-side checks: bad arguments, unknown model, a full region
 *   ipc_client SOCKET hold MODEL [VERSION]
 *       look MODEL (that VERSION) up once, then one request per line read from stdin,
 *       printing "ok CLASS" or "error: TEXT (DETAIL)" for each (the model
 *       may be unloaded and loaded again in between); a line "model NAME"
 *       looks NAME up instead ("ok model NAME"), for a model loaded since
 *       (its tensors must have the first model's row sizes)
 *   ipc_client SOCKET outdims MODEL IN.bin OUT.bin ROWS D1 [D2 ...]
 *       one request of MODEL (one FP32 input of ROWS x D1 x D2 ... from
 *       IN.bin) with every output given without dims: inferd_output_dims
 *       prints "dims NAME d1 d2 ...", then inferd_run and inferd_submit run
 *       it (libinferd fills the dims) and must give the same bytes, which go
 *       to OUT.bin output after output; a shape the model refuses prints
 *       "refused CALL: CODE: MESSAGE" for each of the three, exit 3
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferd.h"

/* Relative tolerance against the reference: batching may reorder the sums. */
#define LOAD_TOLERANCE 1e-4

/* Read a whole file of float32 values. */
static float *
read_floats(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	float *buf;
	long len;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0 || len % 4 != 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)len)) == NULL ||
	    fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "ipc_client: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*n = (size_t)len / 4;
	return buf;
}

/* Connect and find fashion-mlp (or the model $IPC_CLIENT_MODEL names), or exit. */
static inferd_conn_t *
open_model(const char *sock, const struct inferd_model **m)
{
	const char *name = getenv("IPC_CLIENT_MODEL");
	inferd_conn_t *c;
	int r;

	if ((r = inferd_connect(sock, NULL, &c)) != 0 ||
	    (r = inferd_model_get(c, name != NULL ? name : "fashion-mlp", m)) != 0) {
		fprintf(stderr, "ipc_client: %s: %s\n", inferd_strerror(r), inferd_last_error());
		exit(1);
	}
	return c;
}

/* Sequential synchronous requests; outputs appended to out_path. */
static int
run_seq(const char *sock, const char *in_path, const char *out_path, int argc, char **argv)
{
	const struct inferd_model *m;
	struct inferd_tensor ti, to;
	inferd_conn_t *c = open_model(sock, &m);
	size_t n, row_in, used = 0;
	float *in = read_floats(in_path, &n);
	FILE *out = fopen(out_path, "wb");
	int i, rows, r;

	row_in = m->input_row_bytes / 4;
	if (out == NULL || inferd_tensor_alloc(c, 256 * m->input_row_bytes, &ti) != 0 ||
	    inferd_tensor_alloc(c, 256 * m->output_row_bytes, &to) != 0)
		return 2;
	for (i = 0; i < argc; i++) {
		rows = atoi(argv[i]);
		if (rows < 1 || (used + (size_t)rows) * row_in > n) {
			fprintf(stderr, "ipc_client: not enough input rows for %d more\n", rows);
			return 2;
		}
		memcpy(ti.data, in + used * row_in, (size_t)rows * m->input_row_bytes);
		if ((r = inferd_infer(c, m, rows, &ti, &to, 0)) != 0) {
			fprintf(stderr, "ipc_client: infer: %s: %s\n", inferd_strerror(r), inferd_last_error());
			return 1;
		}
		fwrite(to.data, 1, (size_t)rows * m->output_row_bytes, out);
		used += (size_t)rows;
	}
	free(in);
	inferd_close(c);
	return fclose(out) == 0 ? 0 : 2;
}

/* Normwise relative difference of a row against its reference. */
static double
rel_diff(const float *y, const float *ref, size_t n)
{
	double num = 0, den = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		num = fmax(num, fabs((double)y[i] - ref[i]));
		den = fmax(den, fabs((double)ref[i]));
	}
	return den > 0 ? num / den : num;
}

/* Check one completion of the load run; returns 1 on a wrong answer. */
static int
load_check(const struct inferd_model *m, const struct inferd_completion *cp,
    struct inferd_tensor *outs, const int *pick, const float *ref, int *slot_free)
{
	size_t out_n = m->output_row_bytes / 4;
	int slot = (int)(cp->user_data & 0xffff);
	int bad = 0;

	if (cp->status != 0) {
		fprintf(stderr, "ipc_client: request %llu failed: %s\n",
		    (unsigned long long)(cp->user_data >> 16), inferd_strerror(cp->status));
		bad = 1;
	} else if (rel_diff(outs[slot].data, ref + (size_t)pick[slot] * out_n, out_n) > LOAD_TOLERANCE) {
		fprintf(stderr, "ipc_client: request %llu (row %d): wrong output\n",
		    (unsigned long long)(cp->user_data >> 16), pick[slot]);
		bad = 1;
	}
	slot_free[slot] = 1;
	return bad;
}

/* Many pipelined requests, each answer checked against its reference. */
static int
run_load(const char *sock, const char *in_path, const char *ref_path, int nreq, int depth,
    unsigned seed)
{
	const struct inferd_model *m;
	inferd_conn_t *c = open_model(sock, &m);
	size_t n_in, n_ref, rows, row_in;
	float *in = read_floats(in_path, &n_in), *ref = read_floats(ref_path, &n_ref);
	struct inferd_tensor *tin = calloc((size_t)depth, sizeof *tin), *tout = calloc((size_t)depth, sizeof *tout);
	struct inferd_completion done[64];
	int *pick = calloc((size_t)depth, sizeof *pick), *slot_free = calloc((size_t)depth, sizeof *slot_free);
	int sent = 0, got = 0, bad = 0, status = 2, s, k, r;

	row_in = m->input_row_bytes / 4;
	rows = n_in / row_in;
	if (tin == NULL || tout == NULL || pick == NULL || slot_free == NULL || rows == 0 ||
	    n_ref != rows * (m->output_row_bytes / 4))
		goto out;
	for (s = 0; s < depth; s++) {
		if (inferd_tensor_alloc(c, m->input_row_bytes, &tin[s]) != 0 ||
		    inferd_tensor_alloc(c, m->output_row_bytes, &tout[s]) != 0)
			goto out;
		slot_free[s] = 1;
	}
	while (got < nreq) {
		for (s = 0; s < depth && sent < nreq; s++) {
			struct inferd_request req = { .size = sizeof req, .model = m, .rows = 1,
			    .input = &tin[s], .output = &tout[s] };

			if (!slot_free[s])
				continue;
			seed = seed * 1103515245u + 12345u;
			pick[s] = (int)((seed >> 8) % rows);
			memcpy(tin[s].data, in + (size_t)pick[s] * row_in, m->input_row_bytes);
			memset(tout[s].data, 0, m->output_row_bytes);
			req.user_data = (uint64_t)sent << 16 | (uint64_t)s;
			if ((r = inferd_submit(c, &req)) != 0) {
				fprintf(stderr, "ipc_client: submit: %s: %s\n", inferd_strerror(r), inferd_last_error());
				status = 1;
				goto out;
			}
			slot_free[s] = 0;
			sent++;
		}
		if ((r = inferd_wait(c, done, 64, 30000)) <= 0) {
			fprintf(stderr, "ipc_client: wait: %s\n", r == 0 ? "nothing completed in 30 s" : inferd_last_error());
			status = 1;
			goto out;
		}
		for (k = 0; k < r; k++)
			bad += load_check(m, &done[k], tout, pick, ref, slot_free);
		got += r;
	}
	printf("ipc_client: %d requests, %d wrong\n", got, bad);
	status = bad ? 1 : 0;
out:
	inferd_close(c);
	free(in);
	free(ref);
	free(tin);
	free(tout);
	free(pick);
	free(slot_free);
	return status;
}

/* One connection and one model lookup; a request per line of stdin. */
static int
run_hold(const char *sock, const char *name, long long version)
{
	const struct inferd_model *m;
	struct inferd_tensor in, out;
	inferd_conn_t *c;
	char line[64];
	size_t i, best;
	int r;

	if ((r = inferd_connect(sock, NULL, &c)) != 0 || (r = inferd_model_get_version(c, name, version, &m)) != 0 ||
	    (r = inferd_tensor_alloc(c, m->input_row_bytes, &in)) != 0 ||
	    (r = inferd_tensor_alloc(c, m->output_row_bytes, &out)) != 0) {
		fprintf(stderr, "ipc_client: %s (%s)\n", inferd_strerror(r), inferd_last_error());
		return 2;
	}
	for (i = 0; i < m->input_row_bytes / 4; i++)
		((float *)in.data)[i] = (float)(i % 7) / 7.0f;
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "model ", 6) == 0) {
			if ((r = inferd_model_get(c, line + 6, &m)) != 0)
				printf("error: %s (%s)\n", inferd_strerror(r), inferd_last_error());
			else
				printf("ok model %s\n", m->name);
		} else if ((r = inferd_infer(c, m, 1, &in, &out, 0)) != 0) {
			printf("error: %s (%s)\n", inferd_strerror(r), inferd_last_error());
		} else {
			for (i = 1, best = 0; i < m->output_row_bytes / 4; i++)
				if (((float *)out.data)[i] > ((float *)out.data)[best])
					best = i;
			printf("ok %zu\n", best);
		}
		fflush(stdout);
	}
	inferd_close(c);
	return 0;
}

/* A tensor for rows rows of output o at its largest dims. */
static int
outdims_alloc(inferd_conn_t *c, const struct inferd_model *m, int o, int rows, struct inferd_tensor *t)
{
	size_t bytes = m->outputs[o].elem_bytes * (size_t)rows;
	int d;

	for (d = 0; d < m->outputs[o].ndims; d++)
		bytes *= (size_t)m->outputs[o].max_dims[d];
	return inferd_tensor_alloc(c, bytes, t);
}

/* Bytes of rows rows of an output of dims io gives. */
static size_t
outdims_bytes(const struct inferd_tensor_info *t, const struct inferd_io *io, int rows)
{
	size_t n = t->elem_bytes * (size_t)rows;
	int d;

	for (d = 0; d < io->ndims; d++)
		n *= (size_t)io->dims[d];
	return n;
}

/* Run req by inferd_run (how 0) or by inferd_submit and inferd_wait (1); 0, or the refusing call's code (printed). */
static int
outdims_run(inferd_conn_t *c, const struct inferd_request *req, int how)
{
	struct inferd_completion done;
	int r = how == 0 ? inferd_run(c, req) : inferd_submit(c, req);

	if (r != 0) {
		printf("refused %s: %s: %s\n", how == 0 ? "inferd_run" : "inferd_submit", inferd_strerror(r),
		    inferd_last_error());
		return r;
	}
	if (how == 1 && ((r = inferd_wait(c, &done, 1, 30000)) != 1 || done.status != 0)) {
		fprintf(stderr, "ipc_client: wait: %d, status %d (%s)\n", r, r == 1 ? done.status : 0,
		    inferd_last_error());
		return INFERD_EINTERNAL;
	}
	return 0;
}

/*
 * Compare the two runs' outputs (tensors a and b, dims of each in dims)
 * and write them to f; 0 when they are the same bytes.
 */
static int
outdims_write(const struct inferd_model *m, int rows, const struct inferd_io *dims, const struct inferd_tensor *a,
    const struct inferd_tensor *b, FILE *f)
{
	size_t n;
	int o, bad = 0;

	for (o = 0; o < m->noutputs; o++) {
		n = outdims_bytes(&m->outputs[o], &dims[o], rows);
		if (memcmp(a[o].data, b[o].data, n) != 0) {
			fprintf(stderr, "ipc_client: output '%s': inferd_run and inferd_submit differ\n", m->outputs[o].name);
			bad = 1;
		}
		fwrite(a[o].data, 1, n, f);
	}
	return fclose(f) == 0 && !bad ? 0 : 1;
}

/* Print the dims inferd_output_dims gave; 0, or its code (printed as a refusal). */
static int
outdims_ask(inferd_conn_t *c, const struct inferd_model *m, int rows, const struct inferd_io *in,
    struct inferd_io *dims)
{
	int o, d, r;

	for (o = 0; o < m->noutputs; o++)
		dims[o].name = m->outputs[o].name;
	if ((r = inferd_output_dims(c, m, rows, in, 1, dims, m->noutputs)) != 0) {
		printf("refused inferd_output_dims: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return r;
	}
	for (o = 0; o < m->noutputs; o++) {
		printf("dims %s", dims[o].name);
		for (d = 0; d < dims[o].ndims; d++)
			printf(" %lld", (long long)dims[o].dims[d]);
		printf("\n");
	}
	return 0;
}

/* The outdims command (see the top of the file). */
static int
run_outdims(const char *sock, const char *name, const char *in_path, const char *out_path, int rows,
    int nd, char **dv)
{
	struct inferd_io in = { 0 }, dims[16] = { { 0 } }, outs[2][16] = { { { 0 } } };
	struct inferd_tensor tin, tout[2][16];
	struct inferd_request req = INFERD_REQUEST_INIT;
	const struct inferd_model *m;
	inferd_conn_t *c;
	FILE *f;
	size_t n, bytes = 4 * (size_t)rows;
	float *data = read_floats(in_path, &n);
	int o, d, k, rs[3], r;

	setenv("IPC_CLIENT_MODEL", name, 1);
	c = open_model(sock, &m);
	in.name = m->inputs[0].name;
	in.ndims = nd;
	for (d = 0; d < nd && d < 8; d++)
		bytes *= (size_t)(in.dims[d] = atoll(dv[d]));
	if (m->ninputs != 1 || n * 4 != bytes || inferd_tensor_alloc(c, bytes, &tin) != 0)
		return 2;
	memcpy(tin.data, data, bytes);
	in.tensor = &tin;
	for (k = 0; k < 2; k++)
		for (o = 0; o < m->noutputs; o++) {
			if ((r = outdims_alloc(c, m, o, rows, &tout[k][o])) != 0)
				return 2;
			outs[k][o].name = m->outputs[o].name;
			outs[k][o].tensor = &tout[k][o];
		}
	rs[0] = outdims_ask(c, m, rows, &in, dims);
	req.model = m;
	req.rows = rows;
	req.ninputs = 1;
	req.inputs = &in;
	req.noutputs = m->noutputs;
	for (k = 0; k < 2; k++) {
		req.outputs = outs[k];
		rs[k + 1] = outdims_run(c, &req, k);
	}
	free(data);
	if (rs[0] != 0 || rs[1] != 0 || rs[2] != 0) {
		inferd_close(c);
		return rs[0] == INFERD_ESHAPE && rs[1] == INFERD_ESHAPE && rs[2] == INFERD_ESHAPE ? 3 : 1;
	}
	if ((f = fopen(out_path, "wb")) == NULL) {
		inferd_close(c);
		return 2;
	}
	r = outdims_write(m, rows, dims, tout[0], tout[1], f);
	inferd_close(c);
	return r;
}

/* Errors the library itself reports. */
static int
run_errors(const char *sock)
{
	struct inferd_options small = { .size = sizeof small, .region_bytes = 1 << 20, .sq_entries = 4 };
	const struct inferd_model *m;
	struct inferd_tensor t, big, out;
	inferd_conn_t *c;
	int fails = 0, r;

#define EXPECT(call, code) do {							\
	if ((r = (call)) != (code)) {						\
		fprintf(stderr, "FAIL %s: %d (%s), expected %d\n", #call, r,	\
		    inferd_last_error(), code);					\
		fails++;							\
	}									\
} while (0)
	EXPECT(inferd_connect("/nonexistent/inferd.sock", NULL, &c), INFERD_ECONNECT);
	EXPECT(inferd_connect(sock, &(struct inferd_options){ .size = sizeof(struct inferd_options), .sq_entries = 3 }, &c), INFERD_EINVAL);
	EXPECT(inferd_connect(sock, &(struct inferd_options){ .size = sizeof(struct inferd_options),
	    .region_bytes = (size_t)1 << 40 }, &c), INFERD_EINVAL);
	/* The growable structs: a missing size, or a newer caller's field this library lacks. */
	EXPECT(inferd_connect(sock, &(struct inferd_options){ .region_bytes = 1 << 20 }, &c), INFERD_EINVAL);
	{
		struct { struct inferd_options o; uint64_t newer; } grown = {
			.o = { .size = sizeof grown, .region_bytes = 1 << 20 }, .newer = 1,
		};
		EXPECT(inferd_connect(sock, &grown.o, &c), INFERD_EINVAL);
	}
	EXPECT(inferd_connect(sock, &small, &c), 0);
	if (r != 0)
		return 1;
	EXPECT(inferd_model_get(c, "no-such-model", &m), INFERD_ENOMODEL);
	EXPECT(inferd_model_get_id(c, 1000, &m), INFERD_ENOMODEL);
	EXPECT(inferd_model_get(c, "fashion-mlp", &m), 0);
	EXPECT(inferd_tensor_alloc(c, 2 << 20, &big), INFERD_ENOSPACE);
	EXPECT(inferd_tensor_alloc(c, m->input_row_bytes, &t), 0);
	EXPECT(inferd_tensor_alloc(c, m->output_row_bytes, &out), 0);
	EXPECT(inferd_infer(c, m, 2, &t, &out, 0), INFERD_EINVAL);
	EXPECT(inferd_infer(c, m, 0, &t, &out, 0), INFERD_EINVAL);
	EXPECT(inferd_submit(c, &(struct inferd_request){ .model = m, .rows = 1, .input = &t,
	    .output = &out }), INFERD_EINVAL);
	memset(t.data, 0, m->input_row_bytes);
	EXPECT(inferd_infer(c, m, 1, &t, &out, 0), 0);
	inferd_tensor_free(c, &t);
	inferd_tensor_free(c, &out);
	/* Everything freed: the whole data area is one block again. */
	EXPECT(inferd_tensor_alloc(c, (1 << 20) - 16384, &big), 0);
	printf("ipc_client: %s (%s)\n", inferd_strerror(INFERD_EBUSY), inferd_version());
	inferd_close(c);
	return fails ? 1 : 0;
#undef EXPECT
}

int
main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[2], "seq") == 0)
		return run_seq(argv[1], argv[3], argv[4], argc - 5, argv + 5);
	if (argc == 8 && strcmp(argv[2], "load") == 0)
		return run_load(argv[1], argv[3], argv[4], atoi(argv[5]), atoi(argv[6]),
		    (unsigned)strtoul(argv[7], NULL, 10));
	if (argc == 3 && strcmp(argv[2], "errors") == 0)
		return run_errors(argv[1]);
	if (argc >= 8 && strcmp(argv[2], "outdims") == 0)
		return run_outdims(argv[1], argv[3], argv[4], argv[5], atoi(argv[6]), argc - 7, argv + 7);
	if ((argc == 4 || argc == 5) && strcmp(argv[2], "hold") == 0)
		return run_hold(argv[1], argv[3], argc == 5 ? atoll(argv[4]) : 0);
	fprintf(stderr, "usage: ipc_client SOCKET seq IN OUT R1 [R2...] | load IN REF NREQ DEPTH SEED | errors |\n"
	    "       hold MODEL [VERSION] | outdims MODEL IN OUT ROWS D1 [D2...]\n");
	return 2;
}
