/*
 * cache.h - the cache reader: turns (object, offset, length) into bytes,
 * from the data files when the units are cached, from the origin otherwise.
 *
 * An object is opened pinned to one version (ETag, or Last-Modified, and
 * size): every byte served for it comes from that version, or the read
 * fails with -ESTALE. Misses are fetched by whole units, adjacent misses in
 * one ranged GET, and a unit already being fetched by this process or by
 * another tilefs process on the same cache dir is waited for, not fetched
 * again. Fetched units are written to the store and indexed by a background
 * thread, which also keeps the cache within its size bound.
 *
 * Opening an object fetches its first bytes; a TIFF's IFDs are parsed then
 * (fetching more if they lie further on) and its tile map is stored with
 * the object in the index, so a tile is fetched and cached as one unit
 * (layout.h) and later opens cost no parsing. A tile miss may bring its
 * neighbours too (the prefetch policy), and a sequential scan opens a
 * growing readahead window.
 *
 * Layer: the engine (this header is its public contract; engine_int.h its
 * private part). May include the store, the origin, the TIFF layer and
 * base; never the namespace, tools/ or FUSE (tests/check-layers).
 */
#ifndef TILEFS_CACHE_H
#define TILEFS_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cache/tiff/layout.h"

struct cache;
struct cache_object;
struct http_client;
struct source;

/* What a tile miss adds (--prefetch): nothing, the tiles around it, the
 * rest of its row, or the whole object (streamed in the background).
 * PREFETCH_AUTO is the engine's choice per read: OBJECT while the mounted
 * data fits in the cache and no tier is used, NONE otherwise
 * (cache_set_mounted_bytes()). */
enum prefetch_policy { PREFETCH_NONE, PREFETCH_NEIGHBORS, PREFETCH_ROW, PREFETCH_OBJECT,
		       PREFETCH_AUTO };

/* The policy NAME names: "none", "neighbors", "row", "object", "auto";
 * 0 or -EINVAL. */
int cache_prefetch_parse(const char *name, enum prefetch_policy *out);

struct cache_config {
	const char *dir;		/* cache directory, must exist */
	uint64_t size_limit;		/* bytes of unit data kept at most */
	uint64_t block_size;		/* unit size for plain blocks */
	uint64_t header_len;		/* bytes fetched at the first open */
	uint64_t max_request;		/* bytes merged into one GET at most */
	uint64_t merge_gap;		/* units this close share a GET */
	uint64_t readahead_max;		/* sequential readahead window, 0: off */
	enum prefetch_policy prefetch;	/* what a tile miss adds */
	int claim_wait_s;		/* wait this long for another process's fetch */
	bool tier_keys;			/* --tier: GETs by plan_tier_run() */
	bool uncached_ok;		/* an index that cannot be opened: read
					   uncached (cache_uncached()), not fail */
	bool fit_disk;			/* lower size_limit to what the cache
					   disk holds, with a warning */
	bool size_given;		/* size_limit is --cache-size (for that
					   warning), not the default */
};

/* Open the cache in cfg->dir, fetching through HTTP with SRC's credentials
 * (both borrowed until cache_close()). Caller frees with cache_close().
 * If the index cannot be opened (after index_open()'s tries) and
 * cfg->uncached_ok, the cache opens without index or store, logged at
 * error: every read then goes to the origin and nothing is kept. (Not
 * when another process holds it busy or locked, nor for a cache dir that
 * is not private: those fail.) With cfg->fit_disk, a size_limit that,
 * with the reserve and the index, is more than the file system holds for
 * the cache is lowered to what it holds (cache_size_limit()). */
int cache_open(const struct cache_config *cfg, struct source *src, struct http_client *http,
	       struct cache **out);
/* The bound the cache keeps: cfg->size_limit, or less if cfg->fit_disk
 * found the disk too small for it (cache_open() said so, at warn). */
uint64_t cache_size_limit(const struct cache *c);
/* Start no more whole-object prefetch GETs; returns once none will be
 * (call it before freeing the HTTP client). */
