/*
 * mount.c - see mount.h. Path-based libfuse callbacks on top of the
 * namespace (names, versions) and the cache (bytes). The kernel caches
 * entries, attributes and missing names for --ttl seconds, and keeps file
 * pages across opens while the object's version is unchanged.
 */
#define FUSE_USE_VERSION 312
#include "fs/mount.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/namespace/namespace.h"
#include "tools/inspect.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_THREADS 64
#define READAHEAD_KB 1024	/* as conn->max_readahead: see op_init */

/* An open file. The kernel may not send every release before unmounting,
 * so the mount keeps them all and drops what is left at the end. */
struct open_file {
	struct cache_object *obj;
	struct open_file *prev, *next;	/* protected by mount->lock */
};

struct mount {
	struct mount_config cfg;
	struct namespace *ns;
	struct cache *cache;
	struct fuse *fuse;
	uid_t uid;			/* every file's owner: who mounted */
	gid_t gid;
	pthread_mutex_t lock;
	struct open_file *open;		/* protected by lock */
};

static struct cache_object *open_obj(const struct fuse_file_info *fi)
{
	return ((struct open_file *)(uintptr_t)fi->fh)->obj;
}

static struct mount *current(void)
{
	return fuse_get_context()->private_data;
}

static void fill_stat(struct stat *st, const struct ns_attr *a, const struct mount *m)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = a->is_dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = a->is_dir ? 2 : 1;
	st->st_size = (off_t)a->size;
	st->st_blksize = 1 << 20;
	st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
	st->st_mtime = st->st_ctime = st->st_atime = a->mtime;
	st->st_uid = m->uid;
	st->st_gid = m->gid;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct ns_attr a;
	if (fi && fi->fh) {
		struct cache_object *obj = open_obj(fi);
		a.is_dir = false;
		a.size = cache_object_size(obj);
		a.mtime = cache_object_mtime(obj);
		fill_stat(st, &a, current());
		return 0;
	}
	int err = ns_getattr(current()->ns, path, &a);
	if (!err)
		fill_stat(st, &a, current());
	return err;
}

struct fill_ctx {
	void *buf;
	fuse_fill_dir_t filler;
	off_t next;			/* the offset after the entry being filled */
};

static int fill_one(void *arg, const char *name, const struct ns_attr *attr)
{
	struct fill_ctx *f = arg;
	struct stat st = { .st_mode = attr->is_dir ? S_IFDIR : S_IFREG };
	return f->filler(f->buf, name, &st, ++f->next, 0);
}

/*
 * GDAL reads a data set's directory at every open (to find sidecar
 * files), up to 1,000 names however many it holds, and stats none of
 * them. So a directory is read a reply at a time, from OFFSET on (offsets
 * 1 and 2 follow "." and "..", 2 + i + 1 the i-th entry), not whole at each
 * opendir, and gives names and types only (no READDIRPLUS: op_init), not
 * attributes for the kernel to make an inode of each: in a directory of
 * 3,000 files, a warm chip cost the daemon 9 ms of CPU with both, about
 * 1 ms with neither. A stat after a readdir is one lookup, answered from
 * memory.
 */
static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct fill_ctx f = { buf, filler, offset };
	(void)fi; (void)flags;
	if (offset < 1 && filler(buf, ".", NULL, ++f.next, 0))
		return 0;
	if (offset < 2 && filler(buf, "..", NULL, ++f.next, 0))
		return 0;
	return ns_readdir(current()->ns, path, (size_t)(f.next - 2), fill_one, &f);
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct cache_object *obj;
	bool unchanged, older_open;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	int err = ns_open(current()->ns, path, &obj, &unchanged, &older_open);
	if (err)
		return err;
	struct mount *m = current();
	struct open_file *f = calloc(1, sizeof(*f));
	if (!f) {
		cache_object_unref(obj);
		return -ENOMEM;
	}
	f->obj = obj;
	pthread_mutex_lock(&m->lock);
	f->next = m->open;
	if (m->open)
		m->open->prev = f;
	m->open = f;
	pthread_mutex_unlock(&m->lock);
	fi->fh = (uint64_t)(uintptr_t)f;
	/* Page-cache pages belong to the inode, shared by every open file:
	 * a new version drops them (keep_cache off), and while a file of an
	 * older version is still open the new one bypasses them (direct_io),
	 * so neither sees the other's bytes. A tiled TIFF bypasses them too:
	 * the kernel would round each read out to pages and read ahead of
	 * it, into tiles nobody asked for; its units are on local disk
	 * anyway. (Such a file can be mmap'ed MAP_PRIVATE; MAP_SHARED needs a
	 * kernel and libfuse that allow mmap with direct I/O.) Once every unit
	 * of it is cached, though, readahead costs no request and the page
	 * cache makes hits nearly free: it is read through the page cache. */
	fi->keep_cache = unchanged && !older_open;
	fi->direct_io = older_open ||
			(cache_object_tiled(obj) && !cache_object_complete(m->cache, obj));
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct cache_object *obj = open_obj(fi);
	(void)path;
	/* readers are told apart by process: a DataLoader's workers each scan */
	return (int)cache_read(current()->cache, obj, (uint64_t)fuse_get_context()->pid, buf,
			       size, (uint64_t)off);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct mount *m = current();
	struct open_file *f = (struct open_file *)(uintptr_t)fi->fh;
	pthread_mutex_lock(&m->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		m->open = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&m->lock);
	cache_object_unref(f->obj);
	free(f);
	return 0;
}

