/* test_edges.c - edges kept in the index: what a read finds, the usage
 * they count, a longer edge replacing a shorter one, a damaged one dropped,
 * and their going with a unit evicted beside them (not one they lie in) or
 * with their object. */
#include "cache/store/index.h"
#include "check.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keep one edge of LEN bytes of BYTES at OFF of object ID. */
static int edge_put(struct index *ix, int64_t id, uint64_t off, const char *bytes, size_t len)
{
	struct index_edge e = { id, off, bytes, len };
	return index_edges_put(ix, &e, 1);
}

int main(void)
{
	char dir[] = "/tmp/tilefs-test-edges-XXXXXX";
	struct index *ix;
	bool rebuilt, created;
	uint64_t usage = 0;
	char bytes[INDEX_EDGE_MAX], got[INDEX_EDGE_MAX];

	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (char)(i * 7 + 3);
	CHECK(mkdtemp(dir) != NULL, "temp dir");
	CHECK(index_open(dir, &ix, &rebuilt) == 0, "open");
	struct index_object o = { .size = 1 << 20, .block_size = 65536, .version = "\"v\"" };
	CHECK(index_object_add(ix, "http://h/a.tif", &o, NULL, 0, NULL,
			       &created) == 0, "an object");

	CHECK(index_edge_get(ix, o.id, 100000, 10, got) == -ENOENT, "nothing kept yet");
	CHECK(edge_put(ix, o.id, 100000, bytes, 5000) == 0, "keep 5000 bytes at 100000");
	CHECK(index_edge_get(ix, o.id, 101000, 3000, got) == 0 && memcmp(got, bytes + 1000, 3000) == 0,
	      "a part of it is found, with its bytes");
	CHECK(index_edge_get(ix, o.id, 104000, 2000, got) == -ENOENT, "not past its end");
	CHECK(index_edge_get(ix, o.id, 99999, 10, got) == -ENOENT, "nor before its start");
	CHECK(index_edge_get(ix, o.id + 1, 101000, 10, got) == -ENOENT,
	      "nor for another object (version)");
	uint64_t at = 0;
	memset(got, 0, sizeof(got));
	CHECK(index_edge_span(ix, o.id, 104999, &at, got) == 5000 && at == 100000 &&
	      memcmp(got, bytes, 5000) == 0, "the edge holding a byte, whole, in one query");
	CHECK(index_edge_span(ix, o.id, 105000, &at, got) == 0 &&
	      index_edge_span(ix, o.id, 99999, &at, got) == 0 &&
	      index_edge_span(ix, o.id + 1, 100000, &at, got) == 0,
	      "none past its end, before its start, or of another object");
	CHECK(index_usage(ix, &usage) == 0 && usage == 5000, "counted in the usage (%llu)",
	      (unsigned long long)usage);
	CHECK(edge_put(ix, o.id, 100000, bytes, 3000) == 0 &&
	      index_edge_get(ix, o.id, 104000, 900, got) == 0, "a shorter one does not replace it");
	CHECK(edge_put(ix, o.id, 100000, bytes, 8000) == 0 &&
	      index_edge_get(ix, o.id, 107000, 900, got) == 0 &&
	      memcmp(got, bytes + 7000, 900) == 0, "a longer one does");
	CHECK(index_usage(ix, &usage) == 0 && usage == 8000, "usage follows (%llu)",
	      (unsigned long long)usage);
	CHECK(edge_put(ix, o.id, 0, bytes, INDEX_EDGE_MAX + 1) == -EINVAL,
	      "an edge is at most INDEX_EDGE_MAX bytes");

	/* a damaged edge is dropped, never served */
	sqlite3 *db;
	char path[256];
	snprintf(path, sizeof(path), "%s/index.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK &&
	      sqlite3_exec(db, "UPDATE edges SET crc = crc + 1", NULL, NULL, NULL) == SQLITE_OK,
	      "damage the edge's checksum");
	sqlite3_close(db);
	CHECK(index_edge_get(ix, o.id, 101000, 10, got) == -ENOENT, "a damaged edge is not served");
	CHECK(index_usage(ix, &usage) == 0 && usage == 0, "and is dropped (usage %llu)",
	      (unsigned long long)usage);

	/* evicting a unit drops the edges read beside it */
	pid_t holder;
	CHECK(edge_put(ix, o.id, 200000 - 3000, bytes, 3000) == 0 &&
	      edge_put(ix, o.id, 300000, bytes, 4000) == 0 &&
	      edge_put(ix, o.id, 600000, bytes, 4000) == 0, "three edges");
	CHECK(edge_put(ix, o.id, 200000, bytes, 2000) == 0 &&
	      edge_put(ix, o.id, 300000 - 1000, bytes, 1000) == 0,
	      "and two within the unit below, read beside the units next to it");
	CHECK(index_claim(ix, o.id, 200000, &holder) == 0 &&
	      index_unit_add(ix, o.id, 200000, 100000, 0) == 0, "a unit between the first two");
	struct index_unit u;
	CHECK(index_unit_find(ix, o.id, 200000, &u) == 0 && index_unit_evict(ix, &u) == 0,
	      "evict it");
	index_unclaim(ix, o.id, 200000);
	CHECK(index_edge_get(ix, o.id, 197000, 100, got) == -ENOENT &&
	      index_edge_get(ix, o.id, 300000, 100, got) == -ENOENT,
	      "the edges beside it went with it");
	CHECK(index_edge_get(ix, o.id, 600000, 100, got) == 0, "an edge far from it stays");
	CHECK(index_edge_get(ix, o.id, 200000, 2000, got) == 0 &&
	      index_edge_get(ix, o.id, 299000, 1000, got) == 0,
	      "and so do the edges within it: its neighbours' readers still want them");
	CHECK(index_object_drop(ix, o.id) == 0 &&
	      index_edge_get(ix, o.id, 600000, 100, got) == -ENOENT,
	      "dropping the object drops its edges");
	CHECK(index_usage(ix, &usage) == 0 && usage == 0, "usage back to 0 (%llu)",
	      (unsigned long long)usage);

	/* several in one transaction, all or none */
	CHECK(index_object_add(ix, "http://h/b.tif", &o, NULL, 0, NULL,
			       &created) == 0, "another object");
	struct index_edge two[] = { { o.id, 400000, bytes, 100 }, { o.id, 500000, bytes + 1, 200 } },
			  bad[] = { { o.id, 700000, bytes, 100 }, { o.id, 800000, bytes, 0 } };
	CHECK(index_edges_put(ix, bad, 2) == -EINVAL && index_usage(ix, &usage) == 0 &&
	      usage == 0 && index_edge_get(ix, o.id, 700000, 10, got) == -ENOENT,
	      "a batch with an empty edge: none of it kept");
	CHECK(index_edges_put(ix, two, 2) == 0 && index_usage(ix, &usage) == 0 && usage == 300 &&
	      index_edge_get(ix, o.id, 500000, 200, got) == 0 && memcmp(got, bytes + 1, 200) == 0 &&
	      index_edge_get(ix, o.id, 400000, 100, got) == 0 && memcmp(got, bytes, 100) == 0,
	      "two edges kept in one call, counted (%llu)", (unsigned long long)usage);
	index_close(ix);
	CHECK(check_rm_tree(dir) == 0, "clean up");
	return check_done();
}