void cache_stop_prefetch(struct cache *c);
/*
 * How cache_objects_open() (the hint's workers, a hint's window checks)
 * opens the object at PATH in the mount: the namespace's open, which
 * pins the version it checks as a reader's open does, so that a reader's
 * open of a file a hint opened a moment before asks the origin nothing.
 * NULL (the default): cache_object_open() of the URL. BACKGROUND as
 * there. Set before any hint, cleared before ARG goes; not thread safe.
 */
typedef int (*cache_open_fn)(void *arg, const char *path, bool background,
			     struct cache_object **out);
void cache_set_opener(struct cache *c, cache_open_fn fn, void *arg);
/* Finish pending index writes, then free. */
void cache_close(struct cache *c);

/* What a listing, no older than the mount's --ttl, said of an object. */
struct cache_listed {
	const char *etag;		/* "" when it gave none */
	int64_t size;			/* -1 when it gave none */
	time_t mtime;			/* 0 when it gave none */
};

/*
 * Find the current version of the object at URL and pin it: with no
 * request when LISTED (or NULL) names the version cached by its ETag and
 * size and this cache's identity (its source's, source_identity_hash())
 * has read that version at the origin (ever: a proof stands as long as
 * the version); else a
 * HEAD when some version is cached, else a GET of its first unit (all of
 * it, when LISTED says it is small), which is kept. Either request
 * answered 2xx records the identity's proof; one refused (401, 403) fails
 * the open with -EACCES, and nothing cached is served. BACKGROUND: an
 * open made ahead of the readers, whose requests start only on the
 * connections readers leave idle (http.h). Caller releases with
 * cache_object_unref().
 */
int cache_object_open(struct cache *c, const char *url, const char *log_name,
		      const struct cache_listed *listed, bool background,
		      struct cache_object **out);
/* The size up to which cache_object_open() of a file LISTED names fetches
 * it whole, with one GET. */
uint64_t cache_whole_size(const struct cache *c);
/*
 * A bounded set of at most MAX opened objects, by URL, for a caller that
 * opens object after object down a list (objects.c): cache_objects_open()
 * opens URL as cache_object_open() does the first time (or through the
 * cache's opener, LOG_NAME being the object's path in the mount:
 * cache_set_opener()), then gives the same object again until it is found
 * stale, the least recently used dropped for a new one. *OUT is the set's
 * (no reference to release); BACKGROUND as cache_object_open() says. One
 * thread at a time.
 */
struct cache_objects;
struct cache_objects *cache_objects_new(size_t max);
int cache_objects_open(struct cache_objects *s, struct cache *c, const char *url,
		       const char *log_name, const struct cache_listed *listed, bool background,
		       struct cache_object **out);
/* The object of URL S holds and that is not stale, or NULL: no request. */
struct cache_object *cache_objects_get(struct cache_objects *s, const char *url);
void cache_objects_free(struct cache_objects *s);
/* Does the index hold a version of the object at URL (so that opening it
 * costs at most a HEAD, no data)? No request. */
bool cache_object_known(struct cache *c, const char *url);

struct cache_object *cache_object_ref(struct cache_object *obj);
void cache_object_unref(struct cache_object *obj);
uint64_t cache_object_size(const struct cache_object *obj);
/* Last-Modified of the version, or 0 when the origin did not say. */
time_t cache_object_mtime(const struct cache_object *obj);
/* Does LISTED name OBJ's version (its ETag and size)? */
bool cache_object_listed(const struct cache_object *obj, const struct cache_listed *listed);
/* Same object and same version? */
bool cache_object_same(const struct cache_object *a, const struct cache_object *b);
/* Does anyone besides the caller's one reference hold OBJ? */
bool cache_object_shared(const struct cache_object *obj);
/* Did this open add the version to the index (so what is cached of it came
 * with the open)? */
bool cache_object_added(const struct cache_object *obj);
/* Has a read found that the origin no longer has this version? */
bool cache_object_stale(const struct cache_object *obj);

/* Is it a TIFF cut into tiles? (Reads of those should reach cache_read()
 * as the reader asked, not rounded out to pages: see fs/mount.c.) */
