/*
 * layout.c - see layout.h.
 */
#include "cache/tiff/layout.h"
#include "cache/tiff/tiff.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void layout_init_blocks(struct layout *l, uint64_t object_size, uint64_t block_size)
{
	memset(l, 0, sizeof(*l));
	l->object_size = object_size;
	l->block_size = block_size;
}

static int unit_cmp(const void *a, const void *b)
{
	const struct layout_unit *x = a, *y = b;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->block < y->block ? -1 : x->block > y->block;
}

/* Merge overlapping units of U[0..n) (sorted); drop groups too large. */
static size_t merge_units(struct layout_unit *u, size_t n)
{
	size_t out = 0;
	for (size_t i = 0; i < n;) {
		struct layout_unit group = u[i];
		size_t j = i + 1;
		while (j < n && u[j].off < group.off + group.len) {
			uint64_t end = u[j].off + u[j].len;
			if (end > group.off + group.len)
				group.len = end - group.off;
			j++;
		}
		if (group.len <= LAYOUT_UNIT_MAX)
			u[out++] = group;
		i = j;
	}
	return out;
}

/* Unit I of a dense layout (layout.h). */
static struct layout_unit dense_unit(const struct layout *l, size_t i)
{
	size_t hdr = l->header > 0;
	if (i < hdr)
		return (struct layout_unit){ 0, l->header, UINT64_MAX };
	uint64_t k = l->first_block + (i - hdr);
	struct extent e = layout_block_extent(l, k);
	if (i == hdr && e.off < l->header) {	/* its head went to the header */
		e.len -= l->header - e.off;
		e.off = l->header;
	}
	return (struct layout_unit){ e.off, e.len, k };
}

struct layout_unit layout_unit_get(const struct layout *l, size_t i)
{
	return l->units ? l->units[i] : dense_unit(l, i);
}

/* If L's units (after a header of HEADER bytes) are the extents of
 * consecutive blocks, as dense_unit() makes them, drop the array. */
static void make_dense(struct layout *l, uint64_t header)
{
	size_t hdr = header > 0;
	if (!l->map || l->nunits <= hdr)
		return;
	l->header = header;
	l->first_block = l->units[hdr].block;
	if (l->first_block == UINT64_MAX || l->map->nblocks - l->first_block < l->nunits - hdr)
		return;
	for (size_t i = hdr; i < l->nunits; i++) {
		struct layout_unit want = dense_unit(l, i);
		if (memcmp(&want, &l->units[i], sizeof(want)) != 0)
			return;
	}
	free(l->units);
	l->units = NULL;
}

int layout_init(struct layout *l, uint64_t object_size, uint64_t block_size,
		uint64_t header_len, struct tiff_map *map)
{
	layout_init_blocks(l, object_size, block_size);
	size_t cap = 1 + (map ? (size_t)map->nblocks : 0);
	l->units = calloc(cap, sizeof(*l->units));
	if (!l->units) {
		tiff_map_free(map);
		return -ENOMEM;
	}
	l->map = map;
	size_t n = 1;		/* units[0]: the header, filled in below */
	for (uint64_t k = 0; map && k < map->nblocks; k++) {
		struct extent e = layout_block_extent(l, k);
		if (e.len == 0)
			continue;
		l->units[n++] = (struct layout_unit){ e.off, e.len, k };
	}
	qsort(l->units + 1, n - 1, sizeof(*l->units), unit_cmp);
	n = 1 + merge_units(l->units + 1, n - 1);

	/* the header: everything before the first tile, or what opening
	   fetched of a plain file */
	uint64_t header = map ? (n > 1 ? l->units[1].off : object_size) : header_len;
	if (header > object_size)
		header = object_size;
	if (header > LAYOUT_UNIT_MAX)
		header = header_len < object_size ? header_len : object_size;
	if (map && header > 0 && header < object_size) {
		/* to a 16 KiB boundary (within what opening fetched): readers
		   read in aligned buffers (4 or 8 KiB), and so an open costs no
		   more requests; the first tile gives its head up */
		uint64_t aligned = header + LAYOUT_HEADER_ALIGN - 1 - (header - 1) % LAYOUT_HEADER_ALIGN;
		header = aligned < header_len ? aligned : header > header_len ? header : header_len;
		if (header > object_size)
			header = object_size;
		size_t kept = 1;
		for (size_t i = 1; i < n; i++) {
			struct layout_unit u = l->units[i];
			if (u.off + u.len <= header)
				continue;
			if (u.off < header) {
				u.len -= header - u.off;
				u.off = header;
			}
			l->units[kept++] = u;
		}
		n = kept;
	}
	if (header == 0) {
		memmove(l->units, l->units + 1, (n - 1) * sizeof(*l->units));
		n--;
	} else {
		l->units[0] = (struct layout_unit){ 0, header, UINT64_MAX };
	}
	l->nunits = n;
	make_dense(l, header);
	return 0;
}

