/*
 * options.h - every tilefs option, in one table read by the command line
 * (--name VALUE, --name=VALUE) and by -o name=value; -o words that are not
 * tilefs options go to FUSE. options.c parses with the table,
 * options_help.c prints it (options_usage() and the two below); the table
 * itself is in options_int.h, theirs alone.
 */
#ifndef TILEFS_OPTIONS_H
#define TILEFS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cache/origin/http.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"

#define OPTIONS_MOUNT 1u		/* which command an option belongs to */
#define OPTIONS_WARM 2u

/* --ttl indefinite: what was listed or opened once is never checked
 * again (an int, as the mount and the namespace hold it). */
#define OPTIONS_TTL_INDEFINITE 2147483647L

struct options {
	bool foreground;
	bool help;
	char *cache_dir;
	uint64_t cache_size;		/* 0: choose from the free space */
	uint64_t block_size;
	uint64_t header_size;
	enum prefetch_policy prefetch;
	uint64_t merge_gap;
	uint64_t readahead;
	uint64_t hint_budget;		/* 0: the default (mount_cmd.c) */
	char *record_file;		/* --record */
	bool no_passthrough;
	long ttl;			/* seconds, or OPTIONS_TTL_INDEFINITE */
	long max_names;			/* 0: the default (ns_set_max_names()) */
	char *list_file;
	char *ca_file;
	long retries;
	long max_connections;
	long fetch_threads;
	enum log_level log_level;
	char *log_file;
	char *endpoint;
	char *tier, *tier_secret;	/* shared cache tier (README "Cluster") */
	char *tier_ca_file;		/* verifies an https:// tier */
	bool tier_allow_http;		/* an http:// tier may see credentials */
	char *region;
	char *profile;			/* --profile: the AWS profile, or NULL */
	bool virtual_hosted;
	bool no_sign_request;
	bool requester_pays;
	long page_size;
	char *metrics_file;
	long metrics_port;		/* 0: none */
	char *metrics_address;		/* an IP literal, checked */
	/* tilefs warm */
	char *from_file;
	bool header_only, overviews, dry_run, partial;
	long ifd;			/* -1: none */
	char *window;			/* "X,Y,W,H" */
	long jobs;
	char *shard;			/* "I/N" */
	char *fuse_opts;		/* -o words for FUSE, comma-joined */
	char *source, *mountpoint;
	char **paths;			/* warm: PATH_OR_GLOB... */
	size_t npaths;
};

/* Fill defaults, then parse ARGV (after "mount" or "warm": CMD says which
 * options apply). 0, or -EINVAL with a message for the user in err.
 * Then, parsed or not, the secrets of the URLs in ARGV (query strings,
 * passwords) are overwritten in place with NULs, so `ps` does not show
 * them: ARGV must be writable. Caller frees with options_release(). */
int options_parse(struct options *o, unsigned cmd, int argc, char **argv, char *err,
		  size_t err_size);
void options_release(struct options *o);
/* The options of CMD under their headings, within 80 columns. */
void options_usage(FILE *out, unsigned cmd);
/* The same options as a roff list (.TP entries), for the man page. */
void options_man(FILE *out, unsigned cmd);
/* The same options as a Markdown table, for docs/OPTIONS.md. */
void options_markdown(FILE *out, unsigned cmd);
/* What O says of the origin, for source_open(). */
struct source_options options_source(const struct options *o);
/* The fetcher's settings O gives, with CONNECTIONS connections at most. */
void options_http(const struct options *o, long connections, struct http_config *out);

/* The --cache-dir when none is given; caller frees. */
char *options_default_cache_dir(void);
/* The --cache-size when none is given: half the free space of DIR. */
uint64_t options_default_cache_size(const char *dir);
/*
 * Create DIR (and its parents) if needed, DIR itself 0700, and check it
 * is usable: see options_check_cache_dir(). On failure say what to fix on
 * stderr and return -errno.
 */
int options_make_cache_dir(const char *dir);
/*
 * Check an existing cache dir: owned by the caller and not writable by
 * group or others (cache/base/private_dir.h: a cache dir shared by a group
 * is not supported), else -EPERM. One that others may read (made 0755 by an
 * older tilefs) is made 0700. -EPERM: what to fix is said on stderr; other
 * errors (-errno: no such dir, ...) are the caller's to report.
 */
int options_check_cache_dir(const char *dir);
/*
 * The same check, changing nothing: for a command that only reads a cache
 * (inspect), whose DIR may be named by a mount rather than by the user.
 */
int options_check_cache_dir_as_is(const char *dir);

/* "500M", "2G", "1048576" (binary multiples); -EINVAL if not a size. */
int parse_size(const char *text, uint64_t *out);

#endif
