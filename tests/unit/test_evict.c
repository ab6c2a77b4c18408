/* test_evict.c - the eviction policy: its pure decisions (evict.h), and the
 * index applying them: admission into a full cache or probation, the
 * victim order, ghosts that give an evicted unit its count back, warm's
 * admission, and a schema 5 cache upgraded in place. */
#include "cache/store/evict.h"
#include "cache/store/index.h"
#include "check.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define UNIT 1000
#define LIMIT (20 * UNIT)	/* evict_target(): 19 units */

static void decisions(void)
{
	int64_t now = 100000;
	struct evict_count v1 = { 1, now - 5 }, v3 = { 3, now - 5 };
	struct evict_count g1 = { 1, now - 5 }, g2 = { 2, now - 5 }, g3 = { 3, now - 5 };
	struct evict_count old = { 1, now - 100 };

	CHECK(evict_target(LIMIT) == 19 * UNIT, "eviction brings a cache down to 95%%");
	CHECK(evict_hits_fetched(NULL, now) == 1, "a unit never seen counts 1");
	CHECK(evict_hits_fetched(&g2, now) == 2, "a ghost read again within the gap keeps its count");
	CHECK(evict_hits_fetched(&old, now) == 2, "a ghost read again after the gap counts one more");
	CHECK(evict_admit(NULL, NULL, now), "nothing to displace: admitted");
	CHECK(!evict_admit(NULL, &v1, now), "never seen, into a full cache: probation (a scan)");
	CHECK(!evict_admit(&g1, &v1, now), "a tie keeps the resident (epochs beyond the cache)");
	CHECK(!evict_admit(&g2, &v1, now),
	      "one more than the victim's is not admitted (an epoch about the gap long)");
	CHECK(evict_admit(&g3, &v1, now), "two more is admitted");
	CHECK(!evict_admit(&g2, &v3, now), "one below is not");
	struct evict_count idle = { 3, now - 100 }, reused = { 1, now - 20 };
	CHECK(evict_admit(&reused, &idle, now),
	      "a victim idle 5 times the candidate's reuse interval gives way (a set that moved on)");
	struct evict_count busy = { 3, now - 60 };
	CHECK(!evict_admit(&reused, &busy, now), "one idle 3 times as long does not");
}

