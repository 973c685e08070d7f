/* bench_args.c: the command-line value parsers inferd-bench and inferd-bench-engine share. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

/* The program name usage errors start with; each main sets it. */
const char *bench_prog = "inferd-bench";

/* Print a usage error and exit 2. */
void
bench_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", bench_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

/* Parse a positive integer in [lo, hi], or exit. */
long long
bench_parse_int(const char *name, const char *s, long long lo, long long hi)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0' || v < lo || v > hi)
		bench_usage_error("--%s must be an integer from %lld to %lld", name, lo, hi);
	return v;
}

/* Parse seconds in [lo, hi], or exit. */
double
bench_parse_seconds(const char *name, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *s == '\0' || *end != '\0' || !(v >= lo && v <= hi))
		bench_usage_error("--%s must be a number of seconds from %g to %g", name, lo, hi);
	return v;
}

/* Parse a byte count with an optional K, M or G suffix (powers of 1024), or exit. */
size_t
bench_parse_bytes(const char *name, const char *s)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		mul = 1ull << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1ull << 30;
	if (mul != 1)
		end++;
	if (errno != 0 || *s == '\0' || *s == '-' || *end != '\0' || v == 0 ||
	    v > (16ull << 30) / mul)
		bench_usage_error("--%s must be a byte count from 1 to 16G", name);
	return (size_t)(v * mul);
}