bool cache_object_tiled(const struct cache_object *obj);
/* Is every unit of OBJ cached? (Then no read of it makes a request, and the
 * kernel's page cache may serve it: see fs/mount.c.) Once true for an
 * object, it is remembered; eviction may make it false again later, which
 * only costs requests. */
bool cache_object_complete(struct cache *c, struct cache_object *obj);
/*
 * Seal OBJ (all of it cached): check every unit against its checksum,
 * under a pin, sync its data file, and mark it in the index with the
 * file's stamp (seal.c). 0, -ENOENT (not all cached), -EBADMSG (a unit
 * failed its check, and is evicted), or -errno.
 */
int cache_object_seal(struct cache *c, struct cache_object *obj);
/*
 * OBJ's data file, open read-only and pinned (no unit of it is evicted
 * while it stays open, in this process or the kernel), if OBJ is sealed
 * and nothing wrote the file since: it then holds every byte of OBJ,
 * checked. -ENOENT if not (a complete object is then sealed in the
 * background), -EBUSY if it is being evicted, or -errno.
 */
int cache_object_pin(struct cache *c, struct cache_object *obj);
/* OBJ was opened for the kernel to read from its pinned file: counted, and
 * its units marked read now (for eviction order; at most every 10 s). */
void cache_object_passed(struct cache *c, struct cache_object *obj);
/* Its id in the cache index (tilefs inspect); < 0: never cached. */
int64_t cache_object_id(const struct cache_object *obj);
/* The cache directory C was opened on. */
const char *cache_dir(const struct cache *c);
/* Does C read everything uncached, its index not usable (cfg->uncached_ok)? */
bool cache_uncached(const struct cache *c);

/* How many bytes the mounted files hold, as far as the caller knows
 * (UINT64_MAX, the value at open: unknown). With --prefetch auto, an object
 * whose tiles a reader reads (or misses in) is fetched whole in the
 * background while this fits in the cache size: every tile will be read in
 * a later epoch anyway, so the first one may as well keep the connections
 * busy. Otherwise, and always under a tier (--tier), only what is read
 * is fetched. */
void cache_set_mounted_bytes(struct cache *c, uint64_t bytes);

/* Read up to LEN bytes at OFF into BUF; returns bytes read (short only at
 * the end of the object) or -errno. STREAM tells readers apart (the
 * reading process, say), so that each one's sequential reads are seen. */
ssize_t cache_read(struct cache *c, struct cache_object *obj, uint64_t stream, char *buf,
		   size_t len, uint64_t off);

/* How OBJ is cut into units (tilefs warm picks units from it); NULL if
 * the index cannot say (logged). Borrowed while OBJ is held. */
const struct layout *cache_object_layout(struct cache_object *obj);

/* Which of UNITS[0..n) (sorted) of OBJ are not cached: missing[i]. Those
 * cached on probation are admitted (cache/store/evict.h): tilefs warm asks
 * for them, so they are kept, as are the units of OBJ this process stores
 * from now on (its header, fetched by the open). 0 or -errno. */
int cache_units_missing(struct cache *c, struct cache_object *obj,
			const struct extent *units, size_t n, bool *missing);

struct cache_warm_counts {
	uint64_t fetched;		/* bytes fetched and stored now */
	uint64_t cached;		/* bytes that were cached already */
	uint64_t elsewhere;		/* bytes another fetch had in hand */
};
/*
 * Fetch and store UNITS[0..n) of OBJ (whole units of its layout, sorted),
 * except those cached already or being fetched by another process,
 * adjacent units in one GET of up to max_request bytes, from the calling
 * thread (for tilefs warm: a process that also reads OBJ with cache_read()
 * must not warm it). Returns once all are stored: 0, or the first error
 * (-ESTALE: OBJ changed on the origin; -ENOSPC: no room to store). Adds to
 * *out either way.
 */
int cache_warm(struct cache *c, struct cache_object *obj, const struct extent *units, size_t n,
	       struct cache_warm_counts *out);

