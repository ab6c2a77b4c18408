/*
 * index_units.c - see index.h: the units of the index (recorded under the
 * claims of index_claims.c), eviction order, admission and ghosts (the policy's decisions are
 * evict.c's), and usage; edges are index_edges.c's. The schema and the
 * rules these statements keep are described in index_open.c (ON DISK);
 * the unit protocol built on them, in unit.h.
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/store/evict.h"
#include "cache/store/store.h"
#include "cache/base/log.h"
#include "cache/base/proc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int index_units_of(struct index *ix, int64_t object_id, struct index_unit **out, size_t *n)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_UNITS_OF);
	struct index_unit *v = NULL;
	size_t cap = 0;
	int err = s ? 0 : -EIO, rc = SQLITE_DONE;

	*n = 0;
	if (s)
		sqlite3_bind_int64(s, 1, object_id);
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			struct index_unit *grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			v = grown;
		}
		v[*n] = (struct index_unit){
			.id = sqlite3_column_int64(s, 0), .object_id = object_id,
			.off = (uint64_t)sqlite3_column_int64(s, 1),
			.len = (uint64_t)sqlite3_column_int64(s, 2),
			.crc = (uint32_t)sqlite3_column_int64(s, 3),
			.probation = sqlite3_column_int64(s, 4) == 0,
		};
		(*n)++;
	}
	if (!err && rc != SQLITE_DONE)
		err = index_sql_error(c->db, rc, "list units");
	if (s)
		sqlite3_reset(s);
	index_conn_put(ix, c);
	if (err) {
		free(v);
		v = NULL;
		*n = 0;
	}
	*out = v;
	return err;
}
/*
 * The statements below are prepared at each call, not kept with the
 * connection (index.c's table): each is made once per page of units or per
 * object opened, where preparing costs little beside the rows it reads.
 */
static sqlite3_stmt *prepare(struct index_conn *c, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		index_sql_error(c->db, rc, "prepare");
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

int index_units_from(struct index *ix, int64_t object_id, uint64_t from, struct index_unit *out,
		     size_t max, size_t *n)
{
	*n = 0;
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = prepare(c, "SELECT id, off, len, crc, admitted FROM units "
				     "WHERE object_id = ?1 AND off >= ?2 ORDER BY off LIMIT ?3");
	int err = s ? 0 : -EIO, rc = SQLITE_DONE;

	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, (int64_t)from);
		sqlite3_bind_int64(s, 3, (int64_t)max);
	}
	while (!err && *n < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		out[*n] = (struct index_unit){
			.id = sqlite3_column_int64(s, 0), .object_id = object_id,
			.off = (uint64_t)sqlite3_column_int64(s, 1),
			.len = (uint64_t)sqlite3_column_int64(s, 2),
			.crc = (uint32_t)sqlite3_column_int64(s, 3),
			.probation = sqlite3_column_int64(s, 4) == 0,
		};
		(*n)++;
	}
	if (!err && rc != SQLITE_DONE && rc != SQLITE_ROW)
		err = index_sql_error(c->db, rc, "list units");
	sqlite3_finalize(s);
	index_conn_put(ix, c);
	if (err)
		*n = 0;
	return err;
}

int index_object_cut(struct index *ix, int64_t id, uint64_t *header_len, bool *tiled)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	/* length() of a blob reads its size, not its pages */
	sqlite3_stmt *s = prepare(c, "SELECT header_len, coalesce(length(map), 0) "
				     "FROM tile_maps WHERE object_id = ?1");
	int err = -EIO;

	if (s) {
		sqlite3_bind_int64(s, 1, id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			int64_t len = sqlite3_column_int64(s, 0);
			err = 0;
			if (len < 0 || len > INDEX_HEADER_LEN_MAX) {
				/* as index_object_map() refuses it */
				log_warn("cache index: object %" PRId64 " has a damaged row "
					 "(header %" PRId64 ")", id, len);
				err = -EBADMSG;
			}
			*header_len = (uint64_t)len;
			*tiled = sqlite3_column_int64(s, 1) > 0;
		} else {
			err = rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "find tile map");
		}
	}
	sqlite3_finalize(s);
	index_conn_put(ix, c);
	return err;
}

