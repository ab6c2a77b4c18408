/*
 * mount.c - see mount.h. libfuse's low-level callbacks on top of the
 * namespace (names, versions) and the cache (bytes); inode numbers stand
 * for paths (fs/inodes.h). The kernel caches entries, attributes and
 * missing names for --ttl seconds, keeps file pages across opens while the
 * object's version is unchanged, and keeps directory entries while the
 * directory's mtime is unchanged.
 */
#define FUSE_USE_VERSION 312
#include "fs/mount.h"
#include "fs/control.h"
#include "fs/init_ext.h"
#include "fs/inodes.h"
#include "fs/passthrough.h"
#include "fs/record.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/namespace/namespace.h"

#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_THREADS 64
#define READAHEAD_KB 1024	/* as conn->max_readahead: see ll_init */
#define PATH_SIZE 4352		/* PATH_MAX, and a name */
#define UNKNOWN_INO 0xffffffff	/* readdir makes no inode: libfuse's number for that */

/* An open file. The kernel may not send every release before unmounting,
 * so the mount keeps them all and drops what is left at the end. */
struct open_file {
	struct cache_object *obj;
	fuse_ino_t ino;
	enum io_mode mode;		/* passthrough.h */
	bool exact;			/* its reads come here as the reader made
					   them (direct I/O): the hint and the
					   record follow them (else the hint
					   follows the open) */
	struct record_open *rec;	/* --record, or NULL */
	struct open_file *prev, *next;	/* protected by mount->lock */
};

struct mount {
	struct mount_config cfg;
	struct namespace *ns;
	struct cache *cache;
	struct inodes *inodes;
	struct fuse_session *se;
	pthread_t loop_thread;		/* runs mount_run(): its own name back at init */
	char loop_name[16];
	struct passthrough *pt;
	struct control *control;	/* the hint socket, or NULL */
	struct record *record;		/* --record, or NULL */
	bool no_opendir;		/* the kernel opens directories itself */
	struct init_ext init;		/* flags libfuse cannot name */
	pthread_mutex_t pages_lock;	/* pages_of() */
	uid_t uid;			/* every file's owner: who mounted */
	gid_t gid;
	pthread_mutex_t lock;
	struct open_file *open;		/* protected by lock */
};

static struct cache_object *open_obj(const struct fuse_file_info *fi)
{
	return ((struct open_file *)(uintptr_t)fi->fh)->obj;
}

static struct mount *mount_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_stat(struct stat *st, fuse_ino_t ino, const struct ns_attr *a,
		      const struct mount *m)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = a->is_dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = a->is_dir ? 2 : 1;
	st->st_size = (off_t)a->size;
	st->st_blksize = 1 << 20;
	st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
	st->st_mtim = st->st_ctim = st->st_atim = a->mtime;
	st->st_uid = m->uid;
	st->st_gid = m->gid;
}

