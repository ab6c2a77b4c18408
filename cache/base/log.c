/*
 * log.c - see log.h. One mutex keeps lines whole when threads log at once.
 */
#include "cache/base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum log_level log_current_level = LOG_WARN;

static FILE *log_file;		/* protected by log_lock; NULL: stderr */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

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
	FILE *f = fd < 0 ? NULL : fdopen(fd, "a");

	if (!f) {
		int err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	pthread_mutex_lock(&log_lock);
	if (log_file)
		fclose(log_file);
	log_file = f;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void log_reset_file(void)
{
	pthread_mutex_lock(&log_lock);
	if (log_file)
		fclose(log_file);
	log_file = NULL;
	pthread_mutex_unlock(&log_lock);
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
	FILE *out = log_file ? log_file : stderr;
	unsigned first = held_count > LOG_HELD_MAX ? held_count - LOG_HELD_MAX : 0;
	for (unsigned i = first; i < held_count; i++) {
		const struct held_line *h = &held[i % LOG_HELD_MAX];
		if (write) {
			flockfile(out);
			fprintf(out, "%s\n", h->text);
			fflush(out);
			funlockfile(out);
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
	FILE *out = log_file ? log_file : stderr;
	/* one line, even beside other threads' own writes to stderr */
	flockfile(out);
	fputs(prefix, out);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
	funlockfile(out);
	pthread_mutex_unlock(&log_lock);
}
