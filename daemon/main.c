/* main.c: inferd's command line, start-up in dependency order, signals and orderly shutdown. */
#include "config.h"
#include "inferd_paths.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "batcher.h"
#include "compile_cache.h"
#include "cpu_kernels.h"
#include "daemon_config.h"
#include "daemon_man.h"
#include "device_set.h"
#include "device.h"
#include "error.h"
#include "fault.h"
#include "http.h"
#include "ipc.h"
#include "log.h"
#include "metrics.h"
#include "metrics_gpu.h"
#include "notify.h"
#include "repository.h"
#include "request_log.h"

/* What the command line asks for besides config keys. */
struct options {
	const char *config_path;	/* NULL: the default file, when it exists */
	const char *port_file;		/* write the bound HTTP port here */
	int check_config;
	int print_config;
};

/* Everything the daemon runs; members are NULL until started. */
struct daemon {
	struct daemon_config config;
	const char *port_file;
	int port_file_written;
	device_t *dev;
	device_set_t *devices;		/* dev plus the devices model instances name */
	repository_t *repo;
	struct metrics metrics;
	metrics_gpu_t *gpu;		/* NVML for /metrics' GPU gauges; NULL: none */
	batcher_t *batcher;
	struct door_context http_ctx;
	http_server_t *http;
	struct door_context ipc_ctx;
	ipc_server_t *ipc;
	request_log_t *request_log;	/* request_log's file; NULL: off */
};

/* Print the usage text with every config key. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: inferd [--config=FILE] [--check-config] [--print-config] [--port-file=PATH]\n"
	    "              [--KEY=VALUE ...]\n"
	    "\n"
	    "  --config=FILE        read FILE (default: %s, if it exists)\n"
	    "  --check-config       validate the file and the flags, then exit\n"
	    "  --print-config       print the resulting configuration, then exit\n"
	    "  --print-config-keys  print the name of every key, then exit\n"
	    "  --print-reference    print the reference inferd.conf, then exit\n"
	    "  --print-reference-md print the reference as Markdown (docs/CONFIG.md), then exit\n"
	    "  --print-man          print the inferd(8) man page (roff), then exit\n"
	    "  --port-file=PATH     write the bound HTTP port to PATH once serving\n"
	    "  --version            print the version and the features built in\n"
	    "  --help               print this text\n"
	    "\n"
	    "Every key of inferd.conf is also a flag and overrides the file\n"
	    "(dashes and underscores are interchangeable in names):\n",
	    INFERD_SYSCONFDIR "/inferd.conf");
	config_print_options(f);
	fputs("\n"
	    "inferd runs in the foreground and logs to stderr; stop it with Ctrl-C or SIGTERM.\n"
	    "SIGHUP rescans the model repository (new, changed and removed models and versions).\n"
	    "HTTP endpoints (KServe v2, as Triton speaks it):\n"
	    "  GET  /v2/health/live, /v2/health/ready     liveness, readiness\n"
	    "  GET  /v2                                   server metadata\n"
	    "  GET  /v2/models, POST /v2/repository/index the models and their state\n"
	    "  GET  /v2/models/{m}[/ready|/config|/stats] metadata, readiness, configuration,\n"
	    "                                             statistics of model m\n"
	    "  POST /v2/models/{m}/infer, POST /infer     inference (JSON or binary tensors)\n"
	    "  .../v2/models/{m}/versions/{v}/...         the same for version v (else the newest)\n"
	    "  POST /v2/repository/models/{m}/load|unload load or unload m (model_control_mode=explicit)\n"
	    "  GET  /metrics                              Prometheus metrics\n"
	    "\n"
	    "Example (the demo model, from a source tree; then, in a second terminal):\n"
	    "  ./inferd --model_repository=conf/models --shm_socket=/tmp/inferd.sock\n"
	    "  curl -s -d @docs/examples/fashion-request.json \\\n"
	    "      http://127.0.0.1:8000/v2/models/fashion-mlp/infer\n", f);
}

/* Print the version and the optional features built in. */
static void
version(void)
{
#ifdef HAVE_CUDA
	const char *cuda = "yes";
#else
	const char *cuda = "no";
#endif
	printf("%s\ncuda: %s\nsystemd: %s\n", PACKAGE_STRING, cuda,
	    notify_available() ? "yes" : "no");
}

