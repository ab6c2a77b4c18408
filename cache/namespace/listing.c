/*
 * listing.c - a directory's listing: fetched from the origin page by page,
 * parsed by the source, merged into the tree (the nodes of names still
 * there kept, with their pinned versions), refreshed after the ttl, and
 * the last one kept standing in while the origin is down; a lookup in a
 * folder too large to wait for (ns_dir_find()), and the runs a wide
 * folder's folders are listed in (ns_dir_list_run()). Above deep.c,
 * pages.c, tree.c and validate.c; ahead.c and namespace.c call it.
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
#define RUN_KEYS 2000		/* keys a run of a wide folder's folders is sized
				   for (ns_dir_list_run()): two pages of S3's;
				   it takes DEEP_PAGES_AHEAD at most */


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

/* Move the children of FROM, a folder listed deep and still detached,
 * under DIR, which has none; ns->lock held. */
static void adopt(struct ns_node *dir, struct ns_node *from)
{
	dir->children = from->children;
	dir->nchildren = from->nchildren;
	from->children = NULL;
	from->nchildren = 0;
	for (size_t i = 0; i < dir->nchildren; i++)
		dir->children[i]->parent = dir;
}

/* DIR's names are all there, as listed at NOW; ns->lock held. */
static void mark_listed(struct namespace *ns, struct ns_node *dir, time_t now)
{
	if (dir->dropped)
		clock_gettime(CLOCK_REALTIME, &dir->changed_at);
	dir->dropped = false;
	dir->listed = true;
	dir->listed_at = now;
	count_bytes(ns, dir);
}

/* DIR, never listed, is a folder of no child yet, busy: put the subtree D
 * listed deep under it, count its folders listed whole as listed (DIR
 * too, if D is whole; if not, DIR is wide). ns->lock held. */
static void deep_attach(struct namespace *ns, struct ns_node *dir, struct ns_deep *d)
{
	time_t now = time(NULL);
	dir->keys_per_dir = d->top->keys_per_dir;
	dir->cut = d->top->cut;
	if (dir->cut)
		dir->listed_at = d->top->listed_at;
	adopt(dir, d->top);
	for (size_t i = 0; i < d->ndirs; i++)
		if (d->dirs[i])
			mark_listed(ns, d->dirs[i], now);
	if (d->whole)
		mark_listed(ns, dir, now);
	ns_deep_free(ns, d);
}

/* ns_dir_refresh() with DIR held; PART: for a lookup (ns_dir_find()),
 * which takes a folder cut as it is. */
