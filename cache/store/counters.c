/*
 * counters.c - see counters.h.
 *
 * DESIGN: ct->lock guards ct->fd: held shared to read the file, exclusive
 * to count (threads of one process share the open file, so its flock(2)
 * does not keep them apart) or to open it again. ct->seen_lock, a leaf
 * lock, guards what this process last read.
 *
 * A file rewritten in place (a restore tool copying an old file over it)
 * keeps its inode; it is seen when a count goes down (counts only go up,
 * but for the random start) or when the file changed (its ctime) while the
 * counts did not. Then every later answer of this process is moved by
 * SHIFT, so it matches no answer given before.
 */
#include "cache/store/counters.h"
#include "cache/base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WORDS 2
#define FILE_LEN (WORDS * sizeof(uint64_t))
#define PERHAPS (UINT64_C(1) << 63)	/* set in every untrusted answer only */
#define SHIFT (UINT64_C(1) << 48)	/* added to answers after a rewrite */
#define ADD_TRIES 3			/* files replaced while we count */

struct counters {
	int dir_fd;			/* borrowed */
	char *where;			/* DIR/data-<instance>, for messages */
	pthread_rwlock_t lock;
	int fd;				/* the punches file, or -1: protected by lock */
	bool opened;			/* had a file once: protected by lock */
	pthread_mutex_t seen_lock;
	int64_t seen_ino, seen_ctime_ns;	/* the last read: seen_lock */
	uint64_t seen[WORDS];		/* seen_lock */
	uint64_t shift;			/* seen_lock */
	_Atomic uint64_t perhaps;	/* the next untrusted answer */
	atomic_bool failing;		/* its failure is logged */
};

/* What one read found. */
struct reading {
	uint64_t w[WORDS];
	int64_t ino, ctime_ns;
};

static void note_failure(struct counters *ct, const char *what, int err)
{
	if (!atomic_exchange(&ct->failing, true))
		log_warn("cannot %s %s/punches (%s): every cached read is checked in the index, "
			 "and evicted units keep their disk space", what, ct->where, strerror(-err));
}

/* Both words of the file open on FD into R: 0, -ENODATA if it holds fewer
 * (truncated), -ESTALE if it is no longer in the directory, or -errno. */
static int read_words(int fd, struct reading *r)
{
	struct stat s;
	if (fd < 0)
		return -EBADF;
	ssize_t n = pread(fd, r->w, FILE_LEN, 0);
	if (n < 0 || fstat(fd, &s) != 0)
		return -errno;
	if (s.st_nlink == 0)
		return -ESTALE;
	r->ino = (int64_t)s.st_ino;
	r->ctime_ns = (int64_t)s.st_ctim.tv_sec * 1000000000 + s.st_ctim.tv_nsec;
	return (size_t)n == FILE_LEN ? 0 : -ENODATA;
}

/* Random counts to start from: below 2^62, so years of counting never
 * reach PERHAPS. */
static void random_words(uint64_t w[WORDS])
{
	if (getrandom(w, FILE_LEN, 0) != (ssize_t)FILE_LEN) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		w[0] = (uint64_t)t.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32;
		w[1] = w[0] * 0xff51afd7ed558ccdull ^ (uint64_t)t.tv_sec;
	}
	for (int i = 0; i < WORDS; i++)
		w[i] &= (UINT64_C(1) << 62) - 1;
}

/* Under the file's flock: raise the counts (punches by 1 if PUNCH,
 * unlinks by 1 if UNLINK) or, if RESTART, move both to random values; a
 * file found short starts at random values either way. Caller holds
 * ct->lock exclusive. */
static int write_words(struct counters *ct, bool restart, bool punch, bool unlink)
{
	bool count = punch || unlink;
	struct reading r;
	if (flock(ct->fd, LOCK_EX) != 0)
		return -errno;
	int err = read_words(ct->fd, &r);
	bool short_file = err == -ENODATA;
	if (short_file || (!err && restart)) {
		random_words(r.w);
		err = 0;
	}
	if (!err && count) {
		r.w[COUNTER_PUNCHES] += punch;
		r.w[COUNTER_UNLINKS] += unlink;
	}
	if (!err && (short_file || restart || count)) {
		ssize_t n = pwrite(ct->fd, r.w, FILE_LEN, 0);
		err = n == (ssize_t)FILE_LEN ? 0 : n < 0 ? -errno : -EIO;
	}
	flock(ct->fd, LOCK_UN);
	/* replaced while we counted: the count went to the old file */
	struct stat s;
	if (!err && fstat(ct->fd, &s) == 0 && s.st_nlink == 0)
		err = -ESTALE;
	return err;
}

