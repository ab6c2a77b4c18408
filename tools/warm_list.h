/*
 * warm_list.h - the first step of `tilefs warm`: which files. The paths
 * and globs of the command line (or every file under SOURCE) are listed
 * through the namespace, --shard keeps a deterministic part of them, and
 * each file is named once, in path order, with its URL and what its
 * listing said of it.
 */
#ifndef TILEFS_WARM_LIST_H
#define TILEFS_WARM_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* What --from-file asks of one file: a window of its full-resolution
 * image, or all of it. */
struct warm_window {
	char *path;			/* as the line gave it */
	bool whole;
	uint64_t x, y, w, h;
};

/* The lines of an order file (tilefs hint's format, hint_line_parse()),
 * sorted by path. Caller-owned; release with warm_order_release(). */
struct warm_order {
	struct warm_window *v;
	size_t n, cap;
};

/*
 * Read the order file PATH (at most HINT_ENTRIES_MAX entries and
 * HINT_LINE_MAX bytes a line) into O, and write its paths, one a line
 * where it had them (other lines left empty, so line numbers stay), to a
 * memory file for ns_load_manifest(): *manifest_fd (caller closes). 0, or
 * -errno with a message for the user in ERR naming the line at fault.
 */
int warm_order_load(const char *path, struct warm_order *o, int *manifest_fd, char *err,
		    size_t err_size);
/* The windows of the file at PATH: O->v[*first, *first + *n). */
void warm_order_find(const struct warm_order *o, const char *path, size_t *first, size_t *n);
void warm_order_release(struct warm_order *o);

#endif