/*
 * Split "--name[=value]" into a name with dashes turned to underscores
 * (in buf) and the value (NULL without '=').  -1 if arg is no option.
 */
static int
split_option(const char *arg, char *buf, size_t len, const char **value)
{
	const char *eq;
	size_t n, i;

	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
		return -1;
	arg += 2;
	eq = strchr(arg, '=');
	n = eq ? (size_t)(eq - arg) : strlen(arg);
	if (n >= len)
		n = len - 1;
	for (i = 0; i < n; i++)
		buf[i] = arg[i] == '-' ? '_' : arg[i];
	buf[n] = '\0';
	*value = eq ? eq + 1 : NULL;
	return 0;
}

/*
 * First pass over argv: the options that are not config keys.  Returns 1
 * when the program should exit 0 now (--help and friends), -1 on a bad
 * argument, 0 to go on.
 */
static int
parse_options(int argc, char **argv, struct options *o, char **cause)
{
	const char *value;
	char name[64];
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 1;
		}
		if (split_option(argv[i], name, sizeof name, &value) != 0)
			return error_set(cause, "unexpected argument '%s' (see --help)", argv[i]);
		if (strcmp(name, "help") == 0) {
			usage(stdout);
			return 1;
		} else if (strcmp(name, "version") == 0) {
			version();
			return 1;
		} else if (strcmp(name, "print_config_keys") == 0) {
			config_print_keys(stdout);
			return 1;
		} else if (strcmp(name, "print_reference") == 0) {
			config_print_reference(stdout);
			return 1;
		} else if (strcmp(name, "print_reference_md") == 0) {
			config_print_markdown(stdout);
			return 1;
		} else if (strcmp(name, "print_man") == 0) {
			daemon_print_man(stdout);
			return 1;
		} else if (strcmp(name, "check_config") == 0) {
			o->check_config = 1;
		} else if (strcmp(name, "print_config") == 0) {
			o->print_config = 1;
		} else if (strcmp(name, "config") == 0 || strcmp(name, "port_file") == 0) {
			if (value == NULL || *value == '\0')
				return error_set(cause, "%s needs a value (%s=PATH)", argv[i], argv[i]);
			if (name[0] == 'c')
				o->config_path = value;
			else
				o->port_file = value;
		}
	}
	return 0;
}

/* Second pass over argv: apply every --key=value on top of the file. */
static int
apply_flags(int argc, char **argv, struct daemon_config *c, char **cause)
{
	static const char *meta[] = { "config", "port_file", "check_config", "print_config" };
	const char *value;
	char name[64];
	size_t j;
	int i;

	for (i = 1; i < argc; i++) {
		if (split_option(argv[i], name, sizeof name, &value) != 0)
			continue;
		for (j = 0; j < sizeof meta / sizeof meta[0]; j++)
			if (strcmp(name, meta[j]) == 0)
				break;
		if (j < sizeof meta / sizeof meta[0])
			continue;
		if (value == NULL)
			return error_set(cause, "%s needs a value (%s=VALUE)", argv[i], argv[i]);
		if (config_set(c, name, value, cause) != 0)
			return error_prefix(cause, "%s", argv[i]);
	}
	return 0;
}

/* Defaults, then the config file, then the flags. */
static int
load_config(int argc, char **argv, const struct options *o,
    struct daemon_config *c, const char **used, char **cause)
{
	const char *path = o->config_path;

	if (config_defaults(c, cause) != 0)
		return -1;
	if (path == NULL && access(INFERD_SYSCONFDIR "/inferd.conf", F_OK) == 0)
		path = INFERD_SYSCONFDIR "/inferd.conf";
	*used = path;
	if (path != NULL && config_load_file(c, path, cause) != 0)
		goto fail;
	if (apply_flags(argc, argv, c, cause) != 0)
		goto fail;
	if (o->port_file != NULL && !c->http_enable) {
		error_set(cause, "--port-file needs HTTP, but http_enable is no");
		goto fail;
	}
	return 0;
fail:
	config_free(c);
	return -1;
}

/* The main thread's id, for signals_forward. */
static pid_t main_tid;

