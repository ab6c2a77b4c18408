/*
 * ahead.c - revalidation ahead (ns_revalidate_ahead() of namespace.h):
 * the queue of files a listing showed that may have a version cached, the
 * threads that check them in the background, and their start and stop.
 * Above validate.c and tree.c, whose functions it calls; namespace.c
 * queues a directory's files after each listing (ns_ahead_queue()).
 *
 * DESIGN: the queue (ns->ahead_head .. ahead_tail) and the flag that stops
 * the threads live in struct namespace under ns->lock; the threads wait on
 * ns->ahead_work. Each queued file carries a hold (ns_node_hold()), so a
 * later listing that retires it cannot free it while queued: the thread
 * that takes it gives the hold back, and ns_stop_ahead() gives back those
 * of files left in the queue. A thread checks a file as its first open
 * would (ns_file_validate_held()), with the lock dropped while it asks.
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define AHEAD_MAX 10000		/* files queued at once */

/* ns->lock held */
void ns_ahead_queue(struct namespace *ns, struct ns_node *dir)
{
	if (ns->ahead_stopping || !ns->nahead || ns->ttl_s == 0)
		return;	/* (ns_stop_ahead() clears nahead only once stopping) */
	for (size_t i = 0; i < dir->nchildren && ns->ahead_len < AHEAD_MAX; i++) {
		struct ns_node *n = dir->children[i];
		if (n->is_dir || n->ahead_done || n->obj || n->listed_etag)
			continue;
		n->ahead_done = true;
		ns_node_hold(n, 1);
		if (ns->ahead_tail)
			ns->ahead_tail->ahead_next = n;
		else
			ns->ahead_head = n;
		ns->ahead_tail = n;
		ns->ahead_len++;
		pthread_cond_signal(&ns->ahead_work);
	}
}

/* Revalidate N, queued and held, if a version of it is cached and none is
 * pinned yet; ns->lock held (dropped while asking). */
static void ahead_one(struct namespace *ns, struct ns_node *n)
{
	if (n->obj || n->busy || !ns_in_tree(n))
		return;
	char *path = ns_node_path(n);
	char *url = n->url ? strdup(n->url) : path ? source_object_url(ns->src, path) : NULL;
	free(path);
	if (!url)
		return;
	pthread_mutex_unlock(&ns->lock);
	bool known = cache_object_known(ns->cache, url);
	free(url);
	pthread_mutex_lock(&ns->lock);
	bool unchanged;
	if (known && !n->obj && ns_in_tree(n) && ns_file_validate_held(ns, n, &unchanged) != 0)
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
		ns_node_hold(n, -1);
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
		else
			pthread_setname_np(ns->ahead[ns->nahead], "tilefs-ahead");
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
		ns_node_hold(n, -1);
	}
	ns->ahead_tail = NULL;
	ns->ahead_len = 0;
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
}
