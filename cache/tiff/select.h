/*
 * select.h - which units of an object a selection names (tilefs warm's
 * --header-only, --overviews, --ifd N, --window X,Y,W,H; none of them: the
 * whole object). Pure, like the rest of the TIFF layer: a layout and a
 * selection in, sorted distinct extents out; no I/O, no messages.
 *
 * Layer: the TIFF layer, pure. Includes cache/base/ and its own folder
 * only; never the store, the origin, the engine or FUSE
 * (tests/check-layers).
 */
#ifndef TILEFS_SELECT_H
#define TILEFS_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/tiff/layout.h"

/* What to take of each object. The parts add up; every part but the whole
 * object brings the header unit with it. */
struct selection {
	bool header_only;		/* the header unit */
	bool overviews;			/* every reduced-resolution IFD */
	long ifd;			/* IFD number IFD (main chain, then
					   SubIFDs), -1: none */
	bool window;			/* the blocks under pixels [x, x+w) x
					   [y, y+h) of the full-resolution image
					   and of its masks, in every plane */
	uint64_t x, y, w, h;
};

/* Does S name nothing, so the whole object? */
bool selection_is_whole(const struct selection *s);

/*
 * The units of L that S names, sorted by offset and distinct: *out (caller
 * frees; NULL when none) and *n. Parts the object lacks (no tile map, no
 * such IFD, a window outside the image) add nothing. At most one extent
 * per unit of L, so the count is bounded by the object's size over the
 * block size plus its tiles. 0 or -ENOMEM.
 */
int selection_units(const struct layout *l, const struct selection *s, struct extent **out,
		    size_t *n);

#endif
