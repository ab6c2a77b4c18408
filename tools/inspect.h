/*
 * inspect.h - `tilefs inspect PATH`: what tilefs knows of an object.
 */
#ifndef TILEFS_INSPECT_H
#define TILEFS_INSPECT_H

/* Extended attribute of every file in a mount: "ID<TAB>CACHE_DIR", the
 * object's id in the index of that cache dir. The mount command gives this
 * name to the FUSE front (struct mount_config, fs/mount.h), which answers
 * it, and inspect reads it: the one contract between the two. */
#define INSPECT_XATTR_OBJECT "user.tilefs.object"

/* ARGV after "inspect". Returns the exit status. */
int inspect_main(int argc, char **argv);

#endif
