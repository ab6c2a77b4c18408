/*
 * listing_collect.h - the unit tests' listing_entry_fn: keeps the first
 * 16 entries a parser reports, for the checks to look at.
 */
#ifndef TILEFS_LISTING_COLLECT_H
#define TILEFS_LISTING_COLLECT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct seen {
	char names[16][64];
	int dirs[16];
	int64_t sizes[16];
	int n;
};

static inline int collect(void *arg, const char *name, bool is_dir, int64_t size)
{
	struct seen *s = arg;
	if (s->n < 16) {
		snprintf(s->names[s->n], 64, "%s", name);
		s->dirs[s->n] = is_dir;
		s->sizes[s->n] = size;
		s->n++;
	}
	return 0;
}

#endif
