/*
 * answer.c - what every provider reads the same way in an origin's
 * answers: the names a listing gives (source_name_valid(), provider.h) and
 * the clouds' XML error bodies (provider_xml_error(), provider_int.h).
 * Below the providers and bucket.c, which call it; calls only cache/origin
 * and cache/base.
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/xml.h"
#include "cache/base/log.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

bool provider_xml_error(const char *body, size_t len, char *reason, size_t size)
{
	struct xml_span doc = { body, len };
	char code[64], message[96];

	if (!xml_text(doc, "Code", code, sizeof(code)))
		return false;
	if (!xml_text(doc, "Message", message, sizeof(message)))
		message[0] = '\0';
	/* Azure's message goes on with RequestId and Time lines: its first
	   line says it */
	message[strcspn(message, "\r\n")] = '\0';
	snprintf(reason, size, "%s%s%s", code, message[0] ? ": " : "", message);
	/* the reason goes into log lines and messages: one printable line */
	for (char *p = reason; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return true;
}

bool source_name_valid(const char *name)
{
	/* Names whose first NAME_LOGGED_MAX were logged (FNV-1a hashes, 0 free);
	 * a name met again, e.g. at every listing with --ttl 0, is not. */
	enum { NAME_LOGGED_MAX = 256, NAME_SHOWN_MAX = 255 };
	static uint64_t logged[NAME_LOGGED_MAX];
	uint64_t hash = 14695981039346656037u;
	bool control = false;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		control |= *p < 0x20 || *p == 0x7f;
		hash = (hash ^ *p) * 1099511628211u;
	}
	if (!control)
		return name[0] && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
		       !strchr(name, '/') && strlen(name) < 256;

	/* a newline would forge a log line, ESC drive the terminal of ls */
	bool first = false;
	hash |= 1;
	for (size_t i = 0; i < NAME_LOGGED_MAX; i++) {
		uint64_t *slot = &logged[(hash + i) % NAME_LOGGED_MAX], seen = 0;
		if (__atomic_compare_exchange_n(slot, &seen, hash, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			first = true;
			break;
		}
		if (seen == hash)
			break;
	}
	if (first) {
		char shown[NAME_SHOWN_MAX * 4 + 4];
		size_t o = 0;
		for (const unsigned char *p = (const unsigned char *)name;
		     *p && o + 5 < sizeof(shown) && p - (const unsigned char *)name < NAME_SHOWN_MAX; p++) {
			if (*p == '\\' || *p == '"' || *p == '\n' || *p == '\r' || *p == '\t') {
				shown[o++] = '\\';
				shown[o++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : *p == '\t' ? 't' : (char)*p;
			} else if (*p < 0x20 || *p == 0x7f) {
				o += (size_t)snprintf(shown + o, sizeof(shown) - o, "\\x%02x", *p);
			} else {
				shown[o++] = (char)*p;
			}
		}
		shown[o] = '\0';
		log_warn("refusing the name \"%s\": it holds control characters", shown);
	}
	return false;
}

bool source_path_valid(const char *path)
{
	char part[256];
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, "/");
		if (n >= sizeof(part))
			return false;
		memcpy(part, p, n);
		part[n] = '\0';
		if (!source_name_valid(part))
			return false;
		p += n;
		if (!*p)
			return true;
	}
}