int index_unit_find(struct index *ix, int64_t object_id, uint64_t off, struct index_unit *out)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_UNIT_FIND);
	int err = -EIO;

	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, (int64_t)off);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			out->id = sqlite3_column_int64(s, 0);
			out->object_id = object_id;
			out->off = off;
			out->len = (uint64_t)sqlite3_column_int64(s, 1);
			out->crc = (uint32_t)sqlite3_column_int64(s, 2);
			out->probation = sqlite3_column_int64(s, 3) == 0;
			err = 0;
		} else {
			err = rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "find unit");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}

/* The byte count the meta row of statement ID holds (ST_USAGE,
 * ST_PROBATION), into *BYTES. */
static int bytes_read(struct index_conn *c, enum stmt_id id, uint64_t *bytes)
{
	sqlite3_stmt *s = index_stmt(c, id);
	if (!s)
		return -EIO;
	int rc = sqlite3_step(s);
	int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	*bytes = v > 0 ? (uint64_t)v : 0;
	return rc == SQLITE_ROW ? 0 : index_sql_error(c->db, rc, "read a byte count");
}

/* Inside a transaction: the count of the one row statement ID finds (keyed
 * by A, B) into *OUT; -ENOENT if none. */
static int count_read(struct index_conn *c, enum stmt_id id, int64_t a, int64_t b,
		      struct evict_count *out)
{
	sqlite3_stmt *s = index_stmt(c, id);
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 1, a);
	sqlite3_bind_int64(s, 2, b);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		out->hits = sqlite3_column_int64(s, 0);
		out->last_access = sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT :
	       index_sql_error(c->db, rc, "read a count");
}

/*
 * Inside a transaction: how unit V of OBJECT_ID goes in at NOW: *HITS its
 * count (from its ghost, if any, which *GHOSTED says) and *ADMITTED
 * whether it beats the next victim of a cache bounded by LIMIT (0: no
 * bound), as evict.h says.
 */
static int admission(struct index_conn *c, int64_t object_id, const struct index_unit_new *v,
		     uint64_t limit, int64_t now, int64_t *hits, bool *admitted, bool *ghosted)
{
	struct evict_count ghost, victim;
	uint64_t usage;
	int err = count_read(c, ST_GHOST_GET, object_id, (int64_t)v->off, &ghost);

	if (err && err != -ENOENT)
		return err;
	*ghosted = err == 0;
	*hits = evict_hits_fetched(*ghosted ? &ghost : NULL, now);
	*admitted = true;
	if (limit == 0)
		return 0;
	err = bytes_read(c, ST_USAGE, &usage);
	if (err || usage + v->len <= evict_target(limit))
		return err;	/* room: every unit is admitted */
	err = count_read(c, ST_VICTIM, 0, 0, &victim);
	if (err && err != -ENOENT)
		return err;
	*admitted = evict_admit(*ghosted ? &ghost : NULL, err ? NULL : &victim, now);
	return 0;
}

/* Inside a transaction: add unit V if this process claims it, under the
 * admission rule against LIMIT. -EBUSY if not: the claim is not this
 * process's (it never took it, or it was dropped with its object:
 * index_object_drop()). */
static int unit_add_one(struct index_conn *c, int64_t object_id, struct index_unit_new *v,
			uint64_t limit)
{
	int err = index_claim_ours_in(c, object_id, (int64_t)v->off);
	if (err)
		return err;
	int64_t now = index_now(), hits;
	bool admitted, ghosted;
	err = admission(c, object_id, v, limit, now, &hits, &admitted, &ghosted);
	if (err)
		return err;
	sqlite3_stmt *s = index_stmt(c, ST_UNIT_INSERT);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, (int64_t)v->off);
		sqlite3_bind_int64(s, 3, (int64_t)v->len);
		sqlite3_bind_int64(s, 4, v->crc);
		sqlite3_bind_int64(s, 5, now);
		sqlite3_bind_int64(s, 6, hits);
		sqlite3_bind_int64(s, 7, admitted);
		/* kept for its readers, or for a coming read (index_units_wanted()) */
		sqlite3_bind_int64(s, 8, admitted ? 0 : v->wanted ? 2 : v->ahead);
	}
	err = index_exec(c, s, "add unit");
	if (!err && sqlite3_changes(c->db) == 1)
		v->id = sqlite3_last_insert_rowid(c->db);
	if (!err && ghosted)
		err = index_exec_keyed(c, ST_GHOST_DROP, object_id, (int64_t)v->off, "drop ghost");
	return err ? err : index_claim_drop(c, object_id, (int64_t)v->off, c->ix->holder);
}

