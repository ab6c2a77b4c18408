/*
 * store.c - see store.h.
 *
 * DESIGN: fds live in a table of FD_SLOTS entries under st->lock. A caller
 * takes a slot (busy++) for one pread/pwrite/fallocate and gives it back;
 * a slot is closed and reused only when idle. When every slot is busy the
 * caller uses a file of its own for that one operation. A slot opened
 * before the last store_unlink() of any process is not used again (its
 * file may be gone): the shared counters of punches and unlinks are
 * counters.h's.
 *
 * Buffered writes into one data file go one at a time: a slot's writing
 * mutex, a leaf, is held across each (store_write()). The kernel lets them
 * in one at a time anyway (ext4, XFS and btrfs take the inode lock
 * exclusively for a buffered write), and a thread waiting for that lock
 * spins on it while its holder copies; waiting for the mutex sleeps, so
 * fetch threads that write one object's file at once (E6) leave the CPU
 * to others. Direct writes are not kept apart here: a file system may run
 * them side by side.
 *
 * Every file is opened under a directory fd (the cache dir, the data
 * directory, its xx/ subdirectory), never following a link: data
 * directories and their subdirectories are 0700, data files and the
 * reserve 0600. The cache dir itself was checked by index_open().
 */
#include "cache/store/store.h"
#include "cache/store/counters.h"
#include "cache/base/log.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define FD_SLOTS 64
/* the reserve: 1/16 of the file system, at most this */
#define RESERVE_MAX (4u << 20)
/* the WAL of the index as the room counts it: SQLite checkpoints it at
   1000 pages (index_open.c keeps the default), 4 KiB each, and a
   transaction may pass that by a few pages */
#define INDEX_WAL_BOUND ((4u << 20) + (256u << 10))

struct fd_slot {
	int64_t object_id;	/* 0: empty */
	int fd;
	int direct_fd;		/* -1, or the same file opened O_DIRECT */
	int busy;
	pthread_mutex_t writing;	/* held by a buffered store_write() */
	uint64_t used;		/* for least-recently-used */
	uint64_t unlinks;	/* store_unlinks() when it was opened */
};

struct store {
	char *root;		/* DIR/data-<instance>, for messages */
	int dir_fd;		/* DIR */
	int root_fd;		/* DIR/data-<instance> */
	pthread_mutex_t lock;
	struct fd_slot slots[FD_SLOTS];	/* protected by lock */
	uint64_t clock;		/* protected by lock */
	bool reserve_held;	/* protected by lock */
	uint64_t reserve_bytes;	/* reserve_size(), at store_open() */
	struct counters *counters;	/* punches and unlinks, of every process */
	_Atomic int direct;	/* DIRECT_UNKNOWN, DIRECT_OFF or DIRECT_ON */
};

enum { DIRECT_UNKNOWN, DIRECT_OFF, DIRECT_ON };

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

/* "data-" and 16 hex digits: a data directory of some index generation. */
static bool is_data_dir(const char *name)
{
	if (strncmp(name, "data-", 5) != 0 || strlen(name) != 21)
		return false;
	for (const char *p = name + 5; *p; p++)
		if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
			return false;
	return true;
}

static void remove_other_generations(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4200];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!is_data_dir(e->d_name) || strcmp(e->d_name, keep) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		log_info("removing data of an older cache index: %s", path);
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	closedir(d);
}

uint64_t store_punches(struct store *st)
{
	static _Atomic uint64_t none;	/* no store: a new count at each call */
	if (!st)
		return atomic_fetch_add(&none, 1);
	return counters_get(st->counters, COUNTER_PUNCHES);
}

/* Unlinks made so far in this cache dir (the same rule as punches). */
static uint64_t store_unlinks(struct store *st)
{
	return counters_get(st->counters, COUNTER_UNLINKS);
}

/* The reserve on the file system of DIR_FD: 1/16 of it, at most
 * RESERVE_MAX (on a small disk, 4 MiB would be much of what the cache
 * has). */
static uint64_t reserve_size(int dir_fd)
{
	struct statvfs v;
	if (fstatvfs(dir_fd, &v) != 0)
		return RESERVE_MAX;
	uint64_t sixteenth = (uint64_t)v.f_blocks * v.f_frsize / 16;
	return sixteenth < RESERVE_MAX ? sixteenth : RESERVE_MAX;
}

