/*
 * tiff.c - see tiff.h.
 *
 * libtiff reads the IFDs through client procedures over a small handle that
 * forwards to the caller's read function, counting what it is asked for:
 * a file that makes libtiff read more than PARSE_BUDGET bytes is malformed.
 * libtiff itself is bounded by TIFFOpenOptionsSetMaxSingleMemAlloc, and the
 * block count of each IFD is checked against TIFF_MAP_MAX_BLOCKS before any
 * strile is touched, so a TIFF claiming 2^40 tiles costs nothing.
 *
 * ENCODED FORM (the index stores it per object version), little-endian:
 *   "TMAP" u32 format=1, u32 flags (1 BigTIFF, 2 big-endian), u32 leader,
 *   u32 trailer, u32 nifd, u64 nblocks;
 *   per IFD: u32 width height block_w block_h across down planes
 *            compression subfile_type flags(1 tiled, 2 sub), u64 dir_offset
 *            first n;
 *   per block: u64 off len.
 */
#include "cache/tiff/tiff.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

#define PARSE_BUDGET (256ull << 20)	/* bytes libtiff may read at most */
#define MAX_SINGLE_ALLOC (128 << 20)
#define MAX_SUBIFDS 256
#define MAP_FORMAT 1

struct parse {
	tiff_read_fn read;
	void *arg;
	uint64_t size, pos, read_total;
	int read_err;			/* first error of the read function */
	char *why;
	size_t why_len;
	bool have_why;
};

