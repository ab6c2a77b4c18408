/* test_store_direct.c - store_write()'s direct writes and store_scan (store.h)
 * in a temp dir under the build dir (a disk's file system, not tmpfs): the
 * bytes read back are the bytes written, whichever way they went; what
 * went direct is not left in the page cache, what did not is; a scan reads
 * across its windows, and a file that ends early is -EIO. */
#include "cache/store/store.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096u

static char dir[] = "build/tilefs-test-direct-XXXXXX";

/* Pages of [off, off+len) of PATH resident in the page cache. */
static size_t resident(const char *path, uint64_t off, uint64_t len)
{
	int fd = open(path, O_RDONLY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0)
		return (size_t)-1;
	unsigned char *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return (size_t)-1;
	size_t pages = (size_t)((off + len + PAGE - 1) / PAGE - off / PAGE), n = 0;
	unsigned char *vec = malloc(pages);
	if (vec && mincore(map + off / PAGE * PAGE, pages * PAGE, vec) == 0)
		for (size_t i = 0; i < pages; i++)
			n += vec[i] & 1;
	else
		n = (size_t)-1;
	free(vec);
	munmap(map, (size_t)sb.st_size);
	return n;
}

/* Whether the file system under DIR takes direct I/O (STATX_DIOALIGN). */
static bool takes_direct(const char *path)
{
	struct statx sx;
	return statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) == 0 &&
	       (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align;
}

int main(void)
{
	struct store *st;
	const size_t len = STORE_WINDOW + (1 << 20);	/* wider than a scan's window */
	const uint64_t off = 3 * PAGE + 100;	/* not on a page: edges buffered */
	char path[300];
	unsigned char *mem, *buf, *got = malloc(len);

	mkdir("build", 0755);
	CHECK(mkdtemp(dir) != NULL, "temp dir");
	CHECK(store_open(dir, "0123456789abcdef", &st) == 0, "open the store");
	/* the buffer on the file's page grid: buf and off equal modulo a page */
	CHECK(posix_memalign((void **)&mem, PAGE, len + PAGE) == 0 && got, "memory");
	buf = mem + off % PAGE;
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 31 + 7);

	CHECK(store_write(st, 1, buf, len, off, true) == 0, "a direct write");
	snprintf(path, sizeof(path), "%s/data-0123456789abcdef/01/1", dir);
	CHECK(store_read(st, 1, got, len, off) == 0 && memcmp(got, buf, len) == 0,
	      "reads back the same bytes");
	CHECK(store_write(st, 2, buf, len, off, false) == 0, "a buffered write");
	snprintf(path, sizeof(path), "%s/data-0123456789abcdef/02/2", dir);
	size_t whole = (off + len) / PAGE - (off + PAGE - 1) / PAGE;
	CHECK(resident(path, (off + PAGE - 1) / PAGE * PAGE, whole * PAGE) == whole,
	      "a buffered write leaves its pages in the page cache");
	if (takes_direct(path)) {
		/* drop the pages of store 1's file that the read above filled */
		snprintf(path, sizeof(path), "%s/data-0123456789abcdef/01/1", dir);
		int fd1 = open(path, O_RDONLY);
		CHECK(fd1 >= 0 && fdatasync(fd1) == 0 &&
		      posix_fadvise(fd1, 0, 0, POSIX_FADV_DONTNEED) == 0 &&
		      resident(path, off, len) == 0, "drop the pages read");
		close(fd1);
		CHECK(store_write(st, 1, buf, len, off, true) == 0, "the direct write again");
		size_t in = resident(path, (off + PAGE - 1) / PAGE * PAGE, whole * PAGE);
		CHECK(in == 0, "its whole pages skipped the page cache (%zu of %zu resident)", in,
		      whole);
		CHECK(resident(path, off / PAGE * PAGE, PAGE) == 1, "its first page (an edge) did not");
	} else {
		printf("# the file system under %s takes no direct I/O: that part skipped\n", dir);
	}
	CHECK(store_write(st, 3, buf + 1, len - 1, off, true) == 0 &&
	      store_read(st, 3, got, len - 1, off) == 0 && memcmp(got, buf + 1, len - 1) == 0,
	      "a buffer off the grid is written buffered, and reads back");

	/* a scan, across windows, through a pin */
	int pin = store_pin(st, 1);
	struct store_scan *scan = store_scan_open(pin);
	int err = 0;
	CHECK(pin >= 0 && scan, "pin and scan a data file");
	bool same = true;
	for (uint64_t at = off; same && at < off + len; at += 65536 + 3) {
		size_t n = at + 65536 + 3 > off + len ? (size_t)(off + len - at) : 65536 + 3;
		const unsigned char *p = (const unsigned char *)store_scan_read(scan, at, n, &err);
		same = p && !err && memcmp(p, buf + (at - off), n) == 0;
	}
	CHECK(same, "every piece is the bytes written (%d)", err);
	CHECK(!store_scan_read(scan, off + len - 10, 20, &err) && err == -EIO,
	      "past the file's end: -EIO (%d)", err);
	const unsigned char *big = (const unsigned char *)store_scan_read(scan, off, len, &err);
	CHECK(big && memcmp(big, buf, len) == 0, "a piece wider than a window");
	store_scan_close(scan);
	close(pin);

	store_close(st);
	free(mem);
	free(got);
	CHECK(check_rm_tree(dir) == 0, "cleanup");
	return check_done();
}
