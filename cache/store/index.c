/*
 * index.c - see index.h: the connection pool and the statements, the one
 * mapping of SQLite's errors, and the objects. The database file, its
 * schema and how it is opened are index_open.c's; the units, claims and
 * eviction index_units.c's. DESIGN of the pool: index_int.h.
 *
 * ROWS ARE CHECKED when read: a block_size or header_len outside the
 * limits in index.h (header_len: above them), or a negative size, is a damaged row (-EBADMSG,
 * logged; the object is read uncached); a malformed meta.instance is a
 * damaged database (rebuilt, index_open.c).
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/store/evict.h"
#include "cache/base/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* EVICT_HIT_GAP_S as SQL text: two reads of a unit count as two hits only
 * that far apart */
#define SQL_NUMBER(n) #n
#define SQL_TEXT(n) SQL_NUMBER(n)
#define HIT_GAP SQL_TEXT(EVICT_HIT_GAP_S)
/* A unit's last_access after a read at ?1: a unit on probation read
 * within EVICT_HIT_GAP_S of its fetch (or last counted read) keeps that
 * time, so probation stays in the order units were fetched and the units
 * fetched ahead of the readers are not evicted before the ones they have
 * read (evict.h). A unit kept for its readers (ahead 1) is no longer once
 * read; one kept for a hint's coming read (ahead 2) stays so until the
 * hint lets it go (index_units_wanted()), whatever reads it meanwhile. */
#define TOUCHED_AT "CASE WHEN admitted = 0 AND last_access >= ?1 - " HIT_GAP \
		   " THEN last_access ELSE ?1 END"

