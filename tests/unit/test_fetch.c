/*
 * test_fetch.c - what fetch.c sends for tiles read tile by tile, as GDAL
 * reads them through a mount (8 KiB-aligned stdio buffers: a first buffer,
 * the bulk, a last buffer), on a cache over a scripted origin
 * (origin_server.h) serving a tiled TIFF: a tile's GET starts after the
 * bytes of it kept as edges beside its neighbours (in memory, or in the
 * index from an earlier process) and ends before them, a tile they hold
 * whole costs no GET, and over every tile, in any order, no byte is
 * fetched twice and every byte read is the origin's.
 */
#include "cache/engine/cache.h"
#include "check.h"
#include "engine_fixture.h"
#include "origin_server.h"

#include <stdlib.h>

#define PATH "/tiles.tif"
#define TILES 16			/* 4 x 4 tiles of 128 x 128 */
#define FIRST_TILE 16384u		/* right after the header unit */
#define ALIGN 8192u			/* the reader's buffer */

/* Tile sizes (compressed, about 20 KB): tile 2 lies between the 16 KiB
 * boundary after tile 1's end (a spill) and the 8 KiB boundary before tile
 * 3 (a reader's buffer). */
static const uint32_t tile_len[TILES] = { 20000, 21000, 12000, 19000, 23000, 20500, 18000, 22000,
					  9000,	 25000, 20000, 17000, 21000, 20000, 19500, 24000 };
static uint64_t tile_off[TILES];

static void le16(char *p, uint16_t v)
{
	p[0] = (char)v;
	p[1] = (char)(v >> 8);
}

static void le32(char *p, uint32_t v)
{
	le16(p, (uint16_t)v);
	le16(p + 2, (uint16_t)(v >> 16));
}

/* A classic TIFF of 512 x 512 8-bit pixels in TILES deflate tiles
 * (never decoded: any bytes will do), IFD first, tiles one after the
 * other from FIRST_TILE, into BYTES (its tile bytes those of the origin's
 * pattern); returns its size. */
static uint64_t make_tiff(char *bytes)
{
	static const uint16_t shorts[][2] = { { 256, 512 }, { 257, 512 }, { 258, 8 },
					      { 259, 8 },   { 262, 1 },	  { 277, 1 },
					      { 284, 1 },   { 322, 128 }, { 323, 128 } };
	size_t nshort = sizeof(shorts) / sizeof(shorts[0]), nent = nshort + 2;
	uint32_t offsets_at = 8 + 2 + (uint32_t)nent * 12 + 4, counts_at = offsets_at + 4 * TILES;
	char *p = bytes;

	memcpy(p, "II*\0", 4);
	le32(p + 4, 8);
	p += 8;
	le16(p, (uint16_t)nent);
	p += 2;
	for (size_t i = 0; i < nshort; i++, p += 12) {
		memset(p, 0, 12);
		le16(p, shorts[i][0]);
		le16(p + 2, 3);		/* SHORT */
		le32(p + 4, 1);
		le16(p + 8, shorts[i][1]);
	}
	uint16_t arrays[2] = { 324, 325 };
	uint32_t at[2] = { offsets_at, counts_at };
	for (int i = 0; i < 2; i++, p += 12) {
		le16(p, arrays[i]);
		le16(p + 2, 4);		/* LONG */
		le32(p + 4, TILES);
		le32(p + 8, at[i]);
	}
	le32(p, 0);		/* no next IFD */
	uint64_t off = FIRST_TILE;
	for (int k = 0; k < TILES; k++) {
		tile_off[k] = off;
		le32(bytes + offsets_at + 4 * k, (uint32_t)off);
		le32(bytes + counts_at + 4 * k, tile_len[k]);
		off += tile_len[k];
	}
	return off;
}

/* Serve the TIFF at PATH (the pattern of seed 7 in its tiles); its bytes
 * in WANT (room for 1 MiB); returns its size. */
static uint64_t serve_tiff(struct origin_server *s, char *want)
{
	origin_pattern(want, 1u << 20, 7);
	memset(want, 0, FIRST_TILE);
	uint64_t size = make_tiff(want);
	origin_put(s, PATH, size, 7, "\"t1\"");
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nobjects; i++)
		if (strcmp(s->objects[i].path, PATH) == 0)
			memcpy(s->objects[i].bytes, want, size);
	pthread_mutex_unlock(&s->lock);
	return size;
}

/* Read [off, off+len) of OBJ; false unless it is WANT's. */
static bool read_right(struct engine *e, struct cache_object *obj, uint64_t off, uint64_t len,
		       const char *want)
{
	static char buf[1u << 20];
	return cache_read(e->cache, obj, 1, buf, len, off) == (ssize_t)len &&
	       memcmp(buf, want + off, len) == 0;
}

/* Read tile K as GDAL does through stdio with ALIGN-byte buffers: the
 * buffer its first byte lies in, the whole buffers after, the buffer its
 * last byte lies in. False unless every byte is right. */
static bool read_tile(struct engine *e, struct cache_object *obj, int k, const char *want,
		      uint64_t size)
{
	uint64_t a = tile_off[k] / ALIGN * ALIGN;
	uint64_t b = (tile_off[k] + tile_len[k] + ALIGN - 1) / ALIGN * ALIGN;
	b = b < size ? b : size;
	bool right = read_right(e, obj, a, ALIGN, want);
	if (b - a > 2 * ALIGN)
		right &= read_right(e, obj, a + ALIGN, b - a - 2 * ALIGN, want);
	if (b - a > ALIGN)
		right &= read_right(e, obj, b - ALIGN, ALIGN, want);
	return right;
}

