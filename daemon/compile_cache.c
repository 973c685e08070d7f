/* compile_cache.c: the compile cache's file format (checksummed records, atomic saves), its size bound and the process-wide registry. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc.h"
#include "compile_cache.h"
#include "error.h"
#include "log.h"

/*
 * The file, hand-written since it is a flat list of byte strings (no
 * library's format would add anything but a dependency): integers little
 * endian.
 *   header: "INFCCACH" | u32 format | u32 records | u32 identity length | identity | u32 CRC-32 of all before
 *   record: u32 key length | u32 value length | u64 last use | key | value | u32 CRC-32 of the record before it
 * Exactly that many records follow the header, to the end of the file: a
 * file cut between two records is refused like one cut inside a record.
 */
#define CC_MAGIC "INFCCACH"
#define CC_FORMAT 1
#define CC_HEADER_FIXED (8 + 4 + 4 + 4 + 4)
#define CC_RECORD_FIXED (4 + 4 + 8 + 4)
#define CC_MAX_IDENTITY 1024

/* One record in memory. */
struct cc_record {
	uint64_t hash;			/* of the key: compared before the bytes */
	uint64_t used;			/* last use, on the cache's own clock */
	unsigned char *key, *val;
	uint32_t klen, vlen;
};

struct compile_cache {
	pthread_mutex_t lock;
	char *path, *identity;
	size_t max_bytes;
	struct cc_record *recs;
	size_t n, cap;
	size_t bytes;			/* the file these records make, header included */
	uint64_t clock;			/* next last-use stamp */
	int dirty;			/* changed since the last save or load */
	compile_cache_t *next;		/* in the registry */
};

/* The calling thread's lookups since compile_cache_thread_counts last read them. */
static __thread unsigned long cc_hits, cc_misses;

/* FNV-1a over the key: lookups scan the records comparing this first (a few thousand records at most). */
static uint64_t
cc_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len-- > 0)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* The bytes one record takes in the file. */
static size_t
cc_record_size(size_t klen, size_t vlen)
{
	return CC_RECORD_FIXED + klen + vlen;
}

/* Store v little endian in 4 bytes. */
static void
cc_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Store v little endian in 8 bytes. */
static void
cc_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Load 4 little-endian bytes. */
static uint32_t
cc_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Load 8 little-endian bytes. */
static uint64_t
cc_get64(const unsigned char *p)
{
	return (uint64_t)cc_get32(p) | (uint64_t)cc_get32(p + 4) << 32;
}

/* CRC-32 (zlib's) of len bytes. */
static uint32_t
cc_crc(const unsigned char *p, size_t len)
{
	return (uint32_t)crc32(0L, p, (uInt)len);
}

/* Make an empty cache. */
compile_cache_t *
compile_cache_new(const char *path, const char *identity, size_t max_bytes)
{
	compile_cache_t *c = xcalloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->path = path != NULL ? xstrdup(path) : NULL;
	c->identity = xstrdup(identity);
	if ((path != NULL && c->path == NULL) || c->identity == NULL || strlen(identity) > CC_MAX_IDENTITY ||
	    pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c->path);
		free(c->identity);
		free(c);
		return NULL;
	}
	c->max_bytes = max_bytes;
	c->bytes = CC_HEADER_FIXED + strlen(identity);
	return c;
}

/* Drop record i (called locked). */
static void
cc_remove(compile_cache_t *c, size_t i)
{
	c->bytes -= cc_record_size(c->recs[i].klen, c->recs[i].vlen);
	free(c->recs[i].key);
	free(c->recs[i].val);
	c->recs[i] = c->recs[--c->n];
	c->dirty = 1;
}

/* Drop every record (called locked). */
static void
cc_clear(compile_cache_t *c)
{
	while (c->n > 0)
		cc_remove(c, c->n - 1);
}