int index_units_admit(struct index *ix, int64_t object_id, struct index_unit_new *v, size_t n,
		      uint64_t limit)
{
	if (n == 0)
		return 0;	/* no transaction for nothing */
	if (!ix) {	/* no index */
		for (size_t i = 0; i < n; i++)
			if (!v[i].err)
				v[i].err = -ENODEV;
		return -ENODEV;
	}
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (!err) {
		for (size_t i = 0; i < n && !err; i++) {
			v[i].id = 0;
			if (v[i].err)
				continue;	/* not to be added */
			int rc = unit_add_one(c, object_id, &v[i], limit);
			if (rc == -EBUSY)
				v[i].err = rc;
			else
				err = rc;
		}
		err = index_commit(c, err);	/* all of them, or none */
	}
	for (size_t i = 0; i < n && err; i++) {
		if (!v[i].err)
			v[i].err = err;
		v[i].id = 0;	/* rolled back */
	}
	index_conn_put(ix, c);
	return err;
}

int index_units_add(struct index *ix, int64_t object_id, struct index_unit_new *v, size_t n)
{
	return index_units_admit(ix, object_id, v, n, 0);
}

int index_units_keep(struct index *ix, int64_t object_id, const uint64_t *offs, size_t n,
		     bool *kept)
{
	if (!ix)
		return -ENODEV;	/* no index */
	if (n == 0)
		return 0;
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (!err) {
		for (size_t i = 0; i < n && !err; i++) {
			err = index_exec_keyed(c, ST_UNIT_ADMIT, object_id, (int64_t)offs[i],
					       "admit unit");
			sqlite3_stmt *s = err || !kept ? NULL : index_stmt(c, ST_CHANGES);
			if (s) {
				kept[i] = sqlite3_step(s) == SQLITE_ROW &&
					  sqlite3_column_int64(s, 0) > 0;
				sqlite3_reset(s);
			}
		}
		err = index_commit(c, err);
	}
	index_conn_put(ix, c);
	return err;
}

int index_unit_add(struct index *ix, int64_t object_id, uint64_t off, uint64_t len, uint32_t crc)
{
	struct index_unit_new v = { .off = off, .len = len, .crc = crc };
	int err = index_units_add(ix, object_id, &v, 1);
	return err ? err : v.err;
}

int index_unit_drop(struct index *ix, int64_t unit_id)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_exec_keyed(c, ST_UNIT_DROP, unit_id, 0, "drop unit");
	index_conn_put(ix, c);
	return err;
}

/* Inside a transaction: N ghosts were just kept; drop as many old ones,
 * and a few more, while ghosts stand for more than EVICT_GHOST_RATIO
 * bytes per byte of usage. */
static int ghosts_trim(struct index_conn *c, int64_t n)
{
	/* asked first: a point read of meta costs less than the trim's
	   statement, which finds the oldest ghosts even when none is to go */
	sqlite3_stmt *s = index_stmt(c, ST_GHOSTS_OVER);
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 1, EVICT_GHOST_RATIO);
	int rc = sqlite3_step(s);
	bool over = rc == SQLITE_ROW && sqlite3_column_int64(s, 0) != 0;
	sqlite3_reset(s);
	if (rc != SQLITE_ROW)
		return index_sql_error(c->db, rc, "count ghosts");
	return over ? index_exec_keyed(c, ST_GHOSTS_TRIM, n + 4, EVICT_GHOST_RATIO,
				       "trim ghosts") : 0;
}