/* The path of NAME in the directory PARENT, in BUF (PATH_SIZE bytes). */
static int child_path(struct mount *m, fuse_ino_t parent, const char *name, char *buf)
{
	const char *dir = inodes_path(m->inodes, parent);
	if (!dir)
		return -ESTALE;
	int n = snprintf(buf, PATH_SIZE, "%s%s%s", dir, *dir ? "/" : "", name);
	return n < 0 || n >= PATH_SIZE ? -ENAMETOOLONG : 0;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount *m = mount_of(req);
	struct fuse_entry_param e = { .attr_timeout = m->cfg.ttl_s,
				      .entry_timeout = m->cfg.ttl_s };
	char path[PATH_SIZE];
	struct ns_attr a;

	int err = child_path(m, parent, name, path);
	if (!err)
		err = ns_getattr(m->ns, path, &a);
	if (err == -ENOENT) {
		fuse_reply_entry(req, &e);	/* ino 0: missing, for --ttl */
		return;
	}
	if (!err && !(e.ino = inodes_lookup(m->inodes, path)))
		err = -ENOMEM;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fill_stat(&e.attr, e.ino, &a, m);
	if (fuse_reply_entry(req, &e) != 0)
		inodes_forget(m->inodes, e.ino, 1);	/* interrupted: never counted */
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	inodes_forget(mount_of(req)->inodes, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		inodes_forget(mount_of(req)->inodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount *m = mount_of(req);
	struct ns_attr a;
	struct stat st;
	int err = 0;

	if (fi && fi->fh) {
		/* the mtime a stat of the path shows: another would make the
		 * kernel drop the file's cached pages (FUSE_CAP_AUTO_INVAL_DATA) */
		ns_open_attr(m->ns, inodes_path(m->inodes, ino), open_obj(fi), &a);
	} else {
		const char *path = inodes_path(m->inodes, ino);
		err = path ? ns_getattr(m->ns, path, &a) : -ESTALE;
	}
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fill_stat(&st, ino, &a, m);
	fuse_reply_attr(req, &st, m->cfg.ttl_s);
}

/*
 * GDAL reads a data set's directory at every open (to find sidecar
 * files), up to 1,000 names however many it holds, and stats none of
 * them. So the kernel keeps a directory's entries (no opendir reaches
 * this daemon, and it caches what readdir gave) until the directory's
 * mtime changes: the namespace moves it when a listing changes the names
 * and when the listing is older than --ttl (the kernel asks for it again
 * after --ttl, and then reads the entries again, which lists the
 * directory). A warm open then costs the daemon an open and a release, no
 * directory requests. A kernel without that gets the same entries read a
 * reply at a time.
 */
static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (mount_of(req)->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fuse_reply_open(req, fi);
}

struct fill_ctx {
	fuse_req_t req;
	char *buf;
	size_t size, len;
	off_t next;			/* the offset after the entry being filled */
};

/* Add NAME to the reply; nonzero once it is full. */
static int fill_name(struct fill_ctx *f, const char *name, bool is_dir)
{
	struct stat st = { .st_ino = UNKNOWN_INO, .st_mode = is_dir ? S_IFDIR : S_IFREG };
	size_t need = fuse_add_direntry(f->req, f->buf + f->len, f->size - f->len, name, &st,
					f->next + 1);
	if (need > f->size - f->len)
		return 1;
	f->len += need;
	f->next++;
	return 0;
}

static int fill_one(void *arg, const char *name, const struct ns_attr *attr)
{
	return fill_name(arg, name, attr->is_dir);
}

/*
 * Names and types only, from OFFSET on (offsets 1 and 2 follow "." and
 * "..", 2 + i + 1 the i-th entry), a reply at a time, and no READDIRPLUS
 * (ll_init): attributes would make the kernel build an inode of every
 * entry, and GDAL, which reads a directory at every open, stats none of
 * them. A stat after a readdir is one lookup, answered from memory.
 */
static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		       struct fuse_file_info *fi)
{
	struct mount *m = mount_of(req);
	struct fill_ctx f = { req, malloc(size), size, 0, offset };
	const char *path;
	int err = 0;
	(void)fi;

	if (!f.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (offset < 1 && fill_name(&f, ".", true))
		goto reply;
	if (offset < 2 && fill_name(&f, "..", true))
		goto reply;
	path = inodes_path(m->inodes, ino);
	err = path ? ns_readdir(m->ns, path, (size_t)(f.next - 2), fill_one, &f) : -ESTALE;
reply:
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, f.buf, f.len);
	free(f.buf);
}

/* Forget the open file F and its pin on the object. */
static void open_file_drop(struct mount *m, struct open_file *f)
{
	pthread_mutex_lock(&m->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		m->open = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&m->lock);
	passthrough_released(m->pt, f->ino, f->mode);
	record_close(m->record, f->rec);
	cache_object_unref(f->obj);
	free(f);
}

/*
 * The kernel's page cache is the inode's, shared by all its opens, and a
 * map of any of them fills it (one with direct I/O too). So an inode is
 * open in one version at a time (passthrough.h, rule 3: an open of
 * another version gets a new inode), and before the first open of a
 * version that is not the one the inode's pages may hold is answered,
 * those pages go (the kernel drops them while this waits). No open of it,
 * nor a map, then sees another version's pages, and every open may keep
 * the pages of its own. False if they could not be dropped: the open
 * must not keep them.
 */
static bool pages_of(struct mount *m, fuse_ino_t ino, int64_t object_id)
{
	pthread_mutex_lock(&m->pages_lock);
	int err = inodes_pages_of(m->inodes, ino, object_id) ? 0 :
		  fuse_lowlevel_notify_inval_inode(m->se, ino, 0, 0);
	pthread_mutex_unlock(&m->pages_lock);
	return err == 0 || err == -ENOENT;	/* ENOENT: the kernel holds no pages */
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount *m = mount_of(req);
	struct cache_object *obj;
	bool unchanged, older_open;	/* unused: pages_of() and rule 3 decide */

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	const char *path = inodes_path(m->inodes, ino);
	int err = path ? ns_open(m->ns, path, &obj, &unchanged, &older_open) : -ESTALE;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	struct open_file *f = calloc(1, sizeof(*f));
	if (!f) {
		cache_object_unref(obj);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	f->obj = obj;
	f->ino = ino;
	f->rec = record_open(m->record, path, obj);
	/* A tiled TIFF not cached whole is read with direct I/O, so its reads
	 * reach cache_read() as the reader made them: through the page cache
	 * they would come rounded out to pages, and be read ahead of, into
	 * tiles nobody asked for. Linux 6.6 on maps such a file MAP_SHARED too
	 * (FUSE_DIRECT_IO_ALLOW_MMAP, asked for by ll_init); an older kernel
	 * refuses (ENODEV, as ll_init logs), maps it MAP_PRIVATE, and maps it
	 * either way once cached whole. Once every unit of it is cached,
	 * readahead costs no request and the page cache makes hits nearly
	 * free: it is read through the page cache. Better still, once this
	 * process has checked all of it (sealed), the kernel reads it from its
	 * data file, pinned while open: no request reaches this daemon until
	 * the release (passthrough.h). While recording (which turns
	 * passthrough off), a tiled TIFF is read with direct I/O throughout
	 * where it can be: the kernel's readahead would add tiles nobody read
	 * to the record. */
	enum io_mode mode = cache_object_tiled(obj) &&
		(f->rec || !cache_object_complete(m->cache, obj)) ? IO_DIRECT : IO_CACHED;
	int64_t id = cache_object_id(obj);
	int backing = -1;
	if (passthrough_may(m->pt, ino, id)) {
		int pin = cache_object_pin(m->cache, obj);
		if (pin >= 0 && (backing = passthrough_open(m->pt, ino, id, pin)) == -EBUSY)
			mode = IO_DIRECT;	/* page-cache opens of it drain first */
	}
	bool passes = backing >= 0;	/* by its own passthrough open */
	int got = passes ? IO_PASSED :
		  backing == -ESTALE ? -ESTALE : passthrough_count(m->pt, ino, id, mode, &backing);
	if (got < 0) {
		/* -ESTALE: the inode is open in another version (passthrough.h,
		 * rule 3), whose pages the kernel would give this open too, or
		 * whose backing file it would read and map. So the path gets a
		 * new inode: ESTALE makes the kernel look it up again and retry
		 * the open, once, which then opens the new inode. */
		if (got == -ESTALE)
			inodes_retire(m->inodes, ino);
		record_close(NULL, f->rec);
		free(f);
		cache_object_unref(obj);
		fuse_reply_err(req, -got);
		return;
	}
	f->mode = (enum io_mode)got;
	f->exact = f->mode == IO_DIRECT || (f->mode == IO_PASSED && !passes);
	pthread_mutex_lock(&m->lock);
	f->next = m->open;
	if (m->open)
		m->open->prev = f;
	m->open = f;
	pthread_mutex_unlock(&m->lock);
	fi->fh = (uint64_t)(uintptr_t)f;
	if (!f->exact)
		cache_hint_opened(m->cache, obj);	/* its reads do not tell */
	if (passes)
		cache_object_passed(m->cache, obj);
	if (f->mode == IO_PASSED) {
		/* by its own passthrough open; or others of this inode pass
		   through to this version's file, so it must name it, and
		   direct I/O keeps its reads coming here. Either way the
		   kernel neither reads nor maps the inode's pages. */
		err = passthrough_reply_open(req, fi, backing, f->exact);
	} else {
		fi->keep_cache = pages_of(m, ino, id);
		fi->direct_io = f->exact;
		err = fuse_reply_open(req, fi);
	}
	if (err)
		open_file_drop(m, f);	/* interrupted: no release will come */
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct mount *m = mount_of(req);
	char *buf = malloc(size ? size : 1);
	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* readers are told apart by process: a DataLoader's workers each scan */
	ssize_t n = cache_read(m->cache, open_obj(fi), (uint64_t)fuse_req_ctx(req)->pid, buf, size,
			       (uint64_t)off);
	if (n > 0) {
		struct open_file *f = (struct open_file *)(uintptr_t)fi->fh;
		if (f->exact)
			cache_hint_read(m->cache, f->obj, (uint64_t)off, (size_t)n);
		record_read(f->rec, (uint64_t)off, (size_t)n);
	}
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	open_file_drop(mount_of(req), (struct open_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* cfg->object_xattr: "ID<TAB>CACHE_DIR", and on the root cfg->hint_xattr:
 * the control socket's path (mount.h); no other attribute. */
static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mount *m = mount_of(req);
	struct cache_object *obj;
	bool unchanged, older_open;
	char text[4500];

	if (m->control && ino == FUSE_ROOT_ID && m->cfg.hint_xattr &&
	    strcmp(name, m->cfg.hint_xattr) == 0) {
		const char *path = control_socket_path(m->control);
		size_t len = strlen(path);
		if (size == 0)
			fuse_reply_xattr(req, len);
		else if (len > size)
			fuse_reply_err(req, ERANGE);
		else
			fuse_reply_buf(req, path, len);
		return;
	}
	if (!m->cfg.object_xattr || strcmp(name, m->cfg.object_xattr) != 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	const char *path = inodes_path(m->inodes, ino);
	int err = path ? ns_open(m->ns, path, &obj, &unchanged, &older_open) : -ESTALE;
	if (err) {
		fuse_reply_err(req, err == -EISDIR ? ENODATA : -err);
		return;
	}
	int n = snprintf(text, sizeof(text), "%lld\t%s", (long long)cache_object_id(obj),
			 cache_dir(m->cache));
	cache_object_unref(obj);
	if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else if ((size_t)n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, text, (size_t)n);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	(void)ino;
	memset(&st, 0, sizeof(st));
	st.f_bsize = st.f_frsize = 4096;
	st.f_namemax = 255;
	fuse_reply_statfs(req, &st);
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mount *m = userdata;
	pthread_setname_np(m->loop_thread, m->loop_name);	/* see mount_run() */
	/* the kernel takes the smaller of this and the mount's read_ahead_kb
	 * (raise_readahead()); tiled files not yet complete use direct_io */
	conn->max_readahead = READAHEAD_KB << 10;
	/* names and types only (see ll_readdir) */
	conn->want &= ~(unsigned)(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	/* a changed mtime drops cached pages and directory entries */
	conn->want |= conn->capable & FUSE_CAP_AUTO_INVAL_DATA;
	m->no_opendir = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (passthrough_init(conn, m->cfg.passthrough))
		init_ext_ask(&m->init, INIT_EXT_PASSTHROUGH);
	/* maps of files read with direct I/O (ll_open) */
	if (init_ext_offered(&m->init, INIT_EXT_DIRECT_IO_ALLOW_MMAP))
		init_ext_ask(&m->init, INIT_EXT_DIRECT_IO_ALLOW_MMAP);
	else
		log_warn("this kernel cannot map a file read with direct I/O MAP_SHARED (no "
			 "FUSE_DIRECT_IO_ALLOW_MMAP: Linux before 6.6): a tiled TIFF not cached "
			 "whole, read so that a window fetches only its tiles, maps "
			 "MAP_PRIVATE only (MAP_SHARED: ENODEV); tilefs warm it first, or run "
			 "Linux 6.6 or later");
}

/* libfuse's own I/O on /dev/fuse, but with the INIT flags libfuse cannot
 * name (init_ext.h): the kernel's offer is read from its INIT request, and
 * the INIT reply may ask for passthrough and shared maps of direct-I/O
 * files. */
static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	struct mount *m = userdata;
	ssize_t n = read(fd, buf, len);
	init_ext_request(&m->init, buf, n);
	return n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct mount *m = userdata;
	uint64_t asked = init_ext_reply(&m->init, iov, count);
	if (asked & INIT_EXT_PASSTHROUGH)
		passthrough_started(m->pt);
	return writev(fd, iov, count);
}

static const struct fuse_lowlevel_ops ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.open = ll_open,
	.read = ll_read,
	.release = ll_release,
	.getxattr = ll_getxattr,
	.statfs = ll_statfs,
};

int mount_check_options(const char *fuse_opts)
{
	static const struct fuse_lowlevel_ops none;
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
	struct fuse_session *se = fuse_session_new(&args, &none, sizeof(none), NULL);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, STDERR_FILENO);
		close(saved);
	}
	if (null >= 0)
		close(null);
	fuse_opt_free_args(&args);
	if (!se)
		return -EINVAL;
	fuse_session_destroy(se);
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
	pthread_mutex_init(&m->pages_lock, NULL);
	snprintf(opts, sizeof(opts), "ro,fsname=%s,subtype=tilefs%s%s",
		 cfg->fsname, cfg->fuse_opts ? "," : "",
		 cfg->fuse_opts ? cfg->fuse_opts : "");
	char *argv[] = { "tilefs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	m->se = fuse_session_new(&args, &ops, sizeof(ops), m);
	fuse_opt_free_args(&args);
	if (!m->se || inodes_new(&m->inodes) != 0) {
		log_error("cannot set up FUSE with options '%s'", opts);
		goto fail;
	}
	/* resolved before mounting: afterwards the path leads into the mount */
	char *real = realpath(cfg->mountpoint, NULL);
	if (fuse_session_mount(m->se, cfg->mountpoint) != 0) {
		log_error("cannot mount on %s", cfg->mountpoint);
		free(real);
		goto fail;
	}
	if (real)
		raise_readahead(real);
	if (cfg->record_file && record_new(cfg->record_file, &m->record) != 0) {
		free(real);
		fuse_session_unmount(m->se);
		goto fail;
	}
	if (cfg->hint_xattr && control_start(ns, cache, real ? real : cfg->mountpoint,
					     cfg->hint_budget, &m->control) != 0)
		log_warn("no hints on %s: tilefs hint will not reach it", cfg->mountpoint);
	free(real);
	static const struct fuse_custom_io dev_io = { .read = dev_read, .writev = dev_writev };
	int fd = fuse_session_fd(m->se);
	if (!(m->pt = passthrough_new(m->se)) || fuse_session_custom_io(m->se, &dev_io, fd) != 0 ||
	    fuse_set_signal_handlers(m->se) != 0) {
		fuse_session_unmount(m->se);
		goto fail;
	}
	*out = m;
	return 0;

fail:
	control_stop(m->control);
	record_free(m->record);
	if (m->se)
		fuse_session_destroy(m->se);
	passthrough_free(m->pt);
	inodes_free(m->inodes);
	pthread_mutex_destroy(&m->pages_lock);
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
	/* libfuse's workers take the name of the thread that starts them:
	   this one starts the first, which starts the rest (ll_init renames
	   this one back), so top -H and perf show them apart */
	m->loop_thread = pthread_self();
	pthread_getname_np(m->loop_thread, m->loop_name, sizeof(m->loop_name));
	pthread_setname_np(m->loop_thread, "tilefs-fuse");
	int rc = fuse_session_loop_mt(m->se, loop);
	pthread_setname_np(m->loop_thread, m->loop_name);
	fuse_loop_cfg_destroy(loop);
	/* stopped by SIGTERM, SIGINT or SIGHUP (libfuse's handlers return
	   the signal's number): a clean stop, as an unmount is */
	return rc == 0 || rc == SIGTERM || rc == SIGINT || rc == SIGHUP ? 0 : -EIO;
}

void mount_free(struct mount *m)
{
	if (!m)
		return;
	control_stop(m->control);	/* its hint fetches need the client */
	fuse_remove_signal_handlers(m->se);
	fuse_session_unmount(m->se);
	fuse_session_destroy(m->se);
	inodes_free(m->inodes);
	while (m->open) {
		struct open_file *f = m->open;
		m->open = f->next;
		record_close(m->record, f->rec);
		cache_object_unref(f->obj);
		free(f);
	}
	record_free(m->record);
	passthrough_free(m->pt);
	pthread_mutex_destroy(&m->pages_lock);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
