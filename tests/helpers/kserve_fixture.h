/* kserve_fixture.h: the hand-described model the KServe codec tests and fuzz target decode against. */
#ifndef INFERD_TESTS_KSERVE_FIXTURE_H
#define INFERD_TESTS_KSERVE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "kserve.h"
#include "model.h"

#define ROWS_MAX 4
#define IN_ELEMS 6
#define OUT_ELEMS 2

/* Fill m: input "input" [2,3], output "out" [2], batches up to 4 (no weights: the codec needs none). */
static inline void
kserve_fixture_model(model_t *m)
{
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "tiny");
	m->version = 1;
	m->max_batch_size = ROWS_MAX;
	snprintf(m->input.name, sizeof m->input.name, "input");
	snprintf(m->input.datatype, sizeof m->input.datatype, "FP32");
	m->input.ndims = 2;
	m->input.dims[0] = 2;
	m->input.dims[1] = 3;
	m->input.row_elems = IN_ELEMS;
	snprintf(m->output.name, sizeof m->output.name, "out");
	snprintf(m->output.datatype, sizeof m->output.datatype, "FP32");
	m->output.ndims = 1;
	m->output.dims[0] = 2;
	m->output.row_elems = OUT_ELEMS;
	m->input.dtype = m->output.dtype = GRAPH_DT_F32;
	memcpy(m->input.max_dims, m->input.dims, sizeof m->input.dims);
	memcpy(m->output.max_dims, m->output.dims, sizeof m->output.dims);
	memset(m->input.var, -1, sizeof m->input.var);
	memset(m->output.var, -1, sizeof m->output.var);
	m->ninputs = m->noutputs = 1;
	m->inputs[0] = m->input;
	m->outputs[0] = m->output;
}

/* Staging buffer floats for any request of the fixture: inputs, then outputs, each aligned. */
#define FIXTURE_BUF_FLOATS (ROWS_MAX * IN_ELEMS + KSERVE_TENSOR_ALIGN / 4 + ROWS_MAX * OUT_ELEMS)

/* Encode rows rows of the fixture's one output at out, as JSON or binary, through kserve_encode_infer. */
static inline char *
kserve_fixture_encode(const model_t *m, const char *id, int rows, int binary, const float *out,
    size_t *len, size_t *header_len, char **cause)
{
	struct kserve_infer ki;

	memset(&ki, 0, sizeof ki);
	ki.rows = ki.shape.rows = rows;
	if (model_output_layout(m, &ki.shape, &ki.layout, cause) != 0)
		return NULL;
	ki.output_len[0] = (size_t)rows * m->outputs[0].row_elems * sizeof(float);
	ki.nwanted = 1;
	ki.binary[0] = ki.binary_output = binary;
	return kserve_encode_infer(m, id, &ki, out, len, header_len, cause);
}

#endif
