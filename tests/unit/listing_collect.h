/*
 * listing_collect.h - the unit tests' listing_entry_fn: keeps the first
 * 16 entries a parser reports, for the checks to look at.
 */
#ifndef TILEFS_LISTING_COLLECT_H
#define TILEFS_LISTING_COLLECT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "cache/origin/providers/provider.h"

struct seen {
	char names[16][64];
	int dirs[16];
	int64_t sizes[16];
	char etags[16][64];
	time_t mtimes[16];
	int n;
};

static inline int collect(void *arg, const struct listing_entry *e)
{
	struct seen *s = arg;
	if (s->n < 16) {
		snprintf(s->names[s->n], 64, "%s", e->name);
		s->dirs[s->n] = e->is_dir;
		s->sizes[s->n] = e->size;
		snprintf(s->etags[s->n], 64, "%s", e->etag);
		s->mtimes[s->n] = e->mtime;
		s->n++;
	}
	return 0;
}

#endif
