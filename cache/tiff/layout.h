/*
 * layout.h - how an object is cut into cache units. A unit is an extent
 * (offset, length); the cache fetches, stores, checksums and evicts whole
 * units, so every process must cut one object version the same way: the
 * cut depends only on what the index stores for it (size, block size,
 * header length and tile map).
 *
 * A TIFF's units are its header region [0, first tile, rounded up to 16
 * KiB) and each tile or
 * strip with GDAL's leader and trailer bytes around it (tiles whose bytes
 * overlap share one unit). Every other byte, and every byte of a file that
 * is not a usable TIFF, lies in fixed blocks aligned to the block size and
 * clipped to the gaps between those units; a plain file's first
 * header_len bytes are a unit of their own, since opening fetched them.
 */
#ifndef TILEFS_LAYOUT_H
#define TILEFS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tiff_ifd;
struct tiff_map;

#define LAYOUT_UNIT_MAX (32ull << 20)	/* tiles larger than this go in blocks */
#define LAYOUT_HEADER_ALIGN 16384ull	/* where the header unit may end */

struct extent {
	uint64_t off, len;
};

struct layout_unit {
	uint64_t off, len;
	uint64_t block;			/* its first TIFF block; UINT64_MAX: header */
};

/*
 * The units a map cuts, sorted and disjoint. A COG's tiles lie one after
 * the other in block order, so its units are the header and then the
 * extents of consecutive blocks: such a layout keeps no array (units NULL,
 * "dense"), and a unit is computed from the map when asked for. Only a
 * file whose tiles are out of order, overlap, are sparse or too large
 * keeps the array (24 bytes a unit). Either way, nunits units.
 */
struct layout {
	uint64_t object_size;
	uint64_t block_size;
	size_t nunits;
	struct layout_unit *units;	/* owned; NULL: dense (or no units) */
	uint64_t header;		/* dense: the header unit's length (0: none) */
	uint64_t first_block;		/* dense: the block of the unit after it */
	struct tiff_map *map;		/* owned; NULL for plain bytes */
};

/* Fixed blocks only (objects cached before tile maps existed). */
void layout_init_blocks(struct layout *l, uint64_t object_size, uint64_t block_size);
/*
 * Cut an object of OBJECT_SIZE bytes by MAP (taken over, even on failure;
 * NULL: not a TIFF, so a header unit of HEADER_LEN bytes, then blocks).
 * 0 or -ENOMEM. Release with layout_release().
 */
int layout_init(struct layout *l, uint64_t object_size, uint64_t block_size,
		uint64_t header_len, struct tiff_map *map);
void layout_release(struct layout *l);

/* Unit I (< nunits) of L, in offset order. */
struct layout_unit layout_unit_get(const struct layout *l, size_t i);
/* The unit holding byte OFF (< object_size). */
struct extent layout_unit_at(const struct layout *l, uint64_t off);
/* Is the unit holding OFF a tile (or strip)? */
bool layout_is_tile(const struct layout *l, uint64_t off);

/*
 * TIFF block geometry, for layouts with a tile map. Block K's bytes with
 * GDAL's leader before and trailer after it (the trailer clipped to the
 * object); len 0 if the block is sparse.
 */
struct extent layout_block_extent(const struct layout *l, uint64_t k);
/* The index in the tile map of IFD D's block at PLANE, ROW, COL. */
uint64_t layout_block_index(const struct tiff_ifd *d, uint64_t plane, uint64_t row,
			    uint64_t col);

/* Which tiles are related to a tile (layout_related()). */
enum layout_relation {
	LAYOUT_NEIGHBORS,		/* the (up to) eight around it */
	LAYOUT_ROW,			/* the rest of its row, after it */
};

/*
 * The units of the tiles RELATION relates to the tile unit holding OFF, in
 * the same IFD and plane. Writes at most MAX distinct units (never OFF's
 * own) to OUT; returns how many (0 when OFF is not in a tile).
 */
size_t layout_related(const struct layout *l, uint64_t off, enum layout_relation relation,
		      struct extent *out, size_t max);

#endif
