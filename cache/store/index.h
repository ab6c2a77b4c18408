/*
 * index.h - the cache index: which objects (URL + version) and which units
 * (byte extents of an object) the cache holds, in SQLite (WAL) under the
 * cache dir. Shared by every tilefs process using that dir.
 *
 * Every function is safe from any thread: each call borrows a connection
 * from a small pool. Functions return 0 or a negative errno; SQLite errors
 * are mapped here and logged: -EAGAIN the database is busy (another
 * process holds a write lock too long), -EBADMSG corrupt, -ENOSPC full,
 * -EIO the rest.
 *
 * No index: where the cache dir's index cannot be opened, a cache runs
 * with IX NULL (cache/engine/cache.c); every function then changes
 * nothing and returns -ENODEV, so every lookup misses and nothing is
 * recorded.
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers). Only cache/store uses
 * sqlite3.h: SQLite stays behind this header.
 */
#ifndef TILEFS_INDEX_H
#define TILEFS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct index;

/*
 * What a row may hold: the limits of --block-size and --header-size
 * (tools/options.c takes them from here). A row outside them (a damaged or
 * hostile index) is refused with -EBADMSG and a log line; the caller reads
 * that object uncached.
 */
#define INDEX_BLOCK_SIZE_MIN 4096
#define INDEX_BLOCK_SIZE_MAX (64u << 20)
#define INDEX_HEADER_LEN_MIN 4096
#define INDEX_HEADER_LEN_MAX (16u << 20)

struct index_object {
	int64_t id;
	uint64_t size;
	uint64_t block_size;		/* unit size of this object, for everyone */
	uint64_t header_len;		/* its header unit, when a plain file */
	char version[192];
};

struct index_unit {
	int64_t id;		/* unique for ever: a re-added unit gets a new id */
	int64_t object_id;
	uint64_t off, len;
	uint32_t crc;
	bool probation;		/* stored on probation (cache/store/evict.h),
				   kept for its readers or not */
};

/*
 * Open (creating if needed) DIR/index.db. DIR must pass private_dir_open()
 * (else -EPERM, logged); the database, its -wal and -shm, and index.lock are
 * 0600 and opened without following links (one that is a directory:
 * -EISDIR; another kind of file: -EINVAL). A database that is not SQLite,
 * fails its integrity check (twice more, after a pause: a read that
 * failed may look like damage), has another schema or a malformed
 * instance is moved aside and rebuilt, and *rebuilt is set (unless another
 * process has it open: -EBUSY). An I/O error or a file SQLite could not
 * open is tried again, for up to 4 s, before it is the error; a busy
 * database (-EAGAIN, after SQLite's own 5 s wait) or a full one is an
 * error at once. Nothing is ever rebuilt but for damage. Caller frees
 * with index_close().
 */
int index_open(const char *dir, struct index **out, bool *rebuilt);
void index_close(struct index *ix);
/*
 * Open DIR/index.db to read it only, for a command that reports on a cache
 * (tilefs inspect): nothing in DIR is created, set aside or chmod'ed, by
 * tilefs or by SQLite (index_readonly.c says how). DIR must pass
 * private_dir_open() (else -EPERM, logged) and hold index.db, a regular
 * file of this user, and index.lock (held shared while open), as every
 * index_open() leaves them: else -ENOENT, not logged, when DIR holds no
 * cache index. -EBADMSG (logged): not a tilefs index of this schema.
 * Writing through IX fails, and index_instance() is empty. Caller frees
 * with index_close().
 */
int index_open_readonly(const char *dir, struct index **out);
/* Random name of this database's generation: data files live under
 * "data-<instance>", so files from an older database are never trusted. */
const char *index_instance(struct index *ix);

/* The length of the part of URL that keys its objects: all but its query
 * string and fragment. */
size_t index_url_key_len(const char *url);
/* The claims-table key of "probing URL" (an open that finds nothing of
 * it cached claims (key, 0) while it asks the origin): negative, so never
 * an object id; of URL's key, as objects are keyed. */
int64_t index_probe_key(const char *url);

/*
 * Objects are keyed by their URL without its query string and fragment
 * (index_object_latest() and index_object_add() cut them off): a SAS or
 * token is never stored, and a renewed one finds the same objects. (Rows
 * written before this keep their query and are simply missed once.)
 * index_url_key_len() says how much of a URL is its key.
 *
 * The newest cached version of URL; -ENOENT if none, -EBADMSG if its row is
 * damaged (logged).
 */
