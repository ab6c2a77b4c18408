/*
 * old_kernel_shim.c - an LD_PRELOAD library for the tests: tilefs sees the
 * FUSE INIT request of Linux 6.1 (Debian 12's kernel) on a newer kernel.
 * The request read from /dev/fuse gets protocol minor 38 and loses the
 * flags 6.1 does not offer that tilefs asks for: FUSE_DIRECT_IO_ALLOW_MMAP
 * (bit 36, Linux 6.6) and FUSE_PASSTHROUGH (bit 37, Linux 6.9). tilefs then
 * asks for neither, and the running kernel, not asked, behaves as 6.1
 * does for them: a direct-I/O file cannot be mapped MAP_SHARED (ENODEV),
 * and no open passes through.
 *
 * Only read() of the FUSE device is touched (tilefs reads it with read():
 * its custom I/O hook, fs/mount.c). Built by `make` as
 * BUILD/old_kernel_shim.so, never with the sanitizers; never part of
 * tilefs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#define FUSE_INIT 26
#define HEADER_LEN 40			/* struct fuse_in_header */
#define OLD_MINOR 38			/* Linux 6.1's FUSE_KERNEL_MINOR_VERSION */
#define INIT_EXT (1u << 30)
#define HIDDEN2 ((1u << (36 - 32)) | (1u << (37 - 32)))

static int is_fuse_device(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 10 &&
	       minor(st.st_rdev) == 229;
}

ssize_t read(int fd, void *buf, size_t count)
{
	static ssize_t (*real_read)(int, void *, size_t);
	if (!real_read)
		real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	ssize_t n = real_read(fd, buf, count);
	uint32_t opcode, in[5];		/* major, minor, max_readahead, flags, flags2 */
	if (n < HEADER_LEN + (ssize_t)sizeof(in))
		return n;
	memcpy(&opcode, (char *)buf + 4, 4);
	if (opcode != FUSE_INIT || !is_fuse_device(fd))
		return n;
	memcpy(in, (char *)buf + HEADER_LEN, sizeof(in));
	if (in[1] > OLD_MINOR)
		in[1] = OLD_MINOR;
	if (in[3] & INIT_EXT)
		in[4] &= ~HIDDEN2;
	memcpy((char *)buf + HEADER_LEN, in, sizeof(in));
	return n;
}
