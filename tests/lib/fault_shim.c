/*
 * fault_shim.c - an LD_PRELOAD library for the fault tests: makes a share
 * of the I/O calls on chosen files fail with EIO, as a failing disk would.
 *
 *   TILEFS_FAULT_MATCH    the files: those whose path, as opened or in
 *                         full, contains this string (e.g. "/index.db":
 *                         the index, its -wal and -shm)
 *   TILEFS_FAULT_PERCENT  the share of calls that fail, 0 to 100
 *   TILEFS_FAULT_SEED     makes the choice of calls repeatable (default 1)
 *   TILEFS_FAULT_LOG      a file: one line per failed call ("open PATH",
 *                         "pread FD") so a test can tell faults were made
 *   TILEFS_FAULT_CALLS    only these calls may fail: names separated by
 *                         commas, e.g. "pread64,pwrite64" (default: all)
 *
 * Calls that can fail: open, openat and their 64 and _FORTIFY_SOURCE
 * forms (by their path), read,
 * pread, pread64, write, pwrite, pwrite64, fsync, fdatasync, ftruncate,
 * ftruncate64 (on an fd opened from a matching path). Unset or 0: nothing
 * fails. Built by `make` as BUILD/fault_shim.so; never part of tilefs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FDS 65536

static atomic_bool faulty[MAX_FDS];	/* fd opened from a matching path */
static atomic_uint_fast64_t calls;

/* Should this call fail? A deterministic draw per call from the seed. */
static bool draw(void)
{
	static int percent = -1;
	static uint64_t seed;
	if (percent < 0) {
		const char *p = getenv("TILEFS_FAULT_PERCENT");
		const char *s = getenv("TILEFS_FAULT_SEED");
		seed = s ? strtoull(s, NULL, 10) : 1;
		percent = p ? atoi(p) : 0;
	}
	if (percent <= 0)
		return false;
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&calls, 1) + 1);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z % 100 < (uint64_t)percent;
}

static void note(const char *call, const char *path, int fd)
{
	const char *log = getenv("TILEFS_FAULT_LOG");
	if (!log)
		return;
	int (*real_open)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
	int lfd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0)
		return;
	char line[512];
	int n = path ? snprintf(line, sizeof(line), "%s %s\n", call, path)
		     : snprintf(line, sizeof(line), "%s %d\n", call, fd);
	ssize_t (*real_write)(int, const void *, size_t) = dlsym(RTLD_NEXT, "write");
	if (n > 0)
		real_write(lfd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	close(lfd);
}

static bool matches(const char *path)
{
	const char *m = getenv("TILEFS_FAULT_MATCH");
	return m && *m && path && strstr(path, m);
}

/* After an open of PATH gave FD: remember whether its calls may fail (by
 * PATH, or by the full path the kernel has for FD: a path opened relative
 * to a directory's fd holds only the end of it). */
static int opened(const char *path, int fd)
{
	if (fd >= 0 && fd < MAX_FDS) {
		char link[64], full[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, full, sizeof(full) - 1);
		full[n > 0 ? n : 0] = '\0';
		atomic_store(&faulty[fd], matches(path) || (n > 0 && matches(full)));
	}
	return fd;
}

/* Is CALL one TILEFS_FAULT_CALLS names (or is it unset)? */
static bool chosen(const char *call)
{
	const char *list = getenv("TILEFS_FAULT_CALLS");
	size_t n = strlen(call);
	for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strncmp(p, call, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	}
	return !list || !*list;
}

static bool fd_fails(const char *call, int fd)
{
	if (fd < 0 || fd >= MAX_FDS || !atomic_load(&faulty[fd]) || !chosen(call) || !draw())
		return false;
	note(call, NULL, fd);
	errno = EIO;
	return true;
}

static bool path_fails(const char *call, const char *path)
{
	if (!matches(path) || !chosen(call) || !draw())
		return false;
	note(call, path, -1);
	errno = EIO;
	return true;
}

/* REAL(NAME, RET, ARGS...): real, the next definition of NAME (libc's) */
#define REAL(name, ret, ...) \
	static ret (*real)(__VA_ARGS__); \
	if (!real) \
		real = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

#define OPEN_LIKE(name) \
int name(const char *path, int flags, ...) \
{ \
	REAL(#name, int, const char *, int, ...); \
	mode_t mode = 0; \
	if (flags & (O_CREAT | O_TMPFILE)) { \
		va_list ap; \
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
	} \
	if (path_fails(#name, path)) \
		return -1; \
	return opened(path, real(path, flags, mode)); \
}
OPEN_LIKE(open)
OPEN_LIKE(open64)

/* the _FORTIFY_SOURCE entry points, called without a mode */
#define OPEN_2(name) \
int name(const char *path, int flags) \
{ \
	REAL(#name, int, const char *, int); \
	if (path_fails(#name, path)) \
		return -1; \
	return opened(path, real(path, flags)); \
}
OPEN_2(__open_2)
OPEN_2(__open64_2)

#define OPENAT_LIKE(name) \
int name(int dir, const char *path, int flags, ...) \
{ \
	REAL(#name, int, int, const char *, int, ...); \
	mode_t mode = 0; \
	if (flags & (O_CREAT | O_TMPFILE)) { \
		va_list ap; \
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
	} \
	if (path_fails(#name, path)) \
		return -1; \
	return opened(path, real(dir, path, flags, mode)); \
}
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

#define OPENAT_2(name) \
int name(int dir, const char *path, int flags) \
{ \
	REAL(#name, int, int, const char *, int); \
	if (path_fails(#name, path)) \
		return -1; \
	return opened(path, real(dir, path, flags)); \
}
OPENAT_2(__openat_2)
OPENAT_2(__openat64_2)

int close(int fd)
{
	REAL("close", int, int);
	if (fd >= 0 && fd < MAX_FDS)
		atomic_store(&faulty[fd], false);
	return real(fd);
}

ssize_t read(int fd, void *buf, size_t n)
{
	REAL("read", ssize_t, int, void *, size_t);
	return fd_fails("read", fd) ? -1 : real(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL("write", ssize_t, int, const void *, size_t);
	return fd_fails("write", fd) ? -1 : real(fd, buf, n);
}

#define PIO(name, buftype) \
ssize_t name(int fd, buftype buf, size_t n, off_t off) \
{ \
	REAL(#name, ssize_t, int, buftype, size_t, off_t); \
	return fd_fails(#name, fd) ? -1 : real(fd, buf, n, off); \
}
PIO(pread, void *)
PIO(pread64, void *)
PIO(pwrite, const void *)
PIO(pwrite64, const void *)

#define SYNC_LIKE(name) \
int name(int fd) \
{ \
	REAL(#name, int, int); \
	return fd_fails(#name, fd) ? -1 : real(fd); \
}
SYNC_LIKE(fsync)
SYNC_LIKE(fdatasync)

#define TRUNC_LIKE(name) \
int name(int fd, off_t len) \
{ \
	REAL(#name, int, int, off_t); \
	return fd_fails(#name, fd) ? -1 : real(fd, len); \
}
TRUNC_LIKE(ftruncate)
TRUNC_LIKE(ftruncate64)
