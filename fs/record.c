/*
 * record.c - see record.h. Each open of a tiled TIFF keeps its
 * full-resolution image's tiles sorted by offset, so that a read finds the
 * tiles it read (whose middle byte it holds, hint_at.h) with a binary
 * search, and the bounding box of those tiles in atomics (reads of one open may run at once). The line is
 * written whole with one write() to a file opened O_APPEND, so lines of
 * opens released at once never mix.
 */
#include "fs/record.h"
#include "cache/base/log.h"
#include "cache/engine/cache.h"
#include "cache/engine/hint_at.h"
#include "cache/tiff/layout.h"
#include "cache/tiff/tiff.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct record {
	int fd;
	atomic_bool skipped_logged;
};

/* A full-resolution tile: where its bytes lie, and where it sits. */
struct tile_at {
	uint64_t off, len;
	uint32_t col, row;
};

struct record_open {
	char *path;
	const struct tiff_ifd *ifd;	/* full resolution, or NULL */
	struct tile_at *tiles;		/* sorted by off; ntiles */
	size_t ntiles;
	atomic_bool read;		/* anything was read */
	_Atomic uint32_t col0, row0, col1, row1;	/* tiles read; col0 > col1: none */
};

int record_new(const char *file, struct record **out)
{
	struct record *r = calloc(1, sizeof(*r));
	struct stat st;
	int err;

	if (!r)
		return -ENOMEM;
	/* never through a symlink, never another's file, never a file with
	   other names (hard links): a fresh file, or ours truncated */
	r->fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (r->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		err = -EPERM;
		goto fail;
	}
	if (fchmod(r->fd, 0600) != 0 || ftruncate(r->fd, 0) != 0) {
		err = -errno;
		goto fail;
	}
	*out = r;
	return 0;

fail:
	log_error("cannot write the record %s: %s", file,
		  err == -EPERM ? "not a regular file of this user with one name" :
		  strerror(-err));
	if (r->fd >= 0)
		close(r->fd);
	free(r);
	return err;
}

void record_free(struct record *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r);
}

static int tile_cmp(const void *a, const void *b)
{
	const struct tile_at *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The full-resolution image of L's tile map (tiff_full_ifd()), if tiled. */
static const struct tiff_ifd *full_resolution(const struct layout *l)
{
	const struct tiff_map *m = l->map;
	uint32_t full = m ? tiff_full_ifd(m) : 0;
	return m && full < m->nifd && m->ifds[full].tiled ? &m->ifds[full] : NULL;
}

struct record_open *record_open(struct record *r, const char *path,
				struct cache_object *obj)
{
	if (!r)
		return NULL;
	struct record_open *ro = calloc(1, sizeof(*ro));
	if (!ro || !(ro->path = strdup(path))) {
		free(ro);
		return NULL;
	}
	atomic_init(&ro->col0, UINT32_MAX);
	atomic_init(&ro->row0, UINT32_MAX);
	const struct layout *l = cache_object_layout(obj);
	const struct tiff_ifd *d = l ? full_resolution(l) : NULL;	/* NULL: logged */
	/* plane 0 stands for all: a window covers every plane */
	if (d && (ro->tiles = calloc((size_t)d->across * d->down, sizeof(*ro->tiles)))) {
		ro->ifd = d;
		for (uint32_t row = 0; row < d->down; row++)
			for (uint32_t col = 0; col < d->across; col++) {
				struct extent e = layout_block_extent(
					l, layout_block_index(d, 0, row, col));
				if (e.len)
					ro->tiles[ro->ntiles++] =
						(struct tile_at){ e.off, e.len, col, row };
			}
		qsort(ro->tiles, ro->ntiles, sizeof(*ro->tiles), tile_cmp);
	}
	return ro;
}

static void lower(_Atomic uint32_t *v, uint32_t x)
{
	uint32_t cur = atomic_load(v);
	while (x < cur && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static void raise_to(_Atomic uint32_t *v, uint32_t x)
{
	uint32_t cur = atomic_load(v);
	while (x > cur && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

void record_read(struct record_open *ro, uint64_t off, size_t len)
{
	if (!ro || len == 0)
		return;
	atomic_store(&ro->read, true);
	/* the first tile starting after OFF, then back one: it may hold OFF */
	size_t lo = 0, hi = ro->ntiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ro->tiles[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo ? lo - 1 : 0; i < ro->ntiles && ro->tiles[i].off < off + len; i++) {
		const struct tile_at *t = &ro->tiles[i];
		/* a tile is read when its middle byte is, as the hints count:
		   GDAL's buffered read of a tile touches its neighbours' edges */
		if (!read_holds_tile(t->off, t->len, off, len))
			continue;
		lower(&ro->col0, t->col);
		lower(&ro->row0, t->row);
		raise_to(&ro->col1, t->col);
		raise_to(&ro->row1, t->row);
	}
}

/* Would PATH, alone on a line, read back as a path and a window? */
static bool ends_in_four_numbers(const char *path)
{
	const char *p = path + strlen(path);
	for (int k = 0; k < 4; k++) {
		const char *end = p;
		while (p > path && isdigit((unsigned char)p[-1]))
			p--;
		if (p == end || p == path || p[-1] != ' ')
			return false;
		while (p > path && p[-1] == ' ')
			p--;
	}
	return p > path;
}

void record_close(struct record *r, struct record_open *ro)
{
	char line[HINT_LINE_MAX + 100];
	int n = -1;

	if (!ro)
		return;
	bool read = r && atomic_load(&ro->read);	/* no R: dropped unwritten */
	uint32_t c0 = atomic_load(&ro->col0), c1 = atomic_load(&ro->col1);
	uint32_t r0 = atomic_load(&ro->row0), r1 = atomic_load(&ro->row1);
	bool window = ro->ifd && c0 <= c1;
	bool plain = strpbrk(ro->path, "\t\n\r") == NULL && strlen(ro->path) < HINT_LINE_MAX - 80 &&
		     (window || !ends_in_four_numbers(ro->path)) &&
		     ro->path[strspn(ro->path, " ")] != '#';
	if (read && !plain) {
		if (!atomic_exchange(&r->skipped_logged, true))
			log_warn("record: %s has a name an order file cannot hold: left out "
				 "(and others like it)", ro->path);
	} else if (read && window) {
		const struct tiff_ifd *d = ro->ifd;
		uint64_t x = (uint64_t)c0 * d->block_w, y = (uint64_t)r0 * d->block_h;
		uint64_t x1 = (uint64_t)(c1 + 1) * d->block_w, y1 = (uint64_t)(r1 + 1) * d->block_h;
		if (x1 > d->width)
			x1 = d->width;
		if (y1 > d->height)
			y1 = d->height;
		n = snprintf(line, sizeof(line), "%s\t%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			     "\n", ro->path, x, y, x1 - x, y1 - y);
	} else if (read) {
		n = snprintf(line, sizeof(line), "%s\n", ro->path);
	}
	if (n > 0 && (size_t)n < sizeof(line) && write(r->fd, line, (size_t)n) != n &&
	    !atomic_exchange(&r->skipped_logged, true))
		log_warn("record: cannot write: %s", strerror(errno));
	free(ro->tiles);
	free(ro->path);
	free(ro);
}
