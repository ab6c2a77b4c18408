/*
 * fuzz_layout.c - libFuzzer target for the cut of an object into cache
 * units (cache/tiff/layout.c). The input is a whole object's bytes; its
 * tile map, when it parses, goes through the index's encoding (encode,
 * decode: what every process cutting the object reads) and is cut with
 * a few block sizes and header lengths, as a TIFF and as plain bytes.
 * Every cut must be a partition of the object that layout_unit_at()
 * walks from 0 to its end, each unit the same from any of its bytes, and
 * the units layout_related() adds to a read must be other whole units of
 * that partition, none twice. Anything else (a crash, a sanitizer report, a
 * leak, a broken partition) is a bug. Seeds: the TIFF corpus, as for
 * fuzz_tiff_map. Built and run by tests/fuzz/run.
 */
#include "cache/base/log.h"
#include "cache/tiff/layout.h"
#include "cache/tiff/tiff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RELATED_MAX 16		/* as many as a read asks for */
#define TILE_CHECKS 256		/* tile units whose relatives are checked */

struct input {
	const uint8_t *data;
	size_t size;
};

static int input_read(void *arg, void *buf, size_t len, uint64_t off)
{
	const struct input *in = arg;

	if (off > in->size || len > in->size - off)
		return -ERANGE;
	memcpy(buf, in->data + off, len);
	return 0;
}

static bool extent_equal(struct extent a, struct extent b)
{
	return a.off == b.off && a.len == b.len;
}

/* The units of L: sorted, disjoint, inside the object, none empty. */
static void check_units(const struct layout *l)
{
	uint64_t end = 0;
	for (size_t i = 0; i < l->nunits; i++) {
		struct layout_unit u = layout_unit_get(l, i);
		if (u.len == 0 || u.off < end || u.off > l->object_size ||
		    u.len > l->object_size - u.off)
			abort();
		end = u.off + u.len;
	}
}

/* layout_unit_at() cuts [0, object_size) into consecutive extents, each
 * the same from any of its bytes. */
static void check_partition(const struct layout *l)
{
	for (uint64_t off = 0; off < l->object_size;) {
		struct extent e = layout_unit_at(l, off);
		if (e.off != off || e.len == 0 || e.len > l->object_size - off)
			abort();
		if (!extent_equal(layout_unit_at(l, off + e.len - 1), e) ||
		    layout_is_tile(l, off) != layout_is_tile(l, off + e.len - 1))
			abort();
		off += e.len;
	}
}

/* What POLICY adds to a read of the tile unit at OFF. */
static void check_related(const struct layout *l, uint64_t off, enum layout_relation relation)
{
	struct extent out[RELATED_MAX], own = layout_unit_at(l, off);
	size_t n = layout_related(l, off, relation, out, RELATED_MAX);

	if (n > RELATED_MAX)
		abort();
	for (size_t i = 0; i < n; i++) {
		/* a neighbour may lie in the header unit, which it then adds */
		if (out[i].len == 0 || extent_equal(out[i], own) ||
		    !extent_equal(layout_unit_at(l, out[i].off), out[i]))
			abort();
		for (size_t j = 0; j < i; j++)
			if (out[j].off == out[i].off)
				abort();
	}
}

static void check_layout(const struct layout *l)
{
	check_units(l);
	check_partition(l);
	size_t tiles = 0;
	for (size_t i = 0; i < l->nunits && tiles < TILE_CHECKS; i++) {
		struct layout_unit u = layout_unit_get(l, i);
		if (u.block == UINT64_MAX)
			continue;
		tiles++;
		check_related(l, u.off, LAYOUT_NEIGHBORS);
		check_related(l, u.off, LAYOUT_ROW);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* block sizes and header lengths as --block-size and --header-size
	   give them (the index keeps the header length as configured, even
	   beyond a small object's end): the defaults (256K, 64K) and others */
	static const struct { uint64_t block, header; } cuts[] = {
		{ 262144, 65536 }, { 65536, 16384 }, { 4096, 1 << 20 },
	};
	static bool quiet;
	struct input in = { data, size };
	struct tiff_map *parsed = NULL;
	void *blob = NULL;
	size_t blob_len = 0;
	char why[256];

	if (!quiet) {
		log_set_level(LOG_ERROR);
		if (log_set_file("/dev/null") < 0)
			abort();
		quiet = true;
	}
	if (tiff_map_parse(input_read, &in, size, &parsed, why, sizeof(why)) == 0) {
		if (tiff_map_encode(parsed, &blob, &blob_len) != 0)
			abort();
		tiff_map_free(parsed);
	}
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		struct layout l;
		struct tiff_map *map = NULL;

		if (blob && tiff_map_decode(blob, blob_len, size, &map) != 0)
			abort();	/* the index gives back what it was given */
		if (map) {
			if (layout_init(&l, size, cuts[c].block, cuts[c].header, map) != 0)
				abort();
			check_layout(&l);
			layout_release(&l);
		}
		/* the same bytes as a plain file (not a TIFF, or a map lost) */
		if (layout_init(&l, size, cuts[c].block, cuts[c].header, NULL) != 0)
			abort();
		check_layout(&l);
		layout_release(&l);
		layout_init_blocks(&l, size, cuts[c].block);
		check_layout(&l);
		layout_release(&l);
	}
	free(blob);
	return 0;
}