/* (Re)open the file, creating it, never following a link. A file opened
 * after another (replaced, removed, or unusable for a while) restarts at
 * random counts: it may be an old copy holding counts seen before. Caller
 * holds ct->lock exclusive. */
static int reopen(struct counters *ct)
{
	struct stat s;
	if (ct->fd >= 0)
		close(ct->fd);
	ct->fd = openat(ct->dir_fd, "punches", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC, 0600);
	if (ct->fd < 0)
		return -errno;
	int err = fstat(ct->fd, &s) != 0 ? -errno : S_ISREG(s.st_mode) ? 0 : -EINVAL;
	if (!err)
		err = write_words(ct, ct->opened, false, false);
	if (err) {
		close(ct->fd);
		ct->fd = -1;
		return err;
	}
	ct->opened = true;
	return 0;
}

int counters_open(int dir_fd, const char *where, struct counters **out)
{
	struct counters *ct = calloc(1, sizeof(*ct));
	if (!ct || !(ct->where = strdup(where))) {
		free(ct);
		return -ENOMEM;
	}
	ct->dir_fd = dir_fd;
	ct->fd = -1;
	pthread_rwlock_init(&ct->lock, NULL);
	pthread_mutex_init(&ct->seen_lock, NULL);
	int err = reopen(ct);
	if (err)
		note_failure(ct, "open", err);
	*out = ct;
	return 0;
}

void counters_close(struct counters *ct)
{
	if (!ct)
		return;
	if (ct->fd >= 0)
		close(ct->fd);
	pthread_rwlock_destroy(&ct->lock);
	pthread_mutex_destroy(&ct->seen_lock);
	free(ct->where);
	free(ct);
}

/* Read the counts, opening the file again if it was replaced, removed or
 * never opened, and starting it again if it was truncated. */
static int counters_read(struct counters *ct, struct reading *r)
{
	pthread_rwlock_rdlock(&ct->lock);
	int err = read_words(ct->fd, r);
	pthread_rwlock_unlock(&ct->lock);
	if (!err || (err != -EBADF && err != -ESTALE && err != -ENODATA))
		return err;
	pthread_rwlock_wrlock(&ct->lock);
	err = read_words(ct->fd, r);	/* another thread may have seen to it */
	if (err == -EBADF || err == -ESTALE)
		err = reopen(ct);
	else if (err == -ENODATA)
		err = write_words(ct, false, false, false);
	if (!err)
		err = read_words(ct->fd, r);
	pthread_rwlock_unlock(&ct->lock);
	return err;
}

uint64_t counters_get(struct counters *ct, enum counter which)
{
	struct reading r;
	int err = counters_read(ct, &r);
	if (err) {
		note_failure(ct, "read", err);
		return PERHAPS | atomic_fetch_add(&ct->perhaps, 1);
	}
	if (atomic_load(&ct->failing) && atomic_exchange(&ct->failing, false))
		log_info("%s/punches can be read again", ct->where);
	pthread_mutex_lock(&ct->seen_lock);
	bool same_file = r.ino == ct->seen_ino;
	bool went_down = false, same = true;
	for (int i = 0; i < WORDS; i++) {
		went_down |= r.w[i] < ct->seen[i];
		same &= r.w[i] == ct->seen[i];
	}
	if (same_file && (went_down || (same && r.ctime_ns != ct->seen_ctime_ns)))
		ct->shift += SHIFT;	/* rewritten in place */
	ct->seen_ino = r.ino;
	ct->seen_ctime_ns = r.ctime_ns;
	memcpy(ct->seen, r.w, sizeof(r.w));
	uint64_t count = (r.w[which] + ct->shift) & ~PERHAPS;
	pthread_mutex_unlock(&ct->seen_lock);
	return count;
}

int counters_add(struct counters *ct, bool punch, bool unlink)
{
	int err = -EBADF;
	pthread_rwlock_wrlock(&ct->lock);
	for (int i = 0; i < ADD_TRIES && err; i++) {
		if (err == -EBADF || err == -ESTALE)
			err = ct->fd >= 0 && i == 0 ? 0 : reopen(ct);
		if (!err)
			err = write_words(ct, false, punch, unlink);
		if (err && err != -ESTALE && err != -EBADF)
			break;
	}
	pthread_rwlock_unlock(&ct->lock);
	if (err)
		note_failure(ct, punch ? "count a punch in" : "count an unlink in", err);
	return err;
}
