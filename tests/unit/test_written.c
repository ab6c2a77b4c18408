/*
 * test_written.c - entries that let their buffers go (engine_int.h, E5):
 * units prefetched with no reader waiting are written to their data file
 * by the fetch thread, and their buffers freed before the persist thread
 * records them. The test holds the index's write lock, so the persist
 * thread cannot record them while it looks:
 *
 *   - both entries are still in the table, ready, without a buffer;
 *   - a read of one is served from the data file: right bytes, no GET;
 *   - once a punch is counted in the cache dir, a read of the other does
 *     not trust the data file: it waits for the record (the lock's
 *     release), then reads the right bytes, from the cache.
 *
 * Every wait is for an event, bounded by ORIGIN_WAIT_S.
 */
#include "cache/engine/cache.h"
#include "cache/engine/engine_int.h"	/* the table: entries and their buffers */
#include "cache/store/store.h"
#include "check.h"
#include "engine_fixture.h"
#include "origin_server.h"

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

static void test_written(struct origin_server *s, const char *dir)
{
	static char want[8 * BLOCK];
	struct engine e;
	char path[300];
	sqlite3 *db = NULL;

	origin_pattern(want, sizeof(want), 7);
	origin_put(s, "/written.bin", sizeof(want), 7, "\"w1\"");
	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "the cache opens");
		return;
	}
	struct cache *c = e.cache;
	struct cache_object *obj = engine_object(&e, "/written.bin");
	CHECK(obj != NULL, "the object opens");
	if (!obj)
		goto out;
	struct extent units[2] = { unit_of(obj, 2 * BLOCK), unit_of(obj, 3 * BLOCK) };
	struct extent elsewhere = unit_of(obj, 6 * BLOCK);

	/* prefetch two units, as readahead does, and drop the creator's refs */
	origin_hold(s, units[0].off);
	struct inflight *made[2];
	size_t n = prefetch_entries(c, obj, units, 2, false, made);
	CHECK(n == 2, "both units claimed and made entries (%zu)", n);
	submit_runs(c, obj, made, n, FETCH_FOR_READER);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_unref(made[i]);
	pthread_mutex_unlock(&c->lock);
	CHECK(origin_wait_held(s), "their GET reached the origin");

	/* the persist thread cannot record them from now on */
	snprintf(path, sizeof(path), "%s/index.db", dir);
	bool locked = sqlite3_open(path, &db) == SQLITE_OK &&
		      sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
	CHECK(locked, "the test holds the index's write lock");
	origin_release(s);
	bool gone = false;
	for (time_t end = deadline(); !gone && time(NULL) < end; pause_briefly())
		gone = let_go(c, obj, units[0]) && let_go(c, obj, units[1]);
	CHECK(gone, "both stored with no reader waiting: in the table, ready, buffers let go");

	size_t gets = origin_count(s, "GET", "/written.bin", UINT64_MAX);
	struct reader first = { &e, obj, units[0], want, false, false };
	read_unit(&first);
	CHECK(first.right, "a read of one is served from the data file: right bytes");
	CHECK(origin_count(s, "GET", "/written.bin", UINT64_MAX) == gets,
	      "and no GET (%zu before, %zu after)", gets,
	      origin_count(s, "GET", "/written.bin", UINT64_MAX));

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
	origin_stop(&s);
	remove_tree(base);
	return check_done();
}