/* Free a cache. */
void
compile_cache_free(compile_cache_t *c)
{
	if (c == NULL)
		return;
	cc_clear(c);
	free(c->recs);
	free(c->path);
	free(c->identity);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The index of key's record, or -1 (called locked). */
static long
cc_find(compile_cache_t *c, const void *key, size_t klen, uint64_t hash)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->recs[i].hash == hash && c->recs[i].klen == klen && memcmp(c->recs[i].key, key, klen) == 0)
			return (long)i;
	return -1;
}

/* Evict the least recently used records until the file fits max_bytes (called locked). */
static void
cc_evict(compile_cache_t *c)
{
	while (c->n > 0 && c->bytes > c->max_bytes) {
		size_t oldest = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->recs[i].used < c->recs[oldest].used)
				oldest = i;
		cc_remove(c, oldest);
	}
}

/* Add or replace a record (called locked); -1 when out of memory or too large. */
static int
cc_put(compile_cache_t *c, const void *key, size_t klen, const void *val, size_t vlen, uint64_t used)
{
	uint64_t hash = cc_hash(key, klen);
	struct cc_record r = { hash, used, NULL, NULL, (uint32_t)klen, (uint32_t)vlen };
	long at;

	if (klen == 0 || klen > COMPILE_CACHE_MAX_FIELD || vlen > COMPILE_CACHE_MAX_FIELD)
		return -1;
	if ((r.key = xmalloc(klen)) == NULL || (r.val = xmalloc(vlen > 0 ? vlen : 1)) == NULL) {
		free(r.key);
		return -1;
	}
	memcpy(r.key, key, klen);
	memcpy(r.val, val, vlen);
	if ((at = cc_find(c, key, klen, hash)) >= 0)
		cc_remove(c, (size_t)at);
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct cc_record *p = xrealloc(c->recs, cap * sizeof *p);

		if (p == NULL) {
			free(r.key);
			free(r.val);
			return -1;
		}
		c->recs = p;
		c->cap = cap;
	}
	c->recs[c->n++] = r;
	c->bytes += cc_record_size(klen, vlen);
	if (used >= c->clock)
		c->clock = used + 1;
	c->dirty = 1;
	return 0;
}

/* Check the header; the offset of the first record (*nrecs of them follow), or -1 with *cause. */
static long
cc_parse_header(const compile_cache_t *c, const unsigned char *buf, size_t len, uint32_t *nrecs, char **cause)
{
	uint32_t idlen;

	if (len < CC_HEADER_FIXED || memcmp(buf, CC_MAGIC, 8) != 0)
		return error_set(cause, "not a compile cache file (%zu bytes, no header)", len);
	if (cc_get32(buf + 8) != CC_FORMAT)
		return error_set(cause, "format %u, this daemon reads format %d", cc_get32(buf + 8), CC_FORMAT);
	*nrecs = cc_get32(buf + 12);
	idlen = cc_get32(buf + 16);
	if (idlen > CC_MAX_IDENTITY || len < CC_HEADER_FIXED + (size_t)idlen)
		return error_set(cause, "truncated header");
	if (cc_crc(buf, 20 + idlen) != cc_get32(buf + 20 + idlen))
		return error_set(cause, "header checksum mismatch");
	if (idlen != strlen(c->identity) || memcmp(buf + 20, c->identity, idlen) != 0)
		return error_set(cause, "written for '%.*s', not this device and these libraries ('%s')", (int)idlen,
		    (const char *)buf + 20, c->identity);
	return (long)(CC_HEADER_FIXED + idlen);
}

