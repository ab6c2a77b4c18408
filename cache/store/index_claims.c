/*
 * index_claims.c - see index.h: the claims on units (the unit protocol of
 * unit.h, invariant 8): taken, released, and read, and the claims this
 * holder released that the index would not write (a full or failing
 * disk), which count as released for this holder, so its own readers
 * never wait on them: a unit's (its row left), or an object's evicted
 * whole (off -1, its units' rows left with it). Below index_units.c,
 * which records units under these claims.
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/base/proc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Take the claim on (OBJECT_ID, OFF) for this process, in place of any
 * other: the caller checked that none is held. */
int index_claim_put(struct index_conn *c, int64_t object_id, int64_t off)
{
	sqlite3_stmt *s = index_stmt(c, ST_CLAIM_PUT);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, off);
		sqlite3_bind_int64(s, 3, getpid());
		sqlite3_bind_int64(s, 4, index_now());
		sqlite3_bind_int64(s, 5, c->ix->holder);
	}
	return index_exec(c, s, "claim unit");
}

/* Release every claim this holder has on OBJECT_ID: its units' and the
 * whole object's. */
static int object_unclaim_in(struct index_conn *c, int64_t object_id)
{
	sqlite3_stmt *s = index_stmt(c, ST_OBJECT_UNCLAIM);
	if (s) {
		sqlite3_bind_int64(s, 1, object_id);
		sqlite3_bind_int64(s, 2, c->ix->holder);
	}
	return index_exec(c, s, "release claims");
}

/* Release KEY, a claim of this holder: off -1, an object evicted whole,
 * goes with its units' claims of that eviction (no other claim of this
 * holder on it is live meanwhile, nor while it is noted released in
 * memory: claim_free()). */
static int key_release(struct index_conn *c, struct index_claim_key key)
{
	return key.off < 0 ? object_unclaim_in(c, key.object_id) :
			     index_claim_drop(c, key.object_id, key.off, c->ix->holder);
}

/* Is a claim of HOLDER (pid PID) still held? While its holder has its
 * index open (index_holder_alive()), whatever it does and however long
 * it takes, this process's too: a claim is one holder's, not one
 * thread's; a claim without a holder (0: an older tilefs's) while its pid
 * lives. Never taken over from a live holder (invariant 8). */
static bool claim_held(struct index_conn *c, pid_t pid, int64_t holder)
{
	return holder ? index_holder_alive(c->ix, holder) : proc_alive(pid);
}

/* Inside a transaction: read the claim on (OBJECT_ID, OFF): 0 with *PID
 * and *HOLDER, -ENOENT if none, or the index's error. */
static int claim_get(struct index_conn *c, int64_t object_id, int64_t off, pid_t *pid,
		     int64_t *holder)
{
	sqlite3_stmt *s = index_stmt(c, ST_CLAIM_GET);
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 1, object_id);
	sqlite3_bind_int64(s, 2, off);
	int rc = sqlite3_step(s);
	int err = rc == SQLITE_ROW ? 0 :
		  rc == SQLITE_DONE ? -ENOENT : index_sql_error(c->db, rc, "read claim");
	if (!err) {
		*pid = (pid_t)sqlite3_column_int64(s, 0);
		*holder = sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	return err;
}

/* 0 if this process holds the claim on (OBJECT_ID, OFF), -EBUSY if not
 * (another does, or none), or the index's error. */
int index_claim_ours_in(struct index_conn *c, int64_t object_id, int64_t off)
{
	pid_t pid;
	int64_t holder;
	int err = claim_get(c, object_id, off, &pid, &holder);
	if (!err && holder != c->ix->holder)
		err = -EBUSY;
	return err == -ENOENT ? -EBUSY : err;
}

/* Take (OBJECT_ID, OFF) out of IX's claims released in memory only: was
 * it there? Whoever takes it alone may act on its row: take the claim
 * again (claim_free()) or release it in the index (index_unclaim()). */
static bool stuck_take(struct index *ix, int64_t object_id, int64_t off)
{
	bool found = false;
	pthread_mutex_lock(&ix->lock);
	for (size_t i = 0; i < ix->nstuck && !found; i++) {
		found = ix->stuck[i].object_id == object_id && ix->stuck[i].off == off;
		if (found)
			memmove(ix->stuck + i, ix->stuck + i + 1,
				(ix->nstuck - i - 1) * sizeof(ix->stuck[0]));
	}
	ix->nstuck -= found;
	pthread_mutex_unlock(&ix->lock);
	return found;
}

/* Note (OBJECT_ID, OFF) as released in memory only (its row not deleted),
 * the oldest note making room. */
static void stuck_add(struct index *ix, int64_t object_id, int64_t off)
{
	pthread_mutex_lock(&ix->lock);
	if (ix->nstuck == INDEX_STUCK_MAX)
		memmove(ix->stuck, ix->stuck + 1, --ix->nstuck * sizeof(ix->stuck[0]));
	ix->stuck[ix->nstuck++] = (struct index_claim_key){ object_id, off };
	pthread_mutex_unlock(&ix->lock);
}

/* The oldest claim released in memory only, taken out (stuck_take()):
 * false if there is none. */
static bool stuck_take_oldest(struct index *ix, struct index_claim_key *out)
{
	pthread_mutex_lock(&ix->lock);
	bool found = ix->nstuck > 0;
	if (found) {
		*out = ix->stuck[0];
		memmove(ix->stuck, ix->stuck + 1, --ix->nstuck * sizeof(ix->stuck[0]));
	}
	pthread_mutex_unlock(&ix->lock);
	return found;
}

