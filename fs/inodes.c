/*
 * inodes.c - see inodes.h. A hash table of paths; an inode number is the
 * address of its entry, so turning a number back into a path costs no
 * search (the kernel never sends a number it was not given, or one it
 * has forgotten).
 */
#include "fs/inodes.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct inode {
	struct inode *next;		/* in its bucket */
	uint64_t hash;
	uint64_t lookups;
	bool retired;			/* out of the table (inodes_retire()) */
	char path[];
};

struct inodes {
	pthread_mutex_t lock;
	struct inode **buckets;
	size_t nbuckets;		/* a power of two */
	size_t count;			/* the root's too: it is not in the table */
};

static uint64_t hash_of(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

int inodes_new(struct inodes **out)
{
	struct inodes *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->count = 1;
	*out = t;
	return 0;
}

void inodes_free(struct inodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->buckets[i]) {
			struct inode *n = t->buckets[i];
			t->buckets[i] = n->next;
			free(n);
		}
	}
	free(t->buckets);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Twice the buckets once there are more entries than buckets; lock held.
 * Out of memory, the chains just grow longer. */
static void grow(struct inodes *t)
{
	size_t n = t->nbuckets * 2;
	struct inode **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->buckets[i]) {
			struct inode *e = t->buckets[i];
			t->buckets[i] = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

uint64_t inodes_lookup(struct inodes *t, const char *path)
{
	uint64_t h = hash_of(path);
	pthread_mutex_lock(&t->lock);
	if (!*path) {
		pthread_mutex_unlock(&t->lock);
		return INODES_ROOT;
	}
	struct inode *e = t->buckets[h & (t->nbuckets - 1)];
	while (e && (e->hash != h || strcmp(e->path, path) != 0))
		e = e->next;
	if (!e) {
		size_t len = strlen(path);
		e = malloc(sizeof(*e) + len + 1);
		if (!e) {
			pthread_mutex_unlock(&t->lock);
			return 0;
		}
		memcpy(e->path, path, len + 1);
		e->hash = h;
		e->lookups = 0;
		e->retired = false;
		if (t->count > t->nbuckets)
			grow(t);
		e->next = t->buckets[h & (t->nbuckets - 1)];
		t->buckets[h & (t->nbuckets - 1)] = e;
		t->count++;
	}
	e->lookups++;
	uint64_t ino = (uint64_t)(uintptr_t)e;
	pthread_mutex_unlock(&t->lock);
	return ino;
}

/* Take E out of its bucket; lock held. */
static void unchain(struct inodes *t, struct inode *e)
{
	struct inode **p = &t->buckets[e->hash & (t->nbuckets - 1)];
	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
}

bool inodes_retire(struct inodes *t, uint64_t ino)
{
	if (ino == INODES_ROOT)
		return false;
	struct inode *e = (struct inode *)(uintptr_t)ino;
	pthread_mutex_lock(&t->lock);
	if (!e->retired) {
		unchain(t, e);
		e->retired = true;
	}
	pthread_mutex_unlock(&t->lock);
	return true;
}

void inodes_forget(struct inodes *t, uint64_t ino, uint64_t n)
{
	if (ino == INODES_ROOT)
		return;
	struct inode *e = (struct inode *)(uintptr_t)ino;
	pthread_mutex_lock(&t->lock);
	e->lookups -= n < e->lookups ? n : e->lookups;
	if (e->lookups == 0) {
		if (!e->retired)
			unchain(t, e);
		t->count--;
		free(e);
	}
	pthread_mutex_unlock(&t->lock);
}

const char *inodes_path(struct inodes *t, uint64_t ino)
{
	return ino == INODES_ROOT ? "" : ((struct inode *)(uintptr_t)ino)->path;
}

size_t inodes_count(struct inodes *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
