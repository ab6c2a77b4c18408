/* test_mounts.c - CACHE_DIR/mounts/: the file names, reading mounts' files
 * back (running or stopped, newest first), and pruning those long gone. */
#include "cache/store/mounts.h"
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* A mount's file as fs/metrics.c writes it (the lines a reader takes,
 * among others it must skip), last written AGE seconds ago. */
static int write_prom(const char *path, long pid, int up, unsigned long hits, long age)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "# HELP tilefs_up 1 while the mount runs.\n# TYPE tilefs_up gauge\n"
		"tilefs_up %d\n"
		"tilefs_mount_info{source=\"http://h/a \\\"b\\\"\",mountpoint=\"/mnt/x\","
		"cache_dir=\"/c\",pid=\"%ld\"} 1\n"
		"tilefs_start_time_seconds 1700000000\n"
		"tilefs_requests_total 7\ntilefs_request_errors_total 99\n"
		"tilefs_cache_hits_total %lu\ntilefs_cache_misses_total 3\n"
		"tilefs_served_bytes_total 4096\ntilefs_fetched_bytes_total 2048\n"
		"tilefs_errors_total 1\n"
		"tilefs_request_duration_seconds_bucket{le=\"+Inf\"} 7\n", up, pid, hits);
	if (fclose(f) != 0)
		return -1;
	struct timeval t[2];
	gettimeofday(&t[0], NULL);
	t[0].tv_sec -= age;
	t[1] = t[0];
	return utimes(path, t);
}

int main(void)
{
	char dir[] = "/tmp/tilefs-test-mounts-XXXXXX", path[512], mdir[256];
	struct mount_record r[4];
	size_t n = 99;

	CHECK(mkdtemp(dir) != NULL, "temp dir");
	CHECK(mounts_recent(dir, r, 4, &n) == 0 && n == 0, "no mounts/ folder: no mounts");
	CHECK(mounts_dir(dir, mdir, sizeof(mdir)) == 0 && strstr(mdir, "/mounts") &&
	      mkdir(mdir, 0755) == 0, "mounts_dir: %s", mdir);
	CHECK(mounts_file(dir, 123, path, sizeof(path)) == 0 &&
	      strcmp(path + strlen(dir), "/mounts/123.prom") == 0, "mounts_file: %s", path);
	char tiny[8];
	CHECK(mounts_file(dir, 123, tiny, sizeof(tiny)) == -ENAMETOOLONG, "too small a buffer");

	/* a pid that is surely dead: a child reaped */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);

	mounts_file(dir, getpid(), path, sizeof(path));
	CHECK(write_prom(path, getpid(), 1, 10, 0) == 0, "a running mount's file");
	mounts_file(dir, dead, path, sizeof(path));
	CHECK(write_prom(path, dead, 1, 20, 60) == 0, "one killed a minute ago (still up 1)");
	mounts_file(dir, 1, path, sizeof(path));
	CHECK(write_prom(path, 1, 0, 30, 120) == 0, "one that ended (pid 1 lives, up 0)");
	snprintf(path, sizeof(path), "%s/%ld.prom.%ld.tmp", mdir, (long)getpid(), (long)getpid());
	CHECK(write_prom(path, getpid(), 1, 40, 0) == 0, "a temporary file, half written");
	snprintf(path, sizeof(path), "%s/junk.prom", mdir);
	FILE *f = fopen(path, "w");
	CHECK(f && fputs("not metrics\n", f) >= 0 && fclose(f) == 0, "a file with no pid");

	CHECK(mounts_recent(dir, r, 4, &n) == 0 && n == 3, "three mounts (%zu)", n);
	CHECK(r[0].pid == getpid() && r[0].running && r[0].hits == 10,
	      "newest first: running, its hits (%ld, %d, %llu)", r[0].pid, r[0].running,
	      (unsigned long long)r[0].hits);
	CHECK(r[1].pid == dead && !r[1].running && r[1].hits == 20,
	      "a dead pid is stopped (%ld, %d)", r[1].pid, r[1].running);
	CHECK(r[2].pid == 1 && !r[2].running && r[2].hits == 30, "up 0 is stopped (%ld, %d)",
	      r[2].pid, r[2].running);
	CHECK(strcmp(r[0].source, "http://h/a \"b\"") == 0 && strcmp(r[0].mountpoint, "/mnt/x") == 0,
	      "labels unescaped: %s on %s", r[0].source, r[0].mountpoint);
	CHECK(r[0].requests == 7 && r[0].misses == 3 && r[0].bytes_served == 4096 &&
	      r[0].bytes_fetched == 2048 && r[0].errors == 1 && r[0].started == 1700000000,
	      "counters");
	CHECK(r[0].updated >= r[1].updated + 59, "updated is the file's mtime");
	CHECK(mounts_recent(dir, r, 2, &n) == 0 && n == 2 && r[1].pid == dead, "at most MAX");

	/* a dead mount's file goes after 7 days; a living one's stays */
	mounts_file(dir, dead, path, sizeof(path));
	CHECK(write_prom(path, dead, 1, 20, 8 * 86400) == 0, "the killed one, 8 days on");
	mounts_file(dir, getpid(), path, sizeof(path));
	CHECK(write_prom(path, getpid(), 1, 10, 8 * 86400) == 0, "the running one, unchanged");
	mounts_prune(dir);
	CHECK(mounts_recent(dir, r, 4, &n) == 0 && n == 2 && r[0].pid != dead && r[1].pid != dead,
	      "prune removed only the dead mount's old file (%zu)", n);

	CHECK(check_rm_tree(dir) == 0, "cleanup");
	return check_done();
}
