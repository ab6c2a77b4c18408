/*
 * open.c - cache_object_open(): find the current version of an object and
 * how it is cut into units. A version cached before costs one HEAD (to
 * check it is still current), or nothing when a fresh listing gave its
 * ETag, and no parsing: its tile map is in the index, read at its first
 * read (object_cut()), so that an open that only checks it (revalidation
 * ahead) holds nothing per tile.
 * A new one costs a GET of its first header_len bytes; a TIFF's IFDs are
 * parsed from those (fetching more, pinned to that version, if they lie
 * further on) and the tile map is stored with the object, in the same
 * transaction, so every process cuts it the same way. The units those
 * fetches cover are stored at once.
 *
 * Only one process probes an object nobody has cached: it holds a claim
 * keyed by the URL (probe_claim()); the others wait and find its row.
 *
 * A mount serves cached bytes of an object only to an identity that has
 * read it at the origin (proved()): the listing's word that the cached
 * version is current saves the HEAD only when this cache's identity has a
 * proof of that version in the index younger than --ttl; otherwise the
 * HEAD (or first GET) is sent with our own credentials, and its 2xx
 * records the proof (a 401 or 403 fails the open: -EACCES), for the
 * principal whose credentials signed the attempt that got the 2xx, which
 * a renewal between two attempts can make another than the one named
 * before the request (prove()). Proofs are per version (index object id),
 * so a changed object is proved again.
 *
 * The index keys an object by its URL without the query (index.h), so the
 * full URL (a SAS, a token) is passed to it and used for every request,
 * but never stored; cache entries of a tilefs that stored the query are
 * missed once. A damaged row (index_object_*() -EBADMSG, logged by the
 * index) makes the object read uncached.
 *
 * Level 4 of the engine (engine_int.h): calls fetch.c (pinned GETs) and
 * what lies under it.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"
#include "cache/origin/reach.h"
#include "cache/store/index.h"
#include "cache/store/store.h"
#include "cache/store/unit.h"
#include "cache/tiff/tiff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PARSE_FETCHES_MAX 16		/* GETs the TIFF parser may cause */
#define PARSE_CHUNK (1u << 20)		/* bytes each of them asks for */
#define WHOLE_HEADERS 4			/* a file listed no larger than this many
					   header_lens is fetched whole at once */

/*
 * Nothing of URL is cached: become the one process that probes it, or wait
 * while another does. Returns true if we hold the probe claim; sets *known
 * when the other process's probe recorded the object meanwhile.
 */
static bool probe_claim(struct cache *c, const char *url, struct index_object *latest,
			bool *known)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int64_t key = index_probe_key(url);

	for (int i = 0; i < c->cfg.claim_wait_s * 200; i++) {
		pid_t holder;
		int rc = index_claim(c->index, key, 0, &holder);
		if (rc == 0 && index_object_latest(c->index, url, latest) == 0) {
			/* probed by another process just before our claim */
			index_unclaim(c->index, key, 0);
			*known = true;
			return false;
		}
		if (rc != -EBUSY)
			return rc == 0;
		nanosleep(&pause, NULL);
		if (index_object_latest(c->index, url, latest) == 0) {
			*known = true;
			return false;
		}
	}
	return false;
}

/*
 * The bytes fetched while opening an object: its first header_len bytes,
 * and whatever more the TIFF parser asked for. Every unit they cover is
 * stored once the object's layout is known.
 */
struct fetched {
	struct cache *cache;
	const char *url, *log_name;
	bool background;		/* its GETs are background ones */
	struct version version;		/* what every GET is pinned to */
	size_t n;
	struct {
		uint64_t off;
		size_t len;
		char *buf;
	} range[PARSE_FETCHES_MAX];
};

static void fetched_release(struct fetched *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->range[i].buf);
	f->n = 0;
}

/* The end of the bytes fetched from OFF on, without a gap (OFF: none). */
static uint64_t fetched_end(const struct fetched *f, uint64_t off)
{
	for (size_t i = 0; i < f->n; i++)
		if (off >= f->range[i].off && off < f->range[i].off + f->range[i].len) {
			off = f->range[i].off + f->range[i].len;
			i = (size_t)-1;		/* look again from there */
		}
	return off;
}

