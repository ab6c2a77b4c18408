/*
 * main.c - the tilefs binary: `tilefs COMMAND [ARGS]` hands ARGS to the
 * command (mount, warm, hint, inspect, cache, tier-config) and returns its exit
 * status; --help, --version and the generated man page and options table
 * and the generated part of docs/CONFIGURATION.md are answered here.
 */
#include "tools/cache_admin.h"
#include "tools/credentials_table.h"
#include "tools/hint.h"
#include "tools/inspect.h"
#include "tools/manpage.h"
#include "tools/mount_cmd.h"
#include "tools/tier_config.h"
#include "tools/warm.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs mount [OPTIONS] SOURCE MOUNTPOINT\n"
		"       tilefs warm [OPTIONS] SOURCE [PATH_OR_GLOB...]\n"
		"       tilefs hint MOUNTPOINT ORDER_FILE|-|--clear\n"
		"       tilefs inspect [--blocks] [--cache-dir DIR] PATH_OR_URL\n"
		"       tilefs cache stat|ls|verify|evict|clear [--cache-dir DIR] [ARGS]\n"
		"       tilefs tier-config [OPTIONS] SOURCE\n"
		"       tilefs --help | --version\n"
		"\n"
		"tilefs mounts a cloud prefix of GeoTIFF/COG files read-only, caching what is\n"
		"read on local disk (persistent, shared by every tilefs on the machine).\n"
		"\n"
		"Commands:\n"
		"  mount    mount SOURCE at MOUNTPOINT; unmount with 'fusermount3 -u MOUNTPOINT'\n"
		"  warm     fetch files (or just their headers, overviews, a window) into\n"
		"           the cache before a mount reads them\n"
		"  hint     hand a running mount the reads to come, in order, to fetch\n"
		"           ahead of its readers\n"
		"  inspect  show a file's TIFF tile map and how much of it is cached\n"
		"  cache    look at and manage a cache dir: stat, ls, verify, evict, clear\n"
		"  tier-config  print an nginx configuration for a cache tier that many\n"
		"           machines share (mount --tier)\n"
		"\n"
		"Run 'tilefs mount --help' or 'tilefs warm --help' for their options.\n");
}

int main(int argc, char **argv)
{
	/* Fetch buffers (up to 16 MiB) are reused from the heap instead of
	   being mapped, faulted in and unmapped for every GET. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	/* One heap for every thread: the buffers of the units in flight are
	   allocated by the reader that asks and freed by the thread that
	   stores them, and each of glibc's per-thread arenas would keep its
	   own high-water mark of them. A daemon's malloc calls come per unit
	   and per read, not per byte (measured in the commit that set it). A user's own
	   setting of the arenas stands. */
	const char *tunables = getenv("GLIBC_TUNABLES");
	if (!getenv("MALLOC_ARENA_MAX") && !(tunables && strstr(tunables, "arena_max")))
		mallopt(M_ARENA_MAX, 1);
	if (argc < 2) {
		fprintf(stderr, "tilefs: no command given\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--help-man") == 0) {	/* tilefs(1), for make man */
		manpage_print(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--help-markdown") == 0) {	/* docs/OPTIONS.md, for make docs */
		manpage_print_markdown(stdout);
		return 0;
	}
	/* docs/CONFIGURATION.md's credentials, for make docs */
	if (strcmp(argv[1], "--help-credentials-markdown") == 0) {
		credentials_table_markdown(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("tilefs %s\n", TILEFS_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "mount") == 0)
		return mount_cmd_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "warm") == 0)
		return warm_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "hint") == 0)
		return hint_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "inspect") == 0)
		return inspect_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "cache") == 0)
		return cache_admin_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "tier-config") == 0)
		return tier_config_main(argc - 2, argv + 2);
	fprintf(stderr, "tilefs: unknown command '%s'\nTry 'tilefs --help'.\n", argv[1]);
	return EXIT_USAGE;
}
