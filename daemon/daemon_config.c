/* daemon_config.c: one table of keys behind the config file, the --key=value flags and the docs. */
#include "config.h"
#include "inferd_paths.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "daemon_config.h"
#include "device_spec.h"
#include "error.h"
#include "log.h"

enum config_type {
	CONFIG_STRING,
	CONFIG_INT,
	CONFIG_SIZE,		/* bytes, with an optional K, M or G suffix */
	CONFIG_BOOL,
};

/* Extra validation of a string value; -1 with *cause when it is refused. */
typedef int (*config_check_fn)(const char *value, char **cause);

/*
 * One key.  doc's first line is the --help summary; all its lines are the
 * comment above the key in conf/inferd.conf.
 */
struct config_key {
	const char *section;
	const char *name;
	enum config_type type;
	const char *def;
	size_t offset;
	long long min, max;		/* INT and SIZE */
	config_check_fn check;		/* STRING, may be NULL */
	const char *doc;
};

static int config_check_address(const char *, char **);
static int config_check_nonempty(const char *, char **);
static int config_check_device(const char *, char **);
static int config_check_log_level(const char *, char **);
static int config_check_socket(const char *, char **);
static int config_check_id_list(const char *, char **);
static int config_check_mode(const char *, char **);
static int config_check_group(const char *, char **);
static int config_check_on_off_auto(const char *, char **);
static int config_check_copy_mode(const char *, char **);
static int config_check_auto_yes_no(const char *, char **);
static int config_check_control_mode(const char *, char **);
static int config_check_model_list(const char *, char **);

#define KEY(f) offsetof(struct daemon_config, f)
#define KIB 1024LL
#define MIB (1024LL * KIB)
#define GIB (1024LL * MIB)

