/*
 * tree.c - the nodes of a namespace's tree (namespace_int.h): made, found,
 * freed and counted, and the bound on how many a namespace holds
 * (ns_set_max_names() of namespace.h): past it, the listings of the
 * directories least recently used are dropped, to be listed again when
 * used; the holds that keep a node across a drop of ns->lock, and the
 * freeing of retired nodes (ns_reap()). The bottom of cache/namespace:
 * calls no other file of it.
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Nodes allocated and not yet freed, in this process (ns_nodes_alive()). */
static atomic_size_t nodes_alive;

size_t ns_nodes_alive(void)
{
	return atomic_load(&nodes_alive);
}

struct ns_node *ns_node_new(struct namespace *ns, const char *name, bool is_dir,
			    struct ns_node *parent)
{
	size_t len = strlen(name);
	struct ns_node *n = calloc(1, sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	memcpy(n->name, name, len + 1);
	atomic_fetch_add(&nodes_alive, 1);
	atomic_fetch_add(&ns->names, 1);
	n->is_dir = is_dir;
	n->parent = parent;
	n->listed_size = -1;
	return n;
}

void ns_node_free(struct namespace *ns, struct ns_node *n)
{
	for (size_t i = 0; i < n->nchildren; i++)
		ns_node_free(ns, n->children[i]);
	free(n->children);
	cache_object_unref(n->obj);
	cache_object_unref(n->older);
	free(n->listed_etag);
	free(n->url);
	free(n);
	atomic_fetch_sub(&nodes_alive, 1);
	atomic_fetch_sub(&ns->names, 1);
}

/* ns->lock held */
struct ns_node *ns_child_find(struct ns_node *dir, const char *name, size_t *pos)
{
	size_t lo = 0, hi = dir->nchildren;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int cmp = strcmp(dir->children[mid]->name, name);
		if (cmp == 0) {
			if (pos)
				*pos = mid;
			return dir->children[mid];
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	return NULL;
}

/* ns->lock held */
int ns_child_insert(struct ns_node *dir, struct ns_node *child, size_t pos)
{
	struct ns_node **grown = realloc(dir->children, (dir->nchildren + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	dir->children = grown;
	memmove(grown + pos + 1, grown + pos, (dir->nchildren - pos) * sizeof(*grown));
	grown[pos] = child;
	dir->nchildren++;
	return 0;
}

/* ---- holds across a drop of ns->lock, and retired nodes ---- */

/* ns->lock held */
void ns_node_hold(struct ns_node *n, int delta)
{
	for (; n; n = n->parent)
		n->holds = (unsigned)((int)n->holds + delta);
}

/* ns->lock held */
void ns_reap(struct namespace *ns)
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

/* ns->lock held */
char *ns_node_path(const struct ns_node *n)
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

/* ---- the bound on names held ---- */

/* the default bound on names held: 1/16 of the machine's memory at about
 * NAME_BYTES a name (node, name, its slot in the parent, allocator
 * overhead), within NAMES_MIN..NAMES_MAX */
#define NAME_BYTES 512
#define NAMES_MIN 100000
#define NAMES_MAX 4000000

void ns_set_max_names(struct namespace *ns, size_t max)
{
	if (!max) {
		long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
		uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
		max = (size_t)(mem / 16 / NAME_BYTES);
		max = max < NAMES_MIN ? NAMES_MIN : max > NAMES_MAX ? NAMES_MAX : max;
	}
	ns->max_names = max;
}

/* Is N still in the tree (not retired by a later listing)? ns->lock held. */
bool ns_dir_fresh(const struct namespace *ns, const struct ns_node *dir)
{
	return dir->listed && time(NULL) - dir->listed_at < ns->ttl_s;
}

bool ns_in_tree(const struct ns_node *n)
{
	for (; n->parent; n = n->parent)
		if (ns_child_find(n->parent, n->name, NULL) != n)
			return false;
	return true;
}

/* A directory whose listing may be dropped, and when it was last used. */
struct shed_candidate {
	struct ns_node *dir;
	uint64_t used;
};

struct shed {
	struct shed_candidate *v;
	size_t n, cap;
	int err;
};

/* Add to S every directory under DIR (DIR too) whose listing may be
 * dropped: listed, not from a manifest, and with no call using it or a
 * descendant (no hold) and no file below it open (a file open in an older
 * version must stay known, see ns_open()). Returns whether some file below
 * DIR is open. ns->lock held. */
static bool shed_collect(struct ns_node *dir, struct shed *s)
{
	bool open = false;
	for (size_t i = 0; i < dir->nchildren; i++) {
		struct ns_node *c = dir->children[i];
		if (c->is_dir)
			open |= !c->fixed && c->nchildren && shed_collect(c, s);
		else
			open |= c->older || (c->obj && cache_object_shared(c->obj));
	}
	if (open || dir->holds || !dir->listed || dir->fixed || !dir->nchildren || s->err)
		return open;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct shed_candidate *grown = realloc(s->v, cap * sizeof(*grown));
		if (!grown) {
			s->err = -ENOMEM;
			return open;
		}
		s->v = grown;
		s->cap = cap;
	}
	s->v[s->n++] = (struct shed_candidate){ dir, dir->used };
	return false;
}

static int by_use(const void *a, const void *b)
{
	uint64_t x = ((const struct shed_candidate *)a)->used;
	uint64_t y = ((const struct shed_candidate *)b)->used;
	return x < y ? -1 : x > y;
}

/* Nodes in N's subtree, N included. ns->lock held. */
static size_t subtree_size(const struct ns_node *n)
{
	size_t size = 1;
	for (size_t i = 0; i < n->nchildren; i++)
		size += subtree_size(n->children[i]);
	return size;
}

/* Drop DIR's listing: its children leave the tree for ns->retired (and
 * are freed by ns_reap(), with their subtrees and pinned versions); DIR
 * is listed again when next used. Returns how many nodes left. ns->lock
 * held, and no hold on DIR. */
static size_t listing_drop(struct namespace *ns, struct ns_node *dir)
{
	size_t gone = 0;
	for (size_t i = 0; i < dir->nchildren; i++) {
		struct ns_node *c = dir->children[i];
		gone += subtree_size(c);
		c->retired_next = ns->retired;
		ns->retired = c;
	}
	free(dir->children);
	dir->children = NULL;
	dir->nchildren = 0;
	dir->listed = false;
	dir->cut = false;	/* known again from its next listing */
	dir->dropped = true;
	return gone;
}

/*
 * Over ns->max_names, drop the listings of the directories least recently
 * used (none in use, none with a file open below it) until the names held
 * are down to 3/4 of the bound, so that the walk of the tree this costs
 * comes at most once per quarter of the bound listed. ns->lock held.
 */
void ns_names_shed(struct namespace *ns)
{
	size_t held = atomic_load(&ns->names);
	if (held <= ns->max_names)
		return;
	struct shed s = { 0 };
	size_t target = ns->max_names / 4 * 3, gone = 0, dropped = 0;
	shed_collect(ns->root, &s);
	qsort(s.v, s.n, sizeof(*s.v), by_use);
	for (size_t i = 0; i < s.n && held - gone > target; i++) {
		if (!ns_in_tree(s.v[i].dir))
			continue;	/* under a directory dropped just before */
		gone += listing_drop(ns, s.v[i].dir);
		dropped++;
	}
	free(s.v);
	/* a warning the first time, to say what to raise */
	log_at(ns->shed_before ? LOG_INFO : LOG_WARN,
	       "%zu names in memory, over --max-names %zu: dropped the listings of %zu "
	       "directories (%zu names); they are listed again when used", held,
	       ns->max_names, dropped, gone);
	ns->shed_before = true;
}

