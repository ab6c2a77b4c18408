/*
 * tiff.h - the tile map of a TIFF: for every IFD (main chain, then SubIFDs),
 * where each tile or strip lies in the file. libtiff parses the IFDs
 * through TIFFClientOpen with a read callback, so the bytes can come from
 * anywhere (the cache, the network, a local file). Pixels are never
 * decoded, so any compression will do.
 *
 * A map is either good (every block lies inside the file, counts are sane)
 * or the parse fails with a reason: the caller then treats the object as
 * plain bytes. Nothing here allocates more than TIFF_MAP_MAX_BLOCKS blocks
 * or TIFF_MAP_MAX_IFDS IFDs, whatever the file claims.
 *
 * Layer: the TIFF layer, pure: bytes in through a callback, tile map and
 * units out. Includes cache/base/ and its own folder only; never the store,
 * the origin, the engine or FUSE; the only folder that includes libtiff
 * (tests/check-layers).
 */
#ifndef TILEFS_TIFF_H
#define TILEFS_TIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIFF_MAP_MAX_IFDS 1024
#define TIFF_MAP_MAX_BLOCKS (1u << 22)

/* One IFD: a grid of blocks (tiles, or strips the width of the image). */
struct tiff_ifd {
	uint32_t width, height;
	uint32_t block_w, block_h;	/* tile size, or width x rows per strip */
	uint32_t across, down;		/* blocks per row, rows of blocks */
	uint32_t planes;		/* 1, or samples per pixel when planar */
	uint32_t compression;		/* TIFF Compression tag value */
	uint32_t subfile_type;		/* NewSubfileType: 1 overview, 4 mask */
	bool tiled;
	bool sub;			/* reached through a SubIFDs tag */
	uint64_t dir_offset;		/* where the IFD itself lies */
	uint64_t first;			/* its blocks: map->blocks[first..first+n) */
	uint64_t n;			/* across * down * planes */
};

struct tiff_block {
	uint64_t off, len;		/* len 0: sparse, no bytes */
};

struct tiff_map {
	bool bigtiff, big_endian;
	uint32_t leader, trailer;	/* bytes GDAL's COG layout puts before
					   and after each block (0 or 4) */
	uint32_t nifd;
	struct tiff_ifd *ifds;
	uint64_t nblocks;
	struct tiff_block *blocks;
};

/*
 * Read LEN bytes at OFF into BUF. Returns 0, or -errno (a short object is
 * -ERANGE). Called from the parser's thread only.
 */
typedef int (*tiff_read_fn)(void *arg, void *buf, size_t len, uint64_t off);

/*
 * Parse the TIFF of SIZE bytes that READ returns. 0 and *out set (caller
 * frees with tiff_map_free()), or: -EINVAL not a TIFF / malformed, with the
 * reason in WHY; -ENOMEM; or the error READ returned (network).
 */
int tiff_map_parse(tiff_read_fn read, void *arg, uint64_t size, struct tiff_map **out,
		   char *why, size_t why_len);
void tiff_map_free(struct tiff_map *map);

/* The index in M of its full-resolution image: the first main IFD that is
 * neither an overview nor a mask. M->nifd if it has none. */
uint32_t tiff_full_ifd(const struct tiff_map *m);

/* Serialise MAP for the index: *blob is malloc'ed, caller frees. */
int tiff_map_encode(const struct tiff_map *map, void **blob, size_t *len);
/* Inverse of tiff_map_encode(), checking it all again: -EINVAL if BLOB is
 * not a sound map of an object of SIZE bytes. Caller frees *out. */
int tiff_map_decode(const void *blob, size_t len, uint64_t size, struct tiff_map **out);

/* Name of a Compression tag value ("DEFLATE", "JPEG", ... or "#N"). */
const char *tiff_compression_name(uint32_t compression, char *buf, size_t len);

#endif
