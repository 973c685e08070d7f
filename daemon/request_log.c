/* request_log.c: the optional structured request log (request_log = PATH), one JSON object a line. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "log.h"
#include "request_log.h"

struct request_log {
	int fd;
	int warned;		/* atomic: a failed write was logged */
};

/* Open the log for appending. */
int
request_log_open(const char *path, request_log_t **out, char **cause)
{
	request_log_t *l = xcalloc(1, sizeof *l);

	if (l == NULL)
		return error_set(cause, "request_log: out of memory");
	l->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (l->fd < 0) {
		error_set(cause, "request_log %s: %s (set request_log to a writable file, or empty to turn it off)",
		    path, strerror(errno));
		free(l);
		return -1;
	}
	*out = l;
	return 0;
}

/*
 * Append one line.  Model names are directory names and statuses fixed words,
 * but a name may hold any byte but '/', so '"', '\\' and control bytes are
 * replaced rather than escaped (the log is for reading, not round-tripping).
 * One write(2) of an O_APPEND file keeps lines whole across threads without a lock.
 */
void
request_log_write(request_log_t *l, const struct request_log_entry *e)
{
	char line[512], name[160];
	struct timespec ts;
	size_t i;
	int n;

	for (i = 0; e->model[i] != '\0' && i < sizeof name - 1; i++)
		name[i] = e->model[i] == '"' || e->model[i] == '\\' || (unsigned char)e->model[i] < 0x20 ?
		    '?' : e->model[i];
	name[i] = '\0';
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof line, "{\"time\":%lld.%06ld,\"model\":\"%s\",\"version\":%" PRId64 ",\"status\":"
	    "\"%s\",\"rows\":%d,\"queue_us\":%" PRIu64 ",\"total_us\":%" PRIu64 "}\n", (long long)ts.tv_sec,
	    ts.tv_nsec / 1000, name, e->version, e->status, e->rows, e->queue_us, e->total_us);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	if (write(l->fd, line, (size_t)n) != n && !__atomic_exchange_n(&l->warned, 1, __ATOMIC_RELAXED))
		LOG_WARN("request_log: write failed (%s); requests are served on, unlogged lines are lost",
		    strerror(errno));
}

/* Close the log. */
void
request_log_close(request_log_t *l)
{
	if (l == NULL)
		return;
	if (close(l->fd) != 0)
		LOG_WARN("request_log: close: %s", strerror(errno));
	free(l);
}
