/*
 * engine_int.h - the engine's private part: the structs its files share and
 * the functions one file offers the others. Public contract: cache.h.
 *
 * LEVELS: the files form a DAG; each calls only files of lower levels
 * (tests/check-calls reads the calls from the object files), so each can be
 * read and tested with what lies under it:
 *   level 0: plan.c     pure decisions: readahead, slivers, spill, runs (plan.h)
 *            version.c  pure: pinning a GET to a version, the stale verdict
 *            hint_line.c pure: a line of an order file (hint_line_parse())
 *            hint_at.c  pure: where a read lies in its image (read_at()),
 *                       and which tiles it reads (hint_at.h, for fs/ too)
 *            state.c    settings, the prefetch policy now, counters
 *            known.c    the known map; load_unit(): a cached unit read whole
 *                       and checked
 *            stage.c    a GET's bytes written to their data file as they
 *                       come, each unit's crc taken as they pass
 *   level 1: object.c   cache objects: references, accessors, the stale
 *                       mark, object_cut(): the layout at first use
 *            hint_plan.c one client's hint: its marks, what a read is of
 *   level 2: inflight.c the in-flight table, slivers and kept edges
 *            seal.c     cache_object_complete(), _seal(), _pin(), the seal
 *                       thread: complete objects checked whole, pinned
 *                       for passthrough
 *   level 3: fetch.c    claims, prefetch entries, merged GETs and their answers
 *   level 4: stream.c   whole-object prefetch, stepped by the persist thread
 *            open.c     cache_object_open(): probe claim, first fetch, TIFF parse
 *   level 5: persist.c  the persist thread: store, evict, edges, read times
 *            read.c     cache_read(): hits, checksum checks, joining, waiting
 *            objects.c  a bounded set of opened objects, by URL
 *   level 6: hint_fetch.c one entry of a hint opened and fetched
 *   level 7: hint.c     the hint's threads: the coming reads (tilefs hint)
 *                       handed to workers ahead of the readers
 *            warm.c     cache_warm(): fetch and store from the calling thread
 *   level 8: cache.c    cache_open(), cache_close(): starts the persist and
 *                       seal threads, so it sits above what they run
 *
 * INVARIANTS. The unit protocol across processes is numbered (1)-(7) in
 * cache/store/unit.h. Within one process the engine keeps these as well,
 * numbered apart (E1)-(E6):
 *
 *   (E1) A unit has at most one in-flight entry in a process: entries are
 *        made under c->lock after looking the table up (entry_new()), and
 *        leave the table only on the persist thread, after the unit is
 *        stored or its claim released (persist_thread()). A failure is
 *        shared only by the reads that joined the entry before it failed:
 *        a read that finds it failed waits for it to leave the table and
 *        fetches anew (read_lookup()), so a stale version's -ESTALE is
 *        not served to a fresh open of the same version id.
 *   (E2) An entry that holds the unit's claim (e->claimed) releases it
 *        exactly once: by its row (unit_record()) or by index_unclaim() on
 *        the persist thread when it is not persisted.
 *   (E3) A sliver (part of a unit, for one read) is never stored as a unit
 *        nor put in the table; the bytes kept of it (edges, in memory and
 *        in the index) are served, or fill the ends of a unit being
 *        fetched in place of a second GET of them, only for the object id,
 *        so the version, they came from (edge_read(), run_trim()).
 *   (E4) Every byte served for an object comes from its pinned version:
 *        cached units are keyed by its index id (one id per version), and
 *        every GET carries If-Match or If-Unmodified-Since and its answer
 *        is checked (version_pin(), version_verdict()).
 *   (E5) An entry that its fetch thread stored, and that no reader
 *        waits for when it settles, lets its buffer go (run_finish()):
 *        the persist thread records it with the crc taken at the write,
 *        and nobody reads the buffer of a written entry again. A read
 *        that finds it in the table reads those bytes from the data file
 *        and serves them only if no punch was counted since before the
 *        fetch thread wrote them (written_punches): every punch is
 *        counted before it is made (store_punch()), and from the claim to
 *        the record only the claim's holder, this process, could punch the
 *        unit, as no live holder's claim is taken over (unit.h, invariant
 *        8); after the record, only an eviction, which counts first
 *        (invariant 3). Else it waits for the entry to leave the table and
 *        looks at the cache again (read_written()). A reader that joined
 *        before it settled keeps the buffer for itself.
 *   (E6) A run sent in the background (one GET that no reader waited for
 *        when it was sent) of claimed, whole units writes their bytes to
 *        their data file as they come, through a stage (stage.c), and
 *        its entries have no buffer at all (run_stage()); each unit's crc
 *        is taken as its bytes pass, and taken anew when an origin sends
 *        them again from the first. A reader that joins such an entry
 *        reads its part from the data file once it is ready, by E5's rule;
 *        if a punch was counted since the write, it reads the part anew
 *        once the entry has left the table (read_written_again()). If a
 *        write fails, the entries stay UNIT_FETCHING and are fetched
 *        again into buffers (run_again()), marked buffered so they are
 *        never written so again.
 *
 * LOCKS: c->lock protects what is marked "c->lock" below. It is a leaf:
 * no other lock is taken under it, and it is never held across I/O, an
 * index call or an HTTP call. Reference counts (objects: atomic; entries:
 * under c->lock) are asserted never to go below zero.
 *
 * THREADS, and what each owns (their names, for top -H and perf, in
 * brackets):
 *   readers (FUSE workers [tilefs-fuse], warm's jobs, the hint's workers
 *     [tilefs-hintN]) make entries, claim units and submit GETs; they own
 *     nothing between calls. The hint's thread [tilefs-hint] hands its
 *     entries to its workers (hint.c).
 *   the fetch threads [tilefs-fetchN] (cache/origin/http.c: one per 4
 *     connections) run the GETs: a run's sink writes its entries'
 *     buffers (theirs alone while UNIT_FETCHING), or its stage and
 *     through it their data file (E6), and the part that ends a run last
 *     (parts_left) writes the claimed units' bytes to their data files
 *     (unit_write(); a stage's last bytes), then settles its entries
 *     under c->lock, frees the buffers no reader waits for (E5) and
 *     queues them; any fetch thread may end any run.
 *   the persist thread [tilefs-persist] alone records stored units in the
 *     index, takes entries out of the table (E1, E2), evicts, writes edges
 *     and read times, and steps whole-object streams (stream.c).
 *   the seal thread [tilefs-seal] checks complete objects and pins them for
 *     passthrough (seal.c).
 * Lock order: c->evict_lock (one evictor at a time) before c->lock, a
 * leaf; the locks of http.c are leaves too, never taken under c->lock.
 */
