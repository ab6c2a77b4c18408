/*
 * test_warm_evict.c - tilefs warm into a full cache, with others evicting
 * at once (cache_units_missing(), cache_warm(), eviction): from threads of
 * one process (as tilefs warm's --jobs do), and from two processes. Each
 * warm counts every byte once (fetched, cached, or another's), each
 * object warmed is then read whole from the cache with no GET, and the
 * evictors together take the cache no further below its target than a
 * unit each.
 */
#include "check.h"
#include "engine_fixture.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define WARMERS 4
#define WARM_SIZE (256u << 10)
#define WARM_LIMIT (2u << 20)

struct warmer {
	struct engine *e;
	struct cache_object *obj;
	atomic_int *ready;
	int together;			/* ready counts up to this, then all go */
	int err;
};

/* The path of warmed object I ("/warmI.bin") in BUF. */
static const char *warm_path(int i, char buf[32])
{
	snprintf(buf, 32, "/warm%d.bin", i);
	return buf;
}

/* Warm all of W's object as tilefs warm does (what is missing, then
 * that), once every warmer is ready. */
static void *warm_whole(void *arg)
{
	struct warmer *w = arg;
	const struct layout *l = cache_object_layout(w->obj);
	struct extent units[WARM_SIZE / BLOCK + 2];
	bool missing[WARM_SIZE / BLOCK + 2];
	size_t n = 0, k = 0;
	struct cache_warm_counts counts = { 0 };

	for (uint64_t off = 0; l && off < WARM_SIZE && n < sizeof(units) / sizeof(units[0]);
	     n++) {
		units[n] = layout_unit_at(l, off);
		off = units[n].off + units[n].len;
	}
	uint64_t found = 0;	/* bytes cached already */
	w->err = l ? cache_units_missing(w->e->cache, w->obj, units, n, missing) : -EIO;
	for (size_t i = 0; i < n && !w->err; i++) {
		if (missing[i])
			units[k++] = units[i];
		else
			found += units[i].len;
	}
	atomic_fetch_add(w->ready, 1);
	while (atomic_load(w->ready) < w->together)
		sched_yield();
	if (!w->err)
		w->err = cache_warm(w->e->cache, w->obj, units, k, &counts);
	/* each byte counted once: fetched, found cached, or another's */
	uint64_t counted = found + counts.fetched + counts.cached + counts.elsewhere;
	if (!w->err && counted != WARM_SIZE) {
		printf("# %llu bytes counted of %u\n", (unsigned long long)counted, WARM_SIZE);
		w->err = -ERANGE;
	}
	return NULL;
}

/* Warm /warmI.bin for I = FIRST, FIRST + STEP, ... below WARMERS, a thread
 * each, from a cache of its own on DIR, once a byte comes on GO (-1: at
 * once). How many failed, or -1 if the cache did not open. */
static int warm_some(struct origin_server *s, const char *dir, int first, int step, int go)
{
	struct engine e;
	struct warmer w[WARMERS];
	pthread_t t[WARMERS];
	atomic_int ready = 0;
	int n = 0, failed = 0;
	char c;

	if (engine_start(&e, s, dir, WARM_LIMIT, 5) != 0)
		return -1;
	for (int i = first; i < WARMERS; i += step) {
		char path[32];
		w[n++] = (struct warmer){ &e, engine_object(&e, warm_path(i, path)), &ready, 0, -EIO };
	}
	for (int i = 0; i < n; i++)
		w[i].together = n + 1;	/* and this thread, once GO says */
	bool started[WARMERS] = { false };
	for (int i = 0; i < n; i++)
		started[i] = w[i].obj && pthread_create(&t[i], NULL, warm_whole, &w[i]) == 0;
	for (int i = 0; i < n; i++)
		if (!started[i])
			atomic_fetch_add(&ready, 1);	/* none to wait for */
	if (go >= 0 && read(go, &c, 1) != 1)
		failed++;
	atomic_fetch_add(&ready, 1);
	for (int i = 0; i < n; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
		if (w[i].err) {
			printf("# /warm%d.bin: not warmed: %s\n", first + i * step, strerror(-w[i].err));
			failed++;
		}
		if (w[i].obj)
			cache_object_unref(w[i].obj);
	}
	engine_stop(&e);
	return failed;
}

/* Warm /warm0..3.bin into a cache full of other data: from threads of one
 * process (PROCS 1, as tilefs warm's --jobs), or of two at once. */
