/*
 * inodes.c - see inodes.h. DESIGN: each entry sits in two hash tables
 * under t->lock: by path (while it is its path's number, i.e. not
 * retired) and by number. An entry the kernel has forgotten stays, so
 * that its path gets the same number back, on a list oldest first; past
 * INODES_FORGOTTEN_BYTES the oldest is freed. A retired entry is freed
 * when forgotten: its path has another number by then.
 */
#include "fs/inodes.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct inode {
	struct inode *next_path;	/* in its path bucket, unless retired */
	struct inode *next_ino;		/* in its number bucket */
	struct inode *older, *newer;	/* on the forgotten list, while lookups == 0 */
	uint64_t hash;			/* of path */
	uint64_t ino;
	uint64_t lookups;		/* the kernel's, not yet forgotten */
	int64_t pages_of;		/* while paged: inodes_pages_of() */
	bool paged;
	bool retired;			/* out of the path table (inodes_retire()) */
	char path[];
};

struct inodes {
	pthread_mutex_t lock;
	struct inode **by_path, **by_ino;	/* nbuckets each */
	size_t nbuckets;		/* a power of two */
	size_t entries;			/* in by_ino: held, forgotten and kept */
	size_t held;			/* lookups > 0, the root too */
	uint64_t next_ino;		/* the number the next new path gets */
	struct inode *oldest, *newest;	/* the forgotten list */
	size_t forgotten_bytes;		/* its entries' size */
};

static uint64_t hash_of(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static size_t size_of(const struct inode *e)
{
	return sizeof(*e) + strlen(e->path) + 1;
}

int inodes_new(struct inodes **out)
{
	struct inodes *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nbuckets = 1024;
	t->by_path = calloc(t->nbuckets, sizeof(*t->by_path));
	t->by_ino = calloc(t->nbuckets, sizeof(*t->by_ino));
	if (!t->by_path || !t->by_ino) {
		free(t->by_path);
		free(t->by_ino);
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->held = 1;
	t->next_ino = INODES_ROOT + 1;
	*out = t;
	return 0;
}

void inodes_free(struct inodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->by_ino[i]) {
			struct inode *e = t->by_ino[i];
			t->by_ino[i] = e->next_ino;
			free(e);
		}
	}
	free(t->by_path);
	free(t->by_ino);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Twice the buckets once there are more entries than buckets; lock held.
 * Out of memory, the chains just grow longer. */
static void grow(struct inodes *t)
{
	size_t n = t->nbuckets * 2;
	struct inode **by_path = calloc(n, sizeof(*by_path));
	struct inode **by_ino = calloc(n, sizeof(*by_ino));
	if (!by_path || !by_ino) {
		free(by_path);
		free(by_ino);
		return;
	}
	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->by_path[i]) {
			struct inode *e = t->by_path[i];
			t->by_path[i] = e->next_path;
			e->next_path = by_path[e->hash & (n - 1)];
			by_path[e->hash & (n - 1)] = e;
		}
		while (t->by_ino[i]) {
			struct inode *e = t->by_ino[i];
			t->by_ino[i] = e->next_ino;
			e->next_ino = by_ino[e->ino & (n - 1)];
			by_ino[e->ino & (n - 1)] = e;
		}
	}
	free(t->by_path);
	free(t->by_ino);
	t->by_path = by_path;
	t->by_ino = by_ino;
	t->nbuckets = n;
}

/* The entry of number INO, or NULL; lock held. */
static struct inode *find_ino(struct inodes *t, uint64_t ino)
{
	struct inode *e = t->by_ino[ino & (t->nbuckets - 1)];
	while (e && e->ino != ino)
		e = e->next_ino;
	return e;
}

/* Take E off the forgotten list; lock held. */
static void unlist(struct inodes *t, struct inode *e)
{
	*(e->older ? &e->older->newer : &t->oldest) = e->newer;
	*(e->newer ? &e->newer->older : &t->newest) = e->older;
	e->older = e->newer = NULL;
	t->forgotten_bytes -= size_of(e);
}

/* Take E out of both tables (the path one unless retired) and free it;
 * lock held, E on no list. */