static const struct config_key config_keys[] = {
	{ "HTTP", "listen_address", CONFIG_STRING, "127.0.0.1", KEY(listen_address),
	  0, 0, config_check_address,
	  "Address the HTTP server binds, an IPv4 or IPv6 literal.\n"
	  "The default accepts local clients only; 0.0.0.0 or :: listens on every\n"
	  "interface (inferd has no authentication: put a proxy in front of it)." },
	{ "HTTP", "http_enable", CONFIG_BOOL, "yes", KEY(http_enable), 0, 1, NULL,
	  "Serve the KServe v2 HTTP API (yes or no)." },
	{ "HTTP", "http_port", CONFIG_INT, "8000", KEY(http_port), 0, 65535, NULL,
	  "TCP port of the HTTP server, 0 to 65535.\n"
	  "0 picks any free port; the log says which, and --port-file=PATH writes it." },
	{ "HTTP", "http_threads", CONFIG_INT, "4", KEY(http_threads), 1, 256, NULL,
	  "Threads that parse HTTP requests and JSON bodies, 1 to 256.\n"
	  "A request waiting for inference holds no thread." },
	{ "HTTP", "max_body_bytes", CONFIG_SIZE, "16M", KEY(max_body_bytes),
	  1 * KIB, 1 * GIB, NULL,
	  "Largest HTTP request body, 1K to 1G; a larger one gets 413 before it is read." },
	{ "HTTP", "http_max_connections", CONFIG_INT, "1000", KEY(http_max_connections),
	  1, 65536, NULL,
	  "HTTP connections open at once, all clients together, 1 to 65536.\n"
	  "More are refused at accept (the client sees the connection closed)." },
	{ "HTTP", "http_max_connections_per_client", CONFIG_INT, "256",
	  KEY(http_max_connections_per_client), 1, 65536, NULL,
	  "HTTP connections open at once from one client address, 1 to 65536.\n"
	  "Behind a proxy every request comes from the proxy's address: raise it." },
	{ "HTTP", "http_header_timeout", CONFIG_INT, "30", KEY(http_header_timeout),
	  1, 3600, NULL,
	  "Seconds within which a request's line and headers must arrive, 1 to 3600,\n"
	  "counted from the connection's start or the previous answer (so it is\n"
	  "also how long an idle keep-alive connection stays open).  A trickle of\n"
	  "bytes does not extend it." },
	{ "HTTP", "http_min_body_rate", CONFIG_SIZE, "16K", KEY(http_min_body_rate),
	  0, 1 * GIB, NULL,
	  "Slowest a request body may arrive, in bytes per second averaged over the\n"
	  "whole body, after a grace of http_header_timeout seconds; 0 turns it off.\n"
	  "A slower connection is closed." },
	{ "HTTP", "http_body_budget_bytes", CONFIG_SIZE, "256M",
	  KEY(http_body_budget_bytes), 1 * MIB, 64 * GIB, NULL,
	  "Memory for the HTTP request bodies being received, all connections\n"
	  "together, 1M to 64G.  A request that would need more gets 503 at once." },
	{ "HTTP", "pinned_pool_bytes", CONFIG_SIZE, "64M", KEY(pinned_pool_bytes),
	  64 * KIB, 64 * GIB, NULL,
	  "Pinned host memory for the tensors of HTTP requests in flight, 64K to 64G.\n"
	  "Reserved at start-up, so that no request allocates; each request takes\n"
	  "what its tensors need, and waits within its timeout while the memory is\n"
	  "in use (then 503).  A request larger than all of it is 413; a model whose\n"
	  "one row at its maximum dims does not fit is refused at load." },
	{ "HTTP", "strict_readiness", CONFIG_BOOL, "yes", KEY(strict_readiness), 0, 1, NULL,
	  "Whether readiness needs every start-up model loaded (yes or no).\n"
	  "HTTP and the shm socket are up from the start; /v2/health/ready answers\n"
	  "503 until the start-up loads have finished, then 200: with yes (as\n"
	  "Triton) only when every start-up model loaded, with no whatever the\n"
	  "loads' outcome." },
	{ "HTTP", "http_shared_memory", CONFIG_STRING, "auto", KEY(http_shared_memory), 0, 0,
	  config_check_on_off_auto,
	  "Triton's shared-memory registration over HTTP (/v2/systemsharedmemory,\n"
	  "/v2/cudasharedmemory): on, off, or auto (on while listen_address is a\n"
	  "loopback address, off otherwise).  When off those paths answer 403.\n"
	  "Regions must be owned by allow_users / allow_groups and not writable by others." },
	{ "MODELS AND DEVICE", "model_repository", CONFIG_STRING,
	  INFERD_DATADIR "/models", KEY(model_repository), 0, 0, config_check_nonempty,
	  "Directory holding one subdirectory per model: model.json and the model's\n"
	  "file, model.onnx (an ONNX graph) or *.safetensors (an MLP's weights).\n"
	  "A model may hold versions: <model>/model.json and <model>/<N>/ with the\n"
	  "model files.  A model that fails to load is logged and skipped.\n"
	  "The default is the demo repository installed with inferd." },
	{ "MODELS AND DEVICE", "model_control_mode", CONFIG_STRING, "none", KEY(model_control_mode),
	  0, 0, config_check_control_mode,
	  "How models are loaded and unloaded (Triton's modes): none, explicit or poll.\n"
	  "none: every model loads at start-up; the load/unload endpoints answer 403.\n"
	  "explicit: only the load_model models load at start-up; POST\n"
	  "/v2/repository/models/{m}/load and .../unload load and unload others.\n"
	  "poll: every model loads at start-up and the repository is rescanned every\n"
	  "repository_poll_secs.  In every mode SIGHUP rescans the repository: new\n"
	  "models and versions load, changed ones reload beside the old, and gone\n"
	  "ones unload (explicit mode rescans only the models it loaded)." },
	{ "MODELS AND DEVICE", "load_model", CONFIG_STRING, "", KEY(load_model), 0, 0,
	  config_check_model_list,
	  "In explicit mode, the models loaded at start-up: names, comma-separated;\n"
	  "the key may be repeated (each adds its names)." },
	{ "MODELS AND DEVICE", "repository_poll_secs", CONFIG_INT, "15", KEY(repository_poll_secs),
	  1, 86400, NULL,
	  "In poll mode, seconds between rescans of the repository, 1 to 86400." },
	{ "MODELS AND DEVICE", "repository_settle_secs", CONFIG_INT, "2", KEY(repository_settle_secs),
	  0, 3600, NULL,
	  "Seconds a version's files must have been left alone before a rescan (poll or\n"
	  "SIGHUP) loads them, 0 to 3600: a new or changed version whose files were\n"
	  "written, added or removed more recently waits, what served keeps serving, and\n"
	  "the daemon looks again once the interval has passed, so a copy in progress is\n"
	  "never loaded.  0 loads at once.  Explicit load requests never wait." },
	{ "MODELS AND DEVICE", "device", CONFIG_STRING, "auto", KEY(device), 0, 0,
	  config_check_device,
	  "Where models run: auto, cpu or cuda:N.\n"
	  "auto takes GPU 0 when CUDA finds one, else the CPU (OpenBLAS);\n"
	  "the log says which it took." },
	{ "MODELS AND DEVICE", "inflight_batches", CONFIG_INT, "2",
	  KEY(inflight_batches), 2, 16, NULL,
	  "Batches in flight per model, 2 to 16.\n"
	  "With 2 or more the copy-in of the next batch overlaps the compute of the\n"
	  "current one; each costs one set of device buffers at the model's\n"
	  "max_batch_size." },
	{ "MODELS AND DEVICE", "background_contexts", CONFIG_STRING, "auto", KEY(background_contexts), 0, 0,
	  config_check_auto_yes_no,
	  "Whether a model serves once its first batch context is built, the others\n"
	  "(inflight_batches) being built by a thread of their own and joining as\n"
	  "each is ready: auto, yes or no.  auto is yes on a GPU, where a context's\n"
	  "plans and CUDA graphs take a few hundred milliseconds, and no on the CPU.\n"
	  "no builds them all before the model is ready." },
	{ "MODELS AND DEVICE", "cuda_graph_max_batch", CONFIG_INT, "256",
	  KEY(cuda_graph_max_batch), 0, 65536, NULL,
	  "On CUDA, batches of up to this many rows replay a CUDA graph captured\n"
	  "at start-up (one launch instead of one per kernel), 0 to 65536.\n"
	  "0 turns graphs off; each captured size costs a little device memory." },
	{ "MODELS AND DEVICE", "inline_dispatch", CONFIG_BOOL, "yes", KEY(inline_dispatch), 0, 1, NULL,
	  "Let the thread that takes a request launch its batch itself when the\n"
	  "model's scheduler would dispatch at once (nothing being launched, a free\n"
	  "batch context, e.g. the device idle for it): a lone request reaches the\n"
	  "device without a thread hand-off (yes or no).  Under load batches still\n"
	  "form as before; no sends every batch through the scheduling thread." },
	{ "MODELS AND DEVICE", "inline_complete", CONFIG_BOOL, "yes", KEY(inline_complete), 0, 1, NULL,
	  "With inline_dispatch, let the thread that launched a batch also answer\n"
	  "its clients when the batch has already ended by then (the CPU backend\n"
	  "computes at launch) and no earlier batch is still to be answered: the\n"
	  "answer skips the completion thread's wake-up (yes or no).  Batches still\n"
	  "running on a GPU always go to the completion thread."},
	{ "MODELS AND DEVICE", "cpu_threads", CONFIG_INT, "0", KEY(cpu_threads), 0, 1024, NULL,
	  "Threads the CPU backend computes a batch with (OpenMP loops and sgemm), 0 to 1024.\n"
	  "0 takes every online core.  Every model computing at the same moment uses\n"
	  "this many, so a machine shared with other work may want fewer." },
	{ "MODELS AND DEVICE", "copy_mode", CONFIG_STRING, "auto", KEY(copy_mode), 0, 0,
	  config_check_copy_mode,
	  "How shared-memory tensors reach the GPU and come back: auto, dma or mapped.\n"
	  "dma: one cudaMemcpyAsync per tensor on the client's stream, one event per\n"
	  "request.  mapped: the client's region is mapped for the GPU and one kernel\n"
	  "gathers every request's inputs into the batch (one more scatters the\n"
	  "outputs back), one event per batch.  auto: mapped for tensors of at most\n"
	  "mapped_copy_max_bytes, dma above; on integrated GPUs (and the CPU backend)\n"
	  "mapped for every size, since host and device share memory." },
	{ "MODELS AND DEVICE", "mapped_copy_max_bytes", CONFIG_SIZE, "64K",
	  KEY(mapped_copy_max_bytes), 0, 1 * GIB, NULL,
	  "Largest tensor copy_mode = auto copies through the mapped kernels, 0 to 1G\n"
	  "(0: every tensor by DMA).  Below it the DMA copy's fixed cost per tensor\n"
	  "outweighs the kernel's slower reads over the bus (docs/BENCHMARKS.md)." },
	{ "MODELS AND DEVICE", "nvml_library", CONFIG_STRING, "libnvidia-ml.so.1", KEY(nvml_library), 0, 0, NULL,
	  "NVML library the GPU gauges of /metrics read (utilisation, memory, power,\n"
	  "temperature of each GPU models run on), loaded at start-up with dlopen:\n"
	  "a name the dynamic loader finds, or a path.  Where it cannot be loaded\n"
	  "(no NVIDIA driver) or the daemon runs on the CPU, /metrics has no GPU\n"
	  "gauges and the log says why; empty turns them off.  The tests point it at\n"
	  "a stand-in library." },
	{ "MODELS AND DEVICE", "compile_cache_dir", CONFIG_STRING, "", KEY(compile_cache_dir), 0, 0, NULL,
	  "Directory of the compile cache, or empty (off).  On a GPU, loading a\n"
	  "model chooses a cuDNN engine for every convolution and a cuBLASLt\n"
	  "algorithm for every GEMM with a fused bias, the slow part of a load; the\n"
	  "cache keeps each choice, keyed by the op's full description, in one file\n"
	  "per GPU model and driver, cuDNN and cuBLAS versions, and later loads (a\n"
	  "restart, a reload) take it instead of searching again.  A choice the\n"
	  "library refuses, and a damaged file, are searched again (and logged).\n"
	  "The directory is made if its parent exists.  The packaged service can\n"
	  "use its cache directory, /var/cache/inferd." },
	{ "MODELS AND DEVICE", "compile_cache_max_bytes", CONFIG_SIZE, "16M", KEY(compile_cache_max_bytes),
	  64 * KIB, 4 * GIB, NULL,
	  "Largest compile cache file, 64K to 4G; past it the least recently used\n"
	  "choices are dropped.  A choice takes a few hundred bytes." },
	{ "SHARED-MEMORY CLIENTS", "shm_socket", CONFIG_STRING,
	  "/run/inferd/inferd.sock", KEY(shm_socket), 0, 0, config_check_socket,
	  "Unix socket of the shared-memory client API (libinferd); \"\" turns it off.\n"
	  "Under systemd, /run/inferd is the unit's RuntimeDirectory.  It accepts\n"
	  "clients before the start-up loads: a model still loading is refused\n"
	  "(INFERD_ENOMODEL, saying it is loading) until its load has finished." },
	{ "SHARED-MEMORY CLIENTS", "max_clients", CONFIG_INT, "64", KEY(max_clients),
	  1, 4096, NULL,
	  "Shared-memory clients connected at once, 1 to 4096.\n"
	  "More are refused with a clear error; each client has its own device stream." },
	{ "SHARED-MEMORY CLIENTS", "max_region_bytes", CONFIG_SIZE, "1G",
	  KEY(max_region_bytes), 4 * KIB, 256 * GIB, NULL,
	  "Largest shared-memory region one client may pass, 4K to 256G." },
	{ "SHARED-MEMORY CLIENTS", "shm_poll_us", CONFIG_INT, "50", KEY(shm_poll_us),
	  0, 10000, NULL,
	  "Microseconds the daemon keeps polling the clients' submission rings after\n"
	  "its last activity, 0 to 10000, before it sleeps and asks clients for a\n"
	  "doorbell (an eventfd write).  While it polls, a submission costs the client\n"
	  "no system call; 0 never polls.  An idle daemon sleeps either way." },
	{ "SHARED-MEMORY CLIENTS", "allow_users", CONFIG_STRING, "", KEY(allow_users),
	  0, 0, config_check_id_list,
	  "Users allowed to connect to shm_socket: names or uids, comma-separated.\n"
	  "Checked with SO_PEERCRED.  Empty: the daemon's own user and root." },
	{ "SHARED-MEMORY CLIENTS", "allow_groups", CONFIG_STRING, "", KEY(allow_groups),
	  0, 0, config_check_id_list,
	  "Groups whose members may also connect: names or gids, comma-separated.\n"
	  "Primary and supplementary groups count (SO_PEERGROUPS, else the user's\n"
	  "group list).  Root and the daemon's own user may always connect." },
	{ "SHARED-MEMORY CLIENTS", "shm_socket_mode", CONFIG_STRING, "", KEY(shm_socket_mode),
	  0, 0, config_check_mode,
	  "Permission bits of shm_socket, octal (e.g. 0660).  Empty: derived from the\n"
	  "allow lists: 0600 when both are empty, 0660 when only one group is\n"
	  "allowed (and the socket gets that group), 0666 otherwise (the allow\n"
	  "lists, checked on every connection, are then the only gate)." },
	{ "SHARED-MEMORY CLIENTS", "shm_socket_group", CONFIG_STRING, "",
	  KEY(shm_socket_group), 0, 0, config_check_group,
	  "Group owning shm_socket, a name or gid.  Empty: the one allowed group when\n"
	  "allow_groups names exactly one, else the daemon's group.  The daemon must\n"
	  "be a member of it (or root)." },
	{ "LOGGING", "log_level", CONFIG_STRING, "info", KEY(log_level), 0, 0,
	  config_check_log_level,
	  "Least severe messages logged: error, warn, info or debug.\n"
	  "Logs go to stderr (the journal under systemd)." },
	{ "LOGGING", "request_log", CONFIG_STRING, "", KEY(request_log), 0, 0, NULL,
	  "File to append one JSON line to per finished request, or empty (off).\n"
	  "Each line has time, model, version, status (ok or the failure's reason),\n"
	  "rows, queue_us (submission to its batch's start) and total_us (submission\n"
	  "to completion), for both the HTTP and the shared-memory door." },
};

