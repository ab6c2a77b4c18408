/*
 * check.h - the unit tests' harness: each CHECK prints one TAP line;
 * check_done() prints the plan and returns the exit status;
 * check_rm_tree() removes a test's scratch directory.
 */
#ifndef TILEFS_CHECK_H
#define TILEFS_CHECK_H

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

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