/* Parse the nrecs records after the header; -1 with *cause at the first bad one (c may then hold some). */
static int
cc_parse_records(compile_cache_t *c, const unsigned char *buf, size_t len, size_t off, uint32_t nrecs, char **cause)
{
	size_t n = 0;

	for (; off < len || n < nrecs; n++) {
		uint32_t klen, vlen;
		size_t size;

		if (n == nrecs)
			return error_set(cause, "bytes after the last of %u records, at byte %zu", nrecs, off);
		if (len - off < CC_RECORD_FIXED)
			return error_set(cause, "record %zu of %u truncated at byte %zu", n, nrecs, off);
		klen = cc_get32(buf + off);
		vlen = cc_get32(buf + off + 4);
		if (klen == 0 || klen > COMPILE_CACHE_MAX_FIELD || vlen > COMPILE_CACHE_MAX_FIELD)
			return error_set(cause, "record %zu at byte %zu: bad lengths %u and %u", n, off, klen, vlen);
		size = cc_record_size(klen, vlen);
		if (len - off < size)
			return error_set(cause, "record %zu truncated at byte %zu", n, off);
		if (cc_crc(buf + off, size - 4) != cc_get32(buf + off + size - 4))
			return error_set(cause, "record %zu at byte %zu: checksum mismatch", n, off);
		if (cc_put(c, buf + off + 16, klen, buf + off + 16 + klen, vlen, cc_get64(buf + off + 8)) != 0)
			return error_set(cause, "out of memory");
		off += size;
	}
	return 0;
}

