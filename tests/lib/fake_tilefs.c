/*
 * fake_tilefs.c - a FUSE file system that passes itself off as tilefs, for
 * the tests of `tilefs inspect`: mounted with the type fuse.tilefs, it
 * holds one file, f.tif, with the bytes of a local FILE, whose
 * user.tilefs.object xattr is the XATTR given (what tilefs inspect reads to
 * find a mount's cache dir). It mounts itself with mount(2), so it runs as
 * root, and with user_id=OWNER (default: the caller) and allow_other, so a
 * test can show a mount that belongs to another user.
 *
 *   fake_tilefs [--owner UID] MOUNTPOINT FILE XATTR
 *
 * Serves in the foreground until SIGTERM or SIGINT, then unmounts.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_name = "/f.tif";
static const char *xattr_name = "user.tilefs.object";
static const char *xattr_value;
static int file_fd = -1;
static struct stat file_st;

static int fake_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (strcmp(path, file_name) == 0) {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = file_st.st_size;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int fake_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	if (strcmp(path, "/") != 0)
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, file_name + 1, NULL, 0, 0);
	return 0;
}

static int fake_open(const char *path, struct fuse_file_info *fi)
{
	return strcmp(path, file_name) == 0 ? 0 : -ENOENT;
}

static int fake_read(const char *path, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n = pread(file_fd, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int fake_getxattr(const char *path, const char *name, char *value, size_t size)
{
	size_t len = strlen(xattr_value);
	if (strcmp(path, file_name) != 0 || strcmp(name, xattr_name) != 0)
		return -ENODATA;
	if (size == 0)
		return (int)len;
	if (size < len)
		return -ERANGE;
	memcpy(value, xattr_value, len);
	return (int)len;
}

static const struct fuse_operations fake_ops = {
	.getattr = fake_getattr,
	.readdir = fake_readdir,
	.open = fake_open,
	.read = fake_read,
	.getxattr = fake_getxattr,
};

int main(int argc, char **argv)
{
	uid_t owner = getuid();
	int i = 1;

	if (argc > 2 && strcmp(argv[1], "--owner") == 0) {
		owner = (uid_t)strtoul(argv[2], NULL, 10);
		i = 3;
	}
	if (argc - i != 3) {
		fprintf(stderr, "usage: fake_tilefs [--owner UID] MOUNTPOINT FILE XATTR\n");
		return 2;
	}
	const char *mountpoint = argv[i];
	xattr_value = argv[i + 2];
	file_fd = open(argv[i + 1], O_RDONLY | O_CLOEXEC);
	if (file_fd < 0 || fstat(file_fd, &file_st) != 0) {
		perror(argv[i + 1]);
		return 1;
	}

	int dev_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev_fd < 0) {
		perror("/dev/fuse");
		return 1;
	}
	char opts[128], dev_path[32];
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other",
		 dev_fd, (unsigned)owner, (unsigned)owner);
	if (mount("fake", mountpoint, "fuse.tilefs", MS_NOSUID | MS_NODEV | MS_RDONLY, opts) != 0) {
		perror("mount");
		return 1;
	}
	/* libfuse serves an fd already mounted when given /dev/fd/N */
	snprintf(dev_path, sizeof(dev_path), "/dev/fd/%d", dev_fd);
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	int status = 1;
	if (fuse_opt_add_arg(&args, "fake_tilefs") != 0)
		goto unmount;
	struct fuse *fuse = fuse_new(&args, &fake_ops, sizeof(fake_ops), NULL);
	if (!fuse)
		goto free_args;
	if (fuse_mount(fuse, dev_path) != 0)
		goto destroy;
	if (fuse_set_signal_handlers(fuse_get_session(fuse)) != 0)
		goto destroy;
	status = fuse_loop(fuse) == 0 ? 0 : 1;
	fuse_remove_signal_handlers(fuse_get_session(fuse));
	fuse_unmount(fuse);
destroy:
	fuse_destroy(fuse);
free_args:
	fuse_opt_free_args(&args);
unmount:
	umount2(mountpoint, MNT_DETACH);
	return status;
}