#ifndef TILEFS_ENGINE_INT_H
#define TILEFS_ENGINE_INT_H

#include "cache/engine/cache.h"
#include "cache/engine/plan.h"
#include "cache/engine/version.h"
#include "cache/origin/http.h"
#include "cache/store/index.h"
#include "cache/tiff/layout.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

#define TABLE_SIZE 1024
#define TOUCH_MAX 4096
#define TOUCH_OBJECTS_MAX 64
#define KNOWN_SLOTS (1u << 16)		/* units found cached, direct-mapped */
#define KNOWN_LOAD_MAX 4096		/* units of an object loaded as known at
					   its first use, in one query */
#define PREFETCH_MAX 512		/* units one read may add */
#define EDGE_SLOTS 256			/* slivers kept, over all objects */
/* A streamed object (--prefetch object, auto) goes out in background GETs
 * of at most STREAM_GET_MAX bytes, with at most c->background_budget of
 * them in flight, one GET's worth for each connection: a reader that needs
 * a unit of one waits for that GET whole, so they are kept short, and each
 * is sent only when http.c has a connection the readers left idle for it
 * (http_background_room()), never queued. */
#define STREAM_GET_MAX (2u << 20)
#define STREAMS 8			/* readers of one object told apart */

/* Bytes of a tile a reader's aligned buffer touched, kept (see plan.h):
 * in memory, in a ring, and in the index (index_edges_put()), where the
 * persist thread writes them. */
