/* test_plan.c - the engine's pure decisions: which reader a read belongs
 * to, when a sequential reader gets a readahead window and how it grows,
 * which parts of a read are slivers, the spill after a tile, which tiles
 * a prefetch policy adds, which units share one GET, and what of its ends
 * kept edges hold. */
#include "cache/engine/plan.h"
#include "check.h"

#include <string.h>

#define MiB (1ull << 20)

static struct readahead_read rr(uint64_t off, uint64_t len, bool tile)
{
	return (struct readahead_read){ .off = off, .end = off + len, .tile = tile,
					.block_size = MiB, .object_size = 1024 * MiB,
					.window_max = 64 * MiB };
}

static void streams(void)
{
	struct stream v[2];
	uint64_t clock = 0;
	memset(v, 0, sizeof(v));
	struct stream *a = plan_stream(v, 2, &clock, 7);
	a->end = 100;
	struct stream *b = plan_stream(v, 2, &clock, 8);
	CHECK(b != a && b->id == 8 && b->end == 0, "a second reader gets its own state");
	CHECK(plan_stream(v, 2, &clock, 7)->end == 100, "a reader finds its state again");
	struct stream *c = plan_stream(v, 2, &clock, 9);
	CHECK(c == b && c->end == 0, "a third reader takes the least recently used slot");
}

static void readahead_blocks(void)
{
	struct stream s = { .id = 1 };
	struct readahead_read r = rr(0, MiB, false);
	struct extent ra = plan_readahead(&s, &r);
	CHECK(ra.len == 0, "one read is not a scan");
	r = rr(MiB, MiB, false);
	ra = plan_readahead(&s, &r);
	CHECK(ra.off == 2 * MiB && ra.len == PLAN_READAHEAD_START,
	      "two blocks in a row open a window of 1 MiB after the read (%llu+%llu)",
	      (unsigned long long)ra.off, (unsigned long long)ra.len);
	r = rr(2 * MiB, MiB / 4, false);
	ra = plan_readahead(&s, &r);
	CHECK(ra.off == 3 * MiB && ra.len == MiB + MiB / 4,
	      "topped up when half is read, from where the last window ended, doubling "
	      "(%llu+%llu)", (unsigned long long)ra.off, (unsigned long long)ra.len);
	r = rr(500 * MiB, MiB, false);
	ra = plan_readahead(&s, &r);
	CHECK(ra.len == 0 && s.ra_window == 0 && s.reads == 1, "a jump closes the window");
	r = rr(0, MiB, false);
	r.window_max = 0;
	struct stream off = { .id = 2 };
	plan_readahead(&off, &r);
	r.off = MiB, r.end = 2 * MiB;
	CHECK(plan_readahead(&off, &r).len == 0, "--readahead 0 never reads ahead");
}

static void readahead_tiles(void)
{
	struct stream s = { .id = 1 };
	uint64_t tile = 300 * 1024, off = 0;
	struct extent ra = { 0, 0 };
	int reads = 0;
	/* a tile read is 4 KiB then the rest; GDAL skips a small leader */
	while (ra.len == 0 && reads < 40) {
		struct readahead_read r = rr(off + 8, tile - 8, true);
		ra = plan_readahead(&s, &r);
		off += tile;
		reads++;
	}
	CHECK(reads == 14, "tiles read in a row open a window after 4 MiB (%d reads)", reads);
	struct stream t = { .id = 2 };
	for (int i = 0; i < 3; i++) {
		struct readahead_read r = rr((uint64_t)i * 1000 * 1024, 1000 * 1024, true);
		ra = plan_readahead(&t, &r);
	}
	CHECK(ra.len == 0, "a chip over three 1 MB tiles of a row is not a scan");
	struct stream u = { .id = 3 };
	struct readahead_read r = rr(0, 8192, true);
	plan_readahead(&u, &r);
	r = rr(4096, 8192, true);
	plan_readahead(&u, &r);
	CHECK(u.reads == 2, "a read starting in the page the last one ended in goes on");
}