static const char *const stmt_sql[ST_COUNT] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_OBJECT_LATEST] = "SELECT id, size, version, block_size FROM objects WHERE url = ?1 "
			     "ORDER BY id DESC LIMIT 1",
	[ST_OBJECT_INSERT] = "INSERT OR IGNORE INTO objects(url, version, size, block_size, added) "
			     "VALUES (?1, ?2, ?3, ?5, ?4)",
	[ST_OBJECT_ID] = "SELECT id, block_size FROM objects "
			 "WHERE url = ?1 AND version = ?2 AND size = ?3",
	[ST_OBJECT_DROP_UNITS] = "DELETE FROM units WHERE object_id = ?1",
	[ST_OBJECT_DROP_CLAIMS] = "DELETE FROM claims WHERE object_id = ?1",
	[ST_OBJECT_DROP] = "DELETE FROM objects WHERE id = ?1",
	[ST_UNIT_FIND] = "SELECT id, len, crc, admitted FROM units WHERE object_id = ?1 AND off = ?2",
	[ST_UNIT_INSERT] = "INSERT OR IGNORE INTO units(object_id, off, len, crc, last_access, hits, "
			   "admitted, ahead) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_UNIT_DROP] = "DELETE FROM units WHERE id = ?1",
	/* as listed: on probation (?2 0) or admitted (1), not kept since */
	[ST_UNIT_EVICT] = "DELETE FROM units WHERE id = ?1 AND admitted = ?2",
	[ST_UNIT_TOUCH] = "UPDATE units SET hits = hits + (last_access < ?1 - " HIT_GAP "), "
			  "last_access = " TOUCHED_AT ", ahead = 2 * (ahead = 2) WHERE id = ?2",
	[ST_CLAIM_GET] = "SELECT pid, holder FROM claims WHERE object_id = ?1 AND off = ?2",
	[ST_CLAIM_PUT] = "INSERT OR REPLACE INTO claims(object_id, off, pid, since, holder) "
			 "VALUES (?1, ?2, ?3, ?4, ?5)",
	/* one holder's claim: never another's (invariant 8) */
	[ST_CLAIM_DROP] = "DELETE FROM claims WHERE object_id = ?1 AND off = ?2 AND holder = ?3",
	[ST_CHANGES] = "SELECT changes()",	/* of the last row statement */
	[ST_USAGE] = "SELECT value FROM meta WHERE key = 'usage'",
	[ST_PROBATION] = "SELECT value FROM meta WHERE key = 'probation'",
	/* eviction order (cache/store/evict.h): probation in the order its
	   units came, by id within a second (named, the index gives that
	   order; SQLite would otherwise sort units_victims' rows, which puts
	   those read once first among ties), then the admitted units (index
	   units_victims) */
	[ST_EVICT_PROBATION] = "SELECT id, object_id, off, len, crc, admitted FROM units "
			       "INDEXED BY units_probation WHERE admitted = 0 "
			       "AND object_id NOT IN (SELECT value FROM json_each(?2)) "
			       "AND NOT (ahead AND last_access >= ?3) "
			       "ORDER BY last_access, id LIMIT ?1",
	[ST_EVICT_ADMITTED] = "SELECT id, object_id, off, len, crc, admitted FROM units "
			      "WHERE admitted = 1 "
			      "AND object_id NOT IN (SELECT value FROM json_each(?2)) "
			      "ORDER BY admitted, hits > 1, last_access LIMIT ?1",
	/* the admitted unit eviction takes next (cache/store/evict.h) */
	[ST_VICTIM] = "SELECT hits, last_access FROM units WHERE admitted = 1 "
		      "ORDER BY admitted, hits > 1, last_access LIMIT 1",
	[ST_GHOST_GET] = "SELECT hits, last_access FROM ghosts WHERE object_id = ?1 AND off = ?2",
	[ST_GHOST_DROP] = "DELETE FROM ghosts WHERE object_id = ?1 AND off = ?2",
	[ST_GHOST_PUT_UNIT] = "INSERT INTO ghosts(object_id, off, len, hits, last_access) "
			      "SELECT object_id, off, len, hits, last_access FROM units WHERE id = ?1 "
			      "ON CONFLICT(object_id, off) DO UPDATE SET len = excluded.len, "
			      "hits = excluded.hits, last_access = excluded.last_access",
	[ST_GHOST_PUT_OBJECT] = "INSERT INTO ghosts(object_id, off, len, hits, last_access) "
				"SELECT object_id, off, len, hits, last_access FROM units "
				"WHERE object_id = ?1 ON CONFLICT(object_id, off) DO UPDATE SET "
				"len = excluded.len, hits = excluded.hits, "
				"last_access = excluded.last_access",
	[ST_UNIT_ADMIT] = "UPDATE units SET admitted = 1, ahead = 0 WHERE object_id = ?1 "
			  "AND off = ?2 AND admitted = 0",
	/* the bytes kept for their readers (evict.h), fetched in [?1, ?2]
	   (index units_ahead) */
	[ST_AHEAD_BYTES] = "SELECT coalesce(sum(len), 0) FROM units "
			   "WHERE ahead AND ahead = 1 AND last_access >= ?1 AND last_access <= ?2",
	/* a unit read on probation that a hint's coming read wants again
	   (ahead 2), and the bytes so kept, read in [?1, ?2] */
	[ST_UNIT_WANTED] = "UPDATE units SET ahead = 2 WHERE object_id = ?1 AND off = ?2 "
			   "AND admitted = 0 AND ahead != 2 RETURNING len",
	[ST_UNIT_UNWANTED] = "UPDATE units SET ahead = 0 WHERE object_id = ?1 AND off = ?2 "
			     "AND ahead = 2 RETURNING -len",
	[ST_WANTED_BYTES] = "SELECT coalesce(sum(len), 0) FROM units "
			    "WHERE ahead AND ahead = 2 AND last_access >= ?1 AND last_access <= ?2",
	/* do ghosts stand for more than ?1 bytes per byte of usage? */
	[ST_GHOSTS_OVER] = "SELECT (SELECT value FROM meta WHERE key = 'ghost_bytes') > "
			   "?1 * (SELECT value FROM meta WHERE key = 'usage')",
	/* the ?1 oldest ghosts, while they stand for more than ?2 bytes per
	   byte of usage */
	[ST_GHOSTS_TRIM] = "DELETE FROM ghosts WHERE (object_id, off) IN (SELECT object_id, off "
			   "FROM ghosts ORDER BY last_access LIMIT ?1) AND "
			   "(SELECT value FROM meta WHERE key = 'ghost_bytes') > "
			   "?2 * (SELECT value FROM meta WHERE key = 'usage')",
	[ST_COUNTS] = "SELECT (SELECT count(*) FROM objects), (SELECT count(*) FROM units), "
		      "(SELECT value FROM meta WHERE key = 'usage') - "
		      "(SELECT coalesce(sum(len), 0) FROM edges)",
	[ST_MAP_INSERT] = "INSERT OR REPLACE INTO tile_maps(object_id, header_len, map) "
			  "VALUES (?1, ?2, ?3)",
	[ST_MAP_GET] = "SELECT header_len, map FROM tile_maps WHERE object_id = ?1",
	[ST_OBJECT_DROP_MAP] = "DELETE FROM tile_maps WHERE object_id = ?1",
	[ST_OBJECT_GET] = "SELECT id, size, version, block_size FROM objects WHERE id = ?1",
	[ST_OBJECT_USAGE] = "SELECT count(*), coalesce(sum(len), 0) FROM units WHERE object_id = ?1",
	[ST_OBJECTS_ALL] = "SELECT o.id, o.size, o.version, o.block_size, o.url, count(u.id), "
			   "coalesce(sum(u.len), 0) FROM objects o LEFT JOIN units u "
			   "ON u.object_id = o.id GROUP BY o.id ORDER BY o.url, o.id",
	[ST_SEAL_PUT] = "INSERT OR REPLACE INTO seals(object_id, ino, ctime_ns) SELECT ?1, ?3, ?4 "
			"WHERE (SELECT total(len) FROM units WHERE object_id = ?1) = ?2",
	[ST_SEAL_GET] = "SELECT ino, ctime_ns FROM seals WHERE object_id = ?1 AND ino != 0",
	/* sealed once, broken since or not (unit.h, invariant 7) */
	[ST_OBJECT_SEALED] = "SELECT 1 FROM seals WHERE object_id = ?1",
	[ST_OBJECT_EVICT_CHECK] = "SELECT (SELECT count(*) FROM seals WHERE object_id = ?1), "
				  "(SELECT count(*) FROM claims WHERE object_id = ?1), "
				  "(SELECT coalesce(sum(len), 0) FROM units WHERE object_id = ?1)",
	[ST_OBJECT_CLAIM_ALL] = "INSERT INTO claims(object_id, off, pid, since, holder) "
				"SELECT object_id, off, ?2, ?3, ?4 FROM units WHERE object_id = ?1 "
				"UNION ALL SELECT ?1, -1, ?2, ?3, ?4",
	[ST_OBJECT_UNCLAIM] = "DELETE FROM claims WHERE object_id = ?1 AND holder = ?2",
	[ST_SEAL_DROP] = "DELETE FROM seals WHERE object_id = ?1",
	[ST_OBJECT_TOUCH] = "UPDATE units SET hits = hits + (last_access < ?1 - " HIT_GAP "), "
			    "last_access = " TOUCHED_AT " WHERE object_id = ?2",
	[ST_UNITS_OF] = "SELECT id, off, len, crc, admitted FROM units WHERE object_id = ?1 "
			"ORDER BY off",
	[ST_EDGE_PUT] = "INSERT INTO edges(object_id, off, len, crc, bytes) VALUES (?1, ?2, ?3, ?4, ?5) "
			"ON CONFLICT(object_id, off) DO UPDATE SET len = excluded.len, "
			"crc = excluded.crc, bytes = excluded.bytes WHERE excluded.len > edges.len",
	[ST_EDGE_FIND] = "SELECT off, len, crc, bytes FROM edges WHERE object_id = ?1 AND off <= ?2 "
			 "ORDER BY off DESC LIMIT 1",
	[ST_EDGES_DROP_NEAR] = "DELETE FROM edges WHERE object_id = ?1 AND off >= ?2 AND off < ?3",
	[ST_OBJECT_DROP_EDGES] = "DELETE FROM edges WHERE object_id = ?1",
	[ST_PROOF_GET] = "SELECT proved_at FROM proofs WHERE object_id = ?1 AND identity = ?2",
	[ST_PROOF_PUT] = "INSERT OR REPLACE INTO proofs(object_id, identity, proved_at) "
			 "SELECT id, ?2, ?3 FROM objects WHERE id = ?1",
};

