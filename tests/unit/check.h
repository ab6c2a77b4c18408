/*
 * check.h - the unit tests' harness: each CHECK prints one TAP line;
 * check_done() prints the plan and returns the exit status.
 */
#ifndef TILEFS_CHECK_H
#define TILEFS_CHECK_H

#include <stdio.h>

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

#endif