static void slivers(void)
{
	CHECK(plan_sliver(2, 0, 4096, 300000, true, false, false),
	      "the first bytes of a read in the tile before are a sliver");
	CHECK(!plan_sliver(2, 0, 4096, 300000, true, true, false),
	      "not when the read goes on from the last one");
	CHECK(plan_sliver(2, 1, 4096, 300000, true, false, true),
	      "the last bytes of a read in the tile after are a sliver");
	CHECK(!plan_sliver(2, 1, 4096, 300000, true, false, false),
	      "not when nothing before them was wanted whole");
	CHECK(!plan_sliver(1, 0, 4096, 300000, true, false, false), "a read of one unit has none");
	CHECK(!plan_sliver(2, 0, PLAN_SLIVER_MAX, 300000, true, false, false),
	      "16 KiB or more is wanted whole");
	CHECK(!plan_sliver(2, 0, 4096, 4096, true, false, false), "a whole unit is no sliver");
	CHECK(!plan_sliver(2, 0, 4096, 300000, false, false, false), "blocks have no slivers");
	CHECK(!plan_sliver(3, 1, 4096, 300000, true, false, true), "middle parts are wanted");
}

static void spill(void)
{
	CHECK(plan_spill(10000, 1 << 30) == PLAN_SLIVER_MAX - 10000, "to the next 16 KiB");
	CHECK(plan_spill(PLAN_SLIVER_MAX, 1 << 30) == 0, "none on a boundary");
	CHECK(plan_spill(10000, 12000) == 2000, "within the object");
}

static void parts(void)
{
	uint64_t ends[PLAN_PARTS_MAX];
	struct plan_unit one[] = { { 0, 1400000, false, false } };
	size_t k = plan_parts(one, 1, 0, 1400000, false, ends);
	CHECK(k == 2 && ends[0] == 700000 / 4096 * 4096 && ends[1] == 1400000,
	      "a 1.4 MB tile is fetched in two parts, cut at 4 KiB (%zu: %llu)", k,
	      (unsigned long long)ends[0]);
	k = plan_parts(one, 1, 0, 1400000, true, ends);
	CHECK(k == 1 && ends[0] == 1400000, "never in the background");
	struct plan_unit small[] = { { 0, 400000, false, false } };
	CHECK(plan_parts(small, 1, 0, 400000, false, ends) == 1, "nor under 1 MiB");
	struct plan_unit big[] = { { 0, 8 * MiB, false, false } };
	k = plan_parts(big, 1, 0, 8 * MiB, false, ends);
	CHECK(k == PLAN_PARTS_MAX && ends[0] == 2 * MiB && ends[3] == 8 * MiB,
	      "at most four parts (%zu)", k);
	struct plan_unit blocks[16];
	for (int i = 0; i < 16; i++)
		blocks[i] = (struct plan_unit){ (uint64_t)i * 256 * 1024 + 100, 256 * 1024, false,
						false };
	k = plan_parts(blocks, 16, 100, 4 * MiB + 16384, false, ends);
	bool on_units = true;
	for (size_t i = 0; i + 1 < k; i++) {
		bool found = false;
		for (int j = 0; j < 16; j++)
			found |= ends[i] == blocks[j].off + blocks[j].len;
		on_units &= found;
	}
	CHECK(k == 4 && on_units && ends[3] == 100 + 4 * MiB + 16384,
	      "several units: parts end where units end, the last with the spill (%zu)", k);
	struct plan_unit tile_sliver[] = { { 100, 3 * MiB, false, false },
					   { 100 + 3 * MiB, 8000, false, true } };
	k = plan_parts(tile_sliver, 2, 100, 3 * MiB + 8000, false, ends);
	CHECK(k == 4 && ends[0] % 4096 == 0 && ends[2] < 100 + 3 * MiB,
	      "a large tile with a sliver after it: the tile is cut (%zu)", k);
}