int64_t index_now(void)
{
	return (int64_t)time(NULL);
}

/* The one place that maps a SQLite result to errno (and logs it). */
int index_sql_error(sqlite3 *db, int rc, const char *what)
{
	static atomic_llong last_logged;	/* at most one line a second */
	int primary = rc & 0xff;
	long long now = (long long)time(NULL);
	/* a full disk is the engine's to say (persist.c): once a minute */
	if (atomic_exchange(&last_logged, now) != now)
		log_at(primary == SQLITE_FULL ? LOG_DEBUG : LOG_ERROR, "cache index: %s: %s", what,
		       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	switch (primary) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EAGAIN;		/* another process holds the database */
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EBADMSG;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_CANTOPEN:
		return -EACCES;
	default:
		return -EIO;
	}
}

struct index_conn *index_conn_get(struct index *ix)
{
	pthread_mutex_lock(&ix->lock);
	while (!ix->free_conns)
		pthread_cond_wait(&ix->available, &ix->lock);
	struct index_conn *c = ix->free_conns;
	ix->free_conns = c->next_free;
	pthread_mutex_unlock(&ix->lock);
	return c;
}

void index_conn_put(struct index *ix, struct index_conn *c)
{
	pthread_mutex_lock(&ix->lock);
	c->next_free = ix->free_conns;
	ix->free_conns = c;
	pthread_cond_signal(&ix->available);
	pthread_mutex_unlock(&ix->lock);
}

