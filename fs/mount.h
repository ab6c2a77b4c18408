/*
 * mount.h - the FUSE front: serves a namespace and a cache at a mountpoint
 * until it is unmounted.
 *
 * Layer: the FUSE front (fs/), over cache/ only: includes cache/ and
 * libfuse, never tools/ (tests/check-layers). The mount command
 * (tools/mount_cmd.c) starts it.
 */
#ifndef TILEFS_MOUNT_H
#define TILEFS_MOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache;
struct namespace;

struct mount_config {
	const char *mountpoint;
	const char *fsname;		/* shown in /proc/mounts */
	const char *fuse_opts;		/* extra -o words, or NULL */
	int ttl_s;			/* kernel entry/attr/negative caching */
	bool passthrough;		/* sealed files read by the kernel (passthrough.h) */
	/* The extended attribute of every file that names its object, as
	   "ID<TAB>CACHE_DIR": the object's id in the index of that cache dir
	   (for tilefs inspect, which owns the name). NULL: none. */
	const char *object_xattr;
	/* The extended attribute of the root directory that names the mount's
	   control socket (fs/control.h), for tilefs hint. NULL: no socket. */
	const char *hint_xattr;
	uint64_t hint_budget;		/* bytes a hint fetches ahead at most */
	const char *record_file;	/* --record (fs/record.h), or NULL */
};

/*
 * Mount. 0 or -errno (message logged). After success, call mount_run()
 * to serve until unmounted, then mount_free().
 */
struct mount;
/* Would FUSE accept these -o words (NULL: none)? 0 or -EINVAL. Quiet. */
int mount_check_options(const char *fuse_opts);
/*
 * May this user mount with these -o words? A user other than root needs
 * access to /dev/fuse, and a user_allow_other line in FUSE_CONF
 * (/etc/fuse.conf) for allow_other or allow_root: without them, -EPERM and
 * what to do in why.
 */
int mount_check_allowed(const char *fuse_opts, const char *fuse_conf, char *why,
			size_t why_size);
int mount_new(const struct mount_config *cfg, struct namespace *ns, struct cache *cache,
	      struct mount **out);
/* Serve requests until unmounted or stopped by SIGTERM, SIGINT or SIGHUP
 * (then 0: a clean stop), or a real error (-errno). */
int mount_run(struct mount *m);
void mount_free(struct mount *m);

#endif