/* Copy [off, off+len) from what was fetched; false if some is missing. */
static bool fetched_copy(const struct fetched *f, char *dst, uint64_t off, size_t len)
{
	while (len > 0) {
		size_t i = 0;
		while (i < f->n && !(off >= f->range[i].off && off < f->range[i].off + f->range[i].len))
			i++;
		if (i == f->n)
			return false;
		size_t take = (size_t)(f->range[i].off + f->range[i].len - off);
		if (take > len)
			take = len;
		if (dst) {
			memcpy(dst, f->range[i].buf + (off - f->range[i].off), take);
			dst += take;
		}
		off += take;
		len -= take;
	}
	return true;
}

/* tiff_read_fn: serve the parser from what was fetched, fetching more
 * (pinned to the version opened) in chunks of PARSE_CHUNK. */
static int fetched_read(void *arg, void *buf, size_t len, uint64_t off)
{
	struct fetched *f = arg;
	uint64_t size = f->version.size;

	if (off > size || len > size - off)
		return -ERANGE;
	if (fetched_copy(f, buf, off, len))
		return 0;
	if (f->n == PARSE_FETCHES_MAX)
		return -E2BIG;
	uint64_t start = fetched_end(f, off);	/* past what is there already */
	uint64_t end = off + len - start > PARSE_CHUNK ? off + len : start + PARSE_CHUNK;
	if (end > size)
		end = size;
	struct http_request req;
	pinned_get(f->cache, f->url, f->log_name, &f->version, start, end - start, &req);
	req.background = f->background;
	req.body = malloc(req.len);
	if (!req.body)
		return -ENOMEM;
	http_run(f->cache->http, &req);
	int err = version_verdict(&f->version, &req);
	if (err) {
		free(req.body);
		return err;
	}
	f->range[f->n].off = start;
	f->range[f->n].len = req.body_len;
	f->range[f->n].buf = req.body;
	f->n++;
	cache_count_fetched(f->cache, req.body_len);
	return fetched_copy(f, buf, off, len) ? 0 : -EIO;
}

/* The units of OBJ that the fetched bytes touch. */
static size_t units_touched(const struct cache_object *obj, const struct fetched *f)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++) {
		uint64_t end = f->range[i].off + f->range[i].len;
		for (uint64_t p = f->range[i].off; p < end; n++) {
			struct extent unit = layout_unit_at(&obj->layout, p);
			p = unit.off + unit.len;
		}
	}
	return n;
}

/* Store every unit of OBJ that the fetched bytes cover whole, claimed in
 * one index transaction and recorded in another (a small file's units
 * come together); the bytes of those past the header unit (a small
 * file's tiles, say) in obj->opened_bytes. */
static void store_fetched(struct cache *c, struct cache_object *obj, const struct fetched *f)
{
	size_t max = obj->id < 0 ? 0 : units_touched(obj, f), n = 0;
	if (!max)
		return;
	struct index_unit_new *v = calloc(max, sizeof(*v));
	uint64_t *offs = calloc(max, sizeof(*offs));
	int *claimed = calloc(max, sizeof(*claimed));
	char **bytes = calloc(max, sizeof(*bytes));
	for (size_t i = 0; v && offs && claimed && bytes && i < f->n; i++) {
		uint64_t end = f->range[i].off + f->range[i].len;
		for (uint64_t p = f->range[i].off; p < end;) {
			struct extent unit = layout_unit_at(&obj->layout, p);
			p = unit.off + unit.len;
			char *b = malloc(unit.len ? unit.len : 1);
			if (!b || !fetched_copy(f, b, unit.off, unit.len)) {
				free(b);	/* not covered whole */
				continue;
			}
			bytes[n] = b;
			v[n] = (struct index_unit_new){ .off = unit.off, .len = unit.len };
			offs[n++] = unit.off;
		}
	}
	bool asked = n && index_claims(c->index, obj->id, offs, n, claimed) == 0;
	size_t k = 0;	/* the claimed ones, kept at the front */
	for (size_t i = 0; i < n; i++) {
		if (!asked || claimed[i] != 0) {
			free(bytes[i]);
			continue;
		}
		bytes[k] = bytes[i];
		v[k++] = v[i];
	}
	if (k)
		unit_put_many(c->index, c->store, obj->id, v, (const void *const *)bytes, k,
			      c->cfg.size_limit);	/* or on probation */
	for (size_t i = 0; i < k; i++) {
		if (v[i].err == 0 && v[i].off > 0)
			obj->opened_bytes += v[i].len;
		free(bytes[i]);
	}
	free(bytes);
	free(claimed);
	free(offs);
	free(v);
}