/* Run SQL on DIR's index.db; 0 if it ran. */
static int sql(const char *dir, const char *q)
{
	char path[512];
	sqlite3 *db;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	sqlite3_busy_timeout(db, 5000);
	int rc = sqlite3_exec(db, q, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

/* The first integer SQL gives on DIR's index.db, or -1. */
static long long value(const char *dir, const char *q)
{
	char path[512];
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v = -1;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return v;
}

/* Claim the units V[0..n) of object ID, as their fetch would; 0 or the
 * first error. */
static int claim(struct index *ix, int64_t id, const struct index_unit_new *v, size_t n)
{
	pid_t holder;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++)
		err = index_claim(ix, id, v[i].off, &holder);
	return err;
}

/* Claim and add the unit at OFF (UNIT bytes) to object ID under
 * admission; 0 or the error. */
static int put(struct index *ix, int64_t id, uint64_t off)
{
	struct index_unit_new v = { .off = off, .len = UNIT, .crc = 7 };
	int err = claim(ix, id, &v, 1);
	if (!err)
		err = index_units_admit(ix, id, &v, 1, LIMIT);
	return err ? err : v.err;
}

/* Is the unit at OFF of ID admitted (1), on probation (0), absent (-2)? */
static long long admitted(const char *dir, int64_t id, uint64_t off)
{
	char q[200];
	snprintf(q, sizeof(q), "SELECT coalesce((SELECT admitted FROM units "
		 "WHERE object_id = %lld AND off = %llu), -2)",
		 (long long)id, (unsigned long long)off);
	return value(dir, q);
}

/* Is the unit at OFF of ID kept for its readers (1), or not (0)? */
static long long kept_for_readers(const char *dir, int64_t id, uint64_t off)
{
	char q[200];
	snprintf(q, sizeof(q), "SELECT ahead FROM units WHERE object_id = %lld AND off = %llu",
		 (long long)id, (unsigned long long)off);
	return value(dir, q);
}

static void evict_one(struct index *ix, int64_t id, uint64_t off)
{
	struct index_unit u;
	if (index_unit_find(ix, id, off, &u) == 0 && index_unit_evict(ix, &u) == 0)
		index_unclaim(ix, id, off);
}

/* An index in a new temp dir DIR (a mkdtemp() template), with object O. */
static struct index *index_with_object(char *dir, struct index_object *o)
{
	struct index *ix = NULL;
	bool rebuilt, created;
	*o = (struct index_object){ .size = 1 << 30, .block_size = 4096, .version = "\"v\"" };
	CHECK(mkdtemp(dir) != NULL, "temp dir");
	CHECK(index_open(dir, &ix, &rebuilt) == 0, "open");
	CHECK(index_object_add(ix, "http://h/a", o, NULL, 0, NULL, &created) == 0, "an object");
	return ix;
}

/* Close IX and remove its DIR. */
static void index_gone(struct index *ix, const char *dir)
{
	index_close(ix);
	CHECK(check_rm_tree(dir) == 0, "cleanup");
}

static void in_the_index(void)
{
	char dir[] = "/tmp/tilefs-test-evict-XXXXXX";
	struct index_object o;
	struct index *ix = index_with_object(dir, &o);
	uint64_t usage;

	/* fill to the target: every unit admitted */
	int ok = 0;
	for (uint64_t i = 0; i < 19; i++)
		ok += put(ix, o.id, i * UNIT) == 0 && admitted(dir, o.id, i * UNIT) == 1;
	CHECK(ok == 19, "a cache with room admits every unit (%d of 19)", ok);
	CHECK(put(ix, o.id, 19 * UNIT) == 0 && admitted(dir, o.id, 19 * UNIT) == 0,
	      "past the target, a unit never seen goes on probation");
	CHECK(put(ix, o.id, 20 * UNIT) == 0 && admitted(dir, o.id, 20 * UNIT) == 0,
	      "so does the next");
	struct index_unit victims[4];
	size_t n = 0;
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 4, &n) == 0 && n == 4 &&
	      victims[0].off == 19 * UNIT && victims[1].off == 20 * UNIT &&
	      victims[2].off == 0 && victims[3].off == UNIT,
	      "probation goes first, then admitted units, least recently read first");
	CHECK(victims[0].probation && victims[1].probation && !victims[2].probation &&
	      !victims[3].probation, "and the candidates say which are on probation");

	/* an evicted unit leaves a ghost that brings its count back */
	evict_one(ix, o.id, 19 * UNIT);
	CHECK(value(dir, "SELECT count(*) FROM ghosts") == 1 &&
	      value(dir, "SELECT value FROM meta WHERE key = 'ghost_bytes'") == UNIT,
	      "eviction leaves a ghost, counted in ghost_bytes");
	CHECK(put(ix, o.id, 19 * UNIT) == 0 && admitted(dir, o.id, 19 * UNIT) == 0 &&
	      value(dir, "SELECT count(*) FROM ghosts") == 0,
	      "fetched again with the count of the victim (a tie): probation; its ghost goes");
	evict_one(ix, o.id, 19 * UNIT);
	CHECK(sql(dir, "UPDATE ghosts SET hits = 2, last_access = last_access - 100") == 0 &&
	      put(ix, o.id, 19 * UNIT) == 0 && admitted(dir, o.id, 19 * UNIT) == 0,
	      "a ghost counting one more than the victim: probation still");
	evict_one(ix, o.id, 19 * UNIT);
	CHECK(sql(dir, "UPDATE ghosts SET hits = 3, last_access = last_access - 100") == 0 &&
	      put(ix, o.id, 19 * UNIT) == 0 && admitted(dir, o.id, 19 * UNIT) == 1,
	      "a ghost counting two more than the victim's is admitted");
	CHECK(value(dir, "SELECT hits FROM units WHERE off = 19000") == 4,
	      "with its count, plus this read (after the gap)");

	/* a victim idle far longer than the candidate's reuse interval */
	evict_one(ix, o.id, 20 * UNIT);
	CHECK(sql(dir, "UPDATE units SET last_access = last_access - 1000 WHERE admitted = 1;"
		       "UPDATE ghosts SET last_access = last_access - 30") == 0 &&
	      put(ix, o.id, 20 * UNIT) == 0 && admitted(dir, o.id, 20 * UNIT) == 1,
	      "a working set that moved on gives way");

	/* warm keeps what it is asked for */
	CHECK(put(ix, o.id, 30 * UNIT) == 0 && admitted(dir, o.id, 30 * UNIT) == 0,
	      "another unit on probation");
	struct index_unit listed;	/* as an evictor read it, before the keep */
	CHECK(index_unit_find(ix, o.id, 30 * UNIT, &listed) == 0 && listed.probation,
	      "read on probation");
	uint64_t offs[3] = { 30 * UNIT, 31 * UNIT, 30 * UNIT };
	bool kept[3] = { false, true, true };
	CHECK(index_units_keep(ix, o.id, offs, 3, kept) == 0 && admitted(dir, o.id, 30 * UNIT) == 1,
	      "index_units_keep() admits it (an absent unit is no error)");
	CHECK(index_unit_evict(ix, &listed) == -ENOENT && admitted(dir, o.id, 30 * UNIT) == 1,
	      "an evictor that read it on probation before leaves it");
	CHECK(kept[0] && !kept[1] && !kept[2],
	      "it says which it admitted: not an absent one, nor one admitted already");
	struct index_unit_new w = { .off = 32 * UNIT, .len = UNIT, .crc = 7 };
	CHECK(claim(ix, o.id, &w, 1) == 0 && index_units_add(ix, o.id, &w, 1) == 0 && w.err == 0 &&
	      admitted(dir, o.id, 32 * UNIT) == 1, "index_units_add() admits, full or not");

	/* ghosts are bounded: at most EVICT_GHOST_RATIO bytes per byte cached */
	for (uint64_t i = 0; i < 19; i++)
		evict_one(ix, o.id, i * UNIT);
	CHECK(index_usage(ix, &usage) == 0 &&
	      value(dir, "SELECT value FROM meta WHERE key = 'ghost_bytes'") <=
	      (long long)(EVICT_GHOST_RATIO * usage + 4 * UNIT) &&
	      value(dir, "SELECT value FROM meta WHERE key = 'ghost_bytes'") ==
	      value(dir, "SELECT sum(len) FROM ghosts"),
	      "ghosts trimmed to %d bytes per byte of usage (%llu): %lld", EVICT_GHOST_RATIO,
	      (unsigned long long)usage, value(dir, "SELECT sum(len) FROM ghosts"));
	CHECK(index_object_drop(ix, o.id) == 0 && value(dir, "SELECT count(*) FROM ghosts") == 0 &&
	      value(dir, "SELECT value FROM meta WHERE key = 'ghost_bytes'") == 0,
	      "dropping the object drops its ghosts");
	index_gone(ix, dir);
}