sqlite3_stmt *index_stmt(struct index_conn *c, enum stmt_id id)
{
	if (!c->stmt[id]) {
		int rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					    &c->stmt[id], NULL);
		if (rc != SQLITE_OK) {
			index_sql_error(c->db, rc, "prepare");
			return NULL;
		}
	}
	sqlite3_reset(c->stmt[id]);
	sqlite3_clear_bindings(c->stmt[id]);
	return c->stmt[id];
}

/* Run S to its end, with no lock of ours. */
static int step(struct index_conn *c, sqlite3_stmt *s, const char *what)
{
	if (!s)
		return -EIO;
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : index_sql_error(c->db, rc, what);
}

int index_exec(struct index_conn *c, sqlite3_stmt *s, const char *what)
{
	/* a write outside index_begin() is a transaction of its own: it
	   queues on ix->writing as theirs do (index_int.h), where SQLite
	   would make it, or the transaction it meets, sleep */
	bool alone = s && sqlite3_get_autocommit(c->db) && !sqlite3_stmt_readonly(s);
	if (alone)
		pthread_mutex_lock(&c->ix->writing);
	int err = step(c, s, what);
	if (alone)
		pthread_mutex_unlock(&c->ix->writing);
	return err;
}

int index_begin(struct index_conn *c)
{
	pthread_mutex_lock(&c->ix->writing);
	int err = step(c, index_stmt(c, ST_BEGIN), "begin");
	if (err)
		pthread_mutex_unlock(&c->ix->writing);
	return err;
}

int index_commit(struct index_conn *c, int err)
{
	if (err) {
		step(c, index_stmt(c, ST_ROLLBACK), "rollback");
	} else {
		err = step(c, index_stmt(c, ST_COMMIT), "commit");
		/* a commit that failed may have rolled back already */
		if (err && !sqlite3_get_autocommit(c->db))
			step(c, index_stmt(c, ST_ROLLBACK), "rollback");
	}
	pthread_mutex_unlock(&c->ix->writing);
	return err;
}

int index_exec_keyed(struct index_conn *c, enum stmt_id id, int64_t a, int64_t b,
		     const char *what)
{
	sqlite3_stmt *s = index_stmt(c, id);
	if (s) {
		sqlite3_bind_int64(s, 1, a);
		sqlite3_bind_int64(s, 2, b);
	}
	return index_exec(c, s, what);
}

