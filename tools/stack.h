/*
 * stack.h - the library stack a command runs on, built from its options
 * and torn down in one order: the source (what SOURCE names), the fetch
 * thread (http), the cache and the namespace over them. `tilefs mount`
 * and `tilefs warm` both use it; each passes its own tuning and prints
 * its own messages (nothing here prints).
 */
#ifndef TILEFS_STACK_H
#define TILEFS_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/tiff/layout.h"
#include "tools/options.h"

/* Caller-owned; the pointers are owned by the stack and freed by
 * stack_release(). */
struct stack {
	struct source *src;
	struct http_client *http;
	struct cache *cache;
	struct namespace *ns;
	uint64_t cache_size;		/* --cache-size, or the default for
					   --cache-dir once it exists; less
					   if the disk holds less (fit_disk) */
};

/* What differs between the commands. */
struct stack_tuning {
	long connections;		/* to the origin at most */
	uint64_t max_request;		/* bytes merged into one GET at most */
	uint64_t merge_gap;		/* units this close share a GET */
	uint64_t readahead_max;
	enum prefetch_policy prefetch;
	int listing_ttl_s;		/* how long a listing is kept */
	int ahead_threads;		/* ns_revalidate_ahead(); 0: off */
	bool uncached_ok;		/* a cache index that cannot be opened:
					   read uncached (mount), not fail */
	bool fit_disk;			/* a cache size the disk cannot hold:
					   warn and keep what it holds (mount),
					   not fill the disk */
};

/*
 * Open the source O names (no network). 0, or -errno with a message for
 * the user in ERR (-EINVAL: SOURCE or an option is wrong). The rest of S
 * is empty; release with stack_release() either way.
 */
int stack_init(struct stack *s, const struct options *o, char *err, size_t err_size);

/*
 * Start the fetch threads, open the cache in --cache-dir (which must exist)
 * and the namespace. 0, or -errno with a message for the user in ERR (""
 * when there is nothing better to say than the errno).
 */
int stack_start(struct stack *s, const struct options *o, const struct stack_tuning *t,
		char *err, size_t err_size);

/*
 * Tear down what was built: the fetch threads first (fetches in flight
 * settle into the cache), then the namespace, the cache, the source.
 * Callers release their cache objects and anything using the stack first.
 */
void stack_release(struct stack *s);

#endif
