/* http_shm.c: Triton's /v2/systemsharedmemory and /v2/cudasharedmemory endpoints over the shm registry. */
#include "config.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "http_shm.h"
#include "kserve.h"

#define SHM_PREFIX_SYSTEM "/v2/systemsharedmemory"
#define SHM_PREFIX_CUDA "/v2/cudasharedmemory"

/* What a path asks for. */
enum shm_action {
	SHM_ACT_STATUS,
	SHM_ACT_REGISTER,
	SHM_ACT_UNREGISTER,
};

/* A parsed path: kind, action, and the region's name (NULL: every region). */
struct shm_path {
	enum shm_kind kind;
	enum shm_action action;
	char name[SHM_REGION_NAME_MAX + 1];
	int has_name;
};

/* 1 when url is one of ours. */
int
http_shm_path(const char *url)
{
	return strncmp(url, SHM_PREFIX_SYSTEM, strlen(SHM_PREFIX_SYSTEM)) == 0 ||
	    strncmp(url, SHM_PREFIX_CUDA, strlen(SHM_PREFIX_CUDA)) == 0;
}

/* 1 when address is a loopback literal (127.0.0.0/8, ::1, ::ffff:127.x.x.x). */
static int
shm_loopback(const char *address)
{
	unsigned char a[16];
	static const unsigned char v6_loop[16] = { [15] = 1 };
	static const unsigned char v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (inet_pton(AF_INET, address, a) == 1)
		return a[0] == 127;
	if (inet_pton(AF_INET6, address, a) == 1)
		return memcmp(a, v6_loop, 16) == 0 ||
		    (memcmp(a, v4_mapped, 12) == 0 && a[12] == 127);
	return 0;
}

/* on, or auto while HTTP listens on loopback only. */
int
http_shm_enabled(const struct daemon_config *c)
{
	const char *v = c->http_shared_memory != NULL ? c->http_shared_memory : "auto";

	if (strcmp(v, "on") == 0)
		return 1;
	if (strcmp(v, "off") == 0)
		return 0;
	return shm_loopback(c->listen_address);
}

/* The action a path's last segment names; -1 for none. */
static int
shm_parse_action(const char *s, enum shm_action *out)
{
	if (strcmp(s, "/status") == 0)
		*out = SHM_ACT_STATUS;
	else if (strcmp(s, "/register") == 0)
		*out = SHM_ACT_REGISTER;
	else if (strcmp(s, "/unregister") == 0)
		*out = SHM_ACT_UNREGISTER;
	else
		return -1;
	return 0;
}

/* Parse .../status, .../unregister or .../region/{name}/{action}; -1 when the path names nothing. */
static int
shm_parse_path(const char *url, struct shm_path *p)
{
	const char *rest;
	size_t n;

	memset(p, 0, sizeof *p);
	if (strncmp(url, SHM_PREFIX_SYSTEM, strlen(SHM_PREFIX_SYSTEM)) == 0) {
		p->kind = SHM_KIND_SYSTEM;
		rest = url + strlen(SHM_PREFIX_SYSTEM);
	} else {
		p->kind = SHM_KIND_CUDA;
		rest = url + strlen(SHM_PREFIX_CUDA);
	}
	if (strncmp(rest, "/region/", 8) != 0)
		return shm_parse_action(rest, &p->action) != 0 || p->action == SHM_ACT_REGISTER ? -1 : 0;
	rest += 8;
	n = strcspn(rest, "/");
	if (n == 0 || n > SHM_REGION_NAME_MAX)
		return -1;
	memcpy(p->name, rest, n);
	p->has_name = 1;
	return shm_parse_action(rest + n, &p->action);
}

/* Fill out with status and {"error": msg}. */
__attribute__((format(printf, 3, 4))) static void
shm_error(struct http_shm_reply *out, unsigned int status, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	out->status = status;
	out->body = NULL;
	if (n >= 0) {
		out->body = kserve_encode_error(msg, &out->len, NULL);
		free(msg);
	}
}