int index_claim_drop(struct index_conn *c, int64_t object_id, int64_t off, int64_t holder)
{
	sqlite3_stmt *s = index_stmt(c, ST_CLAIM_DROP);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, off);
		sqlite3_bind_int64(s, 3, holder);
	}
	return index_exec(c, s, "release claim");
}

/* Record that IDENTITY has read version OBJECT_ID (index_proof_put()). */
static int proof_put(struct index_conn *c, int64_t object_id, const char *identity)
{
	sqlite3_stmt *s = index_stmt(c, ST_PROOF_PUT);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_text(s, 2, identity, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, index_now());
	}
	return index_exec(c, s, "record proof");
}

size_t index_url_key_len(const char *url)
{
	return strcspn(url, "?#");
}

int64_t index_probe_key(const char *url)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */
	for (size_t i = 0, len = index_url_key_len(url); i < len; i++)
		h = (h ^ (unsigned char)url[i]) * 1099511628211ull;
	return -(int64_t)(h >> 1) - 1;
}

/* Is the row read into O within the limits (index.h)? Logs it if not. */
static int object_checked(const struct index_object *o, uint64_t header_len, bool with_header)
{
	bool ok = o->block_size >= INDEX_BLOCK_SIZE_MIN && o->block_size <= INDEX_BLOCK_SIZE_MAX &&
		  o->size <= INT64_MAX;
	if (with_header)
		ok = ok && header_len <= INDEX_HEADER_LEN_MAX;
	if (ok)
		return 0;
	log_warn("cache index: object %lld has a damaged row (size %llu, block size %llu%s%llu)",
		 (long long)o->id, (unsigned long long)o->size,
		 (unsigned long long)o->block_size, with_header ? ", header " : "",
		 with_header ? (unsigned long long)header_len : 0ull);
	return -EBADMSG;
}

/* Run ST_OBJECT_LATEST (by URL) or ST_OBJECT_GET (by ID) into OUT. */
static int object_row(struct index *ix, enum stmt_id id, const char *url, int64_t object_id,
		      struct index_object *out)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, id);
	int err = -EIO;

	if (s) {
		if (url)
			sqlite3_bind_text(s, 1, url, (int)index_url_key_len(url), SQLITE_STATIC);
		else
			sqlite3_bind_int64(s, 1, object_id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			out->id = sqlite3_column_int64(s, 0);
			out->size = (uint64_t)sqlite3_column_int64(s, 1);
			snprintf(out->version, sizeof(out->version), "%s", sqlite3_column_text(s, 2));
			out->block_size = (uint64_t)sqlite3_column_int64(s, 3);
			err = object_checked(out, 0, false);
		} else {
			err = rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "find object");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}

int index_object_latest(struct index *ix, const char *url, struct index_object *out)
{
	return object_row(ix, ST_OBJECT_LATEST, url, 0, out);
}

int index_object_get(struct index *ix, int64_t id, struct index_object *out)
{
	return object_row(ix, ST_OBJECT_GET, NULL, id, out);
}