#define NKEYS (sizeof config_keys / sizeof config_keys[0])

/* Check a copy mode: auto, dma or mapped. */
static int
config_check_copy_mode(const char *value, char **cause)
{
	if (strcmp(value, "auto") == 0 || strcmp(value, "dma") == 0 || strcmp(value, "mapped") == 0)
		return 0;
	return error_set(cause, "'%s' is not auto, dma or mapped", value);
}

/* Check auto, yes or no. */
static int
config_check_auto_yes_no(const char *value, char **cause)
{
	if (strcmp(value, "auto") == 0 || strcmp(value, "yes") == 0 || strcmp(value, "no") == 0)
		return 0;
	return error_set(cause, "'%s' is not auto, yes or no", value);
}

/* Check an IPv4 or IPv6 address literal. */
static int
config_check_address(const char *value, char **cause)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, value, buf) == 1 || inet_pton(AF_INET6, value, buf) == 1)
		return 0;
	return error_set(cause, "'%s' is not an IPv4 or IPv6 address", value);
}

/* Refuse an empty string. */
static int
config_check_nonempty(const char *value, char **cause)
{
	if (*value == '\0')
		return error_set(cause, "must not be empty");
	return 0;
}

/* Check "auto", "cpu" or "cuda:N" with the device layer's own parser. */
static int
config_check_device(const char *value, char **cause)
{
	struct device_spec spec;

	return device_spec_parse(value, &spec, cause);
}

