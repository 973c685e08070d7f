/* test_cpu_vmath.c: the CPU kernels' array exp, tanh, erf and erfc against libm's double-precision functions. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels_impl.h"
#include "test_util.h"

/* The bound the kernels promise: relative error of the float result against the exact function. */
#define VMATH_RTOL 1e-6

/* Points across [lo, hi]: an even grid with every length's tail (n not a multiple of 16). */
#define VMATH_N 200003

typedef void (*vmath_fn)(float *y, const float *x, int64_t n);

/*
 * Check f on n points of [lo, hi] against ref in double, out of place and in
 * place.  Results below the smallest normal float are compared absolutely
 * (the float cannot hold them to 1e-6 relative).
 */
static void
check_fn(const char *name, vmath_fn f, double (*ref)(double), double lo, double hi)
{
	float *x = malloc(VMATH_N * sizeof *x), *y = malloc(VMATH_N * sizeof *y);
	double worst = 0.0, at = 0.0;

	if (x == NULL || y == NULL) {
		CHECK(0, "out of memory");
		return;
	}
	for (int64_t i = 0; i < VMATH_N; i++)
		x[i] = (float)(lo + (hi - lo) * (double)i / (VMATH_N - 1));
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0)
			f(y, x, VMATH_N);
		else {
			memcpy(y, x, VMATH_N * sizeof *y);
			f(y, y, VMATH_N);
		}
		for (int64_t i = 0; i < VMATH_N; i++) {
			double want = ref((double)x[i]), err;

			if (fabs(want) < FLT_MIN)
				err = fabs((double)y[i] - want) <= FLT_MIN ? 0.0 : INFINITY;
			else
				err = fabs((double)y[i] - want) / fabs(want);
			if (!(err <= worst)) {
				worst = err;
				at = x[i];
			}
		}
	}
	printf("%s on [%g, %g]: worst relative error %.3g at %.9g\n", name, lo, hi, worst, at);
	CHECK(worst <= VMATH_RTOL, "%s: relative error %.3g at x = %.9g", name, worst, at);
	/* Every short length runs the tail path alone. */
	for (int64_t n = 1; n < 40; n++) {
		f(y, x + VMATH_N / 2, n);
		for (int64_t i = 0; i < n; i++) {
			double want = ref((double)x[VMATH_N / 2 + i]);

			CHECK(fabs((double)y[i] - want) <= VMATH_RTOL * fabs(want) + FLT_MIN, "%s: length %lld, element %lld",
			    name, (long long)n, (long long)i);
		}
	}
	free(x);
	free(y);
}

/*
 * exp over a masked softmax row: scores alternating with masked ones (-3.4e38,
 * -1e4, -104.5, -inf, as an additive mask leaves them), and a NaN; the masked
 * give exactly 0, the rest stay within the bound, the NaN stays NaN.
 */
static void
check_exp_masked(void)
{
	static const float masked[] = { -3.4e38f, -1e4f, -104.5f, -INFINITY };
	enum { N = 1001 };
	float x[N], y[N];

	for (int i = 0; i < N; i++)
		x[i] = i % 2 ? masked[(i / 2) % 4] : -10.0f * (float)i / N;
	x[N / 2] = NAN;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0)
			cpu_vexpf(y, x, N);
		else {
			memcpy(y, x, sizeof y);
			cpu_vexpf(y, y, N);
		}
		for (int i = 0; i < N; i++) {
			if (i == N / 2)
				CHECK(isnan(y[i]), "exp(NaN) = %g", y[i]);
			else if (i % 2)
				CHECK(y[i] == 0.0f, "exp(%g) = %g, not 0", x[i], y[i]);
			else
				CHECK(fabs((double)y[i] - exp((double)x[i])) <= VMATH_RTOL * exp((double)x[i]),
				    "exp(%g) = %.9g", x[i], y[i]);
		}
	}
	printf("exp of a masked row: masked scores 0\n");
}

int
main(void)
{
	check_fn("exp", cpu_vexpf, exp, -87.0, 88.0);
	check_fn("exp (underflow)", cpu_vexpf, exp, -120.0, -80.0);
	check_exp_masked();
	check_fn("exp (softmax range)", cpu_vexpf, exp, -30.0, 0.0);
	check_fn("tanh", cpu_vtanhf, tanh, -12.0, 12.0);
	check_fn("tanh (near 0)", cpu_vtanhf, tanh, -1e-3, 1e-3);
	check_fn("erf", cpu_verff, erf, -6.0, 6.0);
	check_fn("erf (near 0)", cpu_verff, erf, -1e-3, 1e-3);
	check_fn("erfc", cpu_verfcf, erfc, -6.0, 9.0);
	return test_finish("test_cpu_vmath");
}