int index_object_usage(struct index *ix, int64_t id, uint64_t *units, uint64_t *bytes)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_OBJECT_USAGE);
	int err = -EIO;

	if (s) {
		sqlite3_bind_int64(s, 1, id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			*units = (uint64_t)sqlite3_column_int64(s, 0);
			*bytes = (uint64_t)sqlite3_column_int64(s, 1);
			err = 0;
		} else {
			err = index_sql_error(c->db, rc, "object usage");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}
int index_object_add(struct index *ix, const char *url, struct index_object *obj,
		     const void *map, size_t map_len, const struct index_add_also *also,
		     bool *created)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (err)
		goto out;
	sqlite3_stmt *s = index_stmt(c, ST_OBJECT_INSERT);
	if (s) {
		sqlite3_bind_text(s, 1, url, (int)index_url_key_len(url), SQLITE_STATIC);
		sqlite3_bind_text(s, 2, obj->version, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, (int64_t)obj->size);
		sqlite3_bind_int64(s, 4, index_now());
		sqlite3_bind_int64(s, 5, (int64_t)obj->block_size);
	}
	err = index_exec(c, s, "add object");
	*created = !err && sqlite3_changes(c->db) == 1;
	s = err ? NULL : index_stmt(c, ST_OBJECT_ID);
	if (s) {
		sqlite3_bind_text(s, 1, url, (int)index_url_key_len(url), SQLITE_STATIC);
		sqlite3_bind_text(s, 2, obj->version, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, (int64_t)obj->size);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			struct index_object row = *obj;
			row.id = sqlite3_column_int64(s, 0);
			row.block_size = (uint64_t)sqlite3_column_int64(s, 1);
			err = object_checked(&row, 0, false);
			if (!err) {
				obj->id = row.id;
				obj->block_size = row.block_size;
			}
		} else {
			err = index_sql_error(c->db, rc, "find added object");
		}
		sqlite3_reset(s);
	} else if (!err) {
		err = -EIO;
	}
	s = err || !*created ? NULL : index_stmt(c, ST_MAP_INSERT);
	if (s) {
		sqlite3_bind_int64(s, 1, obj->id);
		sqlite3_bind_int64(s, 2, (int64_t)obj->header_len);
		if (map)
			sqlite3_bind_blob64(s, 3, map, map_len, SQLITE_STATIC);
		err = index_exec(c, s, "add tile map");
	}
	if (!err && also && also->proved_by)
		err = proof_put(c, obj->id, also->proved_by);
	if (!err && also && also->probe_release)
		err = index_claim_drop(c, index_probe_key(url), 0, ix->holder);
	err = index_commit(c, err);
	if (err)
		*created = false;
out:
	index_conn_put(ix, c);
	return err;
}

int index_object_map(struct index *ix, int64_t id, uint64_t *header_len, void **map,
		     size_t *map_len)
{
	*map = NULL;
	*map_len = 0;
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_MAP_GET);
	int err = -EIO;

	if (s) {
		sqlite3_bind_int64(s, 1, id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			struct index_object row = { .id = id, .block_size = INDEX_BLOCK_SIZE_MIN };
			uint64_t len = (uint64_t)sqlite3_column_int64(s, 0);
			const void *blob = sqlite3_column_blob(s, 1);
			size_t n = (size_t)sqlite3_column_bytes(s, 1);
			err = object_checked(&row, len, true);
			if (!err)
				*header_len = len;
			if (!err && blob && n) {
				*map = malloc(n);
				if (*map) {
					memcpy(*map, blob, n);
					*map_len = n;
				} else {
					err = -ENOMEM;
				}
			}
		} else {
			err = rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "find tile map");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}

int index_objects_all(struct index *ix, struct index_listed **out, size_t *n)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_OBJECTS_ALL);
	struct index_listed *v = NULL;
	size_t cap = 0;
	int err = s ? 0 : -EIO, rc = SQLITE_DONE;

	*n = 0;
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			struct index_listed *grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			v = grown;
		}
		struct index_listed *l = &v[*n];
		l->object.id = sqlite3_column_int64(s, 0);
		l->object.size = (uint64_t)sqlite3_column_int64(s, 1);
		snprintf(l->object.version, sizeof(l->object.version), "%s",
			 sqlite3_column_text(s, 2));
		l->object.block_size = (uint64_t)sqlite3_column_int64(s, 3);
		l->url = strdup((const char *)sqlite3_column_text(s, 4));
		l->units = (uint64_t)sqlite3_column_int64(s, 5);
		l->bytes = (uint64_t)sqlite3_column_int64(s, 6);
		if (!l->url)
			err = -ENOMEM;
		else
			(*n)++;
	}
	if (!err && rc != SQLITE_DONE)
		err = index_sql_error(c->db, rc, "list objects");
	if (s)
		sqlite3_reset(s);
	index_conn_put(ix, c);
	if (err) {
		index_listed_free(v, *n);
		v = NULL;
		*n = 0;
	}
	*out = v;
	return err;
}

