/*
 * index.h - the cache index: which objects (URL + version) and which units
 * (byte extents of an object) the cache holds, in SQLite (WAL) under the
 * cache dir. Shared by every tilefs process using that dir.
 *
 * Every function is safe from any thread: each call borrows a connection
 * from a small pool. Functions return 0 or a negative errno; SQLite errors
 * are mapped here (-EIO for corruption and the rest, logged).
 */
#ifndef TILEFS_INDEX_H
#define TILEFS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct index;

struct index_object {
	int64_t id;
	uint64_t size;
	char version[192];
};

struct index_unit {
	int64_t id;		/* unique for ever: a re-added unit gets a new id */
	int64_t object_id;
	uint64_t off, len;
	uint32_t crc;
};

/*
 * Open (creating if needed) DIR/index.db. A database that is not SQLite or
 * fails its integrity check is moved aside and rebuilt, and *rebuilt is set:
 * the caller must then drop every data file. Caller frees with index_close().
 */
int index_open(const char *dir, struct index **out, bool *rebuilt);
void index_close(struct index *ix);
/* Random name of this database's generation: data files live under
 * "data-<instance>", so files from an older database are never trusted. */
const char *index_instance(struct index *ix);

/* The newest cached version of URL; -ENOENT if none. */
int index_object_latest(struct index *ix, const char *url, struct index_object *out);
/* Find or add (URL, version, size); sets *id. */
int index_object_add(struct index *ix, const char *url, const char *version, uint64_t size,
		     int64_t *id);
/* Forget an object and all its units. */
int index_object_drop(struct index *ix, int64_t id);

/* The unit of OBJECT at OFF; -ENOENT if not cached. */
int index_unit_find(struct index *ix, int64_t object_id, uint64_t off, struct index_unit *out);
/* Record a unit whose bytes are already written; releases its claim. */
int index_unit_add(struct index *ix, int64_t object_id, uint64_t off, uint64_t len, uint32_t crc);
int index_unit_drop(struct index *ix, int64_t unit_id);
/* Note that these units were read now (for eviction order). */
int index_units_touch(struct index *ix, const int64_t *unit_ids, size_t n);

/*
 * Claim the fetch of a unit for this process, so two processes do not fetch
 * the same bytes. 0: claimed. -EBUSY: a live process holds it (*holder set).
 * -EEXIST: the unit is cached by now (read it instead). A claim of a dead
 * process, or older than stale_s seconds, is taken over.
 */
int index_claim(struct index *ix, int64_t object_id, uint64_t off, int stale_s, pid_t *holder);
int index_unclaim(struct index *ix, int64_t object_id, uint64_t off);

/* Bytes of all units. */
int index_usage(struct index *ix, uint64_t *bytes);
/* Up to MAX units to evict first: read once before those read again,
 * least recently read first. */
int index_eviction_candidates(struct index *ix, struct index_unit *out, size_t max, size_t *n);

/* Totals for `cache stat`-like reporting. */
int index_counts(struct index *ix, uint64_t *objects, uint64_t *units, uint64_t *bytes);

#endif
