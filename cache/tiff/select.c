/*
 * select.c - see select.h. The header unit is the one holding byte 0; a
 * block is taken as layout_block_extent() gives it, so with GDAL's leader
 * and trailer, and as every unit of L it overlaps.
 */
#include "cache/tiff/select.h"
#include "cache/tiff/tiff.h"

#include <errno.h>
#include <stdlib.h>

struct unit_list {
	struct extent *v;
	size_t n, cap;
	int err;
};

bool selection_is_whole(const struct selection *s)
{
	return !s->header_only && !s->overviews && s->ifd < 0 && !s->window;
}

/* Add the units holding [off, end) of L. */
static void want_range(struct unit_list *u, const struct layout *l, uint64_t off, uint64_t end)
{
	if (end > l->object_size)
		end = l->object_size;
	while (off < end && !u->err) {
		struct extent e = layout_unit_at(l, off);
		if (u->n == u->cap) {
			size_t cap = u->cap ? 2 * u->cap : 64;
			struct extent *grown = realloc(u->v, cap * sizeof(*grown));
			if (!grown) {
				u->err = -ENOMEM;
				return;
			}
			u->v = grown;
			u->cap = cap;
		}
		u->v[u->n++] = e;
		off = e.off + e.len;
	}
}

/* Add block K of L's tile map, with its leader and trailer. */
static void want_block(struct unit_list *u, const struct layout *l, uint64_t k)
{
	struct extent e = layout_block_extent(l, k);
	if (e.len)
		want_range(u, l, e.off, e.off + e.len);
}

static void want_ifd(struct unit_list *u, const struct layout *l, uint32_t i)
{
	const struct tiff_ifd *d = &l->map->ifds[i];
	for (uint64_t k = d->first; k < d->first + d->n; k++)
		want_block(u, l, k);
}

/* Add the blocks of IFD I under the pixel window of S, in every plane. */
static void want_window(struct unit_list *u, const struct layout *l, uint32_t i,
			const struct selection *s)
{
	const struct tiff_ifd *d = &l->map->ifds[i];
	if (s->x >= d->width || s->y >= d->height || !d->block_w || !d->block_h)
		return;
	uint64_t x1 = s->x + s->w < d->width ? s->x + s->w : d->width;
	uint64_t y1 = s->y + s->h < d->height ? s->y + s->h : d->height;
	uint64_t c0 = s->x / d->block_w, c1 = (x1 - 1) / d->block_w;
	uint64_t r0 = s->y / d->block_h, r1 = (y1 - 1) / d->block_h;
	if (c1 >= d->across)
		c1 = d->across - 1;
	if (r1 >= d->down)
		r1 = d->down - 1;
	for (uint64_t p = 0; p < d->planes; p++)
		for (uint64_t r = r0; r <= r1; r++)
			for (uint64_t c = c0; c <= c1; c++)
				want_block(u, l, layout_block_index(d, p, r, c));
}

/* The window's IFDs: the full-resolution image and the masks of its size
 * after it. */
static void want_windows(struct unit_list *u, const struct layout *l, const struct selection *s)
{
	const struct tiff_map *m = l->map;
	uint32_t full = tiff_full_ifd(m);
	for (uint32_t i = full; i < m->nifd; i++) {
		const struct tiff_ifd *d = &m->ifds[i];
		if (i == full || (d->subfile_type == 4 && d->width == m->ifds[full].width &&
				  d->height == m->ifds[full].height))
			want_window(u, l, i, s);
	}
}

static int extent_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

int selection_units(const struct layout *l, const struct selection *s, struct extent **out,
		    size_t *n)
{
	struct unit_list u = { 0 };
	const struct tiff_map *m = l->map;

	*out = NULL;
	*n = 0;
	if (selection_is_whole(s)) {
		/* in order and distinct as layout_unit_at() walks them */
		want_range(&u, l, 0, l->object_size);
	} else {
		want_range(&u, l, 0, 1);	/* the header, always */
		for (uint32_t i = 0; m && i < m->nifd; i++) {
			const struct tiff_ifd *d = &m->ifds[i];
			if ((s->overviews && (d->subfile_type & 1)) || s->ifd == (long)i)
				want_ifd(&u, l, i);
		}
		if (s->window && m)
			want_windows(&u, l, s);
		if (!u.err && u.n) {
			qsort(u.v, u.n, sizeof(*u.v), extent_cmp);
			size_t kept = 0;
			for (size_t i = 0; i < u.n; i++)
				if (!kept || u.v[kept - 1].off != u.v[i].off)
					u.v[kept++] = u.v[i];
			u.n = kept;
		}
	}
	if (u.err) {
		free(u.v);
		return u.err;
	}
	*out = u.v;
	*n = u.n;
	return 0;
}