static void why_set(struct parse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void why_set(struct parse *p, const char *fmt, ...)
{
	if (p->have_why || !p->why_len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->why, p->why_len, fmt, ap);
	va_end(ap);
	p->have_why = true;
}

/* ---- libtiff client procedures ---- */

static tmsize_t proc_read(thandle_t h, void *buf, tmsize_t size)
{
	struct parse *p = h;
	if (size <= 0 || p->pos >= p->size)
		return 0;
	uint64_t n = (uint64_t)size;
	if (n > p->size - p->pos)
		n = p->size - p->pos;
	p->read_total += n;
	if (p->read_total > PARSE_BUDGET) {
		why_set(p, "its IFDs need more than %llu MiB", PARSE_BUDGET >> 20);
		return -1;
	}
	int err = p->read(p->arg, buf, (size_t)n, p->pos);
	if (err) {
		if (!p->read_err)
			p->read_err = err;
		return -1;
	}
	p->pos += n;
	return (tmsize_t)n;
}

static tmsize_t proc_write(thandle_t h, void *buf, tmsize_t size)
{
	return -1;
}

static toff_t proc_seek(thandle_t h, toff_t off, int whence)
{
	struct parse *p = h;
	uint64_t base = whence == SEEK_CUR ? p->pos : whence == SEEK_END ? p->size : 0;
	if (off > UINT64_MAX - base)
		return (toff_t)-1;
	p->pos = base + off;
	return p->pos;
}

static int proc_close(thandle_t h)
{
	return 0;
}

static toff_t proc_size(thandle_t h)
{
	return ((struct parse *)h)->size;
}

static int proc_map(thandle_t h, void **base, toff_t *size)
{
	return 0;
}

static void proc_unmap(thandle_t h, void *base, toff_t size)
{
}

static int on_error(TIFF *tif, void *arg, const char *module, const char *fmt, va_list ap)
{
	struct parse *p = arg;
	if (!p->have_why && p->why_len) {
		vsnprintf(p->why, p->why_len, fmt, ap);
		p->have_why = true;
	}
	return 1;
}

static int on_warning(TIFF *tif, void *arg, const char *module, const char *fmt, va_list ap)
{
	return 1;	/* libtiff copes; so do we */
}

/* ---- the map ---- */

void tiff_map_free(struct tiff_map *map)
{
	if (!map)
		return;
	free(map->ifds);
	free(map->blocks);
	free(map);
}

uint32_t tiff_full_ifd(const struct tiff_map *m)
{
	uint32_t full = 0;
	while (full < m->nifd && (m->ifds[full].sub || (m->ifds[full].subfile_type & 5)))
		full++;
	return full;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* Is MAP sound for an object of SIZE bytes? */
static int map_check(const struct tiff_map *map, uint64_t size, struct parse *p)
{
	uint64_t next = 0;

	if (map->nifd == 0) {
		why_set(p, "no image directory");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < map->nifd; i++) {
		const struct tiff_ifd *d = &map->ifds[i];
		if (d->first != next || d->n > map->nblocks - next) {
			why_set(p, "IFD %u: block table out of order", i);
			return -EINVAL;
		}
		next += d->n;
	}
	if (next != map->nblocks) {
		why_set(p, "block count does not add up");
		return -EINVAL;
	}
	for (uint64_t b = 0; b < map->nblocks; b++) {
		const struct tiff_block *k = &map->blocks[b];
		if (k->len == 0)
			continue;
		if (k->off < 8 || k->off > size || k->len > size - k->off) {
			why_set(p, "a block at %llu+%llu lies outside the %llu-byte file",
				(unsigned long long)k->off, (unsigned long long)k->len,
				(unsigned long long)size);
			return -EINVAL;
		}
	}
	return 0;
}

/* GDAL's ghost header: leader/trailer bytes around each block? */
static void read_ghost(struct parse *p, struct tiff_map *map)
{
	char text[512];
	uint64_t at = map->bigtiff ? 16 : 8;
	size_t n = sizeof(text) - 1;

	if (p->size < at + 64)
		return;
	if (n > p->size - at)
		n = (size_t)(p->size - at);
	if (p->read(p->arg, text, n, at) != 0)
		return;
	text[n] = '\0';
	if (strncmp(text, "GDAL_STRUCTURAL_METADATA_SIZE=", 30) != 0)
		return;
	if (strstr(text, "KNOWN_INCOMPATIBLE_EDITION=YES"))
		return;		/* edited after writing: the promises no longer hold */
	if (strstr(text, "BLOCK_LEADER=SIZE_AS_UINT4"))
		map->leader = 4;
	if (strstr(text, "BLOCK_TRAILER=LAST_4_BYTES_REPEATED"))
		map->trailer = 4;
}

struct builder {
	struct tiff_map *map;
	uint32_t ifd_cap;
	uint64_t block_cap;
	uint64_t seen[TIFF_MAP_MAX_IFDS];	/* directory offsets read */
	uint32_t nseen;
};

static bool builder_seen(struct builder *b, uint64_t dir_offset)
{
	for (uint32_t i = 0; i < b->nseen; i++)
		if (b->seen[i] == dir_offset)
			return true;
	return false;
}

/* Record the current directory of TIF. */
static int add_ifd(struct parse *p, struct builder *b, TIFF *tif, bool sub)
{
	struct tiff_map *map = b->map;
	struct tiff_ifd d = { 0 };
	uint32_t rows = 0;
	uint16_t planar = PLANARCONFIG_CONTIG, spp = 1, compression = COMPRESSION_NONE;

	if (map->nifd >= TIFF_MAP_MAX_IFDS) {
		why_set(p, "more than %d IFDs", TIFF_MAP_MAX_IFDS);
		return -EINVAL;
	}
	d.dir_offset = TIFFCurrentDirOffset(tif);
	b->seen[b->nseen++] = d.dir_offset;
	d.sub = sub;
	d.tiled = TIFFIsTiled(tif);
	TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &d.width);
	TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &d.height);
	TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
	TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
	TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
	TIFFGetFieldDefaulted(tif, TIFFTAG_SUBFILETYPE, &d.subfile_type);
	d.compression = compression;
	d.planes = planar == PLANARCONFIG_SEPARATE ? spp : 1;
	if (d.width == 0 || d.height == 0 || d.planes == 0) {
		why_set(p, "IFD %u has no pixels", map->nifd);
		return -EINVAL;
	}
	if (d.tiled) {
		TIFFGetField(tif, TIFFTAG_TILEWIDTH, &d.block_w);
		TIFFGetField(tif, TIFFTAG_TILELENGTH, &d.block_h);
	} else {
		TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows);
		d.block_w = d.width;
		d.block_h = rows == 0 || rows > d.height ? d.height : rows;
	}
	if (d.block_w == 0 || d.block_h == 0) {
		why_set(p, "IFD %u has %s of size 0", map->nifd, d.tiled ? "tiles" : "strips");
		return -EINVAL;
	}
	d.across = (uint32_t)div_up(d.width, d.block_w);
	d.down = (uint32_t)div_up(d.height, d.block_h);
	uint64_t n;
	if (__builtin_mul_overflow((uint64_t)d.across, (uint64_t)d.down, &n) ||
	    __builtin_mul_overflow(n, (uint64_t)d.planes, &n))
		n = UINT64_MAX;
	uint64_t libtiff_n = d.tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
	if (n > TIFF_MAP_MAX_BLOCKS - map->nblocks) {
		why_set(p, "more than %u blocks", TIFF_MAP_MAX_BLOCKS);
		return -EINVAL;
	}
	if (libtiff_n != n) {
		why_set(p, "IFD %u: %llu blocks where its size implies %llu", map->nifd,
			(unsigned long long)libtiff_n, (unsigned long long)n);
		return -EINVAL;
	}
	if (map->nifd == b->ifd_cap) {
		uint32_t cap = b->ifd_cap ? b->ifd_cap * 2 : 8;
		struct tiff_ifd *grown = realloc(map->ifds, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		map->ifds = grown;
		b->ifd_cap = cap;
	}
	if (map->nblocks + n > b->block_cap) {
		uint64_t cap = b->block_cap ? b->block_cap : 64;
		while (cap < map->nblocks + n)
			cap *= 2;
		struct tiff_block *grown = realloc(map->blocks, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		map->blocks = grown;
		b->block_cap = cap;
	}
	d.first = map->nblocks;
	d.n = n;
	for (uint32_t s = 0; s < n; s++) {
		int err = 0;
		struct tiff_block *k = &map->blocks[d.first + s];
		k->off = TIFFGetStrileOffsetWithErr(tif, s, &err);
		if (!err)
			k->len = TIFFGetStrileByteCountWithErr(tif, s, &err);
		if (err) {
			why_set(p, "IFD %u: block %u has no offset or byte count", map->nifd, s);
			return p->read_err ? p->read_err : -EINVAL;
		}
		if (k->len == 0)
			k->off = 0;
	}
	map->ifds[map->nifd++] = d;
	map->nblocks += n;
	return 0;
}

int tiff_map_parse(tiff_read_fn read, void *arg, uint64_t size, struct tiff_map **out,
		   char *why, size_t why_len)
{
	struct parse p = { .read = read, .arg = arg, .size = size, .why = why, .why_len = why_len };
	unsigned char magic[4];
	uint64_t subifds[MAX_SUBIFDS];
	uint32_t nsub = 0;
	int err;

	if (why_len)
		why[0] = '\0';
	if (size < 8) {
		why_set(&p, "not a TIFF");
		return -ENOTSUP;
	}
	err = read(arg, magic, sizeof(magic), 0);
	if (err)
		return err;
	bool le = magic[0] == 'I' && magic[1] == 'I', be = magic[0] == 'M' && magic[1] == 'M';
	unsigned version = le ? magic[2] | magic[3] << 8 : magic[2] << 8 | magic[3];
	if ((!le && !be) || (version != 42 && version != 43)) {
		why_set(&p, "not a TIFF");
		return -ENOTSUP;
	}

	struct builder *b = calloc(1, sizeof(*b));
	struct tiff_map *map = calloc(1, sizeof(*map));
	TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
	TIFF *tif = NULL;
	err = -ENOMEM;
	if (!b || !map || !opts)
		goto out;
	b->map = map;
	map->bigtiff = version == 43;
	map->big_endian = be;
	TIFFOpenOptionsSetMaxSingleMemAlloc(opts, MAX_SINGLE_ALLOC);
	TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, &p);
	TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, &p);
	/* D: strile arrays are read when first asked for, not at open;
	   c: strips as stored, not chopped into pieces libtiff would read */
	tif = TIFFClientOpenExt("tiff", "rDmc", &p, proc_read, proc_write, proc_seek, proc_close,
				proc_size, proc_map, proc_unmap, opts);
	err = -EINVAL;
	if (!tif)
		goto out;
	read_ghost(&p, map);

	/* the main chain, collecting SubIFD offsets as we go */
	for (;;) {
		if (builder_seen(b, TIFFCurrentDirOffset(tif))) {
			why_set(&p, "its IFD chain loops");
			goto out;
		}
		err = add_ifd(&p, b, tif, false);
		if (err)
			goto out;
		uint16_t count = 0;
		uint64_t *offsets = NULL;
		if (TIFFGetField(tif, TIFFTAG_SUBIFD, &count, &offsets) && offsets)
			for (uint16_t i = 0; i < count && nsub < MAX_SUBIFDS; i++)
				subifds[nsub++] = offsets[i];
		p.have_why = false;	/* an error from here on is about the next IFD */
		if (why_len)
			why[0] = '\0';
		if (!TIFFReadDirectory(tif)) {
			if (p.have_why || p.read_err) {
				err = p.read_err ? p.read_err : -EINVAL;
				goto out;
			}
			break;
		}
	}
	/* SubIFDs, each with any chain of its own */
	for (uint32_t i = 0; i < nsub; i++) {
		if (builder_seen(b, subifds[i]))
			continue;
		if (!TIFFSetSubDirectory(tif, subifds[i])) {
			why_set(&p, "SubIFD at %llu cannot be read", (unsigned long long)subifds[i]);
			err = p.read_err ? p.read_err : -EINVAL;
			goto out;
		}
		do {
			if (builder_seen(b, TIFFCurrentDirOffset(tif)))
				break;
			err = add_ifd(&p, b, tif, true);
			if (err)
				goto out;
		} while (TIFFReadDirectory(tif));
		if (p.read_err) {
			err = p.read_err;
			goto out;
		}
	}
	err = map_check(map, size, &p);
	if (!err) {
		*out = map;
		map = NULL;
	}
