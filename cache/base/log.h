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

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_current_level;

/* Parse "error", "warn", "info" or "debug"; returns 0 or -EINVAL. */
int log_parse_level(const char *name, enum log_level *out);
void log_set_level(enum log_level level);
/* Send lines to PATH (appended) instead of stderr; returns 0 or -errno. */
int log_set_file(const char *path);
/* Drop the log file and write to stderr again (closes any file opened). */
void log_reset_file(void);

void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), nonnull(2)));

#define log_at(level, ...) \
	do { if ((level) <= log_current_level) log_write((level), __VA_ARGS__); } while (0)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif
