/*
 * check.h - the unit tests' harness: each CHECK prints one TAP line;
 * check_done() prints the plan and returns the exit status;
 * check_rm_tree() removes a test's scratch directory; check_skip_forks()
 * skips, under ThreadSanitizer, the checks whose child processes start
 * threads.
 */
#ifndef TILEFS_CHECK_H
#define TILEFS_CHECK_H

#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

/* CHECK_TSAN: 1 in a build with ThreadSanitizer (SANITIZE=thread; gcc
 * says __SANITIZE_THREAD__, clang __has_feature(thread_sanitizer)). */
#if defined(__SANITIZE_THREAD__)
#define CHECK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHECK_TSAN 1
#endif
#endif
#ifndef CHECK_TSAN
#define CHECK_TSAN 0
#endif

static int check_run, check_failed;

#define CHECK(cond, ...) do { \
	check_run++; \
	if (cond) { \
		printf("ok %d - ", check_run); \
	} else { \
		check_failed++; \
		printf("not ok %d - %s:%d: ", check_run, __FILE__, __LINE__); \
	} \
	printf(__VA_ARGS__); \
	printf("\n"); \
} while (0)

static inline int check_done(void)
{
	printf("1..%d\n", check_run);
	return check_failed ? 1 : 0;
}

/*
 * Under ThreadSanitizer, a child forked from a process with threads (the
 * scripted origin's, an engine's) cannot start threads of its own: TSan
 * ends it ("starting new threads after multi-threaded fork is not
 * supported"). A check whose children run an engine is not run there:
 * true after a TAP line "# SKIP" saying so, naming it as WHAT; false
 * elsewhere. Its checks run in every other build.
 */
static inline bool check_skip_forks(const char *what)
{
	if (!CHECK_TSAN)
		return false;
	check_run++;
	printf("ok %d - # SKIP %s: its child processes start threads, which ThreadSanitizer "
	       "does not support after a fork of a process with threads\n", check_run, what);
	return true;
}

static inline int check_rm_entry(const char *path, const struct stat *st, int type,
				 struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Remove DIR and all under it, without following links; 0 or -1. */
static inline int check_rm_tree(const char *dir)
{
	return nftw(dir, check_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