struct cache_stats {
	uint64_t hits, misses, prefetched, bytes_served, bytes_fetched, evicted;
	uint64_t errors;		/* opens and reads that failed (EIO, ...) */
	uint64_t passthrough_opens;	/* cache_object_passed() */
};
void cache_get_stats(struct cache *c, struct cache_stats *out);

/*
 * Hints: the coming reads, in order (tilefs hint, hint.c). An order file
 * has one read a line: a path relative to the mount, then optionally a
 * full-resolution pixel window of the file's first image. The window is
 * what follows the first TAB, or else the line's last four fields when
 * they are four integers after a space ("a b.tif 0 0 256 256"); X Y W H
 * are separated by spaces or tabs, W and H above 0. A line that is empty
 * or whose first non-blank character is '#' is skipped; trailing spaces,
 * tabs and a CR are dropped. At most HINT_LINE_MAX bytes a line,
 * HINT_ENTRIES_MAX entries, HINT_ORDER_MAX bytes in all.
 */
#define HINT_LINE_MAX 4352
#define HINT_ENTRIES_MAX 1000000
#define HINT_ORDER_MAX (64u << 20)

struct hint_line {
	const char *path;		/* borrowed from the line */
	bool window;
	uint64_t x, y, w, h;
};

/* Parse LINE (NUL-terminated, without its newline; cut in place). 1: an
 * entry in *out; 0: a blank line or comment; -EINVAL: a malformed window,
 * said in WHY. */
int hint_line_parse(char *line, struct hint_line *out, char *why, size_t why_size);

/* Is NAME[0..len) a hint client's name: 1 to 64 of [A-Za-z0-9._-]? */
bool hint_client_ok(const char *name, size_t len);

/* Does the window of L (if any) lie in OBJ's full-resolution image? 0, or
 * -EINVAL and why not in WHY. */
int cache_object_window_check(struct cache_object *obj, const struct hint_line *l,
			      char *why, size_t why_size);

/* One entry of a hint: the object to read and what of it. */
struct cache_hint_entry {
	const char *url, *log_name;	/* copied */
	const struct cache_listed *listed;	/* or NULL; copied */
	unsigned line;			/* in the order file, for messages */
	bool window;
	uint64_t x, y, w, h;
};
/*
 * Replace the hint of CLIENT (a name, below 72 bytes) with V[0..n) (n 0:
 * drop it; CLIENT NULL and n 0: drop every client's): from now on a thread
 * of C's fetches the units of the entries in order, in background GETs,
 * as far ahead of their readers (cache_hint_read()) as the client's share
 * of BUDGET bytes allows, the budget of all the clients' hints. Other
 * clients' hints stay. 0, -ENOMEM, or -EUSERS: 64 clients have a hint.
 */
int cache_hint_set(struct cache *c, const char *client, const struct cache_hint_entry *v,
		   size_t n, uint64_t budget);
/* A reader read [off, off+len) of OBJ, exactly as it asked (direct I/O,
 * not the kernel's readahead): move the hint's cursor if that is one of
 * the coming entries. No I/O; cheap when no hint is set. */
void cache_hint_read(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len);
/* OBJ was opened for reads that will not be seen as the reader makes
 * them (the kernel reads it by itself, by passthrough, or rounds its reads
 * out to pages and reads ahead through the page cache): take the open as a
 * read of its first coming entry. */
void cache_hint_opened(struct cache *c, const struct cache_object *obj);
/* Stop the hint thread (before freeing the HTTP client); drops the hints. */
void cache_hint_stop(struct cache *c);

struct cache_hint_stats {
	uint64_t clients;		/* with a hint */
	uint64_t entries;		/* in their hints */
	uint64_t position;		/* entries their readers are past */
	uint64_t fetched_bytes;		/* fetched ahead by hints, ever */
	uint64_t skipped;		/* entries passed unread or unusable, ever */
	uint64_t reads;			/* entries their readers read, ever */
};
void cache_hint_get_stats(struct cache *c, struct cache_hint_stats *out);

#endif
