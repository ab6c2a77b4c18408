/* test_unit.c - the unit protocol (unit.h) against a real index and store
 * in a temp dir: put, verify, evict, and what another process sees. */
#include "cache/store/unit.h"
#include "cache/store/counters.h"
#include "cache/store/crc32c.h"
#include "cache/store/index.h"
#include "cache/store/store.h"
#include "check.h"

#include <errno.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_LEN 4096

static char dir[] = "/tmp/tilefs-test-unit-XXXXXX";

/* In a child process: index_claim (object, off) and release it; what the
 * claim gave (0, -EBUSY, -EEXIST, or -EIO if the child failed). */
static int claim_elsewhere(int64_t object_id, uint64_t off)
{
	pid_t child = fork();
	if (child == 0) {
		struct index *other;
		bool r;
		pid_t h;
		int rc = index_open(dir, &other, &r) ? -EIO : index_claim(other, object_id, off, &h);
		if (rc == 0)
			index_unclaim(other, object_id, off);
		index_close(other);
		_exit(-rc);
	}
	int st;
	waitpid(child, &st, 0);
	return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

/* Run SQL on the index through a connection of its own: 0, or -EIO. */
static int sql_exec(const char *sql)
{
	char path[300];
	sqlite3 *db;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	int rc = sqlite3_open(path, &db);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(db, 10000);
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -EIO;
}

int main(void)
{
	struct index *ix;
	struct store *st;
	struct index_unit u, now;
	bool rebuilt, created, dropped;
	uint64_t usage;
	pid_t holder;
	static unsigned char bytes[UNIT_LEN], other[UNIT_LEN], got[UNIT_LEN];

	for (size_t i = 0; i < UNIT_LEN; i++) {
		bytes[i] = (unsigned char)(i * 7 + 1);
		other[i] = (unsigned char)(i * 13 + 5);
	}
	CHECK(mkdtemp(dir) != NULL, "temp dir");
	CHECK(index_open(dir, &ix, &rebuilt) == 0, "open the index");
	CHECK(store_open(dir, index_instance(ix), &st) == 0, "open the store");
	struct index_object obj = { .size = 1 << 20, .block_size = UNIT_LEN, .version = "\"v1\"" };
	CHECK(index_object_add(ix, "http://h/a.tif", &obj, NULL, 0, NULL, &created) == 0 && created,
	      "add an object");

	/* put, then find and verify */
	CHECK(index_claim(ix, obj.id, 0, &holder) == 0, "claim a unit");
	holder = 0;
	CHECK(index_claim(ix, obj.id, 0, &holder) == -EBUSY && holder == getpid(),
	      "a claim is its holder's: this process cannot take it twice");
	CHECK(unit_put(ix, st, obj.id, 0, UNIT_LEN, bytes) == 0, "put it");
	CHECK(index_unit_find(ix, obj.id, 0, &u) == 0 && u.len == UNIT_LEN &&
	      u.crc == crc32c(0, bytes, UNIT_LEN), "its row, with the bytes' checksum");
	CHECK(claim_elsewhere(obj.id, 0) == -EEXIST,
	      "its claim is released: another process sees it cached, not claimed");
	dropped = true;
	CHECK(unit_verify(ix, st, &u, got, &dropped) == 0 && !dropped &&
	      memcmp(got, bytes, UNIT_LEN) == 0, "verify: good, the bytes read back");

	/* a damaged byte: -EBADMSG, evicted, its bytes punched out */
	CHECK(store_write(st, obj.id, "\xff", 1, 100, false) == 0, "damage a byte in the data file");
	CHECK(unit_verify(ix, st, &u, got, &dropped) == -EBADMSG && dropped,
	      "verify: checksum mismatch, dropped");
	CHECK(index_unit_find(ix, obj.id, 0, &now) == -ENOENT, "the row is gone");
	CHECK(index_usage(ix, &usage) == 0 && usage == 0, "usage back to 0 (%llu)",
	      (unsigned long long)usage);
	memset(got, 0xaa, sizeof(got));
	CHECK(store_read(st, obj.id, got, UNIT_LEN, 0) == 0 && got[0] == 0 && got[100] == 0 &&
	      got[UNIT_LEN - 1] == 0, "the bytes are punched out");
	CHECK(claim_elsewhere(obj.id, 0) == 0, "the eviction's claim is released");
	CHECK(unit_evict(ix, st, &u, NULL) == -ENOENT, "evicting it again: -ENOENT");

	/* unreadable: a row whose bytes are not in the data file */
	CHECK(index_claim(ix, obj.id, 8 * UNIT_LEN, &holder) == 0 &&
	      index_unit_add(ix, obj.id, 8 * UNIT_LEN, UNIT_LEN, 1234) == 0 &&
	      index_unit_find(ix, obj.id, 8 * UNIT_LEN, &u) == 0, "a row past the file's end");
	CHECK(unit_verify(ix, st, &u, got, &dropped) == -EIO && dropped,
	      "verify: unreadable (-EIO), dropped");
	CHECK(index_unit_find(ix, obj.id, 8 * UNIT_LEN, &now) == -ENOENT, "that row is gone too");

	/* evicted while being verified, and put again with other bytes: not
	   ours to drop, the new row stays */
	CHECK(index_claim(ix, obj.id, 0, &holder) == 0 &&
	      unit_put(ix, st, obj.id, 0, UNIT_LEN, bytes) == 0 &&
	      index_unit_find(ix, obj.id, 0, &u) == 0, "put the unit again");
	CHECK(unit_evict(ix, st, &u, NULL) == 0, "evict it (as a mount would)");
	CHECK(index_claim(ix, obj.id, 0, &holder) == 0 &&
	      unit_put(ix, st, obj.id, 0, UNIT_LEN, other) == 0 &&
	      index_unit_find(ix, obj.id, 0, &now) == 0 && now.id != u.id,
	      "and put again with other bytes: a new row");
	CHECK(unit_verify(ix, st, &u, got, &dropped) == -EBADMSG && !dropped,
	      "verify of the old row: mismatch, but not dropped");
	CHECK(index_unit_find(ix, obj.id, 0, &now) == 0 && now.crc == crc32c(0, other, UNIT_LEN),
	      "the new row stands");
	CHECK(unit_verify(ix, st, &now, got, &dropped) == 0 && memcmp(got, other, UNIT_LEN) == 0,
	      "and verifies");

	/* a holder that gives up a unit it no longer holds punches nothing:
	   another process stored the unit (its claim ours no more, as a
	   dropped object's), and this one's late abandon leaves the bytes and
	   row alone (invariant 8) */
	CHECK(index_claim(ix, obj.id, 5 * UNIT_LEN, &holder) == 0 &&
	      index_unclaim(ix, obj.id, 5 * UNIT_LEN) == 0, "claim a unit, then lose the claim");
	pid_t storer = fork();
	if (storer == 0) {
		struct index *oix;
		struct store *ost;
		bool r;
		pid_t h;
		int rc = index_open(dir, &oix, &r) || store_open(dir, index_instance(oix), &ost) ||
			 index_claim(oix, obj.id, 5 * UNIT_LEN, &h) ||
			 unit_put(oix, ost, obj.id, 5 * UNIT_LEN, UNIT_LEN, other);
		_exit(rc ? 1 : 0);
	}
	int cst;
	waitpid(storer, &cst, 0);
	CHECK(WIFEXITED(cst) && WEXITSTATUS(cst) == 0, "another process stores the unit");
	unit_abandon(ix, st, obj.id, 5 * UNIT_LEN, UNIT_LEN);
	struct index_unit stored;
	CHECK(index_unit_find(ix, obj.id, 5 * UNIT_LEN, &stored) == 0 &&
	      unit_verify(ix, st, &stored, got, &dropped) == 0 && memcmp(got, other, UNIT_LEN) == 0,
	      "the late abandon left the other process's unit whole: row and bytes");

	/* from an eviction's transaction to its punch, the unit is the
	   evictor's: no other thread of its process claims it and writes
	   bytes there that the punch would take under a new row */
	CHECK(index_unit_evict(ix, &now) == 0, "a unit's row dropped and the unit claimed");
	CHECK(index_claim(ix, obj.id, 0, &holder) == -EBUSY && holder == getpid(),
	      "until its bytes are punched, the unit cannot be claimed, here either");
	CHECK(store_punch(st, obj.id, 0, UNIT_LEN) == 0 && index_unclaim(ix, obj.id, 0) == 0 &&
	      index_claim(ix, obj.id, 0, &holder) == 0 &&
	      unit_put(ix, st, obj.id, 0, UNIT_LEN, other) == 0, "punched and released: put again");

	/* another process's store_unlink() as it goes (its count of the unlink
	   before it, the unlink, its count after it), this store opening the
	   file in between: the count after the unlink tells this store that
	   the file it opened is gone, so its next write goes to the new file */
	struct counters *ct;
	int data_fd;
	char ddir[400];
	snprintf(ddir, sizeof(ddir), "%s/data-%s", dir, index_instance(ix));
	CHECK((data_fd = open(ddir, O_RDONLY | O_DIRECTORY)) >= 0 &&
	      counters_open(data_fd, ddir, &ct) == 0 && counters_add(ct, true, true) == 0,
	      "another process counts the unlink it is about to make");
	CHECK(store_read(st, obj.id, got, UNIT_LEN, 0) == 0, "this store reads the file (opens it)");
	char gone[500];
	snprintf(gone, sizeof(gone), "%s/%02x/%lld", ddir, (unsigned)(obj.id & 0xff),
		 (long long)obj.id);
	CHECK(unlink(gone) == 0 && counters_add(ct, false, true) == 0,
	      "it unlinks the file, and counts the unlink again");
	CHECK(store_write(st, obj.id, bytes, UNIT_LEN, 5 * UNIT_LEN, false) == 0,
	      "this store writes a unit");
	int fd = open(gone, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, got, UNIT_LEN, 5 * UNIT_LEN) == UNIT_LEN &&
	      memcmp(got, bytes, UNIT_LEN) == 0, "into the file the path names now, not the one gone");
	close(fd);
	counters_close(ct);
	close(data_fd);
	CHECK(index_unit_find(ix, obj.id, 0, &now) == 0 && index_unit_drop(ix, now.id) == 0,
	      "drop the row whose bytes went with that file");

	/* a put while another process claims the unit: -EBUSY, nothing recorded */
	int go[2], ready[2];
	CHECK(pipe(go) == 0 && pipe(ready) == 0, "pipes");
	pid_t child = fork();
	if (child == 0) {
		struct index *oix;
		bool r;
		pid_t h;
		char c = index_open(dir, &oix, &r) == 0 &&
			 index_claim(oix, obj.id, 2 * UNIT_LEN, &h) == 0;
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		index_close(oix);
		_exit(0);
	}
	char c = 0;
	CHECK(read(ready[0], &c, 1) == 1 && c == 1, "another process claims a unit");
	CHECK(unit_put(ix, st, obj.id, 2 * UNIT_LEN, UNIT_LEN, bytes) == -EBUSY,
	      "put without its claim: -EBUSY");
	CHECK(index_unit_find(ix, obj.id, 2 * UNIT_LEN, &now) == -ENOENT, "no row recorded");
	holder = 0;
	CHECK(index_claim(ix, obj.id, 2 * UNIT_LEN, &holder) == -EBUSY && holder == child,
	      "the claim is still the other process's");
	int wst;
	CHECK(write(go[1], &c, 1) == 1 && waitpid(child, &wst, 0) == child && WIFEXITED(wst) &&
	      WEXITSTATUS(wst) == 0, "it exits");
	CHECK(index_claim(ix, obj.id, 2 * UNIT_LEN, &holder) == 0 &&
	      unit_put(ix, st, obj.id, 2 * UNIT_LEN, UNIT_LEN, bytes) == 0,
	      "a dead process's claim is taken over, and the put goes in");

	/* the punch count: what every process sees of every punch */
	uint64_t p0 = store_punches(st);
	CHECK(index_unit_find(ix, obj.id, 2 * UNIT_LEN, &u) == 0 &&
	      unit_verify(ix, st, &u, got, &dropped) == 0 && store_punches(st) == p0,
	      "reads and checks count no punch");
	child = fork();
	if (child == 0) {
		struct index *oix;
		struct store *ost;
		bool r;
		int rc = index_open(dir, &oix, &r) || store_open(dir, index_instance(oix), &ost) ||
			 unit_evict(oix, ost, &u, NULL);
		_exit(rc ? 1 : 0);
	}
	CHECK(waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == 0,
	      "another process evicts a unit");
	CHECK(store_punches(st) == p0 + 1, "its punch is counted here (%llu after %llu)",
	      (unsigned long long)store_punches(st), (unsigned long long)p0);
	CHECK(index_claim(ix, obj.id, 3 * UNIT_LEN, &holder) == 0, "claim a unit");
	unit_abandon(ix, st, obj.id, 3 * UNIT_LEN, UNIT_LEN);
	CHECK(store_punches(st) == p0 + 2, "giving a claimed unit up punches, and counts");

	/* seals and pins (invariant 6) */
	struct index_object sealed = { .size = 3 * UNIT_LEN, .block_size = UNIT_LEN,
				       .version = "\"v1\"" };
	CHECK(index_object_add(ix, "http://h/sealed.tif", &sealed, NULL, 0, NULL, &created) == 0,
	      "add an object of three units");
	for (uint64_t k = 0; k < 2; k++)
		CHECK(index_claim(ix, sealed.id, k * UNIT_LEN, &holder) == 0 &&
		      unit_put(ix, st, sealed.id, k * UNIT_LEN, UNIT_LEN, bytes) == 0,
		      "put unit %llu", (unsigned long long)k);
	struct store_stamp stamp, seen;
	int pin = store_pin(st, sealed.id);
	CHECK(pin >= 0 && store_stamp(pin, &stamp) == 0, "pin its data file (%d), stamp it", pin);
	CHECK(index_seal(ix, sealed.id, sealed.size, &stamp) == -ENOENT &&
	      index_sealed(ix, sealed.id, &seen) == -ENOENT, "two units of three: no seal");
	CHECK(index_claim(ix, sealed.id, 2 * UNIT_LEN, &holder) == 0 &&
	      unit_put(ix, st, sealed.id, 2 * UNIT_LEN, UNIT_LEN, other) == 0 &&
	      store_stamp(pin, &stamp) == 0, "put the third, stamp the file");
	CHECK(index_seal(ix, sealed.id, sealed.size, &stamp) == 0 &&
	      index_seal(ix, sealed.id, sealed.size, &stamp) == 0 &&
	      index_sealed(ix, sealed.id, &seen) == 0 && seen.ino == stamp.ino &&
	      seen.ctime_ns == stamp.ctime_ns, "sealed with its stamp (sealing again is fine)");
	CHECK(index_unit_find(ix, sealed.id, UNIT_LEN, &u) == 0, "find a unit of it");
	child = fork();
	if (child == 0) {
		struct index *oix;
		struct store *ost;
		bool r;
		int rc = index_open(dir, &oix, &r) || store_open(dir, index_instance(oix), &ost) ?
			 -EIO : unit_evict(oix, ost, &u, NULL);
		_exit(-rc);
	}
	CHECK(waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == EBUSY,
	      "another process cannot evict a unit of a pinned file: -EBUSY");
	CHECK(unit_evict(ix, st, &u, NULL) == -EBUSY, "nor can this one");
	CHECK(index_unit_find(ix, sealed.id, UNIT_LEN, &now) == 0 && now.id == u.id &&
	      index_sealed(ix, sealed.id, &seen) == 0, "its row and the seal stand");
	CHECK(store_stamp(pin, &seen) == 0 && seen.ctime_ns == stamp.ctime_ns,
	      "and the file's stamp is the seal's");
	CHECK(index_claim(ix, sealed.id, 3 * UNIT_LEN, &holder) == 0, "claim past it");
	CHECK(store_write(st, sealed.id, bytes, UNIT_LEN, 3 * UNIT_LEN, false) == 0 &&
	      store_stamp(pin, &seen) == 0 && seen.ctime_ns != stamp.ctime_ns,
	      "a write there moves the stamp");
	unit_abandon(ix, st, sealed.id, 3 * UNIT_LEN, UNIT_LEN);
	CHECK(pread(pin, got, UNIT_LEN, 3 * UNIT_LEN) == UNIT_LEN &&
	      memcmp(got, bytes, UNIT_LEN) == 0, "giving it up punches nothing in a pinned file");
	CHECK(pread(pin, got, UNIT_LEN, UNIT_LEN) == UNIT_LEN && memcmp(got, bytes, UNIT_LEN) == 0,
	      "the pinned file reads its bytes");
	CHECK(store_hold(st, sealed.id) == -EBUSY, "the exclusive lock is refused while pinned");
	/* invariant 7: the kernel maps a passthrough file, and the map
	   outlives the open (and the pin) */
	char path[400];
	snprintf(path, sizeof(path), "%s/data-%s/%02x/%lld", dir, index_instance(ix),
		 (unsigned)(sealed.id & 0xff), (long long)sealed.id);
	int kfd = open(path, O_RDONLY);	/* the kernel's own open: no flock */
	unsigned char *map = mmap(NULL, 3 * UNIT_LEN, PROT_READ, MAP_SHARED, kfd, 0);
	CHECK(kfd >= 0 && map != MAP_FAILED && map[0] == bytes[0], "map the sealed file");
	close(kfd);
	close(pin);
	struct store *st2;
	CHECK(store_open(dir, index_instance(ix), &st2) == 0 &&
	      store_read(st2, sealed.id, got, UNIT_LEN, 0) == 0,
	      "a second store (another process) has the file open");
	CHECK(index_unit_evict(ix, &u) == -EEXIST &&
	      index_unit_find(ix, sealed.id, UNIT_LEN, &now) == 0 && now.id == u.id,
	      "the index drops no unit of a sealed object alone: -EEXIST, its row stands");
	uint64_t freed = 0, units_left, bytes_left;
	p0 = store_punches(st);
	int err = unit_evict(ix, st, &u, &freed);
	CHECK(err == 0 && freed == 3 * UNIT_LEN,
	      "unpinned: the sealed object is evicted whole (%d, %llu bytes)", err,
	      (unsigned long long)freed);
	CHECK(index_object_usage(ix, sealed.id, &units_left, &bytes_left) == 0 &&
	      units_left == 0 && index_sealed(ix, sealed.id, &seen) == -ENOENT &&
	      store_punches(st) == p0 + 1, "no unit, no seal; one punch counted");
	CHECK(claim_elsewhere(sealed.id, 0) == 0, "its claims are released");
	CHECK(memcmp(map, bytes, UNIT_LEN) == 0 && memcmp(map + UNIT_LEN, bytes, UNIT_LEN) == 0 &&
	      memcmp(map + 2 * UNIT_LEN, other, UNIT_LEN) == 0,
	      "the map still reads the object's bytes (no hole punched)");
	CHECK(store_read(st, sealed.id, got, UNIT_LEN, 0) == -EIO, "the data file is gone");
	CHECK(index_claim(ix, sealed.id, UNIT_LEN, &holder) == 0 &&
	      unit_put(ix, st2, sealed.id, UNIT_LEN, UNIT_LEN, other) == 0,
	      "the other store puts a unit again");
	CHECK(store_read(st, sealed.id, got, UNIT_LEN, UNIT_LEN) == 0 &&
	      memcmp(got, other, UNIT_LEN) == 0 && memcmp(map + UNIT_LEN, bytes, UNIT_LEN) == 0,
	      "into a new file, not the mapped one");
	munmap(map, 3 * UNIT_LEN);
	store_close(st2);
	for (uint64_t k = 0; k < 3; k += 2)
		CHECK(index_claim(ix, sealed.id, k * UNIT_LEN, &holder) == 0 &&
		      unit_put(ix, st, sealed.id, k * UNIT_LEN, UNIT_LEN, bytes) == 0,
		      "put unit %llu back", (unsigned long long)k);
	CHECK(index_seal(ix, sealed.id, sealed.size, &stamp) == 0 &&
	      index_unit_find(ix, sealed.id, 0, &u) == 0 && index_unit_drop(ix, u.id) == 0 &&
	      index_sealed(ix, sealed.id, &seen) == -ENOENT,
	      "sealed again; a dropped row breaks the seal");
	CHECK(index_unit_find(ix, sealed.id, UNIT_LEN, &u) == 0 &&
	      unit_evict(ix, st, &u, &freed) == 0 && freed == 2 * UNIT_LEN &&
	      index_object_usage(ix, sealed.id, &units_left, &bytes_left) == 0 && units_left == 0,
	      "a broken seal still evicts the object whole");

	/* evicted whole: from the transaction to the unlink, no unit of it is
	   claimed, one with no row then included, by any process, this one
	   too (else it could be written into the file about to go) */
	for (uint64_t k = 0; k < 3; k++)
		CHECK(index_claim(ix, sealed.id, k * UNIT_LEN, &holder) == 0 &&
		      unit_put(ix, st, sealed.id, k * UNIT_LEN, UNIT_LEN, bytes) == 0,
		      "put unit %llu again", (unsigned long long)k);
	CHECK(index_seal(ix, sealed.id, sealed.size, &stamp) == 0 &&
	      index_object_evict(ix, sealed.id, &freed) == 0, "sealed, then evicted whole");
	CHECK(index_claim(ix, sealed.id, 3 * UNIT_LEN, &holder) == -EBUSY &&
	      holder == getpid() && claim_elsewhere(sealed.id, 3 * UNIT_LEN) == -EBUSY &&
	      claim_elsewhere(sealed.id, UNIT_LEN) == -EBUSY,
	      "until its file is unlinked, no unit of it is claimed, here or elsewhere");
	CHECK(store_unlink(st, sealed.id) == 0 && index_object_unclaim(ix, sealed.id) == 0 &&
	      claim_elsewhere(sealed.id, 3 * UNIT_LEN) == 0, "unlinked and released: claimed");
	pid_t evictor = fork();
	if (evictor == 0) {	/* evicts it whole and dies before the unlink */
		struct index *ix2;
		bool r;
		uint64_t b;
		_exit(index_open(dir, &ix2, &r) || index_claim(ix2, sealed.id, 0, &holder) ||
		      index_units_add(ix2, sealed.id, &(struct index_unit_new){ .len = UNIT_LEN },
				      1) ||
		      index_seal(ix2, sealed.id, UNIT_LEN, &stamp) ||
		      index_object_evict(ix2, sealed.id, &b));
	}
	int status;
	CHECK(waitpid(evictor, &status, 0) == evictor && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "another process evicts it whole and dies");
	CHECK(index_claim(ix, sealed.id, UNIT_LEN, &holder) == 0,
	      "the claim a dead process left is no longer in the way");
	index_unclaim(ix, sealed.id, UNIT_LEN);

	/* evicted whole, and the index would not write the release (a full
	   disk): the claims count as released for this process alone */
	index_unit_find(ix, sealed.id, 0, &u);
	CHECK(index_unit_drop(ix, u.id) == 0, "its unit dropped");
	for (uint64_t k = 0; k < 3; k++)
		CHECK(index_claim(ix, sealed.id, k * UNIT_LEN, &holder) == 0 &&
		      unit_put(ix, st, sealed.id, k * UNIT_LEN, UNIT_LEN, bytes) == 0,
		      "put unit %llu once more", (unsigned long long)k);
	CHECK(index_seal(ix, sealed.id, sealed.size, &stamp) == 0 &&
	      index_object_evict(ix, sealed.id, &freed) == 0 && store_unlink(st, sealed.id) == 0,
	      "sealed, evicted whole, unlinked");
	CHECK(sql_exec("CREATE TRIGGER no_release BEFORE DELETE ON claims "
		       "BEGIN SELECT RAISE(ABORT, 'disk full'); END;") == 0,
	      "the index writes no release");
	CHECK(index_object_unclaim(ix, sealed.id) != 0, "the release fails");
	CHECK(claim_elsewhere(sealed.id, UNIT_LEN) == -EBUSY &&
	      claim_elsewhere(sealed.id, 3 * UNIT_LEN) == -EBUSY,
	      "another process sees the object claimed still");
	int rc = index_claim(ix, sealed.id, UNIT_LEN, &holder);
	CHECK(rc != 0 && rc != -EBUSY,
	      "this process's claim is not refused as held, but fails with the index (%d)", rc);
	CHECK(sql_exec("DROP TRIGGER no_release;") == 0, "the index writes again");
	CHECK(index_claim(ix, sealed.id, UNIT_LEN, &holder) == 0 &&
	      index_unclaim(ix, sealed.id, UNIT_LEN) == 0,
	      "this process claims a unit of it, and releases it");
	CHECK(claim_elsewhere(sealed.id, 0) == 0 && claim_elsewhere(sealed.id, 2 * UNIT_LEN) == 0 &&
	      claim_elsewhere(sealed.id, 3 * UNIT_LEN) == 0,
	      "the eviction's claims on its units and on it whole went with it");
	for (uint64_t k = 0; k < 3; k++)
		CHECK(index_claim(ix, sealed.id, k * UNIT_LEN, &holder) == 0 &&
		      unit_put(ix, st, sealed.id, k * UNIT_LEN, UNIT_LEN, bytes) == 0,
		      "put unit %llu for the last time", (unsigned long long)k);
	CHECK(index_seal(ix, sealed.id, sealed.size, &stamp) == 0 &&
	      index_object_evict(ix, sealed.id, &freed) == 0 && store_unlink(st, sealed.id) == 0 &&
	      sql_exec("CREATE TRIGGER no_release BEFORE DELETE ON claims "
		       "BEGIN SELECT RAISE(ABORT, 'disk full'); END;") == 0 &&
	      index_object_unclaim(ix, sealed.id) != 0 && sql_exec("DROP TRIGGER no_release;") == 0,
	      "evicted whole again, its release not written");
	CHECK(index_claim(ix, 424242, 0, &holder) == 0 && index_unclaim(ix, 424242, 0) == 0 &&
	      claim_elsewhere(sealed.id, 0) == 0 && claim_elsewhere(sealed.id, 3 * UNIT_LEN) == 0,
	      "the next release the index writes releases the object's claims too");
	CHECK(store_pin(st, 999999) == -ENOENT, "no data file: nothing to pin");

	store_close(st);
	index_close(ix);

	/* no count to map (punches is not a file): every call is a new count */
	char punches[400];
	CHECK(index_open(dir, &ix, &rebuilt) == 0, "open the index again");
	snprintf(punches, sizeof(punches), "%s/data-%s/punches", dir, index_instance(ix));
	CHECK(unlink(punches) == 0 && mkdir(punches, 0700) == 0, "punches made a directory");
	CHECK(store_open(dir, index_instance(ix), &st) == 0, "the store opens anyway");
	p0 = store_punches(st);
	CHECK(store_punches(st) != p0, "and no two reads of its count are the same");
	store_close(st);
	CHECK(rmdir(punches) == 0, "punches a file again at the next open");

	/* the count file damaged under a running store (its owner, a restore
	   tool, a damaged disk): never a crash, never an old count again */
	struct store *st3;
	uint64_t saved[2];
	CHECK(store_open(dir, index_instance(ix), &st) == 0 &&
	      store_open(dir, index_instance(ix), &st2) == 0, "two stores (two processes)");
	p0 = store_punches(st);
	CHECK(truncate(punches, 0) == 0, "truncate the count file to 0 bytes");
	uint64_t p1 = store_punches(st);
	CHECK(p1 != p0, "a count read after a truncate is a new one");
	CHECK(store_punch(st2, 1, 0, UNIT_LEN) == 0 && store_punches(st) != p1,
	      "a punch by the other store after it is seen");
	int cfd = open(punches, O_RDONLY);
	CHECK(cfd >= 0 && pread(cfd, saved, sizeof(saved), 0) == (ssize_t)sizeof(saved) &&
	      close(cfd) == 0, "save the file's counts");
	p0 = store_punches(st);
	CHECK(store_punch(st2, 1, 0, UNIT_LEN) == 0 && store_punches(st) != p0,
	      "the other store punches");
	cfd = open(punches, O_WRONLY);
	CHECK(cfd >= 0 && pwrite(cfd, saved, sizeof(saved), 0) == (ssize_t)sizeof(saved) &&
	      close(cfd) == 0, "an old copy written back over the file");
	CHECK(store_punches(st) != p0, "the old count is not seen again");
	p0 = store_punches(st);
	char copy[450];
	snprintf(copy, sizeof(copy), "%s.new", punches);
	cfd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(cfd >= 0 && write(cfd, saved, sizeof(saved)) == (ssize_t)sizeof(saved) &&
	      close(cfd) == 0 && rename(copy, punches) == 0,
	      "the count file replaced by a copy holding old counts");
	CHECK(store_open(dir, index_instance(ix), &st3) == 0 &&
	      store_punch(st3, 1, 0, UNIT_LEN) == 0, "a store opened since punches");
	p1 = store_punches(st);
	CHECK(p1 != p0, "the first store sees a new count");
	CHECK(store_punch(st3, 1, 0, UNIT_LEN) == 0 && store_punches(st) != p1 &&
	      store_punches(st2) != p1, "and every later punch of the new store");
	CHECK(unlink(punches) == 0 && mkdir(punches, 0700) == 0 &&
	      store_punch(st, 1, 0, UNIT_LEN) != 0, "punches a directory: a punch is refused");
	p0 = store_punches(st2);
	CHECK(store_punches(st2) != p0 && rmdir(punches) == 0 && store_punches(st2) != p0,
	      "no count is the same, until the file is back and counts anew");
	store_close(st3);
	store_close(st2);
	store_close(st);
	index_close(ix);

	/* no index, no store (a mount that could not open its cache) */
	p0 = store_punches(NULL);
	CHECK(store_punches(NULL) != p0 && store_read(NULL, 1, got, 1, 0) == -ENODEV &&
	      store_write(NULL, 1, got, 1, 0, false) == -ENODEV && store_pin(NULL, 1) == -ENOENT &&
	      !store_reserve_release(NULL), "no store: a new count each time, no file");
	CHECK(unit_put(NULL, NULL, 1, 0, UNIT_LEN, bytes) == -ENODEV,
	      "no store: a put fails and records nothing");

	/* a reserve that is a link to another file: that file is never grown */
	char reserve[300], victim[300], data[400];
	struct stat sb;
	snprintf(reserve, sizeof(reserve), "%s/reserve", dir);
	snprintf(victim, sizeof(victim), "%s.victim", dir);
	snprintf(data, sizeof(data), "%s/data-%s", dir, "x");
	int vfd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(vfd >= 0 && close(vfd) == 0 && unlink(reserve) == 0 && symlink(victim, reserve) == 0,
	      "reserve -> victim (symbolic)");
	CHECK(index_open(dir, &ix, &rebuilt) == 0 && store_open(dir, index_instance(ix), &st) == 0,
	      "open the store again");
	CHECK(stat(victim, &sb) == 0 && sb.st_size == 0 && sb.st_blocks == 0,
	      "the victim is not grown (%lld bytes)", (long long)sb.st_size);
	store_close(st);
	CHECK(lstat(reserve, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(reserve) == 0 &&
	      link(victim, reserve) == 0, "the link was replaced by a file; reserve = victim (hard)");
	CHECK(store_open(dir, index_instance(ix), &st) == 0 && stat(victim, &sb) == 0 &&
	      sb.st_size == 0 && sb.st_blocks == 0, "nor through a hard link");
	snprintf(data, sizeof(data), "%s/data-%s/%02x/%lld", dir, index_instance(ix),
		 (unsigned)(obj.id & 0xff), (long long)obj.id);
	CHECK(stat(data, &sb) == 0 && (sb.st_mode & 0777) == 0600, "data files are 0600 (%o)",
	      (unsigned)sb.st_mode & 0777);
	*strrchr(data, '/') = '\0';
	CHECK(stat(data, &sb) == 0 && (sb.st_mode & 0777) == 0700, "their dirs 0700 (%o)",
	      (unsigned)sb.st_mode & 0777);
	store_close(st);
	index_close(ix);
	unlink(victim);
	CHECK(check_rm_tree(dir) == 0, "cleanup");
	return check_done();
}
