/* test_select.c - which units a selection names: the whole object, the
 * header, the overviews, one IFD, a pixel window over the full-resolution
 * image and its masks in every plane; on made-up tile maps and on a real
 * COG with masks from the shared corpus ($TILEFS_CORPUS or
 * tests/data/corpus; read in place). */
#include "cache/tiff/layout.h"
#include "cache/tiff/select.h"
#include "cache/tiff/tiff.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIZE 65536ull			/* of the made-up object */
#define TILE 1000ull			/* bytes per made-up tile, without leader and trailer */

static const struct selection nothing = { .ifd = -1 };

/*
 * A made-up COG: IFD 0 full resolution 300x200 in 100x100 tiles, 2 planes
 * (3x2 per plane, blocks 0..11); IFD 1 its mask (blocks 12..17); IFD 2 an
 * overview 150x100, one 256x256 tile (block 18); IFD 3 a mask of another
 * size (block 19). Tiles lie one after the other from 16 KiB, with GDAL's
 * 4-byte leader and trailer.
 */
static struct tiff_map *cog_map(void)
{
	struct tiff_map *m = calloc(1, sizeof(*m));
	m->leader = m->trailer = 4;
	m->nifd = 4;
	m->ifds = calloc(4, sizeof(*m->ifds));
	m->ifds[0] = (struct tiff_ifd){ .width = 300, .height = 200, .block_w = 100, .block_h = 100,
					.across = 3, .down = 2, .planes = 2, .tiled = true,
					.first = 0, .n = 12 };
	m->ifds[1] = m->ifds[0];
	m->ifds[1].planes = 1;
	m->ifds[1].subfile_type = 4;
	m->ifds[1].first = 12;
	m->ifds[1].n = 6;
	m->ifds[2] = (struct tiff_ifd){ .width = 150, .height = 100, .block_w = 256, .block_h = 256,
					.across = 1, .down = 1, .planes = 1, .tiled = true,
					.subfile_type = 1, .first = 18, .n = 1 };
	m->ifds[3] = m->ifds[2];
	m->ifds[3].subfile_type = 4;
	m->ifds[3].first = 19;
	m->nblocks = 20;
	m->blocks = calloc(20, sizeof(*m->blocks));
	for (uint64_t k = 0; k < 20; k++)
		m->blocks[k] = (struct tiff_block){ 16384 + 4 + k * (TILE + 8), TILE };
	return m;
}

/* Where block K's unit starts in cog_map(). */
static uint64_t unit_of(uint64_t k)
{
	return 16384 + k * (TILE + 8);
}

/* Do the N units of SEL, after the header, start at the units of blocks
 * WANT[0..nwant), in order? */
static bool are_blocks(const struct layout *l, const struct selection *sel, const uint64_t *want,
		       size_t nwant)
{
	struct extent *v;
	size_t n;
	if (selection_units(l, sel, &v, &n) != 0)
		return false;
	bool same = n == nwant + 1 && v[0].off == 0 && v[0].len == 16384;
	for (size_t i = 0; same && i < nwant; i++)
		same = v[i + 1].off == unit_of(want[i]) && v[i + 1].len == TILE + 8;
	if (!same)
		for (size_t i = 0; i < n; i++)
			printf("# unit %zu: %llu+%llu\n", i, (unsigned long long)v[i].off,
			       (unsigned long long)v[i].len);
	free(v);
	return same;
}

