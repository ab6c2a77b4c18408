/*
 * mount_lookup.c - see mount_lookup.h. The kernel's word (statfs,
 * /proc/self/mountinfo) says whether a path is in a tilefs mount and whose;
 * only then is the mount asked for its control socket, whose path names its
 * cache dir and process, and the process's file in CACHE_DIR/mounts its
 * source.
 */
#include "tools/mount_lookup.h"
#include "cache/store/mounts.h"
#include "tools/hint.h"
#include "tools/options.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define FUSE_SUPER_MAGIC 0x65735546
#define MOUNTS_READ 64			/* mount files read: the running ones come first */

/* FIELD of mountinfo (the kernel escapes ' ', '\t', '\n' and '\\' as \ooo)
 * up to its blank, unescaped into OUT (SIZE bytes); -ENAMETOOLONG. */
static int unescape_field(const char *field, char *out, size_t size)
{
	size_t o = 0;
	for (const char *p = field; *p && *p != ' ' && *p != '\n'; p++) {
		char c = *p;
		if (c == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			c = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		}
		if (o + 1 >= size)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/*
 * LINE of /proc/self/mountinfo, "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS
 * [TAGS...] - TYPE SOURCE SUPER_OPTIONS": if it is the mount of device DEV
 * and of type fuse.tilefs, set *OWNER to its user_id= (the user who
 * mounted it) and MOUNTPOINT (if not NULL), and return 0; else -ENOENT.
 */
static int mountinfo_owner(const char *line, dev_t dev, uid_t *owner, char *mountpoint,
			   size_t size)
{
	unsigned maj, min;
	int n = 0;

	if (sscanf(line, "%*u %*u %u:%u %n", &maj, &min, &n) != 2 || n == 0 ||
	    makedev(maj, min) != dev)
		return -ENOENT;
	const char *type = strstr(line + n, " - ");
	if (!type || strncmp(type + 3, "fuse.tilefs ", 12) != 0)
		return -ENOENT;
	const char *at = strchr(line + n, ' ');	/* after ROOT */
	if (mountpoint && (!at || unescape_field(at + 1, mountpoint, size) != 0))
		return -ENOENT;
	const char *opts = strchr(type + 15, ' ');	/* after SOURCE */
	for (const char *p = opts ? opts + 1 : NULL; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (strncmp(p, "user_id=", 8) != 0 || !isdigit((unsigned char)p[8]))
			continue;
		char *end;
		errno = 0;
		unsigned long uid = strtoul(p + 8, &end, 10);
		if (errno || uid > UINT32_MAX || (*end && *end != ',' && *end != '\n'))
			return -ENOENT;
		*owner = (uid_t)uid;
		return 0;
	}
	return -ENOENT;
}

int mount_lookup_fd(int fd, uid_t *owner, char *mountpoint, size_t size)
{
	struct statfs fs;
	struct stat st;
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;

	if (fstatfs(fd, &fs) != 0 || fs.f_type != FUSE_SUPER_MAGIC || fstat(fd, &st) != 0)
		return -ENOENT;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -ENOENT;
	/* getline: a line is as long as the kernel makes it (a few escaped
	 * paths of PATH_MAX at most), never cut in two */
	while (err == -ENOENT && getline(&line, &cap, f) > 0)
		err = mountinfo_owner(line, st.st_dev, owner, mountpoint, size);
	free(line);
	fclose(f);
	return err;
}

int mount_lookup_socket(const char *root, char *path, size_t size)
{
	ssize_t n = getxattr(root, HINT_XATTR_SOCKET, path, size - 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENODATA;
	path[n] = '\0';
	return 0;
}

/* SOCK is CACHE_DIR/mounts/PID.hint.sock: fill OUT's cache_dir and pid. */
static int from_socket(const char *sock, struct mount_found *out)
{
	const char *name = strrchr(sock, '/');
	char check[MOUNT_LOOKUP_PATH + 16], tail;
	long pid;

	if (!name || sscanf(name, "/%ld.hint.soc%c", &pid, &tail) != 2 || tail != 'k' ||
	    pid <= 0 || name - sock >= (ptrdiff_t)sizeof(out->cache_dir))
		return -EINVAL;
	const char *dir_end = name;
	while (dir_end > sock && dir_end[-1] != '/')
		dir_end--;
	if (dir_end == sock)
		return -EINVAL;
	snprintf(out->cache_dir, sizeof(out->cache_dir), "%.*s", (int)(dir_end - 1 - sock), sock);
	/* the layout is mounts_dir()'s, checked rather than assumed */
	if (mounts_dir(out->cache_dir, check, sizeof(check)) != 0 ||
	    strlen(check) != (size_t)(name - sock) || strncmp(check, sock, strlen(check)) != 0)
		return -EINVAL;
	out->pid = pid;
	return 0;
}

/* OUT->source from the mount's file in its cache dir; left "" if none. */
static void find_source(struct mount_found *out)
{
	struct mount_record *v = calloc(MOUNTS_READ, sizeof(*v));
	size_t n = 0;

	out->source[0] = '\0';
	if (!v)
		return;
	mounts_recent(out->cache_dir, v, MOUNTS_READ, &n);
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == out->pid && v[i].running) {
			snprintf(out->source, sizeof(out->source), "%s", v[i].source);
			break;
		}
	free(v);
}

/* OUT->rel: PATH below OUT->mountpoint. */
static void relative(const char *path, struct mount_found *out)
{
	char *real = realpath(path, NULL);
	size_t mlen = strlen(out->mountpoint);

	out->rel[0] = '\0';
	if (real && strncmp(real, out->mountpoint, mlen) == 0 && real[mlen] == '/')
		snprintf(out->rel, sizeof(out->rel), "%s", real + mlen + 1);
	free(real);
}

int mount_lookup(const char *path, struct mount_found *out, char *why, size_t why_size)
{
	char sock[MOUNT_LOOKUP_PATH + 64];
	int err, fd = open(path, O_PATH | O_CLOEXEC);

	memset(out, 0, sizeof(*out));
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_size, "%s: %s", path, strerror(-err));
		return err == -EACCES ? -EACCES : -ENOENT;
	}
	err = mount_lookup_fd(fd, &out->owner, out->mountpoint, sizeof(out->mountpoint));
	close(fd);
	if (err) {
		snprintf(why, why_size, "%s is not in a tilefs mount", path);
		return -ENOENT;
	}
	if (out->owner != geteuid() && out->owner != 0) {
		snprintf(why, why_size, "%s is in a tilefs mount of uid %ld: only a mount of "
			 "yours or root's names its cache", path, (long)out->owner);
		return -EACCES;
	}
	err = mount_lookup_socket(out->mountpoint, sock, sizeof(sock));
	if (!err)
		err = from_socket(sock, out);
	if (err) {
		snprintf(why, why_size, "the tilefs mount at %s does not name its cache dir (%s)",
			 out->mountpoint, err == -EACCES ? "permission denied" :
			 err == -ENODATA ? "it has no control socket: see its log" :
			 strerror(-err));
		return err == -ENOENT ? -EIO : err;
	}
	relative(path, out);
	find_source(out);
	return 0;
}

