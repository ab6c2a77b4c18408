/*
 * json.c - a bounded JSON document over json-c (see json.h). The one
 * place tilefs calls json-c; json-c's errors become errno here.
 */
#include "cache/origin/json.h"

#include <errno.h>
#include <stdbool.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

struct json_doc {
	struct json_object *top;	/* an object; owned */
};

int json_doc_parse(const char *text, size_t len, struct json_doc **out)
{
	struct json_tokener *tok = NULL;
	struct json_object *top = NULL;
	struct json_doc *doc;
	int err = -EINVAL;

	*out = NULL;
	if (len > JSON_MAX_DOCUMENT)
		return -E2BIG;
	if (memchr(text, '\0', len))
		return -EINVAL;		/* json-c would stop there */
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	top = json_tokener_parse_ex(tok, text, (int)len);
	if (!top || json_tokener_get_error(tok) != json_tokener_success)
		goto free_top;
	/* the rest, if any, is white space */
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
		if (!strchr(" \t\r\n", text[i]))
			goto free_top;
	if (!json_object_is_type(top, json_type_object))
		goto free_top;
	doc = malloc(sizeof(*doc));
	if (!doc) {
		err = -ENOMEM;
		goto free_top;
	}
	doc->top = top;
	*out = doc;
	json_tokener_free(tok);
	return 0;
free_top:
	json_object_put(top);
	json_tokener_free(tok);
	return err;
}

void json_doc_free(struct json_doc *doc)
{
	if (!doc)
		return;
	json_object_put(doc->top);
	free(doc);
}

/* json_doc_string(), and json_doc_text() when LINES: \n, \r and \t
 * allowed. */
static int string_of(const struct json_doc *doc, const char *key, char *out, size_t size,
		     bool lines)
{
	struct json_object *v;

	if (size)
		out[0] = '\0';
	if (!json_object_object_get_ex(doc->top, key, &v))
		return -ENOENT;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 || s[i] == 0x7f) &&
		    !(lines && (s[i] == '\n' || s[i] == '\r' || s[i] == '\t')))
			return -EINVAL;	/* \u0000 included */
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

int json_doc_string(const struct json_doc *doc, const char *key, char *out, size_t size)
{
	return string_of(doc, key, out, size, false);
}

int json_doc_text(const struct json_doc *doc, const char *key, char *out, size_t size)
{
	return string_of(doc, key, out, size, true);
}

int json_doc_int(const struct json_doc *doc, const char *key, int64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(doc->top, key, &v))
		return -ENOENT;
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	errno = 0;
	*out = json_object_get_int64(v);
	return errno ? -EINVAL : 0;
}

int json_doc_object(const struct json_doc *doc, const char *key, struct json_doc **out)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(doc->top, key, &v))
		return -ENOENT;
	if (!json_object_is_type(v, json_type_object))
		return -EINVAL;
	*out = malloc(sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->top = json_object_get(v);	/* its own reference */
	return 0;
}
