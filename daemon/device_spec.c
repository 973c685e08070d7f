/* device_spec.c: parsing "auto", "cpu" and "cuda:N" (see device_spec.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "device_spec.h"
#include "error.h"

/* The ordinal of "cuda:N" (or "cuda": 0); -1 when text names no CUDA device. */
int
device_spec_cuda(const char *text)
{
	const char *p;
	char *end;
	long n;

	if (strcmp(text, "cuda") == 0)
		return 0;
	if (strncmp(text, "cuda:", 5) != 0)
		return -1;
	p = text + 5;
	/* Digits only: strtol alone would take "+1", " 1" or "-0". */
	if (*p == '\0' || strspn(p, "0123456789") != strlen(p))
		return -1;
	errno = 0;
	n = strtol(p, &end, 10);
	if (errno != 0 || *end != '\0' || n > INT_MAX)
		return -1;
	return (int)n;
}

/* Parse text into *out; -1 with *cause. */
int
device_spec_parse(const char *text, struct device_spec *out, char **cause)
{
	out->ordinal = 0;
	if (strcmp(text, "auto") == 0)
		out->kind = DEVICE_SPEC_AUTO;
	else if (strcmp(text, "cpu") == 0)
		out->kind = DEVICE_SPEC_CPU;
	else if ((out->ordinal = device_spec_cuda(text)) >= 0)
		out->kind = DEVICE_SPEC_CUDA;
	else
		return error_set(cause, "'%s' is not auto, cpu or cuda:N", text);
	return 0;
}
