/* test_tiff.c - the tile-map parser on the shared corpus: every good file
 * parses and survives encode/decode; no bad file crashes it or gets past
 * the checks with a block outside the file; read errors are not taken for
 * a malformed file; damaged blobs are refused. The corpus is
 * $TILEFS_CORPUS or tests/data/corpus. */
#include "cache/tiff/tiff.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct file {
	int fd;
	int fail_after;			/* reads before -EIO; < 0: never */
};

static int file_read(void *arg, void *buf, size_t len, uint64_t off)
{
	struct file *f = arg;
	if (f->fail_after == 0)
		return -EIO;
	if (f->fail_after > 0)
		f->fail_after--;
	ssize_t n = pread(f->fd, buf, len, (off_t)off);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -ERANGE;
}

static int parse_file(const char *path, int fail_after, struct tiff_map **map, uint64_t *size,
		      char *why, size_t why_len)
{
	struct file f = { open(path, O_RDONLY), fail_after };
	struct stat st;
	if (f.fd < 0 || fstat(f.fd, &st) != 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	int err = tiff_map_parse(file_read, &f, *size, map, why, why_len);
	close(f.fd);
	return err;
}

static bool maps_equal(const struct tiff_map *a, const struct tiff_map *b)
{
	if (a->nifd != b->nifd || a->nblocks != b->nblocks || a->leader != b->leader ||
	    a->trailer != b->trailer || a->bigtiff != b->bigtiff || a->big_endian != b->big_endian)
		return false;
	for (uint32_t i = 0; i < a->nifd; i++)
		if (a->ifds[i].first != b->ifds[i].first || a->ifds[i].n != b->ifds[i].n ||
		    a->ifds[i].width != b->ifds[i].width || a->ifds[i].tiled != b->ifds[i].tiled)
			return false;
	return memcmp(a->blocks, b->blocks, a->nblocks * sizeof(*a->blocks)) == 0;
}

static void corpus(const char *root, const char *set, bool good)
{
	char dir[4096], path[8192], why[160];
	snprintf(dir, sizeof(dir), "%s/%s", root, set);
	DIR *d = opendir(dir);
	int files = 0, parsed = 0;
	CHECK(d != NULL, "corpus %s", dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct tiff_map *map = NULL, *back = NULL;
		uint64_t size;
		int err = parse_file(path, -1, &map, &size, why, sizeof(why));
		files++;
		if (good)
			CHECK(err == 0, "good %s parses (%s)", e->d_name, err ? why : "ok");
		else
			CHECK(err == 0 || err == -EINVAL || err == -ENOTSUP,
			      "bad %s: a map or a reason (%d: %s)", e->d_name, err, why);
		if (err)
			continue;
		parsed++;
		void *blob;
		size_t len;
		CHECK(tiff_map_encode(map, &blob, &len) == 0 &&
		      tiff_map_decode(blob, len, size, &back) == 0 && maps_equal(map, back),
		      "%s %s: encode/decode round trip", set, e->d_name);
		free(blob);
		tiff_map_free(back);
		tiff_map_free(map);
	}
	closedir(d);
	CHECK(files > 10, "%s: %d files, %d parsed", set, files, parsed);
}

static void damaged(const char *root)
{
	char path[8192], why[160];
	struct tiff_map *map = NULL, *back = NULL;
	uint64_t size;
	void *blob;
	size_t len;

	snprintf(path, sizeof(path), "%s/good/riotiler_cog_ovr.tif", root);
	CHECK(parse_file(path, -1, &map, &size, why, sizeof(why)) == 0, "riotiler_cog_ovr parses");
	if (!map)
		return;
	CHECK(map->nifd == 5 && map->nblocks == 171 && map->leader == 4 && map->trailer == 4,
	      "5 IFDs, 171 tiles, GDAL leader and trailer");
	CHECK(tiff_map_encode(map, &blob, &len) == 0, "encode");
	CHECK(tiff_map_decode(blob, len - 1, size, &back) == -EINVAL, "a truncated blob is refused");
	CHECK(tiff_map_decode(blob, len, size / 2, &back) == -EINVAL,
	      "a blob whose blocks lie past the object's end is refused");
	((unsigned char *)blob)[0] = 'X';
	CHECK(tiff_map_decode(blob, len, size, &back) == -EINVAL, "a wrong magic is refused");
	free(blob);
	tiff_map_free(map);

	for (int after = 0; after < 4; after++) {
		map = NULL;
		int err = parse_file(path, after, &map, &size, why, sizeof(why));
		CHECK(err == -EIO && !map, "a read error after %d reads is the read's error (%d)",
		      after, err);
	}
	snprintf(path, sizeof(path), "%s/SOURCES.tsv", root);
	map = NULL;
	CHECK(parse_file(path, -1, &map, &size, why, sizeof(why)) == -ENOTSUP && !map,
	      "a text file is not a TIFF");
}

int main(void)
{
	const char *root = getenv("TILEFS_CORPUS");
	if (!root)
		root = "tests/data/corpus";
	corpus(root, "good", true);
	corpus(root, "bad", false);
	damaged(root);
	return check_done();
}
