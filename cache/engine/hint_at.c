/*
 * hint_at.c - where a read lies in the full-resolution image of its
 * object, for a hint to tell which of its entries a read is of: read_at(),
 * read_at_window(), window_inside(); and the rule under them, which tile a
 * read is a read of (hint_at.h).
 *
 * Level 0 of the engine (engine_int.h): pure, calls nothing of it.
 */
#include "cache/engine/hint_at.h"
#include "cache/engine/engine_int.h"
#include "cache/tiff/tiff.h"

#include <inttypes.h>
#include <stdio.h>

#define HINT_FINE (16u << 10)	/* tiles or strips under this: a read of
				   a reader's buffer across their border
				   holds a neighbour's middle byte */

bool window_inside(const struct layout *l, uint64_t x, uint64_t y, uint64_t w, uint64_t h,
		   char *why, size_t why_size)
{
	const struct tiff_map *m = l->map;
	if (!m) {
		snprintf(why, why_size, "not a tiled TIFF, so no window");
		return false;
	}
	uint32_t full = tiff_full_ifd(m);
	if (full == m->nifd) {
		snprintf(why, why_size, "no full-resolution image");
		return false;
	}
	const struct tiff_ifd *d = &m->ifds[full];
	if (x + w > d->width || y + h > d->height) {
		snprintf(why, why_size, "window %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			 " is outside the image (%" PRIu32 "x%" PRIu32 ")", x, y, w, h, d->width,
			 d->height);
		return false;
	}
	return true;
}

bool read_holds_tile(uint64_t tile_off, uint64_t tile_len, uint64_t off, uint64_t len)
{
	uint64_t middle = tile_off + tile_len / 2;
	return tile_len > 0 && middle >= off && middle - off < len;
}

/* Tile K of L, if a full-resolution tile of it (D) whose middle byte a
 * read of [OFF, OFF+LEN) holds: where it lies in the image. */
static bool tile_held(const struct layout *l, const struct tiff_ifd *d, uint64_t k, uint64_t off,
		      uint64_t len, struct read_at *at)
{
	if (k == UINT64_MAX || k < d->first || k >= d->first + d->n || !d->across || !d->down)
		return false;
	struct extent e = layout_block_extent(l, k);
	if (!read_holds_tile(e.off, e.len, off, len))
		return false;
	uint64_t in_plane = (k - d->first) % ((uint64_t)d->across * d->down);
	at->tile = true;
	at->fine = e.len < HINT_FINE;
	at->margin = at->fine ? HINT_FINE / e.len + 1 : 0;
	at->row = in_plane / d->across;
	at->col = in_plane % d->across;
	at->block_w = d->block_w;
	at->block_h = d->block_h;
	return true;
}

/*
 * A read is of the tile whose middle byte it holds (read_holds_tile()).
 * Looks at the tile of the unit OFF lies in, and of the unit after it (the
 * first tile in the file may have given its head to the header unit, whose
 * own block is none).
 */
struct read_at read_at(const struct layout *l, uint64_t off, uint64_t len)
{
	struct read_at at = { 0 };
	const struct tiff_map *m = l->map;
	size_t lo = 0, hi = l->nunits;

	if (!m)
		return at;
	uint32_t full = tiff_full_ifd(m);
	if (full == m->nifd)
		return at;
	const struct tiff_ifd *d = &m->ifds[full];
	while (lo < hi) {	/* the first unit starting after OFF */
		size_t mid = lo + (hi - lo) / 2;
		if (layout_unit_get(l, mid).off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && tile_held(l, d, layout_unit_get(l, lo - 1).block, off, len, &at))
		return at;
	if (lo < l->nunits)
		tile_held(l, d, layout_unit_get(l, lo).block, off, len, &at);
	return at;
}

bool read_at_window(const struct read_at *at, uint64_t x, uint64_t y, uint64_t w, uint64_t h)
{
	if (!at->tile || w == 0 || h == 0)
		return false;
	uint64_t m = at->margin;
	return at->col + m >= x / at->block_w && at->col <= (x + w - 1) / at->block_w + m &&
	       at->row + m >= y / at->block_h && at->row <= (y + h - 1) / at->block_h + m;
}
