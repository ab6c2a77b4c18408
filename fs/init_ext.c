/*
 * init_ext.c - see init_ext.h. The kernel ABI used here (fuse.h of Linux
 * 6.9 and later) is written out below: libfuse 3.14 installs no copy of
 * that header, and its own is older.
 */
#include "fs/init_ext.h"

#include <string.h>

#define OP_INIT 26			/* FUSE_INIT */
#define INIT_EXT (1u << 30)		/* fuse_init_{in,out}.flags: flags2 is read */

struct in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen, padding;
};

/* fuse_init_in up to flags2 (protocol 7.36 on) */
struct init_in {
	uint32_t major, minor, max_readahead, flags, flags2;
};

struct out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

/* fuse_init_out up to max_stack_depth (libfuse's copy calls it unused) */
struct init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2, max_stack_depth;
};

void init_ext_request(struct init_ext *x, const void *buf, ssize_t len)
{
	struct in_header h;
	struct init_in in;

	if (len < (ssize_t)sizeof(h) || atomic_load(&x->read_init))
		return;
	memcpy(&h, buf, sizeof(h));
	if (h.opcode != OP_INIT || atomic_exchange(&x->read_init, true))
		return;
	memset(&in, 0, sizeof(in));
	size_t n = (size_t)len - sizeof(h) < sizeof(in) ? (size_t)len - sizeof(h) : sizeof(in);
	memcpy(&in, (const char *)buf + sizeof(h), n);
	uint64_t flags = in.flags;
	if ((in.flags & INIT_EXT) && n == sizeof(in))
		flags |= (uint64_t)in.flags2 << 32;
	atomic_store(&x->offered, flags);
}

bool init_ext_offered(const struct init_ext *x, uint64_t flags)
{
	return (atomic_load(&x->offered) & flags) == flags;
}

void init_ext_ask(struct init_ext *x, uint64_t flags)
{
	x->asked |= flags;
}

uint64_t init_ext_reply(struct init_ext *x, struct iovec *iov, int count)
{
	if (atomic_load(&x->replied) || atomic_exchange(&x->replied, true))
		return 0;
	const struct out_header *h = iov[0].iov_base;
	if (!x->asked || count < 2 || iov[0].iov_len < sizeof(*h) || h->error != 0 ||
	    iov[1].iov_len < sizeof(struct init_out))
		return 0;
	struct init_out *out = iov[1].iov_base;
	if (!(out->flags & INIT_EXT))
		return 0;		/* the kernel offered no flags2 */
	out->flags2 |= (uint32_t)(x->asked >> 32);
	if (x->asked & INIT_EXT_PASSTHROUGH) {
		/* the cache dir must not itself be on a stacked filesystem (an
		   overlay): backing files there are refused, and reads go the
		   usual way */
		out->max_stack_depth = 1;
	}
	return x->asked & ~0xffffffffull;
}
