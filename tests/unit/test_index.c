/* test_index.c - the SQLite index: objects, units, usage, claims, eviction
 * order, and a corrupt database rebuilt. */
#include "cache/store/index.h"
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	char dir[] = "/tmp/tilefs-test-index-XXXXXX";
	struct index *ix;
	bool rebuilt;
	int64_t a, b;
	pid_t child;
	int st;
	bool created;
	uint64_t usage;

	CHECK(mkdtemp(dir) != NULL, "temp dir");
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && !rebuilt, "creates a new index");
	CHECK(strlen(index_instance(ix)) == 16, "instance id: %s", index_instance(ix));
	struct index_object o1 = { .size = 1000, .block_size = 256, .version = "\"e1\"" };
	struct index_object o2 = { .size = 1000, .block_size = 65536, .version = "\"e1\"" };
	struct index_object o3 = { .size = 1200, .block_size = 65536, .version = "\"e2\"" };
	CHECK(index_object_add(ix, "http://h/a.tif", &o1, NULL, 0, &created) == 0, "add object");
	a = o1.id;
	CHECK(index_object_add(ix, "http://h/a.tif", &o2, NULL, 0, &created) == 0 && o2.id == a,
	      "adding again finds the same id");
	CHECK(o2.block_size == 256, "and the block size it was first cut with (%llu)",
	      (unsigned long long)o2.block_size);
	CHECK(index_object_add(ix, "http://h/a.tif", &o3, NULL, 0, &created) == 0 && o3.id != a,
	      "a new version is a new object");
	b = o3.id;
	struct index_object latest;
	CHECK(index_object_latest(ix, "http://h/a.tif", &latest) == 0 && latest.id == b &&
	      latest.size == 1200 && latest.block_size == 65536 &&
	      strcmp(latest.version, "\"e2\"") == 0, "latest version");
	CHECK(index_object_latest(ix, "http://h/none", &latest) == -ENOENT, "unknown URL");

	CHECK(index_unit_add(ix, a, 0, 256, 111) == 0 && index_unit_add(ix, a, 256, 256, 222) == 0 &&
	      index_unit_add(ix, b, 0, 512, 333) == 0, "add units");
	CHECK(index_usage(ix, &usage) == 0 && usage == 1024, "usage sums units (%llu)",
	      (unsigned long long)usage);
	struct index_unit u;
	CHECK(index_unit_find(ix, a, 256, &u) == 0 && u.len == 256 && u.crc == 222, "find unit");
	CHECK(index_unit_find(ix, a, 512, &u) == -ENOENT, "missing unit");
	int64_t first_id = 0;
	index_unit_find(ix, a, 0, &u);
	first_id = u.id;
	CHECK(index_unit_drop(ix, first_id) == 0 && index_unit_add(ix, a, 0, 256, 111) == 0 &&
	      index_unit_find(ix, a, 0, &u) == 0 && u.id != first_id,
	      "a re-added unit gets a new id");

	/* eviction: the row goes and the unit is claimed, in one step */
	struct index_unit victim;
	CHECK(index_unit_find(ix, a, 256, &victim) == 0 && index_unit_evict(ix, &victim) == 0,
	      "evict a unit");
	CHECK(index_unit_find(ix, a, 256, &u) == -ENOENT, "its row is gone");
	CHECK(index_unit_evict(ix, &victim) == -ENOENT, "evicting it again: already gone");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		int rc = index_open(dir, &other, &r) ? 10 : index_unit_add(other, a, 256, 256, 222);
		index_close(other);
		_exit(rc == -EBUSY ? 0 : 11);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "another process cannot add the unit while it is being evicted (%d)",
	      WEXITSTATUS(st));
	CHECK(index_unclaim(ix, a, 256) == 0 && index_unit_add(ix, a, 256, 256, 222) == 0,
	      "after the hole is punched, the unit can be added again");

	/* eviction order: a unit read again later outranks one read once */
	CHECK(index_units_touch(ix, &u.id, 1) == 0, "touch");
	struct index_unit victims[8];
	size_t n;
	CHECK(index_eviction_candidates(ix, victims, 8, &n) == 0 && n == 3, "three candidates");

	CHECK(index_object_drop(ix, a) == 0 && index_usage(ix, &usage) == 0 && usage == 512,
	      "dropping an object drops its units (%llu)", (unsigned long long)usage);

	pid_t holder = 0;
	CHECK(index_claim(ix, b, 512, 30, &holder) == 0, "claim a unit");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h = 0;
		int rc = index_open(dir, &other, &r);
		rc = rc ? 10 : index_claim(other, b, 512, 30, &h) == -EBUSY && h == getppid() ? 0 : 11;
		index_close(other);
		_exit(rc);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process sees the claim held (%d)",
	      WEXITSTATUS(st));
	CHECK(index_unit_add(ix, b, 512, 100, 5) == 0, "adding the unit releases the claim");
	CHECK(index_claim(ix, b, 1024, 30, &holder) == 0 && index_unclaim(ix, b, 1024) == 0,
	      "claim and release a unit without adding it");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h;
		int rc = index_open(dir, &other, &r) ? 10 : index_claim(other, b, 512, 30, &h);
		int rc2 = index_claim(other, b, 1024, 30, &h);
		index_close(other);
		_exit(rc != -EEXIST ? 12 : rc2 != 0 ? 13 : 0);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a cached unit is not claimed (EEXIST); a released claim can be taken (%d)",
	      WEXITSTATUS(st));
	index_close(ix);

	/* a corrupt database is set aside and rebuilt */
	char path[256];
	snprintf(path, sizeof(path), "%s/index.db", dir);
	FILE *f = fopen(path, "r+");
	fseek(f, 0, SEEK_SET);
	fputs("this is not a database, it is garbage written over the header...", f);
	fclose(f);
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && rebuilt, "corrupt index is rebuilt");
	CHECK(index_object_latest(ix, "http://h/a.tif", &latest) == -ENOENT, "and starts empty");
	index_close(ix);

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "cleanup");
	return check_done();
}
