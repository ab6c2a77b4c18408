/*
 * mounts.c - see mounts.h: the names of the mounts' files under
 * CACHE_DIR/mounts/, reading them back for `tilefs cache stat`, and
 * removing those of mounts long gone.
 */
#include "cache/store/mounts.h"
#include "cache/base/proc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STALE_FILE_S (7 * 86400)	/* a dead mount's file is kept this long */
#define PATH_SIZE 4500

int mounts_dir(const char *cache_dir, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/mounts", cache_dir);
	return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int mounts_file(const char *cache_dir, pid_t pid, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/mounts/%ld.prom", cache_dir, (long)pid);
	return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

void mounts_prune(const char *cache_dir)
{
	char dir[PATH_SIZE];
	if (mounts_dir(cache_dir, dir, sizeof(dir)) != 0)
		return;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[PATH_SIZE + 256];
		struct stat st;
		long pid = strtol(e->d_name, NULL, 10);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (pid > 0 && (pid != (long)(pid_t)pid || !proc_alive((pid_t)pid)) &&
		    stat(path, &st) == 0 &&
		    time(NULL) - st.st_mtime > STALE_FILE_S)
			unlink(path);
	}
	if (d)
		closedir(d);
}

/* The value of label NAME="..." in LINE into BUF, unescaped. */
static void label_value(const char *line, const char *name, char *buf, size_t len)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=\"", name);
	const char *p = strstr(line, key);
	size_t o = 0;
	buf[0] = '\0';
	if (!p)
		return;
	for (p += strlen(key); *p && *p != '"' && o + 1 < len; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			buf[o++] = *p == 'n' ? '\n' : *p;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
}

static int read_mount(const char *path, struct mount_record *out)
{
	FILE *f = fopen(path, "re");
	char line[8192];
	struct stat st;
	bool up = false;

	if (!f)
		return -errno;
	memset(out, 0, sizeof(*out));
	if (fstat(fileno(f), &st) == 0)
		out->updated = st.st_mtime;
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
		{ "tilefs_requests_total ", offsetof(struct mount_record, requests) },
		{ "tilefs_cache_hits_total ", offsetof(struct mount_record, hits) },
		{ "tilefs_cache_misses_total ", offsetof(struct mount_record, misses) },
		{ "tilefs_served_bytes_total ", offsetof(struct mount_record, bytes_served) },
		{ "tilefs_fetched_bytes_total ", offsetof(struct mount_record, bytes_fetched) },
		{ "tilefs_errors_total ", offsetof(struct mount_record, errors) },
		{ "tilefs_passthrough_opens_total ",
		  offsetof(struct mount_record, passthrough_opens) },
	};
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "tilefs_mount_info{", 18) == 0) {
			char pid[32];
			label_value(line, "source", out->source, sizeof(out->source));
			label_value(line, "mountpoint", out->mountpoint, sizeof(out->mountpoint));
			label_value(line, "pid", pid, sizeof(pid));
			out->pid = strtol(pid, NULL, 10);
		} else if (strncmp(line, "tilefs_up ", 10) == 0) {
			up = strtol(line + 10, NULL, 10) == 1;
		} else if (strncmp(line, "tilefs_start_time_seconds ", 26) == 0) {
			out->started = (time_t)strtoll(line + 26, NULL, 10);
		} else if (strncmp(line, "tilefs_cache_uncached ", 22) == 0) {
			out->uncached = strtol(line + 22, NULL, 10) == 1;
		}
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			size_t n = strlen(fields[i].name);
			if (strncmp(line, fields[i].name, n) == 0)
				*(uint64_t *)((char *)out + fields[i].offset) =
					strtoull(line + n, NULL, 10);
		}
	}
	fclose(f);
	/* a pid beyond pid_t would name another process (4294967297: init) */
	bool pid_ok = out->pid > 0 && out->pid == (long)(pid_t)out->pid;
	out->running = pid_ok && up && proc_alive((pid_t)out->pid);
	return pid_ok ? 0 : -EINVAL;
}

static int by_updated(const void *a, const void *b)
{
	const struct mount_record *x = a, *y = b;
	return x->updated > y->updated ? -1 : x->updated < y->updated;
}

int mounts_recent(const char *cache_dir, struct mount_record *out, size_t max, size_t *n)
{
	char dir[PATH_SIZE];
	struct dirent *e;
	struct mount_record *all = NULL;
	size_t count = 0, cap = 0;

	*n = 0;
	if (mounts_dir(cache_dir, dir, sizeof(dir)) != 0)
		return -ENAMETOOLONG;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".prom") != 0)
			continue;
		if (count == cap) {
			cap = cap ? 2 * cap : 16;
			struct mount_record *grown = realloc(all, cap * sizeof(*grown));
			if (!grown)
				break;
			all = grown;
		}
		char path[PATH_SIZE + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (read_mount(path, &all[count]) == 0)
			count++;
	}
	closedir(d);
	if (count)
		qsort(all, count, sizeof(*all), by_updated);
	*n = count < max ? count : max;
	if (*n)
		memcpy(out, all, *n * sizeof(*out));
	free(all);
	return 0;
}