int index_object_latest(struct index *ix, const char *url, struct index_object *out);
/* The object with index id ID; -ENOENT if none. */
int index_object_get(struct index *ix, int64_t id, struct index_object *out);
/* Units of object ID cached, and their bytes. */
int index_object_usage(struct index *ix, int64_t id, uint64_t *units, uint64_t *bytes);
/*
 * Find or add (URL, obj->version, obj->size), proposing obj->block_size and
 * how to cut it (obj->header_len and MAP, an encoded tile map or NULL);
 * sets obj->id and obj->block_size to what the index holds. *created says
 * whether ours went in; if not, index_object_map() tells how it is cut.
 * ALSO (or NULL) names what the open that read it records in the same
 * transaction, so that a new object costs one commit, not three.
 */
struct index_add_also {
	const char *proved_by;	/* an identity that has read this version
				   (index_proof_put()), or NULL */
	bool probe_release;	/* release this holder's claim of
				   (index_probe_key(url), 0) */
};
int index_object_add(struct index *ix, const char *url, struct index_object *obj,
		     const void *map, size_t map_len, const struct index_add_also *also,
		     bool *created);
/* How object ID is cut: *map (caller frees; NULL: not a usable TIFF).
 * -ENOENT: added before tile maps existed, so plain blocks. -EBADMSG: the
 * row is damaged (logged). */
int index_object_map(struct index *ix, int64_t id, uint64_t *header_len, void **map,
		     size_t *map_len);
/* Every object, with the units and bytes cached of it. */
struct index_listed {
	struct index_object object;
	char *url;			/* rows of older caches may hold a query:
					   never print it whole */
	uint64_t units, bytes;
};
/* *out: caller frees with index_listed_free(). */
int index_objects_all(struct index *ix, struct index_listed **out, size_t *n);
void index_listed_free(struct index_listed *v, size_t n);
/* The units of OBJECT_ID by offset; caller frees *out. For a command that
 * lists them all (tilefs cache): a mount pages with index_units_from(). */
int index_units_of(struct index *ix, int64_t object_id, struct index_unit **out, size_t *n);
/* Up to MAX units of OBJECT_ID at offsets >= FROM, by offset, into
 * OUT[0..*n) (the caller's array): a page of them, so that a walk of an
 * object's units holds MAX of them at a time, not all of them. */
int index_units_from(struct index *ix, int64_t object_id, uint64_t from, struct index_unit *out,
		     size_t max, size_t *n);
/* How object ID is cut, as index_object_map() says, but without reading
 * its tile map: *header_len, and *tiled whether a map is stored. -ENOENT:
 * added before tile maps existed (plain blocks); -EBADMSG: a damaged row
 * (logged). */
int index_object_cut(struct index *ix, int64_t id, uint64_t *header_len, bool *tiled);
/* Forget an object and all its units. */
int index_object_drop(struct index *ix, int64_t id);

/* The unit of OBJECT at OFF; -ENOENT if not cached. */
int index_unit_find(struct index *ix, int64_t object_id, uint64_t off, struct index_unit *out);
/* Record a unit whose bytes are already written, whose claim the caller
 * holds (index_claim()); releases the claim. -EBUSY (nothing recorded)
 * unless this process holds it (it was dropped with its object:
 * index_object_drop()). */
int index_unit_add(struct index *ix, int64_t object_id, uint64_t off, uint64_t len, uint32_t crc);
/* The same for V[0..n) of one object in one transaction (one commit, not
 * n), but for those whose err is set already (skipped): v[i].err becomes 0
 * or -EBUSY as above. Returns 0, or the index's error; then no unit was
 * added and each v[i].err that was 0 is that error. */
struct index_unit_new {
	uint64_t off, len;
	uint32_t crc;
	int err;
	bool ahead;	/* fetched ahead of its readers: one that does not
			   get in is kept for them (index_units_admit()) */
	bool wanted;	/* read already, and a coming read wants it: one
			   that does not get in is kept for that read, as
			   index_units_wanted() keeps a stored one (not
			   counted against its bound: only a unit read while
			   it was being fetched comes so) */
	int64_t id;	/* out: the row this call added (0: none, as when
			   the unit was in already) */
};
int index_units_add(struct index *ix, int64_t object_id, struct index_unit_new *v, size_t n);
/* The same, under the admission rule of cache/store/evict.h against a
 * cache bounded by LIMIT bytes: a unit that does not get in is stored on
 * probation (evicted before every admitted unit), or, fetched ahead, kept
 * for its readers until read or EVICT_AHEAD_S old. LIMIT 0: every unit is
 * admitted, as by index_units_add(). */
