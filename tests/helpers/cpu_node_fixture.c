/* cpu_node_fixture.c: a one-node graph built by hand for the CPU kernel tests. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_node_fixture.h"

/* Start a node. */
void
fix_init(struct fix *f, enum graph_op op)
{
	memset(f, 0, sizeof(*f));
	f->g.tensors = f->t;
	f->g.nodes = &f->n;
	f->g.nnodes = 1;
	f->n.name = "test_node";
	f->n.op = op;
	f->n.inputs = f->in;
	f->n.outputs = f->out;
}

/* Add a tensor with zeroed memory (at least one byte so a pointer exists). */
int
fix_tensor(struct fix *f, enum graph_dtype dt, int ndims, const int64_t *dims)
{
	int i = (int)f->g.ntensors++;
	size_t es = dt == GRAPH_DT_F32 || dt == GRAPH_DT_I32 ? 4 : dt == GRAPH_DT_I64 ? 8 :
	    dt == GRAPH_DT_F16 ? 2 : 1, n = 1;

	if (i >= FIX_MAX_TENSORS) {
		fprintf(stderr, "fixture: too many tensors\n");
		exit(1);
	}
	f->t[i].dtype = dt;
	f->t[i].ndims = ndims;
	f->s[i].ndims = ndims;
	for (int k = 0; k < ndims; k++) {
		f->t[i].dims[k] = f->s[i].dims[k] = dims[k];
		n *= (size_t)dims[k];
	}
	f->p[i] = calloc(n > 0 ? n : 1, es);
	if (f->p[i] == NULL) {
		fprintf(stderr, "fixture: out of memory\n");
		exit(1);
	}
	return i;
}

/* Next input. */
void *
fix_input(struct fix *f, enum graph_dtype dt, int ndims, const int64_t *dims)
{
	int i = fix_tensor(f, dt, ndims, dims);

	f->in[f->n.ninputs++] = i;
	return f->p[i];
}

/* An omitted optional input. */
void
fix_omit(struct fix *f)
{
	f->in[f->n.ninputs++] = -1;
}

/* Next output. */
void *
fix_output(struct fix *f, enum graph_dtype dt, int ndims, const int64_t *dims)
{
	int i = fix_tensor(f, dt, ndims, dims);

	f->out[f->n.noutputs++] = i;
	return f->p[i];
}

/* Check support, allocate the workspace, run. */
int
fix_run(struct fix *f, char **cause)
{
	size_t ws;
	void *w = NULL;
	int rc;

	if (!cpu_node_supported(&f->g, &f->n, cause))
		return -1;
	ws = cpu_node_workspace(&f->g, &f->n, f->s);
	if (ws > 0 && (w = malloc(ws)) == NULL) {
		fprintf(stderr, "fixture: out of memory\n");
		exit(1);
	}
	rc = cpu_node_run(&f->g, &f->n, f->s, f->p, w, cause);
	free(w);
	return rc;
}

/* Free tensor memory. */
void
fix_free(struct fix *f)
{
	for (size_t i = 0; i < f->g.ntensors; i++)
		free(f->p[i]);
	f->g.ntensors = 0;
}