static void drop(struct inodes *t, struct inode *e)
{
	struct inode **p;
	if (!e->retired) {
		for (p = &t->by_path[e->hash & (t->nbuckets - 1)]; *p != e; p = &(*p)->next_path)
			;
		*p = e->next_path;
	}
	for (p = &t->by_ino[e->ino & (t->nbuckets - 1)]; *p != e; p = &(*p)->next_ino)
		;
	*p = e->next_ino;
	t->entries--;
	free(e);
}

uint64_t inodes_lookup(struct inodes *t, const char *path)
{
	if (!*path)
		return INODES_ROOT;
	uint64_t h = hash_of(path);
	pthread_mutex_lock(&t->lock);
	struct inode *e = t->by_path[h & (t->nbuckets - 1)];
	while (e && (e->hash != h || strcmp(e->path, path) != 0))
		e = e->next_path;
	if (!e) {
		size_t len = strlen(path);
		e = calloc(1, sizeof(*e) + len + 1);
		if (!e) {
			pthread_mutex_unlock(&t->lock);
			return 0;
		}
		memcpy(e->path, path, len + 1);
		e->hash = h;
		e->ino = t->next_ino++;
		if (t->entries >= t->nbuckets)
			grow(t);
		e->next_path = t->by_path[h & (t->nbuckets - 1)];
		t->by_path[h & (t->nbuckets - 1)] = e;
		e->next_ino = t->by_ino[e->ino & (t->nbuckets - 1)];
		t->by_ino[e->ino & (t->nbuckets - 1)] = e;
		t->entries++;
	} else if (e->lookups == 0) {
		unlist(t, e);		/* forgotten: the kernel holds it again */
	}
	if (e->lookups++ == 0)
		t->held++;
	uint64_t ino = e->ino;
	pthread_mutex_unlock(&t->lock);
	return ino;
}

bool inodes_retire(struct inodes *t, uint64_t ino)
{
	if (ino == INODES_ROOT)
		return false;
	pthread_mutex_lock(&t->lock);
	struct inode *e = find_ino(t, ino);
	bool held = e && e->lookups > 0;
	if (held && !e->retired) {
		struct inode **p = &t->by_path[e->hash & (t->nbuckets - 1)];
		while (*p != e)
			p = &(*p)->next_path;
		*p = e->next_path;
		e->retired = true;
	}
	pthread_mutex_unlock(&t->lock);
	return held;
}

void inodes_forget(struct inodes *t, uint64_t ino, uint64_t n)
{
	if (ino == INODES_ROOT)
		return;
	pthread_mutex_lock(&t->lock);
	struct inode *e = find_ino(t, ino);
	if (!e || e->lookups == 0)
		goto out;
	e->lookups -= n < e->lookups ? n : e->lookups;
	if (e->lookups > 0)
		goto out;
	t->held--;
	e->paged = false;		/* the kernel's inode went, and its pages */
	if (e->retired) {
		drop(t, e);
		goto out;
	}
	/* kept for its path's next lookup, newest last */
	e->older = t->newest;
	*(t->newest ? &t->newest->newer : &t->oldest) = e;
	t->newest = e;
	t->forgotten_bytes += size_of(e);
	while (t->forgotten_bytes > INODES_FORGOTTEN_BYTES) {
		struct inode *old = t->oldest;
		unlist(t, old);
		drop(t, old);
	}
out:
	pthread_mutex_unlock(&t->lock);
}

bool inodes_pages_of(struct inodes *t, uint64_t ino, int64_t version)
{
	pthread_mutex_lock(&t->lock);
	struct inode *e = find_ino(t, ino);
	bool same = e && e->paged && e->pages_of == version;
	if (e) {
		e->pages_of = version;
		e->paged = true;
	}
	pthread_mutex_unlock(&t->lock);
	return same;
}

const char *inodes_path(struct inodes *t, uint64_t ino)
{
	if (ino == INODES_ROOT)
		return "";
	pthread_mutex_lock(&t->lock);
	struct inode *e = find_ino(t, ino);
	pthread_mutex_unlock(&t->lock);
	return e ? e->path : NULL;
}

size_t inodes_count(struct inodes *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->held;
	pthread_mutex_unlock(&t->lock);
	return n;
}