/* Run REQ (reset) against URL: a HEAD, or a GET of its first LEN bytes
 * into a buffer the caller frees (req->body). STALE_OK: the caller can
 * open the version it knows if no origin answers; BACKGROUND: made ahead
 * of the readers (http_request). */
static int probe_run(struct cache *c, const char *url, const char *log_name, uint64_t len,
		     bool stale_ok, bool background, struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->url = url;
	req->log_name = log_name;
	req->head = len == 0;
	req->len = len;
	req->stale_ok = stale_ok;
	req->background = background;
	if (len && !(req->body = malloc(len)))
		return -ENOMEM;
	source_prepare(c->src, req);
	return http_run(c->http, req);
}

uint64_t cache_whole_size(const struct cache *c)
{
	return WHOLE_HEADERS * c->cfg.header_len;
}

/*
 * GET the first header_len bytes of URL into F (an empty object: HEAD),
 * or all of it when LISTED says it is small: a file of chips, one tile
 * each, is then read with one request, not a header and then its tile.
 */
static int fetch_first(struct cache *c, const char *url, const char *log_name,
		       const struct cache_listed *listed, struct http_request *req,
		       struct fetched *f)
{
	uint64_t len = c->cfg.header_len;
	if (listed && listed->size > (int64_t)len && (uint64_t)listed->size <= cache_whole_size(c))
		len = (uint64_t)listed->size;
	int err = probe_run(c, url, log_name, len, false, f->background, req);
	if (err == -ERANGE) {
		free(req->body);
		err = probe_run(c, url, log_name, 0, false, f->background, req);
	}
	if (!err && req->body_len > 0) {
		f->range[0].off = 0;
		f->range[0].len = req->body_len;
		f->range[0].buf = req->body;
		f->n = 1;
		cache_count_fetched(c, req->body_len);
	} else {
		free(req->body);
	}
	req->body = NULL;
	return err;
}

/* Parse what F holds (fetching more if needed) into an encoded tile map
 * (*blob NULL: not a usable TIFF, which is logged when it claims to be). */
static int parse_tiles(struct cache *c, struct fetched *f, void **blob, size_t *blob_len)
{
	struct tiff_map *map = NULL;
	char why[160];

	*blob = NULL;
	*blob_len = 0;
	int err = tiff_map_parse(fetched_read, f, f->version.size, &map, why, sizeof(why));
	if (err == -EINVAL || err == -E2BIG)
		log_warn("%s: not a usable TIFF (%s); caching it as plain bytes", f->log_name,
			 err == -E2BIG ? "its IFDs are scattered over too many places" : why);
	if (err == -EINVAL || err == -E2BIG || err == -ENOTSUP)
		return 0;
	if (err)
		return err;
	err = tiff_map_encode(map, blob, blob_len);
	tiff_map_free(map);
	return err;
}

/* An id for an object read uncached: negative, so never an index id. */
static int64_t uncached_id(void)
{
	static atomic_llong next = -1;
	return atomic_fetch_sub(&next, 1);
}

/* The disk under the index is full: the persist thread makes room and
 * says so, as for the data (persist.c). */
static void room_wanted(struct cache *c)
{
	atomic_store(&c->room_wanted, true);
	pthread_mutex_lock(&c->lock);
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
}

/*
 * How the index says object FOUND is cut: *TILED (a tile map is stored, read
 * at the object's first use: object_cut()), or *LEGACY for plain blocks.
 * When the index cannot say, FOUND gets an id of its own, so it is read
 * uncached: units cut another way than other processes cut them must never
 * be stored.
 */
static void indexed_cut(struct cache *c, struct index_object *found, const char *log_name,
			bool *tiled, bool *legacy)
{
	int err = index_object_cut(c->index, found->id, &found->header_len, tiled);
	*legacy = err != 0;
	if (err && err != -ENOENT) {
		log_warn("%s: cannot read how the cache index cuts it; reading it uncached",
			 log_name);
		found->id = uncached_id();
	}
}