/* Parse a whole file into c: every record, or none. */
int
compile_cache_parse(compile_cache_t *c, const unsigned char *buf, size_t len, char **cause)
{
	uint32_t nrecs = 0;
	long off;
	int rc = -1;

	pthread_mutex_lock(&c->lock);
	cc_clear(c);
	if ((off = cc_parse_header(c, buf, len, &nrecs, cause)) >= 0 &&
	    (rc = cc_parse_records(c, buf, len, (size_t)off, nrecs, cause)) != 0)
		cc_clear(c);
	cc_evict(c);
	c->dirty = 0;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Read the whole file at path (NULL *buf and 0 when it does not exist); -1 with *cause. */
static int
cc_read_file(const char *path, unsigned char **buf, size_t *len, char **cause)
{
	FILE *f = fopen(path, "rb");
	long n;

	*buf = NULL;
	*len = 0;
	if (f == NULL)
		return errno == ENOENT ? 0 : error_set(cause, "%s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		error_set(cause, "%s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	if ((*buf = xmalloc((size_t)n + 1)) == NULL || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		error_set(cause, "%s: %s", path, *buf == NULL ? "out of memory" : "short read");
		free(*buf);
		*buf = NULL;
		fclose(f);
		return -1;
	}
	fclose(f);
	*len = (size_t)n;
	return 0;
}

/* Read the cache's file. */
int
compile_cache_load(compile_cache_t *c, char **cause)
{
	unsigned char *buf;
	size_t len;
	int rc;

	if (c->path == NULL)
		return 0;	/* a cache in memory only has no file */
	if (cc_read_file(c->path, &buf, &len, cause) != 0)
		return -1;
	if (buf == NULL)
		return 0;
	rc = compile_cache_parse(c, buf, len, cause);
	free(buf);
	if (rc != 0)
		error_prefix(cause, "%s", c->path);
	return rc;
}

/* The file's bytes for the records held (called locked); NULL when out of memory. */
static unsigned char *
cc_serialize(compile_cache_t *c)
{
	size_t idlen = strlen(c->identity), off;
	unsigned char *buf = xmalloc(c->bytes);

	if (buf == NULL)
		return NULL;
	memcpy(buf, CC_MAGIC, 8);
	cc_put32(buf + 8, CC_FORMAT);
	cc_put32(buf + 12, (uint32_t)c->n);
	cc_put32(buf + 16, (uint32_t)idlen);
	memcpy(buf + 20, c->identity, idlen);
	cc_put32(buf + 20 + idlen, cc_crc(buf, 20 + idlen));
	off = CC_HEADER_FIXED + idlen;
	for (size_t i = 0; i < c->n; i++) {
		const struct cc_record *r = &c->recs[i];
		size_t size = cc_record_size(r->klen, r->vlen);

		cc_put32(buf + off, r->klen);
		cc_put32(buf + off + 4, r->vlen);
		cc_put64(buf + off + 8, r->used);
		memcpy(buf + off + 16, r->key, r->klen);
		memcpy(buf + off + 16 + r->klen, r->val, r->vlen);
		cc_put32(buf + off + size - 4, cc_crc(buf + off, size - 4));
		off += size;
	}
	return buf;
}

/* Write len bytes to a fresh temporary file beside path, flushed to disk, and rename it over path. */
static int
cc_write_atomic(const char *path, const unsigned char *buf, size_t len, char **cause)
{
	char *tmp = NULL;
	FILE *f;
	int bad;

	if (xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0)
		return error_set(cause, "out of memory");
	if ((f = fopen(tmp, "wb")) == NULL) {
		error_set(cause, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	bad = fwrite(buf, 1, len, f) != len;
	bad |= fflush(f) != 0;
	bad |= fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		error_set(cause, "writing %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

/* Save the cache. */
int
compile_cache_save(compile_cache_t *c, char **cause)
{
	unsigned char *buf;
	size_t len;
	int rc;

	if (c->path == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	len = c->bytes;
	buf = cc_serialize(c);
	if (buf != NULL)
		c->dirty = 0;
	pthread_mutex_unlock(&c->lock);
	if (buf == NULL)
		return error_set(cause, "out of memory");
	rc = cc_write_atomic(c->path, buf, len, cause);
	free(buf);
	if (rc != 0) {
		pthread_mutex_lock(&c->lock);
		c->dirty = 1;
		pthread_mutex_unlock(&c->lock);
	}
	return rc;
}

/* Records held. */
size_t
compile_cache_count(compile_cache_t *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Bytes of the file the records make. */
size_t
compile_cache_bytes(compile_cache_t *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->bytes;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Look a key up, counting the thread's hit or miss. */
int
compile_cache_lookup(compile_cache_t *c, const void *key, size_t klen, void **val, size_t *vlen)
{
	long at;
	int hit = 0;

	pthread_mutex_lock(&c->lock);
	if ((at = cc_find(c, key, klen, cc_hash(key, klen))) >= 0) {
		struct cc_record *r = &c->recs[at];

		if ((*val = xmalloc(r->vlen > 0 ? r->vlen : 1)) != NULL) {
			memcpy(*val, r->val, r->vlen);
			*vlen = r->vlen;
			r->used = c->clock++;
			c->dirty = 1;	/* the recency the eviction goes by */
			hit = 1;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (hit)
		cc_hits++;
	else
		cc_misses++;
	return hit;
}

/* Record a value. */
void
compile_cache_store(compile_cache_t *c, const void *key, size_t klen, const void *val, size_t vlen)
{
	pthread_mutex_lock(&c->lock);
	if (cc_put(c, key, klen, val, vlen, c->clock) == 0)
		cc_evict(c);
	pthread_mutex_unlock(&c->lock);
}

/* Drop a record the library refused, and count its lookup as a miss. */
void
compile_cache_reject(compile_cache_t *c, const void *key, size_t klen, const char *why)
{
	long at;

	pthread_mutex_lock(&c->lock);
	if ((at = cc_find(c, key, klen, cc_hash(key, klen))) >= 0)
		cc_remove(c, (size_t)at);
	pthread_mutex_unlock(&c->lock);
	if (cc_hits > 0)
		cc_hits--;
	cc_misses++;
	LOG_INFO("compile cache %s: a cached choice was refused (%s); searching again",
	    c->path != NULL ? c->path : "(in memory)", why);
}

/* The registry: the directory, the bound, and the caches made so far. */
static pthread_mutex_t cc_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static char *cc_dir;
static size_t cc_max_bytes;

/* The bound of a cache in memory only when none was configured (a few thousand choices). */
#define CC_MEMORY_DEFAULT ((size_t)16 << 20)
static compile_cache_t *cc_caches;

/* Set the directory and the bound. */
void
compile_cache_configure(const char *dir, size_t max_bytes)
{
	pthread_mutex_lock(&cc_registry_lock);
	free(cc_dir);
	cc_dir = dir != NULL && *dir != '\0' ? xstrdup(dir) : NULL;
	cc_max_bytes = max_bytes;
	pthread_mutex_unlock(&cc_registry_lock);
}

/* Whether a directory is set. */
int
compile_cache_enabled(void)
{
	int on;

	pthread_mutex_lock(&cc_registry_lock);
	on = cc_dir != NULL;
	pthread_mutex_unlock(&cc_registry_lock);
	return on;
}

/* The file of identity: its characters outside [A-Za-z0-9.-] become '_' (called locked); NULL when out of memory. */
static char *
cc_path_of(const char *identity)
{
	char *name = xstrdup(identity), *path = NULL, *p;

	if (name == NULL)
		return NULL;
	for (p = name; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '.' || *p == '-'))
			*p = '_';
	if (xasprintf(&path, "%s/%s.cache", cc_dir, name) < 0)
		path = NULL;
	free(name);
	return path;
}

/*
 * Make the cache of identity and read its file (called locked); NULL when
 * out of memory.  Without a directory the cache lives in memory only: the
 * process still searches each choice once (a second batch context, a
 * reload, another instance on a GPU of the same model take it from there).
 */
static compile_cache_t *
cc_open(const char *identity)
{
	char *path = NULL, *cause = NULL;
	size_t bound = cc_dir != NULL || cc_max_bytes > 0 ? cc_max_bytes : CC_MEMORY_DEFAULT;
	compile_cache_t *c;

	if (cc_dir != NULL && (path = cc_path_of(identity)) == NULL)
		return NULL;
	if ((c = compile_cache_new(path, identity, bound)) == NULL) {
		free(path);
		return NULL;
	}
	if (path != NULL) {
		/* The directory may be new (its parent must exist); a failure here shows at the first save. */
		if (mkdir(cc_dir, 0755) != 0 && errno != EEXIST)
			LOG_WARN("compile cache: mkdir %s: %s", cc_dir, strerror(errno));
		if (compile_cache_load(c, &cause) != 0) {
			LOG_WARN("compile cache: ignoring %s", cause);
			free(cause);
		}
		LOG_INFO("compile cache %s: %zu records for %s", path, compile_cache_count(c), identity);
		free(path);
	}
	c->next = cc_caches;
	cc_caches = c;
	return c;
}

/* The cache of identity. */
compile_cache_t *
compile_cache_get(const char *identity)
{
	compile_cache_t *c;

	pthread_mutex_lock(&cc_registry_lock);
	for (c = cc_caches; c != NULL; c = c->next)
		if (strcmp(c->identity, identity) == 0)
			break;
	if (c == NULL)
		c = cc_open(identity);
	pthread_mutex_unlock(&cc_registry_lock);
	return c;
}

/* Save the caches that changed. */
void
compile_cache_flush_all(void)
{
	compile_cache_t *c;
	char *cause = NULL;
	int dirty;

	pthread_mutex_lock(&cc_registry_lock);
	for (c = cc_caches; c != NULL; c = c->next) {
		pthread_mutex_lock(&c->lock);
		dirty = c->dirty;
		pthread_mutex_unlock(&c->lock);
		if (dirty && compile_cache_save(c, &cause) != 0) {
			LOG_WARN("compile cache: %s", cause);
			free(cause);
			cause = NULL;
		}
	}
	pthread_mutex_unlock(&cc_registry_lock);
}

/* Save and free everything. */
void
compile_cache_shutdown(void)
{
	compile_cache_t *c;

	compile_cache_flush_all();
	pthread_mutex_lock(&cc_registry_lock);
	while ((c = cc_caches) != NULL) {
		cc_caches = c->next;
		compile_cache_free(c);
	}
	free(cc_dir);
	cc_dir = NULL;
	pthread_mutex_unlock(&cc_registry_lock);
}

/* The thread's counts, restarted. */
void
compile_cache_thread_counts(unsigned long *hits, unsigned long *misses)
{
	*hits = cc_hits;
	*misses = cc_misses;
	cc_hits = 0;
	cc_misses = 0;
}