static void whole(void)
{
	struct layout l;
	struct extent *v;
	size_t n;

	CHECK(selection_is_whole(&nothing), "nothing chosen is the whole object");
	CHECK(layout_init(&l, SIZE, 4096, 16384, cog_map()) == 0, "layout");
	CHECK(selection_units(&l, &nothing, &v, &n) == 0, "whole object");
	uint64_t end = 0;
	bool tiles = true;
	for (size_t i = 0; i < n; i++) {
		tiles = tiles && v[i].off == end;
		end = v[i].off + v[i].len;
	}
	CHECK(tiles && end == SIZE, "its units cover it once, in order (%zu units)", n);
	free(v);
	layout_release(&l);

	CHECK(layout_init(&l, 10000, 4096, 100, NULL) == 0, "plain file layout");
	CHECK(selection_units(&l, &nothing, &v, &n) == 0 && n == 4 && v[0].len == 100 &&
	      v[3].off == 8192 && v[3].len == 1808, "a plain file: its first fetch, then blocks");
	free(v);
	struct selection header = { .header_only = true, .ifd = -1 };
	CHECK(selection_units(&l, &header, &v, &n) == 0 && n == 1 && v[0].off == 0 &&
	      v[0].len == 100, "a plain file's header");
	free(v);
	struct selection window = { .window = true, .ifd = -1, .w = 10, .h = 10 };
	CHECK(selection_units(&l, &window, &v, &n) == 0 && n == 1, "no tile map: a window is the header");
	free(v);
	layout_release(&l);

	layout_init_blocks(&l, 0, 4096);
	CHECK(selection_units(&l, &header, &v, &n) == 0 && n == 0 && !v, "an empty object has no units");
	layout_release(&l);
}

static void parts(void)
{
	struct layout l;
	CHECK(layout_init(&l, SIZE, 4096, 16384, cog_map()) == 0, "layout");

	struct selection s = nothing;
	s.header_only = true;
	CHECK(are_blocks(&l, &s, NULL, 0), "--header-only: the header unit");

	s = nothing;
	s.overviews = true;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 18 }, 1), "--overviews: the header and the overview");

	s = nothing;
	s.ifd = 1;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 12, 13, 14, 15, 16, 17 }, 6), "--ifd 1: all its blocks");
	s.ifd = 4;
	CHECK(are_blocks(&l, &s, NULL, 0), "--ifd past the last: the header only");

	s = nothing;
	s.overviews = true;
	s.ifd = 2;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 18 }, 1), "parts naming one block twice give it once");

	/* full resolution: plane 0 blocks 0..5, plane 1 blocks 6..11, mask 12..17 */
	s = nothing;
	s.window = true;
	s.x = 150, s.y = 50, s.w = 10, s.h = 10;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 1, 7, 13 }, 3),
	      "--window in one tile: that tile in both planes and in the mask of the same size");
	s.x = 99, s.y = 99, s.w = 2, s.h = 2;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 0, 1, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16 }, 12),
	      "--window across a tile corner: the four tiles, in each plane and the mask");
	s.x = 250, s.y = 150, s.w = 1000, s.h = 1000;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 5, 11, 17 }, 3), "--window past the edge is clipped");
	s.x = 300, s.y = 0, s.w = 10, s.h = 10;
	CHECK(are_blocks(&l, &s, NULL, 0), "--window outside the image: the header only");

	s.x = 0, s.y = 0, s.w = 1, s.h = 1;
	s.overviews = true;
	CHECK(are_blocks(&l, &s, (uint64_t[]){ 0, 6, 12, 18 }, 4), "the parts add up");
	layout_release(&l);

	/* the full-resolution image is the first main IFD neither overview nor mask */
	struct tiff_map *m = cog_map();
	m->ifds[0].subfile_type = 1;
	CHECK(layout_init(&l, SIZE, 4096, 16384, m) == 0, "layout");
	s = nothing;
	s.window = true;
	s.w = s.h = 1;
	CHECK(are_blocks(&l, &s, NULL, 0), "no full-resolution image: the window is the header");
	layout_release(&l);

	/* the overview's tile too large for a unit, the last bytes of the
	   object with its trailer; the other mask sparse */
	m = cog_map();
	m->blocks[18].len = LAYOUT_UNIT_MAX + 1;
	m->blocks[19].len = 0;
	struct extent *v;
	size_t n;
	CHECK(layout_init(&l, unit_of(18) + 4 + LAYOUT_UNIT_MAX + 1 + 4, 1 << 20, 16384, m) == 0,
	      "layout");
	s = nothing;
	s.overviews = true;
	s.ifd = 3;
	CHECK(selection_units(&l, &s, &v, &n) == 0 && n == 1 + 33 && v[1].off == unit_of(18) &&
	      v[2].off == 1 << 20 && v[n - 1].off + v[n - 1].len == l.object_size,
	      "a tile too large for a unit: the blocks holding it and its trailer; "
	      "a sparse one: nothing (%zu)", n);
	free(v);
	layout_release(&l);
}

