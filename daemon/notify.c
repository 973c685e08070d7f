/* notify.c: sd_notify messages to the service manager, compiled out without libsystemd. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "log.h"
#include "notify.h"

#ifdef HAVE_SYSTEMD
/* Send one message; sd_notify returns <0 on error and 0 when NOTIFY_SOCKET is unset. */
static void
notify_send(const char *msg)
{
	int r;

	r = sd_notify(0, msg);
	if (r < 0)
		LOG_DEBUG("sd_notify(\"%s\") failed: %s", msg, strerror(-r));
	else if (r == 0)
		LOG_DEBUG("sd_notify(\"%s\"): not run by a service manager", msg);
	else
		LOG_DEBUG("sd_notify(\"%s\") sent", msg);
}
#else
/* Without libsystemd there is nobody to tell. */
static void
notify_send(const char *msg)
{
	LOG_DEBUG("sd_notify(\"%s\"): built without libsystemd", msg);
}
#endif

/* Start-up is complete. */
void
notify_ready(void)
{
	notify_send("READY=1");
}

/* Shutdown has begun. */
void
notify_stopping(void)
{
	notify_send("STOPPING=1");
}

/* A one-line status for systemctl status. */
void
notify_status(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof msg, "STATUS=");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	notify_send(msg);
}

/* 1 when built with libsystemd. */
int
notify_available(void)
{
#ifdef HAVE_SYSTEMD
	return 1;
#else
	return 0;
#endif
}
