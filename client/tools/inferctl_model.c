/* inferctl_model.c: printing output rows and freeing a model as inferctl's shm and HTTP halves both see it. */
#include <stdio.h>
#include <stdlib.h>

#include "inferctl.h"

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