/* Cut OBJ as the index row FOUND and BLOB say (BLOB NULL: plain bytes;
 * LEGACY: plain blocks). */
static void object_layout(struct cache_object *obj, const struct index_object *found,
			  const void *blob, size_t blob_len, bool legacy)
{
	struct tiff_map *map = NULL;
	if (legacy) {
		layout_init_blocks(&obj->layout, obj->version.size, found->block_size);
		return;
	}
	if (blob && tiff_map_decode(blob, blob_len, obj->version.size, &map) != 0)
		log_warn("%s: the cached tile map is damaged; reading it as plain bytes",
			 obj->log_name);
	if (layout_init(&obj->layout, obj->version.size, found->block_size, found->header_len, map) != 0)
		layout_init_blocks(&obj->layout, obj->version.size, found->block_size);
}

/* The version REQ's answer names (its ETag, else "lm:" Last-Modified);
 * -EIO if it did not say how large the object is. */
static int answer_version(const struct http_request *req, const char *log_name, char *version,
			  size_t len)
{
	if (req->object_size == UINT64_MAX) {
		log_error("%s: the origin did not say how large it is", log_name);
		return -EIO;
	}
	if (req->etag[0])
		snprintf(version, len, "%s", req->etag);
	else
		snprintf(version, len, "lm:%s", req->last_modified);
	return 0;
}

/* Has IDENTITY ("" when the source has none at hand) read version ID at
 * the origin? A proof stands as long as the version: a remount by the
 * same identity asks nothing. */
static bool proved(struct cache *c, int64_t id, const char *identity)
{
	int64_t at;
	return identity[0] && index_proof_get(c->index, id, identity, &at) == 0;
}

/*
 * The principal whose request REQ (a 2xx) was, into SIGNED_AS, to record
 * that it has read the version REQ named: the one its signer signed that
 * attempt as, which need not be the one named before the request (a
 * renewal between two attempts can hand other keys, of another principal,
 * to the retry). NULL when it cannot be named (its credential renewed
 * since, or expired): nothing is recorded, and the next open asks again.
 */
static const char *prover(struct cache *c, const struct http_request *req,
			  const char *log_name, char signed_as[SOURCE_IDENTITY_LEN + 1])
{
	int err = source_identity_signed(c->src, index_proof_salt(c->index), req, signed_as);

	if (err)
		log_debug("%s: no proof recorded (%s): the next open asks again", log_name,
			  err == -ESTALE ? "its credentials were renewed meanwhile" :
			  strerror(-err));
	return err ? NULL : signed_as;
}

bool cache_object_known(struct cache *c, const char *url)
{
	struct index_object latest;
	return index_object_latest(c->index, url, &latest) == 0;
}

int cache_object_open(struct cache *c, const char *url, const char *log_name,
		      const struct cache_listed *listed, bool background,
		      struct cache_object **out)
{
	struct index_object latest = { 0 }, found = { 0 };
	struct http_request req = { 0 };
	struct fetched f = { .cache = c, .url = url, .log_name = log_name,
			     .background = background };
	char version[192];
	void *blob = NULL;
	size_t blob_len = 0;
	bool legacy = false, created = false, tiled = false;
	time_t mtime;
	int err = 0;