static void test_warm_together(struct origin_server *s, const char *dir, int procs)
{
	static char fill[4u << 20];
	struct engine e;
	if (procs > 1 && check_skip_forks("warm from two processes at once"))
		return;
	origin_pattern(fill, sizeof(fill), 9);
	origin_put(s, "/fill.bin", sizeof(fill), 9, "\"f9\"");
	for (int i = 0; i < WARMERS; i++) {
		char path[32];
		origin_put(s, warm_path(i, path), WARM_SIZE, 20 + i, procs == 1 ? "\"w1\"" : "\"w2\"");
	}
	if (engine_start(&e, s, dir, WARM_LIMIT, 5) != 0) {
		CHECK(0, "warm together: the cache opens");
		return;
	}
	/* a cache full of other data, within its size */
	struct cache_object *obj = engine_object(&e, "/fill.bin");
	CHECK(obj && read_all(&e, obj, fill, NULL) == 0, "4 MiB read through the 2 MiB cache");
	if (obj)
		cache_object_unref(obj);
	uint64_t used = data_allocated(dir);
	for (time_t end = deadline(); used > WARM_LIMIT && time(NULL) < end; pause_briefly())
		used = data_allocated(dir);
	engine_stop(&e);

	int failed = 0;
	if (procs == 1) {
		failed = warm_some(s, dir, 0, 1, -1);
	} else {
		int go[2];
		pid_t child[2];
		if (pipe(go) != 0) {
			CHECK(0, "warm together: a pipe");
			return;
		}
		fflush(stdout);
		for (int i = 0; i < 2; i++) {
			child[i] = fork();
			if (child[i] == 0) {
				alarm(4 * ORIGIN_WAIT_S);
				close(go[1]);
				int rc = warm_some(s, dir, i, 2, go[0]);
				fflush(stdout);
				_exit(rc == 0 ? 0 : 1);
			}
		}
		close(go[0]);
		if (write(go[1], "gg", 2) != 2)
			perror("go");
		close(go[1]);
		for (int i = 0; i < 2; i++) {
			int status = -1;
			waitpid(child[i], &status, 0);
			failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		}
	}
	CHECK(failed == 0, "%d process(es) warmed their files (%d failed)", procs, failed);
	/* each evictor stops at what the index holds, and evicts a file's
	   units without taking another evictor's hold on it for a pin */
	used = data_allocated(dir);
	uint64_t floor = WARM_LIMIT - WARM_LIMIT / 20 - WARMERS * (uint64_t)BLOCK;
	CHECK(used >= floor && used <= WARM_LIMIT,
	      "the cache holds %llu bytes: within %u, and no more than a unit a warmer below "
	      "the target (%llu)", (unsigned long long)used, WARM_LIMIT,
	      (unsigned long long)floor);

	/* what a mount of the cache then sees */
	if (engine_start(&e, s, dir, WARM_LIMIT, 5) != 0) {
		CHECK(0, "warm together: the cache opens again");
		return;
	}
	for (int i = 0; i < WARMERS; i++) {
		static char want[WARM_SIZE];
		char path[32];
		warm_path(i, path);
		origin_pattern(want, sizeof(want), 20 + i);
		obj = engine_object(&e, path);	/* its version: a request */
		size_t gets = origin_count(s, "GET", path, UINT64_MAX);
		size_t wrong = obj ? read_all(&e, obj, want, NULL) : 1;
		gets = origin_count(s, "GET", path, UINT64_MAX) - gets;
		CHECK(wrong == 0 && gets == 0, "%s read whole from the cache: %zu reads wrong, %zu GETs",
		      path, wrong, gets);
		if (obj)
			cache_object_unref(obj);
	}
	engine_stop(&e);
}

int main(void)
{
	char base[] = "/tmp/tilefs-warm-evict-XXXXXX", dir[256];
	struct origin_server s;

	signal(SIGPIPE, SIG_IGN);
	alarm(10 * ORIGIN_WAIT_S);	/* a hang is a failure, not a stuck suite */
	if (!mkdtemp(base) || origin_start(&s) != 0) {
		perror("test_warm_evict");
		return 1;
	}
	test_warm_together(&s, cache_dir_in(base, "threads", dir, sizeof(dir)), 1);
	test_warm_together(&s, cache_dir_in(base, "processes", dir, sizeof(dir)), 2);
	origin_stop(&s);
	remove_tree(base);
	return check_done();
}