struct edge {
	struct edge *next;		/* c->lock: in c->edges_to_keep */
	int64_t object_id;
	uint64_t off;
	size_t len;			/* 0: empty slot */
	char buf[PLAN_SLIVER_MAX];
};
#define EDGES_TO_KEEP_MAX 256		/* edges waiting for the persist thread */

struct cache_object {
	atomic_int refs;
	struct cache *cache;
	int64_t id;			/* index id; < 0: not in the index, so
					   served from the origin, never cached */
	char *url, *log_name;
	struct version version;		/* what every GET is pinned to */
	time_t mtime;
	/* How it is cut: set at the open for a version the open parsed, else
	   at its first use (object_cut()), from the index: an open that only
	   checks a cached version (revalidation ahead) costs no memory per
	   tile. Read-only once cut is set. */
	struct layout layout;
	atomic_bool cut;
	pthread_mutex_t cut_lock;	/* held by object_cut() while it cuts */
	bool tiled;			/* a tile map is stored (read-only) */
	bool legacy;			/* plain blocks: no tile_maps row (read-only) */
	uint64_t header_len;		/* of the index row (read-only) */
	uint64_t block_size;		/* of the index row (read-only) */
	uint64_t opened_bytes;		/* the units past the header that the
					   open stored (read-only once open) */
	atomic_bool stale;
	atomic_bool whole_queued;	/* PREFETCH_OBJECT has started on it */
	atomic_bool complete;		/* every unit was found cached once */
	atomic_bool seal_queued;	/* seal_later() queued it (seal.c) */
	atomic_bool kept;		/* tilefs warm asked for it: the units the
					   persist thread stores of it are admitted
					   even into a full cache (warm.c) */
	bool seal_when_stored;		/* c->lock: an open found it all cached or
					   on its way: seal it once its units
					   in flight are stored (seal.c) */
	_Atomic int64_t touched_at;	/* cache_object_pin() last touched it */
	bool added;			/* this open put it in the index */
	struct stream streams[STREAMS];	/* c->lock */
	uint64_t stream_clock;		/* c->lock */
};

enum unit_state { UNIT_FETCHING, UNIT_READY, UNIT_FAILED };

/* A unit (or a sliver of one) being fetched by this process. */
struct inflight {
	struct inflight *table_next;	/* c->lock */
	struct inflight *queue_next;	/* c->lock */
	struct inflight *sliver_next;	/* c->lock */
	struct cache_object *obj;	/* holds a ref */
	struct extent unit;
	char *buf;			/* unit.len bytes; written by the fetch
					   thread before the state leaves FETCHING;
					   NULL once it let them go (E5) */
	enum unit_state state;		/* c->lock */
	int err;			/* set with state */
	int refs;			/* c->lock */
	bool persist;			/* write to store and index */
	bool claimed;			/* holds the index claim */
	bool prefetch;			/* no reader asked for it (yet) */
	bool ahead;			/* c->lock: a hint's, no reader joined
					   it: kept for them (evict.h) */
	bool wanted;			/* c->lock: read, and a hint's coming
					   read wants it again (want_again()) */
	int64_t stored_id;		/* c->lock: its row, once recorded
					   kept (ahead): a read from now on is
					   written as a read of it (entry_joined()) */
	bool sliver;			/* part of a unit, for one read only */
	bool buffered;			/* its bytes are kept in memory: writing
					   them as they came failed (E6) */
	/* Written by the fetch thread that settled it, before it left
	   FETCHING (run_finish()): its bytes are in the data file, under its
	   claim (unit_write()); the persist thread records them. */
	bool written;
	uint32_t crc;			/* of its bytes, when written */
	int write_err;			/* the write's, when written */
	uint64_t written_punches;	/* store_punches() before the write, when
					   buf was let go */
};

