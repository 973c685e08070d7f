/*
 * bench-http-baseline.c: the bar inferd's HTTP front end is measured against
 * (docs/BENCHMARKS.md): a bare libmicrohttpd + jansson server, threaded as
 * daemon/http.c is (internal polling thread, epoll, a thread pool), that
 * buffers each POST body, parses it, walks inputs[0].data counting numbers
 * and answers a small fixed JSON of 10 floats without any inference.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#ifndef MHD_HTTP_CONTENT_TOO_LARGE
#define MHD_HTTP_CONTENT_TOO_LARGE 413
#endif

/* Same default as the daemon's max_body_bytes. */
#define BASELINE_MAX_BODY (16u * 1024 * 1024)

/* The answer: the shape of inferd's reply for one row of the demo model. */
static const char baseline_answer[] =
    "{\"model_name\":\"baseline\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"logits\","
    "\"datatype\":\"FP32\",\"shape\":[1,10],\"data\":[-3.14159274,2.71828175,"
    "1.41421354,-1.73205078,0.577215672,-0.693147182,1.61803401,-0.301029987,"
    "2.30258512,-0.434294492]}]}";

static const char baseline_error[] = "{\"error\":\"bad request body\"}";
static const char baseline_not_found[] = "{\"error\":\"not found\"}";

/* GET /v2/models/NAME answers this, so inferd-bench can load the baseline too. */
static char baseline_metadata[512];
static size_t baseline_metadata_len;

/* One request's body as it arrives. */
struct baseline_request {
	char *body;
	size_t len, cap;
	int too_large;
};

/* Counters printed at exit. */
static struct {
	unsigned long long ok, bad;
} baseline_stats;

/* Print a message and exit 1. */
__attribute__((format(printf, 1, 2), noreturn)) static void
fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("bench-http-baseline: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Count the numbers in a (possibly nested) JSON array; -1 if anything else is in it. */
static long
baseline_count_numbers(const json_t *a, int depth)
{
	const json_t *v;
	size_t i;
	long n = 0, k;

	if (depth > 8)
		return -1;
	json_array_foreach(a, i, v) {
		if (json_is_number(v))
			n++;
		else if (json_is_array(v) && (k = baseline_count_numbers(v, depth + 1)) >= 0)
			n += k;
		else
			return -1;
	}
	return n;
}

/* Parse the body and count inputs[0].data; -1 when it is no inference request. */
static long
baseline_parse(const char *body, size_t len)
{
	json_error_t err;
	json_t *root, *data;
	long n = -1;

	root = json_loadb(body, len, 0, &err);
	if (root == NULL)
		return -1;
	data = json_object_get(json_array_get(json_object_get(root, "inputs"), 0), "data");
	if (json_is_array(data))
		n = baseline_count_numbers(data, 0);
	json_decref(root);
	return n;
}

/* Queue a response from a static buffer. */
static enum MHD_Result
baseline_reply(struct MHD_Connection *conn, unsigned int status, const char *body,
    size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") != MHD_YES) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Append a piece of the body, growing the buffer geometrically. */
static int
baseline_append(struct baseline_request *req, const char *data, size_t n)
{
	char *nb;
	size_t cap;

	if (n > BASELINE_MAX_BODY - req->len) {
		req->too_large = 1;
		return 0;
	}
	if (req->len + n > req->cap) {
		cap = req->cap ? req->cap : 8192;
		while (cap < req->len + n)
			cap *= 2;
		if ((nb = realloc(req->body, cap)) == NULL)
			return -1;
		req->body = nb;
		req->cap = cap;
	}
	memcpy(req->body + req->len, data, n);
	req->len += n;
	return 0;
}

/* The access handler: headers, body pieces, then the answer. */
static enum MHD_Result
baseline_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct baseline_request *req = *con_cls;

	if (req == NULL) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) == 0 && strncmp(url, "/v2/models/", 11) == 0)
			return baseline_reply(conn, MHD_HTTP_OK, baseline_metadata, baseline_metadata_len);
		if (strcmp(method, MHD_HTTP_METHOD_GET) == 0)
			return baseline_reply(conn, MHD_HTTP_NOT_FOUND, baseline_not_found,
			    sizeof baseline_not_found - 1);
		if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
			return baseline_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, baseline_error,
			    sizeof baseline_error - 1);
		if ((req = calloc(1, sizeof *req)) == NULL)
			return MHD_NO;
		*con_cls = req;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		if (baseline_append(req, upload_data, *upload_data_size) != 0)
			return MHD_NO;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (req->too_large)
		return baseline_reply(conn, MHD_HTTP_CONTENT_TOO_LARGE, baseline_error,
		    sizeof baseline_error - 1);
	if (baseline_parse(req->body, req->len) < 0) {
		__atomic_add_fetch(&baseline_stats.bad, 1, __ATOMIC_RELAXED);
		return baseline_reply(conn, MHD_HTTP_BAD_REQUEST, baseline_error,
		    sizeof baseline_error - 1);
	}
	__atomic_add_fetch(&baseline_stats.ok, 1, __ATOMIC_RELAXED);
	return baseline_reply(conn, MHD_HTTP_OK, baseline_answer, sizeof baseline_answer - 1);
}