/* INSPECT_XATTR_OBJECT: "ID<TAB>CACHE_DIR", for tilefs inspect. */
static int op_getxattr(const char *path, const char *name, char *value, size_t size)
{
	struct cache_object *obj;
	bool unchanged, older_open;
	char text[4200];

	if (strcmp(name, INSPECT_XATTR_OBJECT) != 0)
		return -ENODATA;
	int err = ns_open(current()->ns, path, &obj, &unchanged, &older_open);
	if (err)
		return err == -EISDIR ? -ENODATA : err;
	int n = snprintf(text, sizeof(text), "%lld\t%s", (long long)cache_object_id(obj),
			 cache_dir(current()->cache));
	cache_object_unref(obj);
	if (size == 0)
		return n;
	if ((size_t)n > size)
		return -ERANGE;
	memcpy(value, text, (size_t)n);
	return n;
}

static int op_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	memset(st, 0, sizeof(*st));
	st->f_bsize = st->f_frsize = 4096;
	st->f_namemax = 255;
	return 0;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct mount *m = fuse_get_context()->private_data;
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = m->cfg.ttl_s;
	cfg->kernel_cache = 0;	/* per open, from the version: see op_open */
	/* the kernel takes the smaller of this and the mount's read_ahead_kb
	 * (raise_readahead()); tiled files not yet complete use direct_io */
	conn->max_readahead = READAHEAD_KB << 10;
	/* names and types only (see op_readdir) */
	conn->want &= ~(unsigned)(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	return m;
}

static const struct fuse_operations ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.getxattr = op_getxattr,
	.statfs = op_statfs,
};

int mount_check_options(const char *fuse_opts)
{
	static const struct fuse_operations none;
	char opts[8192];

	if (!fuse_opts || !*fuse_opts)
		return 0;
	snprintf(opts, sizeof(opts), "ro,%s", fuse_opts);
	char *argv[] = { "tilefs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	/* libfuse reports unknown options on stderr itself: keep it quiet */
	fflush(stderr);
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
	if (null >= 0)
		dup2(null, STDERR_FILENO);
	struct fuse *f = fuse_new(&args, &none, sizeof(none), NULL);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, STDERR_FILENO);
		close(saved);
	}
	if (null >= 0)
		close(null);
	fuse_opt_free_args(&args);
	if (!f)
		return -EINVAL;
	fuse_destroy(f);
	return 0;
}

/* Is WORD one of the comma-separated words of LIST? */
static bool has_word(const char *list, const char *word)
{
	size_t len = strlen(word);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && strncmp(p, word, len) == 0)
			return true;
		p += n;
		p += *p == ',';
	}
	return false;
}

/* Does fuse.conf at PATH have a user_allow_other line (fusermount3's rule:
 * the word alone on its line, blanks around it allowed)? */
static bool conf_allows_other(const char *path)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		size_t n = strcspn(p, " \t\r\n#");
		found = n == 16 && strncmp(p, "user_allow_other", 16) == 0 &&
			p[n + strspn(p + n, " \t\r\n")] == '\0';
	}
	fclose(f);
	return found;
}

int mount_check_allowed(const char *fuse_opts, const char *fuse_conf, char *why,
			size_t why_size)
{
	const char *opt = NULL;
	if (geteuid() == 0)
		return 0;
	if (fuse_opts && has_word(fuse_opts, "allow_other"))
		opt = "allow_other";
	else if (fuse_opts && has_word(fuse_opts, "allow_root"))
		opt = "allow_root";
	if (opt && !conf_allows_other(fuse_conf)) {
		snprintf(why, why_size,
			 "-o %s: a user other than root needs the line 'user_allow_other' in "
			 "%s (root can add it), or mount without %s (only you will see the "
			 "files)", opt, fuse_conf, opt);
		return -EPERM;
	}
	/* libfuse opens it itself before it would ask fusermount3 */
	if (access("/dev/fuse", R_OK | W_OK) != 0) {
		snprintf(why, why_size,
			 "a user other than root needs read and write access to /dev/fuse "
			 "(%s; Debian makes it mode 0666), or mount as root", strerror(errno));
		return -EPERM;
	}
	return 0;
}

/* Unescape a /proc/self/mountinfo field in place (\040 for a blank...). */
static void mountinfo_unescape(char *s)
{
	char *out = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/*
 * A FUSE mount starts with the kernel's default readahead (128 KiB), so a
 * read of a 1 MiB tile through the page cache costs eight requests, each a
 * round trip through this daemon. Raise it to READAHEAD_KB for the mount at
 * REALPATH (just mounted): found in /proc/self/mountinfo, set in sysfs,
 * which only root may write. Serving data is unchanged either way.
 */
static void raise_readahead(const char *realpath_)
{
	char line[8192], sysfs[64] = "";
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": the last match is ours */
	while (fgets(line, sizeof(line), f)) {
		char dev[32], point[4096];
		if (sscanf(line, "%*s %*s %31s %*s %4095s", dev, point) == 2) {
			mountinfo_unescape(point);
			if (strcmp(point, realpath_) == 0)
				snprintf(sysfs, sizeof(sysfs), "/sys/class/bdi/%s/read_ahead_kb", dev);
		}
	}
	fclose(f);
	int fd = *sysfs ? open(sysfs, O_WRONLY | O_CLOEXEC) : -1;
	char kb[16];
	int n = snprintf(kb, sizeof(kb), "%d", READAHEAD_KB);
	if (fd < 0 || write(fd, kb, (size_t)n) != n)
		log_info("kernel readahead on %s stays at its default (%s: %s); raising it to "
			 "%d KiB needs root: reads of cached files then cost more requests",
			 realpath_, *sysfs ? sysfs : "/proc/self/mountinfo",
			 *sysfs ? strerror(errno) : "mount not found", READAHEAD_KB);
	if (fd >= 0)
		close(fd);
}

int mount_new(const struct mount_config *cfg, struct namespace *ns, struct cache *cache,
	      struct mount **out)
{
	struct mount *m = calloc(1, sizeof(*m));
	char opts[8192];
	int err = -EIO;

	if (!m)
		return -ENOMEM;
	m->cfg = *cfg;
	m->uid = getuid();
	m->gid = getgid();
	m->ns = ns;
	m->cache = cache;
	pthread_mutex_init(&m->lock, NULL);
	snprintf(opts, sizeof(opts), "ro,fsname=%s,subtype=tilefs%s%s",
		 cfg->fsname, cfg->fuse_opts ? "," : "",
		 cfg->fuse_opts ? cfg->fuse_opts : "");
	char *argv[] = { "tilefs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	m->fuse = fuse_new(&args, &ops, sizeof(ops), m);
	fuse_opt_free_args(&args);
	if (!m->fuse) {
		log_error("cannot set up FUSE with options '%s'", opts);
		goto fail;
	}
	/* resolved before mounting: afterwards the path leads into the mount */
	char *real = realpath(cfg->mountpoint, NULL);
	if (fuse_mount(m->fuse, cfg->mountpoint) != 0) {
		log_error("cannot mount on %s", cfg->mountpoint);
		free(real);
		goto fail_mount;
	}
	if (real)
		raise_readahead(real);
	free(real);
	if (fuse_set_signal_handlers(fuse_get_session(m->fuse)) != 0) {
		fuse_unmount(m->fuse);
		goto fail_mount;
	}
	*out = m;
	return 0;

fail_mount:
	fuse_destroy(m->fuse);
fail:
	pthread_mutex_destroy(&m->lock);
	free(m);
	return err;
}

int mount_run(struct mount *m)
{
	struct fuse_loop_config *loop = fuse_loop_cfg_create();
	if (!loop)
		return -ENOMEM;
	/* a read may wait long on a slow origin: others must not queue behind it */
	fuse_loop_cfg_set_max_threads(loop, MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(loop, 16);
	int rc = fuse_loop_mt(m->fuse, loop);
	fuse_loop_cfg_destroy(loop);
	return rc == 0 ? 0 : -EIO;
}

void mount_free(struct mount *m)
{
	if (!m)
		return;
	fuse_remove_signal_handlers(fuse_get_session(m->fuse));
	fuse_unmount(m->fuse);
	fuse_destroy(m->fuse);
	while (m->open) {
		struct open_file *f = m->open;
		m->open = f->next;
		cache_object_unref(f->obj);
		free(f);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}
