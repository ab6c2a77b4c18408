/*
 * namespace.h - the directory tree a mount shows, kept in memory: names
 * come from the origin's listings (read lazily, one directory at a time,
 * trusted for ttl seconds) or from a manifest given at start. Lookups of
 * names that do not exist and repeated opens are answered from here
 * without a request; a file's version is pinned through the cache.
 *
 * Paths are relative to the mount root, without a leading '/' ("" is the
 * root). All functions are thread-safe.
 *
 * Layer: the namespace, on top of the engine. May include the engine, the
 * origin, the TIFF layer and base; never the store directly, nor FUSE
 * (tests/check-layers).
 */
#ifndef TILEFS_NAMESPACE_H
#define TILEFS_NAMESPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct cache;
struct cache_listed;
struct cache_object;
struct http_client;
struct namespace;
struct source;

/* A directory's mtime moves, to the nanosecond, when a listing changes its
 * names (or their types) and when its listing is older than the ttl: a
 * cache of its entries holds while it is the same. A file's is the date
 * its listing gives (to the minute, from an index page) while its version
 * agrees with that, else its version's Last-Modified, else 0: the same in
 * every mount and through the mount's life. */
struct ns_attr {
	bool is_dir;
	uint64_t size;
	struct timespec mtime;
};

/* SRC, HTTP and CACHE are borrowed until ns_free(). */
int ns_new(struct source *src, struct http_client *http, struct cache *cache, int ttl_s,
	   struct namespace **out);
void ns_free(struct namespace *ns);
/*
 * Revalidate ahead, with THREADS threads (call once, before any other
 * use; 0: off, the default), half of them at most working on files, the
 * others listing folders ahead in background requests. When a listing
 * shows files that have a version in the cache but none pinned yet, and
 * gave no ETag that could vouch for it (plain HTTP), each is checked in
 * the background, the HEAD its first open would send, so that the open
 * finds it current and sends nothing: after a remount, readers do not
 * wait a round trip per file.
 * Once per file per namespace; never a file with nothing cached; off with
 * a ttl of 0. ns_stop_ahead() stops the threads (before the HTTP client
 * goes); ns_free() does too.
 */
int ns_revalidate_ahead(struct namespace *ns, int threads);
void ns_stop_ahead(struct namespace *ns);
/*
 * Hold at most MAX names (files and directories) in memory; 0: the
 * default, 1/16 of the machine's memory at 512 bytes a name, within 100k
 * to 4M (call before any other use). Past it, the listings of the
 * directories used least recently, none in use and with no file open
 * below, are dropped (a warning says how many) and listed again when used;
 * a directory alone longer than MAX shows its first MAX names (an error
 * says so). Names from a manifest are never dropped.
 */
void ns_set_max_names(struct namespace *ns, size_t max);
/* Files and directories held in memory by the namespaces of this process:
 * names that left a listing are freed once no call uses them. */
size_t ns_nodes_alive(void);

/* Take the tree from a manifest (relative paths or URLs, one per line)
 * instead of listings. On error, err says which line is wrong. */
int ns_load_manifest(struct namespace *ns, const char *path, char *err, size_t err_size);

int ns_getattr(struct namespace *ns, const char *path, struct ns_attr *out);

/* ns_open() as a cache_open_fn (cache_set_opener()): ARG the namespace;
 * it opens nothing else ahead. */
int ns_cache_opener(void *arg, const char *path, bool background, struct cache_object **out);

/* The attributes of the file at PATH open with version OBJ (from
 * ns_open()), without a request: OBJ's size and the mtime ns_getattr()
 * shows while that version is the current one. */
void ns_open_attr(struct namespace *ns, const char *path, const struct cache_object *obj,
		  struct ns_attr *out);

/* List the directory at PATH, calling fill() for its entries in name
 * order from the START-th (0: the first) until fill() returns nonzero.
 * FILL may be NULL: only check that the origin lists it, as a lookup in
 * it would (a folder of more names than one deep listing takes shows its
 * first ones, the rest is listed in the background). */
typedef int (*ns_fill_fn)(void *arg, const char *name, const struct ns_attr *attr);
int ns_readdir(struct namespace *ns, const char *path, size_t start, ns_fill_fn fill,
	       void *arg);

/* Pin the current version of the file at PATH; *unchanged says whether it
 * is the version the previous open got, *older_open whether files of an
 * older version are still open. Caller unrefs *out. The first open in a
 * directory of a few small files (a sample's) opens the others ahead, in
 * the background (ns_revalidate_ahead()'s threads). */
int ns_open(struct namespace *ns, const char *path, struct cache_object **out, bool *unchanged,
	    bool *older_open);

/* The URL the file at PATH is read from (NULL: no such file); caller frees.
 * *LISTED gets what a listing younger than the ttl said of it (for
 * cache_object_open(); its etag is in ETAG, 128 bytes), or an empty etag. */
char *ns_url(struct namespace *ns, const char *path, struct cache_listed *listed, char *etag);
/* What to tell the user when a listing of NS failed with ERR: the last
 * failed request's cause (a connection refused, a timeout, TLS, an HTTP
 * status with the store's code and message), what to try, and LOG_PATH
 * (NULL: the log is on stderr) for each attempt. */
void ns_list_error(struct namespace *ns, int err, const char *log_path, char *buf, size_t len);

#endif
