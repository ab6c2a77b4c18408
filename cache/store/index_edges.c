/*
 * index_edges.c - see index.h: the edges kept in the index, the slivers
 * of units not cached whole that readers' aligned buffers touched. The
 * schema is described in index_open.c (ON DISK).
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/store/crc32c.h"
#include "cache/base/log.h"

#include <errno.h>
#include <string.h>

int index_edges_drop(struct index_conn *c, int64_t object_id, uint64_t from, uint64_t to)
{
	sqlite3_stmt *s = index_stmt(c, ST_EDGES_DROP_NEAR);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, (int64_t)from);
		sqlite3_bind_int64(s, 3, (int64_t)to);
	}
	return index_exec(c, s, "drop edges");
}

int index_edges_put(struct index *ix, const struct index_edge *v, size_t n)
{
	if (!ix)
		return -ENODEV;	/* no index */
	for (size_t i = 0; i < n; i++)
		if (v[i].len == 0 || v[i].len > INDEX_EDGE_MAX)
			return -EINVAL;
	struct index_conn *c = index_conn_get(ix);
	int err = n ? index_begin(c) : 0;
	for (size_t i = 0; i < n && !err; i++) {
		sqlite3_stmt *s = index_stmt(c, ST_EDGE_PUT);
		if (s) {
			sqlite3_bind_int64(s, 1, v[i].object_id);
			sqlite3_bind_int64(s, 2, (int64_t)v[i].off);
			sqlite3_bind_int64(s, 3, (int64_t)v[i].len);
			sqlite3_bind_int64(s, 4, crc32c(0, v[i].bytes, v[i].len));
			sqlite3_bind_blob(s, 5, v[i].bytes, (int)v[i].len, SQLITE_STATIC);
		}
		err = index_exec(c, s, "keep edge");
	}
	if (n)
		err = index_commit(c, err);
	index_conn_put(ix, c);
	return err;
}

size_t index_edge_span(struct index *ix, int64_t object_id, uint64_t at, uint64_t *edge_off,
		       void *edge)
{
	if (!ix)
		return 0;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	sqlite3_stmt *s = index_stmt(c, ST_EDGE_FIND);
	bool damaged = false;
	size_t held = 0;

	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, (int64_t)at);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			*edge_off = (uint64_t)sqlite3_column_int64(s, 0);
			uint64_t len = (uint64_t)sqlite3_column_int64(s, 1);
			uint32_t crc = (uint32_t)sqlite3_column_int64(s, 2);
			const char *bytes = sqlite3_column_blob(s, 3);
			size_t n = (size_t)sqlite3_column_bytes(s, 3);
			if (at >= *edge_off + len) {
				/* ends before AT: none holds it */
			} else if (!bytes || n != len || n > INDEX_EDGE_MAX || crc32c(0, bytes, n) != crc) {
				damaged = true;
			} else {
				memcpy(edge, bytes, n);
				held = n;
			}
		} else if (rc != SQLITE_DONE) {
			index_sql_error(c->db, rc, "find edge");
		}
		sqlite3_reset(s);
	}
	if (damaged) {
		log_warn("a kept edge of object %lld at %llu is damaged (checksum); dropping it",
			 (long long)object_id, (unsigned long long)*edge_off);
		index_edges_drop(c, object_id, *edge_off, *edge_off + 1);
	}
	index_conn_put(ix, c);
	return held;
}

int index_edge_get(struct index *ix, int64_t object_id, uint64_t off, size_t len, void *dst)
{
	char edge[INDEX_EDGE_MAX];
	uint64_t at;
	size_t held = index_edge_span(ix, object_id, off, &at, edge);
	if (!held || off + len > at + held)
		return -ENOENT;
	memcpy(dst, edge + (off - at), len);
	return 0;
}
