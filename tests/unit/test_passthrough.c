/* test_passthrough.c - the opens of each inode as passthrough.c counts
 * them: all of them, and a backing file, are of one object version,
 * whatever order two opens of two versions take their steps in. The FUSE
 * device's two ioctls are played by ioctl() below: this test mounts
 * nothing. */
#define FUSE_USE_VERSION 312
#include "fs/passthrough.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* the kernel's, as passthrough.c writes them out */
struct backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define DEV_IOC_BACKING_OPEN _IOW(229, 1, struct backing_map)
#define DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

static int backing_opened, backing_closed, last_closed = -1;

/* The FUSE device: backing ids 1, 2, ... in order; passthrough.o's calls
 * land here, this binary's definition coming before the C library's. */
int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	(void)fd;
	if (request == DEV_IOC_BACKING_OPEN) {
		if (fcntl(((struct backing_map *)arg)->fd, F_GETFD) < 0)
			return -1;	/* errno EBADF */
		return ++backing_opened;
	}
	if (request == DEV_IOC_BACKING_CLOSE) {
		backing_closed++;
		last_closed = (int)*(uint32_t *)arg;
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

/* A file to hand over, as cache_object_pin() would. */
static int a_file(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static bool closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/* INIT: passthrough asked for where the kernel's protocol has it, and the
 * reply asked for it (fs/init_ext.c writes the flag). */
static void init(struct passthrough *p)
{
	struct fuse_conn_info conn = { .proto_major = 7, .proto_minor = 39 };
	CHECK(!passthrough_init(&conn, true), "protocol 7.39: no passthrough to ask for");
	conn.proto_minor = 40;
	CHECK(!passthrough_init(&conn, false), "protocol 7.40, not wanted: not asked for");
	CHECK(passthrough_init(&conn, true), "protocol 7.40, wanted: asked for");
	passthrough_started(p);
}

int main(void)
{
	static const struct fuse_lowlevel_ops ops;
	char *argv[] = { "test_passthrough", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args);
	struct passthrough *p = se ? passthrough_new(se) : NULL;
	CHECK(p != NULL, "a session and its passthrough");
	if (!p)
		return check_done();
	init(p);

	const uint64_t ino = 5;
	const int64_t old_version = 100, new_version = 200;
	int backing, fd;

	/* Open A of the old version and open B of the new one, on one inode,
	 * B arriving after A's check and before A's count: both see nothing
	 * passed through yet; then A registers its file; then B counts
	 * itself (its version is not sealed: no file of its own). B must not
	 * be given A's file: its reads would show the new version and an
	 * mmap of it the old. */
	CHECK(passthrough_may(p, ino, old_version), "A: may pass through");
	CHECK(passthrough_may(p, ino, new_version), "B: may, as far as it can tell yet");
	int a = passthrough_open(p, ino, old_version, a_file());
	CHECK(a > 0 && backing_opened == 1, "A passes through (backing id %d)", a);
	int b = passthrough_count(p, ino, new_version, IO_DIRECT, &backing);
	CHECK(b == -ESTALE && backing == -1,
	      "B, of the new version, is refused its own inode's file: -ESTALE (got %d, backing %d)",
	      b, backing);
	CHECK(!passthrough_may(p, ino, new_version), "B's next try: may not pass through");
	fd = a_file();
	b = passthrough_open(p, ino, new_version, fd);
	CHECK(b == -ESTALE && closed(fd) && backing_opened == 1,
	      "B sealed, passing through: -ESTALE too, its file closed, none registered (%d)", b);

	/* the old version's opens share A's file */
	int a2 = passthrough_open(p, ino, old_version, a_file());
	CHECK(a2 == a && backing_opened == 1, "a second open of A's version shares its file");
	int c = passthrough_count(p, ino, old_version, IO_CACHED, &backing);
	CHECK(c == IO_PASSED && backing == a,
	      "an open of A's version that cannot pass through names A's file (direct I/O on top)");

	/* another inode knows nothing of these */
	CHECK(passthrough_count(p, ino + 1, new_version, IO_CACHED, &backing) == IO_CACHED &&
	      backing == -1, "another inode: its own mode");
	passthrough_released(p, ino + 1, IO_CACHED);

	/* the three counted opens of A's version drain: the kernel lets go of
	 * the file at the last; the refused ones were never counted */
	passthrough_released(p, ino, IO_PASSED);
	passthrough_released(p, ino, IO_PASSED);
	CHECK(backing_closed == 0, "two of three released: the file stays");
	passthrough_released(p, ino, IO_PASSED);
	CHECK(backing_closed == 1 && last_closed == a, "the last released: the file closed");

	/* now the new version passes through, and the old is refused */
	b = passthrough_open(p, ino, new_version, a_file());
	CHECK(b > 0 && b != a && backing_opened == 2, "the new version passes through, its own file");
	c = passthrough_count(p, ino, old_version, IO_DIRECT, &backing);
	CHECK(c == -ESTALE && backing == -1, "an open of the old version now: -ESTALE");
	passthrough_released(p, ino, IO_PASSED);
	CHECK(backing_closed == 2 && last_closed == b, "released: its file closed");

	/* page-cache opens drain before a passthrough one */
	CHECK(passthrough_count(p, ino, old_version, IO_CACHED, &backing) == IO_CACHED,
	      "a page-cache open");
	fd = a_file();
	CHECK(passthrough_open(p, ino, old_version, fd) == -EBUSY && closed(fd),
	      "beside it, no passthrough: -EBUSY");
	/* another version beside it: its pages would be the inode's too */
	CHECK(passthrough_count(p, ino, new_version, IO_DIRECT, &backing) == -ESTALE &&
	      backing == -1, "another version beside a page-cache open: -ESTALE, uncounted");
	CHECK(passthrough_count(p, ino, new_version, IO_CACHED, &backing) == -ESTALE,
	      "and through the page cache: -ESTALE");
	CHECK(!passthrough_may(p, ino, new_version), "nor may it pass through");
	fd = a_file();
	CHECK(passthrough_open(p, ino, new_version, fd) == -ESTALE && closed(fd),
	      "passing through: -ESTALE, its file closed");
	passthrough_released(p, ino, IO_CACHED);
	CHECK(passthrough_count(p, ino, new_version, IO_DIRECT, &backing) == IO_DIRECT,
	      "once the old one is closed, the new version's open is counted");
	CHECK(passthrough_count(p, ino, old_version, IO_CACHED, &backing) == -ESTALE,
	      "and now the old version's is refused");
	passthrough_released(p, ino, IO_DIRECT);
	a = passthrough_open(p, ino, old_version, a_file());
	CHECK(a == 3, "once they are closed, an open passes through (%d)", a);
	passthrough_released(p, ino, IO_PASSED);

	/* A direct-I/O open is answered before a later passthrough one, but
	 * the kernel applies each answer when its opener runs, so it may
	 * apply the passthrough first, and then fails the direct open (EIO:
	 * it names no backing file while the inode has one). So direct-I/O
	 * opens drain before a passthrough one too. */
	CHECK(passthrough_count(p, ino, old_version, IO_DIRECT, &backing) == IO_DIRECT,
	      "a direct-I/O open, nothing passed through");
	fd = a_file();
	CHECK(passthrough_open(p, ino, old_version, fd) == -EBUSY && closed(fd),
	      "beside it, no passthrough: -EBUSY");
	passthrough_released(p, ino, IO_DIRECT);
	a = passthrough_open(p, ino, old_version, a_file());
	CHECK(a > 0, "once it is closed, an open passes through (%d)", a);
	passthrough_released(p, ino, IO_PASSED);

	passthrough_free(p);
	fuse_session_destroy(se);
	return check_done();
}
