/*
 * device_spec.h: the one parser of device names — "auto", "cpu", "cuda:N"
 * (N a decimal ordinal, 0 .. INT_MAX) and "cuda" for cuda:0 — shared by the
 * configuration check and device_open, so that what the configuration
 * accepts is exactly what the device layer opens.
 */
#ifndef INFERD_DEVICE_SPEC_H
#define INFERD_DEVICE_SPEC_H

#ifdef __cplusplus
extern "C" {
#endif

enum device_spec_kind {
	DEVICE_SPEC_AUTO,		/* CUDA device 0 when there is one, else the CPU */
	DEVICE_SPEC_CPU,
	DEVICE_SPEC_CUDA,
};

struct device_spec {
	enum device_spec_kind kind;
	int ordinal;			/* DEVICE_SPEC_CUDA: the device number */
};

/* Parse text into *out; -1 with *cause naming the text and the accepted forms. */
int device_spec_parse(const char *text, struct device_spec *out, char **cause);

/* The ordinal of "cuda:N" (or "cuda": 0); -1 when text names no CUDA device. */
int device_spec_cuda(const char *text);

#ifdef __cplusplus
}
#endif

#endif