/* What a hint fetched into a full cache is kept for its readers: passed
 * over by eviction until read (then on probation) or EVICT_AHEAD_S old. */
static void kept_ahead(void)
{
	char dir[] = "/tmp/tilefs-test-ahead-XXXXXX";
	struct index_object o;
	struct index *ix = index_with_object(dir, &o);
	uint64_t kept = 1;
	for (uint64_t i = 0; i < 19; i++)
		put(ix, o.id, i * UNIT);
	CHECK(index_ahead_bytes(ix, 0, &kept) == 0 && kept == 0, "nothing kept ahead yet");

	struct index_unit_new v[2] = { { .off = 40 * UNIT, .len = UNIT, .crc = 7, .ahead = true },
				       { .off = 41 * UNIT, .len = UNIT, .crc = 7, .ahead = true } };
	CHECK(claim(ix, o.id, v, 2) == 0 && index_units_admit(ix, o.id, v, 2, LIMIT) == 0 &&
	      !v[0].err && !v[1].err &&
	      admitted(dir, o.id, 40 * UNIT) == 0 && admitted(dir, o.id, 41 * UNIT) == 0 &&
	      value(dir, "SELECT count(*) FROM units WHERE ahead") == 2,
	      "fetched ahead into a full cache: on probation, kept for its readers");
	struct index_unit u;
	CHECK(index_unit_find(ix, o.id, 40 * UNIT, &u) == 0 && u.probation &&
	      kept_for_readers(dir, o.id, 40 * UNIT) == 1, "and found so");
	CHECK(index_ahead_bytes(ix, 0, &kept) == 0 && kept == 2 * UNIT, "counted (%llu)",
	      (unsigned long long)kept);
	struct index_unit victims[32];
	size_t n = 0;
	CHECK(index_ahead_bytes(ix, 5, &kept) == 0 && kept == 0,
	      "none of them waited 5 s for its readers");
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 32, &n) == 0 && n == 19,
	      "eviction passes over them (%zu candidates)", n);

	CHECK(index_units_touch(ix, &u.id, 1) == 0 && admitted(dir, o.id, 40 * UNIT) == 0 &&
	      index_ahead_bytes(ix, 0, &kept) == 0 && kept == UNIT, "read: on probation only");
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 32, &n) == 0 && n == 20 &&
	      victims[0].off == 40 * UNIT && kept_for_readers(dir, o.id, 40 * UNIT) == 0,
	      "and the first to go");

	CHECK(sql(dir, "UPDATE units SET last_access = last_access - 10 WHERE ahead") == 0 &&
	      index_ahead_bytes(ix, 5, &kept) == 0 && kept == UNIT,
	      "one unread for 10 s has waited 5 s");
	CHECK(sql(dir, "UPDATE units SET last_access = last_access - 51 WHERE ahead") == 0 &&
	      index_ahead_bytes(ix, 0, &kept) == 0 && kept == 0,
	      "one unread for EVICT_AHEAD_S is no longer kept");
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 32, &n) == 0 && n == 21 &&
	      victims[0].off == 41 * UNIT && kept_for_readers(dir, o.id, 41 * UNIT) == 1,
	      "and goes first (its readers skipped it)");
	uint64_t off = 41 * UNIT;
	bool was[1];
	CHECK(index_units_keep(ix, o.id, &off, 1, was) == 0 && was[0] &&
	      admitted(dir, o.id, 41 * UNIT) == 1 &&
	      value(dir, "SELECT count(*) FROM units WHERE ahead") == 0,
	      "a warm keeps a unit fetched ahead, as any on probation");
	index_gone(ix, dir);
}

