/*
 * namespace.c - see namespace.h.
 *
 * DESIGN: a tree of nodes under ns->lock. Network work (listing a
 * directory, validating a file's version) runs without the lock, with a
 * per-node flag so one thread does it while others wait on ns->done.
 *
 * Nodes that disappear from a listing leave the tree for a retired list
 * and are freed, with their subtree and their pinned versions, by ns_reap()
 * at the end of the call that retired them, or of a later call. A pointer
 * to a node is only used while ns->lock is held, with one exception: the
 * node a thread refreshes or validates (dir_refresh(), file_validate())
 * stays in use across the lock drop, so those take a hold on it and on
 * each of its ancestors (node_hold()); a retired node is freed only once
 * it has no hold. Open files keep their versions through their own
 * references (cache_object_ref()), not through the node. Past the bound
 * on names held (tree.c), whole listings leave the same way: the children
 * of directories no call holds, with no file open below.
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 1000000	/* per directory: ~150 MB of nodes */
#define MAX_PAGES 100000
#define AHEAD_MAX 10000		/* files queued for revalidation ahead */

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

/* Take (DELTA 1) or give back (-1) a hold on N and every ancestor, so none
 * of them is freed while the lock is dropped; ns->lock held. */
static void node_hold(struct ns_node *n, int delta)
{
	for (; n; n = n->parent)
		n->holds = (unsigned)((int)n->holds + delta);
}

/* Free the retired nodes no thread holds. The caller uses no pointer to a
 * node after this (it is called just before ns->lock is released). */
