/*
 * test_engine.c - the engine (cache.h) without FUSE: a cache dir of its
 * own, the HTTP client, and a scripted origin on 127.0.0.1
 * (origin_server.h). Each case asserts what the origin saw (requests, the
 * ranges asked for, If-Match) and the bytes read:
 *
 *   single flight   threads reading one missing unit at once: one GET
 *   starting        processes opening a new cache dir at once: all do
 *   claims          two processes on one cache dir, one unit at once: one
 *                   GET between them, both read the right bytes
 *   stale           the object changes on the origin: a read answers
 *                   -ESTALE, never the new bytes under the old version
 *   full disk       the cache dir on a small tmpfs: every read right, and
 *                   every byte served from the cache later right too
 *   pinned          eviction while an object is pinned: its bytes stay,
 *                   the cache comes back within its size
 *
 * Every wait is for an event, bounded by ORIGIN_WAIT_S.
 */
#include "cache/engine/cache.h"
#include "cache/engine/engine_int.h"	/* obj->cut: test_cut_at_first_read() */
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "check.h"
#include "engine_fixture.h"
#include "origin_server.h"

#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* ---- single flight ---------------------------------------------------- */

struct reader {
	struct engine *e;
	struct cache_object *obj;
	struct extent unit;
	const char *want;
	atomic_int *started;
	ssize_t got;
	bool right;
};

static void *read_unit(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(r->unit.len);
	atomic_fetch_add(r->started, 1);
	r->got = cache_read(r->e->cache, r->obj, (uint64_t)(uintptr_t)r, buf, r->unit.len,
			    r->unit.off);
	r->right = r->got == (ssize_t)r->unit.len &&
		   memcmp(buf, r->want + r->unit.off, r->unit.len) == 0;
	free(buf);
	return NULL;
}

static void test_single_flight(struct origin_server *s, const char *dir)
{
	static char want[1u << 20];
	struct engine e;
	origin_pattern(want, sizeof(want), 1);
	origin_put(s, "/flight.bin", sizeof(want), 1, "\"f1\"");
	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "single flight: the cache opens");
		return;
	}
	struct cache_object *obj = engine_object(&e, "/flight.bin");
	CHECK(obj != NULL, "single flight: the object opens");
	if (!obj)
		goto out;
	struct extent unit = unit_of(obj, 300000);
	CHECK(unit.len == BLOCK && unit.off % BLOCK == 0, "its unit at 300000 is a block (%llu at %llu)",
	      (unsigned long long)unit.len, (unsigned long long)unit.off);

	/* the unit's GET waits at the origin until every reader has started */
	origin_hold(s, unit.off);
	atomic_int started = 0;
	struct reader r[READERS];
	pthread_t t[READERS];
	for (int i = 0; i < READERS; i++) {
		r[i] = (struct reader){ &e, obj, unit, want, &started, 0, false };
		pthread_create(&t[i], NULL, read_unit, &r[i]);
	}
	bool held = origin_wait_held(s);
	for (time_t end = deadline(); atomic_load(&started) < READERS && time(NULL) < end;)
		pause_briefly();
	origin_release(s);
	int right = 0;
	for (int i = 0; i < READERS; i++) {
		pthread_join(t[i], NULL);
		right += r[i].right;
	}
	CHECK(held, "the unit's GET reached the origin while %d readers started", READERS);
	CHECK(right == READERS, "all %d readers got the unit's bytes (%d did)", READERS, right);
	size_t gets = origin_count(s, "GET", "/flight.bin", unit.off);
	CHECK(gets == 1, "one GET of the unit between them (%zu)", gets);

	/* read again: from the cache (or the entry still in hand), no request */
	size_t before = origin_count(s, "GET", "/flight.bin", UINT64_MAX);
	r[0].right = false;
	read_unit(&r[0]);
	CHECK(r[0].right && origin_count(s, "GET", "/flight.bin", UINT64_MAX) == before,
	      "read again: right bytes, no request");
	cache_object_unref(obj);
out:
	engine_stop(&e);
}

/* ---- processes starting together on a new cache dir ------------------ */

#define STARTERS 6
#define START_ROUNDS 40

/* Open the cache in DIR when GO says, and in it /start.bin; exit 0 if
 * both open. */
