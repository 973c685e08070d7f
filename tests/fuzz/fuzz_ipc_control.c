/*
 * fuzz_ipc_control.c: libFuzzer target for the shm control conversation
 * as a hostile client speaks it.  Each input is the byte stream a client
 * sends on its control socket (message headers, hellos, model queries,
 * anything): it is written into one end of a socketpair, half-closed, and
 * the daemon's own ipc_conn_readable reads and acts on the other end until
 * it drops the client or runs dry.  The stream carries no descriptors, so
 * a hello is refused at its descriptor check at the latest; everything
 * before that (framing, lengths, types, the hello's fields, queries by
 * name and id) runs as in the daemon, where a crash or a leak is a finding.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_config.h"
#include "ipc_impl.h"
#include "kserve_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* More than one message's worth, less than a socket buffer: the write never blocks. */
#define FUZZ_MAX_STREAM (64u << 10)

static model_t model;
static repository_t *repo;

/* A registry (no device, no batcher) serving the fixture model, which it never frees. */
static void
fuzz_registry(void)
{
	struct repository_options o = { .dir = "/nonexistent", .inflight = 2 };
	char *cause = NULL;

	if (repository_create(&o, &repo, &cause) != 0 || repository_adopt(repo, &model, NULL, 0, &cause) != 0)
		abort();
}
static struct daemon_config cfg;
static struct metrics metrics;
static ipc_server_t server;

/* Once: a server with the fixture model and default limits, no threads or sockets. */
static void
fuzz_init(void)
{
	static const char *names[1];
	char *cause = NULL;

	kserve_fixture_model(&model);
	fuzz_registry();
	names[0] = model.name;
	if (config_defaults(&cfg, &cause) != 0 || metrics_init(&metrics, names, 1) != 0)
		abort();
	server.ctx.config = &cfg;
	server.ctx.repo = repo;
	server.ctx.metrics = &metrics;
	server.listen_fd = server.epoll_fd = server.wake_fd = server.spare_fd = -1;
}

/* One client's stream through the daemon's control code. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ucred cred = { 1, 0, 0 };
	struct ipc_client *c;
	int sv[2], i;

	if (server.ctx.config == NULL)
		fuzz_init();
	if (size > FUZZ_MAX_STREAM)
		size = FUZZ_MAX_STREAM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	if ((c = ipc_client_new(&server, sv[0], &cred)) == NULL)
		abort();
	if (size > 0 && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	/* Bounded: every round consumes input or ends the conversation. */
	for (i = 0; i < 4096 && !c->dead; i++)
		if (ipc_conn_readable(&server, c) != 0)
			break;
	ipc_client_free(&server, c);
	close(sv[1]);
	return 0;
}
