/*
 * test_written.c - entries that let their buffers go (engine_int.h, E5):
 * units a read's GET brought with no reader waiting are written to their
 * data file by the fetch thread, and their buffers freed before the
 * persist thread records them. The test holds the index's write lock, so the persist
 * thread cannot record them while it looks:
 *
 *   - both entries are still in the table, ready, without a buffer;
 *   - a read of one is served from the data file: right bytes, no GET;
 *   - once a punch is counted in the cache dir, a read of the other does
 *     not trust the data file: it waits for the record (the lock's
 *     release), then reads the right bytes, from the cache.
 *
 * And units written as their bytes come (E6): a background run's entries
 * have no buffer while they are fetched, and the readers who join them
 * read the data file, with no other GET.
 *
 * Every wait is for an event, bounded by ORIGIN_WAIT_S.
 */
#include "cache/engine/cache.h"
#include "cache/engine/engine_int.h"	/* the table: entries and their buffers */
#include "cache/store/store.h"
#include "check.h"
#include "engine_fixture.h"
#include "origin_server.h"

#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>

struct reader {
	struct engine *e;
	struct cache_object *obj;
	struct extent unit;
	const char *want;
	atomic_bool done;
	bool right;
};

static void *read_unit(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(r->unit.len);
	ssize_t got = cache_read(r->e->cache, r->obj, 1, buf, r->unit.len, r->unit.off);
	r->right = got == (ssize_t)r->unit.len &&
		   memcmp(buf, r->want + r->unit.off, r->unit.len) == 0;
	free(buf);
	atomic_store(&r->done, true);
	return NULL;
}

/* Is UNIT of OBJ in the table, ready, its buffer let go? */
static bool let_go(struct cache *c, const struct cache_object *obj, struct extent unit)
{
	pthread_mutex_lock(&c->lock);
	struct inflight *e = table_find(c, obj->id, unit.off);
	bool gone = e && e->state == UNIT_READY && !e->buf;
	pthread_mutex_unlock(&c->lock);
	return gone;
}

/* Is UNIT of OBJ in the table with a buffer? */
static bool in_buffer(struct cache *c, const struct cache_object *obj, struct extent unit)
{
	pthread_mutex_lock(&c->lock);
	struct inflight *e = table_find(c, obj->id, unit.off);
	bool yes = e && e->buf;
	pthread_mutex_unlock(&c->lock);
	return yes;
}

/* Prefetch UNITS[0..2) of OBJ, as readahead does, with their GET held
 * at the origin until origin_release(), and drop the creator's refs.
 * DEMAND: the first is a reader's miss, as when readahead joins a read's
 * GET, so the GET is not a background one: its units go to buffers. */
static void prefetch_held(struct origin_server *s, struct cache *c, struct cache_object *obj,
			  const struct extent *units, bool demand)
{
	origin_hold(s, units[0].off);
	struct inflight *made[2];
	size_t n = prefetch_entries(c, obj, units, 2, false, made);
	CHECK(n == 2, "both units claimed and made entries (%zu)", n);
	if (n > 0)
		made[0]->prefetch = !demand;
	submit_runs(c, obj, made, n, FETCH_FOR_READER);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_unref(made[i]);
	pthread_mutex_unlock(&c->lock);
	CHECK(origin_wait_held(s), "their GET reached the origin");
}

/* Hold the write lock of DIR's index (in *DB), so the persist thread
 * cannot record units until ROLLBACK. */
static void lock_index(const char *dir, sqlite3 **db)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/index.db", dir);
	bool locked = sqlite3_open(path, db) == SQLITE_OK &&
		      sqlite3_exec(*db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
	CHECK(locked, "the test holds the index's write lock");
}

/* Serve PATH, LEN bytes of pattern SEED (copied to WANT), and open it in
 * a cache started in DIR (E: the caller stops it, whatever this returns);
 * NULL if the cache or the object does not open. */
static struct cache_object *serve_and_open(struct origin_server *s, const char *dir,
					   const char *path, int seed, const char *etag,
					   char *want, size_t len, struct engine *e)
{
	origin_pattern(want, len, seed);
	origin_put(s, path, len, seed, etag);
	if (engine_start(e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "the cache opens");
		return NULL;
	}
	struct cache_object *obj = engine_object(e, path);
	CHECK(obj != NULL, "the object opens");
	return obj;
}

