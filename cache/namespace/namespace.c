/*
 * namespace.c - see namespace.h: the public calls, and the listings of
 * directories and their refresh after the ttl. Above ahead.c (it queues
 * the files a listing shows), validate.c and tree.c; the locks and the
 * life of nodes are described in namespace_int.h.
 *
 * DESIGN: a tree of nodes under ns->lock. Network work (listing a
 * directory, validating a file's version) runs without the lock, with a
 * per-node flag so one thread does it while others wait on ns->done; the
 * node stays held (ns_node_hold()) while the lock is dropped. A listing
 * keeps the nodes of names still there, with their pinned versions; the
 * others leave for ns->retired, freed by ns_reap() at the end of the call
 * that retired them, or of a later call.
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
#define MAX_PAGES 100000

int ns_new(struct source *src, struct http_client *http, struct cache *cache, int ttl_s,
	   struct namespace **out)
{
	struct namespace *ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->root = ns_node_new(ns, "", true, NULL);
	if (!ns->root) {
		free(ns);
		return -ENOMEM;
	}
	ns->src = src;
	ns->http = http;
	ns->cache = cache;
	ns->ttl_s = ttl_s;
	ns_set_max_names(ns, 0);
	clock_gettime(CLOCK_REALTIME, &ns->started);
	pthread_mutex_init(&ns->lock, NULL);
	pthread_cond_init(&ns->done, NULL);
	pthread_cond_init(&ns->ahead_work, NULL);
	*out = ns;
	return 0;
}

void ns_free(struct namespace *ns)
{
	if (!ns)
		return;
	ns_stop_ahead(ns);
	ns_node_free(ns, ns->root);
	ns_reap(ns);		/* nothing holds a node any more */
	pthread_mutex_destroy(&ns->lock);
	pthread_cond_destroy(&ns->done);
	pthread_cond_destroy(&ns->ahead_work);
	free(ns);
}

/* ---- listings ---- */

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

/* Fetch and parse the listing of DIR_PATH, all pages. */
/* List DIR_PATH into OUT, page by page. STALE_OK: the last listing can
 * stand in, so an origin found down is not retried (http.h). */
static int fetch_listing(struct namespace *ns, const char *dir_path, struct listing *out,
			 bool stale_ok)
{
	char *cursor = NULL;
	int err = 0;

	int pages = 0;
	do {
		struct http_request req = { 0 };
		if (++pages > MAX_PAGES) {
			log_error("listing of /%s: more than %d pages; giving up", dir_path, MAX_PAGES);
			err = -EIO;
			break;
		}
		char *url = source_listing_url(ns->src, dir_path, cursor);
		char *next = NULL;
		if (!url) {
			err = -ENOMEM;
			break;
		}
		char log_name[512];
		snprintf(log_name, sizeof(log_name), "listing of /%s", dir_path);
		req.url = url;
		req.log_name = log_name;
		req.stale_ok = stale_ok;
		source_prepare(ns->src, &req);
		err = http_run(ns->http, &req);
		if (err) {
			snprintf(out->error, sizeof(out->error), "%s", req.error);
			out->status = req.status;
		}
		if (!err)
			err = source_parse_listing(ns->src, dir_path, req.body, req.body_len,
						   listing_add, out, &next);
		free(req.body);
		free(url);
		if (next && cursor && strcmp(next, cursor) == 0) {
			log_error("listing of /%s: the origin sent the same page cursor twice; "
				  "giving up", dir_path);
			free(next);
			next = NULL;
			err = -EIO;
		}
		free(cursor);
		cursor = next;
	} while (!err && cursor);
	if (err == -EFBIG)
		err = 0;	/* too many entries: keep the first MAX_ENTRIES */
	free(cursor);
	return err;
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

/* dir_refresh() with DIR held. */
static int dir_refresh_held(struct namespace *ns, struct ns_node *dir)
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
	pthread_mutex_unlock(&ns->lock);

	struct listing l = { .ns = ns };
	int err = !path ? -ENOMEM : listed && answer_stale(ns, path) ? -ENETDOWN :
		  fetch_listing(ns, path, &l, listed);
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
		ns_ahead_queue(ns, dir);
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
	free(path);
	dir->busy = false;
	pthread_cond_broadcast(&ns->done);
	return err;
}

