/*
 * hint_plan.c - see hint_plan.h; the marks and the rules that move them
 * are hint.c's DESIGN.
 */
#include "cache/engine/hint_plan.h"
#include "cache/engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

uint64_t plan_url_hash(const char *s)
{
	uint64_t x = 1469598103934665603ull;	/* FNV-1a */
	for (; *s; s++)
		x = (x ^ (unsigned char)*s) * 1099511628211ull;
	return x;
}

void plan_entries_free(struct hint_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].url);
		free(v[i].log_name);
		free(v[i].etag);
	}
	free(v);
}

void plan_reset(struct hint_plan *p, struct hint_entry *v, size_t n)
{
	p->v = v;
	p->n = n;
	p->settled = p->cursor = p->ahead = p->lag = 0;
	p->bytes_ahead = 0;
	p->taken_ahead = 0;
	p->done_bytes = p->done_n = 0;
	atomic_fetch_add(&p->generation, 1);
}

size_t plan_late_span(const struct hint_plan *p)
{
	return 2 * p->lag < HINT_BEHIND ? 2 * p->lag : HINT_BEHIND;
}

/* How far behind the cursor entries stay unsettled (see DESIGN). */
static size_t slack(const struct hint_plan *p)
{
	size_t d = plan_late_span(p);
	return d < HINT_SLACK ? HINT_SLACK : d;
}

void plan_settle(struct hint_plan *p, bool all)
{
	size_t d = slack(p);
	size_t upto = all ? p->cursor : p->cursor > d ? p->cursor - d : 0;
	for (; p->settled < upto; p->settled++)
		if (!p->v[p->settled].read)
			p->skipped++;
}

/* Put the cursor at TO (above it), taking the entries passed out of the
 * bytes ahead. */
static void cursor_move(struct hint_plan *p, size_t to)
{
	for (size_t i = p->cursor; i < to && i < p->n; i++) {
		p->bytes_ahead -= p->v[i].bytes;
		p->taken_ahead -= p->v[i].taken;
	}
	p->cursor = to;
	plan_settle(p, false);
}

bool plan_next_due(struct hint_plan *p, uint64_t share)
{
	size_t keep = plan_late_span(p);
	if (p->ahead + keep < p->cursor)
		p->ahead = p->cursor - keep;	/* passed: not fetched */
	while (p->ahead < p->n &&
	       (p->v[p->ahead].done || p->v[p->ahead].taken || p->v[p->ahead].read))
		p->ahead++;	/* taken before a late read sent it back */
	/* the taken entries still to send weigh what the done ones did;
	   until one is done, one is taken at a time */
	uint64_t guess = p->done_n ? p->done_bytes / p->done_n : share;
	uint64_t coming = guess && p->taken_ahead > share / guess ? share : p->taken_ahead * guess;
	return p->ahead < p->n && (p->ahead < p->cursor ||
				   (p->bytes_ahead + coming < share &&
				    p->ahead - p->cursor < HINT_LOOKAHEAD));
}

size_t plan_take(struct hint_plan *p)
{
	size_t i = p->ahead++;
	p->v[i].taken = true;
	p->taken_ahead += i >= p->cursor;
	return i;
}

void plan_sent(struct hint_plan *p, size_t i, uint64_t bytes)
{
	p->v[i].bytes += bytes;	/* what is cached weighs nothing ahead */
	if (i >= p->cursor)
		p->bytes_ahead += bytes;
}

void plan_done(struct hint_plan *p, size_t i, int err)
{
	struct hint_entry *e = &p->v[i];
	p->taken_ahead -= e->taken && i >= p->cursor;
	e->taken = false;
	e->done = true;
	p->done_bytes += e->bytes;
	p->done_n++;
	if (err) {
		if (i >= p->cursor)
			p->bytes_ahead -= e->bytes;
		e->bytes = 0;
	}
	if (err && !e->read) {
		e->read = true;	/* counted once, here */
		p->skipped++;
	}
}

/* Is a read at AT of E's object one of E's (read_at_window())? */
static bool entry_has(const struct hint_entry *e, const struct read_at *at)
{
	return !e->window || read_at_window(at, e->x, e->y, e->w, e->h);
}

/* The first entry of [FROM, TO) of the object URL (HASH) that AT is of
 * (NULL: any unread one, an open's); with UNREAD, the first unread one.
 * SIZE_MAX if none. */
static size_t entry_find(const struct hint_plan *p, size_t from, size_t to, uint64_t hash,
			 const char *url, const struct read_at *at, bool unread)
{
	for (size_t i = from; i < to && i < p->n; i++) {
		const struct hint_entry *e = &p->v[i];
		if (e->url_hash == hash && strcmp(e->url, url) == 0 && !(unread && e->read) &&
		    (at ? entry_has(e, at) : !e->read))
			return i;
	}
	return SIZE_MAX;
}

/* A read came later than any before: send the thread back to the first
 * entry of the wider span behind the cursor it has not done and no read
 * has (see DESIGN). True if it did. */
static bool rewind_late(struct hint_plan *p)
{
	size_t span = plan_late_span(p);
	for (size_t i = p->cursor > span ? p->cursor - span : 0; i < p->ahead; i++)
		if (!p->v[i].done && !p->v[i].taken && !p->v[i].read) {
			p->ahead = i;
			return true;
		}
	return false;
}

/* Mark entry I read: past the cursor, move it; behind, note how late the
 * read came (slack()). True if the thread has something new to look at. */
static bool entry_read(struct hint_plan *p, size_t i)
{
	p->v[i].read = true;
	p->reads++;
	if (i < p->settled)
		p->skipped--;	/* counted before this late read */
	if (i + 1 > p->cursor) {
		cursor_move(p, i + 1);
		return true;
	}
	if (p->cursor - i > p->lag) {
		p->lag = p->cursor - i;
		return rewind_late(p);
	}
	return false;
}

struct plan_match plan_match(struct hint_plan *p, uint64_t hash, const char *url,
			     const struct read_at *at)
{
	struct plan_match m = { SIZE_MAX, false, false };
	size_t to = at && at->fine ? p->cursor + HINT_SLACK :
		    (p->ahead > p->cursor ? p->ahead : p->cursor) + HINT_LOOKAHEAD;
	size_t i = entry_find(p, p->settled, to, hash, url, at, false);
	if (at && (i == SIZE_MAX || i >= p->cursor + slack(p))) {
		size_t back = p->cursor > HINT_BEHIND ? p->cursor - HINT_BEHIND : 0;
		size_t late = entry_find(p, back, p->settled, hash, url, at, true);
		if (late != SIZE_MAX)
			i = late;
	}
	m.entry = i;
	if (i != SIZE_MAX && !p->v[i].read) {
		m.marked = true;
		m.moved = entry_read(p, i);
	} else if (i != SIZE_MAX && p->v[i].window && !at->fine) {
		size_t near = p->cursor + HINT_NEAR;
		size_t j = entry_find(p, i + 1, to < near ? to : near, hash, url, at, true);
		if (j != SIZE_MAX) {
			m.entry = j;
			m.marked = true;
			m.moved = entry_read(p, j);
		}
	}
	return m;
}

bool plan_wants_again(const struct hint_plan *p, size_t k, uint64_t hash, const char *url,
		      const struct read_at *at)
{
	return entry_find(p, k + 1, k + 1 + HINT_AGAIN, hash, url, at, true) != SIZE_MAX;
}