static void ns_reap(struct namespace *ns)
{
	struct ns_node **link = &ns->retired;
	while (*link) {
		struct ns_node *n = *link;
		if (n->holds) {
			link = &n->retired_next;
			continue;
		}
		*link = n->retired_next;
		ns_node_free(ns, n);	/* with its subtree: no hold there either */
	}
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

/* Path of N relative to the root ("a/b", "" for the root); caller frees.
 * ns->lock held. */
static char *node_path(const struct ns_node *n)
{
	size_t len = 0;
	for (const struct ns_node *p = n; p->parent; p = p->parent)
		len += strlen(p->name) + (p->parent->parent ? 1 : 0);
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	out[len] = '\0';
	size_t end = len;
	for (const struct ns_node *p = n; p->parent; p = p->parent) {
		size_t l = strlen(p->name);
		end -= l;
		memcpy(out + end, p->name, l);
		if (p->parent->parent)
			out[--end] = '/';
	}
	return out;
}

/* ---- listings ---- */

struct listing {
	struct namespace *ns;
	struct ns_node **nodes;
	size_t n, cap;
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
static int fetch_listing(struct namespace *ns, const char *dir_path, struct listing *out)
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
		source_prepare(ns->src, &req);
		err = http_run(ns->http, &req);
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

/* What N's last listing said of N; its etag points into N (ns->lock
 * held while it is used). */
static struct cache_listed listed_of(const struct ns_node *n)
{
	return (struct cache_listed){ n->listed_etag ? n->listed_etag : "", n->listed_size,
				      n->listed_mtime };
}

/* Does N's listing say its pinned version is no longer the current one (a
 * size or an ETag that differ)? ns->lock held. */
static bool listing_disagrees(const struct ns_node *n)
{
	if (n->listed_size >= 0 && (uint64_t)n->listed_size != cache_object_size(n->obj))
		return true;
	struct cache_listed l = listed_of(n);
	return n->listed_etag && !cache_object_listed(n->obj, &l);
}

/* Queue DIR's files for revalidation ahead (ns_revalidate_ahead()) that
 * may need it: no version pinned, and no ETag listed that could vouch for
 * one. The threads skip those with nothing cached. ns->lock held. */
static void ahead_queue(struct namespace *ns, struct ns_node *dir)
{
	if (ns->ahead_stopping || !ns->nahead || ns->ttl_s == 0)
		return;	/* (ns_stop_ahead() clears nahead only once stopping) */
	for (size_t i = 0; i < dir->nchildren && ns->ahead_len < AHEAD_MAX; i++) {
		struct ns_node *n = dir->children[i];
		if (n->is_dir || n->ahead_done || n->obj || n->listed_etag)
			continue;
		n->ahead_done = true;
		node_hold(n, 1);
		if (ns->ahead_tail)
			ns->ahead_tail->ahead_next = n;
		else
			ns->ahead_head = n;
		ns->ahead_tail = n;
		ns->ahead_len++;
		pthread_cond_signal(&ns->ahead_work);
	}
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
	char *path = node_path(dir);
	pthread_mutex_unlock(&ns->lock);

	struct listing l = { .ns = ns };
	int err = path ? fetch_listing(ns, path, &l) : -ENOMEM;
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
				if (old->obj && listing_disagrees(old))
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
		ahead_queue(ns, dir);
		ns_names_shed(ns);
	} else {
		for (size_t i = 0; i < l.n; i++)
			ns_node_free(ns, l.nodes[i]);
		free(l.nodes);
		if (dir->listed) {
			log_warn("cannot list /%s again (%s); keeping the last listing",
				 path ? path : "?", strerror(-err));
			err = 0;
		}
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
	node_hold(dir, 1);
	int err = dir_refresh_held(ns, dir);
	node_hold(dir, -1);
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

/* ---- files ---- */

/* Is N's directory listing younger than the ttl? ns->lock held. */
static bool listing_fresh(const struct namespace *ns, const struct ns_node *n)
{
	const struct ns_node *dir = n->parent;
	return dir && dir->listed && time(NULL) - dir->listed_at < ns->ttl_s;
}

/* What a listing younger than the ttl said of N, for use after ns->lock is
 * dropped (its etag copied into ETAG, 128 bytes); false if there is none.
 * ns->lock held. */
static bool listed_copy(const struct namespace *ns, const struct ns_node *n,
			struct cache_listed *out, char *etag)
{
	if (!listing_fresh(ns, n))
		return false;
	*out = listed_of(n);
	snprintf(etag, 128, "%s", out->etag);
	out->etag = etag;
	return true;
}

/* Is N's pinned version still current: checked within the ttl, or named
 * by a listing younger than it? ns->lock held. */
static bool pinned_current(const struct namespace *ns, const struct ns_node *n)
{
	if (!n->obj || cache_object_stale(n->obj) || n->outdated)
		return false;
	if (time(NULL) - n->validated_at < ns->ttl_s)
		return true;
	struct cache_listed l = listed_of(n);
	return listing_fresh(ns, n) && cache_object_listed(n->obj, &l);
}

/* file_validate() with N held. */
static int file_validate_held(struct namespace *ns, struct ns_node *n, bool *unchanged)
{
	for (;;) {
		if (pinned_current(ns, n)) {
			*unchanged = true;
			return 0;
		}
		if (!n->busy)
			break;
		pthread_cond_wait(&ns->done, &ns->lock);
	}
	n->busy = true;
	struct cache_listed listed;
	char etag[128];
	bool fresh = listed_copy(ns, n, &listed, etag);
	char *path = node_path(n);
	char *url = n->url ? strdup(n->url) : path ? source_object_url(ns->src, path) : NULL;
	pthread_mutex_unlock(&ns->lock);

	struct cache_object *obj = NULL;
	int err = url ? cache_object_open(ns->cache, url, path, fresh ? &listed : NULL, &obj)
		      : -ENOMEM;
	free(url);
	free(path);

	pthread_mutex_lock(&ns->lock);
	if (!err) {
		*unchanged = cache_object_same(n->obj, obj);
		if (!*unchanged && n->obj && cache_object_shared(n->obj)) {
			cache_object_unref(n->older);	/* the oldest: readers keep their refs */
			n->older = n->obj;		/* still open somewhere */
		} else {
			cache_object_unref(n->obj);
		}
		n->obj = obj;
		n->validated_at = time(NULL);
		n->outdated = false;
	}
	n->busy = false;
	pthread_cond_broadcast(&ns->done);
	return err;
}

/* Make N's pinned version current; ns->lock held (dropped while asking). */
static int file_validate(struct namespace *ns, struct ns_node *n, bool *unchanged)
{
	node_hold(n, 1);
	int err = file_validate_held(ns, n, unchanged);
	node_hold(n, -1);
	return err;
}

/* ---- revalidation ahead ---- */

/* Revalidate N, queued and held, if a version of it is cached and none is
 * pinned yet; ns->lock held (dropped while asking). */
static void ahead_one(struct namespace *ns, struct ns_node *n)
{
	if (n->obj || n->busy || !ns_in_tree(n))
		return;
	char *path = node_path(n);
	char *url = n->url ? strdup(n->url) : path ? source_object_url(ns->src, path) : NULL;
	free(path);
	if (!url)
		return;
	pthread_mutex_unlock(&ns->lock);
	bool known = cache_object_known(ns->cache, url);
	free(url);
	pthread_mutex_lock(&ns->lock);
	bool unchanged;
	if (known && !n->obj && ns_in_tree(n) && file_validate_held(ns, n, &unchanged) != 0)
		log_debug("revalidation ahead of %s failed; its open will ask again", n->name);
}

static void *ahead_thread(void *arg)
{
	struct namespace *ns = arg;
	pthread_mutex_lock(&ns->lock);
	for (;;) {
		while (!ns->ahead_head && !ns->ahead_stopping)
			pthread_cond_wait(&ns->ahead_work, &ns->lock);
		if (ns->ahead_stopping)
			break;
		struct ns_node *n = ns->ahead_head;
		ns->ahead_head = n->ahead_next;
		if (!ns->ahead_head)
			ns->ahead_tail = NULL;
		ns->ahead_len--;
		n->ahead_next = NULL;
		ahead_one(ns, n);
		node_hold(n, -1);
		if (!ns->ahead_head)
			ns_names_shed(ns);	/* what the queue kept in use */
		ns_reap(ns);
	}
	pthread_mutex_unlock(&ns->lock);
	return NULL;
}

int ns_revalidate_ahead(struct namespace *ns, int threads)
{
	if (threads <= 0 || !ns->cache)
		return 0;
	ns->ahead = calloc((size_t)threads, sizeof(*ns->ahead));
	if (!ns->ahead)
		return -ENOMEM;
	for (; ns->nahead < threads; ns->nahead++)
		if (pthread_create(&ns->ahead[ns->nahead], NULL, ahead_thread, ns) != 0)
			break;
	return ns->nahead ? 0 : -EAGAIN;
}

void ns_stop_ahead(struct namespace *ns)
{
	pthread_mutex_lock(&ns->lock);
	ns->ahead_stopping = true;
	pthread_cond_broadcast(&ns->ahead_work);
	pthread_mutex_unlock(&ns->lock);
	for (int i = 0; i < ns->nahead; i++)
		pthread_join(ns->ahead[i], NULL);
	free(ns->ahead);
	ns->ahead = NULL;
	ns->nahead = 0;
	pthread_mutex_lock(&ns->lock);
	while (ns->ahead_head) {
		struct ns_node *n = ns->ahead_head;
		ns->ahead_head = n->ahead_next;
		n->ahead_next = NULL;
		node_hold(n, -1);
	}
	ns->ahead_tail = NULL;
	ns->ahead_len = 0;
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
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
		err = file_validate(ns, n, &unchanged);	/* only a probe tells the size */
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
		err = file_validate(ns, n, unchanged);
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
		listed_copy(ns, n, listed, etag);
	}
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
	return url;
}

void ns_list_error(const struct source *src, int err, char *buf, size_t len)
{
	const char *why = err == -EPERM ? "TLS certificate not trusted" :
			  err == -EACCES ? "access denied" : strerror(-err);
	char hint[512];

	if (err == -EPERM)
		snprintf(hint, sizeof(hint), "give the CA with --ca-file FILE%s",
			 src->tier ? " (the store's) or --tier-ca-file FILE (the tier's)" : "");
	else if (err == -EACCES)
		snprintf(hint, sizeof(hint), "check the credentials%s%s",
			 src->credentials[0] ? " from " : "", src->credentials);
	else if (err == -ENOENT)
		snprintf(hint, sizeof(hint), "check the URL");
	else
		snprintf(hint, sizeof(hint), "is the origin up? see the log for details");
	snprintf(buf, len, "cannot list %s: %s (%s)", src->display, why, hint);
}
