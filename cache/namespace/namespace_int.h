/*
 * namespace_int.h - private to cache/namespace: the tree of nodes a
 * namespace keeps, and what the files of the folder call of each other.
 * They form a chain, each calling only those below it:
 *
 *   manifest.c   a tree from a manifest instead of listings
 *   namespace.c  the public calls, listings and their refresh
 *   ahead.c      work ahead of the readers: its queues and threads
 *   validate.c   a file's pinned version: current, or asked again
 *   deep.c       a subtree from one listing of every key below a folder
 *   tree.c       nodes, holds, retired nodes, the bound on names
 *   pages.c      a listing fetched page by page (beside tree.c)
 *
 * LOCKS: one mutex, ns->lock, guards the tree and every field below
 * marked so. Lock order: ns->lock first, then the engine's own locks (the
 * cache_object_*() and cache_set_mounted_bytes() calls made under it);
 * the engine never calls back into the namespace. Work that may wait on
 * the network (a listing's http_run(), cache_object_open(),
 * cache_object_known()) runs with ns->lock dropped, on a node marked busy
 * and held (below). Threads: the callers of namespace.h, and the threads
 * of revalidation ahead (ahead.c).
 *
 * A pointer to a node is used only while ns->lock is held, with one
 * exception: the node a thread lists or validates stays in use across the
 * drop of the lock, so the thread takes a hold on it and on each of its
 * ancestors (ns_node_hold()). Nodes that leave the tree (gone from a
 * listing, or with a listing dropped past the bound on names) go to
 * ns->retired and are freed by ns_reap() once nothing holds them; open
 * files keep their versions through their own references
 * (cache_object_ref()), not through the node.
 */
#ifndef TILEFS_NAMESPACE_INT_H
#define TILEFS_NAMESPACE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/origin/providers/provider.h"

struct cache;
struct cache_listed;
struct cache_object;
struct http_client;
struct source;

/* The queues of work ahead (ahead.c), each a FIFO of nodes held while in
 * it; the threads take NS_SOON's first: a reader waits for them now. */
enum ns_queue_kind {
	NS_AHEAD,			/* files to revalidate, directories to list */
	NS_SOON,			/* files a reader will open next */
	NS_QUEUES
};
struct ns_node;
struct ns_queue {
	struct ns_node *head, *tail;
	size_t len;
};

/* A file or directory. Every field is protected by ns->lock, except name
 * and is_dir, fixed at creation; a node out of the tree is read only by
 * the threads that hold it. */
struct ns_node {
	struct ns_node *parent;
	struct ns_node *retired_next;	/* in ns->retired */
	unsigned holds;			/* threads using it or a descendant across
					 * a drop of ns->lock: see ns_node_hold() */
	bool is_dir;			/* set at creation */
	int64_t listed_size;		/* -1: unknown until a probe */
	char *listed_etag;		/* NULL: the listing gave none */
	time_t listed_mtime;		/* 0: the listing gave none */
	char *url;			/* from a manifest; NULL: built from the path */
	/* directories */
	struct ns_node **children;	/* sorted by name */
	size_t nchildren;
	bool fixed;			/* from a manifest: never listed */
	bool listed;
	bool busy;			/* a thread lists it (or validates a file),
					 * ns->lock dropped; others wait on ns->done */
	bool dropped;			/* its listing was dropped (ns_names_shed()) */
	uint32_t keys_per_dir;		/* wide: a deep listing of it or above it
					 * stopped at its bound within it, having
					 * shown this many keys a folder of it; its
					 * folders are then listed a run at a time
					 * (ns_dir_list_run()). 0: not wide */
	uint64_t used;			/* ns->uses when last listed or looked in */
	time_t listed_at;
	struct timespec changed_at;	/* its names may have changed since (ns_attr);
					 * 0: not since its first listing */
	uint64_t listed_bytes;		/* its files' sizes, as last listed */
	bool siblings_done;		/* its files were opened ahead once
					 * (ns_ahead_siblings()) */
	bool bytes_unknown;		/* a file listed without a size */
	bool cut;			/* a deep listing of it or above it stopped
					 * within it (listed_at: when, until it is
					 * listed): a folder of more names than a
					 * deep listing takes, whose lookups do not
					 * wait for its listing (ns_dir_find()) */
	bool entered;			/* cut and not listed whole when a reader
					 * entered a folder of it: its folders are
					 * listed ahead once it is (ahead.c) */
	/* files */
	struct cache_object *obj;	/* the version last pinned */
	struct cache_object *older;	/* the version before, while still open */
	time_t validated_at;
	bool outdated;			/* a later listing disagrees with obj */
	bool queued[NS_QUEUES];		/* put in each queue of ahead.c once */
	struct ns_node *queue_next[NS_QUEUES];	/* in ns->queues[k] */
	char name[];			/* set at creation, in the node's own
					 * allocation */
};