static int file_read(void *arg, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(*(int *)arg, buf, len, (off_t)off);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -ERANGE;
}

/* Is every extent of V[0..n) the unit of L at its offset, in order? */
static bool are_units(const struct layout *l, const struct extent *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct extent e = layout_unit_at(l, v[i].off);
		if (e.off != v[i].off || e.len != v[i].len || (i && v[i - 1].off >= v[i].off))
			return false;
	}
	return true;
}

/* Does V[0..n) hold the unit of block K of L? */
static bool holds_block(const struct layout *l, const struct extent *v, size_t n, uint64_t k)
{
	struct extent b = layout_block_extent(l, k);
	for (size_t i = 0; i < n; i++)
		if (v[i].off <= b.off && b.off < v[i].off + v[i].len)
			return true;
	return false;
}

/* A tiled BigTIFF from the corpus made by GDAL: 395x359 RGB in 128x128
 * tiles (4x3), its mask, two overviews and their masks. */
static void corpus_cog(void)
{
	const char *root = getenv("TILEFS_CORPUS");
	char path[4096];
	snprintf(path, sizeof(path), "%s/good/gen_bigtiff_be_tiled_mask.tif",
		 root ? root : "tests/data/corpus");
	int fd = open(path, O_RDONLY);
	struct stat st;
	struct tiff_map *m = NULL;
	char why[160];
	CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", path);
	if (fd < 0)
		return;
	CHECK(tiff_map_parse(file_read, &fd, (uint64_t)st.st_size, &m, why, sizeof(why)) == 0 &&
	      m->nifd == 6 && m->ifds[0].subfile_type == 0 && m->ifds[0].across == 4 &&
	      m->ifds[1].subfile_type == 4, "its tile map: six IFDs, the full image, then its mask");
	close(fd);
	if (!m || m->nifd != 6)
		return;
	struct layout l;
	CHECK(layout_init(&l, (uint64_t)st.st_size, 65536, 16384, m) == 0, "layout");

	struct extent *v;
	size_t n;
	struct selection s = nothing;
	s.window = true;
	s.x = 300, s.y = 200, s.w = 10, s.h = 10;
	uint64_t k = layout_block_index(&m->ifds[0], 0, 1, 2);
	uint64_t mask = layout_block_index(&m->ifds[1], 0, 1, 2);
	CHECK(selection_units(&l, &s, &v, &n) == 0 && are_units(&l, v, n) && n == 3 &&
	      v[0].off == 0 && holds_block(&l, v, n, k) && holds_block(&l, v, n, mask),
	      "--window 300,200,10,10: the header, tile (1,2) and its mask's (%zu units)", n);
	free(v);

	s = nothing;
	s.overviews = true;
	CHECK(selection_units(&l, &s, &v, &n) == 0 && are_units(&l, v, n), "--overviews: units");
	bool all = true, none = true;
	for (uint32_t i = 0; i < m->nifd; i++)
		for (uint64_t b = m->ifds[i].first; b < m->ifds[i].first + m->ifds[i].n; b++) {
			if (m->ifds[i].subfile_type & 1)
				all = all && holds_block(&l, v, n, b);
			else if (layout_block_extent(&l, b).off >= v[0].len)
				none = none && !holds_block(&l, v, n, b);
		}
	CHECK(all && none, "--overviews: every overview block (their masks too), no other");
	free(v);

	s = nothing;
	CHECK(selection_units(&l, &s, &v, &n) == 0 && are_units(&l, v, n) &&
	      v[n - 1].off + v[n - 1].len == l.object_size, "the whole file: every unit");
	free(v);
	layout_release(&l);
}

int main(void)
{
	whole();
	parts();
	corpus_cog();
	return check_done();
}
