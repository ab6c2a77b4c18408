/*
 * init_ext.h - the flags of FUSE's INIT exchange above bit 31, which
 * Debian 12's libfuse 3.14 cannot name (its fuse_conn_info has 32-bit
 * capable and want): what the kernel offers, read from its INIT request,
 * and what this daemon asks for, added to its INIT reply. The mount's
 * custom I/O hooks (fs/mount.c) hand every message read and written here;
 * only the first of each is the INIT exchange (the kernel sends nothing
 * else before the INIT reply).
 *
 * Layer: the FUSE front (fs/). Libc only: the kernel ABI it needs (Linux's
 * include/uapi/linux/fuse.h) is written out in init_ext.c.
 */
#ifndef TILEFS_INIT_EXT_H
#define TILEFS_INIT_EXT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6 on; FUSE_DIRECT_IO_RELAX in 6.6):
 * a file opened with direct I/O may be mapped MAP_SHARED. Without it the
 * kernel refuses such a map (ENODEV). */
#define INIT_EXT_DIRECT_IO_ALLOW_MMAP (1ull << 36)
/* FUSE_PASSTHROUGH (Linux 6.9 on): see fs/passthrough.h. The reply that
 * asks for it also says the backing files are not on a stacked filesystem
 * (max_stack_depth 1). */
#define INIT_EXT_PASSTHROUGH (1ull << 37)

/* Caller-owned, zeroed before the session starts. */
struct init_ext {
	_Atomic bool read_init;		/* the INIT request was seen */
	_Atomic bool replied;		/* the INIT reply went out */
	_Atomic uint64_t offered;	/* the kernel's INIT flags, all 64 */
	uint64_t asked;			/* set in the init callback */
};

/* Each message read from /dev/fuse, BUF of LEN bytes (the read's result):
 * the first is the INIT request, whose flags are kept. */
void init_ext_request(struct init_ext *x, const void *buf, ssize_t len);
/* Did the kernel offer every flag of FLAGS? (Valid from the init
 * callback on.) */
bool init_ext_offered(const struct init_ext *x, uint64_t flags);
/* Ask for FLAGS in the INIT reply (from the init callback). */
void init_ext_ask(struct init_ext *x, uint64_t flags);
/* Each message written to /dev/fuse, before it is written: the first is
 * the INIT reply, to which the flags asked for are added. The flags the
 * reply carries that way (0: none; also for every later message, and if
 * the kernel's protocol has no flags2). */
uint64_t init_ext_reply(struct init_ext *x, struct iovec *iov, int count);

#endif
