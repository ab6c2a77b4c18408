/*
 * mount_cmd.h - `tilefs mount SOURCE MOUNTPOINT`: mount a cloud prefix
 * read-only and serve it until unmounted. The command around the FUSE
 * front (fs/mount.h): options, checks, fork, the stack, readiness.
 */
#ifndef TILEFS_MOUNT_CMD_H
#define TILEFS_MOUNT_CMD_H

/* ARGV after "mount". Returns the exit status: in the parent, once the
 * daemon is ready (0) or has failed; in the daemon, when unmounted. */
int mount_cmd_main(int argc, char **argv);

#endif