static int dir_refresh_held(struct namespace *ns, struct ns_node *dir, bool ahead,
			    bool *listed_now, bool part)
{
	for (;;) {
		if (dir->fixed || (part && dir->cut))
			return 0;
		if (ns_dir_fresh(ns, dir))
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
	if (deep &&
	    ns_deep_fetch(ns, path, NULL, ahead ? DEEP_PAGES_AHEAD : DEEP_PAGES, ahead, &d) == 0) {
		pthread_mutex_lock(&ns->lock);
		deep_attach(ns, dir, &d);
		if (dir->listed || (part && dir->cut)) {
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
	int err = dir_refresh_held(ns, dir, ahead, fresh, false);
	ns_node_hold(dir, -1);
	return err;
}

/* Mark listed each folder of D listed whole that lies under DIR now
 * (moved there from D->top, or below a folder that adopted its
 * children). ns->lock held. */
static void mark_moved(struct namespace *ns, struct ns_node *dir, struct ns_deep *d, time_t now)
{
	for (size_t i = 0; i < d->ndirs; i++) {
		struct ns_node *up = d->dirs[i];
		if (!up)
			continue;
		while (up->parent && up->parent != d->top && up->parent != dir)
			up = up->parent;
		if (up->parent == dir)
			mark_listed(ns, d->dirs[i], now);
	}
}

/* Put the names of D, listed deep below DIR, in DIR where it has none of
 * the name (a name known by now is left as it is), with their subtrees;
 * the folders D lists whole count as listed. ns->lock held. */
static void probe_attach(struct namespace *ns, struct ns_node *dir, struct ns_deep *d)
{
	struct ns_node *top = d->top;
	size_t kept = 0, moved = 0;
	for (size_t i = 0; i < top->nchildren; i++) {
		struct ns_node *c = top->children[i];
		size_t pos;
		if (!ns_child_find(dir, c->name, &pos) && ns_child_insert(dir, c, pos) == 0) {
			c->parent = dir;
			moved++;
		} else {
			top->children[kept++] = c;
		}
	}
	top->nchildren = kept;
	mark_moved(ns, dir, d, time(NULL));
	if (moved && dir->listed)
		clock_gettime(CLOCK_REALTIME, &dir->changed_at);
	ns_deep_free(ns, d);
}

/* Look for NAME in DIR alone: one deep listing of the keys below DIR that
 * start with it (the name, a folder of that name, and names that go on
 * from it), put in DIR (probe_attach()); *WALKED: NAME's folder, if this
 * listed it whole. ns->lock held (dropped while fetching), and a hold on
 * DIR. */
static int probe(struct namespace *ns, struct ns_node *dir, const char *name,
		 struct ns_node **walked)
{
	char *path = ns_node_path(dir);
	if (!path)
		return -ENOMEM;
	pthread_mutex_unlock(&ns->lock);
	struct ns_deep d;
	int err = ns_deep_fetch(ns, path, name, DEEP_PAGES, false, &d);
	free(path);
	pthread_mutex_lock(&ns->lock);
	if (err)
		return err;
	probe_attach(ns, dir, &d);
	struct ns_node *n = ns_child_find(dir, name, NULL);
	if (n && n->is_dir && n->listed)
		*walked = n;
	ns_names_shed(ns);
	return 0;
}

int ns_dir_find(struct namespace *ns, struct ns_node *dir, const char *name,
		struct ns_node **out, struct ns_node **walked, bool *behind)
{
	bool fresh = false, part = ns->ttl_s > 0;	/* (a ttl of 0: every lookup lists) */
	*out = *walked = NULL;
	*behind = false;
	dir->used = ++ns->uses;
	ns_node_hold(dir, 1);
	int err = dir_refresh_held(ns, dir, false, &fresh, part);
	bool cut = part && dir->cut;	/* (the listing just made may have cut it) */
	if (fresh)
		*walked = dir;
	if (!err && name && !(*out = ns_child_find(dir, name, NULL)) && cut && !dir->listed &&
	    !(err = probe(ns, dir, name, walked)))
		*out = ns_child_find(dir, name, NULL);
	*behind = !err && cut && !ns_dir_fresh(ns, dir);
	ns_node_hold(dir, -1);
	return err ? err : *out || !name ? 0 : -ENOENT;
}

/* The length of the prefix of the name of DIR's child POS that the child
 * before it does not share, lengthened until at most MAX children from
 * POS on share it (or it is the whole name); *END: the first child after
 * them. ns->lock held. */
static size_t run_prefix(const struct ns_node *dir, size_t pos, size_t max, size_t *end)
{
	const char *name = dir->children[pos]->name;
	size_t len = strlen(name), n = 0;
	if (pos > 0)	/* the names are sorted and differ: NAME goes on past */
		for (const char *prev = dir->children[pos - 1]->name; prev[n] == name[n]; n++)
			;
	for (n++;; n++) {
		size_t j = pos + 1;
		while (j < dir->nchildren && strncmp(dir->children[j]->name, name, n) == 0)
			j++;
		if (j - pos <= max || n >= len) {
			*end = j;
			return n;
		}
	}
}

/* Put the folders of RUN (N of DIR's, sorted, busy) that D lists whole
 * in the tree, with the folders below them it lists whole. ns->lock
 * held. */
static void run_attach(struct namespace *ns, struct ns_node *dir, struct ns_node **run, size_t n,
		       struct ns_deep *d)
{
	time_t now = time(NULL);
	for (size_t i = 0; i < d->ndirs; i++) {
		struct ns_node *x = d->dirs[i];
		if (!x || x->parent != d->top)
			continue;
		struct ns_node **live = bsearch(&x, run, n, sizeof(*run), by_name);
		if (live && !(*live)->nchildren && ns_in_tree(*live)) {
			adopt(*live, x);
			mark_listed(ns, *live, now);
		}
	}
	mark_moved(ns, dir, d, now);	/* below them */
	ns_deep_free(ns, d);
}

/* ns_dir_list_run()'s listing of one run, from FIRST, a folder of DIR;
 * *NEXT: the first of the run's folders it left unlisted (NULL: none),
 * which stays in the tree while ns->lock is held. */
static int list_run(struct namespace *ns, struct ns_node *dir, struct ns_node *first,
		    struct ns_node **next)
{
	size_t pos, end;
	*next = NULL;
	if (ns_child_find(dir, first->name, &pos) != first)
		return -ENOENT;
	size_t max = RUN_KEYS / dir->keys_per_dir;
	size_t len = run_prefix(dir, pos, max ? max : 1, &end);
	struct ns_node **run = malloc((end - pos) * sizeof(*run));
	char *path = ns_node_path(dir), *names = strndup(first->name, len);
	int err = -ENOMEM;
	if (!run || !path || !names)
		goto out;
	size_t n = 0;
	for (size_t i = pos; i < end; i++) {
		struct ns_node *c = dir->children[i];
		if (c->is_dir && !c->listed && !c->busy && !c->fixed && !c->nchildren) {
			c->busy = true;
			ns_node_hold(c, 1);
			run[n++] = c;
		}
	}
	pthread_mutex_unlock(&ns->lock);
	struct ns_deep d;
	err = ns_deep_fetch(ns, path, names, DEEP_PAGES_AHEAD, true, &d);
	pthread_mutex_lock(&ns->lock);
	if (!err) {
		run_attach(ns, dir, run, n, &d);
		ns_names_shed(ns);
	}
	for (size_t i = 0; i < n; i++) {
		run[i]->busy = false;
		ns_node_hold(run[i], -1);
		if (!*next && !run[i]->listed && ns_in_tree(run[i]))
			*next = run[i];
	}
	pthread_cond_broadcast(&ns->done);
out:
	free(names);
	free(path);
	free(run);
	return err;
}

int ns_dir_list_run(struct namespace *ns, struct ns_node *first)
{
	struct ns_node *dir = first->parent, *next;
	if (!dir || !dir->keys_per_dir)
		return -ENOENT;
	int err;
	/* a run its pages could not hold whole: the rest in runs of their own */
	while (!(err = list_run(ns, dir, first, &next)) && next && next != first)
		first = next;
	return err;
}
