/* kserve_fixture.h: the hand-described model the KServe codec tests and fuzz target decode against. */
#ifndef INFERD_TESTS_KSERVE_FIXTURE_H
#define INFERD_TESTS_KSERVE_FIXTURE_H

#include <stdio.h>
#include <string.h>

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
}

#endif
