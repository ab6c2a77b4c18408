/*
 * layout.h - how an object is cut into cache units. A unit is an extent
 * (offset, length); the cache fetches, stores, checksums and evicts whole
 * units. Today every object is cut into fixed blocks; a TIFF-aware layout
 * (tiles as units) plugs in behind layout_unit_at().
 */
#ifndef TILEFS_LAYOUT_H
#define TILEFS_LAYOUT_H

#include <stdint.h>

struct extent {
	uint64_t off, len;
};

struct layout {
	uint64_t object_size;
	uint64_t block_size;
};

void layout_init_blocks(struct layout *l, uint64_t object_size, uint64_t block_size);
/* The unit holding byte OFF (< object_size). */
struct extent layout_unit_at(const struct layout *l, uint64_t off);

#endif
