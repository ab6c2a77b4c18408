/*
 * log.h - leveled log lines for the daemon and the tools.
 *
 * Lines look like "2026-01-02T03:04:05.678Z tilefs[123]: warn: message",
 * one line each (a newline in a message becomes a blank; a message longer
 * than LOG_LINE_MAX is cut, ending "..."). A log file is never left with
 * a line cut short: each line is appended whole with one write, into
 * blocks the file keeps allocated past its end (LOG_RESERVE), so that a
 * log on the full disk of the cache it reports on still takes lines; a
 * line with no room even so is dropped, and counted in a line written
 * once there is room again. The level is checked before
 * the arguments are formatted (log_enabled() is inlined into the macros), so
 * a debug line on a hot path costs one comparison when debug is off.
 * Never pass a credential or a URL with its query string to these calls.
 *
 * Layer: base, under every other. Includes nothing of tilefs: every folder
 * may include it (tests/check-layers).
 */
#ifndef TILEFS_LOG_H
#define TILEFS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_LINE_MAX 8192		/* bytes of a line, its newline included */
#define LOG_RESERVE (64 << 10)		/* kept allocated past a log file's end */

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_current_level;

/* Parse "error", "warn", "info" or "debug"; returns 0 or -EINVAL. */
int log_parse_level(const char *name, enum log_level *out);
void log_set_level(enum log_level level);
/* Send lines to PATH (appended) instead of stderr; returns 0 or -errno. */
int log_set_file(const char *path);
/* Drop the log file and write to stderr again (closes any file opened). */
void log_reset_file(void);

/*
 * Start-up: from log_hold_begin() to log_hold_end(), warnings and errors
 * are held in memory (the last LOG_HELD_MAX, each cut to LOG_HELD_LINE
 * bytes) instead of written; info and debug lines are written as ever. A
 * command that fails to start prints one message on stderr with the held
 * lines as its cause, instead of log lines before it; one that starts
 * writes them to its log, once that is open.
 */
#define LOG_HELD_MAX 8
#define LOG_HELD_LINE 512
void log_hold_begin(void);
/* Stop holding. WRITE: write the held lines where lines go now (the log
 * file, or stderr). WHY (may be NULL): their messages, without time or
 * level, joined by "; " ("" if none). */
void log_hold_end(bool write, char *why, size_t why_size);

void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), nonnull(2)));

/*
 * A line for a condition that may recur many times a second (a full
 * disk): said at most once a period, with how many times it was not.
 * Caller-owned, zeroed (LOG_EVERY_INIT); the log's lock guards it.
 */
struct log_every {
	bool said;
	uint64_t next_ms;
	unsigned long skipped;
};
#define LOG_EVERY_INIT { false, 0, 0 }
/* Is a line for L due at NOW_MS (monotonic_ms())? Then *SKIPPED is the
 * times it was not since the last one, and the next is due PERIOD_MS on;
 * else this time is counted. */
bool log_every_due(struct log_every *l, uint64_t now_ms, uint64_t period_ms,
		   unsigned long *skipped);
/* The times L was not said since its last line, now counted as said (for
 * a last line at the end). */
unsigned long log_every_take(struct log_every *l);

#define log_at(level, ...) \
	do { if ((level) <= log_current_level) log_write((level), __VA_ARGS__); } while (0)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif
