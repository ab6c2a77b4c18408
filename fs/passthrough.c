/*
 * passthrough.c - see passthrough.h. The kernel ABI used here (fuse.h of
 * Linux 6.9 and later) is written out below (the INIT flags in
 * fs/init_ext.c): libfuse 3.14 installs no copy of that header, and its
 * own is older.
 */
#define FUSE_USE_VERSION 312
#include "fs/passthrough.h"
#include "cache/base/log.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define KERNEL_MINOR_PASSTHROUGH 40	/* the protocol minor that brought it */
#define OPEN_PASSTHROUGH (1u << 7)	/* FOPEN_PASSTHROUGH */
#define OPEN_DIRECT_IO (1u << 0)	/* FOPEN_DIRECT_IO: overrides it for reads */

struct open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

struct backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};

#define DEV_IOC_BACKING_OPEN _IOW(229, 1, struct backing_map)
#define DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* The opens of one inode (only while it has some). */
struct inode_opens {
	struct inode_opens *next;
	uint64_t ino;
	unsigned n[3];			/* by enum io_mode */
	int64_t object_id;		/* the version all of them read (rule 3) */
	int backing_id;			/* while n[IO_PASSED] > 0 */
};

struct passthrough {
	int dev_fd;
	_Atomic bool on;		/* the kernel took it and ioctls work */
	pthread_mutex_t lock;
	struct inode_opens *inodes;	/* lock */
};

struct passthrough *passthrough_new(struct fuse_session *se)
{
	struct passthrough *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->dev_fd = fuse_session_fd(se);
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

void passthrough_free(struct passthrough *p)
{
	if (!p)
		return;
	while (p->inodes) {
		struct inode_opens *o = p->inodes;
		p->inodes = o->next;
		free(o);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

bool passthrough_init(const struct fuse_conn_info *conn, bool wanted)
{
	return wanted && conn->proto_major == 7 && conn->proto_minor >= KERNEL_MINOR_PASSTHROUGH;
}

void passthrough_started(struct passthrough *p)
{
	atomic_store(&p->on, true);
}

static struct inode_opens *find(struct passthrough *p, uint64_t ino, bool add)
{
	for (struct inode_opens *o = p->inodes; o; o = o->next)
		if (o->ino == ino)
			return o;
	struct inode_opens *o = add ? calloc(1, sizeof(*o)) : NULL;
	if (o) {
		o->ino = ino;
		o->next = p->inodes;
		p->inodes = o;
	}
	return o;
}

static bool has_opens(const struct inode_opens *o)
{
	return o->n[IO_CACHED] || o->n[IO_DIRECT] || o->n[IO_PASSED];
}

/* Does O have opens of a version other than OBJECT_ID? (rule 3) */
static bool other_version(const struct inode_opens *o, int64_t object_id)
{
	return has_opens(o) && o->object_id != object_id;
}

static void forget(struct passthrough *p, struct inode_opens *o)
{
	if (has_opens(o))
		return;
	for (struct inode_opens **link = &p->inodes; *link; link = &(*link)->next)
		if (*link == o) {
			*link = o->next;
			free(o);
			return;
		}
}

bool passthrough_may(struct passthrough *p, uint64_t ino, int64_t object_id)
{
	if (!atomic_load(&p->on))
		return false;
	pthread_mutex_lock(&p->lock);
	struct inode_opens *o = find(p, ino, false);
	bool may = !o || !other_version(o, object_id);
	pthread_mutex_unlock(&p->lock);
	return may;
}

int passthrough_open(struct passthrough *p, uint64_t ino, int64_t object_id, int fd)
{
	int id;
	pthread_mutex_lock(&p->lock);
	struct inode_opens *o = find(p, ino, true);
	if (!o) {
		id = -ENOMEM;
	} else if (other_version(o, object_id)) {
		id = -ESTALE;
	} else if (o->n[IO_CACHED] || o->n[IO_DIRECT]) {
		id = -EBUSY;	/* rule (1): they drain first */
	} else if (o->n[IO_PASSED]) {
		id = o->backing_id;
	} else {
		struct backing_map map = { .fd = fd };
		id = ioctl(p->dev_fd, DEV_IOC_BACKING_OPEN, &map);
		if (id < 0) {
			id = -errno;
			if (atomic_exchange(&p->on, false))
				log_info("FUSE passthrough is off for this mount (%s%s): cached "
					 "files are read through the daemon", strerror(-id),
					 id == -EPERM ? ": it needs root" :
					 id == -ELOOP ? ": the cache dir is on an overlay" : "");
		} else {
			o->backing_id = id;
		}
	}
	if (id >= 0) {
		o->object_id = object_id;
		o->n[IO_PASSED]++;
	} else if (o) {
		forget(p, o);
	}
	pthread_mutex_unlock(&p->lock);
	close(fd);
	return id;
}

int passthrough_count(struct passthrough *p, uint64_t ino, int64_t object_id, enum io_mode mode,
		      int *backing_id)
{
	int got = (int)mode;
	*backing_id = -1;
	pthread_mutex_lock(&p->lock);
	struct inode_opens *o = find(p, ino, true);
	if (!o) {
		got = -ENOMEM;
	} else if (other_version(o, object_id)) {
		got = -ESTALE;
	} else {
		o->object_id = object_id;
		if (o->n[IO_PASSED]) {
			got = IO_PASSED;
			*backing_id = o->backing_id;
		}
		o->n[got]++;
	}
	pthread_mutex_unlock(&p->lock);
	return got;
}

void passthrough_released(struct passthrough *p, uint64_t ino, enum io_mode mode)
{
	pthread_mutex_lock(&p->lock);
	struct inode_opens *o = find(p, ino, false);
	if (o && o->n[mode] && --o->n[mode] == 0 && mode == IO_PASSED) {
		uint32_t id = (uint32_t)o->backing_id;
		/* the kernel lets go of the file when its last open does */
		ioctl(p->dev_fd, DEV_IOC_BACKING_CLOSE, &id);
	}
	if (o)
		forget(p, o);
	pthread_mutex_unlock(&p->lock);
}

int passthrough_reply_open(struct fuse_req *req, const struct fuse_file_info *fi, int backing_id,
			   bool direct)
{
	struct open_out out = { .fh = fi->fh,
				.open_flags = OPEN_PASSTHROUGH | (direct ? OPEN_DIRECT_IO : 0),
				.backing_id = backing_id };
	return fuse_reply_buf(req, (const char *)&out, sizeof(out));
}
