/*
 * hint_plan.h - one client's hint as the engine walks it: the entries of
 * its order and the marks that say how far its readers and the thread
 * that fetches for them are (hint.c's DESIGN). A mount serves several
 * clients' hints at once (a rank of a distributed job each, say); each is
 * a plan of its own, so one client's readers never move another's marks.
 *
 * Layer: the engine, level 1 (engine_int.h): pure decisions on one plan,
 * over hint_at.c's rule for what a read is of. Not thread safe: hint.c
 * calls these under its lock.
 */
#ifndef TILEFS_HINT_PLAN_H
#define TILEFS_HINT_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct read_at;

#define HINT_CLIENT_MAX 72	/* a client's name, with its NUL */
#define HINT_SLACK 64		/* entries behind the cursor unsettled, at least */
#define HINT_BEHIND 4096	/* entries behind the cursor a late read finds */
#define HINT_LOOKAHEAD 4096	/* entries past the thread a read may jump to */
#define HINT_NEAR 8		/* entries past the cursor a tile read
				   again is still taken for: readers at once */
#define HINT_AGAIN 256		/* entries past one read that may want its
				   unit again, and have it kept */

struct hint_entry {
	char *url, *log_name;		/* owned */
	char *etag;			/* owned; NULL: nothing listed */
	int64_t size;
	time_t mtime;
	uint64_t url_hash;
	unsigned line;
	bool window;
	uint64_t x, y, w, h;
	uint64_t bytes;			/* what was sent for it so far, counted
					   in bytes_ahead as it is sent */
	bool read;			/* a read was of it */
	bool taken;			/* a worker is fetching it */
	bool done;			/* a worker fetched it (or gave up) */
};

struct hint_plan {
	char client[HINT_CLIENT_MAX];	/* "": a free slot */
	_Atomic uint64_t generation;	/* bumped each time the plan changes */
	struct hint_entry *v;
	size_t n;
	size_t settled, cursor, ahead;	/* see hint.c's DESIGN */
	size_t lag;			/* the furthest behind the cursor a
					   read found its entry */
	uint64_t bytes_ahead;		/* sent for the entries at or past the
					   cursor, taken or done */
	size_t taken_ahead;		/* taken entries at or past the cursor */
	uint64_t done_bytes, done_n;	/* sent for the entries done, and how
					   many: what a taken one may weigh */
	uint64_t skipped;		/* entries passed unread or unusable */
	uint64_t reads;			/* entries a read was of */
};

/* What a read was found to be of (plan_match()). */
struct plan_match {
	size_t entry;			/* SIZE_MAX: of no entry of the plan */
	bool marked;			/* it marked an entry read */
	bool moved;			/* the cursor or the thread's next entry
					   moved: wake the thread */
};

uint64_t plan_url_hash(const char *url);
/* Replace P's entries with V[0..n) (owned from now on), marks at 0. */
void plan_reset(struct hint_plan *p, struct hint_entry *v, size_t n);
/* Free V[0..n) and their strings. */
void plan_entries_free(struct hint_entry *v, size_t n);
/* Count as skipped the entries the readers passed, all of those below the
 * cursor if ALL (the plan ends), else those past the slack. */
void plan_settle(struct hint_plan *p, bool all);
/* Twice as far behind the cursor as a read came late, at most HINT_BEHIND:
 * what the cursor passed that readers may still read. */
size_t plan_late_span(const struct hint_plan *p);
/* Skip P's next entry past what the cursor left behind and what is
 * taken, done or read; then is it one to fetch now, with SHARE bytes
 * ahead allowed? */
bool plan_next_due(struct hint_plan *p, uint64_t share);
/* Take P's next entry (plan_next_due() said it is due) for a worker: its
 * index. */
size_t plan_take(struct hint_plan *p);
/* BYTES were sent for the taken entry I. */
void plan_sent(struct hint_plan *p, size_t i, uint64_t bytes);
/* The worker is done with entry I (ERR: it gave up on it). */
void plan_done(struct hint_plan *p, size_t i, int err);
/* A read at AT (NULL: an open) of the object URL (HASH): which entry of P
 * it is of, marked read (hint.c's hint_match() says how). */
struct plan_match plan_match(struct hint_plan *p, uint64_t hash, const char *url,
			     const struct read_at *at);
/* Does an unread entry up to HINT_AGAIN past entry K want the tile at AT
 * of the object URL (HASH) again? */
bool plan_wants_again(const struct hint_plan *p, size_t k, uint64_t hash, const char *url,
		      const struct read_at *at);

#endif
