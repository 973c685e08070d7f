/* cpu_threads.c: how the CPU backend's worker threads wait (OpenMP and OpenBLAS pools), set before they exist. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	return getenv("OMP_WAIT_POLICY") != NULL || getenv("GOMP_SPINCOUNT") != NULL ||
	    getenv(CPU_THREADS_MARK) != NULL;
}

/*
 * Re-run this program (argv) with the worker threads' waits bounded; returns 0
 * when nothing needs doing, -1 with *cause when the re-run failed (the program
 * then goes on with the libraries' default spinning).
 */
int
cpu_threads_bound_waits(char **argv, char **cause)
{
	/*
	 * libgomp and OpenBLAS read these variables once, in their constructors,
	 * before main runs; neither has a call to change them afterwards, so the
	 * only way to set them for this process is to exec it again.
	 */
	if (cpu_threads_env_set())
		return 0;
	if (setenv(CPU_THREADS_MARK, "1", 1) != 0 || setenv("GOMP_SPINCOUNT", CPU_THREADS_SPINCOUNT, 1) != 0)
		return error_set(cause, "setenv: %s", strerror(errno));
#ifdef _OPENMP
	/* The kernels split sgemm over OpenMP threads themselves: OpenBLAS's own pool would only idle. */
	if (getenv("OPENBLAS_NUM_THREADS") == NULL && setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0)
		return error_set(cause, "setenv: %s", strerror(errno));
#endif
	execv("/proc/self/exe", argv);
	return error_set(cause, "re-running %s to bound the CPU threads' spin-waits: %s (set OMP_WAIT_POLICY=passive "
	    "in its environment instead)", argv[0], strerror(errno));
}
