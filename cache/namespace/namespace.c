/*
 * namespace.c - see namespace.h: the public calls. Above ahead.c (it
 * queues what a listing shows), listing.c (a directory's listing and its
 * refresh after the ttl), validate.c and tree.c; the locks and the life of
 * nodes are described in namespace_int.h.
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

/* Make DIR's children current (ns_dir_refresh()); a fresh listing's files
 * go to revalidation ahead, and, when a reader enters a directory listed
 * the first time, its sibling directories to be listed ahead. ns->lock
 * held (dropped while fetching). */
static int dir_refresh(struct namespace *ns, struct ns_node *dir)
{
	bool fresh = false;
	int err = ns_dir_refresh(ns, dir, false, &fresh);
	if (!err && fresh)
		ns_ahead_queue(ns, dir, true);
	return err;
}

/* DIR's child NAME (NULL: none looked for) in *OUT, DIR listed as a
 * lookup lists it (ns_dir_find()): a fresh listing's files go to
 * revalidation ahead, and the folders beside one a reader entered listed
 * the first time to be listed ahead; a folder too large to wait for is
 * listed whole in the background. ns->lock held (dropped while
 * fetching). */
static int dir_find(struct namespace *ns, struct ns_node *dir, const char *name,
		    struct ns_node **out)
{
	struct ns_node *walked;
	bool behind;
	int err = ns_dir_find(ns, dir, name, out, &walked, &behind);
	if (walked)
		ns_ahead_queue(ns, walked, true);
	if (behind)
		ns_ahead_relist(ns, dir);
	return err;
}

/* The node at PATH, listing directories on the way (dir_find()); ns->lock
 * held (dropped while fetching). */
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
		int err = dir_find(ns, n, name, &n);
		if (err)
			return err;
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
	if (!err && n->is_dir && n->listed && !n->fixed && !ns_dir_fresh(ns, n))
		clock_gettime(CLOCK_REALTIME, &n->changed_at);
	else if (!err && !n->is_dir && !n->obj && n->listed_size < 0)
		err = ns_file_validate(ns, n, false,
				       &unchanged);	/* only a probe tells the size */
	if (!err)
		attr_of(ns, n, out);
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
	return err;
}

int ns_readdir(struct namespace *ns, const char *path, size_t start, ns_fill_fn fill,
	       void *arg)
{
	struct ns_node *dir, *none;

	pthread_mutex_lock(&ns->lock);
	int err = resolve(ns, path, &dir);
	if (!err && !dir->is_dir)
		err = -ENOTDIR;
	/* every name; but a folder too large to wait for, listed whole
	 * before, shows that listing while a new one is fetched (and a check
	 * lists as a lookup would) */
	if (!err)
		err = !fill || (dir->cut && dir->listed) ? dir_find(ns, dir, NULL, &none) :
							    dir_refresh(ns, dir);
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

/* ns_open(); a reader's (READER) has the other files of a sample's
 * directory opened ahead, at once, beside its own; one made ahead of the
 * readers (BACKGROUND) asks in the background (cache_object_open()). */
static int open_file(struct namespace *ns, const char *path, bool reader, bool background,
		     struct cache_object **out, bool *unchanged, bool *older_open)
{
	struct ns_node *n;

	pthread_mutex_lock(&ns->lock);
	int err = resolve(ns, path, &n);
	if (!err && n->is_dir)
		err = -EISDIR;
	if (!err && reader)
		ns_ahead_siblings(ns, n);
	if (!err)
		err = ns_file_validate(ns, n, background, unchanged);
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

int ns_open(struct namespace *ns, const char *path, struct cache_object **out, bool *unchanged,
	    bool *older_open)
{
	return open_file(ns, path, true, false, out, unchanged, older_open);
}

int ns_cache_opener(void *arg, const char *path, bool background, struct cache_object **out)
{
	bool unchanged, older_open;
	/* a hint knows what comes next: nothing opened beside it */
	return open_file(arg, path, false, background, out, &unchanged, &older_open);
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