int store_open(const char *dir, const char *instance, struct store **out)
{
	struct store *st = calloc(1, sizeof(*st));
	char name[64];

	if (!st)
		return -ENOMEM;
	st->dir_fd = st->root_fd = -1;
	snprintf(name, sizeof(name), "data-%s", instance);
	size_t n = strlen(dir) + strlen(name) + 16;
	st->root = malloc(n);
	if (!st->root) {
		store_close(st);
		return -ENOMEM;
	}
	snprintf(st->root, n, "%s/%s", dir, name);
	pthread_mutex_init(&st->lock, NULL);
	for (int i = 0; i < FD_SLOTS; i++)
		pthread_mutex_init(&st->slots[i].writing, NULL);
	remove_other_generations(dir, name);
	st->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dir_fd < 0 || (mkdirat(st->dir_fd, name, 0700) != 0 && errno != EEXIST) ||
	    (st->root_fd = openat(st->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				  O_CLOEXEC)) < 0) {
		int err = -errno;
		log_error("cannot create %s: %s", st->root, strerror(errno));
		store_close(st);
		return err;
	}
	int err = counters_open(st->root_fd, st->root, &st->counters);
	if (err) {
		store_close(st);
		return err;
	}
	st->reserve_bytes = reserve_size(st->dir_fd);
	store_reserve_restore(st);
	*out = st;
	return 0;
}

static void slot_close(struct fd_slot *s)
{
	close(s->fd);
	if (s->direct_fd >= 0)
		close(s->direct_fd);
	s->direct_fd = -1;
	s->object_id = 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (int i = 0; i < FD_SLOTS; i++)
		if (st->slots[i].object_id)
			slot_close(&st->slots[i]);
	if (st->root) {
		pthread_mutex_destroy(&st->lock);
		for (int i = 0; i < FD_SLOTS; i++)
			pthread_mutex_destroy(&st->slots[i].writing);
	}
	counters_close(st->counters);
	if (st->root_fd >= 0)
		close(st->root_fd);
	if (st->dir_fd >= 0)
		close(st->dir_fd);
	free(st->root);
	free(st);
}

/* OBJECT_ID's file, data-<instance>/<xx>/<id>, links not followed. */
static int open_object(struct store *st, int64_t id, bool create, int mode)
{
	char sub[8], name[32];
	int flags = mode | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0);
	int dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

	snprintf(sub, sizeof(sub), "%02x", (unsigned)(id & 0xff));
	snprintf(name, sizeof(name), "%" PRId64, id);
	int sub_fd = openat(st->root_fd, sub, dir_flags);
	if (sub_fd < 0 && errno == ENOENT && create) {
		if (mkdirat(st->root_fd, sub, 0700) != 0 && errno != EEXIST)
			return -errno;
		sub_fd = openat(st->root_fd, sub, dir_flags);
	}
	if (sub_fd < 0)
		return -errno;
	int fd = openat(sub_fd, name, flags, 0600);
	int err = fd < 0 ? -errno : 0;
	close(sub_fd);
	return err ? err : fd;
}

/* A slot holding ID's fd, busy for the caller; NULL with *own set to a
 * private fd (close it) when every slot is busy. */
static struct fd_slot *slot_take(struct store *st, int64_t id, bool create, int *own, int *err)
{
	struct fd_slot *victim = NULL;

	*own = -1;
	*err = 0;
	uint64_t unlinks = store_unlinks(st);	/* before the open */
	pthread_mutex_lock(&st->lock);
	for (int i = 0; i < FD_SLOTS; i++) {
		struct fd_slot *s = &st->slots[i];
		if (s->object_id && s->unlinks != unlinks && !s->busy) {
			slot_close(s);	/* opened before an unlink: perhaps not the file now */
		}
		if (s->object_id == id && s->unlinks == unlinks) {
			s->busy++;
			s->used = ++st->clock;
			pthread_mutex_unlock(&st->lock);
			return s;
		}
		if (!s->busy && (!victim || !s->object_id ||
				 (victim->object_id && s->used < victim->used)))
			victim = s;
	}
	if (victim) {
		if (victim->object_id)
			slot_close(victim);
		victim->busy = 1;	/* ours while we open it */
	}
	pthread_mutex_unlock(&st->lock);

