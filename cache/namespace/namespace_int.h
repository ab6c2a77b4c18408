/*
 * namespace_int.h - private to cache/namespace: the tree of nodes that
 * namespace.c keeps, what tree.c does with its nodes (and the bound on
 * how many are held), and what of namespace.c manifest.c (a tree from a
 * manifest instead of listings) calls. The files form a chain, each
 * calling only those below it: manifest.c, namespace.c, tree.c.
 */
#ifndef TILEFS_NAMESPACE_INT_H
#define TILEFS_NAMESPACE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct cache;
struct cache_object;
struct http_client;
struct source;

struct ns_node {
	char *name;
	struct ns_node *parent;
	struct ns_node *retired_next;
	unsigned holds;			/* threads using it or a descendant across
					 * a drop of ns->lock: see node_hold() */
	bool is_dir;
	int64_t listed_size;		/* -1: unknown until a probe */
	char *listed_etag;		/* NULL: the listing gave none */
	time_t listed_mtime;		/* 0: the listing gave none */
	char *url;			/* from a manifest; NULL: built from the path */
	/* directories */
	struct ns_node **children;	/* sorted by name */
	size_t nchildren;
	bool fixed;			/* from a manifest: never listed */
	bool listed, busy;
	bool dropped;			/* its listing was dropped (names_shed()) */
	uint64_t used;			/* ns->uses when last listed or looked in */
	time_t listed_at;
	struct timespec changed_at;	/* its names may have changed since (ns_attr);
					 * 0: not since its first listing */
	uint64_t listed_bytes;		/* its files' sizes, as last listed */
	bool bytes_unknown;		/* a file listed without a size */
	/* files */
	struct cache_object *obj;	/* the version last pinned */
	struct cache_object *older;	/* the version before, while still open */
	time_t validated_at;
	bool outdated;			/* a later listing disagrees with obj */
	bool ahead_done;		/* queued for revalidation ahead once */
	struct ns_node *ahead_next;	/* in ns->ahead_head's queue */
};

struct namespace {
	struct source *src;
	struct http_client *http;
	struct cache *cache;
	int ttl_s;
	struct timespec started;
	pthread_mutex_t lock;
	pthread_cond_t done;		/* a busy node finished */
	struct ns_node *root;
	struct ns_node *retired;	/* out of the tree, not yet freed */
	uint64_t known_bytes;		/* listed_bytes of every listing made */
	size_t unknown_dirs;		/* listings with bytes_unknown */
	atomic_size_t names;		/* its nodes not yet freed, listings being
					 * read included (ns_node_new()) */
	size_t max_names;		/* the bound on names (ns_set_max_names()) */
	uint64_t uses;			/* counts dir_refresh() calls */
	bool shed_before;		/* ns_names_shed() dropped listings before */
	/* revalidation ahead (ns_revalidate_ahead()): files queued, each
	 * with a hold, and the threads that take them */
	pthread_t *ahead;
	int nahead;
	bool ahead_stopping;
	pthread_cond_t ahead_work;
	struct ns_node *ahead_head, *ahead_tail;
	size_t ahead_len;
};

/* tree.c */

/* A node named NAME (copied) under PARENT, counted in ns->names; caller
 * frees with ns_node_free() (which frees its subtree too). */
struct ns_node *ns_node_new(struct namespace *ns, const char *name, bool is_dir,
			    struct ns_node *parent);
void ns_node_free(struct namespace *ns, struct ns_node *n);
/* DIR's child NAME, or NULL with *pos (if given) where it would go;
 * ns->lock held. */
struct ns_node *ns_child_find(struct ns_node *dir, const char *name, size_t *pos);
/* Put CHILD at POS of DIR's children; ns->lock held. */
int ns_child_insert(struct ns_node *dir, struct ns_node *child, size_t pos);
/* Is N still in the tree (not retired by a later listing or dropped with
 * its directory's listing)? ns->lock held. */
bool ns_in_tree(const struct ns_node *n);
/* Over ns->max_names, drop listings (see ns_set_max_names()); ns->lock
 * held, and a hold on every node the caller still uses. Files queued for
 * revalidation ahead hold their directories: the queue's thread calls it
 * again once the queue is empty. */
void ns_names_shed(struct namespace *ns);

/* namespace.c */

/* Tell the cache how many bytes the listings so far show; ns->lock held. */
void ns_tell_cache_bytes(struct namespace *ns);

#endif
