/*
 * cpu_threads.c: how the CPU backend's worker threads wait (OpenMP and OpenBLAS pools) and which OpenBLAS
 * kernels run, set before the libraries start.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#ifdef HAVE_OPENBLAS_GET_CORENAME
#include <cblas.h>
#endif

#include "cpu_kernels.h"
#include "error.h"

/*
 * Iterations a libgomp worker spins at a barrier before it sleeps on a futex.
 * libgomp's default, 300,000 pause loops (milliseconds on current cores),
 * is what made a busy machine collapse: a worker spinning out its time slice
 * while the thread it waits for sits preempted behind other processes.  A
 * thousand (libgomp's own figure when it finds more threads than cores)
 * keeps back-to-back parallel loops cheap on an idle machine and gives the
 * core up within microseconds on a busy one (measured: passive waiting was
 * no faster under load, 5,000 and more were slower).
 */
#define CPU_THREADS_SPINCOUNT "1000"

/* Marks the re-run process, so a failed re-run is never tried twice. */
#define CPU_THREADS_MARK "INFERD_CPU_WAIT_SET"

/* Whether the environment already says how OpenMP threads wait. */
static int
cpu_threads_env_set(void)
{
	return getenv("OMP_WAIT_POLICY") != NULL || getenv("GOMP_SPINCOUNT") != NULL;
}

/*
 * The OpenBLAS kernels to ask for (OPENBLAS_CORETYPE) when OpenBLAS chose
 * kernels older than this processor runs, else NULL.  OpenBLAS picks by
 * CPU model and falls back to its SSE3 "Prescott" kernels on a model it does
 * not know (0.3.21 on a current Xeon, model 207, say), which run sgemm
 * several times slower than its AVX-512 or AVX2 ones would there.
 */
static const char *
cpu_threads_blas_core(void)
{
#ifdef HAVE_OPENBLAS_GET_CORENAME
	static const char *const old[] = { "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
	    "Katmai", "Coppermine", "Northwood", "Banias", "Sandybridge", "Unknown" };
	const char *name = openblas_get_corename();
	size_t i;

	if (name == NULL || getenv("OPENBLAS_CORETYPE") != NULL)
		return NULL;
	for (i = 0; i < sizeof old / sizeof old[0] && strcasecmp(name, old[i]) != 0; i++)
		;
	if (i == sizeof old / sizeof old[0])
		return NULL;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return "SKYLAKEX";
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "HASWELL";
#endif
	return NULL;
}

/*
 * Re-run this program (argv) with the worker threads' waits bounded and
 * OpenBLAS's kernels matching the processor; returns 0 when nothing needs
 * doing, -1 with *cause when the re-run failed (the program then goes on
 * with the libraries' defaults).
 */
int
cpu_threads_bound_waits(char **argv, char **cause)
{
	const char *core;
	int waits;

	/*
	 * libgomp and OpenBLAS read these variables once, in their constructors,
	 * before main runs; neither has a call to change them afterwards, so the
	 * only way to set them for this process is to exec it again.
	 */
	if (getenv(CPU_THREADS_MARK) != NULL)
		return 0;
	waits = !cpu_threads_env_set();
	core = cpu_threads_blas_core();
	if (!waits && core == NULL)
		return 0;
	if (setenv(CPU_THREADS_MARK, "1", 1) != 0 ||
	    (waits && setenv("GOMP_SPINCOUNT", CPU_THREADS_SPINCOUNT, 1) != 0) ||
	    (core != NULL && setenv("OPENBLAS_CORETYPE", core, 1) != 0))
		return error_set(cause, "setenv: %s", strerror(errno));
#ifdef _OPENMP
	/* The kernels split sgemm over OpenMP threads themselves: OpenBLAS's own pool would only idle. */
	if (getenv("OPENBLAS_NUM_THREADS") == NULL && setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0)
		return error_set(cause, "setenv: %s", strerror(errno));
#endif
	execv("/proc/self/exe", argv);
	return error_set(cause, "re-running %s to bound the CPU threads' spin-waits%s: %s (set OMP_WAIT_POLICY=passive%s "
	    "in its environment instead)", argv[0], core != NULL ? " and choose OpenBLAS's kernels" : "",
	    strerror(errno), core != NULL ? " and OPENBLAS_CORETYPE" : "");
}