/*
 * A unit this process found cached: its row, the punch count
 * (store_punches()) read before that row was looked up, and whether its
 * bytes were read whole and matched the row's checksum. While the count
 * stays the same, the row stands without asking the index: eviction
 * deletes a row before it counts the punch of its bytes (unit.h, invariant 3).
 */
struct known_unit {
	struct index_unit u;		/* u.id 0: an empty slot */
	uint64_t punches;
	bool checked;
};

/* A whole object being prefetched by the persist thread, or to seal. */
struct object_job {
	struct object_job *next;	/* c->lock */
	struct cache_object *obj;	/* holds a ref */
	uint64_t cursor;		/* persist thread only */
};

struct cache {
	struct cache_config cfg;	/* read-only */
	struct source *src;
	struct http_client *http;
	struct index *index;
	struct store *store;
	pthread_t persister;
	pthread_t sealer;		/* seal.c */
	pthread_mutex_t lock;
	pthread_mutex_t evict_lock;	/* held by one evictor of the process */
	pthread_cond_t changed;		/* an entry left UNIT_FETCHING */
	pthread_cond_t work;		/* the persist queue grew, or stop */
	pthread_cond_t seal_work;	/* c->seals grew, or stop */
	struct inflight *table[TABLE_SIZE];	/* c->lock */
	struct inflight *queue_head;	/* c->lock: settled entries, in order */
	struct inflight **queue_end;	/* c->lock: the last one's queue_next */
	bool stopping;			/* c->lock */
	int64_t touched[TOUCH_MAX];	/* c->lock: unit ids read, to flush */
	size_t ntouched;		/* c->lock */
	int64_t touched_objects[TOUCH_OBJECTS_MAX];	/* c->lock: all of whose
					   units were read (passthrough), to flush */
	size_t ntouched_objects;	/* c->lock */
	struct index_unit_at wanted[TOUCH_MAX];	/* c->lock: units read that a
					   hint's coming read wants again, to
					   keep for it at the flush */
	size_t nwanted;			/* c->lock */
	struct known_unit *known;	/* c->lock: KNOWN_SLOTS */
	bool disk_full_logged;		/* persist thread only */
	atomic_bool room_wanted;	/* an open found the disk full under
					   the index: the persist thread makes
					   room, and says so */
	atomic_bool stage_failed_logged; /* a run's write as its bytes came
					   failed, logged at info (E6) */
	atomic_bool full;		/* at eviction's target or over, when
					   the persist thread last looked: only
					   then does a hint keep a tile for a
					   coming read (hint.c) */
	struct object_job *jobs;	/* c->lock: PREFETCH_OBJECT queue (stream.c) */
	bool jobs_off;			/* c->lock: cache_stop_prefetch() was called */
	bool stepping;			/* c->lock: the persist thread is in job_step() */
	struct object_job *seals;	/* c->lock: objects to seal (seal.c) */
	struct edge *edges;		/* c->lock: EDGE_SLOTS, round robin */
	size_t next_edge;		/* c->lock */
	struct edge *edges_to_keep;	/* c->lock: for the index, newest first */
	size_t nedges_to_keep;		/* c->lock */
	struct inflight *slivers;	/* c->lock: being fetched, to join */
	uint64_t background_bytes;	/* c->lock: in background GETs */
	uint64_t background_budget;	/* their bound: STREAM_GET_MAX a connection */
	_Atomic uint64_t mounted_bytes;	/* cache_set_mounted_bytes() */
	struct cache_stats stats;	/* c->lock */
	struct hint *hint;		/* hint.c; its own lock, taken before
					   c->lock */
	cache_open_fn opener;		/* cache_set_opener() */
	void *opener_arg;
};

