/*
 * fault.h: fault injection for tests, compiled in only by
 * ./configure --enable-fault-injection (INFERD_FAULT_INJECTION).
 *
 * INFERD_FAULT="site:N[,site:N...]" makes the Nth call (counted from 1,
 * from process start) at each named site fail as the real call would fail,
 * with a message saying it was injected.  Sites: device_alloc, host_alloc,
 * stream_create, event_create, copy (host<->device copies), launch (a
 * plan run or graph launch: the kernels of a batch), malloc (the heap
 * allocations routed through alloc.h, jansson's included).  At exit
 * fault_report() logs how often each site was called, and FAULT_MARK(fmt, ...)
 * logs the counts so far at a named point ("ready", "start of model m"),
 * so a test can aim at "the first call after start-up" or "a call while m
 * loads".  INFERD_FAULT_HOLD_LOAD="model:PATH" (tests only) holds every load
 * of that model at its start until the file PATH exists, so a test can look
 * at the daemon while the load is under way (FAULT_HOLD_LOAD).  Without the
 * configure switch FAULT() is the constant 0, FAULT_MARK() and
 * FAULT_HOLD_LOAD() nothing, and nothing here is compiled in.
 */
#ifndef INFERD_FAULT_H
#define INFERD_FAULT_H

enum fault_site {
	FAULT_DEVICE_ALLOC,
	FAULT_HOST_ALLOC,
	FAULT_STREAM_CREATE,
	FAULT_EVENT_CREATE,
	FAULT_COPY,
	FAULT_LAUNCH,
	FAULT_MALLOC,
	FAULT_NSITES,
};

#ifdef INFERD_FAULT_INJECTION
/* Count a call at site; 1 when this call is the one INFERD_FAULT names. */
int fault_hit(enum fault_site site);
/* Log every site's call count and what was armed (at info). */
void fault_report(void);
/* Log every site's call count so far, labelled with the formatted text (at info). */
void fault_mark(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Wait while INFERD_FAULT_HOLD_LOAD names model and its file is absent, or
 * until stopping(arg) answers 1 (the daemon is stopping).
 */
void fault_hold_load(const char *model, int (*stopping)(void *arg), void *arg);
#define FAULT(site) fault_hit(site)
#define FAULT_MARK(...) fault_mark(__VA_ARGS__)
#define FAULT_HOLD_LOAD(model, stopping, arg) fault_hold_load(model, stopping, arg)
#else
#define FAULT(site) 0
#define FAULT_MARK(...) ((void)0)
#define FAULT_HOLD_LOAD(model, stopping, arg) ((void)0)
#define fault_report() ((void)0)
#endif

#endif