static void prefetch_budget(void)
{
	struct extent v[] = { { 0, 6 * MiB }, { 6 * MiB, 6 * MiB }, { 12 * MiB, 6 * MiB } };
	uint64_t budget = PLAN_PREFETCH_BYTES_MAX;
	CHECK(plan_prefetch_fit(v, 3, &budget) == 2 && budget == 4 * MiB,
	      "a read adds the neighbours that fit in 16 MiB, in order");
	CHECK(plan_prefetch_fit(v, 3, &budget) == 0, "and nothing once the budget is spent");
	struct extent big = { 0, 32 * MiB };
	budget = PLAN_PREFETCH_BYTES_MAX;
	CHECK(plan_prefetch_fit(&big, 1, &budget) == 0, "a unit larger than the budget is not added");
}

static void related(void)
{
	enum layout_relation rel = LAYOUT_ROW;
	CHECK(plan_related(PREFETCH_NEIGHBORS, &rel) && rel == LAYOUT_NEIGHBORS,
	      "neighbors: the tiles around a miss");
	CHECK(plan_related(PREFETCH_ROW, &rel) && rel == LAYOUT_ROW, "row: the rest of its row");
	CHECK(!plan_related(PREFETCH_NONE, &rel), "none adds none");
	CHECK(!plan_related(PREFETCH_OBJECT, &rel), "object adds no tiles (it streams the object)");
	CHECK(!plan_related(PREFETCH_AUTO, &rel), "auto adds none before it is resolved");
}

static bool gap_busy_at(void *arg, uint64_t from, uint64_t to)
{
	uint64_t busy = *(uint64_t *)arg;
	return busy >= from && busy < to;
}

static void runs(void)
{
	struct plan_unit v[] = {
		{ 0, 100, false, false },
		{ 100, 100, true, false },
		{ 250, 100, true, false },	/* 50 bytes after the last */
		{ 1000, 100, true, false },
	};
	uint64_t busy = UINT64_MAX;
	bool demand;
	size_t end = plan_run(v, 0, 4, 0, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 2 && demand, "adjacent units share a GET; a reader waits on it");
	end = plan_run(v, 0, 4, 64, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 3, "units merge_gap apart share one too");
	busy = 220;
	end = plan_run(v, 0, 4, 64, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 2, "never across a gap holding a unit cached or in flight");
	busy = UINT64_MAX;
	end = plan_run(v, 0, 4, 64, 300, gap_busy_at, &busy, &demand);
	CHECK(end == 2, "a GET stays within max_request");
	end = plan_run(v, 1, 4, 1000, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 4 && !demand, "prefetched units alone run in the background");
	struct plan_unit s[] = { { 0, 4096, false, true }, { 8192, 4096, false, false } };
	busy = 5000;
	end = plan_run(s, 0, 2, 8192, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 2, "a sliver's gap is not looked up");
	/* a read's sliver of a tile, and the tile itself, added by a policy */
	struct plan_unit o[] = { { 0, 20000, false, false },
				 { 20000, 4000, false, true },
				 { 20000, 30000, true, false },
				 { 50000, 100, true, false } };
	end = plan_run(o, 0, 4, 0, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 4 && demand, "a sliver and the tile it is part of share one GET, and so "
	      "does what follows the tile (%zu)", end);
	struct plan_unit o2[] = { { 20000, 30000, true, false }, { 20000, 4000, false, true },
				  { 50000, 100, true, false } };
	end = plan_run(o2, 0, 3, 0, 1 << 20, gap_busy_at, &busy, &demand);
	CHECK(end == 3 && demand, "in either order; the GET ends where the tile ends (%zu)", end);
}

/* plan_trim() of V[0..n) with HEAD and TAIL held: OFF and LEN? */
static bool trimmed(const struct plan_unit *v, size_t n, uint64_t head, uint64_t tail,
		    uint64_t off, uint64_t len)
{
	struct extent x = plan_trim(v, n, head, tail);
	if (x.off == off && x.len == len)
		return true;
	printf("# got %llu+%llu, not %llu+%llu\n", (unsigned long long)x.off,
	       (unsigned long long)x.len, (unsigned long long)off, (unsigned long long)len);
	return false;
}