int index_unit_evict(struct index *ix, const struct index_unit *u)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (err)
		goto out;
	sqlite3_stmt *s = index_stmt(c, ST_OBJECT_SEALED);
	if (s) {
		sqlite3_bind_int64(s, 1, u->object_id);
		int rc = sqlite3_step(s);
		err = rc == SQLITE_ROW ? -EEXIST :
		      rc == SQLITE_DONE ? 0 : index_sql_error(c->db, rc, "find a seal");
		sqlite3_reset(s);
	} else {
		err = -EIO;
	}
	if (!err)
		err = index_exec_keyed(c, ST_GHOST_PUT_UNIT, u->id, 0, "keep a ghost");
	if (!err)
		err = index_exec_keyed(c, ST_UNIT_EVICT, u->id, !u->probation, "evict unit");
	s = err ? NULL : index_stmt(c, ST_CHANGES);
	if (s) {
		if (sqlite3_step(s) != SQLITE_ROW || sqlite3_column_int64(s, 0) == 0)
			err = -ENOENT;	/* gone already (another process evicted
					   it), or kept since it was read */
		sqlite3_reset(s);
	}
	if (!err)
		err = index_claim_put(c, u->object_id, (int64_t)u->off);
	/* the edges read beside it go with it; those within it are the
	   edges of the units beside it, kept while they are */
	if (!err)
		err = index_edges_drop(c, u->object_id,
				       u->off > INDEX_EDGE_MAX ? u->off - INDEX_EDGE_MAX : 0, u->off);
	if (!err)
		err = index_edges_drop(c, u->object_id, u->off + u->len,
				       u->off + u->len + INDEX_EDGE_MAX);
	if (!err)
		err = ghosts_trim(c, 1);
	err = index_commit(c, err);
out:
	index_conn_put(ix, c);
	return err;
}

int index_object_evict(struct index *ix, int64_t object_id, uint64_t *bytes)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (err)
		goto out;
	sqlite3_stmt *s = index_stmt(c, ST_OBJECT_EVICT_CHECK);
	if (!s) {
		err = index_commit(c, -EIO);
		goto out;
	}
	sqlite3_bind_int64(s, 1, object_id);
	int rc = sqlite3_step(s);
	if (rc != SQLITE_ROW)
		err = index_sql_error(c->db, rc, "check an object to evict");
	else if (sqlite3_column_int64(s, 0) == 0)
		err = -ENOENT;	/* never sealed: evicted unit by unit */
	else if (sqlite3_column_int64(s, 1) != 0)
		err = -EBUSY;	/* a unit of it is being fetched or evicted */
	else
		*bytes = (uint64_t)sqlite3_column_int64(s, 2);
	sqlite3_reset(s);
	s = err ? NULL : index_stmt(c, ST_OBJECT_CLAIM_ALL);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, getpid());
		sqlite3_bind_int64(s, 3, index_now());
		sqlite3_bind_int64(s, 4, c->ix->holder);
		err = index_exec(c, s, "claim an evicted object");
	}
	int64_t ghosts = 0;
	if (!err) {
		err = index_exec_keyed(c, ST_GHOST_PUT_OBJECT, object_id, 0, "keep ghosts");
		ghosts = sqlite3_changes(c->db);
	}
	if (!err)
		err = index_exec_keyed(c, ST_OBJECT_DROP_UNITS, object_id, 0, "evict an object");
	if (!err)
		err = ghosts_trim(c, ghosts);
	if (!err)
		err = index_exec_keyed(c, ST_SEAL_DROP, object_id, 0, "drop a seal");
	if (!err)
		err = index_exec_keyed(c, ST_OBJECT_DROP_EDGES, object_id, 0, "drop edges");
	err = index_commit(c, err);
out:
	index_conn_put(ix, c);
	return err;
}