/* Is the explicit cache dir GIVEN another dir than the mount's CACHE_DIR? */
static bool other_dir(const char *given, const char *cache_dir)
{
	char *a = realpath(given, NULL), *b = realpath(cache_dir, NULL);
	bool other = strcmp(a ? a : given, b ? b : cache_dir) != 0;
	free(a);
	free(b);
	return other;
}

int mount_lookup_options(struct options *o, const char *cmd)
{
	struct mount_found *m;
	char why[MOUNT_LOOKUP_PATH + 200];
	int status = 1;

	if (strstr(o->source, "://"))
		return 0;
	if (!(m = malloc(sizeof(*m))))
		return 1;
	int err = mount_lookup(o->source, m, why, sizeof(why));
	if (err == -ENOENT) {
		fprintf(stderr, "tilefs: %s: SOURCE '%s' is neither a URL nor a path in a "
			"tilefs mount\nTry 'tilefs %s --help'.\n", cmd, o->source, cmd);
		status = EXIT_USAGE;
		goto out;
	}
	if (err) {
		fprintf(stderr, "tilefs: %s: %s\n", cmd, why);
		goto out;
	}
	if (!m->source[0]) {
		fprintf(stderr, "tilefs: %s: the tilefs mount at %s does not name its source "
			"(no running mount's file in %s/mounts): give its SOURCE URL and "
			"--cache-dir\n", cmd, m->mountpoint, m->cache_dir);
		goto out;
	}
	char *deflt = options_default_cache_dir();
	bool explicit = deflt && strcmp(deflt, o->cache_dir) != 0;
	free(deflt);
	if (explicit && other_dir(o->cache_dir, m->cache_dir)) {
		fprintf(stderr, "tilefs: %s: --cache-dir %s is not the cache dir of the mount "
			"at %s (%s): leave it out\n", cmd, o->cache_dir, m->mountpoint, m->cache_dir);
		status = EXIT_USAGE;
		goto out;
	}
	size_t mlen = strlen(m->mountpoint);
	for (size_t i = 0; i < o->npaths; i++) {
		const char *p = o->paths[i];
		char *joined;
		if (p[0] == '/') {
			if (strncmp(p, m->mountpoint, mlen) != 0 || p[mlen] != '/') {
				fprintf(stderr, "tilefs: %s: %s is not under the mount at %s\n", cmd, p,
					m->mountpoint);
				status = EXIT_USAGE;
				goto out;
			}
			joined = strdup(p + mlen + 1);
		} else if (m->rel[0]) {
			if (asprintf(&joined, "%s/%s", m->rel, p) < 0)
				joined = NULL;
		} else {
			continue;
		}
		if (!joined)
			goto out;
		free(o->paths[i]);
		o->paths[i] = joined;
	}
	if (!o->npaths && m->rel[0]) {
		if (!(o->paths = malloc(sizeof(*o->paths))) ||
		    !(o->paths[0] = strdup(m->rel)))
			goto out;
		o->npaths = 1;
	}
	char *source = strdup(m->source), *cache_dir = strdup(m->cache_dir);
	if (!source || !cache_dir) {
		free(source);
		free(cache_dir);
		goto out;
	}
	free(o->source);
	free(o->cache_dir);
	o->source = source;
	o->cache_dir = cache_dir;
	fprintf(stderr, "tilefs: %s: the mount at %s: %s into %s\n", cmd, m->mountpoint, o->source,
		o->cache_dir);
	status = 0;
out:
	free(m);
	return status;
}