/* Check a log level name. */
static int
config_check_log_level(const char *value, char **cause)
{
	if (log_level_from_name(value) >= 0)
		return 0;
	return error_set(cause, "'%s' is not error, warn, info or debug", value);
}

/* Check that a socket path fits sockaddr_un (empty turns the socket off). */
static int
config_check_socket(const char *value, char **cause)
{
	struct sockaddr_un sun;

	if (strlen(value) >= sizeof sun.sun_path)
		return error_set(cause, "path is longer than %zu bytes", sizeof sun.sun_path - 1);
	return 0;
}

/* Check an octal permission mode of at most 0777 (empty: derived). */
static int
config_check_mode(const char *value, char **cause)
{
	size_t n = strlen(value);

	if (n == 0)
		return 0;
	if (n > 4 || strspn(value, "01234567") != n || strtoul(value, NULL, 8) > 0777)
		return error_set(cause, "'%s' is not an octal mode from 0 to 0777", value);
	return 0;
}

/* Check one group name or gid (empty: derived). */
static int
config_check_group(const char *value, char **cause)
{
	if (strchr(value, ',') != NULL)
		return error_set(cause, "'%s': one group only", value);
	return config_check_id_list(value, cause);
}

/* Check on, off or auto. */
static int
config_check_on_off_auto(const char *value, char **cause)
{
	if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0 || strcmp(value, "auto") == 0)
		return 0;
	return error_set(cause, "'%s' is not on, off or auto", value);
}

