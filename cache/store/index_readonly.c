/*
 * index_readonly.c - see index.h: index_open_readonly(), the index as a
 * command that only reports on a cache opens it.
 *
 * Such a command may be pointed at a directory tilefs never made (inspect
 * takes the cache dir a mount names), so it creates nothing and changes
 * nothing there: no index.db, no index.lock, no chmod, no schema, no
 * rebuild of a broken database. A directory without index.db and
 * index.lock (which every index_open() leaves) holds no cache.
 *
 * Nor does SQLite add anything: a reader of a WAL database that no process
 * has open (no index.db-wal, no -shm: the last to close it checkpointed
 * and removed them) would create both, so such a database is read as
 * immutable, from index.db alone. A process that opens it meanwhile
 * writes to a new -wal, and touches index.db only at a checkpoint (1000
 * pages, or its close); a report that meets one may fail (-EBADMSG) or
 * miss the newest rows, and writes nothing. Otherwise it is read beside
 * the others, read-only.
 */
#include "cache/store/index.h"
#include "cache/store/index_int.h"
#include "cache/base/log.h"
#include "cache/base/private_dir.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The "file:" URI of PATH with QUERY, for sqlite3_open_v2(): every byte
 * but [A-Za-z0-9/._~-] %-escaped (3 bytes at most each). Caller frees. */
static char *uri_of(const char *path, const char *query)
{
	char *uri = malloc(3 * strlen(path) + strlen(query) + sizeof("file://?"));
	if (!uri)
		return NULL;
	/* "file:///abs": an empty authority, so a path starting "//" is no host */
	char *p = uri + sprintf(uri, "file:%s", path[0] == '/' ? "//" : "");
	for (const char *s = path; *s; s++) {
		if (isalnum((unsigned char)*s) || strchr("/._~-", *s))
			*p++ = *s;
		else
			p += sprintf(p, "%%%02X", (unsigned char)*s);
	}
	sprintf(p, "?%s", query);
	return uri;
}

/* Open C on IX's database; IMMUTABLE: from index.db alone, see the top. */
static int conn_open_readonly(struct index *ix, struct index_conn *c, bool immutable)
{
	c->ix = ix;
	char *uri = uri_of(ix->path, immutable ? "immutable=1" : "mode=ro");
	if (!uri)
		return -ENOMEM;
	int rc = sqlite3_open_v2(uri, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX |
				 SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI, NULL);
	free(uri);
	if (rc != SQLITE_OK)
		return index_sql_error(c->db, rc, "open");
	sqlite3_busy_timeout(c->db, 5000);
	sqlite3_extended_result_codes(c->db, 1);
	return 0;
}

/* Is C's database a tilefs index of this schema? */
static int schema_checked(struct index *ix, struct index_conn *c)
{
	sqlite3_stmt *s = NULL;
	int64_t schema = 0;
	int rc = sqlite3_prepare_v2(c->db, "SELECT value FROM meta WHERE key = 'schema'", -1, &s,
				    NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			schema = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return index_sql_error(c->db, rc, "read the schema");
	if (schema != INDEX_SCHEMA_VERSION) {
		log_error("cache index %s has schema %lld, this tilefs reads %d (a mount upgrades "
			  "or rebuilds it)", ix->path, (long long)schema, INDEX_SCHEMA_VERSION);
		return -EBADMSG;
	}
	return 0;
}

int index_open_readonly(const char *dir, struct index **out)
{
	struct index *ix = calloc(1, sizeof(*ix));
	int dir_fd = -1, err;
	struct stat st;
	char why[256];

	if (!ix)
		return -ENOMEM;
	pthread_mutex_init(&ix->lock, NULL);
	pthread_mutex_init(&ix->writing, NULL);
	pthread_cond_init(&ix->available, NULL);
	ix->lock_fd = -1;
	ix->probe_fd = -1;	/* makes no claims */
	size_t n = strlen(dir) + sizeof("/index.db");
	ix->path = malloc(n);
	if (!ix->path) {
		err = -ENOMEM;
		goto fail;
	}
	snprintf(ix->path, n, "%s/index.db", dir);
	dir_fd = private_dir_open(dir, why, sizeof(why));
	if (dir_fd < 0) {
		err = dir_fd;
		if (err == -EPERM)
			log_error("cache dir %s %s", dir, why);
		goto fail;
	}
	if (fstatat(dir_fd, "index.db", &st, AT_SYMLINK_NOFOLLOW) != 0) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		log_error("cache index %s is not a regular file of this user", ix->path);
		err = -EPERM;
		goto fail;
	}
	/* held shared, so no process sets the database aside while it is read;
	 * O_NONBLOCK: a FIFO in its place does not hang the open */
	ix->lock_fd = openat(dir_fd, "index.lock", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (ix->lock_fd < 0 || flock(ix->lock_fd, LOCK_SH) != 0) {
		err = -errno;
		if (err != -ENOENT)
			log_error("cannot lock %s/index.lock: %s", dir, strerror(errno));
		goto fail;
	}
	bool unopened = fstatat(dir_fd, "index.db-wal", &st, AT_SYMLINK_NOFOLLOW) != 0 &&
			errno == ENOENT &&
			fstatat(dir_fd, "index.db-shm", &st, AT_SYMLINK_NOFOLLOW) != 0 &&
			errno == ENOENT;
	for (int i = 0; i < INDEX_POOL_SIZE; i++) {
		err = conn_open_readonly(ix, &ix->conns[i], unopened);
		if (!err && i == 0)
			err = schema_checked(ix, &ix->conns[0]);
		if (err)
			goto fail;
		ix->conns[i].next_free = ix->free_conns;
		ix->free_conns = &ix->conns[i];
	}
	close(dir_fd);
	*out = ix;
	return 0;

fail:
	if (dir_fd >= 0)
		close(dir_fd);
	index_close(ix);
	return err;
}