static void test_written(struct origin_server *s, const char *dir)
{
	static char want[8 * BLOCK];
	struct engine e;
	sqlite3 *db = NULL;

	struct cache_object *obj = serve_and_open(s, dir, "/written.bin", 7, "\"w1\"", want,
						  sizeof(want), &e);
	if (!obj)
		goto out;
	struct cache *c = e.cache;
	struct extent units[2] = { unit_of(obj, 2 * BLOCK), unit_of(obj, 3 * BLOCK) };
	struct extent elsewhere = unit_of(obj, 6 * BLOCK);

	prefetch_held(s, c, obj, units, true);
	CHECK(in_buffer(c, obj, units[1]), "a read's GET: its units are fetched into buffers");
	/* the persist thread cannot record them from now on */
	lock_index(dir, &db);
	origin_release(s);
	bool gone = false;
	for (time_t end = deadline(); !gone && time(NULL) < end; pause_briefly())
		gone = let_go(c, obj, units[0]) && let_go(c, obj, units[1]);
	CHECK(gone, "both stored with no reader waiting: in the table, ready, buffers let go");

	size_t gets = origin_count(s, "GET", "/written.bin", UINT64_MAX);
	struct cache_stats before, after;
	cache_get_stats(c, &before);
	struct reader first = { &e, obj, units[0], want, false, false };
	read_unit(&first);
	cache_get_stats(c, &after);
	CHECK(first.right, "a read of one is served from the data file: right bytes");
	CHECK(origin_count(s, "GET", "/written.bin", UINT64_MAX) == gets,
	      "and no GET (%zu before, %zu after)", gets,
	      origin_count(s, "GET", "/written.bin", UINT64_MAX));
	CHECK(after.hits == before.hits + 1 && after.misses == before.misses,
	      "and it counts as a hit (hits %" PRIu64 " -> %" PRIu64 ", misses %" PRIu64
	      " -> %" PRIu64 ")", before.hits, after.hits, before.misses, after.misses);

	/* a punch elsewhere in the object: the data file is no longer trusted
	   unread against its row */
	CHECK(store_punch(c->store, obj->id, elsewhere.off, elsewhere.len) == 0,
	      "a punch elsewhere is made and counted");
	struct reader second = { &e, obj, units[1], want, false, false };
	pthread_t t;
	pthread_create(&t, NULL, read_unit, &second);
	for (int i = 0; i < 30 && !atomic_load(&second.done); i++)
		pause_briefly();
	CHECK(!atomic_load(&second.done),
	      "after a punch, a read of the other waits for its record (the lock held)");
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	pthread_join(t, NULL);
	CHECK(second.right, "once recorded, it reads the right bytes");
	cache_object_unref(obj);
out:
	sqlite3_close(db);
	engine_stop(&e);
}

/* UNIT of OBJ's entry, in the table, still fetching without a buffer
 * (written as its bytes come, E6), with READERS refs beside the table's
 * and the run's? */
static bool streaming(struct cache *c, const struct cache_object *obj, struct extent unit,
		      int readers)
{
	pthread_mutex_lock(&c->lock);
	struct inflight *e = table_find(c, obj->id, unit.off);
	bool yes = e && e->state == UNIT_FETCHING && !e->buf && e->refs == 2 + readers;
	pthread_mutex_unlock(&c->lock);
	return yes;
}

/* E6: a background run's units go to their data file as their bytes come,
 * with no buffer; readers who joined them meanwhile read the data file. */
static void test_streamed(struct origin_server *s, const char *dir)
{
	static char want[8 * BLOCK];
	struct engine e;
	sqlite3 *db = NULL;

	struct cache_object *obj = serve_and_open(s, dir, "/streamed.bin", 8, "\"s1\"", want,
						  sizeof(want), &e);
	if (!obj)
		goto out;
	struct cache *c = e.cache;
	struct extent units[2] = { unit_of(obj, 4 * BLOCK), unit_of(obj, 5 * BLOCK) };

	prefetch_held(s, c, obj, units, false);
	CHECK(streaming(c, obj, units[0], 0) && streaming(c, obj, units[1], 0),
	      "no reader waits: both fetched with no buffer, to their data file");

	/* the persist thread cannot record them: readers get the data file */
	lock_index(dir, &db);
	struct reader r[2] = { { &e, obj, units[0], want, false, false },
			       { &e, obj, units[1], want, false, false } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, read_unit, &r[i]);
	bool joined = false;
	for (time_t end = deadline(); !joined && time(NULL) < end; pause_briefly())
		joined = streaming(c, obj, units[0], 1) && streaming(c, obj, units[1], 1);
	CHECK(joined, "two readers joined them, still without a buffer");
	origin_release(s);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(r[0].right && r[1].right, "each reader got the right bytes, from the data file");
	CHECK(origin_count(s, "GET", "/streamed.bin", units[0].off) == 1 &&
	      origin_count(s, "GET", "/streamed.bin", units[1].off) == 0,
	      "with no other GET of them (%zu and %zu)",
	      origin_count(s, "GET", "/streamed.bin", units[0].off),
	      origin_count(s, "GET", "/streamed.bin", units[1].off));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	cache_object_unref(obj);
out:
	sqlite3_close(db);
	engine_stop(&e);
}

int main(void)
{
	char base[] = "/tmp/tilefs-written-XXXXXX", dir[256];
	struct origin_server s;

	signal(SIGPIPE, SIG_IGN);
	alarm(10 * ORIGIN_WAIT_S);	/* a hang is a failure, not a stuck suite */
	if (!mkdtemp(base) || origin_start(&s) != 0) {
		perror("test_written");
		return 1;
	}
	test_written(&s, cache_dir_in(base, "written", dir, sizeof(dir)));
	test_streamed(&s, cache_dir_in(base, "streamed", dir, sizeof(dir)));
	origin_stop(&s);
	remove_tree(base);
	return check_done();
}
