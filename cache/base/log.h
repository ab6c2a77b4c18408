/*
 * log.h - leveled log lines for the daemon and the tools.
 *
 * Lines look like "tilefs[123]: warn: message". The level is checked before
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

#define log_at(level, ...) \
	do { if ((level) <= log_current_level) log_write((level), __VA_ARGS__); } while (0)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif
