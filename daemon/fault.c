/* fault.c: INFERD_FAULT=site:N makes the Nth call at a site fail (see fault.h); only with --enable-fault-injection. */
#include "config.h"

#include "fault.h"

#ifdef INFERD_FAULT_INJECTION
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *const fault_names[FAULT_NSITES] = {
	"device_alloc", "host_alloc", "stream_create", "event_create", "copy", "launch", "malloc",
};

static unsigned long fault_armed[FAULT_NSITES];	/* 0: not armed */
static unsigned long fault_calls[FAULT_NSITES];	/* atomic */
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

/* Parse one "site:N"; an unknown site or a bad N is logged and ignored. */
static void
fault_parse_one(const char *item)
{
	const char *colon = strchr(item, ':');
	unsigned long n;
	char *end;
	int i;

	for (i = 0; colon != NULL && i < FAULT_NSITES; i++) {
		if (strlen(fault_names[i]) != (size_t)(colon - item) ||
		    strncmp(item, fault_names[i], (size_t)(colon - item)) != 0)
			continue;
		n = strtoul(colon + 1, &end, 10);
		if (n > 0 && (*end == '\0' || *end == ',')) {
			fault_armed[i] = n;
			LOG_WARN("fault injection: call %lu of %s will fail", n, fault_names[i]);
			return;
		}
	}
	LOG_ERROR("fault injection: ignoring '%.*s' (want site:N with N >= 1)",
	    (int)strcspn(item, ","), item);
}

/* Read INFERD_FAULT once. */
static void
fault_init(void)
{
	const char *p = getenv("INFERD_FAULT");

	while (p != NULL && *p != '\0') {
		fault_parse_one(p);
		p = strchr(p, ',');
		if (p != NULL)
			p++;
	}
}

/* Count a call; 1 when it is the armed one. */
int
fault_hit(enum fault_site site)
{
	unsigned long n;

	pthread_once(&fault_once, fault_init);
	n = __atomic_add_fetch(&fault_calls[site], 1, __ATOMIC_RELAXED);
	if (fault_armed[site] == 0 || n != fault_armed[site])
		return 0;
	LOG_WARN("fault injection: failing call %lu of %s", n, fault_names[site]);
	return 1;
}

/* Log the call counts. */
void
fault_report(void)
{
	int i;

	pthread_once(&fault_once, fault_init);
	for (i = 0; i < FAULT_NSITES; i++)
		LOG_INFO("fault injection: %s called %lu times", fault_names[i],
		    __atomic_load_n(&fault_calls[i], __ATOMIC_RELAXED));
}

/* Log the call counts so far on one line, labelled ("at LABEL: device_alloc 3, ..., malloc 812"). */
void
fault_mark(const char *fmt, ...)
{
	char what[256], line[512];
	va_list ap;
	size_t len = 0;
	int i, n;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	pthread_once(&fault_once, fault_init);
	for (i = 0; i < FAULT_NSITES && len < sizeof line; i++) {
		n = snprintf(line + len, sizeof line - len, "%s%s %lu", i ? ", " : "", fault_names[i],
		    __atomic_load_n(&fault_calls[i], __ATOMIC_RELAXED));
		if (n < 0)
			return;
		len += (size_t)n;
	}
	LOG_INFO("fault injection: at %s: %s", what, line);
}

/* Hold model's load until INFERD_FAULT_HOLD_LOAD's file exists (a test looks at the daemon meanwhile). */
void
fault_hold_load(const char *model, int (*stopping)(void *arg), void *arg)
{
	const char *spec = getenv("INFERD_FAULT_HOLD_LOAD"), *colon;
	struct timespec tick = { 0, 20 * 1000000L };

	if (spec == NULL || (colon = strchr(spec, ':')) == NULL ||
	    strlen(model) != (size_t)(colon - spec) || strncmp(spec, model, strlen(model)) != 0)
		return;
	LOG_WARN("fault injection: holding the load of model '%s' until %s exists", model, colon + 1);
	/* A test hook: polling keeps it free of any machinery the daemon itself would not have. */
	while (access(colon + 1, F_OK) != 0 && (stopping == NULL || !stopping(arg)))
		nanosleep(&tick, NULL);
	LOG_WARN("fault injection: releasing the load of model '%s'", model);
}
#endif