void layout_release(struct layout *l)
{
	free(l->units);
	tiff_map_free(l->map);
	l->units = NULL;
	l->map = NULL;
	l->nunits = 0;
	l->header = l->first_block = 0;
}

struct extent layout_block_extent(const struct layout *l, uint64_t k)
{
	const struct tiff_map *m = l->map;
	const struct tiff_block *b = &m->blocks[k];
	if (b->len == 0)
		return (struct extent){ b->off, 0 };
	uint64_t start = b->off > m->leader ? b->off - m->leader : 0;
	uint64_t end = b->off + b->len;
	end = l->object_size - end > m->trailer ? end + m->trailer : l->object_size;
	return (struct extent){ start, end - start };
}

uint64_t layout_block_index(const struct tiff_ifd *d, uint64_t plane, uint64_t row, uint64_t col)
{
	return d->first + (plane * d->down + row) * d->across + col;
}

/* Index of the last unit starting at or before OFF, or -1. */
static long unit_before(const struct layout *l, uint64_t off)
{
	long lo = 0, hi = (long)l->nunits - 1, found = -1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (layout_unit_get(l, (size_t)mid).off <= off) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

struct extent layout_unit_at(const struct layout *l, uint64_t off)
{
	long i = unit_before(l, off);
	uint64_t gap_start = 0, gap_end = l->object_size;

	if (i >= 0) {
		struct layout_unit u = layout_unit_get(l, (size_t)i);
		if (off < u.off + u.len)
			return (struct extent){ u.off, u.len };
		gap_start = u.off + u.len;
	}
	if ((size_t)(i + 1) < l->nunits)
		gap_end = layout_unit_get(l, (size_t)i + 1).off;
	uint64_t start = off - off % l->block_size;
	uint64_t end = l->block_size > gap_end - start ? gap_end : start + l->block_size;
	if (start < gap_start)
		start = gap_start;
	return (struct extent){ start, end - start };
}

/* The tile unit holding OFF into *OUT; false if none (the header, or a
 * block). */
static bool tile_unit_at(const struct layout *l, uint64_t off, struct layout_unit *out)
{
	long i = unit_before(l, off);
	if (i < 0)
		return false;
	*out = layout_unit_get(l, (size_t)i);
	return off < out->off + out->len && out->block != UINT64_MAX;
}

bool layout_is_tile(const struct layout *l, uint64_t off)
{
	struct layout_unit u;
	return tile_unit_at(l, off, &u);
}

/* Add the unit of block K to OUT unless it is OWN or already there. */
static size_t add_block_unit(const struct layout *l, uint64_t k, struct extent own,
			     struct extent *out, size_t n, size_t max)
{
	const struct tiff_block *b = &l->map->blocks[k];
	if (n >= max || b->len == 0)
		return n;
	struct extent e = layout_unit_at(l, b->off);
	if (e.off == own.off)
		return n;
	for (size_t i = 0; i < n; i++)
		if (out[i].off == e.off)
			return n;
	out[n] = e;
	return n + 1;
}

size_t layout_related(const struct layout *l, uint64_t off, enum layout_relation relation,
		      struct extent *out, size_t max)
{
	struct layout_unit u;
	if (!tile_unit_at(l, off, &u))
		return 0;
	struct extent own = { u.off, u.len };
	uint64_t k = u.block;
	const struct tiff_ifd *d = NULL;
	for (uint32_t j = 0; j < l->map->nifd; j++)
		if (k >= l->map->ifds[j].first && k < l->map->ifds[j].first + l->map->ifds[j].n)
			d = &l->map->ifds[j];
	if (!d)
		return 0;
	uint64_t per_plane = (uint64_t)d->across * d->down;
	uint64_t rel = k - d->first, plane = rel / per_plane;
	uint64_t row = rel % per_plane / d->across, col = rel % d->across;
	size_t n = 0;

	if (relation == LAYOUT_ROW) {
		for (uint64_t c = col + 1; c < d->across; c++)
			n = add_block_unit(l, layout_block_index(d, plane, row, c), own, out, n, max);
		return n;
	}
	for (int dr = -1; dr <= 1; dr++)
		for (int dc = -1; dc <= 1; dc++) {
			if ((dr < 0 && row == 0) || (dc < 0 && col == 0) ||
			    (dr > 0 && row + 1 >= d->down) || (dc > 0 && col + 1 >= d->across))
				continue;
			uint64_t r = row + (uint64_t)(int64_t)dr, c = col + (uint64_t)(int64_t)dc;
			n = add_block_unit(l, layout_block_index(d, plane, r, c), own, out, n, max);
		}
	return n;
}
