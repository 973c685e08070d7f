/* inferctl_model.c: printing and freeing a model as inferctl's shm and HTTP halves both see it. */
#include <stdio.h>
#include <stdlib.h>

#include "inferctl.h"

/* Print a shape "[d0, d1, ...]" with an optional leading batch dimension. */
static void
print_dims(const int64_t *dims, int n)
{
	int i;

	printf("[-1");
	for (i = 0; i < n; i++)
		printf(", %lld", (long long)dims[i]);
	printf("]");
}

/* Print a model's metadata. */
void
ctl_print_model(const struct ctl_model *m)
{
	size_t i;

	printf("name: %s\n", m->name);
	if (m->max_batch_size > 0)
		printf("max_batch_size: %d\n", m->max_batch_size);
	printf("input: %s FP32 ", m->input_name);
	print_dims(m->in_dims, m->in_ndims);
	printf("\noutput: %s FP32 ", m->output_name);
	print_dims(m->out_dims, m->out_ndims);
	printf("\n");
	if (m->nlabels > 0) {
		printf("labels:");
		for (i = 0; i < m->nlabels; i++)
			printf(" %zu=\"%s\"", i, m->labels[i]);
		printf("\n");
	}
}

/* Print each output row and its argmax (with the class name when known). */
void
ctl_print_output(const struct ctl_model *m, int rows, const float *out)
{
	size_t j, best;
	int r;

	for (r = 0; r < rows; r++) {
		const float *row = out + (size_t)r * m->out_elems;

		printf("row %d:", r);
		for (j = 0, best = 0; j < m->out_elems; j++) {
			printf(" %.9g", row[j]);
			if (row[j] > row[best])
				best = j;
		}
		printf("\nrow %d: class %zu", r, best);
		if (best < m->nlabels)
			printf(" \"%s\"", m->labels[best]);
		printf("\n");
	}
}

/* Free the labels. */
void
ctl_model_free(struct ctl_model *m)
{
	size_t i;

	for (i = 0; i < m->nlabels; i++)
		free(m->labels[i]);
	free(m->labels);
	m->labels = NULL;
	m->nlabels = 0;
}
