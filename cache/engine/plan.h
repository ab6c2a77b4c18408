/*
 * plan.h - the engine's pure decisions, apart from its locks, the index and
 * the network so that they can be tested alone (tests/unit/test_plan.c):
 * which reader a read belongs to, what to read ahead of a sequential
 * reader, which parts of a read are slivers, how far a GET spills past a
 * tile, which tiles a prefetch policy adds, which units share one GET,
 * what of a GET kept edges hold already, and the ranges a tier keys on.
 *
 * Layer: the engine. Includes the TIFF layer's extent and relations, and
 * the prefetch policies (cache.h).
 */
#ifndef TILEFS_PLAN_H
#define TILEFS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/engine/cache.h"
#include "cache/tiff/layout.h"

/*
 * Readers align their reads to their buffer size (stdio, GDAL: 4 or 8 KiB),
 * so a read of one tile also asks for the bytes it shares with each
 * neighbour's buffer. Those few bytes of a tile nobody wants are fetched
 * alone (a sliver, in the same GET as the tile) rather than the neighbour
 * whole, and kept, with the bytes up to the next PLAN_SLIVER_MAX boundary
 * after each tile fetched for a reader (the spill).
 */
#define PLAN_SLIVER_MAX 16384		/* more than any reader's buffer alignment */

#define PLAN_READAHEAD_SLACK (64u << 10)	/* a skip this small is still sequential */
#define PLAN_READAHEAD_OVERLAP 8192		/* and so is a step back this small */
#define PLAN_READAHEAD_TILE_TRIGGER (4u << 20)	/* sequential tile bytes before readahead */
#define PLAN_READAHEAD_READS 16			/* or this many reads in a row */
#define PLAN_READAHEAD_START (1u << 20)

/* One reader's sequential reads of an object (readahead). */
struct stream {
	uint64_t id;			/* the reader (0: free) */
	uint64_t used;			/* the clock when last read */
	uint64_t end, bytes, reads;	/* its run of sequential reads */
	uint64_t ra_end, ra_window;	/* read ahead up to; next window */
};

/* The state of reader ID among STREAMS[0..n), taking the least recently
 * used slot for a new one; *CLOCK ticks once per call. */
struct stream *plan_stream(struct stream *streams, size_t n, uint64_t *clock, uint64_t id);

/* What a read of an object says about reading ahead. */
struct readahead_read {
	uint64_t off, end;		/* the read */
	bool tile;			/* it starts in a tile */
	uint64_t block_size;		/* the object's plain block size */
	uint64_t object_size;
	uint64_t window_max;		/* --readahead; 0: never read ahead */
};

/*
 * Note read R by stream S and return what to read ahead of it ({0, 0}:
 * nothing). Reads that follow each other (small forward skips allowed,
 * such as GDAL's tile leaders; the kernel reads whole pages, so a read may
 * start in the page the previous one ended in) for long enough open a
 * window that doubles each time it is topped up; any other read closes it.
 * Tiles need a longer run than blocks (4 MiB or 16 reads), so that a chip
 * over two or three tiles of a row is not taken for a scan.
 */
struct extent plan_readahead(struct stream *s, const struct readahead_read *r);

/*
 * Is part I of a read that touches N units a sliver? The part is PART_LEN
 * bytes of a unit of UNIT_LEN; TILE: the unit is a tile; GOES_ON: the read
 * starts where the reader's last read ended; READING: an earlier part of
 * this read is wanted whole. A read may start in the tile before the one
 * it wants (unless it goes on from the last read) or end in the tile after
 * it: those few bytes are what the alignment asked for.
 */
bool plan_sliver(size_t n, size_t i, uint64_t part_len, uint64_t unit_len, bool tile,
		 bool goes_on, bool reading);

/* Bytes a GET ending at END (in a tile, for a waiting reader) brings past
 * it: to the next PLAN_SLIVER_MAX boundary, within OBJECT_SIZE. Not when
 * the bytes after END are cached, in flight or kept already (fetch.c). */
uint64_t plan_spill(uint64_t end, uint64_t object_size);

/* A unit to fetch, as run merging sees it. */
struct plan_unit {
	uint64_t off, len;
	bool prefetch;			/* no reader waits for it */
	bool sliver;
};

/*
 * The slivers and spills kept as edges are the first or last bytes of a
 * tile not fetched whole, so when that tile is fetched they are its bytes
 * already: the GET of a run starts after the bytes kept of its first unit
 * and ends before those kept of its last, and the run takes them from the
 * edges (invariant E3), so no byte of a tile read tile by tile is fetched
 * twice. For the run UNITS[0..n) (sorted by offset; a sliver may lie in
 * the unit it is part of), of whose first unit kept edges hold the first
 * HEAD bytes and of whose last unit the last TAIL bytes (0 for a sliver),
 * returns the range its GET must still bring: it never leaves out a byte
 * of another unit of the run, nor brings the gap beside a unit held whole.
 * len 0: the edges hold every byte of the run, which needs no GET.
 */
