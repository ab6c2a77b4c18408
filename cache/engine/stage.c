/*
 * stage.c - a GET's bytes written to their data file as they come, not
 * kept in memory: the bytes of its units are copied into a stage that
 * lies on the file's page grid and is written out when full (or when the
 * next bytes are not the ones after it), and each unit's crc32c is taken
 * as they pass. Bytes outside the units (a lead, a spill, the gaps between
 * them) are dropped. tilefs warm and a mount's background runs store their
 * GETs so (warm.c, fetch.c).
 *
 * Level 0 of the engine (engine_int.h): calls the store only.
 */
#include "cache/engine/engine_int.h"
#include "cache/store/crc32c.h"
#include "cache/store/store.h"

#include <stdlib.h>
#include <string.h>

struct stage *stage_new(struct store *st, int64_t object_id, uint64_t base, size_t n,
			size_t size, bool direct)
{
	struct stage *s = calloc(1, sizeof(*s) + n * sizeof(s->units[0]));
	if (!s || posix_memalign((void **)&s->buf, STORE_ALIGN, size + STORE_ALIGN) != 0) {
		free(s);
		return NULL;
	}
	s->store = st;
	s->object_id = object_id;
	s->base = base;
	s->size = size;
	s->direct = direct;
	s->n = n;
	return s;
}

void stage_free(struct stage *s)
{
	if (s)
		free(s->buf);
	free(s);
}

int stage_flush(struct stage *s)
{
	int err = s->staged ? store_write(s->store, s->object_id, s->buf + s->off % STORE_ALIGN,
					  s->staged, s->off, s->direct) : 0;
	s->staged = 0;
	return err;
}

/* Stage LEN bytes of DATA for file offset POS: after the staged ones, or
 * the staged ones go first. */
static int stage_put(struct stage *s, uint64_t pos, const char *data, size_t len)
{
	int err = s->staged && pos != s->off + s->staged ? stage_flush(s) : 0;
	while (!err && len > 0) {
		if (!s->staged)
			s->off = pos;
		size_t take = len < s->size - s->staged ? len : s->size - s->staged;
		memcpy(s->buf + s->off % STORE_ALIGN + s->staged, data, take);
		s->staged += take;
		pos += take;
		data += take;
		len -= take;
		if (s->staged == s->size)
			err = stage_flush(s);
	}
	return err;
}

int stage_take(void *arg, uint64_t at, const char *data, size_t len)
{
	struct stage *s = arg;
	uint64_t pos = s->base + at;

	if (at == 0) {		/* the first bytes, or all of them again */
		s->staged = 0;
		s->at_unit = 0;
		for (size_t i = 0; i < s->n; i++)
			s->units[i].crc = 0;
	}
	/* bytes come in order (or from the first again): the units they
	   reach are the one at at_unit and those after it */
	while (len > 0 && s->at_unit < s->n) {
		struct index_unit_new *u = &s->units[s->at_unit];
		size_t take;
		if (pos >= u->off + u->len) {
			s->at_unit++;
			continue;
		}
		if (pos < u->off) {	/* before it: dropped */
			take = u->off - pos < len ? (size_t)(u->off - pos) : len;
		} else {
			take = u->off + u->len - pos < len ? (size_t)(u->off + u->len - pos) : len;
			u->crc = crc32c(u->crc, data, take);
			int err = stage_put(s, pos, data, take);
			if (err)
				return err;
		}
		pos += take;
		data += take;
		len -= take;
	}
	return 0;
}