static void trim(void)
{
	struct plan_unit one[] = { { 100000, 20000, false, false } };
	CHECK(trimmed(one, 1, 0, 0, 100000, 20000), "nothing held: the whole tile");
	CHECK(trimmed(one, 1, 6000, 0, 106000, 14000),
	      "its first bytes held (kept beside the tile before): the GET starts after them");
	CHECK(trimmed(one, 1, 0, 3000, 100000, 17000),
	      "its last bytes held (kept beside the tile after): the GET ends before them");
	CHECK(trimmed(one, 1, 6000, 3000, 106000, 11000), "both");
	CHECK(trimmed(one, 1, 12000, 8000, 0, 0) && trimmed(one, 1, 16384, 16384, 0, 0),
	      "held whole, between its two neighbours' edges: no GET");
	CHECK(trimmed(one, 1, 20000, 0, 0, 0), "or by one edge");

	struct plan_unit three[] = { { 100000, 20000, false, false },
				     { 120000, 30000, false, false },
				     { 150500, 9000, true, false } };
	CHECK(trimmed(three, 3, 5000, 2000, 105000, 150500 + 7000 - 105000),
	      "a run: the first unit's head and the last's tail; the units between whole");
	CHECK(trimmed(three, 3, 20000, 9000, 120000, 30000),
	      "first and last held whole: from the next unit to the end of the one before "
	      "the last, not the gap");
	CHECK(trimmed(three, 2, 20000, 30000, 0, 0), "two units held whole: no GET");
	struct plan_unit gap[] = { { 100000, 10000, false, false }, { 112000, 10000, false, false } };
	CHECK(trimmed(gap, 2, 10000, 3000, 112000, 7000),
	      "the first held whole: not the gap after it either");

	/* slivers of the run's own units: never left out */
	struct plan_unit sliver_in_first[] = { { 100000, 20000, true, false },
					       { 100000, 4000, false, true },
					       { 120000, 20000, false, false } };
	CHECK(trimmed(sliver_in_first, 3, 6000, 0, 100000, 40000),
	      "a sliver starting where the first unit starts: nothing trimmed before it");
	CHECK(trimmed(sliver_in_first, 3, 20000, 0, 100000, 40000),
	      "even when the first unit is held whole");
	struct plan_unit sliver_in_last[] = { { 100000, 20000, false, false },
					      { 120000, 20000, true, false },
					      { 136000, 4000, false, true } };
	CHECK(trimmed(sliver_in_last, 3, 5000, 0, 105000, 35000),
	      "a sliver last (it has no tail held): the GET ends where it ends");
	struct plan_unit last_then_sliver[] = { { 100000, 20000, false, false },
						{ 120000, 20000, true, false },
						{ 125000, 2000, false, true } };
	CHECK(trimmed(last_then_sliver, 3, 0, 0, 100000, 40000),
	      "or where the unit it lies in ends");
}

/* A cut for the tier keys: big units, then ten 10,000-byte strips. */
static const struct extent tier_cut[] = {
	{ 0, 100000 }, { 100000, 100000 }, { 200000, 100000 }, { 300000, 748576 },
	{ 1048576, 10000 }, { 1058576, 10000 }, { 1068576, 10000 }, { 1078576, 10000 },
	{ 1088576, 10000 }, { 1098576, 10000 }, { 1108576, 10000 }, { 1118576, 10000 },
	{ 1128576, 10000 }, { 1138576, 10000 }, { 1148576, 851424 },
};
#define TIER_SIZE 2000000u

static struct extent tier_unit_at(void *arg, uint64_t off)
{
	(void)arg;
	for (size_t i = 0; i < sizeof(tier_cut) / sizeof(tier_cut[0]); i++)
		if (off >= tier_cut[i].off && off < tier_cut[i].off + tier_cut[i].len)
			return tier_cut[i];
	return (struct extent){ off, 0 };
}

/* plan_tier_run() over V[0..n): the end, with *key. */
static size_t tier_run(const struct plan_unit *v, size_t n, struct extent *key)
{
	bool demand;
	return plan_tier_run(v, 0, n, TIER_SIZE, tier_unit_at, NULL, &demand, key);
}

