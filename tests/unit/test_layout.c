/* test_layout.c - how objects are cut into units: fixed blocks, a TIFF's
 * header and tiles (leader/trailer, overlaps, sparse and oversized tiles),
 * the blocks between them, a block's extent and index, and the tiles
 * related to a tile (its neighbours, the rest of its row). */
#include "cache/tiff/layout.h"
#include "cache/tiff/tiff.h"
#include "check.h"

#include <stdlib.h>

static void blocks_only(void)
{
	struct layout l;
	layout_init_blocks(&l, 1000, 256);
	struct extent e = layout_unit_at(&l, 0);
	CHECK(e.off == 0 && e.len == 256, "first block");
	e = layout_unit_at(&l, 511);
	CHECK(e.off == 256 && e.len == 256, "inner block");
	e = layout_unit_at(&l, 999);
	CHECK(e.off == 768 && e.len == 232, "last block is short (%llu)", (unsigned long long)e.len);
	layout_init_blocks(&l, 256, 256);
	e = layout_unit_at(&l, 255);
	CHECK(e.off == 0 && e.len == 256, "object of exactly one block");
}

static void plain_file(void)
{
	struct layout l;
	CHECK(layout_init(&l, 1000, 256, 100, NULL) == 0, "plain file layout");
	struct extent e = layout_unit_at(&l, 50);
	CHECK(e.off == 0 && e.len == 100, "the first fetch is a unit of its own");
	e = layout_unit_at(&l, 100);
	CHECK(e.off == 100 && e.len == 156, "the next block is clipped to it (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 300);
	CHECK(e.off == 256 && e.len == 256, "later blocks stay aligned");
	CHECK(!layout_is_tile(&l, 50), "no tiles");
	layout_release(&l);
}

/* A 3x2 grid of tiles with GDAL leader/trailer, one sparse. */
static struct tiff_map *grid_map(void)
{
	struct tiff_map *m = calloc(1, sizeof(*m));
	m->leader = m->trailer = 4;
	m->nifd = 1;
	m->ifds = calloc(1, sizeof(*m->ifds));
	m->ifds[0] = (struct tiff_ifd){ .width = 768, .height = 512, .block_w = 256,
					.block_h = 256, .across = 3, .down = 2, .planes = 1,
					.tiled = true, .first = 0, .n = 6 };
	m->nblocks = 6;
	m->blocks = calloc(6, sizeof(*m->blocks));
	/* row 0 from one page in, row 1 after a gap; tile (1,1) sparse */
	m->blocks[0] = (struct tiff_block){ 16388, 992 };	/* unit 16384..17384 */
	m->blocks[1] = (struct tiff_block){ 17388, 992 };	/* unit 17384..18384 */
	m->blocks[2] = (struct tiff_block){ 18388, 992 };	/* unit 18384..19384 */
	m->blocks[3] = (struct tiff_block){ 26292, 992 };	/* unit 26288..15000 */
	m->blocks[4] = (struct tiff_block){ 0, 0 };
	m->blocks[5] = (struct tiff_block){ 27292, 992 };	/* unit 15000..16000 */
	return m;
}

static void tiles(void)
{
	struct layout l;
	CHECK(layout_init(&l, 32288, 4096, 65536, grid_map()) == 0, "tile layout");
	struct extent e = layout_unit_at(&l, 10);
	CHECK(e.off == 0 && e.len == 16384, "header: everything before the first tile's leader");
	e = layout_unit_at(&l, 16384);
	CHECK(e.off == 16384 && e.len == 1000, "a tile's unit holds its leader and trailer");
	e = layout_unit_at(&l, 17383);
	CHECK(e.off == 16384 && e.len == 1000, "... up to its last trailer byte");
	CHECK(layout_is_tile(&l, 16788) && !layout_is_tile(&l, 500), "tiles are tiles, the header not");
	e = layout_unit_at(&l, 19384);
	CHECK(e.off == 19384 && e.len == 1096, "bytes after a tile: a block clipped to the tile (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 24588);
	CHECK(e.off == 24576 && e.len == 1712, "a block clipped to the next tile (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 32287);
	CHECK(e.off == 28672 && e.len == 3616, "the last block ends with the object");

	e = layout_block_extent(&l, 0);
	CHECK(e.off == 16384 && e.len == 1000, "a block's extent: with its leader and trailer");
	CHECK(layout_block_extent(&l, 4).len == 0, "a sparse block's is empty");
	CHECK(layout_block_index(&l.map->ifds[0], 0, 1, 2) == 5 &&
	      layout_block_index(&l.map->ifds[0], 0, 0, 1) == 1, "block of row 1, column 2; of 0, 1");

	struct extent rel[16];
	size_t n = layout_related(&l, 16788, LAYOUT_NEIGHBORS, rel, 16);
	CHECK(n == 2 && rel[0].off == 17384 && rel[1].off == 26288,
	      "neighbours of (0,0): (0,1) and (1,0), not the sparse (1,1) (%zu)", n);
	n = layout_related(&l, 17788, LAYOUT_NEIGHBORS, rel, 16);
	CHECK(n == 4, "neighbours of (0,1): four with bytes (%zu)", n);
	n = layout_related(&l, 16788, LAYOUT_ROW, rel, 16);
	CHECK(n == 2 && rel[0].off == 17384 && rel[1].off == 18384, "row: the rest of row 0");
	n = layout_related(&l, 16788, LAYOUT_NEIGHBORS, rel, 1);
	CHECK(n == 1, "at most MAX units");
	CHECK(layout_related(&l, 500, LAYOUT_NEIGHBORS, rel, 16) == 0, "the header has none");
	layout_release(&l);

	/* a trailer past the end of the object is clipped to it */
	CHECK(layout_init(&l, 28286, 4096, 65536, grid_map()) == 0, "layout");
	e = layout_block_extent(&l, 5);
	CHECK(e.off == 27288 && e.len == 998, "the last block's trailer ends with the object");
	struct tiff_ifd planar = { .across = 3, .down = 2, .planes = 2, .first = 10 };
	CHECK(layout_block_index(&planar, 1, 1, 0) == 10 + 6 + 3, "plane 1's blocks follow plane 0's");
	layout_release(&l);

	/* a first tile reaching into the header's last 16 KiB gives them up */
	struct tiff_map *m = grid_map();
	m->blocks[0] = (struct tiff_block){ 1004, 16000 };	/* unit 1000..17008 */
	CHECK(layout_init(&l, 32288, 4096, 65536, m) == 0, "layout");
	e = layout_unit_at(&l, 1500);
	CHECK(e.off == 0 && e.len == LAYOUT_HEADER_ALIGN, "the header ends on a 16 KiB boundary (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 16384);
	CHECK(e.off == 16384 && e.len == 624 && layout_is_tile(&l, 16384),
	      "and the tile keeps the rest (%llu+%llu)", (unsigned long long)e.off,
	      (unsigned long long)e.len);
	layout_release(&l);
}

static void overlaps(void)
{
	struct tiff_map *m = grid_map();
	m->blocks[1] = m->blocks[0];			/* an alias */
	m->blocks[2] = (struct tiff_block){ 16888, 2000 };	/* overlaps the first */
	m->blocks[5] = (struct tiff_block){ 27292, LAYOUT_UNIT_MAX };	/* too large */
	struct layout l;
	CHECK(layout_init(&l, 27292 + LAYOUT_UNIT_MAX + 10, 4096, 65536, m) == 0, "layout");
	struct extent e = layout_unit_at(&l, 16488);
	CHECK(e.off == 16384 && e.len == 2508, "overlapping tiles share one unit (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 27292 + 8192);
	CHECK(e.len <= 4096 && !layout_is_tile(&l, 27292 + 8192), "an oversized tile is cut in blocks");
	layout_release(&l);
}

/* A 2x2 grid of tiles of 992 bytes (1000 with leader and trailer) one after
 * the other from 16 KiB on, in block order: a COG as GDAL writes it. */
static struct tiff_map *cog_map(void)
{
	struct tiff_map *m = calloc(1, sizeof(*m));
	m->leader = m->trailer = 4;
	m->nifd = 1;
	m->ifds = calloc(1, sizeof(*m->ifds));
	m->ifds[0] = (struct tiff_ifd){ .width = 512, .height = 512, .block_w = 256,
					.block_h = 256, .across = 2, .down = 2, .planes = 1,
					.tiled = true, .first = 0, .n = 4 };
	m->nblocks = 4;
	m->blocks = calloc(4, sizeof(*m->blocks));
	for (uint64_t i = 0; i < 4; i++)
		m->blocks[i] = (struct tiff_block){ 16388 + 1000 * i, 992 };
	return m;
}

/* A COG's cut keeps no array of units (24 bytes each): they are computed
 * from its map, and come out as the array would have held them. */
static void dense(void)
{
	struct layout l;
	CHECK(layout_init(&l, 20884, 4096, 65536, cog_map()) == 0, "layout");
	CHECK(l.units == NULL && l.nunits == 5, "no array of units (%zu units)", l.nunits);
	struct layout_unit u = layout_unit_get(&l, 0);
	CHECK(u.off == 0 && u.len == 16384 && u.block == UINT64_MAX, "unit 0: the header");
	u = layout_unit_get(&l, 3);
	CHECK(u.off == 18384 && u.len == 1000 && u.block == 2, "unit 3: block 2");
	struct extent e = layout_unit_at(&l, 19000);
	CHECK(e.off == 18384 && e.len == 1000 && layout_is_tile(&l, 19000), "a tile's unit");
	e = layout_unit_at(&l, 20500);
	CHECK(e.off == 20480 && e.len == 404 && !layout_is_tile(&l, 20500),
	      "after the last tile: an aligned block (%llu+%llu)", (unsigned long long)e.off,
	      (unsigned long long)e.len);
	struct extent rel[16];
	CHECK(layout_related(&l, 16788, LAYOUT_NEIGHBORS, rel, 16) == 3, "three neighbours");
	layout_release(&l);

	/* the first tile reaching into the header's last 16 KiB: still none */
	struct tiff_map *m = cog_map();
	m->blocks[0] = (struct tiff_block){ 1004, 16000 };	/* unit 1000..17008 */
	for (uint64_t i = 1; i < 4; i++)
		m->blocks[i] = (struct tiff_block){ 17012 + 1000 * (i - 1), 992 };
	CHECK(layout_init(&l, 20884, 4096, 65536, m) == 0, "layout");
	e = layout_unit_at(&l, 16384);
	CHECK(l.units == NULL && e.off == 16384 && e.len == 624 && layout_is_tile(&l, 16384),
	      "the first tile gives its head to the header (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	layout_release(&l);

	/* tiles out of block order: the array, and the same cut */
	m = cog_map();
	m->blocks[1].off = 18388;
	m->blocks[2].off = 17388;
	CHECK(layout_init(&l, 20884, 4096, 65536, m) == 0, "layout");
	e = layout_unit_at(&l, 17400);
	CHECK(l.units != NULL && e.off == 17384 && e.len == 1000 && layout_is_tile(&l, 17400),
	      "out of order: an array, the same units");
	layout_release(&l);
}

int main(void)
{
	blocks_only();
	plain_file();
	tiles();
	overlaps();
	dense();
	return check_done();
}
