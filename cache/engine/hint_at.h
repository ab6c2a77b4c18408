/*
 * hint_at.h - the rule by which a read counts as a read of a tile: it
 * holds the tile's middle byte. A reader reads a tile whole, so one of its
 * reads holds the middle; a read at either end of a tile is not enough,
 * since readers' libraries read a few KiB across the border of the next
 * tile (GDAL's and glibc stdio's aligned buffers: a tile read starts in
 * the last bytes of the tile before it and ends in the first bytes of the
 * tile after), which nobody meant to read. The hints (hint_at.c's
 * read_at()) and mount --record (fs/record.c) both count tiles so.
 *
 * Layer: the engine; pure, includes nothing of tilefs.
 */
#ifndef TILEFS_HINT_AT_H
#define TILEFS_HINT_AT_H

#include <stdbool.h>
#include <stdint.h>

/* Does a read of [OFF, OFF+LEN) hold the middle byte of the tile of
 * TILE_LEN bytes at TILE_OFF (false for an empty tile)? */
bool read_holds_tile(uint64_t tile_off, uint64_t tile_len, uint64_t off, uint64_t len);

#endif