/* state.c */
/* The policy a read of C follows now: cfg.prefetch, with auto resolved. */
enum prefetch_policy prefetch_policy(struct cache *c);
/* Count BYTES fetched (takes c->lock). */
void cache_count_fetched(struct cache *c, uint64_t bytes);
/* The unit UNIT_ID was read: its read time is written at the next flush
 * (persist.c), which also lets go of what was kept for its readers.
 * c->lock held. */
void unit_read_now(struct cache *c, int64_t unit_id);

/* known.c */
/* The known unit of OBJECT_ID at OFF into *out; false if none is kept.
 * c->lock held. */
bool known_get(struct cache *c, int64_t object_id, uint64_t off, struct known_unit *out);
/* Keep U, whose row was found after PUNCHES was read (and, if CHECKED, its
 * bytes matched); replaces whatever its slot held. Returns whether U's
 * bytes are known checked (now, or earlier in this process). c->lock
 * held. */
bool known_put(struct cache *c, const struct index_unit *u, uint64_t punches, bool checked);
/* Read all of unit U of OBJ into DST and check it (unit_verify()); 0 or
 * -EIO. Keeps a good unit as known and checked, its row found after
 * PUNCHES was read (takes c->lock). */
int load_unit(struct cache *c, struct cache_object *obj, const struct index_unit *u,
	      uint64_t punches, char *dst);

/* stage.c */
/* Where a GET's bytes go when they are written as they come: its units'
 * bytes through a stage of SIZE bytes on the data file's page grid (whose
 * whole pages go direct if DIRECT: store.h), the rest dropped. */
struct stage {
	struct store *store;
	int64_t object_id;
	uint64_t base;			/* the file offset of the GET's first byte */
	size_t size;
	bool direct;
	char *buf;			/* size + STORE_ALIGN bytes */
	uint64_t off;			/* file offset of its first staged byte */
	size_t staged;
	size_t at_unit;			/* the unit the next bytes reach first */
	size_t n;
	struct index_unit_new units[];	/* in order; crc: of their bytes so far */
};
/* A stage for a GET from file offset BASE of N units of OBJECT_ID (their
 * claims the caller's), which the caller puts in units[] (off, len), in
 * order; NULL: no memory. */
struct stage *stage_new(struct store *st, int64_t object_id, uint64_t base, size_t n,
			size_t size, bool direct);
/* http_sink_fn: take LEN bytes of the GET, AT bytes past BASE. 0, or the
 * error of a write. */
int stage_take(void *arg, uint64_t at, const char *data, size_t len);
/* Write out what is staged: after the GET's last byte. 0 or -errno. */
int stage_flush(struct stage *s);
void stage_free(struct stage *s);

/* object.c */
/* A new object (one ref, the caller's) of version V, last modified at
 * MTIME (0: unknown), not cut yet. */
struct cache_object *object_new(struct cache *c, int64_t id, const char *url,
				const char *log_name, const struct version *v, time_t mtime);
/* Cut OBJ (its layout) from the index, once, if the open did not: its
 * tile map read and decoded, and its first cached units kept as known (at
 * most KNOWN_LOAD_MAX, so a hit on them asks the index nothing). Every
 * use of obj->layout comes after this (cache_read(), cache_warm(),
 * cache_object_layout()). 0, or -EIO / -ENOMEM (logged): that use fails,
 * and the next one tries again. */
int object_cut(struct cache_object *obj);
/* Does LISTED (or NULL) name the version of ETAG and SIZE? (A version
 * without an ETag, such as an index row's "lm:" one, never matches.) */
bool listed_names(const struct cache_listed *listed, const char *etag, uint64_t size);
/* Note that the origin no longer has OBJ's version (logged once per call). */
void object_mark_stale(struct cache_object *obj);

