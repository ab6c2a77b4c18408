/*
 * options_int.h - the option table, private to the two files of the
 * options module: tools/options.c owns it and parses with it,
 * tools/options_help.c prints it (--help, the man page, docs/OPTIONS.md).
 * Includes only tools/options.h.
 */
#ifndef TILEFS_OPTIONS_INT_H
#define TILEFS_OPTIONS_INT_H

#include "tools/options.h"

/* OPT_TTL: seconds, or "indefinite" (-1 too, as gcsfuse spells it):
 * OPTIONS_TTL_INDEFINITE. OPT_ADDRESS: an IPv4 or IPv6 literal, kept as
 * text. OPT_ALIAS: a flag standing for the -o words in its def (--debug
 * for -o log_level=debug), so that both spellings do one thing. */
enum opt_type {
	OPT_FLAG, OPT_STRING, OPT_SIZE, OPT_LONG, OPT_TTL, OPT_LEVEL, OPT_PREFETCH,
	OPT_ADDRESS, OPT_ALIAS
};

/* The headings --help, the man page and docs/OPTIONS.md list options
 * under, in this order; options_group_names[] spells them. */
enum opt_group {
	GROUP_WARM, GROUP_SOURCE, GROUP_CACHE, GROUP_PREFETCH, GROUP_CREDENTIALS,
	GROUP_MOUNT, GROUP_LOG, GROUP_COUNT
};

struct option_def {
	const char *name;
	unsigned cmds;			/* OPTIONS_MOUNT | OPTIONS_WARM */
	char short_name;
	enum opt_type type;
	size_t offset;
	const char *arg;
	const char *def;		/* default, as text; NULL: computed;
					   OPT_ALIAS: the -o words it means */
	int64_t min, max;
	const char *help;
	enum opt_group group;
};

extern const struct option_def options_defs[];
extern const size_t options_ndefs;
extern const char *const options_group_names[GROUP_COUNT];

#endif
