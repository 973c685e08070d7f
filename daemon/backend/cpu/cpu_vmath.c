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

/*
 * y = exp(x) by fn (libmvec's), 8 at a time, lanes below lo written 0 and
 * given to fn as 0 (see cpu_vexpf).  fn through a pointer, as vmath_avx2
 * takes it: clang ignores the pragma, so a direct call would pass vectors to
 * a function it does not know takes them.
 */
__attribute__((target("avx2"))) static void
vexp_avx2(float *y, const float *x, int64_t n, float lo, vmath_fn8 fn)
{
	const __m256 vlo = _mm256_set1_ps(lo), zero = _mm256_setzero_ps();
	float buf[8];
	int64_t i = 0;

	for (; i < n; i += 8) {
		int64_t m = n - i < 8 ? n - i : 8;
		__m256 v, under;

		if (m < 8) {
			memset(buf, 0, sizeof buf);
			memcpy(buf, x + i, (size_t)m * sizeof(float));
			v = _mm256_loadu_ps(buf);
		} else {
			v = _mm256_loadu_ps(x + i);
		}
		under = _mm256_cmp_ps(v, vlo, _CMP_LT_OQ);
		v = _mm256_blendv_ps(fn(_mm256_blendv_ps(v, zero, under)), zero, under);
		if (m < 8) {
			_mm256_storeu_ps(buf, v);
			memcpy(y + i, buf, (size_t)m * sizeof(float));
		} else {
			_mm256_storeu_ps(y + i, v);
		}
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

/* y = exp(x) by fn, 16 at a time, lanes below lo written 0 and given to fn as 0 (as vexp_avx2). */
__attribute__((target("avx512f"))) static void
vexp_avx512(float *y, const float *x, int64_t n, float lo, vmath_fn16 fn)
{
	const __m512 vlo = _mm512_set1_ps(lo), zero = _mm512_setzero_ps();
	int64_t i = 0;

	for (; i < n; i += 16) {
		__mmask16 keep = n - i < 16 ? (__mmask16)((1u << (n - i)) - 1) : (__mmask16)0xffff;
		__m512 v = _mm512_maskz_loadu_ps(keep, x + i);
		__mmask16 under = _mm512_cmp_ps_mask(v, vlo, _CMP_LT_OQ);

		v = fn(_mm512_mask_blend_ps(under, v, zero));
		_mm512_mask_storeu_ps(y + i, keep, _mm512_mask_blend_ps(under, v, zero));
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

/* y = exp(x), lanes below lo 0, by the widest variant the CPU runs; 0 when neither (the caller loops). */
static int
vexp_run(float *y, const float *x, int64_t n, float lo)
{
	if (__builtin_cpu_supports("avx512f")) {
		vexp_avx512(y, x, n, lo, _ZGVeN16v_expf);
		return 1;
	}
	if (__builtin_cpu_supports("avx2")) {
		vexp_avx2(y, x, n, lo, _ZGVdN8v_expf);
		return 1;
	}
	return 0;
}
#else
/* y = f(x) with the scalar function. */
static void
vmath_scalar(float *y, const float *x, int64_t n, vmath_scalar_fn f1)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = f1(x[i]);
}

#define VMATH(f16, f8, f1) vmath_scalar(y, x, n, f1)

/* No vector exp here: the caller loops. */
static int
vexp_run(float *y, const float *x, int64_t n, float lo)
{
	(void)y, (void)x, (void)n, (void)lo;
	return 0;
}
#endif

/* Below this exp(x) is under half the least subnormal: 0 in fp32, correctly rounded. */
#define VMATH_EXP_ZERO (-104.0f)

/*
 * y = exp(x) (y may be x).  libmvec hands every lane it cannot finish in
 * registers, underflow among them, to the scalar expf, which also sets
 * errno: a softmax row whose scores were masked by adding -3.4e38 (half of
 * it, for a padded sequence) ran several times slower.  Lanes below
 * VMATH_EXP_ZERO are written 0 here, which is what expf returns for them;
 * libmvec gets 0 in their place.  Both in the same vector pass: done as
 * separate scalar passes (a count, then copies) they were 8% of a padded
 * all-MiniLM-L6-v2 batch on one thread, more than the exps themselves.
 */
void
cpu_vexpf(float *y, const float *x, int64_t n)
{
	if (vexp_run(y, x, n, VMATH_EXP_ZERO))
		return;
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] < VMATH_EXP_ZERO ? 0.0f : expf(x[i]);
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