static void start_child(struct origin_server *s, const char *dir, int go)
{
	struct engine e;
	struct cache_object *obj = NULL;
	char c;
	alarm(4 * ORIGIN_WAIT_S);
	if (read(go, &c, 1) != 1)
		_exit(2);
	int rc = engine_start(&e, s, dir, 64u << 20, 5);
	if (rc)
		printf("# process %d: cannot open the cache: %s\n", (int)getpid(), strerror(-rc));
	else if (!(obj = engine_object(&e, "/start.bin")))
		rc = -EIO;
	fflush(stdout);
	if (obj)
		cache_object_unref(obj);
	engine_stop(&e);
	_exit(rc ? 1 : 0);
}

/* Mounts and warms started at once (a boot, a batch of jobs) on a cache
 * dir none of them has used: every one of them opens it. */
static void test_start_together(struct origin_server *s, const char *base)
{
	int opened = 0;
	if (check_skip_forks("processes at once on a new cache dir"))
		return;
	origin_put(s, "/start.bin", 100000, 8, "\"s1\"");
	for (int round = 0; round < START_ROUNDS; round++) {
		char dir[300];
		snprintf(dir, sizeof(dir), "%s/start-%d", base, round);
		mkdir(dir, 0700);
		int go[2];
		pid_t child[STARTERS];
		if (pipe(go) != 0)
			break;
		fflush(stdout);
		for (int i = 0; i < STARTERS; i++) {
			child[i] = fork();
			if (child[i] == 0) {
				close(go[1]);
				start_child(s, dir, go[0]);
			}
		}
		close(go[0]);
		for (int i = 0; i < STARTERS; i++)
			if (write(go[1], "g", 1) != 1)
				perror("go");
		close(go[1]);
		for (int i = 0; i < STARTERS; i++) {
			int status = -1;
			waitpid(child[i], &status, 0);
			opened += WIFEXITED(status) && WEXITSTATUS(status) == 0;
		}
	}
	CHECK(opened == STARTERS * START_ROUNDS,
	      "%d processes at once on a new cache dir, %d times: all opened it (%d of %d)",
	      STARTERS, START_ROUNDS, opened, STARTERS * START_ROUNDS);
}

/* ---- claims across two processes ------------------------------------ */

/* A process of its own on DIR: open /claims.bin when GO says, say 'r' on
 * READY, read its unit at OFF. Exit 0 with the right bytes, else 1. */
static void claims_child(struct origin_server *s, const char *dir, int go, int ready,
			 const char *want, uint64_t off)
{
	struct engine e;
	char c;
	alarm(4 * ORIGIN_WAIT_S);	/* a hung child fails its test, not the suite */
	if (read(go, &c, 1) != 1)
		_exit(2);
	int rc = engine_start(&e, s, dir, 64u << 20, 5);
	if (rc != 0) {
		printf("# process %d: cannot open the cache: %s\n", (int)getpid(), strerror(-rc));
		fflush(stdout);
		_exit(2);
	}
	struct cache_object *obj = engine_object(&e, "/claims.bin");
	if (!obj)
		_exit(3);
	struct extent unit = unit_of(obj, off);
	char *buf = malloc(unit.len);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	ssize_t got = cache_read(e.cache, obj, 1, buf, unit.len, unit.off);
	bool right = got == (ssize_t)unit.len && memcmp(buf, want + unit.off, unit.len) == 0;
	free(buf);
	cache_object_unref(obj);
	engine_stop(&e);
	_exit(right ? 0 : 1);
}

static void test_claims(struct origin_server *s, const char *dir)
{
	static char want[1u << 20];
	const uint64_t off = 500000;
	if (check_skip_forks("claims across two processes"))
		return;
	origin_pattern(want, sizeof(want), 2);
	origin_put(s, "/claims.bin", sizeof(want), 2, "\"c1\"");
	uint64_t unit_off = off - off % BLOCK;	/* plain bytes: blocks past the header */
	origin_hold(s, unit_off);

	int go[2], ready[2];
	pid_t child[2];
	if (pipe(go) != 0 || pipe(ready) != 0) {
		CHECK(0, "claims: pipes");
		return;
	}
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		child[i] = fork();
		if (child[i] == 0) {
			close(go[1]);
			close(ready[0]);
			claims_child(s, dir, go[0], ready[1], want, off);
		}
	}
	close(go[0]);
	close(ready[1]);
	/* both open at once, then both read the unit while its GET waits */
	if (write(go[1], "gg", 2) != 2)
		perror("go");
	close(go[1]);
	int readers = 0;
	char c;
	struct pollfd p = { ready[0], POLLIN, 0 };
	for (time_t end = deadline(); readers < 2 && time(NULL) < end;)
		if (poll(&p, 1, 1000) == 1 && read(ready[0], &c, 1) == 1)
			readers++;
	close(ready[0]);
	bool held = origin_wait_held(s);
	origin_release(s);
	int status[2] = { -1, -1 };
	for (int i = 0; i < 2; i++)
		waitpid(child[i], &status[i], 0);
	CHECK(readers == 2 && held, "two processes read the unit while its GET waited (%d, %d)",
	      readers, held);
	for (int i = 0; i < 2; i++)
		CHECK(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0,
		      "process %d read the right bytes (status %#x)", i + 1, status[i]);
	size_t gets = origin_count(s, "GET", "/claims.bin", unit_off);
	CHECK(gets == 1, "one GET of the unit between the two processes (%zu)", gets);
	size_t heads = origin_count(s, "GET", "/claims.bin", 0);
	CHECK(heads == 1, "one GET of the object's first bytes between them (%zu)", heads);
}

