/*
 * index.c - see index.h: the index's database and its objects.
 *
 * ON DISK: DIR/index.db, SQLite in WAL mode, synchronous=NORMAL (a power cut
 * may lose the last commits, never corrupt; units lost that way are simply
 * fetched again, and data files are checked against `crc` on first read).
 *
 *   meta(key PRIMARY KEY, value)
 *       'schema' = 4; 'instance' = 16 hex digits, random per database;
 *       'usage'  = sum(units.len) + sum(edges.len), kept by the triggers
 *       below.
 *   objects(id AUTOINCREMENT, url, version, size, block_size, added)
 *       one row per (url, version, size); url has no query string or
 *       fragment (index_url_key_len()); version is the ETag, or
 *       "lm:<Last-Modified>" when the origin sends no ETag. Ids are never
 *       reused, so a data file named by id can never hold another object.
 *       block_size is the unit size the object was first cut with; every
 *       process uses it, whatever its own --block-size, so units of one
 *       object never overlap.
 *   units(id AUTOINCREMENT, object_id, off, len, crc, last_access, hits)
 *       one row per cached extent [off, off+len) of an object; crc is
 *       CRC32C of its bytes; hits counts reads at least 10 s apart, so one
 *       scan does not make a unit look hot (eviction: hits <= 1 go first,
 *       then least recently read).
 *   tile_maps(object_id PRIMARY KEY, header_len, map)
 *       how the object version is cut into units (layout.h), written in
 *       the transaction that adds the object, so every process that finds
 *       the object cuts it the same way: header_len is the first fetch of
 *       a plain file; map is tiff_map_encode()'s blob, NULL when the
 *       object is not a usable TIFF. No row: fixed blocks (schema 2).
 *   edges(object_id, off, len, crc, bytes)
 *       the few bytes of a tile that a reader's aligned buffer touched
 *       while reading the tile beside it (at most 16 KiB each, kept in the
 *       index itself, not in data files: no claim is needed to write them,
 *       since any process writes the same bytes of the same version). A
 *       unit's eviction drops the edges within 16 KiB of it, in the same
 *       transaction; an object's drop drops all of its edges. crc is CRC32C
 *       of bytes, checked at every read.
 *   seals(object_id PRIMARY KEY, ino, ctime_ns)
 *       an object whose units cover it, every one of them checked against
 *       its crc and synced to disk by a process holding a pin, with its
 *       data file's inode number and ctime then (index_seal()): while the
 *       file still has them, nothing has written it since, and the kernel
 *       may read it as it is (FUSE passthrough, cache/engine/seal.c).
 *       Dropping any unit of the object breaks its seal (trigger
 *       units_break_seal sets ino to 0; an older tilefs sharing the cache
 *       dir keeps that rule too, as the trigger lives in the database).
 *       The row stays, broken or not, until the object is evicted whole
 *       (index_object_evict()): a file once sealed may be mapped by the
 *       kernel still, so it is never punched (unit.h, invariant 7).
 *   claims(object_id, off, pid, since)
 *       a process fetching a unit (others wait for it instead of fetching
 *       the same bytes), or evicting one (nobody writes it meanwhile).
 *
 * MIGRATIONS: 2 -> 3 adds tile_maps (objects of schema 2 keep their
 * blocks); 3 -> 4 adds edges. Any other schema is set aside and rebuilt.
 *
 * A row in `units` is written only after its bytes are in the data file,
 * and only while no other process claims the unit. Eviction deletes the
 * row and claims the unit in one transaction, then punches the hole, then
 * releases the claim; so no unit's bytes change while a row points at them.
 *
 * PERMISSIONS: the cache dir passes private_dir_open() (owned by us, not
 * writable by others), index.db is created 0600 before SQLite opens it (its
 * -wal and -shm take its mode), and index.db, its -wal and -shm and
 * index.lock are opened without following links. Files an older tilefs
 * made 0644 are set to 0600 here.
 *
 * ROWS ARE CHECKED when read: a block_size or header_len outside the
 * limits in index.h (header_len: above them), or a negative size, is a damaged row (-EBADMSG,
 * logged; the object is read uncached); a malformed meta.instance is a
 * damaged database (rebuilt).
 *
 * index.lock beside the database: every process holds it shared; moving a
 * corrupt database aside takes it exclusively, so a database some process
 * still has open is never pulled from under it.
 *
 * This file opens the database (schema, migrations, setting a broken one
 * aside), keeps the connection pool and the statements, maps SQLite's
 * errors, and holds the objects; index_units.c holds the units, claims and
 * eviction. DESIGN of the pool: index_int.h.
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/base/log.h"
#include "cache/base/private_dir.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA_VERSION INDEX_SCHEMA_VERSION

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
	[ST_UNIT_FIND] = "SELECT id, len, crc FROM units WHERE object_id = ?1 AND off = ?2",
	[ST_UNIT_INSERT] = "INSERT OR IGNORE INTO units(object_id, off, len, crc, last_access, hits) "
			   "VALUES (?1, ?2, ?3, ?4, ?5, 1)",
	[ST_UNIT_DROP] = "DELETE FROM units WHERE id = ?1",
	[ST_UNIT_TOUCH] = "UPDATE units SET hits = hits + (last_access < ?1 - 10), "
			  "last_access = ?1 WHERE id = ?2",
	[ST_CLAIM_GET] = "SELECT pid, since FROM claims WHERE object_id = ?1 AND off = ?2",
	[ST_CLAIM_PUT] = "INSERT OR REPLACE INTO claims(object_id, off, pid, since) "
			 "VALUES (?1, ?2, ?3, ?4)",
	[ST_CLAIM_DROP] = "DELETE FROM claims WHERE object_id = ?1 AND off = ?2",
	[ST_UNIT_DROP_CHANGES] = "SELECT changes()",
	[ST_USAGE] = "SELECT value FROM meta WHERE key = 'usage'",
	[ST_EVICT] = "SELECT id, object_id, off, len, crc FROM units "
		     "WHERE object_id NOT IN (SELECT value FROM json_each(?2)) "
		     "ORDER BY hits > 1, last_access LIMIT ?1",
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
	[ST_OBJECT_EVICT_CHECK] = "SELECT (SELECT count(*) FROM seals WHERE object_id = ?1), "
				  "(SELECT count(*) FROM claims WHERE object_id = ?1), "
				  "(SELECT coalesce(sum(len), 0) FROM units WHERE object_id = ?1)",
	[ST_OBJECT_CLAIM_ALL] = "INSERT INTO claims(object_id, off, pid, since) "
				"SELECT object_id, off, ?2, ?3 FROM units WHERE object_id = ?1",
	[ST_SEAL_DROP] = "DELETE FROM seals WHERE object_id = ?1",
	[ST_OBJECT_TOUCH] = "UPDATE units SET hits = hits + (last_access < ?1 - 10), "
			    "last_access = ?1 WHERE object_id = ?2",
	[ST_UNITS_OF] = "SELECT id, off, len, crc FROM units WHERE object_id = ?1 ORDER BY off",
	[ST_EDGE_PUT] = "INSERT INTO edges(object_id, off, len, crc, bytes) VALUES (?1, ?2, ?3, ?4, ?5) "
			"ON CONFLICT(object_id, off) DO UPDATE SET len = excluded.len, "
			"crc = excluded.crc, bytes = excluded.bytes WHERE excluded.len > edges.len",
	[ST_EDGE_FIND] = "SELECT off, len, crc, bytes FROM edges WHERE object_id = ?1 AND off <= ?2 "
			 "ORDER BY off DESC LIMIT 1",
	[ST_EDGES_DROP_NEAR] = "DELETE FROM edges WHERE object_id = ?1 AND off >= ?2 AND off < ?3",
	[ST_OBJECT_DROP_EDGES] = "DELETE FROM edges WHERE object_id = ?1",
};

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS objects("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, version TEXT NOT NULL,"
	"  size INTEGER NOT NULL, block_size INTEGER NOT NULL, added INTEGER NOT NULL,"
	"  UNIQUE(url, version, size));"
	"CREATE TABLE IF NOT EXISTS units("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, object_id INTEGER NOT NULL,"
	"  off INTEGER NOT NULL, len INTEGER NOT NULL, crc INTEGER NOT NULL,"
	"  last_access INTEGER NOT NULL, hits INTEGER NOT NULL, UNIQUE(object_id, off));"
	"CREATE INDEX IF NOT EXISTS units_eviction ON units(hits > 1, last_access);"
	"CREATE TABLE IF NOT EXISTS claims(object_id INTEGER, off INTEGER, pid INTEGER,"
	"  since INTEGER, PRIMARY KEY(object_id, off)) WITHOUT ROWID;"
	"CREATE TRIGGER IF NOT EXISTS units_added AFTER INSERT ON units BEGIN"
	"  UPDATE meta SET value = value + NEW.len WHERE key = 'usage'; END;"
	"CREATE TRIGGER IF NOT EXISTS units_dropped AFTER DELETE ON units BEGIN"
	"  UPDATE meta SET value = value - OLD.len WHERE key = 'usage'; END;"
	"CREATE TABLE IF NOT EXISTS tile_maps(object_id INTEGER PRIMARY KEY,"
	"  header_len INTEGER NOT NULL, map BLOB);"
	"CREATE TABLE IF NOT EXISTS edges(object_id INTEGER NOT NULL, off INTEGER NOT NULL,"
	"  len INTEGER NOT NULL, crc INTEGER NOT NULL, bytes BLOB NOT NULL,"
	"  PRIMARY KEY(object_id, off)) WITHOUT ROWID;"
	"CREATE TRIGGER IF NOT EXISTS edges_added AFTER INSERT ON edges BEGIN"
	"  UPDATE meta SET value = value + NEW.len WHERE key = 'usage'; END;"
	"CREATE TRIGGER IF NOT EXISTS edges_changed AFTER UPDATE OF len ON edges BEGIN"
	"  UPDATE meta SET value = value + NEW.len - OLD.len WHERE key = 'usage'; END;"
	"CREATE TRIGGER IF NOT EXISTS edges_dropped AFTER DELETE ON edges BEGIN"
	"  UPDATE meta SET value = value - OLD.len WHERE key = 'usage'; END;"
	"CREATE TABLE IF NOT EXISTS seals(object_id INTEGER PRIMARY KEY, ino INTEGER NOT NULL,"
	"  ctime_ns INTEGER NOT NULL);"
	"DROP TRIGGER IF EXISTS units_unseal;"
	"CREATE TRIGGER IF NOT EXISTS units_break_seal AFTER DELETE ON units BEGIN"
	"  UPDATE seals SET ino = 0 WHERE object_id = OLD.object_id; END;"
	"INSERT OR IGNORE INTO meta VALUES ('schema', 4);"
	"INSERT OR IGNORE INTO meta VALUES ('usage', 0);"
	"INSERT OR IGNORE INTO meta VALUES ('instance', lower(hex(randomblob(8))));";

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
	if (atomic_exchange(&last_logged, now) != now)
		log_error("cache index: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
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

int index_exec(struct index_conn *c, sqlite3_stmt *s, const char *what)
{
	if (!s)
		return -EIO;
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : index_sql_error(c->db, rc, what);
}

int index_begin(struct index_conn *c)
{
	pthread_mutex_lock(&c->ix->writing);
	int err = index_exec(c, index_stmt(c, ST_BEGIN), "begin");
	if (err)
		pthread_mutex_unlock(&c->ix->writing);
	return err;
}

int index_commit(struct index_conn *c, int err)
{
	if (err) {
		index_exec(c, index_stmt(c, ST_ROLLBACK), "rollback");
	} else {
		err = index_exec(c, index_stmt(c, ST_COMMIT), "commit");
		if (err)
			index_exec(c, index_stmt(c, ST_ROLLBACK), "rollback");
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

static int conn_open(struct index *ix, struct index_conn *c)
{
	c->ix = ix;
	int rc = sqlite3_open_v2(ix->path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
				 SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK)
		return index_sql_error(c->db, rc, "open");
	sqlite3_busy_timeout(c->db, 5000);
	sqlite3_extended_result_codes(c->db, 1);
	rc = sqlite3_exec(c->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
			  NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : index_sql_error(c->db, rc, "configure");
}

static void conn_close(struct index_conn *c)
{
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(c->stmt[i]);
	sqlite3_close(c->db);
	memset(c, 0, sizeof(*c));
}

/* 16 lowercase hex digits, as schema_sql makes it. */
static bool instance_ok(const char *instance)
{
	size_t n = 0;
	for (; instance[n]; n++)
		if (!isxdigit((unsigned char)instance[n]) || isupper((unsigned char)instance[n]))
			return false;
	return n == 16;
}

