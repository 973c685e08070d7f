/* compile_cache.h: the persistent on-disk cache of the CUDA backend's slow choices (cuDNN engine configs, cuBLASLt algorithms), one file per device and library versions (in memory only without a directory). */
#ifndef INFERD_COMPILE_CACHE_H
#define INFERD_COMPILE_CACHE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

/*
 * Contract.  A cache maps opaque keys (an op's full descriptor, built by
 * the backend) to opaque values (the choice made for it), both at most
 * COMPILE_CACHE_MAX_FIELD bytes.  Each cache belongs to one identity (the
 * device's name and compute capability, the driver's, cuDNN's and
 * cuBLASLt's versions: everything that could change the right answer) and
 * lives in one file, DIR/<identity, sanitised>.cache.  The file is read
 * once, when the cache is first asked for; a file that is corrupt,
 * truncated, of another format or of another identity is ignored with a
 * log line (never trusted in part), and the next save replaces it.  Saves
 * write a temporary file and rename it over the old one, so a reader never
 * sees half a file.  A cache holds at most max_bytes of file: storing past
 * it evicts the least recently used records first.  The caller must still
 * check every value it gets (a library may refuse a choice that was valid
 * when stored) and call compile_cache_reject for one that is refused.
 *
 * The process-wide registry (compile_cache_configure ... _shutdown) gives
 * every device of one identity the same cache; all calls are thread-safe.
 * Hits and misses are counted per calling thread, so a model load (one
 * thread) can report its own.
 */
typedef struct compile_cache compile_cache_t;

/* The largest key or value. */
#define COMPILE_CACHE_MAX_FIELD 4096

/* Make an empty cache for identity, saved to path (NULL: in memory only); NULL when out of memory. */
compile_cache_t *compile_cache_new(const char *path, const char *identity, size_t max_bytes);
/* Read the cache's file into it (a missing file is an empty cache); -1 with *cause when the file was refused. */
int compile_cache_load(compile_cache_t *c, char **cause);
/* Parse a file's bytes into c (all or nothing); -1 with *cause naming what is wrong. */
int compile_cache_parse(compile_cache_t *c, const unsigned char *buf, size_t len, char **cause);
/* Write the cache to its file (temporary file, then rename); -1 with *cause. */
int compile_cache_save(compile_cache_t *c, char **cause);
/* Records held, and the bytes they take in the file (header included). */
size_t compile_cache_count(compile_cache_t *c);
size_t compile_cache_bytes(compile_cache_t *c);
void compile_cache_free(compile_cache_t *c);

/* 1 with a malloc'ed copy of key's value in *val (*vlen bytes), 0 on a miss (or out of memory). */
int compile_cache_lookup(compile_cache_t *c, const void *key, size_t klen, void **val, size_t *vlen);
/* Record key's value (replacing any), evicting the least recently used records past the size bound. */
void compile_cache_store(compile_cache_t *c, const void *key, size_t klen, const void *val, size_t vlen);
/* Drop key's record, which the library refused; the lookup that found it counts as a miss. */
void compile_cache_reject(compile_cache_t *c, const void *key, size_t klen, const char *why);

/* Set the directory ("" or NULL: no cache) and the bound per file; once, before any device opens. */
void compile_cache_configure(const char *dir, size_t max_bytes);
/* 1 when compile_cache_configure named a directory. */
int compile_cache_enabled(void);
/* The cache of identity, loaded from its file on first use (in memory only without a directory); NULL when out of memory. */
compile_cache_t *compile_cache_get(const char *identity);
/* Save every cache that changed since its last save (failures are logged). */
void compile_cache_flush_all(void);
/* Save and free every cache. */
void compile_cache_shutdown(void);
/* The calling thread's hits and misses since its last call; both restart at zero. */
void compile_cache_thread_counts(unsigned long *hits, unsigned long *misses);

#ifdef __cplusplus
}
#endif

#endif