int index_units_admit(struct index *ix, int64_t object_id, struct index_unit_new *v, size_t n,
		      uint64_t limit);
/* Bytes of the units kept for their readers now (index_units_admit())
 * that have waited WAITED_S seconds or more for them. */
int index_ahead_bytes(struct index *ix, int64_t waited_s, uint64_t *bytes);
/* Keep the units at V[0..n) with keep set, read on probation, that a
 * coming read of a hint wants again, for it, as index_units_admit() keeps
 * what a hint fetched, while the bytes so kept stay under BOUND (eviction
 * passes over kept units, and must find others); let go of those without
 * (read by the last entry that wanted them). In order, in one
 * transaction. A unit so kept is let go of, or EVICT_AHEAD_S after its
 * last read time. */
struct index_unit_at {
	int64_t object_id;
	uint64_t off;
	bool keep;	/* false: no coming read wants it: kept no longer */
};
int index_units_wanted(struct index *ix, const struct index_unit_at *v, size_t n,
		       uint64_t bound);
/* Admit the units of OBJECT_ID at OFFS[0..n) that are cached on probation,
 * in one transaction (tilefs warm: what a user asks to warm is kept).
 * KEPT (if not NULL): kept[i] says unit i was on probation and is admitted
 * now (false: admitted before, or not cached, perhaps evicted since it was
 * read). */
int index_units_keep(struct index *ix, int64_t object_id, const uint64_t *offs, size_t n,
		     bool *kept);
/* Forget a unit whose bytes failed their checksum. */
int index_unit_drop(struct index *ix, int64_t unit_id);
/*
 * Evict U: delete its row and claim it, in one transaction, leaving its
 * ghost (evict.h). 0: the caller now punches its bytes out and then calls
 * index_unclaim(). -ENOENT: the row was gone already, or a unit read on
 * probation was admitted since (index_units_keep()): leave the bytes
 * alone. -EEXIST: the object was sealed once, so it goes whole
 * (index_object_evict(); unit.h, invariant 7).
 */
int index_unit_evict(struct index *ix, const struct index_unit *u);
/*
 * Evict OBJECT_ID whole if it was ever sealed (a seals row, broken or
 * not): claim every unit of it, delete their rows, its seal and its edges,
 * in one transaction, leaving the ghosts of its units (evict.h); *BYTES
 * gets the bytes of the units dropped. 0: the caller now removes its data
 * file (store_unlink()) and then calls index_object_unclaim(); until then
 * the object is claimed whole: no unit of it can be claimed (index_claim()).
 * -ENOENT: never sealed (evict it unit by unit). -EBUSY: a unit of it is
 * claimed. Or the index's error (nothing changed).
 */
int index_object_evict(struct index *ix, int64_t object_id, uint64_t *bytes);
/* Release the claims this process holds on OBJECT_ID's units and on it
 * whole; another process's are left alone (unit.h, invariant 8). If the
 * index would not write that, as index_unclaim() says. */
int index_object_unclaim(struct index *ix, int64_t object_id);
/*
 * Edges: the few bytes of a unit not cached whole that a reader's aligned
 * buffer touched (a sliver), kept in the index itself so that a later read
 * of them, in any process, costs no request. At most INDEX_EDGE_MAX bytes;
 * a longer edge at the same offset replaces a shorter one. Evicting a unit
 * drops the edges within INDEX_EDGE_MAX bytes of it.
 */
#define INDEX_EDGE_MAX 16384
struct index_edge {
	int64_t object_id;
	uint64_t off;
	const void *bytes;
	size_t len;			/* 1 .. INDEX_EDGE_MAX */
};
/* Keep edges V[0..n), in one transaction; -EINVAL (none kept) if one is
 * empty or longer than INDEX_EDGE_MAX. */
int index_edges_put(struct index *ix, const struct index_edge *v, size_t n);
/* Copy [off, off+len) of OBJECT_ID from a kept edge into DST. -ENOENT if no
 * edge holds it all, or if the one that does fails its checksum (it is
 * dropped). */
int index_edge_get(struct index *ix, int64_t object_id, uint64_t off, size_t len, void *dst);
/* The kept edge of OBJECT_ID holding byte AT (of those starting at or
 * before it, the last) copied whole to EDGE (room for INDEX_EDGE_MAX
 * bytes), *EDGE_OFF where it starts: its length, in one query. 0 if none
 * holds AT, or the one that does fails its checksum (it is dropped). */