/* Check a model control mode. */
static int
config_check_control_mode(const char *value, char **cause)
{
	if (strcmp(value, "none") == 0 || strcmp(value, "explicit") == 0 || strcmp(value, "poll") == 0)
		return 0;
	return error_set(cause, "'%s' is not none, explicit or poll", value);
}

/* Check a comma-separated list of model directory names. */
static int
config_check_model_list(const char *value, char **cause)
{
	const char *p = value;
	size_t n;

	while (*p != '\0') {
		n = strcspn(p, ",");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.') ||
		    memchr(p, '/', n) != NULL || n >= 128)
			return error_set(cause, "'%.*s' is not a model name", (int)n, p);
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Check a comma-separated list of user or group names or numeric ids. */
static int
config_check_id_list(const char *value, char **cause)
{
	const char *p = value, *end;
	size_t n;

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t')
			p++;
		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0 || n > 32 || p[0] == '-' ||
		    strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") < n)
			return error_set(cause, "'%s' is not a comma-separated list of names or ids", value);
		if (end == NULL)
			break;
		p = end + 1;
	}
	return 0;
}

/* Find a key by name. */
static const struct config_key *
config_find(const char *name)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (strcmp(config_keys[i].name, name) == 0)
			return &config_keys[i];
	return NULL;
}

/* Parse a decimal integer inside [min, max]. */
static int
config_parse_int(const struct config_key *k, const char *value, long long *out,
    char **cause)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(value, &end, 10);
	if (end == value || *end != '\0' || isspace((unsigned char)*value))
		return error_set(cause, "%s: '%s' is not a number", k->name, value);
	if (errno == ERANGE || v < k->min || v > k->max)
		return error_set(cause, "%s: %s is out of range (%lld to %lld)", k->name,
		    value, k->min, k->max);
	*out = v;
	return 0;
}

/* Parse a size: digits and an optional K, M or G (powers of 1024) inside [min, max]. */
static int
config_parse_size(const struct config_key *k, const char *value, long long *out,
    char **cause)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)*value))
		return error_set(cause, "%s: '%s' is not a size (bytes, or a number with K, M or G)",
		    k->name, value);
	v = strtoull(value, &end, 10);
	switch (*end) {
	case 'k': case 'K': mult = KIB; end++; break;
	case 'm': case 'M': mult = MIB; end++; break;
	case 'g': case 'G': mult = GIB; end++; break;
	}
	if (*end != '\0')
		return error_set(cause, "%s: '%s' is not a size (bytes, or a number with K, M or G)",
		    k->name, value);
	if (errno == ERANGE || v > ULLONG_MAX / mult || v * mult < (unsigned long long)k->min ||
	    v * mult > (unsigned long long)k->max || v * mult > SIZE_MAX)
		return error_set(cause, "%s: %s is out of range (%lld to %lld bytes)", k->name,
		    value, k->min, k->max);
	*out = (long long)(v * mult);
	return 0;
}

