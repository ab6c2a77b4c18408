/*
 * store.c - see store.h.
 */
#include "store.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct store {
	char *root;	/* DIR/data-<instance> */
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void remove_other_generations(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4200];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "data-", 5) != 0 || strcmp(e->d_name, keep) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		log_info("removing data of an older cache index: %s", path);
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	closedir(d);
}

int store_open(const char *dir, const char *instance, struct store **out)
{
	struct store *st = calloc(1, sizeof(*st));
	char name[64];

	if (!st)
		return -ENOMEM;
	snprintf(name, sizeof(name), "data-%s", instance);
	size_t n = strlen(dir) + strlen(name) + 2;
	st->root = malloc(n);
	if (!st->root) {
		free(st);
		return -ENOMEM;
	}
	snprintf(st->root, n, "%s/%s", dir, name);
	remove_other_generations(dir, name);
	if (mkdir(st->root, 0700) != 0 && errno != EEXIST) {
		int err = -errno;
		log_error("cannot create %s: %s", st->root, strerror(errno));
		store_close(st);
		return err;
	}
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	free(st->root);
	free(st);
}

static void object_path(struct store *st, int64_t id, char *out, size_t size, bool dir_only)
{
	if (dir_only)
		snprintf(out, size, "%s/%02x", st->root, (unsigned)(id & 0xff));
	else
		snprintf(out, size, "%s/%02x/%" PRId64, st->root, (unsigned)(id & 0xff), id);
}

int store_object_open(struct store *st, int64_t object_id, int *fd)
{
	char path[4200];

	object_path(st, object_id, path, sizeof(path), false);
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (*fd < 0 && errno == ENOENT) {
		char dir[4200];
		object_path(st, object_id, dir, sizeof(dir), true);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			return -errno;
		*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	}
	return *fd < 0 ? -errno : 0;
}

int store_object_remove(struct store *st, int64_t object_id)
{
	char path[4200];

	object_path(st, object_id, path, sizeof(path), false);
	return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

int store_punch(struct store *st, int64_t object_id, uint64_t off, uint64_t len)
{
	char path[4200];
	int fd, err = 0;

	object_path(st, object_id, path, sizeof(path), false);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) != 0)
		err = -errno;
	close(fd);
	return err;
}

int store_write(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int store_read(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}
