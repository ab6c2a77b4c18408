/*
 * inspect.c - `tilefs inspect [--blocks] [--cache-dir DIR] PATH_OR_URL`.
 * PATH is a file in a tilefs mount (reported from that mount's cache
 * index: no request is made) or any local file (parsed here); URL is an
 * object's URL as a mount reads it, looked up in DIR's index. It prints
 * the IFDs, the tile map and, from an index, how much of the object is
 * cached; --blocks adds one line per tile or strip.
 *
 * The cache dir of a file in a mount comes from a user.* xattr, which
 * anyone may set on their own files, and any FUSE file system may answer:
 * it is believed only when the file is on a tilefs mount (FUSE, mounted
 * with subtype tilefs) of the caller's or root's, and the dir must pass
 * options_check_cache_dir_as_is(). inspect only reads: it opens the index
 * with index_open_readonly() and changes nothing in the cache dir, which
 * may be one tilefs never made.
 */
#include "tools/inspect.h"
#include "cache/store/index.h"
#include "cache/store/store.h"
#include "cache/tiff/layout.h"
#include "cache/tiff/tiff.h"
#include "tools/mount_lookup.h"
#include "tools/options.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs inspect [--blocks] [--cache-dir DIR] PATH_OR_URL\n"
		"\n"
		"Show what tilefs knows of a file: its TIFF IFDs (size, tile size, tile\n"
		"count, compression), how it is cut into cache units, and how much of it\n"
		"is cached. PATH is a file in a tilefs mount of yours or root's (read from\n"
		"the mount's cache index, no request made) or any other TIFF (parsed\n"
		"directly); URL is the URL a mount read the object from, looked up in the\n"
		"cache index. The cache is only read: nothing in it is changed.\n"
		"\n"
		"Options:\n"
		"  --blocks          also list every tile or strip: block IFD INDEX OFFSET LENGTH\n"
		"  --cache-dir DIR   the cache to look URL up in (default: as tilefs mount)\n"
		"  -h, --help        show this help\n");
}

