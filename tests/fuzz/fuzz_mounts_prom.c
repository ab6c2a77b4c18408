/*
 * fuzz_mounts_prom.c - libFuzzer target for the reader of a cache dir's
 * mounts/PID.prom files (mounts_recent(), cache/store/mounts.c), what
 * `tilefs cache stat` shows of the mounts that used the cache. The input
 * is one such file, beside a sound one of another mount. The sound one
 * must come back as written, whatever the other holds; a mount shown must
 * have a pid > 0 that is a process id, and it is shown running only if
 * that process lives; its labels must fit their fields. Anything else (a
 * crash, a sanitizer report, a leak) is a bug. Seeds: tests/fuzz/seeds/
 * fuzz_mounts_prom/ (files a mount wrote). Built and run by tests/fuzz/run.
 */
#include "cache/store/mounts.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The cache dir: made once, removed at exit (not after a finding: abort()
 * runs no atexit handler). */
static char cache_dir[64];
static char fuzzed_path[128];

static void cache_dir_remove(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/mounts/1.prom", cache_dir);
	unlink(path);
	unlink(fuzzed_path);
	snprintf(path, sizeof(path), "%s/mounts", cache_dir);
	rmdir(path);
	rmdir(cache_dir);
}

/* The sound file: a mount of process 1 (alive), counters as written. */
static const char sound[] =
	"# HELP tilefs_up Whether the mount is serving.\n"
	"# TYPE tilefs_up gauge\n"
	"tilefs_up 1\n"
	"tilefs_mount_info{source=\"s3://bucket/eo\",mountpoint=\"/mnt/eo\","
	"cache_dir=\"/var/cache/tilefs\",pid=\"1\"} 1\n"
	"tilefs_start_time_seconds 1764000000\n"
	"tilefs_requests_total 17\n"
	"tilefs_cache_hits_total 40\n"
	"tilefs_cache_misses_total 9\n";

static void setup(void)
{
	char path[128];
	FILE *f;

	snprintf(cache_dir, sizeof(cache_dir), "/tmp/tilefs-fuzz-XXXXXX");
	if (!mkdtemp(cache_dir))
		abort();
	atexit(cache_dir_remove);
	snprintf(path, sizeof(path), "%s/mounts", cache_dir);
	if (mkdir(path, 0700) != 0)
		abort();
	snprintf(path, sizeof(path), "%s/mounts/1.prom", cache_dir);
	if (!(f = fopen(path, "w")) || fputs(sound, f) < 0 || fclose(f) != 0)
		abort();
	snprintf(fuzzed_path, sizeof(fuzzed_path), "%s/mounts/4242.prom", cache_dir);
}

static bool sound_record(const struct mount_record *r)
{
	return r->pid == 1 && r->running && r->started == 1764000000 &&
	       strcmp(r->source, "s3://bucket/eo") == 0 && strcmp(r->mountpoint, "/mnt/eo") == 0 &&
	       r->requests == 17 && r->hits == 40 && r->misses == 9 && r->bytes_served == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mount_record recs[4];
	size_t n = 0, sound_seen = 0;
	FILE *f;

	if (!cache_dir[0])
		setup();
	if (!(f = fopen(fuzzed_path, "w")) || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	if (mounts_recent(cache_dir, recs, 4, &n) != 0 || n < 1 || n > 2)
		abort();
	for (size_t i = 0; i < n; i++) {
		const struct mount_record *r = &recs[i];
		if (r->pid <= 0 || r->pid != (long)(pid_t)r->pid)
			abort();	/* not a process id */
		if (r->running && kill((pid_t)r->pid, 0) != 0 && errno != EPERM)
			abort();
		if (strnlen(r->source, sizeof(r->source)) == sizeof(r->source) ||
		    strnlen(r->mountpoint, sizeof(r->mountpoint)) == sizeof(r->mountpoint))
			abort();
		sound_seen += r->pid == 1 && sound_record(r);
	}
	if (sound_seen < 1)
		abort();	/* the other file changed what this one says */
	return 0;
}