/* Parse yes/no, true/false, on/off, 1/0. */
static int
config_parse_bool(const struct config_key *k, const char *value, long long *out,
    char **cause)
{
	static const char *yes[] = { "yes", "true", "on", "1" };
	static const char *no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(value, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(value, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return error_set(cause, "%s: '%s' is not yes or no", k->name, value);
}

/* Store a string value after its check. */
static int
config_set_string(struct daemon_config *c, const struct config_key *k,
    const char *value, char **cause)
{
	char **field = (char **)((char *)c + k->offset);
	char *copy;

	if (k->check != NULL && k->check(value, cause) != 0)
		return error_prefix(cause, "%s", k->name);
	/* load_model adds to what an earlier line or flag named. */
	if (k->offset == KEY(load_model) && *field != NULL && **field != '\0' && *value != '\0') {
		if (asprintf(&copy, "%s,%s", *field, value) == -1)
			return error_set(cause, "out of memory");
	} else if ((copy = strdup(value)) == NULL) {
		return error_set(cause, "out of memory");
	}
	free(*field);
	*field = copy;
	return 0;
}

/* Apply one key = value. */
int
config_set(struct daemon_config *c, const char *key, const char *value,
    char **cause)
{
	const struct config_key *k;
	long long v = 0;
	int r;

	k = config_find(key);
	if (k == NULL)
		return error_set(cause, "unknown key '%s'", key);
	switch (k->type) {
	case CONFIG_STRING:
		return config_set_string(c, k, value, cause);
	case CONFIG_INT:
		r = config_parse_int(k, value, &v, cause);
		break;
	case CONFIG_SIZE:
		r = config_parse_size(k, value, &v, cause);
		break;
	case CONFIG_BOOL:
		r = config_parse_bool(k, value, &v, cause);
		break;
	default:
		abort();
	}
	if (r != 0)
		return -1;
	if (k->type == CONFIG_SIZE)
		*(size_t *)((char *)c + k->offset) = (size_t)v;
	else
		*(int *)((char *)c + k->offset) = (int)v;
	return 0;
}

/* Fill every key with its default. */
int
config_defaults(struct daemon_config *c, char **cause)
{
	size_t i;

	memset(c, 0, sizeof *c);
	for (i = 0; i < NKEYS; i++) {
		if (config_set(c, config_keys[i].name, config_keys[i].def, cause) != 0) {
			config_free(c);
			return error_prefix(cause, "built-in default");
		}
	}
	return 0;
}

/* Free the strings. */
void
config_free(struct daemon_config *c)
{
	size_t i;
	char **field;

	for (i = 0; i < NKEYS; i++) {
		if (config_keys[i].type != CONFIG_STRING)
			continue;
		field = (char **)((char *)c + config_keys[i].offset);
		free(*field);
		*field = NULL;
	}
}

/* Strip surrounding blanks in place; returns the start. */
static char *
config_trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* Remove the quotes around a value in place: "..." with \" and \\, or '...' taken literally. */
static int
config_unquote(char *v, char **cause)
{
	char q = v[0], *r, *w;

	if (q != '"' && q != '\'')
		return 0;
	for (r = v + 1, w = v; *r != '\0' && *r != q; r++) {
		if (q == '"' && *r == '\\' && (r[1] == '"' || r[1] == '\\'))
			r++;
		*w++ = *r;
	}
	if (*r != q)
		return error_set(cause, "unterminated quoted string");
	if (r[1] != '\0')
		return error_set(cause, "text after the closing quote");
	*w = '\0';
	return 0;
}

/* Parse one line (comments and blanks already skipped) and apply it. */
static int
config_parse_line(struct daemon_config *c, char *line, char **cause)
{
	char *eq, *key, *value;

	eq = strchr(line, '=');
	if (eq == NULL)
		return error_set(cause, "expected 'key = value'");
	*eq = '\0';
	key = config_trim(line);
	value = config_trim(eq + 1);
	if (*key == '\0')
		return error_set(cause, "missing key before '='");
	if (config_unquote(value, cause) != 0)
		return error_prefix(cause, "%s", key);
	return config_set(c, key, value, cause);
}

/* Append "path:lineno: [in "text": ]problem" as one more line of *all; -1 when memory runs out. */
static int
config_note_error(char **all, const char *path, unsigned lineno, const char *text,
    const char *problem)
{
	char *line;
	int r;

	if (text != NULL)
		r = asprintf(&line, "%s%s%s:%u: in \"%s\": %s", *all ? *all : "", *all ? "\n" : "",
		    path, lineno, text, problem);
	else
		r = asprintf(&line, "%s%s%s:%u: %s", *all ? *all : "", *all ? "\n" : "",
		    path, lineno, problem);
	if (r == -1)
		return -1;
	free(*all);
	*all = line;
	return 0;
}

/* Apply one line (a copy of it is kept for the message); -1 only when memory runs out. */
static int
config_read_line(struct daemon_config *c, char *line, const char *path, unsigned lineno,
    char **all)
{
	char *text, *cause = NULL;
	int r = 0;

	text = strdup(line);
	if (text == NULL)
		return -1;
	if (config_parse_line(c, line, &cause) != 0) {
		r = config_note_error(all, path, lineno, text, cause);
		free(cause);
	}
	free(text);
	return r;
}

/*
 * Read lines from f, applying each.  A bad line does not stop the reading: every
 * one is reported, a line each, in *cause.
 */
static int
config_read(struct daemon_config *c, FILE *f, const char *path, char **cause)
{
	char *line = NULL, *all = NULL, *p;
	unsigned lineno = 0;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	errno = 0;
	while (r == 0 && (n = getline(&line, &cap, f)) != -1) {
		lineno++;
		if (strlen(line) != (size_t)n) {
			r = config_note_error(&all, path, lineno, NULL, "NUL byte in line");
			continue;
		}
		p = config_trim(line);
		if (*p != '\0' && *p != '#')
			r = config_read_line(c, p, path, lineno, &all);
	}
	free(line);
	if (r != 0) {
		free(all);
		return error_set(cause, "%s: out of memory", path);
	}
	if (ferror(f)) {
		free(all);
		return error_set(cause, "%s: read error: %s", path, strerror(errno));
	}
	if (all == NULL)
		return 0;
	if (cause == NULL) {
		free(all);
		return -1;
	}
	free(*cause);
	*cause = all;
	return -1;
}

/* Read a config file; on error *cause names the file, line and problem of every bad line. */
int
config_load_file(struct daemon_config *c, const char *path, char **cause)
{
	FILE *f;
	int r;

	f = fopen(path, "r");
	if (f == NULL)
		return error_set(cause, "%s: %s", path, strerror(errno));
	r = config_read(c, f, path, cause);
	fclose(f);
	return r;
}

/* Print a doc paragraph, each line prefixed. */
static void
config_print_doc(FILE *f, const char *doc, const char *prefix)
{
	const char *p = doc, *nl;

	while (*p != '\0') {
		nl = strchr(p, '\n');
		if (nl == NULL) {
			fprintf(f, "%s%s\n", prefix, p);
			break;
		}
		fprintf(f, "%s%.*s\n", prefix, (int)(nl - p), p);
		p = nl + 1;
	}
}

/* Print a default as the file would hold it ("" for an empty string). */
static void
config_print_default(FILE *f, const struct config_key *k)
{
	if (k->type == CONFIG_STRING && *k->def == '\0')
		fputs("\"\"", f);
	else
		fputs(k->def, f);
}

/* Print every key with its doc and default, as conf/inferd.conf has them. */
void
config_print_reference(FILE *f)
{
	const char *section = NULL;
	size_t i;

	fputs("# inferd.conf: configuration of the inferd inference daemon.\n"
	    "#\n"
	    "# One \"key = value\" per line; lines starting with # are comments.\n"
	    "# Strings may be quoted (\"...\" or '...'); sizes are bytes, or a number with\n"
	    "# a K, M or G suffix (1K = 1024).  Any key can also be given on the command\n"
	    "# line as --key=value, which overrides this file.\n"
	    "#\n"
	    "# Every key is shown below, commented out, with its built-in default.\n"
	    "# Check a file with: inferd --config=FILE --check-config\n", f);
	for (i = 0; i < NKEYS; i++) {
		if (section == NULL || strcmp(section, config_keys[i].section) != 0) {
			section = config_keys[i].section;
			fprintf(f, "\n################################ %s ################################\n",
			    section);
		}
		fputc('\n', f);
		config_print_doc(f, config_keys[i].doc, "# ");
		fprintf(f, "#\n# %s = ", config_keys[i].name);
		config_print_default(f, &config_keys[i]);
		fputc('\n', f);
	}
}

/* Print a default for docs/CONFIG.md: the build's data directory as DATADIR, so the file is the same for every build. */
static void
config_print_default_md(FILE *f, const struct config_key *k)
{
	size_t n = strlen(INFERD_DATADIR);

	if (k->type == CONFIG_STRING && *k->def == '\0')
		fputs("empty", f);
	else if (strncmp(k->def, INFERD_DATADIR, n) == 0)
		fprintf(f, "`DATADIR%s` (DATADIR: the data directory, such as /usr/share/inferd)", k->def + n);
	else
		fprintf(f, "`%s`", k->def);
}

/* Print a doc as Markdown text: <, > and * escaped so that they print as written. */
static void
config_print_doc_md(FILE *f, const char *doc)
{
	const char *p;

	for (p = doc; *p != '\0'; p++) {
		if (*p == '<' || *p == '>' || *p == '*')
			fputc('\\', f);
		fputc(*p, f);
	}
	fputc('\n', f);
}

/* Print every key with its default and doc as Markdown (docs/CONFIG.md). */
void
config_print_markdown(FILE *f)
{
	const char *section = NULL;
	size_t i;

	fputs("# inferd configuration reference\n"
	    "\n"
	    "<!-- Generated by `inferd --print-reference-md` from the key table in daemon/daemon_config.c:\n"
	    "     edit the table and regenerate this file; tests/integration/test_config.sh compares them. -->\n"
	    "\n"
	    "Every key can be set in the configuration file (`/etc/inferd/inferd.conf` in the packages; one\n"
	    "`key = value` a line, `#` comments, strings may be quoted) and on the command line as\n"
	    "`--key=value`, which overrides the file; dashes and underscores are interchangeable in names.\n"
	    "Sizes are bytes, or a number with a K, M or G suffix (1K = 1024); booleans are yes or no.\n"
	    "`inferd --config=FILE --check-config` checks a file, `inferd --print-config` shows the values\n"
	    "in effect, and `conf/inferd.conf` holds every key commented out with its default.\n", f);
	for (i = 0; i < NKEYS; i++) {
		if (section == NULL || strcmp(section, config_keys[i].section) != 0) {
			section = config_keys[i].section;
			fprintf(f, "\n## %s\n", section);
		}
		fprintf(f, "\n### `%s`\n\nDefault: ", config_keys[i].name);
		config_print_default_md(f, &config_keys[i]);
		fputs("\n\n", f);
		config_print_doc_md(f, config_keys[i].doc);
	}
}

/* Print text for roff: a backslash as \e, '-' as \- (options stay copyable), a '.' or '\'' opening a line escaped. */
static void
config_print_roff(FILE *f, const char *text, int end_line)
{
	const char *p;
	int bol = 1;

	for (p = text; *p != '\0'; p++) {
		if (bol && (*p == '.' || *p == '\''))
			fputs("\\&", f);
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p, f);
		bol = *p == '\n';
	}
	if (end_line && !bol)
		fputc('\n', f);
}

/* Print every key as a man page's CONFIGURATION section (inferd.8), with its default and doc. */
void
config_print_man(FILE *f)
{
	const char *section = NULL;
	size_t i;

	fputs(".SH CONFIGURATION\n"
	    "Every key may be set in the configuration file (one \\fIkey\\fR = \\fIvalue\\fR a line) and as a\n"
	    "\\fB\\-\\-\\fR\\fIkey\\fR=\\fIvalue\\fR flag, which overrides the file.  Sizes are bytes, or a number\n"
	    "with a K, M or G suffix; booleans are yes or no.\n", f);
	for (i = 0; i < NKEYS; i++) {
		if (section == NULL || strcmp(section, config_keys[i].section) != 0) {
			section = config_keys[i].section;
			fprintf(f, ".SS %s\n", section);
		}
		fprintf(f, ".TP\n.BR %s \" (default: ", config_keys[i].name);
		if (config_keys[i].type == CONFIG_STRING && *config_keys[i].def == '\0')
			fputs("empty", f);
		else
			config_print_roff(f, config_keys[i].def, 0);
		fputs(")\"\n", f);
		config_print_roff(f, config_keys[i].doc, 1);
	}
}

/* Whether the '.' at p ends an abbreviation ("e.g.", "i.e."), not a sentence. */
static int
config_abbreviation_at(const char *doc, const char *p)
{
	return p - doc >= 3 && (strncmp(p - 3, "e.g", 3) == 0 || strncmp(p - 3, "i.e", 3) == 0);
}

/*
 * Length of doc's first sentence: up to its first '.' that ends a line or
 * precedes a blank and ends no abbreviation.
 */
static size_t
config_first_sentence(const char *doc)
{
	const char *p;

	for (p = doc; *p != '\0'; p++)
		if (*p == '.' && (p[1] == '\0' || p[1] == '\n' || p[1] == ' ') && !config_abbreviation_at(doc, p))
			return (size_t)(p - doc) + 1;
	return strlen(doc);
}

/* Print the first n bytes of text, newlines as spaces, wrapped at 78 columns after indent. */
static void
config_print_wrapped(FILE *f, const char *text, size_t n, const char *indent)
{
	size_t col = 0, w;
	const char *p = text, *end = text + n;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\n'))
			p++;
		for (w = 0; p + w < end && p[w] != ' ' && p[w] != '\n'; w++)
			;
		if (w == 0)
			break;
		if (col > 0 && col + 1 + w > 78 - strlen(indent)) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%s%.*s", col == 0 ? indent : " ", (int)w, p);
		col += w + (col > 0);
		p += w;
	}
	fputc('\n', f);
}