/* inflight.c (c->lock held for all) */
struct inflight *table_find(struct cache *c, int64_t object_id, uint64_t off);
/* A new entry for UNIT in the table: the table's ref and the creator's. */
struct inflight *entry_new(struct cache *c, struct cache_object *obj, struct extent unit);
void table_remove(struct cache *c, struct inflight *e);
/* A reader read E: what a hint kept for it is let go (its flag, or, once
 * recorded kept, its row, at the next flush). */
void entry_joined(struct cache *c, struct inflight *e);
struct inflight *sliver_find(struct cache *c, const struct cache_object *obj,
			     struct extent part);
/* A sliver (PART of a unit): the list's ref and the creator's. */
struct inflight *sliver_new(struct cache *c, struct cache_object *obj, struct extent part);
void entry_unref(struct inflight *e);
/* Settle E with ERR, wake its readers, and hand it to the persist thread
 * (PERSIST: store it) or, for a sliver, drop it from the sliver list. */
void entry_settle(struct cache *c, struct inflight *e, int err, bool persist);
bool edge_get(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len,
	      char *dst);
/* The most bytes of OBJ from OFF on (at most MAX) that one edge in memory
 * holds, copied to DST; 0 if none holds the byte at OFF. */
size_t edge_head(struct cache *c, const struct cache_object *obj, uint64_t off, size_t max,
		 char *dst);
/* The most bytes of OBJ up to END (at most MAX) that one edge in memory
 * holds, copied so that they end at DST_END; 0 if none holds the byte
 * before END. */
size_t edge_tail(struct cache *c, const struct cache_object *obj, uint64_t end, size_t max,
		 char *dst_end);
/* Keep LEN bytes at OFF of OBJ as an edge: in memory, and (for an object in
 * the index) queued for the persist thread to write to the index. */
void edge_keep(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len,
	       const char *src);

/* seal.c */
/* The seal thread: seals the objects cache_object_pin() queues, one at a
 * time (each is read whole: off the persist thread, which must keep
 * storing what is fetched meanwhile). */
void *seal_thread(void *arg);
/* Entries of OBJS[0..n) have just left the in-flight table (stored, or
 * given up): queue the seal of each one an open marked (seal_when_stored)
 * that has none left in it. c->lock held. */
void seal_stored(struct cache *c, struct cache_object *const *objs, size_t n);

/* fetch.c */
/* Reset REQ to a GET of [off, off+len) of URL pinned to version V, with
 * the source's credentials; the caller sets the body. */
void pinned_get(struct cache *c, const char *url, const char *log_name, const struct version *v,
		uint64_t off, uint64_t len, struct http_request *req);
/* Claim the unit of E in the index. 0: claimed (or nothing to claim,
 * e->claimed tells); -EBUSY or -EEXIST: another process has it. */
int entry_claim(struct cache *c, struct cache_object *obj, struct inflight *e);
/* Start fetching those of UNITS[0..n) (n <= PREFETCH_MAX) of OBJ that are
 * neither cached, nor in flight, nor claimed by another process, ahead of
 * any read, claiming them in one index transaction; AHEAD: for a hint's
 * readers, to be kept for them in a full cache (inflight.ahead). Puts the
 * new entries (their creator's refs are the caller's) in OUT, in the order
 * of UNITS, and returns how many. */
size_t prefetch_entries(struct cache *c, struct cache_object *obj, const struct extent *units,
			size_t n, bool ahead, struct inflight **out);
/* May one more background GET be sent now? Only while the bytes in
 * background GETs are under c->background_budget and the HTTP client has a
 * connection the readers left idle for it (http_background_room()), so no
 * background GET waits queued where a reader could need its bytes. The
 * one test for every producer of background GETs. Takes c->lock. */
bool background_room(struct cache *c);
/* Whom units are fetched for (submit_runs()): which bytes beyond them a
 * GET brings, kept as edges (E3). */
