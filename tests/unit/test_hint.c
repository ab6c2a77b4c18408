/*
 * test_hint.c - hints (cache.h, hint.c): the order file's lines as
 * hint_line_parse() reads them, and the plan on a cache over a scripted
 * origin (origin_server.h): the entries fetched ahead within the budget,
 * the readers' cursor, and the entries they skipped; a hint into a full
 * cache, whose units are kept until their readers come; and small files
 * opened several at once. Each wait is
 * for an event (a request the origin logged, a unit evicted), bounded by
 * ORIGIN_WAIT_S.
 */
#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "check.h"
#include "origin_server.h"

#include <signal.h>
#include <sys/stat.h>

#define BLOCK (64u << 10)
#define HEADER (16u << 10)
#define OBJECTS 8
#define OBJECT_SIZE (64u << 10)	/* a header unit and one block */

/* Parse TEXT; the return and *out. */
static int parse(const char *text, struct hint_line *out, char *copy, size_t size)
{
	char why[200];
	snprintf(copy, size, "%s", text);
	return hint_line_parse(copy, out, why, sizeof(why));
}

static void test_parse(void)
{
	struct hint_line l;
	char buf[512];

	CHECK(parse("", &l, buf, sizeof(buf)) == 0, "an empty line is skipped");
	CHECK(parse("   \t", &l, buf, sizeof(buf)) == 0, "a blank line is skipped");
	CHECK(parse("  # a comment 1 2 3 4", &l, buf, sizeof(buf)) == 0, "a comment is skipped");
	CHECK(parse("a/b.tif", &l, buf, sizeof(buf)) == 1 && strcmp(l.path, "a/b.tif") == 0 &&
	      !l.window, "a path alone is all of the file");
	CHECK(parse("a/b.tif 1 2 3 4", &l, buf, sizeof(buf)) == 1 && strcmp(l.path, "a/b.tif") == 0 &&
	      l.window && l.x == 1 && l.y == 2 && l.w == 3 && l.h == 4,
	      "a path and four numbers: a window");
	CHECK(parse("my file 2.tif  10 20  30 40 \r", &l, buf, sizeof(buf)) == 1 &&
	      strcmp(l.path, "my file 2.tif") == 0 && l.window && l.x == 10 && l.h == 40,
	      "a path with spaces, then a window; trailing blanks and CR dropped");
	CHECK(parse("my file 1 2 3.tif", &l, buf, sizeof(buf)) == 1 &&
	      strcmp(l.path, "my file 1 2 3.tif") == 0 && !l.window,
	      "numbers inside a path are the path's");
	CHECK(parse("a b 1 2 3", &l, buf, sizeof(buf)) == 1 && strcmp(l.path, "a b 1 2 3") == 0 &&
	      !l.window, "three numbers at the end are the path's");
	CHECK(parse("dir/2021 01 02 03\t0 0 256 256", &l, buf, sizeof(buf)) == 1 &&
	      strcmp(l.path, "dir/2021 01 02 03") == 0 && l.window && l.w == 256,
	      "with a tab, the path is all before it");
	CHECK(parse("dir/x 1 2 3 4\t", &l, buf, sizeof(buf)) == 1 && l.window &&
	      strcmp(l.path, "dir/x") == 0, "a trailing tab is a trailing blank");
	CHECK(parse("a.tif\t1 2 3", &l, buf, sizeof(buf)) == -EINVAL, "after a tab: four numbers");
	CHECK(parse("a.tif\t1 2 3 4 5", &l, buf, sizeof(buf)) == -EINVAL, "after a tab: not five");
	CHECK(parse("a.tif\t-1 2 3 4", &l, buf, sizeof(buf)) == -EINVAL, "no negative numbers");
	CHECK(parse("a.tif 0 0 0 4", &l, buf, sizeof(buf)) == -EINVAL, "a window 0 wide");
	CHECK(parse("1 2 3 4", &l, buf, sizeof(buf)) == 1 && strcmp(l.path, "1 2 3 4") == 0 &&
	      !l.window, "four numbers alone are a path");
	CHECK(parse("a.tif 99999999999999999999 0 1 1", &l, buf, sizeof(buf)) == 1 && !l.window,
	      "a number past 64 bits is not a window's");
}