/* The HTTP status of a registry error. */
static unsigned int
shm_status_of(enum shm_error e)
{
	switch (e) {
	case SHM_OK:
		return 200;
	case SHM_E_INVALID:
		return 400;
	case SHM_E_NOT_FOUND:
		return 404;
	case SHM_E_EXISTS:
		return 409;
	case SHM_E_DENIED:
		return 403;
	case SHM_E_FAILED:
		break;
	}
	return 500;
}

/* Answer a registry call: 200 with body (a new reference, NULL for {}) or its error. */
static void
shm_answer(struct http_shm_reply *out, enum shm_error e, json_t *body, char *cause)
{
	if (e != SHM_OK) {
		shm_error(out, shm_status_of(e), "%s", cause != NULL ? cause : "shared memory error");
		free(cause);
		return;
	}
	free(cause);
	if (body == NULL)
		body = json_object();
	out->status = 200;
	out->body = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	out->len = out->body != NULL ? strlen(out->body) : 0;
	json_decref(body);
}

/* A non-negative integer member; -1 with *cause when missing (unless optional) or mistyped. */
static int
shm_get_size(const json_t *obj, const char *key, int optional, size_t *out, char **cause)
{
	const json_t *v = json_object_get(obj, key);

	if (v == NULL && optional) {
		*out = 0;
		return 0;
	}
	if (v == NULL)
		return error_set(cause, "missing field '%s'", key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return error_set(cause, "field '%s' must be a non-negative integer", key);
	if ((uint64_t)json_integer_value(v) > SIZE_MAX)
		return error_set(cause, "field '%s' is too large", key);
	*out = (size_t)json_integer_value(v);
	return 0;
}

/* POST .../region/{name}/register for a system region. */
static enum shm_error
shm_register_system(shm_registry_t *r, const char *name, const json_t *root, char **cause)
{
	const json_t *key = json_object_get(root, "key");
	size_t offset, size;

	if (!json_is_string(key))
		return error_set(cause, "field 'key' must be a string (the shm object's name)"),
		    SHM_E_INVALID;
	if (shm_get_size(root, "offset", 1, &offset, cause) != 0 ||
	    shm_get_size(root, "byte_size", 0, &size, cause) != 0)
		return SHM_E_INVALID;
	return shm_registry_add_system(r, name, json_string_value(key), offset, size, cause);
}

/* The value of one base64 character, -1 for others. */
static int
shm_b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/*
 * Copy text without its line breaks and blanks into buf (cap bytes, NUL
 * included); -1 when what remains does not fit.  Triton's C++ client encodes
 * with libb64, which breaks its output into lines of 72 characters, so a
 * 64-byte CUDA IPC handle arrives as two lines.
 */
static int
shm_b64_compact(const char *text, char *buf, size_t cap)
{
	size_t n = 0;

	for (; *text != '\0'; text++) {
		if (*text == '\n' || *text == '\r' || *text == ' ' || *text == '\t')
			continue;
		if (n + 1 >= cap)
			return -1;
		buf[n++] = *text;
	}
	buf[n] = '\0';
	return 0;
}

/* Decode standard padded base64 text (line breaks allowed) into out (cap bytes); -1 when malformed or too long. */
static int
shm_b64_decode(const char *raw, unsigned char *out, size_t cap, size_t *n)
{
	char text[(DEVICE_IPC_HANDLE_BYTES / 3 + 1) * 4 + 1];
	size_t len, i, pad = 0;
	uint32_t acc;
	int j, v;

	if (cap > DEVICE_IPC_HANDLE_BYTES || shm_b64_compact(raw, text, sizeof text) != 0)
		return -1;
	len = strlen(text);

	if (len % 4 != 0)
		return -1;
	if (len > 0 && text[len - 1] == '=')
		pad = len > 1 && text[len - 2] == '=' ? 2 : 1;
	if (len / 4 * 3 - pad > cap)
		return -1;
	*n = 0;
	for (i = 0; i < len; i += 4) {
		acc = 0;
		for (j = 0; j < 4; j++) {
			v = i + j >= len - pad ? 0 : shm_b64_value((unsigned char)text[i + j]);
			if (v < 0)
				return -1;
			acc = acc << 6 | (uint32_t)v;
		}
		for (j = 0; j < 3 && *n < len / 4 * 3 - pad; j++)
			out[(*n)++] = (unsigned char)(acc >> (16 - 8 * j));
	}
	return 0;
}

/* POST .../region/{name}/register for a CUDA region. */
static enum shm_error
shm_register_cuda(shm_registry_t *r, const char *name, const json_t *root, char **cause)
{
	const json_t *raw = json_object_get(root, "raw_handle"), *b64, *dev;
	unsigned char handle[DEVICE_IPC_HANDLE_BYTES];
	size_t size, n;

	b64 = json_is_object(raw) ? json_object_get(raw, "b64") : NULL;
	if (!json_is_string(b64))
		return error_set(cause, "field 'raw_handle' must be {\"b64\": base64 of a "
		    "cudaIpcMemHandle_t}"), SHM_E_INVALID;
	if (shm_b64_decode(json_string_value(b64), handle, sizeof handle, &n) != 0)
		return error_set(cause, "raw_handle.b64 is not base64 of at most %d bytes",
		    DEVICE_IPC_HANDLE_BYTES), SHM_E_INVALID;
	dev = json_object_get(root, "device_id");
	if (!json_is_integer(dev) || json_integer_value(dev) < 0 || json_integer_value(dev) > 4096)
		return error_set(cause, "field 'device_id' must be a GPU ordinal"), SHM_E_INVALID;
	if (shm_get_size(root, "byte_size", 0, &size, cause) != 0)
		return SHM_E_INVALID;
	return shm_registry_add_cuda(r, name, handle, n, (int)json_integer_value(dev), size, cause);
}

/* Parse a register body and register it. */
static void
shm_register(shm_registry_t *r, const struct shm_path *p, const char *body, size_t len,
    struct http_shm_reply *out)
{
	json_error_t jerr;
	enum shm_error e;
	char *cause = NULL;
	json_t *root;

	if (len > HTTP_SHM_MAX_BODY) {
		shm_error(out, 413, "register body of %zu bytes exceeds %d", len, HTTP_SHM_MAX_BODY);
		return;
	}
	root = json_loadb(body != NULL ? body : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		shm_error(out, 400, "malformed JSON at line %d, column %d: %s", jerr.line,
		    jerr.column, jerr.text);
		return;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		shm_error(out, 400, "register body must be a JSON object");
		return;
	}
	e = p->kind == SHM_KIND_SYSTEM ? shm_register_system(r, p->name, root, &cause) :
	    shm_register_cuda(r, p->name, root, &cause);
	json_decref(root);
	shm_answer(out, e, NULL, cause);
}

/* Run a parsed, allowed request against the registry. */
static void
shm_dispatch(shm_registry_t *r, const struct shm_path *p, const char *body, size_t len,
    struct http_shm_reply *out)
{
	const char *name = p->has_name ? p->name : NULL;
	json_t *status = NULL;
	char *cause = NULL;
	enum shm_error e;

	if (p->action == SHM_ACT_REGISTER) {
		shm_register(r, p, body, len, out);
	} else if (p->action == SHM_ACT_UNREGISTER) {
		e = shm_registry_remove(r, p->kind, name, &cause);
		shm_answer(out, e, NULL, cause);
	} else {
		e = shm_registry_status(r, p->kind, name, &status, &cause);
		shm_answer(out, e, status, cause);
	}
}

/* Answer one shared-memory request. */
void
http_shm_handle(shm_registry_t *r, int enabled, int post, const char *url,
    const char *body, size_t len, struct http_shm_reply *out)
{
	struct shm_path p;

	memset(out, 0, sizeof *out);
	if (shm_parse_path(url, &p) != 0) {
		shm_error(out, 404, "unknown path '%s'", url);
	} else if (!enabled || r == NULL) {
		shm_error(out, 403, "shared-memory registration over HTTP is off "
		    "(http_shared_memory = off, or auto with a listen_address that is not loopback)");
	} else if ((p.action == SHM_ACT_STATUS) == post) {
		out->allow = p.action == SHM_ACT_STATUS ? "GET, HEAD" : "POST";
		shm_error(out, 405, "method %s is not allowed on %s (allowed: %s)",
		    post ? "POST" : "GET", url, out->allow);
	} else {
		shm_dispatch(r, &p, body, len, out);
	}
}
