/*
 * fuzz_http.c: libFuzzer target for the HTTP request path: request line,
 * headers, chunked bodies, the binary tensor extension's framing, and
 * everything daemon/http_*.c do with them.  The real server (libmicrohttpd with
 * http_*.c, the batcher and fashion-mlp on the CPU device) runs in-process
 * on a loopback port; each input is sent as the bytes of one connection,
 * which is then half-closed, and the answer read until the server closes
 * it (or 20 ms pass without a byte).  Every 64 inputs a well-formed request must still be
 * answered 200.  A crash in any server thread ends the run with the input
 * that caused it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "batcher.h"
#include "daemon_config.h"
#include "device.h"
#include "http.h"
#include "metrics.h"
#include "repository.h"

#ifndef FUZZ_SRCDIR
#error "FUZZ_SRCDIR: the source tree, for conf/models"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int port;

/* Exit with a set-up failure (not a finding). */
static void
fuzz_die(const char *what, char *cause)
{
	fprintf(stderr, "fuzz_http: set-up: %s: %s\n", what, cause ? cause : "?");
	exit(2);
}

/* Once: the whole HTTP side of the daemon, on any free port. */
static void
fuzz_init(void)
{
	static struct daemon_config cfg;
	static struct metrics metrics;
	static struct door_context ctx;
	http_server_t *srv;
	repository_t *repo;
	batcher_t *batcher;
	char *cause = NULL;
	device_t *dev;

	if (config_defaults(&cfg, &cause) != 0 || config_set(&cfg, "http_port", "0", &cause) != 0 ||
	    config_set(&cfg, "http_threads", "2", &cause) != 0 ||
	    config_set(&cfg, "max_body_bytes", "1M", &cause) != 0 ||
	    config_set(&cfg, "pinned_pool_bytes", "16M", &cause) != 0)
		fuzz_die("config", cause);
	if (device_open("cpu", &dev, &cause) != 0)
		fuzz_die("device", cause);
	if (metrics_init(&metrics, NULL, 0) != 0)
		fuzz_die("metrics", NULL);
	if (batcher_create(dev, &metrics, 2, 0, &batcher, &cause) != 0)
		fuzz_die("batcher", cause);
	struct repository_options o = { .dev = dev, .batcher = batcher, .metrics = &metrics,
	    .dir = FUZZ_SRCDIR "/conf/models", .control = REPOSITORY_CONTROL_EXPLICIT, .inflight = 2 };
	char *load[] = { "fashion-mlp", NULL };
	if (repository_create(&o, &repo, &cause) != 0 || repository_load_startup(repo, load, &cause) != 0)
		fuzz_die("repository", cause);
	ctx = (struct door_context){ &cfg, dev, repo, batcher, &metrics };
	if (http_start(&ctx, &srv, &cause) != 0)
		fuzz_die("http", cause);
	port = http_port(srv);
}

/*
 * Send data on a fresh connection, half-close, read the answer (waiting at
 * most wait_ms between pieces); returns its first bytes in head.
 */
static void
fuzz_exchange(const uint8_t *data, size_t size, char *head, size_t hsize, int wait_ms)
{
	static const int one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct pollfd p;
	size_t off = 0, got = 0;
	char buf[4096];
	ssize_t n;
	int fd;

	head[0] = '\0';
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return;
	}
	while (off < size && (n = send(fd, data + off, size - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)n;
	shutdown(fd, SHUT_WR);
	p = (struct pollfd){ fd, POLLIN, 0 };
	/* Quick ACKs: the server's header and body segments would otherwise wait 40 ms for ours. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
	while (poll(&p, 1, wait_ms) == 1 && (n = recv(fd, buf, sizeof buf, 0)) > 0) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
		if (got + 1 < hsize) {
			size_t k = (size_t)n < hsize - 1 - got ? (size_t)n : hsize - 1 - got;

			memcpy(head + got, buf, k);
			got += k;
			head[got] = '\0';
		}
	}
	close(fd);
}

/* The server still answers a well-formed request. */
static void
fuzz_check_alive(void)
{
	static const char live[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";
	char head[32];

	fuzz_exchange((const uint8_t *)live, sizeof live - 1, head, sizeof head, 5000);
	if (strncmp(head, "HTTP/1.1 200", 12) != 0) {
		fprintf(stderr, "fuzz_http: the server no longer answers: '%s'\n", head);
		abort();
	}
}

/* One connection's bytes. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned long runs;
	char head[32];

	if (port == 0)
		fuzz_init();
	/*
	 * Answers come at once, but libmicrohttpd may keep a half-closed
	 * connection open: it is left after 20 ms of silence (the server's
	 * work on it goes on meanwhile, and a crash there still ends the run).
	 */
	fuzz_exchange(data, size, head, sizeof head, 20);
	if (++runs % 64 == 0)
		fuzz_check_alive();
	return 0;
}