/* ---- an object changed on the origin --------------------------------- */

static void test_stale(struct origin_server *s, const char *dir, bool ignore_if_match)
{
	static char old[1u << 20], new[1u << 20];
	const char *path = ignore_if_match ? "/changed-anyway.bin" : "/changed.bin";
	const char *how = ignore_if_match ? "an origin that ignores If-Match" : "If-Match";
	struct engine e;
	origin_pattern(old, sizeof(old), 3);
	origin_pattern(new, sizeof(new), 4);
	origin_put(s, path, sizeof(old), 3, "\"v1\"");
	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "stale: the cache opens");
		return;
	}
	struct cache_object *obj = engine_object(&e, path);
	CHECK(obj != NULL, "stale (%s): the object opens", how);
	if (!obj)
		goto out;
	static char buf[BLOCK];
	ssize_t got = cache_read(e.cache, obj, 1, buf, BLOCK, 2 * BLOCK);
	CHECK(got == BLOCK && memcmp(buf, old + 2 * BLOCK, BLOCK) == 0, "a unit read before the change");

	origin_put(s, path, sizeof(new), 4, "\"v2\"");
	origin_set(s, &s->ignore_if_match, ignore_if_match);
	memset(buf, 0, sizeof(buf));
	got = cache_read(e.cache, obj, 1, buf, BLOCK, 5 * BLOCK);
	origin_set(s, &s->ignore_if_match, false);
	struct origin_request last;
	bool asked = origin_last(s, path, &last);
	CHECK(got == -ESTALE, "a unit missed after the change: -ESTALE (%zd)", got);
	CHECK(memcmp(buf, new + 5 * BLOCK, BLOCK) != 0, "and never the new bytes");
	CHECK(asked && last.ranged && last.first == 5 * BLOCK && strcmp(last.if_match, "\"v1\"") == 0 &&
	      last.status == (ignore_if_match ? 206 : 412),
	      "its GET carried If-Match: \"v1\" and was answered %d", last.status);
	CHECK(cache_object_stale(obj), "the object is marked stale");
	got = cache_read(e.cache, obj, 1, buf, BLOCK, 2 * BLOCK);
	CHECK(got == -ESTALE || (got == BLOCK && memcmp(buf, old + 2 * BLOCK, BLOCK) == 0),
	      "the unit cached before: its old version's bytes or -ESTALE (%zd)", got);
	cache_object_unref(obj);

	/* the old version back on the origin: if the bytes answered for
	   If-Match "v1" had been kept as v1's, they would be read now */
	origin_put(s, path, sizeof(old), 3, "\"v1\"");
	obj = engine_object(&e, path);
	size_t before = origin_count(s, "GET", path, 5 * BLOCK);
	got = obj ? cache_read(e.cache, obj, 1, buf, BLOCK, 5 * BLOCK) : -1;
	CHECK(got == BLOCK && memcmp(buf, old + 5 * BLOCK, BLOCK) == 0 &&
	      origin_count(s, "GET", path, 5 * BLOCK) == before + 1,
	      "the old version again: its unit fetched again, its own bytes (nothing of v2 kept)");
	if (obj)
		cache_object_unref(obj);

	/* and the new version, opened anew, reads the new bytes */
	origin_put(s, path, sizeof(new), 4, "\"v2\"");
	obj = engine_object(&e, path);
	size_t wrong = obj ? read_all(&e, obj, new, NULL) : 1;
	CHECK(wrong == 0, "the new version opened anew: all its bytes right (%zu wrong)", wrong);
	if (obj)
		cache_object_unref(obj);
