/* test_layout.c - how objects are cut into units: fixed blocks, a TIFF's
 * header and tiles (leader/trailer, overlaps, sparse and oversized tiles),
 * the blocks between them, and what the prefetch policies add. */
#include "cache/layout.h"
#include "cache/tiff.h"
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
	/* row 0 at 1004.., row 1 after a 10000-byte gap; tile (1,1) sparse */
	m->blocks[0] = (struct tiff_block){ 1004, 992 };	/* unit 1000..2000 */
	m->blocks[1] = (struct tiff_block){ 2004, 992 };	/* unit 2000..3000 */
	m->blocks[2] = (struct tiff_block){ 3004, 992 };	/* unit 3000..4000 */
	m->blocks[3] = (struct tiff_block){ 14004, 992 };	/* unit 14000..15000 */
	m->blocks[4] = (struct tiff_block){ 0, 0 };
	m->blocks[5] = (struct tiff_block){ 15004, 992 };	/* unit 15000..16000 */
	return m;
}

static void tiles(void)
{
	struct layout l;
	CHECK(layout_init(&l, 20000, 4096, 65536, grid_map()) == 0, "tile layout");
	struct extent e = layout_unit_at(&l, 10);
	CHECK(e.off == 0 && e.len == 1000, "header: everything before the first tile's leader");
	e = layout_unit_at(&l, 1000);
	CHECK(e.off == 1000 && e.len == 1000, "a tile's unit holds its leader and trailer");
	e = layout_unit_at(&l, 1999);
	CHECK(e.off == 1000 && e.len == 1000, "... up to its last trailer byte");
	CHECK(layout_is_tile(&l, 1500) && !layout_is_tile(&l, 500), "tiles are tiles, the header not");
	e = layout_unit_at(&l, 4000);
	CHECK(e.off == 4000 && e.len == 96, "bytes after a tile: a block clipped to the tile (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 12300);
	CHECK(e.off == 12288 && e.len == 1712, "a block clipped to the next tile (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 19999);
	CHECK(e.off == 16384 && e.len == 3616, "the last block ends with the object");

	struct extent rel[16];
	size_t n = layout_related(&l, 1500, PREFETCH_NEIGHBORS, rel, 16);
	CHECK(n == 2 && rel[0].off == 2000 && rel[1].off == 14000,
	      "neighbours of (0,0): (0,1) and (1,0), not the sparse (1,1) (%zu)", n);
	n = layout_related(&l, 2500, PREFETCH_NEIGHBORS, rel, 16);
	CHECK(n == 4, "neighbours of (0,1): four with bytes (%zu)", n);
	n = layout_related(&l, 1500, PREFETCH_ROW, rel, 16);
	CHECK(n == 2 && rel[0].off == 2000 && rel[1].off == 3000, "row: the rest of row 0");
	n = layout_related(&l, 1500, PREFETCH_NEIGHBORS, rel, 1);
	CHECK(n == 1, "at most MAX units");
	CHECK(layout_related(&l, 500, PREFETCH_NEIGHBORS, rel, 16) == 0, "the header has none");
	CHECK(layout_related(&l, 1500, PREFETCH_NONE, rel, 16) == 0, "none adds none");
	layout_release(&l);
}

static void overlaps(void)
{
	struct tiff_map *m = grid_map();
	m->blocks[1] = m->blocks[0];			/* an alias */
	m->blocks[2] = (struct tiff_block){ 1500, 2000 };	/* overlaps the first */
	m->blocks[5] = (struct tiff_block){ 15004, LAYOUT_UNIT_MAX };	/* too large */
	struct layout l;
	CHECK(layout_init(&l, 15004 + LAYOUT_UNIT_MAX + 10, 4096, 65536, m) == 0, "layout");
	struct extent e = layout_unit_at(&l, 1200);
	CHECK(e.off == 1000 && e.len == 2504, "overlapping tiles share one unit (%llu+%llu)",
	      (unsigned long long)e.off, (unsigned long long)e.len);
	e = layout_unit_at(&l, 15004 + 8192);
	CHECK(e.len <= 4096 && !layout_is_tile(&l, 15004 + 8192), "an oversized tile is cut in blocks");
	layout_release(&l);
}

int main(void)
{
	blocks_only();
	plain_file();
	tiles();
	overlaps();
	return check_done();
}
