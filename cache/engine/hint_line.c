/*
 * hint_line.c - hint_line_parse(): one line of an order file (tilefs hint,
 * tilefs warm --from-file, mount --record), a path and an optional
 * full-resolution pixel window.
 *
 * Level 0 of the engine (engine_int.h): pure, calls nothing of it.
 */
#include "cache/engine/cache.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Is [S, end of S) all decimal digits, and fits in a uint64_t? */
static bool parse_number(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0 || len > 19)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* The four numbers X Y W H in TEXT, separated by spaces or tabs; how many
 * fields TEXT holds when not exactly four numbers (at most 5). */
static int parse_window(const char *text, uint64_t v[4])
{
	int k = 0;
	for (const char *p = text; *p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, " \t");
		if (k == 4 || !parse_number(p, len, &v[k]))
			return 5;
		k++;
		p += len;
	}
	return k;
}

int hint_line_parse(char *line, struct hint_line *out, char *why, size_t why_size)
{
	size_t len = strlen(line);
	uint64_t v[4];

	memset(out, 0, sizeof(*out));
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		line[--len] = '\0';
	const char *first = line + strspn(line, " \t");
	if (!*first || *first == '#')
		return 0;
	char *tab = strchr(line, '\t');
	if (tab) {
		/* PATH<TAB>X Y W H: the path is everything before the tab */
		*tab = '\0';
		if (parse_window(tab + 1, v) != 4) {
			snprintf(why, why_size, "'%s' after the tab is not a window X Y W H", tab + 1);
			return -EINVAL;
		}
	} else {
		/* PATH X Y W H when the last four fields are numbers after a space */
		char *cut = line + len;
		int fields = 0;
		while (fields < 4 && cut > line) {
			char *end = cut;
			while (cut > line && cut[-1] != ' ')
				cut--;
			if (!parse_number(cut, (size_t)(end - cut), &v[3 - fields]) || cut == line)
				break;
			fields++;
			cut--;	/* the space */
			if (fields < 4)
				while (cut > line && cut[-1] == ' ')
					cut--;
		}
		if (fields == 4) {
			while (cut > line && cut[-1] == ' ')
				cut--;
			*cut = '\0';
		} else {
			out->path = line;
			return 1;
		}
	}
	if (v[2] == 0 || v[3] == 0) {
		snprintf(why, why_size, "the window's width and height must be above 0");
		return -EINVAL;
	}
	if (!*line) {
		snprintf(why, why_size, "a window without a path");
		return -EINVAL;
	}
	out->path = line;
	out->window = true;
	out->x = v[0];
	out->y = v[1];
	out->w = v[2];
	out->h = v[3];
	return 1;
}

bool hint_client_ok(const char *name, size_t len)
{
	if (len == 0 || len > 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}