	/* who asks: the principal of the credentials in use now, whose proof
	   saves the request; the proof a request writes names whoever signed
	   the attempt that succeeded (prove()) */
	char identity[SOURCE_IDENTITY_LEN + 1] = "";
	if (source_identity_hash(c->src, index_proof_salt(c->index), identity) != 0)
		identity[0] = '\0';
	bool known = index_object_latest(c->index, url, &latest) == 0;
	bool claimed = !known && probe_claim(c, url, &latest, &known);
	size_t etag_len = strlen(latest.version);
	bool current = known && listed_names(listed, latest.version, latest.size) &&
		       etag_len < sizeof(f.version.etag) && proved(c, latest.id, identity);
	/* with the origin down, this identity may read the version it proved
	   (docs/SEMANTICS.md, "When the origin is down") */
	bool stale_ok = known && !current && etag_len < sizeof(f.version.etag) &&
			proved(c, latest.id, identity);
	if (stale_ok && source_answer_stale(c->src, c->http, url))
		current = true;
	bool asked = false;	/* the origin told us the version */
	char signed_as[SOURCE_IDENTITY_LEN + 1];
	const char *proved_by = NULL;	/* who asked, to record once asked */
	if (!current) {
		if (known)
			err = probe_run(c, url, log_name, 0, stale_ok, background,
					&req);	/* just check it is current */
		else
			err = fetch_first(c, url, log_name, listed, &req, &f);
		if (err && stale_ok && reach_classify(req.status, err) < 0) {
			/* the check found the origin down: the version we know */
			log_debug("%s: origin down; opening the version cached", log_name);
			reach_count_stale(http_reach(c->http));
			current = true;
			err = 0;
		} else {
			if (!err)
				err = answer_version(&req, log_name, version, sizeof(version));
			if (err)
				goto fail;
			asked = true;
			current = known && strcmp(latest.version, version) == 0 &&
				  latest.size == req.object_size;
			if (known && !current) {
				/* changed on the origin: read the new version's header */
				log_info("%s changed on the origin", log_name);
				err = fetch_first(c, url, log_name, listed, &req, &f);
				if (!err)
					err = answer_version(&req, log_name, version,
							     sizeof(version));
				if (err)
					goto fail;
			}
			version_of_answer(&f.version, &req);
			proved_by = prover(c, &req, log_name, signed_as);
			mtime = http_date_parse(req.last_modified);
		}
	}
	if (!asked) {
		/* the listing vouches for it, or the origin is down, and we
		   have read it: no request */
		memcpy(f.version.etag, latest.version, etag_len + 1);
		f.version.size = latest.size;
		mtime = listed ? listed->mtime : 0;
	}

	if (current) {
		found = latest;
		indexed_cut(c, &found, log_name, &tiled, &legacy);
	} else {
		found.size = req.object_size;
		found.block_size = c->cfg.block_size;
		found.header_len = c->cfg.header_len;
		snprintf(found.version, sizeof(found.version), "%s", version);
		err = parse_tiles(c, &f, &blob, &blob_len);
		if (err)
			goto fail;
		if (!req.etag[0] && !req.last_modified[0]) {
			/* nothing tells one version from the next: never cache it */
			log_warn("%s: the origin gives neither ETag nor Last-Modified; reading it uncached",
				 log_name);
			found.id = uncached_id();
		} else if ((err = index_object_add(c->index, url, &found, blob, blob_len,
						   &(struct index_add_also){ proved_by, claimed },
						   &created)) != 0) {
			if (store_full(err))
				room_wanted(c);	/* said with the data's disk-full */
			else
				log_warn("%s: the cache index cannot record it; reading it uncached",
					 log_name);
			err = 0;
			found.id = uncached_id();
		} else {
			proved_by = NULL;	/* recorded with it, */
			claimed = false;	/* and the probe claim released */
			if (!created) {
				/* another process added it first: cut it as it did */
				free(blob);
				blob = NULL;
				indexed_cut(c, &found, log_name, &tiled, &legacy);
			}
		}
		/* an older version's units are left to eviction: open files of
		   this or another process may still read them */
	}

	if (proved_by && found.id >= 0)
		index_proof_put(c->index, found.id, proved_by);
	struct cache_object *obj = object_new(c, found.id, url, log_name, &f.version, mtime);
	err = -ENOMEM;
	if (!obj)
		goto fail;
	obj->legacy = legacy;
	obj->tiled = tiled;
	obj->header_len = found.header_len;
	obj->block_size = found.block_size;
	if (blob || found.id < 0 || (!current && created)) {
		/* cut by what this open parsed (or read uncached): now */
		object_layout(obj, &found, blob, blob_len, legacy);
		obj->tiled = obj->layout.map != NULL;
		atomic_store(&obj->cut, true);
	}
	obj->added = created;
	if (f.n > 0 && object_cut(obj) == 0)
		store_fetched(c, obj, &f);
	if (claimed)
		index_unclaim(c->index, index_probe_key(url), 0);
	fetched_release(&f);
	free(blob);
	log_debug("%s: opened (%s)", log_name, current ? "cached version" : "new version");
	*out = obj;
	return 0;
fail:
	if (claimed)
		index_unclaim(c->index, index_probe_key(url), 0);
	fetched_release(&f);
	free(blob);
	pthread_mutex_lock(&c->lock);
	c->stats.errors++;
	pthread_mutex_unlock(&c->lock);
	return err;
}

