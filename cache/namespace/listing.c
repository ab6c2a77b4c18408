/*
 * listing.c - a directory's listing: fetched from the origin page by page,
 * parsed by the source, merged into the tree (the nodes of names still
 * there kept, with their pinned versions), refreshed after the ttl, and
 * the last one kept standing in while the origin is down. Above tree.c and
 * validate.c; ahead.c and namespace.c call it.
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/origin/reach.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 1000000	/* per directory: ~150 MB of nodes */
#define DEEP_PAGES 32		/* pages of a deep listing a reader waits for */
#define DEEP_PAGES_AHEAD 8	/* of one made ahead of the readers: many may be
				   made at once, each of a folder no reader is in
				   (8,000 keys of S3's pages: a folder of 2,000
				   patches of four files whole) */
#define MAX_PAGES 100000


struct listing {
	struct namespace *ns;
	struct ns_node **nodes;
	size_t n, cap;
	char error[160];		/* a failed request's (http_request) */
	long status;
};

static int listing_add(void *arg, const struct listing_entry *e)
{
	struct listing *l = arg;
	struct namespace *ns = l->ns;
	if (l->n >= MAX_ENTRIES || l->n >= ns->max_names) {
		log_error("a directory lists more than %zu entries; showing the first ones%s",
			  l->n, l->n < MAX_ENTRIES ? " (--max-names)" : "");
		return -EFBIG;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct ns_node **grown = realloc(l->nodes, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->nodes = grown;
		l->cap = cap;
	}
	struct ns_node *n = ns_node_new(ns, e->name, e->is_dir, NULL);
	if (!n)
		return -ENOMEM;
	n->listed_size = e->size;
	n->listed_mtime = e->mtime;
	if (e->etag[0] && !(n->listed_etag = strdup(e->etag))) {
		ns_node_free(ns, n);
		return -ENOMEM;
	}
	l->nodes[l->n++] = n;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct ns_node *const *)a)->name, (*(struct ns_node *const *)b)->name);
}

/* List DIR_PATH into OUT, page by page. STALE_OK: the last listing can
 * stand in, so an origin found down is not retried (http.h). AHEAD: made
 * ahead of the readers, in the background. */
static int fetch_listing(struct namespace *ns, const char *dir_path, struct listing *out,
			 bool stale_ok, bool ahead)
{
	struct ns_pages p = { .stale_ok = stale_ok, .background = ahead, .max_pages = MAX_PAGES,
			      .add = listing_add, .arg = out };
	int err = ns_pages_fetch(ns, dir_path, &p);
	memcpy(out->error, p.error, sizeof(out->error));
	out->status = p.status;
	if (err == -E2BIG) {
		log_error("listing of /%s: more than %d pages; giving up", dir_path, MAX_PAGES);
		err = -EIO;
	}
	return err == -EFBIG ? 0 : err;	/* too many entries: keep the first MAX_ENTRIES */
}

/* Tell the cache how much data the mount holds, as far as the listings so
 * far show: the sum over every listing made (a directory that disappeared
 * still counts, which errs towards "does not fit"), unknown while a listing
 * or a manifest gave no size. */
void ns_tell_cache_bytes(struct namespace *ns)
{
	if (ns->cache)
		cache_set_mounted_bytes(ns->cache, ns->unknown_dirs ? UINT64_MAX : ns->known_bytes);
}

/* Count DIR's fresh listing in ns->known_bytes; ns->lock held. */
static void count_bytes(struct namespace *ns, struct ns_node *dir)
{
	uint64_t bytes = 0;
	bool unknown = false;
	for (size_t i = 0; i < dir->nchildren; i++) {
		const struct ns_node *n = dir->children[i];
		if (n->is_dir)
			continue;
		if (n->listed_size < 0)
			unknown = true;
		else
			bytes += (uint64_t)n->listed_size;
	}
	ns->known_bytes += bytes - dir->listed_bytes;
	ns->unknown_dirs += (size_t)unknown - (size_t)dir->bytes_unknown;
	dir->listed_bytes = bytes;
	dir->bytes_unknown = unknown;
	ns_tell_cache_bytes(ns);
}

/* The origin is down and DIR_PATH was listed before: answer with that
 * listing, unasked (source_answer_stale(), which probes the origin with the
 * listing's URL when a probe is due). */
static bool answer_stale(struct namespace *ns, const char *dir_path)
{
	char *url = source_listing_url(ns->src, dir_path, NULL);
	bool stale = url && source_answer_stale(ns->src, ns->http, url);
	free(url);
	return stale;
}

/* DIR, never listed, is a folder of no child yet, busy: put the subtree D
 * listed deep under it, count its folders listed whole as listed (DIR
 * too, if D is whole). ns->lock held. */
static void deep_attach(struct namespace *ns, struct ns_node *dir, struct ns_deep *d)
{
	time_t now = time(NULL);
	dir->children = d->top->children;
	dir->nchildren = d->top->nchildren;
	d->top->children = NULL;
	d->top->nchildren = 0;
	for (size_t i = 0; i < dir->nchildren; i++)
		dir->children[i]->parent = dir;
	for (size_t i = 0; i < d->ndirs; i++) {
		if (!d->dirs[i])
			continue;
		d->dirs[i]->listed = true;
		d->dirs[i]->listed_at = now;
		count_bytes(ns, d->dirs[i]);
	}
	if (d->whole) {
		if (dir->dropped)
			clock_gettime(CLOCK_REALTIME, &dir->changed_at);
		dir->dropped = false;
		dir->listed = true;
		dir->listed_at = now;
		count_bytes(ns, dir);
	}
	ns_deep_free(ns, d);
}