/* The ranged GETs of PATH logged from the FROM-th request on. */
static size_t gets_since(struct origin_server *s, size_t from, struct origin_request *out,
			 size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&s->lock);
	for (size_t i = from; i < s->nlog && n < max; i++)
		if (strcmp(s->log[i].method, "GET") == 0 && strcmp(s->log[i].path, PATH) == 0 &&
		    s->log[i].ranged)
			out[n++] = s->log[i];
	pthread_mutex_unlock(&s->lock);
	return n;
}

static size_t logged(struct origin_server *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->nlog;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Bytes that two of the GETs V[0..n) both fetched. */
static uint64_t fetched_twice(struct origin_request *v, size_t n)
{
	uint64_t twice = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			uint64_t a = v[i].first > v[j].first ? v[i].first : v[j].first;
			uint64_t b = v[i].last < v[j].last ? v[i].last : v[j].last;
			if (a <= b) {
				printf("# both %llu-%llu and %llu-%llu\n",
				       (unsigned long long)v[i].first, (unsigned long long)v[i].last,
				       (unsigned long long)v[j].first, (unsigned long long)v[j].last);
				twice += b - a + 1;
			}
		}
	return twice;
}

/* The GET among the requests logged from FROM on that holds a byte of
 * tile K; false if none. */
static bool get_of(struct origin_server *s, size_t from, int k, struct origin_request *out)
{
	struct origin_request v[64];
	size_t n = gets_since(s, from, v, 64);
	for (size_t i = 0; i < n; i++)
		if (v[i].first < tile_off[k] + tile_len[k] && v[i].last >= tile_off[k]) {
			*out = v[i];
			return true;
		}
	memset(out, 0, sizeof(*out));
	return false;
}

static void test_tiles(struct origin_server *s, const char *base)
{
	static char want[1u << 20];
	char dir[512];
	struct engine e;
	struct origin_request g;
	uint64_t size = serve_tiff(s, want);

	cache_dir_in(base, "tiles", dir, sizeof(dir));
	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "the cache opens");
		return;
	}
	struct cache_object *obj = engine_object(&e, PATH);
	CHECK(obj && unit_of(obj, tile_off[5]).off == tile_off[5] &&
	      unit_of(obj, tile_off[5]).len == tile_len[5], "the TIFF opens, cut in its tiles");
	if (!obj)
		goto out;

	/* the tile after one read: the bytes kept beside it are not fetched */
	size_t from = logged(s);
	CHECK(read_tile(&e, obj, 5, want, size), "tile 5 read right");
	size_t mark = logged(s);
	CHECK(read_tile(&e, obj, 6, want, size), "then tile 6");
	CHECK(get_of(s, mark, 6, &g) && g.first > tile_off[6],
	      "tile 6's GET starts after the bytes of it kept beside tile 5 (%llu, tile at %llu)",
	      (unsigned long long)g.first, (unsigned long long)tile_off[6]);
	/* and the tile before one read: its GET ends before its kept tail */
	mark = logged(s);
	CHECK(read_tile(&e, obj, 4, want, size), "then tile 4");
	CHECK(get_of(s, mark, 4, &g) && g.last < tile_off[4] + tile_len[4] - 1 &&
	      g.last < tile_off[5],
	      "tile 4's GET ends before the bytes of it kept beside tile 5 (at %llu, tile ends at "
	      "%llu)", (unsigned long long)g.last,
	      (unsigned long long)(tile_off[4] + tile_len[4] - 1));

	/* a tile whose two neighbours were read: they hold it whole */
	CHECK(read_tile(&e, obj, 3, want, size) && read_tile(&e, obj, 1, want, size),
	      "tiles 3 and 1 read right");
	mark = logged(s);
	CHECK(read_tile(&e, obj, 2, want, size), "then tile 2");
	struct origin_request none[4];
	CHECK(gets_since(s, mark, none, 4) == 0,
	      "tile 2, held whole by the edges kept beside tiles 3 and 1, costs no GET");
	cache_object_unref(obj);
	engine_stop(&e);

	/* another process: the edges kept in the index serve it the same way */
	if (engine_start(&e, s, dir, 64u << 20, 5) != 0) {
		CHECK(0, "the cache opens again");
		return;
	}
	obj = engine_object(&e, PATH);
	if (!obj)
		goto out;
	static const int order[] = { 7, 13, 10, 0, 15, 8, 12, 9, 14, 11 };
	mark = logged(s);
	CHECK(read_tile(&e, obj, 7, want, size), "tile 7 read right in a new process");
	CHECK(get_of(s, mark, 7, &g) && g.first > tile_off[7],
	      "its GET starts after the bytes of it that the index kept beside tile 6 (%llu, tile "
	      "at %llu)", (unsigned long long)g.first, (unsigned long long)tile_off[7]);
	bool right = true;
	for (size_t i = 1; i < sizeof(order) / sizeof(order[0]); i++)
		right &= read_tile(&e, obj, order[i], want, size);
	CHECK(right, "the other tiles read right, in any order");
	struct origin_request v[128];
	size_t n = gets_since(s, from, v, 128);
	CHECK(fetched_twice(v, n) == 0, "over both processes, no byte fetched twice (%zu GETs)", n);
	right = true;
	for (int k = 0; k < TILES; k++)
		right &= read_right(&e, obj, tile_off[k], tile_len[k], want);
	CHECK(right, "every tile read again right");
	cache_object_unref(obj);
out:
	engine_stop(&e);
}

int main(void)
{
	struct origin_server s;
	char base[] = "/tmp/tilefs-test-fetch-XXXXXX";

	if (!mkdtemp(base) || origin_start(&s) != 0) {
		CHECK(0, "a temp dir and the origin");
		return check_done();
	}
	test_tiles(&s, base);
	origin_stop(&s);
	remove_tree(base);
	return check_done();
}