/* A request is over: free its body. */
static void
baseline_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct baseline_request *req = *con_cls;

	if (req == NULL)
		return;
	free(req->body);
	free(req);
	*con_cls = NULL;
}

/* Parse a decimal integer in [lo, hi] or exit. */
static int
parse_int(const char *name, const char *s, int lo, int hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0' || v < lo || v > hi)
		fatal("--%s must be an integer from %d to %d", name, lo, hi);
	return (int)v;
}

/* Write the bound port to path, atomically through a rename. */
static void
write_port_file(const char *path, int port)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		fatal("port file path too long");
	if ((f = fopen(tmp, "w")) == NULL)
		fatal("%s: %s", tmp, strerror(errno));
	if (fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
		fatal("%s: %s", path, strerror(errno));
}

/* Print usage. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: bench-http-baseline [--port=N] [--threads=N] [--port-file=PATH] [--input-width=N]\n"
	    "  Serve POST on 127.0.0.1:N (0: any free port) with N threads: parse the\n"
	    "  KServe JSON body, count inputs[0].data and answer 10 fixed floats.\n"
	    "  GET /v2/models/NAME describes a model of input-width floats in (default\n"
	    "  784) and 10 out, for inferd-bench --protocol=http (with --rows=1).\n"
	    "  Runs until SIGINT or SIGTERM.\n");
}

/* Describe a model of width floats in, so inferd-bench can load the baseline. */
static void
baseline_set_metadata(int width)
{
	int n;

	n = snprintf(baseline_metadata, sizeof baseline_metadata,
	    "{\"name\":\"baseline\",\"versions\":[\"1\"],\"platform\":\"baseline\","
	    "\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[-1,%d]}],"
	    "\"outputs\":[{\"name\":\"logits\",\"datatype\":\"FP32\",\"shape\":[-1,10]}]}", width);
	if (n < 0 || (size_t)n >= sizeof baseline_metadata)
		fatal("metadata does not fit");
	baseline_metadata_len = (size_t)n;
}

/* Start libmicrohttpd on 127.0.0.1:*port as daemon/http.c does; *port becomes the bound one. */
static struct MHD_Daemon *
baseline_start(int *port, int threads)
{
	const union MHD_DaemonInfo *info;
	struct sockaddr_in addr;
	struct MHD_Daemon *d;

	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)*port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
	    (uint16_t)*port, NULL, NULL, baseline_access, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads,
	    MHD_OPTION_NOTIFY_COMPLETED, baseline_completed, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, 60u,
	    MHD_OPTION_END);
	if (d == NULL)
		fatal("cannot serve HTTP on 127.0.0.1:%d", *port);
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (info != NULL)
		*port = info->port;
	return d;
}

/* Parse the options, serve until SIGINT or SIGTERM. */
int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "port-file", required_argument, NULL, 'f' },
		{ "input-width", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct MHD_Daemon *d;
	const char *port_file = NULL;
	int port = 8001, threads = 4, width = 784, c, sig;
	sigset_t set;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': port = parse_int("port", optarg, 0, 65535); break;
		case 't': threads = parse_int("threads", optarg, 1, 256); break;
		case 'f': port_file = optarg; break;
		case 'w': width = parse_int("input-width", optarg, 1, 1 << 24); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	baseline_set_metadata(width);
	/* Block the stop signals before any thread starts, so only sigwait takes them. */
	if (sigemptyset(&set) != 0 || sigaddset(&set, SIGINT) != 0 ||
	    sigaddset(&set, SIGTERM) != 0 || pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		fatal("blocking signals failed");
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		fatal("ignoring SIGPIPE: %s", strerror(errno));
	d = baseline_start(&port, threads);
	if (port_file != NULL)
		write_port_file(port_file, port);
	fprintf(stderr, "bench-http-baseline: listening on 127.0.0.1:%d with %d threads\n", port, threads);
	if (sigwait(&set, &sig) != 0)
		fatal("sigwait failed");
	MHD_stop_daemon(d);
	fprintf(stderr, "bench-http-baseline: %llu requests answered, %llu refused\n",
	    baseline_stats.ok, baseline_stats.bad);
	return 0;
}
