/* cpu_vmath.c: exp, tanh, erf and erfc over arrays through glibc's vector math library (libmvec), AVX-512 or AVX2 chosen at run time. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cpu_kernels_impl.h"

/*
 * libmvec's _ZGV* functions are glibc's own vector variants of expf, tanhf,
 * erff and erfcf (within 1 to 4 ulp of the correctly rounded result, what
 * glibc documents for them); they take and return vector registers, so the
 * loops calling them are compiled for the instruction set they need and
 * chosen at run time from what the CPU has.  Without libmvec (or on a CPU
 * with neither extension) the scalar libm functions run.
 */
typedef float (*vmath_scalar_fn)(float);

#if defined(HAVE_LIBMVEC) && defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2")
__m256 _ZGVdN8v_expf(__m256 x);
__m256 _ZGVdN8v_tanhf(__m256 x);
__m256 _ZGVdN8v_erff(__m256 x);
__m256 _ZGVdN8v_erfcf(__m256 x);
typedef __m256 (*vmath_fn8)(__m256);

/* y = fn(x), 8 at a time; the tail through a padded copy (the attribute for clang, which ignores the pragma). */
__attribute__((target("avx2"))) static void
vmath_avx2(float *y, const float *x, int64_t n, vmath_fn8 fn)
{
	float buf[8];
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, fn(_mm256_loadu_ps(x + i)));
	if (i < n) {
		memset(buf, 0, sizeof buf);
		memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
		_mm256_storeu_ps(buf, fn(_mm256_loadu_ps(buf)));
		memcpy(y + i, buf, (size_t)(n - i) * sizeof(float));
	}
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
__m512 _ZGVeN16v_expf(__m512 x);
__m512 _ZGVeN16v_tanhf(__m512 x);
__m512 _ZGVeN16v_erff(__m512 x);
__m512 _ZGVeN16v_erfcf(__m512 x);
typedef __m512 (*vmath_fn16)(__m512);

/* y = fn(x), 16 at a time; the tail through a padded copy (the attribute for clang, which ignores the pragma). */
__attribute__((target("avx512f"))) static void
vmath_avx512(float *y, const float *x, int64_t n, vmath_fn16 fn)
{
	float buf[16];
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, fn(_mm512_loadu_ps(x + i)));
	if (i < n) {
		memset(buf, 0, sizeof buf);
		memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
		_mm512_storeu_ps(buf, fn(_mm512_loadu_ps(buf)));
		memcpy(y + i, buf, (size_t)(n - i) * sizeof(float));
	}
}
#pragma GCC pop_options

/* y = f(x) by the widest variant the CPU runs. */
static void
vmath_run(float *y, const float *x, int64_t n, vmath_fn16 f16, vmath_fn8 f8, vmath_scalar_fn f1)
{
	if (__builtin_cpu_supports("avx512f")) {
		vmath_avx512(y, x, n, f16);
	} else if (__builtin_cpu_supports("avx2")) {
		vmath_avx2(y, x, n, f8);
	} else {
		for (int64_t i = 0; i < n; i++)
			y[i] = f1(x[i]);
	}
}

#define VMATH(f16, f8, f1) vmath_run(y, x, n, f16, f8, f1)
#else
/* y = f(x) with the scalar function. */
static void
vmath_scalar(float *y, const float *x, int64_t n, vmath_scalar_fn f1)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = f1(x[i]);
}

#define VMATH(f16, f8, f1) vmath_scalar(y, x, n, f1)
#endif

/* Below this exp(x) is under half the least subnormal: 0 in fp32, correctly rounded. */
#define VMATH_EXP_ZERO (-104.0f)
/* Elements per pass of cpu_vexpf (a stack buffer, so y may be x). */
#define VMATH_CHUNK 256

/* y = exp(x) over n elements, every one at or above VMATH_EXP_ZERO (or NaN). */
static void
vmath_exp(float *y, const float *x, int64_t n)
{
	VMATH(_ZGVeN16v_expf, _ZGVdN8v_expf, expf);
}

/*
 * y = exp(x) (y may be x).  libmvec hands every lane it cannot finish in
 * registers, underflow among them, to the scalar expf, which also sets
 * errno: a softmax row whose scores were masked by adding -3.4e38 (half of
 * it, for a padded sequence) ran several times slower.  Lanes below
 * VMATH_EXP_ZERO are written 0 here, which is what expf returns for them;
 * libmvec gets 0 in their place.
 */
void
cpu_vexpf(float *y, const float *x, int64_t n)
{
	float t[VMATH_CHUNK];

	for (int64_t lo = 0; lo < n; lo += VMATH_CHUNK) {
		int64_t m = n - lo < VMATH_CHUNK ? n - lo : VMATH_CHUNK, low = 0;

		for (int64_t i = 0; i < m; i++)
			low += x[lo + i] < VMATH_EXP_ZERO;
		if (low == 0) {
			vmath_exp(y + lo, x + lo, m);
			continue;
		}
		for (int64_t i = 0; i < m; i++)
			t[i] = x[lo + i] < VMATH_EXP_ZERO ? 0.0f : x[lo + i];
		vmath_exp(t, t, m);
		for (int64_t i = 0; i < m; i++)
			y[lo + i] = x[lo + i] < VMATH_EXP_ZERO ? 0.0f : t[i];
	}
}

/* y = tanh(x) (y may be x). */
void
cpu_vtanhf(float *y, const float *x, int64_t n)
{
	VMATH(_ZGVeN16v_tanhf, _ZGVdN8v_tanhf, tanhf);
}

/* y = erf(x) (y may be x). */
void
cpu_verff(float *y, const float *x, int64_t n)
{
	VMATH(_ZGVeN16v_erff, _ZGVdN8v_erff, erff);
}

/* y = erfc(x) (y may be x). */
void
cpu_verfcf(float *y, const float *x, int64_t n)
{
	VMATH(_ZGVeN16v_erfcf, _ZGVdN8v_erfcf, erfcf);
}