struct namespace {
	/* set by ns_new() (and the setters called before any other use),
	 * then read only: no lock */
	struct source *src;
	struct http_client *http;
	struct cache *cache;
	int ttl_s;
	struct timespec started;
	/* why the last listing that failed did (http_request.error): for the
	   message ns_list_error() makes; protected by lock */
	char list_error[160];
	long list_status;		/* its HTTP status, 0 if none */
	size_t max_names;		/* the bound on names (ns_set_max_names()) */

	pthread_mutex_t lock;
	pthread_cond_t done;		/* a busy node finished; with ns->lock */
	struct ns_node *root;		/* protected by ns->lock, as all its tree */
	struct ns_node *retired;	/* out of the tree, not yet freed; ns->lock */
	uint64_t known_bytes;		/* listed_bytes of every listing made; ns->lock */
	size_t unknown_dirs;		/* listings with bytes_unknown; ns->lock */
	atomic_size_t names;		/* its nodes not yet freed, listings being
					 * read included (ns_node_new()): atomic,
					 * as those are made with ns->lock dropped */
	uint64_t uses;			/* counts dir_refresh() calls; ns->lock */
	bool shed_before;		/* ns_names_shed() dropped listings before;
					 * ns->lock */

	/* revalidation ahead (ahead.c): files queued, each with a hold, and
	 * the threads that take them */
	pthread_t *ahead;		/* written by ns_revalidate_ahead() before any
					 * other use and by ns_stop_ahead() once
					 * the threads are joined: no lock */
	int nahead;			/* as ahead; read under ns->lock only
					 * while !ahead_stopping */
	int ahead_files_max;		/* threads that may work on files at once:
					 * written as ahead */
	int ahead_files;		/* threads working on files; ns->lock */
	bool ahead_stopping;		/* protected by ns->lock */
	pthread_cond_t ahead_work;	/* a queue has a node, a thread left its
					 * file, or stop; with ns->lock */
	struct ns_queue queues[NS_QUEUES];	/* protected by ns->lock */
};

/* tree.c */

/* A node named NAME (copied) under PARENT, counted in ns->names; caller
 * frees with ns_node_free() (which frees its subtree too). Needs no lock
 * (a listing makes its nodes with ns->lock dropped). */
struct ns_node *ns_node_new(struct namespace *ns, const char *name, bool is_dir,
			    struct ns_node *parent);
void ns_node_free(struct namespace *ns, struct ns_node *n);
/* DIR's child NAME, or NULL with *pos (if given) where it would go;
 * ns->lock held. */
struct ns_node *ns_child_find(struct ns_node *dir, const char *name, size_t *pos);
/* Put CHILD at POS of DIR's children; ns->lock held. */
int ns_child_insert(struct ns_node *dir, struct ns_node *child, size_t pos);
/* Is DIR listed whole, by a listing younger than the ttl? ns->lock held. */
bool ns_dir_fresh(const struct namespace *ns, const struct ns_node *dir);
/* Is N still in the tree (not retired by a later listing or dropped with
 * its directory's listing)? ns->lock held. */
bool ns_in_tree(const struct ns_node *n);
/* Take (DELTA 1) or give back (-1) a hold on N and every ancestor, so none
 * of them is freed while ns->lock is dropped; ns->lock held. */
void ns_node_hold(struct ns_node *n, int delta);
/* Free the retired nodes no thread holds. The caller uses no pointer to a
 * node after this (it is called just before ns->lock is released). */
void ns_reap(struct namespace *ns);
/* Path of N relative to the root ("a/b", "" for the root); caller frees.
 * ns->lock held. */
char *ns_node_path(const struct ns_node *n);
/* Over ns->max_names, drop listings (see ns_set_max_names()); ns->lock
 * held, and a hold on every node the caller still uses. Files queued for
 * revalidation ahead hold their directories: the queue's thread calls it
 * again once the queue is empty. */
void ns_names_shed(struct namespace *ns);

/* validate.c */

/* Does N's listing say its pinned version is no longer the current one (a
 * size or an ETag that differ)? ns->lock held, N has a version pinned. */
bool ns_listing_disagrees(const struct ns_node *n);
/* What a listing younger than the ttl said of N, for use after ns->lock is
 * dropped (its etag copied into ETAG, 128 bytes); false if there is none.
 * ns->lock held. */
bool ns_listed_copy(const struct namespace *ns, const struct ns_node *n, struct cache_listed *out,
		    char *etag);
/* Make N's pinned version current (*UNCHANGED: it was); ns->lock held,
 * dropped while asking; BACKGROUND as cache_object_open() says.
 * ns_file_validate_held() if the caller holds N (ns_node_hold()) already. */
int ns_file_validate(struct namespace *ns, struct ns_node *n, bool background, bool *unchanged);
int ns_file_validate_held(struct namespace *ns, struct ns_node *n, bool background,
			  bool *unchanged);

/* pages.c */