void index_listed_free(struct index_listed *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].url);
	free(v);
}
int index_object_drop(struct index *ix, int64_t id)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (!err) {
		err = index_exec_keyed(c, ST_OBJECT_DROP_UNITS, id, 0, "drop units");
		if (!err)
			err = index_exec_keyed(c, ST_OBJECT_DROP_CLAIMS, id, 0, "drop claims");
		if (!err)
			err = index_exec_keyed(c, ST_OBJECT_DROP_MAP, id, 0, "drop tile map");
		if (!err)
			err = index_exec_keyed(c, ST_OBJECT_DROP_EDGES, id, 0, "drop edges");
		if (!err)
			err = index_exec_keyed(c, ST_OBJECT_DROP, id, 0, "drop object");
		err = index_commit(c, err);
	}
	index_conn_put(ix, c);
	return err;
}
int index_counts(struct index *ix, uint64_t *objects, uint64_t *units, uint64_t *bytes)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_COUNTS);
	int err = -EIO;

	if (s) {
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			*objects = (uint64_t)sqlite3_column_int64(s, 0);
			*units = (uint64_t)sqlite3_column_int64(s, 1);
			*bytes = (uint64_t)sqlite3_column_int64(s, 2);
			err = 0;
		} else {
			err = index_sql_error(c->db, rc, "count");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}

/* The byte count statement ID gives for units kept (ahead) whose read
 * time lies in [FROM, TO]. */
static int kept_bytes(struct index_conn *c, enum stmt_id id, int64_t from, int64_t to,
		      uint64_t *bytes, const char *what)
{
	sqlite3_stmt *s = index_stmt(c, id);
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 1, from);
	sqlite3_bind_int64(s, 2, to);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*bytes = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? 0 : index_sql_error(c->db, rc, what);
}

int index_units_wanted(struct index *ix, const struct index_unit_at *v, size_t n,
		       uint64_t bound)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int64_t now = index_now();
	uint64_t held = 0;
	int rc, err = index_begin(c);

	if (!err)
		err = kept_bytes(c, ST_WANTED_BYTES, now - EVICT_AHEAD_S, now, &held,
				 "count the bytes kept for coming reads");
	for (size_t i = 0; i < n && !err; i++) {
		if (v[i].keep && held >= bound)
			continue;
		sqlite3_stmt *s = index_stmt(c, v[i].keep ? ST_UNIT_WANTED : ST_UNIT_UNWANTED);
		if (!s) {
			err = -EIO;
			break;
		}
		sqlite3_bind_int64(s, 1, v[i].object_id);
		sqlite3_bind_int64(s, 2, (int64_t)v[i].off);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			int64_t d = sqlite3_column_int64(s, 0);	/* - when let go */
			held = d >= 0 ? held + (uint64_t)d :
			       held > (uint64_t)-d ? held - (uint64_t)-d : 0;
		}
		if (rc != SQLITE_DONE)
			err = index_sql_error(c->db, rc, "keep a unit for a coming read");
		sqlite3_reset(s);
	}
	err = index_commit(c, err);
	index_conn_put(ix, c);
	return err;
}

int index_ahead_bytes(struct index *ix, int64_t waited_s, uint64_t *bytes)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int64_t now = index_now();
	int err = kept_bytes(c, ST_AHEAD_BYTES, now - EVICT_AHEAD_S, now - waited_s, bytes,
			     "count the bytes kept ahead");
	index_conn_put(ix, c);
	return err;
}

const char *index_proof_salt(struct index *ix)
{
	return ix ? ix->proof_salt : "";
}

int index_proof_get(struct index *ix, int64_t object_id, const char *identity,
		    int64_t *proved_at)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_PROOF_GET);
	int err = -EIO;

	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_text(s, 2, identity, -1, SQLITE_STATIC);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			*proved_at = sqlite3_column_int64(s, 0);
			err = 0;
		} else {
			err = rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "find proof");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}

int index_proof_put(struct index *ix, int64_t object_id, const char *identity)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = proof_put(c, object_id, identity);
	index_conn_put(ix, c);
	return err;
}