/*
 * A stop or rescan signal delivered to a thread that does not block it
 * (threads libraries start before main(), such as OpenBLAS's pool or the
 * sanitizer runtimes', never inherited our mask) is sent on to the main
 * thread, which blocks it until sigwaitinfo takes it: without this the
 * default action would end the daemon when the signal arrives while the main
 * thread is not yet waiting.  tgkill is async-signal-safe.
 */
static void
signals_forward(int sig)
{
	int saved = errno;

	(void)syscall(SYS_tgkill, getpid(), main_tid, sig);
	errno = saved;
}

/* Ignore SIGPIPE and block the signals the main loop waits for, before any thread starts. */
static int
signals_setup(sigset_t *set, char **cause)
{
	struct sigaction sa;
	int r;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	if (sigemptyset(&sa.sa_mask) != 0 || sigaction(SIGPIPE, &sa, NULL) != 0)
		return error_set(cause, "ignoring SIGPIPE: %s", strerror(errno));
	if (sigemptyset(set) != 0 || sigaddset(set, SIGTERM) != 0 ||
	    sigaddset(set, SIGINT) != 0 || sigaddset(set, SIGHUP) != 0)
		return error_set(cause, "building the signal set: %s", strerror(errno));
	/* Threads inherit the mask, so only sigwaitinfo below ever takes these. */
	r = pthread_sigmask(SIG_BLOCK, set, NULL);
	if (r != 0)
		return error_set(cause, "blocking signals: %s", strerror(r));
	main_tid = (pid_t)syscall(SYS_gettid);
	sa.sa_handler = signals_forward;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0 ||
	    sigaction(SIGHUP, &sa, NULL) != 0)
		return error_set(cause, "installing the signal forwarder: %s", strerror(errno));
	return 0;
}

/*
 * Ignore further SIGTERM/SIGINT while draining.  Nobody waits for them any
 * more, and threads the sanitizer runtimes start before main() do not block
 * them, so a repeat would otherwise take the default action mid-shutdown.
 */
static void
signals_ignore_repeats(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		LOG_WARN("ignoring repeated stop signals: %s", strerror(errno));
}

/*
 * Milliseconds to sleep before rescanning unasked: poll_secs in poll mode, or
 * sooner when a rescan left versions waiting for their files to settle; -1:
 * until a signal.
 */
static int64_t
signals_timeout_ms(repository_t *repo, int poll_secs)
{
	int64_t due = repository_settle_due_ms(repo), poll = poll_secs > 0 ? poll_secs * 1000LL : -1;

	if (due < 0)
		return poll;
	return poll >= 0 && poll < due ? poll : due;
}

/*
 * Whether SIGTERM or SIGINT waits to be taken: the registry asks between
 * the steps of a load, so a stop that comes while the main thread loads
 * (start-up, a rescan) is acted on at the next step, not after every load.
 */