/* A cache written by a tilefs of schema 5 opens, keeps its units (all
 * admitted), and gets the eviction index of schema 6. */
static void upgrade(void)
{
	char dir[] = "/tmp/tilefs-test-evict5-XXXXXX";
	struct index *ix;
	bool rebuilt = true;

	CHECK(mkdtemp(dir) != NULL && chmod(dir, 0700) == 0, "temp dir");
	CHECK(sql(dir, "PRAGMA journal_mode=WAL;"
		       "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
		       "CREATE TABLE objects(id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL,"
		       "  version TEXT NOT NULL, size INTEGER NOT NULL, block_size INTEGER NOT NULL,"
		       "  added INTEGER NOT NULL, UNIQUE(url, version, size));"
		       "CREATE TABLE units(id INTEGER PRIMARY KEY AUTOINCREMENT,"
		       "  object_id INTEGER NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL,"
		       "  crc INTEGER NOT NULL, last_access INTEGER NOT NULL, hits INTEGER NOT NULL,"
		       "  UNIQUE(object_id, off));"
		       "CREATE INDEX units_eviction ON units(hits > 1, last_access);"
		       "CREATE TRIGGER units_added AFTER INSERT ON units BEGIN"
		       "  UPDATE meta SET value = value + NEW.len WHERE key = 'usage'; END;"
		       "INSERT INTO meta VALUES ('schema', 5), ('usage', 0),"
		       "  ('instance', '0123456789abcdef'),"
		       "  ('proof_salt', '0123456789abcdef0123456789abcdef');"
		       "INSERT INTO objects VALUES (1, 'http://h/old', '\"e\"', 10000, 4096, 1);"
		       "INSERT INTO units(object_id, off, len, crc, last_access, hits)"
		       "  VALUES (1, 0, 4096, 5, 1, 3), (1, 4096, 4096, 6, 2, 1);") == 0,
	      "a schema 5 cache");
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && !rebuilt, "opens without a rebuild");
	CHECK(value(dir, "SELECT value FROM meta WHERE key = 'schema'") == 6, "now schema 6");
	struct index_unit u;
	CHECK(index_unit_find(ix, 1, 4096, &u) == 0 && u.len == 4096 && u.crc == 6,
	      "its units are kept");
	CHECK(value(dir, "SELECT count(*) FROM units WHERE admitted = 1") == 2, "all admitted");
	CHECK(value(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'units_victims'") == 1 &&
	      value(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'units_eviction'") == 0,
	      "the eviction index replaced");
	CHECK(value(dir, "SELECT count(*) FROM units WHERE ahead = 0") == 2 &&
	      value(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'units_ahead'") == 1,
	      "units.ahead added (none kept ahead), with its index");
	struct index_unit victims[2];
	size_t n = 0;
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 2, &n) == 0 && n == 2 &&
	      victims[0].off == 4096, "read once goes first, as before");
	CHECK(value(dir, "SELECT value FROM meta WHERE key = 'probation'") == 0 &&
	      value(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'units_probation'") == 1,
	      "none on probation, counted, with the index of its order");
	index_close(ix);
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && !rebuilt &&
	      value(dir, "SELECT count(*) FROM units") == 2, "and opens again as it is");
	index_gone(ix, dir);
}

