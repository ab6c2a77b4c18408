/*
 * options.h - every tilefs option, in one table read by the command line
 * (--name VALUE, --name=VALUE) and by -o name=value; -o words that are not
 * tilefs options go to FUSE. options_usage() prints the table.
 */
#ifndef TILEFS_OPTIONS_H
#define TILEFS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cache/layout.h"

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
	long ttl;
	char *list_file;
	char *ca_file;
	long retries;
	long max_connections;
	char *log_level;
	char *log_file;
	char *endpoint;
	char *region;
	bool virtual_hosted;
	bool no_sign_request;
	bool requester_pays;
	long page_size;
	char *fuse_opts;		/* -o words for FUSE, comma-joined */
	char *source, *mountpoint;
};

/* Fill defaults, then parse ARGV (after "mount"). 0, or -EINVAL with a
 * message for the user in err. Caller frees with options_release(). */
int options_parse(struct options *o, int argc, char **argv, char *err, size_t err_size);
void options_release(struct options *o);
void options_usage(FILE *out);
/* The --cache-dir when none is given; caller frees. */
char *options_default_cache_dir(void);

/* "500M", "2G", "1048576" (binary multiples); -EINVAL if not a size. */
int parse_size(const char *text, uint64_t *out);

#endif
