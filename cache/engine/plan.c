/*
 * plan.c - see plan.h. Level 0 of the engine (engine_int.h): pure, calls
 * no other engine file.
 */
#include "cache/engine/plan.h"

struct stream *plan_stream(struct stream *streams, size_t n, uint64_t *clock, uint64_t id)
{
	struct stream *s = &streams[0];
	for (size_t i = 0; i < n; i++) {
		if (streams[i].id == id) {
			s = &streams[i];
			break;
		}
		if (streams[i].used < s->used)
			s = &streams[i];
	}
	if (s->id != id)
		*s = (struct stream){ .id = id };
	s->used = ++*clock;
	return s;
}

struct extent plan_readahead(struct stream *s, const struct readahead_read *r)
{
	struct extent ra = { 0, 0 };
	uint64_t trigger = r->tile ? PLAN_READAHEAD_TILE_TRIGGER : 2 * r->block_size;

	if (r->off + PLAN_READAHEAD_OVERLAP >= s->end && r->off <= s->end + PLAN_READAHEAD_SLACK) {
		s->bytes += r->end - r->off;
		s->reads++;
	} else {
		s->bytes = r->end - r->off;
		s->reads = 1;
		s->ra_window = 0;
		s->ra_end = 0;
	}
	s->end = r->end;
	if (!r->window_max || s->reads < 2 ||
	    (s->bytes < trigger && s->reads < PLAN_READAHEAD_READS))
		return ra;
	if (s->ra_window == 0)
		s->ra_window = PLAN_READAHEAD_START < r->window_max ? PLAN_READAHEAD_START :
								      r->window_max;
	if (s->ra_end < r->end + s->ra_window / 2 && r->end < r->object_size) {
		ra.off = s->ra_end > r->end ? s->ra_end : r->end;
		uint64_t to = r->object_size - r->end > s->ra_window ? r->end + s->ra_window :
								       r->object_size;
		ra.len = to > ra.off ? to - ra.off : 0;
		s->ra_end = to;
		s->ra_window = s->ra_window * 2 < r->window_max ? s->ra_window * 2 : r->window_max;
	}
	return ra;
}

bool plan_sliver(size_t n, size_t i, uint64_t part_len, uint64_t unit_len, bool tile,
		 bool goes_on, bool reading)
{
	return n > 1 && part_len < PLAN_SLIVER_MAX && part_len < unit_len && tile &&
	       ((i == 0 && !goes_on) || (i == n - 1 && reading));
}

uint64_t plan_spill(uint64_t end, uint64_t object_size)
{
	uint64_t spill = (PLAN_SLIVER_MAX - end % PLAN_SLIVER_MAX) % PLAN_SLIVER_MAX;
	return spill > object_size - end ? object_size - end : spill;
}

struct extent plan_trim(const struct plan_unit *units, size_t n, uint64_t head, uint64_t tail)
{
	const struct plan_unit *first = &units[0], *last = &units[n - 1];
	uint64_t off = first->off + (head < first->len ? head : first->len);
	uint64_t end = last->off + last->len - (tail < last->len ? tail : last->len);

	if (n > 1) {
		/* the first unit held whole: from the next unit on, whatever
		   lies between; the other units overlap its first bytes (its
		   slivers): from where they start */
		if (off == first->off + first->len || units[1].off < off)
			off = units[1].off;
		uint64_t before = 0;	/* where the units before the last end */
		for (size_t i = 0; i + 1 < n; i++)
			if (units[i].off + units[i].len > before)
				before = units[i].off + units[i].len;
		if (end == last->off || before > end)
			end = before;
	}
	return off < end ? (struct extent){ off, end - off } : (struct extent){ 0, 0 };
}

size_t plan_parts(const struct plan_unit *units, size_t n, uint64_t off, uint64_t len,
		  bool background, uint64_t *part_ends)
{
	uint64_t want = len / PLAN_PART_MIN, end = off + len;
	size_t parts = background || want < 2 ? 1 : want < PLAN_PARTS_MAX ? (size_t)want :
									    PLAN_PARTS_MAX;
	uint64_t slack = len / parts / 2;
	size_t k = 0, j = 0;

	for (size_t i = 1; i < parts; i++) {
		uint64_t target = off + len / parts * i, at = target & ~(uint64_t)4095;
		while (j + 1 < n && units[j].off + units[j].len < target)
			j++;
		/* of the unit ends on either side of the target, the nearer one,
		   if it is near enough */
		uint64_t best = slack + 1;
		for (size_t m = j ? j - 1 : 0; m <= j && m + 1 < n; m++) {
			uint64_t unit_end = units[m].off + units[m].len;
			uint64_t d = unit_end > target ? unit_end - target : target - unit_end;
			if (d < best) {
				best = d;
				at = unit_end;
			}
		}
		if (at > (k ? part_ends[k - 1] : off) && at < end)
			part_ends[k++] = at;
	}
	part_ends[k++] = end;
	return k;
}

bool plan_related(enum prefetch_policy policy, enum layout_relation *relation)
{
	if (policy == PREFETCH_NEIGHBORS)
		*relation = LAYOUT_NEIGHBORS;
	else if (policy == PREFETCH_ROW)
		*relation = LAYOUT_ROW;
	else
		return false;
	return true;
}

size_t plan_prefetch_fit(const struct extent *v, size_t n, uint64_t *budget)
{
	size_t k = 0;
	while (k < n && v[k].len <= *budget)
		*budget -= v[k++].len;
	return k;
}

