/*
 * index_int.h - private to cache/store/index.c, index_open.c,
 * index_units.c, index_claims.c and index_edges.c: the connection pool, the
 * prepared statements they use. Everyone else uses index.h.
 *
 * DESIGN: a fixed pool of INDEX_POOL_SIZE connections, each with its
 * prepared statements (prepared on first use from the table in index.c); a
 * caller borrows one for the duration of one function
 * (index_conn_get/index_conn_put; ix->lock is a leaf lock). A write
 * transaction (index_begin .. index_commit), and a write run alone
 * (index_exec() outside one), also holds ix->writing: SQLite lets one
 * writer in at a time and makes the others sleep and retry (1, 2, 5, 10 ms
 * ...), so threads of one process queue on a mutex instead, and only other
 * processes meet SQLite's busy wait.
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers). Only cache/store uses
 * sqlite3.h.
 */
#ifndef TILEFS_INDEX_INT_H
#define TILEFS_INDEX_INT_H

#include "cache/store/index.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#define INDEX_POOL_SIZE 6
/* meta.schema of the databases this tilefs writes and reads. */
#define INDEX_SCHEMA_VERSION 6

/* The prepared statements; their SQL is stmt_sql in index.c. */
enum stmt_id {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK,
	ST_OBJECT_LATEST, ST_OBJECT_INSERT, ST_OBJECT_ID,
	ST_OBJECT_DROP_UNITS, ST_OBJECT_DROP_CLAIMS, ST_OBJECT_DROP,
	ST_UNIT_FIND, ST_UNIT_INSERT, ST_UNIT_DROP, ST_UNIT_EVICT, ST_UNIT_TOUCH,
	ST_CLAIM_GET, ST_CLAIM_PUT, ST_CLAIM_DROP, ST_CHANGES,
	ST_USAGE, ST_PROBATION, ST_EVICT_PROBATION, ST_EVICT_ADMITTED, ST_COUNTS, ST_MAP_INSERT, ST_MAP_GET, ST_OBJECT_DROP_MAP,
	ST_OBJECT_GET, ST_OBJECT_USAGE, ST_OBJECTS_ALL, ST_UNITS_OF,
	ST_EDGE_PUT, ST_EDGE_FIND, ST_EDGES_DROP_NEAR, ST_OBJECT_DROP_EDGES,
	ST_SEAL_PUT, ST_SEAL_GET, ST_OBJECT_TOUCH, ST_OBJECT_EVICT_CHECK, ST_OBJECT_CLAIM_ALL,
	ST_OBJECT_UNCLAIM, ST_SEAL_DROP, ST_OBJECT_SEALED, ST_PROOF_GET, ST_PROOF_PUT,
	ST_VICTIM, ST_GHOST_GET, ST_GHOST_DROP, ST_GHOST_PUT_UNIT, ST_GHOST_PUT_OBJECT,
	ST_GHOSTS_TRIM, ST_GHOSTS_OVER, ST_UNIT_ADMIT, ST_AHEAD_BYTES, ST_UNIT_WANTED, ST_UNIT_UNWANTED,
	ST_WANTED_BYTES,
	ST_COUNT
};

struct index_conn {
	struct index *ix;
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_COUNT];
	struct index_conn *next_free;
};

#define INDEX_STUCK_MAX 256	/* claims released in memory only, at most */

struct index {
	char *path;
	int lock_fd;			/* index.lock, held shared; its
					   holder byte locked (index_open.c) */
	int probe_fd;			/* index.lock again, to ask for others'
					   holder locks (index_holder_alive()) */
	int64_t holder;			/* this index's claims.holder */
	char instance[40];
	char proof_salt[40];		/* meta.proof_salt (index_proof_salt()) */
	pthread_mutex_t lock;
	pthread_mutex_t writing;	/* held from index_begin to index_commit */
	pthread_cond_t available;
	struct index_conn conns[INDEX_POOL_SIZE];
	struct index_conn *free_conns;	/* protected by lock */
	/* claims this holder released that the index would not write
	   (index_claims.c), oldest first; protected by lock */
	struct index_claim_key {
		int64_t object_id, off;
	} stuck[INDEX_STUCK_MAX];
	size_t nstuck;
};

/* Does the claim holder HOLDER (claims.holder) still have its index
 * open, in any process on this machine (index_open.c, HOLDERS)? True too
 * when the lock cannot be asked: a claim is never taken over on a guess. */
bool index_holder_alive(struct index *ix, int64_t holder);

/* index.c: drop the claim on (OBJECT_ID, OFF) if HOLDER holds it, and
 * no other's (invariant 8). */
int index_claim_drop(struct index_conn *c, int64_t object_id, int64_t off, int64_t holder);
/* index_claims.c, inside a transaction: take the claim on (OBJECT_ID,
 * OFF) for this holder in place of any other (the caller checked that
 * none is held); 0 if this holder holds it, -EBUSY if not (another does,
 * or none), or the index's error. */
int index_claim_put(struct index_conn *c, int64_t object_id, int64_t off);
int index_claim_ours_in(struct index_conn *c, int64_t object_id, int64_t off);

/* Now, in seconds (Unix time): what last_access and claims.since hold. */
int64_t index_now(void);
/* Map the SQLite result RC of WHAT to a negative errno, logging it (at most
 * a line a second); DB for its message, or NULL. */
int index_sql_error(sqlite3 *db, int rc, const char *what);

/* Borrow a connection of IX (waits for one); give it back with
 * index_conn_put() before returning. */
struct index_conn *index_conn_get(struct index *ix);
void index_conn_put(struct index *ix, struct index_conn *c);

/* C's prepared statement ID, reset and its bindings cleared; NULL if it
 * cannot be prepared (logged). Borrowed with C. */
sqlite3_stmt *index_stmt(struct index_conn *c, enum stmt_id id);
/* Run S (from index_stmt(); NULL gives -EIO), a statement that returns no
 * rows. A write outside a transaction holds ix->writing while it runs. */
int index_exec(struct index_conn *c, sqlite3_stmt *s, const char *what);
/* Bind A, B as ?1, ?2 of statement ID and run it; for the keyed ones. */
int index_exec_keyed(struct index_conn *c, enum stmt_id id, int64_t a, int64_t b,
		     const char *what);
/* Drop the edges of OBJECT_ID that start in [from, to) (index_edges.c). */
int index_edges_drop(struct index_conn *c, int64_t object_id, uint64_t from, uint64_t to);
/* BEGIN IMMEDIATE, holding ix->writing until index_commit() (not on failure). */
int index_begin(struct index_conn *c);
/* End the transaction begun: commit if ERR is 0, else roll back and return
 * ERR. A failed commit is rolled back too. */
int index_commit(struct index_conn *c, int err);

#endif
