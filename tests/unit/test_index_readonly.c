/* test_index_readonly.c - index_open_readonly(): a dir that holds no index
 * is left as it was, an index is read (while a writer has it open, and
 * when none has) with nothing added beside it, and writing fails. */
#include "cache/store/index.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names in DIR into OUT, each followed by a space, in readdir's order;
 * returns how many. */
static int entries(const char *dir, char *out, size_t size)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	int count = 0;
	out[0] = '\0';
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s ", e->d_name);
		count++;
	}
	closedir(d);
	return count;
}

static bool exists(const char *dir, const char *name)
{
	struct stat st;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

int main(void)
{
	char dir[] = "/tmp/tilefs-test-index-ro-XXXXXX";
	char names[1024];
	struct index *ix, *ro;
	struct stat st;
	bool rebuilt, created;

	CHECK(mkdtemp(dir) != NULL, "temp dir");
	chmod(dir, 0755);

	/* no index: -ENOENT, nothing made, the mode kept */
	CHECK(index_open_readonly(dir, &ro) == -ENOENT, "an empty dir holds no index");
	CHECK(entries(dir, names, sizeof(names)) == 0, "nothing created in it: '%s'", names);
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0755, "its mode kept (%o)",
	      (unsigned)(st.st_mode & 07777));

	/* index.db without index.lock (which every index_open() leaves): none */
	int fd = open(strcat(strcpy(names, dir), "/index.db"), O_CREAT | O_WRONLY, 0600);
	close(fd);
	CHECK(index_open_readonly(dir, &ro) == -ENOENT, "index.db alone is no index");
	CHECK(!exists(dir, "index.lock"), "index.lock not created");
	unlink(names);

	/* a real index, open in a writer: read beside its -wal and -shm */
	CHECK(index_open(dir, &ix, &rebuilt) == 0, "a writer opens it");
	struct index_object obj = { .size = 1000, .block_size = 4096, .version = "\"e1\"" };
	CHECK(index_object_add(ix, "http://h/a.tif", &obj, NULL, 0, NULL, &created) == 0 && created,
	      "the writer adds an object");
	CHECK(index_open_readonly(dir, &ro) == 0, "opened read-only beside the writer");
	struct index_object got;
	CHECK(index_object_latest(ro, "http://h/a.tif", &got) == 0 && got.id == obj.id &&
	      got.size == 1000, "the object is read");
	struct index_object other = { .size = 2000, .block_size = 4096, .version = "\"e2\"" };
	CHECK(index_object_add(ro, "http://h/b.tif", &other, NULL, 0, NULL, &created) != 0,
	      "writing through it fails");
	index_close(ro);
	index_close(ix);

	/* no process has it open: read from index.db alone, nothing added */
	CHECK(!exists(dir, "index.db-wal") && !exists(dir, "index.db-shm"),
	      "the writer's close removed -wal and -shm");
	char before[1024], after[1024];
	entries(dir, before, sizeof(before));
	struct stat db_before, db_after;
	stat(strcat(strcpy(names, dir), "/index.db"), &db_before);
	CHECK(index_open_readonly(dir, &ro) == 0, "opened read-only with no writer");
	CHECK(index_object_latest(ro, "http://h/a.tif", &got) == 0 && got.id == obj.id,
	      "the object is read");
	CHECK(index_object_latest(ro, "http://h/b.tif", &got) == -ENOENT,
	      "nothing was written through the read-only index");
	index_close(ro);
	entries(dir, after, sizeof(after));
	stat(names, &db_after);
	CHECK(strcmp(before, after) == 0, "nothing added beside it: '%s' then '%s'", before, after);
	CHECK(db_before.st_mtim.tv_sec == db_after.st_mtim.tv_sec &&
	      db_before.st_mtim.tv_nsec == db_after.st_mtim.tv_nsec &&
	      db_before.st_size == db_after.st_size, "index.db unchanged");

	/* a dir others may write to is refused, as for every open */
	chmod(dir, 0777);
	CHECK(index_open_readonly(dir, &ro) == -EPERM, "a dir others may write to is refused");
	chmod(dir, 0755);
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0755, "its mode kept");

	if (check_rm_tree(dir) != 0)
		perror(dir);
	return check_done();
}