/* meta.probation against the units on probation: equal? */
static bool probation_counted(const char *dir, struct index *ix)
{
	uint64_t usage, probation;
	long long sum = value(dir, "SELECT coalesce(sum(len), 0) FROM units WHERE admitted = 0");
	return index_usage_parts(ix, &usage, &probation) == 0 && (long long)probation == sum &&
	       value(dir, "SELECT value FROM meta WHERE key = 'probation'") == sum;
}

/* Probation leaves in the order its units came, whatever their counts,
 * and the index counts its bytes (meta.probation) through every change. */
static void probation_order(void)
{
	char dir[] = "/tmp/tilefs-test-evict-XXXXXX";
	struct index_object o;
	struct index *ix = index_with_object(dir, &o);
	bool rebuilt;

	for (uint64_t i = 0; i < 19; i++)
		put(ix, o.id, i * UNIT);
	CHECK(probation_counted(dir, ix) &&
	      value(dir, "SELECT value FROM meta WHERE key = 'probation'") == 0,
	      "a cache with room: nothing on probation, none counted");
	/* an older unit on probation counting two, then a new one counting one */
	CHECK(put(ix, o.id, 19 * UNIT) == 0 && put(ix, o.id, 20 * UNIT) == 0 &&
	      sql(dir, "UPDATE units SET hits = 2, last_access = last_access - 1 "
		       "WHERE off = 19000") == 0 &&
	      admitted(dir, o.id, 19 * UNIT) == 0 && admitted(dir, o.id, 20 * UNIT) == 0,
	      "two units on probation, the older read twice");
	CHECK(probation_counted(dir, ix) &&
	      value(dir, "SELECT value FROM meta WHERE key = 'probation'") == 2 * UNIT,
	      "their bytes counted");
	struct index_unit victims[3];
	size_t n = 0;
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 3, &n) == 0 && n == 3 &&
	      victims[0].off == 19 * UNIT && victims[1].off == 20 * UNIT && !victims[2].probation,
	      "the older goes first, its count notwithstanding: the new one's reader may be at it");
	CHECK(sql(dir, "UPDATE units SET last_access = last_access + 1 WHERE off = 19000") == 0 &&
	      index_eviction_candidates(ix, false, NULL, 0, victims, 3, &n) == 0 && n == 3 &&
	      victims[0].off == 19 * UNIT && victims[1].off == 20 * UNIT,
	      "within one second too: the one that came first goes first");
	CHECK(index_eviction_candidates(ix, true, NULL, 0, victims, 3, &n) == 0 && n == 3 &&
	      !victims[0].probation && !victims[1].probation && !victims[2].probation,
	      "asked for admitted units only, none on probation");

	/* admitted since (ST_UNIT_ADMIT: a warm), evicted, dropped whole */
	uint64_t off = 20 * UNIT;
	CHECK(index_units_keep(ix, o.id, &off, 1, NULL) == 0 && admitted(dir, o.id, off) == 1 &&
	      probation_counted(dir, ix), "a unit admitted since leaves the count");
	evict_one(ix, o.id, 19 * UNIT);
	CHECK(admitted(dir, o.id, 19 * UNIT) == -2 && probation_counted(dir, ix) &&
	      value(dir, "SELECT value FROM meta WHERE key = 'probation'") == 0,
	      "an evicted one too");
	CHECK(put(ix, o.id, 21 * UNIT) == 0 && admitted(dir, o.id, 21 * UNIT) == 0 &&
	      probation_counted(dir, ix), "a new one on probation counts");

	/* a cache whose count was lost (written by a tilefs before it, or
	   by hand) is counted again at open */
	index_close(ix);
	CHECK(sql(dir, "DROP TRIGGER units_probation_added;"
		       "UPDATE meta SET value = 12345 WHERE key = 'probation'") == 0,
	      "the count and a trigger gone");
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && !rebuilt && probation_counted(dir, ix) &&
	      value(dir, "SELECT value FROM meta WHERE key = 'probation'") == UNIT,
	      "counted again at open, with its trigger");
	CHECK(put(ix, o.id, 22 * UNIT) == 0 && probation_counted(dir, ix),
	      "and kept after");
	index_gone(ix, dir);
}

int main(void)
{
	decisions();
	in_the_index();
	kept_ahead();
	probation_order();
	upgrade();
	return check_done();
}
