/*
 * log.c - see log.h. One mutex keeps lines whole when threads log at once;
 * each line is formatted whole, then written with one write() on a file
 * opened O_APPEND, so a line of another process never lands inside it.
 *
 * DESIGN: the log often lives in the cache dir, on the disk the cache
 * fills. A line is written only into blocks the file holds already: each
 * process keeps LOG_RESERVE bytes allocated past the end of the file
 * (fallocate() with FALLOC_FL_KEEP_SIZE, shared by every process writing
 * the same file), and extends it as lines use it up. When the disk has no
 * room even for the line, it is dropped and counted, and the first line
 * that fits again says how many were; a write cut short anyway (another
 * process took the last block between the check and the write) is taken
 * back with ftruncate() if nothing was written after it.
 */
#include "cache/base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum log_level log_current_level = LOG_WARN;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* all protected by log_lock */
static int log_fd = -1;			/* -1: stderr */
static off_t reserved_end;		/* the file's blocks reach this far */
static bool reserve_none;		/* fallocate() does not apply: write */
static unsigned long dropped;		/* lines with no room, not said yet */

/* start-up warnings and errors held by log_hold_begin(), the last
 * LOG_HELD_MAX; all protected by log_lock */
static bool holding;
static unsigned held_count;		/* lines held so far, the last kept */
static struct held_line {
	enum log_level level;
	size_t message;			/* where the message starts in text */
	char text[LOG_HELD_LINE];
} held[LOG_HELD_MAX];

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int log_parse_level(const char *name, enum log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_level(enum log_level level)
{
	log_current_level = level;
}

int log_set_file(const char *path)
{
	/* 0600: the log names what was read; a link is followed (--log-file
	   may be one its user chose; a cache dir is private to its owner) */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	reserved_end = 0;
	reserve_none = false;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void log_reset_file(void)
{
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	reserved_end = 0;
	reserve_none = false;
	pthread_mutex_unlock(&log_lock);
}

/*
 * May LEN more bytes be appended to FD, into blocks it holds (the DESIGN
 * above)? Keeps LOG_RESERVE allocated past END, the file's size. False
 * only for a full disk. Called with log_lock held.
 */
static bool room_for(int fd, off_t end, size_t len)
{
	if (reserve_none)
		return true;
	if (end + (off_t)len + LOG_RESERVE / 2 <= reserved_end)
		return true;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, end, LOG_RESERVE) == 0) {
		reserved_end = end + LOG_RESERVE;
		return true;
	}
	if (errno != ENOSPC && errno != EDQUOT) {
		reserve_none = true;	/* not a file, or a file system without it */
		return true;
	}
	if (end + (off_t)len <= reserved_end)
		return true;		/* the rest of the reserve */
	/* the line alone, in what the disk has left */
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, end, (off_t)len) == 0) {
		reserved_end = end + (off_t)len;
		return true;
	}
	return false;
}

/* Append LINE (LEN bytes, ending in a newline) to FD whole, or not at all;
 * false if not. Called with log_lock held. */
static bool append_whole(int fd, const char *line, size_t len)
{
	struct stat sb;
	bool file = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
	if (file && !room_for(fd, sb.st_size, len))
		return false;
	ssize_t n = write(fd, line, len);
	if (n == (ssize_t)len)
		return true;
	if (n > 0 && file) {	/* cut short: take it back, unless written after */
		off_t at = lseek(fd, 0, SEEK_CUR);
		if (at > 0 && fstat(fd, &sb) == 0 && sb.st_size == at)
			(void)!ftruncate(fd, at - n);
	}
	return false;
}

/* Write one whole line, LEN bytes, where lines go; called with log_lock
 * held. Lines dropped for want of room are said first, once there is. */
static void emit(const char *line, size_t len)
{
	int fd = log_fd >= 0 ? log_fd : STDERR_FILENO;
	/* stderr: one line, even beside other threads' own writes to it */
	if (log_fd < 0)
		flockfile(stderr);
	if (dropped) {
		char note[160];
		struct timespec now;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		int n = snprintf(note, sizeof(note), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ "
				 "tilefs[%d]: warn: %lu log line%s dropped: the log's disk was full\n",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				 tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, (int)getpid(),
				 dropped, dropped == 1 ? "" : "s");
		if (n > 0 && (size_t)n < sizeof(note) && append_whole(fd, note, (size_t)n))
			dropped = 0;
	}
	if (dropped || !append_whole(fd, line, len))
		dropped++;
	if (log_fd < 0)
		funlockfile(stderr);
}

