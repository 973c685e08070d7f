/* libinferd.c: the connection's life (connect, close) and looking models up. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "libinferd_impl.h"

#define INFERD_DEFAULT_TIMEOUT_MS 10000
/* Spinning on the completion ring before sleeping: long enough for a small request on a fast path. */
#define INFERD_DEFAULT_SPIN_US 50
#define INFERD_MAX_SPIN_US 10000

/* The library version. */
const char *
inferd_version(void)
{
#define INFERD__STR(x) #x
#define INFERD__VERSION(a, b) INFERD__STR(a) "." INFERD__STR(b)
	return INFERD__VERSION(INFERD_VERSION_MAJOR, INFERD_VERSION_MINOR);
}

/* Allocate the connection with everything closed. */
static inferd_conn_t *
inferd__conn_new(const struct inferd_options *o)
{
	inferd_conn_t *c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->control_fd = c->submit_fd = c->doorbell_fd = -1;
	c->region_fd = -1;
	c->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : INFERD_DEFAULT_TIMEOUT_MS;
	c->reconnect = o && o->reconnect;
	c->reconnect_max_ms = o && o->reconnect_max_ms > 0 ? o->reconnect_max_ms : INFERD_DEFAULT_TIMEOUT_MS;
	c->spin_us = !o || o->spin_us == 0 ? INFERD_DEFAULT_SPIN_US : o->spin_us < 0 ? 0 :
	    o->spin_us > INFERD_MAX_SPIN_US ? INFERD_MAX_SPIN_US : o->spin_us;
	if (inferd__sync_init(c) != 0) {
		inferd__sync_free(c);
		free(c);
		return NULL;
	}
	return c;
}

/* Connect, create and hand over the region. */
int
inferd_connect(const char *socket_path, const struct inferd_options *opts,
    inferd_conn_t **out)
{
	struct inferd_wire_server_hello h;
	struct inferd_options o = INFERD_OPTIONS_INIT;
	inferd_conn_t *c;
	int memfd = -1, r;

	inferd__clear_error();
	if (out == NULL)
		return inferd__fail(INFERD_EINVAL, "out is NULL");
	*out = NULL;
	if (opts != NULL && (r = inferd__struct_copy(&o, INFERD__OPTIONS_SIZE_0_3, INFERD__OPTIONS_SIZE_0_1, opts,
	    opts->size, "INFERD_OPTIONS")) != 0)
		return r;
	opts = &o;
	if ((c = inferd__conn_new(opts)) == NULL)
		return inferd__fail(INFERD_ENOMEM, "out of memory");
	if ((r = inferd__dial(socket_path ? socket_path : INFERD_DEFAULT_SOCKET, &c->control_fd)) != 0 ||
	    (r = inferd__server_hello(c, &h)) != 0 || (r = inferd__geometry(c, opts, &h)) != 0 ||
	    (r = inferd__region(c, &memfd)) != 0 || (r = inferd__attach(c, memfd)) != 0 ||
	    (r = inferd__ring_init(c)) != 0 || (r = inferd__alloc_init(c)) != 0)
		goto fail;
	/* The daemon holds its own reference; the mapping keeps ours alive (kept to reconnect). */
	if (opts->reconnect) {
		c->region_fd = memfd;
		if ((c->socket_path = strdup(socket_path ? socket_path : INFERD_DEFAULT_SOCKET)) == NULL) {
			r = inferd__fail(INFERD_ENOMEM, "out of memory");
			goto fail;
		}
	} else {
		close(memfd);
	}
	memfd = -1;
	c->models_cap = inferd__models_cap(c->nmodels);
	if ((c->models = calloc(c->models_cap, sizeof *c->models)) == NULL) {
		r = inferd__fail(INFERD_ENOMEM, "out of memory");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (memfd != -1)
		close(memfd);
	inferd_close(c);
	return r;
}

/* Close the connection and release the region. */
void
inferd_close(inferd_conn_t *c)
{
	unsigned i;

	if (c == NULL)
		return;
	inferd__async_stop(c);
	if (c->region_fd != -1)
		close(c->region_fd);
	free(c->socket_path);
	inferd__retired_free(c);
	if (c->control_fd != -1)
		close(c->control_fd);
	if (c->submit_fd != -1)
		close(c->submit_fd);
	if (c->doorbell_fd != -1)
		close(c->doorbell_fd);
	if (c->base != NULL)
		munmap(c->base, c->region_bytes);
	if (c->models != NULL)
		for (i = 0; i < c->nmodels; i++)
			free(c->models[i]);
	free(c->models);
	free(c->dims_cache);
	inferd__ring_free(c);
	free(c->extents);
	inferd__sync_free(c);
	free(c);
}

/* Number of models served. */
unsigned
inferd_model_count(inferd_conn_t *c)
{
	return c != NULL ? c->nmodels : 0;
}

/* Look a model (and version, 0: the newest) up by name in the cache, else ask the daemon (control_lock held). */
static int
inferd__model_by_name(inferd_conn_t *c, const char *name, int64_t version, const struct inferd_model **out)
{
	unsigned i;

	for (i = 0; i < c->nmodels; i++)
		if (c->models[i] != NULL && c->models[i]->version == version && strcmp(c->models[i]->name, name) == 0) {
			*out = c->models[i];
			return 0;
		}
	return inferd__model_query(c, name, version, 0, out);
}

/* Look a model up by name. */
int
inferd_model_get(inferd_conn_t *c, const char *name, const struct inferd_model **out)
{
	int r;

	inferd__clear_error();
	if (c == NULL || name == NULL || *name == '\0' || out == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_model_get: bad argument");
	if ((r = inferd__reconnect_if_needed(c)) != 0)
		return r;
	pthread_mutex_lock(&c->control_lock);
	r = inferd__model_by_name(c, name, 0, out);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}

/* Look a version of a model up by name. */
int
inferd_model_get_version(inferd_conn_t *c, const char *name, int64_t version, const struct inferd_model **out)
{
	int r;

	inferd__clear_error();
	if (c == NULL || name == NULL || *name == '\0' || out == NULL || version < 0)
		return inferd__fail(INFERD_EINVAL, "inferd_model_get_version: bad argument");
	if ((r = inferd__reconnect_if_needed(c)) != 0)
		return r;
	pthread_mutex_lock(&c->control_lock);
	r = inferd__model_by_name(c, name, version, out);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}

/* Look a model up by id. */
int
inferd_model_get_id(inferd_conn_t *c, unsigned id, const struct inferd_model **out)
{
	int r = 0;

	inferd__clear_error();
	if (c == NULL || out == NULL)
		return inferd__fail(INFERD_EINVAL, "inferd_model_get_id: bad argument");
	if ((r = inferd__reconnect_if_needed(c)) != 0)
		return r;
	if (id >= c->models_cap)
		return inferd__fail(INFERD_ENOMODEL, "no model with id %u (%u served)", id, c->nmodels);
	pthread_mutex_lock(&c->control_lock);
	if (c->models[id] != NULL)
		*out = c->models[id];
	else
		r = inferd__model_query(c, NULL, 0, id, out);
	pthread_mutex_unlock(&c->control_lock);
	return r;
}