/* Inside a transaction: -EBUSY (*HOLDER_PID set) if the claim on
 * (OBJECT_ID, OFF) is held (claim_held()), this process's too, unless
 * this holder released it and the index would not write that: then it is
 * taken out of those (stuck_take(), *RETAKEN set: the caller notes it
 * again if its transaction does not commit) and its own readers never
 * wait on it; a whole object's (OFF -1) is released here, with its units'
 * claims of the same eviction; a claim its holder left behind (dead) is
 * dropped; 0 when none is held now. */
static int claim_free(struct index_conn *c, int64_t object_id, int64_t off, pid_t *holder_pid,
		      bool *retaken)
{
	pid_t pid;
	int64_t holder;
	int err = claim_get(c, object_id, off, &pid, &holder);
	if (err && err != -ENOENT)
		return err;
	/* a note is this holder's: its row is, if still there (dropped with
	   its object, the note goes as well) */
	if ((err || holder == c->ix->holder) && stuck_take(c->ix, object_id, off)) {
		*retaken = true;
		/* a unit's row is taken again by claim_put() */
		return err || off >= 0 ? 0 : object_unclaim_in(c, object_id);
	}
	if (err)
		return 0;	/* none */
	if (claim_held(c, pid, holder)) {
		*holder_pid = pid;
		return -EBUSY;
	}
	return index_claim_drop(c, object_id, off, holder);	/* a dead holder's */
}

/* Inside a transaction: claim the unit at OFF, as index_claim() says.
 * Nothing is written unless it returns 0. A process evicting OBJECT_ID
 * whole holds its whole-object claim (off -1: index_open.c, claims), and
 * then no unit of it is claimed, by this process either: its file is
 * about to be unlinked, so nothing may be written into it. *WHOLE and
 * *UNIT are set when a claim noted released in memory was taken out of
 * the notes (claim_free()). */
static int claim_one(struct index_conn *c, int64_t object_id, uint64_t off, pid_t *holder,
		     bool *whole, bool *unit)
{
	int err = claim_free(c, object_id, -1, holder, whole);
	if (!err)
		err = claim_free(c, object_id, (int64_t)off, holder, unit);
	sqlite3_stmt *cached = err ? NULL : index_stmt(c, ST_UNIT_FIND);
	if (cached) {
		/* landed between the caller's lookup and this claim? */
		sqlite3_bind_int64(cached, 1, object_id);
		sqlite3_bind_int64(cached, 2, (int64_t)off);
		int rc = sqlite3_step(cached);
		err = rc == SQLITE_ROW ? -EEXIST :
		      rc == SQLITE_DONE ? 0 : index_sql_error(c->db, rc, "find a unit to claim");
		sqlite3_reset(cached);
	}
	return err ? err : index_claim_put(c, object_id, (int64_t)off);
}

int index_claims(struct index *ix, int64_t object_id, const uint64_t *offs, size_t n,
		 int *result)
{
	if (!ix)
		return -ENODEV;	/* no index */
	bool *retaken = calloc(n ? n : 1, sizeof(*retaken)), whole = false;
	if (!retaken)
		return -ENOMEM;
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);
	pid_t holder;

	if (!err) {
		for (size_t i = 0; i < n && !err; i++) {
			result[i] = claim_one(c, object_id, offs[i], &holder, &whole,
					      &retaken[i]);
			if (result[i] != -EBUSY && result[i] != -EEXIST)
				err = result[i];
		}
		err = index_commit(c, err);	/* all of them, or none */
	}
	for (size_t i = 0; i < n && err; i++)
		result[i] = err;
	index_conn_put(ix, c);
	/* their rows are as they were */
	for (size_t i = 0; i < n; i++)
		if (retaken[i] && result[i] != 0)
			stuck_add(ix, object_id, (int64_t)offs[i]);
	if (whole && err)
		stuck_add(ix, object_id, -1);
	free(retaken);
	return err;
}

int index_claim(struct index *ix, int64_t object_id, uint64_t off, pid_t *holder)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_begin(c);
	bool whole = false, retaken = false;

	if (!err) {
		err = claim_one(c, object_id, off, holder, &whole, &retaken);
		if (err == -EBUSY || err == -EEXIST)
			index_commit(c, err);		/* rolls back: nothing written */
		else
			err = index_commit(c, err);
	}
	index_conn_put(ix, c);
	/* their rows are as they were */
	if (retaken && err)
		stuck_add(ix, object_id, (int64_t)off);
	if (whole && err)
		stuck_add(ix, object_id, -1);
	return err;
}

/* The release of KEY in the index gave ERR: noted released in memory
 * only if it failed, else the oldest such note is released too (the
 * index writes again). Returns ERR. */
static int released(struct index_conn *c, struct index_claim_key key, int err)
{
	struct index_claim_key older;
	if (err)
		stuck_add(c->ix, key.object_id, key.off);
	else if (stuck_take_oldest(c->ix, &older) && key_release(c, older) != 0)
		stuck_add(c->ix, older.object_id, older.off);
	return err;
}

/* Release KEY (key_release()), as index_unclaim() says. */
static int unclaim(struct index *ix, struct index_claim_key key)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = released(c, key, key_release(c, key));
	index_conn_put(ix, c);
	return err;
}

int index_unclaim(struct index *ix, int64_t object_id, uint64_t off)
{
	return unclaim(ix, (struct index_claim_key){ object_id, (int64_t)off });
}

int index_object_unclaim(struct index *ix, int64_t object_id)
{
	return unclaim(ix, (struct index_claim_key){ object_id, -1 });
}

int index_claim_ours(struct index *ix, int64_t object_id, uint64_t off)
{
	if (!ix)
		return -ENODEV;	/* no index */
	struct index_conn *c = index_conn_get(ix);
	int err = index_claim_ours_in(c, object_id, (int64_t)off);
	index_conn_put(ix, c);
	return err;
}