size_t plan_run(const struct plan_unit *v, size_t i, size_t n, uint64_t merge_gap,
		uint64_t max_request, plan_gap_fn gap_busy, void *arg, bool *demand)
{
	uint64_t start = v[i].off, end = start + v[i].len;
	size_t j = i + 1;

	*demand = !v[i].prefetch;
	/* a sliver and the unit it is part of (both wanted by one read, the
	   unit by a prefetch policy) overlap: one GET brings both */
	while (j < n && (v[j].off <= end || v[j].off - end <= merge_gap) &&
	       v[j].off + v[j].len - start <= max_request &&
	       !(v[j].off > end && !v[j].sliver && !v[j - 1].sliver &&
		 gap_busy(arg, end, v[j].off))) {
		if (v[j].off + v[j].len > end)
			end = v[j].off + v[j].len;
		*demand |= !v[j].prefetch;
		j++;
	}
	return j;
}

/* The key of the small unit U (plan_tier_run()). */
static struct extent tier_window(struct extent u, uint64_t object_size, plan_unit_at_fn unit_at,
				 void *arg)
{
	uint64_t w = u.off - u.off % PLAN_TIER_WINDOW, w_end = w + PLAN_TIER_WINDOW;
	uint64_t start = u.off, end = u.off + u.len;
	while (start > w) {
		struct extent before = unit_at(arg, start - 1);
		if (before.len >= PLAN_TIER_UNIT_MIN || before.off < w)
			break;
		start = before.off;
	}
	while (end < w_end && end < object_size) {
		struct extent after = unit_at(arg, end);
		if (after.len >= PLAN_TIER_UNIT_MIN || after.len == 0)
			break;
		end = after.off + after.len;
	}
	/* beside a large unit, its edge up to the 16 KiB boundary comes too,
	   as a large unit's key brings the edges of what is beside it */
	if (start > 0 && unit_at(arg, start - 1).len >= PLAN_TIER_UNIT_MIN)
		start -= start % PLAN_SLIVER_MAX;
	if (end < object_size && unit_at(arg, end).len >= PLAN_TIER_UNIT_MIN)
		end += plan_spill(end, object_size);
	return (struct extent){ start, end - start };
}

/* The key of the large unit U: U widened to PLAN_SLIVER_MAX boundaries. */
static struct extent tier_large_key(struct extent u, uint64_t object_size)
{
	uint64_t off = u.off - u.off % PLAN_SLIVER_MAX, end = u.off + u.len;
	return (struct extent){ off, end + plan_spill(end, object_size) - off };
}

/* The key a run starting with the unit U asks for. */
static struct extent tier_key(struct extent u, uint64_t object_size, plan_unit_at_fn unit_at,
			      void *arg)
{
	return u.len >= PLAN_TIER_UNIT_MIN ? tier_large_key(u, object_size) :
					     tier_window(u, object_size, unit_at, arg);
}

/* The key of a sliver S of a large unit, fetched without that unit: the
 * key of the unit beside S that holds it (S is the end of its unit and
 * the next unit's key starts before it, or S is the start of its unit and
 * the unit before's key ends after it), so that the range does not depend
 * on whether that unit was cached or in flight when S was read; {0, 0}
 * (S alone, the same on every machine) if there is none. */
static struct extent tier_sliver_key(struct extent s, uint64_t object_size,
				     plan_unit_at_fn unit_at, void *arg)
{
	struct extent u = unit_at(arg, s.off), beside = { 0, 0 };
	if (s.off + s.len == u.off + u.len && u.off + u.len < object_size)
		beside = unit_at(arg, u.off + u.len);
	else if (s.off == u.off && u.off > 0)
		beside = unit_at(arg, u.off - 1);
	if (!beside.len)
		return (struct extent){ 0, 0 };
	struct extent k = tier_key(beside, object_size, unit_at, arg);
	return k.off <= s.off && s.off + s.len <= k.off + k.len ? k : (struct extent){ 0, 0 };
}

size_t plan_tier_run(const struct plan_unit *v, size_t i, size_t n, uint64_t object_size,
		     plan_unit_at_fn unit_at, void *unit_arg, bool *demand, struct extent *key)
{
	/* the large unit right after the slivers v[i] starts, if any */
	size_t k = i;
	while (k < n && v[k].sliver)
		k++;
	struct extent kx = { 0, 0 };
	size_t j = i + 1;
	if (k < n && v[k].len >= PLAN_TIER_UNIT_MIN &&
	    v[i].off >= v[k].off - v[k].off % PLAN_SLIVER_MAX) {
		/* its key, with the slivers it covers */
		kx = tier_large_key((struct extent){ v[k].off, v[k].len }, object_size);
		j = k + 1;
	} else if (unit_at(unit_arg, v[i].off).len < PLAN_TIER_UNIT_MIN) {
		/* a small unit, or a sliver of one: its window, with the small
		   units and slivers in it */
		kx = tier_window((struct extent){ v[i].off, v[i].len }, object_size, unit_at,
				 unit_arg);
		while (j < n && v[j].off + v[j].len <= kx.off + kx.len &&
		       (v[j].sliver || unit_at(unit_arg, v[j].off).len < PLAN_TIER_UNIT_MIN))
			j++;
	} else {
		/* a sliver of a large unit not being fetched */
		kx = tier_sliver_key((struct extent){ v[i].off, v[i].len }, object_size, unit_at,
				     unit_arg);
	}
	while (kx.len && j < n && v[j].sliver && v[j].off + v[j].len <= kx.off + kx.len)
		j++;
	*demand = false;
	for (size_t m = i; m < j; m++)
		*demand |= !v[m].prefetch;
	*key = kx;
	return j;
}