enum fetch_for {
	FETCH_FOR_STREAM,	/* whole-object streaming: none, the next unit
				   comes whole */
	FETCH_FOR_READER,	/* a read: the rest of the last tile's page,
				   when a reader waits for the tiles */
	FETCH_FOR_HINT,		/* a hint's readers, who read a tile with the
				   pages around it: the start of the first
				   tile's page and the rest of the last's */
};
/* Fetch entries V[0..n) (claimed, sorted by offset) in merged GETs. */
void submit_runs(struct cache *c, struct cache_object *obj, struct inflight **v, size_t n,
		 enum fetch_for why);

/* stream.c */
/* Queue OBJ for whole-object prefetch by the persist thread, once. */
void object_prefetch_start(struct cache *c, struct cache_object *obj);
/* Send the next background GET of the first whole-object job (the
 * persist thread, c->stepping set); -EAGAIN when background_room() says
 * no (try again later). */
int job_step(struct cache *c);
/* Drop the first job of LIST (c->jobs). c->lock held. */
void job_done(struct object_job **list);

/* hint_at.c */
/* Where a read lies in the full-resolution image of its object. */
struct read_at {
	bool tile;			/* in a tile of it: col, row */
	bool fine;			/* a tile of a few KiB (strips of a plain
					   GeoTIFF, a row or a few each): a
					   reader's buffer takes some beside what
					   it reads */
	uint64_t margin;		/* fine: tiles around a window a reader's
					   buffer may take (read_at_window()) */
	uint64_t col, row;
	uint32_t block_w, block_h;
};
/* The full-resolution tile of L whose middle byte a read of [OFF,
 * OFF+LEN) holds, if any (tile false: none, or no tile map). */
struct read_at read_at(const struct layout *l, uint64_t off, uint64_t len);
/* Is a read at AT in a tile the window X Y W H of the full-resolution
 * image touches, or, for a fine tile, within at->margin tiles of one? */
bool read_at_window(const struct read_at *at, uint64_t x, uint64_t y, uint64_t w, uint64_t h);
/* Does the window X Y W H lie in the full-resolution image of L? If not,
 * why, in WHY. */
bool window_inside(const struct layout *l, uint64_t x, uint64_t y, uint64_t w, uint64_t h,
		   char *why, size_t why_size);

/* hint_fetch.c */
struct hint_entry;
/* What hint_fetch() asks of its caller as it goes. */
struct hint_fetch_ops {
	bool (*go_on)(void *arg);	/* false: the entry is no longer wanted */
	void (*sent)(void *arg, uint64_t bytes);	/* a GET of that many
					   bytes of units was sent */
	bool (*again)(void *arg, const struct cache_object *obj,
		      struct extent unit);	/* does a coming entry want UNIT
					   again once the readers had it? */
	void *arg;
};
/* Open the object of E (or take it from OPENED, where it stays; in the
 * background when AHEAD of its readers) and send for the units of E that
 * are neither cached nor in flight, in background GETs while the
 * background budget has room. 0, or -errno when E cannot be fetched
 * (logged). */
int hint_fetch(struct cache *c, struct cache_objects *opened, const struct hint_entry *e,
	       bool ahead, const struct hint_fetch_ops *ops);

/* hint.c */
struct hint;
/* The (empty) hint of C; NULL: no memory. Freed with hint_free(). */
struct hint *hint_new(struct cache *c);
/* Stop its thread (cache_hint_stop()) and free it; NULL is fine. */
void hint_free(struct hint *h);

/* persist.c */
void *persist_thread(void *arg);
/* A hint's coming read wants the unit at OFF of OBJECT_ID again, which a
 * read just had (KEEP), or none does (let it go): kept for it when the
 * read times are written (index_units_wanted()), as long as what is kept
 * so stays under an eighth of the cache; a unit still in flight is stored
 * kept. */
void want_again(struct cache *c, int64_t object_id, uint64_t off, bool keep);
/* Drop units, least valuable first, until the cache is within its bound;
 * note in c->full whether it is at eviction's target (for the hint). */
void evict(struct cache *c);

#endif
