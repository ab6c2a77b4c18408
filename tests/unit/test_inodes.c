/* test_inodes.c - the inode numbers a mount gives the kernel: one per
 * path, counted up from 2, the same for a path forgotten and looked up
 * again, a new one for a retired path. */
#include "fs/inodes.h"
#include "check.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
	struct inodes *t;
	CHECK(inodes_new(&t) == 0, "a table");
	CHECK(inodes_count(t) == 1 && strcmp(inodes_path(t, INODES_ROOT), "") == 0,
	      "the root is there, path \"\"");
	CHECK(inodes_lookup(t, "") == INODES_ROOT, "looking up \"\" gives the root");

	uint64_t a = inodes_lookup(t, "dir/a.tif"), b = inodes_lookup(t, "dir/b.tif");
	CHECK(a && b && a != b && a != INODES_ROOT, "two paths, two numbers");
	CHECK(strcmp(inodes_path(t, a), "dir/a.tif") == 0, "a number gives its path back");
	CHECK(a == INODES_ROOT + 1 && b == INODES_ROOT + 2,
	      "numbers are counted from the root's on, not addresses (%#llx, %#llx)",
	      (unsigned long long)a, (unsigned long long)b);
	CHECK(inodes_lookup(t, "dir/a.tif") == a, "the same path keeps its number");
	inodes_forget(t, a, 1);
	CHECK(inodes_count(t) == 3 && strcmp(inodes_path(t, a), "dir/a.tif") == 0,
	      "looked up twice, forgotten once: still there");
	inodes_forget(t, a, 1);
	CHECK(inodes_count(t) == 2, "forgotten as often as looked up: the kernel holds it no more");
	/* another path takes whatever a's number was made of; a comes back */
	uint64_t x = inodes_lookup(t, "dir/x.tif");
	CHECK(x != a && inodes_lookup(t, "dir/a.tif") == a && inodes_count(t) == 4,
	      "a path forgotten and looked up again gets its number back (%#llx, %#llx)",
	      (unsigned long long)a, (unsigned long long)x);
	inodes_forget(t, a, 1);
	inodes_forget(t, x, 1);
	CHECK(inodes_path(t, 999999) == NULL && inodes_path(t, 0) == NULL,
	      "a number never given has no path");
	inodes_forget(t, INODES_ROOT, 5);
	CHECK(inodes_count(t) == 2, "the root is never forgotten");

	/* enough paths to grow the table several times; all keep their numbers */
	static uint64_t ino[20000];
	char path[64];
	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof(path), "d%d/chip-%d.tif", i % 7, i);
		ino[i] = inodes_lookup(t, path);
	}
	int same = 0;
	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof(path), "d%d/chip-%d.tif", i % 7, i);
		same += inodes_lookup(t, path) == ino[i] && strcmp(inodes_path(t, ino[i]), path) == 0;
	}
	CHECK(same == 20000 && inodes_count(t) == 20002, "20,000 paths keep their numbers (%d)", same);
	for (int i = 0; i < 20000; i++)
		inodes_forget(t, ino[i], 2);
	CHECK(inodes_count(t) == 2 && inodes_lookup(t, "dir/b.tif") == b, "all forgotten; b stays");
	inodes_forget(t, b, 1);
	same = 0;
	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof(path), "d%d/chip-%d.tif", i % 7, i);
		same += inodes_lookup(t, path) == ino[i];
	}
	CHECK(same == 20000 && inodes_count(t) == 20002,
	      "20,000 paths forgotten, looked up again: the same numbers (%d)", same);
	for (int i = 0; i < 20000; i++)
		inodes_forget(t, ino[i], 1);

	/* a retired number lives on for its files; the path gets a new one */
	uint64_t old = inodes_lookup(t, "dir/c.tif");
	CHECK(inodes_retire(t, old) && !inodes_retire(t, INODES_ROOT), "retire a number, not the root");
	uint64_t fresh = inodes_lookup(t, "dir/c.tif");
	CHECK(fresh && fresh != old && strcmp(inodes_path(t, old), "dir/c.tif") == 0 &&
	      inodes_count(t) == 4, "the path's next lookup: a new number; the old one stays");
	CHECK(inodes_retire(t, old), "retiring it again is harmless");
	inodes_forget(t, old, 1);
	CHECK(inodes_count(t) == 3 && inodes_lookup(t, "dir/c.tif") == fresh && !inodes_path(t, old),
	      "the retired one forgotten: gone, the new one stays");
	inodes_forget(t, fresh, 2);
	CHECK(inodes_lookup(t, "dir/c.tif") == fresh && !inodes_retire(t, old),
	      "the new number is the path's from then on, forgotten or not");
	CHECK(inodes_lookup(t, "dir/new.tif") > fresh, "a number is never given twice");

	/* the version whose pages an inode's page cache may hold */
	uint64_t v = inodes_lookup(t, "dir/v.tif");
	CHECK(!inodes_pages_of(t, v, 7), "a first open: nothing known of its pages");
	CHECK(inodes_pages_of(t, v, 7) && inodes_pages_of(t, v, 7), "opens of that version: kept");
	CHECK(!inodes_pages_of(t, v, 8), "an open of another version: not kept");
	CHECK(inodes_pages_of(t, v, 8) && !inodes_pages_of(t, v, 7), "then that one's; not the old");
	inodes_forget(t, v, 1);
	CHECK(inodes_lookup(t, "dir/v.tif") == v && !inodes_pages_of(t, v, 7),
	      "forgotten by the kernel: its pages went with it, nothing known");
	CHECK(!inodes_pages_of(t, 9999, 7), "a number not given");
	inodes_free(t);

	/* forgotten paths beyond INODES_FORGOTTEN_BYTES: the oldest are dropped */
	CHECK(inodes_new(&t) == 0, "a second table");
	static char longpath[4000];
	size_t n = INODES_FORGOTTEN_BYTES / sizeof(longpath) + 10;
	uint64_t first = 0, last = 0;
	for (size_t i = 0; i < n; i++) {
		memset(longpath, 'p', sizeof(longpath) - 1);
		snprintf(longpath, 32, "%zu/", i);
		longpath[strlen(longpath)] = 'p';
		last = inodes_lookup(t, longpath);
		first = first ? first : last;
		inodes_forget(t, last, 1);
	}
	uint64_t again = inodes_lookup(t, longpath);
	snprintf(longpath, 32, "%d/", 0);
	longpath[strlen(longpath)] = 'p';
	uint64_t first_again = inodes_lookup(t, longpath);
	CHECK(again == last && first_again > last,
	      "past the bound the oldest forgotten path gets a new number, the newest keeps its own");
	inodes_free(t);
	return check_done();
}