static void tier_keys(void)
{
	struct extent key;
	struct plan_unit tile[] = { { 200000, 100000, false, false } };
	CHECK(tier_run(tile, 1, &key) == 1 && key.off == 196608 && key.len == 311296 - 196608,
	      "a tile alone: widened to 16 KiB boundaries (%llu+%llu)",
	      (unsigned long long)key.off, (unsigned long long)key.len);
	struct plan_unit with[] = { { 196608, 3392, false, true }, { 200000, 100000, false, false },
				    { 300000, 3104, false, true } };
	CHECK(tier_run(with, 3, &key) == 3 && key.off == 196608 && key.len == 311296 - 196608,
	      "with the slivers a reader wants beside it: the same key");
	CHECK(tier_run(with + 1, 2, &key) == 2 && key.off == 196608,
	      "with one of them: the same key");
	struct plan_unit two[] = { { 100000, 100000, false, false }, { 200000, 100000, false, false } };
	CHECK(tier_run(two, 2, &key) == 1 && key.off == 98304 && key.len == 212992 - 98304,
	      "two adjacent tiles: one key each, never merged");

	struct plan_unit strips[] = { { 1078576, 10000, false, false },
				      { 1098576, 10000, true, false } };
	/* 1163264: the 16 KiB boundary after them, in the large unit after */
	CHECK(tier_run(strips, 2, &key) == 2 && key.off == 1048576 && key.len == 1163264 - 1048576,
	      "strips: every strip of their window, up to the large units on either side and "
	      "their edges (%llu+%llu)", (unsigned long long)key.off, (unsigned long long)key.len);
	CHECK(tier_run(strips + 1, 1, &key) == 1 && key.off == 1048576 && key.len == 1163264 - 1048576,
	      "one strip of it: the same key");
	struct plan_unit strip_sliver[] = { { 1070000, 2000, false, true },
					    { 1150000, 3000, false, true } };
	CHECK(tier_run(strip_sliver, 2, &key) == 2 && key.off == 1048576 &&
	      key.len == 1163264 - 1048576,
	      "a sliver of a strip and one of the tile after: the strips' window");
	struct plan_unit tile_sliver[] = { { 250000, 2000, false, true },
					   { 1078576, 10000, false, false } };
	CHECK(tier_run(tile_sliver, 2, &key) == 1 && key.len == 0,
	      "a sliver inside a tile not being fetched: alone");
	/* the end of the tile at 100000 read on into the tile at 200000,
	   which is cached or in flight: the key that tile is fetched with */
	struct plan_unit end_sliver[] = { { 197000, 3000, false, true } };
	CHECK(tier_run(end_sliver, 1, &key) == 1 && key.off == 196608 &&
	      key.len == 311296 - 196608,
	      "the end of a tile, the tile after not being fetched: that tile's key (%llu+%llu)",
	      (unsigned long long)key.off, (unsigned long long)key.len);
	/* the start of the tile at 300000 read on from the tile before */
	struct plan_unit start_sliver[] = { { 300000, 3000, false, true } };
	CHECK(tier_run(start_sliver, 1, &key) == 1 && key.off == 196608 &&
	      key.len == 311296 - 196608,
	      "the start of a tile, the tile before not being fetched: that tile's key");
	struct plan_unit both[] = { { 197000, 3000, false, true }, { 300000, 3000, false, true } };
	CHECK(tier_run(both, 2, &key) == 2 && key.off == 196608,
	      "two slivers that key holds: one GET");
	/* 185000: before the 16 KiB boundary the next tile's key starts at */
	struct plan_unit far_sliver[] = { { 185000, 15000, false, true } };
	CHECK(tier_run(far_sliver, 1, &key) == 1 && key.len == 0,
	      "a sliver no key beside it holds: alone");
}

int main(void)
{
	streams();
	readahead_blocks();
	readahead_tiles();
	slivers();
	spill();
	parts();
	prefetch_budget();
	related();
	runs();
	trim();
	tier_keys();
	return check_done();
}