/* Print every key as a --key=VALUE option with its first sentence and default. */
void
config_print_options(FILE *f)
{
	const struct config_key *k;
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		k = &config_keys[i];
		fprintf(f, "  --%s=VALUE  (default: ", k->name);
		config_print_default(f, k);
		fputs(")\n", f);
		config_print_wrapped(f, k->doc, config_first_sentence(k->doc), "      ");
	}
}

/* Print the names of every key, one a line. */
void
config_print_keys(FILE *f)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		fprintf(f, "%s\n", config_keys[i].name);
}

/* Print a string double-quoted, escaping what config_unquote unescapes. */
static void
config_print_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Print the values held in c as "key = value" lines. */
void
config_print_values(const struct daemon_config *c, FILE *f)
{
	const struct config_key *k;
	const char *base = (const char *)c;
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		k = &config_keys[i];
		fprintf(f, "%s = ", k->name);
		switch (k->type) {
		case CONFIG_STRING:
			config_print_quoted(f, *(char *const *)(base + k->offset));
			break;
		case CONFIG_INT:
			fprintf(f, "%d", *(const int *)(base + k->offset));
			break;
		case CONFIG_SIZE:
			fprintf(f, "%zu", *(const size_t *)(base + k->offset));
			break;
		case CONFIG_BOOL:
			fputs(*(const int *)(base + k->offset) ? "yes" : "no", f);
			break;
		}
		fputc('\n', f);
	}
}