out:
	engine_stop(&e);
}

/* ---- a full disk ------------------------------------------------------ */

/* Mount a SIZE tmpfs on DIR; 0, or -errno: the test is then skipped. */
static int small_disk(const char *dir, const char *size)
{
	char opts[64];
	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	return mount("tmpfs", dir, "tmpfs", 0, opts) == 0 ? 0 : -errno;
}

static void test_full_disk(struct origin_server *s, const char *base)
{
	static char want[16u << 20];
	char disk[512], dir[600];
	struct engine e;
	snprintf(disk, sizeof(disk), "%s/disk", base);
	snprintf(dir, sizeof(dir), "%s/cache", disk);
	mkdir(disk, 0700);
	int rc = small_disk(disk, "6m");
	if (rc) {
		printf("ok %d # SKIP full disk: cannot mount a tmpfs (%s)\n", ++check_run,
		       strerror(-rc));
		return;
	}
	mkdir(dir, 0700);
	origin_pattern(want, sizeof(want), 5);
	origin_put(s, "/big.bin", sizeof(want), 5, "\"b1\"");
	/* a 6 MiB disk under a 100 MiB cache: the disk fills long before the
	   cache's bound; the retries of a 503 end fast (see below) */
	if (engine_start(&e, s, dir, 100u << 20, 0) != 0) {
		CHECK(0, "full disk: the cache opens");
		goto out;
	}
	struct cache_object *obj = engine_object(&e, "/big.bin");
	size_t wrong = obj ? read_all(&e, obj, want, NULL) : 1;
	CHECK(wrong == 0, "16 MiB read through a cache on a 6 MiB disk: every read right (%zu wrong)",
	      wrong);
	if (obj)
		cache_object_unref(obj);
	engine_stop(&e);

	/* again from the cache alone, the origin answering every GET 503:
	   whatever the cache serves must be the object's bytes */
	origin_set(s, &s->fail_gets, true);
	size_t failed = 0;
	wrong = 1;
	if (engine_start(&e, s, dir, 100u << 20, 0) == 0 && (obj = engine_object(&e, "/big.bin"))) {
		wrong = read_all(&e, obj, want, &failed);
		cache_object_unref(obj);
	}
	origin_set(s, &s->fail_gets, false);
	size_t reads = sizeof(want) / BLOCK;
	CHECK(wrong == 0, "from the cache alone: no read wrong (%zu wrong, %zu of %zu not cached)",
	      wrong, failed, reads);
	CHECK(failed < reads, "something was cached (%zu of %zu reads served)", reads - failed, reads);
	engine_stop(&e);
out:
	if (umount2(disk, MNT_DETACH) != 0)
		perror("umount");
}

/* ---- eviction while an object is pinned ------------------------------ */

static void test_pinned(struct origin_server *s, const char *dir)
{
	static char small[256u << 10], large[4u << 20];
	const uint64_t limit = 1u << 20;
	struct engine e;
	origin_pattern(small, sizeof(small), 6);
	origin_pattern(large, sizeof(large), 7);
	origin_put(s, "/pinned.bin", sizeof(small), 6, "\"p1\"");
	origin_put(s, "/flood.bin", sizeof(large), 7, "\"l1\"");
	if (engine_start(&e, s, dir, limit, 5) != 0) {
		CHECK(0, "pinned: the cache opens");
		return;
	}
	struct cache_object *obj = engine_object(&e, "/pinned.bin");
	size_t wrong = obj ? read_all(&e, obj, small, NULL) : 1;
	CHECK(wrong == 0, "a 256 KiB object read whole");
	if (!obj)
		goto out;
	/* once all of it is stored, it is sealed in the background; then it
	   can be pinned */
	int pin = -ENOENT;
	for (time_t end = deadline(); pin < 0 && time(NULL) < end; pause_briefly())
		pin = cache_object_pin(e.cache, obj);
	CHECK(pin >= 0, "it is pinned (%d)", pin);
	if (pin < 0)
		goto unref;
	size_t small_gets = origin_count(s, "GET", "/pinned.bin", UINT64_MAX);

	/* 4 MiB through a 1 MiB cache */
	struct cache_object *flood = engine_object(&e, "/flood.bin");
	wrong = flood ? read_all(&e, flood, large, NULL) : 1;
	CHECK(wrong == 0, "4 MiB more read through the 1 MiB cache");
	if (flood)
		cache_object_unref(flood);
	uint64_t used = data_allocated(dir);
	for (time_t end = deadline(); used > limit && time(NULL) < end; pause_briefly())
		used = data_allocated(dir);
	struct cache_stats st;
	cache_get_stats(e.cache, &st);
	CHECK(used <= limit, "the data files take %llu bytes, within the cache's %llu",
	      (unsigned long long)used, (unsigned long long)limit);
	CHECK(st.evicted > 0, "units were evicted (%llu bytes)", (unsigned long long)st.evicted);

	static char pinned[sizeof(small)];
	ssize_t got = pread(pin, pinned, sizeof(pinned), 0);
	CHECK(got == (ssize_t)sizeof(small) && memcmp(pinned, small, sizeof(small)) == 0,
	      "the pinned file still holds the object's bytes (%zd)", got);
	wrong = read_all(&e, obj, small, NULL);
	CHECK(wrong == 0 && origin_count(s, "GET", "/pinned.bin", UINT64_MAX) == small_gets,
	      "read again: right, from the cache (no GET)");
	close(pin);
unref:
	cache_object_unref(obj);
out:
	engine_stop(&e);
}

