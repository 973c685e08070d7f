/* daemon_config.h: the daemon's settings, from conf/inferd.conf and --key=value flags. */
#ifndef INFERD_DAEMON_CONFIG_H
#define INFERD_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdio.h>

/*
 * Every key comes from one table in daemon_config.c (name, type, default,
 * doc) that feeds the file parser, the command-line flags, --help and the
 * checked-in conf/inferd.conf.  Strings are malloc'ed and owned here.
 * Values are validated when set: a struct filled by these functions always
 * holds values inside each key's range.
 */
struct daemon_config {
	char *listen_address;		/* listen_address = 127.0.0.1 (IPv4 or IPv6 literal) */
	int http_enable;		/* http_enable = yes (no: no HTTP listener) */
	int http_port;			/* http_port = 8000 (0: any free port, see http_port()) */
	int http_threads;		/* http_threads = 4 */
	size_t max_body_bytes;		/* max_body_bytes = 16777216 */
	int http_max_connections;	/* http_max_connections = 1000 */
	int http_max_connections_per_client;	/* http_max_connections_per_client = 256 */
	int http_header_timeout;	/* http_header_timeout = 30 (seconds) */
	size_t http_min_body_rate;	/* http_min_body_rate = 16K (bytes/s, 0: off) */
	size_t http_body_budget_bytes;	/* http_body_budget_bytes = 256M */
	char *model_repository;		/* model_repository = DATADIR/models */
	char *model_control_mode;	/* model_control_mode = none | explicit | poll */
	char *load_model;		/* load_model = "" (comma list; a repeated key adds to it) */
	int repository_poll_secs;	/* repository_poll_secs = 15 */
	int repository_settle_secs;	/* repository_settle_secs = 2 (0: rescans load at once) */
	char *device;			/* device = auto | cpu | cuda:N */
	size_t pinned_pool_bytes;	/* pinned_pool_bytes = 67108864 */
	char *http_shared_memory;	/* http_shared_memory = auto | on | off */
	int strict_readiness;		/* strict_readiness = yes (ready only if every start-up model loaded) */
	int inflight_batches;		/* inflight_batches = 2 */
	char *background_contexts;	/* background_contexts = auto | yes | no */
	int cuda_graph_max_batch;	/* cuda_graph_max_batch = 256 (0: no graphs) */
	int inline_dispatch;		/* inline_dispatch = yes (submitter launches when the scheduler is idle) */
	int inline_complete;		/* inline_complete = yes (... and completes it when it has already ended) */
	int cpu_threads;		/* cpu_threads = 0 (every online core) */
	char *copy_mode;		/* copy_mode = auto | dma | mapped */
	size_t mapped_copy_max_bytes;	/* mapped_copy_max_bytes = 64K */
	char *compile_cache_dir;	/* compile_cache_dir = "" (off) */
	size_t compile_cache_max_bytes;	/* compile_cache_max_bytes = 16M */
	char *nvml_library;		/* nvml_library = libnvidia-ml.so.1 ("" : no GPU gauges) */
	char *log_level;		/* log_level = info */
	char *request_log;		/* request_log = "" (a path: one JSON line per request; empty: off) */
	char *shm_socket;		/* shm_socket = /run/inferd/inferd.sock ("" : off) */
	int max_clients;		/* max_clients = 64 */
	size_t max_region_bytes;	/* max_region_bytes = 1073741824 */
	int shm_poll_us;		/* shm_poll_us = 50 (0: never poll the rings) */
	char *allow_users;		/* allow_users = "" (comma list; empty: own user and root) */
	char *allow_groups;		/* allow_groups = "" */
	char *shm_socket_mode;		/* shm_socket_mode = "" (octal; empty: derived) */
	char *shm_socket_group;		/* shm_socket_group = "" (empty: derived) */
};

/* Fill every key with its default. */
int config_defaults(struct daemon_config *c, char **cause);
/* Read a config file; on error *cause names the file, line and problem. */
int config_load_file(struct daemon_config *c, const char *path, char **cause);
/* Apply one "key=value" (from --key=value); -1 with *cause if bad. */
int config_set(struct daemon_config *c, const char *key, const char *value,
    char **cause);
/* Free the strings. */
void config_free(struct daemon_config *c);
/* Print every key with its doc and default, as conf/inferd.conf has them. */
void config_print_reference(FILE *f);
/* Print every key as a man page's CONFIGURATION section (inferd.8). */
void config_print_man(FILE *f);
/* Print every key with its default and doc as Markdown (docs/CONFIG.md). */
void config_print_markdown(FILE *f);
/* Print every key as a --key=VALUE option with a one-line summary (--help). */
void config_print_options(FILE *f);
/* Print the names of every key, one a line. */
void config_print_keys(FILE *f);
/* Print the values held in c as "key = value" lines the parser reads back. */
void config_print_values(const struct daemon_config *c, FILE *f);

#endif