	int fd = open_object(st, id, create, O_RDWR);
	/* reads here take a unit or part of one, where the index says: the
	   kernel's readahead would read the holes and neighbours beside it */
	if (fd >= 0)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (!victim) {
		if (fd < 0)
			*err = fd;
		else
			*own = fd;
		return NULL;
	}
	pthread_mutex_lock(&st->lock);
	if (fd < 0) {
		victim->busy = 0;
		*err = fd;
		victim = NULL;
	} else {
		victim->object_id = id;
		victim->fd = fd;
		victim->direct_fd = -1;
		victim->used = ++st->clock;
		victim->unlinks = unlinks;
	}
	pthread_mutex_unlock(&st->lock);
	return victim;
}

static void slot_give(struct store *st, struct fd_slot *s, int own)
{
	if (!s) {
		if (own >= 0)
			close(own);
		return;
	}
	pthread_mutex_lock(&st->lock);
	s->busy--;
	pthread_mutex_unlock(&st->lock);
}

/* Up to LEN bytes at OFF, *DONE of them moved: fewer only where the file
 * ends; 0 or -errno (*DONE then says how far it got). */
static int io_upto(int fd, bool write, char *p, size_t len, uint64_t off, size_t *done)
{
	*done = 0;
	while (*done < len) {
		ssize_t n = write ? pwrite(fd, p + *done, len - *done, (off_t)(off + *done))
				  : pread(fd, p + *done, len - *done, (off_t)(off + *done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*done += (size_t)n;
	}
	return 0;
}

/* All LEN bytes at OFF, or an error: a read that ends early is -EIO. */
static int io_full(int fd, bool write, char *p, size_t len, uint64_t off)
{
	size_t done;
	int err = io_upto(fd, write, p, len, off, &done);
	return err ? err : done < len ? -EIO : 0;
}

struct store_scan {
	int fd;
	bool direct;		/* O_DIRECT set on fd */
	uint64_t size;		/* of the file, when opened */
	char *buf;		/* cap bytes, on the page grid */
	size_t cap;
	uint64_t off;		/* the window: len bytes of the file at off */
	size_t len;
};

struct store_scan *store_scan_open(int pin)
{
	struct store_scan *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = pin;
	struct stat st;
	s->size = fstat(pin, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : UINT64_MAX;
	int fl = fcntl(pin, F_GETFL);
	s->direct = fl >= 0 && fcntl(pin, F_SETFL, fl | O_DIRECT) == 0;
	return s;
}

/* Up to LEN bytes at OFF into the window's buffer, fewer only at the end
 * of the file; 0 or -errno. */
static int scan_fill(struct store_scan *s, uint64_t off, size_t len)
{
	size_t got;
	s->off = off;
	int err = io_upto(s->fd, false, s->buf, len, off, &got);
	if (err == -EINVAL && s->direct) {	/* not taken after all: read it buffered */
		int fl = fcntl(s->fd, F_GETFL);
		if (fl < 0 || fcntl(s->fd, F_SETFL, fl & ~O_DIRECT) != 0)
			return -errno;
		s->direct = false;
		err = io_upto(s->fd, false, s->buf, len, off, &got);
	}
	s->len = err ? 0 : got;
	return err;
}

const char *store_scan_read(struct store_scan *s, uint64_t off, size_t len, int *err)
{
	*err = 0;
	if (s->buf && off >= s->off && off + len <= s->off + s->len)
		return s->buf + (off - s->off);
	uint64_t start = off / STORE_ALIGN * STORE_ALIGN;
	uint64_t end = start + STORE_WINDOW;	/* a window, not past the file's end */
	if (end > s->size)
		end = s->size;
	if (end < off + len)
		end = off + len;
	size_t want = (size_t)((end - start + STORE_ALIGN - 1) / STORE_ALIGN * STORE_ALIGN);
	if (want > s->cap) {
		free(s->buf);
		s->cap = 0;
		if (posix_memalign((void **)&s->buf, STORE_ALIGN, want) != 0) {
			s->buf = NULL;
			*err = -ENOMEM;
			return NULL;
		}
		s->cap = want;
	}
	*err = scan_fill(s, start, want);
	if (!*err && off + len > s->off + s->len)
		*err = -EIO;
	return *err ? NULL : s->buf + (off - start);
}

void store_scan_close(struct store_scan *s)
{
	if (s)
		free(s->buf);
	free(s);
}

/* Whether ST's file system takes direct writes at STORE_ALIGN, asked once,
 * of the first data file written (FD). */
static bool direct_usable(struct store *st, int fd)
{
	int d = atomic_load(&st->direct);
	if (d != DIRECT_UNKNOWN)
		return d == DIRECT_ON;
	struct statx sx;
	bool ok = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
		  (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align &&
		  STORE_ALIGN % sx.stx_dio_offset_align == 0 && sx.stx_dio_mem_align &&
		  STORE_ALIGN % sx.stx_dio_mem_align == 0;
	atomic_store(&st->direct, ok ? DIRECT_ON : DIRECT_OFF);
	return ok;
}

/* The file of slot S (busy for the caller) opened O_DIRECT for writing,
 * kept in the slot; -1 if it cannot be, or is no longer the slot's file. */
static int slot_direct_fd(struct store *st, struct fd_slot *s)
{
	pthread_mutex_lock(&st->lock);
	int fd = s->direct_fd;
	pthread_mutex_unlock(&st->lock);
	if (fd >= 0)
		return fd;
	fd = open_object(st, s->object_id, false, O_WRONLY | O_DIRECT);
	struct stat a, b;
	if (fd >= 0 && (fstat(fd, &a) != 0 || fstat(s->fd, &b) != 0 || a.st_ino != b.st_ino ||
			a.st_dev != b.st_dev)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&st->lock);
	if (s->direct_fd < 0)
		s->direct_fd = fd;
	else {
		close(fd);
		fd = s->direct_fd;
	}
	pthread_mutex_unlock(&st->lock);
	return fd;
}

int store_write(struct store *st, int64_t id, const void *buf, size_t len, uint64_t off,
		bool direct_ok)
{
	if (!st)
		return -ENODEV;
	int own, err;
	struct fd_slot *s = slot_take(st, id, true, &own, &err);
	if (err)
		return err;
	int fd = s ? s->fd : own;
	const char *p = buf;
	/* the whole pages of the buffer: straight to the disk where they can */
	uint64_t a = (off + STORE_ALIGN - 1) / STORE_ALIGN * STORE_ALIGN;
	uint64_t b = (off + len) / STORE_ALIGN * STORE_ALIGN;
	int direct = -1;
	if (direct_ok && s && b > a && b - a >= STORE_DIRECT_MIN &&
	    (uintptr_t)(p + (a - off)) % STORE_ALIGN == 0 && direct_usable(st, fd))
		direct = slot_direct_fd(st, s);
	if (direct < 0) {
		if (s)		/* one at a time: see DESIGN */
			pthread_mutex_lock(&s->writing);
		err = io_full(fd, true, (char *)p, len, off);
		if (s)
			pthread_mutex_unlock(&s->writing);
	} else {
		err = io_full(fd, true, (char *)p, a - off, off);
		int middle = err ? err : io_full(direct, true, (char *)p + (a - off), b - a, a);
		if (middle == -EINVAL) {	/* not taken after all: never again */
			atomic_store(&st->direct, DIRECT_OFF);
			middle = io_full(fd, true, (char *)p + (a - off), b - a, a);
		}
		err = middle ? middle : io_full(fd, true, (char *)p + (b - off), off + len - b, b);
	}
	slot_give(st, s, own);
	return err;
}

int store_read(struct store *st, int64_t id, void *buf, size_t len, uint64_t off)
{
	if (!st)
		return -ENODEV;
	int own, err;
	struct fd_slot *s = slot_take(st, id, false, &own, &err);
	if (err)
		return err == -ENOENT ? -EIO : err;
	err = io_full(s ? s->fd : own, false, buf, len, off);
	slot_give(st, s, own);
	return err;
}

int store_punch(struct store *st, int64_t id, uint64_t off, uint64_t len)
{
	if (!st)
		return -ENODEV;
	int own, err;
	struct fd_slot *s = slot_take(st, id, false, &own, &err);
	if (err)
		return err == -ENOENT ? 0 : err;
	int fd = s ? s->fd : own;
	/* an uncounted punch could be missed by a reader: the bytes stay */
	err = counters_add(st->counters, true, false);
	if (!err && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			      (off_t)len) != 0)
		err = -errno;
	slot_give(st, s, own);
	return err;
}

int store_unlink(struct store *st, int64_t id)
{
	if (!st)
		return -ENODEV;
	char path[40];
	snprintf(path, sizeof(path), "%02x/%" PRId64, (unsigned)(id & 0xff), id);
	/* counted first, as a punch and as an unlink; unlinked even if that
	   fails (the kernel may map the file: unit.h, invariant 7), which is
	   safe as a unit read first in a process is checked whole */
	counters_add(st->counters, true, true);
	int err = unlinkat(st->root_fd, path, 0) == 0 || errno == ENOENT ? 0 : -errno;
	/* and counted as an unlink again after it: a slot opened between
	   the first count and the unlink names the file gone, and a write
	   through it would be lost (slot_take()) */
	counters_add(st->counters, false, true);
	return err;
}

/* OBJECT_ID's file, read-only, under flock(2) operation OP (see store.h). */
static int lock_object(struct store *st, int64_t id, int op)
{
	if (!st)
		return -ENOENT;
	int fd = open_object(st, id, false, O_RDONLY);
	if (fd < 0)
		return fd;
	if (flock(fd, op | LOCK_NB) != 0) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return err;
	}
	return fd;
}

int store_pin(struct store *st, int64_t id)
{
	return lock_object(st, id, LOCK_SH);
}

int store_hold(struct store *st, int64_t id)
{
	return lock_object(st, id, LOCK_EX);
}

int store_stamp(int fd, struct store_stamp *out)
{
	struct stat sb;
	if (fstat(fd, &sb) != 0)
		return -errno;
	out->ino = (int64_t)sb.st_ino;
	out->ctime_ns = (int64_t)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec;
	return 0;
}

bool store_full(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

bool store_reserve_release(struct store *st)
{
	if (!st)
		return false;
	pthread_mutex_lock(&st->lock);
	bool held = st->reserve_held;
	st->reserve_held = false;
	pthread_mutex_unlock(&st->lock);
	if (held)
		unlinkat(st->dir_fd, "reserve", 0);
	return held;
}

void store_reserve_restore(struct store *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	bool held = st->reserve_held;
	pthread_mutex_unlock(&st->lock);
	if (held)
		return;
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(st->dir_fd, "reserve", flags, 0600);
	if (fd < 0 && errno == ELOOP && unlinkat(st->dir_fd, "reserve", 0) == 0)
		fd = openat(st->dir_fd, "reserve", flags, 0600);	/* was a link */
	if (fd < 0)
		return;
	/* a link to another file (hard: O_NOFOLLOW stops symbolic ones) is
	   never grown; removing the name leaves that file alone */
	struct stat sb;
	bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink == 1 &&
		  ftruncate(fd, (off_t)st->reserve_bytes) == 0 &&
		  fallocate(fd, 0, 0, (off_t)st->reserve_bytes) == 0;
	close(fd);
	if (!ok) {
		unlinkat(st->dir_fd, "reserve", 0);
		return;
	}
	pthread_mutex_lock(&st->lock);
	st->reserve_held = true;
	pthread_mutex_unlock(&st->lock);
}

/* Bytes the file NAME under DIR_FD takes on disk (0 if there is none). */
static uint64_t allocated(int dir_fd, const char *name)
{
	struct stat sb;
	return fstatat(dir_fd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) ?
	       (uint64_t)sb.st_blocks * 512 : 0;
}

int store_room(struct store *st, uint64_t data_bytes, struct store_room *out)
{
	struct statvfs v;
	memset(out, 0, sizeof(*out));
	if (!st)
		return -ENODEV;
	if (fstatvfs(st->dir_fd, &v) != 0)
		return -errno;
	uint64_t wal = allocated(st->dir_fd, "index.db-wal");
	out->reserve = st->reserve_bytes;
	out->index = allocated(st->dir_fd, "index.db") + allocated(st->dir_fd, "index.db-shm") +
		     (wal > INDEX_WAL_BOUND ? wal : INDEX_WAL_BOUND);
	/* free now, and what the cache holds already (its to reuse) */
	out->disk = (uint64_t)v.f_bavail * v.f_frsize + data_bytes +
		    allocated(st->dir_fd, "reserve") + allocated(st->dir_fd, "index.db") +
		    allocated(st->dir_fd, "index.db-shm") + wal;
	return 0;
}