size_t index_edge_span(struct index *ix, int64_t object_id, uint64_t at, uint64_t *edge_off,
		       void *edge);

/* Note that these units, or every unit of OBJECT_ID, were read now (for
 * eviction order). */
int index_units_touch(struct index *ix, const int64_t *unit_ids, size_t n);
int index_object_touch(struct index *ix, int64_t object_id);

/*
 * Seal OBJECT_ID if its units add up to SIZE bytes: the caller checked
 * every one of them and synced its data file, holding a pin meanwhile
 * (store_pin()), so none changed; STAMP is the file's then (store.h).
 * 0, -ENOENT (not complete), or -errno. index_sealed(): 0 and the stamp
 * if sealed, -ENOENT if not, or -errno.
 */
struct store_stamp;
int index_seal(struct index *ix, int64_t object_id, uint64_t size,
	       const struct store_stamp *stamp);
int index_sealed(struct index *ix, int64_t object_id, struct store_stamp *stamp);

/*
 * Claim the fetch of a unit for the caller, so two fetches do not write the
 * same bytes. 0: claimed. -EBUSY: a live process holds it (*holder set),
 * this one too: a claim is one holder's, not one process's (the evictor
 * of a process punches out what it claimed, so another thread of it must
 * not write there meanwhile), or the object is claimed whole (being
 * evicted whole). -EEXIST: the unit is cached by now (read it instead).
 * The claim of a dead process is taken over; a live one's never is,
 * however long it holds it (unit.h, invariant 8): a caller that will not
 * wait fetches the bytes for itself without storing them.
 */
int index_claim(struct index *ix, int64_t object_id, uint64_t off, pid_t *holder);
/* The same for the units at OFFS[0..n) of one object in one transaction:
 * result[i] is 0, -EBUSY or -EEXIST as above. Returns 0, or the index's
 * error; then nothing was claimed. */
int index_claims(struct index *ix, int64_t object_id, const uint64_t *offs, size_t n,
		 int *result);
/* Release the claim on the unit at OFF if this process holds it; one
 * another process holds is left alone (invariant 8). If the index would
 * not write that (a full or failing disk), the claim counts as released
 * for this holder alone, and is released in the index when it writes
 * again (index_claims.c). */
int index_unclaim(struct index *ix, int64_t object_id, uint64_t off);
/* 0 if this process holds the claim on the unit at OFF, -EBUSY if it does
 * not (another process does, or nobody), or the index's error. */
int index_claim_ours(struct index *ix, int64_t object_id, uint64_t off);

/*
 * Proofs: which identities have read an object at the origin (index_open.c
 * says what the rows hold). IDENTITY is an opaque string, never a secret:
 * a keyed hash the origin layer makes with index_proof_salt(), a random
 * value per database (32 hex digits; "" without an index).
 * index_proof_get(): 0 and when it was proved last, -ENOENT if never.
 * index_proof_put(): record it proved now (nothing if the object is gone).
 */
const char *index_proof_salt(struct index *ix);
int index_proof_get(struct index *ix, int64_t object_id, const char *identity,
		    int64_t *proved_at);
int index_proof_put(struct index *ix, int64_t object_id, const char *identity);

/* Bytes of all units. */
int index_usage(struct index *ix, uint64_t *bytes);
/* Bytes of all units, and of those on probation (kept for their readers
 * or not). */
int index_usage_parts(struct index *ix, uint64_t *usage, uint64_t *probation);
/* Become the one process evicting from this cache dir (a lock of
 * index.lock's, released by index_evictor_end() or the process's exit):
 * 0, or -EBUSY while another process evicts. The threads of one process
 * take turns before they call it. No index: 0. */
int index_evictor_begin(struct index *ix);
void index_evictor_end(struct index *ix);
/* Up to MAX units to evict first: those on probation (unless ADMITTED), in
 * the order they came, then admitted ones read once, then those read
 * again, least recently read first within each (evict.h); none of the
 * objects SKIP[0..nskip) (pinned), nor units kept for their readers. */
int index_eviction_candidates(struct index *ix, bool admitted, const int64_t *skip,
			      size_t nskip, struct index_unit *out, size_t max, size_t *n);

/* Totals for `cache stat`-like reporting: objects, units and the bytes of
 * the units (the usage less the edges). */
int index_counts(struct index *ix, uint64_t *objects, uint64_t *units, uint64_t *bytes);

#endif