int index_units_touch(struct index *ix, const int64_t *unit_ids, size_t n)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);

	if (!err) {
		int64_t now = index_now();
		for (size_t i = 0; i < n && !err; i++)
			err = index_exec_keyed(c, ST_UNIT_TOUCH, now, unit_ids[i], "touch unit");
		err = index_commit(c, err);
	}
	index_conn_put(ix, c);
	return err;
}

int index_object_touch(struct index *ix, int64_t object_id)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_exec_keyed(c, ST_OBJECT_TOUCH, index_now(), object_id, "touch units");
	index_conn_put(ix, c);
	return err;
}

int index_seal(struct index *ix, int64_t object_id, uint64_t size,
	       const struct store_stamp *stamp)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_SEAL_PUT);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, (int64_t)size);
		sqlite3_bind_int64(s, 3, stamp->ino);
		sqlite3_bind_int64(s, 4, stamp->ctime_ns);
	}
	int err = index_exec(c, s, "seal object");
	if (!err && sqlite3_changes(c->db) == 0)
		err = -ENOENT;
	index_conn_put(ix, c);
	return err;
}

int index_sealed(struct index *ix, int64_t object_id, struct store_stamp *stamp)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_SEAL_GET);
	int err = -EIO;
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			stamp->ino = sqlite3_column_int64(s, 0);
			stamp->ctime_ns = sqlite3_column_int64(s, 1);
			err = 0;
		} else {
			err = rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "find seal");
		}
		sqlite3_reset(s);
	}
	index_conn_put(ix, c);
	return err;
}

int index_usage(struct index *ix, uint64_t *bytes)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = bytes_read(c, ST_USAGE, bytes);
	index_conn_put(ix, c);
	return err;
}

int index_usage_parts(struct index *ix, uint64_t *usage, uint64_t *probation)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = bytes_read(c, ST_USAGE, usage);
	if (!err)
		err = bytes_read(c, ST_PROBATION, probation);
	index_conn_put(ix, c);
	return err;
}

/* Append to OUT[*n..max) the rows of eviction query ID, passing over the
 * objects in LIST (a JSON array of ids). */
static int candidates(struct index_conn *c, enum stmt_id id, const char *list,
		      struct index_unit *out, size_t max, size_t *n)
{
	sqlite3_stmt *s = index_stmt(c, id);
	int rc = SQLITE_DONE;
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 1, (int64_t)(max - *n));
	sqlite3_bind_text(s, 2, list, -1, SQLITE_STATIC);
	if (id == ST_EVICT_PROBATION)
		sqlite3_bind_int64(s, 3, index_now() - EVICT_AHEAD_S);
	while (*n < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct index_unit *u = &out[(*n)++];
		u->id = sqlite3_column_int64(s, 0);
		u->object_id = sqlite3_column_int64(s, 1);
		u->off = (uint64_t)sqlite3_column_int64(s, 2);
		u->len = (uint64_t)sqlite3_column_int64(s, 3);
		u->crc = (uint32_t)sqlite3_column_int64(s, 4);
		u->probation = sqlite3_column_int64(s, 5) == 0;
	}
	int err = *n < max && rc != SQLITE_DONE ?
		  index_sql_error(c->db, rc, "list eviction candidates") : 0;
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);	/* LIST is the caller's */
	return err;
}

int index_eviction_candidates(struct index *ix, bool admitted, const int64_t *skip,
			      size_t nskip, struct index_unit *out, size_t max, size_t *n)
{
	if (!ix)
		return -ENODEV;	/* no index */
	char *list = malloc(nskip * 21 + 3), *p = list;	/* a JSON array of ids */
	if (!list)
		return -ENOMEM;
	*p++ = '[';
	for (size_t i = 0; i < nskip; i++)
		p += sprintf(p, "%s%" PRId64, i ? "," : "", skip[i]);
	strcpy(p, "]");

	struct index_conn *c = index_conn_get(ix);
	*n = 0;
	int err = admitted ? 0 : candidates(c, ST_EVICT_PROBATION, list, out, max, n);
	if (!err && *n < max)
		err = candidates(c, ST_EVICT_ADMITTED, list, out, max, n);
	index_conn_put(ix, c);
	free(list);
	return err;
}