out:
	if (err && p.read_err)
		err = p.read_err;	/* the network, not the file */
	if (err == -EINVAL && !p.have_why)
		why_set(&p, "libtiff cannot read it");
	if (tif)
		TIFFClose(tif);
	if (opts)
		TIFFOpenOptionsFree(opts);
	tiff_map_free(map);
	free(b);
	return err;
}

/* ---- encoding ---- */

struct writer {
	unsigned char *p;
};

static void put32(struct writer *w, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		*w->p++ = (unsigned char)(v >> (8 * i));
}

static void put64(struct writer *w, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		*w->p++ = (unsigned char)(v >> (8 * i));
}

struct reader {
	const unsigned char *p, *end;
	bool short_read;
};

static uint32_t get32(struct reader *r)
{
	uint32_t v = 0;
	if (r->end - r->p < 4) {
		r->short_read = true;
		return 0;
	}
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)*r->p++ << (8 * i);
	return v;
}

static uint64_t get64(struct reader *r)
{
	uint64_t lo = get32(r);
	return lo | (uint64_t)get32(r) << 32;
}

#define HEAD_BYTES (4 + 4 * 6 + 8)
#define IFD_BYTES (4 * 10 + 8 * 3)
#define BLOCK_BYTES 16

int tiff_map_encode(const struct tiff_map *map, void **blob, size_t *len)
{
	size_t n = HEAD_BYTES + (size_t)map->nifd * IFD_BYTES + (size_t)map->nblocks * BLOCK_BYTES;
	struct writer w = { malloc(n) };

	if (!w.p)
		return -ENOMEM;
	*blob = w.p;
	*len = n;
	memcpy(w.p, "TMAP", 4);
	w.p += 4;
	put32(&w, MAP_FORMAT);
	put32(&w, (map->bigtiff ? 1u : 0u) | (map->big_endian ? 2u : 0u));
	put32(&w, map->leader);
	put32(&w, map->trailer);
	put32(&w, map->nifd);
	put64(&w, map->nblocks);
	for (uint32_t i = 0; i < map->nifd; i++) {
		const struct tiff_ifd *d = &map->ifds[i];
		put32(&w, d->width);
		put32(&w, d->height);
		put32(&w, d->block_w);
		put32(&w, d->block_h);
		put32(&w, d->across);
		put32(&w, d->down);
		put32(&w, d->planes);
		put32(&w, d->compression);
		put32(&w, d->subfile_type);
		put32(&w, (d->tiled ? 1u : 0u) | (d->sub ? 2u : 0u));
		put64(&w, d->dir_offset);
		put64(&w, d->first);
		put64(&w, d->n);
	}
	for (uint64_t k = 0; k < map->nblocks; k++) {
		put64(&w, map->blocks[k].off);
		put64(&w, map->blocks[k].len);
	}
	return 0;
}