/*
 * Create index.db (0600) if missing, so SQLite does not create it with
 * its default mode; its -wal and -shm then take that mode. Files of an
 * older tilefs that made them 0644 are set to 0600. None is followed if a
 * link, and none but a regular file is accepted.
 */
static int db_files_private(int dir_fd, const char *path)
{
	static const char *const names[] = { "index.db", "index.db-wal", "index.db-shm" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (i == 0 ? O_CREAT : 0);
		int fd = openat(dir_fd, names[i], flags, 0600);
		struct stat st;
		if (fd < 0 && errno == ENOENT && i > 0)
			continue;
		if (fd < 0 || fstat(fd, &st) != 0) {
			int err = -errno;
			log_error("cannot open the cache index %s%s: %s", path, names[i] + 8,
				  strerror(errno));
			if (fd >= 0)
				close(fd);
			return err;
		}
		int err = 0;
		if (!S_ISREG(st.st_mode)) {
			log_error("cache index %s%s is not a regular file", path, names[i] + 8);
			err = -EPERM;
		} else if ((st.st_mode & 077) && fchmod(fd, 0600) != 0) {
			err = -errno;
		}
		close(fd);
		if (err)
			return err;
	}
	return 0;
}

/* Create the schema if missing and check the database is sound. */
static int setup(struct index *ix, struct index_conn *c)
{
	char *msg = NULL;
	int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, schema_sql, NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		sqlite3_free(msg);
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return index_sql_error(c->db, rc, "set up");
	}

	sqlite3_stmt *s = NULL;
	bool ok = false;
	struct stat st;
	if (stat(ix->path, &st) == 0 && st.st_size > (64 << 20)) {
		ok = true;	/* large: rely on errors met later */
	} else if (sqlite3_prepare_v2(c->db, "PRAGMA quick_check", -1, &s, NULL) == SQLITE_OK &&
		   sqlite3_step(s) == SQLITE_ROW) {
		ok = strcmp((const char *)sqlite3_column_text(s, 0), "ok") == 0;
	}
	sqlite3_finalize(s);
	if (!ok) {
		log_warn("cache index %s failed its integrity check", ix->path);
		return -EBADMSG;
	}

	s = NULL;
	rc = sqlite3_prepare_v2(c->db, "SELECT value FROM meta WHERE key = 'instance'", -1, &s, NULL);
	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		snprintf(ix->instance, sizeof(ix->instance), "%s", sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	if (!instance_ok(ix->instance)) {
		/* it names the data directory: never a path of someone's choosing */
		log_warn("cache index %s has a malformed instance id", ix->path);
		return -EBADMSG;
	}
	s = NULL;
	int64_t schema = 0;
	if (sqlite3_prepare_v2(c->db, "SELECT value FROM meta WHERE key = 'schema'", -1, &s,
			       NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		schema = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (schema == 2 || schema == 3) {
		/* tile_maps (3) and edges (4) were just created by schema_sql */
		rc = sqlite3_exec(c->db, "UPDATE meta SET value = 4 WHERE key = 'schema'", NULL,
				  NULL, NULL);
		if (rc != SQLITE_OK)
			return index_sql_error(c->db, rc, "upgrade the schema to 4");
		log_info("cache index %s upgraded from schema %lld to 4", ix->path,
			 (long long)schema);
		schema = 4;
	}
	if (schema != SCHEMA_VERSION || !ix->instance[0]) {
		log_warn("cache index %s has schema %lld, this tilefs needs %d", ix->path,
			 (long long)schema, SCHEMA_VERSION);
		return -EBADMSG;
	}
	return 0;
}

/* Move a broken database aside so a fresh one can be made. */
static void set_aside(const char *path)
{
	char aside[4200];
	snprintf(aside, sizeof(aside), "%s.broken", path);
	if (rename(path, aside) != 0)
		unlink(path);
	for (const char *suffix = "-wal"; suffix; suffix = suffix[1] == 'w' ? "-shm" : NULL) {
		char side[4200];
		snprintf(side, sizeof(side), "%s%s", path, suffix);
		unlink(side);
	}
	log_warn("cache index %s was unusable: moved to %s, starting an empty cache", path, aside);
}

int index_open(const char *dir, struct index **out, bool *rebuilt)
{
	struct index *ix = calloc(1, sizeof(*ix));
	int err;

	*rebuilt = false;
	if (!ix)
		return -ENOMEM;
	size_t n = strlen(dir) + sizeof("/index.db");
	ix->path = malloc(n);
	if (!ix->path) {
		free(ix);
		return -ENOMEM;
	}
	snprintf(ix->path, n, "%s/index.db", dir);
	pthread_mutex_init(&ix->lock, NULL);
	pthread_mutex_init(&ix->writing, NULL);
	pthread_cond_init(&ix->available, NULL);
	ix->lock_fd = -1;
	char why[256];
	int dir_fd = private_dir_open(dir, why, sizeof(why));
	if (dir_fd < 0) {
		err = dir_fd;
		log_error("cache dir %s %s", dir, why);
		goto fail;
	}
	char lock_path[4200];
	snprintf(lock_path, sizeof(lock_path), "%s/index.lock", dir);
	ix->lock_fd = openat(dir_fd, "index.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (ix->lock_fd < 0 || flock(ix->lock_fd, LOCK_SH) != 0) {
		err = -errno;
		log_error("cannot lock %s: %s", lock_path, strerror(errno));
		goto fail;
	}

	for (int attempt = 0;; attempt++) {
		err = db_files_private(dir_fd, ix->path);
		if (!err)
			err = conn_open(ix, &ix->conns[0]);
		if (!err)
			err = setup(ix, &ix->conns[0]);
		if (!err)
			break;
		conn_close(&ix->conns[0]);
		if (err != -EBADMSG || attempt > 0)
			goto fail;	/* busy, full, unreadable: not ours to rebuild */
		if (flock(ix->lock_fd, LOCK_EX | LOCK_NB) != 0) {
			log_error("cache index %s is damaged but another tilefs process has it "
				  "open; stop them, then mount again", ix->path);
			err = -EBUSY;
			goto fail;
		}
		set_aside(ix->path);
		flock(ix->lock_fd, LOCK_SH);
		*rebuilt = true;
	}
	for (int i = 1; i < INDEX_POOL_SIZE; i++) {
		err = conn_open(ix, &ix->conns[i]);
		if (err)
			goto fail;
	}
	for (int i = 0; i < INDEX_POOL_SIZE; i++) {
		ix->conns[i].next_free = ix->free_conns;
		ix->free_conns = &ix->conns[i];
	}
	close(dir_fd);
	*out = ix;
	return 0;

fail:
	if (dir_fd >= 0)
		close(dir_fd);
	index_close(ix);
	return err;
}

void index_close(struct index *ix)
{
	if (!ix)
		return;
	for (int i = 0; i < INDEX_POOL_SIZE; i++)
		if (ix->conns[i].db)
			conn_close(&ix->conns[i]);
	if (ix->lock_fd >= 0)
		close(ix->lock_fd);	/* releases the shared lock */
	pthread_mutex_destroy(&ix->lock);
	pthread_mutex_destroy(&ix->writing);
	pthread_cond_destroy(&ix->available);
	free(ix->path);
	free(ix);
}

const char *index_instance(struct index *ix)
{
	return ix->instance;
}

size_t index_url_key_len(const char *url)
{
	return strcspn(url, "?#");
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
		     const void *map, size_t map_len, bool *created)
{
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
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_MAP_GET);
	int err = -EIO;

	*map = NULL;
	*map_len = 0;
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
