/*
 * passthrough.h - FUSE passthrough: the kernel reads an open file's bytes
 * straight from a local file, with no request to this daemon (Linux 6.9
 * and later, CONFIG_FUSE_PASSTHROUGH, a mount by root). What may be read
 * that way, and how it stays right, is the cache's business
 * (cache_object_pin()); this is the FUSE side.
 *
 * Debian 12's libfuse 3.14 has no API for it, so tilefs does the three
 * steps itself: the INIT reply gets the FUSE_PASSTHROUGH flag (fs/mount.c
 * asks fs/init_ext.h for it), a backing file is registered with the
 * FUSE_DEV_IOC_BACKING_OPEN ioctl, and the open reply carries its id
 * (passthrough_reply_open()).
 *
 * The kernel puts each inode in one I/O mode at a time: page cache, or
 * passthrough to one backing file; an open asking for the other fails
 * with EIO, and so does any open, direct I/O included, that does not name
 * the backing file while the inode has one (fs/fuse/iomode.c); an mmap of
 * any open of it maps the backing file. So the opens of an inode are
 * counted here by mode, and all of them, the backing file too, are of one
 * object version:
 *
 *   (1) An open passes through only while no open of the inode uses the
 *       page cache or direct I/O without naming the backing file, and no
 *       open of it passes through to another version (passthrough_open()).
 *       Direct-I/O opens count: the kernel applies each open's answer
 *       when its opener runs, not in the order they were sent, so a
 *       direct-I/O answer sent before a passthrough one may be applied
 *       after it, and then fails (EIO).
 *   (2) An open of the passing version that cannot pass through itself
 *       names the backing file with direct I/O on top, which sends its
 *       reads to the daemon (passthrough_count()).
 *   (3) An open of another version while the inode has opens is refused
 *       with -ESTALE, never counted nor given the backing file: the
 *       caller gives the path an inode of its own (fs/mount.c). Not only
 *       for the backing file: the kernel's page cache is the inode's too,
 *       shared by all its opens, and a map of any of them fills it (direct
 *       I/O included), so two versions open at once on one inode could
 *       be shown each other's pages.
 *
 * Each of passthrough_open() and passthrough_count() checks the inode's
 * opens and counts its own under one lock, so no open of another version
 * can slip in between the check and the count. Every open is counted
 * here, passthrough or not, even on a kernel without passthrough.
 *
 * Layer: the FUSE front (fs/). Includes cache/base/ only (the log).
 */
#ifndef TILEFS_PASSTHROUGH_H
#define TILEFS_PASSTHROUGH_H

#include <stdbool.h>
#include <stdint.h>

struct passthrough;
struct fuse_session;
struct fuse_conn_info;
struct fuse_file_info;
struct fuse_req;

/* For the mounted session SE (fuse_session_fd()). NULL: out of memory. */
struct passthrough *passthrough_new(struct fuse_session *se);
void passthrough_free(struct passthrough *p);

/* At INIT (the init callback): should the INIT reply ask for passthrough
 * (INIT_EXT_PASSTHROUGH, fs/init_ext.h)? If the kernel's protocol has it
 * and WANTED. */
bool passthrough_init(const struct fuse_conn_info *conn, bool wanted);
/* The INIT reply asked for it: opens may pass through from now on. */
void passthrough_started(struct passthrough *p);

/* How an open file is read: through the page cache, with direct I/O, or by
 * the kernel from a backing file. */
enum io_mode { IO_CACHED, IO_DIRECT, IO_PASSED };

/* Might an open of INO (OBJECT_ID) pass through? A hint, asked before
 * pinning: passthrough_open() decides. */
bool passthrough_may(struct passthrough *p, uint64_t ino, int64_t object_id);
/*
 * Open INO (object version OBJECT_ID) with passthrough to the file FD
 * (taken over: closed here, the kernel keeps what it needs). The backing
 * file of opens of the same version is shared. The backing id, counted as
 * IO_PASSED, or -errno, uncounted: -ESTALE if INO has opens of another
 * version (rule 3 above), -EBUSY if opens of INO use the page
 * cache or direct I/O (count this one with IO_DIRECT: they drain first,
 * rule 1), -ENOMEM, or
 * the ioctl's error (after EPERM, not root, passthrough is off for the
 * mount, logged once).
 */
int passthrough_open(struct passthrough *p, uint64_t ino, int64_t object_id, int fd);
/*
 * Count an open of INO (object version OBJECT_ID) that does not pass
 * through, wanting MODE (IO_CACHED or IO_DIRECT): the mode it gets, or
 * -errno, uncounted. While opens of INO pass through to OBJECT_ID's file
 * that is IO_PASSED, with *BACKING_ID its id (else -1): reply with
 * passthrough_reply_open(..., true), which keeps its reads coming to the
 * daemon (rule 2). -ESTALE if INO has opens of another version (rule 3);
 * -ENOMEM.
 */
int passthrough_count(struct passthrough *p, uint64_t ino, int64_t object_id, enum io_mode mode,
		      int *backing_id);
/* Uncount an open of INO in MODE, as counted. */
void passthrough_released(struct passthrough *p, uint64_t ino, enum io_mode mode);
/* Reply to an open with passthrough to BACKING_ID, its reads sent to the
 * daemon if DIRECT (direct I/O). 0 or libfuse's error. */
int passthrough_reply_open(struct fuse_req *req, const struct fuse_file_info *fi, int backing_id,
			   bool direct);

#endif
