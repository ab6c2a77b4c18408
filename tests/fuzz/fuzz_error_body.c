/*
 * fuzz_error_body.c - libFuzzer target for the clouds' error bodies
 * (provider_xml_error(), cache/origin/provider.c, through the XML helpers
 * of xml.c): what S3, GCS's XML API and Azure Blob answer with a 4xx or
 * 5xx, and what the fetcher shows of it as "HTTP 403 (REASON)". The input
 * is the start of an error response's body, as the fetcher keeps it (at
 * most 1023 bytes, NUL-terminated). The reason must fit the room it is
 * given, be one line of printable text (it goes into log lines and
 * messages on a terminal: a newline would forge a log line, ESC drive
 * the terminal), and say the body's Code. Anything else (a crash, a
 * sanitizer report, a leak) is a bug too. Seeds: tests/fuzz/seeds/
 * fuzz_error_body/. Built and run by tests/fuzz/run.
 */
#include "cache/origin/providers/provider_int.h"

#include <stdlib.h>
#include <string.h>

#define ERROR_BODY_MAX 1023	/* sizeof(http_request.error_body) - 1 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the room attempt_verdict() gives: its 160-byte error less "HTTP
	   NNN (", and some narrower */
	static const size_t rooms[] = { 150, 64, 8, 1 };
	size_t len = size < ERROR_BODY_MAX ? size : ERROR_BODY_MAX;
	char *body = malloc(len + 1);

	if (!body)
		return 0;
	memcpy(body, data, len);
	body[len] = '\0';
	for (size_t r = 0; r < sizeof(rooms) / sizeof(rooms[0]); r++) {
		/* exactly the room, so a write past it is ASan's to see */
		char *reason = malloc(rooms[r]);
		if (!reason)
			break;
		memset(reason, 'x', rooms[r]);
		if (provider_xml_error(body, len, reason, rooms[r])) {
			size_t n = strnlen(reason, rooms[r]);
			if (n == rooms[r])
				abort();	/* not terminated inside its room */
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f)
					abort();	/* not one printable line */
			if (rooms[r] > 1 && !memmem(body, len, "<Code", 5))
				abort();	/* a reason the body did not give */
		}
		free(reason);
	}
	free(body);
	return 0;
}