/* ns_dir_refresh() with DIR held. */
static int dir_refresh_held(struct namespace *ns, struct ns_node *dir, bool ahead,
			    bool *listed_now)
{
	for (;;) {
		if (dir->fixed)
			return 0;
		if (dir->listed && time(NULL) - dir->listed_at < ns->ttl_s)
			return 0;
		if (!dir->busy)
			break;
		pthread_cond_wait(&ns->done, &ns->lock);
	}
	dir->busy = true;
	char *path = ns_node_path(dir);
	bool listed = dir->listed;	/* the last listing can stand in */
	/* never listed: every key below it at once, where the store can */
	bool deep = path && !listed && !dir->nchildren && source_lists_deep(ns->src);
	pthread_mutex_unlock(&ns->lock);

	struct ns_deep d = { 0 };
	int err = 0;
	if (deep && ns_deep_fetch(ns, path, ahead ? DEEP_PAGES_AHEAD : DEEP_PAGES, ahead, &d) == 0) {
		pthread_mutex_lock(&ns->lock);
		deep_attach(ns, dir, &d);
		if (dir->listed) {
			*listed_now = true;
			ns_names_shed(ns);
			goto done;
		}
		pthread_mutex_unlock(&ns->lock);	/* the rest: its own listing */
	}
	struct listing l = { .ns = ns };
	err = !path ? -ENOMEM : listed && answer_stale(ns, path) ? -ENETDOWN :
	      fetch_listing(ns, path, &l, listed, ahead);
	if (!err && l.n > 0)
		qsort(l.nodes, l.n, sizeof(*l.nodes), by_name);

	pthread_mutex_lock(&ns->lock);
	if (!err) {
		/* keep nodes that are still there (their pinned versions too) */
		size_t kept = 0;
		bool changed = false;
		for (size_t i = 0; i < l.n; i++) {
			if (kept > 0 && strcmp(l.nodes[kept - 1]->name, l.nodes[i]->name) == 0) {
				ns_node_free(ns, l.nodes[i]);	/* listed twice */
				continue;
			}
			struct ns_node *old = ns_child_find(dir, l.nodes[i]->name, NULL);
			if (old && old->is_dir == l.nodes[i]->is_dir) {
				struct ns_node *fresh = l.nodes[i];
				old->listed_size = fresh->listed_size;
				old->listed_mtime = fresh->listed_mtime;
				free(old->listed_etag);
				old->listed_etag = fresh->listed_etag;
				fresh->listed_etag = NULL;
				if (old->obj && ns_listing_disagrees(old))
					old->outdated = true;	/* changed on the origin */
				ns_node_free(ns, fresh);
				l.nodes[kept++] = old;
			} else {
				l.nodes[i]->parent = dir;
				l.nodes[kept++] = l.nodes[i];
				changed = true;
			}
		}
		/* (after a drop, the names the kernel may keep are those of
		 * the listing before) */
		if ((changed || kept != dir->nchildren) && (dir->listed || dir->dropped))
			clock_gettime(CLOCK_REALTIME, &dir->changed_at);
		dir->dropped = false;
		for (size_t i = 0; i < dir->nchildren; i++) {
			struct ns_node *old = dir->children[i];
			struct ns_node **still = bsearch(&old, l.nodes, kept, sizeof(*l.nodes), by_name);
			if (!still || *still != old) {
				old->retired_next = ns->retired;
				ns->retired = old;
			}
		}
		free(dir->children);
		dir->children = l.nodes;
		dir->nchildren = kept;
		dir->listed = true;
		dir->listed_at = time(NULL);
		count_bytes(ns, dir);
		*listed_now = true;
		ns_names_shed(ns);
	} else {
		for (size_t i = 0; i < l.n; i++)
			ns_node_free(ns, l.nodes[i]);
		free(l.nodes);
		if (l.error[0]) {
			memcpy(ns->list_error, l.error, sizeof(l.error));
			ns->list_status = l.status;
		}
		if (dir->listed && err != -ENETDOWN) {
			/* said once for all when the origin is down (http.c) */
			bool down = reach_down(http_reach(ns->http));
			log_at(down ? LOG_DEBUG : LOG_WARN,
			       "cannot list /%s again (%s); keeping the last listing",
			       path ? path : "?", strerror(-err));
			if (down)
				reach_count_stale(http_reach(ns->http));
		}
		if (dir->listed)
			err = 0;
	}
done:
	free(path);
	dir->busy = false;
	pthread_cond_broadcast(&ns->done);
	return err;
}

int ns_dir_refresh(struct namespace *ns, struct ns_node *dir, bool ahead, bool *fresh)
{
	*fresh = false;
	dir->used = ++ns->uses;
	ns_node_hold(dir, 1);
	int err = dir_refresh_held(ns, dir, ahead, fresh);
	ns_node_hold(dir, -1);
	return err;
}

