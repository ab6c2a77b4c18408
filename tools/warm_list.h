/*
 * warm_list.h - the first step of `tilefs warm`: which files. The paths
 * and globs of the command line (or every file under SOURCE) are listed
 * through the namespace, --shard keeps a deterministic part of them, and
 * each file is named once, in path order, with its URL and what its
 * listing said of it.
 */
#ifndef TILEFS_WARM_LIST_H
#define TILEFS_WARM_LIST_H

#include <stddef.h>

#include "cache/engine/cache.h"

struct namespace;
struct source;

/* --shard I/N: this run takes the files whose path hashes to I. */
struct warm_shard {
	long index;			/* 1-based */
	long count;			/* 0: every file */
};

/* "I/N" with 1 <= I <= N into *OUT; 0, or -EINVAL with a message for the
 * user in ERR. */
int warm_shard_parse(const char *text, struct warm_shard *out, char *err, size_t err_size);

struct warm_file {
	char *path;			/* relative to SOURCE: what messages call it */
	char *url;
	struct cache_listed listed;	/* what its listing said (etag owned) */
};

/* Caller-owned; release with warm_list_release(). */
struct warm_list {
	struct warm_file *files;	/* sorted by path, distinct */
	size_t n, cap;
};

/*
 * Fill L with the files of NS (over SRC) that PATTERNS[0..npatterns) name:
 * a path, a directory (every file under it) or a glob ('*' does not cross
 * '/'); none: every file. A pattern naming nothing is an error. 0, or 1
 * after saying what is wrong on stderr.
 */
int warm_list_files(struct warm_list *l, struct namespace *ns, const struct source *src,
		    char *const *patterns, size_t npatterns, const struct warm_shard *shard);
void warm_list_release(struct warm_list *l);

#endif