/* Make DIR's children current; ns->lock held (dropped while fetching).
 * Children that are gone go to ns->retired. */
static int dir_refresh(struct namespace *ns, struct ns_node *dir)
{
	dir->used = ++ns->uses;
	ns_node_hold(dir, 1);
	int err = dir_refresh_held(ns, dir);
	ns_node_hold(dir, -1);
	return err;
}

/* The node at PATH, listing directories on the way; ns->lock held. */
static int resolve(struct namespace *ns, const char *path, struct ns_node **out)
{
	struct ns_node *n = ns->root;
	char name[256];

	while (*path == '/')
		path++;
	while (*path) {
		size_t len = strcspn(path, "/");
		if (len >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		while (*path == '/')
			path++;
		if (!n->is_dir)
			return -ENOTDIR;
		int err = dir_refresh(ns, n);
		if (err)
			return err;
		n = ns_child_find(n, name, NULL);
		if (!n)
			return -ENOENT;
	}
	*out = n;
	return 0;
}

/*
 * The mtime shown for a file that its listing dates LISTED and whose
 * version says VERSION (either 0: not known). A listing's date is known
 * from the first listing on, the same in every mount, so it stands for a
 * version that agrees with it to the minute (index pages print no
 * seconds); a version outside that minute is another one (changed since
 * the listing), which shows its own. With neither, a fixed 0 (the epoch):
 * never the time of the mount.
 */
static time_t shown_mtime(time_t listed, time_t version)
{
	if (listed && (!version || (version >= listed && version < listed + 60)))
		return listed;
	return version;
}

static void attr_of(struct namespace *ns, const struct ns_node *n, struct ns_attr *out)
{
	time_t version = 0;
	out->is_dir = n->is_dir;
	out->size = 0;
	out->mtime = ns->started;
	if (n->is_dir) {
		if (n->changed_at.tv_sec)
			out->mtime = n->changed_at;
		return;
	}
	if (n->obj && !n->outdated) {
		out->size = cache_object_size(n->obj);
		version = cache_object_mtime(n->obj);
	} else if (n->listed_size >= 0) {
		out->size = (uint64_t)n->listed_size;
	}
	out->mtime = (struct timespec){ .tv_sec = shown_mtime(n->listed_mtime, version) };
}

int ns_getattr(struct namespace *ns, const char *path, struct ns_attr *out)
{
	struct ns_node *n;
	bool unchanged;

	pthread_mutex_lock(&ns->lock);
	int err = resolve(ns, path, &n);
	/* a directory due for a new listing: a new mtime makes a kernel that
	 * keeps its entries read them again (which lists it); a stat alone
	 * costs no listing */
	if (!err && n->is_dir && n->listed && !n->fixed && time(NULL) - n->listed_at >= ns->ttl_s)
		clock_gettime(CLOCK_REALTIME, &n->changed_at);
	else if (!err && !n->is_dir && !n->obj && n->listed_size < 0)
		err = ns_file_validate(ns, n, &unchanged);	/* only a probe tells the size */
	if (!err)
		attr_of(ns, n, out);
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
	return err;
}

int ns_readdir(struct namespace *ns, const char *path, size_t start, ns_fill_fn fill,
	       void *arg)
{
	struct ns_node *dir;

	pthread_mutex_lock(&ns->lock);
	int err = resolve(ns, path, &dir);
	if (!err && !dir->is_dir)
		err = -ENOTDIR;
	if (!err)
		err = dir_refresh(ns, dir);
	for (size_t i = start; !err && fill && i < dir->nchildren; i++) {
		struct ns_attr attr;
		attr_of(ns, dir->children[i], &attr);
		if (fill(arg, dir->children[i]->name, &attr))
			break;
	}
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
	return err;
}

int ns_open(struct namespace *ns, const char *path, struct cache_object **out, bool *unchanged,
	    bool *older_open)
{
	struct ns_node *n;

	pthread_mutex_lock(&ns->lock);
	int err = resolve(ns, path, &n);
	if (!err && n->is_dir)
		err = -EISDIR;
	if (!err)
		err = ns_file_validate(ns, n, unchanged);
	if (!err && n->older && !cache_object_shared(n->older)) {
		cache_object_unref(n->older);	/* all its files are closed */
		n->older = NULL;
	}
	if (!err) {
		*older_open = n->older != NULL;
		*out = cache_object_ref(n->obj);
	}
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
	return err;
}

void ns_open_attr(struct namespace *ns, const char *path, const struct cache_object *obj,
		  struct ns_attr *out)
{
	struct ns_node *n = ns->root;
	char name[256];

	pthread_mutex_lock(&ns->lock);
	while (*path == '/')
		path++;
	while (n && *path) {	/* as resolve(), but lists nothing */
		size_t len = strcspn(path, "/");
		if (len >= sizeof(name) || !n->is_dir) {
			n = NULL;
			break;
		}
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		while (*path == '/')
			path++;
		n = ns_child_find(n, name, NULL);
	}
	time_t listed = n && !n->is_dir ? n->listed_mtime : 0;
	pthread_mutex_unlock(&ns->lock);
	out->is_dir = false;
	out->size = cache_object_size(obj);
	out->mtime = (struct timespec){ .tv_sec = shown_mtime(listed, cache_object_mtime(obj)) };
}

char *ns_url(struct namespace *ns, const char *path, struct cache_listed *listed, char *etag)
{
	struct ns_node *n;
	char *url = NULL;

	*listed = (struct cache_listed){ "", -1, 0 };
	pthread_mutex_lock(&ns->lock);
	if (resolve(ns, path, &n) == 0 && !n->is_dir) {
		url = n->url ? strdup(n->url) : source_object_url(ns->src, path);
		ns_listed_copy(ns, n, listed, etag);
	}
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
	return url;
}

void ns_list_error(struct namespace *ns, int err, const char *log_path, char *buf, size_t len)
{
	const struct source *src = ns->src;
	char cause[160], hint[512], log[300];
	pthread_mutex_lock(&ns->lock);
	memcpy(cause, ns->list_error, sizeof(cause));
	long status = ns->list_status;
	pthread_mutex_unlock(&ns->lock);
	/* what the error is, then the request's own words for it */
	const char *what = err == -EPERM ? "TLS certificate not trusted" :
			   err == -EACCES ? "access denied" : NULL;
	char why[sizeof(cause) + 40];
	if (what && cause[0])
		snprintf(why, sizeof(why), "%s: %s", what, cause);
	else
		snprintf(why, sizeof(why), "%s", cause[0] ? cause : what ? what : strerror(-err));
	snprintf(log, sizeof(log), "%s%s", log_path ? "the log has each attempt: " : "see the log",
		 log_path ? log_path : "");

	if (err == -EPERM)
		snprintf(hint, sizeof(hint), "give the CA with --ca-file FILE%s",
			 src->tier ? " (the store's) or --tier-ca-file FILE (the tier's)" : "");
	else if (err == -EACCES)
		snprintf(hint, sizeof(hint), "check the credentials%s%s",
			 src->credentials[0] ? " from " : "", src->credentials);
	else if (err == -ENOENT)
		snprintf(hint, sizeof(hint), "check the URL");
	else if (status == 0 && err == -EIO)
		snprintf(hint, sizeof(hint), "is the origin up? %s", log);
	else if (status >= 500 || status == 429)
		snprintf(hint, sizeof(hint), "the origin answers but fails; try again later, %s",
			 log);
	else
		snprintf(hint, sizeof(hint), "%s", log);
	snprintf(buf, len, "cannot list %s: %s (%s)", src->display, why, hint);
}
