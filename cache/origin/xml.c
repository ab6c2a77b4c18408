/*
 * xml.c - see xml.h.
 */
#include "cache/origin/xml.h"
#include "cache/origin/http.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does an opening tag <NAME> or <NAME ...> start at p? (p points at '<') */
static bool tag_opens(const char *p, const char *end, const char *name, size_t n)
{
	if ((size_t)(end - p) < n + 2 || p[0] != '<' || memcmp(p + 1, name, n) != 0)
		return false;
	char c = p[n + 1];
	return c == '>' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '/';
}

bool xml_next(struct xml_span in, const char *name, size_t *pos, struct xml_span *out)
{
	const char *end = in.p + in.len;
	size_t n = strlen(name);

	for (const char *p = in.p + *pos; p < end; p++) {
		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			return false;
		if (!tag_opens(p, end, name, n))
			continue;
		const char *gt = memchr(p, '>', (size_t)(end - p));
		if (!gt)
			return false;
		if (gt[-1] == '/') {	/* <Name/>: empty */
			out->p = gt + 1;
			out->len = 0;
			*pos = (size_t)(gt + 1 - in.p);
			return true;
		}
		const char *content = gt + 1;
		/* the matching close tag; same-name nesting does not occur in listings */
		for (const char *q = content; q < end; q++) {
			q = memchr(q, '<', (size_t)(end - q));
			if (!q)
				return false;
			if ((size_t)(end - q) >= n + 3 && q[1] == '/' && memcmp(q + 2, name, n) == 0 &&
			    q[n + 2] == '>') {
				out->p = content;
				out->len = (size_t)(q - content);
				*pos = (size_t)(q + n + 3 - in.p);
				return true;
			}
		}
		return false;
	}
	return false;
}

bool xml_text(struct xml_span in, const char *name, char *buf, size_t size)
{
	static const struct { const char *entity; char c; } entities[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
		{ "&apos;", '\'' }, { "&#39;", '\'' },
	};
	struct xml_span s;
	size_t pos = 0, o = 0;

	if (size == 0 || !xml_next(in, name, &pos, &s))
		return false;
	for (size_t i = 0; i < s.len && o + 1 < size;) {
		bool done = false;
		for (size_t k = 0; s.p[i] == '&' && k < sizeof(entities) / sizeof(entities[0]); k++) {
			size_t n = strlen(entities[k].entity);
			if (i + n <= s.len && memcmp(s.p + i, entities[k].entity, n) == 0) {
				buf[o++] = entities[k].c;
				i += n;
				done = true;
				break;
			}
		}
		if (!done)
			buf[o++] = s.p[i++];
	}
	buf[o] = '\0';
	return true;
}

int64_t xml_size(struct xml_span in, const char *name)
{
	char text[32], *end;
	if (!xml_text(in, name, text, sizeof(text)) || !isdigit((unsigned char)text[0]))
		return -1;
	errno = 0;
	long long size = strtoll(text, &end, 10);
	return *end || errno ? -1 : size;
}

time_t xml_time(struct xml_span in, const char *name)
{
	char text[64];
	struct tm tm = { 0 };
	int used = 0;
	if (!xml_text(in, name, text, sizeof(text)))
		return 0;
	if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6)
		return http_date_parse(text);
	const char *zone = text + used;
	if (*zone == '.')
		zone += 1 + strspn(zone + 1, "0123456789");
	if (strcmp(zone, "Z") != 0 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	return t < 0 ? 0 : t;
}