static int
signals_stop_pending(void *arg)
{
	sigset_t pending;

	(void)arg;
	return sigpending(&pending) == 0 &&
	    (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
}

/*
 * Sleep until SIGTERM or SIGINT; no CPU is used meanwhile.  SIGHUP rescans
 * the model repository; in poll mode so does every poll_secs of quiet, and in
 * every mode the time a version waiting for its files to settle asks for.
 */
static int
signals_wait(const sigset_t *set, repository_t *repo, int poll_secs)
{
	struct timespec ts;
	siginfo_t si;
	int64_t ms;
	int sig;

	for (;;) {
		ms = signals_timeout_ms(repo, poll_secs);
		ts.tv_sec = (time_t)(ms / 1000);
		ts.tv_nsec = (long)(ms % 1000) * 1000000;
		sig = ms >= 0 ? sigtimedwait(set, &si, &ts) : sigwaitinfo(set, &si);
		if (sig == -1 && errno == EAGAIN) {
			repository_rescan(repo);
			continue;
		}
		if (sig == -1) {
			if (errno == EINTR)
				continue;
			LOG_ERROR("sigwaitinfo: %s", strerror(errno));
			return -1;
		}
		if (si.si_signo == SIGHUP) {
			LOG_INFO("SIGHUP from pid %ld: rescanning the model repository %s (the configuration "
			    "file is not reread)", (long)si.si_pid, repository_dir(repo));
			repository_rescan(repo);
			continue;
		}
		LOG_INFO("%s from pid %ld: shutting down",
		    si.si_signo == SIGTERM ? "SIGTERM" : "SIGINT", (long)si.si_pid);
		signals_ignore_repeats();
		return 0;
	}
}

/* The per-model counters: made as models load (metrics_model_add). */
static int
daemon_init_metrics(struct daemon *d, char **cause)
{
	if (metrics_init(&d->metrics, NULL, 0) != 0)
		return error_set(cause, "metrics: out of memory");
	return 0;
}

/* NVML for /metrics' GPU gauges when the daemon runs on a GPU; without it, one line says why. */
static void
daemon_init_gpu_metrics(struct daemon *d)
{
	char *why = NULL;

	if (!device_is_gpu(d->dev)) {
		LOG_INFO("gpu metrics: none (the daemon runs on %s)", device_name(d->dev));
		return;
	}
	if (metrics_gpu_open(d->config.nvml_library, &d->gpu, &why) != 0) {
		LOG_INFO("gpu metrics: none: %s", why);
		free(why);
		return;
	}
	LOG_INFO("gpu metrics: through NVML (%s), sampled at most once a second on scrape", d->config.nvml_library);
}

/* The model control mode named in the configuration. */
static enum repository_control
daemon_control_mode(const struct daemon_config *c)
{
	if (strcmp(c->model_control_mode, "explicit") == 0)
		return REPOSITORY_CONTROL_EXPLICIT;
	return strcmp(c->model_control_mode, "poll") == 0 ? REPOSITORY_CONTROL_POLL : REPOSITORY_CONTROL_NONE;
}

/* Split load_model's comma list into a NULL-terminated array (in place of a copy). */
static char **
daemon_load_list(const char *list, char **copy)
{
	size_t n = 1, i = 0;
	char **v, *p, *save = NULL;
	const char *q;

	for (q = list; *q != '\0'; q++)
		n += *q == ',';
	if ((*copy = strdup(list)) == NULL || (v = calloc(n + 1, sizeof *v)) == NULL) {
		free(*copy);
		return NULL;
	}
	for (p = strtok_r(*copy, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save))
		v[i++] = p;
	return v;
}

/* repository_options.progress: say which start-up load begins, in the log and to systemd. */
static void
daemon_load_progress(void *arg, size_t i, size_t n, const char *name)
{
	(void)arg;
	LOG_INFO("start-up load %zu of %zu: model '%s'", i, n, name);
	notify_status("loading %zu/%zu: %s", i, n, name);
}

/* Make the registry (empty: the servers may start before the start-up load). */
static int
daemon_create_repository(struct daemon *d, char **cause)
{
	struct repository_options o = {
		.dev = d->dev, .devices = d->devices, .batcher = d->batcher, .metrics = &d->metrics,
		.dir = d->config.model_repository, .control = daemon_control_mode(&d->config),
		.inflight = d->config.inflight_batches, .settle_secs = d->config.repository_settle_secs,
		.staging_bytes = d->config.pinned_pool_bytes,
		.progress = daemon_load_progress,
	};

	if (repository_create(&o, &d->repo, cause) != 0)
		return -1;
	repository_set_stop_check(d->repo, signals_stop_pending, NULL);
	LOG_INFO("model control mode: %s", repository_control_name(o.control));
	return 0;
}

/* Load what the control mode loads at start-up. */
static int
daemon_load_models(struct daemon *d, char **cause)
{
	char **names, *copy = NULL;
	int r;

	if ((names = daemon_load_list(d->config.load_model, &copy)) == NULL)
		return error_set(cause, "out of memory");
	notify_status("loading the models of %s", d->config.model_repository);
	r = repository_load_startup(d->repo, names, cause);
	free(names);
	free(copy);
	return r;
}

/* Write the bound port to the port file atomically (a reader never sees half of it). */
static int
daemon_write_port_file(struct daemon *d, int port, char **cause)
{
	char *tmp;
	FILE *f;
	int r;

	if (asprintf(&tmp, "%s.tmp", d->port_file) == -1)
		return error_set(cause, "out of memory");
	f = fopen(tmp, "w");
	if (f == NULL) {
		error_set(cause, "port file %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	r = fprintf(f, "%d\n", port) < 0;
	r |= fclose(f) != 0;
	if (r != 0 || rename(tmp, d->port_file) != 0) {
		error_set(cause, "port file %s: %s", d->port_file, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	d->port_file_written = 1;
	return 0;
}

/* Start the HTTP server (its port is published once everything is up). */
static int
daemon_start_http(struct daemon *d, char **cause)
{
	d->http_ctx = (struct door_context){ &d->config, d->dev, d->repo, d->batcher, &d->metrics, d->devices, d->gpu };
	return http_start(&d->http_ctx, &d->http, cause);
}

/*
 * When the shm socket's directory is missing (/run/inferd exists only under
 * the packaged service), replace cause by a message that says what to set.
 */
static void
daemon_socket_dir_hint(const char *path, char **cause)
{
	char *dir = xstrdup(path), *slash;

	if (dir == NULL)
		return;
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (access(dir, F_OK) != 0 && errno == ENOENT) {
			free(*cause);
			*cause = NULL;
			error_set(cause, "shm socket %s: its directory %s does not exist (the packaged "
			    "service makes it); pass --shm_socket=PATH in a directory you can write, such as "
			    "--shm_socket=/tmp/inferd.sock, or --shm_socket= to turn the socket off", path, dir);
		}
	}
	free(dir);
}

/* Start the shared-memory IPC server. */
static int
daemon_start_ipc(struct daemon *d, char **cause)
{
	d->ipc_ctx = (struct door_context){ &d->config, d->dev, d->repo, d->batcher, &d->metrics, d->devices, d->gpu };
	if (ipc_start(&d->ipc_ctx, &d->ipc, cause) != 0) {
		daemon_socket_dir_hint(d->config.shm_socket, cause);
		if (strncmp(*cause, "shm socket ", 11) != 0)
			error_prefix(cause, "shm socket %s", d->config.shm_socket);
		return -1;
	}
	LOG_INFO("ipc: listening on %s (each model serves once its start-up load has finished)", d->config.shm_socket);
	return 0;
}

/* Log one line saying what is being served. */
static void
daemon_log_summary(struct daemon *d)
{
	const char *addr = d->config.listen_address;
	int v6 = strchr(addr, ':') != NULL;
	char http[128] = "off";
	size_t loaded, failed;

	repository_counts(d->repo, &loaded, &failed);
	if (d->http != NULL)
		snprintf(http, sizeof http, "%s%s%s:%d", v6 ? "[" : "", addr, v6 ? "]" : "",
		    http_port(d->http));
	if (loaded == 0)
		LOG_WARN("no model loaded from %s", repository_dir(d->repo));
	LOG_INFO("started: %zu model%s loaded, %zu failed, from %s; device %s; http %s; shm socket %s",
	    loaded, loaded == 1 ? "" : "s", failed,
	    repository_dir(d->repo), device_name(d->dev), http,
	    *d->config.shm_socket != '\0' ? d->config.shm_socket : "off");
	notify_status("serving %zu model%s (%zu failed to load); http %s", loaded,
	    loaded == 1 ? "" : "s", failed, http);
}

/* The batcher's options: how shared-memory tensors are copied, inline dispatch and completion, background contexts. */
static int
daemon_copy_mode(struct daemon *d, char **cause)
{
	enum batch_copy_mode mode;

	if (batch_copy_mode_parse(d->config.copy_mode, &mode) != 0)
		return error_set(cause, "copy_mode '%s' is not auto, dma or mapped", d->config.copy_mode);
	batcher_set_copy_mode(d->batcher, mode, d->config.mapped_copy_max_bytes);
	batcher_set_inline_dispatch(d->batcher, d->config.inline_dispatch);
	batcher_set_background_contexts(d->batcher, strcmp(d->config.background_contexts, "auto") == 0 ? -1 :
	    strcmp(d->config.background_contexts, "yes") == 0);
	batcher_set_inline_complete(d->batcher, d->config.inline_complete);
	LOG_INFO("inline dispatch: %s, inline completion: %s", d->config.inline_dispatch ? "on" : "off",
	    d->config.inline_dispatch && d->config.inline_complete ? "on" : "off");
	if (mode == BATCH_COPY_DMA)
		LOG_INFO("copy mode: dma (every tensor by a DMA copy)");
	else if (mode == BATCH_COPY_MAPPED || device_is_integrated(d->dev))
		LOG_INFO("copy mode: %s (every shared-memory tensor through the batch kernels%s)",
		    batch_copy_mode_name(mode), device_is_integrated(d->dev) ? ": host and device share memory" : "");
	else
		LOG_INFO("copy mode: auto (tensors up to %zu bytes through the batch kernels, DMA above)",
		    d->config.mapped_copy_max_bytes);
	return 0;
}

/* Open the request log when request_log names a file, and hand it to the batcher. */
static int
daemon_request_log(struct daemon *d, char **cause)
{
	if (*d->config.request_log == '\0')
		return 0;
	if (request_log_open(d->config.request_log, &d->request_log, cause) != 0)
		return -1;
	batcher_set_request_log(d->batcher, d->request_log);
	LOG_INFO("request log: %s (a JSON line per finished request)", d->config.request_log);
	return 0;
}

/* Bring every part up in dependency order; -1 with *cause on the first failure. */
static int
daemon_start(struct daemon *d, char **cause)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int cpu_threads = d->config.cpu_threads > 0 ? d->config.cpu_threads : cores > 0 ? (int)cores : 1;

	compile_cache_configure(d->config.compile_cache_dir, d->config.compile_cache_max_bytes);
	if (*d->config.compile_cache_dir != '\0')
		LOG_INFO("compile cache: %s (at most %zu bytes a file)", d->config.compile_cache_dir,
		    d->config.compile_cache_max_bytes);
	else
		LOG_INFO("compile cache: off (compile_cache_dir is empty)");
	if (device_open(d->config.device, &d->dev, cause) != 0)
		return -1;
	LOG_INFO("device: %s", device_name(d->dev));
	if (!device_is_gpu(d->dev)) {
		device_set_threads(d->dev, cpu_threads);
		LOG_INFO("cpu threads: %d", cpu_threads);
	}
	if (device_set_create(d->dev, strcmp(d->config.device, "auto") == 0, cpu_threads, &d->devices, cause) != 0)
		return -1;
	if (daemon_init_metrics(d, cause) != 0)
		return -1;
	daemon_init_gpu_metrics(d);
	if (batcher_create(d->dev, &d->metrics, d->config.inflight_batches,
	    d->config.cuda_graph_max_batch,
	    &d->batcher, cause) != 0)
		return error_prefix(cause, "batcher");
	if (daemon_request_log(d, cause) != 0 || daemon_copy_mode(d, cause) != 0 ||
	    daemon_create_repository(d, cause) != 0)
		return -1;
	/*
	 * Both doors come up before the loads, so that clients can connect
	 * while models load: over HTTP liveness, readiness (503 meanwhile) and
	 * the repository index (LOADING) answer; over the shm socket a lookup
	 * of a model still loading is refused naming it and that it is loading
	 * (ERR_NO_MODEL), and the same connection finds it once it is loaded.
	 * Both doors reach models only through published versions
	 * (repository_acquire*), which a load publishes once its queues run.
	 */
	if (d->config.http_enable && daemon_start_http(d, cause) != 0)
		return -1;
	if (*d->config.shm_socket != '\0' && daemon_start_ipc(d, cause) != 0)
		return -1;
	if (daemon_load_models(d, cause) != 0)
		return -1;
	if (repository_stopping(d->repo)) {
		/* The stop signal waits for signals_wait, which shuts down at once. */
		LOG_INFO("a stop signal came during the start-up load: never ready, shutting down");
		return 0;
	}
	/*
	 * Both servers have preallocated; from here on (or from when the last
	 * start-up context built in the background is ready) the count must stay flat.
	 */
	batcher_startup_finish(d->batcher);
	repository_startup_finish(d->repo);
	daemon_log_summary(d);
	if (!repository_server_ready(d->repo, d->config.strict_readiness))
		LOG_WARN("/v2/health/ready answers 503: a start-up model failed to load and strict_readiness is yes "
		    "(fix the model, or set strict_readiness = no to be ready beside it)");
	/*
	 * Readiness is published (port file, READY=1) only once the log says
	 * so: whoever waits on either then finds the summary and "ready" there.
	 */
	LOG_INFO("ready");
	FAULT_MARK("ready");
	if (d->http != NULL && d->port_file != NULL &&
	    daemon_write_port_file(d, http_port(d->http), cause) != 0)
		return -1;
	notify_ready();
	return 0;
}

/*
 * Stop in the reverse order of start-up.  New work is refused everywhere
 * first, then work already accepted drains (the batcher still runs while
 * the servers wait for their requests), then everything is freed.
 */
static void
daemon_stop(struct daemon *d, int started)
{
	/* A load on an HTTP thread stops at its next step; http_stop waits for it. */
	if (d->repo != NULL)
		repository_stop_loads(d->repo);
	if (d->http != NULL)
		http_begin_shutdown(d->http);
	if (d->ipc != NULL)
		ipc_begin_shutdown(d->ipc);
	if (d->batcher != NULL)
		batcher_shutdown(d->batcher);
	/* Sent once new work is refused, so a client that sees it may rely on that. */
	if (started)
		notify_stopping();
	if (d->http != NULL)
		http_stop(d->http);
	if (d->ipc != NULL)
		ipc_stop(d->ipc);
	repository_free(d->repo);
	if (d->batcher != NULL)
		batcher_free(d->batcher);
	request_log_close(d->request_log);
	metrics_free(&d->metrics);
	metrics_gpu_close(d->gpu);
	device_set_free(d->devices);
	if (d->dev != NULL)
		device_close(d->dev);
	compile_cache_shutdown();
	if (d->port_file_written && unlink(d->port_file) != 0)
		LOG_WARN("removing port file %s: %s", d->port_file, strerror(errno));
	fault_report();
	config_free(&d->config);
}

/* What the daemon needs on disk before it starts: a readable model repository directory. */
static int
check_model_repository(const struct daemon_config *c)
{
	DIR *d = opendir(c->model_repository);

	if (d == NULL) {
		LOG_ERROR("model_repository %s: %s", c->model_repository, strerror(errno));
		return -1;
	}
	closedir(d);
	return 0;
}

/* Handle the configuration-only modes; returns an exit code, or -1 to go on. */
static int
config_only(const struct options *o, const struct daemon_config *c, const char *path)
{
	if (o->print_config) {
		config_print_values(c, stdout);
		return 0;
	}
	if (o->check_config) {
		if (check_model_repository(c) != 0)
			return 1;
		printf("configuration OK (%s%s)\n", path ? path : "no config file",
		    path ? " and flags" : ", flags only");
		return 0;
	}
	return -1;
}

/* Log a message of several lines (every bad line of a config file) a line each. */
static void
log_error_lines(char *msg)
{
	char *save = NULL, *line;

	for (line = strtok_r(msg, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		LOG_ERROR("%s", line);
}

int
main(int argc, char **argv)
{
	struct options opts = { 0 };
	struct daemon d = { 0 };
	const char *path;
	char *cause = NULL;
	sigset_t set;
	int r;

	if (cpu_threads_bound_waits(argv, &cause) != 0) {
		LOG_WARN("%s", cause);
		free(cause);
		cause = NULL;
	}
	alloc_install_json();
	r = parse_options(argc, argv, &opts, &cause);
	if (r == 1)
		return 0;
	if (r != 0 || load_config(argc, argv, &opts, &d.config, &path, &cause) != 0)
		goto out;
	r = config_only(&opts, &d.config, path);
	if (r != -1) {
		config_free(&d.config);
		return r;
	}
	if (log_set_level(d.config.log_level) != 0)
		abort();	/* config_set validated it */
	d.port_file = opts.port_file;
	LOG_INFO("%s starting (pid %ld, config %s)", PACKAGE_STRING, (long)getpid(),
	    path ? path : "none");
	if (signals_setup(&set, &cause) != 0 || daemon_start(&d, &cause) != 0) {
		LOG_ERROR("%s", cause);
		free(cause);
		daemon_stop(&d, 0);
		return 1;
	}
	r = signals_wait(&set, d.repo, repository_control_mode(d.repo) == REPOSITORY_CONTROL_POLL ?
	    d.config.repository_poll_secs : 0);
	daemon_stop(&d, 1);
	LOG_INFO("stopped");
	return r == 0 ? 0 : 1;
out:
	log_error_lines(cause);
	free(cause);
	return 1;
}
