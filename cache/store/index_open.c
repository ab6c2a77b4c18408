/*
 * index_open.c - see index.h: opening the index's database (its files,
 * their permissions, the schema and its migrations, setting a damaged one
 * aside) and closing it. index.c holds the pool, the statements and the
 * objects; index_units.c the units, claims and eviction.
 *
 * ON DISK: DIR/index.db, SQLite in WAL mode, synchronous=NORMAL (a power cut
 * may lose the last commits, never corrupt; units lost that way are simply
 * fetched again, and data files are checked against `crc` on first read).
 *
 *   meta(key PRIMARY KEY, value)
 *       'schema' = 6; 'instance' = 16 hex digits, random per database;
 *       'proof_salt' = 32 hex digits, random per database (proofs below);
 *       'usage'  = sum(units.len) + sum(edges.len), kept by the triggers
 *       below; 'ghost_bytes' = sum(ghosts.len), the same way;
 *       'probation' = sum(units.len) of the units on probation, the same
 *       way (triggers made at open: probation_sql).
 *   objects(id AUTOINCREMENT, url, version, size, block_size, added)
 *       one row per (url, version, size); url has no query string or
 *       fragment (index_url_key_len()); version is the ETag, or
 *       "lm:<Last-Modified>" when the origin sends no ETag. Ids are never
 *       reused, so a data file named by id can never hold another object.
 *       block_size is the unit size the object was first cut with; every
 *       process uses it, whatever its own --block-size, so units of one
 *       object never overlap.
 *   units(id AUTOINCREMENT, object_id, off, len, crc, last_access, hits,
 *         admitted, ahead)
 *       one row per cached extent [off, off+len) of an object; crc is
 *       CRC32C of its bytes; hits counts reads at least 10 s apart, so one
 *       scan does not make a unit look hot (a unit fetched again starts
 *       from its ghost's count); admitted is 0 for a unit stored on
 *       probation, fetched into a full cache without beating the next
 *       victim (cache/store/evict.h). Eviction order: probation first,
 *       in the order its units came (index units_probation), then admitted
 *       units read once (hits <= 1), then the rest, least recently read
 *       first within each (index units_victims). ahead is 1 for a
 *       unit on probation that was fetched ahead of its readers (a hint's)
 *       and not read since, 2 for one on probation that a hint's
 *       coming read wants again (read, or fetched by the hint for an
 *       earlier entry), until the hint lets it go
 *       (index_units_wanted()): eviction passes
 *       over either while it is younger than EVICT_AHEAD_S (index
 *       units_ahead counts those). A column of
 *       schema 6 added at open if missing (migrate()); a tilefs that
 *       does not know it reads such units as on probation.
 *   ghosts(object_id, off, len, hits, last_access)
 *       a unit evicted, with its count and last read, so that fetched
 *       again it is known (evict.h): written in the transaction that drops
 *       its row, deleted when it is stored again or its object dropped
 *       (trigger objects_drop_ghosts). At most 2 bytes of ghosts' len per
 *       byte of usage: the oldest go first (index ghosts_age).
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
 *       unit's eviction drops the edges in the 16 KiB before and after it
 *       (read beside it), in the same transaction, not those within it
 *       (read beside its neighbours); an object's drop drops all of its
 *       edges. crc is CRC32C of bytes, checked at every read.
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
 *   proofs(object_id, identity, proved_at)
 *       an identity that read the object at the origin (a HEAD or GET
 *       answered 2xx) at proved_at (Unix time): a mount serves cached
 *       bytes of an object only to an identity proved within --ttl
 *       (cache/engine/open.c). identity is an opaque keyed hash (32 hex
 *       digits of SHA-256 over proof_salt and the identity's name, made
 *       by source_identity_hash() in cache/origin), never a key, a SAS or a
 *       token. Rows go with their object (trigger objects_drop_proofs,
 *       kept by any tilefs that deletes objects); a new version is a new
 *       object, so it starts with none.
 *   claims(object_id, off, pid, since, holder)
 *       a process fetching a unit (others wait for it instead of fetching
 *       the same bytes), or evicting one (nobody writes it meanwhile).
 *       holder names the index that holds it (HOLDERS below), so a
 *       claim names one holder, not a pid a later process may get: it is
 *       held while that holder's lock is, and released or recorded only
 *       by that holder (unit.h, invariant 8); pid is its process's, for
 *       messages. since is when it was taken. A column of schema 6 added
 *       at open if missing (migrate()); a claim written without it (0) is
 *       held while its pid lives.
 *       off -1 claims the whole object: a process evicting it whole holds
 *       it from the transaction that drops its rows until its data file is
 *       unlinked (index_object_evict()), and no unit of the object is
 *       claimed meanwhile, by any process, that one too; else a unit with
 *       no row then could be written into the file about to go, and its
 *       row would point at a hole in the next one.
 *
 * MIGRATIONS: 2 -> 3 adds tile_maps (objects of schema 2 keep their
 * blocks); 3 -> 4 adds edges; 4 -> 5 adds proofs and meta.proof_salt
 * (objects cached before have no proofs: each identity proves them once);
 * 5 -> 6 adds units.admitted (every unit cached before is admitted), the
 * ghosts and meta.ghost_bytes, and replaces the index units_eviction
 * (hits > 1, last_access) with units_victims (migrate()). Any other
 * schema is set aside and rebuilt.
 *
 * A row in `units` is written only after its bytes are in the data file,
 * and only by the process that claims the unit. Eviction deletes the
 * row and claims the unit in one transaction, then punches the hole, then
 * releases the claim; so no unit's bytes change while a row points at them.
 *
 * PERMISSIONS: the cache dir passes private_dir_open() (owned by us, not
 * writable by others), index.db is created 0600 before SQLite opens it (its
 * -wal and -shm take its mode), and index.db, its -wal and -shm and
 * index.lock are opened without following links. Files an older tilefs
 * made 0644 are set to 0600 here.
 *
 * index.lock beside the database: every process holds it shared (flock);
 * moving a corrupt database aside takes it exclusively, so a database some
 * process still has open is never pulled from under it. Its first byte,
 * write-locked (an open file description lock, apart from the flock), is
 * held by the process that evicts (index_evictor_begin()).
 *
 * HOLDERS: each open index is one claim holder, named in claims.holder
 * by a random token, and holds a write lock (an open file description
 * lock) on byte holder_byte(token) of index.lock from index_open() to
 * index_close(). A claim is held while that lock is (index_holder_alive(),
 * asked through a second description of the file, which sees this
 * index's own lock too): the kernel drops the lock when its process dies,
 * however it dies, and a lock tells a live holder from a dead one in any
 * pid namespace, where a pid would not (unit.h, invariant 8).
 *
 * This file is the one that creates and upgrades the schema below.
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/base/log.h"
#include "cache/base/private_dir.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA_VERSION INDEX_SCHEMA_VERSION
#define OPEN_TRIES 20		/* each step of an open, while its error may pass */

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS objects("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, version TEXT NOT NULL,"
	"  size INTEGER NOT NULL, block_size INTEGER NOT NULL, added INTEGER NOT NULL,"
	"  UNIQUE(url, version, size));"
	"CREATE TABLE IF NOT EXISTS units("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, object_id INTEGER NOT NULL,"
	"  off INTEGER NOT NULL, len INTEGER NOT NULL, crc INTEGER NOT NULL,"
	"  last_access INTEGER NOT NULL, hits INTEGER NOT NULL,"
	"  admitted INTEGER NOT NULL DEFAULT 1, ahead INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE(object_id, off));"
	"CREATE TABLE IF NOT EXISTS claims(object_id INTEGER, off INTEGER, pid INTEGER,"
	"  since INTEGER, holder INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(object_id, off))"
	"  WITHOUT ROWID;"
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
	"CREATE TABLE IF NOT EXISTS proofs(object_id INTEGER NOT NULL, identity TEXT NOT NULL,"
	"  proved_at INTEGER NOT NULL, PRIMARY KEY(object_id, identity)) WITHOUT ROWID;"
	"CREATE TRIGGER IF NOT EXISTS objects_drop_proofs AFTER DELETE ON objects BEGIN"
	"  DELETE FROM proofs WHERE object_id = OLD.id; END;"
	"CREATE TABLE IF NOT EXISTS ghosts(object_id INTEGER NOT NULL, off INTEGER NOT NULL,"
	"  len INTEGER NOT NULL, hits INTEGER NOT NULL, last_access INTEGER NOT NULL,"
	"  PRIMARY KEY(object_id, off)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS ghosts_age ON ghosts(last_access);"
	"CREATE TRIGGER IF NOT EXISTS ghosts_added AFTER INSERT ON ghosts BEGIN"
	"  UPDATE meta SET value = value + NEW.len WHERE key = 'ghost_bytes'; END;"
	"CREATE TRIGGER IF NOT EXISTS ghosts_changed AFTER UPDATE OF len ON ghosts BEGIN"
	"  UPDATE meta SET value = value + NEW.len - OLD.len WHERE key = 'ghost_bytes'; END;"
	"CREATE TRIGGER IF NOT EXISTS ghosts_dropped AFTER DELETE ON ghosts BEGIN"
	"  UPDATE meta SET value = value - OLD.len WHERE key = 'ghost_bytes'; END;"
	"CREATE TRIGGER IF NOT EXISTS objects_drop_ghosts AFTER DELETE ON objects BEGIN"
	"  DELETE FROM ghosts WHERE object_id = OLD.id; END;"
	"INSERT OR IGNORE INTO meta VALUES ('schema', 6);"
	"INSERT OR IGNORE INTO meta VALUES ('usage', 0);"
	"INSERT OR IGNORE INTO meta VALUES ('ghost_bytes', 0);"
	"INSERT OR IGNORE INTO meta VALUES ('instance', lower(hex(randomblob(8))));"
	"INSERT OR IGNORE INTO meta VALUES ('proof_salt', lower(hex(randomblob(16))));";

/*
 * 0 if C can write, -EROFS if SQLite opened its file or its WAL file
 * read-only without an error (as it does after a disk's passing I/O error
 * at that open), else the error of the write tried. sqlite3_db_readonly()
 * tells of the file, not of the WAL file: a write transaction begun and
 * rolled back tells of both. Busy: another process writes, so writes are
 * possible.
 */
static int conn_writable(struct index_conn *c)
{
	if (sqlite3_db_readonly(c->db, "main") == 1)
		return -EROFS;
	int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE; ROLLBACK;", NULL, NULL, NULL);
	if (rc == SQLITE_OK || (rc & 0xff) == SQLITE_BUSY)
		return 0;
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return (rc & 0xff) == SQLITE_READONLY ? -EROFS : index_sql_error(c->db, rc, "try a write");
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
	/* While another process creates the file or turns it to WAL, this may
	 * answer SQLITE_BUSY at once, without the busy handler: try again,
	 * for as long as the busy timeout */
	struct timespec now, until, pause = { 0, 10 * 1000 * 1000 };
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 5;
	for (;;) {
		rc = sqlite3_exec(c->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
				  NULL, NULL, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((rc & 0xff) != SQLITE_BUSY || now.tv_sec > until.tv_sec ||
		    (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
			break;
		nanosleep(&pause, NULL);
	}
	if (rc != SQLITE_OK)
		return index_sql_error(c->db, rc, "configure");
	/* a connection that cannot write would fail every write for as long
	   as it lives: an I/O error here, and the open is tried again */
	rc = conn_writable(c);
	if (rc == -EROFS) {
		log_warn("cache index %s: opened read-only; trying again", ix->path);
		return -EIO;
	}
	return rc;
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
			err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		} else if ((st.st_mode & 077) && fchmod(fd, 0600) != 0) {
			err = -errno;
		}
		close(fd);
		if (err)
			return err;
	}
	return 0;
}

/* The first column of the first row SQL gives, as text into BUF (SIZE
 * bytes) or as an integer into *NUMBER; no row leaves them as they are.
 * 0, or the mapped error of a statement that could not run. */
static int first_value(struct index_conn *c, const char *sql, char *buf, size_t size,
		       int64_t *number)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	const unsigned char *text = rc == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
	if (rc == SQLITE_ROW && buf)
		snprintf(buf, size, "%s", text ? (const char *)text : "");
	if (rc == SQLITE_ROW && number)
		*number = sqlite3_column_int64(s, 0);
	int err = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : index_sql_error(c->db, rc, sql);
	sqlite3_finalize(s);
	return err;
}

/* meta.probation: the bytes of the units on probation, kept by triggers
 * (any tilefs that writes units keeps it, knowing of it or not); counted
 * once where the triggers are new. */
static const char probation_sql[] =
	"CREATE TRIGGER IF NOT EXISTS units_probation_added AFTER INSERT ON units "
	"  WHEN NEW.admitted = 0 BEGIN"
	"  UPDATE meta SET value = value + NEW.len WHERE key = 'probation'; END;"
	"CREATE TRIGGER IF NOT EXISTS units_probation_dropped AFTER DELETE ON units "
	"  WHEN OLD.admitted = 0 BEGIN"
	"  UPDATE meta SET value = value - OLD.len WHERE key = 'probation'; END;"
	"CREATE TRIGGER IF NOT EXISTS units_probation_changed AFTER UPDATE OF admitted ON units "
	"  WHEN NEW.admitted != OLD.admitted BEGIN"
	"  UPDATE meta SET value = value + (CASE WHEN NEW.admitted = 0 THEN NEW.len "
	"  ELSE -NEW.len END) WHERE key = 'probation'; END;"
	"INSERT OR REPLACE INTO meta VALUES ('probation', "
	"  (SELECT coalesce(sum(len), 0) FROM units WHERE admitted = 0));";

/*
 * Bring a database of schema 2 to 5 to SCHEMA_VERSION (*SCHEMA: what it
 * holds now), in one transaction that reads the schema again, so that two
 * processes opening an old cache at once migrate it once. tile_maps (3),
 * edges (4), proofs and meta.proof_salt (5), the ghosts and
 * meta.ghost_bytes (6) were created by schema_sql already; units.admitted
 * (6), units.ahead and claims.holder are added here. Then the eviction indexes of this
 * schema are made, if missing (a migrated database of a million units
 * takes a second or two, once).
 */
static int migrate(struct index *ix, struct index_conn *c, int64_t *schema)
{
	int64_t was = 0, ready = 0;
	/* the common case, read only: nothing to do, no write lock taken */
	int err = *schema == SCHEMA_VERSION ?
		  first_value(c, "SELECT (SELECT count(*) FROM sqlite_master WHERE "
			      "name IN ('units_victims', 'units_ahead', 'units_probation', "
			      "'units_probation_added', 'units_probation_dropped', "
			      "'units_probation_changed')) + (SELECT count(*) FROM "
			      "pragma_table_info('claims') WHERE name = 'holder')", NULL, 0,
			      &ready) : 0;
	if (err || ready == 7)
		return err;
	int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	err = rc == SQLITE_OK ? 0 : index_sql_error(c->db, rc, "begin the schema upgrade");
	if (!err)
		err = first_value(c, "SELECT value FROM meta WHERE key = 'schema'", NULL, 0, &was);
	int64_t has_admitted = 0;
	if (!err && was >= 2 && was < 6)
		err = first_value(c, "SELECT count(*) FROM pragma_table_info('units') "
				  "WHERE name = 'admitted'", NULL, 0, &has_admitted);
	if (!err && was >= 2 && was < 6) {
		rc = has_admitted ? SQLITE_OK :
		     sqlite3_exec(c->db, "ALTER TABLE units ADD COLUMN admitted INTEGER NOT NULL "
				  "DEFAULT 1", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(c->db, "UPDATE meta SET value = 6 WHERE key = 'schema'",
					  NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			err = index_sql_error(c->db, rc, "upgrade the schema to 6");
	}
	int64_t has_ahead = 0;
	if (!err && was >= 2 && was <= SCHEMA_VERSION)
		err = first_value(c, "SELECT count(*) FROM pragma_table_info('units') "
				  "WHERE name = 'ahead'", NULL, 0, &has_ahead);
	if (!err && was >= 2 && was <= SCHEMA_VERSION) {
		/* units.ahead needs no new schema: a tilefs without it reads
		   such a unit as on probation, and evicts it as one */
		rc = has_ahead ? SQLITE_OK :
		     sqlite3_exec(c->db, "ALTER TABLE units ADD COLUMN ahead INTEGER NOT NULL "
				  "DEFAULT 0", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(c->db, "DROP INDEX IF EXISTS units_eviction;"
					  "CREATE INDEX IF NOT EXISTS units_victims ON units(admitted, "
					  "hits > 1, last_access);"
					  "CREATE INDEX IF NOT EXISTS units_ahead ON units(last_access) "
					  "WHERE ahead;"
					  "CREATE INDEX IF NOT EXISTS units_probation ON "
					  "units(last_access) WHERE admitted = 0", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(c->db, probation_sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			err = index_sql_error(c->db, rc, "make the eviction indexes");
	}
	int64_t has_holder = 0;
	if (!err && was >= 2 && was <= SCHEMA_VERSION)
		err = first_value(c, "SELECT count(*) FROM pragma_table_info('claims') "
				  "WHERE name = 'holder'", NULL, 0, &has_holder);
	if (!err && was >= 2 && was <= SCHEMA_VERSION && !has_holder) {
		/* claims.holder needs no new schema either: a claim without one
		   (0) is held while its pid lives */
		int rc2 = sqlite3_exec(c->db, "ALTER TABLE claims ADD COLUMN holder INTEGER "
				       "NOT NULL DEFAULT 0", NULL, NULL, NULL);
		if (rc2 != SQLITE_OK)
			err = index_sql_error(c->db, rc2, "add claims.holder");
	}
	rc = sqlite3_exec(c->db, err ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	if (!err && rc != SQLITE_OK) {
		err = index_sql_error(c->db, rc, "commit the schema upgrade");
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (err)
		return err;
	if (was >= 2 && was < SCHEMA_VERSION)
		log_info("cache index %s upgraded from schema %lld to %d", ix->path,
			 (long long)was, SCHEMA_VERSION);
	*schema = was >= 2 && was < SCHEMA_VERSION ? SCHEMA_VERSION : was;
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
		int err = index_sql_error(c->db, rc, "set up");	/* before the rollback's */
		sqlite3_free(msg);
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return err;
	}

	/* a check that could not run (an I/O error) says nothing of the
	   database: only an answer other than "ok" is damage. A large one is
	   not checked: errors met later tell. */
	char answer[64] = "ok";
	struct stat st;
	int err = 0;
	if (stat(ix->path, &st) != 0 || st.st_size <= (64 << 20))
		err = first_value(c, "PRAGMA quick_check", answer, sizeof(answer), NULL);
	if (!err && strcmp(answer, "ok") != 0) {
		log_warn("cache index %s failed its integrity check", ix->path);
		return -EBADMSG;
	}
	if (!err)
		err = first_value(c, "SELECT value FROM meta WHERE key = 'instance'", ix->instance,
				  sizeof(ix->instance), NULL);
	if (err)
		return err;
	if (!instance_ok(ix->instance)) {
		/* it names the data directory: never a path of someone's choosing */
		log_warn("cache index %s has a malformed instance id", ix->path);
		return -EBADMSG;
	}
	int64_t schema = 0;
	err = first_value(c, "SELECT value FROM meta WHERE key = 'schema'", NULL, 0, &schema);
	if (err)
		return err;
	if (schema >= 2 && schema <= SCHEMA_VERSION) {
		err = migrate(ix, c, &schema);
		if (err)
			return err;
	}
	if (!err)
		err = first_value(c, "SELECT value FROM meta WHERE key = 'proof_salt'",
				  ix->proof_salt, sizeof(ix->proof_salt), NULL);
	if (err)
		return err;
	if (schema != SCHEMA_VERSION || !ix->instance[0]) {
		log_warn("cache index %s has schema %lld, this tilefs needs %d", ix->path,
			 (long long)schema, SCHEMA_VERSION);
		return -EBADMSG;
	}
	return 0;
}

/* Is ERR, met at the TRIES-th try of a step of index_open(), worth trying
 * again? An I/O error (a disk's passing fault) or a file SQLite could not
 * open (-EACCES, whatever the cause), up to OPEN_TRIES; a database found
 * damaged, twice more (a read that failed may look like damage), before
 * it is set aside. Not a busy database (-EAGAIN): SQLite waited for it
 * already, and a mount should say so rather than wait on. */
static bool try_again(int err, int tries)
{
	if (err == -EBADMSG)
		return tries < 3;
	return (err == -EIO || err == -EINTR || err == -EACCES) && tries < OPEN_TRIES;
}

/* Before try TRIES + 1 of a step of index_open(): a pause growing from 10
 * ms to 200 ms (OPEN_TRIES of them add up to under 4 s), logged the first
 * time. */
static void pause_before(int tries, const char *path, int err)
{
	if (tries == 1)
		log_warn("cache index %s: %s at open; trying again", path, strerror(-err));
	long ms = 10L * tries * tries;
	struct timespec t = { 0, (ms < 200 ? ms : 200) * 1000 * 1000 };
	nanosleep(&t, NULL);
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

/* The byte of index.lock that holder HOLDER locks: past the evictor's. */
static off_t holder_byte(int64_t holder)
{
	return (off_t)(1 + ((uint64_t)holder & ((1ull << 62) - 1)));
}

/* Become a claim holder: a token of our own (one no live holder has) and
 * its byte locked; and the description that asks for others' locks. */
static int holder_take(struct index *ix, int dir_fd)
{
	ix->probe_fd = openat(dir_fd, "index.lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (ix->probe_fd < 0)
		return -errno;
	for (int tries = 0; tries < 8; tries++) {
		uint64_t r;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return -EIO;
		ix->holder = (int64_t)(r >> 1) | 1;	/* positive, never 0 */
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				   .l_start = holder_byte(ix->holder), .l_len = 1 };
		if (fcntl(ix->lock_fd, F_OFD_SETLK, &l) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES)
			return -errno;
	}
	return -EBUSY;
}

bool index_holder_alive(struct index *ix, int64_t holder)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			   .l_start = holder_byte(holder), .l_len = 1 };
	if (fcntl(ix->probe_fd, F_OFD_GETLK, &l) != 0)
		return true;
	return l.l_type != F_UNLCK;
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
	ix->probe_fd = -1;
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
	err = holder_take(ix, dir_fd);
	if (err) {
		log_error("cannot lock a claim holder's byte of %s: %s", lock_path,
			  strerror(-err));
		goto fail;
	}

	for (int attempt = 0, tries = 0;; attempt++) {
		do {
			if (tries)
				pause_before(tries, ix->path, err);
			err = db_files_private(dir_fd, ix->path);
			if (!err)
				err = conn_open(ix, &ix->conns[0]);
			if (!err)
				err = setup(ix, &ix->conns[0]);
			if (err)
				conn_close(&ix->conns[0]);
		} while (err && try_again(err, ++tries));
		if (!err)
			break;
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
		int tries = 0;
		while ((err = conn_open(ix, &ix->conns[i])) != 0 && try_again(err, ++tries)) {
			conn_close(&ix->conns[i]);
			pause_before(tries, ix->path, err);
		}
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
	if (ix->probe_fd >= 0)
		close(ix->probe_fd);
	if (ix->lock_fd >= 0)
		close(ix->lock_fd);	/* releases the shared lock, and the holder's */
	pthread_mutex_destroy(&ix->lock);
	pthread_mutex_destroy(&ix->writing);
	pthread_cond_destroy(&ix->available);
	free(ix->path);
	free(ix);
}

/* The lock on index.lock's first byte (F_WRLCK) or its release (F_UNLCK). */
static int evictor_lock(struct index *ix, short type)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	if (!ix || ix->lock_fd < 0 || fcntl(ix->lock_fd, F_OFD_SETLK, &l) == 0)
		return 0;
	return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
}

int index_evictor_begin(struct index *ix)
{
	return evictor_lock(ix, F_WRLCK);
}

void index_evictor_end(struct index *ix)
{
	evictor_lock(ix, F_UNLCK);
}

const char *index_instance(struct index *ix)
{
	return ix->instance;
}