/* An open of a version the index holds records how it is cut and nothing
 * per unit: the layout (and the known units) come at its first read
 * (object_cut()), so that checking every cached file of a listing costs no
 * memory per tile. */
static void test_cut_at_first_read(struct origin_server *s, const char *dir)
{
	static char bytes[256u << 10];
	struct engine e;
	origin_pattern(bytes, sizeof(bytes), 8);
	/* test_pinned()'s path, a new version (the origin holds 8 objects) */
	origin_put(s, "/pinned.bin", sizeof(bytes), 8, "\"z1\"");
	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "cut: the cache opens");
		return;
	}
	struct cache_object *obj = engine_object(&e, "/pinned.bin");
	CHECK(obj && atomic_load(&obj->cut), "a version the open fetched is cut at once");
	CHECK(obj && read_all(&e, obj, bytes, NULL) == 0, "read whole, cached");
	cache_object_unref(obj);
	engine_stop(&e);

	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "cut: the cache opens again");
		return;
	}
	size_t gets = origin_count(s, "GET", "/pinned.bin", UINT64_MAX);
	obj = engine_object(&e, "/pinned.bin");
	CHECK(obj && !atomic_load(&obj->cut) && obj->layout.nunits == 0 && !obj->layout.units,
	      "reopened from the index: not cut, nothing held per unit");
	CHECK(obj && read_all(&e, obj, bytes, NULL) == 0 && atomic_load(&obj->cut),
	      "its first read cuts it and reads right");
	CHECK(origin_count(s, "GET", "/pinned.bin", UINT64_MAX) == gets, "from the cache (no GET)");
	cache_object_unref(obj);
	engine_stop(&e);
}

int main(void)
{
	char base[] = "/tmp/tilefs-engine-XXXXXX", dir[256];
	struct origin_server s;

	signal(SIGPIPE, SIG_IGN);
	alarm(10 * ORIGIN_WAIT_S);	/* a hang is a failure, not a stuck suite */
	/* a mount namespace of our own, made before any thread, which every
	   thread then shares: the full disk's tmpfs is never left mounted */
	if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		printf("# no mount namespace of our own (%s): the tmpfs is unmounted at the end\n",
		       strerror(errno));
	if (!mkdtemp(base) || origin_start(&s) != 0) {
		perror("test_engine");
		return 1;
	}
	test_single_flight(&s, cache_dir_in(base, "flight", dir, sizeof(dir)));
	test_start_together(&s, base);
	test_claims(&s, cache_dir_in(base, "claims", dir, sizeof(dir)));
	test_stale(&s, cache_dir_in(base, "stale", dir, sizeof(dir)), false);
	test_stale(&s, cache_dir_in(base, "stale-anyway", dir, sizeof(dir)), true);
	test_pinned(&s, cache_dir_in(base, "pinned", dir, sizeof(dir)));
	test_cut_at_first_read(&s, cache_dir_in(base, "cut", dir, sizeof(dir)));
	test_full_disk(&s, base);
	origin_stop(&s);
	remove_tree(base);
	return check_done();
}
