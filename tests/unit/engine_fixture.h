/*
 * engine_fixture.h - what the unit tests of the engine share: a cache (the
 * engine without FUSE) over the scripted origin of origin_server.h, and
 * helpers to read through it and to wait for events, each wait bounded by
 * ORIGIN_WAIT_S.
 */
#ifndef TILEFS_ENGINE_FIXTURE_H
#define TILEFS_ENGINE_FIXTURE_H

#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "origin_server.h"

#include <ftw.h>
#include <sys/stat.h>

#define BLOCK (64u << 10)
#define HEADER (16u << 10)
#define READERS 8

struct engine {
	struct source *src;
	struct http_client *http;
	struct cache *cache;
};

/* Open a cache in DIR of at most LIMIT bytes over the origin S. RETRIES:
 * the HTTP client's. 0 or -errno. */
static inline int engine_start(struct engine *e, const struct origin_server *s, const char *dir,
			uint64_t limit, int retries)
{
	char source[64], err[256];
	struct source_options so = { 0 };
	memset(e, 0, sizeof(*e));
	snprintf(source, sizeof(source), "http://127.0.0.1:%d/", s->port);
	int rc = source_open(source, &so, &e->src, err, sizeof(err));
	if (rc) {
		printf("# %s\n", err);
		return rc;
	}
	struct http_config hc;
	http_config_defaults(&hc);
	hc.retries = retries;
	hc.backoff_base_ms = 1;
	hc.backoff_max_ms = 10;
	e->http = http_client_new(&hc);
	if (!e->http)
		return -EAGAIN;
	struct cache_config cc = {
		.dir = dir,
		.size_limit = limit,
		.block_size = BLOCK,
		.header_len = HEADER,
		.max_request = 8u << 20,
		.merge_gap = 0,
		.readahead_max = 0,
		.prefetch = PREFETCH_NONE,
		.claim_wait_s = 30,
	};
	return cache_open(&cc, e->src, e->http, &e->cache);
}

static inline void engine_stop(struct engine *e)
{
	if (e->cache)
		cache_stop_prefetch(e->cache);
	http_client_free(e->http);
	cache_close(e->cache);
	source_free(e->src);
	memset(e, 0, sizeof(*e));
}

/* Open PATH ("/a.bin") of the origin; NULL on failure (printed). */
static inline struct cache_object *engine_object(struct engine *e, const char *path)
{
	struct cache_object *obj = NULL;
	char *url = source_object_url(e->src, path + 1);
	int rc = cache_object_open(e->cache, url, path + 1, NULL, false, &obj);
	if (rc)
		printf("# opening %s: %s\n", path, strerror(-rc));
	free(url);
	return rc ? NULL : obj;
}

/* The unit of OBJ holding OFF. */
static inline struct extent unit_of(struct cache_object *obj, uint64_t off)
{
	return layout_unit_at(cache_object_layout(obj), off);
}

/* Read all of OBJ in BLOCK reads; how many came back wrong (short, an
 * error, or other bytes than WANT). FAILED (if not NULL) gets the reads
 * that failed with an error, which then do not count as wrong. */
static inline size_t read_all(struct engine *e, struct cache_object *obj, const char *want,
		       size_t *failed)
{
	static char buf[BLOCK];
	uint64_t size = cache_object_size(obj);
	size_t wrong = 0;
	for (uint64_t off = 0; off < size; off += BLOCK) {
		size_t len = size - off < BLOCK ? (size_t)(size - off) : BLOCK;
		ssize_t got = cache_read(e->cache, obj, 1, buf, BLOCK, off);
		if (got < 0 && failed)
			(*failed)++;
		else if (got != (ssize_t)len || memcmp(buf, want + off, len) != 0)
			wrong++;
	}
	return wrong;
}

static inline int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path);
}

static inline void remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t allocated;	/* data_allocated()'s sum */

static inline int add_allocated(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *name = path + ftw->base;
	/* an object's data file: data-INSTANCE/XX/ID (not the punch counter) */
	if (type == FTW_F && strstr(path, "/data-") && name[strspn(name, "0123456789")] == '\0')
		allocated += (uint64_t)st->st_blocks * 512;
	return 0;
}

/* Disk space the objects' data files under DIR take (du -s -B1), the
 * cache's size bound being on the units they hold. */
static inline uint64_t data_allocated(const char *dir)
{
	allocated = 0;
	nftw(dir, add_allocated, 16, FTW_PHYS);
	return allocated;
}

static inline void pause_briefly(void)
{
	struct timespec t = { 0, 10 * 1000 * 1000 };
	nanosleep(&t, NULL);
}

static inline time_t deadline(void)
{
	return time(NULL) + ORIGIN_WAIT_S;
}

/* A fresh cache dir under BASE named NAME. */
static inline const char *cache_dir_in(const char *base, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", base, name);
	mkdir(buf, 0700);
	return buf;
}

#endif