/* What ns_pages_fetch() lists and where its entries go. */
struct ns_pages {
	bool deep;			/* every key below (source_lists_deep()) */
	const char *names;		/* deep: only paths that start so (NULL: all) */
	bool stale_ok;			/* the last listing can stand in: an origin
					   found down is not retried (http.h) */
	bool background;		/* made ahead of the readers: its requests
					   yield to theirs (http.h) */
	int max_pages;
	listing_entry_fn add;		/* each entry, with ARG: an error stops */
	void *arg;
	char error[160];		/* a failed request's (http_request) */
	long status;
};
/* List DIR_PATH page by page into P->add(): 0 with every page, -E2BIG
 * after P->max_pages, add()'s error, or the error of a page (its request's
 * in P->error and P->status). No lock. */
int ns_pages_fetch(struct namespace *ns, const char *dir_path, struct ns_pages *p);

/* deep.c */

/* A subtree listed deep, detached from the tree until listing.c puts it
 * there. */
struct ns_deep {
	struct ns_node *top;		/* a folder node holding the subtree */
	struct ns_node **dirs;		/* its folders, NULL for those not
					   listed whole (more keys may follow) */
	size_t ndirs;
	bool whole;			/* every key below was listed; if not, the
					   last key's folders, top too, are wide */
};
/* List every key below DIR_PATH at once (source_lists_deep() must be
 * true), or those whose path below it starts with NAMES (NULL: all), in
 * PAGES pages at most, into OUT, with no lock: 0, or the error of a page
 * (OUT empty). AHEAD: in the background (struct ns_pages). Frees with
 * ns_deep_free(). */
int ns_deep_fetch(struct namespace *ns, const char *dir_path, const char *names, int pages,
		  bool ahead, struct ns_deep *out);
void ns_deep_free(struct namespace *ns, struct ns_deep *d);

/* listing.c */

/* Make DIR's children current: list it if it never was or its listing is
 * older than the ttl (*FRESH: a new listing was taken); children that are
 * gone go to ns->retired. A folder never listed is listed deep where the
 * store can (deep.c), taking fewer pages AHEAD of the readers. ns->lock
 * held (dropped while fetching). */
int ns_dir_refresh(struct namespace *ns, struct ns_node *dir, bool ahead, bool *fresh);
/* DIR's child NAME, in *OUT, for a reader's lookup: DIR listed first as
 * ns_dir_refresh() does, except in a folder cut (a deep listing stopped
 * within it), where a lookup does not wait for its whole listing: while
 * the folder was never listed whole, a name the listings so far did not
 * show is looked for alone (one deep listing of the keys below DIR that
 * start with NAME, the folders it lists whole then listed), and once its
 * listing is older than the ttl, the last one answers; *BEHIND then says
 * to list it whole in the background. *WALKED: the folder a listing made
 * for this lookup listed fresh (DIR, or NAME's), NULL if none. NAME NULL:
 * DIR listed as for a lookup, nothing looked for. ns->lock held (dropped
 * while fetching). 0, -ENOENT, or a listing's -errno. */
int ns_dir_find(struct namespace *ns, struct ns_node *dir, const char *name,
		struct ns_node **out, struct ns_node **walked, bool *behind);
/* FIRST, a folder never listed of a wide folder (keys_per_dir), and the
 * never-listed folders after it whose names share a prefix (as many as
 * two pages of keys hold, by keys_per_dir): list them in one deep
 * listing of a few pages, in the background, each busy meanwhile; those
 * it lists whole count as listed, the rest go on in runs of their own
 * while a run lists any. ns->lock held (dropped while fetching). 0 or the
 * listing's -errno. */
int ns_dir_list_run(struct namespace *ns, struct ns_node *first);
/* Tell the cache how many bytes the listings so far show; ns->lock held. */
void ns_tell_cache_bytes(struct namespace *ns);

/* ahead.c */

/* Queue for the threads of ns_revalidate_ahead() what DIR's fresh listing
 * shows that readers will likely want: its files that may need
 * revalidation (no version pinned, and no ETag listed that could vouch for
 * one; the threads skip those with nothing cached); and, if a reader
 * entered DIR (WALKED: not a listing ahead), the directories beside it
 * that were never listed, to be listed ahead. ns->lock held. */
void ns_ahead_queue(struct namespace *ns, struct ns_node *dir, bool walked);
/* A lookup in DIR, cut (ns_dir_find()), did not wait for its listing
 * (never listed whole, or older than the ttl): list it whole in the
 * background, once at a time. ns->lock held. */
void ns_ahead_relist(struct namespace *ns, struct ns_node *dir);
/* A reader opens FILE, the first of its directory: a directory below the
 * root of at most AHEAD_SIBLINGS files, each one an open fetches whole
 * (cache_whole_size()), and nothing else, is a sample (a patch's band
 * files), so its other files are opened ahead,
 * before what ns_ahead_queue() queued, as their readers' opens would
 * (fetched if not cached, checked if cached and not current); once a
 * directory. ns->lock held. */
void ns_ahead_siblings(struct namespace *ns, struct ns_node *file);

#endif
