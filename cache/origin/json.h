/*
 * json.h - just enough JSON for the credential documents identity
 * endpoints answer (instance metadata, container credentials,
 * credential_process, the SSO portal): parse one bounded document whose
 * top is an object, then take a string, an integer or an object (as a
 * document of its own) by key from that object. Nothing else: no arrays,
 * no writing.
 *
 * Over json-c (libjson-c5, Debian-maintained), used in this file only:
 * a real parser, so an escaped quote, a key nested in another object or
 * a value that reads like a key cannot fool it, as a substring search
 * could. Bounds: JSON_MAX_DOCUMENT bytes, JSON_MAX_DEPTH levels of
 * nesting; anything past them is refused, not parsed.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers). Only this folder includes
 * <json-c/...>.
 */
#ifndef TILEFS_JSON_H
#define TILEFS_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DOCUMENT (64 * 1024)	/* bytes of a document, at most */
#define JSON_MAX_DEPTH 8		/* nesting, at most */

struct json_doc;

/*
 * Parse the LEN bytes at TEXT (not NUL-terminated needed) as one JSON
 * object, optionally surrounded by white space. 0 and *out (caller frees
 * with json_doc_free()), -E2BIG when LEN is over JSON_MAX_DOCUMENT,
 * -EINVAL when it is not one well-formed object within the bounds (a NUL
 * byte, trailing bytes, too deep), -ENOMEM.
 */
int json_doc_parse(const char *text, size_t len, struct json_doc **out);
void json_doc_free(struct json_doc *doc);

/*
 * The string value of KEY in the document's top object into OUT
 * (NUL-terminated). 0; -ENOENT when absent; -EINVAL when not a string or
 * it holds a control character (after unescaping: a value with one could
 * end up in a header line); -ENAMETOOLONG when it does not fit in SIZE.
 */
int json_doc_string(const struct json_doc *doc, const char *key, char *out, size_t size);

/* Like json_doc_string(), but the value may hold lines: \n, \r and \t
 * are let through (a PEM private key); never put it in a header line. */
int json_doc_text(const struct json_doc *doc, const char *key, char *out, size_t size);

/* The integer value of KEY in the top object: 0, -ENOENT, or -EINVAL when
 * it is not an integer. */
int json_doc_int(const struct json_doc *doc, const char *key, int64_t *out);

/* The object value of KEY in the top object as a document of its own into
 * *OUT (caller frees with json_doc_free(); DOC may be freed first): 0,
 * -ENOENT, -EINVAL when it is not an object, -ENOMEM. */
int json_doc_object(const struct json_doc *doc, const char *key, struct json_doc **out);

#endif