int tiff_map_decode(const void *blob, size_t len, uint64_t size, struct tiff_map **out)
{
	struct reader r = { blob, (const unsigned char *)blob + len, false };
	struct parse p = { 0 };

	if (len < HEAD_BYTES || memcmp(blob, "TMAP", 4) != 0)
		return -EINVAL;
	r.p += 4;
	if (get32(&r) != MAP_FORMAT)
		return -EINVAL;
	struct tiff_map *map = calloc(1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	uint32_t flags = get32(&r);
	map->bigtiff = flags & 1;
	map->big_endian = flags & 2;
	map->leader = get32(&r);
	map->trailer = get32(&r);
	map->nifd = get32(&r);
	map->nblocks = get64(&r);
	if (map->nifd > TIFF_MAP_MAX_IFDS || map->nblocks > TIFF_MAP_MAX_BLOCKS ||
	    map->leader > 4 || map->trailer > 4 ||
	    len != HEAD_BYTES + (size_t)map->nifd * IFD_BYTES + map->nblocks * BLOCK_BYTES)
		goto bad;
	map->ifds = calloc(map->nifd ? map->nifd : 1, sizeof(*map->ifds));
	map->blocks = calloc(map->nblocks ? map->nblocks : 1, sizeof(*map->blocks));
	if (!map->ifds || !map->blocks) {
		tiff_map_free(map);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < map->nifd; i++) {
		struct tiff_ifd *d = &map->ifds[i];
		d->width = get32(&r);
		d->height = get32(&r);
		d->block_w = get32(&r);
		d->block_h = get32(&r);
		d->across = get32(&r);
		d->down = get32(&r);
		d->planes = get32(&r);
		d->compression = get32(&r);
		d->subfile_type = get32(&r);
		uint32_t f = get32(&r);
		d->tiled = f & 1;
		d->sub = f & 2;
		d->dir_offset = get64(&r);
		d->first = get64(&r);
		d->n = get64(&r);
		uint64_t n;
		if (__builtin_mul_overflow((uint64_t)d->across, (uint64_t)d->down, &n) ||
		    __builtin_mul_overflow(n, (uint64_t)d->planes, &n) || d->n != n)
			goto bad;
	}
	for (uint64_t k = 0; k < map->nblocks; k++) {
		map->blocks[k].off = get64(&r);
		map->blocks[k].len = get64(&r);
	}
	if (r.short_read || map_check(map, size, &p) != 0)
		goto bad;
	*out = map;
	return 0;
bad:
	tiff_map_free(map);
	return -EINVAL;
}

const char *tiff_compression_name(uint32_t compression, char *buf, size_t len)
{
	static const struct {
		uint32_t value;
		const char *name;
	} names[] = {
		{ 1, "none" }, { 2, "CCITT RLE" }, { 3, "CCITT G3" }, { 4, "CCITT G4" },
		{ 5, "LZW" }, { 6, "OJPEG" }, { 7, "JPEG" }, { 8, "DEFLATE" },
		{ 32773, "PackBits" }, { 32946, "DEFLATE" }, { 34712, "JPEG2000" },
		{ 34887, "LERC" }, { 34925, "LZMA" }, { 50000, "ZSTD" }, { 50001, "WEBP" },
		{ 50002, "JPEGXL" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].value == compression)
			return names[i].name;
	snprintf(buf, len, "#%u", compression);
	return buf;
}
