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

void log_write(enum log_level level, const char *fmt, ...)
{
	char stamp[32];
	struct timespec now;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

	pthread_mutex_lock(&log_lock);
	FILE *out = log_file ? log_file : stderr;
	/* one line, even beside other threads' own writes to stderr */
	flockfile(out);
	fprintf(out, "%s.%03ldZ tilefs[%d]: %s: ", stamp, now.tv_nsec / 1000000,
		(int)getpid(), level_names[level]);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
	funlockfile(out);
	pthread_mutex_unlock(&log_lock);
}
