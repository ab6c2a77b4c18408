/*
 * fuzz_tiff_map.c - libFuzzer target for the TIFF tile-map parser
 * (cache/tiff/tiff.c). The input is a whole object's bytes. A map that parses
 * must survive tiff_map_encode() -> tiff_map_decode() unchanged; anything
 * else (a crash, a sanitizer report, a leak, a changed map) is a bug.
 * Built and run by tests/fuzz/run.
 */
#include "cache/base/log.h"
#include "cache/tiff/tiff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static bool ifd_equal(const struct tiff_ifd *a, const struct tiff_ifd *b)
{
	return a->width == b->width && a->height == b->height &&
	       a->block_w == b->block_w && a->block_h == b->block_h &&
	       a->across == b->across && a->down == b->down &&
	       a->planes == b->planes && a->compression == b->compression &&
	       a->subfile_type == b->subfile_type && a->tiled == b->tiled &&
	       a->sub == b->sub && a->dir_offset == b->dir_offset &&
	       a->first == b->first && a->n == b->n;
}

static bool map_equal(const struct tiff_map *a, const struct tiff_map *b)
{
	if (a->bigtiff != b->bigtiff || a->big_endian != b->big_endian ||
	    a->leader != b->leader || a->trailer != b->trailer ||
	    a->nifd != b->nifd || a->nblocks != b->nblocks)
		return false;
	for (uint32_t i = 0; i < a->nifd; i++)
		if (!ifd_equal(&a->ifds[i], &b->ifds[i]))
			return false;
	for (uint64_t i = 0; i < a->nblocks; i++)
		if (a->blocks[i].off != b->blocks[i].off || a->blocks[i].len != b->blocks[i].len)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	struct input in = { data, size };
	struct tiff_map *map = NULL, *back = NULL;
	void *blob = NULL;
	size_t blob_len = 0;
	char why[256];

	if (!quiet) {
		log_set_level(LOG_ERROR);
		if (log_set_file("/dev/null") < 0)
			abort();
		quiet = true;
	}
	if (tiff_map_parse(input_read, &in, size, &map, why, sizeof(why)) != 0)
		return 0;
	if (tiff_map_encode(map, &blob, &blob_len) != 0)
		abort();	/* a map the parser accepted must encode */
	if (tiff_map_decode(blob, blob_len, size, &back) != 0 || !map_equal(map, back))
		abort();
	tiff_map_free(back);
	free(blob);
	tiff_map_free(map);
	return 0;
}