/* How many GETs of object I fetched its block (past its header)? */
static size_t block_gets(struct origin_server *s, int i)
{
	char path[32];
	size_t n = 0;
	snprintf(path, sizeof(path), "/o%d.bin", i);
	pthread_mutex_lock(&s->lock);
	for (size_t k = 0; k < s->nlog; k++) {
		const struct origin_request *r = &s->log[k];
		n += strcmp(r->method, "GET") == 0 && strcmp(r->path, path) == 0 &&
		     (!r->ranged || (r->first <= HEADER && r->last >= HEADER));
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

static bool wait_block(struct origin_server *s, int i)
{
	time_t until = time(NULL) + ORIGIN_WAIT_S;
	while (block_gets(s, i) == 0 && time(NULL) < until)
		usleep(10000);
	return block_gets(s, i) > 0;
}

/* Read all of object I as a reader would, telling the hint. */
static bool read_object(struct cache *c, struct source *src, int i)
{
	static char buf[OBJECT_SIZE];
	char path[32];
	struct cache_object *obj = NULL;
	snprintf(path, sizeof(path), "o%d.bin", i);
	char *url = source_object_url(src, path);
	bool ok = url && cache_object_open(c, url, path, NULL, false, &obj) == 0;
	if (ok) {
		ssize_t n = cache_read(c, obj, 1, buf, sizeof(buf), 0);
		ok = n == OBJECT_SIZE;
		if (ok)
			cache_hint_read(c, obj, 0, (size_t)n);
	}
	cache_object_unref(obj);
	free(url);
	return ok;
}

/* A cache of LIMIT bytes in DIR over the origin, with the objects /oI.bin
 * for I in [FIRST, FIRST + N) on it; the hint entries V (their urls in
 * URLS) of the first HINTED. False if it cannot be made. */
static bool hinted_cache(struct origin_server *s, const char *dir, uint64_t limit, int first,
			 int n, int hinted, struct cache **c, struct source **src,
			 struct http_client **http, struct cache_hint_entry *v, char **urls)
{
	char source[64], err[256] = "", path[32];
	struct source_options so = { 0 };

	for (int i = first; i < first + n; i++) {
		snprintf(path, sizeof(path), "/o%d.bin", i);
		origin_put(s, path, OBJECT_SIZE, (uint32_t)(20 + i), "\"h\"");
	}
	snprintf(source, sizeof(source), "http://127.0.0.1:%d/", s->port);
	struct http_config hc;
	http_config_defaults(&hc);
	*http = http_client_new(&hc);
	struct cache_config cc = {
		.dir = dir, .size_limit = limit, .block_size = BLOCK, .header_len = HEADER,
		.max_request = 8u << 20, .prefetch = PREFETCH_NONE, .claim_wait_s = 30,
	};
	if (!*http || source_open(source, &so, src, err, sizeof(err)) != 0 ||
	    cache_open(&cc, *src, *http, c) != 0) {
		CHECK(false, "a cache to hint: %s", err);
		return false;
	}
	for (int i = 0; i < hinted; i++) {
		snprintf(path, sizeof(path), "o%d.bin", first + i);
		urls[i] = source_object_url(*src, path);
		v[i] = (struct cache_hint_entry){ .url = urls[i], .log_name = urls[i],
						  .line = (unsigned)i + 1 };
	}
	return true;
}

static void hinted_cache_close(struct cache *c, struct source *src, struct http_client *http,
			       char **urls, int hinted)
{
	cache_hint_stop(c);
	cache_stop_prefetch(c);
	http_client_free(http);
	cache_close(c);
	source_free(src);
	for (int i = 0; i < hinted; i++)
		free(urls[i]);
}

static void test_plan(struct origin_server *s, const char *dir)
{
	struct source *src = NULL;
	struct cache *c = NULL;
	struct http_client *http = NULL;
	struct cache_hint_entry v[OBJECTS];
	char *urls[OBJECTS];
	struct cache_hint_stats st;

	if (!hinted_cache(s, dir, 64u << 20, 0, OBJECTS, OBJECTS, &c, &src, &http, v, urls))
		return;
	/* the budget counts what the hint sends for: 48 KiB of each object
	   (its open brought the 16 KiB header unit), so with 80 KiB ahead the
	   first is under the budget, and the second takes it over */
	CHECK(cache_hint_set(c, "t", v, OBJECTS, 80u << 10) == 0, "a hint of %d objects", OBJECTS);
	CHECK(wait_block(s, 0) && wait_block(s, 1),
	      "the first two entries are fetched before any read");
	cache_hint_get_stats(c, &st);
	CHECK(st.entries == OBJECTS && st.position == 0, "entries %llu, position %llu",
	      (unsigned long long)st.entries, (unsigned long long)st.position);
	CHECK(block_gets(s, 2) == 0, "the third is beyond the budget");
	CHECK(read_object(c, src, 0), "a reader reads the first");
	cache_hint_get_stats(c, &st);
	CHECK(st.position == 1, "the cursor is past it: %llu", (unsigned long long)st.position);
	CHECK(wait_block(s, 2), "the third is fetched once the first is read");
	/* the readers jump to the sixth: the ones between are skipped, and the
	   fetch goes on from the seventh */
	CHECK(read_object(c, src, 5), "a reader reads the sixth");
	cache_hint_get_stats(c, &st);
	CHECK(st.position == 6, "the cursor is past the sixth: %llu",
	      (unsigned long long)st.position);
	CHECK(wait_block(s, 6), "the seventh is fetched");
	CHECK(block_gets(s, 3) == 0 && block_gets(s, 4) == 0,
	      "the fourth and fifth, passed, are not fetched");
	size_t gets = origin_count(s, "GET", "/o0.bin", UINT64_MAX);
	CHECK(read_object(c, src, 0), "the first read again");
	cache_hint_get_stats(c, &st);
	CHECK(st.position == 6 && origin_count(s, "GET", "/o0.bin", UINT64_MAX) == gets,
	      "a read behind the cursor moves nothing, and is a hit");
	/* the seventh and eighth were sent for (the eighth took the budget
	   over): counted once their GETs are submitted */
	time_t until = time(NULL) + ORIGIN_WAIT_S;
	do
		cache_hint_get_stats(c, &st);
	while (st.fetched_bytes < 5ull * (OBJECT_SIZE - HEADER) && time(NULL) < until &&
	       usleep(10000) == 0);
	CHECK(cache_hint_set(c, "t", NULL, 0, 100u << 10) == 0, "the hint dropped");
	cache_hint_get_stats(c, &st);
	/* passed unread: the second, third, fourth and fifth */
	CHECK(st.entries == 0 && st.skipped == 4, "entries %llu, skipped %llu",
	      (unsigned long long)st.entries, (unsigned long long)st.skipped);
	CHECK(st.fetched_bytes >= 5ull * (OBJECT_SIZE - HEADER), "fetched %llu bytes ahead",
	      (unsigned long long)st.fetched_bytes);
	hinted_cache_close(c, src, http, urls, OBJECTS);
}

/*
 * A DataLoader's first batches: the worker of a later batch reads first,
 * and the cursor passes the entries of the batches before it; their
 * readers' first reads come late, and send the fetch back for what the
 * cursor passed that no read has.
 */
static void test_late(struct origin_server *s, const char *dir)
{
	enum { FIRST = 96 };	/* after test_full_hinted_only()'s */
	struct source *src = NULL;
	struct cache *c = NULL;
	struct http_client *http = NULL;
	struct cache_hint_entry v[OBJECTS];
	char *urls[OBJECTS];
	struct cache_hint_stats st;

	if (!hinted_cache(s, dir, 64u << 20, FIRST, OBJECTS, OBJECTS, &c, &src, &http, v, urls))
		return;
	/* 80 KiB ahead: the first two entries, as in test_plan() */
	CHECK(cache_hint_set(c, "t", v, OBJECTS, 80u << 10) == 0, "a hint of %d objects", OBJECTS);
	CHECK(wait_block(s, FIRST) && wait_block(s, FIRST + 1),
	      "the first two entries are fetched before any read");
	CHECK(read_object(c, src, FIRST + 4), "a reader reads the fifth first");
	CHECK(wait_block(s, FIRST + 5), "the sixth is fetched");
	CHECK(block_gets(s, FIRST + 2) == 0 && block_gets(s, FIRST + 3) == 0,
	      "no read came late yet: the third and fourth, passed, are not fetched");
	CHECK(read_object(c, src, FIRST), "a reader reads the first, late");
	CHECK(wait_block(s, FIRST + 2) && wait_block(s, FIRST + 3),
	      "the late read sends the fetch back for the third and fourth");
	int hits = 0;
	for (int i = FIRST + 1; i <= FIRST + 3; i++)
		hits += read_object(c, src, i) && block_gets(s, i) == 1;
	CHECK(hits == 3, "the second to fourth read from what the hint fetched: %d of 3", hits);
	CHECK(read_object(c, src, FIRST + 5), "a reader reads the sixth");
	CHECK(wait_block(s, FIRST + 7), "the eighth is fetched once the sixth is read: the "
	      "entries fetched behind the cursor took nothing of the budget");
	CHECK(cache_hint_set(c, "t", NULL, 0, 80u << 10) == 0, "the hint dropped");
	cache_hint_get_stats(c, &st);
	CHECK(st.skipped == 0, "none of the six read counts as skipped: %llu",
	      (unsigned long long)st.skipped);
	hinted_cache_close(c, src, http, urls, OBJECTS);
}

/* Read object I through C until a read of it is served from the cache
 * whole (its units stored, not in flight); false if not within
 * ORIGIN_WAIT_S. */
static bool read_cached_whole(struct cache *c, struct source *src, int i)
{
	struct cache_stats before, after;
	time_t until = time(NULL) + ORIGIN_WAIT_S;
	do {
		cache_get_stats(c, &before);
		if (!read_object(c, src, i))
			return false;
		cache_get_stats(c, &after);
	} while (after.hits - before.hits < 2 && time(NULL) < until && usleep(10000) == 0);
	return after.hits - before.hits >= 2;	/* its header and its block */
}

/* Read the objects [FIRST, FIRST + N) into C until it is full (it has
 * evicted); true if each was read right and eviction came within
 * ORIGIN_WAIT_S. */
static bool fill(struct cache *c, struct source *src, int first, int n)
{
	struct cache_stats cs;
	int ok = 0;
	for (int i = first; i < first + n; i++)
		ok += read_object(c, src, i);
	time_t until = time(NULL) + ORIGIN_WAIT_S;
	do
		cache_get_stats(c, &cs);
	while (cs.evicted == 0 && time(NULL) < until && usleep(10000) == 0);
	CHECK(ok == n && cs.evicted > 0, "the cache is full: %d objects read, %llu bytes evicted",
	      ok, (unsigned long long)cs.evicted);
	return ok == n && cs.evicted > 0;
}

/*
 * A hint into a full cache: the entries are fetched ahead all the same,
 * and what they fetched is kept until their readers come, while each
 * reader also reads three objects nobody hinted (misses of its own, stored
 * on probation, each evicting the oldest units there).
 */
static void test_full(struct origin_server *s, const char *dir)
{
	enum { FIRST = OBJECTS, HINTED = 10, FILL = 20, MISSES = 3 * HINTED };
	struct source *src = NULL;
	struct cache *c = NULL;
	struct http_client *http = NULL;
	struct cache_hint_entry v[HINTED];
	char *urls[HINTED];

	/* 1 MiB: eviction leaves 51 KiB of room, so one entry of 48 KiB is
	   fetched ahead at a time, then a second over it (the budget's rule) */
	if (!hinted_cache(s, dir, 1u << 20, FIRST, HINTED + FILL + MISSES, HINTED, &c, &src, &http,
			  v, urls))
		return;
	fill(c, src, FIRST + HINTED, FILL);

	CHECK(cache_hint_set(c, "t", v, HINTED, 80u << 10) == 0, "a hint of %d objects", HINTED);
	CHECK(wait_block(s, FIRST), "the first entry is fetched into the full cache");
	int read = 0, once = 0;
	for (int i = FIRST; i < FIRST + HINTED; i++) {
		for (int k = 0; k < MISSES / HINTED; k++)	/* the readers' misses */
			read += read_object(c, src, FIRST + HINTED + FILL + (i - FIRST) * 3 + k);
		if (!wait_block(s, i))
			break;
		read += read_object(c, src, i);
		once += block_gets(s, i) == 1;
	}
	CHECK(read == HINTED + MISSES, "every read is right (%d of %d)", read, HINTED + MISSES);
	CHECK(once == HINTED, "each entry fetched ahead, then read from the cache: %d of %d with "
	      "one GET", once, HINTED);
	hinted_cache_close(c, src, http, urls, HINTED);
}

/*
 * A hint into a full cache whose readers read only what it fetched: the
 * units they read leave the cache before any of the part that fits. (The
 * reads' times reach the index in batches; eviction used to pass over
 * units read but still marked kept, and took admitted units instead.)
 */
static void test_full_hinted_only(struct origin_server *s, const char *dir)
{
	enum { FIRST = 68, HINTED = 10, FILL = 18, ADMITTED = 15 };	/* after test_full()'s */
	struct source *src = NULL;
	struct cache *c = NULL;
	struct http_client *http = NULL;
	struct cache_hint_entry v[HINTED];
	char *urls[HINTED];

	if (!hinted_cache(s, dir, 1u << 20, FIRST, HINTED + FILL, HINTED, &c, &src, &http, v, urls))
		return;
	fill(c, src, FIRST + HINTED, FILL);

	CHECK(cache_hint_set(c, "t", v, HINTED, 80u << 10) == 0, "a hint of %d objects", HINTED);
	int read = 0;
	for (int i = FIRST; i < FIRST + HINTED && wait_block(s, i); i++)
		read += read_object(c, src, i);
	CHECK(read == HINTED, "each hinted object read (%d of %d)", read, HINTED);
	cache_hint_set(c, "t", NULL, 0, 80u << 10);
	/* eviction has had the cache over its bound since: the objects read
	   first (admitted: the cache had room) are still cached */
	int cached = 0;
	for (int i = FIRST + HINTED; i < FIRST + HINTED + ADMITTED; i++) {
		size_t before = block_gets(s, i);
		cached += read_object(c, src, i) && block_gets(s, i) == before;
	}
	/* what may be taken from them: the entries kept ahead of the readers
	   (two of 48 KiB) and eviction's margin below the bound (51 KiB), so
	   3 of the 15 objects at most */
	CHECK(cached >= ADMITTED - 3, "of the %d objects admitted first, %d read again without a "
	      "GET", ADMITTED, cached);
	hinted_cache_close(c, src, http, urls, HINTED);
}

/*
 * A hint into a full cache whose last entry reads the first one's object
 * again (two chips sharing a tile, far apart in the order): read, the
 * unit would go on probation and be evicted by the readers' misses
 * before it; the hint keeps it for that coming read instead.
 */
static void test_again(struct origin_server *s, const char *dir)
{
	enum { FIRST = 104, HINTED = 5, FILL = 18, MISSES = 2 };	/* after test_late()'s */
	struct source *src = NULL;
	struct cache *c = NULL;
	struct http_client *http = NULL;
	struct cache_hint_entry v[HINTED + 1];
	char *urls[HINTED];
	struct cache_stats cs;

	if (!hinted_cache(s, dir, 1u << 20, FIRST, HINTED + FILL + MISSES * HINTED, HINTED, &c,
			  &src, &http, v, urls))
		return;
	fill(c, src, FIRST + HINTED, FILL);
	v[HINTED] = v[0];	/* the first object, once more at the end */
	CHECK(cache_hint_set(c, "t", v, HINTED + 1, 80u << 10) == 0, "a hint of %d entries",
	      HINTED + 1);
	CHECK(wait_block(s, FIRST) && read_cached_whole(c, src, FIRST),
	      "the first entry fetched ahead, then read from the cache");
	cache_get_stats(c, &cs);
	uint64_t evicted = cs.evicted;
	int read = 0;
	for (int i = FIRST + 1; i < FIRST + HINTED; i++) {
		for (int k = 0; k < MISSES; k++)	/* the readers' misses */
			read += read_object(c, src, FIRST + HINTED + FILL + (i - FIRST) * MISSES + k);
		read += wait_block(s, i) && read_object(c, src, i);
	}
	cache_get_stats(c, &cs);
	CHECK(read == (HINTED - 1) * (MISSES + 1) && cs.evicted - evicted >= 4 * (OBJECT_SIZE - HEADER),
	      "every read between is right (%d), and evicted %llu bytes", read,
	      (unsigned long long)(cs.evicted - evicted));
	CHECK(read_object(c, src, FIRST) && block_gets(s, FIRST) == 1,
	      "the last entry reads the first object again without a GET: %zu GETs of its block",
	      block_gets(s, FIRST));
	hinted_cache_close(c, src, http, urls, HINTED);
}

/*
 * A data set of small files, each smaller than the open's first GET: an
 * entry is an open, a round trip each. The hint's workers send the opens
 * of several at once, so it gets ahead of readers that open a file each.
 */
static void test_small_files(struct origin_server *s, const char *dir)
{
	/* after test_again()'s; more files than half the connections (32) */
	enum { FIRST = 140, FILES = 24, SMALL = 4096 };
	struct source *src = NULL;
	struct cache *c = NULL;
	struct http_client *http = NULL;
	struct cache_hint_entry v[FILES];
	char *urls[FILES], path[32];
	struct cache_object *obj = NULL;

	if (!hinted_cache(s, dir, 64u << 20, FIRST, FILES, FILES, &c, &src, &http, v, urls))
		return;
	for (int i = FIRST; i < FIRST + FILES; i++) {
		snprintf(path, sizeof(path), "/o%d.bin", i);
		origin_put(s, path, SMALL, (uint32_t)(20 + i), "\"small\"");
	}
	/* the first is cached: its entry weighs nothing, so the plan knows
	   what its entries weigh before the others are taken */
	CHECK(cache_object_open(c, urls[0], "o140.bin", NULL, false, &obj) == 0, "the first file opened");
	cache_object_unref(obj);
	origin_hold(s, 0);	/* every open's GET waits */
	CHECK(cache_hint_set(c, "t", v, FILES, 64u << 20) == 0, "a hint of %d small files", FILES);
	size_t held = origin_wait_held_objects(s, FILES - 1);
	CHECK(held == FILES - 1, "the opens of the small files are sent all at once, ahead of "
	      "the readers on the connections they leave idle (more than half of them): %zu of "
	      "%d files held at once", held, FILES - 1);
	origin_release(s);
	for (int i = 1; i < FILES; i++) {
		snprintf(path, sizeof(path), "/o%d.bin", FIRST + i);
		time_t until = time(NULL) + ORIGIN_WAIT_S;
		while (origin_count(s, "GET", path, UINT64_MAX) == 0 && time(NULL) < until)
			usleep(10000);
	}
	cache_hint_stop(c);	/* the workers' opens are over: stored */
	int cached = 0;
	for (int i = 1; i < FILES; i++) {
		snprintf(path, sizeof(path), "/o%d.bin", FIRST + i);
		size_t gets = origin_count(s, "GET", path, UINT64_MAX);
		static char buf[SMALL];
		obj = NULL;
		cached += gets >= 1 && cache_object_open(c, urls[i], path + 1, NULL, false, &obj) == 0 &&
			  cache_read(c, obj, 1, buf, sizeof(buf), 0) == SMALL &&
			  origin_count(s, "GET", path, UINT64_MAX) == gets;
		cache_object_unref(obj);
	}
	CHECK(cached == FILES - 1, "each file fetched by the hint, and read from the cache: %d "
	      "of %d", cached, FILES - 1);
	hinted_cache_close(c, src, http, urls, FILES);
}

int main(void)
{
	char base[] = "/tmp/tilefs-hint-XXXXXX", dir[256];
	struct origin_server s;

	signal(SIGPIPE, SIG_IGN);
	alarm(4 * ORIGIN_WAIT_S);	/* a hang is a failure, not a stuck suite */
	test_parse();
	if (!mkdtemp(base) || origin_start(&s) != 0) {
		perror("test_hint");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/cache", base);
	mkdir(dir, 0700);
	test_plan(&s, dir);
	snprintf(dir, sizeof(dir), "%s/full", base);
	mkdir(dir, 0700);
	test_full(&s, dir);
	snprintf(dir, sizeof(dir), "%s/full-hinted", base);
	mkdir(dir, 0700);
	test_full_hinted_only(&s, dir);
	snprintf(dir, sizeof(dir), "%s/late", base);
	mkdir(dir, 0700);
	test_late(&s, dir);
	snprintf(dir, sizeof(dir), "%s/again", base);
	mkdir(dir, 0700);
	test_again(&s, dir);
	snprintf(dir, sizeof(dir), "%s/small", base);
	mkdir(dir, 0700);
	test_small_files(&s, dir);
	origin_stop(&s);
	check_rm_tree(base);
	return check_done();
}