struct extent plan_trim(const struct plan_unit *units, size_t n, uint64_t head, uint64_t tail);

/*
 * A GET of LEN bytes for a reader is split into this many parallel GETs of
 * consecutive parts: object stores (and most servers) limit the rate of one
 * connection, so a 1.4 MB tile at 60 MB/s spends 23 ms in transfer after
 * its first byte; in four parts, 6 ms. Parts are about PLAN_PART_MIN bytes
 * or more; background GETs are never split (they must leave connections to
 * readers).
 */
#define PLAN_PART_MIN (512u << 10)
#define PLAN_PARTS_MAX 4

/*
 * Cut the GET of [off, off+len), which holds UNITS[0..n) (sorted; the
 * spill may follow the last), into parts: writes the end of
 * each part to PART_ENDS (room for PLAN_PARTS_MAX) and returns how many.
 * A part ends where a unit ends when one ends near where it should (so
 * that blocks stay whole), else at a 4 KiB boundary (inside a large tile).
 */
size_t plan_parts(const struct plan_unit *units, size_t n, uint64_t off, uint64_t len,
		  bool background, uint64_t *part_ends);

/* Bytes of units a prefetch policy may add to one read: with units of up
 * to 32 MiB, 512 of them would otherwise be a few GiB in flight. */
#define PLAN_PREFETCH_BYTES_MAX (16u << 20)

/* Does POLICY add related tiles to a tile miss, and which (*RELATION, for
 * layout_related())? NONE adds none, nor do OBJECT (it streams the whole
 * object instead) and AUTO (resolved to one of those first). */
bool plan_related(enum prefetch_policy policy, enum layout_relation *relation);

/* How many of the N units V a prefetch policy named fit within *BUDGET
 * bytes, taking them in order; their bytes are taken off *BUDGET. */
size_t plan_prefetch_fit(const struct extent *v, size_t n, uint64_t *budget);

/* Does [from, to) hold a unit cached or in flight (so a GET across that gap
 * would fetch it again)? */
typedef bool (*plan_gap_fn)(void *arg, uint64_t from, uint64_t to);

/*
 * The run of units V[i..end) (sorted by offset) that share one GET, and
 * returns END: units at most MERGE_GAP apart (a sliver and the unit it
 * lies in, which overlap, always), up to MAX_REQUEST bytes, and
 * never across a gap that GAP_BUSY says holds a unit (slivers' gaps are not
 * asked about). *DEMAND says whether a reader waits for any of them.
 */
size_t plan_run(const struct plan_unit *v, size_t i, size_t n, uint64_t merge_gap,
		uint64_t max_request, plan_gap_fn gap_busy, void *arg, bool *demand);

/*
 * Under a cache tier keyed by exact ranges (--tier), every machine should
 * ask for the same ranges whatever it had cached or in flight when, so a
 * GET's range depends on the object's cut alone (its key):
 *  - a unit of PLAN_TIER_UNIT_MIN bytes or more (a tile, a block) is
 *    fetched by itself, widened to PLAN_SLIVER_MAX boundaries within the
 *    object, so that the slivers an aligned reader wants beside it come in
 *    the same GET, whichever of them this read found missing;
 *  - smaller units (strips), and slivers of them, are fetched with every
 *    small unit that starts in the same PLAN_TIER_WINDOW-aligned window,
 *    up to the nearest large unit on either side and its edge;
 *  - a sliver of a large unit that is not being fetched comes with the
 *    key of the unit beside it whose key holds it (the end of a unit read
 *    on into a tile: that tile's key), whether or not that unit is cached
 *    or in flight here; with none, it goes alone (the same range on every
 *    machine whose reader reads the same bytes).
 * Returns the end j of the run from V[i] and sets *KEY ({0, 0}: just the
 * run's own units). UNIT_AT(ARG, off) is the unit holding off.
 */
#define PLAN_TIER_UNIT_MIN (64u << 10)
#define PLAN_TIER_WINDOW (1u << 20)
typedef struct extent (*plan_unit_at_fn)(void *arg, uint64_t off);
size_t plan_tier_run(const struct plan_unit *v, size_t i, size_t n, uint64_t object_size,
		     plan_unit_at_fn unit_at, void *unit_arg, bool *demand, struct extent *key);

#endif
