/* test_index.c - the SQLite index: objects, units, usage, claims, eviction
 * order, and a corrupt database rebuilt. */
#include "cache/store/index.h"
#include "check.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Claim and record a unit, as its fetch would; 0 or the error. */
static int add(struct index *ix, int64_t object_id, uint64_t off, uint64_t len, uint32_t crc)
{
	pid_t holder;
	int err = index_claim(ix, object_id, off, &holder);
	return err ? err : index_unit_add(ix, object_id, off, len, crc);
}

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
	struct index_object o1 = { .size = 1000, .block_size = 4096, .version = "\"e1\"" };
	struct index_object o2 = { .size = 1000, .block_size = 65536, .version = "\"e1\"" };
	struct index_object o3 = { .size = 1200, .block_size = 65536, .version = "\"e2\"" };
	CHECK(index_object_add(ix, "http://h/a.tif", &o1, NULL, 0, NULL,
			       &created) == 0, "add object");
	a = o1.id;
	CHECK(index_object_add(ix, "http://h/a.tif", &o2, NULL, 0, NULL,
			       &created) == 0 && o2.id == a,
	      "adding again finds the same id");
	CHECK(o2.block_size == 4096, "and the block size it was first cut with (%llu)",
	      (unsigned long long)o2.block_size);
	CHECK(index_object_add(ix, "http://h/a.tif", &o3, NULL, 0, NULL,
			       &created) == 0 && o3.id != a,
	      "a new version is a new object");
	b = o3.id;
	struct index_object latest;
	CHECK(index_object_latest(ix, "http://h/a.tif", &latest) == 0 && latest.id == b &&
	      latest.size == 1200 && latest.block_size == 65536 &&
	      strcmp(latest.version, "\"e2\"") == 0, "latest version");
	CHECK(index_object_latest(ix, "http://h/none", &latest) == -ENOENT, "unknown URL");

	CHECK(add(ix, a, 0, 256, 111) == 0 && add(ix, a, 256, 256, 222) == 0 &&
	      add(ix, b, 0, 512, 333) == 0, "add units");
	CHECK(index_unit_add(ix, a, 512, 256, 444) == -EBUSY && index_usage(ix, &usage) == 0 &&
	      usage == 1024, "a unit not claimed is not recorded");
	CHECK(index_usage(ix, &usage) == 0 && usage == 1024, "usage sums units (%llu)",
	      (unsigned long long)usage);
	struct index_unit u;
	CHECK(index_unit_find(ix, a, 256, &u) == 0 && u.len == 256 && u.crc == 222, "find unit");
	CHECK(index_unit_find(ix, a, 512, &u) == -ENOENT, "missing unit");
	int64_t first_id = 0;
	index_unit_find(ix, a, 0, &u);
	first_id = u.id;
	CHECK(index_unit_drop(ix, first_id) == 0 && add(ix, a, 0, 256, 111) == 0 &&
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
	CHECK(index_unclaim(ix, a, 256) == 0 && add(ix, a, 256, 256, 222) == 0,
	      "after the hole is punched, the unit can be added again");

	/* eviction order: a unit read again later outranks one read once */
	CHECK(index_units_touch(ix, &u.id, 1) == 0, "touch");
	struct index_unit victims[8];
	size_t n;
	CHECK(index_eviction_candidates(ix, false, NULL, 0, victims, 8, &n) == 0 && n == 3,
	      "three candidates");
	CHECK(index_eviction_candidates(ix, false, &a, 1, victims, 8, &n) == 0 && n == 1 &&
	      victims[0].object_id != a, "one when the object of two is passed over (pinned)");

	/* proofs: which identities read an object, per version */
	int64_t proved = 0;
	CHECK(strlen(index_proof_salt(ix)) == 32, "a proof salt: %s", index_proof_salt(ix));
	CHECK(index_proof_get(ix, a, "id-a", &proved) == -ENOENT, "no proof before one is made");
	CHECK(index_proof_put(ix, a, "id-a") == 0 && index_proof_get(ix, a, "id-a", &proved) == 0 &&
	      proved > 0, "a proof recorded is found (%lld)", (long long)proved);
	CHECK(index_proof_get(ix, a, "id-b", &proved) == -ENOENT,
	      "another identity has no proof of it");
	CHECK(index_proof_get(ix, b, "id-a", &proved) == -ENOENT,
	      "nor has the identity of another version");
	CHECK(index_proof_put(ix, 999999, "id-a") == 0 &&
	      index_proof_get(ix, 999999, "id-a", &proved) == -ENOENT,
	      "no proof of an object the index does not hold");

	/* an open that probed a URL: the object, its proof and the probe
	   claim's release in one transaction */
	const char *purl = "http://h/probed.tif?sig=S";
	pid_t ph = 0;
	int64_t pkey = index_probe_key(purl);
	struct index_object po = { .size = 700, .block_size = 4096, .version = "\"p\"" };
	CHECK(pkey < 0 && pkey == index_probe_key("http://h/probed.tif") &&
	      index_probe_key("http://h/other.tif") != pkey,
	      "a probe key: never an object id, the same for the URL without its query");
	CHECK(index_claim(ix, pkey, 0, &ph) == 0, "claim the probe of a URL");
	struct index_add_also also = { .proved_by = "id-p", .probe_release = true };
	CHECK(index_object_add(ix, purl, &po, NULL, 0, &also, &created) == 0 && created,
	      "add the object it found, with its proof, releasing the probe claim");
	CHECK(index_proof_get(ix, po.id, "id-p", &proved) == 0, "the proof is recorded");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h = 0;
		int rc = index_open(dir, &other, &r) ? 10 : index_claim(other, pkey, 0, &h);
		index_close(other);
		_exit(rc == 0 ? 0 : 11);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process can claim the probe (%d)",
	      WEXITSTATUS(st));

	CHECK(index_object_drop(ix, a) == 0 && index_usage(ix, &usage) == 0 && usage == 512,
	      "dropping an object drops its units (%llu)", (unsigned long long)usage);
	CHECK(index_proof_get(ix, a, "id-a", &proved) == -ENOENT, "and its proofs");

	pid_t holder = 0;
	CHECK(index_claim(ix, b, 512, &holder) == 0, "claim a unit");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h = 0;
		int rc = index_open(dir, &other, &r);
		rc = rc ? 10 : index_claim(other, b, 512, &h) == -EBUSY && h == getppid() ? 0 : 11;
		index_close(other);
		_exit(rc);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process sees the claim held (%d)",
	      WEXITSTATUS(st));
	CHECK(index_unit_add(ix, b, 512, 100, 5) == 0, "adding the unit releases the claim");
	CHECK(index_claim(ix, b, 1024, &holder) == 0 && index_unclaim(ix, b, 1024) == 0,
	      "claim and release a unit without adding it");

	/* a live holder's claim is never taken over, however long it holds
	   it, nor released or recorded by another process (unit.h,
	   invariant 8): its late record still lands, and no one else's */
	CHECK(index_claim(ix, b, 1536, &holder) == 0, "claim a unit, and take long");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h;
		struct index_unit mine;
		int rc = index_open(dir, &other, &r) ? 10 :
			 index_claim(other, b, 1536, &h) != -EBUSY || h != getppid() ? 11 :
			 index_claim_ours(other, b, 1536) != -EBUSY ? 12 :
			 index_unclaim(other, b, 1536) != 0 ? 13 :
			 index_unit_add(other, b, 1536, 100, 6) != -EBUSY ? 14 :
			 index_unit_find(other, b, 1536, &mine) != -ENOENT ? 15 :
			 index_claim(other, b, 1536, &h) != -EBUSY ? 16 : 0;
		index_close(other);
		_exit(rc);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "another process can neither take, release nor record a live holder's claim (%d)",
	      WEXITSTATUS(st));
	CHECK(index_claim_ours(ix, b, 1536) == 0 && index_unit_add(ix, b, 1536, 100, 6) == 0 &&
	      index_unit_find(ix, b, 1536, &u) == 0 && u.crc == 6 && index_unit_drop(ix, u.id) == 0,
	      "the holder still holds it and records the unit");
	CHECK(index_claim_ours(ix, b, 1536) == -EBUSY, "recording released the claim");

	/* a claim naming this live pid but a holder whose lock is gone (its
	   process died, and the pid was given to this one since): neither
	   ours nor held, so taken over */
	{
		char db_path[300], sql[200];
		sqlite3 *db;
		snprintf(db_path, sizeof(db_path), "%s/index.db", dir);
		snprintf(sql, sizeof(sql),
			 "INSERT INTO claims(object_id, off, pid, since, holder) "
			 "VALUES (%lld, 1792, %d, 0, 12345)", (long long)b, (int)getpid());
		CHECK(sqlite3_open(db_path, &db) == SQLITE_OK &&
		      sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "a claim of a reused pid");
		sqlite3_close(db);
	}
	CHECK(index_claim_ours(ix, b, 1792) == -EBUSY && index_unclaim(ix, b, 1792) == 0 &&
	      index_claim(ix, b, 1792, &holder) == 0 && index_claim_ours(ix, b, 1792) == 0 &&
	      index_unclaim(ix, b, 1792) == 0 && index_claim_ours(ix, b, 1792) == -EBUSY,
	      "a dead holder's claim under a live pid: not ours, taken over, ours released");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h;
		int rc = index_open(dir, &other, &r) ? 10 : index_claim(other, b, 512, &h);
		int rc2 = index_claim(other, b, 1024, &h);
		index_close(other);
		_exit(rc != -EEXIST ? 12 : rc2 != 0 ? 13 : 0);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a cached unit is not claimed (EEXIST); a released claim can be taken (%d)",
	      WEXITSTATUS(st));

	/* batches: one transaction, each unit its own answer */
	uint64_t offs[3] = { 512, 2048, 4096 };
	int got[3];
	CHECK(index_claims(ix, b, offs, 3, got) == 0 && got[0] == -EEXIST && got[1] == 0 &&
	      got[2] == 0, "a batch of claims: the cached unit EEXIST, the others claimed");
	child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		int g[2] = { 1, 1 };
		int rc = index_open(dir, &other, &r) ? 10 : index_claims(other, b, offs + 1, 2, g);
		index_close(other);
		_exit(rc ? 11 : g[0] != -EBUSY || g[1] != -EBUSY ? 12 : 0);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process's batch finds them held (%d)",
	      WEXITSTATUS(st));
	/* 1024: still claimed by the child above, which has exited */
	struct index_unit_new add[4] = { { .off = 2048, .len = 100, .crc = 7 },
					 { .off = 4096, .len = 100, .crc = 8 },
					 { .off = 1024, .len = 100, .crc = 9 },
					 { .off = 8192, .len = 100, .crc = 10, .err = -EIO } };
	struct index_unit found;
	CHECK(index_units_add(ix, b, add, 4) == 0 && add[0].err == 0 && add[1].err == 0 &&
	      add[2].err == -EBUSY && add[3].err == -EIO,
	      "a batch of units: added, but not under another's claim, nor one failed before");
	CHECK(index_claim(ix, b, 1024, &holder) == 0 && index_unclaim(ix, b, 1024) == 0,
	      "a dead process's claim is taken over");
	CHECK(index_unit_find(ix, b, 2048, &found) == 0 && found.crc == 7 && found.id == add[0].id &&
	      index_unit_find(ix, b, 4096, &found) == 0 && found.crc == 8 && found.id == add[1].id &&
	      add[0].id > 0 && add[0].id != add[1].id &&
	      index_unit_find(ix, b, 1024, &found) == -ENOENT &&
	      index_unit_find(ix, b, 8192, &found) == -ENOENT && add[2].id == 0 && add[3].id == 0,
	      "the batch's rows, with the ids the batch was told");
	struct index_unit_new readd = { .off = 2048, .len = 100, .crc = 7 };
	CHECK(index_claim(ix, b, 2048, &holder) == -EEXIST &&
	      index_units_add(ix, b, &readd, 1) == 0 && readd.err == -EBUSY && readd.id == 0,
	      "a unit in already: not claimed, so not added again, no id");
	index_close(ix);

	/* a corrupt database is set aside and rebuilt */
	char path[256], cmd[600];
	snprintf(path, sizeof(path), "%s/index.db", dir);
	FILE *f = fopen(path, "r+");
	fseek(f, 0, SEEK_SET);
	fputs("this is not a database, it is garbage written over the header...", f);
	fclose(f);
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && rebuilt, "corrupt index is rebuilt");
	CHECK(index_object_latest(ix, "http://h/a.tif", &latest) == -ENOENT, "and starts empty");
	index_close(ix);

	/* the key is the URL without its query: no token stored, a renewed one hits */
	CHECK(index_open(dir, &ix, &rebuilt) == 0, "reopen");
	struct index_object q = { .size = 900, .block_size = 4096, .version = "\"q\"" };
	CHECK(index_object_add(ix, "http://h/q.tif?sv=1&sig=SEKRIT-idx", &q, NULL, 0, NULL,
			       &created) == 0,
	      "add an object by a signed URL");
	CHECK(index_object_latest(ix, "http://h/q.tif?sv=2&sig=RENEWED", &latest) == 0 &&
	      latest.id == q.id, "a renewed query finds it");
	CHECK(index_object_latest(ix, "http://h/q.tif", &latest) == 0 && latest.id == q.id,
	      "so does the URL without a query");
	index_close(ix);
	char grep[600];
	snprintf(grep, sizeof(grep), "! grep -rq -e SEKRIT -e 'sig=' %s", dir);
	CHECK(system(grep) == 0, "no query string in index.db or its WAL");
	const char *const files[] = { "", "index.db", "index.db-wal", "index.db-shm", "index.lock" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct stat sb;
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		CHECK(stat(path, &sb) != 0 || (sb.st_mode & 077) == 0, "%s/%s is private (%o)", dir,
		      files[i], (unsigned)sb.st_mode & 0777);
	}

	/* hostile rows: refused when read, never a zero block size or a huge header */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/index.db \"UPDATE objects SET block_size = 0 "
		 "WHERE id = %lld; INSERT OR REPLACE INTO tile_maps VALUES (%lld, 1099511627776, "
		 "NULL)\"", dir, (long long)q.id, (long long)b);
	CHECK(system(cmd) == 0, "damage two rows");
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && !rebuilt, "reopen");
	CHECK(index_object_latest(ix, "http://h/q.tif", &latest) == -EBADMSG,
	      "block_size 0: the row is refused");
	CHECK(index_object_get(ix, q.id, &latest) == -EBADMSG, "by id too");
	struct index_object again = q;
	CHECK(index_object_add(ix, "http://h/q.tif", &again, NULL, 0, NULL, &created) == -EBADMSG &&
	      again.block_size == 4096, "adding it again fails, leaving our block size");
	uint64_t hl = 7;
	void *map = NULL;
	size_t map_len;
	CHECK(index_object_map(ix, b, &hl, &map, &map_len) == -EBADMSG && hl == 7 && !map,
	      "a 1 TiB header_len is refused");
	index_close(ix);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/index.db \"UPDATE meta SET value = '../../etc' "
		 "WHERE key = 'instance'\"", dir);
	CHECK(system(cmd) == 0, "a path in meta.instance");
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && rebuilt &&
	      strspn(index_instance(ix), "0123456789abcdef") == 16, "the index is rebuilt (%s)",
	      index_instance(ix));
	index_close(ix);

	/* the cache dir: ours, not writable by others; links not followed */
	CHECK(chmod(dir, 0777) == 0 && index_open(dir, &ix, &rebuilt) == -EPERM,
	      "a cache dir writable by others is refused");
	CHECK(chmod(dir, 0700) == 0 && (geteuid() != 0 || (chown(dir, 65534, 65534) == 0 &&
	      index_open(dir, &ix, &rebuilt) == -EPERM && chown(dir, 0, 0) == 0)),
	      "one owned by someone else too");
	snprintf(path, sizeof(path), "%s/index.lock", dir);
	char victim_path[300];
	snprintf(victim_path, sizeof(victim_path), "%s/victim", dir);
	CHECK(unlink(path) == 0 && symlink(victim_path, path) == 0 &&
	      index_open(dir, &ix, &rebuilt) == -ELOOP && access(victim_path, F_OK) != 0,
	      "an index.lock link is not followed");
	CHECK(unlink(path) == 0, "remove it");
	snprintf(path, sizeof(path), "%s/index.db", dir);
	snprintf(cmd, sizeof(cmd), "mv %s/index.db %s/real.db && ln -s real.db %s", dir, dir, path);
	CHECK(system(cmd) == 0 && index_open(dir, &ix, &rebuilt) != 0, "nor an index.db link");
	CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0 &&
	      index_open(dir, &ix, &rebuilt) == -EISDIR && !rebuilt,
	      "an index.db directory: -EISDIR at once, nothing set aside");
	struct stat sb;
	CHECK(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode), "the directory is left alone");

	/* schema 4 (no proofs) is upgraded in place: objects kept, no proofs */
	{
		char mdir[] = "/tmp/tilefs-test-index-XXXXXX";
		struct index *old;
		struct index_object mo = { .size = 10, .block_size = 4096, .version = "\"m\"" };
		int64_t when;
		CHECK(mkdtemp(mdir) != NULL && index_open(mdir, &old, &rebuilt) == 0 &&
		      index_object_add(old, "http://h/m", &mo, NULL, 0, NULL, &created) == 0,
		      "an index with an object");
		index_close(old);
		snprintf(cmd, sizeof(cmd), "sqlite3 %s/index.db \"DROP TABLE proofs; DROP TRIGGER "
			 "objects_drop_proofs; DELETE FROM meta WHERE key = 'proof_salt'; "
			 "UPDATE meta SET value = 4 WHERE key = 'schema'\"", mdir);
		CHECK(system(cmd) == 0, "made schema 4");
		CHECK(index_open(mdir, &old, &rebuilt) == 0 && !rebuilt,
		      "schema 4 opens without a rebuild");
		struct index_object ml;
		CHECK(index_object_latest(old, "http://h/m", &ml) == 0 && ml.id == mo.id,
		      "its object is kept");
		CHECK(strlen(index_proof_salt(old)) == 32 &&
		      index_proof_get(old, mo.id, "id-a", &when) == -ENOENT &&
		      index_proof_put(old, mo.id, "id-a") == 0 &&
		      index_proof_get(old, mo.id, "id-a", &when) == 0,
		      "it has a salt and no proofs, and records them");
		index_close(old);
		CHECK(check_rm_tree(mdir) == 0, "cleanup");
	}

	/* no index (a cache that could not open one): nothing changes, -ENODEV */
	struct index_object none = { .size = 1, .block_size = 4096, .version = "v" };
	struct index_unit nu;
	struct index_unit_new nv[2] = { { .off = 0, .len = 4096, .crc = 1 },
					{ .off = 4096, .len = 4096, .crc = 2, .err = -EIO } };
	pid_t nh;
	CHECK(index_object_latest(NULL, "http://h/a", &none) == -ENODEV &&
	      index_object_add(NULL, "http://h/a", &none, NULL, 0, NULL, &created) == -ENODEV &&
	      index_unit_find(NULL, 1, 0, &nu) == -ENODEV &&
	      index_claim(NULL, 1, 0, &nh) == -ENODEV && index_unclaim(NULL, 1, 0) == -ENODEV &&
	      index_usage(NULL, &usage) == -ENODEV, "no index: lookups, adds, claims: -ENODEV");
	CHECK(index_units_add(NULL, 1, nv, 2) == -ENODEV && nv[0].err == -ENODEV &&
	      nv[1].err == -EIO, "no index: units added each get -ENODEV (or keep their error)");

	CHECK(check_rm_tree(dir) == 0, "cleanup");
	return check_done();
}