void log_hold_begin(void)
{
	pthread_mutex_lock(&log_lock);
	holding = true;
	held_count = 0;
	pthread_mutex_unlock(&log_lock);
}

void log_hold_end(bool write, char *why, size_t why_size)
{
	size_t used = 0;

	if (why && why_size)
		why[0] = '\0';
	pthread_mutex_lock(&log_lock);
	unsigned first = held_count > LOG_HELD_MAX ? held_count - LOG_HELD_MAX : 0;
	for (unsigned i = first; i < held_count; i++) {
		const struct held_line *h = &held[i % LOG_HELD_MAX];
		if (write) {
			char line[LOG_HELD_LINE + 1];
			size_t n = strlen(h->text);
			memcpy(line, h->text, n);
			line[n] = '\n';
			emit(line, n + 1);
		}
		if (why && used + 1 < why_size) {
			snprintf(why + used, why_size - used, "%s%s", used ? "; " : "",
				 h->text + h->message);
			used += strlen(why + used);
		}
	}
	holding = false;
	held_count = 0;
	memset(held, 0, sizeof(held));
	pthread_mutex_unlock(&log_lock);
}

/* Keep a line while holding; called with log_lock held. */
static void hold_line(enum log_level level, const char *prefix, const char *fmt, va_list ap)
{
	struct held_line *h = &held[held_count++ % LOG_HELD_MAX];
	int n = snprintf(h->text, sizeof(h->text), "%s", prefix);

	h->level = level;
	h->message = n < 0 ? 0 : (size_t)n < sizeof(h->text) ? (size_t)n : sizeof(h->text) - 1;
	vsnprintf(h->text + h->message, sizeof(h->text) - h->message, fmt, ap);
	/* one line: a newline in a message would split it */
	for (char *c = h->text; *c; c++)
		if (*c == '\n')
			*c = ' ';
}

void log_write(enum log_level level, const char *fmt, ...)
{
	char stamp[32];
	struct timespec now;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

	char prefix[96];
	snprintf(prefix, sizeof(prefix), "%s.%03ldZ tilefs[%d]: %s: ", stamp,
		 now.tv_nsec / 1000000, (int)getpid(), level_names[level]);

	pthread_mutex_lock(&log_lock);
	if (holding && level <= LOG_WARN) {
		va_start(ap, fmt);
		hold_line(level, prefix, fmt, ap);
		va_end(ap);
		pthread_mutex_unlock(&log_lock);
		return;
	}
	pthread_mutex_unlock(&log_lock);

	/* the whole line first: one write() */
	char line[LOG_LINE_MAX];
	size_t n = strlen(prefix);
	memcpy(line, prefix, n);
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	if ((size_t)m >= sizeof(line) - n - 1) {	/* cut, and says so */
		n = sizeof(line) - 5;
		memcpy(line + n - 3, "...", 3);
	} else {
		n += (size_t)m;
	}
	/* one line: a newline in a message would split it */
	for (char *c = line; c < line + n; c++)
		if (*c == '\n')
			*c = ' ';
	line[n++] = '\n';
	pthread_mutex_lock(&log_lock);
	emit(line, n);
	pthread_mutex_unlock(&log_lock);
}

bool log_every_due(struct log_every *l, uint64_t now_ms, uint64_t period_ms,
		   unsigned long *skipped)
{
	pthread_mutex_lock(&log_lock);
	bool due = !l->said || now_ms >= l->next_ms;
	if (due) {
		*skipped = l->skipped;
		l->skipped = 0;
		l->said = true;
		l->next_ms = now_ms + period_ms;
	} else {
		l->skipped++;
	}
	pthread_mutex_unlock(&log_lock);
	return due;
}

unsigned long log_every_take(struct log_every *l)
{
	pthread_mutex_lock(&log_lock);
	unsigned long n = l->skipped;
	l->skipped = 0;
	pthread_mutex_unlock(&log_lock);
	return n;
}
