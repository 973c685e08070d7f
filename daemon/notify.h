/* notify.h: telling systemd (Type=notify) where the daemon stands; no-ops without libsystemd. */
#ifndef INFERD_NOTIFY_H
#define INFERD_NOTIFY_H

/*
 * Each call sends one sd_notify message when built with libsystemd and run
 * with NOTIFY_SOCKET set; otherwise it does nothing.  A failure to send is
 * logged at debug level and otherwise ignored: the daemon works the same
 * without a service manager.
 */

/* Start-up is complete: listeners are up and requests are served (READY=1). */
void notify_ready(void);
/* Shutdown has begun (STOPPING=1). */
void notify_stopping(void);
/* A one-line status shown by systemctl status (STATUS=...). */
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 when built with libsystemd, else 0. */
int notify_available(void);

#endif
