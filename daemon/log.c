/* log.c: stderr logging; under journald, syslog priority prefixes instead of timestamps. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

enum log_level log_threshold = LOG_LEVEL_INFO;

static const char *log_names[] = { "error", "warn", "info", "debug" };
/* syslog priorities (sd-daemon.h's SD_ERR etc.) matching each level. */
static const int log_priorities[] = { 3, 4, 6, 7 };

/* The level a name stands for; -1 if unknown (the one table of level names). */
int
log_level_from_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof log_names / sizeof log_names[0]; i++)
		if (strcmp(name, log_names[i]) == 0)
			return (int)i;
	return -1;
}

/* Set the threshold from a name; -1 if unknown. */
int
log_set_level(const char *name)
{
	int level = log_level_from_name(name);

	if (level < 0)
		return -1;
	log_threshold = (enum log_level)level;
	return 0;
}

/* Write one line: "<N>msg" when stderr is journald's, else "time level: msg". */
void
log_write(enum log_level level, const char *fmt, ...)
{
	char msg[2048], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* journald sets JOURNAL_STREAM and adds its own timestamps. */
	if (getenv("JOURNAL_STREAM") != NULL) {
		fprintf(stderr, "<%d>%s\n", log_priorities[level], msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ld inferd %s: %s\n", stamp, ts.tv_nsec / 1000000L,
	    log_names[level], msg);
}