static int pread_all(void *arg, void *buf, size_t len, uint64_t off)
{
	int fd = *(int *)arg;
	while (len > 0) {
		ssize_t n = pread(fd, buf, len, (off_t)off);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ERANGE;
		buf = (char *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static void print_map(const char *name, uint64_t size, const struct tiff_map *map,
		      const char *why, bool blocks)
{
	char buf[16];

	if (!map) {
		printf("%s: %" PRIu64 " bytes, plain bytes (%s)\n", name, size, why);
		return;
	}
	uint64_t empty = 0;
	for (uint64_t k = 0; k < map->nblocks; k++)
		empty += map->blocks[k].len == 0;
	printf("%s: %" PRIu64 " bytes, %s, %s, %u IFDs, %" PRIu64 " blocks (%" PRIu64 " empty)",
	       name, size, map->bigtiff ? "BigTIFF" : "TIFF",
	       map->big_endian ? "big-endian" : "little-endian", map->nifd, map->nblocks, empty);
	if (map->leader || map->trailer)
		printf(", COG leader %u trailer %u", map->leader, map->trailer);
	printf("\n");
	for (uint32_t i = 0; i < map->nifd; i++) {
		const struct tiff_ifd *d = &map->ifds[i];
		printf("ifd %u: %ux%u, %s %ux%u, %ux%u, %" PRIu64 " blocks, %s", i, d->width,
		       d->height, d->tiled ? "tiles" : "strips", d->block_w, d->block_h, d->across,
		       d->down, d->n, tiff_compression_name(d->compression, buf, sizeof(buf)));
		if (d->planes > 1)
			printf(", %u planes", d->planes);
		if (d->subfile_type & 1)
			printf(", overview");
		if (d->subfile_type & 4)
			printf(", mask");
		if (d->sub)
			printf(", subifd");
		printf("\n");
	}
	if (!blocks)
		return;
	for (uint32_t i = 0; i < map->nifd; i++)
		for (uint64_t s = 0; s < map->ifds[i].n; s++) {
			const struct tiff_block *b = &map->blocks[map->ifds[i].first + s];
			printf("block %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", i, s, b->off, b->len);
		}
}

/* Units of L: the header, tiles and the bytes left to blocks. */
static void print_units(const struct layout *l)
{
	uint64_t header = 0, tiles = 0, tile_bytes = 0;
	for (size_t i = 0; i < l->nunits; i++) {
		struct layout_unit u = layout_unit_get(l, i);
		if (u.block == UINT64_MAX) {
			header = u.len;
		} else {
			tiles++;
			tile_bytes += u.len;
		}
	}
	printf("units: header %" PRIu64 " bytes, %" PRIu64 " tile units (%" PRIu64
	       " bytes), the other %" PRIu64 " bytes in blocks of %" PRIu64 "\n",
	       header, tiles, tile_bytes, l->object_size - header - tile_bytes, l->block_size);
}

static int inspect_local(const char *path, bool blocks)
{
	struct tiff_map *map = NULL;
	struct stat st;
	char why[160] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(stderr, "tilefs: cannot read %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	int err = tiff_map_parse(pread_all, &fd, (uint64_t)st.st_size, &map, why, sizeof(why));
	close(fd);
	if (err && err != -EINVAL && err != -ENOTSUP) {
		fprintf(stderr, "tilefs: cannot read %s: %s\n", path, strerror(-err));
		return 1;
	}
	print_map(path, (uint64_t)st.st_size, map, why, blocks);
	tiff_map_free(map);
	return 0;
}

/* Report object ID (or the newest version of URL) from DIR's index. */
static int inspect_indexed(const char *path, const char *dir, int64_t id, const char *url,
			   bool blocks)
{
	struct index *ix;
	struct index_object obj;
	void *blob = NULL;
	size_t blob_len = 0;
	uint64_t header_len = 0, units = 0, bytes = 0;
	struct tiff_map *map = NULL;
	int status = 1;

	if (options_check_cache_dir_as_is(dir) == -EPERM)
		return 1;	/* said what to fix */
	int err = index_open_readonly(dir, &ix);
	if (err == -ENOENT) {
		fprintf(stderr, "tilefs: %s: no tilefs cache index in %s\n", path, dir);
		return 1;
	}
	if (err) {
		fprintf(stderr, "tilefs: cannot open the cache index in %s: %s\n", dir,
			strerror(-err));
		return 1;
	}
	err = url ? index_object_latest(ix, url, &obj) : index_object_get(ix, id, &obj);
	if (err == -ENOENT) {
		fprintf(stderr, "tilefs: %s is not in the cache in %s (read it through a mount "
			"first, or inspect the file in the mount)\n", path, dir);
		goto out;
	}
	if (!err) {
		id = obj.id;
		err = index_object_map(ix, id, &header_len, &blob, &blob_len);
	}
	bool legacy = err == -ENOENT;
	if (err && !legacy) {
		fprintf(stderr, "tilefs: %s is not in the cache index %s: %s\n", path, dir,
			strerror(-err));
		goto out;
	}
	if (blob && tiff_map_decode(blob, blob_len, obj.size, &map) != 0) {
		fprintf(stderr, "tilefs: %s: the cached tile map is damaged\n", path);
		goto out;
	}
	print_map(path, obj.size, map, legacy ? "cached before tile maps" : "not a usable TIFF",
		  blocks);
	struct layout l;
	if (legacy)
		layout_init_blocks(&l, obj.size, obj.block_size);
	if (legacy || layout_init(&l, obj.size, obj.block_size, header_len, map) == 0) {
		map = NULL;	/* the layout has it */
		print_units(&l);
		layout_release(&l);
	}
	if (index_object_usage(ix, id, &units, &bytes) == 0)
		printf("cached: %" PRIu64 " units, %" PRIu64 " of %" PRIu64 " bytes (%.0f%%)\n",
		       units, bytes, obj.size, obj.size ? 100.0 * (double)bytes / (double)obj.size : 100.0);
	struct store_stamp stamp;
	if (index_sealed(ix, id, &stamp) == 0)
		printf("sealed: checked whole; mounts pass its reads to the kernel while its data "
		       "file is unchanged\n");
	status = 0;
out:
	tiff_map_free(map);
	free(blob);
	index_close(ix);
	return status;
}

static int inspect_mounted(const char *path, const char *xattr, bool blocks)
{
	char dir[4200];
	long long id;

	if (sscanf(xattr, "%lld\t%4199[^\n]", &id, dir) != 2) {
		fprintf(stderr, "tilefs: %s: unexpected %s '%s'\n", path, INSPECT_XATTR_OBJECT, xattr);
		return 1;
	}
	if (id < 0) {
		printf("%s: not cached (the origin gives it no version)\n", path);
		return 0;
	}
	return inspect_indexed(path, dir, id, NULL, blocks);
}

int inspect_main(int argc, char **argv)
{
	bool blocks = false;
	const char *path = NULL, *cache_dir = NULL;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--blocks") == 0) {
			blocks = true;
		} else if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc) {
			cache_dir = argv[++i];
		} else if (strncmp(argv[i], "--cache-dir=", 12) == 0) {
			cache_dir = argv[i] + 12;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "tilefs: inspect: unexpected '%s'\nTry 'tilefs inspect --help'.\n",
				argv[i]);
			return EXIT_USAGE;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		fprintf(stderr, "tilefs: inspect: which file?\nTry 'tilefs inspect --help'.\n");
		return EXIT_USAGE;
	}
	if (strstr(path, "://")) {
		char *dir = cache_dir ? strdup(cache_dir) : options_default_cache_dir();
		int status = dir ? inspect_indexed(path, dir, 0, path, blocks) : 1;
		free(dir);
		return status;
	}
	/* O_PATH: the checks and the xattr are of one file, and opening it
	 * asks a mount nothing */
	int fd = open(path, O_PATH | O_CLOEXEC);
	uid_t owner;
	if (fd >= 0 && mount_lookup_fd(fd, &owner, NULL, 0) == 0) {
		if (owner != geteuid() && owner != 0) {
			fprintf(stderr, "tilefs: %s is on a tilefs mount of uid %ld: only a mount "
				"of yours or root's names its cache; reading the file itself\n",
				path, (long)owner);
		} else {
			char xattr[4300], fd_path[64];
			snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
			ssize_t n = getxattr(fd_path, INSPECT_XATTR_OBJECT, xattr, sizeof(xattr) - 1);
			if (n > 0) {
				xattr[n] = '\0';
				close(fd);
				return inspect_mounted(path, xattr, blocks);
			}
		}
	}
	if (fd >= 0)
		close(fd);
	return inspect_local(path, blocks);
}
